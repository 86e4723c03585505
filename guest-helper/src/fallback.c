// SPDX-License-Identifier: LGPL-2.1-or-later
#include "fallback.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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

bool fallback_module_loaded(const struct config *cfg)
{
    char path[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof(path), "%s/module/%s", cfg->sysfs_root, FALLBACK_MODULE);

    return n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0;
}

void fallback_init(struct fallback *f, const struct config *cfg, const struct mask_backend *mask)
{
    memset(f, 0, sizeof(*f));
    f->cfg = cfg;
    f->mask = mask;
    f->kind = cfg->fallback;
    if (!marker_exists(cfg))
        return;
    if (fallback_module_loaded(cfg)) {
        /* An earlier guestd loaded it and did not get to unload it (killed, crashed). */
        log_msg(LOG_LVL_INFO,
                "fallback: %s was loaded by an earlier corehint-guestd; ours to unload",
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

static int spawn(const char *const argv[], pid_t *pid)
{
    int rc = posix_spawn(pid, argv[0], NULL, NULL, (char *const *)argv, environ);

    if (rc != 0)
        log_msg(LOG_LVL_ERR, "cannot run %s: %s", argv[0], strerror(rc));
    return -rc;
}

/* 0 for exit status 0, else -ECHILD, logged with the command's first two words. */
static int verdict(const char *prog, const char *arg, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    log_msg(LOG_LVL_ERR, "%s %s failed (%s %d)", prog, arg,
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return -ECHILD;
}

/* modprobe overran FALLBACK_CHILD_TIMEOUT_MS: say so, SIGKILL it and reap it. */
static void kill_overdue(pid_t pid, const char *prog, int *status)
{
    log_msg(LOG_LVL_ERR, "%s took more than %u ms: killed", prog, FALLBACK_CHILD_TIMEOUT_MS);
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* Wait for pid at most FALLBACK_CHILD_TIMEOUT_MS, then SIGKILL it.  Returns its status. */
static int reap_within(pid_t pid, const char *prog, int *status)
{
    struct timespec step = {0, 10L * 1000 * 1000};

    for (unsigned waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
        if (waited >= FALLBACK_CHILD_TIMEOUT_MS) {
            kill_overdue(pid, prog, status);
            return -ETIMEDOUT;
        }
        nanosleep(&step, NULL);
    }
}

int fallback_run(const char *const argv[])
{
    pid_t pid;
    int status, rc;

    if ((rc = spawn(argv, &pid)) < 0)
        return rc;
    if ((rc = reap_within(pid, argv[0], &status)) < 0)
        return rc;
    return verdict(argv[0], argv[1], status);
}

static void loaded(struct fallback *f, int rc)
{
    if (rc == 0) {
        log_msg(LOG_LVL_INFO,
                "fallback: loaded %s (interval_ms=%u high_threshold=%u "
                "low_threshold=%u)",
                FALLBACK_MODULE, f->cfg->interval_ms, f->cfg->high, f->cfg->low);
        f->module_ours = true;
        return;
    }
    if (!fallback_module_loaded(f->cfg))
        marker_clear(f->cfg);
    log_msg(LOG_LVL_WARN, "fallback: %s unavailable, using the local governor instead",
            FALLBACK_MODULE);
    f->kind = FALLBACK_LOCAL;
}

static void unloaded(struct fallback *f, int rc)
{
    if (rc == 0) {
        log_msg(LOG_LVL_INFO, "fallback: unloaded %s", FALLBACK_MODULE);
        marker_clear(f->cfg);
        f->module_ours = false;
    }
}

static void start_unload(struct fallback *f);

/* The running modprobe ended (status) or was killed (timed_out). */
static void child_done(struct fallback *f, int status, bool timed_out)
{
    bool load = f->child_loads;
    int rc =
        timed_out ? -ETIMEDOUT : verdict(f->cfg->modprobe, load ? FALLBACK_MODULE : "-r", status);

    f->child = 0;
    evtimer_del(f->ev_timeout);
    if (load)
        loaded(f, rc);
    else
        unloaded(f, rc);
    if (load && f->leave_after && f->module_ours) {
        start_unload(f); /* a hint came while loading: it waits for the unload */
        return;
    }
    f->leave_after = false;
    if (f->done)
        f->done(f->ctx, rc);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    struct fallback *f = arg;
    int status;

    if (f->child > 0 && waitpid(f->child, &status, WNOHANG) == f->child)
        child_done(f, status, false);
}

static void on_child_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct fallback *f = arg;
    int status = 0;

    if (f->child <= 0)
        return;
    kill_overdue(f->child, f->cfg->modprobe, &status);
    child_done(f, status, true);
}

/* Run argv: in the background when attached to a loop (the result comes to child_done),
 * else waited for here.  Returns 0 or -errno for the synchronous run, -EINPROGRESS when the
 * child runs in the background. */
static int run(struct fallback *f, const char *const argv[], bool load)
{
    struct timeval tv = {FALLBACK_CHILD_TIMEOUT_MS / 1000, 0};
    int rc;

    if (!f->ev_chld) {
        rc = fallback_run(argv);
        if (load)
            loaded(f, rc);
        else
            unloaded(f, rc);
        return rc;
    }
    if ((rc = spawn(argv, &f->child)) < 0) {
        f->child = 0;
        if (load)
            loaded(f, rc);
        return rc;
    }
    f->child_loads = load;
    evtimer_add(f->ev_timeout, &tv);
    return -EINPROGRESS;
}

static int load_module(struct fallback *f)
{
    char interval[32], high[32], low[32];

    snprintf(interval, sizeof(interval), "interval_ms=%u", f->cfg->interval_ms);
    snprintf(high, sizeof(high), "high_threshold=%u", f->cfg->high);
    snprintf(low, sizeof(low), "low_threshold=%u", f->cfg->low);
    const char *const argv[] = {f->cfg->modprobe, FALLBACK_MODULE, interval, high, low, NULL};
    /* Noted before it runs: a guestd killed while modprobe works leaves a module that the
     * next one (or --restore) must know to be ours.  A failed load removes the note. */
    marker_set(f->cfg);
    return run(f, argv, true);
}

static void start_unload(struct fallback *f)
{
    const char *const argv[] = {f->cfg->modprobe, "-r", FALLBACK_MODULE, NULL};
    int rc = run(f, argv, false);

    if (rc != -EINPROGRESS) {
        f->leave_after = false;
        if (f->done)
            f->done(f->ctx, rc);
    }
}

int fallback_attach(struct fallback *f, struct event_base *base, fallback_done_fn done, void *ctx)
{
    f->done = done;
    f->ctx = ctx;
    f->ev_chld = evsignal_new(base, SIGCHLD, on_sigchld, f);
    f->ev_timeout = evtimer_new(base, on_child_timeout, f);
    if (!f->ev_chld || !f->ev_timeout || event_add(f->ev_chld, NULL) < 0) {
        fallback_detach(f);
        return -ENOMEM;
    }
    return 0;
}

void fallback_detach(struct fallback *f)
{
    if (f->child > 0) {
        int status;
        if (reap_within(f->child, f->cfg->modprobe, &status) == 0)
            child_done(f, status, false);
        f->child = 0;
    }
    if (f->ev_chld)
        event_free(f->ev_chld);
    if (f->ev_timeout)
        event_free(f->ev_timeout);
    f->ev_chld = f->ev_timeout = NULL;
    f->done = NULL;
}

bool fallback_busy(const struct fallback *f)
{
    return f->child > 0;
}

bool fallback_owns_module(const struct fallback *f)
{
    return f->module_ours || (f->child > 0 && f->child_loads);
}

bool fallback_owns_mask(const struct fallback *f, const char *owner)
{
    return owner && strcmp(owner, FALLBACK_MODULE) == 0 && fallback_owns_module(f);
}

/* Synchronous unload, for --restore and for switching fallback kinds. */
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

int fallback_unload_module(const struct config *cfg)
{
    bool ours = marker_exists(cfg);

    if (!fallback_module_loaded(cfg)) {
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
    int rc = mask_write(f->mask, want);
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
    /* A kind other than kernel while our modprobe still loads the module (a reload right after
     * the fallback was entered): unload it once the load is done, or it stays loaded, owning
     * the mask, under a local governor that can then write nothing. */
    if (f->kind != FALLBACK_KERNEL && f->child > 0 && f->child_loads)
        f->leave_after = true;
    switch (f->kind) {
    case FALLBACK_LOCAL:
        break; /* the first step comes with the next interval's sample */
    case FALLBACK_KERNEL:
        if (fallback_module_loaded(f->cfg)) {
            if (!f->module_ours)
                log_msg(LOG_LVL_INFO,
                        "fallback: %s is already loaded by someone else; leaving "
                        "it alone",
                        FALLBACK_MODULE);
            break;
        }
        if (f->child > 0) {
            f->leave_after = false; /* (kernel again: a load in flight is wanted after all) */
            break;                  /* a load or unload still runs; its end decides */
        }
        load_module(f); /* loaded() falls back to the local governor on failure */
        rc = 0;
        break;
    case FALLBACK_NONE:
        rc = write_set(f, &cur->online, applied);
        break;
    }
    ch_cpuset now;
    if (mask_read(f->mask, &now) == 0)
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
        if (mask_read(f->mask, &now) < 0 || ch_cpuset_equal(&now, applied))
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

    if (f->child > 0) {
        /* modprobe is loading it (or unloading it already): unload once that is done. */
        f->active = false;
        if (f->child_loads)
            f->leave_after = true;
        return -EINPROGRESS;
    }
    if (f->active && f->module_ours) {
        const char *const argv[] = {f->cfg->modprobe, "-r", FALLBACK_MODULE, NULL};
        rc = run(f, argv, false);
    }
    f->active = false;
    return rc;
}
