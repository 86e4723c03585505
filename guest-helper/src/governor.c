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

/* v11's sg_shrink(): the core of the first housekeeping CPU in *set (the anchor) stays; of the
 * others, the core of the highest preferred CPU goes.  No anchor (no preferred housekeeping
 * CPU), or nothing outside its core: no change.  Returns whether *set changed. */
static bool shrink(const struct governor_input *in, const ch_cpuset *hk, ch_cpuset *set)
{
    ch_cpuset both, keep, rest, core;

    ch_cpuset_and(&both, set, hk);
    int anchor = ch_cpuset_next(&both, 0);
    if (anchor < 0)
        return false;
    governor_core_of(in->topo, in->online, (unsigned)anchor, &keep);
    ch_cpuset_andnot(&rest, set, &keep);
    int victim = ch_cpuset_last(&rest);
    if (victim < 0)
        return false;
    governor_core_of(in->topo, in->online, (unsigned)victim, &core);
    ch_cpuset_andnot(&core, &core, &keep);
    ch_cpuset_andnot(set, set, &core);
    return true;
}

/* v11's sg_grow(): the core of the lowest online CPU not in *set joins it.  Returns whether
 * *set changed. */
static bool grow(const struct governor_input *in, ch_cpuset *set)
{
    ch_cpuset missing, core;

    ch_cpuset_andnot(&missing, in->online, set);
    int first = ch_cpuset_next(&missing, 0);
    if (first < 0)
        return false;
    governor_core_of(in->topo, in->online, (unsigned)first, &core);
    ch_cpuset_or(set, set, &core);
    return true;
}

/*
 * One v11 step (sg_step() of drivers/virt/steal_governor.h, kernel-patch/ 0011):
 *   - above high: shrink().  The anchor is the first housekeeping CPU in the set in force, not
 *     the first online one: a host hint may leave any housekeeping CPU as the set's only one,
 *     and a set holding none is held as it is;
 *   - at or below low (v11 uses <=): grow();
 *   - in between: hold.
 * The housekeeping CPUs are governor_housekeeping_set()'s (v11 takes those for which
 * cpu_is_isolated() is false; userspace sees the others in the isolated and nohz_full files).
 * The port differs where it writes through the sysfs file and v11 through its owner's
 * cpu_preferred_set():
 *   - the set in force is clipped to the online CPUs, and an empty one is every online CPU, as
 *     the kernel makes it when a set's last CPU goes (v11 stops on a set that is empty or not
 *     within the active CPUs, after restoring every active one);
 *   - a new set holding no housekeeping CPU (grown from a set without one by an isolated core)
 *     gets the first housekeeping CPU's core too: the kernel refuses a userspace write without
 *     one with EINVAL, an owner's set it takes as it is.
 */
void governor_step(const struct governor_input *in, struct governor_output *out)
{
    ch_cpuset hk, both, core;

    memset(out, 0, sizeof(*out));
    if (ch_cpuset_empty(in->online)) {
        out->action = GOV_NO_SAMPLE;
        return;
    }
    governor_housekeeping_set(in->online, in->isolated, &hk);
    ch_cpuset_and(&out->preferred, in->preferred, in->online);
    if (ch_cpuset_empty(&out->preferred))
        out->preferred = *in->online;

    if (governor_steal(in->prev, in->cur, in->online, &out->steal_pct_x100) < 0)
        out->action = GOV_NO_SAMPLE;
    else if (out->steal_pct_x100 > in->params.high)
        out->action = shrink(in, &hk, &out->preferred) ? GOV_SHRINK : GOV_HOLD;
    else if (out->steal_pct_x100 <= in->params.low)
        out->action = grow(in, &out->preferred) ? GOV_GROW : GOV_HOLD;
    else
        out->action = GOV_HOLD;

    /* What is written must hold a housekeeping CPU; an unchanged set is not written. */
    ch_cpuset_and(&both, &out->preferred, &hk);
    if (ch_cpuset_empty(&both) && !ch_cpuset_equal(&out->preferred, in->preferred)) {
        governor_core_of(in->topo, in->online, (unsigned)ch_cpuset_next(&hk, 0), &core);
        ch_cpuset_or(&out->preferred, &out->preferred, &core);
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
