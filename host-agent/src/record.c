// SPDX-License-Identifier: LGPL-2.1-or-later
#include "record.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "config.h"
#include "corehint/cpulist.h"

/* A non-empty cpulist under k; nothing for an empty set. */
static void put_cpulist(json_object *o, const char *k, const ch_cpuset *set)
{
    char list[CH_CPULIST_MAX_LEN];

    if (!ch_cpuset_empty(set) && ch_cpulist_format(set, list, sizeof(list)) >= 0)
        json_object_object_add(o, k, json_object_new_string(list));
}

static void put_u64(json_object *o, const char *k, uint64_t v)
{
    json_object_object_add(o, k, json_object_new_uint64(v));
}

static json_object *policy_json(const struct snap_policy *p)
{
    json_object *o = json_object_new_object();

    if (p->weight > 0)
        json_object_object_add(o, "weight", json_object_new_double(p->weight));
    if (p->opt_out >= 0)
        json_object_object_add(o, "opt_out", json_object_new_boolean(p->opt_out));
    if (p->actuator >= 0)
        json_object_object_add(
            o, "actuator",
            json_object_new_string(cfg_actuator_name((enum cfg_actuator)p->actuator)));
    if (p->error[0])
        json_object_object_add(o, "error", json_object_new_string(p->error));
    return o;
}

static json_object *vcpu_json(const struct snap_vcpu *v)
{
    json_object *o = json_object_new_object();
    char list[4096];

    json_object_object_add(o, "id", json_object_new_int64(v->id));
    json_object_object_add(o, "online", json_object_new_boolean(v->online));
    put_u64(o, "time_ns", v->time_ns);
    if (v->has_delay)
        put_u64(o, "delay_ns", v->delay_ns);
    if (v->has_halted)
        json_object_object_add(o, "halted", json_object_new_boolean(v->halted));
    json_object_object_add(o, "pcpu", json_object_new_int(v->pcpu));
    if (pset_count(&v->affinity) && pset_format(&v->affinity, list, sizeof(list)) >= 0)
        json_object_object_add(o, "affinity", json_object_new_string(list));
    return o;
}

char *rec_format(const struct snapshot *s)
{
    json_object *root = json_object_new_object(), *doms = json_object_new_array();
    char *line = NULL;

    put_u64(root, "t_ns", s->t_ns);
    json_object_object_add(root, "npcpu", json_object_new_int64(s->npcpu));
    if (s->shares_default)
        json_object_object_add(root, "shares_default", json_object_new_int64(s->shares_default));
    if (s->has_pcpu_stats || s->has_schedstat) {
        json_object *pc = json_object_new_array();
        for (unsigned p = 0; p < s->npcpu; p++) {
            json_object *o = json_object_new_object();
            if (s->has_pcpu_stats) {
                put_u64(o, "busy_ns", s->pcpu[p].busy_ns);
                put_u64(o, "idle_ns", s->pcpu[p].idle_ns);
            }
            if (s->has_schedstat)
                put_u64(o, "wait_ns", s->pcpu[p].wait_ns);
            json_object_array_add(pc, o);
        }
        json_object_object_add(root, "pcpu", pc);
    }
    if (s->has_psi)
        put_u64(root, "psi_some_us", s->psi_some_us);
    for (unsigned i = 0; i < s->ndom; i++) {
        const struct snap_dom *d = &s->dom[i];
        json_object *o = json_object_new_object(), *vs = json_object_new_array();

        json_object_object_add(o, "name", json_object_new_string(d->name));
        json_object_object_add(o, "uuid", json_object_new_string(d->uuid));
        json_object_object_add(o, "state", json_object_new_int(d->state));
        put_u64(o, "cpu_time_ns", d->cpu_time_ns);
        json_object_object_add(o, "threads", json_object_new_int64(d->threads));
        json_object_object_add(o, "shares", json_object_new_int64(d->shares));
        if (d->channel[0])
            json_object_object_add(o, "channel", json_object_new_string(d->channel));
        put_cpulist(o, "housekeeping", &d->housekeeping);
        if (d->policy.present)
            json_object_object_add(o, "policy", policy_json(&d->policy));
        if (d->acked)
            put_cpulist(o, "applied", &d->applied);
        if (d->acked && d->has_hinted)
            put_cpulist(o, "hinted", &d->hinted);
        for (unsigned v = 0; v < d->nvcpu; v++)
            json_object_array_add(vs, vcpu_json(&d->vcpu[v]));
        json_object_object_add(o, "vcpus", vs);
        json_object_array_add(doms, o);
    }
    json_object_object_add(root, "domains", doms);
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
    size_t len = strlen(text);
    if ((line = malloc(len + 2))) {
        memcpy(line, text, len);
        memcpy(line + len, "\n", 2);
    }
    json_object_put(root);
    return line;
}

