/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * http: evhttp on the same loop, 127.0.0.1:9477 by default.
 *   GET /metrics  Prometheus text format 0.0.4
 *   GET /status   JSON: the latest report (report.h) with, per domain, "channel" (see
 *                 act_channel_json) and "guest_mode", plus "daemon" counters.
 */
#ifndef HOSTD_HTTP_H
#define HOSTD_HTTP_H

#include <event2/event.h>

#include "actuate.h"
#include "config.h"
#include "enforce.h"
#include "engine.h"
#include "registry.h"

struct http_srv;

/* listen is "ADDR:PORT" ("[v6]:PORT" for IPv6); returns NULL with a logged error. */
struct http_srv *http_start(struct event_base *base, const char *listen, const struct engine *e,
                            const struct registry *reg, const struct actuator *a,
                            const struct enforcer *f, const struct hd_config *cfg);
void http_stop(struct http_srv *h);

#endif
