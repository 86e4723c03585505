// SPDX-License-Identifier: LGPL-2.1-or-later
#include "corehint/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

/* The one piece of process-wide state in the library: where log lines go. */
static struct {
    const char *ident;
    enum log_level max;
    bool syslog;
    bool journal; /* stderr is systemd's journal stream: "<N>" priority prefixes, no stamp */
} log_cfg = {"corehint", LOG_LVL_INFO, false, false};

/* Is stderr the stream systemd connected to the journal ($JOURNAL_STREAM is "dev:inode")? */
static bool stderr_is_journal(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    char *end;

    if (!v)
        return false;
    errno = 0;
    dev = strtoull(v, &end, 10);
    if (errno || end == v || *end != ':')
        return false;
    v = end + 1;
    ino = strtoull(v, &end, 10);
    if (errno || end == v || *end)
        return false;
    return fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

static const char *const names[] = {"error", "warning", "info", "debug"};

void log_init(const char *ident, enum log_level max, bool use_syslog)
{
    log_cfg.ident = ident;
    log_cfg.max = max;
    log_cfg.syslog = use_syslog;
    log_cfg.journal = !use_syslog && stderr_is_journal();
    if (use_syslog)
        openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum log_level max)
{
    log_cfg.max = max;
}

enum log_level log_get_level(void)
{
    return log_cfg.max;
}

int log_level_parse(const char *name, enum log_level *out)
{
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *log_level_name(enum log_level l)
{
    return (unsigned)l < sizeof(names) / sizeof(names[0]) ? names[l] : "?";
}

bool log_enabled(enum log_level l)
{
    return l <= log_cfg.max;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    va_list ap;

    if (!log_enabled(level))
        return;
    va_start(ap, fmt);
    if (log_cfg.syslog) {
        vsyslog(prio[level], fmt, ap);
    } else if (log_cfg.journal) {
        char line[1024];

        /* journald reads the priority from the prefix and stamps the line itself */
        vsnprintf(line, sizeof(line), fmt, ap);
        fprintf(stderr, "<%d>%s[%s]: %s\n", prio[level], log_cfg.ident, names[level], line);
    } else {
        struct timespec ts;
        struct tm tm;
        char stamp[32];
        char line[1024];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
        vsnprintf(line, sizeof(line), fmt, ap);
        /* One fprintf per line so that concurrent writers do not interleave mid-line. */
        fprintf(stderr, "%s.%03ldZ %s[%s]: %s\n", stamp, ts.tv_nsec / 1000000L, log_cfg.ident,
                names[level], line);
    }
    va_end(ap);
}

void log_finalise(void)
{
    if (log_cfg.syslog)
        closelog();
    fflush(stderr);
}

void log_clean(char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        /* a lone 0x80-0x9f after ASCII is not UTF-8: a C1 control to an 8-bit terminal */
        bool lone_c1 = c >= 0x80 && c <= 0x9f && (i == 0 || (unsigned char)s[i - 1] < 0x80);

        if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
            (unsigned char)s[i + 1] <= 0x9f) {
            s[i] = s[i + 1] = '?'; /* U+0080-U+009F */
            i++;
        } else if (c < 0x20 || c == 0x7f || lone_c1) {
            s[i] = '?';
        }
    }
}
