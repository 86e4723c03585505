// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fluid host of chscale (README.md here): each interval the guests put their runnable
 * tasks on vCPUs, the host places the runnable vCPU threads on pCPUs and each pCPU divides its
 * time among its threads by CFS group weight; the counters hostd reads advance by what that
 * gives, each increment times the noise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scale.h"

#define EPS 1e-9

const char *const sc_layout_names[SC_NLAYOUT] = {"floating", "pinned", "mixed", "numa"};
const char *const sc_policy_names[SC_NPOLICY] = {"none", "corehint", "static"};

/* splitmix64 */
uint64_t sc_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

double sc_uniform(uint64_t *state)
{
    return (double)(sc_rand(state) >> 11) / 9007199254740992.0;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (!p) {
        fprintf(stderr, "chscale: out of memory\n");
        exit(1);
    }
    return p;
}

struct sc_host *sc_host_new(unsigned npcpu, unsigned nodes, unsigned nvm, double noise,
                            uint64_t seed)
{
    struct sc_host *h = xcalloc(1, sizeof(*h));

    h->npcpu = npcpu;
    h->nodes = nodes;
    h->nvm = nvm;
    h->noise = noise;
    h->noise_rng = seed ^ 0x6e6f697365u;
    h->t_ns = 1000000000u;
    h->vm = xcalloc(nvm, sizeof(*h->vm));
    h->busy_ns = xcalloc(npcpu, sizeof(uint64_t));
    h->idle_ns = xcalloc(npcpu, sizeof(uint64_t));
    h->load = xcalloc(npcpu, sizeof(double));
    h->nthr = xcalloc(npcpu, sizeof(unsigned));
    return h;
}

void sc_vm_alloc(struct sc_vm *vm, unsigned nvcpu)
{
    vm->nvcpu = nvcpu;
    vm->pin = xcalloc(nvcpu, sizeof(int));
    vm->last = xcalloc(nvcpu, sizeof(int));
    vm->runnable = xcalloc(nvcpu, sizeof(bool));
    vm->time_ns = xcalloc(nvcpu, sizeof(uint64_t));
    vm->delay_ns = xcalloc(nvcpu, sizeof(uint64_t));
    for (unsigned v = 0; v < nvcpu; v++) {
        vm->pin[v] = -1;
        vm->last[v] = -1;
    }
    ch_cpuset_fill(&vm->preferred, nvcpu);
}

void sc_host_free(struct sc_host *h)
{
    if (!h)
        return;
    for (unsigned m = 0; m < h->nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        free(vm->pin);
        free(vm->span);
        free(vm->last);
        free(vm->runnable);
        free(vm->time_ns);
        free(vm->delay_ns);
    }
    free(h->vm);
    free(h->busy_ns);
    free(h->idle_ns);
    free(h->load);
    free(h->nthr);
    free(h);
}

void sc_set_preferred(struct sc_vm *vm, const ch_cpuset *set)
{
    ch_cpuset all, clipped;

    ch_cpuset_fill(&all, vm->nvcpu);
    ch_cpuset_and(&clipped, set, &all);
    ch_cpuset_set(&clipped, 0);
    vm->preferred = clipped;
}

/* The guest: its tasks go to preferred vCPUs first, lowest first; more tasks than preferred
 * vCPUs queue on the preferred ones (the v11 tick push and balance towards preferred CPUs), or
 * with spill run on the other vCPUs too.  Returns the runnable vCPUs. */
static unsigned guest_place(const struct sc_host *h, struct sc_vm *vm, unsigned tasks)
{
    unsigned busy = 0;

    memset(vm->runnable, 0, vm->nvcpu * sizeof(bool));
    for (unsigned v = 0; v < vm->nvcpu && busy < tasks; v++)
        if (ch_cpuset_test(&vm->preferred, v)) {
            vm->runnable[v] = true;
            busy++;
        }
    if (h->spill)
        for (unsigned v = 0; v < vm->nvcpu && busy < tasks; v++)
            if (!vm->runnable[v]) {
                vm->runnable[v] = true;
                busy++;
            }
    return busy;
}

struct thread {
    unsigned vm, vcpu;
    double weight;
};

