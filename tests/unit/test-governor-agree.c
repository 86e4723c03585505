// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel series' steal governor policy (drivers/virt/steal_governor.h as kernel-patch/
 * leaves it, compiled here unchanged against tests/unit/kernel-shim) against corehint-guestd's
 * userspace port (guest-helper/src/governor.c), which is also the governor the simulator runs
 * (tests/sim).  On random topologies, sets, thresholds and steal ratios both must take the same
 * action and leave the same preferred set, wherever both are defined: a preferred set within the
 * active CPUs that holds the first housekeeping CPU, which is every set either reaches from the
 * full one while the CPUs stay as they are.  Outside it they differ by design (the port repairs
 * a set that lost its anchor, the kernel anchors on the next one; governor_step()'s comment),
 * and a case below
 * shows that difference.  Their steal ratios differ in rounding only: the kernel divides the
 * capacity by 10000 first; the bound is checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "governor.h"
#include "corehint/procstat.h"

#include "drivers/virt/steal_governor.h"

#define NB 128u /* CPUs in the random topologies: two words of bitmap */
#define WORDS (NB / BITS_PER_LONG)

struct world {
    unsigned int nbits;
    unsigned long active[WORDS], hk[WORDS];
    unsigned long core[NB][WORDS]; /* active members of each CPU's core */
    ch_cpuset online, isolated;
    struct cpu_topology topo;
};

static uint64_t rng_state = 20261206;

static uint64_t rnd(void)
{
    /* xorshift64*: reproducible, so a failure names a case that can be rerun */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static unsigned below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static const unsigned long *siblings(unsigned int cpu, const void *data)
{
    const struct world *w = data;
    return w->core[cpu];
}

/* A random world: up to NB CPUs in cores of 1, 2 or 4 threads, some offline, some isolated. */
static void world_random(struct world *w)
{
    static const unsigned smts[] = {1, 2, 4};
    unsigned smt = smts[below(3)];

    memset(w, 0, sizeof(*w));
    w->nbits = 1 + below(NB);
    governor_topology_flat(&w->topo);
    for (unsigned c = 0; c < w->nbits; c++) {
        w->topo.core[c] = (uint16_t)(c - c % smt);
        if (below(8) != 0) { /* one CPU in eight offline */
            __set_bit(c, w->active);
            ch_cpuset_set(&w->online, c);
        }
        if (below(6) == 0)
            ch_cpuset_set(&w->isolated, c);
    }
    if (ch_cpuset_empty(&w->online)) {
        __set_bit(0, w->active);
        ch_cpuset_set(&w->online, 0);
    }
    /* The kernel's housekeeping CPUs are never all isolated: the port falls back to the first
     * online CPU then, which is what this mirrors. */
    ch_cpuset hk;
    governor_housekeeping_set(&w->online, &w->isolated, &hk);
    ch_cpuset_foreach (c, &hk)
        __set_bit((unsigned)c, w->hk);
    for (unsigned c = 0; c < w->nbits; c++) {
        ch_cpuset core;
        governor_core_of(&w->topo, &w->online, c, &core);
        ch_cpuset_foreach (s, &core)
            __set_bit((unsigned)s, w->core[c]);
    }
}

/* The two /proc/stat samples the port reads (static: each is CH_CPU_MAX wide, and only the
 * online CPUs' entries, all below NB, are ever read). */
static struct cpustat s_prev, s_cur;

/* Per-CPU counters whose steal share over the interval is exactly ratio / 10000. */
static void stats_for(const struct world *w, unsigned ratio, struct cpustat *prev, struct cpustat *cur)
{
    prev->present = cur->present = w->online;
    ch_cpuset_foreach (c, &w->online) {
        prev->total[c] = 5000;
        prev->steal[c] = 7;
        cur->total[c] = prev->total[c] + 10000;
        cur->steal[c] = prev->steal[c] + ratio;
    }
}

static enum governor_action from_kernel(enum sg_action a)
{
    return a == SG_SHRINK ? GOV_SHRINK : a == SG_GROW ? GOV_GROW : GOV_HOLD;
}

/* Both policies on the same state; returns whether they agreed (and checks it). */
static bool agree_once(const struct world *w, const ch_cpuset *pref, unsigned ratio, unsigned low,
                       unsigned high)
{
    unsigned long kpref[WORDS] = {0};
    struct sg_topology t = {.nbits = w->nbits, .active = w->active, .housekeeping = w->hk,
                            .siblings = siblings, .data = w};
    struct cpustat *prev = &s_prev, *cur = &s_cur;
    struct governor_input in = {.prev = prev, .cur = cur, .online = &w->online,
                                .isolated = &w->isolated, .topo = &w->topo, .preferred = pref,
                                .params = {.high = high, .low = low}};
    struct governor_output out;
    ch_cpuset kset;
    static char a[CH_CPULIST_MAX_LEN], b[CH_CPULIST_MAX_LEN], p[CH_CPULIST_MAX_LEN];

    ch_cpuset_foreach (c, pref)
        __set_bit((unsigned)c, kpref);
    CHECK(sg_mask_valid(kpref, &t));
    enum governor_action ka = from_kernel(sg_step(kpref, &t, ratio, low, high));
    stats_for(w, ratio, prev, cur);
    governor_step(&in, &out);

    ch_cpuset_zero(&kset);
    for (unsigned c = 0; c < w->nbits; c++)
        if (test_bit(c, kpref))
            ch_cpuset_set(&kset, c);
    bool same = ka == out.action && ch_cpuset_equal(&kset, &out.preferred) && out.steal_pct_x100 == ratio;
    if (!same) {
        ch_cpulist_format(pref, p, sizeof(p));
        ch_cpulist_format(&kset, a, sizeof(a));
        ch_cpulist_format(&out.preferred, b, sizeof(b));
        CHECK_MSG(same, "nbits %u preferred %s ratio %u low %u high %u: kernel %s %s, port %s %s (steal %u)",
                  w->nbits, p, ratio, low, high, governor_action_name(ka), a,
                  governor_action_name(out.action), b, out.steal_pct_x100);
    }
    return same;
}

/* A ratio near a threshold half the time: that is where an off-by-one would show. */
static unsigned ratio_near(unsigned low, unsigned high)
{
    switch (below(4)) {
    case 0:
        return low + below(3) - (low > 0 ? 1 : 0);
    case 1:
        return high - 1 + below(3);
    default:
        return below(SG_RATIO_MAX + 1);
    }
}

TEST(random_states_agree)
{
    unsigned agreed = 0, n = 5000, shrinks = 0, grows = 0;
    struct world *w = malloc(sizeof(*w));

    for (unsigned i = 0; i < n; i++) {
        world_random(w);
        /* a random set within the active CPUs holding the first housekeeping CPU */
        ch_cpuset pref;
        ch_cpuset_zero(&pref);
        ch_cpuset_foreach (c, &w->online)
            if (below(2))
                ch_cpuset_set(&pref, (unsigned)c);
        ch_cpuset_set(&pref, (unsigned)governor_housekeeping(&w->online, &w->isolated));
        unsigned low = below(SG_RATIO_MAX - 1), high = low + 1 + below(SG_RATIO_MAX - low);
        unsigned ratio = ratio_near(low, high);
        if (ratio > SG_RATIO_MAX)
            ratio = SG_RATIO_MAX;
        shrinks += ratio > high;
        grows += ratio <= low;
        agreed += agree_once(w, &pref, ratio, low, high);
    }
    free(w);
    printf("random_states_agree: %u of %u states (%u above high, %u at or below low)\n", agreed, n,
           shrinks, grows);
    CHECK(shrinks > n / 10 && grows > n / 10);
}

/* From the full set, steal above high until nothing shrinks, then at or below low until
 * nothing grows: both walk the same sets step by step. */
TEST(walks_agree)
{
    struct world *w = malloc(sizeof(*w));

    for (unsigned i = 0; i < 100; i++) {
        world_random(w);
        ch_cpuset pref = w->online;
        for (unsigned phase = 0; phase < 2; phase++) {
            unsigned ratio = phase == 0 ? 6000 : 100;
            for (unsigned step = 0; step <= w->nbits; step++) {
                struct cpustat *prev = &s_prev, *cur = &s_cur;
                struct governor_input in = {.prev = prev, .cur = cur, .online = &w->online,
                                            .isolated = &w->isolated, .topo = &w->topo,
                                            .preferred = &pref, .params = {.high = 500, .low = 200}};
                struct governor_output out;
                if (!agree_once(w, &pref, ratio, 200, 500))
                    break;
                stats_for(w, ratio, prev, cur);
                governor_step(&in, &out);
                if (out.action == GOV_HOLD)
                    break;
                pref = out.preferred;
            }
        }
        CHECK(ch_cpuset_equal(&pref, &w->online)); /* grown back to every online CPU */
    }
    free(w);
}

/* Where they differ by design: a set without its anchor.  The kernel cannot shrink it (no
 * preferred housekeeping CPU); the port puts the first housekeeping CPU's core back first. */
TEST(set_without_anchor_differs_as_documented)
{
    struct world *w = calloc(1, sizeof(*w));
    struct cpustat *prev = &s_prev, *cur = &s_cur;
    unsigned long kpref[WORDS] = {0};
    ch_cpuset pref;
    struct governor_output out;

    w->nbits = 4;
    governor_topology_flat(&w->topo);
    for (unsigned c = 0; c < 4; c++) {
        __set_bit(c, w->active);
        __set_bit(c, w->hk);
        __set_bit(c, w->core[c]);
        ch_cpuset_set(&w->online, c);
    }
    CHECK(ch_cpulist_parse("2-3", 3, &pref) == 0);
    __set_bit(2, kpref);
    __set_bit(3, kpref);
    struct sg_topology t = {.nbits = 4, .active = w->active, .housekeeping = w->hk,
                            .siblings = siblings, .data = w};
    /* the kernel: anchor 2 (the first preferred housekeeping CPU), removes 3 */
    CHECK(sg_step(kpref, &t, 6000, 200, 500) == SG_SHRINK);
    CHECK(test_bit(2, kpref) && !test_bit(3, kpref));
    /* the port: anchor 0 put back, then the highest other CPU (3) removed */
    struct governor_input in = {.prev = prev, .cur = cur, .online = &w->online, .topo = &w->topo,
                                .preferred = &pref, .params = {.high = 500, .low = 200}};
    stats_for(w, 6000, prev, cur);
    governor_step(&in, &out);
    char list[64];
    ch_cpulist_format(&out.preferred, list, sizeof(list));
    CHECK_MSG(out.action == GOV_SHRINK && strcmp(list, "0,2") == 0, "port: %s", list);
    free(w);
}

/* The kernel's ratio from nanoseconds against the port's from per-CPU counters of the same
 * interval: at most 2 hundredths of a percent apart for an interval of 0.1 s of CPU time or
 * more (the kernel floors the capacity unit first: a difference below 10000 / (capacity /
 * 10000) + 1). */
TEST(steal_ratios_agree_within_rounding)
{
    unsigned worst = 0;

    for (unsigned i = 0; i < 20000; i++) {
        unsigned ncpus = 1 + below(64);
        u64 per_cpu = 100000000ULL / ncpus + rnd() % 10000000000ULL; /* >= 0.1 s in total */
        u64 stolen = 0;
        struct cpustat *prev = &s_prev, *cur = &s_cur;
        ch_cpuset online;

        ch_cpuset_fill(&online, ncpus);
        prev->present = cur->present = online;
        for (unsigned c = 0; c < ncpus; c++) {
            u64 s = rnd() % (per_cpu + 1);
            prev->total[c] = prev->steal[c] = 0;
            cur->total[c] = per_cpu;
            cur->steal[c] = s;
            stolen += s;
        }
        uint32_t port;
        CHECK(governor_steal(prev, cur, &online, &port) == 0);
        unsigned kern = sg_steal_ratio(stolen, per_cpu, ncpus);
        unsigned d = kern > port ? kern - port : port - kern;
        if (d > worst)
            worst = d;
        CHECK_MSG(d <= 2, "%u CPUs x %llu ns, %llu stolen: kernel %u, port %u", ncpus,
                  (unsigned long long)per_cpu, (unsigned long long)stolen, kern, port);
    }
    printf("steal_ratios_agree_within_rounding: largest difference %u\n", worst);
}
