// SPDX-License-Identifier: LGPL-2.1-or-later
#include "policy.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Rounding slack: 0.9 * 1.1 must give one vCPU, not two. */
#define EPS 1e-9

static const char *const reason_names[] = {
    [POL_UNCONTENDED] = "uncontended", [POL_FAIR_SHARE] = "fair-share", [POL_HOLD] = "hold",
    [POL_OPT_OUT] = "opt-out",         [POL_NO_DATA] = "no-data",
};

const char *pol_reason_name(enum pol_reason r)
{
    return (unsigned)r < sizeof(reason_names) / sizeof(reason_names[0]) ? reason_names[r] : "?";
}

/* Per-domain working state of one step. */
struct work {
    const struct model_dom *d;
    const struct pol_decision *prev; /* NULL for a domain seen for the first time */
    struct pol_decision *out;
    bool prev_valid; /* prev's preferred set names only online vCPUs */
    unsigned prev_k;
    double wish;   /* demand for the contention test: n when censored */
    bool observed; /* mode = observe: hinted every vCPU, whatever it was decided */
};

struct wf_item {
    struct work *w;
    double demand, weight, alloc;
};

struct core {
    unsigned first, n; /* index range into the domain's vcpu array */
    bool has_hk, in_prev, taken;
    unsigned index;
};

static int cmp_wf(const void *a, const void *b)
{
    const struct wf_item *x = a, *y = b;
    double rx = x->demand / x->weight, ry = y->demand / y->weight;

    return rx < ry ? -1 : rx > ry;
}

/*
 * Weighted max-min fairness: every item gets min(demand, level * weight), the level chosen so
 * that the allocations fill cap (or everybody is satisfied).
 */
static void waterfill(struct wf_item *it, unsigned n, double cap)
{
    double wsum = 0;

    qsort(it, n, sizeof(*it), cmp_wf);
    for (unsigned i = 0; i < n; i++)
        wsum += it[i].weight;
    for (unsigned i = 0; i < n; i++) {
        double level = wsum > 0 && cap > 0 ? cap / wsum : 0;

        if (it[i].demand <= level * it[i].weight) {
            it[i].alloc = it[i].demand;
            cap -= it[i].demand;
            wsum -= it[i].weight;
            continue;
        }
        for (unsigned j = i; j < n; j++)
            it[j].alloc = level * it[j].weight;
        break;
    }
}

/* The vCPUs of d that may carry its housekeeping work: what its guest reported, else (an older
 * helper, qemu-ga, no guest) its lowest vCPU, as the protocol says. */
static void housekeeping_of(const struct model_dom *d, ch_cpuset *out)
{
    ch_cpuset_zero(out);
    for (unsigned i = 0; i < d->nvcpu; i++)
        if (ch_cpuset_test(&d->housekeeping, d->vcpu[i].id))
            ch_cpuset_set(out, d->vcpu[i].id);
    if (ch_cpuset_empty(out) && d->nvcpu)
        ch_cpuset_set(out, d->vcpu[0].id);
}

/* d's vCPUs grouped by core (SMT siblings together); returns the number of cores. */
static unsigned group_cores(const struct model_dom *d, const ch_cpuset *hk, const ch_cpuset *prev,
                            struct core *cores)
{
    unsigned threads = d->threads ? d->threads : 1, ncore = 0;

    for (unsigned i = 0; i < d->nvcpu;) {
        struct core *c = &cores[ncore++];
        unsigned id = d->vcpu[i].id / threads;

        memset(c, 0, sizeof(*c));
        c->first = i;
        c->index = id;
        while (i < d->nvcpu && d->vcpu[i].id / threads == id) {
            c->has_hk |= ch_cpuset_test(hk, d->vcpu[i].id);
            c->in_prev |= prev && ch_cpuset_test(prev, d->vcpu[i].id);
            c->n++;
            i++;
        }
    }
    return ncore;
}

/* Mean booked load of the pCPUs a core's vCPUs run on: a pinned vCPU's pCPU, the mean over
 * the span of a floating one (wide_mean for those floating over the VM's whole span); plus
 * deferred, what this pick booked for wide vCPUs and spreads over the span only at its end. */
