/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fallback: what the guest does with its preferred set while no host lease is held.
 *   local  - one governor_step() per interval, written through the mask backend;
 *   kernel - load the in-kernel steal_governor module (with our interval and thresholds) and
 *            let it own the preferred file; unload it when host hints resume;
 *   none   - keep every online CPU preferred.
 */
#ifndef GUESTD_FALLBACK_H
#define GUESTD_FALLBACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "governor.h"
#include "mask.h"
#include "sample.h"

#define FALLBACK_MODULE "steal_governor"
/* modprobe gets this long before it is killed. */
#define FALLBACK_CHILD_TIMEOUT_MS 10000u

struct event;
struct event_base;

/* A background modprobe ended: rc 0, or -errno (-ETIMEDOUT: killed after the timeout). */
typedef void (*fallback_done_fn)(void *ctx, int rc);

struct fallback {
    const struct config *cfg;
    const struct mask_backend *mask;
    bool active;
    bool module_ours;        /* a guestd loaded steal_governor: ours to unload */
    enum fallback_kind kind; /* in force while active: kernel degrades to local on failure */
    /* modprobe in the background (attached to a loop): never waited for inside it */
    pid_t child;      /* running, 0 when none */
    bool child_loads; /* it loads (else unloads) */
    bool leave_after; /* unload as soon as the load ends */
    struct event *ev_chld, *ev_timeout;
    fallback_done_fn done;
    void *ctx;
};

void fallback_init(struct fallback *f, const struct config *cfg, const struct mask_backend *mask);
/* A new config applies from the next fallback_enter(). */
void fallback_reconfigure(struct fallback *f, const struct config *cfg);

/* Run modprobe in the background of base from now on; done is called when one ends.
 * Without it (--once, --restore) modprobe is waited for, at most FALLBACK_CHILD_TIMEOUT_MS. */
int fallback_attach(struct fallback *f, struct event_base *base, fallback_done_fn done, void *ctx);
/* Wait for a running modprobe (bounded) and stop using the loop. */
void fallback_detach(struct fallback *f);
/* A background modprobe is running. */
bool fallback_busy(const struct fallback *f);
/* steal_governor, if loaded, is a guestd's: loaded (or being loaded) by one. */
bool fallback_owns_module(const struct fallback *f);
/* The mask's owner (mask_probe's owner) is our steal_governor: not someone else's. */
bool fallback_owns_mask(const struct fallback *f, const char *owner);
/* <sysfs-root>/module/steal_governor exists: the module is loaded (or built in). */
bool fallback_module_loaded(const struct config *cfg);

/* Start; *applied is the preferred set afterwards (with kernel, the module's load may still be
 * running: the next ticks report what it does).  Returns 0 or -errno. */
int fallback_enter(struct fallback *f, const struct sample *cur, ch_cpuset *applied);
/*
 * One interval: prev and cur are the last two samples, *applied the set in force (updated).
 * Returns 1 when the set changed, 0 when not, -errno when a write failed.  *action says
 * what the local governor decided (GOV_HOLD for the other kinds).
 */
int fallback_tick(struct fallback *f, const struct sample *prev, const struct sample *cur,
                  ch_cpuset *applied, enum governor_action *action);
/* Stop (host hints resumed, or shutdown).  Returns 0, -errno, or -EINPROGRESS when the
 * module is being unloaded in the background: the preferred file is free once done is called. */
int fallback_leave(struct fallback *f);

/* Run argv[0] with argv, wait for it (killed after FALLBACK_CHILD_TIMEOUT_MS); 0 when it
 * exited 0, else -errno/-ECHILD/-ETIMEDOUT. */
int fallback_run(const char *const argv[]);
/* modprobe -r steal_governor when <sysfs>/module/steal_governor exists and a guestd loaded
 * it (--restore). */
int fallback_unload_module(const struct config *cfg);

#endif
