// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Policy step cost at scale: VMS VMs x VCPUS vCPUs on PCPUS pCPUs (default 1000 x 64 on 256),
 * floating or pinned, every pool contended.  Prints ns per step and the process's peak RSS.
 *   bench-policy [VMS VCPUS PCPUS STEPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "config.h"
#include "model.h"
#include "policy.h"

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Deterministic pseudo-random load so that no two VMs look alike. */
static double noise(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)((*seed >> 16) & 0x7fff) / 32768.0;
}

static void build(struct model *m, unsigned vms, unsigned vcpus, unsigned pcpus, bool pinned,
                  unsigned seed)
{
    memset(m, 0, sizeof(*m));
    m->npcpu = pcpus;
    m->interval_s = 1;
    m->ndom = vms;
    m->dom = calloc(vms, sizeof(*m->dom));
    m->pcpu_busy = calloc(pcpus, sizeof(double));
    m->pcpu_wait = calloc(pcpus, sizeof(double));
    m->pcpu_contention = calloc(pcpus, sizeof(double));
    m->pcpu_rqwait = calloc(pcpus, sizeof(double));
    for (unsigned i = 0; i < vms; i++) {
        struct model_dom *d = &m->dom[i];
        snprintf(d->name, sizeof(d->name), "vm%04u", i);
        snprintf(d->uuid, sizeof(d->uuid), "00000000-0000-4000-8000-%012u", i);
        d->threads = i % 4 == 0 ? 2 : 1;
        d->nvcpu = vcpus;
        d->measured = true;
        d->vcpu = calloc(vcpus, sizeof(*d->vcpu));
        for (unsigned v = 0; v < vcpus; v++) {
            struct model_vcpu *mv = &d->vcpu[v];
            mv->id = v;
            mv->measured = true;
            mv->run = 0.2 + 0.3 * noise(&seed);
            mv->wait = 0.5 * noise(&seed);
            mv->demand = mv->run + mv->wait;
            /* pinned: vCPU v of a VM pinned to pCPU v % 16 of one of pcpus/16 disjoint groups
             * of 16 pCPUs; floating: anywhere */
            mv->home = -1;
            if (pinned) {
                mv->home = (int)(((i % (pcpus / 16 ? pcpus / 16 : 1)) * 16 + v % 16) % pcpus);
                pset_set(&mv->span, (unsigned)mv->home);
                pset_set(&d->span, (unsigned)mv->home);
            }
            d->run += mv->run;
            d->wait += mv->wait;
            d->demand += mv->demand;
        }
        if (!pinned)
            for (unsigned p = 0; p < pcpus; p++)
                pset_set(&d->span, p);
    }
    model_pools(m);
    for (unsigned i = 0; i < vms; i++) {
        model_book(&m->dom[i], NULL, MQ_RUN, 1, m->pcpu_busy, pcpus);
        model_book(&m->dom[i], NULL, MQ_WAIT, 1, m->pcpu_wait, pcpus);
    }
    for (unsigned p = 0; p < pcpus; p++)
        m->pcpu_contention[p] = (m->pcpu_busy[p] > 1 ? 1 : m->pcpu_busy[p]) + m->pcpu_wait[p];
}

static void run(const char *label, unsigned vms, unsigned vcpus, unsigned pcpus, unsigned steps,
                bool pinned)
{
    struct hd_config cfg;
    struct model m;
    struct pol_decision *prev = calloc(vms, sizeof(*prev)), *out = calloc(vms, sizeof(*out));
    uint64_t total = 0, best = UINT64_MAX;
    unsigned nprev = 0;

    cfg_defaults(&cfg);
    build(&m, vms, vcpus, pcpus, pinned, 42);
    for (unsigned s = 0; s < steps; s++) {
        /* vary the load a little so that the policy really re-decides */
        for (unsigned i = 0; i < vms; i++)
            m.dom[i].demand = m.dom[i].run + m.dom[i].wait * (s % 3 ? 1.0 : 0.5);
        uint64_t t0 = now_ns();
        if (pol_step(&m, &cfg, nprev ? prev : NULL, nprev, out) < 0) {
            fprintf(stderr, "pol_step failed\n");
            exit(1);
        }
        uint64_t dt = now_ns() - t0;
        total += dt;
        best = dt < best ? dt : best;
        struct pol_decision *t = prev;
        prev = out;
        out = t;
        nprev = vms;
    }
    unsigned shrunk = 0;
    for (unsigned i = 0; i < vms; i++)
        shrunk += prev[i].count < prev[i].nvcpu;
    printf("%-9s %u VMs x %u vCPUs on %u pCPUs, %u pools: %.0f ns/step mean, %.0f ns best "
           "(%u steps), %u VMs shrunk\n",
           label, vms, vcpus, pcpus, m.npool, (double)total / steps, (double)best, steps, shrunk);
    model_free(&m);
    free(prev);
    free(out);
}

static unsigned arg(int argc, char **argv, int i, unsigned dflt)
{
    char *end;
    unsigned long v;

    if (argc <= i)
        return dflt;
    v = strtoul(argv[i], &end, 10);
    return *end || v > 1000000 ? 0 : (unsigned)v;
}

int main(int argc, char **argv)
{
    unsigned vms = arg(argc, argv, 1, 1000);
    unsigned vcpus = arg(argc, argv, 2, 64);
    unsigned pcpus = arg(argc, argv, 3, 256);
    unsigned steps = arg(argc, argv, 4, 20);
    struct rusage ru;

    if (!vms || !vcpus || !pcpus || pcpus > HD_PCPU_MAX || !steps) {
        fprintf(stderr, "usage: bench-policy [VMS VCPUS PCPUS(<=%u) STEPS]\n", HD_PCPU_MAX);
        return 2;
    }
    run("floating", vms, vcpus, pcpus, steps, false);
    run("pinned", vms, vcpus, pcpus, steps, true);
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS %ld KiB\n", ru.ru_maxrss);
    return 0;
}
