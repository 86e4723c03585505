// SPDX-License-Identifier: LGPL-2.1-or-later
#include "control.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corehint/log.h"
#include "corehint/proto.h"
#include "fallback.h"
#include "hint.h"
#include "lease.h"
#include "mask.h"
#include "sample.h"

#define AGENT "corehint-guestd/" COREHINT_VERSION
/* Refusals logged per second; the host may send garbage at line rate. */
#define REFUSALS_LOGGED_PER_SEC 10u

struct control {
    struct event_base *base;
    const struct config *cfg;
    struct sampler smp;
    struct mask_backend mask;
    struct port *port;
    struct lease *lease;
    struct fallback fb;
    struct event *tick;
    struct sample *prev, *cur;

    enum ch_mode mode;
    bool supported, writable; /* the file exists; it opens for writing */
    bool busy;                /* another owner holds the mask (probe, or EBUSY on a write) */
    /* the owner the probe named while busy; "" when none or unknown (EBUSY from a write) */
    char owner[MASK_OWNER_MAX + 1];
    char why[CH_REASON_MAX + 1]; /* why hints cannot be applied, "" when they can */
    int write_err;               /* errno of the last failed tick-time write, 0 after a success */
    ch_cpuset applied;           /* the preferred set in force, as read back */
    ch_cpuset host_set;          /* the last applied hint's cpus, re-clipped on hotplug */
    uint64_t last_seq;           /* watermark in this session; reset with every new session */
    struct ch_hint waiting;      /* a hint waiting for modprobe -r to free the preferred file */
    bool has_waiting;
    uint32_t steal;                   /* steal_pct_x100 over the last interval */
    ch_cpuset hello_online, hello_hk; /* what the last hello said: a hotplug says it again */
    bool hello_answered; /* a sessionless (version 1) host hello was answered since arrival */
    bool has_session;    /* the host's hello named a session, which is current */
    uint64_t session;
    unsigned peer_v; /* the version we write: min(ours, the host's max_v), 1 before hello */

    time_t log_sec; /* refusal log budget: the second it counts, used, suppressed */
    unsigned log_used, log_suppressed;

    bool once;
    bool once_done;
    int once_status;
    char once_json[1024];
};

/* Returns 0 when the message was queued on the port. */
static int send_msg(struct control *c, struct ch_msg *m)
{
    char buf[CH_LINE_MAX + 1];

    if (m->type != CH_MSG_HELLO)
        m->v = c->peer_v ? c->peer_v : 1;
    int n = ch_encode(m, buf, sizeof(buf));
    if (n == -ENOSPC && m->type == CH_MSG_HELLO && m->u.hello.has_housekeeping) {
        /* A hello is a version 1 line (4096 bytes): a sparse housekeeping list that does not
         * fit is left out, and the host assumes the lowest online CPU. */
        m->u.hello.has_housekeeping = false;
        n = ch_encode(m, buf, sizeof(buf));
    }

    if (n < 0) {
        log_msg(LOG_LVL_ERR, "cannot encode %s: %s", ch_msg_type_name(m->type), strerror(-n));
        return n;
    }
    return c->port ? port_send(c->port, buf, (size_t)n) : -ENOTCONN;
}

static void send_status(struct control *c)
{
    struct ch_msg m;

    ch_msg_status(&m, c->last_seq, &c->applied, c->mode, c->steal);
    send_msg(c, &m);
}

/* Whether hints can be applied, and why not; true when that changed. */
static bool refresh_writable(struct control *c)
{
    char why[sizeof(c->why)];
    struct mask_probe p;

    mask_probe(&c->mask, &p);
    c->supported = p.supported;
    c->writable = p.supported && p.writable;
    /* Another owner holds the mask (the kernel answers writes with EBUSY); when it is the
     * steal_governor we loaded ourselves, we unload it before applying a hint. */
    c->busy = c->writable && p.busy && !fallback_owns_mask(&c->fb, p.owner);
    snprintf(c->owner, sizeof(c->owner), "%s", c->busy ? p.owner : "");
    if (!c->supported || !c->writable || c->busy)
        snprintf(why, sizeof(why), "%s", p.reason);
    else
        why[0] = '\0';
    if (strcmp(why, c->why) == 0)
        return false;
    if (why[0])
        log_msg(LOG_LVL_WARN, "host hints cannot be applied: %s", why);
    else if (c->why[0])
        log_msg(LOG_LVL_INFO, "host hints can be applied again");
    snprintf(c->why, sizeof(c->why), "%s", why);
    return true;
}

