// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * corehint-hostd: wiring only.  Start-up in dependency order (config, log, event base,
 * engine, registry, actuators, HTTP, privileges, the snapshot source, timers), shutdown in
 * reverse.  The snapshot source (source.h: live libvirt, --once or --replay) feeds every
 * snapshot through hd_feed(), which it is given with hd_deliver() and hd_print_report() as
 * its sink; the event loop never calls libvirt.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "corehint/log.h"
#include "hostd.h"
#include "notify.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: corehint-hostd [-c FILE] [--connect URI] [--interval-ms N] [--once]\n"
        "                      [--dry-run] [--record F | --replay F] [--foreground]\n"
        "                      [--metrics-listen ADDR:PORT] [--channel-dir D] [--replay-realtime]\n"
        "                      [--user NAME [--groups G,...]]\n"
        "                      [--dump-config | --check-config] [-v] [--help] [--version]\n"
        "\n"
        "  -c, --config FILE   configuration file (default " CFG_DEFAULT_FILE ")\n"
        "      --connect URI   libvirt URI (default " CFG_DEFAULT_URI ")\n"
        "      --interval-ms N sampling and decision interval\n"
        "      --once          sample twice one interval apart, print one JSON document\n"
        "      --dry-run       decide and log, send nothing\n"
        "      --record F      append every sample to F as JSON lines\n"
        "      --replay F      run from a recorded trace instead of libvirt; prints one\n"
        "                      JSON document per decision (JSON lines)\n"
        "      --replay-realtime  replay one sample per interval, deliver hints, serve\n"
        "                      HTTP, and keep the last decision after the trace ends\n"
        "      --channel-dir D replay: the channel of domain NAME is D/NAME.sock\n"
        "      --metrics-listen ADDR:PORT  /metrics and /status (default " CFG_DEFAULT_LISTEN ";\n"
        "                      \"\" turns HTTP off; port 0 picks a free port)\n"
        "      --user NAME     after start-up (listener bound, record file open) switch to\n"
        "                      user NAME, before connecting to libvirt; needs root\n"
        "      --groups G,...  extra supplementary groups for --user (e.g. libvirt,libvirt-qemu:\n"
        "                      the libvirt socket and qemu's channel sockets)\n"
        "      --foreground    do not detach; log to stderr\n"
        "      --dump-config   print the configuration in force and exit\n"
        "      --check-config  load and check the file and options, say \"valid\" or why not\n"
        "                      (exit 0; 1: the file; 2: an option, or settings in conflict),\n"
        "                      start nothing\n"
        "  -v, --verbose       more logging (twice: debug)\n");
}

enum {
    OPT_CONNECT = 256,
    OPT_INTERVAL,
    OPT_ONCE,
    OPT_DRY,
    OPT_RECORD,
    OPT_REPLAY,
    OPT_FG,
    OPT_DUMP,
    OPT_HELP,
    OPT_VERSION,
    OPT_LISTEN,
    OPT_CHANDIR,
    OPT_REALTIME,
    OPT_USER,
    OPT_GROUPS,
    OPT_CHECK,
};

static const struct option options[] = {
    {"config", required_argument, NULL, 'c'},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"interval-ms", required_argument, NULL, OPT_INTERVAL},
    {"once", no_argument, NULL, OPT_ONCE},
    {"dry-run", no_argument, NULL, OPT_DRY},
    {"record", required_argument, NULL, OPT_RECORD},
    {"replay", required_argument, NULL, OPT_REPLAY},
    {"foreground", no_argument, NULL, OPT_FG},
    {"dump-config", no_argument, NULL, OPT_DUMP},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"metrics-listen", required_argument, NULL, OPT_LISTEN},
    {"channel-dir", required_argument, NULL, OPT_CHANDIR},
    {"replay-realtime", no_argument, NULL, OPT_REALTIME},
    {"user", required_argument, NULL, OPT_USER},
    {"groups", required_argument, NULL, OPT_GROUPS},
    {"check-config", no_argument, NULL, OPT_CHECK},
    {NULL, 0, NULL, 0},
};

/* The configuration file, made absolute at the first load: a SIGHUP after daemon() (which
 * changes to /) must read the same file. */
static char config_file[PATH_MAX];
static bool config_explicit;

