/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config: defaults, then the file (default /etc/corehint/guestd.conf; a missing default file
 * means defaults), then the command line.  Every value is range-checked; errors name the file
 * and line, or the option.  A loaded config is never modified: SIGHUP loads a new one.
 */
#ifndef GUESTD_CONFIG_H
#define GUESTD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "corehint/log.h"

#ifdef COREHINT_GUESTD_CONF
#define CONFIG_DEFAULT_FILE COREHINT_GUESTD_CONF
#else
#define CONFIG_DEFAULT_FILE "/etc/corehint/guestd.conf"
#endif
#define CONFIG_PORT_AUTO "auto"
#define CONFIG_DEFAULT_STATE_DIR "/run/corehint-guestd"

enum fallback_kind {
    FALLBACK_LOCAL,  /* our userspace port of the v11 policy */
    FALLBACK_KERNEL, /* load the in-kernel steal_governor module */
    FALLBACK_NONE,   /* restore the full online set and leave it */
};

enum config_action {
    ACTION_RUN,
    ACTION_ONCE,    /* apply one hint (or do one fallback step), print the result, exit */
    ACTION_RESTORE, /* write the full online set, exit */
    ACTION_DUMP,    /* print the configuration in force, exit */
    ACTION_HELP,
    ACTION_VERSION,
};

struct config {
    char file[PATH_MAX];
    char port[PATH_MAX]; /* "auto", a character device or a UNIX socket */
    char sysfs_root[PATH_MAX];
    char proc_root[PATH_MAX];
    char dev_root[PATH_MAX]; /* where "auto" looks for port devices */
    char modprobe[PATH_MAX];
    char state_dir[PATH_MAX]; /* what must outlive the process: who loaded steal_governor */
    enum fallback_kind fallback;
    unsigned interval_ms;
    unsigned high; /* steal_pct_x100 */
    unsigned low;
    enum log_level log_level;
    bool log_syslog;
    enum config_action action;
};

/*
 * Build a config from argv.  Returns 0, or -EINVAL/-ERANGE/-errno with a message in err
 * ("FILE:LINE: ..." or "--option: ...").  The same argv gives the same result, which is what
 * reloading on SIGHUP relies on.
 */
int config_load(struct config *cfg, int argc, char *const argv[], char *err, size_t errlen);
void config_dump(const struct config *cfg, FILE *out);
void config_usage(FILE *out, const char *prog);
const char *config_fallback_name(enum fallback_kind f);

#endif
