// SPDX-License-Identifier: LGPL-2.1-or-later
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static double frac(uint64_t now, uint64_t before, double dt_ns)
{
    double f = (double)(now - before) / dt_ns;

    /* Counters and the clock are read at slightly different moments. */
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

static const struct snap_vcpu *vcpu_find(const struct snap_dom *d, unsigned id)
{
    unsigned lo = 0, hi = d ? d->nvcpu : 0;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (d->vcpu[mid].id == id)
            return &d->vcpu[mid];
        if (d->vcpu[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void vcpu_rates(struct model_vcpu *mv, const struct snap_vcpu *cur,
                       const struct snap_vcpu *old, double dt_ns)
{
    mv->id = cur->id;
    mv->halted = cur->has_halted && cur->halted;
    mv->home = pset_count(&cur->affinity) == 1 ? pset_next(&cur->affinity, 0) : -1;
    mv->last = cur->pcpu;
    /* A counter that went backwards means the vCPU thread was recreated (domain restart,
     * hot-unplug and re-plug): the interval says nothing about it. */
    mv->measured = old && cur->time_ns >= old->time_ns &&
                   (!cur->has_delay || !old->has_delay || cur->delay_ns >= old->delay_ns);
    if (!mv->measured)
        return;
    mv->run = frac(cur->time_ns, old->time_ns, dt_ns);
    if (cur->has_delay && old->has_delay)
        mv->wait = frac(cur->delay_ns, old->delay_ns, dt_ns);
    /* A halted vCPU that barely ran wants nothing, whatever it waited before halting. */
    mv->demand = mv->halted && mv->run < 0.05 ? 0 : mv->run + mv->wait;
    if (mv->demand > 1)
        mv->demand = 1;
}

static int dom_build(struct model_dom *md, const struct snap_dom *cur, const struct snap_dom *old,
                     unsigned npcpu, double dt_ns)
{
    struct hd_pset all;

    memcpy(md->name, cur->name, sizeof(md->name));
    memcpy(md->uuid, cur->uuid, sizeof(md->uuid));
    md->threads = cur->threads ? cur->threads : 1;
    md->shares = cur->shares;
    memcpy(md->channel, cur->channel, sizeof(md->channel));
    md->cap_recorded = cur->cap_recorded;
    md->policy = cur->policy;
    md->housekeeping = cur->housekeeping;
    md->acked = cur->acked;
    md->applied = cur->applied;
    md->has_hinted = cur->has_hinted;
    md->hinted = cur->hinted;
    md->vcpu = calloc(cur->nvcpu ? cur->nvcpu : 1, sizeof(*md->vcpu));
    if (!md->vcpu)
        return -ENOMEM;
    pset_zero(&all);
    for (unsigned p = 0; p < npcpu && p < HD_PCPU_MAX; p++)
        pset_set(&all, p);
    md->measured = old != NULL;
    for (unsigned i = 0; i < cur->nvcpu; i++) {
        const struct snap_vcpu *sv = &cur->vcpu[i];
        struct model_vcpu *mv;

        if (!sv->online)
            continue;
        mv = &md->vcpu[md->nvcpu++];
        vcpu_rates(mv, sv, vcpu_find(old, sv->id), dt_ns);
        mv->span = pset_count(&sv->affinity) ? sv->affinity : all;
        md->measured &= mv->measured;
        md->run += mv->run;
        md->wait += mv->wait;
        md->demand += mv->demand;
        pset_or(&md->span, &mv->span);
    }
    if (md->nvcpu == 0)
        md->measured = false;
    return 0;
}

static void pcpu_rates(struct model *m, const struct snapshot *prev, const struct snapshot *cur,
                       double dt_ns)
{
    bool same = prev && prev->npcpu == cur->npcpu;

    m->has_node_stats = same && cur->has_pcpu_stats && prev->has_pcpu_stats;
    m->has_schedstat = same && cur->has_schedstat && prev->has_schedstat;
    for (unsigned p = 0; p < m->npcpu; p++) {
        const struct snap_pcpu *c = &cur->pcpu[p];

        if (m->has_node_stats) {
            const struct snap_pcpu *o = &prev->pcpu[p];
            uint64_t busy = c->busy_ns >= o->busy_ns ? c->busy_ns - o->busy_ns : 0;
            uint64_t idle = c->idle_ns >= o->idle_ns ? c->idle_ns - o->idle_ns : 0;
            m->pcpu_busy[p] = busy + idle ? (double)busy / (double)(busy + idle) : 0;
        }
        if (m->has_schedstat)
            m->pcpu_rqwait[p] = frac(c->wait_ns, prev->pcpu[p].wait_ns, dt_ns);
    }
    for (unsigned i = 0; i < m->ndom; i++) {
        const struct model_dom *d = &m->dom[i];

        if (!m->has_node_stats)
            model_book(d, NULL, MQ_RUN, 1, m->pcpu_busy, m->npcpu);
        if (!m->has_schedstat) {
            model_book(d, NULL, MQ_WAIT, 1, m->pcpu_wait, m->npcpu);
            continue;
        }
        /* The kernel's per-CPU figure holds every waiter, pinned vCPUs included; their own
         * counters are read a moment apart from it and only ever raise it. */
        for (unsigned v = 0; v < d->nvcpu; v++)
            if (d->vcpu[v].home >= 0 && (unsigned)d->vcpu[v].home < m->npcpu)
                m->pcpu_wait[d->vcpu[v].home] += d->vcpu[v].wait;
    }
    for (unsigned p = 0; p < m->npcpu; p++) {
        if (m->has_schedstat && m->pcpu_rqwait[p] > m->pcpu_wait[p])
            m->pcpu_wait[p] = m->pcpu_rqwait[p];
        if (m->pcpu_busy[p] > 1)
            m->pcpu_busy[p] = 1;
        m->pcpu_contention[p] = m->pcpu_busy[p] + m->pcpu_wait[p];
    }
}

int model_build(struct model *m, const struct snapshot *prev, const struct snapshot *cur)
{
    double dt_ns;
    int rc;

    memset(m, 0, sizeof(*m));
    if (prev && cur->t_ns <= prev->t_ns)
        return -EINVAL;
    dt_ns = prev ? (double)(cur->t_ns - prev->t_ns) : 1;
    m->t_ns = cur->t_ns;
    m->interval_s = prev ? dt_ns / 1e9 : 0;
    m->npcpu = cur->npcpu < HD_PCPU_MAX ? cur->npcpu : HD_PCPU_MAX;
    m->shares_default = cur->shares_default;
    m->pcpu_busy = calloc(m->npcpu + 1, sizeof(double));
    m->pcpu_wait = calloc(m->npcpu + 1, sizeof(double));
    m->pcpu_contention = calloc(m->npcpu + 1, sizeof(double));
    m->pcpu_rqwait = calloc(m->npcpu + 1, sizeof(double));
    m->dom = calloc(cur->ndom + 1, sizeof(*m->dom));
    if (!m->pcpu_busy || !m->pcpu_wait || !m->pcpu_contention || !m->pcpu_rqwait || !m->dom) {
        rc = -ENOMEM;
        goto cleanup;
    }
    for (unsigned i = 0; i < cur->ndom; i++) {
        const struct snap_dom *old = prev ? snap_find(prev, cur->dom[i].uuid) : NULL;

        m->ndom++;
        if ((rc = dom_build(&m->dom[i], &cur->dom[i], old, m->npcpu, dt_ns)) < 0)
            goto cleanup;
    }
    if (prev && prev->has_psi && cur->has_psi && cur->psi_some_us >= prev->psi_some_us) {
        m->has_psi = true;
        m->psi_some = frac(cur->psi_some_us * 1000, prev->psi_some_us * 1000, dt_ns);
    }
    if ((rc = model_pools(m)) < 0)
        goto cleanup;
    pcpu_rates(m, prev, cur, dt_ns);
    return 0;

cleanup:
    model_free(m);
    return rc;
}

static unsigned uf_find(unsigned *parent, unsigned x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static bool pset_equal(const struct hd_pset *a, const struct hd_pset *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

static unsigned span_count(const struct hd_pset *span, unsigned npcpu)
{
    unsigned n = 0;

    pset_foreach(p, span)
    {
        if ((unsigned)p >= npcpu)
            break;
        n++;
    }
    return n;
}

void model_spread(const struct hd_pset *span, unsigned n, double u, double *load, unsigned npcpu)
{
    if (!n && !(n = span_count(span, npcpu)))
        return;
    pset_foreach(p, span)
    {
        if ((unsigned)p >= npcpu)
            break;
        load[p] += u / n;
    }
}

double model_span_mean(const struct hd_pset *span, const double *load, unsigned npcpu)
{
    double sum = 0;
    unsigned n = 0;

    pset_foreach(p, span)
    {
        if ((unsigned)p >= npcpu)
            break;
        sum += load[p];
        n++;
    }
    return n ? sum / n : 0;
}

void model_book(const struct model_dom *d, const ch_cpuset *only, enum model_qty q, double scale,
                double *load, unsigned npcpu)
{
    double wide = 0; /* what the vCPUs floating over the whole span add, spread once */

    for (unsigned v = 0; v < d->nvcpu; v++) {
        const struct model_vcpu *mv = &d->vcpu[v];
        double u = scale * (q == MQ_RUN      ? mv->run
                            : q == MQ_WAIT   ? mv->wait
                            : q == MQ_DEMAND ? mv->demand
                                             : 1);

        if (only && !ch_cpuset_test(only, mv->id))
            continue;
        model_book_vcpu(mv, u, load, npcpu, &wide);
    }
    model_book_wide(d, wide, load, npcpu);
}

void model_book_vcpu(const struct model_vcpu *mv, double u, double *load, unsigned npcpu,
                     double *wide)
{
    if (mv->home >= 0) {
        if ((unsigned)mv->home < npcpu)
            load[mv->home] += u;
    } else if (mv->wide) {
        *wide += u;
    } else {
        model_spread(&mv->span, 0, u, load, npcpu);
    }
}

void model_book_wide(const struct model_dom *d, double wide, double *load, unsigned npcpu)
{
    if (wide != 0 && d->nspan)
        model_spread(&d->span, d->nspan, wide, load, npcpu);
}

/* Each vCPU's span (its VM's when it has none of its own), wide, and the VM's nspan. */
static void dom_spans(struct model_dom *d, unsigned npcpu)
{
    d->nspan = span_count(&d->span, npcpu);
    for (unsigned v = 0; v < d->nvcpu; v++) {
        struct model_vcpu *mv = &d->vcpu[v];

        if (!pset_count(&mv->span))
            mv->span = d->span;
        mv->wide = mv->home < 0 && pset_equal(&mv->span, &d->span);
    }
}

int model_pools(struct model *m)
{
    unsigned *parent = malloc(HD_PCPU_MAX * sizeof(*parent));
    unsigned *pool_of = malloc(HD_PCPU_MAX * sizeof(*pool_of));
    int rc = 0;

    free(m->pool);
    m->pool = NULL;
    m->npool = 0;
    if (!parent || !pool_of) {
        rc = -ENOMEM;
        goto cleanup;
    }
    for (unsigned p = 0; p < HD_PCPU_MAX; p++) {
        parent[p] = p;
        pool_of[p] = UINT32_MAX;
    }
    for (unsigned i = 0; i < m->ndom; i++) {
        int first = pset_next(&m->dom[i].span, 0);

        dom_spans(&m->dom[i], m->npcpu);
        if (first < 0)
            continue;
        pset_foreach(p, &m->dom[i].span)
        {
            unsigned a = uf_find(parent, (unsigned)first), b = uf_find(parent, (unsigned)p);
            if (a != b)
                parent[b] = a;
        }
    }
    m->pool = calloc(m->ndom + 1, sizeof(*m->pool));
    if (!m->pool) {
        rc = -ENOMEM;
        goto cleanup;
    }
    /* Number pools by their lowest pCPU, so ids are stable from one interval to the next. */
    for (unsigned i = 0; i < m->ndom; i++) {
        int first = pset_next(&m->dom[i].span, 0);
        if (first >= 0)
            pool_of[uf_find(parent, (unsigned)first)] = 0;
    }
    for (unsigned p = 0; p < HD_PCPU_MAX; p++) {
        unsigned root = uf_find(parent, p);
        if (pool_of[root] == 0 && root == p)
            pool_of[root] = UINT32_MAX - 1;
    }
    for (unsigned p = 0; p < HD_PCPU_MAX; p++) {
        unsigned root = uf_find(parent, p);
        if (pool_of[root] == UINT32_MAX - 1)
            pool_of[root] = m->npool++;
    }
    for (unsigned i = 0; i < m->ndom; i++) {
        int first = pset_next(&m->dom[i].span, 0);
        unsigned root;

        if (first < 0) {
            /* No known pCPU at all: a pool of its own with no capacity to share. */
            m->dom[i].pool = m->npool++;
            m->pool[m->dom[i].pool].ndom = 1;
            continue;
        }
        root = uf_find(parent, (unsigned)first);
        m->dom[i].pool = pool_of[root];
        m->pool[pool_of[root]].ndom++;
        pset_or(&m->pool[pool_of[root]].pcpus, &m->dom[i].span);
    }
    for (unsigned k = 0; k < m->npool; k++)
        m->pool[k].ncpu = pset_count(&m->pool[k].pcpus);

cleanup:
    free(parent);
    free(pool_of);
    return rc;
}

void model_free(struct model *m)
{
    for (unsigned i = 0; m->dom && i < m->ndom; i++)
        free(m->dom[i].vcpu);
    free(m->dom);
    free(m->pool);
    free(m->pcpu_busy);
    free(m->pcpu_wait);
    free(m->pcpu_contention);
    free(m->pcpu_rqwait);
    memset(m, 0, sizeof(*m));
}