/*
 * Defaults, then the file, then the command line, into c.  Returns 0, or the exit code (1: the
 * file cannot be read or holds a bad value; 2: a bad option value, or settings that contradict
 * each other) with the reason in err.  The first pass (configure) has handled --help, --version and
 * unknown options; SIGHUP calls this again with the same argv.
 */
static int load_config(struct hd_config *c, int argc, char **argv, bool *dump, char *err,
                       size_t errlen)
{
    int opt, rc = 0;

    cfg_defaults(c);
    if (!config_file[0]) {
        const char *file = CFG_DEFAULT_FILE;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "c:v", options, NULL)) != -1)
            if (opt == 'c') {
                file = optarg;
                config_explicit = true;
            }
        if (!realpath(file, config_file)) /* (missing: the load below says so) */
            snprintf(config_file, sizeof(config_file), "%s", file);
    }
    if (cfg_load_file(c, config_file, config_explicit, err, errlen) < 0)
        return 1;
    optind = 1;
    /* every option is scanned, none applied after an error: getopt is left at the end */
    while ((opt = getopt_long(argc, argv, "c:v", options, NULL)) != -1) {
        if (rc < 0)
            continue;
        switch (opt) {
        case OPT_CONNECT:
            rc = cfg_set(c, "connect", optarg, err, errlen);
            break;
        case OPT_INTERVAL:
            rc = cfg_set(c, "interval_ms", optarg, err, errlen);
            break;
        case OPT_ONCE:
            c->once = true;
            break;
        case OPT_DRY:
            c->dry_run = true;
            break;
        case OPT_RECORD:
            snprintf(c->record, sizeof(c->record), "%s", optarg);
            break;
        case OPT_REPLAY:
            snprintf(c->replay, sizeof(c->replay), "%s", optarg);
            break;
        case OPT_LISTEN:
            rc = cfg_set(c, "metrics_listen", optarg, err, errlen);
            break;
        case OPT_CHANDIR:
            rc = cfg_set(c, "channel_dir", optarg, err, errlen);
            break;
        case OPT_REALTIME:
            c->replay_realtime = true;
            break;
        case OPT_USER:
            rc = cfg_set(c, "user", optarg, err, errlen);
            break;
        case OPT_GROUPS:
            rc = cfg_set(c, "groups", optarg, err, errlen);
            break;
        case OPT_FG:
            c->foreground = true;
            break;
        case OPT_DUMP:
            *dump = true;
            break;
        case 'v':
            c->verbose++;
            break;
        default:
            break;
        }
    }
    if (rc == 0)
        rc = cfg_check(c, err, errlen);
    return rc < 0 ? 2 : 0;
}

/* The command line, kept for SIGHUP. */
static int saved_argc;
static char **saved_argv;

