/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * worker: every libvirt call hostd makes, off the event loop.  One worker thread owns the
 * connection (conn.h) and the collector (collect.h) and runs samples and CPU quota changes in
 * the order they were submitted; qemu-ga commands run in that order on a second thread (the
 * qemu-ga lane) with a connection of its own, so a hung agent never delays a sample.
 * libvirt's own event loop (keepalive, domain events, the close callback) runs on a third
 * thread; its callbacks only set flags under the worker's lock.  Results come back to the libevent
 * loop through a pipe and are handed to the owner's callback there, one at a time, in order; the
 * loop never waits for the worker.  While disconnected the worker reopens with exponential backoff
 * (0.5 s to 30 s) on its own.
 */
#ifndef HOSTD_WORKER_H
#define HOSTD_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "config.h"
#include "corehint/cpulist.h"
#include "snapshot.h"

struct worker;

enum wk_kind {
    WK_SAMPLE, /* job and result: one collector sample */
    WK_AGENT,  /* job and result: apply a preferred set through qemu-ga */
    WK_QUOTA,  /* job and result: set (cpus > 0) or remove (cpus < 0) a domain's CPU quota */
    WK_UP,     /* result only: connected (again) */
    WK_DOWN,   /* result only: the connection was lost, or an attempt to open it failed */
};

struct wk_job {
    enum wk_kind kind;
    char uuid[SNAP_UUID_LEN + 1];
    char name[SNAP_NAME_MAX];
    enum cfg_actuator how; /* WK_AGENT */
    ch_cpuset cpus;        /* WK_AGENT */
    unsigned nvcpu;        /* WK_AGENT */
    double quota_cpus;     /* WK_QUOTA */
};

struct wk_result {
    struct wk_job job;     /* what was asked (kind WK_UP/WK_DOWN: only kind is set) */
    int rc;                /* 0 or -errno */
    char err[256];         /* why, when rc < 0 */
    bool denied;           /* WK_DOWN: libvirt refused us (authentication, socket permissions) */
    unsigned gen;          /* connection generation the job ran on */
    struct snapshot *snap; /* WK_SAMPLE with rc 0: the receiver takes ownership */
    uint64_t took_ms;      /* how long the job ran */
};

/* Runs on the event loop.  r is valid only during the call (take r->snap to keep it). */
typedef void (*wk_result_fn)(void *ctx, struct wk_result *r);

/*
 * Register libvirt's default event implementation, start both threads and the first
 * connection attempt.  proc_root as for col_new().  Returns NULL with a logged error.
 */
struct worker *wk_start(struct event_base *base, const char *uri, bool readonly,
                        const char *proc_root, wk_result_fn fn, void *ctx);
/* Queue a job; -EBUSY when the queue is full (the caller tries again next interval). */
int wk_submit(struct worker *w, const struct wk_job *j);
/* A sample was submitted and its result has not been delivered yet. */
bool wk_sample_pending(const struct worker *w);
/* The worker holds a live connection (may change at any moment: for status only). */
bool wk_connected(const struct worker *w);
/*
 * Stop: jobs still queued run first when drain_ms > 0 and the worker is connected, for at most
 * drain_ms (cap releases at shutdown); then both threads are joined, and the results of the
 * quota jobs (only those) go to the result function before wk_stop() returns.  A worker
 * stuck in a libvirt call longer than that is left to the process exit.
 */
void wk_stop(struct worker *w, unsigned drain_ms);

#endif
