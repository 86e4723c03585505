/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine: the measure -> decide pipeline, shared by the live daemon, --once and --replay.
 * Fed one snapshot at a time, it keeps the previous one, builds the model, runs the policy
 * with the previous decisions and logs what changed.  It never compares snapshots from two
 * different connections (generations).
 */
#ifndef HOSTD_ENGINE_H
#define HOSTD_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "config.h"
#include "model.h"
#include "policy.h"
#include "snapshot.h"

struct engine {
    const struct hd_config *cfg;
    FILE *record; /* --record: every snapshot is appended here */
    struct snapshot *prev;
    unsigned prev_gen;
    struct model model; /* the latest model, valid when decided */
    bool decided;
    struct pol_decision *dec; /* one per model domain, uuid order */
    unsigned ndec;
    uint64_t steps;
    uint64_t last_step_ns;   /* wall time of the last policy step */
    uint64_t last_sample_ns; /* wall time of the last libvirt sample (live only) */
    uint64_t changes;        /* preferred-set changes so far */
    uint64_t short_skipped;  /* live samples skipped by eng_too_soon() */
    /* live sampling state, kept by main.c and the live source (source.c) for /status and
     * /metrics */
    bool live;                /* samples come from libvirt (not --once, not a replay) */
    bool connected;           /* the libvirt worker holds a connection */
    bool stale;               /* no decision for stale_intervals: guests are widened */
    uint64_t last_decided_ms; /* CLOCK_MONOTONIC ms of the last decision, 0 never */
    double last_decided_unix; /* the same as Unix time, for the metric */
    uint64_t overruns;        /* ticks that found the previous sample still running */
    uint64_t stale_episodes;  /* times the staleness limit was crossed */
};

void eng_init(struct engine *e, const struct hd_config *cfg, FILE *record);
/*
 * Take ownership of s, sampled on connection generation gen.  Returns 1 when a decision was
 * made, 0 when s only primes the pipeline, -errno on failure.
 */
int eng_feed(struct engine *e, struct snapshot *s, unsigned gen);
/* Does s (sampled on connection generation gen) follow the previous sample of the same
 * generation by less than half an interval?  Rates over such a window
 * mean little, and after a stalled libvirt call its counters may have been read long before
 * its stamp: live sampling skips it and measures the next sample against the same base. */
bool eng_too_soon(const struct engine *e, const struct snapshot *s, unsigned gen);
/* Forget the previous sample (connection lost): the next decision needs two fresh ones. */
void eng_reset(struct engine *e);
/* The report of the latest decision (NULL before the first). */
json_object *eng_report(const struct engine *e);
void eng_finalise(struct engine *e);

#endif
