// SPDX-License-Identifier: LGPL-2.1-or-later
/* The local fallback governor as a pure function, fed synthetic /proc/stat sequences. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "governor.h"
#include "corehint/procstat.h"

/* A guest whose CPUs advance 100 ticks per interval, `steal` of them stolen. */
struct sim {
    unsigned ncpus;
    ch_cpuset online;
    ch_cpuset isolated;
    struct cpu_topology topo;
    uint64_t user[64], idle[64], steal[64];
    struct cpustat *prev, *cur;
    ch_cpuset preferred;
};

static void sim_stat(struct sim *s, struct cpustat *out)
{
    char text[8192];
    size_t n = 0;

    n += (size_t)snprintf(text + n, sizeof(text) - n, "cpu  1 2 3 4 5 6 7 8 0 0\n");
    ch_cpuset_foreach (c, &s->online) {
        n += (size_t)snprintf(text + n, sizeof(text) - n, "cpu%d %llu 0 0 %llu 0 0 0 %llu 0 0\n", c,
                              (unsigned long long)s->user[c], (unsigned long long)s->idle[c],
                              (unsigned long long)s->steal[c]);
    }
    n += (size_t)snprintf(text + n, sizeof(text) - n, "intr 12 0 0\nctxt 99\n");
    CHECK_INT(procstat_parse(text, n, out), 0);
}

static struct sim *sim_new(unsigned ncpus, unsigned smt)
{
    struct sim *s = calloc(1, sizeof(*s));
    s->prev = calloc(1, sizeof(*s->prev));
    s->cur = calloc(1, sizeof(*s->cur));
    s->ncpus = ncpus;
    ch_cpuset_fill(&s->online, ncpus);
    s->preferred = s->online;
    governor_topology_flat(&s->topo);
    for (unsigned c = 0; c < ncpus; c++)
        s->topo.core[c] = (uint16_t)(c - c % smt);
    sim_stat(s, s->cur);
    return s;
}

static void sim_free(struct sim *s)
{
    free(s->prev);
    free(s->cur);
    free(s);
}

/* One interval at `steal` % on every online CPU, then one governor step; returns the set. */
static const char *sim_step(struct sim *s, unsigned steal_pct, enum governor_action *action)
{
    static char buf[256];
    struct cpustat *t = s->prev;
    struct governor_output out;

    ch_cpuset_foreach (c, &s->online) {
        s->steal[c] += steal_pct;
        s->user[c] += 10;
        s->idle[c] += 90 - steal_pct;
    }
    s->prev = s->cur;
    s->cur = t;
    sim_stat(s, s->cur);
    struct governor_input in = {
        .prev = s->prev,
        .cur = s->cur,
        .online = &s->online,
        .isolated = &s->isolated,
        .topo = &s->topo,
        .preferred = &s->preferred,
        .params = {.high = 500, .low = 200},
    };
    governor_step(&in, &out);
    s->preferred = out.preferred;
    if (action)
        *action = out.action;
    CHECK(ch_cpulist_format(&out.preferred, buf, sizeof(buf)) >= 0);
    return buf;
}

TEST(steal_ratio_is_steal_over_elapsed_of_online_cpus)
{
    struct sim *s = sim_new(4, 1);
    struct governor_output out;
    struct cpustat *a = s->cur, *b = s->prev;

    /* 4 CPUs x 100 ticks, 7 stolen on each: 7.00 %. */
    *b = *a;
    for (int c = 0; c < 4; c++) {
        b->total[c] += 100;
        b->steal[c] += 7;
    }
    uint32_t pct;
    CHECK_INT(governor_steal(a, b, &s->online, &pct), 0);
    CHECK_INT(pct, 700);
    /* Steal on one CPU only: diluted over the four. */
    *b = *a;
    for (int c = 0; c < 4; c++)
        b->total[c] += 100;
    b->steal[3] += 40;
    CHECK_INT(governor_steal(a, b, &s->online, &pct), 0);
    CHECK_INT(pct, 1000);
    /* CPUs offline now are left out of the denominator. */
    ch_cpuset two;
    ch_cpuset_fill(&two, 2);
    b->steal[1] += 20;
    CHECK_INT(governor_steal(a, b, &two, &pct), 0);
    CHECK_INT(pct, 1000);
    /* No elapsed time: no sample, and the step decides nothing. */
    CHECK_INT(governor_steal(a, a, &s->online, &pct), -ENODATA);
    struct governor_input in = {.prev = a,
                                .cur = a,
                                .online = &s->online,
                                .topo = &s->topo,
                                .preferred = &s->preferred,
                                .params = {500, 200}};
    governor_step(&in, &out);
    CHECK_INT(out.action, GOV_NO_SAMPLE);
    CHECK(ch_cpuset_equal(&out.preferred, &s->online));
    /* Counters going backwards (a re-plugged CPU) are skipped, not wrapped. */
    *b = *a;
    b->total[0] += 100;
    b->steal[0] += 50;
    b->total[1] = 0;
    CHECK_INT(governor_steal(a, b, &two, &pct), 0);
    CHECK_INT(pct, 5000);
    sim_free(s);
}

