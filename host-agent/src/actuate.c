// SPDX-License-Identifier: LGPL-2.1-or-later
#include "actuate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "corehint/log.h"

void act_init(struct actuator *a, struct event_base *base, const struct hd_config *cfg,
              struct registry *reg, act_agent_fn agent, void *agent_ctx)
{
    memset(a, 0, sizeof(*a));
    a->base = base;
    a->cfg = cfg;
    a->reg = reg;
    a->agent = agent;
    a->agent_ctx = agent_ctx;
}

static void on_ack(void *ctx, struct channel *ch, uint64_t seq, uint64_t latency_ns)
{
    struct actuator *a = ctx;

    static const double le[] = ACT_LAT_BUCKETS;
    unsigned k = 0;

    a->lat_ns[a->nlat++ % ACT_LAT_RING] = latency_ns;
    a->lat_sum_ns += latency_ns;
    while (k < ACT_LAT_NBUCKETS && (double)latency_ns / 1e9 > le[k])
        k++;
    a->lat_bucket[k]++;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

uint64_t act_latency_quantile(const struct actuator *a, double q)
{
    unsigned n = a->nlat < ACT_LAT_RING ? (unsigned)a->nlat : ACT_LAT_RING;
    uint64_t sorted[ACT_LAT_RING];
    unsigned idx;

    if (n == 0)
        return 0;
    memcpy(sorted, a->lat_ns, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), cmp_u64);
    idx = (unsigned)(q * (n - 1) + 0.5);
    return sorted[idx < n ? idx : n - 1];
}

/* Where the channel socket of domain name (whose XML names socket channel, "" for none) is,
 * "" for none. */
static void channel_path(const struct actuator *a, const char *name, const char *channel, char *out,
                         size_t size)
{
    if (a->cfg->channel_dir[0])
        snprintf(out, size, "%s/%s.sock", a->cfg->channel_dir, name);
    else
        snprintf(out, size, "%s", channel);
}

/* Give v a channel to its socket, reopening it when the socket moved. */
static void open_channel(struct actuator *a, struct vm_entry *v, const char *name,
                         const char *channel)
{
    char path[SNAP_PATH_MAX + sizeof(a->cfg->channel_dir) + SNAP_NAME_MAX + 8];

    channel_path(a, name, channel, path, sizeof(path));
    if (v->act.ch && strcmp(v->act.ch->path, path) != 0) {
        chan_free(v->act.ch);
        v->act.ch = NULL;
    }
    if (!v->act.ch && path[0] && !a->cfg->dry_run) {
        if (strlen(path) >= SNAP_PATH_MAX)
            log_msg(LOG_LVL_WARN, "%s: channel path too long: %s", name, path);
        else
            v->act.ch = chan_new(a->base, name, path, on_ack, a);
    }
}

void act_track(struct actuator *a, const struct snapshot *s)
{
    if (a->reg->steps || reg_track(a->reg, s) < 0)
        return;
    /* (reg_track() keeps the records in the snapshot's order) */
    for (unsigned i = 0; i < a->reg->nvm; i++)
        open_channel(a, &a->reg->vm[i], s->dom[i].name, s->dom[i].channel);
}

static void agent_result(const struct actuator *a, struct vm_entry *v, enum cfg_actuator how,
                         const ch_cpuset *cpus, int rc, const char *err)
{
    char list[CH_CPULIST_MAX_LEN];

    v->act.agent_pending = false;
    if (rc < 0) {
        /* What the guest holds now is unknown: not judged, and the next decision is sent. */
        v->act.agent_applied = false;
        v->act.agent_failed++;
        v->act.agent_backoff = v->act.agent_backoff ? v->act.agent_backoff * 2 : 1;
        if (v->act.agent_backoff > ACT_AGENT_BACKOFF_MAX)
            v->act.agent_backoff = ACT_AGENT_BACKOFF_MAX;
        /* half an interval early: the decision that many intervals on is not missed by jitter */
        v->act.agent_retry_ns =
            hd_mono_ns() +
            ((uint64_t)v->act.agent_backoff * a->cfg->interval_ms - a->cfg->interval_ms / 2) *
                1000000u;
        snprintf(v->act.agent_error, sizeof(v->act.agent_error), "%s", err);
        log_msg(LOG_LVL_WARN, "%s: %s failed: %s; next attempt in %u interval(s)", v->name,
                cfg_actuator_name(how), err, v->act.agent_backoff);
        return;
    }
    v->act.agent_backoff = 0;
    v->act.agent_retry_ns = 0;
    v->act.agent_ok++;
    v->act.agent_error[0] = '\0';
    v->act.agent_applied = true;
    v->act.agent_how = how;
    v->act.agent_cpus = *cpus;
    if (ch_cpulist_format(cpus, list, sizeof(list)) < 0)
        list[0] = '\0';
    log_msg(LOG_LVL_INFO, "%s: %s applied %s (%u vCPUs)", v->name, cfg_actuator_name(how), list,
            ch_cpuset_count(cpus));
}

