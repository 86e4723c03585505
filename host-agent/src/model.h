/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * model: two snapshots -> rates.  Per vCPU the share of the interval it ran and waited in the
 * host run queue, per VM its demand (run + wait, in CPUs), per pCPU its contention (host busy
 * plus the wait of the vCPUs that ran there), and the pools: connected components of the pCPU
 * sets the VMs may run on.  A VM belongs to exactly one pool (all its vCPUs' affinities are
 * joined) because the policy gives each VM one preferred count.
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
    bool measured; /* false: new vCPU or its counters went backwards */
    int home;      /* the pCPU it is pinned to, else the one it last ran on; -1 unknown */
};

struct model_dom {
    char name[SNAP_NAME_MAX];
    char uuid[SNAP_UUID_LEN + 1];
    unsigned threads;
    unsigned shares;             /* live cpu_shares, 0 unknown */
    char channel[SNAP_PATH_MAX]; /* org.corehint.0 socket, "" when none */
    double cap_recorded;         /* a cap a hostd recorded in the domain's metadata, 0 none */
    ch_cpuset housekeeping;      /* from the guest's hello; empty: unknown */
    bool acked;                  /* the guest acknowledged hints in host mode (snapshot.h) */
    ch_cpuset applied;           /* the set it reported applied, when acked */
    unsigned nvcpu;              /* online vCPUs */
    struct model_vcpu *vcpu;     /* sorted by id */
    double run, wait, demand;    /* sums over the vCPUs, in CPUs */
    bool measured;               /* every vCPU has a previous sample to compare with */
    unsigned pool;
    struct hd_pset span; /* union of its vCPUs' affinities */
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
    double psi_some; /* share of the interval some task waited for CPU */
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
/* (Re)compute pools from the domains' spans; model_build calls it. */
int model_pools(struct model *m);
void model_free(struct model *m);

#endif
