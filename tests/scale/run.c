// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One run of chscale: the case's VMs and demand steps, one policy choosing the preferred sets
 * each interval, and the metrics (README.md here defines each).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "model.h"
#include "policy.h"
#include "scale.h"

/* Intervals after a step left out of the flapping and narrowing counts: the settling. */
#define SKIP_AFTER_STEP 10
/* Intervals a settled set must hold before the phase ends to count as settled. */
#define SETTLE_HOLD 3
/* A VM whose none CPU in a phase is below this (CPUs) is not compared. */
#define MIN_CPU 0.05

static const unsigned vcpu_sizes[] = {1, 2, 4, 8, 16, 32, 64};
static const unsigned vcpu_odds[] = {3, 4, 5, 5, 3, 2, 1};
static const unsigned share_values[] = {512, 1024, 2048};

static unsigned phase_start(unsigned intervals, unsigned ph)
{
    static const unsigned num[SC_NPHASE] = {0, 1, 1, 2, 5}, den[SC_NPHASE] = {1, 4, 2, 3, 6};

    return intervals * num[ph] / den[ph];
}

static unsigned phase_end(unsigned intervals, unsigned ph)
{
    return ph + 1 < SC_NPHASE ? phase_start(intervals, ph + 1) : intervals;
}

/* A VM's vCPU count: by vcpu_odds among the sizes up to max (1 at least). */
static unsigned draw_size(uint64_t *rng, unsigned max)
{
    unsigned total = 0, pick;

    for (unsigned i = 0; i < sizeof(vcpu_odds) / sizeof(vcpu_odds[0]); i++)
        if (vcpu_sizes[i] <= max)
            total += vcpu_odds[i];
    if (!total)
        return 1;
    pick = (unsigned)(sc_rand(rng) % total);
    for (unsigned i = 0; i < sizeof(vcpu_odds) / sizeof(vcpu_odds[0]); i++) {
        if (vcpu_sizes[i] > max)
            continue;
        if (pick < vcpu_odds[i])
            return vcpu_sizes[i];
        pick -= vcpu_odds[i];
    }
    return 1;
}

static void set_span(struct sc_vm *vm, unsigned first, unsigned n)
{
    vm->span = calloc(n, sizeof(unsigned));
    if (!vm->span) {
        fprintf(stderr, "chscale: out of memory\n");
        exit(1);
    }
    vm->nspan = n;
    for (unsigned i = 0; i < n; i++)
        vm->span[i] = first + i;
}

/* The demand of each phase: base load at 1.3 x the host, one idle VM (the "riser"), then the
 * riser goes busy on every vCPU, the busiest other VM goes idle, every VM drops to a quarter
 * (rounded up), and the demand of before the drop returns. */
static void workload(struct sc_host *h, uint64_t *rng, bool unconfined)
{
    unsigned nvm = h->nvm, riser = 0, busiest = 0, sum = 0, best = UINT32_MAX;
    unsigned last = unconfined ? nvm - 1 : nvm;
    double target = 1.3 * h->npcpu, f;

    for (unsigned m = 0; m < nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        vm->tasks[PH_BASE] = (unsigned)lround(sc_uniform(rng) * vm->nvcpu);
        if (m < last && (unsigned)abs((int)vm->nvcpu - 8) < best) {
            best = (unsigned)abs((int)vm->nvcpu - 8);
            riser = m;
        }
    }
    h->vm[riser].tasks[PH_BASE] = 0;
    for (unsigned m = 0; m < nvm; m++)
        sum += h->vm[m].tasks[PH_BASE];
    f = sum ? target / sum : 1;
    for (unsigned m = 0; m < nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        double t = lround(vm->tasks[PH_BASE] * f);
        vm->tasks[PH_BASE] = t > vm->nvcpu ? vm->nvcpu : (unsigned)t;
        if (m >= last)
            vm->tasks[PH_BASE] = vm->nvcpu;
        vm->tasks[PH_RISE] = m == riser ? vm->nvcpu : vm->tasks[PH_BASE];
        if (m != riser && vm->tasks[PH_RISE] > h->vm[busiest].tasks[PH_RISE])
            busiest = m;
    }
    for (unsigned m = 0; m < nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        vm->tasks[PH_IDLE] = m == busiest ? 0 : vm->tasks[PH_RISE];
        vm->tasks[PH_DROP] = (vm->tasks[PH_IDLE] + 3) / 4;
        vm->tasks[PH_RETURN] = vm->tasks[PH_IDLE];
    }
}

