/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy: (model, config, previous decisions) -> decisions.  A pure function: no I/O, no
 * libvirt, no clock, no globals, so unit tests, the benchmark and a simulator call exactly
 * what the daemon runs.  DESIGN.md §3 "Policy (the heart)" is the specification.
 */
#ifndef HOSTD_POLICY_H
#define HOSTD_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "corehint/cpulist.h"
#include "model.h"

enum pol_reason {
    POL_UNCONTENDED, /* the pool has room for everybody: all vCPUs */
    POL_FAIR_SHARE,  /* contended: preferred count from the VM's entitlement */
    POL_HOLD,        /* a shrink is wanted but has not persisted long enough yet */
    POL_OPT_OUT,     /* the domain opted out: all vCPUs, no hint */
    POL_NO_DATA,     /* new domain or reset counters: previous decision kept */
};

struct pol_decision {
    char uuid[SNAP_UUID_LEN + 1];
    unsigned nvcpu;      /* online vCPUs the decision is about */
    unsigned count;      /* preferred vCPUs */
    ch_cpuset preferred; /* guest CPU numbers */
    double demand;       /* measured demand, CPUs */
    double weight;
    double entitlement; /* fair share, CPUs; = demand when uncontended */
    double held_need;   /* contended: the need (entitlement + headroom) its count follows,
                           moved only by more than hold_band of itself (0 = none yet) */
    unsigned target;    /* preferred count the entitlement asks for before hysteresis */
    unsigned pool;
    bool contended; /* the VM's pool is over capacity */
    bool censored;  /* preferred vCPUs saturated: the VM wants more than it shows */
    bool opt_out;
    enum pol_reason reason;
    unsigned shrink_streak; /* consecutive intervals a shrink has been wanted */
    unsigned starve_streak; /* consecutive intervals censored and held under its fair share */
    unsigned claim_misses;  /* 2 per claim in a row the VM did not use (claim_fair) */
    double miss_demand;     /* its demand when it last left a claim unused */
    bool claimed;           /* this decision raised it to its fair share by a claim */
    unsigned claim_k;       /* the count a claim gave, until it is judged (claim_fair) */
    unsigned claim_wait;    /* intervals that claim has waited for the guest to apply it */
    double claim_demand;    /* the VM's demand when it claimed */
    bool claim_acked;       /* the guest acknowledged its hints when it claimed */
    unsigned calm_streak;   /* consecutive contended intervals with the pool's demand below
                               its exit limit (uncontend_margin) */
    unsigned age;           /* intervals the preferred set has been unchanged */
    unsigned violations;    /* consecutive intervals with busy non-preferred vCPUs */
    bool non_compliant;
};

const char *pol_reason_name(enum pol_reason r);

/*
 * One policy step.  prev (nprev entries, sorted by uuid, may be NULL) is what the previous
 * step returned; out must have room for m->ndom entries and receives one decision per model
 * domain, in model order (which is uuid order).  Returns 0 or -ENOMEM.
 */
int pol_step(const struct model *m, const struct hd_config *cfg, const struct pol_decision *prev,
             unsigned nprev, struct pol_decision *out);

#endif
