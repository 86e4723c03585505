/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * control: the guest helper's state machine.  It answers the port (hello, hints, errors),
 * holds the mode (host while a lease is held, fallback after it expires, unsupported without
 * a writable preferred file), measures steal every interval, follows CPU hotplug, and sends
 * a status whenever the mode or the applied set changes.
 */
#ifndef GUESTD_CONTROL_H
#define GUESTD_CONTROL_H

#include <stdio.h>

#include "config.h"
#include "port.h"

struct event_base;
struct control;

extern const struct port_ops control_port_ops;

struct control *control_new(struct event_base *base, const struct config *cfg);
void control_attach_port(struct control *c, struct port *p);
/* Probe the kernel, take the first sample, enter the initial mode, start the interval. */
int control_start(struct control *c);
void control_reconfigure(struct control *c, const struct config *cfg);
/* Shutdown: stop the fallback and make every online CPU preferred again. */
int control_stop(struct control *c);
/* --once: print the JSON result line; returns the process exit status. */
int control_once_result(const struct control *c, FILE *out);
void control_free(struct control *c);

#endif