static int cmp_thread(const void *a, const void *b)
{
    const struct thread *x = a, *y = b;

    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    if (x->vm != y->vm)
        return x->vm < y->vm ? -1 : 1;
    return (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
}

/* Where the host's balancer puts a floating thread: the least loaded pCPU of its span, an idle
 * core before an idle sibling, then where it ran last (cache affinity), then the lowest. */
static unsigned balance(const struct sc_host *h, const struct sc_vm *vm, unsigned v)
{
    unsigned best = vm->span[0];

    for (unsigned i = 1; i < vm->nspan; i++) {
        unsigned p = vm->span[i];
        double dl = h->load[p] - h->load[best];
        bool sib_p = h->nthr[p ^ 1u] == 0, sib_b = h->nthr[best ^ 1u] == 0;

        if (dl < -EPS || (dl <= EPS && (sib_p != sib_b ? sib_p : (int)p == vm->last[v])))
            best = p;
    }
    return best;
}

static uint64_t noisy(struct sc_host *h, double seconds)
{
    double f = h->noise > 0 ? 1 + h->noise * (2 * sc_uniform(&h->noise_rng) - 1) : 1;

    return seconds > 0 ? (uint64_t)(seconds * f * 1e9 + 0.5) : 0;
}

void sc_host_step(struct sc_host *h, enum sc_phase ph)
{
    unsigned nthreads = 0, n = 0;
    struct thread *th;
    int *on;

    for (unsigned m = 0; m < h->nvm; m++)
        nthreads += h->vm[m].nvcpu;
    th = xcalloc(nthreads, sizeof(*th));
    on = xcalloc(nthreads, sizeof(int));
    memset(h->load, 0, h->npcpu * sizeof(double));
    memset(h->nthr, 0, h->npcpu * sizeof(unsigned));
    /* CFS group weights: a VM's cgroup weight is split over the pCPUs by the share of its
     * runnable vCPUs each carries (calc_group_shares()), so each runnable thread weighs
     * shares / (the VM's runnable vCPUs).  Pinned threads first, they have no choice. */
    for (unsigned m = 0; m < h->nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        unsigned r = guest_place(h, vm, vm->tasks[ph]);

        for (unsigned v = 0; v < vm->nvcpu; v++) {
            if (!vm->runnable[v])
                continue;
            th[n] = (struct thread){.vm = m, .vcpu = v, .weight = (double)vm->shares / r};
            if (vm->pin[v] >= 0) {
                h->load[vm->pin[v]] += th[n].weight;
                h->nthr[vm->pin[v]]++;
            }
            n++;
        }
    }
    qsort(th, n, sizeof(*th), cmp_thread);
    for (unsigned i = 0; i < n; i++) {
        struct sc_vm *vm = &h->vm[th[i].vm];
        int p = vm->pin[th[i].vcpu];

        if (p < 0) {
            p = (int)balance(h, vm, th[i].vcpu);
            h->load[p] += th[i].weight;
            h->nthr[p]++;
        }
        on[i] = p;
    }
    /* each pCPU's time by weight; a thread whose sibling thread is busy runs at SMT speed */
    for (unsigned m = 0; m < h->nvm; m++) {
        struct sc_vm *vm = &h->vm[m];
        vm->run = vm->wait = vm->work = 0;
    }
    h->wait_total = 0;
    for (unsigned i = 0; i < n; i++) {
        struct sc_vm *vm = &h->vm[th[i].vm];
        unsigned p = (unsigned)on[i], v = th[i].vcpu;
        double run = th[i].weight / h->load[p], wait = 1 - run;
        double speed = h->nthr[p ^ 1u] ? SC_SMT_SPEED : 1.0;

        vm->run += run;
        vm->wait += wait;
        vm->work += run * speed;
        h->wait_total += wait;
        vm->last[v] = (int)p;
        vm->time_ns[v] += noisy(h, run);
        vm->delay_ns[v] += noisy(h, wait);
    }
    for (unsigned p = 0; p < h->npcpu; p++) {
        h->busy_ns[p] += noisy(h, h->nthr[p] ? 1 : 0);
        h->idle_ns[p] += noisy(h, h->nthr[p] ? 0 : 1);
    }
    h->t_ns += 1000000000u;
    free(th);
    free(on);
}

struct snapshot *sc_host_snapshot(const struct sc_host *h)
{
    struct snapshot *snap = snap_new();

    if (!snap)
        return NULL;
    snap->t_ns = h->t_ns;
    snap->npcpu = h->npcpu;
    snap->shares_default = 1024;
    snap->has_pcpu_stats = true;
    snap->pcpu = calloc(h->npcpu, sizeof(*snap->pcpu));
    snap->dom = calloc(h->nvm ? h->nvm : 1, sizeof(*snap->dom));
    if (!snap->pcpu || !snap->dom)
        goto fail;
    for (unsigned p = 0; p < h->npcpu; p++) {
        snap->pcpu[p].busy_ns = h->busy_ns[p];
        snap->pcpu[p].idle_ns = h->idle_ns[p];
    }
    for (unsigned m = 0; m < h->nvm; m++) {
        const struct sc_vm *vm = &h->vm[m];
        struct snap_dom *d = &snap->dom[snap->ndom];

        d->vcpu = calloc(vm->nvcpu, sizeof(*d->vcpu));
        if (!d->vcpu)
            goto fail;
        snap->ndom++;
        snprintf(d->name, sizeof(d->name), "vm%u", m);
        /* zero-padded: uuid order is index order */
        snprintf(d->uuid, sizeof(d->uuid), "00000000-0000-4000-8000-%012u", m);
        d->state = 1; /* VIR_DOMAIN_RUNNING */
        d->threads = 1;
        d->shares = vm->shares;
        d->acked = vm->hinted;
        d->applied = vm->preferred;
        d->nvcpu = vm->nvcpu;
        for (unsigned v = 0; v < vm->nvcpu; v++) {
            struct snap_vcpu *sv = &d->vcpu[v];
            sv->id = v;
            sv->online = true;
            sv->time_ns = vm->time_ns[v];
            sv->delay_ns = vm->delay_ns[v];
            sv->has_delay = true;
            sv->pcpu = vm->last[v];
            if (vm->pin[v] >= 0)
                pset_set(&sv->affinity, (unsigned)vm->pin[v]);
            else
                for (unsigned i = 0; i < vm->nspan; i++)
                    pset_set(&sv->affinity, vm->span[i]);
            d->cpu_time_ns += sv->time_ns;
        }
    }
    snap_sort(snap);
    return snap;

fail:
    snap_free(snap);
    return NULL;
}
