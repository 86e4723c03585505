// SPDX-License-Identifier: LGPL-2.1-or-later
/* Policy scenarios: models built by hand, decisions checked against DESIGN.md §3. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "model.h"
#include "policy.h"

struct bed {
    struct model m;
    struct hd_config cfg;
    struct pol_decision *dec; /* the latest decisions */
    unsigned ndec;
};

static void bed_init(struct bed *b, unsigned npcpu, unsigned ndom)
{
    memset(b, 0, sizeof(*b));
    cfg_defaults(&b->cfg);
    b->m.npcpu = npcpu;
    b->m.interval_s = 1;
    b->m.ndom = ndom;
    b->m.dom = calloc(ndom, sizeof(*b->m.dom));
    b->m.pcpu_busy = calloc(npcpu, sizeof(double));
    b->m.pcpu_wait = calloc(npcpu, sizeof(double));
    b->m.pcpu_contention = calloc(npcpu, sizeof(double));
    b->m.pcpu_rqwait = calloc(npcpu, sizeof(double));
}

/* vCPU v of d pinned to pCPU p alone (and d may run there). */
static void pin_vcpu(struct model_dom *d, unsigned v, unsigned p)
{
    d->vcpu[v].home = (int)p;
    pset_zero(&d->vcpu[v].span);
    pset_set(&d->vcpu[v].span, p);
    pset_set(&d->span, p);
}

/* Domain i: nvcpu vCPUs each running run and waiting wait; affinity a cpulist for all of
 * them (they float over it), "pin" = vCPU v pinned to pCPU v, NULL = every host CPU. */
static struct model_dom *bed_dom(struct bed *b, unsigned i, const char *name, unsigned nvcpu,
                                 double run, double wait, const char *affinity)
{
    struct model_dom *d = &b->m.dom[i];

    free(d->vcpu);
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    snprintf(d->uuid, sizeof(d->uuid), "00000000-0000-0000-0000-%012u", i);
    d->threads = 1;
    d->nvcpu = nvcpu;
    d->measured = true;
    d->vcpu = calloc(nvcpu, sizeof(*d->vcpu));
    for (unsigned v = 0; v < nvcpu; v++) {
        d->vcpu[v] = (struct model_vcpu){
            .id = v, .run = run, .wait = wait, .measured = true, .home = -1, .last = -1};
    }
    if (affinity && strcmp(affinity, "pin") == 0) {
        for (unsigned v = 0; v < nvcpu; v++)
            pin_vcpu(d, v, v % b->m.npcpu);
    } else if (affinity) {
        ch_cpuset cs;
        ch_cpulist_parse(affinity, strlen(affinity), &cs);
        pset_from_cpuset(&d->span, &cs);
        if (pset_count(&d->span) == 1)
            for (unsigned v = 0; v < nvcpu; v++)
                pin_vcpu(d, v, (unsigned)pset_next(&d->span, 0));
    } else {
        for (unsigned p = 0; p < b->m.npcpu; p++)
            pset_set(&d->span, p);
    }
    return d;
}

/* Sums, pools and per-pCPU contention, as model_build would derive them without node stats
 * or schedstat. */
static void bed_finish(struct bed *b)
{
    for (unsigned p = 0; p < b->m.npcpu; p++)
        b->m.pcpu_busy[p] = b->m.pcpu_wait[p] = 0;
    model_pools(&b->m);
    for (unsigned i = 0; i < b->m.ndom; i++) {
        struct model_dom *d = &b->m.dom[i];
        d->run = d->wait = d->demand = 0;
        for (unsigned v = 0; v < d->nvcpu; v++) {
            struct model_vcpu *mv = &d->vcpu[v];
            mv->demand = mv->halted ? 0 : mv->run + mv->wait;
            d->run += mv->run;
            d->wait += mv->wait;
            d->demand += mv->demand;
        }
        model_book(d, NULL, MQ_RUN, 1, b->m.pcpu_busy, b->m.npcpu);
        model_book(d, NULL, MQ_WAIT, 1, b->m.pcpu_wait, b->m.npcpu);
    }
    for (unsigned p = 0; p < b->m.npcpu; p++)
        b->m.pcpu_contention[p] = b->m.pcpu_busy[p] + b->m.pcpu_wait[p];
}

static void step(struct bed *b)
{
    struct pol_decision *out = calloc(b->m.ndom + 1, sizeof(*out));

    bed_finish(b);
    CHECK_INT(pol_step(&b->m, &b->cfg, b->dec, b->ndec, out), 0);
    free(b->dec);
    b->dec = out;
    b->ndec = b->m.ndom;
}

/* Every guest acknowledges the last step's decision in host mode, as a helper does. */
static void ack(struct bed *b)
{
    for (unsigned i = 0; i < b->ndec && i < b->m.ndom; i++) {
        b->m.dom[i].acked = true;
        b->m.dom[i].applied = b->dec[i].preferred;
    }
}

static void bed_free(struct bed *b)
{
    model_free(&b->m);
    free(b->dec);
    cfg_free(&b->cfg);
}

static const char *pref(const struct bed *b, unsigned i)
{
    static char buf[4][256];
    static unsigned k;
    char *s = buf[k++ % 4];

    ch_cpulist_format(&b->dec[i].preferred, s, 256);
    return s;
}

TEST(no_contention_keeps_every_vcpu)
{
    struct bed b;

    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "a", 2, 0.6, 0.1, NULL);
    bed_dom(&b, 1, "b", 4, 0.3, 0.0, NULL);
    for (int s = 0; s < 3; s++)
        step(&b);
    CHECK_STR(pref(&b, 0), "0-1");
    CHECK_STR(pref(&b, 1), "0-3");
    CHECK_STR(pol_reason_name(b.dec[0].reason), "uncontended");
    CHECK(!b.dec[0].contended);
    CHECK(b.dec[1].entitlement > 1.19 && b.dec[1].entitlement < 1.21);
    bed_free(&b);
}

TEST(overcommit_2x_shrinks_in_one_interval)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "b", 2, 0.5, 0.5, NULL);
    step(&b);
    /* capacity 1.8, entitlement 0.9 each -> ceil(0.99) = 1, at the first contended sample */
    CHECK_INT(b.dec[0].target, 1);
    CHECK_INT(b.dec[0].count, 1);
    CHECK(b.dec[0].entitlement > 0.899 && b.dec[0].entitlement < 0.901);
    bed_free(&b);

    /* shrink_after = 2 (the knob, for hosts whose samples are noisy) holds one interval */
    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "b", 2, 0.5, 0.5, NULL);
    b.cfg.shrink_after = 2;
    step(&b);
    CHECK_INT(b.dec[0].target, 1);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_STR(pol_reason_name(b.dec[0].reason), "hold");
    step(&b);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    CHECK_STR(pref(&b, 0), "0");
    CHECK_STR(pref(&b, 1), "0");
    CHECK_STR(pol_reason_name(b.dec[1].reason), "fair-share");
    CHECK(b.dec[1].contended);
    bed_free(&b);
}

TEST(overcommit_4x)
{
    struct bed b;

    bed_init(&b, 2, 4);
    for (unsigned i = 0; i < 4; i++)
        bed_dom(&b, i, "vm", 2, 0.25, 0.75, NULL);
    step(&b);
    step(&b);
    for (unsigned i = 0; i < 4; i++) {
        CHECK_INT(b.dec[i].count, 1);
        CHECK(b.dec[i].entitlement > 0.449 && b.dec[i].entitlement < 0.451);
    }
    bed_free(&b);

    /* 2 VMs x 8 busy vCPUs on 4 pCPUs: 3.6 / 2 = 1.8 each -> ceil(1.98) = 2 */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "a", 8, 0.25, 0.75, NULL);
    bed_dom(&b, 1, "b", 8, 0.25, 0.75, NULL);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(b.dec[1].count, 2);
    CHECK(ch_cpuset_test(&b.dec[0].preferred, 0));
    bed_free(&b);
}

/* 4 pCPUs, a 6-vCPU and a 2-vCPU domain, both busy, with live cpu_shares and the host's
 * default for a domain nobody weighted */
static void six_and_two(struct bed *b, unsigned six, unsigned two, unsigned dflt)
{
    bed_init(b, 4, 2);
    bed_dom(b, 0, "six", 6, 0.6, 0.4, NULL)->shares = six;
    bed_dom(b, 1, "two", 2, 0.6, 0.4, NULL)->shares = two;
    b->m.shares_default = dflt;
}

