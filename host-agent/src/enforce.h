/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * enforce: with enforce = cap, a VM that is non-compliant while its pool is contended gets
 * libvirt's global CPU quota set to its entitlement (global_period 100 ms); the cap is
 * removed when it complies again, contention ends or the domain goes away, and on exit.
 * Every cap and release is logged and counted; the cap state is kept in the domain's
 * registry record (registry.h).  The libvirt call itself runs elsewhere (the
 * libvirt worker, worker.h): enforce hands each change to a quota function and hears back
 * through enf_failed() when one did not take.  Without a quota function (replay) the actions
 * are only logged and counted, which is what replay tests check.
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

/* Set (cpus > 0) or remove (cpus < 0) the quota of uuid; 0 when done or queued. */
typedef int (*enf_quota_fn)(void *ctx, const char *uuid, const char *name, double cpus);

struct enforcer {
    const struct hd_config *cfg;
    enf_quota_fn quota; /* NULL: simulate (replay) */
    void *quota_ctx;
    struct registry *reg; /* the VMs, with their caps */
    uint64_t caps, releases, failures;
};

void enf_init(struct enforcer *f, const struct hd_config *cfg, struct registry *reg,
              enf_quota_fn quota, void *ctx);
/* Follow the latest decision. */
void enf_apply(struct enforcer *f, const struct engine *e);
/* A quota change handed to the quota function failed: counted, and the cap state is what it
 * was before, so the next decision tries again. */
void enf_failed(struct enforcer *f, const char *uuid, double cpus, const char *why);
/* Add "enforce":{"capped","cap_cpus"} to each domain of a report (report.h). */
void enf_annotate(const struct enforcer *f, json_object *report);
/* Release every cap (shutdown). */
void enf_finalise(struct enforcer *f);
/* The libvirt side of a quota function (the worker runs it).  0 or -EIO with err set. */
int enf_set_quota(virConnectPtr vc, const char *uuid, double cpus, char *err, size_t errlen);

#endif
