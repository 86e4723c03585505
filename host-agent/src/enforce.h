/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * enforce: with enforce = cap, a VM that is non-compliant while its pool is contended gets
 * libvirt's global CPU quota set to its entitlement (global_period 100 ms); the cap is
 * removed when it complies again, contention ends or the domain goes away, and on exit.
 * Every cap and release is logged and counted.  Without a libvirt connection (replay) the
 * actions are only logged and counted, which is what replay tests check.
 */
#ifndef HOSTD_ENFORCE_H
#define HOSTD_ENFORCE_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <libvirt/libvirt.h>

#include "config.h"
#include "engine.h"

struct enf_vm {
    char uuid[SNAP_UUID_LEN + 1];
    char name[SNAP_NAME_MAX];
    bool capped;
    double cap_cpus;
};

struct enforcer {
    const struct hd_config *cfg;
    struct enf_vm *vm; /* sorted by uuid */
    unsigned nvm;
    uint64_t caps, releases, failures;
};

void enf_init(struct enforcer *f, const struct hd_config *cfg);
/* Follow the latest decision; vc NULL = simulate (replay). */
void enf_apply(struct enforcer *f, const struct engine *e, virConnectPtr vc);
const struct enf_vm *enf_find(const struct enforcer *f, const char *uuid);
/* Add "enforce":{"capped","cap_cpus"} to each domain of a report (report.h). */
void enf_annotate(const struct enforcer *f, json_object *report);
/* Release every cap (shutdown). */
void enf_finalise(struct enforcer *f, virConnectPtr vc);

#endif