static double core_load(const struct model_dom *d, const struct core *c, const double *load,
                        unsigned npcpu, double wide_mean, double deferred)
{
    double sum = 0;
    unsigned known = 0;

    for (unsigned v = c->first; v < c->first + c->n; v++) {
        const struct model_vcpu *mv = &d->vcpu[v];

        if (mv->home >= 0 && (unsigned)mv->home >= npcpu)
            continue;
        sum += mv->home >= 0 ? load[mv->home] + deferred
               : mv->wide    ? wide_mean
                             : model_span_mean(&mv->span, load, npcpu) + deferred;
        known++;
    }
    return known ? sum / known : 0;
}

/* Book u CPUs for each vCPU of set where it runs. */
static void book(const struct model_dom *d, const ch_cpuset *set, double u, double *load,
                 unsigned npcpu)
{
    model_book(d, set, MQ_ONE, u, load, npcpu);
}

/*
 * Pick k of d's vCPUs, whole cores at a time, each time the core whose pCPUs carry the least
 * booked load, and book the VM's per-vCPU share there at once, so that its own cores spread
 * too.  The first core holds a housekeeping vCPU (the kernel refuses a set without one).
 * Ties: a core of the previous set, then a housekeeping core, then the lower core number.
 */
static void pick(const struct model_dom *d, unsigned k, double u, const ch_cpuset *prev,
                 double *load, unsigned npcpu, struct core *cores, ch_cpuset *out)
{
    ch_cpuset hk;
    unsigned ncore, got = 0;
    bool need_hk = true;
    /* vCPUs floating over the whole span all see its mean load (wide_mean), kept current:
     * every booking of this pick lands inside the span and raises it by u / nspan.  What
     * wide vCPUs book is spread over the span once at the end (wide). */
    double wide_mean = d->nspan ? model_span_mean(&d->span, load, npcpu) : 0, wide = 0;

    housekeeping_of(d, &hk);
    ncore = group_cores(d, &hk, prev, cores);
    ch_cpuset_zero(out);
    while (got < k) {
        int best = -1;
        double best_load = 0;

        for (unsigned c = 0; c < ncore; c++) {
            const struct core *x = &cores[c];
            if (x->taken || (need_hk && !x->has_hk))
                continue;
            double l = core_load(d, x, load, npcpu, wide_mean, d->nspan ? wide / d->nspan : 0);
            if (best >= 0) {
                const struct core *y = &cores[best];
                if (l > best_load + EPS)
                    continue;
                if (l >= best_load - EPS && (x->in_prev != y->in_prev ? y->in_prev
                                             : x->has_hk != y->has_hk ? y->has_hk
                                                                      : true))
                    continue; /* a tie the incumbent wins (it also has the lower number) */
            }
            best = (int)c;
            best_load = l;
        }
        if (best < 0) {
            if (!need_hk)
                break; /* cannot happen: k <= nvcpu */
            need_hk = false;
            continue;
        }
        cores[best].taken = true;
        need_hk = false;
        for (unsigned v = cores[best].first; v < cores[best].first + cores[best].n && got < k;
             v++, got++) {
            const struct model_vcpu *mv = &d->vcpu[v];

            ch_cpuset_set(out, mv->id);
            model_book_vcpu(mv, u, load, npcpu, &wide);
            wide_mean += d->nspan ? u / d->nspan : 0;
        }
    }
    model_book_wide(d, wide, load, npcpu);
}

static void all_vcpus(const struct model_dom *d, ch_cpuset *out)
{
    ch_cpuset_zero(out);
    for (unsigned i = 0; i < d->nvcpu; i++)
        ch_cpuset_set(out, d->vcpu[i].id);
}

static unsigned round_to_cores(unsigned k, unsigned threads, unsigned n)
{
    if (threads > 1)
        k = (k + threads - 1) / threads * threads;
    return k > n ? n : k;
}

