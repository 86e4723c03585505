// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * corehint-hostd: wiring only.  Start-up in dependency order (config, log, event base,
 * libvirt bridge, connection, collector, engine, timers), shutdown in reverse.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "collect.h"
#include "config.h"
#include "conn.h"
#include "corehint/log.h"
#include "actuate.h"
#include "enforce.h"
#include "engine.h"
#include "http.h"
#include "notify.h"
#include "privdrop.h"
#include "record.h"
#include "vevent.h"

struct hostd {
    struct hd_config cfg;
    struct event_base *base;
    struct conn *conn;
    struct collector *col;
    struct engine eng;
    struct actuator act;
    struct enforcer enf;
    struct http_srv *http;
    struct privdrop priv;
    bool delivering; /* live daemon or paced replay: channels and HTTP are up */
    bool replay_done;
    bool ready; /* READY=1 sent */
    struct event *watchdog;
    struct rec_reader *replay;
    FILE *record;
    struct event *tick;
    struct event *sigs[3];
    unsigned samples; /* --once: samples taken */
    uint64_t sample_start_ms;
    uint64_t slow_warned_ms; /* last "libvirtd is slow" warning */
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

static void on_conn(void *ctx, enum conn_event ev, const char *uuid, const char *what)
{
    struct hostd *h = ctx;

    if (ev == CONN_DOWN)
        eng_reset(&h->eng);
    else if (ev == CONN_UP)
        col_invalidate(h->col, NULL);
    else
        col_invalidate(h->col, uuid);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The next sample one interval after this one started, but never sooner than a quarter
 * interval after it ended: a slow libvirtd must not make two samples land back to back.
 * --once waits a whole interval after its first sample.
 */
static void arm(struct hostd *h)
{
    uint64_t spent = mono_ms() - h->sample_start_ms, iv = h->cfg.interval_ms;
    uint64_t delay = h->cfg.once || spent >= iv ? iv : iv - spent;

    if (!h->cfg.once && delay < iv / 4)
        delay = iv / 4;
    struct timeval tv = {(time_t)(delay / 1000), (long)(delay % 1000) * 1000};

    evtimer_add(h->tick, &tv);
}

static void sample(struct hostd *h)
{
    virConnectPtr vc = conn_get(h->conn);
    struct snapshot *s;
    int rc;

    h->sample_start_ms = mono_ms();
    if (!vc)
        return; /* reconnecting; conn logs */
    if ((rc = col_sample(h->col, vc, &s)) == -ENOTCONN) {
        conn_lost(h->conn);
        return;
    }
    if (rc < 0)
        return;
    uint64_t took = mono_ms() - h->sample_start_ms;
    h->eng.last_sample_ns = took * 1000000u;
    /* One loop does everything: a slow libvirtd delays hints and HTTP too.  Say so, at most
     * once a minute. */
    if (took > h->cfg.interval_ms / 2 && h->sample_start_ms >= h->slow_warned_ms + 60000) {
        log_msg(LOG_LVL_WARN, "sample of %u domains took %llu ms (interval %u ms): libvirtd is slow",
                s->ndom, (unsigned long long)took, h->cfg.interval_ms);
        h->slow_warned_ms = h->sample_start_ms;
    } else {
        log_msg(LOG_LVL_DEBUG, "sample of %u domains took %llu ms", s->ndom,
                (unsigned long long)took);
    }
    if (eng_too_soon(&h->eng, s, conn_generation(h->conn))) {
        h->eng.short_skipped++;
        log_msg(LOG_LVL_DEBUG, "sample %llu ms after the previous one: too short a window, skipped",
                (unsigned long long)((s->t_ns - h->eng.prev->t_ns) / 1000000u));
        snap_free(s);
        if (h->delivering)
            act_apply(&h->act, &h->eng, vc); /* the leases still get their renewal */
        return;
    }
    h->samples++;
    act_annotate(&h->act, s);
    if ((rc = eng_feed(&h->eng, s, conn_generation(h->conn))) < 0)
        log_msg(LOG_LVL_ERR, "decision failed: %s", strerror(-rc));
    else if (rc > 0 && h->delivering)
        act_apply(&h->act, &h->eng, conn_get(h->conn));
    if (rc > 0 && h->delivering && !h->cfg.dry_run)
        enf_apply(&h->enf, &h->eng, conn_get(h->conn));
    if (rc > 0 && !h->ready && !h->cfg.once) {
        /* Ready means measuring and deciding, which takes the first good pair of samples. */
        char msg[128];
        snprintf(msg, sizeof(msg), "READY=1\nSTATUS=deciding for %u domains", h->eng.ndec);
        notify_send(msg);
        h->ready = true;
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
            enf_apply(&h->enf, &h->eng, NULL);
        print_report(h, JSON_C_TO_STRING_PLAIN);
    }
    if (h->delivering)
        act_apply(&h->act, &h->eng, NULL);
    arm_replay(h);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct hostd *h = arg;

    if (h->replay) {
        replay_step(h);
        return;
    }
    sample(h);
    arm(h);
    if (h->cfg.once && h->eng.decided) {
        print_report(h, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
        event_base_loopexit(h->base, NULL);
    } else if (h->cfg.once && !conn_get(h->conn)) {
        log_msg(LOG_LVL_ERR, "lost the libvirt connection during --once");
        h->exit_code = 1;
        event_base_loopexit(h->base, NULL);
    }
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
    eng_init(&h->eng, &h->cfg, h->record);
    act_init(&h->act, h->base, &h->cfg);
    enf_init(&h->enf, &h->cfg);
    h->delivering = !h->cfg.once && (!h->cfg.replay[0] || h->cfg.replay_realtime);
    if (h->delivering && h->cfg.metrics_listen[0] &&
        !(h->http = http_start(h->base, h->cfg.metrics_listen, &h->eng, &h->act, &h->enf, &h->cfg)))
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
        if (vev_register(h->base) < 0 || !(h->col = col_new(local ? "/proc" : "")) ||
            !(h->conn = conn_new(h->base, h->cfg.uri, on_conn, h)))
            return -ENOMEM;
        if (conn_open(h->conn) < 0) {
            if (h->priv.active && conn_error_is_denied())
                log_msg(LOG_LVL_WARN,
                        "user %s cannot reach %s: give it access to the libvirt socket "
                        "(group libvirt with libvirt's polkit rule, or unix_sock_group and "
                        "auth_unix_rw in libvirtd.conf; see corehint-hostd(8))",
                        h->priv.user, h->cfg.uri);
            if (h->cfg.once) {
                log_msg(LOG_LVL_ERR, "cannot connect to %s: %s", h->cfg.uri, conn_error());
                return -ENOTCONN;
            }
        }
    }
    if (!(h->tick = evtimer_new(h->base, on_tick, h)))
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
        sample(h); /* the first sample now, so --once takes one interval */
        arm(h);
    }
    return 0;
}

static void stop(struct hostd *h)
{
    if (h->watchdog)
        event_free(h->watchdog);
    if (h->tick)
        event_free(h->tick);
    http_stop(h->http);
    act_finalise(&h->act);
    enf_finalise(&h->enf, h->conn ? conn_get(h->conn) : NULL);
    eng_finalise(&h->eng);
    rec_close(h->replay);
    if (h->record)
        fclose(h->record);
    conn_free(h->conn);
    col_free(h->col);
    if (!h->cfg.replay[0])
        vev_finalise();
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
