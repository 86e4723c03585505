// SPDX-License-Identifier: LGPL-2.1-or-later
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <string.h>

#include "corehint/conf.h"
#include "corehint/proto.h"

#define INTERVAL_MIN 100u
#define INTERVAL_MAX 100000u
/* steal_governor's own limit for high_threshold, so fallback = kernel accepts our values */
#define HIGH_MAX (CH_STEAL_MAX - 1)

enum {
    OPT_SYSFS_ROOT = 256,
    OPT_PROC_ROOT,
    OPT_DEV_ROOT,
    OPT_FALLBACK,
    OPT_INTERVAL,
    OPT_HIGH,
    OPT_LOW,
    OPT_MODPROBE,
    OPT_STATE_DIR,
    OPT_LOG,
    OPT_LOG_LEVEL,
    OPT_ONCE,
    OPT_RESTORE,
    OPT_DUMP,
};

static const struct option options[] = {
    {"config", required_argument, NULL, 'c'},
    {"port", required_argument, NULL, 'p'},
    {"sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT},
    {"proc-root", required_argument, NULL, OPT_PROC_ROOT},
    {"dev-root", required_argument, NULL, OPT_DEV_ROOT},
    {"fallback", required_argument, NULL, OPT_FALLBACK},
    {"interval-ms", required_argument, NULL, OPT_INTERVAL},
    {"high", required_argument, NULL, OPT_HIGH},
    {"low", required_argument, NULL, OPT_LOW},
    {"modprobe", required_argument, NULL, OPT_MODPROBE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"log", required_argument, NULL, OPT_LOG},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"verbose", no_argument, NULL, 'v'},
    {"foreground", no_argument, NULL, 'f'},
    {"once", no_argument, NULL, OPT_ONCE},
    {"restore", no_argument, NULL, OPT_RESTORE},
    {"dump-config", no_argument, NULL, OPT_DUMP},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};
static const char short_options[] = "+c:p:vfhV";

static const char *const fallback_names[] = {
    [FALLBACK_LOCAL] = "local",
    [FALLBACK_KERNEL] = "kernel",
    [FALLBACK_NONE] = "none",
};

const char *config_fallback_name(enum fallback_kind f)
{
    return (unsigned)f < sizeof(fallback_names) / sizeof(fallback_names[0]) ? fallback_names[f]
                                                                            : "?";
}

static void defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    strcpy(cfg->file, CONFIG_DEFAULT_FILE);
    strcpy(cfg->port, CONFIG_PORT_AUTO);
    strcpy(cfg->sysfs_root, "/sys");
    strcpy(cfg->proc_root, "/proc");
    strcpy(cfg->dev_root, "/dev");
    strcpy(cfg->modprobe, "/sbin/modprobe");
    strcpy(cfg->state_dir, CONFIG_DEFAULT_STATE_DIR);
    cfg->fallback = FALLBACK_LOCAL;
    cfg->interval_ms = 1000;
    cfg->high = 500;
    cfg->low = 200;
    cfg->log_level = LOG_LVL_INFO;
    cfg->log_syslog = false;
    cfg->action = ACTION_RUN;
}

/* The setters shared by the file and the command line; key names the value in messages. */
static int set_path(char *dst, const char *key, const char *v, char *err, size_t errlen)
{
    size_t n = strlen(v);
    if (n == 0 || n >= PATH_MAX) {
        snprintf(err, errlen, "%s: must be a path of 1..%d bytes", key, PATH_MAX - 1);
        return -EINVAL;
    }
    memcpy(dst, v, n + 1);
    return 0;
}

static int set_uint(unsigned *dst, const char *key, const char *v, unsigned min, unsigned max,
                    char *err, size_t errlen)
{
    uint64_t x;
    int rc = ch_conf_uint(key, v, min, max, &x, err, errlen);
    if (rc == 0)
        *dst = (unsigned)x;
    return rc;
}

static int set_fallback(struct config *cfg, const char *key, const char *v, char *err,
                        size_t errlen)
{
    for (unsigned i = 0; i < sizeof(fallback_names) / sizeof(fallback_names[0]); i++) {
        if (strcmp(v, fallback_names[i]) == 0) {
            cfg->fallback = (enum fallback_kind)i;
            return 0;
        }
    }
    snprintf(err, errlen, "%s: \"%s\" is not one of local, kernel, none", key, v);
    return -EINVAL;
}

static int set_log(struct config *cfg, const char *key, const char *v, char *err, size_t errlen)
{
    if (strcmp(v, "syslog") == 0 || strcmp(v, "stderr") == 0) {
        cfg->log_syslog = v[1] == 'y';
        return 0;
    }
    snprintf(err, errlen, "%s: \"%s\" is not one of syslog, stderr", key, v);
    return -EINVAL;
}

static int set_log_level(struct config *cfg, const char *key, const char *v, char *err,
                         size_t errlen)
{
    if (log_level_parse(v, &cfg->log_level) == 0)
        return 0;
    snprintf(err, errlen, "%s: \"%s\" is not one of error, warning, info, debug", key, v);
    return -EINVAL;
}

