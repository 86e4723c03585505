// SPDX-License-Identifier: LGPL-2.1-or-later
#include "fallback.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "corehint/log.h"

extern char **environ;

void fallback_init(struct fallback *f, const struct config *cfg, const struct sysfs *sys)
{
    memset(f, 0, sizeof(*f));
    f->cfg = cfg;
    f->sys = sys;
    f->kind = cfg->fallback;
}

void fallback_reconfigure(struct fallback *f, const struct config *cfg)
{
    f->cfg = cfg;
}

int fallback_run(const char *const argv[])
{
    pid_t pid;
    int status, rc;

    /* modprobe takes milliseconds; waiting in the loop is simpler than a SIGCHLD handler. */
    rc = posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ);
    if (rc != 0) {
        log_msg(LOG_LVL_ERR, "cannot run %s: %s", argv[0], strerror(rc));
        return -rc;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    log_msg(LOG_LVL_ERR, "%s %s failed (%s %d)", argv[0], argv[1],
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return -ECHILD;
}

static int load_module(struct fallback *f)
{
    char interval[32], high[32], low[32];

    snprintf(interval, sizeof(interval), "interval_ms=%u", f->cfg->interval_ms);
    snprintf(high, sizeof(high), "high_threshold=%u", f->cfg->high);
    snprintf(low, sizeof(low), "low_threshold=%u", f->cfg->low);
    const char *const argv[] = {f->cfg->modprobe, FALLBACK_MODULE, interval, high, low, NULL};
    int rc = fallback_run(argv);
    if (rc == 0)
        log_msg(LOG_LVL_INFO, "fallback: loaded %s (%s %s %s)", FALLBACK_MODULE, interval, high,
                low);
    return rc;
}

static int unload_module(const char *modprobe)
{
    const char *const argv[] = {modprobe, "-r", FALLBACK_MODULE, NULL};
    int rc = fallback_run(argv);
    if (rc == 0)
        log_msg(LOG_LVL_INFO, "fallback: unloaded %s", FALLBACK_MODULE);
    return rc;
}

int fallback_unload_module(const struct config *cfg, const struct sysfs *sys)
{
    if (!sysfs_module_loaded(sys, FALLBACK_MODULE))
        return 0;
    return unload_module(cfg->modprobe);
}

static int write_set(const struct fallback *f, const ch_cpuset *want, ch_cpuset *applied)
{
    int rc = sysfs_write_preferred(f->sys, want);
    if (rc < 0)
        return rc;
    bool changed = !ch_cpuset_equal(applied, want);
    *applied = *want;
    return changed ? 1 : 0;
}

int fallback_enter(struct fallback *f, const struct sample *cur, ch_cpuset *applied)
{
    int rc = 0;

    f->active = true;
    f->kind = f->cfg->fallback;
    switch (f->kind) {
    case FALLBACK_LOCAL:
        break; /* the first step comes with the next interval's sample */
    case FALLBACK_KERNEL:
        if (sysfs_module_loaded(f->sys, FALLBACK_MODULE)) {
            log_msg(LOG_LVL_INFO, "fallback: %s is already loaded; leaving it alone",
                    FALLBACK_MODULE);
            break;
        }
        if ((rc = load_module(f)) == 0) {
            f->module_ours = true;
            break;
        }
        log_msg(LOG_LVL_WARN, "fallback: %s unavailable, using the local governor instead",
                FALLBACK_MODULE);
        f->kind = FALLBACK_LOCAL;
        rc = 0;
        break;
    case FALLBACK_NONE:
        rc = write_set(f, &cur->online, applied);
        break;
    }
    ch_cpuset now;
    if (sysfs_read_preferred(f->sys, &now) == 0)
        *applied = now;
    return rc < 0 ? rc : 0;
}

int fallback_tick(struct fallback *f, const struct sample *prev, const struct sample *cur,
                  ch_cpuset *applied, enum governor_action *action)
{
    *action = GOV_HOLD;
    switch (f->kind) {
    case FALLBACK_LOCAL: {
        if (!prev->have_stat || !cur->have_stat) {
            *action = GOV_NO_SAMPLE;
            return 0;
        }
        struct governor_input in = {
            .prev = &prev->stat,
            .cur = &cur->stat,
            .online = &cur->online,
            .isolated = &cur->isolated,
            .topo = &cur->topo,
            .preferred = applied,
            .params = {.high = f->cfg->high, .low = f->cfg->low},
        };
        struct governor_output out;
        governor_step(&in, &out);
        *action = out.action;
        if (ch_cpuset_equal(&out.preferred, applied))
            return 0;
        return write_set(f, &out.preferred, applied);
    }
    case FALLBACK_KERNEL: {
        /* The module owns the file; report what it did. */
        ch_cpuset now;
        if (sysfs_read_preferred(f->sys, &now) < 0 || ch_cpuset_equal(&now, applied))
            return 0;
        *applied = now;
        return 1;
    }
    case FALLBACK_NONE:
        return write_set(f, &cur->online, applied); /* follows hotplug */
    }
    return 0;
}

int fallback_leave(struct fallback *f)
{
    int rc = 0;

    if (f->active && f->module_ours) {
        rc = unload_module(f->cfg->modprobe);
        f->module_ours = false;
    }
    f->active = false;
    return rc;
}
