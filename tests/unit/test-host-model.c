// SPDX-License-Identifier: LGPL-2.1-or-later
/* model: deltas between hand-built snapshots, resets, vanished vCPUs and domains, pools. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "collect.h"
#include "model.h"
#include "engine.h"
#include "record.h"

#define S 1000000000ull

static struct snapshot *snap(uint64_t t, unsigned npcpu)
{
    struct snapshot *s = snap_new();

    s->t_ns = t;
    s->npcpu = npcpu;
    s->pcpu = calloc(npcpu, sizeof(*s->pcpu));
    s->dom = calloc(8, sizeof(*s->dom));
    return s;
}

static struct snap_dom *dom(struct snapshot *s, const char *uuid, unsigned nvcpu)
{
    struct snap_dom *d = &s->dom[s->ndom++];

    snprintf(d->name, sizeof(d->name), "vm-%s", uuid);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
    d->threads = 1;
    d->nvcpu = nvcpu;
    d->vcpu = calloc(nvcpu, sizeof(*d->vcpu));
    for (unsigned v = 0; v < nvcpu; v++)
        d->vcpu[v] = (struct snap_vcpu){.id = v, .online = true, .pcpu = -1, .has_delay = true};
    return d;
}

static void pin(struct snap_vcpu *v, const char *list)
{
    ch_cpuset cs;

    ch_cpulist_parse(list, strlen(list), &cs);
    pset_from_cpuset(&v->affinity, &cs);
}

TEST(rates_from_deltas)
{
    struct snapshot *a = snap(10 * S, 2), *b = snap(12 * S, 2);
    struct model m;

    dom(a, "u1", 2);
    struct snap_dom *d = dom(b, "u1", 2);
    d->vcpu[0].time_ns = S;      /* 1 s of 2: run 0.5 */
    d->vcpu[0].delay_ns = S / 2; /* wait 0.25 */
    d->vcpu[0].pcpu = 1;
    d->vcpu[1].time_ns = 3 * S; /* more than the interval: clamped to 1 */
    d->vcpu[1].pcpu = 1;
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK(m.interval_s > 1.99 && m.interval_s < 2.01);
    CHECK_INT(m.ndom, 1);
    CHECK(m.dom[0].measured);
    CHECK(m.dom[0].vcpu[0].run > 0.49 && m.dom[0].vcpu[0].run < 0.51);
    CHECK(m.dom[0].vcpu[0].wait > 0.24 && m.dom[0].vcpu[0].wait < 0.26);
    CHECK(m.dom[0].vcpu[1].run > 0.99 && m.dom[0].vcpu[1].run < 1.01);
    CHECK(m.dom[0].demand > 1.74 && m.dom[0].demand < 1.76);
    /* both float over both pCPUs: their wait, and (no node stats) their run, are spread over
     * them, not charged to pCPU 1 where they were sampled */
    CHECK(m.pcpu_wait[0] > 0.124 && m.pcpu_wait[0] < 0.126);
    CHECK(m.pcpu_wait[1] > 0.124 && m.pcpu_wait[1] < 0.126);
    CHECK(m.pcpu_busy[0] > 0.74 && m.pcpu_busy[0] < 0.76);
    CHECK(m.pcpu_contention[1] > 0.874 && m.pcpu_contention[1] < 0.876);
    CHECK_INT(m.dom[0].vcpu[0].home, -1);
    CHECK_INT(m.dom[0].vcpu[0].last, 1);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

