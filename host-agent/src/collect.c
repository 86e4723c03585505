// SPDX-License-Identifier: LGPL-2.1-or-later
#include "collect.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <libvirt/virterror.h>

#include "clock.h"
#include "config.h"
#include "conn.h"
#include "corehint/file.h"
#include "corehint/log.h"
#include "corehint/procstat.h"
#include "domxml.h"

#define XML_REFRESH_SAMPLES 60
/* a cap record whose cpus did not parse: still a cap to give back */
#define CAP_UNKNOWN_CPUS 0.001

struct xml_entry {
    char uuid[SNAP_UUID_LEN + 1];
    struct dx_info info;
    /* vCPU pinning, read with the XML and refreshed with it (vcpupin raises the TUNABLE
     * event): aff_words words of host CPU bits per vCPU, for aff_nvcpu vCPUs of a host with
     * aff_npcpu CPUs */
    uint64_t *aff;
    unsigned aff_nvcpu, aff_npcpu, aff_words;
    unsigned age;
    bool stale;
};

struct collector {
    char proc_root[256];
    unsigned shares_default; /* libvirt's cpu_shares of a domain nobody weighted, 0 unknown */
    struct xml_entry *cache; /* sorted by uuid */
    unsigned ncache;
    bool all_stale;
    /* the host's online CPUs at the last sample: libvirt's pinning of a vCPU nobody pinned is
     * every online CPU, so a CPU taken offline or brought back makes every cached pinning old */
    struct hd_pset online;
    unsigned online_n; /* CPUs the map covers, 0 before the first sample */
};

unsigned col_shares_default(const char *proc_root)
{
    char path[300], *text, *line, *save = NULL;
    size_t len;
    unsigned out = 100; /* cgroup v2 cpu.weight, unless a v1 hierarchy shows up */

    if (!proc_root[0])
        return 0;
    snprintf(path, sizeof(path), "%s/self/cgroup", proc_root);
    if (ch_read_file(path, (size_t)1 << 16, &text, &len) < 0)
        return 0;
    /* v2 alone: one line "0::/path"; v1 or hybrid: a line per v1 hierarchy ("4:cpu,cpuacct:/") */
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, "0::", 3) != 0)
            out = 1024; /* cgroup v1 cpu.shares */
    free(text);
    return out;
}

struct collector *col_new(const char *proc_root)
{
    struct collector *col = calloc(1, sizeof(*col));

    if (col) {
        snprintf(col->proc_root, sizeof(col->proc_root), "%s", proc_root);
        col->shares_default = col_shares_default(proc_root);
    }
    return col;
}

static void cache_free(struct xml_entry *cache, unsigned n)
{
    for (unsigned i = 0; cache && i < n; i++)
        free(cache[i].aff);
    free(cache);
}

void col_free(struct collector *col)
{
    if (!col)
        return;
    cache_free(col->cache, col->ncache);
    free(col);
}

static struct xml_entry *cache_find(struct collector *col, const char *uuid)
{
    return hd_find_uuid(col->cache, col->ncache, sizeof(*col->cache),
                        offsetof(struct xml_entry, uuid), uuid);
}

void col_invalidate(struct collector *col, const char *uuid)
{
    struct xml_entry *e;

    if (!uuid)
        col->all_stale = true;
    else if ((e = cache_find(col, uuid)))
        e->stale = true;
}

/* The live cpu_shares (the XML's <shares>, if any, is only what was asked at start; `virsh
 * schedinfo` changes it); xml_value when it cannot be read. */
static unsigned live_shares(virDomainPtr dom, unsigned xml_value)
{
    virTypedParameterPtr params;
    unsigned long long v = 0;
    unsigned out = xml_value;
    int n;

    if (conn_sched_params(dom, &params, &n) < 0)
        return out;
    if (virTypedParamsGetULLong(params, n, VIR_DOMAIN_SCHEDULER_CPU_SHARES, &v) == 1 && v > 0 &&
        v <= 262144)
        out = (unsigned)v;
    virTypedParamsFree(params, n);
    return out;
}