TEST(unequal_weights)
{
    struct bed b;
    char err[256];

    /* configured weights 3 : 1 */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "heavy", 4, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "light", 4, 0.5, 0.5, NULL);
    CHECK_INT(cfg_load_text(&b.cfg, "t", "[domain heavy]\nweight = 3\n[domain light]\nweight = 1\n",
                            err, sizeof(err)),
              0);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK(b.dec[0].entitlement > 2.69 && b.dec[0].entitlement < 2.71);
    CHECK(b.dec[1].entitlement > 0.89 && b.dec[1].entitlement < 0.91);
    CHECK_INT(b.dec[0].count, 3);
    CHECK_INT(b.dec[1].count, 1);
    bed_free(&b);

    /* the kernel's weight: domains nobody weighted (cpu_shares at the host's default: cgroup v2
     * cpu.weight 100 or v1 cpu.shares 1024) weigh alike whatever their vCPU count, because
     * the host kernel shares the pCPUs among their cgroups alike: 6 and 2 vCPUs share 3.6 as
     * 1.8 and 1.8 */
    for (unsigned dflt = 100; dflt <= 1024; dflt += 924) {
        six_and_two(&b, dflt, dflt, dflt);
        step(&b);
        CHECK(b.dec[0].weight > 0.999 && b.dec[0].weight < 1.001);
        CHECK(b.dec[0].entitlement > 1.799 && b.dec[0].entitlement < 1.801);
        CHECK(b.dec[1].entitlement > 1.799 && b.dec[1].entitlement < 1.801);
        CHECK_INT(b.dec[0].count, 2);
        CHECK_INT(b.dec[1].count, 2);
        bed_free(&b);
    }
    /* weight = 1 in hostd.conf means a domain nobody weighted, on either cgroup version */
    for (unsigned dflt = 100; dflt <= 1024; dflt += 924) {
        six_and_two(&b, dflt, 2 * dflt, dflt);
        CHECK_INT(cfg_load_text(&b.cfg, "t", "[domain two]\nweight = 1\n", err, sizeof(err)), 0);
        step(&b);
        CHECK(b.dec[0].entitlement > 1.799 && b.dec[0].entitlement < 1.801);
        CHECK(b.dec[1].entitlement > 1.799 && b.dec[1].entitlement < 1.801);
        bed_free(&b);
    }
    /* on cgroup v2 a domain whose XML asked <shares>300</shares> has cpu.weight 300: 3 : 1 */
    six_and_two(&b, 300, 100, 100);
    step(&b);
    CHECK(b.dec[0].entitlement > 2.699 && b.dec[0].entitlement < 2.701);
    CHECK_INT(b.dec[0].count, 3);
    CHECK_INT(b.dec[1].count, 1);
    bed_free(&b);

    /* weight unknown (no live cpu_shares: a recording without it) = vCPU count: 6 and 2 vCPUs
     * share 3.6 as 2.7 and 0.9 */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "six", 6, 0.6, 0.4, NULL);
    bed_dom(&b, 1, "two", 2, 0.6, 0.4, NULL);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 3);
    CHECK_INT(b.dec[1].count, 1);
    bed_free(&b);

    /* max-min: a small demand is met in full, the rest goes to the big one */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "small", 4, 0.125, 0.0, NULL);
    bed_dom(&b, 1, "big", 4, 0.6, 0.4, NULL);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK(b.dec[0].entitlement > 0.499 && b.dec[0].entitlement < 0.501);
    CHECK(b.dec[1].entitlement > 3.099 && b.dec[1].entitlement < 3.101);
    CHECK_INT(b.dec[1].count, 4);
    bed_free(&b);

    /* <shares> 3072 vs 1024 counts as weights 3 and 1, unless use_shares = no */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "s3", 4, 0.5, 0.5, NULL)->shares = 3072;
    bed_dom(&b, 1, "s1", 4, 0.5, 0.5, NULL)->shares = 1024;
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 3);
    CHECK_INT(b.dec[1].count, 1);
    b.cfg.use_shares = false;
    step(&b);
    CHECK_INT(b.dec[0].target, 2);
    CHECK_INT(b.dec[1].target, 2);
    bed_free(&b);
}

TEST(pinned_vcpus_prefer_least_contended_pcpus)
{
    struct bed b;
    char err[256];

    /* a: vCPU v pinned to pCPU v; b: two busy vCPUs pinned to pCPUs 1 and 2 */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "a", 4, 0.6, 0.4, "pin");
    struct model_dom *d = bed_dom(&b, 1, "b", 2, 0.9, 0.1, NULL);
    pset_zero(&d->span);
    pin_vcpu(d, 0, 1);
    pin_vcpu(d, 1, 2);
    CHECK_INT(cfg_load_text(&b.cfg, "t", "[domain b]\nweight = 6\n", err, sizeof(err)), 0);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.m.npool, 1);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_STR(pref(&b, 0), "0,3");
    bed_free(&b);
}

TEST(pinned_vms_spread_over_pcpus)
{
    struct bed b;

    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "a", 4, 0.5, 0.5, "pin");
    bed_dom(&b, 1, "b", 4, 0.5, 0.5, "pin");
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(b.dec[1].count, 2);
    CHECK(ch_cpuset_test(&b.dec[0].preferred, 0));
    CHECK(ch_cpuset_test(&b.dec[1].preferred, 0));
    /* the second preferred vCPU of each VM sits on a different pCPU */
    ch_cpuset both;
    ch_cpuset_and(&both, &b.dec[0].preferred, &b.dec[1].preferred);
    CHECK_INT(ch_cpuset_count(&both), 1);
    bed_free(&b);
}

TEST(floating_and_separate_pools)
{
    struct bed b;

    /* a pinned to 0-1 and busy, c pinned to 2-3 and light: two pools, only a's contended */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "a", 4, 0.5, 0.5, "0-1");
    bed_dom(&b, 1, "c", 4, 0.1, 0.0, "2-3");
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.m.npool, 2);
    CHECK(b.dec[0].contended);
    CHECK(!b.dec[1].contended);
    CHECK_INT(b.dec[0].count, 2); /* 1.8 -> ceil(1.98) */
    CHECK_INT(b.dec[1].count, 4);
    bed_free(&b);

    /* floating VMs form one pool of every host CPU */
    bed_init(&b, 4, 3);
    for (unsigned i = 0; i < 3; i++)
        bed_dom(&b, i, "f", 4, 0.5, 0.5, NULL);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.m.npool, 1);
    CHECK_INT(b.m.pool[0].ncpu, 4);
    for (unsigned i = 0; i < 3; i++)
        CHECK_INT(b.dec[i].count, 2); /* 3.6 / 3 = 1.2 -> ceil(1.32) */
    bed_free(&b);
}

TEST(smt_siblings_stay_together)
{
    struct bed b;

    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "smt", 8, 0.4, 0.6, NULL)->threads = 2;
    bed_dom(&b, 1, "other", 8, 0.4, 0.6, NULL);
    b.cfg.shrink_after = 1;
    step(&b);
    /* 1.8 -> 2 vCPUs = one core */
    CHECK_INT(b.dec[0].count, 2);
    CHECK_STR(pref(&b, 0), "0-1");
    /* an entitlement worth 3 vCPUs rounds up to 2 whole cores */
    bed_free(&b);
    bed_init(&b, 8, 2);
    bed_dom(&b, 0, "smt", 8, 0.4, 0.6, NULL)->threads = 2;
    bed_dom(&b, 1, "other", 8, 0.4, 0.6, NULL)->threads = 2;
    b.cfg.target_utilisation = 0.6; /* 4.8 / 2 = 2.4 -> ceil(2.64) = 3 -> 4 */
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].target, 4);
    CHECK_INT(b.dec[0].count, 4);
    for (unsigned c = 0; c < 8; c += 2)
        CHECK(ch_cpuset_test(&b.dec[0].preferred, c) == ch_cpuset_test(&b.dec[0].preferred, c + 1));
    CHECK(ch_cpuset_test(&b.dec[0].preferred, 0));
    bed_free(&b);
}

TEST(opt_out_gets_everything_and_keeps_its_share)
{
    struct bed b;
    char err[256];

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "shy", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "b", 2, 0.5, 0.5, NULL);
    CHECK_INT(cfg_load_text(&b.cfg, "t",
                            "[domain 00000000-0000-0000-0000-000000000000]\n"
                            "opt_out = yes\n",
                            err, sizeof(err)),
              0);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK(b.dec[0].opt_out);
    CHECK_STR(pol_reason_name(b.dec[0].reason), "opt-out");
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(b.dec[1].count, 1);
    CHECK(b.dec[1].entitlement > 0.899 && b.dec[1].entitlement < 0.901);
    bed_free(&b);
}

