// SPDX-License-Identifier: LGPL-2.1-or-later
#include "fallback.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corehint/log.h"

extern char **environ;

/* <state_dir>/steal_governor.loaded exists while a guestd's load of the module stands. */
static int marker_path(const struct config *cfg, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%s.loaded", cfg->state_dir, FALLBACK_MODULE);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool marker_exists(const struct config *cfg)
{
    char path[PATH_MAX];
    struct stat st;

    return marker_path(cfg, path, sizeof(path)) == 0 && stat(path, &st) == 0;
}

static void marker_set(const struct config *cfg)
{
    char path[PATH_MAX], text[32];
    int fd = -1;

    if (marker_path(cfg, path, sizeof(path)) == 0) {
        (void)mkdir(cfg->state_dir, 0755); /* systemd's RuntimeDirectory= made it already */
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
        log_msg(LOG_LVL_WARN,
                "fallback: cannot note in %s that we loaded %s (%s): a restarted guestd will "
                "leave it loaded",
                cfg->state_dir, FALLBACK_MODULE, strerror(errno));
        return;
    }
    int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    if (write(fd, text, (size_t)n) != n)
        log_msg(LOG_LVL_WARN, "fallback: writing %s: %s", path, strerror(errno));
    close(fd);
}

static void marker_clear(const struct config *cfg)
{
    char path[PATH_MAX];

    if (marker_path(cfg, path, sizeof(path)) == 0 && unlink(path) < 0 && errno != ENOENT)
        log_msg(LOG_LVL_WARN, "fallback: cannot remove %s: %s", path, strerror(errno));
}

void fallback_init(struct fallback *f, const struct config *cfg, const struct sysfs *sys)
{
    memset(f, 0, sizeof(*f));
    f->cfg = cfg;
    f->sys = sys;
    f->kind = cfg->fallback;
    if (!marker_exists(cfg))
        return;
    if (sysfs_module_loaded(sys, FALLBACK_MODULE)) {
        /* An earlier guestd loaded it and did not get to unload it (killed, crashed). */
        log_msg(LOG_LVL_INFO, "fallback: %s was loaded by an earlier corehint-guestd; ours to unload",
                FALLBACK_MODULE);
        f->module_ours = true;
    } else {
        marker_clear(cfg);
    }
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
    if (rc == 0) {
        log_msg(LOG_LVL_INFO, "fallback: loaded %s (%s %s %s)", FALLBACK_MODULE, interval, high,
                low);
        marker_set(f->cfg);
    }
    return rc;
}

static int unload_module(const struct config *cfg)
{
    const char *const argv[] = {cfg->modprobe, "-r", FALLBACK_MODULE, NULL};
    int rc = fallback_run(argv);
    if (rc == 0) {
        log_msg(LOG_LVL_INFO, "fallback: unloaded %s", FALLBACK_MODULE);
        marker_clear(cfg);
    }
    return rc;
}

int fallback_unload_module(const struct config *cfg, const struct sysfs *sys)
{
    bool ours = marker_exists(cfg);

    if (!sysfs_module_loaded(sys, FALLBACK_MODULE)) {
        if (ours)
            marker_clear(cfg);
        return 0;
    }
    if (!ours) {
        log_msg(LOG_LVL_INFO, "%s was not loaded by corehint-guestd: leaving it loaded",
                FALLBACK_MODULE);
        return 0;
    }
    return unload_module(cfg);
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
    if (f->kind != FALLBACK_KERNEL && f->module_ours && unload_module(f->cfg) == 0)
        f->module_ours = false; /* an earlier guestd's, configured differently */
    switch (f->kind) {
    case FALLBACK_LOCAL:
        break; /* the first step comes with the next interval's sample */
    case FALLBACK_KERNEL:
        if (sysfs_module_loaded(f->sys, FALLBACK_MODULE)) {
            if (!f->module_ours)
                log_msg(LOG_LVL_INFO, "fallback: %s is already loaded by someone else; leaving "
                                      "it alone",
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
        rc = unload_module(f->cfg);
        f->module_ours = rc < 0; /* still loaded, still ours */
    }
    f->active = false;
    return rc;
}
