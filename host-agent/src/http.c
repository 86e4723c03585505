// SPDX-License-Identifier: LGPL-2.1-or-later
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "corehint/log.h"
#include "corehint/proto.h"
#include "channel.h"
#include "clock.h"

struct http_srv {
    struct evhttp *http;
    const struct engine *e;
    const struct registry *reg;
    const struct actuator *a;
    const struct enforcer *f;
    const struct hd_config *cfg;
    uint64_t requests;
};

/* Label values are host-side names, but escape them as the text format requires. */
static void label(struct evbuffer *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            evbuffer_add_printf(b, "\\%c", *s);
        else if (*s == '\n')
            evbuffer_add(b, "\\n", 2);
        else
            evbuffer_add(b, s, 1);
    }
}

static void head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void vm_labels(struct evbuffer *b, const char *name, const struct model_dom *d)
{
    evbuffer_add_printf(b, "%s{domain=\"", name);
    label(b, d->name);
    evbuffer_add_printf(b, "\",uuid=\"%s\"", d->uuid);
}

typedef double (*vm_value_fn)(const struct engine *e, const struct actuator *a, unsigned i);

static double v_demand(const struct engine *e, const struct actuator *a, unsigned i)
{
    return e->model.dom[i].demand;
}
static double v_wait(const struct engine *e, const struct actuator *a, unsigned i)
{
    return e->model.dom[i].wait;
}
static double v_entitlement(const struct engine *e, const struct actuator *a, unsigned i)
{
    return e->dec[i].entitlement;
}
static double v_preferred(const struct engine *e, const struct actuator *a, unsigned i)
{
    return e->dec[i].count;
}
static double v_vcpus(const struct engine *e, const struct actuator *a, unsigned i)
{
    return e->dec[i].nvcpu;
}
static double v_contended(const struct engine *e, const struct actuator *a, unsigned i)
{
    return e->dec[i].contended;
}
static double v_compliant(const struct engine *e, const struct actuator *a, unsigned i)
{
    return !e->dec[i].non_compliant;
}

static const struct channel *vm_channel(const struct engine *e, const struct registry *r,
                                        unsigned i)
{
    const struct vm_entry *v = reg_find(r, e->model.dom[i].uuid);

    return v ? v->act.ch : NULL;
}