TEST(counter_reset_is_not_measured)
{
    struct snapshot *a = snap(S, 2), *b = snap(2 * S, 2);
    struct model m;

    struct snap_dom *d = dom(a, "u1", 2);
    d->vcpu[0].time_ns = 50 * S;
    d->vcpu[1].delay_ns = 50 * S;
    d = dom(b, "u1", 2);
    d->vcpu[0].time_ns = S / 10; /* restarted */
    d->vcpu[1].time_ns = S / 2;
    d->vcpu[1].delay_ns = S / 10; /* delay went backwards */
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK(!m.dom[0].vcpu[0].measured);
    CHECK(!m.dom[0].vcpu[1].measured);
    CHECK(!m.dom[0].measured);
    CHECK(m.dom[0].demand < 0.001);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

TEST(vanished_and_new_vcpus_and_domains)
{
    struct snapshot *a = snap(S, 4), *b = snap(2 * S, 4);
    struct model m;

    dom(a, "gone", 2);
    dom(a, "shrunk", 3);
    dom(a, "grown", 1);
    struct snap_dom *d = dom(b, "shrunk", 2); /* vCPU 2 unplugged */
    d->vcpu[1].time_ns = S / 2;
    dom(b, "grown", 2); /* vCPU 1 plugged: no history */
    dom(b, "new", 1);
    d = dom(b, "offline", 2);
    d->vcpu[1].online = false;
    snap_sort(a);
    snap_sort(b);
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK_INT(m.ndom, 4);
    for (unsigned i = 0; i < m.ndom; i++) {
        const struct model_dom *md = &m.dom[i];
        if (strcmp(md->uuid, "shrunk") == 0) {
            CHECK(md->measured);
            CHECK_INT(md->nvcpu, 2);
            CHECK(md->run > 0.49 && md->run < 0.51);
        } else if (strcmp(md->uuid, "grown") == 0) {
            CHECK(!md->measured);
            CHECK(md->vcpu[0].measured);
            CHECK(!md->vcpu[1].measured);
        } else if (strcmp(md->uuid, "new") == 0) {
            CHECK(!md->measured);
        } else {
            CHECK_STR(md->uuid, "offline");
            CHECK_INT(md->nvcpu, 1); /* offline vCPUs are not the guest's to prefer */
        }
    }
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

TEST(time_must_advance)
{
    struct snapshot *a = snap(5 * S, 1), *b = snap(5 * S, 1);
    struct model m;

    CHECK_INT(model_build(&m, a, b), -EINVAL);
    CHECK_INT(model_build(&m, NULL, b), 0); /* first sample: nothing measured */
    CHECK_INT(m.ndom, 0);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

TEST(pools_are_components_of_pinning)
{
    struct snapshot *a = snap(S, 8), *b = snap(2 * S, 8);
    struct model m;

    for (int k = 0; k < 2; k++) {
        struct snapshot *s = k ? b : a;
        struct snap_dom *d = dom(s, "a", 2);
        pin(&d->vcpu[0], "0");
        pin(&d->vcpu[1], "1");
        d = dom(s, "b", 1);
        pin(&d->vcpu[0], "1-2");
        d = dom(s, "c", 1);
        pin(&d->vcpu[0], "5");
        d = dom(s, "d", 1);
        pin(&d->vcpu[0], "5-6");
    }
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK_INT(m.npool, 2);
    CHECK_INT(m.dom[0].pool, 0);
    CHECK_INT(m.dom[1].pool, 0);
    CHECK_INT(m.dom[2].pool, 1);
    CHECK_INT(m.dom[3].pool, 1);
    CHECK_INT(m.pool[0].ncpu, 3);
    CHECK_INT(m.pool[1].ncpu, 2);
    CHECK_INT(m.dom[0].vcpu[1].home, 1); /* pinned to one pCPU: that is its home */
    model_free(&m);
    snap_free(a);
    snap_free(b);

    /* an unpinned VM can run anywhere: everything joins one pool */
    a = snap(S, 8);
    b = snap(2 * S, 8);
    for (int k = 0; k < 2; k++) {
        struct snapshot *s = k ? b : a;
        struct snap_dom *d = dom(s, "a", 1);
        pin(&d->vcpu[0], "0");
        dom(s, "b", 1);
    }
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK_INT(m.npool, 1);
    CHECK_INT(m.pool[0].ncpu, 8);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

/* Without schedstat: a pinned vCPU's wait on its pCPU, a floating one's spread evenly over
 * its affinity, never on the pCPU it happened to be on when sampled. */
TEST(floating_wait_spread_over_affinity)
{
    struct snapshot *a = snap(S, 4), *b = snap(2 * S, 4);
    struct model m;

    for (int k = 0; k < 2; k++) {
        struct snap_dom *d = dom(k ? b : a, "a", 3);
        pin(&d->vcpu[0], "0-3");
        pin(&d->vcpu[1], "1");
        pin(&d->vcpu[2], "2-3");
        d->vcpu[0].pcpu = 3;
        d->vcpu[2].pcpu = 3;
        if (k) {
            d->vcpu[0].delay_ns = 4 * S / 10;
            d->vcpu[1].delay_ns = 2 * S / 10;
            d->vcpu[2].delay_ns = 2 * S / 10;
        }
    }
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK(!m.has_schedstat);
    CHECK_INT(m.dom[0].vcpu[0].home, -1);
    CHECK_INT(m.dom[0].vcpu[1].home, 1);
    CHECK(m.dom[0].vcpu[0].wide && !m.dom[0].vcpu[2].wide);
    CHECK_INT(m.dom[0].nspan, 4);
    static const double want[4] = {0.1, 0.3, 0.2, 0.2};
    for (unsigned p = 0; p < 4; p++)
        CHECK_MSG(m.pcpu_wait[p] > want[p] - 1e-6 && m.pcpu_wait[p] < want[p] + 1e-6,
                  "pCPU %u wait %.4f, want %.4f", p, m.pcpu_wait[p], want[p]);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

/* With schedstat, a pCPU's wait is what its run queue integrated over the interval: a
 * floating vCPU's wait is in there already and is not added again; a pinned vCPU's own
 * counter, read a moment apart, only ever raises it. */
TEST(schedstat_is_the_pcpu_wait)
{
    struct snapshot *a = snap(S, 2), *b = snap(2 * S, 2);
    struct model m;

    a->has_schedstat = b->has_schedstat = true;
    a->pcpu[0].wait_ns = 10 * S;
    b->pcpu[0].wait_ns = 10 * S + S / 2;
    a->pcpu[1].wait_ns = 3 * S;
    b->pcpu[1].wait_ns = 3 * S + S / 10;
    for (int k = 0; k < 2; k++) {
        struct snap_dom *d = dom(k ? b : a, "a", 2);
        pin(&d->vcpu[1], "1");
        d->vcpu[0].pcpu = 0;
        if (k) {
            d->vcpu[0].delay_ns = 4 * S / 10;
            d->vcpu[1].delay_ns = 3 * S / 10;
        }
    }
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK(m.has_schedstat);
    CHECK_MSG(m.pcpu_wait[0] > 0.499 && m.pcpu_wait[0] < 0.501, "pCPU 0 wait %.4f", m.pcpu_wait[0]);
    CHECK_MSG(m.pcpu_wait[1] > 0.299 && m.pcpu_wait[1] < 0.301, "pCPU 1 wait %.4f", m.pcpu_wait[1]);
    CHECK(m.pcpu_rqwait[1] > 0.099 && m.pcpu_rqwait[1] < 0.101);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

TEST(node_stats_and_halted)
{
    struct snapshot *a = snap(S, 2), *b = snap(2 * S, 2);
    struct model m;

    a->has_pcpu_stats = b->has_pcpu_stats = true;
    b->pcpu[0].busy_ns = 3 * S / 4;
    b->pcpu[0].idle_ns = S / 4;
    dom(a, "a", 1);
    struct snap_dom *d = dom(b, "a", 1);
    d->vcpu[0].has_halted = true;
    d->vcpu[0].halted = true;
    d->vcpu[0].time_ns = S / 100;
    d->vcpu[0].delay_ns = S / 5;
    CHECK_INT(model_build(&m, a, b), 0);
    CHECK(m.has_node_stats);
    CHECK(m.pcpu_busy[0] > 0.74 && m.pcpu_busy[0] < 0.76);
    CHECK(m.dom[0].vcpu[0].halted);
    CHECK(m.dom[0].demand < 0.001);
    model_free(&m);
    snap_free(a);
    snap_free(b);
}

TEST(proc_parsers)
{
    struct snap_pcpu pc[2] = {{0}};
    uint64_t total = 0;

    CHECK_INT(col_parse_schedstat("version 15\ntimestamp 1\n"
                                  "cpu0 0 0 10 2 3 4 1000 2000 7\ndomain0 3 1 2 3\n"
                                  "cpu1 0 0 10 2 3 4 1000 4000 7\ncpu9 0 0 1 1 1 1 1 1 1\n",
                                  pc, 2),
              0);
    CHECK_INT(pc[0].wait_ns, 2000);
    CHECK_INT(pc[1].wait_ns, 4000);
    CHECK_INT(col_parse_schedstat("garbage", pc, 2), -EINVAL);
    CHECK_INT(col_parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=123456\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                            &total),
              0);
    CHECK_INT(total, 123456);
    CHECK_INT(col_parse_psi("nothing here", &total), -EINVAL);
}

TEST(record_round_trip)
{
    struct snapshot *a = snap(7 * S, 4), *back = NULL;
    char err[256];

    a->has_pcpu_stats = true;
    a->pcpu[2].busy_ns = 42;
    struct snap_dom *d = dom(a, "11111111-2222-3333-4444-555555555555", 2);
    d->threads = 2;
    d->shares = 2048;
    snprintf(d->channel, sizeof(d->channel), "/run/x.sock");
    d->vcpu[1].time_ns = 99;
    d->vcpu[1].delay_ns = 7;
    d->vcpu[1].pcpu = 3;
    pin(&d->vcpu[1], "1-3");
    ch_cpuset_set(&d->housekeeping, 1);
    char *line = rec_format(a);
    CHECK(line != NULL);
    CHECK_INT(rec_parse(line, &back, err, sizeof(err)), 0);
    CHECK(back != NULL);
    if (back) {
        char *again = rec_format(back);
        CHECK_STR(again, line);
        free(again);
        CHECK_INT(back->dom[0].vcpu[1].pcpu, 3);
        CHECK_INT(pset_count(&back->dom[0].vcpu[1].affinity), 3);
        CHECK_STR(back->dom[0].channel, "/run/x.sock");
        CHECK(ch_cpuset_test(&back->dom[0].housekeeping, 1));
        CHECK_INT(ch_cpuset_count(&back->dom[0].housekeeping), 1);
    }
    free(line);
    snap_free(back);
    snap_free(a);

    CHECK_INT(rec_parse("{\"t_ns\":1}", &back, err, sizeof(err)), -EINVAL);
    CHECK_STR(err, "\"npcpu\" missing or 0");
    CHECK_INT(rec_parse("{\"t_ns\":1,\"npcpu\":2,\"domains\":[{\"name\":\"x\",\"uuid\":\"u\","
                        "\"vcpus\":[{\"id\":0,\"pcpu\":5}]}]}",
                        &back, err, sizeof(err)),
              -EINVAL);
    CHECK_STR(err, "vcpu 0: \"pcpu\" must be -1 or below npcpu");
    /* A state past INT_MAX used to wrap to a negative int that the next parse refused
     * (fuzz-record; corpus seed regress-state-int-overflow). */
    CHECK_INT(rec_parse("{\"t_ns\":1,\"npcpu\":1,\"domains\":[{\"name\":\"x\",\"uuid\":\"u\","
                        "\"state\":2147483648,\"vcpus\":[]}]}",
                        &back, err, sizeof(err)),
              -EINVAL);
    CHECK_STR(err, "\"state\" out of range (max 2147483647)");
    CHECK_INT(rec_parse("[1,", &back, err, sizeof(err)), -EINVAL);
    CHECK(strncmp(err, "bad JSON", 8) == 0);
}

/* After a stalled libvirt call the next tick comes early: live sampling skips a sample that
 * follows the previous one by less than half an interval rather than deciding on it. */
TEST(sample_too_soon_is_skipped)
{
    struct hd_config cfg;
    struct engine e;

    cfg_defaults(&cfg);
    cfg.interval_ms = 1000;
    eng_init(&e, &cfg, NULL);
    struct snapshot *a = snap(10 * S, 2), *b = snap(10 * S + 100000000, 2),
                    *c = snap(10 * S + 600000000, 2);
    CHECK(!eng_too_soon(&e, a, 1)); /* nothing to follow yet */
    CHECK_INT(eng_feed(&e, a, 1), 0);
    CHECK(eng_too_soon(&e, b, 1));
    CHECK(!eng_too_soon(&e, c, 1));
    CHECK(!eng_too_soon(&e, b, 2)); /* a new connection: the old base is dropped anyway */
    snap_free(b);
    snap_free(c);
    eng_finalise(&e);
    cfg_free(&cfg);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The host's cpu_shares of a domain nobody weighted, from /proc/self/cgroup's shape. */
TEST(shares_default_from_cgroup_mode)
{
    char root[] = "/tmp/corehint-proc.XXXXXX", dir[64], file[96];

    CHECK(mkdtemp(root) != NULL);
    snprintf(dir, sizeof(dir), "%s/self", root);
    CHECK_INT(mkdir(dir, 0755), 0);
    snprintf(file, sizeof(file), "%s/cgroup", dir);
    write_text(file, "0::/machine.slice/corehint-hostd.service\n");
    CHECK_INT(col_shares_default(root), 100); /* cgroup v2 alone: cpu.weight */
    write_text(file, "12:cpu,cpuacct:/\n11:memory:/\n0::/\n");
    CHECK_INT(col_shares_default(root), 1024); /* hybrid: the cpu controller is v1 */
    write_text(file, "4:cpu,cpuacct:/\n3:pids:/\n");
    CHECK_INT(col_shares_default(root), 1024); /* v1 */
    CHECK_INT(col_shares_default(""), 0);      /* remote: unknown */
    unlink(file);
    CHECK_INT(col_shares_default(root), 0); /* unreadable: unknown */
    rmdir(dir);
    rmdir(root);
}