/* The online and housekeeping CPUs a hello reports now. */
static void hello_sets(const struct control *c, ch_cpuset *online, ch_cpuset *hk)
{
    *online = c->cur->online;
    if (ch_cpuset_empty(online))
        ch_cpuset_set(online, 0); /* the codec insists; an unreadable online file is odd */
    governor_housekeeping_set(online, &c->cur->isolated, hk);
}

static void send_hello(struct control *c)
{
    struct ch_msg m;
    ch_cpuset online, hk;

    hello_sets(c, &online, &hk);
    ch_msg_guest_hello(&m, AGENT, &online, c->why[0] == '\0');
    snprintf(m.u.hello.reason, sizeof(m.u.hello.reason), "%s", c->why);
    m.u.hello.housekeeping = hk;
    m.u.hello.has_housekeeping = !ch_cpuset_empty(&hk);
    /* what the host was told, so a hello dropped (output full) is tried again next tick */
    if (send_msg(c, &m) == 0) {
        c->hello_online = online;
        c->hello_hk = hk;
    }
}

/* The online or housekeeping CPUs differ from what the last hello told the host. */
static bool hello_outdated(const struct control *c)
{
    ch_cpuset online, hk;

    hello_sets(c, &online, &hk);
    return !ch_cpuset_equal(&online, &c->hello_online) || !ch_cpuset_equal(&hk, &c->hello_hk);
}

static void send_error(struct control *c, uint64_t seq, const char *code, const char *message)
{
    struct ch_msg m;

    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec != c->log_sec) {
        if (c->log_suppressed)
            log_msg(LOG_LVL_WARN, "%u more refusal(s) not logged", c->log_suppressed);
        c->log_sec = now.tv_sec;
        c->log_used = c->log_suppressed = 0;
    }
    if (c->log_used < REFUSALS_LOGGED_PER_SEC) {
        c->log_used++;
        log_msg(LOG_LVL_WARN, "refused seq %" PRIu64 ": %s: %s", seq, code, message);
    } else {
        c->log_suppressed++;
    }
    ch_msg_error(&m, seq, code, message);
    send_msg(c, &m);
}

static void set_mode(struct control *c, enum ch_mode mode)
{
    if (c->mode != mode)
        log_msg(LOG_LVL_INFO, "mode %s -> %s", ch_mode_name(c->mode), ch_mode_name(mode));
    c->mode = mode;
}

static void once_finish(struct control *c, int status, json_object *o)
{
    if (c->once_done) {
        json_object_put(o);
        return;
    }
    c->once_done = true;
    c->once_status = status;
    snprintf(c->once_json, sizeof(c->once_json), "%s",
             o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "{}");
    json_object_put(o);
    event_base_loopexit(c->base, NULL);
}

static json_object *once_base(const struct control *c, const char *result)
{
    char list[CH_LINE_MAX];
    json_object *o = json_object_new_object();

    if (ch_cpulist_format(&c->applied, list, sizeof(list)) < 0)
        list[0] = '\0';
    json_object_object_add(o, "result", json_object_new_string(result));
    json_object_object_add(o, "seq", json_object_new_uint64(c->last_seq));
    json_object_object_add(o, "applied", json_object_new_string(list));
    json_object_object_add(o, "mode", json_object_new_string(ch_mode_name(c->mode)));
    json_object_object_add(o, "steal_pct_x100", json_object_new_uint64(c->steal));
    return o;
}

static void enter_fallback(struct control *c)
{
    if (fallback_enter(&c->fb, c->cur, &c->applied) < 0)
        log_msg(LOG_LVL_ERR, "fallback %s could not start", config_fallback_name(c->fb.kind));
    set_mode(c, CH_MODE_FALLBACK);
}

/*
 * Mode fallback, the fallback stopped, no hint waiting for it to stop: the hint it was left for
 * was refused (its write failed, or, when it waited for the module's unload, anything that
 * changed meanwhile: the host's session, the online CPUs, the file).  Start it again: a guest
 * never stays with neither a lease nor a fallback (README.md, "Modes").  --once leaves a
 * refused hint's result as it is.
 */
static void resume_fallback(struct control *c)
{
    if (c->mode == CH_MODE_FALLBACK && !c->fb.active && !c->has_waiting && !c->once) {
        log_msg(LOG_LVL_INFO, "the hint the fallback stopped for was refused: fallback %s again",
                config_fallback_name(c->cfg->fallback));
        enter_fallback(c);
    }
}

