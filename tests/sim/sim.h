/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chsim's host and guest model; see chsim.c and README.md. */
#ifndef COREHINT_SIM_H
#define COREHINT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corehint/cpulist.h"

struct sim_work {
    unsigned tasks;      /* tasks in the guest, unless tasks_per_vcpu_pct sizes them */
    unsigned compute_us; /* work outside the lock per cycle (mean) */
    unsigned cs_us;      /* work inside a spin lock (locks) per cycle (mean); 0 = no lock */
    unsigned group;      /* >0: hackbench-like, each cycle ends messaging a task of its group
                            of this size, and a task without a message sleeps */
    unsigned locks;      /* locks the critical sections use: 0 or 1 = one VM-wide lock; for a
                            hackbench-like workload, the receiver's pipe lock (task % locks),
                            else one chosen at random per cycle */
    unsigned inflight;   /* hackbench-like: messages in flight per group (tasks that start
                            busy); 0 = every task */
    unsigned tasks_per_vcpu_pct; /* >0: the guest runs this many tasks per 100 vCPUs instead
                                    of tasks (a benchmark sized to the guest: hackbench groups,
                                    pgbench clients, sysbench threads), rounded to whole groups,
                                    at least one */
    bool group_locks;            /* hackbench-like: one lock per group (the group's
                                    receivers share it) instead of locks */
    unsigned burst_on_ms;        /* >0: bursty, busy this long, then idle burst_off_ms, repeated */
    unsigned burst_off_ms;
};

/* Costs the model charges, and the host's shape.  Defaults: sim_costs_default(). */
struct sim_costs {
    unsigned smt;             /* threads per core: pCPUs 2k and 2k+1 share a core when 2 */
    unsigned smt_pct;         /* a thread's speed while its sibling is busy, % of alone */
    unsigned task_migrate_us; /* cache refill of a task that runs on another vCPU than last */
    unsigned vcpu_migrate_us; /* cache refill of a vCPU thread that runs on another pCPU */
    unsigned ctxsw_us;        /* host switch from one vCPU thread to another (exit, entry) */
    unsigned wake_us;         /* a halted vCPU made runnable: IPI exit, host wakeup, entry */
    unsigned ipi_us;          /* the sender's cost of a wakeup or kick on another vCPU */
    unsigned sched_us;        /* a task switch in the guest: its scheduler runs this long
                                 holding the vCPU's run-queue lock; a wakeup onto that vCPU
                                 from another waits for the lock (pv spinlock: spins while
                                 the holder's vCPU runs, halts while it is preempted) */
    bool preempt_aware;       /* lock waiters stop spinning on a preempted holder (the
                                 guest's vcpu_is_preempted(), as mutex spinning does) */
    bool directed_yield;      /* ... and the host runs the holder's vCPU in the waiter's
                                 place (pause-loop exit, kvm_vcpu_on_spin) */
};

struct sim_vm_spec {
    unsigned nvcpu;
    struct sim_work work;
    bool ignores_hints; /* a non-cooperating guest: keeps every vCPU preferred */
    unsigned start_s;   /* its workload starts at this simulated second */
};

struct sim_spec {
    unsigned npcpu;
    unsigned nvm;
    struct sim_vm_spec *vm;
    uint64_t seed;
    struct sim_costs costs;
};

enum task_state {
    TASK_COMPUTE,
    TASK_SPIN,     /* spinning on the VM's lock: burns its vCPU, makes no progress */
    TASK_LOCKWAIT, /* gave up spinning, halted until the holder releases the lock */
    TASK_CS,       /* holding the lock */
    TASK_SLEEP,    /* waiting for a message */
    TASK_IDLE,     /* bursty workload between bursts: nothing to do, messages ignored */
};

struct sim_task {
    enum task_state state;
    uint64_t left_us;
    uint64_t spun_us;
    unsigned tokens; /* messages received and not yet consumed */
    int vcpu;        /* the vCPU it is queued on or last ran on */
    int ran_on;      /* the vCPU it last ran on, -1 never (task migration cost) */
    int peer;        /* hackbench-like: the task this cycle's message goes to */
    unsigned lock;   /* the lock this cycle's critical section takes */
};

struct sim_vcpu {
    int cur; /* running task or -1 */
    int *q;  /* queued tasks, FIFO */
    unsigned nq;
    int on_pcpu; /* -1 when not running on the host */
    int last_pcpu;
    bool was_runnable;
    uint64_t vruntime;
    uint64_t guest_clock;
    uint64_t run_us;        /* cumulative: libvirt's vcpu.N.time */
    uint64_t wait_us;       /* cumulative: libvirt's vcpu.N.delay, the guest's steal */
    uint64_t stall_us;      /* overhead to burn before the guest progresses (refill, wakeup) */
    uint64_t sched_left_us; /* > 0: in the guest scheduler, holding its run-queue lock */
    int rq_wait;            /* waiting for that vCPU's run-queue lock (a remote wakeup), -1 none */
    bool pv_halted;         /* halted in that wait because the lock holder's vCPU is preempted */
};

struct sim_vm {
    char name[16];
    unsigned nvcpu;
    struct sim_vcpu *vcpu;
    struct sim_work work;
    unsigned ntask;
    struct sim_task *task;
    unsigned nlocks;
    int *lock_owner; /* per lock: the holding task or -1 */
    bool cooperates;
    uint64_t burst_phase_us; /* bursty: offset of this VM's burst cycle */
    bool bursting;
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
    uint64_t units;       /* completed work cycles */
    uint64_t useful_us;   /* time spent computing (in or out of the lock) */
    uint64_t spin_us;     /* time burnt spinning on a preempted or busy lock holder */
    uint64_t overhead_us; /* time burnt on the costs of struct sim_costs */
    uint64_t yields;      /* directed yields to a preempted lock holder's vCPU */
    uint64_t pushes;
    unsigned changes; /* preferred set changes */
};

struct sim_pcpu {
    int vm; /* running vCPU's VM, -1 idle */
    unsigned vcpu;
    int last_vm; /* the vCPU it ran last (context switch cost) */
    unsigned last_vcpu;
    int yield_vm; /* directed yield requested by the running vCPU: run this one next */
    unsigned yield_vcpu;
    uint64_t slice_left_us;
    uint64_t busy_us;
    uint64_t idle_us;
};

struct sim {
    uint64_t now_us;
    struct sim_costs costs;
    uint64_t rng;
    unsigned npcpu;
    struct sim_pcpu *pcpu;
    unsigned nvm;
    struct sim_vm *vm;
};

/* The costs chsim's scenarios use unless they say otherwise (tests/sim/README.md). */
struct sim_costs sim_costs_default(void);
struct sim *sim_new(const struct sim_spec *spec);
void sim_free(struct sim *s);
void sim_start_due(struct sim *s);
void sim_step(struct sim *s);
/* Set VM m's preferred set (clipped to its vCPUs, vCPU 0 always kept); counts changes. */
void sim_set_preferred(struct sim *s, unsigned m, const ch_cpuset *set);
/* calloc that never returns NULL (exits) and never asks for 0 bytes. */
void *sim_calloc(size_t n, size_t size);

#endif
