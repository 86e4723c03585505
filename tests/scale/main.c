// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * chscale: corehint's policy against none and a static split on simulated hosts of 64-256
 * pCPUs (README.md here).  One case, a Markdown table of many, or the properties of issue #37.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scale.h"

static const char usage[] =
    "usage: chscale [OPTIONS]\n"
    "Simulates a host of --cpus pCPUs (SMT2; 2 NUMA nodes, 4 from 128 pCPUs) and --vms VMs\n"
    "under three policies (corehint: hostd's model_build()/pol_step() with default settings;\n"
    "none: every vCPU preferred; static: ceil(weighted share of the pool) vCPUs), through demand\n"
    "steps, and prints per policy: worst VM's CPU / its CPU under none, Jain index of CPU /\n"
    "entitlement, mean steal %%, preferred-set changes per VM-minute, decisions to settle after\n"
    "each step, VMs narrowed while no vCPU waits under none.  Every figure is SIMULATED\n"
    "(tests/scale/README.md).\n"
    "\n"
    "  --layout L      floating, pinned, mixed, numa or all (default: floating; all with\n"
    "                  --table and --check)\n"
    "  --cpus N        host pCPUs, 8-%u, a multiple of 4 (of 8 from 128) (default 64;\n"
    "                  64 and 256 with --table and --check)\n"
    "  --vms N         VMs, 2-1000 (default: pCPUs x 15 / 32, 30 on 64 pCPUs, 120 on 256)\n"
    "  --noise PCT     +-PCT %% multiplicative noise on every counter hostd reads, 0-50\n"
    "                  (default 10; 0, 10 and 20 with --table and --check)\n"
    "  --seed N        workload seed (default 1)\n"
    "  --intervals N   1-second intervals per run, 40-10000 (default 240)\n"
    "  --spill         guests run tasks beyond the preferred count on other vCPUs (default:\n"
    "                  they queue on the preferred ones)\n"
    "  --verbose       with one case: each VM's fair share and CPU per phase\n"
    "  --table         a Markdown table of the layouts x hosts x noise levels\n"
    "  --check         evaluate the properties of issue #37 that today's policy passes;\n"
    "                  exit 1 listing each that fails\n"
    "  --all           with --check: the known-failing properties too\n"
    "  --help          this text\n"
    "The policy step's cost at 1000 VMs x 64 vCPUs is tests/bench/policy/bench-policy's.\n";

enum prop { PR_WORST, PR_JAIN, PR_FLAP, PR_SETTLE, PR_NARROW, NPROP };

static const char *const prop_names[NPROP] = {"no-vm-below-none", "jain-not-below-none",
                                              "no-flapping", "settles-in-2", "no-narrowing-idle"};

/* Properties today's policy fails (issue #37) at the default seed and intervals, skipped by
 * --check without --all.  layout -1, cpus 0 and noise -1 match any.  Remove an entry once the
 * policy passes its cases. */
static const struct known {
    enum prop prop;
    int layout;
    unsigned cpus;
    int noise;
} known_failing[] = {
    /* the 10 % target-utilisation reserve taken from the VMs at the water level (floating,
     * numa), and pinned vCPUs kept on overloaded pCPUs (pinned, mixed) */
    {PR_WORST, -1, 0, 0},
    {PR_WORST, -1, 0, 10},
    {PR_WORST, SC_FLOATING, 0, 20},
    {PR_WORST, SC_PINNED, 0, 20},
    {PR_WORST, SC_MIXED, 0, 20},
    {PR_WORST, SC_NUMA, 256, 20},
    /* the held need (hold_band) took the noise's flapping away (0.9-3.0 changes per VM-minute
     * at +-10 % before it, 0.000-0.055 after); what is left here is claim_fair's probing after
     * the rise step (counts 1 -> 5 -> 4, 10-18 intervals after it): issue #37's finding 7 */
    {PR_FLAP, SC_FLOATING, 64, 10},
    /* claim_after probing (3 decisions without noise), and flapping that never settles */
    {PR_SETTLE, -1, 0, 10},
    {PR_SETTLE, -1, 0, 20},
    {PR_SETTLE, -1, 256, 0},
    {PR_SETTLE, SC_PINNED, 64, 0},
};

