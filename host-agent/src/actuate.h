/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * actuate: deliver the engine's decisions.  Keeps one channel per domain that has an
 * org.corehint.0 socket (from the live XML, the replay trace, or channel_dir/NAME.sock) in the
 * domain's registry record (registry.h, with its qemu-ga state), and
 * after every decision queues each non-opted-out domain's hint: its preferred vCPUs (limited
 * to the CPUs the guest said are online), lease = lease_intervals x interval.  The hint is
 * also the lease heartbeat, so it goes out every interval even when nothing changed.
 * --dry-run opens no channel and sends nothing.  qemu-ga actuators hand their commands to an
 * agent function (live: the libvirt worker) and hear back through act_agent_done(); without
 * one (replay) they talk to channel_dir/NAME.agent.sock directly.
 */
#ifndef HOSTD_ACTUATE_H
#define HOSTD_ACTUATE_H

#include <stdint.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "channel.h"
#include "config.h"
#include "engine.h"
#include "qga.h"
#include "registry.h"

#define ACT_LAT_RING 1024u
/* Upper bounds (seconds) of the hint acknowledgement histogram's buckets, +Inf last. */
#define ACT_LAT_BUCKETS                                                                            \
    {                                                                                              \
        0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0                                               \
    }
#define ACT_LAT_NBUCKETS 8u
/* Most intervals between attempts at a failing qemu-ga actuator. */
#define ACT_AGENT_BACKOFF_MAX 64u

/* Apply cpus to uuid through qemu-ga (how); 0 when queued. */
typedef int (*act_agent_fn)(void *ctx, const char *uuid, const char *name, enum cfg_actuator how,
                            const ch_cpuset *cpus, unsigned nvcpu);

struct actuator {
    struct event_base *base;
    act_agent_fn agent;
    void *agent_ctx;
    const struct hd_config *cfg;
    struct registry *reg;          /* the VMs, with their channels and qemu-ga state */
    uint64_t lat_ns[ACT_LAT_RING]; /* latest hint -> status latencies */
    uint64_t nlat;
    uint64_t lat_bucket[ACT_LAT_NBUCKETS + 1]; /* every latency, by bucket (not cumulative) */
    uint64_t lat_sum_ns;
    uint64_t hints_total;
    uint64_t hints_dropped;
};

void act_init(struct actuator *a, struct event_base *base, const struct hd_config *cfg,
              struct registry *reg, act_agent_fn agent, void *agent_ctx);
/*
 * Follow the latest decision: open/close channels, send hints, drive qemu-ga for domains
 * that opted into an agent actuator.  widen: every domain gets all its vCPUs instead
 * (reason "stale": hostd has no fresh measurement to shrink on).  Returns hints queued.
 */
unsigned act_apply(struct actuator *a, const struct engine *e, bool widen);
/* The agent function finished the command it was given for uuid. */
void act_agent_done(struct actuator *a, const char *uuid, enum cfg_actuator how,
                    const ch_cpuset *cpus, int rc, const char *err);
/* Before the first decision: open the channels of the domains of s (registry records kept by
 * reg_track()), so that their guests' hellos, with the housekeeping CPUs every preferred set
 * must hold, arrive before that decision.  (After it, act_apply() opens those of new
 * domains.) */
void act_track(struct actuator *a, const struct snapshot *s);
/* Give every domain of s whose housekeeping CPUs are unknown the ones its guest's hello
 * reported (before the snapshot is recorded and fed to e; a replayed trace's own win); a
 * guest's first hello so seen counts from e's next decision (act_apply holds its hints till
 * then). */
void act_annotate(struct actuator *a, struct snapshot *s, const struct engine *e);
/* {"ok","failed","applied","error","backoff_intervals","retry_in_intervals"} of a domain's qemu-ga
 * actuator, NULL when unused. */
json_object *act_agent_json(const struct actuator *a, const struct vm_entry *v);
/* JSON description of a domain's channel for /status (NULL when it has none). */
json_object *act_channel_json(const struct vm_entry *v);
/* Quantile q (0..1) of the recorded ack latencies in ns; 0 when none. */
uint64_t act_latency_quantile(const struct actuator *a, double q);
/* Close every channel (the records stay with the registry). */
/*
 * A clean stop (SIGTERM, systemctl stop): every guest hostd hints gets a last hint naming all
 * its vCPUs (reason "release"), written out at once, and every VM a qemu-ga actuator narrowed
 * is asked for all of them back; a guest then runs as it would without hostd (its lease
 * expires into its own fallback).  Opted-out VMs, never hinted, get nothing.  Returns the
 * hints written.
 */
unsigned act_release(struct actuator *a, const struct engine *e);
void act_finalise(struct actuator *a);

#endif
