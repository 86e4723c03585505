// SPDX-License-Identifier: LGPL-2.1-or-later
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corehint/cpulist.h"

/* Rates to 4 decimals: enough for humans and tests, stable across libm versions. */
static json_object *num(double v)
{
    char text[64];
    size_t n;

    snprintf(text, sizeof(text), "%.4f", round(v * 10000) / 10000);
    n = strlen(text);
    while (n > 2 && text[n - 1] == '0' && text[n - 2] != '.')
        text[--n] = '\0';
    return json_object_new_double_s(strtod(text, NULL), text);
}

static json_object *host_json(const struct model *m)
{
    json_object *h = json_object_new_object(), *pcs = json_object_new_array();

    json_object_object_add(h, "npcpu", json_object_new_int64(m->npcpu));
    if (m->has_psi)
        json_object_object_add(h, "psi_some", num(m->psi_some));
    for (unsigned p = 0; p < m->npcpu; p++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "cpu", json_object_new_int64(p));
        json_object_object_add(o, "busy", num(m->pcpu_busy[p]));
        json_object_object_add(o, "wait", num(m->pcpu_wait[p]));
        json_object_object_add(o, "contention", num(m->pcpu_contention[p]));
        if (m->has_schedstat)
            json_object_object_add(o, "rq_wait", num(m->pcpu_rqwait[p]));
        json_object_array_add(pcs, o);
    }
    json_object_object_add(h, "pcpus", pcs);
    return h;
}

static json_object *pools_json(const struct model *m, const struct pol_decision *dec,
                               const struct hd_config *cfg)
{
    json_object *arr = json_object_new_array();
    char list[CH_CPULIST_MAX_LEN];

    for (unsigned p = 0; p < m->npool; p++) {
        json_object *o = json_object_new_object();
        double demand = 0;
        bool contended = false;

        for (unsigned i = 0; i < m->ndom; i++) {
            if (m->dom[i].pool != p)
                continue;
            demand += m->dom[i].demand;
            contended |= dec && dec[i].contended;
        }
        if (pset_format(&m->pool[p].pcpus, list, sizeof(list)) < 0)
            list[0] = '\0';
        json_object_object_add(o, "id", json_object_new_int64(p));
        json_object_object_add(o, "cpus", json_object_new_string(list));
        json_object_object_add(o, "capacity", num(m->pool[p].ncpu * cfg->target_utilisation));
        json_object_object_add(o, "demand", num(demand));
        json_object_object_add(o, "contended", json_object_new_boolean(contended));
        json_object_object_add(o, "domains", json_object_new_int64(m->pool[p].ndom));
        json_object_array_add(arr, o);
    }
    return arr;
}

static json_object *decision_json(const struct pol_decision *d)
{
    json_object *o = json_object_new_object();
    char list[CH_CPULIST_MAX_LEN];

    if (ch_cpulist_format(&d->preferred, list, sizeof(list)) < 0)
        list[0] = '\0';
    json_object_object_add(o, "preferred", json_object_new_string(list));
    json_object_object_add(o, "count", json_object_new_int64(d->count));
    json_object_object_add(o, "target", json_object_new_int64(d->target));
    json_object_object_add(o, "weight", num(d->weight));
    json_object_object_add(o, "entitlement", num(d->entitlement));
    json_object_object_add(o, "reason", json_object_new_string(pol_reason_name(d->reason)));
    json_object_object_add(o, "contended", json_object_new_boolean(d->contended));
    json_object_object_add(o, "censored", json_object_new_boolean(d->censored));
    json_object_object_add(o, "claimed", json_object_new_boolean(d->claimed));
    json_object_object_add(o, "starve_streak", json_object_new_int64(d->starve_streak));
    json_object_object_add(o, "claim_misses", json_object_new_int64(d->claim_misses));
    /* a claim waiting for the guest to run on it: the count claimed, 0 none */
    json_object_object_add(o, "claim_pending", json_object_new_int64(d->claim_k));
    json_object_object_add(o, "opt_out", json_object_new_boolean(d->opt_out));
    json_object_object_add(o, "compliant", json_object_new_boolean(!d->non_compliant));
    json_object_object_add(o, "violations", json_object_new_int64(d->violations));
    json_object_object_add(o, "age", json_object_new_int64(d->age));
    return o;
}

