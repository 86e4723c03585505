/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mask: the guest kernel's preferred-CPU mask behind an ops table, so that control, fallback
 * and --restore never name a file.  One backend per way the kernel offers the mask:
 *
 *   sysfs  - /sys/devices/system/cpu/preferred of the v11 series (0013: root writes it, one
 *            owner at a time; mask_sysfs.c);
 *   driver - (to come, issue #38) the guest driver's character device on kernels corehint does
 *            not patch: a write is the same cpulist, the request lives as long as the open file
 *            (so a killed daemon's request ends with its last fd), release is a close or an
 *            explicit clear.  It plugs in as a second mask_ops with a probe that looks for its
 *            node; nothing above this header changes.
 *
 * Sampling (/proc/stat, the online set, topology, isolated CPUs) is not the mask's: sample.h.
 * Functions that act return 0 or -errno; the probe never fails (it says what it found).
 */
#ifndef GUESTD_MASK_H
#define GUESTD_MASK_H

#include <stdbool.h>

#include "corehint/cpulist.h"

#define MASK_OWNER_MAX 63
#define MASK_REASON_MAX 64 /* a hello's reason (CH_REASON_MAX) holds it */

/* What the kernel offers now.  busy: another owner holds the mask (the sysfs file answers
 * writes with EBUSY while an in-kernel policy such as steal_governor is loaded); owner names it
 * when known, for the caller to tell whether that owner is its own (fallback_owns_mask()). */
struct mask_probe {
    bool supported;                   /* the mask exists on this kernel */
    bool writable;                    /* this process may request a set */
    bool busy;                        /* another owner holds it: requests get EBUSY */
    char owner[MASK_OWNER_MAX + 1];   /* who, when busy and known; "" otherwise */
    char reason[MASK_REASON_MAX + 1]; /* first of unsupported/not writable/busy; "" if none */
};

struct mask_ops {
    const char *name;
    void (*probe)(void *ctx, struct mask_probe *out);
    int (*read)(void *ctx, ch_cpuset *out);
    /* 0 wrote, 1 already equal (nothing written), -errno refused, -EIO read back differs */
    int (*write)(void *ctx, const ch_cpuset *set);
    /* Give every CPU back and clear any standing request, written even when the mask already
     * looks whole (a request can hide behind it: see README.md, "Restore"). */
    int (*release)(void *ctx);
    const char *(*where)(void *ctx); /* the file or node, for log lines */
    void (*close)(void *ctx);
};

struct mask_backend {
    const struct mask_ops *ops;
    void *ctx;
};

/* The sysfs preferred file under sysfs_root (normally /sys).  -ENOMEM, -ENAMETOOLONG. */
int mask_sysfs_open(struct mask_backend *m, const char *sysfs_root);

static inline void mask_probe(const struct mask_backend *m, struct mask_probe *out)
{
    m->ops->probe(m->ctx, out);
}

static inline int mask_read(const struct mask_backend *m, ch_cpuset *out)
{
    return m->ops->read(m->ctx, out);
}

static inline int mask_write(const struct mask_backend *m, const ch_cpuset *set)
{
    return m->ops->write(m->ctx, set);
}

static inline int mask_release(const struct mask_backend *m)
{
    return m->ops->release(m->ctx);
}

static inline const char *mask_where(const struct mask_backend *m)
{
    return m->ops->where(m->ctx);
}

void mask_close(struct mask_backend *m);

/*
 * Shutdown and --restore: release the mask, logged.  Returns 0 when it was released, when
 * there is nothing to release (no mask) and when another owner holds it (EBUSY: an in-kernel
 * policy such as steal_governor, which gives every CPU back itself when it is unloaded);
 * -EACCES when this process may not write it (a request another process made may stand);
 * -errno when the release failed otherwise.  The caller unloads a governor of its own first.
 */
int mask_restore(const struct mask_backend *m);

#endif