static void vm_metrics(struct evbuffer *b, const struct engine *e, const struct actuator *a,
                       const struct registry *r)
{
    static const struct {
        const char *name, *help;
        vm_value_fn fn;
    } gauges[] = {
        {"corehint_vm_demand_cpus", "run + wait of the VM's vCPUs, in CPUs", v_demand},
        {"corehint_vm_wait_cpus", "host run-queue wait of the VM's vCPUs, in CPUs", v_wait},
        {"corehint_vm_entitlement_cpus", "fair share of the VM's pool, in CPUs", v_entitlement},
        {"corehint_vm_preferred_vcpus", "preferred vCPU count decided", v_preferred},
        {"corehint_vm_vcpus", "online vCPUs", v_vcpus},
        {"corehint_vm_contended", "1 when the VM's pool is over capacity", v_contended},
        {"corehint_vm_compliant", "0 when the VM keeps running non-preferred vCPUs", v_compliant},
    };

    for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
        head(b, gauges[g].name, "gauge", gauges[g].help);
        for (unsigned i = 0; i < e->ndec; i++) {
            vm_labels(b, gauges[g].name, &e->model.dom[i]);
            evbuffer_add_printf(b, "} %.6g\n", gauges[g].fn(e, a, i));
        }
    }
    head(b, "corehint_vm_applied_vcpus", "gauge",
         "vCPUs in the set the guest acknowledged applying (helper in host mode, or qemu-ga); "
         "no series while it has acknowledged none");
    for (unsigned i = 0; i < e->ndec; i++) {
        if (!e->model.dom[i].acked)
            continue;
        vm_labels(b, "corehint_vm_applied_vcpus", &e->model.dom[i]);
        evbuffer_add_printf(b, "} %u\n", ch_cpuset_count(&e->model.dom[i].applied));
    }
    head(b, "corehint_vm_guest_mode", "gauge",
         "1 for the mode the guest last reported, 0 for the others (none: no status yet)");
    for (unsigned i = 0; i < e->ndec; i++) {
        const struct channel *ch = vm_channel(e, r, i);
        const char *now = ch && ch->has_status ? ch_mode_name(ch->status.mode) : "none";
        static const char *const modes[] = {"none", "host", "fallback", "unsupported"};
        for (unsigned k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
            vm_labels(b, "corehint_vm_guest_mode", &e->model.dom[i]);
            evbuffer_add_printf(b, ",mode=\"%s\"} %d\n", modes[k], strcmp(now, modes[k]) == 0);
        }
    }
    head(b, "corehint_channel_up", "gauge", "1 when the VM's corehint channel is connected");
    for (unsigned i = 0; i < e->ndec; i++) {
        const struct channel *ch = vm_channel(e, r, i);
        if (!ch)
            continue;
        vm_labels(b, "corehint_channel_up", &e->model.dom[i]);
        evbuffer_add_printf(b, "} %d\n", ch->state == CHAN_UP);
    }
    struct {
        const char *dir, *help;
        size_t off;
    } const counters[] = {
        {"in", "valid messages received from the guest", offsetof(struct chan_counters, msgs_in)},
        {"out", "messages queued to the guest", offsetof(struct chan_counters, msgs_out)},
    };
    head(b, "corehint_channel_messages_total", "counter", "messages on the corehint channel");
    for (size_t c = 0; c < 2; c++)
        for (unsigned i = 0; i < e->ndec; i++) {
            const struct channel *ch = vm_channel(e, r, i);
            if (!ch)
                continue;
            vm_labels(b, "corehint_channel_messages_total", &e->model.dom[i]);
            evbuffer_add_printf(
                b, ",direction=\"%s\"} %llu\n", counters[c].dir,
                (unsigned long long)*(const uint64_t *)(const void *)((const char *)&ch->c +
                                                                      counters[c].off));
        }
    head(b, "corehint_channel_dropped_total", "counter",
         "guest lines dropped (malformed, oversized), host messages not sent (output) and "
         "hints replaced unsent by a newer one (replaced)");
    for (unsigned i = 0; i < e->ndec; i++) {
        const struct channel *ch = vm_channel(e, r, i);
        if (!ch)
            continue;
        const uint64_t v[4] = {ch->c.malformed, ch->c.oversized, ch->c.dropped_out, ch->c.replaced};
        const char *why[4] = {"malformed", "oversized", "output", "replaced"};
        for (int k = 0; k < 4; k++) {
            vm_labels(b, "corehint_channel_dropped_total", &e->model.dom[i]);
            evbuffer_add_printf(b, ",reason=\"%s\"} %llu\n", why[k], (unsigned long long)v[k]);
        }
    }
    head(b, "corehint_channel_input_throttled_total", "counter",
         "times reading a guest's channel paused for its input budget");
    for (unsigned i = 0; i < e->ndec; i++) {
        const struct channel *ch = vm_channel(e, r, i);
        if (!ch)
            continue;
        vm_labels(b, "corehint_channel_input_throttled_total", &e->model.dom[i]);
        evbuffer_add_printf(b, "} %llu\n", (unsigned long long)ch->c.throttled);
    }
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
    struct http_srv *h = arg;
    const struct engine *e = h->e;
    struct evbuffer *b = evbuffer_new();

    h->requests++;
    if (!b) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    if (e->decided) {
        head(b, "corehint_pcpu_contention_cpus", "gauge",
             "host busy share plus run-queue wait on the pCPU, in CPUs");
        for (unsigned p = 0; p < e->model.npcpu; p++)
            evbuffer_add_printf(b, "corehint_pcpu_contention_cpus{cpu=\"%u\"} %.6g\n", p,
                                e->model.pcpu_contention[p]);
        head(b, "corehint_pcpu_wait_cpus", "gauge",
             "run-queue wait on the pCPU, in CPUs (every task's from /proc/schedstat when "
             "hostd is local, else the vCPUs')");
        for (unsigned p = 0; p < e->model.npcpu; p++)
            evbuffer_add_printf(b, "corehint_pcpu_wait_cpus{cpu=\"%u\"} %.6g\n", p,
                                e->model.pcpu_wait[p]);
        vm_metrics(b, e, h->a, h->reg);
    }
    head(b, "corehint_decisions_total", "counter", "policy steps taken");
    evbuffer_add_printf(b, "corehint_decisions_total %llu\n", (unsigned long long)e->steps);
    head(b, "corehint_samples_too_soon_total", "counter",
         "samples skipped for following the previous one by less than half an interval");
    evbuffer_add_printf(b, "corehint_samples_too_soon_total %llu\n",
                        (unsigned long long)e->short_skipped);
    head(b, "corehint_preferred_changes_total", "counter", "preferred-set changes decided");
    evbuffer_add_printf(b, "corehint_preferred_changes_total %llu\n",
                        (unsigned long long)e->changes);
    head(b, "corehint_policy_step_seconds", "gauge", "duration of the last policy step");
    evbuffer_add_printf(b, "corehint_policy_step_seconds %.9f\n", e->last_step_ns / 1e9);
    head(b, "corehint_libvirt_connected", "gauge", "1 while the libvirt worker holds a connection");
    evbuffer_add_printf(b, "corehint_libvirt_connected %d\n", e->connected ? 1 : 0);
    head(b, "corehint_last_decision_timestamp_seconds", "gauge",
         "Unix time of the last decision from a good libvirt sample (0: none yet)");
    evbuffer_add_printf(b, "corehint_last_decision_timestamp_seconds %.3f\n", e->last_decided_unix);
    head(b, "corehint_stale", "gauge",
         "1 while no decision is younger than stale_intervals: hints widen to all vCPUs");
    evbuffer_add_printf(b, "corehint_stale %d\n", e->stale ? 1 : 0);
    head(b, "corehint_stale_episodes_total", "counter", "times the staleness limit was crossed");
    evbuffer_add_printf(b, "corehint_stale_episodes_total %llu\n",
                        (unsigned long long)e->stale_episodes);
    head(b, "corehint_sample_overruns_total", "counter",
         "ticks that found the previous libvirt sample still running");
    evbuffer_add_printf(b, "corehint_sample_overruns_total %llu\n",
                        (unsigned long long)e->overruns);
    head(b, "corehint_sample_seconds", "gauge",
         "duration of the last libvirt sample (statistics, placement, XML)");
    evbuffer_add_printf(b, "corehint_sample_seconds %.9f\n", e->last_sample_ns / 1e9);
    head(b, "corehint_caps_total", "counter", "CPU quota caps set on non-compliant VMs");
    evbuffer_add_printf(b, "corehint_caps_total %llu\n", (unsigned long long)h->f->caps);
    head(b, "corehint_cap_releases_total", "counter", "CPU quota caps removed");
    evbuffer_add_printf(b, "corehint_cap_releases_total %llu\n",
                        (unsigned long long)h->f->releases);
    head(b, "corehint_cap_failures_total", "counter",
         "CPU quota caps and releases libvirt refused or that could not be queued");
    evbuffer_add_printf(b, "corehint_cap_failures_total %llu\n",
                        (unsigned long long)h->f->failures);
    if (e->decided) {
        head(b, "corehint_vm_capped", "gauge", "1 while the VM's CPU quota is capped");
        for (unsigned i = 0; i < e->ndec; i++) {
            const struct vm_entry *v = reg_find(h->reg, e->model.dom[i].uuid);
            vm_labels(b, "corehint_vm_capped", &e->model.dom[i]);
            evbuffer_add_printf(b, "} %d\n", v && v->enf.capped);
        }
    }
    head(b, "corehint_hints_total", "counter", "hints queued to guests");
    evbuffer_add_printf(b, "corehint_hints_total %llu\n", (unsigned long long)h->a->hints_total);
    head(b, "corehint_hint_ack_seconds", "histogram",
         "from a hint queued to the guest's status acknowledging it");
    {
        static const double le[] = ACT_LAT_BUCKETS;
        uint64_t cum = 0;
        for (unsigned k = 0; k < ACT_LAT_NBUCKETS; k++) {
            cum += h->a->lat_bucket[k];
            evbuffer_add_printf(b, "corehint_hint_ack_seconds_bucket{le=\"%g\"} %llu\n", le[k],
                                (unsigned long long)cum);
        }
        cum += h->a->lat_bucket[ACT_LAT_NBUCKETS];
        evbuffer_add_printf(b, "corehint_hint_ack_seconds_bucket{le=\"+Inf\"} %llu\n",
                            (unsigned long long)cum);
        evbuffer_add_printf(b, "corehint_hint_ack_seconds_sum %.9f\n", h->a->lat_sum_ns / 1e9);
        evbuffer_add_printf(b, "corehint_hint_ack_seconds_count %llu\n", (unsigned long long)cum);
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

static void on_status(struct evhttp_request *req, void *arg)
{
    struct http_srv *h = arg;
    json_object *r = eng_report(h->e), *doms, *daemon = json_object_new_object();
    struct evbuffer *b = evbuffer_new();

    h->requests++;
    if (!r)
        r = json_object_new_object();
    if (json_object_object_get_ex(r, "domains", &doms)) {
        for (size_t i = 0; i < json_object_array_length(doms); i++) {
            json_object *d = json_object_array_get_idx(doms, i), *u, *ch;
            const struct vm_entry *v;
            const char *mode = "none";

            if (!json_object_object_get_ex(d, "uuid", &u))
                continue;
            v = reg_find(h->reg, json_object_get_string(u));
            json_object *ag = act_agent_json(h->a, v);
            if (ag)
                json_object_object_add(d, "agent", ag);
            if ((ch = act_channel_json(v))) {
                json_object_object_add(d, "channel", ch);
                if (v->act.ch->has_status)
                    mode = ch_mode_name(v->act.ch->status.mode);
            }
            json_object_object_add(d, "guest_mode", json_object_new_string(mode));
        }
    }
    json_object_object_add(daemon, "dry_run", json_object_new_boolean(h->cfg->dry_run));
    json_object_object_add(daemon, "mode",
                           json_object_new_string(cfg_mode_name(cfg_global_mode(h->cfg))));
    {
        char session[CH_SESSION_LEN + 1];
        ch_session_format(chan_session(), session);
        json_object_object_add(daemon, "session", json_object_new_string(session));
        json_object_object_add(daemon, "protocol", json_object_new_int(CH_PROTO_VERSION));
    }
    json_object_object_add(daemon, "decisions", json_object_new_uint64(h->e->steps));
    json_object_object_add(daemon, "samples_too_soon", json_object_new_uint64(h->e->short_skipped));
    json_object_object_add(daemon, "preferred_changes", json_object_new_uint64(h->e->changes));
    json_object_object_add(daemon, "policy_step_ns", json_object_new_uint64(h->e->last_step_ns));
    json_object_object_add(daemon, "sample_ns", json_object_new_uint64(h->e->last_sample_ns));
    if (h->e->live) {
        uint64_t now_ms = hd_mono_ms();
        json_object_object_add(
            daemon, "libvirt",
            json_object_new_string(h->e->connected ? "connected" : "waiting for libvirt"));
        json_object_object_add(daemon, "stale", json_object_new_boolean(h->e->stale));
        if (h->e->last_decided_ms)
            json_object_object_add(daemon, "decision_age_ms",
                                   json_object_new_uint64(now_ms - h->e->last_decided_ms));
        json_object_object_add(daemon, "stale_episodes",
                               json_object_new_uint64(h->e->stale_episodes));
        json_object_object_add(daemon, "sample_overruns", json_object_new_uint64(h->e->overruns));
    }
    json_object_object_add(daemon, "hints", json_object_new_uint64(h->a->hints_total));
    json_object_object_add(daemon, "hint_ack_p50_ns",
                           json_object_new_uint64(act_latency_quantile(h->a, 0.5)));
    json_object_object_add(daemon, "hint_ack_p99_ns",
                           json_object_new_uint64(act_latency_quantile(h->a, 0.99)));
    json_object_object_add(daemon, "hint_acks", json_object_new_uint64(h->a->nlat));
    enf_annotate(h->f, r);
    json_object_object_add(daemon, "caps", json_object_new_uint64(h->f->caps));
    json_object_object_add(daemon, "cap_releases", json_object_new_uint64(h->f->releases));
    json_object_object_add(daemon, "cap_failures", json_object_new_uint64(h->f->failures));
    json_object_object_add(r, "daemon", daemon);
    if (!b) {
        json_object_put(r);
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evbuffer_add_printf(b, "%s\n", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
    json_object_put(r);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

struct http_srv *http_start(struct event_base *base, const char *listen, const struct engine *e,
                            const struct registry *reg, const struct actuator *a,
                            const struct enforcer *f, const struct hd_config *cfg)
{
    struct http_srv *h = calloc(1, sizeof(*h));
    char addr[128], err[256];
    struct evhttp_bound_socket *bound;
    struct sockaddr_storage ss = {0};
    socklen_t sslen = sizeof(ss);
    unsigned port;

    if (!h)
        return NULL;
    if (cfg_split_listen(listen, addr, sizeof(addr), &port, err, sizeof(err)) < 0) {
        log_msg(LOG_LVL_ERR, "metrics_listen %s", err);
        goto fail;
    }
    h->e = e;
    h->reg = reg;
    h->a = a;
    h->f = f;
    h->cfg = cfg;
    if (!(h->http = evhttp_new(base)))
        goto fail;
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_max_headers_size(h->http, 8192);
    evhttp_set_max_body_size(h->http, 0);
    evhttp_set_timeout(h->http, 10);
    evhttp_set_cb(h->http, "/metrics", on_metrics, h);
    evhttp_set_cb(h->http, "/status", on_status, h);
    if (!(bound = evhttp_bind_socket_with_handle(h->http, addr, (uint16_t)port))) {
        log_msg(LOG_LVL_ERR, "cannot listen on %s: %s", listen, strerror(errno));
        goto fail;
    }
    /* With port 0 the kernel picks one: say which, tests read it from the log. */
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss, &sslen) == 0) {
        struct sockaddr_in s4;
        struct sockaddr_in6 s6;

        if (ss.ss_family == AF_INET6) {
            memcpy(&s6, &ss, sizeof(s6));
            port = ntohs(s6.sin6_port);
        } else if (ss.ss_family == AF_INET) {
            memcpy(&s4, &ss, sizeof(s4));
            port = ntohs(s4.sin_port);
        }
    }
    log_msg(LOG_LVL_INFO, "serving /metrics and /status on %s port %u", addr, port);
    return h;

fail:
    http_stop(h);
    return NULL;
}

void http_stop(struct http_srv *h)
{
    if (!h)
        return;
    if (h->http)
        evhttp_free(h->http);
    free(h);
}