void act_agent_done(struct actuator *a, const char *uuid, enum cfg_actuator how,
                    const ch_cpuset *cpus, int rc, const char *err)
{
    struct vm_entry *v = reg_find(a->reg, uuid);

    if (v)
        agent_result(a, v, how, cpus, rc, err);
}

/* Apply cpus through qemu-ga when they changed, one command at a time per domain. */
static void agent_apply(struct actuator *a, struct vm_entry *v, const struct model_dom *md,
                        const ch_cpuset *cpus, enum cfg_actuator how)
{
    char path[sizeof(a->cfg->channel_dir) + SNAP_NAME_MAX + 16], err[256] = "";
    struct qga_link *l;
    int rc;

    if (v->act.agent_pending || hd_mono_ns() < v->act.agent_retry_ns ||
        (v->act.agent_applied && ch_cpuset_equal(&v->act.agent_cpus, cpus)))
        return;
    if (a->agent) {
        if (a->agent(a->agent_ctx, v->uuid, v->name, how, cpus, md->nvcpu) == 0)
            v->act.agent_pending = true;
        return;
    }
    if (!a->cfg->channel_dir[0])
        return; /* replay without a place for agent sockets */
    snprintf(path, sizeof(path), "%s/%s.agent.sock", a->cfg->channel_dir, md->name);
    if (!(l = qga_open(NULL, md->uuid, path, err, sizeof(err)))) {
        rc = -EIO;
    } else {
        rc = qga_apply(l, how, cpus, md->nvcpu, err, sizeof(err));
        qga_close(l);
    }
    agent_result(a, v, how, cpus, rc, err);
}

/*
 * A decision made before any hello of the guest knew none of its housekeeping CPUs and kept
 * the lowest vCPU in its set (PROTOCOL.md 5.1): guests pinned alike would all be told to
 * prefer the vCPU on one host CPU.  Until the engine has made a decision from a sample that
 * saw the guest's hello (not merely sampled after it: a sample that decides nothing, as after
 * a libvirt reconnect, leaves the older decision in force), the guest's hints wait, for at
 * most a lease after its channel came up, once per VM (a guest whose helper never says hello,
 * or is not there to, is hinted then, and not held again after reconnects); the guest
 * meanwhile keeps what it holds (an earlier hostd's hint in its lease, or its fallback).
 * Hostd's hello goes out on connect and every helper answers the first hello of a session,
 * so this costs an interval at most, once per hostd start and guest.
 */
static bool hold_for_hello(struct vm_entry *v, const struct engine *e, uint32_t lease_ms)
{
    uint64_t up_ms = (hd_mono_ns() - v->act.ch->up_ns) / 1000000u;
    bool informed = v->act.heard_step && e->steps >= v->act.heard_step;

    if (informed || v->act.hold_expired || up_ms >= lease_ms) {
        if (v->act.holding && informed) {
            log_msg(LOG_LVL_INFO, "%s: hinting after the guest's hello (%llu decisions held)",
                    v->name, (unsigned long long)v->act.held);
        } else if (v->act.holding) {
            log_msg(LOG_LVL_WARN,
                    "%s: no hello from the guest %llu ms after its channel came up: hinting "
                    "without its housekeeping CPUs",
                    v->name, (unsigned long long)up_ms);
            v->act.hold_expired = true;
        }
        v->act.holding = false;
        return false;
    }
    if (!v->act.holding)
        log_msg(LOG_LVL_INFO, "%s: hints wait for the guest's hello (its housekeeping CPUs)",
                v->name);
    v->act.holding = true;
    if (v->act.held_step != e->steps) {
        v->act.held++;
        v->act.held_step = e->steps;
    }
    return true;
}

/* Every vCPU libvirt shows online for the domain, by id (ids may be sparse: a vCPU hot-removed
 * or disabled leaves a hole that a count would fill with the wrong number). */