static int file_key(void *ctx, const struct ch_conf_line *l, char *err, size_t errlen)
{
    struct config *cfg = ctx;
    const char *k = l->key, *v = l->value;

    if (l->section[0]) {
        snprintf(err, errlen, "unknown section [%s]", l->section);
        return -EINVAL;
    }
    if (strcmp(k, "port") == 0)
        return set_path(cfg->port, k, v, err, errlen);
    if (strcmp(k, "fallback") == 0)
        return set_fallback(cfg, k, v, err, errlen);
    if (strcmp(k, "interval_ms") == 0)
        return set_uint(&cfg->interval_ms, k, v, INTERVAL_MIN, INTERVAL_MAX, err, errlen);
    if (strcmp(k, "high_threshold") == 0)
        return set_uint(&cfg->high, k, v, 1, HIGH_MAX, err, errlen);
    if (strcmp(k, "low_threshold") == 0)
        return set_uint(&cfg->low, k, v, 0, HIGH_MAX - 1, err, errlen);
    if (strcmp(k, "modprobe") == 0)
        return set_path(cfg->modprobe, k, v, err, errlen);
    if (strcmp(k, "state_dir") == 0)
        return set_path(cfg->state_dir, k, v, err, errlen);
    if (strcmp(k, "log") == 0)
        return set_log(cfg, k, v, err, errlen);
    if (strcmp(k, "log_level") == 0)
        return set_log_level(cfg, k, v, err, errlen);
    snprintf(err, errlen, "unknown key \"%s\"", k);
    return -EINVAL;
}

/* Apply one command-line option; name is "--option" for messages. */
static int apply_option(struct config *cfg, int opt, const char *arg, char *err, size_t errlen)
{
    char name[40];
    const char *n = name;

    for (const struct option *o = options; o->name; o++) {
        if (o->val == opt) {
            snprintf(name, sizeof(name), "--%s", o->name);
            break;
        }
    }
    switch (opt) {
    case 'c':
        return set_path(cfg->file, n, arg, err, errlen);
    case 'p':
        return set_path(cfg->port, n, arg, err, errlen);
    case OPT_SYSFS_ROOT:
        return set_path(cfg->sysfs_root, n, arg, err, errlen);
    case OPT_PROC_ROOT:
        return set_path(cfg->proc_root, n, arg, err, errlen);
    case OPT_DEV_ROOT:
        return set_path(cfg->dev_root, n, arg, err, errlen);
    case OPT_FALLBACK:
        return set_fallback(cfg, n, arg, err, errlen);
    case OPT_INTERVAL:
        return set_uint(&cfg->interval_ms, n, arg, INTERVAL_MIN, INTERVAL_MAX, err, errlen);
    case OPT_HIGH:
        return set_uint(&cfg->high, n, arg, 1, HIGH_MAX, err, errlen);
    case OPT_LOW:
        return set_uint(&cfg->low, n, arg, 0, HIGH_MAX - 1, err, errlen);
    case OPT_MODPROBE:
        return set_path(cfg->modprobe, n, arg, err, errlen);
    case OPT_STATE_DIR:
        return set_path(cfg->state_dir, n, arg, err, errlen);
    case OPT_LOG:
        return set_log(cfg, n, arg, err, errlen);
    case OPT_LOG_LEVEL:
        return set_log_level(cfg, n, arg, err, errlen);
    case 'v':
        cfg->log_level = LOG_LVL_DEBUG;
        return 0;
    case 'f':
        return 0; /* always in the foreground; accepted for compatibility */
    case OPT_ONCE:
        cfg->action = ACTION_ONCE;
        return 0;
    case OPT_RESTORE:
        cfg->action = ACTION_RESTORE;
        return 0;
    case OPT_DUMP:
        cfg->action = ACTION_DUMP;
        return 0;
    case 'h':
        cfg->action = ACTION_HELP;
        return 0;
    case 'V':
        cfg->action = ACTION_VERSION;
        return 0;
    }
    snprintf(err, errlen, "unknown option (see --help)");
    return -EINVAL;
}

