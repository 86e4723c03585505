// SPDX-License-Identifier: LGPL-2.1-or-later
/* enforce with a quota function that answers later, as the libvirt worker does: a cap is
 * logged and counted when libvirt says it is in force, one change is in flight per VM, and a
 * change that keeps failing backs off.  The decisions come from the engine fed with the replay
 * trace noncompliant.jsonl (the rebel ignores its hint), extended by repeating its last step. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "enforce.h"
#include "engine.h"
#include "record.h"
#include "registry.h"

#define REBEL "00000000-0000-4000-8000-000000000001"
/* the rebel's record, found again after every decision (the registry is rebuilt by each) */
#define VM(r) reg_find(&(r)->reg, REBEL)

struct fake_quota {
    unsigned asked;   /* changes handed over */
    double last_cpus; /* the last one's CPUs (< 0: release) */
    int refuse;       /* 0, or -errno returned at once */
};

static int fake_quota(void *ctx, const char *uuid, const char *name, double cpus)
{
    struct fake_quota *q = ctx;

    (void)name;
    if (strcmp(uuid, REBEL) != 0)
        return -EINVAL; /* only the rebel is ever capped in this trace */
    if (q->refuse)
        return q->refuse;
    q->asked++;
    q->last_cpus = cpus;
    return 0;
}

struct rig {
    struct hd_config cfg;
    struct engine eng;
    struct registry reg;
    struct enforcer enf;
    struct fake_quota q;
    struct snapshot *a, *b; /* the trace's last two steps, for extending it */
    unsigned extended;
};

static int rig_init(struct rig *r)
{
    char err[256];

    memset(r, 0, sizeof(*r));
    cfg_defaults(&r->cfg);
    if (cfg_load_text(&r->cfg, "t.conf", "enforce = cap\n", err, sizeof(err)) < 0)
        return -EINVAL;
    eng_init(&r->eng, &r->cfg, NULL);
    reg_init(&r->reg);
    enf_init(&r->enf, &r->cfg, &r->reg, fake_quota, &r->q);
    return 0;
}

static void rig_fini(struct rig *r)
{
    reg_finalise(&r->reg);
    eng_finalise(&r->eng);
    snap_free(r->a);
    snap_free(r->b);
    cfg_free(&r->cfg);
}

static void feed(struct rig *r, struct snapshot *s)
{
    if (eng_feed(&r->eng, s, 0) > 0 && reg_sync(&r->reg, &r->eng) == 0)
        enf_apply(&r->enf, &r->eng);
}

/* The trace's first n steps (the rebel is non-compliant from the fifth decision on), keeping
 * copies of the last two. */
static int feed_trace(struct rig *r, unsigned n)
{
    char err[256];
    struct rec_reader *rd = rec_open(TRACES_DIR "/noncompliant.jsonl", err, sizeof(err));
    struct snapshot *s;

    if (!rd)
        return -ENOENT;
    for (unsigned i = 0; i < n && rec_next(rd, &s, err, sizeof(err)) > 0; i++) {
        char *line = rec_format(s);
        snap_free(r->a);
        r->a = r->b;
        r->b = NULL;
        if (!line || rec_parse(line, &r->b, err, sizeof(err)) < 0) {
            free(line);
            rec_close(rd);
            return -EIO;
        }
        free(line);
        feed(r, s);
    }
    rec_close(rd);
    return r->a && r->b ? 0 : -EIO;
}

/* One more step: the last step's counters advanced by as much again as from the one before. */
static void feed_more(struct rig *r)
{
    struct snapshot *s;
    char *line = rec_format(r->b);
    char err[256];
    uint64_t k = ++r->extended;

    if (!line || rec_parse(line, &s, err, sizeof(err)) < 0) {
        free(line);
        return;
    }
    free(line);
    s->t_ns += k * (r->b->t_ns - r->a->t_ns);
    for (unsigned c = 0; c < s->npcpu; c++) {
        s->pcpu[c].busy_ns += k * (r->b->pcpu[c].busy_ns - r->a->pcpu[c].busy_ns);
        s->pcpu[c].idle_ns += k * (r->b->pcpu[c].idle_ns - r->a->pcpu[c].idle_ns);
        s->pcpu[c].wait_ns += k * (r->b->pcpu[c].wait_ns - r->a->pcpu[c].wait_ns);
    }
    for (unsigned d = 0; d < s->ndom; d++) {
        struct snap_dom *o = &s->dom[d], *da = &r->a->dom[d], *db = &r->b->dom[d];
        o->cpu_time_ns += k * (db->cpu_time_ns - da->cpu_time_ns);
        for (unsigned v = 0; v < o->nvcpu; v++) {
            o->vcpu[v].time_ns += k * (db->vcpu[v].time_ns - da->vcpu[v].time_ns);
            o->vcpu[v].delay_ns += k * (db->vcpu[v].delay_ns - da->vcpu[v].delay_ns);
        }
    }
    feed(r, s);
}

