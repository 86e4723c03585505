// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * chsim: a discrete-time simulator of an overcommitted host, to compare three ways of choosing
 * the guests' preferred vCPUs where real hardware of that scale is not at hand:
 *
 *   none      every vCPU preferred, always
 *   governor  each guest runs the v11 rule on its own steal time (guest-helper's governor.c,
 *             the same code corehint-guestd runs as its fallback)
 *   corehint  the host decides for everybody (host-agent's model.c + policy.c, the same code
 *             corehint-hostd runs), fed the snapshots the simulated host would give libvirt
 *
 * Everything it prints is SIMULATED.  The model and its assumptions are in tests/sim/README.md;
 * the short version: pCPUs run vCPU threads under a fair host scheduler with time slices; a
 * guest's tasks run only while their vCPU holds a pCPU; tasks take a VM-wide spin lock, so a
 * preempted lock holder makes the other vCPUs spin; tasks wake each other, and a wakeup sent
 * to a descheduled or halted vCPU waits until the host runs that vCPU.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* ---- the host ----------------------------------------------------------------------------- */

#define DT_US 100u          /* simulation step */
#define HOST_SLICE_US 3000u /* host scheduler time slice per vCPU thread */
#define GUEST_TICK_US 4000u /* guest HZ=250: task slices, tick-time push, load balance */
#define SPIN_HALT_US 2000u  /* a waiter spins this long before it halts (pv-spinlock style) */

struct sim_costs sim_costs_default(void)
{
    /* tests/sim/calibrate's best fit to the cover letter's rows (README.md, "Seeds and
     * calibration") */
    return (struct sim_costs){
        .smt = 1,
        .smt_pct = 60,
        .task_migrate_us = 0,
        .vcpu_migrate_us = 100,
        .ctxsw_us = 0,
        .wake_us = 50,
        .ipi_us = 0,
        .sched_us = 0,
        .preempt_aware = true,
        .directed_yield = false,
    };
}

void *sim_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (!p) {
        fprintf(stderr, "chsim: out of memory\n");
        exit(1);
    }
    return p;
}

static uint64_t rnd(struct sim *s)
{
    /* xorshift64*: deterministic per seed, so every policy sees the same workload */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 2685821657736338717u;
}

static unsigned jitter(struct sim *s, unsigned us)
{
    /* +-50 %, at least one step */
    unsigned v = us / 2 + (unsigned)(rnd(s) % (us + 1));
    return v < DT_US ? DT_US : v;
}

static bool vcpu_runnable(const struct sim_vcpu *v)
{
    return !v->pv_halted && (v->cur >= 0 || v->nq > 0 || v->rq_wait >= 0);
}

static unsigned vcpu_load(const struct sim_vcpu *v)
{
    return (unsigned)(v->cur >= 0) + v->nq;
}

static void enqueue(struct sim_vm *vm, unsigned vi, int task)
{
    struct sim_vcpu *v = &vm->vcpu[vi];

    v->q[v->nq++] = task;
    vm->task[task].vcpu = (int)vi;
}

static int dequeue(struct sim_vcpu *v)
{
    if (v->nq == 0)
        return -1;
    int t = v->q[0];
    memmove(v->q, v->q + 1, (v->nq - 1) * sizeof(v->q[0]));
    v->nq--;
    return t;
}

/* Wakeup placement: the previous vCPU when preferred and idle, else an idle preferred vCPU,
 * else the least loaded preferred one (the kernel's select_fallback_rq behaviour with v11's
 * is_cpu_allowed change). */
static unsigned place(const struct sim_vm *vm, int prev)
{
    if (prev >= 0 && ch_cpuset_test(&vm->preferred, (unsigned)prev) &&
        vcpu_load(&vm->vcpu[prev]) == 0)
        return (unsigned)prev;
    int best = -1;
    ch_cpuset_foreach (c, &vm->preferred) {
        if ((unsigned)c >= vm->nvcpu)
            break;
        if (vcpu_load(&vm->vcpu[c]) == 0)
            return (unsigned)c;
        if (best < 0 || vcpu_load(&vm->vcpu[c]) < vcpu_load(&vm->vcpu[best]))
            best = c;
    }
    return best < 0 ? 0 : (unsigned)best;
}