TEST(hysteresis_shrinks_late_grows_at_once)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "b", 2, 0.5, 0.5, NULL);
    b.cfg.shrink_after = 3;
    step(&b);
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(b.dec[0].shrink_streak, 2);
    step(&b);
    CHECK_INT(b.dec[0].count, 1);
    /* b goes idle: a grows back in the same interval (its entitlement takes what b left),
     * and the pool is uncontended after release_after quiet intervals */
    bed_dom(&b, 0, "a", 2, 0.5, 0.2, NULL);
    bed_dom(&b, 1, "b", 2, 0.01, 0.0, NULL);
    b.dec[0].shrink_streak = 0;
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_STR(pol_reason_name(b.dec[0].reason), "fair-share");
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_STR(pol_reason_name(b.dec[0].reason), "uncontended");
    bed_free(&b);

    /* contention that comes and goes: with shrink_after = 2 it never persists long enough to
     * shrink anybody; with the default (one interval) the guests shrink at the first contended
     * sample and stay shrunk through the quiet halves (a quiet interval of a contended pool
     * shrinks nobody and, below release_after, ends nothing): one change, no flapping */
    for (unsigned after = 1; after <= 2; after++) {
        unsigned changes = 0, last = 2;
        bed_init(&b, 2, 2);
        b.cfg.shrink_after = after;
        for (int s = 0; s < 10; s++) {
            double r = s % 2 ? 0.3 : 0.5, w = s % 2 ? 0.0 : 0.5;
            bed_dom(&b, 0, "a", 2, r, w, NULL);
            bed_dom(&b, 1, "b", 2, r, w, NULL);
            step(&b);
            changes += b.dec[0].count != last;
            last = b.dec[0].count;
        }
        CHECK_INT(changes, after == 1 ? 1 : 0);
        CHECK_INT(b.dec[0].count, after == 1 ? 1 : 2);
        bed_free(&b);
    }
}

/* xorshift64: the same pools for every run of the test */
static double urand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (double)(*x >> 11) / (double)(1ULL << 53);
}

/*
 * One interval's sample of a closed loop: VM i (of the first n) has busy[i] busy tasks that its
 * guest packs onto its preferred vCPUs; the host shares its pCPUs evenly among the busy vCPU
 * threads.  With x, every vCPU's reading is scaled by 1 - noise * U(0, 1): busy ones read up to
 * `noise` low, as TCG vCPU threads do.
 */
static void feed_sets(struct bed *b, const unsigned *busy, unsigned n, double noise, uint64_t *x,
                      const ch_cpuset *sets)
{
    unsigned runnable = 0;

    n = n < b->m.ndom ? n : b->m.ndom;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = sets     ? ch_cpuset_count(&sets[i])
                     : b->dec ? b->dec[i].count
                              : b->m.dom[i].nvcpu;
        runnable += busy[i] < k ? busy[i] : k;
    }
    double share = runnable > b->m.npcpu ? (double)b->m.npcpu / runnable : 1;
    for (unsigned i = 0; i < n; i++) {
        struct model_dom *d = &b->m.dom[i];
        unsigned placed = 0;
        for (unsigned v = 0; v < d->nvcpu; v++) {
            bool on = (sets ? ch_cpuset_test(&sets[i], d->vcpu[v].id)
                            : !b->dec || ch_cpuset_test(&b->dec[i].preferred, d->vcpu[v].id)) &&
                      placed < busy[i];
            double low = x ? 1 - noise * urand(x) : 1;
            placed += on;
            d->vcpu[v].run = on ? share * low : 0;
            d->vcpu[v].wait = on ? (1 - share) * low : 0;
            d->vcpu[v].halted = !on;
        }
    }
}

/* The guests pack their busy tasks onto the sets the last decision preferred. */
static void feed(struct bed *b, const unsigned *busy, unsigned n, double noise, uint64_t *x)
{
    feed_sets(b, busy, n, noise, x, NULL);
}

/*
 * A closed loop (feed, then a step) for `steps` intervals.  Returns the number of preferred-set
 * changes after the warm-up.
 */
static unsigned closed_loop(struct bed *b, const unsigned *busy, unsigned nbusy, unsigned steps,
                            unsigned warmup)
{
    unsigned changes = 0;

    CHECK_INT(nbusy, b->m.ndom);
    for (unsigned s = 0; s < steps; s++) {
        feed(b, busy, nbusy, 0, NULL);
        struct pol_decision *old = NULL;
        if (b->dec) {
            old = malloc((b->ndec + 1) * sizeof(*old));
            memcpy(old, b->dec, b->ndec * sizeof(*old));
        }
        step(b);
        for (unsigned i = 0; old && s >= warmup && i < b->m.ndom; i++)
            changes += !ch_cpuset_equal(&old[i].preferred, &b->dec[i].preferred);
        free(old);
    }
    return changes;
}

TEST(censored_demand_does_not_flap)
{
    struct bed b;
    unsigned busy[2] = {4, 4};

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 4, 0, 0, NULL);
    bed_dom(&b, 1, "b", 4, 0, 0, NULL);
    CHECK_INT(closed_loop(&b, busy, 2, 60, 5), 0);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    CHECK(b.dec[0].censored);
    /* b goes idle: a's saturated preferred set grows at once into the capacity really freed
     * (both pCPUs; four busy vCPUs on two pCPUs would only queue behind each other), and
     * then stays put */
    busy[1] = 0;
    closed_loop(&b, busy, 2, 1, 0);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(closed_loop(&b, busy, 2, 60, 0), 0);
    CHECK_INT(b.dec[0].count, 2);
    bed_free(&b);

    /* a light VM next to a busy one: the busy one gets what is really free, no more */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "busy", 8, 0, 0, NULL);
    bed_dom(&b, 1, "light", 8, 0, 0, NULL);
    unsigned busy2[2] = {8, 1};
    CHECK_INT(closed_loop(&b, busy2, 2, 80, 10), 0);
    /* 3.6 shared 1 : 2.6 -> light keeps ceil(1.1) = 2, busy ceil(2.86) = 3 */
    CHECK_INT(b.dec[0].count, 3);
    CHECK_INT(b.dec[1].count, 2);
    bed_free(&b);
}

/*
 * A contention step after one VM had the host to itself: 16 pCPUs, 8 VMs of 16 busy vCPUs,
 * seven joining at once (chsim scenario step-16p-8x16).  Every VM fills its preferred vCPUs,
 * so every measured demand is censored at its count: the first VM's 8 and the others' 1 used
 * to be self-confirming (their sum fits the pool), and the newcomers never got their share.
 * Each must end with its fair share, 2 vCPUs (14.4 CPUs over 8, plus headroom), and stay.
 */
TEST(incumbent_yields_to_censored_newcomers)
{
    struct bed b;
    unsigned busy[8] = {16, 0, 0, 0, 0, 0, 0, 0}, settled = 0;
    char name[16];

    bed_init(&b, 16, 8);
    for (unsigned i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "vm%u", i);
        bed_dom(&b, i, name, 16, 0, 0, NULL);
    }
    closed_loop(&b, busy, 8, 5, 0);
    CHECK_INT(b.dec[0].count, 16);
    for (unsigned i = 1; i < 8; i++)
        busy[i] = 16;
    for (unsigned s = 1; s <= 20 && !settled; s++) {
        closed_loop(&b, busy, 8, 1, 0);
        unsigned fair = 0;
        for (unsigned i = 0; i < 8; i++)
            fair += b.dec[i].count == 2;
        if (fair == 8)
            settled = s;
    }
    for (unsigned i = 0; i < 8; i++)
        CHECK_MSG(b.dec[i].count == 2, "vm%u holds %u vCPUs (%s), not 2", i, b.dec[i].count,
                  pref(&b, i));
    CHECK_MSG(settled == b.cfg.claim_after, "fair after %u intervals", settled);
    fprintf(stderr, "incumbent: every VM at its fair share %u intervals after the step\n", settled);
    CHECK_INT(closed_loop(&b, busy, 8, 30, 0), 0);
    bed_free(&b);
}

/*
 * The same step with every busy vCPU reading up to 12 % low (noisy_pools' noise): a saturated
 * VM then reads as censored only now and then, so the claims come later; every VM must still
 * reach its fair share.  The intervals it took, over 20 noise seeds, go to stderr.
 */
