// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * chsim scenarios: each one runs the same simulated host and workload (same seed) under the
 * three policies and prints one table row per policy; --json writes the figures, --trace the
 * preferred-set size of every VM over time (for the plot).  All figures are SIMULATED.
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "governor.h"
#include "model.h"
#include "policy.h"
#include "corehint/procstat.h"
#include "sim.h"
#include "snapshot.h"

enum policy { POL_NONE, POL_GOVERNOR, POL_COREHINT, NPOLICY };
static const char *const policy_names[] = {"none", "governor", "corehint"};

/* Workload shapes.  Times are per cycle; see README.md for what they stand for.  The
 * benchmarks are sized to the guest (tasks_per_vcpu_pct): hackbench 2.5 tasks per vCPU in
 * groups of 10, pgbench a client per vCPU, sysbench a thread per vCPU.  Not const: --work
 * changes them (calibration sweeps). */
enum workload { W_HACKBENCH, W_PGBENCH, W_SYSBENCH, W_CPU8, NWORK };
static struct sim_work shapes[NWORK] = {
    [W_HACKBENCH] = {.tasks = 40,
                     .compute_us = 100,
                     .cs_us = 30,
                     .group = 10,
                     .locks = 4,
                     .tasks_per_vcpu_pct = 250},
    [W_PGBENCH] =
        {.tasks = 16, .compute_us = 600, .cs_us = 300, .locks = 1, .tasks_per_vcpu_pct = 100},
    [W_SYSBENCH] = {.tasks = 4, .compute_us = 2000, .tasks_per_vcpu_pct = 100},
    [W_CPU8] = {.tasks = 8, .compute_us = 2000},
};
static const char *const shape_names[NWORK] = {"hackbench", "pgbench", "sysbench", "cpu8"};

struct scenario {
    const char *name;
    const char *what;
    unsigned npcpu;
    unsigned nvm;
    unsigned nvcpu;
    enum workload w;
    unsigned seconds;
    unsigned step_at_s;  /* VMs after the first start at this second (contention step) */
    int non_cooperating; /* index of a VM ignoring hints, -1 none */
    bool cap;            /* enforce = cap against non-compliant VMs */
    unsigned smt;        /* host threads per core (1 or 2; npcpu counts threads) */
    bool together;       /* every VM starts at 0; throughput counted from step_at_s */
    unsigned nalt;       /* the first nalt VMs run alt instead of w (a mixed host) */
    enum workload alt;
    unsigned burst_on_ms; /* >0: every VM's workload in bursts (struct sim_work) */
    unsigned burst_off_ms;
};

/* the cover letter's x86 host: 16 cores of 2 threads */
#define LETTER_HOST 32, .smt = 2

