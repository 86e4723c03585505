// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * corehint-hostd: wiring only.  Start-up in dependency order (config, log, event base,
 * engine, actuators, HTTP, privileges, libvirt worker, timers), shutdown in reverse.  The
 * event loop never calls libvirt: the tick asks the worker (worker.h) for a sample and keeps
 * the leases renewed; results come back as events.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "config.h"
#include "corehint/log.h"
#include "actuate.h"
#include "enforce.h"
#include "engine.h"
#include "http.h"
#include "notify.h"
#include "privdrop.h"
#include "record.h"
#include "registry.h"
#include "worker.h"

struct hostd {
    struct hd_config cfg;
    struct event_base *base;
    struct worker *wk;
    struct engine eng;
    struct registry reg;
    struct actuator act;
    struct enforcer enf;
    struct http_srv *http;
    struct privdrop priv;
    bool delivering; /* live daemon or paced replay: channels and HTTP are up */
    bool replay_done;
    struct event *watchdog;
    struct rec_reader *replay;
    FILE *record;
    struct event *tick;
    struct event *renew; /* half an interval after a tick that asked for a sample */
    uint64_t tick_ms;    /* when that tick ran */
    struct event *sigs[3];
    uint64_t slow_warned_ms; /* last "libvirtd is slow" warning */
    uint64_t last_apply_ms;  /* last time the leases were renewed */
    unsigned status_ndom;    /* domain count in the last STATUS= sent */
    bool denied_warned;
    int exit_code;
};

static const struct timeval zero_tv = {0, 0};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: corehint-hostd [-c FILE] [--connect URI] [--interval-ms N] [--once]\n"
        "                      [--dry-run] [--record F | --replay F] [--foreground]\n"
        "                      [--metrics-listen ADDR:PORT] [--channel-dir D] [--replay-realtime]\n"
        "                      [--user NAME [--groups G,...]]\n"
        "                      [--dump-config] [-v] [--help] [--version]\n"
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
    {NULL, 0, NULL, 0},
};

/* Defaults, then the file, then the command line.  Returns -1 to continue, else an exit code. */
static int configure(struct hostd *h, int argc, char **argv, bool *dump)
{
    const char *file = CFG_DEFAULT_FILE;
    bool explicit_file = false;
    char err[512] = "";
    int opt, rc = 0;

    cfg_defaults(&h->cfg);
    while ((opt = getopt_long(argc, argv, "c:v", options, NULL)) != -1) {
        if (opt == 'c') {
            file = optarg;
            explicit_file = true;
        } else if (opt == OPT_HELP) {
            usage(stdout);
            return 0;
        } else if (opt == OPT_VERSION) {
            printf("corehint-hostd %s\n", COREHINT_VERSION);
            return 0;
        } else if (opt == '?') {
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "corehint-hostd: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (cfg_load_file(&h->cfg, file, explicit_file, err, sizeof(err)) < 0) {
        fprintf(stderr, "corehint-hostd: %s\n", err);
        return 1;
    }
    optind = 1;
    while ((opt = getopt_long(argc, argv, "c:v", options, NULL)) != -1 && rc == 0) {
        switch (opt) {
        case OPT_CONNECT:
            rc = cfg_set(&h->cfg, "connect", optarg, err, sizeof(err));
            break;
        case OPT_INTERVAL:
            rc = cfg_set(&h->cfg, "interval_ms", optarg, err, sizeof(err));
            break;
        case OPT_ONCE:
            h->cfg.once = true;
            break;
        case OPT_DRY:
            h->cfg.dry_run = true;
            break;
        case OPT_RECORD:
            snprintf(h->cfg.record, sizeof(h->cfg.record), "%s", optarg);
            break;
        case OPT_REPLAY:
            snprintf(h->cfg.replay, sizeof(h->cfg.replay), "%s", optarg);
            break;
        case OPT_LISTEN:
            rc = cfg_set(&h->cfg, "metrics_listen", optarg, err, sizeof(err));
            break;
        case OPT_CHANDIR:
            rc = cfg_set(&h->cfg, "channel_dir", optarg, err, sizeof(err));
            break;
        case OPT_REALTIME:
            h->cfg.replay_realtime = true;
            break;
        case OPT_USER:
            rc = cfg_set(&h->cfg, "user", optarg, err, sizeof(err));
            break;
        case OPT_GROUPS:
            rc = cfg_set(&h->cfg, "groups", optarg, err, sizeof(err));
            break;
        case OPT_FG:
            h->cfg.foreground = true;
            break;
        case OPT_DUMP:
            *dump = true;
            break;
        case 'v':
            h->cfg.verbose++;
            break;
        default:
            break;
        }
    }
    if (rc == 0)
        rc = cfg_check(&h->cfg, err, sizeof(err));
    if (rc == 0)
        rc = priv_resolve(&h->priv, h->cfg.user, h->cfg.groups, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "corehint-hostd: %s\n", err);
        return 2;
    }
    return -1;
}

