/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * governor: the local fallback policy, a userspace port of the v11 in-kernel steal governor.
 * A pure function: the caller reads /proc/stat, the online set, the SMT topology and the
 * current preferred set, and writes the result.  No I/O, no clock, no globals.
 */
#ifndef GUESTD_GOVERNOR_H
#define GUESTD_GOVERNOR_H

#include <stdint.h>

#include "corehint/cpulist.h"
#include "corehint/procstat.h"

/* SMT topology: core[cpu] is the lowest CPU of cpu's thread_siblings_list. */
struct cpu_topology {
    uint16_t core[CH_CPU_MAX];
};

/* Every CPU its own core (no SMT, or no topology files). */
void governor_topology_flat(struct cpu_topology *t);
/* The online members of cpu's core (cpu included when online). */
void governor_core_of(const struct cpu_topology *t, const ch_cpuset *online, unsigned cpu,
                      ch_cpuset *core);

/*
 * The first housekeeping CPU: the first online CPU that is not isolated (isolcpus=,
 * nohz_full=; isolated may be NULL), or the first online CPU when all are.  -1 when none is
 * online.  What a held hint's set gets back when hotplug took every housekeeping CPU of it.
 * (A hint may hold any housekeeping CPU; the local governor anchors on the first one in the
 * set in force, see governor_step().)
 */
int governor_housekeeping(const ch_cpuset *online, const ch_cpuset *isolated);
/* Every housekeeping CPU: the online CPUs that are not isolated, or, when all are, the first
 * online CPU (what governor_housekeeping() falls back to).  Empty only when online is. */
void governor_housekeeping_set(const ch_cpuset *online, const ch_cpuset *isolated, ch_cpuset *out);

struct governor_params {
    uint32_t high; /* steal_pct_x100 above which one core is removed */
    uint32_t low;  /* steal_pct_x100 at or below which one core is added back; < high */
};

enum governor_action {
    GOV_NO_SAMPLE, /* no time elapsed between the two samples: nothing decided */
    GOV_HOLD,      /* between the thresholds, or nothing left to add/remove */
    GOV_SHRINK,
    GOV_GROW,
};

struct governor_input {
    const struct cpustat *prev, *cur;
    const ch_cpuset *online;
    const ch_cpuset *isolated; /* may be NULL */
    const struct cpu_topology *topo;
    const ch_cpuset *preferred; /* the set in force now */
    struct governor_params params;
};

struct governor_output {
    ch_cpuset preferred; /* non-empty, within online; holds a housekeeping CPU if it differs
                          * from the input's set (the kernel refuses a write without one) */
    uint32_t steal_pct_x100;
    enum governor_action action;
};

/*
 * Steal over the interval between two samples, in hundredths of a percent of the CPU time
 * that elapsed on the CPUs online now.  Returns 0, or -ENODATA when no time elapsed.
 */
int governor_steal(const struct cpustat *prev, const struct cpustat *cur, const ch_cpuset *online,
                   uint32_t *pct_x100);

void governor_step(const struct governor_input *in, struct governor_output *out);

const char *governor_action_name(enum governor_action a);

#endif