static void start_cycle(struct sim *s, struct sim_vm *vm, struct sim_task *t)
{
    t->state = TASK_COMPUTE;
    t->left_us = jitter(s, vm->work.compute_us);
}

/* Task t begins a cycle, queued on vCPU vi. */
static void start_task(struct sim *s, struct sim_vm *vm, unsigned t, unsigned vi)
{
    start_cycle(s, vm, &vm->task[t]);
    enqueue(vm, vi, (int)t);
}

/* Queue task ti where the wakeup placement puts it; a wakeup from vCPU `from` onto another
 * vCPU costs the sender an IPI. */
static void wake_onto(struct sim *s, struct sim_vm *vm, int ti, int from)
{
    unsigned to = place(vm, vm->task[ti].vcpu);

    enqueue(vm, to, ti);
    if (from >= 0 && (unsigned)from != to) {
        vm->vcpu[from].stall_us += s->costs.ipi_us;
        /* the remote run-queue lock: busy while that vCPU is in its scheduler */
        if (vm->vcpu[to].sched_left_us)
            vm->vcpu[from].rq_wait = (int)to;
    }
}

static void wake(struct sim *s, struct sim_vm *vm, int ti, int from)
{
    struct sim_task *t = &vm->task[ti];

    if (t->state == TASK_IDLE)
        return;
    t->tokens++;
    if (t->state != TASK_SLEEP)
        return;
    t->tokens--;
    start_cycle(s, vm, t);
    wake_onto(s, vm, ti, from);
}

/* The computation of a cycle is done: who its message goes to and which lock it takes. */
static void pick_peer_and_lock(struct sim *s, struct sim_vm *vm, struct sim_task *t, int ti)
{
    if (vm->work.group) {
        unsigned g = (unsigned)ti / vm->work.group;
        t->peer = (int)(g * vm->work.group + (unsigned)(rnd(s) % vm->work.group));
        /* the receiver's pipe, or its group's lock */
        t->lock = vm->work.group_locks ? g % vm->nlocks : (unsigned)t->peer % vm->nlocks;
    } else {
        t->peer = -1;
        t->lock = (unsigned)(rnd(s) % vm->nlocks);
    }
}

/* The task running on v finished its cycle: count it, send its message, sleep or go on. */
static void finish_cycle(struct sim *s, struct sim_vm *vm, unsigned vi)
{
    struct sim_vcpu *v = &vm->vcpu[vi];
    struct sim_task *t = &vm->task[v->cur];
    int ti = v->cur;

    vm->units++;
    if (vm->work.group && t->peer < 0)
        pick_peer_and_lock(s, vm, t, ti);
    if (vm->work.group) {
        /* hackbench-like: message a random member of the task's group */
        if (t->peer != ti)
            wake(s, vm, t->peer, (int)vi);
        else
            t->tokens++;
    }
    t->peer = -1;
    if (vm->work.burst_on_ms && !vm->bursting) {
        t->state = TASK_IDLE;
        t->tokens = 0;
        v->cur = -1;
        return;
    }
    if (vm->work.group == 0) {
        start_cycle(s, vm, t);
        return;
    }
    if (t->tokens > 0) {
        t->tokens--;
        start_cycle(s, vm, t);
    } else {
        t->state = TASK_SLEEP;
        v->cur = -1;
    }
}

/* Is the vCPU running task ti of vm preempted by the host (runnable, not on a pCPU)? */
static bool holder_preempted(const struct sim_vm *vm, int ti, unsigned *vcpu)
{
    const struct sim_task *h = &vm->task[ti];

    if (h->vcpu < 0)
        return false;
    *vcpu = (unsigned)h->vcpu;
    return vm->vcpu[h->vcpu].on_pcpu < 0;
}