/* Typed getters: absent is fine (the default stays), present with the wrong type is not. */
static int get_u64(json_object *o, const char *k, uint64_t *out, bool *present, char *err,
                   size_t errlen)
{
    json_object *v;

    if (present)
        *present = false;
    if (!json_object_object_get_ex(o, k, &v))
        return 0;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
        snprintf(err, errlen, "\"%s\" must be a non-negative integer", k);
        return -EINVAL;
    }
    *out = json_object_get_uint64(v);
    if (present)
        *present = true;
    return 0;
}

static int get_uint(json_object *o, const char *k, unsigned max, unsigned *out, char *err,
                    size_t errlen)
{
    uint64_t v = *out;
    int rc = get_u64(o, k, &v, NULL, err, errlen);

    if (rc == 0 && v > max) {
        snprintf(err, errlen, "\"%s\" out of range (max %u)", k, max);
        return -EINVAL;
    }
    *out = (unsigned)v;
    return rc;
}

static int get_bool(json_object *o, const char *k, bool *out, bool *present, char *err,
                    size_t errlen)
{
    json_object *v;

    if (present)
        *present = false;
    if (!json_object_object_get_ex(o, k, &v))
        return 0;
    if (!json_object_is_type(v, json_type_boolean)) {
        snprintf(err, errlen, "\"%s\" must be true or false", k);
        return -EINVAL;
    }
    *out = json_object_get_boolean(v);
    if (present)
        *present = true;
    return 0;
}

static int get_str(json_object *o, const char *k, char *out, size_t size, bool required, char *err,
                   size_t errlen)
{
    json_object *v;

    if (!json_object_object_get_ex(o, k, &v)) {
        if (required)
            snprintf(err, errlen, "\"%s\" missing", k);
        return required ? -EINVAL : 0;
    }
    if (!json_object_is_type(v, json_type_string) ||
        (size_t)json_object_get_string_len(v) >= size) {
        snprintf(err, errlen, "\"%s\" must be a string shorter than %zu bytes", k, size);
        return -EINVAL;
    }
    memcpy(out, json_object_get_string(v), (size_t)json_object_get_string_len(v) + 1);
    return 0;
}

static int parse_vcpu(json_object *o, struct snap_vcpu *v, unsigned npcpu, char *err, size_t errlen)
{
    char list[4096] = "";
    json_object *pc;
    int rc;

    v->online = true;
    v->pcpu = -1;
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "a vcpu must be an object");
        return -EINVAL;
    }
    if ((rc = get_uint(o, "id", CH_CPU_MAX - 1, &v->id, err, errlen)) < 0 ||
        (rc = get_bool(o, "online", &v->online, NULL, err, errlen)) < 0 ||
        (rc = get_u64(o, "time_ns", &v->time_ns, NULL, err, errlen)) < 0 ||
        (rc = get_u64(o, "delay_ns", &v->delay_ns, &v->has_delay, err, errlen)) < 0 ||
        (rc = get_bool(o, "halted", &v->halted, &v->has_halted, err, errlen)) < 0 ||
        (rc = get_str(o, "affinity", list, sizeof(list), false, err, errlen)) < 0)
        return rc;
    if (json_object_object_get_ex(o, "pcpu", &pc)) {
        int64_t p = json_object_get_int64(pc);
        if (!json_object_is_type(pc, json_type_int) || p < -1 || p >= (int64_t)npcpu) {
            snprintf(err, errlen, "vcpu %u: \"pcpu\" must be -1 or below npcpu", v->id);
            return -EINVAL;
        }
        v->pcpu = (int)p;
    }
    if (list[0]) {
        ch_cpuset cs;
        if (ch_cpulist_parse(list, strlen(list), &cs) < 0 || ch_cpuset_last(&cs) >= (int)npcpu ||
            pset_from_cpuset(&v->affinity, &cs) < 0) {
            snprintf(err, errlen, "vcpu %u: bad \"affinity\" \"%s\"", v->id, list);
            return -EINVAL;
        }
    }
    return 0;
}

/* An optional non-empty cpulist under k; *present (if given) says whether it was there. */
static int get_cpulist(json_object *o, const char *k, ch_cpuset *out, bool *present,
                       const char *dom, char *err, size_t errlen)
{
    char list[CH_CPULIST_MAX_LEN] = "";
    int rc;

    if ((rc = get_str(o, k, list, sizeof(list), false, err, errlen)) < 0)
        return rc;
    if (present)
        *present = list[0] != '\0';
    if (list[0] && (ch_cpulist_parse(list, strlen(list), out) < 0 || ch_cpuset_empty(out))) {
        snprintf(err, errlen, "domain %s: bad \"%s\" \"%s\"", dom, k, list);
        return -EINVAL;
    }
    return 0;
}

