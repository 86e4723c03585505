/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * registry: one record per VM, keyed by UUID, holding everything the event loop knows about
 * it between decisions: its channel and qemu-ga state (actuate.h) and its cap (enforce.h),
 * with the latest decision and model entry it was synced to.  The actuator and the enforcer
 * act on these records; neither keeps a list of its own.  reg_sync() follows the engine's
 * latest decision: a VM that appears gets a fresh record, one that is gone has its channel
 * closed and its record dropped (its quota went with the domain: nothing to release).
 * Before the engine's first decision reg_track() keeps records for the sampled domains, so
 * that their channels open, and their guests' hellos (housekeeping CPUs) arrive, before it.
 *
 * The registry belongs to the event loop.  The other half of what hostd knows about a VM, the
 * collector's cache of its live XML (collect.c), belongs to the libvirt worker and stays
 * there: joining the two would put a lock between the loop and the worker.
 */
#ifndef HOSTD_REGISTRY_H
#define HOSTD_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "corehint/cpulist.h"
#include "engine.h"

struct channel;

/* The actuator's part (actuate.c). */
struct act_state {
    struct channel *ch;     /* NULL: no channel (or dry run) */
    uint64_t hints;         /* hints queued */
    ch_cpuset housekeeping; /* the guest's housekeeping CPUs from its latest hello, kept
                               across reconnects until a new hello says otherwise */
    /* The first engine step whose decision knew a hello of the guest (its housekeeping
     * CPUs): the step after the one current when a sample first saw a hello; 0 none yet. */
    uint64_t heard_step;
    bool holding;       /* hints held for the guest's first hello (said once) */
    bool hold_expired;  /* held a lease without a hello: not held again after reconnects */
    uint64_t held;      /* decisions held so */
    uint64_t held_step; /* the last of them */
    /* qemu-ga actuators: what the agent last applied, to act on changes only */
    bool agent_applied;
    enum cfg_actuator agent_how; /* the agent that applied agent_cpus */
    bool agent_pending;          /* a command is with the agent function */
    ch_cpuset agent_cpus;
    uint64_t agent_ok, agent_failed;
    char agent_error[128];
    /* After a failure the agent is asked again only agent_backoff intervals later (1, 2, 4,
     * ... up to ACT_AGENT_BACKOFF_MAX; a success resets it), at agent_retry_ns (monotonic):
     * an agent that hangs costs libvirt's timeout once per backoff, not every interval. */
    unsigned agent_backoff;
    uint64_t agent_retry_ns;
    bool meta_agent_refused; /* its metadata asks for qemu-ga, metadata_agent = no: said once */
};

/* The enforcer's part (enforce.c). */
struct enf_state {
    bool known;  /* judged by the enforcer before: a cap recorded by an earlier hostd is only
                    adopted when the domain is first seen */
    bool capped; /* a cap is in force: libvirt said so (or an earlier hostd recorded it) */
    double cap_cpus;
    /* A quota change handed to the worker and not answered yet: nothing else is asked for
     * this VM until it is, and nothing is logged or counted before then. */
    bool pending;
    double pending_cpus;     /* what was asked: CPUs, or < 0 for a release */
    const char *pending_why; /* a release's reason (a string literal) */
    /* After a failure the change is asked again only backoff decisions later (1, 2, 4, ...
     * up to ENF_BACKOFF_MAX; a success resets it); a cap libvirt cannot set at all is not
     * asked for again while this record lasts (gave_up); a release always is. */
    unsigned backoff;
    uint64_t retry_at; /* the enforcer's decision count from which it may ask again */
    bool gave_up;
    char error[128]; /* the last failure, cleaned */
};

struct vm_entry {
    char uuid[SNAP_UUID_LEN + 1];
    char name[SNAP_NAME_MAX];
    /* The engine's latest model entry and decision for this VM: valid from reg_sync() until
     * the engine's next decision; NULL in the records reg_track() keeps before the first. */
    const struct model_dom *dom;
    const struct pol_decision *dec;
    struct act_state act;
    struct enf_state enf;
};

struct registry {
    struct vm_entry *vm; /* sorted by uuid: the engine's model order */
    unsigned nvm;
    uint64_t steps; /* the engine step the records follow, 0 before the first */
};

void reg_init(struct registry *r);
/* Follow e's latest decision (nothing to do when the records already follow it).  Afterwards
 * r->vm[i] is the VM of e->model.dom[i] and e->dec[i].  0 or -ENOMEM. */
int reg_sync(struct registry *r, const struct engine *e);
/* Before the engine's first decision (none synced yet): follow the domains of s, records with
 * no model entry or decision.  Afterwards a no-op: reg_sync() follows the decisions.  0 or
 * -ENOMEM. */
int reg_track(struct registry *r, const struct snapshot *s);
struct vm_entry *reg_find(const struct registry *r, const char *uuid);
/* Drop every record, closing any channel still open. */
void reg_finalise(struct registry *r);

#endif
