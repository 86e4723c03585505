/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * source: where the daemon's snapshots come from, one run mode each, behind one interface.
 *   live      the libvirt worker (worker.h) samples every interval; hints and leases go out,
 *             HTTP serves, systemd hears READY; runs until a signal.
 *   --once    the libvirt worker, two samples one interval apart; the decision is printed
 *             (one JSON document) and hostd exits.
 *   --replay  a recorded trace (record.h), one snapshot per step, each decision printed as a
 *             JSON line; --replay-realtime paces the steps at the interval, delivers hints,
 *             serves HTTP and holds the last decision after the trace ends.
 * A source hands every snapshot to its sink's ->feed (main.c's hd_feed()), the one path into
 * the engine, and is told through ->decided what to do with a decision.  The sink is how a
 * source reaches main.c: calling main.c by name would make the two modules a cycle
 * (scripts/check-cycles).  main.c asks the source's traits below instead of testing the
 * command line.  Everything here runs on the event loop.
 */
#ifndef HOSTD_SOURCE_H
#define HOSTD_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "actuate.h"
#include "enforce.h"

struct hostd;
struct snap_source;
struct snapshot;
struct rec_reader;
struct worker;

/* What a source does with what it produces, each called with the sink's ctx. */
struct src_sink {
    /* The one way into the engine: s (owned by the callee from here on), sampled on connection
     * generation gen, is fed to the engine; a decision brings the registry up to it and is
     * handed to the source's ->decided.  Returns what eng_feed() returned. */
    int (*feed)(void *ctx, struct snapshot *s, unsigned gen);
    /* Renew the leases: the latest decision, or all vCPUs once it is older than the staleness
     * limit (then widened). */
    void (*deliver)(void *ctx, uint64_t now_ms);
    /* Print the latest decision's report on stdout. */
    void (*report)(void *ctx, int json_flags);
};

struct snap_source_ops {
    /* Open the trace or start the libvirt worker, and take or schedule the first sample.
     * 0 or -errno (logged). */
    int (*start)(struct snap_source *src);
    /* A snapshot became a decision (the sink's ->feed): what this run mode does with it. */
    void (*decided)(struct snap_source *src);
    /* Stop producing: free the timers, drain the worker (cap releases queued before run),
     * close the trace. */
    void (*stop)(struct snap_source *src);
};

struct snap_source {
    const struct snap_source_ops *ops;
    struct hostd *h;
    const struct src_sink *sink;
    void *sink_ctx;
    /* traits, fixed by src_select() */
    bool live;          /* libvirt every interval until a signal: a steady tick, lease renewals,
                           READY to systemd, libvirt state in /status */
    bool delivers;      /* channels, leases and HTTP: live, and a paced replay */
    bool watchdog;      /* runs long enough to pet systemd's watchdog: all but --once */
    act_agent_fn agent; /* how qemu-ga commands run (NULL: through a socket, replay) */
    enf_quota_fn quota; /* how quotas are set (NULL: only logged, replay) */
    bool rw;            /* libvirt opened read-write (set by the live source's start) */
    /* private to the sources */
    bool once; /* the live source for --once: two samples, the report printed, exit */
    struct event *tick;
    struct event *renew;     /* live: half an interval after a tick that asked for a sample */
    uint64_t tick_ms;        /* when that tick ran */
    uint64_t sample_ms;      /* live: when the sample being fed arrived */
    uint64_t slow_warned_ms; /* last "libvirtd is slow" warning */
    unsigned status_ndom;    /* domain count in the last STATUS= sent */
    bool denied_warned;
    struct worker *wk;
    struct rec_reader *trace;
    bool trace_done;
};

/* The source the configuration asks for (live, --once, --replay), not started yet; it hands
 * what it produces to sink, with ctx. */
void src_select(struct snap_source *src, struct hostd *h, const struct src_sink *sink, void *ctx);

#endif