static void refuse(struct control *c, uint64_t seq, const char *code, const char *message)
{
    send_error(c, seq, code, message);
    if (c->once) {
        json_object *o = once_base(c, "error");
        json_object_object_add(o, "hint_seq", json_object_new_uint64(seq));
        json_object_object_add(o, "code", json_object_new_string(code));
        json_object_object_add(o, "message", json_object_new_string(message));
        once_finish(c, 1, o);
    }
}

static void apply_hint(struct control *c, const struct ch_hint *h)
{
    char msg[CH_MESSAGE_MAX + 1];
    ch_cpuset online;

    if (h->has_session && (!c->has_session || h->session != c->session)) {
        char want[CH_SESSION_LEN + 1], got[CH_SESSION_LEN + 1];
        ch_session_format(h->session, got);
        ch_session_format(c->session, want);
        snprintf(msg, sizeof(msg), "session %s is not the current one (%s)", got,
                 c->has_session ? want : "none: no host hello since the host arrived");
        refuse(c, h->seq, "unknown-session", msg);
        return;
    }
    if (!c->supported || !c->writable) {
        refuse(c, h->seq, "unsupported",
               c->supported ? "the preferred file is not writable"
                            : "this kernel has no /sys/devices/system/cpu/preferred");
        return;
    }
    if (c->busy && refresh_writable(c))
        send_hello(c); /* the other owner let go */
    if (c->busy) {
        snprintf(msg, sizeof(msg),
                 "the preferred set is owned by %s, loaded by someone else; unload it to let "
                 "the host steer",
                 c->owner[0] ? c->owner : "another owner");
        refuse(c, h->seq, "busy", msg);
        return;
    }
    /* Hotplug may have happened since the last interval: judge against the kernel's now. */
    if (sample_read_online(&c->smp, &online) < 0)
        online = c->cur->online;
    enum hint_verdict v = hint_check(h, &online, &c->cur->isolated, c->last_seq, msg, sizeof(msg));
    if (v != HINT_OK) {
        refuse(c, h->seq, hint_verdict_code(v), msg);
        return;
    }
    bool was_fallback = c->mode == CH_MODE_FALLBACK && c->fb.active;
    /* The kernel governor must let go of the file first: modprobe -r runs in the background
     * and the hint waits for it (a newer hint takes its place). */
    if ((was_fallback && fallback_leave(&c->fb) == -EINPROGRESS) || fallback_busy(&c->fb)) {
        if (c->has_waiting && c->waiting.seq != h->seq)
            log_msg(LOG_LVL_DEBUG, "hint seq %" PRIu64 " replaced while waiting for modprobe",
                    c->waiting.seq);
        c->waiting = *h;
        c->has_waiting = true;
        return;
    }
    int rc = mask_write(&c->mask, &h->cpus);
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "writing %.160s: %s", mask_where(&c->mask),
                 rc == -EIO ? "read back a different set" : strerror(-rc));
        if (rc == -EBUSY) {
            /* An owner appeared that the module check did not see: say so in a hello. */
            c->busy = true;
            c->owner[0] = '\0';
            snprintf(c->why, sizeof(c->why), "busy: the kernel refused the write (EBUSY)");
            log_msg(LOG_LVL_WARN, "host hints cannot be applied: %s", c->why);
            send_hello(c);
        }
        refuse(c, h->seq, rc == -EBUSY ? "busy" : "write-failed", msg);
        resume_fallback(c);
        return;
    }
    if (!c->once && lease_renew(c->lease, h->lease_ms) < 0)
        log_msg(LOG_LVL_ERR, "cannot arm the lease timer");
    c->last_seq = h->seq;
    c->host_set = h->cpus;
    c->applied = h->cpus;
    set_mode(c, CH_MODE_HOST);
    if (log_enabled(LOG_LVL_DEBUG)) {
        char list[64];
        if (ch_cpulist_format(&h->cpus, list, sizeof(list)) < 0)
            snprintf(list, sizeof(list), "...");
        log_msg(LOG_LVL_DEBUG, "hint seq %" PRIu64 " cpus %s lease %" PRIu32 " ms %s", h->seq, list,
                h->lease_ms, rc == 1 ? "(unchanged)" : "written");
    }
    send_status(c);
    if (c->once)
        once_finish(c, 0, once_base(c, "applied"));
}

/*
 * PROTOCOL.md 4.1: a hello with a session we do not hold starts that session (watermark 0,
 * answered with our hello and status); the current session again changes nothing; a version 1
 * hello (no session) resets the watermark and is answered once per host arrival.
 */