static void print_report(struct hostd *h, int flags)
{
    json_object *r = eng_report(&h->eng);

    if (!r)
        return;
    enf_annotate(&h->enf, r);
    printf("%s\n", json_object_to_json_string_ext(r, flags));
    fflush(stdout);
    json_object_put(r);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void arm_ms(struct hostd *h, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000};

    evtimer_add(h->tick, &tv);
}

static void set_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_status(const char *fmt, ...)
{
    char msg[512] = "STATUS=";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg + 7, sizeof(msg) - 7, fmt, ap);
    va_end(ap);
    notify_send(msg);
}

/* The leases: the latest decision, or all vCPUs once it is older than the staleness limit. */
static void deliver(struct hostd *h, uint64_t now)
{
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
    if (!h->delivering || !h->eng.decided)
        return;
    act_apply(&h->act, &h->eng, stale);
    h->last_apply_ms = now;
}

static void feed(struct hostd *h, struct wk_result *r)
{
    struct snapshot *s = r->snap;
    uint64_t now = mono_ms();
    int rc;

    h->eng.last_sample_ns = r->took_ms * 1000000u;
    if (r->rc < 0) {
        if (r->rc != -ENOTCONN)
            log_msg(LOG_LVL_DEBUG, "sample failed: %s", strerror(-r->rc));
        return;
    }
    r->snap = NULL; /* ours now */
    /* Say when libvirtd is slow, at most once a minute: the loop does not wait for it, but
     * the decisions do. */
    if (r->took_ms > h->cfg.interval_ms / 2 && now >= h->slow_warned_ms + 60000) {
        log_msg(LOG_LVL_WARN, "sample of %u domains took %llu ms (interval %u ms): libvirtd is slow",
                s->ndom, (unsigned long long)r->took_ms, h->cfg.interval_ms);
        h->slow_warned_ms = now;
    } else {
        log_msg(LOG_LVL_DEBUG, "sample of %u domains took %llu ms", s->ndom,
                (unsigned long long)r->took_ms);
    }
    if (eng_too_soon(&h->eng, s, r->gen)) {
        h->eng.short_skipped++;
        log_msg(LOG_LVL_DEBUG, "sample %llu ms after the previous one: too short a window, skipped",
                (unsigned long long)((s->t_ns - h->eng.prev->t_ns) / 1000000u));
        snap_free(s);
        return;
    }
    act_annotate(&h->act, s);
    if ((rc = eng_feed(&h->eng, s, r->gen)) < 0) {
        log_msg(LOG_LVL_ERR, "decision failed: %s", strerror(-rc));
        return;
    }
    if (rc == 0)
        return;
    h->eng.last_decided_ms = now;
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        h->eng.last_decided_unix = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    deliver(h, now); /* a new decision goes out at once */
    if (h->delivering && !h->cfg.dry_run)
        enf_apply(&h->enf, &h->eng);
    if (h->delivering && h->eng.ndec != h->status_ndom) {
        set_status("deciding for %u domains", h->eng.ndec);
        h->status_ndom = h->eng.ndec;
    }
}