/* Say once per change what the domain's corehint metadata now asks for, or why it is ignored. */
static void policy_news(const char *name, const struct snap_policy *old,
                        const struct snap_policy *now)
{
    char what[160];

    if (old && old->present == now->present && strcmp(old->error, now->error) == 0 &&
        old->weight == now->weight && old->opt_out == now->opt_out &&
        old->actuator == now->actuator)
        return;
    if (!now->present) {
        if (old && old->present)
            log_msg(LOG_LVL_INFO,
                    "domain %s: corehint metadata removed; hostd.conf and the "
                    "defaults apply",
                    name);
        return;
    }
    if (now->error[0]) {
        log_msg(LOG_LVL_WARN,
                "domain %s: corehint metadata (%s) ignored: %s; hostd.conf and "
                "the defaults apply",
                name, DX_POLICY_URI, now->error);
        return;
    }
    what[0] = '\0';
    if (now->weight > 0)
        snprintf(what, sizeof(what), " weight %g", now->weight);
    if (now->opt_out >= 0)
        snprintf(what + strlen(what), sizeof(what) - strlen(what), " opt_out %s",
                 now->opt_out ? "yes" : "no");
    if (now->actuator >= 0)
        snprintf(what + strlen(what), sizeof(what) - strlen(what), " actuator %s",
                 cfg_actuator_name((enum cfg_actuator)now->actuator));
    log_msg(LOG_LVL_INFO, "domain %s: corehint metadata:%s", name, what[0] ? what : " empty");
}

static struct snap_vcpu *vcpu_slot(struct snap_dom *d, unsigned id)
{
    for (unsigned i = 0; i < d->nvcpu; i++)
        if (d->vcpu[i].id == id)
            return &d->vcpu[i];
    return NULL;
}

/* Where each vCPU may run (libvirt's live pinning: <vcpupin>, else <vcpu cpuset>, else numad's
 * or every host CPU); -EAGAIN when libvirt did not say. */
static int dom_pinning(struct snap_dom *d, virDomainPtr dom, unsigned npcpu)
{
    unsigned maxv = d->nvcpu, maplen = VIR_CPU_MAPLEN(npcpu);
    unsigned char *maps;
    int n;

    if (maxv == 0)
        return 0;
    if (!(maps = calloc(maxv, maplen)))
        return -ENOMEM;
    n = virDomainGetVcpuPinInfo(dom, (int)maxv, maps, (int)maplen, VIR_DOMAIN_AFFECT_LIVE);
    for (int i = 0; i < n && (unsigned)i < maxv; i++) {
        struct snap_vcpu *v = vcpu_slot(d, (unsigned)i);
        if (!v)
            continue;
        for (unsigned p = 0; p < npcpu && p < HD_PCPU_MAX; p++)
            if (VIR_CPU_USABLE(maps, maplen, i, p))
                pset_set(&v->affinity, p);
    }
    free(maps);
    return n < 0 ? -EAGAIN : 0;
}

/* The pinning cached with the XML, if it describes this domain's vCPUs on this host. */
static bool pinning_cached(const struct xml_entry *e, struct snap_dom *d, unsigned npcpu)
{
    if (!e->aff || e->aff_nvcpu != d->nvcpu || e->aff_npcpu != npcpu)
        return d->nvcpu == 0 && e->aff_nvcpu == 0;
    for (unsigned i = 0; i < d->nvcpu; i++)
        memcpy(d->vcpu[i].affinity.w, e->aff + (size_t)i * e->aff_words,
               e->aff_words * sizeof(uint64_t));
    return true;
}

/* Topology, shares, channel and vCPU pinning from the live XML and libvirt's pin info, cached
 * between samples: read again when an event says they changed (col_invalidate) and every
 * XML_REFRESH_SAMPLES samples, not per sample.  Returns -EAGAIN when they could not be read or
 * parsed: the defaults are used for this sample only, and the caller makes the next sample
 * read them again (a failure cached for XML_REFRESH_SAMPLES would leave a new domain without
 * its channel for that long). */
