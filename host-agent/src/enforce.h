/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * enforce: with enforce = cap, a VM that is non-compliant while its pool is contended gets
 * libvirt's global CPU quota set to its entitlement (global_period 100 ms); the cap is
 * removed when it complies again, contention ends or the domain goes away, and on exit.
 * The cap state is kept in the domain's registry record (registry.h).  The libvirt call
 * itself runs elsewhere (the libvirt worker, worker.h): enforce hands each change to a quota
 * function and hears how it went through enf_done(); a cap or release is logged and counted
 * then, when it is in force, not when it is asked for.  While a change is pending nothing
 * else is asked for that VM; a failed one is asked again after a backoff counted in
 * decisions, and a cap libvirt can never make (no CPU controller, an unsupported parameter) is
 * not asked for again until the domain is seen anew (it leaves and comes back, or hostd
 * restarts); releases are always tried again.  Without a quota function (replay) a change
 * takes at once and is only logged and counted, which is what replay tests check.
 */
#ifndef HOSTD_ENFORCE_H
#define HOSTD_ENFORCE_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <libvirt/libvirt.h>

#include "config.h"
#include "engine.h"
#include "registry.h"

/* Set (cpus > 0) or remove (cpus < 0) the quota of uuid: 0 when queued (the outcome comes
 * to enf_done()), -errno when it could not be. */
typedef int (*enf_quota_fn)(void *ctx, const char *uuid, const char *name, double cpus);

/* The most decisions between two tries of a quota change that keeps failing. */
#define ENF_BACKOFF_MAX 64u

struct enforcer {
    const struct hd_config *cfg;
    enf_quota_fn quota; /* NULL: simulate (replay) */
    void *quota_ctx;
    struct registry *reg;    /* the VMs, with their caps */
    uint64_t caps, releases; /* changes in force (counted when libvirt said so) */
    uint64_t failures;       /* changes libvirt refused or that could not be queued */
    uint64_t decisions;      /* enf_apply() calls: the backoff's clock */
};

void enf_init(struct enforcer *f, const struct hd_config *cfg, struct registry *reg,
              enf_quota_fn quota, void *ctx);
/* Follow the latest decision. */
void enf_apply(struct enforcer *f, const struct engine *e);
/* The outcome of a quota change handed to the quota function (rc as enf_set_quota() returns
 * it, err the reason of a failure): logged and counted now.  A failure leaves the cap state as
 * it was and backs off; a cap failing with -EOPNOTSUPP is not asked for again while the VM's
 * record lasts (releases always are). */
void enf_done(struct enforcer *f, const char *uuid, double cpus, int rc, const char *err);
/* Add "enforce":{"mode","capped","cap_cpus","pending"} and, after a failure, "error" and
 * "gave_up" to each domain of a report (report.h). */
void enf_annotate(const struct enforcer *f, json_object *report);
/* Release every cap (shutdown). */
void enf_finalise(struct enforcer *f);
/* The libvirt side of a quota function (the worker runs it).  0; 1 for a release that found
 * no cap record (nothing of ours to undo); or with err set -EIO (transient: libvirtd busy or
 * gone, a job running) or -EOPNOTSUPP (libvirt cannot set this quota: no CPU controller, an
 * unsupported or invalid parameter, the domain not running). */
int enf_set_quota(virConnectPtr vc, const char *uuid, double cpus, char *err, size_t errlen);

#endif
