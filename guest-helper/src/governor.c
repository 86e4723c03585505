// SPDX-License-Identifier: LGPL-2.1-or-later
#include "governor.h"

#include <errno.h>
#include <string.h>

void governor_topology_flat(struct cpu_topology *t)
{
    for (unsigned cpu = 0; cpu < CH_CPU_MAX; cpu++)
        t->core[cpu] = (uint16_t)cpu;
}

void governor_core_of(const struct cpu_topology *t, const ch_cpuset *online, unsigned cpu,
                      ch_cpuset *core)
{
    ch_cpuset_zero(core);
    if (cpu >= CH_CPU_MAX)
        return;
    ch_cpuset_foreach (c, online) {
        if (t->core[c] == t->core[cpu])
            ch_cpuset_set(core, (unsigned)c);
    }
}

int governor_housekeeping(const ch_cpuset *online, const ch_cpuset *isolated)
{
    ch_cpuset hk;

    if (isolated) {
        ch_cpuset_andnot(&hk, online, isolated);
        int cpu = ch_cpuset_next(&hk, 0);
        if (cpu >= 0)
            return cpu;
    }
    return ch_cpuset_next(online, 0);
}

void governor_housekeeping_set(const ch_cpuset *online, const ch_cpuset *isolated, ch_cpuset *out)
{
    int first;

    if (isolated)
        ch_cpuset_andnot(out, online, isolated);
    else
        *out = *online;
    if (ch_cpuset_empty(out) && (first = ch_cpuset_next(online, 0)) >= 0)
        ch_cpuset_set(out, (unsigned)first);
}

/*
 * What v11 measures, and how we measure the same thing from userspace.  v11 takes the steal
 * time summed over all CPUs since the last run and divides it by the wall-clock time of the
 * interval multiplied by the number of active CPUs: the fraction of the CPU time the guest
 * could have had that the hypervisor gave to someone else, scaled by 10000 so that 500 means
 * 5.00 %.  Inactive CPUs accrue no steal and are left out of the denominator so that a guest
 * with CPUs offlined is not judged as if they were idle.
 *
 * Userspace has no kernel clock per CPU, but /proc/stat gives each online CPU's time split
 * into user, nice, system, idle, iowait, irq, softirq and steal; their sum advances by the
 * elapsed time on that CPU (steal included, guest time being already part of user/nice).
 * So we take, over the CPUs online now and present in both samples, Δsteal / Δ(that sum):
 * the same ratio in the same unit, with jiffies instead of nanoseconds.  A CPU whose counters
 * went backwards (a fresh sample after hotplug, a wrapped counter) is skipped.
 */
int governor_steal(const struct cpustat *prev, const struct cpustat *cur, const ch_cpuset *online,
                   uint32_t *pct_x100)
{
    uint64_t steal = 0, total = 0;

    *pct_x100 = 0;
    ch_cpuset_foreach (cpu, online) {
        if (!ch_cpuset_test(&prev->present, (unsigned)cpu) ||
            !ch_cpuset_test(&cur->present, (unsigned)cpu))
            continue;
        if (cur->total[cpu] < prev->total[cpu] || cur->steal[cpu] < prev->steal[cpu])
            continue;
        total += cur->total[cpu] - prev->total[cpu];
        steal += cur->steal[cpu] - prev->steal[cpu];
    }
    if (total == 0)
        return -ENODATA;
    if (steal > total) /* inconsistent counters; cannot exceed 100 % */
        steal = total;
    /* steal <= total < 2^64 / 10000 in any real interval; divide first if it is not. */
    uint64_t pct = total < UINT64_MAX / 10000 ? steal * 10000 / total : steal / (total / 10000);
    *pct_x100 = (uint32_t)(pct > 10000 ? 10000 : pct);
    return 0;
}

/*
 * One v11 step.  The housekeeping CPU is governor_housekeeping()'s (v11 takes the first CPU of
 * the kernel's housekeeping mask; userspace sees its complement in the isolated and nohz_full
 * files); its whole core is never removed.
 *   - above high: remove the core of the highest preferred CPU outside the housekeeping core;
 *   - at or below low (v11 uses <=): add the core of the lowest online CPU not preferred;
 *   - in between: hold.
 * The set in force is first clipped to the online CPUs and, if that lost the housekeeping
 * CPU, its core is put back: v11 restores the full set when its invariants break, we repair
 * the smallest thing instead so one hotplug event does not undo the governor's work.
 */
void governor_step(const struct governor_input *in, struct governor_output *out)
{
    ch_cpuset cur, hk_core, core;

    memset(out, 0, sizeof(*out));
    int hk = governor_housekeeping(in->online, in->isolated);
    if (hk < 0) {
        out->action = GOV_NO_SAMPLE;
        return;
    }
    governor_core_of(in->topo, in->online, (unsigned)hk, &hk_core);
    ch_cpuset_and(&cur, in->preferred, in->online);
    if (!ch_cpuset_test(&cur, (unsigned)hk))
        ch_cpuset_or(&cur, &cur, &hk_core);
    out->preferred = cur;

    if (governor_steal(in->prev, in->cur, in->online, &out->steal_pct_x100) < 0) {
        out->action = GOV_NO_SAMPLE;
        return;
    }
    out->action = GOV_HOLD;
    if (out->steal_pct_x100 > in->params.high) {
        ch_cpuset rest;
        ch_cpuset_andnot(&rest, &cur, &hk_core);
        int victim = ch_cpuset_last(&rest);
        if (victim < 0)
            return; /* only the housekeeping core is left */
        governor_core_of(in->topo, in->online, (unsigned)victim, &core);
        ch_cpuset_andnot(&out->preferred, &cur, &core);
        out->action = GOV_SHRINK;
    } else if (out->steal_pct_x100 <= in->params.low) {
        ch_cpuset missing;
        ch_cpuset_andnot(&missing, in->online, &cur);
        int first = ch_cpuset_next(&missing, 0);
        if (first < 0)
            return; /* everything online is preferred */
        governor_core_of(in->topo, in->online, (unsigned)first, &core);
        ch_cpuset_or(&out->preferred, &cur, &core);
        out->action = GOV_GROW;
    }
}

const char *governor_action_name(enum governor_action a)
{
    switch (a) {
    case GOV_NO_SAMPLE:
        return "no-sample";
    case GOV_HOLD:
        return "hold";
    case GOV_SHRINK:
        return "shrink";
    case GOV_GROW:
        return "grow";
    }
    return "?";
}