struct opts {
    int layout; /* -1: all */
    unsigned cpus, vms, intervals;
    int noise; /* -1: the mode's default */
    unsigned long long seed;
    bool spill, table, check, all, verbose;
};

static int parse_uint(const char *opt, const char *s, unsigned long long lo, unsigned long long hi,
                      unsigned long long *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (!*s || *end || errno || *s == '-' || v < lo || v > hi) {
        fprintf(stderr, "chscale: %s takes a whole number from %llu to %llu, not '%s'.\n", opt, lo,
                hi, s);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"layout", required_argument, NULL, 'l'},
        {"cpus", required_argument, NULL, 'c'},
        {"vms", required_argument, NULL, 'v'},
        {"noise", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"intervals", required_argument, NULL, 'i'},
        {"spill", no_argument, NULL, 'S'},
        {"table", no_argument, NULL, 't'},
        {"check", no_argument, NULL, 'k'},
        {"all", no_argument, NULL, 'a'},
        {"verbose", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int c;

    *o = (struct opts){.layout = -1, .noise = -1, .seed = 1, .intervals = 240};
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->layout = -2;
            for (int l = 0; l < SC_NLAYOUT; l++)
                if (strcmp(optarg, sc_layout_names[l]) == 0)
                    o->layout = l;
            if (strcmp(optarg, "all") == 0)
                o->layout = -1;
            if (o->layout == -2) {
                fprintf(stderr,
                        "chscale: --layout is floating, pinned, mixed, numa or all, "
                        "not '%s'.\n",
                        optarg);
                return -EINVAL;
            }
            break;
        case 'c':
            if (parse_uint("--cpus", optarg, 8, HD_PCPU_MAX, &v) < 0)
                return -EINVAL;
            o->cpus = (unsigned)v;
            if (v % (v >= 128 ? 8 : 4)) {
                fprintf(stderr,
                        "chscale: --cpus must be a multiple of 4 (of 8 from 128: SMT2 "
                        "cores in 2 or 4 NUMA nodes), not %llu.\n",
                        v);
                return -EINVAL;
            }
            break;
        case 'v':
            if (parse_uint("--vms", optarg, 2, 1000, &v) < 0)
                return -EINVAL;
            o->vms = (unsigned)v;
            break;
        case 'n':
            if (parse_uint("--noise", optarg, 0, 50, &v) < 0)
                return -EINVAL;
            o->noise = (int)v;
            break;
        case 's':
            if (parse_uint("--seed", optarg, 0, UINT64_MAX, &v) < 0)
                return -EINVAL;
            o->seed = v;
            break;
        case 'i':
            if (parse_uint("--intervals", optarg, 40, 10000, &v) < 0)
                return -EINVAL;
            o->intervals = (unsigned)v;
            break;
        case 'S':
            o->spill = true;
            break;
        case 't':
            o->table = true;
            break;
        case 'k':
            o->check = true;
            break;
        case 'a':
            o->all = true;
            break;
        case 'V':
            o->verbose = true;
            break;
        case 'h':
            printf(usage, HD_PCPU_MAX);
            exit(0);
        default:
            fprintf(stderr, "chscale: unknown option or missing value: '%s' (see --help).\n",
                    argv[optind - 1]);
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "chscale: unexpected argument '%s' (see --help).\n", argv[optind]);
        return -EINVAL;
    }
    if (o->table && o->check) {
        fprintf(stderr, "chscale: --table and --check are separate runs.\n");
        return -EINVAL;
    }
    if (o->verbose && (o->table || o->check)) {
        fprintf(stderr, "chscale: --verbose goes with a single case, not --table or --check.\n");
        return -EINVAL;
    }
    if (o->all && !o->check) {
        fprintf(stderr, "chscale: --all goes with --check.\n");
        return -EINVAL;
    }
    return 0;
}

/* The three policies on one case: none first, the others compared with it. */
static int run_case(const struct sc_case *c, struct sc_result r[SC_NPOLICY])
{
    int rc;

    if ((rc = sc_run(c, SC_NONE, NULL, &r[SC_NONE])) < 0)
        goto fail;
    if ((rc = sc_run(c, SC_COREHINT, &r[SC_NONE], &r[SC_COREHINT])) < 0) {
        sc_result_free(&r[SC_NONE]);
        goto fail;
    }
    if ((rc = sc_run(c, SC_STATIC, &r[SC_NONE], &r[SC_STATIC])) < 0) {
        sc_result_free(&r[SC_NONE]);
        sc_result_free(&r[SC_COREHINT]);
        goto fail;
    }
    return 0;

fail:
    fprintf(stderr, "chscale: a run failed: %s\n", strerror(-rc));
    return rc;
}