static double weight_of(const struct model_dom *d, unsigned shares_default,
                        const struct hd_config *cfg, const struct cfg_domain *cd)
{
    if (cd->weight > 0)
        return cd->weight;
    /* What the host kernel weighs the domain's cgroup by, relative to a domain nobody
     * weighted (cpu_shares 1024 on cgroup v1, cpu.weight 100 on v2): 1 by default, whatever
     * its vCPU count, because that is how the kernel shares the pCPUs among domains. */
    if (cfg->use_shares && d->shares > 0)
        return d->shares / (double)(shares_default ? shares_default : 1024);
    /* Not readable for this domain on a host whose default is known: the default. */
    if (cfg->use_shares && shares_default)
        return 1;
    /* Unknown (a recording without it, use_shares = no): what a flat scheduler gives. */
    return d->nvcpu ? d->nvcpu : 1;
}

static void prepare(struct work *w, unsigned shares_default, const struct hd_config *cfg)
{
    const struct model_dom *d = w->d;
    const struct pol_decision *p = w->prev;
    struct cfg_domain cd;
    struct pol_decision *o = w->out;
    unsigned n = d->nvcpu;

    memset(o, 0, sizeof(*o));
    memcpy(o->uuid, d->uuid, sizeof(o->uuid));
    o->nvcpu = n;
    o->demand = d->demand;
    cfg_domain_settings(cfg, d->name, d->uuid, &d->policy, &cd);
    o->weight = weight_of(d, shares_default, cfg, &cd);
    o->opt_out = cd.opt_out;
    w->observed = cd.mode == CFG_MODE_OBSERVE;
    o->pool = d->pool;
    w->prev_k = n;
    if (p) { /* claim_fair's backoff outlives quiet spells */
        o->claim_misses = p->claim_misses;
        o->miss_demand = p->miss_demand;
    }
    if (p && p->count < p->nvcpu) {
        ch_cpuset online;
        all_vcpus(d, &online);
        w->prev_k = p->count < n ? p->count : n;
        w->prev_valid = ch_cpuset_subset(&p->preferred, &online) && p->count == w->prev_k &&
                        ch_cpuset_count(&p->preferred) == p->count;
    }
    w->wish = d->demand;
    if (d->measured && w->prev_k < n) {
        double busy = 0;
        for (unsigned i = 0; i < n; i++)
            if (ch_cpuset_test(&p->preferred, d->vcpu[i].id))
                busy += d->vcpu[i].demand;
        /* Idle non-preferred vCPUs halt: the measured demand is capped near prev_k.  A VM
         * filling its preferred vCPUs may want anything up to all of them. */
        o->censored = busy >= cfg->saturated * w->prev_k;
        if (o->censored)
            w->wish = n;
    }
}

/*
 * A censored VM shows only what its preferred vCPUs carry, so when every VM of a pool is
 * censored the counts they hold confirm themselves: a VM that was idle while another filled
 * the pool was shrunk to its minimum, and once busy it can only grow into capacity nobody
 * else's measured demand claims, which the first VM's wide set leaves none of.  Their fair
 * shares, every censored VM wanting all its vCPUs, undo that: once a censored VM has been held
 * below the count its fair share would give it for claim_after intervals, every VM of the pool
 * is entitled to its fair share (the first one shrinks).  The wait keeps a VM shrunk on one low
 * reading from taking its share back at once, and its neighbours' vCPUs with it.  A claim is a
 * probe: a VM that fills its set but wants no more (one busy task on one vCPU) shows it at the
 * larger count, and each claim it leaves unused makes its wait four times as long (at most
 * 256 claim_after), so it stops disturbing the pool; one it uses (it fills the larger set too,
 * or shows half a CPU more) resets the wait, as do demand half a CPU above what it showed
 * when it last missed and the end of the pool's contention.  Every
 * VM held under its fair share that interval is marked claimed (its use of it is judged too),
 * not only the one whose wait ran out.  A claim is judged once the guest runs on the claimed
 * count: a guest that acknowledged a smaller set has not applied it yet (a loaded guest, a slow
 * qemu-ga), and its old set proves nothing; neither does an interval without a measurement or
 * without an acknowledgement from a guest that gave one when it claimed.  Until then the claim
 * stands (the pool keeps its fair shares, the claimant wanting all its vCPUs), for at most
 * CLAIM_WAIT_MAX intervals; then it is judged on what the guest shows.
 */
