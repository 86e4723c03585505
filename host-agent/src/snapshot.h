/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One sample of everything hostd measures: produced by collect (from libvirt) or by record's
 * replay (from a JSON-lines trace), consumed by model.  Counters are cumulative as libvirt and
 * the kernel report them; model turns two snapshots into rates.
 */
#ifndef HOSTD_SNAPSHOT_H
#define HOSTD_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corehint/cpulist.h"

/*
 * Host CPU sets are kept compact: a snapshot of 1000 VMs x 64 vCPUs holds 64000 affinities,
 * and a ch_cpuset (CH_CPU_MAX bits) each would cost 64 MiB.  Hosts with more pCPUs than this
 * are refused at collection time with a clear message.
 */
#define HD_PCPU_MAX 1024u
#define HD_PSET_WORDS (HD_PCPU_MAX / 64)

struct hd_pset {
    uint64_t w[HD_PSET_WORDS];
};

void pset_zero(struct hd_pset *s);
void pset_set(struct hd_pset *s, unsigned cpu);
bool pset_test(const struct hd_pset *s, unsigned cpu);
unsigned pset_count(const struct hd_pset *s);
/* first member >= from, or -1 */
int pset_next(const struct hd_pset *s, unsigned from);
void pset_or(struct hd_pset *dst, const struct hd_pset *a);
/* Conversions to and from the shared cpulist type; -ERANGE when a member is >= HD_PCPU_MAX. */
int pset_from_cpuset(struct hd_pset *dst, const ch_cpuset *src);
void pset_to_cpuset(ch_cpuset *dst, const struct hd_pset *src);
/* The cpulist text of s in buf; returns its length or -ENOSPC. */
int pset_format(const struct hd_pset *s, char *buf, size_t size);

#define pset_foreach(cpu, set)                                                                     \
    for (int cpu = pset_next((set), 0); cpu >= 0; cpu = pset_next((set), (unsigned)cpu + 1))

#define SNAP_NAME_MAX 256
#define SNAP_UUID_LEN 36
#define SNAP_PATH_MAX 108 /* sun_path */

struct snap_vcpu {
    unsigned id; /* libvirt vCPU number = guest logical CPU for boot-time x86 vCPUs */
    bool online;
    uint64_t time_ns;  /* vcpu.<n>.time: cumulative run time */
    uint64_t delay_ns; /* vcpu.<n>.delay: cumulative host run-queue wait (the guest's steal) */
    bool has_delay;
    bool halted; /* vcpu.<n>.halted, when the hypervisor reports it */
    bool has_halted;
    int pcpu;                /* pCPU it last ran on, -1 unknown */
    struct hd_pset affinity; /* pinning; empty = unknown (treated as every host CPU) */
};

/* Per-VM policy from the domain's own <metadata> (namespace DX_POLICY_URI, domxml.h), as
 * parsed; hostd.conf's [domain] section overrides it key by key (cfg_domain_settings()). */
struct snap_policy {
    bool present;         /* the element exists (valid or not) */
    double weight;        /* 0: not set */
    signed char opt_out;  /* -1: not set, 0, 1 */
    signed char actuator; /* -1: not set, else an enum cfg_actuator */
    char error[128];      /* why the element was ignored, "" when valid (or absent) */
};

struct snap_dom {
    char name[SNAP_NAME_MAX];
    char uuid[SNAP_UUID_LEN + 1];
    int state;                   /* virDomainState */
    uint64_t cpu_time_ns;        /* cpu.time: whole domain, emulator threads included */
    unsigned threads;            /* guest topology threads per core, >= 1 */
    unsigned shares;             /* live cpu_shares (the cgroup's weight), 0 unknown */
    char channel[SNAP_PATH_MAX]; /* socket of the org.corehint.0 channel, "" when none */
    double cap_recorded;         /* CPUs of a cap a hostd recorded in its metadata, 0 none */
    struct snap_policy policy;   /* from the domain's metadata */
    /* The guest's housekeeping CPUs as its helper's hello gave them; empty when unknown (the
     * policy then keeps the lowest vCPU in every set). */
    ch_cpuset housekeeping;
    /* Delivery: acked when the guest's helper acknowledged hostd's hints in host mode and has
     * not gone silent (or qemu-ga carried the last one out); applied is the set it reported.
     * Compliance is judged only when acked, against hinted, not applied: what a guest says it
     * applied is only its word. */
    /* hinted: the set the guest is judged against (has_hinted; a trace without it: the last
     * decision): the last hint once its status acknowledges that hint, else what it applied
     * (a guest still applying a newer hint is not held to it yet). */
    bool acked;
    bool has_hinted;
    ch_cpuset applied;
    ch_cpuset hinted;
    unsigned nvcpu;
    struct snap_vcpu *vcpu; /* sorted by id */
};

struct snap_pcpu {
    uint64_t busy_ns; /* user + kernel (+ irq), cumulative */
    uint64_t idle_ns; /* idle + iowait, cumulative */
    uint64_t wait_ns; /* /proc/schedstat run-queue wait, cumulative */
};

struct snapshot {
    uint64_t t_ns; /* CLOCK_MONOTONIC at collection, or the trace's stamp in replay */
    unsigned npcpu;
    unsigned shares_default; /* cpu_shares of an unweighted domain here (1024, 100), 0 unknown */
    struct snap_pcpu *pcpu;
    bool has_pcpu_stats;
    bool has_schedstat;
    bool has_psi;
    uint64_t psi_some_us; /* /proc/pressure/cpu "some" total */
    unsigned ndom;
    struct snap_dom *dom; /* sorted by uuid */
};

struct snapshot *snap_new(void);
void snap_free(struct snapshot *s);
/* Sort domains by uuid and vCPUs by id: model and policy walk them in that order. */
void snap_sort(struct snapshot *s);
const struct snap_dom *snap_find(const struct snapshot *s, const char *uuid);
/* The element of base[0..n) (each size bytes, sorted by the uuid string off bytes into each)
 * whose uuid is uuid, or NULL: the one lookup of hostd's per-VM arrays (snapshot, decisions,
 * registry, XML cache). */
void *hd_find_uuid(const void *base, unsigned n, size_t size, size_t off, const char *uuid);

#endif