static const struct scenario scenarios[] = {
    /* a contention step on the letter's host: vm0 busy first, the others join at 5 s */
    {"hackbench-8x16", "32 threads (16x2), 8 VMs x 16 vCPUs, message passing", LETTER_HOST,
     .nvm = 8, .nvcpu = 16, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 5, .non_cooperating = -1},
    {"pgbench-16x4", "32 threads (16x2), 16 VMs x 4 vCPUs, lock heavy", LETTER_HOST, .nvm = 16,
     .nvcpu = 4, .w = W_PGBENCH, .seconds = 30, .step_at_s = 5, .non_cooperating = -1},
    {"sysbench-4x4", "32 threads (16x2), 4 VMs x 4 vCPUs, CPU bound, undercommitted", LETTER_HOST,
     .nvm = 4, .nvcpu = 4, .w = W_SYSBENCH, .seconds = 20, .step_at_s = 5, .non_cooperating = -1},
    /* the shape where the first VM kept the pool until hostd's fair claims (host-agent/README.md):
     * no SMT, 2:1 more */
    {"step-16p-8x16", "16 pCPUs, 8 VMs x 16 vCPUs, 7 joining at 5 s, message passing", 16, .nvm = 8,
     .nvcpu = 16, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 5, .non_cooperating = -1},
    {"noncoop-report", "16 pCPUs, 8 VMs x 8 vCPUs, vm0 ignores hints, enforce=report", 16, .nvm = 8,
     .nvcpu = 8, .w = W_PGBENCH, .seconds = 30, .step_at_s = 5, .non_cooperating = 0},
    {"noncoop-cap", "16 pCPUs, 8 VMs x 8 vCPUs, vm0 ignores hints, enforce=cap", 16, .nvm = 8,
     .nvcpu = 8, .w = W_PGBENCH, .seconds = 30, .step_at_s = 5, .non_cooperating = 0, .cap = true},
    {"bursty-8x8",
     "32 threads (16x2), 8 VMs x 8 vCPUs, hackbench in bursts (2 s on, 1.5 s off, phases random)",
     LETTER_HOST, .nvm = 8, .nvcpu = 8, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 5,
     .non_cooperating = -1, .together = true, .burst_on_ms = 2000, .burst_off_ms = 1500},
    {"mixed-8x8",
     "32 threads (16x2), 8 VMs x 8 vCPUs, 4 CPU-bound (8 tasks) beside 4 message passing",
     LETTER_HOST, .nvm = 8, .nvcpu = 8, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 5,
     .non_cooperating = -1, .together = true, .nalt = 4, .alt = W_CPU8},
    /* the cover letter's rows (calibration.txt): every VM busy from 0, counted from 15 s */
    {"letter-hackbench-8x16", "the letter's row: 8 VMs x 16 vCPUs, hackbench", LETTER_HOST,
     .nvm = 8, .nvcpu = 16, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-4x16", "the letter's row: 4 VMs x 16 vCPUs, hackbench", LETTER_HOST,
     .nvm = 4, .nvcpu = 16, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-8x8", "the letter's row: 8 VMs x 8 vCPUs, hackbench", LETTER_HOST, .nvm = 8,
     .nvcpu = 8, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-16x4", "the letter's row: 16 VMs x 4 vCPUs, hackbench", LETTER_HOST,
     .nvm = 16, .nvcpu = 4, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-16x4", "the letter's row: 16 VMs x 4 vCPUs, pgbench", LETTER_HOST, .nvm = 16,
     .nvcpu = 4, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-16x8", "the letter's row: 16 VMs x 8 vCPUs, pgbench", LETTER_HOST, .nvm = 16,
     .nvcpu = 8, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-sysbench-16x4", "the letter's row: 16 VMs x 4 vCPUs, sysbench cpu", LETTER_HOST,
     .nvm = 16, .nvcpu = 4, .w = W_SYSBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    /* the letter's other x86 rows: held out of the fit of tests/sim/README.md, they test it */
    {"letter-hackbench-4x24", "the letter's row: 4 VMs x 24 vCPUs, hackbench", LETTER_HOST,
     .nvm = 4, .nvcpu = 24, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-4x32", "the letter's row: 4 VMs x 32 vCPUs, hackbench", LETTER_HOST,
     .nvm = 4, .nvcpu = 32, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-12x8", "the letter's row: 12 VMs x 8 vCPUs, hackbench", LETTER_HOST,
     .nvm = 12, .nvcpu = 8, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-2x24", "the letter's row: 2 VMs x 24 vCPUs, hackbench", LETTER_HOST,
     .nvm = 2, .nvcpu = 24, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-16x8", "the letter's row: 16 VMs x 8 vCPUs, hackbench", LETTER_HOST,
     .nvm = 16, .nvcpu = 8, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-12x8", "the letter's row: 12 VMs x 8 vCPUs, pgbench", LETTER_HOST, .nvm = 12,
     .nvcpu = 8, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-8x8", "the letter's row: 8 VMs x 8 vCPUs, pgbench", LETTER_HOST, .nvm = 8,
     .nvcpu = 8, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-2x32", "the letter's row: 2 VMs x 32 vCPUs, hackbench", LETTER_HOST,
     .nvm = 2, .nvcpu = 32, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-12x4", "the letter's row: 12 VMs x 4 vCPUs, pgbench", LETTER_HOST, .nvm = 12,
     .nvcpu = 4, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-12x4", "the letter's row: 12 VMs x 4 vCPUs, hackbench", LETTER_HOST,
     .nvm = 12, .nvcpu = 4, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-4x8", "the letter's row: 4 VMs x 8 vCPUs, pgbench", LETTER_HOST, .nvm = 4,
     .nvcpu = 8, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-hackbench-4x4", "the letter's row: 4 VMs x 4 vCPUs, hackbench", LETTER_HOST, .nvm = 4,
     .nvcpu = 4, .w = W_HACKBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-sysbench-12x4", "the letter's row: 12 VMs x 4 vCPUs, sysbench cpu", LETTER_HOST,
     .nvm = 12, .nvcpu = 4, .w = W_SYSBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-4x24", "the letter's row: 4 VMs x 24 vCPUs, pgbench", LETTER_HOST, .nvm = 4,
     .nvcpu = 24, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
    {"letter-pgbench-4x32", "the letter's row: 4 VMs x 32 vCPUs, pgbench", LETTER_HOST, .nvm = 4,
     .nvcpu = 32, .w = W_PGBENCH, .seconds = 30, .step_at_s = 15, .non_cooperating = -1,
     .together = true},
};

struct result {
    double units_per_s; /* all VMs, after the step */
    double *vm_units_per_s;
    double spin_share; /* spin time / (useful + spin) */
    double jain;
    double converge_s;         /* contention step -> last change of any preferred set */
    double changes_per_vm_min; /* steady state: second half of the run */
    double mean_preferred;     /* average preferred count per VM, second half */
    double overhead_share;     /* the costs' time / (useful + spin + overhead) */
    unsigned long long yields; /* directed yields to a preempted lock holder's vCPU */
};

struct policy_state {
    enum policy policy;
    struct hd_config cfg;
    struct snapshot *prev_snap;
    struct pol_decision *prev_dec;
    unsigned nprev;
    struct cpustat **gov_prev; /* per VM */
    struct cpu_topology *topo;
    bool enforce_cap; /* what hostd's enforce = cap does: quota a non-compliant VM */
};

static struct snapshot *snapshot_of(const struct sim *s)
{
    struct snapshot *snap = snap_new();

    if (!snap)
        return NULL;
    snap->t_ns = s->now_us * 1000;
    snap->npcpu = s->npcpu;
    snap->pcpu = calloc(s->npcpu, sizeof(*snap->pcpu));
    snap->has_pcpu_stats = true;
    for (unsigned p = 0; p < s->npcpu; p++) {
        snap->pcpu[p].busy_ns = s->pcpu[p].busy_us * 1000;
        snap->pcpu[p].idle_ns = s->pcpu[p].idle_us * 1000;
    }
    snap->ndom = s->nvm;
    snap->dom = calloc(s->nvm, sizeof(*snap->dom));
    for (unsigned m = 0; m < s->nvm; m++) {
        const struct sim_vm *vm = &s->vm[m];
        struct snap_dom *d = &snap->dom[m];
        snprintf(d->name, sizeof(d->name), "%s", vm->name);
        snprintf(d->uuid, sizeof(d->uuid), "00000000-0000-4000-8000-%012u", m);
        d->state = 1; /* VIR_DOMAIN_RUNNING */
        d->threads = 1;
        d->acked = vm->hinted;
        d->applied = vm->hint;
        d->nvcpu = vm->nvcpu;
        d->vcpu = calloc(vm->nvcpu, sizeof(*d->vcpu));
        for (unsigned i = 0; i < vm->nvcpu; i++) {
            struct snap_vcpu *v = &d->vcpu[i];
            v->id = i;
            v->online = true;
            v->time_ns = vm->vcpu[i].run_us * 1000;
            v->delay_ns = vm->vcpu[i].wait_us * 1000;
            v->has_delay = true;
            v->pcpu = vm->vcpu[i].last_pcpu;
            d->cpu_time_ns += v->time_ns;
        }
    }
    snap_sort(snap);
    return snap;
}

static void corehint_step(struct sim *s, struct policy_state *ps)
{
    struct snapshot *cur = snapshot_of(s);
    struct model m = {0};

    if (!cur || model_build(&m, ps->prev_snap, cur) < 0) {
        fprintf(stderr, "chsim: model_build failed\n");
        exit(1);
    }
    struct pol_decision *out = calloc(m.ndom ? m.ndom : 1, sizeof(*out));
    if (!out || pol_step(&m, &ps->cfg, ps->prev_dec, ps->nprev, out) < 0) {
        fprintf(stderr, "chsim: pol_step failed\n");
        exit(1);
    }
    for (unsigned i = 0; i < m.ndom; i++) {
        unsigned vmi = (unsigned)strtoul(m.dom[i].name + 2, NULL, 10); /* "vmN" */
        struct sim_vm *vm = &s->vm[vmi];
        vm->hinted = true;
        vm->hint = out[i].preferred;
        if (vm->cooperates) {
            sim_set_preferred(s, vmi, &out[i].preferred);
        } else if (ps->enforce_cap && out[i].non_compliant && out[i].contended && !vm->capped) {
            vm->capped = true;
            vm->cap_cpus = out[i].entitlement > 0.5 ? out[i].entitlement : 0.5;
            vm->quota_left_us = (uint64_t)(vm->cap_cpus * 100000.0);
        } else if (vm->capped && (!out[i].contended || !out[i].non_compliant)) {
            vm->capped = false;
        } else if (vm->capped) {
            vm->cap_cpus = out[i].entitlement > 0.5 ? out[i].entitlement : 0.5;
        }
    }
    free(ps->prev_dec);
    ps->prev_dec = out;
    ps->nprev = m.ndom;
    model_free(&m);
    snap_free(ps->prev_snap);
    ps->prev_snap = cur;
}

static void governor_vm_step(struct sim *s, struct policy_state *ps, unsigned m)
{
    struct sim_vm *vm = &s->vm[m];
    struct cpustat *cur = calloc(1, sizeof(*cur));
    ch_cpuset online;

    if (!cur) {
        fprintf(stderr, "chsim: out of memory\n");
        exit(1);
    }
    ch_cpuset_fill(&online, vm->nvcpu);
    cur->present = online;
    for (unsigned i = 0; i < vm->nvcpu; i++) {
        /* USER_HZ ticks: every CPU's total advances with time; steal is the host wait */
        cur->total[i] = s->now_us / 10000;
        cur->steal[i] = vm->vcpu[i].wait_us / 10000;
    }
    if (ps->gov_prev[m] && vm->cooperates) {
        struct governor_input in = {
            .prev = ps->gov_prev[m],
            .cur = cur,
            .online = &online,
            .topo = ps->topo,
            .preferred = &vm->preferred,
            .params = {.high = 500, .low = 200},
        };
        struct governor_output out;
        governor_step(&in, &out);
        sim_set_preferred(s, m, &out.preferred);
    }
    free(ps->gov_prev[m]);
    ps->gov_prev[m] = cur;
}

static double jain_index(const double *x, unsigned n)
{
    double sum = 0, sq = 0;

    for (unsigned i = 0; i < n; i++) {
        sum += x[i];
        sq += x[i] * x[i];
    }
    return sq > 0 ? sum * sum / (n * sq) : 1.0;
}

static void run(const struct scenario *sc, enum policy pol, uint64_t seed,
                const struct sim_costs *costs, FILE *trace, struct result *r)
{
    struct sim_vm_spec *vs = sim_calloc(sc->nvm, sizeof(*vs));
    for (unsigned m = 0; m < sc->nvm; m++) {
        vs[m].nvcpu = sc->nvcpu;
        vs[m].work = shapes[m < sc->nalt ? sc->alt : sc->w];
        vs[m].work.burst_on_ms = sc->burst_on_ms;
        vs[m].work.burst_off_ms = sc->burst_off_ms;
        vs[m].ignores_hints = (int)m == sc->non_cooperating;
        vs[m].start_s = m == 0 || sc->together ? 0 : sc->step_at_s;
    }
    struct sim_spec spec = {
        .npcpu = sc->npcpu, .nvm = sc->nvm, .vm = vs, .seed = seed, .costs = *costs};
    spec.costs.smt = sc->smt ? sc->smt : 1;
    struct sim *s = sim_new(&spec);
    struct policy_state ps = {.policy = pol};
    cfg_defaults(&ps.cfg);
    ps.enforce_cap = sc->cap;
    ps.gov_prev = sim_calloc(sc->nvm, sizeof(struct cpustat *));
    ps.topo = sim_calloc(1, sizeof(*ps.topo));
    governor_topology_flat(ps.topo);

    uint64_t end_us = sc->seconds * 1000000ull, step_us = sc->step_at_s * 1000000ull;
    uint64_t half_us = step_us + (end_us - step_us) / 2;
    uint64_t *units_at_step = sim_calloc(sc->nvm, sizeof(uint64_t));
    unsigned *changes_at_half = sim_calloc(sc->nvm, sizeof(unsigned));
    double last_change_s = sc->step_at_s;
    double pref_sum = 0;
    unsigned pref_samples = 0;

    while (s->now_us < end_us) {
        sim_start_due(s);
        sim_step(s);
        if (s->now_us == step_us)
            for (unsigned m = 0; m < sc->nvm; m++)
                units_at_step[m] = s->vm[m].units;
        if (s->now_us == half_us)
            for (unsigned m = 0; m < sc->nvm; m++)
                changes_at_half[m] = s->vm[m].changes;
        if (s->now_us % (ps.cfg.interval_ms * 1000ull) != 0)
            continue;
        unsigned before = 0, after = 0;
        for (unsigned m = 0; m < sc->nvm; m++)
            before += s->vm[m].changes;
        if (pol == POL_COREHINT)
            corehint_step(s, &ps);
        else if (pol == POL_GOVERNOR)
            for (unsigned m = 0; m < sc->nvm; m++)
                governor_vm_step(s, &ps, m);
        for (unsigned m = 0; m < sc->nvm; m++)
            after += s->vm[m].changes;
        if (after != before && s->now_us >= step_us)
            last_change_s = (double)s->now_us / 1e6;
        if (trace) {
            fprintf(trace, "%s %s %.1f", sc->name, policy_names[pol], (double)s->now_us / 1e6);
            for (unsigned m = 0; m < sc->nvm; m++)
                fprintf(trace, " %u", ch_cpuset_count(&s->vm[m].preferred));
            fputc('\n', trace);
        }
        if (s->now_us >= half_us) {
            for (unsigned m = 0; m < sc->nvm; m++)
                pref_sum += ch_cpuset_count(&s->vm[m].preferred);
            pref_samples += sc->nvm;
        }
    }

    double secs = (double)(end_us - step_us) / 1e6, useful = 0, spin = 0, overhead = 0;
    r->yields = 0;
    r->vm_units_per_s = sim_calloc(sc->nvm, sizeof(double));
    r->units_per_s = 0;
    unsigned changes = 0;
    for (unsigned m = 0; m < sc->nvm; m++) {
        r->vm_units_per_s[m] = (double)(s->vm[m].units - units_at_step[m]) / secs;
        r->units_per_s += r->vm_units_per_s[m];
        useful += (double)s->vm[m].useful_us;
        spin += (double)s->vm[m].spin_us;
        overhead += (double)s->vm[m].overhead_us;
        r->yields += s->vm[m].yields;
        changes += s->vm[m].changes - changes_at_half[m];
    }
    r->overhead_share = useful + spin + overhead > 0 ? overhead / (useful + spin + overhead) : 0;
    r->spin_share = useful + spin > 0 ? spin / (useful + spin) : 0;
    r->jain = jain_index(r->vm_units_per_s, sc->nvm);
    r->converge_s = last_change_s - sc->step_at_s;
    r->changes_per_vm_min = changes / (double)sc->nvm / ((double)(end_us - half_us) / 60e6);
    r->mean_preferred = pref_samples ? pref_sum / pref_samples : sc->nvcpu;

    for (unsigned m = 0; m < sc->nvm; m++)
        free(ps.gov_prev[m]);
    free(ps.gov_prev);
    free(ps.topo);
    free(ps.prev_dec);
    snap_free(ps.prev_snap);
    cfg_free(&ps.cfg);
    free(units_at_step);
    free(changes_at_half);
    free(vs);
    sim_free(s);
}

/* a / b as a JSON number, or null when b did no work at all (JSON has no NaN) */
static void json_ratio(FILE *f, double a, double b)
{
    if (b > 0)
        fprintf(f, "%.4f", a / b);
    else
        fputs("null", f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: chsim [--scenario NAME]... [--seed N] [--cost NAME=VALUE]...\n"
               "             [--work SHAPE.FIELD=VALUE]... [--json FILE] [--trace FILE] [--list]\n"
               "Runs each scenario (all, or those named; --list) under the policies none,\n"
               "governor (the v11 rule in every guest) and corehint (hostd's model and policy)\n"
               "and prints SIMULATED figures.\n"
               "  --cost NAME=VALUE        one of the model's costs: smt_pct, task_migrate_us,\n"
               "                           vcpu_migrate_us, ctxsw_us, wake_us, ipi_us, sched_us,\n"
               "                           preempt_aware (0/1), directed_yield (0/1)\n"
               "  --work SHAPE.FIELD=VALUE a workload shape: SHAPE hackbench, pgbench, sysbench\n"
               "                           or cpu8; FIELD tasks, compute_us, cs_us, group, locks,\n"
               "                           inflight, tasks_per_vcpu_pct (tasks per 100 vCPUs;\n"
               "                           tasks=N sets it to 0) or group_locks (0/1)\n"
               "Defaults and meanings: tests/sim/README.md; tests/sim/calibrate searches them.\n");
}

/* A named field of the model's costs or of a workload shape: an unsigned, or a bool (flag). */
struct field {
    const char *name;
    size_t off;
    bool flag;
};

/* The model's costs by name, for --cost and the report. */
static const struct field cost_fields[] = {
    {"smt_pct", offsetof(struct sim_costs, smt_pct), false},
    {"task_migrate_us", offsetof(struct sim_costs, task_migrate_us), false},
    {"vcpu_migrate_us", offsetof(struct sim_costs, vcpu_migrate_us), false},
    {"ctxsw_us", offsetof(struct sim_costs, ctxsw_us), false},
    {"wake_us", offsetof(struct sim_costs, wake_us), false},
    {"ipi_us", offsetof(struct sim_costs, ipi_us), false},
    {"sched_us", offsetof(struct sim_costs, sched_us), false},
    {"preempt_aware", offsetof(struct sim_costs, preempt_aware), true},
    {"directed_yield", offsetof(struct sim_costs, directed_yield), true},
};
#define NCOST (sizeof(cost_fields) / sizeof(cost_fields[0]))

/* A workload shape's fields by name, for --work and the report. */
static const struct field work_fields[] = {
    {"tasks", offsetof(struct sim_work, tasks), false},
    {"compute_us", offsetof(struct sim_work, compute_us), false},
    {"cs_us", offsetof(struct sim_work, cs_us), false},
    {"group", offsetof(struct sim_work, group), false},
    {"locks", offsetof(struct sim_work, locks), false},
    {"inflight", offsetof(struct sim_work, inflight), false},
    {"tasks_per_vcpu_pct", offsetof(struct sim_work, tasks_per_vcpu_pct), false},
    {"group_locks", offsetof(struct sim_work, group_locks), true},
};
#define NWORKFIELD (sizeof(work_fields) / sizeof(work_fields[0]))

static unsigned field_get(const struct field *f, const void *obj)
{
    const char *base = (const char *)obj + f->off;
    if (f->flag)
        return *(const bool *)base;
    return *(const unsigned *)base;
}

/* VALUE of NAME=VALUE: a decimal number up to 10^6 */
static int parse_value(const char *s, unsigned long *v)
{
    char *end;

    errno = 0;
    *v = strtoul(s, &end, 10);
    return errno || end == s || *end || *v > 1000000 ? -1 : 0;
}

/* Is the len bytes at s exactly name? */
static bool name_is(const char *name, const char *s, size_t len)
{
    return strlen(name) == len && strncmp(name, s, len) == 0;
}

/* The field of fields (n of them) named by the len bytes at s, or NULL. */
static const struct field *field_find(const struct field *fields, size_t n, const char *s,
                                      size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (name_is(fields[i].name, s, len))
            return &fields[i];
    return NULL;
}

/* Store v in f of obj: 0 or 1 for a flag. */
static int field_set(const struct field *f, void *obj, unsigned long v)
{
    char *base = (char *)obj + f->off;

    if (f->flag) {
        if (v > 1)
            return -1;
        *(bool *)base = v == 1;
    } else {
        *(unsigned *)base = (unsigned)v;
    }
    return 0;
}

/* Print obj's fields as JSON members (json) or NAME=VALUE words, with sep between them. */
static void fields_print(FILE *out, const struct field *fields, size_t n, const void *obj,
                         bool json, const char *sep)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, json ? "%s\"%s\":%u" : "%s%s=%u", i ? sep : "", fields[i].name,
                field_get(&fields[i], obj));
}