#define CLAIM_BACKOFF_MAX 8
#define CLAIM_WAIT_MAX 3

#define HOLD_FOLLOW 0.25

/*
 * The need (entitlement + headroom) a contended VM's count follows: while the new one stays
 * within hold_band of the previous one (at least grow_margin CPUs), an average moving a
 * quarter of the way each interval; beyond it, the new one.  Entitlements move with
 * the pool's water level and with the readings' noise, and an entitlement wobbling around a
 * whole number (11.0 of a 16-vCPU VM, 0.96 + headroom of a 2-vCPU one) flipped the count every
 * few intervals; a real step moves the need by far more than the band and is taken at once.
 */
static double held_need(const struct work *w, double need, const struct hd_config *cfg)
{
    const struct pol_decision *p = w->prev;
    double band;

    if (!p || !p->contended || p->held_need <= 0)
        return need;
    band = cfg->hold_band * p->held_need;
    if (band < cfg->grow_margin)
        band = cfg->grow_margin;
    if (fabs(need - p->held_need) > band)
        return need;
    /* inside the band it follows the need slowly, so that a lasting small change (a VM held
     * one vCPU above a fair share just under a whole number) is still made, once */
    return p->held_need + HOLD_FOLLOW * (need - p->held_need);
}

/* The count an entitlement gives a contended VM: its held need, rounded up, to whole cores,
 * at least min_cpus. */
static unsigned contended_count(const struct work *w, double entitlement,
                                const struct hd_config *cfg)
{
    unsigned n = w->d->nvcpu, k;
    double need = held_need(w, entitlement * (1 + cfg->headroom), cfg);
    double want = ceil(need - EPS);

    /* Growing a shrunk guest takes a clear step past its current count: an entitlement
     * wobbling around a whole number (0.96 CPUs + headroom) must not flip it. */
    if (w->prev_k < n && want > w->prev_k && need < w->prev_k + cfg->grow_margin)
        want = w->prev_k;
    k = want < cfg->min_cpus ? cfg->min_cpus : want > n ? n : (unsigned)want;
    return round_to_cores(k, w->d->threads, n);
}

static void claim_fair(struct work *v, unsigned n, double cap, const struct hd_config *cfg,
                       struct wf_item *it)
{
    unsigned m = 0;
    bool claim = false;

    for (unsigned i = 0; i < n; i++) {
        struct work *w = &v[i];
        const struct pol_decision *p = w->prev;
        struct pol_decision *o = w->out;
        bool judge = false, pending = false;

        if (p && p->claim_k) {
            unsigned k = p->claim_k < w->d->nvcpu ? p->claim_k : w->d->nvcpu;
            bool seen = w->d->measured &&
                        (!p->claim_acked || (w->d->acked && ch_cpuset_count(&w->d->applied) >= k));
            if (!seen && p->claim_wait < CLAIM_WAIT_MAX) {
                o->claim_k = p->claim_k; /* not applied yet: the claim stands */
                o->claim_wait = p->claim_wait + 1;
                o->claim_demand = p->claim_demand;
                o->claim_acked = p->claim_acked;
                pending = true;
            } else {
                judge = true;
            }
        }
        if (!w->d->measured)
            continue;
        claim |= pending;
        if (judge && !o->censored && w->d->demand < p->claim_demand + 0.5) {
            /* the claim went unused: wait four times as long for the next one */
            o->claim_misses += o->claim_misses + 2 <= CLAIM_BACKOFF_MAX ? 2 : 0;
            o->miss_demand = w->d->demand;
        } else if (o->claim_misses &&
                   ((judge && o->censored) || w->d->demand >= o->miss_demand + 0.5)) {
            o->claim_misses = 0; /* it used a claim, or shows more than when it missed */
        }
        it[m++] =
            (struct wf_item){w, o->censored || pending ? w->d->nvcpu : w->d->demand, o->weight, 0};
    }
    waterfill(it, m, cap);
    for (unsigned i = 0; i < m; i++) {
        struct work *w = it[i].w;
        struct pol_decision *o = w->out;
        /* held: its fair share would give it more vCPUs than it has and than its entitlement
         * gives it this interval (a claim that changes no count would only disturb the pool) */
        unsigned fair = contended_count(w, it[i].alloc, cfg);
        bool held = o->censored && !o->opt_out && it[i].alloc > o->entitlement + EPS &&
                    fair > w->prev_k && fair > contended_count(w, o->entitlement, cfg);

        o->starve_streak = held ? (w->prev ? w->prev->starve_streak : 0) + 1 : 0;
        claim |= o->starve_streak && o->starve_streak >= cfg->claim_after << o->claim_misses;
    }
    if (!claim)
        return;
    for (unsigned i = 0; i < m; i++) {
        struct pol_decision *o = it[i].w->out;
        o->claimed = o->starve_streak > 0;
        o->starve_streak = 0;
        o->entitlement = it[i].alloc;
    }
}

