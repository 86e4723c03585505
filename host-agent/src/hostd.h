/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hostd: the daemon's modules as main.c wires them, shared with the snapshot sources
 * (source.h), which reach main.c's functions only through the sink main.c gives them.
 * Everything here belongs to the event loop.
 */
#ifndef HOSTD_HOSTD_H
#define HOSTD_HOSTD_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "actuate.h"
#include "clock.h"
#include "config.h"
#include "enforce.h"
#include "engine.h"
#include "http.h"
#include "privdrop.h"
#include "registry.h"
#include "source.h"

struct hostd {
    struct hd_config cfg;
    struct event_base *base;
    struct snap_source src;
    struct engine eng;
    struct registry reg;
    struct actuator act;
    struct enforcer enf;
    struct http_srv *http;
    struct privdrop priv;
    struct event *watchdog;
    FILE *record;
    struct event *sigs[3];
    uint64_t last_apply_ms; /* last time the leases were renewed */
    int exit_code;
};

#endif
