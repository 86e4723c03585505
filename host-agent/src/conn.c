// SPDX-License-Identifier: LGPL-2.1-or-later
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

#include "corehint/log.h"

struct conn {
    char uri[256];
    bool readonly;
    conn_fn fn;
    void *ctx;
    virConnectPtr vc;
    unsigned generation;
    int ev_ids[8];
    unsigned nev;
};

static void silent(void *opaque, virErrorPtr err)
{
}

void conn_init_libvirt(void)
{
    virSetErrorFunc(NULL, silent);
}

const char *conn_error(void)
{
    const char *m = virGetLastErrorMessage();

    return m ? m : "unknown libvirt error";
}

int conn_sched_params(virDomainPtr dom, virTypedParameterPtr *params, int *n)
{
    char *type;

    *params = NULL;
    *n = 0;
    if (!(type = virDomainGetSchedulerType(dom, n)))
        return -EIO;
    free(type);
    if (*n <= 0)
        return -EIO;
    if (!(*params = calloc((size_t)*n, sizeof(**params))))
        return -ENOMEM;
    if (virDomainGetSchedulerParametersFlags(dom, *params, n, VIR_DOMAIN_AFFECT_LIVE) < 0) {
        free(*params);
        *params = NULL;
        return -EIO;
    }
    return 0;
}

bool conn_error_is_denied(void)
{
    virErrorPtr e = virGetLastError();

    if (!e)
        return false;
    if (e->code == VIR_ERR_AUTH_FAILED || e->code == VIR_ERR_AUTH_UNAVAILABLE ||
        e->code == VIR_ERR_AUTH_CANCELLED)
        return true;
    return e->message && strstr(e->message, strerror(EACCES));
}

static const char *lifecycle_name(int ev)
{
    static const char *const n[] = {"defined", "undefined", "started",     "suspended", "resumed",
                                    "stopped", "shutdown",  "pmsuspended", "crashed"};

    return ev >= 0 && (unsigned)ev < sizeof(n) / sizeof(n[0]) ? n[ev] : "lifecycle";
}

static void notify_dom(struct conn *c, virDomainPtr dom, const char *what)
{
    char uuid[VIR_UUID_STRING_BUFLEN];

    if (virDomainGetUUIDString(dom, uuid) < 0)
        return;
    log_msg(LOG_LVL_DEBUG, "domain %s (%s): %s", virDomainGetName(dom), uuid, what);
    c->fn(c->ctx, CONN_DOM_CHANGED, uuid);
}

static int on_lifecycle(virConnectPtr vc, virDomainPtr dom, int event, int detail, void *opaque)
{
    /* Migration shows up as started/stopped or suspended/resumed with a "migrated" detail. */
    log_msg(LOG_LVL_INFO, "domain %s: %s (detail %d)", virDomainGetName(dom), lifecycle_name(event),
            detail);
    notify_dom(opaque, dom, lifecycle_name(event));
    return 0;
}

static void on_tunable(virConnectPtr vc, virDomainPtr dom, virTypedParameterPtr params, int nparams,
                       void *opaque)
{
    notify_dom(opaque, dom, "tunable");
}

static void on_device(virConnectPtr vc, virDomainPtr dom, const char *alias, void *opaque)
{
    notify_dom(opaque, dom, "device");
}

/* `virsh metadata` (corehint's per-VM policy, or hostd's own cap record) */
static void on_metadata(virConnectPtr vc, virDomainPtr dom, int type, const char *nsuri,
                        void *opaque)
{
    notify_dom(opaque, dom, "metadata");
}

static void on_agent(virConnectPtr vc, virDomainPtr dom, int state, int reason, void *opaque)
{
    notify_dom(opaque, dom, "agent");
}

static void on_close(virConnectPtr vc, int reason, void *opaque)
{
    struct conn *c = opaque;

    /* Closing the connection from inside its own close callback is not allowed: the worker
     * tears it down when it sees the flag. */
    log_msg(LOG_LVL_WARN, "libvirt connection %s closed (reason %d)", c->uri, reason);
    c->fn(c->ctx, CONN_CLOSED, NULL);
}

void conn_drop(struct conn *c)
{
    if (!c->vc)
        return;
    for (unsigned i = 0; i < c->nev; i++)
        virConnectDomainEventDeregisterAny(c->vc, c->ev_ids[i]);
    c->nev = 0;
    virConnectUnregisterCloseCallback(c->vc, on_close);
    virConnectClose(c->vc);
    c->vc = NULL;
}

virConnectPtr conn_connect(const char *uri, bool readonly)
{
    virConnectPtr vc = readonly ? virConnectOpenReadOnly(uri) : virConnectOpen(uri);

    /* Keepalive notices a hung or dead libvirtd even when no call is in flight. */
    if (vc && virConnectSetKeepAlive(vc, 5, 3) < 0)
        log_msg(LOG_LVL_DEBUG, "no keepalive on %s: %s", uri, conn_error());
    return vc;
}

int conn_open(struct conn *c)
{
    virConnectPtr vc = conn_connect(c->uri, c->readonly);

    if (!vc)
        return -ENOTCONN;
    c->vc = vc;
    c->generation++;
    if (virConnectRegisterCloseCallback(vc, on_close, c, NULL) < 0)
        log_msg(LOG_LVL_DEBUG, "no close callback on %s: %s", c->uri, conn_error());
    struct {
        int id;
        virConnectDomainEventGenericCallback cb;
    } evs[] = {
        {VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle)},
        {VIR_DOMAIN_EVENT_ID_TUNABLE, VIR_DOMAIN_EVENT_CALLBACK(on_tunable)},
        {VIR_DOMAIN_EVENT_ID_DEVICE_ADDED, VIR_DOMAIN_EVENT_CALLBACK(on_device)},
        {VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED, VIR_DOMAIN_EVENT_CALLBACK(on_device)},
        {VIR_DOMAIN_EVENT_ID_AGENT_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(on_agent)},
        {VIR_DOMAIN_EVENT_ID_METADATA_CHANGE, VIR_DOMAIN_EVENT_CALLBACK(on_metadata)},
    };
    _Static_assert(sizeof(evs) / sizeof(evs[0]) <= sizeof(c->ev_ids) / sizeof(c->ev_ids[0]),
                   "ev_ids too small");
    for (unsigned i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
        int id = virConnectDomainEventRegisterAny(vc, NULL, evs[i].id, evs[i].cb, c, NULL);
        if (id < 0)
            log_msg(LOG_LVL_DEBUG, "%s: no domain event %d: %s", c->uri, evs[i].id, conn_error());
        else
            c->ev_ids[c->nev++] = id;
    }
    log_msg(LOG_LVL_INFO, "connected to %s (generation %u)%s", c->uri, c->generation,
            c->readonly ? ", read-only" : ", read-write");
    return 0;
}

struct conn *conn_new(const char *uri, bool readonly, conn_fn fn, void *ctx)
{
    struct conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    snprintf(c->uri, sizeof(c->uri), "%s", uri);
    c->readonly = readonly;
    c->fn = fn;
    c->ctx = ctx;
    return c;
}

virConnectPtr conn_get(const struct conn *c)
{
    return c->vc;
}

unsigned conn_generation(const struct conn *c)
{
    return c->generation;
}

void conn_free(struct conn *c)
{
    if (!c)
        return;
    conn_drop(c);
    free(c);
}
