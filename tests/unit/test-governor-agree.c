// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel series' steal governor policy (drivers/virt/steal_governor.h as kernel-patch/
 * leaves it, compiled here unchanged against tests/unit/kernel-shim) against corehint-guestd's
 * userspace port (guest-helper/src/governor.c), which is also the governor the simulator runs
 * (tests/sim).  On random topologies, sets, thresholds and steal ratios both must take the same
 * action and leave the same preferred set for every set within the active CPUs that holds a
 * housekeeping CPU, whichever it is: the first one, or another one only (what a host hint such as
 * "2-3" leaves when its lease expires), and along whole shrink/grow walks from such sets.  A set
 * holding no housekeeping CPU (only hotplug makes one) they take alike too, except where the
 * kernel's step changes it and leaves it without one: the port, which writes through the sysfs
 * file (a write without one fails with EINVAL), adds the first housekeeping CPU's core; that
 * difference is checked exactly.  Their steal ratios differ in rounding only: the kernel divides
 * the capacity by 10000 first; the bound is checked.
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
static void stats_for(const struct world *w, unsigned ratio, struct cpustat *prev,
                      struct cpustat *cur)
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

/* The kernel's step on the same state; *out is the set it leaves. */
static enum governor_action kernel_step(const struct world *w, const ch_cpuset *pref,
                                        unsigned ratio, unsigned low, unsigned high, ch_cpuset *out)
{
    unsigned long kpref[WORDS] = {0};
    struct sg_topology t = {.nbits = w->nbits,
                            .active = w->active,
                            .housekeeping = w->hk,
                            .siblings = siblings,
                            .data = w};

    ch_cpuset_foreach (c, pref)
        __set_bit((unsigned)c, kpref);
    CHECK(sg_mask_valid(kpref, &t));
    enum governor_action ka = from_kernel(sg_step(kpref, &t, ratio, low, high));
    ch_cpuset_zero(out);
    for (unsigned c = 0; c < w->nbits; c++)
        if (test_bit(c, kpref))
            ch_cpuset_set(out, c);
    return ka;
}

static bool holds_housekeeping(const struct world *w, const ch_cpuset *set)
{
    ch_cpuset_foreach (c, set)
        if (test_bit((unsigned)c, w->hk))
            return true;
    return false;
}

/*
 * Both policies on the same state; returns whether the port did what the kernel did (and checks
 * it).  Where the kernel changed the set and left it without a housekeeping CPU, the port must
 * leave the kernel's set plus the core of the first housekeeping CPU (governor_step()).
 */
