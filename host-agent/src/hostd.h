/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hostd: the daemon's modules as main.c wires them, shared with the snapshot sources
 * (source.h).  Everything here belongs to the event loop.
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

/* The one way into the engine: s (owned by the callee from here on), sampled on connection
 * generation gen, is fed to the engine; a decision brings the registry up to it and is handed
 * to the source's ->decided.  Returns what eng_feed() returned. */
int hd_feed(struct hostd *h, struct snapshot *s, unsigned gen);
/* Renew the leases: the latest decision, or all vCPUs once it is older than the staleness
 * limit (then widened). */
void hd_deliver(struct hostd *h, uint64_t now_ms);
/* Print the latest decision's report on stdout. */
void hd_print_report(struct hostd *h, int json_flags);

#endif