/* Entitlements of one pool's domains: water-filling, then free capacity to censored VMs, and
 * fair shares once a censored VM has waited too long for its own (claim_fair). */
static void entitle(struct work *v, unsigned n, unsigned ncpu, const struct hd_config *cfg,
                    struct wf_item *it)
{
    double cap = ncpu * cfg->target_utilisation, wish = 0, left, limit = cap;
    unsigned m = 0, ncens = 0, calm = 0;
    bool was = false;

    for (unsigned i = 0; i < n; i++) {
        if (v[i].d->measured)
            wish += v[i].wish;
        if (v[i].prev && v[i].prev->contended) {
            was = true;
            calm = v[i].prev->calm_streak > calm ? v[i].prev->calm_streak : calm;
        }
    }
    /* Hysteresis by magnitude: a contended pool stays contended until its demand falls
     * clearly below the capacity.  Shrunk guests measure just under their preferred count
     * (a TCG vCPU thread sleeps on qemu's locks, a guest idles between bursts), and without it
     * the pool flips to uncontended, every guest widens, and back.  And one quiet interval is
     * not the end of contention: a single sample can read low (seen on TCG: both of two busy
     * guests at 0.3 CPUs for one interval, then 1.8), so it takes release_after of them. */
    if (was) {
        limit = cap * (1 - cfg->uncontend_margin);
        if (wish <= limit + EPS && ++calm < cfg->release_after) {
            for (unsigned i = 0; i < n; i++)
                v[i].out->calm_streak = calm;
            limit = -1; /* still contended */
        }
    }
    if (wish <= limit + EPS) {
        for (unsigned i = 0; i < n; i++) {
            v[i].out->entitlement = v[i].d->demand;
            v[i].out->claim_misses = 0; /* contention over: claim_fair starts afresh */
        }
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        v[i].out->contended = true;
        if (!v[i].d->measured)
            continue;
        it[m++] = (struct wf_item){&v[i], v[i].d->demand, v[i].out->weight, 0};
    }
    waterfill(it, m, cap);
    left = cap;
    for (unsigned i = 0; i < m; i++) {
        it[i].w->out->entitlement = it[i].alloc;
        left -= it[i].alloc;
    }
    /* Grow censored VMs only into capacity nobody else's measured demand claims. */
    for (unsigned i = 0; i < m; i++) {
        struct work *w = it[i].w;
        if (w->out->censored) {
            it[ncens++] = (struct wf_item){w, w->d->nvcpu - w->out->entitlement, w->out->weight, 0};
        }
    }
    if (ncens && left > EPS) {
        waterfill(it, ncens, left);
        for (unsigned i = 0; i < ncens; i++)
            it[i].w->out->entitlement += it[i].alloc;
    }
    claim_fair(v, n, cap, cfg, it);
}

