/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * chscale: a closed-loop, interval-level host model (tests/scale/README.md) that drives hostd's
 * own model_build()/pol_step() at the scale of real hypervisors, beside two baselines.
 *
 *   host.c  the fluid host: layouts, guest task placement, CFS group weights, SMT, counters,
 *           and the snapshot hostd's collector would build from them
 *   run.c   the workload (VMs, demand steps), the policies and the metrics of one run
 *   main.c  the command line: one case, --table, --check
 *
 * Everything it prints is SIMULATED.
 */
#ifndef COREHINT_SCALE_H
#define COREHINT_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "corehint/cpulist.h"
#include "snapshot.h"

enum sc_layout { SC_FLOATING, SC_PINNED, SC_MIXED, SC_NUMA, SC_NLAYOUT };
enum sc_policy { SC_NONE, SC_COREHINT, SC_STATIC, SC_NPOLICY };

extern const char *const sc_layout_names[SC_NLAYOUT];
extern const char *const sc_policy_names[SC_NPOLICY];

/* A thread's speed while its SMT sibling is busy, as a share of a whole core. */
#define SC_SMT_SPEED 0.6

/* The demand steps: phase 0 is the base load, each later phase starts with one step. */
enum sc_phase { PH_BASE, PH_RISE, PH_IDLE, PH_DROP, PH_RETURN, SC_NPHASE };

struct sc_vm {
    unsigned nvcpu;
    unsigned shares;           /* cpu_shares: 512, 1024 or 2048 */
    unsigned tasks[SC_NPHASE]; /* runnable guest tasks in each phase */
    int *pin;                  /* per vCPU: its pCPU when pinned, else -1 */
    unsigned *span, nspan;     /* pCPUs its floating vCPUs may run on */
    ch_cpuset preferred;       /* what the guest applies this interval */
    bool hinted;               /* corehint has sent it a set (the guest acknowledged) */
    /* per vCPU */
    int *last;                    /* pCPU it ran on in the last interval, -1 */
    bool *runnable;               /* this interval */
    uint64_t *time_ns, *delay_ns; /* cumulative, as hostd reads them (noisy) */
    /* this interval, true values */
    double run, wait, work; /* CPUs: run time, run-queue wait, run time x SMT speed */
};

struct sc_host {
    unsigned npcpu, nodes;
    unsigned nvm;
    struct sc_vm *vm;
    double noise; /* 0.1 = every counter increment x U(0.9, 1.1) */
    bool spill;   /* tasks beyond the preferred count run on other vCPUs */
    uint64_t noise_rng;
    uint64_t t_ns;
    uint64_t *busy_ns, *idle_ns; /* per pCPU, cumulative, noisy */
    /* scratch of one interval */
    double *load;      /* per pCPU: sum of the weights of its runnable threads */
    unsigned *nthr;    /* per pCPU: runnable threads */
    double wait_total; /* CPUs of run-queue wait over the host */
};

uint64_t sc_rand(uint64_t *state);
double sc_uniform(uint64_t *state); /* [0, 1) */

/* An empty host of npcpu pCPUs (SMT2: pCPUs 2k and 2k+1 share a core) in nodes NUMA nodes of
 * consecutive pCPUs, with nvm VMs to be filled in by the caller (sc_vm_alloc()). */
struct sc_host *sc_host_new(unsigned npcpu, unsigned nodes, unsigned nvm, double noise,
                            uint64_t seed);
void sc_vm_alloc(struct sc_vm *vm, unsigned nvcpu);
void sc_host_free(struct sc_host *h);
/* One interval (1 s) of phase ph: guests place their tasks, the host shares its pCPUs, the
 * counters advance. */
void sc_host_step(struct sc_host *h, enum sc_phase ph);
/* What hostd's collector would read now; NULL when out of memory. */
struct snapshot *sc_host_snapshot(const struct sc_host *h);
/* Apply a preferred set as the guest's helper does: clipped to its vCPUs, vCPU 0 (its
 * housekeeping CPU) always in. */
void sc_set_preferred(struct sc_vm *vm, const ch_cpuset *set);

struct sc_case {
    enum sc_layout layout;
    unsigned npcpu;
    unsigned nvm; /* 0: npcpu * 15 / 32 */
    unsigned noise_pct;
    unsigned intervals;
    uint64_t seed;
    bool spill;
    bool verbose; /* print each VM's CPU per phase */
};

struct sc_result {
    /* CPU is pCPU time (run) in these, as the entitlements are */
    double worst_ratio; /* min over VMs and phases of CPU / none's CPU (1 for none) */
    unsigned worst_vm, worst_phase;
    double worst_owed; /* the same over min(none's CPU, its fair share) */
    unsigned owed_vm, owed_phase;
    double jain;      /* of CPU / entitlement, mean over phases */
    double steal_pct; /* mean over busy VMs of wait / (run + wait) */
    double changes_per_vm_min;
    unsigned settle[SC_NPHASE]; /* per step phase: decisions until every count is final */
    unsigned settle_max;
    unsigned narrowed_uncontended; /* VMs narrowed in an interval with no wait under none */
    unsigned uncontended_intervals;
    double cpu_total;  /* mean CPUs (pCPU time) the guests ran */
    double work_total; /* the same in whole cores: a thread beside a busy sibling counts
                          SC_SMT_SPEED */
    /* kept for the runs compared with this one (none's) */
    unsigned nvm;
    double *cpu; /* nvm x SC_NPHASE: CPU-seconds (pCPU time) per VM and phase */
    bool *calm;  /* per interval: no vCPU waited (none's run) */
};

/* Run c under policy pol; none (NULL for pol == SC_NONE) is none's result for the same case.
 * Returns 0 or -errno. */
int sc_run(const struct sc_case *c, enum sc_policy pol, const struct sc_result *none,
           struct sc_result *r);
void sc_result_free(struct sc_result *r);

#endif
