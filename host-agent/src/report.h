/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report: what hostd measured and decided, as one JSON document (the --once output, one line
 * per step in --replay, and later /status).
 *
 * {"version":S,"t_ns":N,"interval_s":X,
 *  "host":{"npcpu":N,"psi_some":X?,"pcpus":[{"cpu":N,"busy":X,"wait":X,"contention":X}...]},
 *  "pools":[{"id":N,"cpus":"cpulist","capacity":X,"demand":X,"contended":B,"domains":N}...],
 *  "domains":[{"name":S,"uuid":S,"pool":N,"vcpus":N,"threads":N,"measured":B,
 *              "run":X,"wait":X,"demand":X,"acked":B,"applied":"cpulist"?,
 *              "vcpu":[{"id":N,"run":X,"wait":X,"home":N,"last":N,"halted":B}...],
 *              (home: the pCPU it is pinned to, -1 floating; last: where it last ran)
 *              "decision":{"preferred":"cpulist","count":N,"target":N,"weight":X,
 *                          "entitlement":X,"reason":S,"contended":B,"censored":B,
 *                          "claimed":B,"starve_streak":N,"claim_misses":N,
 *                          "claim_pending":N,
 *                          "opt_out":B,"compliant":B,"violations":N,"age":N}}...]}
 */
#ifndef HOSTD_REPORT_H
#define HOSTD_REPORT_H

#include <json-c/json.h>

#include "config.h"
#include "model.h"
#include "policy.h"

/* A new JSON object (caller puts it); decisions may be NULL (nothing decided yet). */
json_object *rep_build(const struct model *m, const struct pol_decision *dec,
                       const struct hd_config *cfg);

#endif