/* A domain's metadata policy as recorded (policy_json), ranges as domxml.c checks them. */
static int parse_policy(json_object *o, struct snap_policy *p, const char *dom, char *err,
                        size_t errlen)
{
    char act[32] = "";
    json_object *po, *w;
    bool b, has_b;
    int rc;

    memset(p, 0, sizeof(*p));
    p->opt_out = -1;
    p->actuator = -1;
    if (!json_object_object_get_ex(o, "policy", &po))
        return 0;
    if (!json_object_is_type(po, json_type_object)) {
        snprintf(err, errlen, "domain %s: \"policy\" must be an object", dom);
        return -EINVAL;
    }
    p->present = true;
    if (json_object_object_get_ex(po, "weight", &w)) {
        if (!(json_object_is_type(w, json_type_double) || json_object_is_type(w, json_type_int)) ||
            !(json_object_get_double(w) >= 0.001 && json_object_get_double(w) <= 1e6)) {
            snprintf(err, errlen, "domain %s: policy \"weight\" must be a number 0.001..1e6", dom);
            return -EINVAL;
        }
        p->weight = json_object_get_double(w);
    }
    if ((rc = get_bool(po, "opt_out", &b, &has_b, err, errlen)) < 0 ||
        (rc = get_str(po, "actuator", act, sizeof(act), false, err, errlen)) < 0 ||
        (rc = get_str(po, "error", p->error, sizeof(p->error), false, err, errlen)) < 0)
        return rc;
    if (has_b)
        p->opt_out = b;
    if (act[0]) {
        p->actuator = (signed char)cfg_actuator_parse(act);
        if (p->actuator < 0) {
            snprintf(err, errlen, "domain %s: policy \"actuator\" \"%s\" unknown", dom, act);
            return -EINVAL;
        }
    }
    return 0;
}

static int parse_dom(json_object *o, struct snap_dom *d, unsigned npcpu, char *err, size_t errlen)
{
    json_object *vs;
    unsigned state = 1; /* VIR_DOMAIN_RUNNING */
    int rc;

    d->threads = 1;
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "a domain must be an object");
        return -EINVAL;
    }
    if ((rc = get_str(o, "name", d->name, sizeof(d->name), true, err, errlen)) < 0 ||
        (rc = get_str(o, "uuid", d->uuid, sizeof(d->uuid), true, err, errlen)) < 0 ||
        (rc = get_str(o, "channel", d->channel, sizeof(d->channel), false, err, errlen)) < 0 ||
        (rc = get_uint(o, "state", INT_MAX, &state, err, errlen)) < 0 ||
        (rc = get_u64(o, "cpu_time_ns", &d->cpu_time_ns, NULL, err, errlen)) < 0 ||
        (rc = get_uint(o, "threads", 64, &d->threads, err, errlen)) < 0 ||
        (rc = get_uint(o, "shares", 262144, &d->shares, err, errlen)) < 0)
        return rc;
    d->state = (int)state;
    if (d->threads == 0)
        d->threads = 1;
    if ((rc = get_cpulist(o, "housekeeping", &d->housekeeping, NULL, d->name, err, errlen)) < 0 ||
        (rc = get_cpulist(o, "applied", &d->applied, &d->acked, d->name, err, errlen)) < 0 ||
        (rc = get_cpulist(o, "hinted", &d->hinted, &d->has_hinted, d->name, err, errlen)) < 0 ||
        (rc = parse_policy(o, &d->policy, d->name, err, errlen)) < 0)
        return rc;
    if (!json_object_object_get_ex(o, "vcpus", &vs) || !json_object_is_type(vs, json_type_array)) {
        snprintf(err, errlen, "domain %s: \"vcpus\" must be an array", d->name);
        return -EINVAL;
    }
    d->nvcpu = (unsigned)json_object_array_length(vs);
    if (d->nvcpu > CH_CPU_MAX) {
        snprintf(err, errlen, "domain %s: too many vcpus", d->name);
        return -EINVAL;
    }
    if (!(d->vcpu = calloc(d->nvcpu + 1, sizeof(*d->vcpu))))
        return -ENOMEM;
    for (unsigned i = 0; i < d->nvcpu; i++)
        if ((rc = parse_vcpu(json_object_array_get_idx(vs, i), &d->vcpu[i], npcpu, err, errlen)) <
            0)
            return rc;
    for (unsigned i = 1; i < d->nvcpu; i++)
        for (unsigned j = 0; j < i; j++)
            if (d->vcpu[i].id == d->vcpu[j].id) {
                snprintf(err, errlen, "domain %s: vcpu %u listed twice", d->name, d->vcpu[i].id);
                return -EINVAL;
            }
    return 0;
}

