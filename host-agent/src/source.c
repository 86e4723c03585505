// SPDX-License-Identifier: LGPL-2.1-or-later
#include "source.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "corehint/log.h"
#include "hostd.h"
#include "notify.h"
#include "record.h"
#include "worker.h"

static const struct timeval zero_tv = {0, 0};

static void arm_ms(struct snap_source *src, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000};

    evtimer_add(src->tick, &tv);
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

/* ---- live and --once: the libvirt worker ---- */

static int submit_agent(void *ctx, const char *uuid, const char *name, enum cfg_actuator how,
                        const ch_cpuset *cpus, unsigned nvcpu)
{
    struct snap_source *src = ctx;
    struct wk_job j = {.kind = WK_AGENT, .how = how, .cpus = *cpus, .nvcpu = nvcpu};

    snprintf(j.uuid, sizeof(j.uuid), "%s", uuid);
    snprintf(j.name, sizeof(j.name), "%s", name);
    return wk_submit(src->wk, &j);
}

static int submit_quota(void *ctx, const char *uuid, const char *name, double cpus)
{
    struct snap_source *src = ctx;
    struct wk_job j = {.kind = WK_QUOTA, .quota_cpus = cpus};

    snprintf(j.uuid, sizeof(j.uuid), "%s", uuid);
    snprintf(j.name, sizeof(j.name), "%s", name);
    return wk_submit(src->wk, &j);
}