/* Returns -1 to continue, else an exit code. */
static int configure(struct hostd *h, int argc, char **argv, bool *dump, bool *check)
{
    char err[512] = "";
    int opt, rc;

    cfg_defaults(&h->cfg);
    while ((opt = getopt_long(argc, argv, "c:v", options, NULL)) != -1) {
        if (opt == OPT_HELP) {
            usage(stdout);
            return 0;
        } else if (opt == OPT_VERSION) {
            printf("corehint-hostd %s\n", COREHINT_VERSION);
            return 0;
        } else if (opt == OPT_CHECK) {
            *check = true;
        } else if (opt == '?') {
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "corehint-hostd: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    saved_argc = argc;
    saved_argv = argv;
    if ((rc = load_config(&h->cfg, argc, argv, dump, err, sizeof(err))) == 0)
        rc = priv_resolve(&h->priv, h->cfg.user, h->cfg.groups, err, sizeof(err)) < 0 ? 2 : 0;
    if (rc) {
        fprintf(stderr, "corehint-hostd: %s\n", err);
        return rc;
    }
    return -1;
}

/*
 * SIGHUP: read the file and the command line again; a configuration that does not load or
 * check keeps the one in force, and says why.
 */
static void reload(struct hostd *h)
{
    struct hd_config next;
    char err[512] = "", kept[256], changed[512];
    bool dump = false;

    notify_send("RELOADING=1");
    if (load_config(&next, saved_argc, saved_argv, &dump, err, sizeof(err)) != 0) {
        log_msg(LOG_LVL_ERR, "reload: %s; the configuration in force stays", err);
        cfg_free(&next);
        notify_send("READY=1");
        return;
    }
    if (cfg_reload(&h->cfg, &next, h->src.rw, kept, sizeof(kept), changed, sizeof(changed), err,
                   sizeof(err)) < 0) {
        log_msg(LOG_LVL_ERR, "reload: not taken: %s; the configuration in force stays", err);
        cfg_free(&next);
        notify_send("READY=1");
        return;
    }
    if (kept[0])
        log_msg(LOG_LVL_WARN, "reload: only a restart changes %s; the old values stay", kept);
    log_msg(LOG_LVL_INFO, "configuration reloaded from %s: %s",
            h->cfg.file[0] ? h->cfg.file : "built-in defaults",
            changed[0] ? changed : "nothing changed");
    notify_send("READY=1");
}

/* The source's sink (struct src_sink), each with the struct hostd as ctx. */

static void hd_print_report(void *ctx, int flags)
{
    struct hostd *h = ctx;
    json_object *r = eng_report(&h->eng);

    if (!r)
        return;
    enf_annotate(&h->enf, r);
    printf("%s\n", json_object_to_json_string_ext(r, flags));
    fflush(stdout);
    json_object_put(r);
}

static void hd_deliver(void *ctx, uint64_t now)
{
    struct hostd *h = ctx;
    uint64_t limit = (uint64_t)h->cfg.stale_intervals * h->cfg.interval_ms;
    bool stale = h->eng.decided && now - h->eng.last_decided_ms > limit;

    if (stale && !h->eng.stale) {
        h->eng.stale_episodes++;
        log_msg(LOG_LVL_WARN,
                "no decision for %llu ms (libvirt %s): widening every guest to all its vCPUs",
                (unsigned long long)(now - h->eng.last_decided_ms),
                h->eng.connected ? "is not answering" : "is not connected");
    } else if (!stale && h->eng.stale) {
        log_msg(LOG_LVL_INFO, "deciding again after %llu stale intervals",
                (unsigned long long)h->eng.stale_episodes);
    }
    h->eng.stale = stale;
    if (!h->src.delivers || !h->eng.decided)
        return;
    act_apply(&h->act, &h->eng, stale);
    h->last_apply_ms = now;
}

static int hd_feed(void *ctx, struct snapshot *s, unsigned gen)
{
    struct hostd *h = ctx;
    int rc;

    act_annotate(&h->act, s, &h->eng);
    if (h->src.delivers)
        act_track(&h->act, s);
    if ((rc = eng_feed(&h->eng, s, gen)) <= 0)
        return rc;
    /* (on -ENOMEM act_apply() and enf_apply() try again) */
    (void)reg_sync(&h->reg, &h->eng);
    h->src.ops->decided(&h->src);
    return rc;
}

static const struct src_sink hd_sink = {
    .feed = hd_feed,
    .deliver = hd_deliver,
    .report = hd_print_report,
};

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    notify_send("WATCHDOG=1");
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct hostd *h = arg;

    if (sig == SIGHUP) {
        reload(h);
        return;
    }
    log_msg(LOG_LVL_INFO, "signal %d: exiting", (int)sig);
    notify_send("STOPPING=1");
    event_base_loopexit(h->base, NULL);
}

static int start(struct hostd *h)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    char err[512];
    int rc;

    if (!(h->base = event_base_new())) {
        log_msg(LOG_LVL_ERR, "cannot create the event loop");
        return -ENOMEM;
    }
    for (unsigned i = 0; i < 3; i++) {
        h->sigs[i] = evsignal_new(h->base, signals[i], on_signal, h);
        if (!h->sigs[i] || evsignal_add(h->sigs[i], NULL) < 0)
            return -ENOMEM;
    }
    if (h->cfg.record[0] && !(h->record = fopen(h->cfg.record, "ae"))) {
        log_msg(LOG_LVL_ERR, "cannot open %s: %s", h->cfg.record, strerror(errno));
        return -errno;
    }
    eng_init(&h->eng, &h->cfg, h->record);
    h->eng.live = h->src.live;
    reg_init(&h->reg);
    act_init(&h->act, h->base, &h->cfg, &h->reg, h->src.agent, &h->src);
    enf_init(&h->enf, &h->cfg, &h->reg, h->src.quota, &h->src);
    if (h->src.delivers && h->cfg.metrics_listen[0] &&
        !(h->http = http_start(h->base, h->cfg.metrics_listen, &h->eng, &h->reg, &h->act, &h->enf,
                               &h->cfg)))
        return -EADDRNOTAVAIL;
    /* Everything that may need root is done: give it up before the first libvirt call. */
    if (priv_apply(&h->priv, err, sizeof(err)) < 0) {
        log_msg(LOG_LVL_ERR, "%s", err);
        return -EPERM;
    }
    if (h->priv.active) {
        char who[512];
        priv_describe(&h->priv, who, sizeof(who));
        log_msg(LOG_LVL_INFO, "running as %s", who);
    }
    if ((rc = h->src.ops->start(&h->src)) < 0)
        return rc;
    if (notify_watchdog_usec() && h->src.watchdog) {
        /* Pet at half the period systemd asked for, from the loop itself: a stuck loop dies. */
        uint64_t us = notify_watchdog_usec() / 2;
        struct timeval tv = {(time_t)(us / 1000000), (long)(us % 1000000)};
        if (!(h->watchdog = event_new(h->base, -1, EV_PERSIST, on_watchdog, h)) ||
            event_add(h->watchdog, &tv) < 0)
            return -ENOMEM;
    }
    if (h->src.live) {
        /* Serving HTTP and holding leases is being ready; libvirt may come later. */
        notify_send("READY=1\nSTATUS=waiting for libvirt");
    }
    return 0;
}

