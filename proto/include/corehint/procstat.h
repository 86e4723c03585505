/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * procstat: the per-CPU time counters of /proc/stat ("cpuN user nice system idle iowait irq
 * softirq steal guest guest_nice", in USER_HZ ticks), shared by guestd (steal, for its
 * governor) and hostd (busy and idle time of the host's CPUs, without an RPC per CPU).  The
 * parser is pure so that tests can feed it synthetic text.
 */
#ifndef COREHINT_PROCSTAT_H
#define COREHINT_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "corehint/cpulist.h"

struct cpustat {
    ch_cpuset present;          /* CPUs with a "cpuN" line (the kernel prints online ones) */
    uint64_t total[CH_CPU_MAX]; /* user..steal: guest time is already inside user/nice */
    uint64_t steal[CH_CPU_MAX];
    uint64_t idle[CH_CPU_MAX]; /* idle + iowait */
};

/*
 * Parse the "cpuN" lines of a /proc/stat text of len bytes into *out (zeroed first).  The
 * aggregate "cpu" line and every other line are ignored; a truncated last line is ignored.
 * Returns 0, or -EINVAL when a "cpuN" line is malformed (fewer than 4 counters, a non-number,
 * an id >= CH_CPU_MAX, a duplicate id) or when there is no "cpuN" line at all.
 */
int procstat_parse(const char *text, size_t len, struct cpustat *out);

/* Read and parse PATH (normally <proc-root>/stat).  Returns 0 or -errno. */
int procstat_read(const char *path, struct cpustat *out);

#endif