/* --cost NAME=VALUE */
static int cost_set(struct sim_costs *c, const char *arg)
{
    const char *eq = strchr(arg, '=');
    const struct field *f;
    unsigned long v;

    if (!eq || parse_value(eq + 1, &v) < 0 ||
        !(f = field_find(cost_fields, NCOST, arg, (size_t)(eq - arg))))
        return -1;
    /* a thread with a busy sibling runs at 1-100 % of its speed alone */
    if (f->off == offsetof(struct sim_costs, smt_pct) && (v < 1 || v > 100))
        return -1;
    return field_set(f, c, v);
}

/* --work NAME.FIELD=VALUE: change a workload shape, e.g. hackbench.compute_us=100. */
static int work_set(const char *arg)
{
    const char *dot = strchr(arg, '.'), *eq = strchr(arg, '=');
    const struct field *f;
    unsigned long v;

    if (!dot || !eq || eq < dot || parse_value(eq + 1, &v) < 0 ||
        !(f = field_find(work_fields, NWORKFIELD, dot + 1, (size_t)(eq - dot - 1))))
        return -1;
    if (f->off == offsetof(struct sim_work, tasks) && v == 0)
        return -1;
    for (size_t w = 0; w < NWORK; w++) {
        if (!name_is(shape_names[w], arg, (size_t)(dot - arg)))
            continue;
        /* a task count given is the count: the shape is no longer sized to the guest */
        if (f->off == offsetof(struct sim_work, tasks))
            shapes[w].tasks_per_vcpu_pct = 0;
        return field_set(f, &shapes[w], v);
    }
    return -1;
}

