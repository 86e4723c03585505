/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sample: what one measurement step reads from the guest kernel — <proc-root>/stat and, under
 * <sysfs-root>/devices/system/cpu/, the online set, the isolated (isolcpus=, nohz_full=) CPUs
 * and the SMT siblings.  Read-only: the preferred mask is mask.h's.  Functions return 0 or
 * -errno.
 */
#ifndef GUESTD_SAMPLE_H
#define GUESTD_SAMPLE_H

#include <limits.h>
#include <stdbool.h>

#include "corehint/cpulist.h"
#include "corehint/procstat.h"
#include "governor.h"

struct sampler {
    char online[PATH_MAX];
    char cpu_dir[PATH_MAX];
    char proc_stat[PATH_MAX];
};

/* Returns -ENAMETOOLONG when a path does not fit. */
/* dst = root + rel, at most PATH_MAX; -ENAMETOOLONG when it does not fit (also the sysfs mask
 * backend's). */
int sample_join(char *dst, const char *root, const char *rel);
/* A sysfs cpulist file (one line) into *out; -errno, -EFBIG when longer than any cpulist. */
int sample_read_cpulist(const char *path, ch_cpuset *out);
int sample_init(struct sampler *s, const char *sysfs_root, const char *proc_root);

int sample_read_online(const struct sampler *s, ch_cpuset *out);
/* The union of the isolated and nohz_full files; absent or "(null)" files count as empty. */
void sample_read_isolated(const struct sampler *s, ch_cpuset *out);
/* SMT cores of the online CPUs; a CPU without topology files is its own core. */
int sample_read_topology(const struct sampler *s, const ch_cpuset *online, struct cpu_topology *t);
int sample_read_cpustat(const struct sampler *s, struct cpustat *out);

/* What one measurement step reads: /proc/stat, the online CPUs and their cores. */
struct sample {
    struct cpustat stat;
    bool have_stat;
    ch_cpuset online;
    ch_cpuset isolated; /* isolcpus= and nohz_full= CPUs: not housekeeping */
    struct cpu_topology topo;
};

/* Fill *out; fails only when the online set cannot be read (a missing /proc/stat is logged
 * by the caller through have_stat = false). */
int sample_take(const struct sampler *s, struct sample *out);

#endif