static void on_host_hello(struct control *c, const struct ch_hello *h)
{
    char id[CH_SESSION_LEN + 1];

    c->peer_v = ch_negotiate(h->max_v);
    if (h->has_session) {
        if (c->has_session && h->session == c->session)
            return;
        ch_session_format(h->session, id);
        log_msg(LOG_LVL_INFO, "host agent %s, session %s, protocol v%u%s", h->agent, id, c->peer_v,
                c->last_seq ? ": sequence starts again" : "");
        c->has_session = true;
        c->session = h->session;
        c->last_seq = 0;
    } else {
        c->has_session = false;
        c->last_seq = 0;
        if (c->hello_answered)
            return;
        c->hello_answered = true;
        log_msg(LOG_LVL_INFO, "host agent %s (protocol v1, no session)", h->agent);
    }
    refresh_writable(c);
    send_hello(c);
    send_status(c);
}

/* A background modprobe ended: a hint that waited for the unload goes now, judged against the
 * guest as it is now; refused, the fallback it waited to leave runs again. */
static void on_modprobe_done(void *arg, int rc)
{
    struct control *c = arg;
    ch_cpuset now;

    if (!c->has_waiting) {
        /* A load: the module reset the set to every active CPU; say so now, not next tick. */
        if (c->supported && mask_read(&c->mask, &now) == 0 && !ch_cpuset_equal(&now, &c->applied)) {
            c->applied = now;
            send_status(c);
        }
        return;
    }
    c->has_waiting = false;
    /* While modprobe ran, someone else may have loaded the module (the kernel would answer the
     * write with EBUSY) or the file may have gone: the host hears of it in a hello. */
    if (refresh_writable(c) && c->port && port_connected(c->port))
        send_hello(c);
    if (rc < 0 && fallback_module_loaded(c->cfg))
        refuse(c, c->waiting.seq, "busy",
               "cannot unload " FALLBACK_MODULE ", which owns the preferred set");
    else
        apply_hint(c, &c->waiting);
    resume_fallback(c);
}

static void on_line(void *arg, const char *line, size_t len)
{
    struct control *c = arg;
    struct ch_decode_info info;
    struct ch_msg m;
    char msg[CH_MESSAGE_MAX + 1];

    if (ch_decode(line, len, &m, &info) < 0) {
        if (strcmp(info.type, "error") == 0)
            return; /* never answer an error with an error */
        if (info.field)
            snprintf(msg, sizeof(msg), "refused line: field \"%s\"", info.field);
        else
            snprintf(msg, sizeof(msg), "refused line of %zu bytes", len);
        send_error(c, info.seq, info.err == CH_DEC_OK ? "internal" : ch_decode_err_code(info.err),
                   msg);
        return;
    }
    switch (m.type) {
    case CH_MSG_HINT:
        apply_hint(c, &m.u.hint);
        break;
    case CH_MSG_HELLO:
        if (m.u.hello.role != CH_ROLE_HOST)
            break;
        on_host_hello(c, &m.u.hello);
        break;
    case CH_MSG_STATUS:
    case CH_MSG_ERROR:
        log_msg(LOG_LVL_DEBUG, "ignoring a host %s", ch_msg_type_name(m.type));
        break;
    }
}

static void on_up(void *arg)
{
    struct control *c = arg;

    /* A host arrived: whoever it is will say hello, with a session or (version 1) without. */
    c->last_seq = 0;
    c->hello_answered = false;
    c->has_session = false;
    c->peer_v = 1;
    refresh_writable(c);
    send_hello(c);
    send_status(c);
}

static void on_down(void *arg)
{
    /* The lease runs on: a host agent restart within the lease changes nothing. */
}

static void on_oversized(void *arg)
{
    send_error(arg, 0, ch_decode_err_code(CH_DEC_TOO_LONG), "line longer than 32768 bytes dropped");
}

const struct port_ops control_port_ops = {
    .up = on_up, .line = on_line, .oversized = on_oversized, .down = on_down};

static void on_lease_expired(void *arg)
{
    struct control *c = arg;

    /* A guest whose vCPUs the host did not run for a while wakes up with the lease's timer and
     * the next hint ready at once, in no set order: a hint already here renews the lease. */
    if (c->port)
        port_drain(c->port);
    if (lease_held(c->lease))
        return;

    log_msg(LOG_LVL_INFO, "lease of hint seq %" PRIu64 " expired; fallback %s", c->last_seq,
            config_fallback_name(c->cfg->fallback));
    enter_fallback(c);
    send_status(c);
}