TEST(incumbent_yields_under_noise)
{
    unsigned took[20];

    for (unsigned seed = 0; seed < 20; seed++) {
        uint64_t x = 0x9e3779b97f4a7c15ULL + seed;
        unsigned busy[8] = {16, 0, 0, 0, 0, 0, 0, 0};
        struct bed b;
        char name[16];

        bed_init(&b, 16, 8);
        b.m.shares_default = 1024;
        for (unsigned i = 0; i < 8; i++) {
            snprintf(name, sizeof(name), "vm%u", i);
            bed_dom(&b, i, name, 16, 0, 0, NULL)->shares = 1024;
        }
        took[seed] = 0;
        for (unsigned s = 0; s < 200 && !took[seed]; s++) {
            unsigned fair = 0;
            if (s == 5)
                for (unsigned i = 1; i < 8; i++)
                    busy[i] = 16;
            feed(&b, busy, 8, 0.12, &x);
            step(&b);
            for (unsigned i = 0; s >= 5 && i < 8; i++)
                fair += b.dec[i].count == 2;
            if (fair == 8)
                took[seed] = s - 4;
        }
        CHECK_MSG(took[seed] > 0, "seed %u: not every VM at 2 vCPUs after 195 intervals", seed);
        bed_free(&b);
    }
    unsigned lo = took[0], hi = took[0];
    for (unsigned i = 1; i < 20; i++) {
        lo = took[i] < lo ? took[i] : lo;
        hi = took[i] > hi ? took[i] : hi;
    }
    fprintf(stderr,
            "incumbent, 12 %% noise: every VM at its fair share %u to %u intervals after "
            "the step (20 seeds):",
            lo, hi);
    for (unsigned i = 0; i < 20; i++)
        fprintf(stderr, " %u", took[i]);
    fprintf(stderr, "\n");
}

/*
 * A claim is a probe: a VM with one busy task fills its one vCPU, claims, leaves the larger set
 * unused, and so waits four times as long for its next claim; once it shows more demand than
 * it did then, the backoff ends.
 */
TEST(unused_claims_back_off_until_demand_grows)
{
    struct bed b;
    unsigned busy[2] = {8, 0}, first = 0;

    bed_init(&b, 8, 2);
    bed_dom(&b, 0, "a", 8, 0, 0, NULL);
    bed_dom(&b, 1, "b", 8, 0, 0, NULL);
    closed_loop(&b, busy, 2, 3, 0);
    busy[1] = 1;
    for (unsigned s = 1; s <= 10 && !first; s++) {
        closed_loop(&b, busy, 2, 1, 0);
        first = b.dec[1].claimed ? s : 0;
    }
    CHECK_MSG(first >= b.cfg.claim_after && first <= b.cfg.claim_after + 2,
              "b's first claim %u intervals after it got busy", first);
    CHECK_MSG(b.dec[1].count > 1, "the claim grew b to %u vCPUs", b.dec[1].count);
    closed_loop(&b, busy, 2, 1, 0);
    CHECK_MSG(b.dec[1].claim_misses == 2, "one task did not use the claim: %u",
              b.dec[1].claim_misses);
    CHECK_INT(closed_loop(&b, busy, 2, 20, 2), 0);
    CHECK_INT(b.dec[1].claim_misses, 2);
    busy[1] = 4;
    closed_loop(&b, busy, 2, 2, 0);
    CHECK_MSG(b.dec[1].claim_misses == 0, "b shows more demand: %u", b.dec[1].claim_misses);
    bed_free(&b);
}

/*
 * A claim only where the fair share gives more vCPUs than the interval's entitlement does: here
 * the censored VM (one busy task on one vCPU) grows to 2 out of the capacity its neighbour
 * leaves, the count its fair share (1.8 CPUs) would give it too, so nothing is claimed, even
 * with claim_after 1, and the neighbour keeps its 3 vCPUs (2 busy tasks, plus headroom) instead
 * of being cut to its fair share of 2 for a claim that changes no count.
 */
TEST(no_claim_where_the_entitlement_already_gives_the_fair_count)
{
    struct bed b;
    unsigned busy[2] = {8, 0};

    bed_init(&b, 4, 2);
    b.cfg.claim_after = 1;
    bed_dom(&b, 0, "a", 8, 0, 0, NULL);
    bed_dom(&b, 1, "b", 8, 0, 0, NULL);
    closed_loop(&b, busy, 2, 3, 0);
    CHECK_INT(b.dec[0].count, 4);
    CHECK_INT(b.dec[1].count, 1);
    busy[0] = 2;
    busy[1] = 1;
    closed_loop(&b, busy, 2, 1, 0);
    CHECK(b.dec[1].censored);
    CHECK_MSG(!b.dec[0].claimed && !b.dec[1].claimed, "claimed: a %d, b %d", b.dec[0].claimed,
              b.dec[1].claimed);
    CHECK_INT(b.dec[1].count, 2);
    CHECK_MSG(b.dec[0].count == 3, "a holds %u vCPUs (%s)", b.dec[0].count, pref(&b, 0));
    /* and none later, as the pool (3 CPUs of demand) calms down and both widen again */
    for (unsigned s = 0; s < 10; s++) {
        closed_loop(&b, busy, 2, 1, 0);
        CHECK_MSG(!b.dec[0].claimed && !b.dec[1].claimed, "interval %u: claimed: a %d, b %d", s,
                  b.dec[0].claimed, b.dec[1].claimed);
    }
    CHECK_INT(b.dec[0].count, 8);
    bed_free(&b);
}

/*
 * Guests that apply hints late.  VM 0 has busy0 busy tasks from the start, the others busy1
 * from interval step_at; each guest runs on the decision `lag` intervals older than the last
 * one (with `period`, it takes the latest decision only every period-th interval and skips the
 * ones between, as a guest reading superseded hints does; from freeze_at on, it applies none)
 * and acknowledges the set it runs on; `hook` may change an interval's sample before the step.
 */
struct late {
    unsigned npcpu, ndom, nvcpu, busy0, busy1, step_at, steps, lag, period, freeze_at;
    double noise;
    uint64_t seed;
    void (*hook)(struct bed *b, unsigned s);
    /* results */
    unsigned misses;      /* decisions holding a missed claim (claim_misses > 0) */
    unsigned first_miss;  /* interval of the first, 0 none */
    unsigned claims;      /* decisions that claimed */
    unsigned changes;     /* preferred-set changes after step_at */
    unsigned converged;   /* intervals from step_at to the last change of any decision */
    unsigned count[16];   /* the last decision's counts */
    unsigned running[16]; /* the counts the guests ran on last */
};

static void run_late(struct late *l)
{
    struct bed b;
    unsigned busy[16] = {0};
    ch_cpuset hist[8][16], on[16]; /* hist[s % 8]: the decision of interval s */
    uint64_t x = 0x9e3779b97f4a7c15ULL + l->seed;
    char name[16];

    CHECK(l->ndom <= 16 && l->lag < 7);
    bed_init(&b, l->npcpu, l->ndom);
    for (unsigned i = 0; i < l->ndom; i++) {
        snprintf(name, sizeof(name), "vm%u", i);
        bed_dom(&b, i, name, l->nvcpu, 0, 0, NULL);
        ch_cpuset_fill(&on[i], l->nvcpu);
    }
    busy[0] = l->busy0;
    l->misses = l->first_miss = l->claims = l->changes = l->converged = 0;
    for (unsigned s = 0; s < l->steps; s++) {
        if (s == l->step_at)
            for (unsigned i = 1; i < l->ndom; i++)
                busy[i] = l->busy1;
        bool take = l->period ? s % l->period == 0 : true;
        if (s >= 1 + l->lag && take && !(l->freeze_at && s >= l->freeze_at))
            memcpy(on, hist[(s - 1 - l->lag) % 8], sizeof(on));
        feed_sets(&b, busy, l->ndom, l->noise, l->noise > 0 ? &x : NULL, on);
        for (unsigned i = 0; i < l->ndom; i++) {
            b.m.dom[i].acked = true;
            b.m.dom[i].applied = on[i];
        }
        if (l->hook)
            l->hook(&b, s);
        step(&b);
        for (unsigned i = 0; i < l->ndom; i++) {
            bool changed = s > 0 && !ch_cpuset_equal(&hist[(s - 1) % 8][i], &b.dec[i].preferred);
            l->misses += b.dec[i].claim_misses > 0;
            l->first_miss = l->first_miss ? l->first_miss : b.dec[i].claim_misses ? s : 0;
            l->claims += b.dec[i].claimed;
            l->changes += changed && s > l->step_at;
            l->converged = changed && s >= l->step_at ? s - l->step_at : l->converged;
            hist[s % 8][i] = b.dec[i].preferred;
            l->count[i] = b.dec[i].count;
            l->running[i] = ch_cpuset_count(&on[i]);
        }
    }
    bed_free(&b);
}

/* The contention step of incumbent_yields_to_censored_newcomers: 8 VMs x 16 on 16 pCPUs. */
static struct late late_step(unsigned lag, unsigned period)
{
    return (struct late){.npcpu = 16,
                         .ndom = 8,
                         .nvcpu = 16,
                         .busy0 = 16,
                         .busy1 = 16,
                         .step_at = 5,
                         .steps = 60,
                         .lag = lag,
                         .period = period};
}

