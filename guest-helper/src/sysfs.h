/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs: the guest kernel's CPU files under <sysfs-root>/devices/system/cpu/ — the preferred
 * set (read, validate-by-kernel write, read back), the online set and the SMT siblings — and
 * <proc-root>/stat.  Functions return 0 or -errno; predicates return bool.
 */
#ifndef GUESTD_SYSFS_H
#define GUESTD_SYSFS_H

#include <limits.h>
#include <stdbool.h>

#include "corehint/cpulist.h"
#include "governor.h"
#include "corehint/procstat.h"

struct sysfs {
    char root[PATH_MAX]; /* sysfs root, normally /sys */
    char preferred[PATH_MAX];
    char online[PATH_MAX];
    char cpu_dir[PATH_MAX];
    char proc_stat[PATH_MAX];
};

/* Returns -ENAMETOOLONG when a path does not fit. */
int sysfs_init(struct sysfs *s, const char *sysfs_root, const char *proc_root);

/* The kernel has a preferred file (the v11 series or later). */
bool sysfs_supported(const struct sysfs *s);
/* ... and this process may write it. */
bool sysfs_writable(const struct sysfs *s);

int sysfs_read_preferred(const struct sysfs *s, ch_cpuset *out);
/*
 * Make the preferred set equal to *set: read it, and when it differs write the whole cpulist
 * and "\n" in one write(), check write and close, read back and compare.  Returns 0 when it
 * wrote, 1 when the file already held *set, -errno when the kernel refused (-EIO: the read
 * back differs).
 */
int sysfs_write_preferred(const struct sysfs *s, const ch_cpuset *set);
int sysfs_read_online(const struct sysfs *s, ch_cpuset *out);
/* The union of the isolated and nohz_full files; absent or "(null)" files count as empty. */
void sysfs_read_isolated(const struct sysfs *s, ch_cpuset *out);
/* SMT cores of the online CPUs; a CPU without topology files is its own core. */
int sysfs_read_topology(const struct sysfs *s, const ch_cpuset *online, struct cpu_topology *t);
int sysfs_read_cpustat(const struct sysfs *s, struct cpustat *out);

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
int sysfs_sample(const struct sysfs *s, struct sample *out);
/* <sysfs-root>/module/NAME exists: the module is loaded (or built in). */
bool sysfs_module_loaded(const struct sysfs *s, const char *name);

#endif
