// SPDX-License-Identifier: LGPL-2.1-or-later
#include "enforce.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

#include "conn.h"
#include "domxml.h"
#include "corehint/log.h"

#define PERIOD_US 100000ull
/* A cap is adjusted only when the entitlement moved by more than this share. */
#define CAP_SLACK 0.1
#define CAP_MIN_CPUS 0.1

void enf_init(struct enforcer *f, const struct hd_config *cfg, struct registry *reg,
              enf_quota_fn quota, void *ctx)
{
    memset(f, 0, sizeof(*f));
    f->cfg = cfg;
    f->reg = reg;
    f->quota = quota;
    f->quota_ctx = ctx;
}

/* libvirt reports "no limit" as -1, or as the cgroup v2 maximum; both mean none. */
#define QUOTA_UNLIMITED_MIN 17592186044415LL

static int get_period_quota(virDomainPtr dom, unsigned long long *period, long long *quota)
{
    virTypedParameterPtr params;
    int n, rc;

    *period = PERIOD_US;
    *quota = -1;
    if ((rc = conn_sched_params(dom, &params, &n)) < 0)
        return rc;
    virTypedParamsGetULLong(params, n, VIR_DOMAIN_SCHEDULER_GLOBAL_PERIOD, period);
    virTypedParamsGetLLong(params, n, VIR_DOMAIN_SCHEDULER_GLOBAL_QUOTA, quota);
    if (*quota <= 0 || *quota >= QUOTA_UNLIMITED_MIN)
        *quota = -1;
    virTypedParamsFree(params, n);
    return 0;
}

/* The last libvirt error as -EOPNOTSUPP when retrying cannot help (the host cannot set this
 * quota at all), else -EIO (libvirtd busy, restarting or gone; a domain job running). */
static int libvirt_rc(void)
{
    switch (virGetLastErrorCode()) {
    case VIR_ERR_OPERATION_INVALID: /* qemu: "cgroup CPU controller is not mounted" */
    case VIR_ERR_CONFIG_UNSUPPORTED:
    case VIR_ERR_NO_SUPPORT:
    case VIR_ERR_OPERATION_UNSUPPORTED:
    case VIR_ERR_ARGUMENT_UNSUPPORTED:
    case VIR_ERR_INVALID_ARG:
        return -EOPNOTSUPP;
    default:
        return -EIO;
    }
}

static int put_period_quota(virDomainPtr dom, unsigned long long period, long long quota)
{
    virTypedParameter p[2];

    memset(p, 0, sizeof(p));
    snprintf(p[0].field, sizeof(p[0].field), "%s", VIR_DOMAIN_SCHEDULER_GLOBAL_PERIOD);
    p[0].type = VIR_TYPED_PARAM_ULLONG;
    p[0].value.ul = period;
    snprintf(p[1].field, sizeof(p[1].field), "%s", VIR_DOMAIN_SCHEDULER_GLOBAL_QUOTA);
    p[1].type = VIR_TYPED_PARAM_LLONG;
    p[1].value.l = quota; /* libvirt: a negative quota means no limit */
    return virDomainSetSchedulerParametersFlags(dom, p, 2, VIR_DOMAIN_AFFECT_LIVE) < 0
               ? libvirt_rc()
               : 0;
}

/* The cap hostd recorded in the domain's live metadata: 0 with what it saved, -ENOENT when
 * there is none. */
static int get_record(virDomainPtr dom, struct dx_cap *cap)
{
    struct dx_info info;
    char *xml = virDomainGetXMLDesc(dom, 0);
    int rc;

    if (!xml)
        return -EIO;
    rc = dx_parse(xml, strlen(xml), &info);
    free(xml);
    if (rc < 0)
        return rc;
    *cap = info.cap;
    return cap->present ? 0 : -ENOENT;
}

static int drop_record(virDomainPtr dom)
{
    return virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL, DX_CAP_URI,
                                VIR_DOMAIN_AFFECT_LIVE) < 0
               ? -EIO
               : 0;
}

