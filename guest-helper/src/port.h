/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * port: the guest end of the corehint channel.  Either a virtio-serial port (a character
 * device, normally /dev/virtio-ports/org.corehint.0 -> /dev/vportNpM) or a UNIX stream socket
 * (tests, other transports): which one is decided by stat() at every (re)open.  The port never
 * gives up: absence, a socket's EOF and errors close it and retry after a backoff of 100 ms
 * doubling to 5 s.  A virtio port stays open while its host side is closed (EOF, POLLHUP): it
 * leaves the loop and waits for SIGIO, which virtio_console raises when the host side opens or
 * closes (a 1 s probe backs the signal up), then says "up" again.  Input is cut into lines by
 * ch_framer; output is buffered up to 64 KiB (PROTOCOL.md §7), whole messages that do not fit
 * are dropped and counted.
 */
#ifndef GUESTD_PORT_H
#define GUESTD_PORT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct config;
struct port;

struct port_ops {
    void (*up)(void *ctx); /* opened or connected: time to say hello */
    void (*line)(void *ctx, const char *line, size_t len);
    void (*oversized)(void *ctx); /* a line over CH_LINE_MAX was dropped */
    void (*down)(void *ctx);      /* closed (a reopen is scheduled) or the host side left */
};

struct port_stats {
    uint64_t opens;
    uint64_t arrivals; /* virtio: the host side opened while the port was open */
    uint64_t lines;
    uint64_t oversized;    /* lines over CH_LINE_MAX, dropped */
    uint64_t dropped_msgs; /* output messages that did not fit the buffer */
    uint64_t write_stalls; /* virtio writes that took nothing */
    uint64_t discarded;    /* virtio: bytes a host left unread when it went away, dropped */
};

struct port *port_new(struct event_base *base, const struct config *cfg, const struct port_ops *ops,
                      void *ctx);
/* Try to open now; failures schedule retries. */
void port_start(struct port *p);
/* Take a new config; the port is reopened when its path changed. */
void port_reconfigure(struct port *p, const struct config *cfg);
/* Queue one whole message.  Returns 0, -ENOTCONN, or -ENOBUFS (dropped and counted). */
int port_send(struct port *p, const char *buf, size_t len);
bool port_connected(const struct port *p);
/* Handle what the host has already sent, now (before a lease is declared expired). */
void port_drain(struct port *p);
void port_get_stats(const struct port *p, struct port_stats *out);
void port_free(struct port *p);

/*
 * Resolve the configured port to a path: anything but "auto" is itself; "auto" is
 * <dev-root>/virtio-ports/org.corehint.0 when it exists, else <dev-root>/<vportNpM> for the
 * <sysfs-root>/class/virtio-ports/vportNpM whose "name" is org.corehint.0.  Returns 0 or
 * -ENOENT.
 */
int port_resolve(const char *port, const char *dev_root, const char *sysfs_root, char *out,
                 size_t outlen);

#endif