static void free_case(struct sc_result r[SC_NPOLICY])
{
    for (int p = 0; p < SC_NPOLICY; p++)
        sc_result_free(&r[p]);
}

static void print_case(const struct sc_case *c, const struct sc_result r[SC_NPOLICY])
{
    static const char *const phase_names[SC_NPHASE] = {"base", "rise", "idle", "drop", "return"};

    printf("SIMULATED: %s layout, %u pCPUs, %u VMs, noise +-%u %%, seed %llu, %u intervals\n",
           sc_layout_names[c->layout], c->npcpu, r[SC_NONE].nvm, c->noise_pct,
           (unsigned long long)c->seed, c->intervals);
    for (int p = 0; p < SC_NPOLICY; p++) {
        const struct sc_result *x = &r[p];
        printf("%-9s CPU %.1f (%.1f cores), worst/none %.3f (vm%u, %s), worst/owed %.3f (vm%u, "
               "%s), Jain %.4f, steal %.1f %%, changes/VM-min %.3f, settle "
               "rise/idle/drop/return %u/%u/%u/%u, narrowed uncontended %u (of %u intervals)\n",
               sc_policy_names[p], x->cpu_total, x->work_total, x->worst_ratio, x->worst_vm,
               phase_names[x->worst_phase], x->worst_owed, x->owed_vm, phase_names[x->owed_phase],
               x->jain, x->steal_pct, x->changes_per_vm_min, x->settle[PH_RISE], x->settle[PH_IDLE],
               x->settle[PH_DROP], x->settle[PH_RETURN], x->narrowed_uncontended,
               x->uncontended_intervals);
    }
}

static double tolerance(unsigned noise_pct)
{
    /* the model's own granularity (a VM's vCPUs land on shared or idle cores) plus half the
     * noise: a decision made on a reading off by the noise */
    return 0.05 + noise_pct / 200.0;
}

static void table_row(const struct sc_case *c, const struct sc_result r[SC_NPOLICY])
{
    const struct sc_result *ch = &r[SC_COREHINT], *no = &r[SC_NONE], *st = &r[SC_STATIC];

    printf("| %s | %u | %u | %u | %.3f / %.3f | %.3f / %.3f | %.4f / %.4f / %.4f "
           "| %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.3f / %.3f | %u | %u / %u (%u) |\n",
           sc_layout_names[c->layout], c->npcpu, no->nvm, c->noise_pct, ch->worst_ratio,
           st->worst_ratio, ch->worst_owed, st->worst_owed, ch->jain, no->jain, st->jain,
           ch->steal_pct, no->steal_pct, st->steal_pct, ch->work_total, no->work_total,
           st->work_total, ch->changes_per_vm_min, st->changes_per_vm_min, ch->settle_max,
           ch->narrowed_uncontended, st->narrowed_uncontended, ch->uncontended_intervals);
}

static bool known(enum prop p, const struct sc_case *c)
{
    for (size_t i = 0; i < sizeof(known_failing) / sizeof(known_failing[0]); i++) {
        const struct known *k = &known_failing[i];
        if (k->prop == p && (k->layout < 0 || k->layout == (int)c->layout) &&
            (!k->cpus || k->cpus == c->npcpu) && (k->noise < 0 || k->noise == (int)c->noise_pct))
            return true;
    }
    return false;
}