static int dom_xml(struct collector *col, virDomainPtr dom, struct snap_dom *d, unsigned npcpu)
{
    struct xml_entry *e = cache_find(col, d->uuid);
    struct dx_info info;
    bool fresh = false;
    char *xml;
    int rc = 0;

    if (e && !e->stale && !col->all_stale && e->age < XML_REFRESH_SAMPLES &&
        pinning_cached(e, d, npcpu)) {
        info = e->info;
    } else if ((xml = virDomainGetXMLDesc(dom, 0))) {
        if (dx_parse(xml, strlen(xml), &info) < 0) {
            log_msg(e ? LOG_LVL_DEBUG : LOG_LVL_WARN, "domain %s: unparsable XML", d->name);
            rc = -EAGAIN;
            if (e)
                info = e->info; /* what was last known beats the defaults */
        } else {
            fresh = true;
        }
        free(xml);
        /* What the kernel weighs the domain by, set in the XML or not: libvirt's cpu_shares
         * is its cgroup's cpu.shares (v1) or cpu.weight (v2). */
        info.shares = live_shares(dom, info.shares);
        if (dom_pinning(d, dom, npcpu) < 0) {
            rc = -EAGAIN;
            if (e)
                (void)pinning_cached(e, d, npcpu); /* what was last known beats none */
        }
        if (e)
            e->age = 0;
    } else {
        log_msg(LOG_LVL_INFO, "domain %s: cannot read its XML (%s); trying again next sample",
                d->name, conn_error());
        if (e) {
            info = e->info; /* what was last known beats the defaults */
            (void)pinning_cached(e, d, npcpu);
        } else {
            memset(&info, 0, sizeof(info));
            info.threads = 1;
        }
        rc = -EAGAIN;
    }
    if (fresh)
        policy_news(d->name, e ? &e->info.policy : NULL, &info.policy);
    d->threads = info.threads;
    d->shares = info.shares;
    memcpy(d->channel, info.channel, sizeof(d->channel));
    d->cap_recorded = info.cap.present ? (info.cap.cpus > 0 ? info.cap.cpus : CAP_UNKNOWN_CPUS) : 0;
    d->policy = info.policy;
    return rc;
}

static void cache_rebuild(struct collector *col, const struct snapshot *s)
{
    struct xml_entry *n = calloc(s->ndom + 1, sizeof(*n));
    unsigned words = (s->npcpu + 63) / 64;

    if (!n)
        return; /* keep the old cache: only costs extra XML reads */
    for (unsigned i = 0; i < s->ndom; i++) {
        const struct xml_entry *old = cache_find(col, s->dom[i].uuid);
        const struct snap_dom *d = &s->dom[i];

        memcpy(n[i].uuid, s->dom[i].uuid, sizeof(n[i].uuid));
        if (d->nvcpu && words && (n[i].aff = calloc((size_t)d->nvcpu * words, sizeof(uint64_t)))) {
            for (unsigned v = 0; v < d->nvcpu; v++)
                memcpy(n[i].aff + (size_t)v * words, d->vcpu[v].affinity.w,
                       words * sizeof(uint64_t));
            n[i].aff_nvcpu = d->nvcpu;
            n[i].aff_npcpu = s->npcpu;
            n[i].aff_words = words;
        }
        n[i].info.threads = s->dom[i].threads;
        n[i].info.shares = s->dom[i].shares;
        memcpy(n[i].info.channel, s->dom[i].channel, sizeof(n[i].info.channel));
        n[i].info.cap.present = s->dom[i].cap_recorded > 0;
        n[i].info.cap.cpus = s->dom[i].cap_recorded;
        n[i].info.policy = s->dom[i].policy;
        n[i].age = old && !old->stale && !col->all_stale ? old->age + 1 : 0;
    }
    cache_free(col->cache, col->ncache);
    col->cache = n;
    col->ncache = s->ndom;
    col->all_stale = false;
}

/* "vcpu.<n>.<field>" -> n and field. */
static bool vcpu_field(const char *name, unsigned *id, char *field, size_t size)
{
    unsigned long n;
    char *end;

    if (strncmp(name, "vcpu.", 5) != 0 || name[5] < '0' || name[5] > '9')
        return false;
    errno = 0;
    n = strtoul(name + 5, &end, 10);
    if (errno || *end != '.' || n > UINT32_MAX || strlen(end + 1) >= size)
        return false;
    *id = (unsigned)n;
    snprintf(field, size, "%s", end + 1);
    return true;
}

