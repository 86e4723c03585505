/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * model: two snapshots -> rates.  Per vCPU the share of the interval it ran and waited in the
 * host run queue, per VM its demand (run + wait, in CPUs), per pCPU its contention (host busy
 * plus run-queue wait), and the pools: connected components of the pCPU sets the VMs may run
 * on.  A VM belongs to exactly one pool (all its vCPUs' affinities are joined) because the
 * policy gives each VM one preferred count.
 *
 * Which wait a pCPU carries: with /proc/schedstat (hostd on the host it manages), the
 * run-queue wait the kernel integrated on that CPU over the interval, whoever waited; without
 * it, the wait of the vCPUs pinned to it plus an even share of the wait of each vCPU that may
 * float over it.  A floating vCPU is never charged to the pCPU it happened to sit on when
 * sampled: over an interval the host scheduler moves it around its affinity.
 */
#ifndef HOSTD_MODEL_H
#define HOSTD_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "snapshot.h"

struct model_vcpu {
    unsigned id;
    double run;    /* share of the interval spent running, 0..1 */
    double wait;   /* share of the interval spent runnable but queued, 0..1 */
    double demand; /* run + wait, 0 when halted */
    bool halted;
    bool measured;       /* false: new vCPU or its counters went backwards */
    int home;            /* the pCPU it is pinned to (an affinity of one pCPU); -1 when it floats */
    int last;            /* the pCPU it last ran on, -1 unknown (shown, not used: it moves) */
    bool wide;           /* floating over exactly its VM's span (the usual case: one affinity) */
    struct hd_pset span; /* the pCPUs it may run on: its affinity, else every host pCPU */
};

struct model_dom {
    char name[SNAP_NAME_MAX];
    char uuid[SNAP_UUID_LEN + 1];
    unsigned threads;
    unsigned shares;             /* live cpu_shares, 0 unknown */
    char channel[SNAP_PATH_MAX]; /* org.corehint.0 socket, "" when none */
    double cap_recorded;         /* a cap a hostd recorded in the domain's metadata, 0 none */
    struct snap_policy policy;   /* per-VM policy from the domain's metadata */
    ch_cpuset housekeeping;      /* from the guest's hello; empty: unknown */
    bool acked;                  /* the guest acknowledged hints in host mode (snapshot.h) */
    bool has_hinted;             /* hinted is known */
    ch_cpuset applied;           /* the set it reported applied, when acked */
    ch_cpuset hinted;            /* the set it is judged against, when known (snapshot.h) */
    unsigned nvcpu;              /* online vCPUs */
    struct model_vcpu *vcpu;     /* sorted by id */
    double run, wait, demand;    /* sums over the vCPUs, in CPUs */
    bool measured;               /* every vCPU has a previous sample to compare with */
    unsigned pool;
    struct hd_pset span; /* union of its vCPUs' affinities */
    unsigned nspan;      /* members of span below the model's npcpu */
};

struct model_pool {
    struct hd_pset pcpus;
    unsigned ncpu;
    unsigned ndom;
};

struct model {
    uint64_t t_ns;
    double interval_s;
    unsigned npcpu;
    double *pcpu_busy;       /* host busy share, 0..1 (from node stats, else vCPU run) */
    double *pcpu_wait;       /* vCPU wait attributed to the pCPU, in CPUs */
    double *pcpu_contention; /* busy + wait */
    double *pcpu_rqwait;     /* /proc/schedstat run-queue wait, in CPUs, when present */
    bool has_node_stats;
    bool has_schedstat;
    bool has_psi;
    double psi_some;         /* share of the interval some task waited for CPU */
    unsigned shares_default; /* the host's cpu_shares of an unweighted domain, 0 unknown */
    unsigned ndom;
    struct model_dom *dom; /* same order as the current snapshot: by uuid */
    unsigned npool;
    struct model_pool *pool;
};

/*
 * Build m from the change between prev and cur (prev may be NULL: nothing is measured yet).
 * Returns 0, -EINVAL when time did not advance, -ENOMEM.
 */
int model_build(struct model *m, const struct snapshot *prev, const struct snapshot *cur);
/* (Re)compute pools from the domains' spans, and each vCPU's span (the VM's when it has none),
 * wide and the VMs' nspan; model_build calls it. */
int model_pools(struct model *m);

enum model_qty { MQ_RUN, MQ_WAIT, MQ_DEMAND, MQ_ONE };
/*
 * Add scale times a quantity (its run, wait, demand, or 1) of each vCPU of d whose id is in
 * only (NULL: all) to load[] (npcpu entries): a pinned vCPU's on its pCPU, a floating one's
 * spread evenly over the pCPUs of its span.
 */
void model_book(const struct model_dom *d, const ch_cpuset *only, enum model_qty q, double scale,
                double *load, unsigned npcpu);
/* Book u CPUs for one vCPU of d: on its pCPU when pinned, spread over its span when it floats
 * over part of its VM's span; a vCPU floating over the VM's whole span adds u to *wide
 * instead, which model_book_wide() then spreads over that span once for all of them. */
void model_book_vcpu(const struct model_vcpu *mv, double u, double *load, unsigned npcpu,
                     double *wide);
void model_book_wide(const struct model_dom *d, double wide, double *load, unsigned npcpu);
/* Spread u evenly over the members of span below npcpu (n of them; 0: counted here). */
void model_spread(const struct hd_pset *span, unsigned n, double u, double *load, unsigned npcpu);
/* Mean of load[] over the members of span below npcpu; 0 when none. */
double model_span_mean(const struct hd_pset *span, const double *load, unsigned npcpu);
void model_free(struct model *m);

#endif