/* Spend this step's dt on an overhead left in *left, if any; true when the step went to it. */
static bool burn(struct sim_vm *vm, struct sim_vcpu *v, uint64_t *left, unsigned dt)
{
    if (*left == 0)
        return false;
    uint64_t used = *left < dt ? *left : dt;
    *left -= used;
    vm->overhead_us += used;
    v->guest_clock += DT_US;
    return true;
}

/* One step of the guest on vCPU vi, which holds a pCPU during this step and progresses dt
 * microseconds' worth of work in it (less than DT_US while an SMT sibling is busy). */
static void guest_step(struct sim *s, unsigned m, unsigned vi, unsigned dt)
{
    struct sim_vm *vm = &s->vm[m];
    struct sim_vcpu *v = &vm->vcpu[vi];

    if (v->rq_wait >= 0) {
        struct sim_vcpu *h = &vm->vcpu[v->rq_wait];
        if (h->sched_left_us == 0) {
            v->rq_wait = -1; /* free: go on in this very step */
        } else if (h->on_pcpu >= 0) {
            vm->spin_us += dt; /* the holder runs: spin */
            v->guest_clock += DT_US;
            return;
        } else {
            v->pv_halted = true; /* pv_wait(): halt until the holder's unlock kicks us */
            v->guest_clock += DT_US;
            return;
        }
    }
    /* in the scheduler (run-queue lock held), then any other overhead: no progress */
    if (burn(vm, v, &v->sched_left_us, dt) || burn(vm, v, &v->stall_us, dt))
        return;
    if (v->cur < 0) {
        v->cur = dequeue(v);
        if (v->cur >= 0) {
            /* the switch to it: the scheduler holds this vCPU's run-queue lock meanwhile,
             * then a task whose cache is elsewhere refills it before it gets anywhere */
            struct sim_task *n = &vm->task[v->cur];
            if (n->ran_on >= 0 && n->ran_on != (int)vi)
                v->stall_us += s->costs.task_migrate_us;
            n->ran_on = (int)vi;
            v->sched_left_us = s->costs.sched_us;
            if (v->sched_left_us || v->stall_us) {
                v->guest_clock += DT_US;
                return;
            }
        }
    }
    if (v->cur < 0)
        return;
    struct sim_task *t = &vm->task[v->cur];

    v->guest_clock += DT_US;
    switch (t->state) {
    case TASK_COMPUTE:
        vm->useful_us += dt;
        if (t->left_us > dt) {
            t->left_us -= dt;
            break;
        }
        if (vm->work.cs_us == 0) {
            finish_cycle(s, vm, vi);
            break;
        }
        pick_peer_and_lock(s, vm, t, v->cur);
        t->state = TASK_SPIN;
        t->spun_us = 0;
        __attribute__((fallthrough)); /* try the lock in this very step */
    case TASK_SPIN: {
        unsigned hv = 0;
        int owner = vm->lock_owner[t->lock];
        if (owner < 0) {
            vm->lock_owner[t->lock] = v->cur;
            t->state = TASK_CS;
            t->left_us = jitter(s, vm->work.cs_us);
        } else if (s->costs.preempt_aware && holder_preempted(vm, owner, &hv)) {
            /* vcpu_is_preempted(holder): spinning is futile; halt until the unlock kicks
             * us, and let the host run the holder's vCPU here (directed yield) */
            t->state = TASK_LOCKWAIT;
            v->cur = -1;
            if (s->costs.directed_yield && v->on_pcpu >= 0) {
                s->pcpu[v->on_pcpu].yield_vm = (int)m;
                s->pcpu[v->on_pcpu].yield_vcpu = hv;
            }
        } else {
            vm->spin_us += dt;
            t->spun_us += DT_US;
            if (t->spun_us >= SPIN_HALT_US) {
                /* halt until the unlock kicks us (pv spinlocks): the vCPU may idle */
                t->state = TASK_LOCKWAIT;
                v->cur = -1;
            }
        }
        break;
    }
    case TASK_CS:
        vm->useful_us += dt;
        if (t->left_us > dt) {
            t->left_us -= dt;
            break;
        }
        vm->lock_owner[t->lock] = -1;
        /* kick one halted waiter of this lock, it retries */
        for (unsigned i = 0; i < vm->ntask; i++) {
            if (vm->task[i].state == TASK_LOCKWAIT && vm->task[i].lock == t->lock) {
                vm->task[i].state = TASK_SPIN;
                vm->task[i].spun_us = 0;
                wake_onto(s, vm, (int)i, (int)vi);
                break;
            }
        }
        finish_cycle(s, vm, vi);
        break;
    case TASK_SLEEP:
    case TASK_LOCKWAIT:
    case TASK_IDLE:
        v->cur = -1;
        break;
    }

    /* guest tick on this vCPU: round robin, and the v11 push off a non-preferred vCPU */
    if (v->guest_clock % GUEST_TICK_US == 0 && v->cur >= 0 &&
        vm->task[v->cur].state == TASK_COMPUTE) {
        int cur = v->cur;
        if (!ch_cpuset_test(&vm->preferred, vi)) {
            v->cur = -1;
            enqueue(vm, place(vm, -1), cur);
            vm->pushes++;
        } else if (v->nq > 0) {
            v->cur = -1;
            enqueue(vm, vi, cur);
        }
    }
}

