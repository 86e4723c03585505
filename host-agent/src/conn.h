/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * conn: the libvirt connection.  Opens it, follows domain lifecycle, tunable, device and agent
 * events, notices when libvirtd goes away (close callback, keepalive) and reopens with
 * exponential backoff.  Every (re)connection gets a new generation number: samples from
 * different generations are never compared, so no decision comes from a stale connection.
 */
#ifndef HOSTD_CONN_H
#define HOSTD_CONN_H

#include <stdbool.h>

#include <event2/event.h>
#include <libvirt/libvirt.h>

struct conn;

enum conn_event {
    CONN_UP,          /* connected (again); uuid NULL */
    CONN_DOWN,        /* connection lost; uuid NULL */
    CONN_DOM_CHANGED, /* something about the domain changed: lifecycle, vCPUs, devices */
};

typedef void (*conn_fn)(void *ctx, enum conn_event ev, const char *uuid, const char *what);

/* Silence libvirt's default error printer; errors are read with conn_error(). */
void conn_init_libvirt(void);
/* The last libvirt error as one string, for log messages. */
/* The last libvirt error was a refusal (authentication, or the socket's permissions). */
bool conn_error_is_denied(void);
const char *conn_error(void);

struct conn *conn_new(struct event_base *base, const char *uri, conn_fn fn, void *ctx);
/* First attempt, synchronous; on failure a retry is scheduled.  Returns 0 or -ENOTCONN. */
int conn_open(struct conn *c);
/* The live connection, or NULL while disconnected. */
virConnectPtr conn_get(const struct conn *c);
unsigned conn_generation(const struct conn *c);
/* A call failed in a way that means the connection is dead: drop it and reconnect. */
void conn_lost(struct conn *c);
void conn_free(struct conn *c);

#endif