/* Host mode between hints: keep the hint's set within the online CPUs. */
static bool follow_hotplug(struct control *c)
{
    ch_cpuset want, hkset, both;
    int hk = governor_housekeeping(&c->cur->online, &c->cur->isolated);

    /* What is left of the hint must still hold a housekeeping CPU: the first one, if not. */
    ch_cpuset_and(&want, &c->host_set, &c->cur->online);
    governor_housekeeping_set(&c->cur->online, &c->cur->isolated, &hkset);
    ch_cpuset_and(&both, &want, &hkset);
    if (hk >= 0 && ch_cpuset_empty(&both))
        ch_cpuset_set(&want, (unsigned)hk);
    if (ch_cpuset_equal(&want, &c->applied))
        return false;
    int rc = mask_write(&c->mask, &want);
    if (rc < 0) {
        if (-rc != c->write_err)
            log_msg(LOG_LVL_ERR, "hotplug: cannot write the preferred set: %s (said once)",
                    strerror(-rc));
        c->write_err = -rc;
        return false;
    }
    c->write_err = 0;
    log_msg(LOG_LVL_INFO, "online CPUs changed: hint seq %" PRIu64 " reapplied to what is online",
            c->last_seq);
    c->applied = want;
    return true;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct control *c = arg;
    struct sample *t = c->prev;
    bool changed = false;
    ch_cpuset now;

    c->prev = c->cur;
    c->cur = t;
    if (sample_take(&c->smp, c->cur) < 0) {
        log_msg(LOG_LVL_WARN, "cannot read %s; keeping the last sample", c->smp.online);
        *c->cur = *c->prev;
    }
    if (c->prev->have_stat && c->cur->have_stat)
        governor_steal(&c->prev->stat, &c->cur->stat, &c->cur->online, &c->steal);
    if (c->supported && mask_read(&c->mask, &now) == 0 && !ch_cpuset_equal(&now, &c->applied)) {
        c->applied = now; /* the kernel dropped an offlined CPU, or someone else wrote */
        changed = true;
    }
    enum governor_action action = GOV_HOLD;
    if (c->once && c->mode == CH_MODE_FALLBACK && !c->fb.active)
        enter_fallback(c); /* --once without a hint: this is the one fallback step */
    if (c->mode == CH_MODE_HOST && c->writable) {
        changed |= follow_hotplug(c);
    } else if (c->mode == CH_MODE_FALLBACK) {
        int rc = fallback_tick(&c->fb, c->prev, c->cur, &c->applied, &action);
        if (rc < 0 && -rc != c->write_err)
            log_msg(LOG_LVL_ERR, "fallback: cannot write the preferred set: %s (said once)",
                    strerror(-rc));
        c->write_err = rc < 0 ? -rc : 0;
        changed |= rc > 0;
        if (rc > 0)
            log_msg(LOG_LVL_INFO, "fallback %s: %s at steal %u.%02u %%",
                    config_fallback_name(c->fb.kind), governor_action_name(action), c->steal / 100,
                    c->steal % 100);
    }
    /* The host learns at once that hints can (or cannot) be applied, and which CPUs a hint
     * may name after a hotplug (it clips its hints to the hello's online set). */
    if ((refresh_writable(c) || hello_outdated(c)) && c->port && port_connected(c->port))
        send_hello(c);
    if (changed)
        send_status(c);
    if (c->once) {
        /* No hint within one interval: that was the fallback step. */
        json_object *o = once_base(c, c->mode == CH_MODE_UNSUPPORTED ? "unsupported" : "fallback");
        json_object_object_add(o, "fallback",
                               json_object_new_string(config_fallback_name(c->fb.kind)));
        json_object_object_add(o, "action", json_object_new_string(governor_action_name(action)));
        once_finish(c, c->mode == CH_MODE_UNSUPPORTED ? 1 : 0, o);
    }
}

struct control *control_new(struct event_base *base, const struct config *cfg)
{
    struct control *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->base = base;
    c->cfg = cfg;
    c->once = cfg->action == ACTION_ONCE;
    c->prev = calloc(1, sizeof(*c->prev));
    c->cur = calloc(1, sizeof(*c->cur));
    c->lease = lease_new(base, on_lease_expired, c);
    c->tick = event_new(base, -1, EV_PERSIST, on_tick, c);
    if (!c->prev || !c->cur || !c->lease || !c->tick ||
        sample_init(&c->smp, cfg->sysfs_root, cfg->proc_root) < 0 ||
        mask_sysfs_open(&c->mask, cfg->sysfs_root) < 0) {
        control_free(c);
        return NULL;
    }
    fallback_init(&c->fb, cfg, &c->mask);
    if (!c->once && fallback_attach(&c->fb, base, on_modprobe_done, c) < 0) {
        control_free(c);
        return NULL;
    }
    return c;
}