static void decide_count(struct work *w, const struct hd_config *cfg)
{
    struct pol_decision *o = w->out;
    const struct model_dom *d = w->d;
    unsigned n = d->nvcpu, target;

    if (o->opt_out) {
        o->target = o->count = n;
        o->reason = POL_OPT_OUT;
        return;
    }
    if (!d->measured) {
        o->target = o->count = w->prev_valid ? w->prev_k : n;
        o->reason = POL_NO_DATA;
        return;
    }
    target = o->contended ? contended_count(w, o->entitlement, cfg) : n;
    if (o->contended)
        o->held_need = held_need(w, o->entitlement * (1 + cfg->headroom), cfg);
    /* A quiet interval of a contended pool (calm_streak) grows guests but shrinks nobody:
     * contention that comes and goes must not shrink anybody by the quiet halves. */
    if (o->calm_streak && target < w->prev_k)
        target = w->prev_k;
    o->target = target;
    o->reason = o->contended ? POL_FAIR_SHARE : POL_UNCONTENDED;
    if (target < w->prev_k) {
        o->shrink_streak = (w->prev ? w->prev->shrink_streak : 0) + 1;
        if (o->shrink_streak < cfg->shrink_after) {
            o->count = w->prev_k;
            o->reason = POL_HOLD;
            return;
        }
        o->shrink_streak = 0;
    }
    o->count = target;
}

static void compliance(struct work *w, const struct hd_config *cfg)
{
    const struct pol_decision *p = w->prev;
    struct pol_decision *o = w->out;
    bool violation = false;

    /* Judged only for a guest that acknowledged a hint in host mode: a guest in fallback,
     * without a helper, or whose hints were dropped was never told to keep off; an observed
     * one was told every vCPU. */
    if (!p || !w->prev_valid || !w->d->measured || !w->d->acked || o->count >= o->nvcpu ||
        w->observed)
        return;
    /* The interval right after a new hint is the guest's time to apply it; a VM still
     * constrained keeps its record, so changing sets do not wipe a violation streak. */
    if (p->age < 1) {
        o->violations = p->violations;
        o->non_compliant = p->non_compliant;
        return;
    }
    /* Against the set hostd told it (the last hint once acknowledged, snapshot.h; the last
     * decision when a trace does not say), not the one the guest says it applied: a helper that
     * acknowledges every hint with all its vCPUs "applied" would otherwise never be judged.  Saying
     * it applied more than it was told is a violation in itself.  A widened hint (stale, observe,
     * release) tells it every vCPU, and nothing it runs is a violation. */
    const ch_cpuset *told = w->d->has_hinted ? &w->d->hinted : &p->preferred;

    for (unsigned i = 0; i < w->d->nvcpu; i++)
        if (!ch_cpuset_test(told, w->d->vcpu[i].id) && w->d->vcpu[i].run > cfg->compliance_run)
            violation = true;
    if (!ch_cpuset_subset(&w->d->applied, told))
        violation = true;
    o->violations = violation ? p->violations + 1 : 0;
    o->non_compliant = o->violations >= cfg->compliance_intervals;
}

static const struct pol_decision *prev_find(const struct pol_decision *prev, unsigned nprev,
                                            const char *uuid)
{
    return hd_find_uuid(prev, nprev, sizeof(*prev), offsetof(struct pol_decision, uuid), uuid);
}

/* Per-vCPU share a shrunk VM books on the pCPUs of its preferred vCPUs. */
static double share(const struct pol_decision *o)
{
    return o->count ? o->entitlement / o->count : 0;
}

/* Larger share first (the longest-processing-time rule of makespan scheduling); uuid order
 * keeps equal ones deterministic. */
static int cmp_share(const void *a, const void *b)
{
    const struct work *x = *(struct work *const *)a, *y = *(struct work *const *)b;
    double sx = share(x->out), sy = share(y->out);

    if (sx != sy)
        return sx > sy ? -1 : 1;
    return strcmp(x->d->uuid, y->d->uuid);
}

/* The previous set still fits: same count, online vCPUs only, holds a housekeeping vCPU. */
static bool can_keep(const struct work *w)
{
    ch_cpuset hk, both;

    if (!w->prev_valid || w->out->count != w->prev_k)
        return false;
    housekeeping_of(w->d, &hk);
    ch_cpuset_and(&both, &w->prev->preferred, &hk);
    return !ch_cpuset_empty(&both);
}