/* Guest load balance, every guest tick: queued tasks move from the busiest vCPU to the least
 * loaded preferred one, and queued tasks on non-preferred vCPUs move to preferred ones. */
static void guest_balance(struct sim_vm *vm)
{
    for (unsigned i = 0; i < vm->nvcpu; i++) {
        struct sim_vcpu *v = &vm->vcpu[i];
        if (!ch_cpuset_test(&vm->preferred, i))
            while (v->nq > 0)
                enqueue(vm, place(vm, -1), dequeue(v));
    }
    unsigned hi = 0, lo = 0;
    bool have = false;
    ch_cpuset_foreach (c, &vm->preferred) {
        if ((unsigned)c >= vm->nvcpu)
            break;
        if (!have) {
            hi = lo = (unsigned)c;
            have = true;
        }
        if (vcpu_load(&vm->vcpu[c]) > vcpu_load(&vm->vcpu[hi]))
            hi = (unsigned)c;
        if (vcpu_load(&vm->vcpu[c]) < vcpu_load(&vm->vcpu[lo]))
            lo = (unsigned)c;
    }
    if (have && vm->vcpu[hi].nq > 0 && vcpu_load(&vm->vcpu[hi]) >= vcpu_load(&vm->vcpu[lo]) + 2) {
        /* take the newest queued task */
        struct sim_vcpu *h = &vm->vcpu[hi];
        int t = h->q[--h->nq];
        enqueue(vm, lo, t);
    }
}

/* Put vCPU vi of VM m on pCPU p, charging the switch and a refill if it moved. */
static void host_run(struct sim *s, unsigned p, unsigned m, unsigned vi)
{
    struct sim_pcpu *pc = &s->pcpu[p];
    struct sim_vcpu *v = &s->vm[m].vcpu[vi];

    if (pc->last_vm >= 0 && (pc->last_vm != (int)m || pc->last_vcpu != vi))
        v->stall_us += s->costs.ctxsw_us;
    if (v->last_pcpu >= 0 && v->last_pcpu != (int)p)
        v->stall_us += s->costs.vcpu_migrate_us;
    v->on_pcpu = (int)p;
    v->last_pcpu = (int)p;
    pc->vm = (int)m;
    pc->vcpu = vi;
    pc->last_vm = (int)m;
    pc->last_vcpu = vi;
    pc->slice_left_us = HOST_SLICE_US;
}