/* Feed the trace until the rebel's first cap is asked for. */
static int until_first_cap(struct rig *r)
{
    if (feed_trace(r, 6) < 0)
        return -EIO;
    for (unsigned i = 0; i < 10 && !r->q.asked; i++)
        feed_more(r);
    return r->q.asked ? 0 : -ENOENT;
}

TEST(cap_counted_when_in_force)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    CHECK(r.q.asked == 1 && r.q.last_cpus > 0);
    CHECK(VM(&r) != NULL);
    /* asked for, not in force: not reported as capped, not counted */
    CHECK_INT((int)r.enf.caps, 0);
    CHECK(!VM(&r)->enf.capped);
    CHECK(VM(&r)->enf.pending);
    /* one change in flight: the next decisions ask for nothing more */
    for (unsigned i = 0; i < 3; i++)
        feed_more(&r);
    CHECK_INT((int)r.q.asked, 1);
    /* libvirt says it took */
    enf_done(&r.enf, REBEL, r.q.last_cpus, 0, "");
    CHECK_INT((int)r.enf.caps, 1);
    CHECK(VM(&r)->enf.capped && !VM(&r)->enf.pending);
    CHECK(fabs(VM(&r)->enf.cap_cpus - r.q.last_cpus) < 1e-9);
    /* in force and still wanted: nothing more asked */
    feed_more(&r);
    CHECK_INT((int)r.q.asked, 1);
    CHECK_INT((int)r.enf.failures, 0);
    rig_fini(&r);
}

TEST(failed_cap_backs_off)
{
    struct rig r;
    unsigned decisions = 0;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    CHECK(VM(&r) != NULL);
    /* every change fails as soon as it is asked for, for 40 more decisions */
    enf_done(&r.enf, REBEL, r.q.last_cpus, -EIO, "cannot set the CPU quota: \x1b[31mbusy\n");
    for (; decisions < 40; decisions++) {
        unsigned before = r.q.asked;
        feed_more(&r);
        if (r.q.asked != before)
            enf_done(&r.enf, REBEL, r.q.last_cpus, -EIO, "cannot set the CPU quota: busy");
    }
    /* tried after 1, 2, 4, 8 and 16 decisions (31 of the 40), not at every one */
    CHECK_MSG(r.q.asked == 6, "asked %u times in 41 decisions", r.q.asked);
    CHECK_INT((int)r.enf.failures, 6);
    CHECK_INT((int)r.enf.caps, 0);
    CHECK(!VM(&r)->enf.capped && !VM(&r)->enf.pending);
    CHECK_INT((int)VM(&r)->enf.backoff, 32);
    CHECK_STR(VM(&r)->enf.error, "cannot set the CPU quota: busy");
    /* a success resets the backoff */
    while (!VM(&r)->enf.pending && decisions++ < 100)
        feed_more(&r);
    CHECK(VM(&r)->enf.pending);
    enf_done(&r.enf, REBEL, r.q.last_cpus, 0, "");
    CHECK_INT((int)r.enf.caps, 1);
    CHECK_INT((int)VM(&r)->enf.backoff, 0);
    CHECK_STR(VM(&r)->enf.error, "");
    rig_fini(&r);
}

TEST(failure_text_cleaned)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    CHECK(VM(&r) != NULL);
    enf_done(&r.enf, REBEL, r.q.last_cpus, -EIO, "x\n<0>corehint-hostd[error]: \x1b[2Jforged");
    CHECK_STR(VM(&r)->enf.error, "x?<0>corehint-hostd[error]: ?[2Jforged");
    rig_fini(&r);
}