static bool all_at(const struct late *l, unsigned k)
{
    for (unsigned i = 0; i < l->ndom; i++)
        if (l->count[i] != k || l->running[i] != k)
            return false;
    return true;
}

/* The interval after a claim reads 10 % low (TCG noise): a one-task VM must not pass for one
 * that used its claim. */
static void low_after_claim(struct bed *b, unsigned s)
{
    (void)s;
    for (unsigned i = 0; b->dec && i < b->m.ndom; i++)
        for (unsigned v = 0; b->dec[i].claimed && v < b->m.dom[i].nvcpu; v++) {
            b->m.dom[i].vcpu[v].run *= 0.9;
            b->m.dom[i].vcpu[v].wait *= 0.9;
        }
}

/* The interval after a claim brings no acknowledgement (a qemu-ga command failed, the helper
 * was slow to answer) or no measurement (libvirt failed in the middle of the collection). */
static void unacked_after_claim(struct bed *b, unsigned s)
{
    (void)s;
    for (unsigned i = 0; b->dec && i < b->m.ndom; i++)
        b->m.dom[i].acked = !b->dec[i].claimed;
}

static void unmeasured_after_claim(struct bed *b, unsigned s)
{
    (void)s;
    for (unsigned i = 0; b->dec && i < b->m.ndom; i++)
        b->m.dom[i].measured = !b->dec[i].claimed;
}

/*
 * A claim is judged on what the guest applied, not on what it was sent: the intervals right
 * after a claim still show the old set, which is no proof that the VM left the larger one
 * unused.  Guests one and two intervals late, guests that take only every second or third hint,
 * and a late guest whose acknowledgement is missing right after the claim: every VM must run
 * on its fair share (2 vCPUs) and no claim may count as missed.
 */
TEST(claims_judged_on_what_the_guest_applied)
{
    const struct {
        unsigned lag, period;
        void (*hook)(struct bed *b, unsigned s);
    } c[] = {{0, 0, NULL}, {1, 0, NULL}, {2, 0, NULL},
             {0, 2, NULL}, {0, 3, NULL}, {1, 0, unacked_after_claim}};
    struct hd_config dflt;

    cfg_defaults(&dflt);
    for (unsigned k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
        struct late l = late_step(c[k].lag, c[k].period);
        l.hook = c[k].hook;
        run_late(&l);
        CHECK_MSG(all_at(&l, 2), "case %u: not every VM runs on 2 vCPUs", k);
        CHECK_MSG(l.misses == 0,
                  "case %u: %u decisions counted a claim the guest had not "
                  "applied as missed",
                  k, l.misses);
        /* the claim itself, then the guest's delay, then one interval to see it applied */
        CHECK_MSG(l.converged <= dflt.claim_after + 2 * (c[k].lag + c[k].period) + 2,
                  "case %u: sets changed until %u intervals after the step", k, l.converged);
        fprintf(stderr,
                "guests %u late, taking every %u%s: fair, last change %u intervals after "
                "the step, %u set changes\n",
                c[k].lag, c[k].period ? c[k].period : 1,
                c[k].hook ? ", no ack after the claim" : "", l.converged, l.changes);
    }
}

/*
 * While the guest has not applied its claim, the claim stands: with a fair share of 4 (4 VMs x
 * 16 on 16 pCPUs) a newcomer still on its old single vCPU reads as if it wanted 1, and taking
 * the claim back before the guest could use it made the counts swing (1, 4, 2, 4, 3, 4: 22 set
 * changes one interval late, 4 on time; a guest taking every other hint never ran on 4).
 */
TEST(late_claims_stand_until_applied)
{
    const unsigned shape[][2] = {{0, 0}, {1, 0}, {2, 0}, {0, 2}};
    unsigned on_time = 0;

    for (unsigned c = 0; c < sizeof(shape) / sizeof(shape[0]); c++) {
        struct late l = late_step(shape[c][0], shape[c][1]);
        l.ndom = 4;
        run_late(&l);
        on_time = c == 0 ? l.changes : on_time;
        CHECK_MSG(all_at(&l, 4), "lag %u period %u: not every VM runs on 4 vCPUs", shape[c][0],
                  shape[c][1]);
        CHECK_MSG(l.changes <= on_time + 4,
                  "lag %u period %u: %u set changes after the step, "
                  "%u with guests on time",
                  shape[c][0], shape[c][1], l.changes, on_time);
        CHECK_INT(l.misses, 0);
        fprintf(stderr,
                "fair share 4, guests %u late, taking every %u: %u set changes, last "
                "%u intervals after the step\n",
                shape[c][0], shape[c][1] ? shape[c][1] : 1, l.changes, l.converged);
    }
}

/*
 * unused_claims_back_off_until_demand_grows with late guests: VM b, one busy task beside a
 * busy VM on 8 pCPUs, claims, leaves the claim unused once it runs on it, and must have that
 * counted as a miss however late it applies it, with a low reading right after the claim, with
 * a measurement or an acknowledgement missing then, and when it stops applying hints (judged
 * after the wait), and so claim rarely.
 */
TEST(claims_of_a_late_guest_back_off_too)
{
    struct {
        const char *what;
        unsigned lag, freeze_at;
        void (*hook)(struct bed *b, unsigned s);
    } c[] = {
        {"on time", 0, 0, NULL},
        {"1 late", 1, 0, NULL},
        {"2 late", 2, 0, NULL},
        {"2 late, low read after the claim", 2, 0, low_after_claim},
        {"1 late, no ack after the claim", 1, 0, unacked_after_claim},
        {"1 late, no measurement after the claim", 1, 0, unmeasured_after_claim},
        {"applying no hint after the claim", 0, 5, NULL},
    };

    for (unsigned k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
        struct late l = {.npcpu = 8,
                         .ndom = 2,
                         .nvcpu = 8,
                         .busy0 = 8,
                         .busy1 = 1,
                         .step_at = 3,
                         .steps = 43,
                         .lag = c[k].lag,
                         .freeze_at = c[k].freeze_at,
                         .hook = c[k].hook};
        run_late(&l);
        CHECK_MSG(l.first_miss > 0, "%s: b's unused claim was never counted as missed", c[k].what);
        CHECK_MSG(l.claims <= 3, "%s: b claimed %u times in 40 intervals", c[k].what, l.claims);
        fprintf(stderr, "one-task guest %s: first miss at interval %u, %u claims in 40\n",
                c[k].what, l.first_miss, l.claims);
    }
}

/* The counts a policy that knew every VM's real demand (its busy tasks) would give, decided
 * afresh: each VM with that many vCPUs, all busy. */
static void demand_known(unsigned npcpu, unsigned ndom, const unsigned *busy, unsigned *want)
{
    struct bed f;
    char name[16];

    bed_init(&f, npcpu, ndom);
    f.m.shares_default = 1024;
    for (unsigned i = 0; i < ndom; i++) {
        snprintf(name, sizeof(name), "vm%u", i);
        bed_dom(&f, i, name, busy[i] ? busy[i] : 1, busy[i] ? 1 : 0, 0, NULL)->shares = 1024;
    }
    step(&f);
    for (unsigned i = 0; i < ndom; i++)
        want[i] = busy[i] ? f.dec[i].count : 0;
    bed_free(&f);
}

/* What noisy_pools saw: pools that changed a set and the changes, in intervals 30-60 (early)
 * and 170-200 (late); pools ending short of demand_known's counts, random [0], step-shaped [1]. */
struct noisy {
    unsigned vms, early_pools, early_changes, late_pools, late_changes, held[2];
};

/*
 * 400 random pools (2-16 pCPUs, 2-8 VMs of 1-16 vCPUs, each weighing 1 as libvirt's default
 * shares make it) in a closed loop as closed_loop's, for 200 intervals, each busy vCPU reading
 * up to `noise` low (TCG vCPU threads do): the first VM busy alone for 5 intervals, then the
 * others join.  In every other pool each VM is busy on all its vCPUs (the contention step's
 * shape), in the rest on a random number of them.  A pool ends short when its VMs hold 2 vCPUs
 * or more fewer, summed, than demand_known gives.
 */