/* The case's host, VMs and layout; the same for every policy given the same case. */
static struct sc_host *build(const struct sc_case *c)
{
    unsigned nodes = c->npcpu >= 128 ? 4 : 2, node_cpus = c->npcpu / nodes, pin = 0;
    unsigned nvm = c->nvm ? c->nvm : c->npcpu * 15 / 32, maxv = c->npcpu / 2;
    uint64_t rng = c->seed;
    bool unconfined = c->layout == SC_NUMA && nvm >= 2;
    struct sc_host *h = sc_host_new(c->npcpu, nodes, nvm, c->noise_pct / 100.0, c->seed);

    h->spill = c->spill;
    for (unsigned m = 0; m < nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        bool pinned = c->layout == SC_PINNED || (c->layout == SC_MIXED && m % 2 == 0);
        unsigned n = draw_size(&rng, maxv < 64 ? maxv : 64);

        vm->shares = share_values[sc_rand(&rng) % 3];
        if (unconfined && m == nvm - 1) {
            n = 4;
            vm->shares = 1024;
        }
        sc_vm_alloc(vm, n);
        if (c->layout == SC_NUMA && !(unconfined && m == nvm - 1))
            set_span(vm, m % nodes * node_cpus, node_cpus);
        else
            set_span(vm, 0, c->npcpu);
        for (unsigned v = 0; pinned && v < n; v++)
            vm->pin[v] = (int)(pin++ % c->npcpu);
    }
    workload(h, &rng, unconfined);
    return h;
}

/* Weighted max-min fair shares of cap CPUs among the VMs of one pool, by cpu_shares. */
static void waterfill(const struct sc_host *h, const unsigned *pool, unsigned which, double cap,
                      enum sc_phase ph, double *ent)
{
    double wsum = 0;
    bool *done = calloc(h->nvm, sizeof(bool));

    if (!done)
        exit(1);
    for (unsigned m = 0; m < h->nvm; m++)
        if (pool[m] == which)
            wsum += h->vm[m].shares;
    for (bool again = true; again && wsum > 0;) {
        double level = cap / wsum;
        again = false;
        for (unsigned m = 0; m < h->nvm; m++) {
            double want = h->vm[m].tasks[ph] < h->vm[m].nvcpu ? h->vm[m].tasks[ph] : h->vm[m].nvcpu;
            if (pool[m] != which || done[m] || want > level * h->vm[m].shares)
                continue;
            ent[m] = want;
            cap -= want;
            wsum -= h->vm[m].shares;
            done[m] = again = true;
        }
    }
    for (unsigned m = 0; m < h->nvm; m++)
        if (pool[m] == which && !done[m])
            ent[m] = wsum > 0 ? cap / wsum * h->vm[m].shares : 0;
    free(done);
}

struct corehint {
    struct hd_config cfg;
    struct snapshot *prev_snap;
    struct pol_decision *prev_dec;
    unsigned nprev;
};

/* hostd's decision at the end of an interval, which the guests apply for the next one. */
static int corehint_step(struct sc_host *h, struct corehint *ch)
{
    struct snapshot *cur = sc_host_snapshot(h);
    struct pol_decision *out = NULL;
    struct model m = {0};
    int rc = -ENOMEM;

    if (!cur)
        goto cleanup;
    if ((rc = model_build(&m, ch->prev_snap, cur)) < 0)
        goto cleanup;
    out = calloc(m.ndom ? m.ndom : 1, sizeof(*out));
    if (!out) {
        rc = -ENOMEM;
        goto cleanup;
    }
    if ((rc = pol_step(&m, &ch->cfg, ch->prev_dec, ch->nprev, out)) < 0)
        goto cleanup;
    for (unsigned i = 0; i < m.ndom; i++) {
        unsigned vmi = (unsigned)strtoul(m.dom[i].name + 2, NULL, 10); /* "vmN" */
        sc_set_preferred(&h->vm[vmi], &out[i].preferred);
        h->vm[vmi].hinted = true;
    }
    free(ch->prev_dec);
    ch->prev_dec = out;
    ch->nprev = m.ndom;
    out = NULL;
    snap_free(ch->prev_snap);
    ch->prev_snap = cur;
    cur = NULL;
    rc = 0;

cleanup:
    model_free(&m);
    free(out);
    snap_free(cur);
    return rc;
}