static void every_vcpu(const struct model_dom *md, ch_cpuset *out)
{
    ch_cpuset_zero(out);
    for (unsigned i = 0; i < md->nvcpu; i++)
        if (md->vcpu[i].id < CH_CPU_MAX)
            ch_cpuset_set(out, md->vcpu[i].id);
}

unsigned act_apply(struct actuator *a, const struct engine *e, bool widen)
{
    uint32_t lease = a->cfg->lease_intervals * a->cfg->interval_ms;
    unsigned sent = 0;

    if (!e->decided || reg_sync(a->reg, e) < 0)
        return 0;
    for (unsigned i = 0; i < a->reg->nvm; i++)
        open_channel(a, &a->reg->vm[i], a->reg->vm[i].dom->name, a->reg->vm[i].dom->channel);
    if (lease < CH_LEASE_MIN_MS)
        lease = CH_LEASE_MIN_MS;
    if (lease > CH_LEASE_MAX_MS)
        lease = CH_LEASE_MAX_MS;
    for (unsigned i = 0; i < a->reg->nvm; i++) {
        struct vm_entry *v = &a->reg->vm[i];
        const struct pol_decision *d = v->dec;
        const struct model_dom *md = v->dom;
        ch_cpuset cpus = d->preferred;

        struct cfg_domain cd;

        cfg_domain_settings(a->cfg, v->name, v->uuid, &md->policy, &cd);
        const struct cfg_domain *sec = cfg_domain_find(a->cfg, v->name, v->uuid);
        /* (a [domain] section naming the actuator overrides the metadata's anyway) */
        bool refused = md->policy.actuator > CFG_ACT_CHANNEL && !a->cfg->metadata_agent &&
                       !(sec && sec->has_actuator);
        if (refused && !v->act.meta_agent_refused)
            log_msg(LOG_LVL_WARN,
                    "domain %s: its metadata asks for actuator %s; not taken "
                    "without metadata_agent = yes in hostd.conf",
                    v->name, cfg_actuator_name((enum cfg_actuator)md->policy.actuator));
        v->act.meta_agent_refused = refused;
        /* Observed VMs are told every vCPU: they stay in host mode, as without hostd. */
        bool every = widen || cd.mode == CFG_MODE_OBSERVE;
        const char *why = widen ? "stale" : every ? "observe" : pol_reason_name(d->reason);

        if (every)
            every_vcpu(md, &cpus);
        /* A domain with no vCPU online to libvirt (one being restored or migrated in) has
         * an empty set: nothing to apply, by either actuator. */
        if (ch_cpuset_empty(&cpus))
            continue;
        /* The domain left its qemu-ga actuator (its metadata or hostd.conf changed, or it
         * opted out) while that agent holds a narrowed set in the guest (vCPUs offline, a
         * narrowed preferred file): nothing else would undo it.  Give every vCPU back through
         * that agent first; once it has applied them, let go of it. */
        if (v->act.agent_applied && v->act.agent_how != CFG_ACT_CHANNEL &&
            (cd.actuator != v->act.agent_how || d->opt_out) && !a->cfg->dry_run) {
            ch_cpuset all;
            every_vcpu(md, &all);
            if (ch_cpuset_equal(&v->act.agent_cpus, &all))
                v->act.agent_applied = false;
            else
                agent_apply(a, v, md, &all, v->act.agent_how);
        }
        if (cd.actuator != CFG_ACT_CHANNEL && !d->opt_out && !a->cfg->dry_run) {
            agent_apply(a, v, md, &cpus, cd.actuator);
            continue;
        }
        if (!v->act.ch || d->opt_out || v->act.ch->state != CHAN_UP)
            continue;
        if (!every && hold_for_hello(v, e, lease))
            continue;
        /* Never name a CPU the guest does not have online: it would refuse the hint. */
        if (v->act.ch->has_hello) {
            ch_cpuset both;
            ch_cpuset_and(&both, &cpus, &v->act.ch->hello.online);
            if (!ch_cpuset_empty(&both))
                cpus = both;
        }
        if (ch_cpuset_empty(&cpus))
            continue;
        if (chan_send_hint(v->act.ch, &cpus, lease, why) == 0) {
            v->act.hints++;
            a->hints_total++;
            sent++;
        } else {
            a->hints_dropped++;
        }
    }
    return sent;
}