void control_attach_port(struct control *c, struct port *p)
{
    c->port = p;
}

static int arm_tick(struct control *c)
{
    struct timeval tv = {.tv_sec = c->cfg->interval_ms / 1000,
                         .tv_usec = (suseconds_t)(c->cfg->interval_ms % 1000) * 1000};
    return event_add(c->tick, &tv) < 0 ? -ENOMEM : 0;
}

int control_start(struct control *c)
{
    int rc = sample_take(&c->smp, c->cur);

    if (rc < 0) {
        log_msg(LOG_LVL_ERR, "cannot read the online CPUs from %s: %s", c->smp.online,
                strerror(-rc));
        return rc;
    }
    if (!c->cur->have_stat)
        log_msg(LOG_LVL_WARN, "cannot read %s: no steal measurement", c->smp.proc_stat);
    refresh_writable(c);
    if (c->supported)
        mask_read(&c->mask, &c->applied);
    if (!c->supported || (!c->writable && c->cfg->fallback != FALLBACK_KERNEL)) {
        log_msg(LOG_LVL_WARN, "%s %s: mode unsupported, nothing will be written",
                mask_where(&c->mask), c->supported ? "is not writable" : "does not exist");
        c->mode = CH_MODE_UNSUPPORTED;
    } else {
        /* No lease yet: the guest looks after itself until the host speaks. */
        c->mode = CH_MODE_FALLBACK;
        if (!c->once)
            enter_fallback(c);
        else
            c->fb.kind = c->cfg->fallback;
        log_msg(LOG_LVL_INFO, "started in mode fallback (%s) until the host sends a hint",
                config_fallback_name(c->fb.kind));
    }
    return arm_tick(c);
}

void control_reconfigure(struct control *c, const struct config *cfg)
{
    enum fallback_kind was = c->fb.kind;

    c->cfg = cfg;
    fallback_reconfigure(&c->fb, cfg);
    /* A guest in its fallback switches to the newly configured one now, not at the next lease
     * expiry, which may never come.  (A kernel fallback that could not load and runs the local
     * governor instead is tried again.) */
    if (c->mode == CH_MODE_FALLBACK && !c->once && c->fb.active && cfg->fallback != was) {
        log_msg(LOG_LVL_INFO, "fallback %s -> %s (configuration reloaded)",
                config_fallback_name(was), config_fallback_name(cfg->fallback));
        enter_fallback(c);
        send_status(c);
    }
    arm_tick(c);
}

int control_stop(struct control *c)
{
    lease_cancel(c->lease);
    event_del(c->tick);
    if (c->once)
        return 0; /* --once leaves its result in force, steal_governor included */
    /* A hint still waiting for modprobe -r is dropped, not applied (nor its refusal answered
     * with the fallback) when fallback_detach() reaps modprobe: every CPU is restored below. */
    c->has_waiting = false;
    fallback_detach(&c->fb); /* from here modprobe is waited for: the loop is done */
    int rc = fallback_leave(&c->fb);
    if (rc < 0 && rc != -EINPROGRESS) {
        /* our steal_governor still owns the mask and nobody else will unload it: the EBUSY
         * mask_restore() would meet is no "someone else's policy" but a failed restore */
        log_msg(LOG_LVL_ERR, "cannot restore the preferred CPUs: %s did not unload: %s",
                FALLBACK_MODULE, strerror(-rc));
        return rc;
    }
    if (!c->supported || !c->writable)
        return 0;
    /* Written even when every CPU is preferred already: a request of ours may stand behind
     * that (mask_restore()). */
    return mask_restore(&c->mask);
}

int control_once_result(const struct control *c, FILE *out)
{
    fprintf(out, "%s\n", c->once_done ? c->once_json : "{\"result\":\"interrupted\"}");
    fflush(out);
    return c->once_done ? c->once_status : 1;
}

void control_free(struct control *c)
{
    if (!c)
        return;
    if (c->tick)
        event_free(c->tick);
    fallback_detach(&c->fb);
    mask_close(&c->mask);
    lease_free(c->lease);
    free(c->prev);
    free(c->cur);
    free(c);
}