/* Host scheduler: each pCPU keeps its vCPU for a slice, then the runnable vCPU with the least
 * run time (CFS's vruntime with equal weights) takes over.  A vCPU that asked for a directed
 * yield gives its pCPU to the vCPU it named, when that one is runnable and waiting. */
static void host_schedule(struct sim *s)
{
    for (unsigned p = 0; p < s->npcpu; p++) {
        struct sim_pcpu *pc = &s->pcpu[p];
        if (pc->yield_vm >= 0) {
            struct sim_vm *yvm = &s->vm[pc->yield_vm];
            struct sim_vcpu *y = &yvm->vcpu[pc->yield_vcpu];
            bool capped = yvm->capped && yvm->quota_left_us == 0;
            if (y->on_pcpu < 0 && vcpu_runnable(y) && !capped) {
                if (pc->vm >= 0)
                    s->vm[pc->vm].vcpu[pc->vcpu].on_pcpu = -1;
                yvm->yields++;
                host_run(s, p, (unsigned)pc->yield_vm, pc->yield_vcpu);
                pc->yield_vm = -1;
                continue;
            }
            pc->yield_vm = -1;
        }
        if (pc->vm >= 0) {
            struct sim_vcpu *v = &s->vm[pc->vm].vcpu[pc->vcpu];
            bool capped = s->vm[pc->vm].capped && s->vm[pc->vm].quota_left_us == 0;
            if (vcpu_runnable(v) && !capped && pc->slice_left_us > 0)
                continue;
            v->on_pcpu = -1;
            pc->vm = -1;
        }
        /* pick the least-run runnable vCPU that may run on p and is not running */
        int best_vm = -1, best_v = -1;
        uint64_t best_rt = UINT64_MAX;
        for (unsigned m = 0; m < s->nvm; m++) {
            struct sim_vm *vm = &s->vm[m];
            if (vm->capped && vm->quota_left_us == 0)
                continue;
            for (unsigned i = 0; i < vm->nvcpu; i++) {
                struct sim_vcpu *v = &vm->vcpu[i];
                if (v->on_pcpu >= 0 || !vcpu_runnable(v))
                    continue;
                if (v->vruntime < best_rt) {
                    best_rt = v->vruntime;
                    best_vm = (int)m;
                    best_v = (int)i;
                }
            }
        }
        if (best_vm < 0)
            continue;
        host_run(s, p, (unsigned)best_vm, (unsigned)best_v);
    }
}

/* Bursty workloads: a VM between bursts lets its tasks go idle as they finish their cycle;
 * at the next burst they all start again. */
static void bursts(struct sim *s)
{
    for (unsigned m = 0; m < s->nvm; m++) {
        struct sim_vm *vm = &s->vm[m];
        if (!vm->started || vm->work.burst_on_ms == 0)
            continue;
        uint64_t period = (vm->work.burst_on_ms + vm->work.burst_off_ms) * 1000ull;
        bool on = (s->now_us - vm->start_us + vm->burst_phase_us) % period <
                  vm->work.burst_on_ms * 1000ull;
        if (on && !vm->bursting)
            for (unsigned t = 0; t < vm->ntask; t++)
                if (vm->task[t].state == TASK_IDLE)
                    start_task(s, vm, t, place(vm, vm->task[t].vcpu));
        vm->bursting = on;
    }
}

