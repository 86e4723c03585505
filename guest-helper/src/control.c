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
#include "sysfs.h"

#define AGENT "corehint-guestd/" COREHINT_VERSION
/* Refusals logged per second; the host may send garbage at line rate. */
#define REFUSALS_LOGGED_PER_SEC 10u

struct control {
    struct event_base *base;
    const struct config *cfg;
    struct sysfs sys;
    struct port *port;
    struct lease *lease;
    struct fallback fb;
    struct event *tick;
    struct sample *prev, *cur;

    enum ch_mode mode;
    bool supported, writable;
    ch_cpuset applied;  /* the preferred set in force, as read back */
    ch_cpuset host_set; /* the last applied hint's cpus, re-clipped on hotplug */
    uint64_t last_seq;  /* watermark on this connection; reset on reconnect */
    uint32_t steal;     /* steal_pct_x100 over the last interval */
    bool hello_answered;

    time_t log_sec; /* refusal log budget: the second it counts, used, suppressed */
    unsigned log_used, log_suppressed;

    bool once;
    bool once_done;
    int once_status;
    char once_json[1024];
};

static void send_msg(struct control *c, const struct ch_msg *m)
{
    char buf[CH_LINE_MAX + 1];
    int n = ch_encode(m, buf, sizeof(buf));

    if (n < 0) {
        log_msg(LOG_LVL_ERR, "cannot encode %s: %s", ch_msg_type_name(m->type), strerror(-n));
        return;
    }
    if (c->port)
        port_send(c->port, buf, (size_t)n);
}

static void send_status(struct control *c)
{
    struct ch_msg m;

    ch_msg_status(&m, c->last_seq, &c->applied, c->mode, c->steal);
    send_msg(c, &m);
}

static void send_hello(struct control *c)
{
    struct ch_msg m;
    ch_cpuset online = c->cur->online;

    if (ch_cpuset_empty(&online))
        ch_cpuset_set(&online, 0); /* the codec insists; an unreadable online file is odd */
    ch_msg_guest_hello(&m, AGENT, &online, c->supported && c->writable);
    governor_housekeeping_set(&online, &c->cur->isolated, &m.u.hello.housekeeping);
    m.u.hello.has_housekeeping = !ch_cpuset_empty(&m.u.hello.housekeeping);
    send_msg(c, &m);
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

    if (!c->supported || !c->writable) {
        refuse(c, h->seq, "unsupported",
               c->supported ? "the preferred file is not writable"
                            : "this kernel has no /sys/devices/system/cpu/preferred");
        return;
    }
    /* Hotplug may have happened since the last interval: judge against the kernel's now. */
    if (sysfs_read_online(&c->sys, &online) < 0)
        online = c->cur->online;
    enum hint_verdict v = hint_check(h, &online, &c->cur->isolated, c->last_seq, msg, sizeof(msg));
    if (v != HINT_OK) {
        refuse(c, h->seq, hint_verdict_code(v), msg);
        return;
    }
    bool was_fallback = c->mode == CH_MODE_FALLBACK && c->fb.active;
    if (was_fallback)
        fallback_leave(&c->fb); /* the kernel governor must let go of the file first */
    int rc = sysfs_write_preferred(&c->sys, &h->cpus);
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "writing %.160s: %s", c->sys.preferred,
                 rc == -EIO ? "read back a different set" : strerror(-rc));
        if (was_fallback)
            enter_fallback(c);
        refuse(c, h->seq, "write-failed", msg);
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
        log_msg(LOG_LVL_INFO, "host agent %s", m.u.hello.agent);
        if (!c->hello_answered) {
            c->hello_answered = true; /* once per connection: no hello ping-pong */
            send_hello(c);
            send_status(c);
        }
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

    c->last_seq = 0; /* a restarted host starts again from seq 1 */
    c->hello_answered = false;
    c->supported = sysfs_supported(&c->sys);
    c->writable = c->supported && sysfs_writable(&c->sys);
    send_hello(c);
    send_status(c);
}

static void on_down(void *arg)
{
    /* The lease runs on: a host agent restart within the lease changes nothing. */
}

static void on_oversized(void *arg)
{
    send_error(arg, 0, ch_decode_err_code(CH_DEC_TOO_LONG), "line longer than 4096 bytes dropped");
}

const struct port_ops control_port_ops = {
    .up = on_up, .line = on_line, .oversized = on_oversized, .down = on_down};

static void on_lease_expired(void *arg)
{
    struct control *c = arg;

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
    int rc = sysfs_write_preferred(&c->sys, &want);
    if (rc < 0) {
        log_msg(LOG_LVL_ERR, "hotplug: cannot write the preferred set: %s", strerror(-rc));
        return false;
    }
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
    if (sysfs_sample(&c->sys, c->cur) < 0) {
        log_msg(LOG_LVL_WARN, "cannot read %s; keeping the last sample", c->sys.online);
        *c->cur = *c->prev;
    }
    if (c->prev->have_stat && c->cur->have_stat)
        governor_steal(&c->prev->stat, &c->cur->stat, &c->cur->online, &c->steal);
    if (c->supported && sysfs_read_preferred(&c->sys, &now) == 0 &&
        !ch_cpuset_equal(&now, &c->applied)) {
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
        if (rc < 0)
            log_msg(LOG_LVL_ERR, "fallback: cannot write the preferred set: %s", strerror(-rc));
        changed |= rc > 0;
        if (rc > 0)
            log_msg(LOG_LVL_INFO, "fallback %s: %s at steal %u.%02u %%",
                    config_fallback_name(c->fb.kind), governor_action_name(action), c->steal / 100,
                    c->steal % 100);
    }
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
        sysfs_init(&c->sys, cfg->sysfs_root, cfg->proc_root) < 0) {
        control_free(c);
        return NULL;
    }
    fallback_init(&c->fb, cfg, &c->sys);
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
    int rc = sysfs_sample(&c->sys, c->cur);

    if (rc < 0) {
        log_msg(LOG_LVL_ERR, "cannot read the online CPUs from %s: %s", c->sys.online,
                strerror(-rc));
        return rc;
    }
    if (!c->cur->have_stat)
        log_msg(LOG_LVL_WARN, "cannot read %s: no steal measurement", c->sys.proc_stat);
    c->supported = sysfs_supported(&c->sys);
    c->writable = c->supported && sysfs_writable(&c->sys);
    if (c->supported)
        sysfs_read_preferred(&c->sys, &c->applied);
    if (!c->supported || (!c->writable && c->cfg->fallback != FALLBACK_KERNEL)) {
        log_msg(LOG_LVL_WARN, "%s %s: mode unsupported, nothing will be written", c->sys.preferred,
                c->supported ? "is not writable" : "does not exist");
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
    c->cfg = cfg;
    fallback_reconfigure(&c->fb, cfg);
    arm_tick(c);
}

int control_stop(struct control *c)
{
    int rc = 0;

    lease_cancel(c->lease);
    event_del(c->tick);
    if (c->once)
        return 0; /* --once leaves its result in force, steal_governor included */
    fallback_leave(&c->fb);
    if (!c->supported || !c->writable)
        return 0;
    ch_cpuset online;
    if ((rc = sysfs_read_online(&c->sys, &online)) < 0 ||
        (rc = sysfs_write_preferred(&c->sys, &online)) < 0) {
        log_msg(LOG_LVL_ERR, "cannot restore the full online set: %s", strerror(-rc));
        return rc;
    }
    log_msg(LOG_LVL_INFO, "restored every online CPU as preferred");
    return 0;
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
    lease_free(c->lease);
    free(c->prev);
    free(c->cur);
    free(c);
}
