// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * corehint-guestd: wiring only.  Options and config, then log, event base, control (the
 * state machine) and port in dependency order; the loop; shutdown in reverse.
 */
#include <errno.h>
#include <event2/event.h>
#include <json-c/linkhash.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "control.h"
#include "corehint/log.h"
#include "corehint/proto.h"
#include "fallback.h"
#include "mask.h"
#include "notify.h"
#include "port.h"

struct daemon {
    int argc;
    char **argv;
    struct config cfg[2]; /* the one in force and the one a reload builds */
    unsigned cur;
    struct event_base *base;
    struct control *control;
    struct port *port;
    struct event *watchdog; /* WATCHDOG=1 every half of $WATCHDOG_USEC, when systemd asks */
};

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;

    log_msg(LOG_LVL_INFO, "signal %d: stopping", (int)sig);
    notify_send("STOPPING=1");
    event_base_loopexit(d->base, NULL);
}

static void on_reload(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;
    struct config *next = &d->cfg[d->cur ^ 1];
    char err[512];

    if (config_load(next, d->argc, d->argv, err, sizeof(err)) < 0) {
        log_msg(LOG_LVL_ERR, "reload: %s; keeping the configuration in force", err);
        return;
    }
    next->action = d->cfg[d->cur].action;
    d->cur ^= 1;
    log_set_level(next->log_level);
    control_reconfigure(d->control, next);
    port_reconfigure(d->port, next);
    log_msg(LOG_LVL_INFO, "reloaded %s", next->file);
    notify_send("READY=1");
}

/*
 * --restore (ExecStopPost=, or by hand after a crash): unload a steal_governor of ours, then
 * release the mask, written even when it already reads as every online CPU.  When an in-kernel
 * policy someone else loaded owns the mask (EBUSY) this exits 0: its claim ended our request,
 * and its unload makes every CPU preferred again (README.md, "Restore and the watchdog").
 */
static int restore(const struct config *cfg)
{
    struct mask_backend mask;
    int rc;

    if ((rc = mask_sysfs_open(&mask, cfg->sysfs_root)) < 0) {
        log_msg(LOG_LVL_ERR, "cannot restore: %s", strerror(-rc));
        return rc;
    }
    if ((rc = fallback_unload_module(cfg)) < 0) {
        /* our own governor still owns the mask, and nobody else will unload it: the EBUSY
         * mask_restore() would meet is no "someone else's policy", but a failed restore */
        log_msg(LOG_LVL_ERR, "cannot restore: %s (loaded by corehint-guestd) did not unload: %s",
                FALLBACK_MODULE, strerror(-rc));
        mask_close(&mask);
        return rc;
    }
    rc = mask_restore(&mask);
    mask_close(&mask);
    return rc;
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    notify_send("WATCHDOG=1");
}

/* systemd's WatchdogSec=: a keep-alive from the loop at half the period, as sd_notify(3)
 * advises.  A loop that hangs stops sending, and systemd kills and restarts the daemon (whose
 * ExecStopPost= --restore gives every CPU back). */
static int start_watchdog(struct daemon *d)
{
    uint64_t usec = notify_watchdog_usec();

    if (!usec)
        return 0;
    usec /= 2;
    struct timeval tv = {.tv_sec = (time_t)(usec / 1000000),
                         .tv_usec = (suseconds_t)(usec % 1000000)};
    d->watchdog = event_new(d->base, -1, EV_PERSIST, on_watchdog, d);
    if (!d->watchdog || event_add(d->watchdog, &tv) < 0)
        return -ENOMEM;
    log_msg(LOG_LVL_DEBUG, "watchdog: WATCHDOG=1 every %llu ms", (unsigned long long)usec / 1000);
    notify_send("WATCHDOG=1");
    return 0;
}

static int run(struct daemon *d)
{
    const struct config *cfg = &d->cfg[d->cur];
    struct event *sig[4] = {NULL};
    int rc = -ENOMEM;

    signal(SIGPIPE, SIG_IGN);
    d->base = event_base_new();
    if (!d->base)
        goto cleanup;
    d->control = control_new(d->base, cfg);
    if (!d->control)
        goto cleanup;
    d->port = port_new(d->base, cfg, &control_port_ops, d->control);
    if (!d->port)
        goto cleanup;
    control_attach_port(d->control, d->port);
    sig[0] = evsignal_new(d->base, SIGTERM, on_stop, d);
    sig[1] = evsignal_new(d->base, SIGINT, on_stop, d);
    sig[2] = evsignal_new(d->base, SIGHUP, on_reload, d);
    for (unsigned i = 0; i < 3; i++)
        if (!sig[i] || event_add(sig[i], NULL) < 0)
            goto cleanup;
    if (cfg->action == ACTION_RUN && (rc = start_watchdog(d)) < 0)
        goto cleanup;
    if ((rc = control_start(d->control)) < 0)
        goto cleanup;
    port_start(d->port);
    log_msg(LOG_LVL_INFO, "running (port %s, fallback %s, interval %u ms)", cfg->port,
            config_fallback_name(cfg->fallback), cfg->interval_ms);
    if (cfg->action == ACTION_RUN && notify_send("READY=1") < 0)
        log_msg(LOG_LVL_WARN, "cannot notify systemd through $NOTIFY_SOCKET");
    event_base_dispatch(d->base);
    rc = control_stop(d->control);
    if (cfg->action == ACTION_ONCE)
        rc = control_once_result(d->control, stdout) ? -EAGAIN : 0;
cleanup:
    if (rc == -ENOMEM)
        log_msg(LOG_LVL_ERR, "out of memory during start-up");
    for (unsigned i = 0; i < 3; i++)
        if (sig[i])
            event_free(sig[i]);
    if (d->watchdog)
        event_free(d->watchdog);
    port_free(d->port);
    control_free(d->control);
    if (d->base)
        event_base_free(d->base);
    return rc;
}

int main(int argc, char **argv)
{
    static struct daemon d;
    char err[512];
    int rc;

    /* json-c seeds its object-key hash from the kernel's random pool the first time it builds
     * an object.  Early in a guest without a hardware RNG (no RDRAND, no virtio-rng) that read
     * waits for the pool: the kernel generates entropy from timer jitter on every vCPU, and a
     * TCG guest was measured spending 1.1-1.4 s of both vCPUs in it at its first message.
     * Keys here are the protocol's handful, in lines the host sends: the unseeded hash does. */
    json_global_set_string_hash(JSON_C_STR_HASH_PERLLIKE);
    d.argc = argc;
    d.argv = argv;
    if (config_load(&d.cfg[0], argc, argv, err, sizeof(err)) < 0) {
        fprintf(stderr, "corehint-guestd: %s\n", err);
        return 2;
    }
    const struct config *cfg = &d.cfg[0];
    switch (cfg->action) {
    case ACTION_HELP:
        config_usage(stdout, "corehint-guestd");
        return 0;
    case ACTION_VERSION:
        printf("corehint-guestd %s (protocol v%d)\n", COREHINT_VERSION, CH_PROTO_VERSION);
        return 0;
    case ACTION_DUMP:
        config_dump(cfg, stdout);
        return 0;
    default:
        break;
    }
    log_init("corehint-guestd", cfg->log_level, cfg->log_syslog);
    rc = cfg->action == ACTION_RESTORE ? restore(cfg) : run(&d);
    log_finalise();
    libevent_global_shutdown();
    return rc < 0 ? 1 : 0;
}