static void stop(struct hostd *h)
{
    if (h->watchdog)
        event_free(h->watchdog);
    http_stop(h->http);
    if (h->src.delivers && h->base) {
        unsigned n = act_release(&h->act, &h->eng);
        if (n)
            log_msg(LOG_LVL_INFO, "released %u guests to all their vCPUs", n);
    }
    act_finalise(&h->act);
    enf_finalise(&h->enf); /* queues the cap releases: the live source's worker drains them */
    if (h->src.ops)
        h->src.ops->stop(&h->src);
    reg_finalise(&h->reg);
    eng_finalise(&h->eng);
    if (h->record)
        fclose(h->record);
    for (unsigned i = 0; i < 3; i++)
        if (h->sigs[i])
            event_free(h->sigs[i]);
    if (h->base)
        event_base_free(h->base);
    cfg_free(&h->cfg);
}

int main(int argc, char **argv)
{
    static struct hostd h;
    bool dump = false, check = false;
    int rc;

    if ((rc = configure(&h, argc, argv, &dump, &check)) >= 0) {
        cfg_free(&h.cfg);
        return rc;
    }
    if (check) {
        printf("%s: valid\n", h.cfg.file[0] ? h.cfg.file : "no file; built-in defaults");
        cfg_free(&h.cfg);
        return 0;
    }
    if (dump) {
        cfg_dump(&h.cfg, stdout);
        cfg_free(&h.cfg);
        return 0;
    }
    /* A guest's channel closing under a write must be an EPIPE, not the end of hostd. */
    signal(SIGPIPE, SIG_IGN);
    src_select(&h.src, &h, &hd_sink, &h);
    bool detach = !h.cfg.foreground && h.src.live;
    notify_init();
    log_init("corehint-hostd",
             h.cfg.verbose >= 2 ? LOG_LVL_DEBUG
             : h.cfg.verbose    ? LOG_LVL_INFO
                                : LOG_LVL_WARN,
             detach);
    if (h.src.delivers)
        log_set_level(h.cfg.verbose >= 2 ? LOG_LVL_DEBUG : LOG_LVL_INFO);
    if (detach && daemon(0, 0) < 0) {
        log_msg(LOG_LVL_ERR, "cannot detach: %s", strerror(errno));
        return 1;
    }
    if (start(&h) < 0) {
        stop(&h);
        log_finalise();
        return 1;
    }
    event_base_dispatch(h.base);
    rc = h.exit_code;
    stop(&h);
    log_finalise();
    return rc;
}