/* The worker's results, on the loop. */
static void on_result(void *ctx, struct wk_result *r)
{
    struct hostd *h = ctx;

    switch (r->job.kind) {
    case WK_SAMPLE:
        feed(h, r);
        if (!h->cfg.once)
            break;
        if (h->eng.decided) {
            print_report(h, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
            event_base_loopexit(h->base, NULL);
        } else if (r->rc == -ENOTCONN) {
            log_msg(LOG_LVL_ERR, "lost the libvirt connection during --once");
            h->exit_code = 1;
            event_base_loopexit(h->base, NULL);
        } else {
            arm_ms(h, h->cfg.interval_ms); /* the second sample one interval later */
        }
        break;
    case WK_AGENT:
        act_agent_done(&h->act, r->job.uuid, r->job.how, &r->job.cpus, r->rc, r->err);
        break;
    case WK_QUOTA:
        if (r->rc < 0)
            enf_failed(&h->enf, r->job.uuid, r->job.quota_cpus, r->err);
        break;
    case WK_UP:
        h->eng.connected = true;
        set_status("connected to %s, measuring", h->cfg.uri);
        h->status_ndom = (unsigned)-1;
        break;
    case WK_DOWN:
        h->eng.connected = false;
        eng_reset(&h->eng);
        if (r->denied && h->priv.active && !h->denied_warned) {
            log_msg(LOG_LVL_WARN,
                    "user %s cannot reach %s: give it access to the libvirt socket "
                    "(group libvirt with libvirt's polkit rule, or unix_sock_group and "
                    "auth_unix_rw in libvirtd.conf; see corehint-hostd(8))",
                    h->priv.user, h->cfg.uri);
            h->denied_warned = true;
        }
        if (h->cfg.once) {
            log_msg(LOG_LVL_ERR, "cannot connect to %s: %s", h->cfg.uri, r->err);
            h->exit_code = 1;
            event_base_loopexit(h->base, NULL);
            break;
        }
        set_status("waiting for libvirt (%s: %s)", h->cfg.uri, r->err);
        break;
    }
}

static int submit_agent(void *ctx, const char *uuid, const char *name, enum cfg_actuator how,
                        const ch_cpuset *cpus, unsigned nvcpu)
{
    struct hostd *h = ctx;
    struct wk_job j = {.kind = WK_AGENT, .how = how, .cpus = *cpus, .nvcpu = nvcpu};

    snprintf(j.uuid, sizeof(j.uuid), "%s", uuid);
    snprintf(j.name, sizeof(j.name), "%s", name);
    return wk_submit(h->wk, &j);
}

static int submit_quota(void *ctx, const char *uuid, const char *name, double cpus)
{
    struct hostd *h = ctx;
    struct wk_job j = {.kind = WK_QUOTA, .quota_cpus = cpus};

    snprintf(j.uuid, sizeof(j.uuid), "%s", uuid);
    snprintf(j.name, sizeof(j.name), "%s", name);
    return wk_submit(h->wk, &j);
}

/* Half an interval after a tick that asked for a sample: renew the leases unless the
 * sample's decision already did. */
static void on_renew(evutil_socket_t fd, short what, void *arg)
{
    struct hostd *h = arg;

    if (h->last_apply_ms < h->tick_ms)
        deliver(h, mono_ms());
}

/*
 * Ask for a sample unless one is still running.  The decision a sample brings renews the
 * leases; one that does not come within half an interval (a slow, failed or skipped sample)
 * is replaced by a renewal with the latest decision then.  A tick renews at once when nothing
 * went out for more than an interval, or (sample still running) since the renewal half an
 * interval ago.  So a guest whose samples are quick gets one hint per interval, not a renewal
 * at the tick and the decision right after it, and never waits more than 1.5 intervals.
 */
static void live_tick(struct hostd *h)
{
    uint64_t now = mono_ms();
    bool asked = false;

    if (!wk_sample_pending(h->wk)) {
        struct wk_job j = {.kind = WK_SAMPLE};
        if (wk_submit(h->wk, &j) < 0)
            log_msg(LOG_LVL_WARN, "the libvirt worker's queue is full; sample skipped");
        else
            asked = true;
    } else {
        h->eng.overruns++;
        log_msg(LOG_LVL_DEBUG, "the previous sample is still running");
    }
    if (h->cfg.once)
        return;
    /* (quarters, not halves or wholes: timers fire a little late, decisions a little after
     * the tick; the longest gap is then 1.5 intervals) */
    if (now - h->last_apply_ms >=
        (asked ? h->cfg.interval_ms + h->cfg.interval_ms / 4 : h->cfg.interval_ms / 4))
        deliver(h, now);
    if (asked && h->renew) {
        struct timeval tv = {(time_t)(h->cfg.interval_ms / 2000),
                             (long)(h->cfg.interval_ms / 2 % 1000) * 1000};
        h->tick_ms = now;
        evtimer_add(h->renew, &tv);
    }
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    notify_send("WATCHDOG=1");
}

static void arm_replay(struct hostd *h)
{
    unsigned iv = h->cfg.interval_ms;
    struct timeval tv = {(time_t)(iv / 1000), (long)(iv % 1000) * 1000};

    evtimer_add(h->tick, h->cfg.replay_realtime ? &tv : &zero_tv);
}

/* One replay step; at the end of a paced replay the last decision keeps being delivered. */
static void replay_step(struct hostd *h)
{
    char err[512];
    struct snapshot *s;
    int rc = 0;

    if (!h->replay_done && (rc = rec_next(h->replay, &s, err, sizeof(err))) < 0) {
        log_msg(LOG_LVL_ERR, "%s", err);
        h->exit_code = 1;
    }
    if (!h->replay_done && rc <= 0) {
        h->replay_done = true;
        if (!h->cfg.replay_realtime || rc < 0) {
            event_base_loopexit(h->base, NULL);
            return;
        }
        log_msg(LOG_LVL_INFO, "end of %s: holding the last decision", h->cfg.replay);
    }
    if (!h->replay_done)
        act_annotate(&h->act, s);
    if (!h->replay_done && eng_feed(&h->eng, s, 0) > 0) {
        if (!h->cfg.dry_run)
            enf_apply(&h->enf, &h->eng);
        print_report(h, JSON_C_TO_STRING_PLAIN);
    }
    if (h->delivering)
        act_apply(&h->act, &h->eng, false);
    arm_replay(h);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct hostd *h = arg;

    if (h->replay)
        replay_step(h);
    else
        live_tick(h);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct hostd *h = arg;

    if (sig == SIGHUP) {
        log_msg(LOG_LVL_INFO, "SIGHUP ignored: restart to change the configuration");
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
    bool live = !h->cfg.replay[0];
    eng_init(&h->eng, &h->cfg, h->record);
    h->eng.live = live && !h->cfg.once;
    reg_init(&h->reg);
    act_init(&h->act, h->base, &h->cfg, &h->reg, live ? submit_agent : NULL, h);
    enf_init(&h->enf, &h->cfg, &h->reg, live ? submit_quota : NULL, h);
    h->delivering = !h->cfg.once && (!h->cfg.replay[0] || h->cfg.replay_realtime);
    if (h->delivering && h->cfg.metrics_listen[0] &&
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
    if (h->cfg.replay[0]) {
        if (!(h->replay = rec_open(h->cfg.replay, err, sizeof(err)))) {
            log_msg(LOG_LVL_ERR, "%s", err);
            return -ENOENT;
        }
    } else {
        /* /proc describes the hypervisor only when libvirt runs on this machine. */
        const char *sep = strstr(h->cfg.uri, "://");
        bool local = sep && sep[3] == '/';
        conn_init_libvirt();
        if (!(h->wk = wk_start(h->base, h->cfg.uri, !cfg_needs_write(&h->cfg),
                               local ? "/proc" : "", on_result, h)))
            return -ENOMEM;
    }
    /* Live: a steady tick, whatever libvirt does; --once and replay arm it themselves. */
    if (!(h->tick = event_new(h->base, -1, h->eng.live ? EV_PERSIST : 0, on_tick, h)) ||
        (h->eng.live && !(h->renew = evtimer_new(h->base, on_renew, h))))
        return -ENOMEM;
    if (notify_watchdog_usec() && !h->cfg.once) {
        /* Pet at half the period systemd asked for, from the loop itself: a stuck loop dies. */
        uint64_t us = notify_watchdog_usec() / 2;
        struct timeval tv = {(time_t)(us / 1000000), (long)(us % 1000000)};
        if (!(h->watchdog = event_new(h->base, -1, EV_PERSIST, on_watchdog, h)) ||
            event_add(h->watchdog, &tv) < 0)
            return -ENOMEM;
    }
    if (h->replay) {
        arm_replay(h);
    } else {
        live_tick(h); /* the first sample now, so --once takes one interval */
        if (h->eng.live)
            arm_ms(h, h->cfg.interval_ms);
    }
    if (h->delivering && !h->replay) {
        /* Serving HTTP and holding leases is being ready; libvirt may come later. */
        notify_send("READY=1\nSTATUS=waiting for libvirt");
    }
    return 0;
}

static void stop(struct hostd *h)
{
    if (h->watchdog)
        event_free(h->watchdog);
    if (h->tick)
        event_free(h->tick);
    if (h->renew)
        event_free(h->renew);
    http_stop(h->http);
    act_finalise(&h->act);
    enf_finalise(&h->enf); /* queues the cap releases: the worker drains them */
    wk_stop(h->wk, 5000);
    reg_finalise(&h->reg);
    eng_finalise(&h->eng);
    rec_close(h->replay);
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
    bool dump = false;
    int rc;

    if ((rc = configure(&h, argc, argv, &dump)) >= 0) {
        cfg_free(&h.cfg);
        return rc;
    }
    if (dump) {
        cfg_dump(&h.cfg, stdout);
        cfg_free(&h.cfg);
        return 0;
    }
    /* A guest's channel closing under a write must be an EPIPE, not the end of hostd. */
    signal(SIGPIPE, SIG_IGN);
    bool detach = !h.cfg.foreground && !h.cfg.once && !h.cfg.replay[0];
    notify_init();
    log_init("corehint-hostd",
             h.cfg.verbose >= 2 ? LOG_LVL_DEBUG
             : h.cfg.verbose    ? LOG_LVL_INFO
                                : LOG_LVL_WARN,
             detach);
    if (!h.cfg.once && (!h.cfg.replay[0] || h.cfg.replay_realtime))
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