static struct noisy noisy_pools(unsigned claim, unsigned shrink_after, double noise)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    struct noisy r = {0};

    for (unsigned pool = 0; pool < 400; pool++) {
        struct bed b;
        unsigned npcpu = 2 + (unsigned)(urand(&x) * 15), ndom = 2 + (unsigned)(urand(&x) * 7);
        unsigned busy[8] = {0}, later[8] = {0}, want[8], early = 0, late = 0, short_by = 0;
        char name[16];

        bed_init(&b, npcpu, ndom);
        r.vms += ndom;
        b.cfg.claim_after = claim;
        b.cfg.shrink_after = shrink_after;
        b.m.shares_default = 1024;
        for (unsigned i = 0; i < ndom; i++) {
            unsigned nv = 1 + (unsigned)(urand(&x) * 16);
            snprintf(name, sizeof(name), "vm%u", i);
            later[i] = pool % 2 ? nv : (unsigned)(urand(&x) * (nv + 1));
            bed_dom(&b, i, name, nv, 0, 0, NULL)->shares = 1024;
        }
        busy[0] = later[0];
        for (unsigned s = 0; s < 200; s++) {
            ch_cpuset before[8];

            if (s == 5)
                memcpy(busy, later, sizeof(busy));
            feed(&b, busy, ndom, noise, &x);
            for (unsigned i = 0; b.dec && i < ndom; i++)
                before[i] = b.dec[i].preferred;
            bool had = b.dec != NULL;
            step(&b);
            for (unsigned i = 0; had && i < ndom; i++) {
                unsigned c = !ch_cpuset_equal(&before[i], &b.dec[i].preferred);
                early += s >= 30 && s < 60 ? c : 0;
                late += s >= 170 ? c : 0;
            }
        }
        r.early_pools += early > 0;
        r.early_changes += early;
        r.late_pools += late > 0;
        r.late_changes += late;
        if (b.dec[0].contended) {
            demand_known(npcpu, ndom, busy, want);
            for (unsigned i = 0; i < ndom; i++)
                short_by += b.dec[i].count < want[i] ? want[i] - b.dec[i].count : 0;
            r.held[pool % 2] += short_by >= 2;
        }
        bed_free(&b);
    }
    return r;
}

/*
 * The fair claim (claim_after) under 12 % read noise: it must repair the step-shaped pools that
 * end with VMs held under their fair share, leave no more of the others short, and leave the
 * pools' steady state about as calm as it was.  Early on its probes move sets (a VM that fills
 * its set but wants no more is found out by claiming, then waits four times as long for each
 * unused claim); by intervals 170-200 they must have died down.  With shrink_after 1 (the
 * default) and 2; the figures for the default claim_after and 1000 (never) go to stderr.
 */
TEST(fair_claims_survive_noise)
{
    struct hd_config c;

    cfg_defaults(&c);
    const unsigned claims[] = {1000, c.claim_after};
    for (unsigned sa = 1; sa <= 2; sa++) {
        struct noisy n[2];
        const unsigned def = 1;
        for (unsigned i = 0; i < 2; i++) {
            n[i] = noisy_pools(claims[i], sa, 0.12);
            /* 30 intervals of 1 s: half a minute */
            fprintf(stderr,
                    "shrink_after %u claim_after %4u: %u VMs in 400 pools, changing sets: %3u "
                    "pools, %.3f changes per VM-minute in intervals 30-60, %3u pools, %.3f in "
                    "170-200; ending short: %3u of 200 step-shaped, %3u of 200 others\n",
                    sa, claims[i], n[i].vms, n[i].early_pools, n[i].early_changes * 2.0 / n[i].vms,
                    n[i].late_pools, n[i].late_changes * 2.0 / n[i].vms, n[i].held[1],
                    n[i].held[0]);
        }
        CHECK_MSG(n[0].held[1] >= 20, "without the claim step-shaped pools end short: %u",
                  n[0].held[1]);
        CHECK_MSG(n[def].held[1] * 4 <= n[0].held[1], "the claim repairs most of them: %u -> %u",
                  n[0].held[1], n[def].held[1]);
        CHECK_MSG(n[def].held[0] <= n[0].held[0],
                  "and leaves no more of the others short: %u -> %u", n[0].held[0], n[def].held[0]);
        /* at most 0.02 more changes per VM-minute in steady state */
        CHECK_MSG(n[def].late_changes <= n[0].late_changes + n[def].vms / 100,
                  "steady-state changes %u -> %u (%u VMs)", n[0].late_changes, n[def].late_changes,
                  n[def].vms);
    }
    cfg_free(&c);
}

/* One interval's values for domain i: run and wait on its preferred vCPUs, the others halted. */
static void set_preferred_run(struct bed *b, unsigned i, double run, double wait)
{
    struct model_dom *d = &b->m.dom[i];

    for (unsigned v = 0; v < d->nvcpu; v++) {
        bool pref = ch_cpuset_test(&b->dec[i].preferred, d->vcpu[v].id);
        d->vcpu[v].run = pref ? run : 0;
        d->vcpu[v].wait = pref ? wait : 0;
        d->vcpu[v].halted = !pref;
    }
}

/*
 * Growth is immediate and shrinking waits shrink_after intervals, so a neighbour dipping for
 * one interval costs one blip: a takes the capacity b left (its fair share 0.9 plus headroom
 * sits just under one vCPU, so any dip tips it over), and gives it back shrink_after
 * intervals after b is back; then nothing moves.  Requiring a margin before growing would
 * avoid the blip but traps a saturated VM whose measured demand is capped at its preferred
 * count (the simulator's hackbench scenario lost its fairness that way: Jain 0.999 -> 0.652).
 */
TEST(a_neighbour_dipping_for_one_interval_costs_one_blip)
{
    struct bed b;
    unsigned busy[2] = {2, 2};

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 2, 0, 0, NULL);
    bed_dom(&b, 1, "b", 2, 0, 0, NULL);
    closed_loop(&b, busy, 2, 10, 0);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    set_preferred_run(&b, 0, 1.0, 0);
    set_preferred_run(&b, 1, 0.6, 0);
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(b.dec[1].count, 1);
    unsigned back = 0;
    for (unsigned s = 1; s <= 10 && !back; s++) {
        closed_loop(&b, busy, 2, 1, 0);
        if (b.dec[0].count == 1)
            back = s;
    }
    CHECK_MSG(back >= 1 && back <= b.cfg.shrink_after + 1, "a back at 1 vCPU after %u intervals",
              back);
    CHECK_INT(closed_loop(&b, busy, 2, 30, 0), 0);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    bed_free(&b);
}

/*
 * Seen in e2e on TCG: two guests shrunk to one vCPU each, both still busy, measure 0.84 to
 * 0.96 CPUs on it (the vCPU thread sleeps on qemu's locks), just under saturation and summing
 * to about the pool's target (1.8 of 2 pCPUs).  Without hysteresis the pool flipped to
 * uncontended, both guests widened, contention came back, and so on every few seconds.
 */
TEST(contention_ends_only_clearly_below_capacity)
{
    static const double noise[] = {0.84, 0.93, 0.88, 0.96, 0.86, 0.90, 0.85, 0.92};
    struct bed b;
    unsigned busy[2] = {2, 2}, changes = 0;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 2, 0, 0, NULL);
    bed_dom(&b, 1, "b", 2, 0, 0, NULL);
    closed_loop(&b, busy, 2, 10, 0);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    for (unsigned s = 0; s < 40; s++) {
        ch_cpuset p0 = b.dec[0].preferred, p1 = b.dec[1].preferred;
        set_preferred_run(&b, 0, noise[s % 8], 0);
        set_preferred_run(&b, 1, noise[(s + 3) % 8], 0);
        step(&b);
        if (!ch_cpuset_equal(&p0, &b.dec[0].preferred) ||
            !ch_cpuset_equal(&p1, &b.dec[1].preferred))
            fprintf(stderr, "step %u: %s %s (%.2f %.2f) cens %d %d ent %.2f %.2f\n", s, pref(&b, 0),
                    pref(&b, 1), b.dec[0].demand, b.dec[1].demand, b.dec[0].censored,
                    b.dec[1].censored, b.dec[0].entitlement, b.dec[1].entitlement);
        changes +=
            !ch_cpuset_equal(&p0, &b.dec[0].preferred) + !ch_cpuset_equal(&p1, &b.dec[1].preferred);
        CHECK_MSG(b.dec[0].contended, "step %u: still contended at %.2f + %.2f", s, b.dec[0].demand,
                  b.dec[1].demand);
    }
    CHECK_INT(changes, 0);
    /* one low sample (seen on TCG: 0.3 + 0.3 for one interval, then 1.8) is not the end */
    set_preferred_run(&b, 0, 0.3, 0);
    set_preferred_run(&b, 1, 0.3, 0);
    step(&b);
    CHECK(b.dec[0].contended);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    set_preferred_run(&b, 0, 0.9, 0);
    set_preferred_run(&b, 1, 0.9, 0);
    step(&b);
    CHECK(b.dec[0].contended);
    CHECK_INT(b.dec[0].count, 1);
    /* both really quieten: uncontended after release_after (2) quiet intervals, every vCPU
     * back */
    set_preferred_run(&b, 0, 0.5, 0);
    set_preferred_run(&b, 1, 0.4, 0);
    step(&b);
    CHECK(b.dec[0].contended);
    step(&b);
    CHECK(!b.dec[0].contended);
    CHECK_INT(b.dec[0].count, 2);
    CHECK_INT(b.dec[1].count, 2);
    bed_free(&b);
}

