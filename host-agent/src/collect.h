/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * collect: one sample of the host through libvirt (run by the libvirt worker, worker.h).  Per
 * interval: one virConnectGetAllDomainStats(STATE|VCPU|CPU_TOTAL) for the running domains,
 * each domain's vCPU placement (virDomainGetVcpus) and pinning (virDomainGetVcpuPinInfo),
 * host per-CPU busy and idle time (from /proc/stat for a local hypervisor, else
 * virNodeGetCPUStats, one RPC per CPU), and, for a local hypervisor, /proc/schedstat and
 * /proc/pressure/cpu when present.  The domain XML (topology, shares, channel) is read when a
 * domain first appears, after an event about it, and once a minute otherwise.
 */
#ifndef HOSTD_COLLECT_H
#define HOSTD_COLLECT_H

#include <stdbool.h>

#include <libvirt/libvirt.h>

#include "snapshot.h"

struct collector;

/* proc_root: where /proc is read from ("" = do not read it: remote hypervisor). */
struct collector *col_new(const char *proc_root);
/* libvirt's cpu_shares of a domain nobody weighted on the host proc_root shows: 1024 when
 * proc_root/self/cgroup shows a cgroup v1 hierarchy (cpu.shares), 100 on cgroup v2 alone
 * (cpu.weight), 0 when unknown (remote hypervisor, unreadable). */
unsigned col_shares_default(const char *proc_root);
void col_free(struct collector *col);
/* Re-read the XML of uuid (NULL: of every domain) at the next sample. */
void col_invalidate(struct collector *col, const char *uuid);
/*
 * Take one sample.  Returns 0 and a new snapshot in *out, -ENOTCONN when the connection is
 * dead (the caller reconnects), or another -errno.
 */
int col_sample(struct collector *col, virConnectPtr vc, struct snapshot **out);

/* Parsers of the /proc files, exposed for unit tests. */
int col_parse_schedstat(const char *text, struct snap_pcpu *pcpu, unsigned npcpu);
int col_parse_psi(const char *text, uint64_t *some_total_us);

#endif
