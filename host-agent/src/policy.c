// SPDX-License-Identifier: LGPL-2.1-or-later
#include "policy.h"

#include <errno.h>
#include <math.h>
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
    double wish; /* demand for the contention test: n when censored */
};

struct wf_item {
    struct work *w;
    double demand, weight, alloc;
};

struct core {
    unsigned first, n; /* index range into the domain's vcpu array */
    double score;
    bool has0, in_prev;
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

static int cmp_core(const void *a, const void *b)
{
    const struct core *x = a, *y = b;

    if (x->has0 != y->has0)
        return x->has0 ? -1 : 1;
    if (x->in_prev != y->in_prev)
        return x->in_prev ? -1 : 1;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Pick k vCPUs of d: the core holding its first vCPU (the housekeeping CPU) always, then whole
 * cores (SMT siblings together) whose pCPUs are least loaded.  Members of the previous set
 * rank first so that growing adds to it and shrinking keeps a subset of it.
 */
static void choose(const struct model_dom *d, unsigned k, const ch_cpuset *prev, const double *load,
                   unsigned npcpu, struct core *cores, ch_cpuset *out)
{
    unsigned threads = d->threads ? d->threads : 1, ncore = 0, got = 0;

    ch_cpuset_zero(out);
    for (unsigned i = 0; i < d->nvcpu;) {
        struct core *c = &cores[ncore];
        unsigned id = d->vcpu[i].id / threads, known = 0;

        memset(c, 0, sizeof(*c));
        c->first = i;
        c->index = id;
        c->has0 = i == 0;
        while (i < d->nvcpu && d->vcpu[i].id / threads == id) {
            int h = d->vcpu[i].home;
            if (h >= 0 && (unsigned)h < npcpu) {
                c->score += load[h];
                known++;
            }
            c->in_prev |= prev && ch_cpuset_test(prev, d->vcpu[i].id);
            c->n++;
            i++;
        }
        if (known)
            c->score /= known;
        ncore++;
    }
    qsort(cores, ncore, sizeof(*cores), cmp_core);
    for (unsigned c = 0; c < ncore && got < k; c++)
        for (unsigned v = 0; v < cores[c].n; v++, got++)
            ch_cpuset_set(out, d->vcpu[cores[c].first + v].id);
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

static double weight_of(const struct model_dom *d, const struct hd_config *cfg,
                        const struct cfg_domain *cd)
{
    if (cd && cd->weight > 0)
        return cd->weight;
    /* <shares> in cgroup v1 units: 1024 weighs as much as one vCPU. */
    if (cfg->use_shares && d->shares > 0)
        return d->shares / 1024.0;
    return d->nvcpu ? d->nvcpu : 1;
}

static void prepare(struct work *w, const struct hd_config *cfg)
{
    const struct model_dom *d = w->d;
    const struct pol_decision *p = w->prev;
    const struct cfg_domain *cd = cfg_domain_find(cfg, d->name, d->uuid);
    struct pol_decision *o = w->out;
    unsigned n = d->nvcpu;

    memset(o, 0, sizeof(*o));
    memcpy(o->uuid, d->uuid, sizeof(o->uuid));
    o->nvcpu = n;
    o->demand = d->demand;
    o->weight = weight_of(d, cfg, cd);
    o->opt_out = cd && cd->opt_out;
    o->pool = d->pool;
    w->prev_k = n;
    if (p && p->count < p->nvcpu) {
        ch_cpuset online;
        all_vcpus(d, &online);
        w->prev_k = p->count < n ? p->count : n;
        w->prev_valid = ch_cpuset_subset(&p->preferred, &online) && p->count == w->prev_k;
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

/* Entitlements of one pool's domains: water-filling, then free capacity to censored VMs. */
static void entitle(struct work *v, unsigned n, unsigned ncpu, const struct hd_config *cfg,
                    struct wf_item *it)
{
    double cap = ncpu * cfg->target_utilisation, wish = 0, left;
    unsigned m = 0, ncens = 0;

    for (unsigned i = 0; i < n; i++)
        if (v[i].d->measured)
            wish += v[i].wish;
    if (wish <= cap + EPS) {
        for (unsigned i = 0; i < n; i++)
            v[i].out->entitlement = v[i].d->demand;
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
    if (!o->contended) {
        target = n;
    } else {
        double want = ceil(o->entitlement * (1 + cfg->headroom) - EPS);
        target = want < cfg->min_cpus ? cfg->min_cpus : want > n ? n : (unsigned)want;
        target = round_to_cores(target, d->threads, n);
    }
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

    if (!p || !w->prev_valid || !w->d->measured || o->count >= o->nvcpu)
        return;
    /* The interval right after a new hint is the guest's time to apply it; a VM still
     * constrained keeps its record, so changing sets do not wipe a violation streak. */
    if (p->age < 1) {
        o->violations = p->violations;
        o->non_compliant = p->non_compliant;
        return;
    }
    for (unsigned i = 0; i < w->d->nvcpu; i++)
        if (!ch_cpuset_test(&p->preferred, w->d->vcpu[i].id) &&
            w->d->vcpu[i].run > cfg->compliance_run)
            violation = true;
    o->violations = violation ? p->violations + 1 : 0;
    o->non_compliant = o->violations >= cfg->compliance_intervals;
}

static const struct pol_decision *prev_find(const struct pol_decision *prev, unsigned nprev,
                                            const char *uuid)
{
    unsigned lo = 0, hi = prev ? nprev : 0;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        int c = strcmp(prev[mid].uuid, uuid);
        if (c == 0)
            return &prev[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Decide which vCPUs, then book their expected use on their pCPUs so that the next VM of a
 * contended pool prefers other pCPUs. */
static void place(struct work *w, double *load, unsigned npcpu, struct core *cores)
{
    struct pol_decision *o = w->out;
    const struct model_dom *d = w->d;

    if (o->count >= d->nvcpu)
        all_vcpus(d, &o->preferred);
    else if (o->count == w->prev_k && w->prev_valid)
        o->preferred = w->prev->preferred;
    else
        choose(d, o->count, w->prev_valid ? &w->prev->preferred : NULL, load, npcpu, cores,
               &o->preferred);
    o->age = w->prev && ch_cpuset_equal(&o->preferred, &w->prev->preferred) ? w->prev->age + 1 : 0;
    if (!o->contended || o->count == 0)
        return;
    for (unsigned i = 0; i < d->nvcpu; i++) {
        int h = d->vcpu[i].home;
        if (h < 0 || (unsigned)h >= npcpu)
            continue;
        load[h] -= d->vcpu[i].demand;
        if (ch_cpuset_test(&o->preferred, d->vcpu[i].id))
            load[h] += o->entitlement / o->count;
    }
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
        prepare(w, cfg);
    }
    memcpy(load, m->pcpu_contention, m->npcpu * sizeof(*load));
    for (unsigned p = 0; p < m->npool; p++) {
        struct work *v = &work[start[p]];
        unsigned cnt = start[p + 1] - start[p];

        entitle(v, cnt, m->pool[p].ncpu, cfg, items);
        for (unsigned i = 0; i < cnt; i++) {
            decide_count(&v[i], cfg);
            place(&v[i], load, m->npcpu, cores);
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