int enf_set_quota(virConnectPtr vc, const char *uuid, double cpus, char *err, size_t errlen)
{
    struct dx_cap rec = {0};
    virDomainPtr dom;
    char xml[256];
    int rc = 0, have;

    if (!(dom = virDomainLookupByUUIDString(vc, uuid))) {
        snprintf(err, errlen, "no domain %s: %s", uuid, conn_error());
        return -EIO;
    }
    have = get_record(dom, &rec);
    if (have < 0 && have != -ENOENT) {
        snprintf(err, errlen, "cannot read the domain's cap record: %s", conn_error());
        rc = -EIO;
        goto out;
    }
    if (cpus < 0) {
        if (have == -ENOENT) {
            /* Every cap is recorded before it is set: without a record the quota is not ours
             * (released already, or the domain restarted), and it stays as it is. */
            log_msg(LOG_LVL_DEBUG, "domain %s: no cap record; quota left alone", uuid);
            rc = 1;
        } else if ((rc = put_period_quota(dom, rec.saved_period, rec.saved_quota)) < 0) {
            /* Release: the administrator's own period and quota back, then the record goes. */
            snprintf(err, errlen, "cannot restore the CPU quota: %s", conn_error());
        } else if (drop_record(dom) < 0) {
            /* A record left behind would make a later hostd set this quota back over whatever
             * the administrator sets next: the release is tried again (restoring twice is
             * harmless). */
            snprintf(err, errlen, "quota restored, but cannot remove the cap record: %s",
                     conn_error());
            rc = -EIO;
        }
        goto out;
    }
    /* Cap: save what the administrator set, once (a re-cap keeps the first record). */
    if (have == -ENOENT && get_period_quota(dom, &rec.saved_period, &rec.saved_quota) < 0) {
        snprintf(err, errlen, "cannot read the CPU quota to save it: %s", conn_error());
        rc = -EIO;
        goto out;
    }
    snprintf(xml, sizeof(xml), "<cap cpus=\"%.3f\" saved_period=\"%llu\" saved_quota=\"%lld\"/>",
             cpus, rec.saved_period, rec.saved_quota);
    if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml, DX_CAP_KEY, DX_CAP_URI,
                             VIR_DOMAIN_AFFECT_LIVE) < 0) {
        /* Without the record a restarted hostd could not give the quota back: no cap. */
        snprintf(err, errlen, "cannot record the cap in the domain's metadata: %s", conn_error());
        rc = libvirt_rc();
        goto out;
    }
    if ((rc = put_period_quota(dom, PERIOD_US, (long long)llround(cpus * (double)PERIOD_US))) < 0) {
        snprintf(err, errlen, "cannot set the CPU quota: %s", conn_error());
        /* no cap, so no record of one (a record from an earlier cap stays: it still is) */
        if (have == -ENOENT)
            drop_record(dom);
    }
out:
    virDomainFree(dom);
    return rc;
}

/* The outcome of a change: logged and counted only now, when it is in force (or is not).  rc
 * 1: a release found no cap of ours to undo (its cap never took, or went with the domain). */