/* vcpu.<n>.* from the bulk stats record. */
static int dom_stats(struct snap_dom *d, const virDomainStatsRecord *rec)
{
    unsigned max = 0;

    for (int i = 0; i < rec->nparams; i++) {
        const virTypedParameter *p = &rec->params[i];
        if (strcmp(p->field, "vcpu.maximum") == 0 && p->type == VIR_TYPED_PARAM_UINT)
            max = p->value.ui;
        else if (strcmp(p->field, "state.state") == 0 && p->type == VIR_TYPED_PARAM_INT)
            d->state = p->value.i;
        else if (strcmp(p->field, "cpu.time") == 0 && p->type == VIR_TYPED_PARAM_ULLONG)
            d->cpu_time_ns = p->value.ul;
    }
    if (max > HD_PCPU_MAX * 8)
        max = HD_PCPU_MAX * 8;
    if (max && !(d->vcpu = calloc(max, sizeof(*d->vcpu))))
        return -ENOMEM;
    for (unsigned i = 0; i < max; i++) {
        d->vcpu[i].id = i;
        d->vcpu[i].pcpu = -1;
    }
    d->nvcpu = max;
    for (int i = 0; i < rec->nparams; i++) {
        const virTypedParameter *p = &rec->params[i];
        char field[VIR_TYPED_PARAM_FIELD_LENGTH];
        unsigned id;
        struct snap_vcpu *v;

        if (!vcpu_field(p->field, &id, field, sizeof(field)) || id >= max)
            continue;
        v = &d->vcpu[id];
        if (strcmp(field, "state") == 0 && p->type == VIR_TYPED_PARAM_INT)
            v->online = p->value.i != VIR_VCPU_OFFLINE;
        else if (strcmp(field, "time") == 0 && p->type == VIR_TYPED_PARAM_ULLONG)
            v->time_ns = p->value.ul;
        else if (strcmp(field, "delay") == 0 && p->type == VIR_TYPED_PARAM_ULLONG) {
            v->delay_ns = p->value.ul;
            v->has_delay = true;
        } else if (strcmp(field, "halted") == 0 && p->type == VIR_TYPED_PARAM_BOOLEAN) {
            v->halted = p->value.b;
            v->has_halted = true;
        }
    }
    return 0;
}

/* Drivers without vCPU statistics (test:///): the vCPUs, their run time and where they last ran
 * from virDomainGetVcpus.  qemu's bulk statistics list every vCPU: no call per domain. */
static int dom_vcpus_fallback(struct snap_dom *d, virDomainPtr dom, unsigned npcpu)
{
    virDomainInfo di;
    virVcpuInfoPtr info;
    unsigned maxv;
    int n;

    if (d->nvcpu > 0)
        return 0;
    if (virDomainGetInfo(dom, &di) < 0 || di.nrVirtCpu == 0)
        return 0;
    maxv = di.nrVirtCpu < HD_PCPU_MAX * 8 ? di.nrVirtCpu : HD_PCPU_MAX * 8;
    if (!(d->vcpu = calloc(maxv, sizeof(*d->vcpu))) || !(info = calloc(maxv, sizeof(*info))))
        return -ENOMEM;
    for (unsigned i = 0; i < maxv; i++)
        d->vcpu[i] = (struct snap_vcpu){.id = i, .pcpu = -1};
    d->nvcpu = maxv;
    n = virDomainGetVcpus(dom, info, (int)maxv, NULL, 0);
    for (int i = 0; i < n; i++) {
        struct snap_vcpu *v = vcpu_slot(d, info[i].number);
        if (!v)
            continue;
        v->pcpu = info[i].cpu >= 0 && (unsigned)info[i].cpu < npcpu ? info[i].cpu : -1;
        v->time_ns = info[i].cpuTime;
        v->online = true;
    }
    free(info);
    return 0;
}

/* Busy and idle time of every host CPU from proc_root/stat: one file read instead of one
 * RPC per CPU.  false when the file does not describe every CPU (the caller asks libvirt). */
static bool node_stats_proc(const struct collector *col, struct snapshot *s)
{
    struct cpustat *st;
    char path[sizeof(col->proc_root) + 8];
    long hz = sysconf(_SC_CLK_TCK);
    bool ok = false;

    if (!col->proc_root[0] || hz <= 0 || !(st = malloc(sizeof(*st))))
        return false;
    snprintf(path, sizeof(path), "%s/stat", col->proc_root);
    if (procstat_read(path, st) == 0) {
        uint64_t ns = 1000000000u / (uint64_t)hz;
        ok = true;
        for (unsigned p = 0; p < s->npcpu && ok; p++) {
            /* an offline CPU has no line: libvirt knows what to say for it */
            ok = ch_cpuset_test(&st->present, p);
            if (!ok)
                break;
            s->pcpu[p].busy_ns = (st->total[p] - st->idle[p] - st->steal[p]) * ns;
            s->pcpu[p].idle_ns = st->idle[p] * ns;
        }
    }
    free(st);
    if (!ok)
        for (unsigned p = 0; p < s->npcpu; p++)
            s->pcpu[p].busy_ns = s->pcpu[p].idle_ns = 0;
    return ok;
}