/* Evaluate each property on one case; returns the failures. */
static unsigned check_case(const struct sc_case *c, const struct sc_result r[SC_NPOLICY], bool all)
{
    const struct sc_result *ch = &r[SC_COREHINT], *no = &r[SC_NONE];
    unsigned failed = 0;

    for (int p = 0; p < NPROP; p++) {
        char what[200];
        bool ok;

        switch ((enum prop)p) {
        case PR_WORST:
            /* what a VM is owed: its CPU under none, or its fair share when none gives it
             * more (a fair policy takes only that excess) */
            ok = ch->worst_owed >= 1 - tolerance(c->noise_pct);
            snprintf(what, sizeof(what),
                     "worst VM's CPU / min(none's, fair share) %.3f (vm%u), at least %.3f",
                     ch->worst_owed, ch->owed_vm, 1 - tolerance(c->noise_pct));
            break;
        case PR_JAIN:
            ok = ch->jain >= no->jain - 0.005;
            snprintf(what, sizeof(what), "Jain %.4f, none's %.4f (0.005 allowed below)", ch->jain,
                     no->jain);
            break;
        case PR_FLAP:
            if (c->noise_pct > 10)
                continue;
            ok = ch->changes_per_vm_min <= 0.1;
            snprintf(what, sizeof(what), "%.3f set changes per VM-minute, at most 0.1",
                     ch->changes_per_vm_min);
            break;
        case PR_SETTLE:
            ok = ch->settle_max <= 2;
            snprintf(what, sizeof(what),
                     "settles in %u/%u/%u/%u decisions after rise/idle/drop/return, at most 2",
                     ch->settle[PH_RISE], ch->settle[PH_IDLE], ch->settle[PH_DROP],
                     ch->settle[PH_RETURN]);
            break;
        case PR_NARROW:
        default:
            if (!ch->uncontended_intervals)
                continue; /* no interval without wait under none: nothing to judge */
            ok = ch->narrowed_uncontended == 0;
            snprintf(what, sizeof(what),
                     "%u VMs narrowed in %u uncontended intervals, none allowed",
                     ch->narrowed_uncontended, ch->uncontended_intervals);
            break;
        }
        if (known((enum prop)p, c) && !all) {
            printf("SKIP %s %s/%u/%u%%: known failing (issue #37), --all runs it\n", prop_names[p],
                   sc_layout_names[c->layout], c->npcpu, c->noise_pct);
            continue;
        }
        printf("%s %s %s/%u/%u%%: %s%s\n", ok ? "PASS" : "FAIL", prop_names[p],
               sc_layout_names[c->layout], c->npcpu, c->noise_pct, what,
               ok && known((enum prop)p, c) ? " (listed in known_failing[]: drop the entry)" : "");
        failed += !ok;
    }
    return failed;
}

int main(int argc, char **argv)
{
    unsigned cpus[2] = {64, 256}, ncpus, noise[3] = {0, 10, 20}, nnoise;
    struct opts o;
    unsigned failed = 0;
    bool many;

    if (parse(argc, argv, &o) < 0)
        return 2;
    many = o.table || o.check;
    ncpus = many ? 2 : 1;
    if (o.cpus) {
        cpus[0] = o.cpus;
        ncpus = 1;
    }
    nnoise = many ? 3 : 1;
    if (!many)
        noise[0] = 10;
    if (o.noise >= 0) {
        noise[0] = (unsigned)o.noise;
        nnoise = 1;
    }
    if (o.table)
        printf("SIMULATED (tests/scale/README.md), seed %llu, %u intervals of 1 s; corehint / "
               "none / static where three, corehint / static where two\n\n"
               "| layout | pCPUs | VMs | noise %% | worst CPU / none's | worst CPU / owed "
               "| Jain | steal %% | cores of work | set changes per VM-min | settle (decisions) "
               "| narrowed uncontended (intervals) |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|\n",
               o.seed, o.intervals);
    for (int l = 0; l < SC_NLAYOUT; l++) {
        if (o.layout >= 0 ? l != o.layout : !many && l != SC_FLOATING)
            continue;
        for (unsigned hc = 0; hc < ncpus; hc++)
            for (unsigned nz = 0; nz < nnoise; nz++) {
                struct sc_result r[SC_NPOLICY];
                struct sc_case c = {.layout = (enum sc_layout)l,
                                    .npcpu = cpus[hc],
                                    .nvm = o.vms,
                                    .noise_pct = noise[nz],
                                    .intervals = o.intervals,
                                    .seed = o.seed,
                                    .spill = o.spill,
                                    .verbose = o.verbose};

                if (run_case(&c, r) < 0)
                    return 1;
                if (o.table)
                    table_row(&c, r);
                else if (o.check)
                    failed += check_case(&c, r, o.all);
                else
                    print_case(&c, r);
                free_case(r);
                fflush(stdout);
            }
    }
    if (o.check && failed) {
        fprintf(stderr, "chscale: %u properties failed (the FAIL lines above).\n", failed);
        return 1;
    }
    return 0;
}