static void finish(struct enforcer *f, struct vm_entry *v, double cpus, int rc, const char *why,
                   const char *err)
{
    const char *sim = f->quota ? "" : "replay: ";
    struct enf_state *e = &v->enf;

    e->pending = false;
    if (rc >= 0) {
        if (cpus >= 0) {
            log_msg(LOG_LVL_WARN, "%s%s: non-compliant under contention: capped to %.2f CPUs", sim,
                    v->name, cpus);
            e->capped = true;
            e->cap_cpus = cpus;
            f->caps++;
        } else if (rc == 0) {
            log_msg(LOG_LVL_INFO, "%s%s: cap released (%s)", sim, v->name, why);
            e->capped = false;
            e->cap_cpus = 0;
            f->releases++;
        } else {
            log_msg(LOG_LVL_DEBUG, "%s: no cap of ours to release (%s)", v->name, why);
            e->capped = false;
            e->cap_cpus = 0;
        }
        e->backoff = 0;
        e->error[0] = '\0';
        return;
    }
    f->failures++;
    snprintf(e->error, sizeof(e->error), "%s", err && *err ? err : strerror(-rc));
    log_clean(e->error, strlen(e->error)); /* libvirt's message may quote a guest's words */
    if (rc == -ECANCELED) {
        /* hostd stops: a cap record stays in the domain's metadata for the next hostd */
        if (cpus >= 0)
            log_msg(LOG_LVL_WARN, "%s: cap not made: %s", v->name, e->error);
        else
            log_msg(LOG_LVL_WARN,
                    "%s: cap release not made: %s; the next corehint-hostd releases it", v->name,
                    e->error);
        return;
    }
    if (rc == -EOPNOTSUPP && cpus >= 0) {
        /* only caps stop: a release is always tried again, or a cap could outlive its reason */
        e->gave_up = true;
        log_msg(LOG_LVL_ERR,
                "%s: cap failed for good: %s; not tried again until the domain is seen anew",
                v->name, e->error);
        return;
    }
    e->backoff =
        e->backoff ? (e->backoff * 2 > ENF_BACKOFF_MAX ? ENF_BACKOFF_MAX : e->backoff * 2) : 1;
    e->retry_at = f->decisions + e->backoff;
    if (cpus >= 0)
        log_msg(LOG_LVL_WARN, "%s: cap failed: %s; next try %u decision(s) later", v->name,
                e->error, e->backoff);
    else
        log_msg(LOG_LVL_WARN, "%s: cap release failed: %s; next try %u decision(s) later", v->name,
                e->error, e->backoff);
}

/* Ask for a cap (cpus >= 0) or its release (cpus < 0, why says why). */
static void request(struct enforcer *f, struct vm_entry *v, double cpus, const char *why)
{
    int rc;

    if (!f->quota) {
        finish(f, v, cpus, 0, why, NULL); /* replay: it takes at once */
        return;
    }
    if ((rc = f->quota(f->quota_ctx, v->uuid, v->name, cpus)) < 0) {
        finish(f, v, cpus, rc, why, "cannot queue the quota change");
        return;
    }
    v->enf.pending = true;
    v->enf.pending_cpus = cpus;
    v->enf.pending_why = why;
    if (cpus >= 0)
        log_msg(LOG_LVL_DEBUG, "%s: cap to %.2f CPUs asked for", v->name, cpus);
    else
        log_msg(LOG_LVL_DEBUG, "%s: cap release asked for (%s)", v->name, why);
}

/* A domain first seen carrying a cap an earlier hostd recorded (it stopped without releasing
 * it: killed, crashed, or lost libvirt on its way out).  With enforce = cap it is this hostd's
 * cap now, kept or released by the same rules as its own (released at once: nothing was
 * judged yet); with enforce = report hostd leaves quotas alone and says so. */
static void adopt(struct enforcer *f, struct vm_entry *v, double cpus, bool capping)
{
    if (!capping) {
        log_msg(LOG_LVL_WARN,
                "%s: carries a CPU cap (%.2f CPUs) an earlier corehint-hostd recorded; "
                "enforce = report leaves it (enforce = cap gives the saved quota back)",
                v->name, cpus);
        return;
    }
    log_msg(LOG_LVL_INFO,
            "%s: a cap of %.2f CPUs recorded by an earlier corehint-hostd is ours now", v->name,
            cpus);
    v->enf.capped = true;
    v->enf.cap_cpus = cpus;
}

void enf_done(struct enforcer *f, const char *uuid, double cpus, int rc, const char *err)
{
    struct vm_entry *v = reg_find(f->reg, uuid);

    if (!v) {
        /* the domain went away meanwhile: only counted */
        if (rc < 0)
            f->failures++;
        log_msg(LOG_LVL_DEBUG, "domain %s: quota change to %.2f done (%d) for no VM we track", uuid,
                cpus, rc);
        return;
    }
    finish(f, v, cpus, rc, cpus < 0 && v->enf.pending_why ? v->enf.pending_why : "", err);
}

