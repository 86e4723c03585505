/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Logging shared by both daemons: to stderr or syslog, with levels. */
#ifndef COREHINT_LOG_H
#define COREHINT_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
    LOG_LVL_ERR,
    LOG_LVL_WARN,
    LOG_LVL_INFO,
    LOG_LVL_DEBUG,
};

/* ident names the program in syslog and on stderr lines. */
void log_init(const char *ident, enum log_level max, bool use_syslog);
void log_set_level(enum log_level max);
enum log_level log_get_level(void);
/* Returns 0 and sets *out for "error|warning|info|debug", else -EINVAL. */
int log_level_parse(const char *name, enum log_level *out);
const char *log_level_name(enum log_level l);
bool log_enabled(enum log_level l);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_finalise(void);
/* Clean len bytes of text that came from elsewhere (a guest, libvirt quoting one, a peer's
 * document) in place, before a log line, /status or a terminal shows it: every C0 control
 * character, DEL, and C1 control character (U+0080-U+009F in UTF-8, or a lone byte
 * 0x80-0x9F, which 8-bit terminals obey) becomes '?'.  The length stays.  An escape sequence
 * would drive the operator's terminal, a newline forge a log line. */
void log_clean(char *s, size_t len);

#endif