static bool agree_once(const struct world *w, const ch_cpuset *pref, unsigned ratio, unsigned low,
                       unsigned high)
{
    struct cpustat *prev = &s_prev, *cur = &s_cur;
    struct governor_input in = {.prev = prev,
                                .cur = cur,
                                .online = &w->online,
                                .isolated = &w->isolated,
                                .topo = &w->topo,
                                .preferred = pref,
                                .params = {.high = high, .low = low}};
    struct governor_output out;
    ch_cpuset kset, want;
    static char a[CH_CPULIST_MAX_LEN], b[CH_CPULIST_MAX_LEN], p[CH_CPULIST_MAX_LEN];

    enum governor_action ka = kernel_step(w, pref, ratio, low, high, &kset);
    stats_for(w, ratio, prev, cur);
    governor_step(&in, &out);

    want = kset;
    if (!ch_cpuset_equal(&kset, pref) && !holds_housekeeping(w, &kset)) {
        unsigned first = 0;
        while (!test_bit(first, w->hk))
            first++;
        for (unsigned c = 0; c < w->nbits; c++)
            if (test_bit(c, w->core[first]))
                ch_cpuset_set(&want, c);
    }
    bool same =
        ka == out.action && ch_cpuset_equal(&want, &out.preferred) && out.steal_pct_x100 == ratio;
    if (!same) {
        ch_cpulist_format(pref, p, sizeof(p));
        ch_cpulist_format(&kset, a, sizeof(a));
        ch_cpulist_format(&out.preferred, b, sizeof(b));
        CHECK_MSG(same,
                  "nbits %u preferred %s ratio %u low %u high %u: kernel %s %s, port %s %s "
                  "(steal %u)",
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

/* What a random starting set holds of the housekeeping CPUs. */
enum set_kind {
    HOLDS_FIRST_HK, /* the first housekeeping CPU (and maybe others) */
    OTHER_HK_ONLY,  /* neither CPU 0 nor the first housekeeping CPU, another one: a hint's set */
    NO_HK,          /* none: a set that hotplug left */
};

/* A random non-empty set of that kind within the active CPUs; false when the world has none. */
static bool random_set(const struct world *w, enum set_kind kind, ch_cpuset *pref)
{
    ch_cpuset hk, pool, anchors;

    ch_cpuset_zero(&hk);
    for (unsigned c = 0; c < w->nbits; c++)
        if (test_bit(c, w->hk))
            ch_cpuset_set(&hk, c);
    int first = ch_cpuset_next(&hk, 0);
    pool = w->online;
    if (kind == OTHER_HK_ONLY) {
        ch_cpuset_clear(&pool, 0);
        ch_cpuset_clear(&pool, (unsigned)first);
    } else if (kind == NO_HK) {
        ch_cpuset_andnot(&pool, &pool, &hk);
    }
    ch_cpuset_and(&anchors, &pool, &hk);
    if (ch_cpuset_empty(&pool) || (kind == OTHER_HK_ONLY && ch_cpuset_empty(&anchors)))
        return false;
    ch_cpuset_zero(pref);
    ch_cpuset_foreach (c, &pool)
        if (below(2))
            ch_cpuset_set(pref, (unsigned)c);
    if (kind == HOLDS_FIRST_HK) {
        ch_cpuset_set(pref, (unsigned)first);
    } else {
        /* one CPU of the pool for sure, for OTHER_HK_ONLY a housekeeping one */
        const ch_cpuset *from = kind == OTHER_HK_ONLY ? &anchors : &pool;
        unsigned pick = below((unsigned)ch_cpuset_count(from));
        ch_cpuset_foreach (c, from)
            if (pick-- == 0)
                ch_cpuset_set(pref, (unsigned)c);
    }
    return true;
}

/* 5000 random worlds with a starting set of that kind, random thresholds, ratios near them. */
static void random_states(enum set_kind kind, const char *name)
{
    unsigned agreed = 0, n = 0, shrinks = 0, grows = 0, moved = 0, unwritable = 0;
    struct world *w = malloc(sizeof(*w));

    while (n < 5000) {
        ch_cpuset pref, kset;
        world_random(w);
        if (!random_set(w, kind, &pref))
            continue;
        n++;
        unsigned low = below(SG_RATIO_MAX - 1), high = low + 1 + below(SG_RATIO_MAX - low);
        unsigned ratio = ratio_near(low, high);
        if (ratio > SG_RATIO_MAX)
            ratio = SG_RATIO_MAX;
        shrinks += ratio > high;
        grows += ratio <= low;
        if (kernel_step(w, &pref, ratio, low, high, &kset) != GOV_HOLD) {
            moved++;
            unwritable += !holds_housekeeping(w, &kset);
        }
        agreed += agree_once(w, &pref, ratio, low, high);
    }
    free(w);
    printf("%s: %u of %u states (%u above high, %u at or below low, %u moved by the kernel, %u of "
           "them to a set without a housekeeping CPU)\n",
           name, agreed, n, shrinks, grows, moved, unwritable);
    CHECK(shrinks > n / 10 && grows > n / 10 && moved > n / 10);
}

TEST(random_states_agree)
{
    random_states(HOLDS_FIRST_HK, "random_states_agree");
}

/* Sets without CPU 0 and without the first housekeeping CPU, holding another one: the kernel
 * anchors on the first housekeeping CPU of the set, and so must the port. */
TEST(random_sets_without_cpu0_agree)
{
    random_states(OTHER_HK_ONLY, "random_sets_without_cpu0_agree");
}

/* Sets without a housekeeping CPU: no anchor, so nothing shrinks; they grow alike, but for the
 * core the port adds to what it writes (agree_once()). */
TEST(random_sets_without_housekeeping_agree_as_documented)
{
    random_states(NO_HK, "random_sets_without_housekeeping_agree_as_documented");
}

/* From the full set, and from a set without CPU 0 and the first housekeeping CPU, steal above
 * high until nothing shrinks, then at or below low until nothing grows: both walk the same sets
 * step by step. */
TEST(walks_agree)
{
    struct world *w = malloc(sizeof(*w));
    unsigned walks = 0;

    for (unsigned i = 0; i < 200; i++) {
        world_random(w);
        ch_cpuset pref = w->online;
        if (i % 2 && !random_set(w, OTHER_HK_ONLY, &pref))
            continue;
        walks++;
        for (unsigned phase = 0; phase < 2; phase++) {
            unsigned ratio = phase == 0 ? 6000 : 100;
            for (unsigned step = 0; step <= w->nbits; step++) {
                struct cpustat *prev = &s_prev, *cur = &s_cur;
                struct governor_input in = {.prev = prev,
                                            .cur = cur,
                                            .online = &w->online,
                                            .isolated = &w->isolated,
                                            .topo = &w->topo,
                                            .preferred = &pref,
                                            .params = {.high = 500, .low = 200}};
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
    CHECK(walks > 150);
    free(w);
}

/* A world of n CPUs without SMT, all online; the CPUs in isolated are not housekeeping. */
static struct world *world_flat(unsigned n, const char *isolated)
{
    struct world *w = calloc(1, sizeof(*w));

    w->nbits = n;
    governor_topology_flat(&w->topo);
    CHECK(ch_cpulist_parse(isolated, strlen(isolated), &w->isolated) == 0);
    for (unsigned c = 0; c < n; c++) {
        __set_bit(c, w->active);
        __set_bit(c, w->core[c]);
        ch_cpuset_set(&w->online, c);
        if (!ch_cpuset_test(&w->isolated, c))
            __set_bit(c, w->hk);
    }
    return w;
}

static const char *list_of(const ch_cpuset *s)
{
    static char buf[64];
    CHECK(ch_cpulist_format(s, buf, sizeof(buf)) >= 0);
    return buf;
}

/* The case: 4 CPUs, all housekeeping, the set hint "2-3" left.  The kernel anchors on
 * 2: nothing moves between the thresholds (CPU 0 is not put back), 3 goes above high, 0 comes
 * first below low; the port does the same. */
TEST(hint_set_2_3_agrees)
{
    struct world *w = world_flat(4, "");
    ch_cpuset pref, kset;

    CHECK(ch_cpulist_parse("2-3", 3, &pref) == 0);
    CHECK(kernel_step(w, &pref, 350, 200, 500, &kset) == GOV_HOLD);
    CHECK_STR(list_of(&kset), "2-3");
    CHECK(kernel_step(w, &pref, 6000, 200, 500, &kset) == GOV_SHRINK);
    CHECK_STR(list_of(&kset), "2");
    CHECK(kernel_step(w, &pref, 100, 200, 500, &kset) == GOV_GROW);
    CHECK_STR(list_of(&kset), "0,2-3");
    CHECK(agree_once(w, &pref, 350, 200, 500));
    CHECK(agree_once(w, &pref, 6000, 200, 500));
    CHECK(agree_once(w, &pref, 100, 200, 500));
    free(w);
}

/* Where they differ by design: a set without a housekeeping CPU that the kernel grows by an
 * isolated core.  The kernel's owner may set that; a userspace write of it fails (EINVAL), so
 * the port adds the first housekeeping CPU's core. */
TEST(grow_without_housekeeping_differs_as_documented)
{
    struct world *w = world_flat(4, "0-1");
    struct cpustat *prev = &s_prev, *cur = &s_cur;
    ch_cpuset pref, kset;
    struct governor_output out;

    CHECK(ch_cpulist_parse("1", 1, &pref) == 0);
    /* above high: no anchor, both hold */
    CHECK(kernel_step(w, &pref, 6000, 200, 500, &kset) == GOV_HOLD);
    CHECK_STR(list_of(&kset), "1");
    CHECK(agree_once(w, &pref, 6000, 200, 500));
    /* below low: the kernel adds 0 (isolated); the port writes 0-2 */
    CHECK(kernel_step(w, &pref, 100, 200, 500, &kset) == GOV_GROW);
    CHECK_STR(list_of(&kset), "0-1");
    struct governor_input in = {.prev = prev,
                                .cur = cur,
                                .online = &w->online,
                                .isolated = &w->isolated,
                                .topo = &w->topo,
                                .preferred = &pref,
                                .params = {.high = 500, .low = 200}};
    stats_for(w, 100, prev, cur);
    governor_step(&in, &out);
    CHECK_INT(out.action, GOV_GROW);
    CHECK_STR(list_of(&out.preferred), "0-2");
    CHECK(agree_once(w, &pref, 100, 200, 500)); /* the difference agree_once() expects */
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