TEST(shrinks_one_core_per_step_never_the_housekeeping_core)
{
    struct sim *s = sim_new(8, 1);
    enum governor_action a;

    CHECK_STR(sim_step(s, 6, &a), "0-6"); /* 6 % > 5 %: highest CPU first */
    CHECK_INT(a, GOV_SHRINK);
    CHECK_STR(sim_step(s, 6, &a), "0-5");
    for (int i = 0; i < 4; i++)
        sim_step(s, 30, NULL);
    CHECK_STR(sim_step(s, 30, &a), "0");
    CHECK_STR(sim_step(s, 30, &a), "0"); /* CPU 0 stays */
    CHECK_INT(a, GOV_HOLD);
    sim_free(s);
}

TEST(thresholds_hold_between_grow_at_or_below_low)
{
    struct sim *s = sim_new(4, 1);
    enum governor_action a;

    CHECK_STR(sim_step(s, 10, &a), "0-2");
    CHECK_STR(sim_step(s, 5, &a), "0-2"); /* exactly high: not above it */
    CHECK_INT(a, GOV_HOLD);
    CHECK_STR(sim_step(s, 3, &a), "0-2"); /* between */
    CHECK_INT(a, GOV_HOLD);
    CHECK_STR(sim_step(s, 2, &a), "0-3"); /* exactly low: v11 grows at <= low */
    CHECK_INT(a, GOV_GROW);
    CHECK_STR(sim_step(s, 0, &a), "0-3"); /* all in: nothing to add */
    CHECK_INT(a, GOV_HOLD);
    sim_free(s);
}

TEST(smt_siblings_move_together)
{
    struct sim *s = sim_new(8, 2); /* cores {0,1} {2,3} {4,5} {6,7} */

    CHECK_STR(sim_step(s, 20, NULL), "0-5");
    CHECK_STR(sim_step(s, 20, NULL), "0-3");
    CHECK_STR(sim_step(s, 20, NULL), "0-1");
    CHECK_STR(sim_step(s, 20, NULL), "0-1"); /* the housekeeping core, both threads */
    CHECK_STR(sim_step(s, 0, NULL), "0-3");  /* lowest missing core first */
    CHECK_STR(sim_step(s, 0, NULL), "0-5");
    CHECK_STR(sim_step(s, 0, NULL), "0-7");
    sim_free(s);
}

TEST(grows_lowest_missing_core_first)
{
    struct sim *s = sim_new(6, 1);

    ch_cpuset_zero(&s->preferred);
    ch_cpuset_set(&s->preferred, 0);
    ch_cpuset_set(&s->preferred, 4);
    CHECK_STR(sim_step(s, 0, NULL), "0-1,4");
    CHECK_STR(sim_step(s, 0, NULL), "0-2,4");
    sim_free(s);
}

TEST(hotplug_clips_to_online_and_keeps_housekeeping)
{
    struct sim *s = sim_new(8, 2);

    CHECK_STR(sim_step(s, 20, NULL), "0-5");
    /* CPUs 4-5 go offline: the set shrinks with them, then the next core goes. */
    ch_cpuset_clear(&s->online, 4);
    ch_cpuset_clear(&s->online, 5);
    CHECK_STR(sim_step(s, 20, NULL), "0-1");
    /* Back online (fresh counters): grow again, lowest first, only online CPUs. */
    ch_cpuset_set(&s->online, 4);
    ch_cpuset_set(&s->online, 5);
    CHECK_STR(sim_step(s, 0, NULL), "0-3");
    CHECK_STR(sim_step(s, 0, NULL), "0-5");
    CHECK_STR(sim_step(s, 0, NULL), "0-7");
    /* CPU 0 offlined: CPU 1 is the first online, its core (just 1 now) is housekeeping. */
    ch_cpuset_clear(&s->online, 0);
    CHECK_STR(sim_step(s, 40, NULL), "1-5");
    CHECK_STR(sim_step(s, 40, NULL), "1-3");
    CHECK_STR(sim_step(s, 40, NULL), "1");
    CHECK_STR(sim_step(s, 40, NULL), "1");
    sim_free(s);
}

static void sim_prefer(struct sim *s, const char *list)
{
    CHECK_INT(ch_cpulist_parse(list, strlen(list), &s->preferred), 0);
}

/* v11 anchors on the first housekeeping CPU of the set in force, not the first online one: a
 * host hint may name any housekeeping CPU, and the lease's expiry hands its set to the
 * governor as it is. */