json_object *act_agent_json(const struct actuator *a, const struct vm_entry *v)
{
    json_object *o;
    char list[CH_CPULIST_MAX_LEN];

    if (!v || (!v->act.agent_ok && !v->act.agent_failed))
        return NULL;
    o = json_object_new_object();
    json_object_object_add(o, "ok", json_object_new_uint64(v->act.agent_ok));
    json_object_object_add(o, "failed", json_object_new_uint64(v->act.agent_failed));
    if (v->act.agent_applied && ch_cpulist_format(&v->act.agent_cpus, list, sizeof(list)) >= 0)
        json_object_object_add(o, "applied", json_object_new_string(list));
    if (v->act.agent_error[0])
        json_object_object_add(o, "error", json_object_new_string(v->act.agent_error));
    if (v->act.agent_backoff) {
        uint64_t now = hd_mono_ns(), iv = (uint64_t)a->cfg->interval_ms * 1000000u;
        uint64_t left = v->act.agent_retry_ns > now ? v->act.agent_retry_ns - now : 0;
        json_object_object_add(o, "backoff_intervals",
                               json_object_new_uint64(v->act.agent_backoff));
        json_object_object_add(o, "retry_in_intervals",
                               json_object_new_uint64(iv ? (left + iv - 1) / iv : 0));
    }
    return o;
}

json_object *act_channel_json(const struct vm_entry *v)
{
    const struct channel *ch = v ? v->act.ch : NULL;
    json_object *o;
    char list[CH_CPULIST_MAX_LEN];

    if (!ch)
        return NULL;
    o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string(ch->path));
    json_object_object_add(o, "state", json_object_new_string(chan_state_name(ch->state)));
    json_object_object_add(o, "hints", json_object_new_uint64(v->act.hints));
    json_object_object_add(o, "seq", json_object_new_uint64(ch->seq));
    json_object_object_add(o, "version", json_object_new_uint64(chan_version(ch)));
    json_object_object_add(o, "acked", json_object_new_boolean(ch->acked));
    json_object_object_add(o, "silent", json_object_new_boolean(chan_silent(ch, hd_mono_ns())));
    if (ch->last_rx_ns)
        json_object_object_add(o, "last_rx_age_ms",
                               json_object_new_uint64((hd_mono_ns() - ch->last_rx_ns) / 1000000u));
    json_object_object_add(o, "msgs_in", json_object_new_uint64(ch->c.msgs_in));
    json_object_object_add(o, "msgs_out", json_object_new_uint64(ch->c.msgs_out));
    json_object_object_add(o, "dropped_out", json_object_new_uint64(ch->c.dropped_out));
    json_object_object_add(o, "malformed", json_object_new_uint64(ch->c.malformed));
    json_object_object_add(o, "oversized", json_object_new_uint64(ch->c.oversized));
    json_object_object_add(o, "errors_in", json_object_new_uint64(ch->c.errors_in));
    json_object_object_add(o, "connects", json_object_new_uint64(ch->c.connects));
    json_object_object_add(o, "lines_in", json_object_new_uint64(ch->c.lines_in));
    json_object_object_add(o, "throttled", json_object_new_uint64(ch->c.throttled));
    json_object_object_add(o, "replaced", json_object_new_uint64(ch->c.replaced));
    json_object_object_add(o, "resent", json_object_new_uint64(ch->c.resent));
    json_object_object_add(o, "held_for_hello", json_object_new_uint64(v->act.held));
    if (ch->connect_error[0])
        json_object_object_add(o, "connect_error", json_object_new_string(ch->connect_error));
    if (ch->has_hello) {
        json_object *h = json_object_new_object();
        json_object_object_add(h, "agent", json_object_new_string(ch->hello.agent));
        if (ch_cpulist_format(&ch->hello.online, list, sizeof(list)) >= 0)
            json_object_object_add(h, "online", json_object_new_string(list));
        json_object_object_add(h, "writable", json_object_new_boolean(ch->hello.writable));
        if (ch->hello.reason[0])
            json_object_object_add(h, "reason", json_object_new_string(ch->hello.reason));
        json_object_object_add(h, "max_v", json_object_new_uint64(ch->hello.max_v));
        json_object_object_add(o, "hello", h);
    }
    if (ch->has_status) {
        json_object *s = json_object_new_object();
        json_object_object_add(s, "seq", json_object_new_uint64(ch->status.seq));
        if (ch_cpulist_format(&ch->status.applied, list, sizeof(list)) >= 0)
            json_object_object_add(s, "applied", json_object_new_string(list));
        json_object_object_add(s, "mode", json_object_new_string(ch_mode_name(ch->status.mode)));
        json_object_object_add(s, "steal_pct_x100",
                               json_object_new_int64(ch->status.steal_pct_x100));
        json_object_object_add(o, "status", s);
    }
    if (ch->has_error) {
        json_object *x = json_object_new_object();
        json_object_object_add(x, "seq", json_object_new_uint64(ch->error.seq));
        json_object_object_add(x, "code", json_object_new_string(ch->error.code));
        json_object_object_add(x, "message", json_object_new_string(ch->error.message));
        json_object_object_add(o, "last_error", x);
    }
    return o;
}