TEST(permanent_failure_not_retried)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    CHECK(VM(&r) != NULL);
    enf_done(&r.enf, REBEL, r.q.last_cpus, -EOPNOTSUPP, "cgroup CPU controller is not mounted");
    for (unsigned i = 0; i < 20; i++)
        feed_more(&r);
    CHECK_INT((int)r.q.asked, 1);
    CHECK(VM(&r)->enf.gave_up && !VM(&r)->enf.capped);
    CHECK_INT((int)r.enf.failures, 1);
    rig_fini(&r);
}

TEST(refused_at_once_is_a_failure)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    r.q.refuse = -ENOMEM;
    CHECK_INT(feed_trace(&r, 6), 0);
    for (unsigned i = 0; i < 10; i++)
        feed_more(&r);
    CHECK(VM(&r) != NULL);
    CHECK(!VM(&r)->enf.capped && !VM(&r)->enf.pending);
    CHECK(r.enf.failures >= 1 && r.enf.failures <= 4); /* backed off too */
    CHECK_INT((int)r.enf.caps, 0);
    CHECK_STR(VM(&r)->enf.error, "cannot queue the quota change");
    rig_fini(&r);
}

TEST(release_at_shutdown_follows_a_pending_cap)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    CHECK(VM(&r) != NULL && VM(&r)->enf.pending);
    /* stopping while the cap is on its way: its release is queued behind it */
    enf_finalise(&r.enf);
    CHECK_INT((int)r.q.asked, 2);
    CHECK(r.q.last_cpus < 0);
    enf_done(&r.enf, REBEL, 0.9, 0, "");
    enf_done(&r.enf, REBEL, -1, 0, "");
    CHECK_INT((int)r.enf.caps, 1);
    CHECK_INT((int)r.enf.releases, 1);
    CHECK(!VM(&r)->enf.capped);
    rig_fini(&r);
}

TEST(release_goes_after_a_cap_failed_for_good)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    enf_done(&r.enf, REBEL, r.q.last_cpus, 0, "");
    CHECK(VM(&r)->enf.capped);
    /* the entitlement moved far from the cap: a new cap is asked for, and the host refuses it
     * for good */
    VM(&r)->enf.cap_cpus = 5.0;
    feed_more(&r);
    CHECK_INT((int)r.q.asked, 2);
    enf_done(&r.enf, REBEL, r.q.last_cpus, -EOPNOTSUPP, "cgroup CPU controller is not mounted");
    CHECK(VM(&r)->enf.gave_up && VM(&r)->enf.capped);
    feed_more(&r);
    CHECK_INT((int)r.q.asked, 2); /* no new cap */
    /* enforcement switched off: the cap in force is still released */
    snprintf(r.cfg.enforce, sizeof(r.cfg.enforce), "report");
    feed_more(&r);
    CHECK_INT((int)r.q.asked, 3);
    CHECK(r.q.last_cpus < 0);
    enf_done(&r.enf, REBEL, -1, 0, "");
    CHECK(!VM(&r)->enf.capped);
    CHECK_INT((int)r.enf.releases, 1);
    rig_fini(&r);
}

TEST(release_of_a_cap_that_never_took_is_not_counted)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    enf_finalise(&r.enf); /* the release queued behind the pending cap */
    enf_done(&r.enf, REBEL, r.q.last_cpus < 0 ? 0.9 : r.q.last_cpus, -EIO, "busy");
    enf_done(&r.enf, REBEL, -1, 1, ""); /* no record: nothing of ours to undo */
    CHECK_INT((int)r.enf.caps, 0);
    CHECK_INT((int)r.enf.releases, 0);
    CHECK_INT((int)r.enf.failures, 1);
    CHECK(!VM(&r)->enf.capped);
    rig_fini(&r);
}

TEST(cancelled_at_shutdown_is_a_failure)
{
    struct rig r;

    CHECK_INT(rig_init(&r), 0);
    CHECK_INT(until_first_cap(&r), 0);
    enf_done(&r.enf, REBEL, r.q.last_cpus, 0, "");
    enf_finalise(&r.enf);
    CHECK(r.q.last_cpus < 0);
    enf_done(&r.enf, REBEL, -1, -ECANCELED, "corehint-hostd stopped before libvirt made it");
    CHECK(VM(&r)->enf.capped); /* still in force: its record stays for the next hostd */
    CHECK_INT((int)r.enf.releases, 0);
    CHECK_INT((int)r.enf.failures, 1);
    CHECK_STR(VM(&r)->enf.error, "corehint-hostd stopped before libvirt made it");
    rig_fini(&r);
}
