/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvirt's event loop on top of libevent: virEventRegisterImpl() with handle and timeout
 * callbacks backed by the daemon's one event_base, so libvirt's keepalives and domain events
 * are dispatched from the same loop as everything else.  Call vev_register() once, before
 * the first virConnectOpen().
 */
#ifndef HOSTD_VEVENT_H
#define HOSTD_VEVENT_H

#include <event2/event.h>

int vev_register(struct event_base *base);
/* Release every handle and timeout libvirt left behind (after the last virConnectClose). */
void vev_finalise(void);

#endif