void sim_step(struct sim *s)
{
    bursts(s);
    /* the unlock of a run-queue lock kicks the vCPUs halted on it */
    for (unsigned m = 0; m < s->nvm; m++)
        for (unsigned i = 0; i < s->vm[m].nvcpu; i++) {
            struct sim_vcpu *v = &s->vm[m].vcpu[i];
            if (v->pv_halted && s->vm[m].vcpu[v->rq_wait].sched_left_us == 0) {
                v->pv_halted = false;
                v->rq_wait = -1;
            }
        }
    /* a vCPU that just became runnable does not get credit for the time it slept, and pays
     * for its wakeup */
    uint64_t min_rt = UINT64_MAX;
    for (unsigned m = 0; m < s->nvm; m++)
        for (unsigned i = 0; i < s->vm[m].nvcpu; i++)
            if (s->vm[m].vcpu[i].on_pcpu >= 0 && s->vm[m].vcpu[i].vruntime < min_rt)
                min_rt = s->vm[m].vcpu[i].vruntime;
    for (unsigned m = 0; m < s->nvm; m++)
        for (unsigned i = 0; i < s->vm[m].nvcpu; i++) {
            struct sim_vcpu *v = &s->vm[m].vcpu[i];
            bool r = vcpu_runnable(v);
            if (r && !v->was_runnable) {
                if (min_rt != UINT64_MAX && v->vruntime + HOST_SLICE_US < min_rt)
                    v->vruntime = min_rt - HOST_SLICE_US;
                v->stall_us += s->costs.wake_us;
            }
            v->was_runnable = r;
        }

    host_schedule(s);

    for (unsigned p = 0; p < s->npcpu; p++) {
        struct sim_pcpu *pc = &s->pcpu[p];
        if (pc->vm < 0) {
            pc->idle_us += DT_US;
            continue;
        }
        struct sim_vm *vm = &s->vm[pc->vm];
        struct sim_vcpu *v = &vm->vcpu[pc->vcpu];
        unsigned dt = DT_US;
        if (s->costs.smt == 2 && s->pcpu[p ^ 1u].vm >= 0)
            dt = DT_US * s->costs.smt_pct / 100;
        pc->busy_us += DT_US;
        pc->slice_left_us = pc->slice_left_us > DT_US ? pc->slice_left_us - DT_US : 0;
        v->run_us += DT_US;
        v->vruntime += DT_US;
        if (vm->capped)
            vm->quota_left_us = vm->quota_left_us > DT_US ? vm->quota_left_us - DT_US : 0;
        guest_step(s, (unsigned)pc->vm, pc->vcpu, dt);
    }
    /* runnable but not on a pCPU: host run-queue wait, which the guest sees as steal */
    for (unsigned m = 0; m < s->nvm; m++)
        for (unsigned i = 0; i < s->vm[m].nvcpu; i++) {
            struct sim_vcpu *v = &s->vm[m].vcpu[i];
            if (v->on_pcpu < 0 && vcpu_runnable(v))
                v->wait_us += DT_US;
        }

    s->now_us += DT_US;
    if (s->now_us % GUEST_TICK_US == 0)
        for (unsigned m = 0; m < s->nvm; m++)
            guest_balance(&s->vm[m]);
    if (s->now_us % 100000 == 0)
        for (unsigned m = 0; m < s->nvm; m++)
            if (s->vm[m].capped)
                s->vm[m].quota_left_us = (uint64_t)(s->vm[m].cap_cpus * 100000.0);
}

void sim_set_preferred(struct sim *s, unsigned m, const ch_cpuset *set)
{
    struct sim_vm *vm = &s->vm[m];
    ch_cpuset clipped;
    ch_cpuset all;

    ch_cpuset_fill(&all, vm->nvcpu);
    ch_cpuset_and(&clipped, set, &all);
    if (ch_cpuset_empty(&clipped) || !ch_cpuset_test(&clipped, 0))
        ch_cpuset_set(&clipped, 0);
    if (!ch_cpuset_equal(&clipped, &vm->preferred))
        vm->changes++;
    vm->preferred = clipped;
}

/* The tasks a guest of nvcpu vCPUs runs: tasks, or tasks_per_vcpu_pct of its vCPUs in
 * whole groups (to the nearest, at least one). */
static unsigned sim_tasks(const struct sim_work *w, unsigned nvcpu)
{
    uint64_t unit = w->group ? w->group : 1;
    unsigned n;

    if (!w->tasks_per_vcpu_pct)
        return w->tasks;
    n = (unsigned)((w->tasks_per_vcpu_pct * (uint64_t)nvcpu + 50 * unit) / (100 * unit));
    return (n ? n : 1) * (unsigned)unit;
}