static int parse_root(json_object *root, struct snapshot *s, char *err, size_t errlen)
{
    json_object *pc, *doms;
    int rc;

    if (!json_object_is_type(root, json_type_object)) {
        snprintf(err, errlen, "not a JSON object");
        return -EINVAL;
    }
    if ((rc = get_u64(root, "t_ns", &s->t_ns, NULL, err, errlen)) < 0 ||
        (rc = get_uint(root, "npcpu", HD_PCPU_MAX, &s->npcpu, err, errlen)) < 0 ||
        (rc = get_uint(root, "shares_default", 262144, &s->shares_default, err, errlen)) < 0 ||
        (rc = get_u64(root, "psi_some_us", &s->psi_some_us, &s->has_psi, err, errlen)) < 0)
        return rc;
    if (s->npcpu == 0) {
        snprintf(err, errlen, "\"npcpu\" missing or 0");
        return -EINVAL;
    }
    if (!(s->pcpu = calloc(s->npcpu, sizeof(*s->pcpu))))
        return -ENOMEM;
    if (json_object_object_get_ex(root, "pcpu", &pc)) {
        if (!json_object_is_type(pc, json_type_array) || json_object_array_length(pc) != s->npcpu) {
            snprintf(err, errlen, "\"pcpu\" must be an array of npcpu objects");
            return -EINVAL;
        }
        s->has_pcpu_stats = s->has_schedstat = true;
        for (unsigned p = 0; p < s->npcpu; p++) {
            json_object *o = json_object_array_get_idx(pc, p);
            bool busy = false, wait = false;
            if (!json_object_is_type(o, json_type_object)) {
                snprintf(err, errlen, "\"pcpu\" entries must be objects");
                return -EINVAL;
            }
            if ((rc = get_u64(o, "busy_ns", &s->pcpu[p].busy_ns, &busy, err, errlen)) < 0 ||
                (rc = get_u64(o, "idle_ns", &s->pcpu[p].idle_ns, NULL, err, errlen)) < 0 ||
                (rc = get_u64(o, "wait_ns", &s->pcpu[p].wait_ns, &wait, err, errlen)) < 0)
                return rc;
            s->has_pcpu_stats &= busy;
            s->has_schedstat &= wait;
        }
    }
    if (!json_object_object_get_ex(root, "domains", &doms) ||
        !json_object_is_type(doms, json_type_array)) {
        snprintf(err, errlen, "\"domains\" must be an array");
        return -EINVAL;
    }
    if (!(s->dom = calloc(json_object_array_length(doms) + 1, sizeof(*s->dom))))
        return -ENOMEM;
    for (size_t i = 0; i < json_object_array_length(doms); i++) {
        s->ndom++;
        if ((rc = parse_dom(json_object_array_get_idx(doms, i), &s->dom[i], s->npcpu, err,
                            errlen)) < 0)
            return rc;
    }
    snap_sort(s);
    for (unsigned i = 1; i < s->ndom; i++)
        if (strcmp(s->dom[i].uuid, s->dom[i - 1].uuid) == 0) {
            snprintf(err, errlen, "domain uuid %s listed twice", s->dom[i].uuid);
            return -EINVAL;
        }
    return 0;
}

int rec_parse(const char *line, struct snapshot **out, char *err, size_t errlen)
{
    enum json_tokener_error jerr;
    json_object *root = json_tokener_parse_verbose(line, &jerr);
    struct snapshot *s = snap_new();
    int rc;

    *out = NULL;
    if (!root) {
        snprintf(err, errlen, "bad JSON: %s", json_tokener_error_desc(jerr));
        snap_free(s);
        return -EINVAL;
    }
    rc = s ? parse_root(root, s, err, errlen) : -ENOMEM;
    json_object_put(root);
    if (rc < 0) {
        snap_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

struct rec_reader {
    FILE *f;
    char path[256];
    unsigned line;
    char *buf;
    size_t cap;
};

struct rec_reader *rec_open(const char *path, char *err, size_t errlen)
{
    struct rec_reader *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    if (!(r->f = fopen(path, "re"))) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(r);
        return NULL;
    }
    snprintf(r->path, sizeof(r->path), "%s", path);
    return r;
}

int rec_next(struct rec_reader *r, struct snapshot **out, char *err, size_t errlen)
{
    char msg[256];
    ssize_t n;

    *out = NULL;
    while ((n = getline(&r->buf, &r->cap, r->f)) >= 0) {
        r->line++;
        while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r'))
            r->buf[--n] = '\0';
        if (n == 0 || r->buf[0] == '#')
            continue;
        if (rec_parse(r->buf, out, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "%s:%u: %s", r->path, r->line, msg);
            return -EINVAL;
        }
        return 1;
    }
    return 0;
}

void rec_close(struct rec_reader *r)
{
    if (!r)
        return;
    fclose(r->f);
    free(r->buf);
    free(r);
}