TEST(halted_vcpus_demand_nothing)
{
    struct bed b;

    bed_init(&b, 2, 2);
    struct model_dom *d = bed_dom(&b, 0, "a", 4, 0.5, 0.5, NULL);
    d->vcpu[2].halted = d->vcpu[3].halted = true;
    bed_dom(&b, 1, "idle", 4, 0.0, 0.0, NULL);
    step(&b);
    CHECK(b.dec[0].demand > 1.99 && b.dec[0].demand < 2.01);
    bed_free(&b);
}

TEST(non_compliance_is_marked)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "rebel", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "good", 2, 0.5, 0.5, NULL);
    b.cfg.shrink_after = 1;
    step(&b); /* hint: {0} for both */
    ack(&b);
    CHECK_INT(b.dec[0].count, 1);
    /* rebel keeps using vCPU 1; good halts it */
    b.m.dom[1].vcpu[1].run = b.m.dom[1].vcpu[1].wait = 0;
    b.m.dom[1].vcpu[1].halted = true;
    step(&b); /* grace interval */
    ack(&b);
    CHECK_INT(b.dec[0].violations, 0);
    step(&b);
    ack(&b);
    step(&b);
    ack(&b);
    CHECK_INT(b.dec[0].violations, 2);
    CHECK(!b.dec[0].non_compliant);
    step(&b);
    ack(&b);
    CHECK_INT(b.dec[0].violations, 3);
    CHECK(b.dec[0].non_compliant);
    CHECK(!b.dec[1].non_compliant);
    CHECK_INT(b.dec[1].violations, 0);
    /* a new hint (the set changes) does not wipe the record during its grace interval */
    b.dec[0].age = 0;
    step(&b);
    ack(&b);
    CHECK(b.dec[0].non_compliant);
    CHECK_INT(b.dec[0].violations, 3);
    /* it complies: the mark goes */
    b.m.dom[0].vcpu[1].run = 0.01;
    step(&b);
    ack(&b);
    CHECK(!b.dec[0].non_compliant);
    bed_free(&b);
}

TEST(compliance_judged_only_against_acknowledged_hints)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "unheard", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "liar", 2, 0.5, 0.5, NULL);
    b.cfg.shrink_after = 1;
    step(&b); /* hint: one vCPU each */
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    /* "unheard" never acknowledged a hint (no helper, fallback, hints dropped): it was never
     * told to keep off a vCPU, so running both is no violation, however long it lasts.
     * "liar" acknowledges every hint but says it applied both vCPUs (a modified helper): it is
     * judged against the set hostd hinted, and an "applied" wider than that set is a violation
     * in itself, so it is non-compliant after compliance_intervals like an honest rebel. */
    b.m.dom[1].acked = true;
    ch_cpuset_zero(&b.m.dom[1].applied);
    ch_cpuset_set(&b.m.dom[1].applied, 0);
    ch_cpuset_set(&b.m.dom[1].applied, 1);
    for (int i = 0; i < 6; i++)
        step(&b);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[0].violations, 0);
    CHECK(!b.dec[0].non_compliant);
    CHECK_INT(b.dec[1].count, 1);
    CHECK(b.dec[1].non_compliant);
    /* the same liar running only the hinted vCPU: still a violation (it says it applied more) */
    b.m.dom[1].vcpu[1].run = b.m.dom[1].vcpu[1].wait = 0;
    b.m.dom[1].vcpu[1].halted = true;
    step(&b);
    CHECK(b.dec[1].non_compliant);
    /* once "unheard" acknowledges its hint and keeps running the other vCPU, it is judged */
    for (int i = 0; i < 5; i++) {
        ack(&b);
        step(&b);
    }
    CHECK(b.dec[0].non_compliant);
    /* and the liar, reporting what it was told and keeping to it, is compliant again */
    CHECK_MSG(!b.dec[1].non_compliant, "liar turned honest: %u violations", b.dec[1].violations);
    bed_free(&b);
}

TEST(unmeasured_domain_keeps_previous_decision)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 2, 0.5, 0.5, NULL);
    bed_dom(&b, 1, "b", 2, 0.5, 0.5, NULL);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 1);
    b.m.dom[0].measured = false;
    step(&b);
    CHECK_STR(pol_reason_name(b.dec[0].reason), "no-data");
    CHECK_INT(b.dec[0].count, 1);
    CHECK_STR(pref(&b, 0), "0");
    bed_free(&b);
}

TEST(min_cpus_and_vcpu_zero)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "a", 4, 0.25, 0.75, "pin");
    bed_dom(&b, 1, "b", 4, 0.25, 0.75, "pin");
    b.cfg.min_cpus = 2;
    b.cfg.shrink_after = 1;
    /* vCPU 0's pCPU is the most contended, it is still chosen */
    b.m.dom[0].vcpu[0].wait = 0.99;
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK(ch_cpuset_test(&b.dec[0].preferred, 0));
    bed_free(&b);
}

/* Every VM of the bed reports every vCPU as a housekeeping CPU (a current guest helper). */
static void all_housekeeping(struct bed *b)
{
    for (unsigned i = 0; i < b->m.ndom; i++)
        for (unsigned v = 0; v < b->m.dom[i].nvcpu; v++)
            ch_cpuset_set(&b->m.dom[i].housekeeping, b->m.dom[i].vcpu[v].id);
}

/* The entitled load the decisions put on each pCPU: entitlement / count per preferred vCPU on
 * its home; returns the busiest pCPU's. */
static double booked_max(const struct bed *b, double *max_share)
{
    double load[64] = {0}, max = 0;

    *max_share = 0;
    for (unsigned i = 0; i < b->m.ndom; i++) {
        const struct pol_decision *o = &b->dec[i];
        double u = o->count ? o->entitlement / o->count : 0;
        if (u > *max_share)
            *max_share = u;
        for (unsigned v = 0; v < b->m.dom[i].nvcpu; v++)
            if (ch_cpuset_test(&o->preferred, b->m.dom[i].vcpu[v].id))
                load[b->m.dom[i].vcpu[v].home] += u;
    }
    for (unsigned p = 0; p < b->m.npcpu; p++)
        if (load[p] > max)
            max = load[p];
    return max;
}

TEST(pinned_demo_layout_one_vm_per_pcpu)
{
    struct bed b;

    /* the demo: 2 host CPUs, two busy 2-vCPU guests, vCPU n of both pinned to host CPU n */
    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "one", 2, 0.5, 0.5, "pin");
    bed_dom(&b, 1, "two", 2, 0.5, 0.5, "pin");
    all_housekeeping(&b);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 1);
    CHECK_INT(b.dec[1].count, 1);
    CHECK_MSG(!ch_cpuset_equal(&b.dec[0].preferred, &b.dec[1].preferred),
              "both guests prefer vCPU %s: stacked on one host CPU", pref(&b, 0));
    /* the next interval, same load: nothing moves */
    ch_cpuset first = b.dec[0].preferred;
    step(&b);
    CHECK(ch_cpuset_equal(&b.dec[0].preferred, &first));
    CHECK(!ch_cpuset_equal(&b.dec[0].preferred, &b.dec[1].preferred));
    bed_free(&b);
}

TEST(housekeeping_cpu_honoured)
{
    struct bed b;

    /* helpers that report no housekeeping CPUs: vCPU 0 must stay in every set, even stacked */
    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "one", 2, 0.5, 0.5, "pin");
    bed_dom(&b, 1, "two", 2, 0.5, 0.5, "pin");
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_STR(pref(&b, 0), "0");
    CHECK_STR(pref(&b, 1), "0");
    bed_free(&b);

    /* a guest whose housekeeping CPUs are 2-3 (nohz_full=0-1) gets one of them */
    bed_init(&b, 4, 2);
    bed_dom(&b, 0, "a", 4, 0.5, 0.5, "pin");
    bed_dom(&b, 1, "b", 4, 0.5, 0.5, "pin");
    ch_cpulist_parse("2-3", 3, &b.m.dom[0].housekeeping);
    ch_cpulist_parse("0-3", 3, &b.m.dom[1].housekeeping);
    b.cfg.shrink_after = 1;
    step(&b);
    CHECK_INT(b.dec[0].count, 2);
    CHECK(ch_cpuset_test(&b.dec[0].preferred, 2) || ch_cpuset_test(&b.dec[0].preferred, 3));
    bed_free(&b);
}