/* One getopt pass over argv; only_config applies nothing but --config/--help/--version. */
static int scan(struct config *cfg, int argc, char *const argv[], bool only_config, char *err,
                size_t errlen)
{
    int opt, rc;

    optind = 0; /* glibc: full re-initialisation, so the scan can be repeated */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, short_options, options, NULL)) != -1) {
        if (opt == '?' || opt == ':') {
            if (optopt && optopt < 256)
                snprintf(err, errlen, "-%c: unknown option or missing argument (see --help)",
                         optopt);
            else
                snprintf(err, errlen, "%s: unknown option or missing argument (see --help)",
                         argv[optind - 1]);
            return -EINVAL;
        }
        if (only_config && opt != 'c' && opt != 'h' && opt != 'V')
            continue;
        if ((rc = apply_option(cfg, opt, optarg, err, errlen)) < 0)
            return rc;
    }
    if (optind < argc) {
        snprintf(err, errlen, "%s: unexpected argument (see --help)", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

int config_load(struct config *cfg, int argc, char *const argv[], char *err, size_t errlen)
{
    int rc;

    err[0] = '\0';
    defaults(cfg);
    if ((rc = scan(cfg, argc, argv, true, err, errlen)) < 0)
        return rc;
    if (cfg->action == ACTION_HELP || cfg->action == ACTION_VERSION)
        return 0;
    bool explicit_file = strcmp(cfg->file, CONFIG_DEFAULT_FILE) != 0;
    rc = ch_conf_parse_file(cfg->file, file_key, cfg, err, errlen);
    if (rc == -ENOENT && !explicit_file)
        rc = 0; /* no file: the defaults are the configuration */
    if (rc < 0)
        return rc;
    if ((rc = scan(cfg, argc, argv, false, err, errlen)) < 0)
        return rc;
    if (cfg->low >= cfg->high) {
        snprintf(err, errlen, "low threshold %u must be below high threshold %u", cfg->low,
                 cfg->high);
        return -ERANGE;
    }
    return 0;
}

void config_dump(const struct config *cfg, FILE *out)
{
    /* In the file's own syntax, so the output can be saved as a config file. */
    fprintf(out, "# corehint-guestd configuration in force (config file: %s)\n", cfg->file);
    fprintf(out, "port = %s\n", cfg->port);
    fprintf(out, "fallback = %s\n", config_fallback_name(cfg->fallback));
    fprintf(out, "interval_ms = %u\n", cfg->interval_ms);
    fprintf(out, "high_threshold = %u\n", cfg->high);
    fprintf(out, "low_threshold = %u\n", cfg->low);
    fprintf(out, "modprobe = %s\n", cfg->modprobe);
    fprintf(out, "state_dir = %s\n", cfg->state_dir);
    fprintf(out, "log = %s\n", cfg->log_syslog ? "syslog" : "stderr");
    fprintf(out, "log_level = %s\n", log_level_name(cfg->log_level));
    fprintf(out, "# command line only\n");
    fprintf(out, "# sysfs-root = %s\n# proc-root = %s\n# dev-root = %s\n", cfg->sysfs_root,
            cfg->proc_root, cfg->dev_root);
}

void config_usage(FILE *out, const char *prog)
{
    fprintf(out,
            "Usage: %s [OPTION]...\n"
            "Apply the host's preferred-CPU hints in a KVM guest (corehint), with a lease and a\n"
            "local steal-time fallback.  Runs in the foreground (systemd: Type=notify); logs to\n"
            "stderr unless --log syslog.\n"
            "\n"
            "  -c, --config FILE      configuration file (default " CONFIG_DEFAULT_FILE ";\n"
            "                         a missing default file means built-in defaults)\n"
            "  -p, --port PATH|auto   virtio-serial port device or UNIX stream socket; \"auto\"\n"
            "                         (default) uses /dev/virtio-ports/" CH_PORT_NAME " or\n"
            "                         finds the port by name in /sys/class/virtio-ports\n"
            "      --fallback MODE    when the lease expires: local (default; userspace v11\n"
            "                         policy), kernel (modprobe steal_governor), none (restore\n"
            "                         every online CPU)\n"
            "      --interval-ms N    fallback step interval, 100..100000 (default 1000)\n"
            "      --high N           steal %%x100 above which a core is removed (default 500)\n"
            "      --low N            steal %%x100 at or below which a core is added back\n"
            "                         (default 200; must be below --high)\n"
            "      --modprobe PATH    modprobe for --fallback kernel (default /sbin/modprobe)\n"
            "      --state-dir DIR    where guestd notes that it loaded steal_governor, so that\n"
            "                         it (and --restore) unloads only a module it loaded\n"
            "                         (default " CONFIG_DEFAULT_STATE_DIR ")\n"
            "      --log syslog|stderr  where log lines go (default stderr)\n"
            "      --log-level LEVEL  error, warning, info (default) or debug\n"
            "  -v, --verbose          same as --log-level debug\n"
            "  -f, --foreground       accepted for compatibility: the daemon never forks\n"
            "      --once             apply one hint from the port, or do one fallback step\n"
            "                         when none arrives within --interval-ms, print the result\n"
            "                         as one JSON line on stdout and exit\n"
            "      --restore          make every online CPU preferred again and exit\n"
            "      --dump-config      print the configuration in force and exit\n"
            "      --sysfs-root DIR   read /sys from DIR (tests)\n"
            "      --proc-root DIR    read /proc from DIR (tests)\n"
            "      --dev-root DIR     look for \"auto\" port devices in DIR (tests)\n"
            "  -h, --help             show this help and exit\n"
            "  -V, --version          show the version and exit\n"
            "\n"
            "Signals: SIGTERM/SIGINT restore every online CPU and exit 0; SIGHUP reloads the\n"
            "configuration (the old one stays in force if the new one has errors).\n"
            "See corehint-guestd(8).\n",
            prog);
}