void act_annotate(struct actuator *a, struct snapshot *s, const struct engine *e)
{
    for (unsigned i = 0; i < s->ndom; i++) {
        struct snap_dom *d = &s->dom[i];
        struct vm_entry *v = reg_find(a->reg, d->uuid);

        if (!v)
            continue;
        /* The latest hello wins; between a reconnect and the next hello the last one holds,
         * so that a reconnect alone does not move the VM's preferred vCPUs. */
        /* (empty when the helper did not say) */
        if (v->act.ch && v->act.ch->has_hello) {
            v->act.housekeeping = v->act.ch->hello.housekeeping;
            if (!v->act.heard_step)
                v->act.heard_step = e->steps + 1;
        }
        if (ch_cpuset_empty(&d->housekeeping))
            d->housekeeping = v->act.housekeeping;
        /* Delivery, for compliance, by the domain's actuator: qemu-ga carried a set out (and
         * its last command did not fail); or the helper's latest status on this connection
         * says it holds a set in host mode, a hint has gone out, and it has not gone silent. */
        struct cfg_domain cd;
        cfg_domain_settings(a->cfg, d->name, d->uuid, &d->policy, &cd);
        if (cd.actuator != CFG_ACT_CHANNEL) {
            if (v->act.agent_applied) {
                d->acked = true;
                d->applied = v->act.agent_cpus;
                d->hinted = v->act.agent_cpus;
                d->has_hinted = true;
            }
        } else if (v->act.ch && v->act.ch->state == CHAN_UP && v->act.ch->has_status &&
                   v->act.ch->lease_ms && v->act.ch->status.mode == CH_MODE_HOST &&
                   !chan_silent(v->act.ch, hd_mono_ns())) {
            d->acked = true;
            d->applied = v->act.ch->status.applied;
            /* held to the last hint once it acknowledged that one; still applying it (a
             * loaded guest), to what it applied */
            d->hinted = v->act.ch->acked ? v->act.ch->last_cpus : v->act.ch->status.applied;
            d->has_hinted = true;
        }
    }
}

unsigned act_release(struct actuator *a, const struct engine *e)
{
    uint32_t lease = a->cfg->lease_intervals * a->cfg->interval_ms;
    /* one second for all of them: a guest that does not read must not hold up the stop */
    uint64_t deadline = hd_mono_ns() + 1000000000u;
    unsigned sent = 0;

    if (a->cfg->dry_run || !e->decided || reg_sync(a->reg, e) < 0)
        return 0;
    lease = lease < CH_LEASE_MIN_MS ? CH_LEASE_MIN_MS : lease;
    lease = lease > CH_LEASE_MAX_MS ? CH_LEASE_MAX_MS : lease;
    for (unsigned i = 0; i < a->reg->nvm; i++) {
        struct vm_entry *v = &a->reg->vm[i];
        ch_cpuset all, both;

        every_vcpu(v->dom, &all);
        if (ch_cpuset_empty(&all))
            continue;
        if (v->act.agent_applied && !ch_cpuset_equal(&v->act.agent_cpus, &all))
            agent_apply(a, v, v->dom, &all, v->act.agent_how);
        if (!v->act.ch || v->act.ch->state != CHAN_UP || v->dec->opt_out)
            continue;
        if (v->act.ch->has_hello) {
            ch_cpuset_and(&both, &all, &v->act.ch->hello.online);
            if (!ch_cpuset_empty(&both))
                all = both;
        }
        if (chan_send_hint(v->act.ch, &all, lease, "release") == 0 &&
            chan_flush(v->act.ch, deadline)) {
            a->hints_total++;
            sent++;
        }
    }
    return sent;
}

void act_finalise(struct actuator *a)
{
    for (unsigned i = 0; a->reg && i < a->reg->nvm; i++) {
        chan_free(a->reg->vm[i].act.ch);
        a->reg->vm[i].act.ch = NULL;
    }
}