static double busiest(const double *load, const struct model_pool *pool)
{
    double max = 0;

    pset_foreach(p, &pool->pcpus) if (load[p] > max) max = load[p];
    return max;
}

/* The most load the shrunk VMs placed here put on one pCPU of the pool beyond what it can
 * serve: placed minus the larger of one CPU and base, the load before they were placed.  A
 * stack on a pCPU with room to spare costs nothing and counts nothing. */
static double stacked(const double *placed, const double *base, const struct model_pool *pool)
{
    double max = 0;

    pset_foreach(p, &pool->pcpus)
    {
        double over = placed[p] - (base[p] > 1 ? base[p] : 1);
        if (over > max)
            max = over;
    }
    return max;
}

/*
 * Does the fresh placement (alt) repair the current one (cur), both placed over base?  When it
 * takes more than replace_margin CPUs off the busiest pCPU, or, without loading the busiest pCPU
 * more, more than replace_margin CPUs of what the shrunk VMs' own sets stack on one pCPU beyond
 * its capacity: a stack on pCPUs other than the busiest one (which VMs nobody narrows may hold)
 * is repaired too.
 * Both compare the placements over the same readings, so noise that does not change the sets'
 * structure does not churn a good placement.
 */
static bool repairs(const double *cur, const double *alt, const double *base,
                    const struct model_pool *pool, double margin)
{
    double bc = busiest(cur, pool), ba = busiest(alt, pool);

    return bc > ba + margin ||
           (ba <= bc + EPS && stacked(cur, base, pool) > stacked(alt, base, pool) + margin);
}

/*
 * Which vCPUs each VM of one pool prefers: an assignment that balances the entitled load per
 * pCPU.  The VMs' own measured demand is taken off the pCPUs first (what stays is load
 * corehint does not move), then every shrunk VM books its share, entitlement / count, on the
 * pCPUs of the vCPUs it gets.  Two candidates: keep every previous set that still fits and
 * place only the rest ("current"), or place every VM afresh in order of decreasing share
 * ("fresh", previous sets winning ties).  The fresh one replaces the current one when it
 * repairs it (repairs()): a stacked placement is repaired at once, wherever the stack is, and a
 * good one is not churned by noise.
 */
static int assign_pool(struct work *v, unsigned cnt, const struct model_pool *pool, double *load,
                       unsigned npcpu, struct core *cores, const struct hd_config *cfg)
{
    struct work **order = calloc(cnt + 1, sizeof(struct work *));
    ch_cpuset *fresh = calloc(cnt + 1, sizeof(*fresh));
    double *cur = calloc(npcpu + 1, sizeof(*cur)), *alt = calloc(npcpu + 1, sizeof(*alt));
    unsigned n = 0;
    int rc = -ENOMEM;

    if (!order || !fresh || !cur || !alt)
        goto out;
    for (unsigned i = 0; i < cnt; i++) {
        struct work *w = &v[i];
        const struct model_dom *d = w->d;

        if (!w->out->contended || w->out->count == 0)
            continue;
        model_book(d, NULL, MQ_DEMAND, -1, load, npcpu);
    }
    for (unsigned i = 0; i < cnt; i++) {
        struct work *w = &v[i];
        struct pol_decision *o = w->out;

        if (o->count >= w->d->nvcpu) {
            all_vcpus(w->d, &o->preferred);
            if (o->contended)
                book(w->d, &o->preferred, share(o), load, npcpu);
        } else if (o->count == 0) {
            ch_cpuset_zero(&o->preferred);
        } else if (!o->contended) {
            /* held below all vCPUs without fresh data (no-data): its set, not every vCPU; its
             * measured demand stays on the pCPUs, nothing more is booked */
            if (can_keep(w))
                o->preferred = w->prev->preferred;
            else
                pick(w->d, o->count, 0, w->prev_valid ? &w->prev->preferred : NULL, load, npcpu,
                     cores, &o->preferred);
        } else {
            order[n++] = w;
        }
    }
    qsort(order, n, sizeof(struct work *), cmp_share);
    memcpy(cur, load, npcpu * sizeof(*cur));
    memcpy(alt, load, npcpu * sizeof(*alt));
    for (unsigned i = 0; i < n; i++)
        if (can_keep(order[i])) {
            order[i]->out->preferred = order[i]->prev->preferred;
            book(order[i]->d, &order[i]->out->preferred, share(order[i]->out), cur, npcpu);
        }
    for (unsigned i = 0; i < n; i++) {
        struct work *w = order[i];
        const ch_cpuset *prev = w->prev_valid ? &w->prev->preferred : NULL;

        if (!can_keep(w))
            pick(w->d, w->out->count, share(w->out), prev, cur, npcpu, cores, &w->out->preferred);
        pick(w->d, w->out->count, share(w->out), prev, alt, npcpu, cores, &fresh[i]);
    }
    if (repairs(cur, alt, load, pool, cfg->replace_margin)) {
        for (unsigned i = 0; i < n; i++)
            order[i]->out->preferred = fresh[i];
        memcpy(load, alt, npcpu * sizeof(*load));
    } else {
        memcpy(load, cur, npcpu * sizeof(*load));
    }
    rc = 0;
out:
    free(order);
    free(fresh);
    free(cur);
    free(alt);
    return rc;
}