static void node_stats(const struct collector *col, struct snapshot *s, virConnectPtr vc)
{
    virNodeCPUStatsPtr params = NULL;
    int n = 0;

    if (node_stats_proc(col, s)) {
        s->has_pcpu_stats = true;
        return;
    }

    if (virNodeGetCPUStats(vc, 0, NULL, &n, 0) < 0 || n <= 0) {
        log_msg(LOG_LVL_DEBUG, "no host CPU statistics: %s", conn_error());
        return;
    }
    if (!(params = calloc((size_t)n, sizeof(*params))))
        return;
    s->has_pcpu_stats = true;
    for (unsigned p = 0; p < s->npcpu; p++) {
        int got = n;
        if (virNodeGetCPUStats(vc, (int)p, params, &got, 0) < 0) {
            s->has_pcpu_stats = false;
            break;
        }
        for (int i = 0; i < got; i++) {
            if (strcmp(params[i].field, VIR_NODE_CPU_STATS_KERNEL) == 0 ||
                strcmp(params[i].field, VIR_NODE_CPU_STATS_USER) == 0)
                s->pcpu[p].busy_ns += params[i].value;
            else if (strcmp(params[i].field, VIR_NODE_CPU_STATS_IDLE) == 0 ||
                     strcmp(params[i].field, VIR_NODE_CPU_STATS_IOWAIT) == 0)
                s->pcpu[p].idle_ns += params[i].value;
        }
    }
    free(params);
}

/* Up to max decimal fields after p; returns how many were read. */
static unsigned numbers(const char *p, uint64_t *out, unsigned max)
{
    unsigned n = 0;

    while (n < max) {
        char *end;
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            break;
        errno = 0;
        out[n] = strtoull(p, &end, 10);
        if (errno)
            break;
        n++;
        p = end;
    }
    return n;
}

int col_parse_schedstat(const char *text, struct snap_pcpu *pcpu, unsigned npcpu)
{
    unsigned found = 0;

    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        uint64_t f[10];

        /* version 15+: cpuN yld(0) 0 sched_count sched_goidle ttwu ttwu_local run wait slices */
        if (strncmp(l, "cpu", 3) != 0 || numbers(l + 3, f, 10) != 10)
            continue;
        if (f[0] < npcpu) {
            pcpu[f[0]].wait_ns = f[8];
            found++;
        }
    }
    return found ? 0 : -EINVAL;
}

int col_parse_psi(const char *text, uint64_t *some_total_us)
{
    const char *p = strstr(text, "some ");
    const char *t = p ? strstr(p, "total=") : NULL;

    if (!t || numbers(t + 6, some_total_us, 1) != 1)
        return -EINVAL;
    return 0;
}

/* /proc/schedstat of a big host stays well below 1 MiB; a longer one is cut there. */
static char *read_small(const char *path)
{
    char *buf;
    size_t len;

    return ch_read_file(path, (size_t)1 << 20, &buf, &len) < 0 ? NULL : buf;
}

static void proc_stats(struct collector *col, struct snapshot *s)
{
    char path[300];
    char *text;

    if (!col->proc_root[0])
        return;
    snprintf(path, sizeof(path), "%s/schedstat", col->proc_root);
    if ((text = read_small(path))) {
        s->has_schedstat = col_parse_schedstat(text, s->pcpu, s->npcpu) == 0;
        free(text);
    }
    snprintf(path, sizeof(path), "%s/pressure/cpu", col->proc_root);
    if ((text = read_small(path))) {
        s->has_psi = col_parse_psi(text, &s->psi_some_us) == 0;
        free(text);
    }
}

/* Note the host's online CPUs (map: libvirt's bitmap of npcpu CPUs); when they changed since the
 * last sample, every domain's pinning is read again. */