TEST(anchors_on_the_first_housekeeping_cpu_of_the_set)
{
    struct sim *s = sim_new(4, 1);
    enum governor_action a;

    sim_prefer(s, "2-3");
    CHECK_STR(sim_step(s, 3, &a), "2-3"); /* between the thresholds: nothing moves, CPU 0 too */
    CHECK_INT(a, GOV_HOLD);
    CHECK_STR(sim_step(s, 6, &a), "2"); /* the anchor is 2 */
    CHECK_INT(a, GOV_SHRINK);
    CHECK_STR(sim_step(s, 30, &a), "2");
    CHECK_INT(a, GOV_HOLD);
    CHECK_STR(sim_step(s, 0, &a), "0,2"); /* lowest missing first */
    CHECK_INT(a, GOV_GROW);
    CHECK_STR(sim_step(s, 30, &a), "0"); /* now 0 is the first: 2 goes */
    sim_free(s);

    s = sim_new(8, 2); /* cores {0,1} {2,3} {4,5} {6,7} */
    sim_prefer(s, "2-3,6-7");
    CHECK_STR(sim_step(s, 20, NULL), "2-3"); /* the anchor's whole core stays */
    CHECK_STR(sim_step(s, 20, &a), "2-3");
    CHECK_INT(a, GOV_HOLD);
    sim_free(s);
}

/* A set without a housekeeping CPU (hotplug took them): v11 has no anchor and holds it above
 * high; it grows as any set.  What the port writes must hold a housekeeping CPU (the kernel
 * refuses a write without one), so a grow by an isolated core adds the first housekeeping
 * core too.  An empty set is every online CPU, as the kernel makes it. */
TEST(set_without_a_housekeeping_cpu)
{
    struct sim *s = sim_new(4, 1);
    enum governor_action a;

    ch_cpuset_set(&s->isolated, 0);
    ch_cpuset_set(&s->isolated, 1); /* housekeeping 2-3 */
    sim_prefer(s, "1");
    CHECK_STR(sim_step(s, 6, &a), "1");
    CHECK_INT(a, GOV_HOLD);
    CHECK_STR(sim_step(s, 3, &a), "1");
    CHECK_INT(a, GOV_HOLD);
    CHECK_STR(sim_step(s, 0, &a), "0-2"); /* v11: 0-1; 2 so that it can be written */
    CHECK_INT(a, GOV_GROW);
    sim_prefer(s, "0");
    ch_cpuset_zero(&s->isolated);
    ch_cpuset_set(&s->isolated, 0); /* housekeeping 1-3: the grow adds one */
    CHECK_STR(sim_step(s, 0, &a), "0-1");
    ch_cpuset_zero(&s->preferred);
    CHECK_STR(sim_step(s, 3, &a), "0-3");
    CHECK_INT(a, GOV_HOLD);
    sim_free(s);
}

TEST(isolated_cpus_are_not_housekeeping)
{
    struct sim *s = sim_new(8, 2);

    /* nohz_full=0-1: the housekeeping core is {2,3}; CPUs 0-1 may go like any other. */
    ch_cpuset_set(&s->isolated, 0);
    ch_cpuset_set(&s->isolated, 1);
    CHECK_STR(sim_step(s, 20, NULL), "0-5");
    CHECK_STR(sim_step(s, 20, NULL), "0-3");
    CHECK_STR(sim_step(s, 20, NULL), "2-3");
    CHECK_STR(sim_step(s, 20, NULL), "2-3");
    CHECK_STR(sim_step(s, 0, NULL), "0-3");
    CHECK_INT(governor_housekeeping(&s->online, &s->isolated), 2);
    CHECK_INT(governor_housekeeping(&s->online, NULL), 0);
    ch_cpuset_fill(&s->isolated, 8);
    CHECK_INT(governor_housekeeping(&s->online, &s->isolated), 0);
    ch_cpuset empty;
    ch_cpuset_zero(&empty);
    CHECK_INT(governor_housekeeping(&empty, NULL), -1);
    sim_free(s);
}

TEST(core_of_uses_topology_and_online)
{
    struct cpu_topology *t = malloc(sizeof(*t));
    ch_cpuset online, core;
    char buf[64];

    governor_topology_flat(t);
    t->core[5] = 4;
    t->core[4] = 4;
    ch_cpuset_fill(&online, 6);
    governor_core_of(t, &online, 5, &core);
    ch_cpulist_format(&core, buf, sizeof(buf));
    CHECK_STR(buf, "4-5");
    ch_cpuset_clear(&online, 4);
    governor_core_of(t, &online, 5, &core);
    ch_cpulist_format(&core, buf, sizeof(buf));
    CHECK_STR(buf, "5");
    governor_core_of(t, &online, CH_CPU_MAX, &core);
    CHECK(ch_cpuset_empty(&core));
    CHECK_STR(governor_action_name(GOV_SHRINK), "shrink");
    free(t);
}
