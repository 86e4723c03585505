/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chsim's host and guest model; see chsim.c and README.md. */
#ifndef COREHINT_SIM_H
#define COREHINT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corehint/cpulist.h"

struct sim_work {
    unsigned tasks;      /* runnable tasks in the guest */
    unsigned compute_us; /* work outside the lock per cycle (mean) */
    unsigned cs_us;      /* work inside the VM-wide spin lock per cycle (mean); 0 = no lock */
    unsigned group;      /* >0: hackbench-like, each cycle ends messaging a task of its group
                            of this size, and a task without a message sleeps */
};

struct sim_vm_spec {
    unsigned nvcpu;
    struct sim_work work;
    bool ignores_hints;  /* a non-cooperating guest: keeps every vCPU preferred */
    unsigned start_s;    /* its workload starts at this simulated second */
};

struct sim_spec {
    unsigned npcpu;
    unsigned nvm;
    struct sim_vm_spec *vm;
    uint64_t seed;
};

enum task_state {
    TASK_COMPUTE,
    TASK_SPIN,      /* spinning on the VM's lock: burns its vCPU, makes no progress */
    TASK_LOCKWAIT,  /* gave up spinning, halted until the holder releases the lock */
    TASK_CS,        /* holding the lock */
    TASK_SLEEP,     /* waiting for a message */
};

struct sim_task {
    enum task_state state;
    uint64_t left_us;
    uint64_t spun_us;
    unsigned tokens;  /* messages received and not yet consumed */
    int vcpu;         /* the vCPU it is queued on or last ran on */
};

struct sim_vcpu {
    int cur;          /* running task or -1 */
    int *q;           /* queued tasks, FIFO */
    unsigned nq;
    int on_pcpu;      /* -1 when not running on the host */
    int last_pcpu;
    bool was_runnable;
    uint64_t vruntime;
    uint64_t guest_clock;
    uint64_t run_us;  /* cumulative: libvirt's vcpu.N.time */
    uint64_t wait_us; /* cumulative: libvirt's vcpu.N.delay, the guest's steal */
};

struct sim_vm {
    char name[16];
    unsigned nvcpu;
    struct sim_vcpu *vcpu;
    struct sim_work work;
    unsigned ntask;
    struct sim_task *task;
    int lock_owner;
    bool cooperates;
    bool started;
    uint64_t start_us;
    ch_cpuset preferred;
    /* corehint's last hint; every VM acknowledges it in host mode, a non-cooperating one
     * without applying it (hostd judges compliance only against acknowledged hints) */
    bool hinted;
    ch_cpuset hint;
    /* enforce = cap: at most cap_cpus worth of pCPU time per 100 ms period */
    bool capped;
    double cap_cpus;
    uint64_t quota_left_us;
    /* results */
    uint64_t units;     /* completed work cycles */
    uint64_t useful_us; /* time spent computing (in or out of the lock) */
    uint64_t spin_us;   /* time burnt spinning on a preempted or busy lock holder */
    uint64_t pushes;
    unsigned changes;   /* preferred set changes */
};

struct sim_pcpu {
    int vm;            /* running vCPU's VM, -1 idle */
    unsigned vcpu;
    uint64_t slice_left_us;
    uint64_t busy_us;
    uint64_t idle_us;
};

struct sim {
    uint64_t now_us;
    uint64_t rng;
    unsigned npcpu;
    struct sim_pcpu *pcpu;
    unsigned nvm;
    struct sim_vm *vm;
};

struct sim *sim_new(const struct sim_spec *spec);
void sim_free(struct sim *s);
void sim_start_due(struct sim *s);
void sim_step(struct sim *s);
/* Set VM m's preferred set (clipped to its vCPUs, vCPU 0 always kept); counts changes. */
void sim_set_preferred(struct sim *s, unsigned m, const ch_cpuset *set);
/* calloc that never returns NULL (exits) and never asks for 0 bytes. */
void *sim_calloc(size_t n, size_t size);

#endif