TEST(stacked_placement_repaired_in_one_interval)
{
    struct bed b;

    bed_init(&b, 2, 2);
    bed_dom(&b, 0, "one", 2, 0.5, 0.5, "pin");
    bed_dom(&b, 1, "two", 2, 0.5, 0.5, "pin");
    b.cfg.shrink_after = 1;
    step(&b); /* old helpers: both on vCPU 0, host CPU 0 */
    CHECK(ch_cpuset_equal(&b.dec[0].preferred, &b.dec[1].preferred));
    all_housekeeping(&b); /* the helpers are upgraded and say hello again */
    step(&b);
    CHECK_MSG(!ch_cpuset_equal(&b.dec[0].preferred, &b.dec[1].preferred),
              "still stacked after one interval: %s and %s", pref(&b, 0), pref(&b, 1));
    bed_free(&b);
}

TEST(good_placement_kept_under_noise)
{
    struct bed b;

    bed_init(&b, 4, 4);
    for (unsigned i = 0; i < 4; i++)
        bed_dom(&b, i, "vm", 4, 0.5, 0.5, "pin");
    all_housekeeping(&b);
    b.cfg.shrink_after = 1;
    step(&b);
    ch_cpuset before[4];
    for (unsigned i = 0; i < 4; i++)
        before[i] = b.dec[i].preferred;
    /* a little noise on one host CPU's vCPUs: nothing is better, nobody moves (previous sets
     * win ties; a policy that placed afresh in another order would move VMs here) */
    for (unsigned i = 0; i < 4; i++)
        b.m.dom[i].vcpu[1].run += 0.02 * (i + 1);
    step(&b);
    for (unsigned i = 0; i < 4; i++)
        CHECK_MSG(ch_cpuset_equal(&before[i], &b.dec[i].preferred), "vm %u moved to %s", i,
                  pref(&b, i));
    bed_free(&b);
}

/* Pinned 1:1 (and vCPUs doubled up on host CPUs) on 2, 4 and 8 pCPUs with 2..8 busy VMs: the
 * busiest pCPU carries no more than the mean plus one VM's per-vCPU share (the list-scheduling
 * bound), whatever k the entitlements give (1, 2, 3 and 4 all occur). */
TEST(pinned_layouts_balance_the_busiest_pcpu)
{
    static const unsigned npcpus[] = {2, 4, 8};
    unsigned seen_k[9] = {0};

    for (size_t a = 0; a < ARRAY_SIZE(npcpus); a++)
        for (unsigned vcpus_per_pcpu = 1; vcpus_per_pcpu <= 2; vcpus_per_pcpu++)
            for (unsigned ndom = 2; ndom <= 8; ndom++) {
                unsigned np = npcpus[a], nv = np * vcpus_per_pcpu;
                struct bed b;
                double total = 0, max_share, max;

                bed_init(&b, np, ndom);
                for (unsigned i = 0; i < ndom; i++)
                    bed_dom(&b, i, "vm", nv, 0.5, 0.5, "pin");
                all_housekeeping(&b);
                b.cfg.shrink_after = 1;
                step(&b);
                for (unsigned i = 0; i < ndom; i++) {
                    const struct pol_decision *o = &b.dec[i];
                    if (o->count < o->nvcpu)
                        total += o->entitlement;
                    if (o->count <= 8)
                        seen_k[o->count]++;
                }
                max = booked_max(&b, &max_share);
                CHECK_MSG(max <= total / np + max_share + 1e-9,
                          "%u pCPUs, %u VMs x %u vCPUs: busiest pCPU %.3f > mean %.3f + share %.3f",
                          np, ndom, nv, max, total / np, max_share);
                /* and a second step keeps it */
                step(&b);
                CHECK(booked_max(&b, &max_share) <= total / np + max_share + 1e-9);
                bed_free(&b);
            }
    CHECK(seen_k[1] && seen_k[2] && seen_k[3]);
}

/*
 * A light VM whose entitlement (its demand: it is under the pool's water level) sits near a
 * whole number, read with up to 12 % noise, beside two VMs that fill a contended pool: its
 * need (3 busy vCPUs read up to 12 % low, + 10 % headroom: 2.9 to 3.3) straddles 3.  Its count
 * follows the held need (hold_band), so the noise does not flip it between 3 and 4; without
 * it, it changed 10 times in 120 intervals.  The busy VMs' censored sets are not judged here.
 */
TEST(noise_near_a_whole_number_does_not_flip_the_count)
{
    struct bed b;
    unsigned busy[3] = {3, 8, 8}, changes = 0, counts[17] = {0};
    uint64_t x = 0x9e3779b97f4a7c15ULL;

    bed_init(&b, 16, 3);
    bed_dom(&b, 0, "light", 8, 0, 0, NULL);
    bed_dom(&b, 1, "busy1", 8, 0, 0, NULL);
    bed_dom(&b, 2, "busy2", 8, 0, 0, NULL);
    for (unsigned s = 0; s < 130; s++) {
        unsigned before = b.dec ? b.dec[0].count : 0;
        feed(&b, busy, 3, 0.12, &x);
        step(&b);
        if (s >= 10) {
            changes += b.dec[0].count != before;
            counts[b.dec[0].count]++;
        }
    }
    fprintf(stderr,
            "light VM, need 2.9-3.3 with 12 %% noise: %u count changes in 120 intervals "
            "(3: %u, 4: %u)\n",
            changes, counts[3], counts[4]);
    CHECK(b.dec[0].contended);
    CHECK_MSG(changes <= 1, "%u count changes in 120 intervals", changes);
    CHECK(b.dec[0].count == 3 || b.dec[0].count == 4);
    bed_free(&b);
}

/*
 * A stack away from the busiest pCPU (issue #37's finding 1): four 8-vCPU VMs pinned 1:1 on 8
 * pCPUs, two busy tasks each, shrunk to 2 vCPUs before their helpers said hello (vCPU 0 the
 * only housekeeping CPU known: all four prefer vCPU 0, so pCPU 0 carries four preferred
 * vCPUs), while three 1-vCPU VMs pinned to pCPU 7 make it the busiest pCPU whatever the
 * 8-vCPU VMs prefer.  Once the hellos say every vCPU is housekeeping, the stack must be
 * repaired: a fresh placement takes a CPU of load off pCPU 0 even though it cannot lower
 * pCPU 7.  The old rule compared the busiest pCPU only and kept the stack for good.
 */
TEST(stack_repaired_when_the_busiest_pcpu_is_elsewhere)
{
    struct bed b;
    char name[16];
    unsigned on[8] = {0};

    bed_init(&b, 8, 7);
    b.m.shares_default = 1024; /* equal weights: every VM has the same cpu_shares */
    for (unsigned i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "wide%u", i);
        bed_dom(&b, i, name, 8, 0.25, 0.0, "pin")->shares = 1024; /* 2 tasks over 8 vCPUs */
    }
    for (unsigned i = 4; i < 7; i++) {
        snprintf(name, sizeof(name), "small%u", i);
        bed_dom(&b, i, name, 1, 0.34, 0.66, "7")->shares = 1024;
    }
    step(&b); /* no hellos: vCPU 0 is the housekeeping CPU of every VM */
    for (unsigned i = 0; i < 4; i++) {
        CHECK_INT(b.dec[i].count, 2);
        CHECK(ch_cpuset_test(&b.dec[i].preferred, 0));
    }
    /* each guest runs on its preferred vCPUs: vCPU 0 (pCPU 0, four VMs: a quarter of a CPU
     * each, the rest waiting) and, half of the time, one pCPU of its own (1.5 CPUs of 2: not
     * saturated, so its count holds and its placement is judged, not its demand) */
    for (unsigned i = 0; i < 4; i++)
        for (unsigned v = 0; v < 8; v++) {
            bool pref_v = ch_cpuset_test(&b.dec[i].preferred, v);
            b.m.dom[i].vcpu[v].run = !pref_v ? 0 : v == 0 ? 0.25 : 0.5;
            b.m.dom[i].vcpu[v].wait = pref_v && v == 0 ? 0.75 : 0;
            b.m.dom[i].vcpu[v].halted = !pref_v;
        }
    ack(&b);
    all_housekeeping(&b); /* the helpers say hello */
    step(&b);
    for (unsigned i = 0; i < 4; i++)
        for (unsigned v = 0; v < 8; v++)
            on[v] += ch_cpuset_test(&b.dec[i].preferred, v);
    for (unsigned i = 0; i < 4; i++)
        CHECK_MSG(b.dec[i].count == 2 && !b.dec[i].censored, "%s: %u vCPUs, censored %d",
                  pref(&b, i), b.dec[i].count, b.dec[i].censored);
    CHECK_MSG(on[0] <= 2, "still stacked: %s %s %s %s (pCPU 0 carries %u preferred vCPUs)",
              pref(&b, 0), pref(&b, 1), pref(&b, 2), pref(&b, 3), on[0]);
    bed_free(&b);
}