/* The per-VM settings in force and where they came from. */
static json_object *settings_json(const struct model_dom *d, const struct hd_config *cfg)
{
    json_object *o = json_object_new_object(), *from = json_object_new_array();
    struct cfg_domain cd;
    unsigned src = cfg_domain_settings(cfg, d->name, d->uuid, &d->policy, &cd);

    if (cd.weight > 0)
        json_object_object_add(o, "weight", num(cd.weight));
    json_object_object_add(o, "opt_out", json_object_new_boolean(cd.opt_out));
    json_object_object_add(o, "actuator", json_object_new_string(cfg_actuator_name(cd.actuator)));
    json_object_object_add(o, "mode", json_object_new_string(cfg_mode_name(cd.mode)));
    if (src & CFG_FROM_CONF)
        json_object_array_add(from, json_object_new_string("hostd.conf"));
    if (src & CFG_FROM_METADATA)
        json_object_array_add(from, json_object_new_string("metadata"));
    json_object_object_add(o, "from", from);
    if (d->policy.error[0])
        json_object_object_add(o, "metadata_error", json_object_new_string(d->policy.error));
    return o;
}

static json_object *dom_json(const struct model_dom *d, const struct pol_decision *dec,
                             const struct hd_config *cfg)
{
    json_object *o = json_object_new_object(), *vs = json_object_new_array();

    json_object_object_add(o, "name", json_object_new_string(d->name));
    json_object_object_add(o, "uuid", json_object_new_string(d->uuid));
    json_object_object_add(o, "pool", json_object_new_int64(d->pool));
    json_object_object_add(o, "vcpus", json_object_new_int64(d->nvcpu));
    json_object_object_add(o, "threads", json_object_new_int64(d->threads));
    json_object_object_add(o, "measured", json_object_new_boolean(d->measured));
    json_object_object_add(o, "run", num(d->run));
    json_object_object_add(o, "wait", num(d->wait));
    json_object_object_add(o, "demand", num(d->demand));
    json_object_object_add(o, "acked", json_object_new_boolean(d->acked));
    if (d->acked) {
        char list[CH_CPULIST_MAX_LEN];
        if (ch_cpulist_format(&d->applied, list, sizeof(list)) >= 0)
            json_object_object_add(o, "applied", json_object_new_string(list));
    }
    for (unsigned v = 0; v < d->nvcpu; v++) {
        json_object *x = json_object_new_object();
        json_object_object_add(x, "id", json_object_new_int64(d->vcpu[v].id));
        json_object_object_add(x, "run", num(d->vcpu[v].run));
        json_object_object_add(x, "wait", num(d->vcpu[v].wait));
        json_object_object_add(x, "home", json_object_new_int(d->vcpu[v].home));
        json_object_object_add(x, "last", json_object_new_int(d->vcpu[v].last));
        json_object_object_add(x, "halted", json_object_new_boolean(d->vcpu[v].halted));
        json_object_array_add(vs, x);
    }
    json_object_object_add(o, "vcpu", vs);
    json_object_object_add(o, "settings", settings_json(d, cfg));
    if (dec)
        json_object_object_add(o, "decision", decision_json(dec));
    return o;
}

json_object *rep_build(const struct model *m, const struct pol_decision *dec,
                       const struct hd_config *cfg)
{
    json_object *root = json_object_new_object(), *doms = json_object_new_array();

    json_object_object_add(root, "version", json_object_new_string(COREHINT_VERSION));
    json_object_object_add(root, "t_ns", json_object_new_uint64(m->t_ns));
    json_object_object_add(root, "interval_s", num(m->interval_s));
    json_object_object_add(root, "host", host_json(m));
    json_object_object_add(root, "pools", pools_json(m, dec, cfg));
    for (unsigned i = 0; i < m->ndom; i++)
        json_object_array_add(doms, dom_json(&m->dom[i], dec ? &dec[i] : NULL, cfg));
    json_object_object_add(root, "domains", doms);
    return root;
}