static void online_changed(struct collector *col, const unsigned char *map, unsigned npcpu)
{
    struct hd_pset now;

    pset_zero(&now);
    for (unsigned p = 0; map && p < npcpu; p++)
        if (VIR_CPU_USED(map, p))
            pset_set(&now, p);
    if (col->online_n && (col->online_n != npcpu || memcmp(&now, &col->online, sizeof(now)) != 0)) {
        log_msg(LOG_LVL_INFO,
                "the host's online CPUs changed: reading every domain's pinning again");
        col->all_stale = true;
    }
    col->online = now;
    col->online_n = npcpu;
}

int col_sample(struct collector *col, virConnectPtr vc, struct snapshot **out)
{
    virDomainStatsRecordPtr *recs = NULL;
    unsigned char *map = NULL;
    struct snapshot *s = snap_new();
    char(*xml_failed)[SNAP_UUID_LEN + 1] = NULL; /* domains whose XML must be read again */
    unsigned nfailed = 0;
    int n, rc = 0;

    *out = NULL;
    if (!s)
        return -ENOMEM;
    if ((n = virNodeGetCPUMap(vc, &map, NULL, 0)) < 0) {
        rc = virConnectIsAlive(vc) == 1 ? -EIO : -ENOTCONN;
        log_msg(LOG_LVL_WARN, "cannot count host CPUs: %s", conn_error());
        goto cleanup;
    }
    if ((unsigned)n > HD_PCPU_MAX) {
        log_msg(LOG_LVL_ERR, "host has %d CPUs; corehint-hostd handles at most %u", n, HD_PCPU_MAX);
        rc = -ERANGE;
        goto cleanup;
    }
    s->npcpu = (unsigned)n;
    online_changed(col, map, s->npcpu);
    s->shares_default = col->shares_default;
    if (!(s->pcpu = calloc(s->npcpu + 1, sizeof(*s->pcpu)))) {
        rc = -ENOMEM;
        goto cleanup;
    }
    /* NOWAIT: statistics that need a domain job (vCPU halted state comes from the qemu
     * monitor) are skipped for a domain whose job is taken, instead of waiting for it: a domain
     * being started, stopped or migrated holds its job for seconds, and libvirt waits up to 30 s
     * for it, all that time with this loop (leases, HTTP) stopped.  Seen in e2e churn. */
    n = virConnectGetAllDomainStats(
        vc, VIR_DOMAIN_STATS_STATE | VIR_DOMAIN_STATS_VCPU | VIR_DOMAIN_STATS_CPU_TOTAL, &recs,
        VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE | VIR_CONNECT_GET_ALL_DOMAINS_STATS_NOWAIT);
    s->t_ns = hd_mono_ns();
    if (n < 0) {
        rc = virConnectIsAlive(vc) == 1 ? -EIO : -ENOTCONN;
        log_msg(LOG_LVL_WARN, "cannot get domain statistics: %s", conn_error());
        goto cleanup;
    }
    if (!(s->dom = calloc((size_t)n + 1, sizeof(*s->dom))) ||
        !(xml_failed = calloc((size_t)n + 1, sizeof(*xml_failed)))) {
        rc = -ENOMEM;
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        struct snap_dom *d = &s->dom[s->ndom];

        if (virDomainGetUUIDString(recs[i]->dom, d->uuid) < 0)
            continue;
        snprintf(d->name, sizeof(d->name), "%s", virDomainGetName(recs[i]->dom));
        s->ndom++;
        if ((rc = dom_stats(d, recs[i])) < 0 ||
            (rc = dom_vcpus_fallback(d, recs[i]->dom, s->npcpu)) < 0)
            goto cleanup;
        if (dom_xml(col, recs[i]->dom, d, s->npcpu) < 0)
            memcpy(xml_failed[nfailed++], d->uuid, sizeof(d->uuid));
    }
    node_stats(col, s, vc);
    proc_stats(col, s);
    snap_sort(s);
    cache_rebuild(col, s);
    for (unsigned i = 0; i < nfailed; i++)
        col_invalidate(col, xml_failed[i]);
    *out = s;
    s = NULL;

cleanup:
    free(map);
    if (recs)
        virDomainStatsRecordListFree(recs);
    free(xml_failed);
    snap_free(s);
    return rc;
}