static void sample_result(struct snap_source *src, struct wk_result *r)
{
    struct hostd *h = src->h;
    struct snapshot *s = r->snap;
    uint64_t now = hd_mono_ms();
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
    if (r->took_ms > h->cfg.interval_ms / 2 && now >= src->slow_warned_ms + 60000) {
        log_msg(LOG_LVL_WARN,
                "sample of %u domains took %llu ms (interval %u ms): libvirtd is slow", s->ndom,
                (unsigned long long)r->took_ms, h->cfg.interval_ms);
        src->slow_warned_ms = now;
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
    src->sample_ms = now;
    if ((rc = src->sink->feed(src->sink_ctx, s, r->gen)) < 0)
        log_msg(LOG_LVL_ERR, "decision failed: %s", strerror(-rc));
}

static void live_decided(struct snap_source *src)
{
    struct hostd *h = src->h;
    uint64_t now = src->sample_ms;
    struct timespec ts;

    h->eng.last_decided_ms = now;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->eng.last_decided_unix = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    src->sink->deliver(src->sink_ctx, now); /* a new decision goes out at once */
    if (src->delivers && !h->cfg.dry_run)
        enf_apply(&h->enf, &h->eng);
    if (src->delivers && h->eng.ndec != src->status_ndom) {
        set_status("deciding for %u domains", h->eng.ndec);
        src->status_ndom = h->eng.ndec;
    }
}

/* The worker's results, on the loop. */
static void on_result(void *ctx, struct wk_result *r)
{
    struct snap_source *src = ctx;
    struct hostd *h = src->h;

    switch (r->job.kind) {
    case WK_SAMPLE:
        sample_result(src, r);
        if (!src->once)
            break;
        if (h->eng.decided) {
            src->sink->report(src->sink_ctx, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
            event_base_loopexit(h->base, NULL);
        } else if (r->rc == -ENOTCONN) {
            log_msg(LOG_LVL_ERR, "lost the libvirt connection during --once");
            h->exit_code = 1;
            event_base_loopexit(h->base, NULL);
        } else {
            arm_ms(src, h->cfg.interval_ms); /* the second sample one interval later */
        }
        break;
    case WK_AGENT:
        act_agent_done(&h->act, r->job.uuid, r->job.how, &r->job.cpus, r->rc, r->err);
        break;
    case WK_QUOTA:
        enf_done(&h->enf, r->job.uuid, r->job.quota_cpus, r->rc, r->err);
        break;
    case WK_UP:
        h->eng.connected = true;
        set_status("connected to %s, measuring", h->cfg.uri);
        src->status_ndom = (unsigned)-1;
        break;
    case WK_DOWN:
        h->eng.connected = false;
        eng_reset(&h->eng);
        if (r->denied && h->priv.active && !src->denied_warned) {
            log_msg(LOG_LVL_WARN,
                    "user %s cannot reach %s: give it access to the libvirt socket "
                    "(group libvirt with libvirt's polkit rule, or unix_sock_group and "
                    "auth_unix_rw in libvirtd.conf; see corehint-hostd(8))",
                    h->priv.user, h->cfg.uri);
            src->denied_warned = true;
        }
        if (src->once) {
            log_msg(LOG_LVL_ERR, "cannot connect to %s: %s", h->cfg.uri, r->err);
            h->exit_code = 1;
            event_base_loopexit(h->base, NULL);
            break;
        }
        set_status("waiting for libvirt (%s: %s)", h->cfg.uri, r->err);
        break;
    }
}

/* Half an interval after a tick that asked for a sample: renew the leases unless the
 * sample's decision already did. */
static void on_renew(evutil_socket_t fd, short what, void *arg)
{
    struct snap_source *src = arg;

    if (src->h->last_apply_ms < src->tick_ms)
        src->sink->deliver(src->sink_ctx, hd_mono_ms());
}

/*
 * Ask for a sample unless one is still running.  The decision a sample brings renews the
 * leases; one that does not come within half an interval (a slow, failed or skipped sample)
 * is replaced by a renewal with the latest decision then.  A tick renews at once when nothing
 * went out for more than an interval, or (sample still running) since the renewal half an
 * interval ago.  So a guest whose samples are quick gets one hint per interval, not a renewal
 * at the tick and the decision right after it, and never waits more than 1.5 intervals.
 */
static void live_tick(struct snap_source *src)
{
    struct hostd *h = src->h;
    uint64_t now = hd_mono_ms();
    bool asked = false;

    if (!wk_sample_pending(src->wk)) {
        struct wk_job j = {.kind = WK_SAMPLE};
        if (wk_submit(src->wk, &j) < 0)
            log_msg(LOG_LVL_WARN, "the libvirt worker's queue is full; sample skipped");
        else
            asked = true;
    } else {
        h->eng.overruns++;
        log_msg(LOG_LVL_DEBUG, "the previous sample is still running");
    }
    if (src->once)
        return;
    /* (quarters, not halves or wholes: timers fire a little late, decisions a little after
     * the tick; the longest gap is then 1.5 intervals) */
    if (now - h->last_apply_ms >=
        (asked ? h->cfg.interval_ms + h->cfg.interval_ms / 4 : h->cfg.interval_ms / 4))
        src->sink->deliver(src->sink_ctx, now);
    if (asked && src->renew) {
        struct timeval tv = {(time_t)(h->cfg.interval_ms / 2000),
                             (long)(h->cfg.interval_ms / 2 % 1000) * 1000};
        src->tick_ms = now;
        evtimer_add(src->renew, &tv);
    }
}

static void on_live_tick(evutil_socket_t fd, short what, void *arg)
{
    live_tick(arg);
}

static int live_start(struct snap_source *src)
{
    struct hostd *h = src->h;
    /* /proc describes the hypervisor only when libvirt runs on this machine. */
    const char *sep = strstr(h->cfg.uri, "://");
    bool local = sep && sep[3] == '/';

    conn_init_libvirt();
    src->rw = cfg_needs_write(&h->cfg);
    if (!(src->wk = wk_start(h->base, h->cfg.uri, !src->rw, local ? "/proc" : "", on_result, src)))
        return -ENOMEM;
    /* Live: a steady tick, whatever libvirt does; --once arms it itself. */
    if (!(src->tick = event_new(h->base, -1, src->live ? EV_PERSIST : 0, on_live_tick, src)) ||
        (src->live && !(src->renew = evtimer_new(h->base, on_renew, src))))
        return -ENOMEM;
    live_tick(src); /* the first sample now, so --once takes one interval */
    if (src->live)
        arm_ms(src, h->cfg.interval_ms);
    return 0;
}

static void live_stop(struct snap_source *src)
{
    if (src->tick)
        event_free(src->tick);
    if (src->renew)
        event_free(src->renew);
    src->tick = src->renew = NULL;
    wk_stop(src->wk, 5000);
    src->wk = NULL;
}

/* (--once is the live source with another ending: no renewals, the decision printed) */
static const struct snap_source_ops live_ops = {
    .start = live_start,
    .decided = live_decided,
    .stop = live_stop,
};

/* ---- --replay: a recorded trace ---- */

static void arm_replay(struct snap_source *src)
{
    unsigned iv = src->h->cfg.interval_ms;
    struct timeval tv = {(time_t)(iv / 1000), (long)(iv % 1000) * 1000};

    evtimer_add(src->tick, src->h->cfg.replay_realtime ? &tv : &zero_tv);
}

static void replay_decided(struct snap_source *src)
{
    if (!src->h->cfg.dry_run)
        enf_apply(&src->h->enf, &src->h->eng);
    src->sink->report(src->sink_ctx, JSON_C_TO_STRING_PLAIN);
}

/* One replay step; at the end of a paced replay the last decision keeps being delivered. */
static void on_replay_tick(evutil_socket_t fd, short what, void *arg)
{
    struct snap_source *src = arg;
    struct hostd *h = src->h;
    char err[512];
    struct snapshot *s;
    int rc = 0;

    if (!src->trace_done && (rc = rec_next(src->trace, &s, err, sizeof(err))) < 0) {
        log_msg(LOG_LVL_ERR, "%s", err);
        h->exit_code = 1;
    }
    if (!src->trace_done && rc <= 0) {
        src->trace_done = true;
        if (!h->cfg.replay_realtime || rc < 0) {
            event_base_loopexit(h->base, NULL);
            return;
        }
        log_msg(LOG_LVL_INFO, "end of %s: holding the last decision", h->cfg.replay);
    }
    if (!src->trace_done)
        src->sink->feed(src->sink_ctx, s, 0);
    if (src->delivers)
        act_apply(&h->act, &h->eng, false);
    arm_replay(src);
}

static int replay_start(struct snap_source *src)
{
    struct hostd *h = src->h;
    char err[512];

    if (!(src->trace = rec_open(h->cfg.replay, err, sizeof(err)))) {
        log_msg(LOG_LVL_ERR, "%s", err);
        return -ENOENT;
    }
    src->rw = true; /* no libvirt to hold to read-only: any configuration may be reloaded */
    if (!(src->tick = event_new(h->base, -1, 0, on_replay_tick, src)))
        return -ENOMEM;
    arm_replay(src);
    return 0;
}

static void replay_stop(struct snap_source *src)
{
    if (src->tick)
        event_free(src->tick);
    src->tick = NULL;
    rec_close(src->trace);
    src->trace = NULL;
}

static const struct snap_source_ops replay_ops = {
    .start = replay_start,
    .decided = replay_decided,
    .stop = replay_stop,
};

void src_select(struct snap_source *src, struct hostd *h, const struct src_sink *sink, void *ctx)
{
    const struct hd_config *c = &h->cfg;
    bool replay = c->replay[0] != '\0';

    memset(src, 0, sizeof(*src));
    src->h = h;
    src->sink = sink;
    src->sink_ctx = ctx;
    src->ops = replay ? &replay_ops : &live_ops;
    src->once = !replay && c->once;
    src->live = !replay && !c->once;
    src->delivers = !c->once && (!replay || c->replay_realtime);
    src->watchdog = !c->once;
    if (!replay) {
        src->agent = submit_agent;
        src->quota = submit_quota;
    }
}