int pol_step(const struct model *m, const struct hd_config *cfg, const struct pol_decision *prev,
             unsigned nprev, struct pol_decision *out)
{
    unsigned n = m->ndom, maxv = 1;
    /* Domains grouped by pool, uuid order kept inside each pool. */
    struct work *work = calloc(n + 1, sizeof(*work));
    unsigned *start = calloc(m->npool + 2, sizeof(*start));
    unsigned *fill = calloc(m->npool + 2, sizeof(*fill));
    struct wf_item *items = calloc(n + 1, sizeof(*items));
    double *load = calloc(m->npcpu + 1, sizeof(*load));
    struct core *cores = NULL;
    int rc = -ENOMEM;

    if (!work || !start || !fill || !items || !load)
        goto cleanup;
    for (unsigned i = 0; i < n; i++) {
        start[m->dom[i].pool + 1]++;
        if (m->dom[i].nvcpu > maxv)
            maxv = m->dom[i].nvcpu;
    }
    if (!(cores = calloc(maxv, sizeof(*cores))))
        goto cleanup;
    for (unsigned p = 0; p < m->npool; p++) {
        start[p + 1] += start[p];
        fill[p] = start[p];
    }
    for (unsigned i = 0; i < n; i++) {
        struct work *w = &work[fill[m->dom[i].pool]++];

        *w = (struct work){.d = &m->dom[i], .out = &out[i]};
        w->prev = prev_find(prev, nprev, m->dom[i].uuid);
        prepare(w, m->shares_default, cfg);
    }
    memcpy(load, m->pcpu_contention, m->npcpu * sizeof(*load));
    for (unsigned p = 0; p < m->npool; p++) {
        struct work *v = &work[start[p]];
        unsigned cnt = start[p + 1] - start[p];

        entitle(v, cnt, m->pool[p].ncpu, cfg, items);
        for (unsigned i = 0; i < cnt; i++) {
            struct pol_decision *o = v[i].out;
            decide_count(&v[i], cfg);
            if (o->claimed) { /* judged in a later interval (claim_fair) */
                o->claim_k = o->count;
                o->claim_wait = 0;
                o->claim_demand = o->demand;
                o->claim_acked = v[i].d->acked;
            }
        }
        if (assign_pool(v, cnt, &m->pool[p], load, m->npcpu, cores, cfg) < 0)
            goto cleanup;
        for (unsigned i = 0; i < cnt; i++) {
            struct pol_decision *o = v[i].out;
            const struct pol_decision *pr = v[i].prev;

            o->age = pr && ch_cpuset_equal(&o->preferred, &pr->preferred) ? pr->age + 1 : 0;
            compliance(&v[i], cfg);
        }
    }
    rc = 0;

cleanup:
    free(work);
    free(fill);
    free(start);
    free(items);
    free(load);
    free(cores);
    return rc;
}
