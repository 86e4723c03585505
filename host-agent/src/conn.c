// SPDX-License-Identifier: LGPL-2.1-or-later
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/virterror.h>

#include "corehint/log.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

struct conn {
    struct event_base *base;
    char uri[256];
    conn_fn fn;
    void *ctx;
    virConnectPtr vc;
    unsigned generation;
    unsigned backoff_ms;
    int ev_ids[5];
    unsigned nev;
    bool closing;        /* the close callback fired; tear down from the loop */
    struct event *retry; /* reconnect timer, also used to defer teardown */
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
    c->fn(c->ctx, CONN_DOM_CHANGED, uuid, what);
}

static int on_lifecycle(virConnectPtr vc, virDomainPtr dom, int event, int detail, void *opaque)
{
    struct conn *c = opaque;
    char what[64];

    /* Migration shows up as started/stopped or suspended/resumed with a "migrated" detail. */
    snprintf(what, sizeof(what), "%s (detail %d)", lifecycle_name(event), detail);
    log_msg(LOG_LVL_INFO, "domain %s: %s", virDomainGetName(dom), what);
    notify_dom(c, dom, what);
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

static void on_agent(virConnectPtr vc, virDomainPtr dom, int state, int reason, void *opaque)
{
    notify_dom(opaque, dom, "agent");
}

static void on_close(virConnectPtr vc, int reason, void *opaque);

static void drop(struct conn *c)
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

static void schedule_retry(struct conn *c)
{
    struct timeval tv = {c->backoff_ms / 1000, (long)(c->backoff_ms % 1000) * 1000};

    evtimer_add(c->retry, &tv);
    c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void on_close(virConnectPtr vc, int reason, void *opaque)
{
    struct conn *c = opaque;
    struct timeval now = {0, 0};

    /* Closing the connection from inside its own close callback is not allowed: defer. */
    log_msg(LOG_LVL_WARN, "libvirt connection %s closed (reason %d)", c->uri, reason);
    c->closing = true;
    evtimer_add(c->retry, &now);
}

static int try_open(struct conn *c)
{
    virConnectPtr vc = virConnectOpen(c->uri);

    if (!vc) {
        log_msg(LOG_LVL_WARN, "cannot connect to %s: %s; retrying in %u ms", c->uri, conn_error(),
                c->backoff_ms);
        return -ENOTCONN;
    }
    c->vc = vc;
    c->generation++;
    c->backoff_ms = BACKOFF_MIN_MS;
    /* Keepalive notices a hung or dead libvirtd even when no call is in flight. */
    if (virConnectSetKeepAlive(vc, 5, 3) < 0)
        log_msg(LOG_LVL_DEBUG, "no keepalive on %s: %s", c->uri, conn_error());
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
    };
    for (unsigned i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
        int id = virConnectDomainEventRegisterAny(vc, NULL, evs[i].id, evs[i].cb, c, NULL);
        if (id < 0)
            log_msg(LOG_LVL_DEBUG, "%s: no domain event %d: %s", c->uri, evs[i].id, conn_error());
        else
            c->ev_ids[c->nev++] = id;
    }
    log_msg(LOG_LVL_INFO, "connected to %s (generation %u)", c->uri, c->generation);
    c->fn(c->ctx, CONN_UP, NULL, NULL);
    return 0;
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    /* libvirt may run the close callback inside a call that then fails: the caller's
     * conn_lost() has dropped the connection and rescheduled this timer by the time it fires.
     * Only a connection still held is torn down here (which schedules the retry); otherwise
     * this is the retry itself, and returning without one would end reconnecting for good. */
    if (c->closing) {
        c->closing = false;
        if (c->vc) {
            conn_lost(c);
            return;
        }
    }
    if (!c->vc && try_open(c) < 0)
        schedule_retry(c);
}

struct conn *conn_new(struct event_base *base, const char *uri, conn_fn fn, void *ctx)
{
    struct conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->base = base;
    snprintf(c->uri, sizeof(c->uri), "%s", uri);
    c->fn = fn;
    c->ctx = ctx;
    c->backoff_ms = BACKOFF_MIN_MS;
    if (!(c->retry = evtimer_new(base, on_retry, c))) {
        free(c);
        return NULL;
    }
    return c;
}

int conn_open(struct conn *c)
{
    if (try_open(c) == 0)
        return 0;
    schedule_retry(c);
    return -ENOTCONN;
}

virConnectPtr conn_get(const struct conn *c)
{
    return c->vc;
}

unsigned conn_generation(const struct conn *c)
{
    return c->generation;
}

void conn_lost(struct conn *c)
{
    if (!c->vc)
        return;
    log_msg(LOG_LVL_WARN, "lost libvirt connection %s; reconnecting", c->uri);
    c->closing = false; /* whatever the close callback reported is handled here */
    drop(c);
    c->fn(c->ctx, CONN_DOWN, NULL, NULL);
    evtimer_del(c->retry);
    schedule_retry(c);
}

void conn_free(struct conn *c)
{
    if (!c)
        return;
    drop(c);
    event_free(c->retry);
    free(c);
}