/* Pools as hostd's model sees them, and each VM's entitlement per phase; the static split. */
static int pools(struct sc_host *h, enum sc_policy pol, double *ent)
{
    struct snapshot *s = sc_host_snapshot(h);
    struct model m = {0};
    unsigned *pool = calloc(h->nvm, sizeof(unsigned));
    double *wsum = NULL;
    int rc = -ENOMEM;

    if (!s || !pool || model_build(&m, NULL, s) < 0)
        goto cleanup;
    if (!(wsum = calloc(m.npool + 1, sizeof(double))))
        goto cleanup;
    for (unsigned i = 0; i < h->nvm; i++) {
        pool[i] = m.dom[i].pool;
        wsum[pool[i]] += h->vm[i].shares;
    }
    for (unsigned ph = 0; ph < SC_NPHASE; ph++)
        for (unsigned k = 0; k < m.npool; k++)
            waterfill(h, pool, k, m.pool[k].ncpu, ph, ent + (size_t)ph * h->nvm);
    for (unsigned i = 0; pol == SC_STATIC && i < h->nvm; i++) {
        ch_cpuset set;
        double k = ceil(m.pool[pool[i]].ncpu * h->vm[i].shares / wsum[pool[i]] - 1e-9);
        ch_cpuset_fill(&set, k < 1 ? 1 : k > h->vm[i].nvcpu ? h->vm[i].nvcpu : (unsigned)k);
        sc_set_preferred(&h->vm[i], &set);
    }
    rc = 0;

cleanup:
    model_free(&m);
    snap_free(s);
    free(pool);
    free(wsum);
    return rc;
}

static double jain(const double *x, unsigned n)
{
    double sum = 0, sq = 0;

    for (unsigned i = 0; i < n; i++) {
        sum += x[i];
        sq += x[i] * x[i];
    }
    return sq > 0 ? sum * sum / (n * sq) : 1.0;
}

/* Decisions after each step until every VM's set is the one it ends the phase with (and
 * keeps for SETTLE_HOLD intervals); the phase's length when it never is. */
static void settling(const struct sc_case *c, const uint64_t *sets, unsigned nvm,
                     struct sc_result *r)
{
    for (unsigned ph = PH_RISE; ph < SC_NPHASE; ph++) {
        unsigned s = phase_start(c->intervals, ph), e = phase_end(c->intervals, ph), d = 1;
        const uint64_t *fin = sets + (size_t)(e - 1) * nvm;

        for (unsigned t = s + 1; t < e; t++)
            if (memcmp(sets + (size_t)t * nvm, fin, nvm * sizeof(uint64_t)) != 0)
                d = t - s + 1;
        if (e - s < d + SETTLE_HOLD)
            d = e - s;
        r->settle[ph] = d;
        r->settle_max = d > r->settle_max ? d : r->settle_max;
    }
}

static unsigned phase_of(unsigned intervals, unsigned t)
{
    unsigned ph = 0;

    while (ph + 1 < SC_NPHASE && t >= phase_start(intervals, ph + 1))
        ph++;
    return ph;
}

int sc_run(const struct sc_case *c, enum sc_policy pol, const struct sc_result *none,
           struct sc_result *r)
{
    struct sc_host *h = build(c);
    unsigned nvm = h->nvm, changes = 0, counted = 0, busy_vms = 0;
    struct corehint ch = {0};
    double *ent = calloc((size_t)SC_NPHASE * nvm, sizeof(double));
    double *run = calloc(nvm, sizeof(double)), *wait = calloc(nvm, sizeof(double));
    double *x = calloc(nvm, sizeof(double)), steal = 0, jsum = 0;
    /* each VM's preferred set in each interval: at most 64 vCPUs, one word */
    uint64_t *sets = calloc((size_t)c->intervals * nvm, sizeof(uint64_t));
    bool *narrowed = calloc(nvm, sizeof(bool));
    ch_cpuset *before = calloc(nvm, sizeof(ch_cpuset));
    int rc = -ENOMEM;

