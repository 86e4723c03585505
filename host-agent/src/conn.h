/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conn: the libvirt connection, used from hostd's libvirt worker thread only (worker.h).
 * Opens it (read-only unless write access is needed), subscribes to domain lifecycle,
 * tunable, device and agent events, and turns libvirt's close callback into a flag.  Events
 * and the close callback arrive on libvirt's event thread: the callback given to conn_new
 * must be thread-safe and must not call libvirt.  Every connection gets a new generation
 * number: samples from different generations are never compared.
 */
#ifndef HOSTD_CONN_H
#define HOSTD_CONN_H

#include <stdbool.h>

#include <libvirt/libvirt.h>

struct conn;

enum conn_event {
    CONN_CLOSED,      /* libvirt says the connection is gone; uuid NULL */
    CONN_DOM_CHANGED, /* something about the domain changed: lifecycle, vCPUs, devices */
};

/* Runs on libvirt's event thread (CONN_CLOSED may also run inside a failing call). */
typedef void (*conn_fn)(void *ctx, enum conn_event ev, const char *uuid);

/* Silence libvirt's default error printer; errors are read with conn_error(). */
void conn_init_libvirt(void);
/* The calling thread's last libvirt error as one string, for log messages. */
const char *conn_error(void);
/* The last libvirt error was a refusal (authentication, or the socket's permissions). */
bool conn_error_is_denied(void);
/* dom's live scheduler parameters (libvirt wants their count first): 0 with *params (free with
 * virTypedParamsFree(*params, *n)) and *n, or -EIO / -ENOMEM. */
int conn_sched_params(virDomainPtr dom, virTypedParameterPtr *params, int *n);

struct conn *conn_new(const char *uri, bool readonly, conn_fn fn, void *ctx);
/* Open uri (read-only or read-write) with keepalive, no events; NULL with the reason in
 * conn_error().  conn_open() uses it; so does the qemu-ga lane for its own connection. */
virConnectPtr conn_connect(const char *uri, bool readonly);
/* One attempt.  Returns 0 or -ENOTCONN (the reason is in conn_error()). */
int conn_open(struct conn *c);
/* The live connection, or NULL while disconnected. */
virConnectPtr conn_get(const struct conn *c);
unsigned conn_generation(const struct conn *c);
/* Deregister and close (the connection died, or hostd is stopping). */
void conn_drop(struct conn *c);
void conn_free(struct conn *c);

#endif
