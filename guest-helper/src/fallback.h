/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fallback: what the guest does with its preferred set while no host lease is held.
 *   local  - one governor_step() per interval, written through sysfs;
 *   kernel - load the in-kernel steal_governor module (with our interval and thresholds) and
 *            let it own the preferred file; unload it when host hints resume;
 *   none   - keep every online CPU preferred.
 */
#ifndef GUESTD_FALLBACK_H
#define GUESTD_FALLBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "governor.h"
#include "sysfs.h"

#define FALLBACK_MODULE "steal_governor"

struct fallback {
    const struct config *cfg;
    const struct sysfs *sys;
    bool active;
    bool module_ours;        /* we loaded steal_governor and must unload it */
    enum fallback_kind kind; /* in force while active: kernel degrades to local on failure */
};

void fallback_init(struct fallback *f, const struct config *cfg, const struct sysfs *sys);
/* A new config applies from the next fallback_enter(). */
void fallback_reconfigure(struct fallback *f, const struct config *cfg);

/* Start; *applied is the preferred set afterwards.  Returns 0 or -errno. */
int fallback_enter(struct fallback *f, const struct sample *cur, ch_cpuset *applied);
/*
 * One interval: prev and cur are the last two samples, *applied the set in force (updated).
 * Returns 1 when the set changed, 0 when not, -errno when a write failed.  *action says
 * what the local governor decided (GOV_HOLD for the other kinds).
 */
int fallback_tick(struct fallback *f, const struct sample *prev, const struct sample *cur,
                  ch_cpuset *applied, enum governor_action *action);
/* Stop (host hints resumed, or shutdown).  Returns 0 or -errno. */
int fallback_leave(struct fallback *f);

/* Run argv[0] with argv, wait for it; 0 when it exited 0, else -errno/-ECHILD. */
int fallback_run(const char *const argv[]);
/* modprobe -r steal_governor when <sysfs>/module/steal_governor exists (--restore). */
int fallback_unload_module(const struct config *cfg, const struct sysfs *sys);

#endif