    memset(r, 0, sizeof(*r));
    r->nvm = nvm;
    r->cpu = calloc((size_t)SC_NPHASE * nvm, sizeof(double));
    r->calm = calloc(c->intervals, sizeof(bool));
    if (!ent || !run || !wait || !x || !sets || !narrowed || !before || !r->cpu || !r->calm)
        goto cleanup;
    cfg_defaults(&ch.cfg);
    if ((rc = pools(h, pol, ent)) < 0)
        goto cleanup;
    for (unsigned t = 0; t < c->intervals; t++) {
        unsigned ph = phase_of(c->intervals, t), since = t - phase_start(c->intervals, ph);
        bool steady = since >= SKIP_AFTER_STEP;

        for (unsigned m = 0; m < nvm; m++) {
            const struct sc_vm *vm = &h->vm[m];
            sets[(size_t)t * nvm + m] = vm->preferred.w[0];
            changes += steady && t > 0 && !ch_cpuset_equal(&before[m], &vm->preferred);
            before[m] = vm->preferred;
        }
        counted += steady && t > 0;
        sc_host_step(h, ph);
        r->calm[t] = h->wait_total < 1e-9;
        if (none && none->calm[t] && steady) {
            r->uncontended_intervals++;
            for (unsigned m = 0; m < nvm; m++)
                narrowed[m] |= ch_cpuset_count(&h->vm[m].preferred) < h->vm[m].nvcpu;
        }
        for (unsigned m = 0; m < nvm; m++) {
            r->cpu[(size_t)m * SC_NPHASE + ph] += h->vm[m].run;
            r->cpu_total += h->vm[m].run / c->intervals;
            r->work_total += h->vm[m].work / c->intervals;
            run[m] += h->vm[m].run;
            wait[m] += h->vm[m].wait;
        }
        if (pol == SC_COREHINT && (rc = corehint_step(h, &ch)) < 0)
            goto cleanup;
    }

    r->worst_ratio = r->worst_owed = 1;
    for (unsigned ph = 0; ph < SC_NPHASE; ph++) {
        double len = phase_end(c->intervals, ph) - phase_start(c->intervals, ph);
        unsigned n = 0;
        for (unsigned m = 0; m < nvm; m++) {
            double mine = r->cpu[(size_t)m * SC_NPHASE + ph], e = ent[(size_t)ph * nvm + m];
            double base = none ? none->cpu[(size_t)m * SC_NPHASE + ph] : mine;
            double owed = base < e * len ? base : e * len;
            if (base >= MIN_CPU * len && mine / base < r->worst_ratio) {
                r->worst_ratio = mine / base;
                r->worst_vm = m;
                r->worst_phase = ph;
            }
            if (owed >= MIN_CPU * len && mine / owed < r->worst_owed) {
                r->worst_owed = mine / owed;
                r->owed_vm = m;
                r->owed_phase = ph;
            }
            if (e >= MIN_CPU)
                x[n++] = mine / len / e;
            if (c->verbose)
                printf("  %-9s phase %u vm%-3u %2u vCPUs shares %4u tasks %2u: fair %5.2f, "
                       "CPU %5.2f, none's %5.2f\n",
                       sc_policy_names[pol], ph, m, h->vm[m].nvcpu, h->vm[m].shares,
                       h->vm[m].tasks[ph], e, mine / len, base / len);
        }
        jsum += jain(x, n) * len;
    }
    r->jain = jsum / c->intervals;
    for (unsigned m = 0; m < nvm; m++) {
        if (run[m] + wait[m] > 0) {
            steal += wait[m] / (run[m] + wait[m]);
            busy_vms++;
        }
        r->narrowed_uncontended += narrowed[m];
    }
    r->steal_pct = busy_vms ? 100 * steal / busy_vms : 0;
    r->changes_per_vm_min = counted ? changes / (double)nvm / (counted / 60.0) : 0;
    settling(c, sets, nvm, r);
    rc = 0;

cleanup:
    cfg_free(&ch.cfg);
    snap_free(ch.prev_snap);
    free(ch.prev_dec);
    free(ent);
    free(run);
    free(wait);
    free(x);
    free(sets);
    free(narrowed);
    free(before);
    sc_host_free(h);
    if (rc < 0)
        sc_result_free(r);
    return rc;
}

void sc_result_free(struct sc_result *r)
{
    free(r->cpu);
    free(r->calm);
    r->cpu = NULL;
    r->calm = NULL;
}