void enf_apply(struct enforcer *f, const struct engine *e)
{
    if (!e->decided || reg_sync(f->reg, e) < 0)
        return;
    f->decisions++;
    for (unsigned i = 0; i < f->reg->nvm; i++) {
        struct vm_entry *v = &f->reg->vm[i];
        const struct pol_decision *d = v->dec;
        struct cfg_domain cd;

        cfg_domain_settings(f->cfg, v->name, v->uuid, &v->dom->policy, &cd);
        bool vm_caps = cd.mode == CFG_MODE_ENFORCE; /* (mode = observe and hint never cap) */

        if (!v->enf.known && v->dom->cap_recorded > 0)
            adopt(f, v, v->dom->cap_recorded, vm_caps);
        v->enf.known = true;
        /* one change at a time, none while backing off */
        if (v->enf.pending || f->decisions < v->enf.retry_at)
            continue;
        double want = d->entitlement > CAP_MIN_CPUS ? d->entitlement : CAP_MIN_CPUS;
        bool should = vm_caps && d->non_compliant && d->contended && !d->opt_out;

        if (!should && !v->enf.capped) {
            /* nothing wanted: an old failure is history (one for good stays shown) */
            v->enf.backoff = 0;
            if (!v->enf.gave_up)
                v->enf.error[0] = '\0';
            continue;
        }
        if (should && v->enf.gave_up)
            continue; /* a cap the host cannot set; a release still goes */
        if (should &&
            (!v->enf.capped || fabs(want - v->enf.cap_cpus) > CAP_SLACK * v->enf.cap_cpus))
            request(f, v, want, NULL);
        else if (!should && v->enf.capped)
            request(f, v, -1,
                    !vm_caps       ? "enforcement off"
                    : d->contended ? "compliant"
                                   : "no contention");
    }
}

void enf_annotate(const struct enforcer *f, json_object *report)
{
    json_object *doms, *u;

    if (!report || !json_object_object_get_ex(report, "domains", &doms))
        return;
    for (size_t i = 0; i < json_object_array_length(doms); i++) {
        json_object *d = json_object_array_get_idx(doms, i), *o;
        const struct vm_entry *v;

        if (!json_object_object_get_ex(d, "uuid", &u))
            continue;
        v = reg_find(f->reg, json_object_get_string(u));
        o = json_object_new_object();
        struct cfg_domain cd;
        cfg_domain_settings(f->cfg, v ? v->name : "", json_object_get_string(u),
                            v && v->dom ? &v->dom->policy : NULL, &cd);
        json_object_object_add(
            o, "mode", json_object_new_string(cd.mode == CFG_MODE_ENFORCE ? "cap" : "report"));
        json_object_object_add(o, "capped", json_object_new_boolean(v && v->enf.capped));
        if (v && v->enf.capped)
            json_object_object_add(o, "cap_cpus", json_object_new_double(v->enf.cap_cpus));
        json_object_object_add(o, "pending", json_object_new_boolean(v && v->enf.pending));
        if (v && v->enf.error[0]) {
            json_object_object_add(o, "error", json_object_new_string(v->enf.error));
            json_object_object_add(o, "gave_up", json_object_new_boolean(v->enf.gave_up));
        }
        json_object_object_add(d, "enforce", o);
    }
}

void enf_finalise(struct enforcer *f)
{
    for (unsigned i = 0; f->reg && i < f->reg->nvm; i++) {
        struct vm_entry *v = &f->reg->vm[i];
        /* a cap still on its way is released after it (the worker keeps the order) */
        bool cap_coming = v->enf.pending && v->enf.pending_cpus >= 0;

        if ((v->enf.capped && !v->enf.pending) || cap_coming)
            request(f, v, -1, "shutting down");
    }
}