struct sim *sim_new(const struct sim_spec *spec)
{
    struct sim *s = sim_calloc(1, sizeof(*s));

    s->rng = spec->seed ? spec->seed : 0x9e3779b97f4a7c15u;
    s->costs = spec->costs;
    s->npcpu = spec->npcpu;
    s->pcpu = sim_calloc(s->npcpu, sizeof(*s->pcpu));
    for (unsigned p = 0; p < s->npcpu; p++) {
        s->pcpu[p].vm = -1;
        s->pcpu[p].last_vm = -1;
        s->pcpu[p].yield_vm = -1;
    }
    s->nvm = spec->nvm;
    s->vm = sim_calloc(s->nvm, sizeof(*s->vm));
    for (unsigned m = 0; m < s->nvm; m++) {
        struct sim_vm *vm = &s->vm[m];
        const struct sim_vm_spec *vs = &spec->vm[m];
        snprintf(vm->name, sizeof(vm->name), "vm%u", m);
        vm->nvcpu = vs->nvcpu;
        vm->work = vs->work;
        vm->cooperates = !vs->ignores_hints;
        vm->vcpu = sim_calloc(vm->nvcpu, sizeof(*vm->vcpu));
        ch_cpuset_fill(&vm->preferred, vm->nvcpu);
        vm->ntask = sim_tasks(&vs->work, vm->nvcpu);
        vm->nlocks = vs->work.locks ? vs->work.locks : 1;
        if (vs->work.group && vs->work.group_locks)
            vm->nlocks = vm->ntask / vs->work.group;
        vm->lock_owner = sim_calloc(vm->nlocks, sizeof(int));
        for (unsigned l = 0; l < vm->nlocks; l++)
            vm->lock_owner[l] = -1;
        if (vs->work.burst_on_ms)
            vm->burst_phase_us =
                rnd(s) % ((vs->work.burst_on_ms + vs->work.burst_off_ms) * 1000ull);
        vm->task = sim_calloc(vm->ntask, sizeof(*vm->task));
        for (unsigned i = 0; i < vm->nvcpu; i++) {
            vm->vcpu[i].cur = -1;
            vm->vcpu[i].on_pcpu = -1;
            vm->vcpu[i].last_pcpu = -1;
            vm->vcpu[i].rq_wait = -1;
            vm->vcpu[i].q = sim_calloc(vm->ntask + 1, sizeof(int));
        }
        for (unsigned t = 0; t < vm->ntask; t++) {
            vm->task[t].vcpu = -1;
            vm->task[t].ran_on = -1;
            vm->task[t].peer = -1;
            vm->task[t].state = TASK_SLEEP;
        }
        vm->start_us = vs->start_s * 1000000ull;
    }
    return s;
}

/* Tasks of VMs whose start time has come begin their first cycle. */
void sim_start_due(struct sim *s)
{
    for (unsigned m = 0; m < s->nvm; m++) {
        struct sim_vm *vm = &s->vm[m];
        if (vm->started || s->now_us < vm->start_us)
            continue;
        vm->started = true;
        for (unsigned t = 0; t < vm->ntask; t++) {
            if (vm->work.group && vm->work.inflight && t % vm->work.group >= vm->work.inflight) {
                vm->task[t].vcpu = (int)(t % vm->nvcpu);
                continue; /* sleeps until a message comes */
            }
            start_task(s, vm, t, t % vm->nvcpu);
        }
    }
}

void sim_free(struct sim *s)
{
    if (!s)
        return;
    for (unsigned m = 0; m < s->nvm; m++) {
        for (unsigned i = 0; i < s->vm[m].nvcpu; i++)
            free(s->vm[m].vcpu[i].q);
        free(s->vm[m].vcpu);
        free(s->vm[m].task);
        free(s->vm[m].lock_owner);
    }
    free(s->vm);
    free(s->pcpu);
    free(s);
}