/* The scenario called name, or NULL. */
static const struct scenario *scenario_find(const char *name)
{
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        if (strcmp(scenarios[i].name, name) == 0)
            return &scenarios[i];
    return NULL;
}

static bool wanted(const char *const *only, unsigned nonly, const char *name)
{
    if (nonly == 0)
        return true;
    for (unsigned i = 0; i < nonly; i++)
        if (strcmp(only[i], name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"scenario", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, 'S'},
        {"json", required_argument, NULL, 'j'},
        {"trace", required_argument, NULL, 't'},
        {"list", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {"cost", required_argument, NULL, 'c'},
        {"work", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    const char *json_path = NULL, *trace_path = NULL;
    const char *only[sizeof(scenarios) / sizeof(scenarios[0])];
    unsigned nonly = 0;
    struct sim_costs costs = sim_costs_default();
    uint64_t seed = 1;
    int c;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': {
            const struct scenario *sc = scenario_find(optarg);
            if (!sc) {
                fprintf(stderr, "chsim: no scenario named %s (--list)\n", optarg);
                return 2;
            }
            if (nonly < sizeof(only) / sizeof(only[0]))
                only[nonly++] = sc->name;
            break;
        }
        case 'w':
            if (work_set(optarg) < 0) {
                fprintf(stderr, "chsim: bad --work %s (SHAPE.FIELD=VALUE; --help lists them)\n",
                        optarg);
                return 2;
            }
            break;
        case 'c':
            if (cost_set(&costs, optarg) < 0) {
                fprintf(stderr, "chsim: bad --cost %s (NAME=VALUE; --help lists the names)\n",
                        optarg);
                return 2;
            }
            break;
        case 'S':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'j':
            json_path = optarg;
            break;
        case 't':
            trace_path = optarg;
            break;
        case 'l':
            for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
                printf("%-16s %s\n", scenarios[i].name, scenarios[i].what);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    for (size_t w = 0; w < NWORK; w++) {
        /* hackbench-like groups must tile the tasks: a peer is drawn from its own group (a
         * count sized to the guest is in whole groups) */
        if (shapes[w].group && !shapes[w].tasks_per_vcpu_pct && shapes[w].tasks % shapes[w].group) {
            fprintf(stderr, "chsim: --work: %s has %u tasks, not a multiple of its group of %u\n",
                    shape_names[w], shapes[w].tasks, shapes[w].group);
            return 2;
        }
    }
    FILE *json = json_path ? fopen(json_path, "w") : NULL;
    FILE *trace = trace_path ? fopen(trace_path, "w") : NULL;
    if ((json_path && !json) || (trace_path && !trace)) {
        fprintf(stderr, "chsim: cannot write %s: %s\n", json && !trace ? trace_path : json_path,
                strerror(errno));
        return 1;
    }
    if (json) {
        fprintf(json, "{\"simulated\":true,\"seed\":%llu,\"costs\":{", (unsigned long long)seed);
        fields_print(json, cost_fields, NCOST, &costs, true, ",");
        fprintf(json, "},\"shapes\":{");
        for (size_t w = 0; w < NWORK; w++) {
            fprintf(json, "%s\"%s\":{", w ? "," : "", shape_names[w]);
            fields_print(json, work_fields, NWORKFIELD, &shapes[w], true, ",");
            fprintf(json, "}");
        }
        fprintf(json, "},\"scenarios\":[");
    }

    printf(
        "SIMULATED results (tests/sim/README.md lists the model's assumptions), seed %llu, costs:",
        (unsigned long long)seed);
    printf(" ");
    fields_print(stdout, cost_fields, NCOST, &costs, false, " ");
    printf("\nshapes:");
    for (size_t w = 0; w < NWORK; w++) {
        printf(" %s(", shape_names[w]);
        fields_print(stdout, work_fields, NWORKFIELD, &shapes[w], false, " ");
        printf(")");
    }
    printf("\n");
    printf("%-16s %-9s %12s %8s %8s %6s %9s %8s %9s\n", "scenario", "policy", "units/s", "vs none",
           "spin%", "jain", "converge", "flaps/m", "pref/VM");
    bool first = true, found = false;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        const struct scenario *sc = &scenarios[i];
        if (!wanted(only, nonly, sc->name))
            continue;
        found = true;
        struct result r[NPOLICY];
        for (int p = 0; p < NPOLICY; p++)
            run(sc, (enum policy)p, seed, &costs, trace, &r[p]);
        for (int p = 0; p < NPOLICY; p++) {
            printf("%-16s %-9s %12.0f %7.2fx %7.1f%% %6.3f %8.1fs %8.2f %9.2f\n", sc->name,
                   policy_names[p], r[p].units_per_s, r[p].units_per_s / r[POL_NONE].units_per_s,
                   100 * r[p].spin_share, r[p].jain, r[p].converge_s, r[p].changes_per_vm_min,
                   r[p].mean_preferred);
        }
        printf("%-16s corehint/none %.3f  corehint/governor %.3f   (%s)\n", sc->name,
               r[POL_COREHINT].units_per_s / r[POL_NONE].units_per_s,
               r[POL_COREHINT].units_per_s / r[POL_GOVERNOR].units_per_s, sc->what);
        if (json) {
            fprintf(json, "%s{\"name\":\"%s\",\"what\":\"%s\",\"policies\":{", first ? "" : ",",
                    sc->name, sc->what);
            for (int p = 0; p < NPOLICY; p++) {
                fprintf(json,
                        "%s\"%s\":{\"units_per_s\":%.1f,\"spin_share\":%.4f,\"jain\":%.4f,"
                        "\"converge_s\":%.1f,\"changes_per_vm_min\":%.3f,\"mean_preferred\":%.3f,"
                        "\"overhead_share\":%.4f,\"yields\":%llu,\"vm_units_per_s\":[",
                        p ? "," : "", policy_names[p], r[p].units_per_s, r[p].spin_share, r[p].jain,
                        r[p].converge_s, r[p].changes_per_vm_min, r[p].mean_preferred,
                        r[p].overhead_share, r[p].yields);
                for (unsigned m = 0; m < sc->nvm; m++)
                    fprintf(json, "%s%.1f", m ? "," : "", r[p].vm_units_per_s[m]);
                fprintf(json, "]}");
            }
            fprintf(json, "},\"corehint_vs_none\":");
            json_ratio(json, r[POL_COREHINT].units_per_s, r[POL_NONE].units_per_s);
            fprintf(json, ",\"corehint_vs_governor\":");
            json_ratio(json, r[POL_COREHINT].units_per_s, r[POL_GOVERNOR].units_per_s);
            fputc('}', json);
            first = false;
        }
        for (int p = 0; p < NPOLICY; p++)
            free(r[p].vm_units_per_s);
    }
    if (json) {
        fprintf(json, "]}\n");
        fclose(json);
    }
    if (trace)
        fclose(trace);
    return found ? 0 : 2;
}
