/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * record: snapshots as JSON lines.  --record FILE appends every sample; --replay FILE feeds
 * the same pipeline from such a file, so a trace reproduces a run exactly (timestamps come
 * from the file) and an operator can attach one to a bug report.
 *
 * One line per snapshot:
 *   {"t_ns":N,"npcpu":N,"pcpu":[{"busy_ns":N,"idle_ns":N,"wait_ns":N}...],
 *    "psi_some_us":N,"domains":[{"name":S,"uuid":S,"state":N,"cpu_time_ns":N,"threads":N,
 *    "shares":N,"channel":S,"vcpus":[{"id":N,"online":B,"time_ns":N,"delay_ns":N,
 *    "halted":B,"pcpu":N,"affinity":"cpulist"}...]}...]}
 * "pcpu", "psi_some_us", "wait_ns", "delay_ns" and "halted" are optional (absent = not
 * measured); so are "threads" (1), "shares" (0), "channel" (""), "online" (true),
 * "pcpu" of a vCPU (-1) and "affinity" (every host CPU).
 */
#ifndef HOSTD_RECORD_H
#define HOSTD_RECORD_H

#include <stdio.h>

#include "snapshot.h"

/* The JSON line of s, '\n' included; caller frees.  NULL when out of memory. */
char *rec_format(const struct snapshot *s);
/* Parse one line; returns 0, or -EINVAL with a reason in err. */
int rec_parse(const char *line, struct snapshot **out, char *err, size_t errlen);

struct rec_reader;
struct rec_reader *rec_open(const char *path, char *err, size_t errlen);
/* 1 and a snapshot, 0 at the end, -EINVAL with "FILE:LINE: reason" in err. */
int rec_next(struct rec_reader *r, struct snapshot **out, char *err, size_t errlen);
void rec_close(struct rec_reader *r);

#endif
