// SPDX-License-Identifier: LGPL-2.1-or-later
#include "hint.h"

#include "governor.h"

#include <inttypes.h>
#include <stdio.h>

const char *hint_verdict_code(enum hint_verdict v)
{
    switch (v) {
    case HINT_OK:
        return "ok";
    case HINT_STALE_SEQ:
        return "stale-seq";
    case HINT_EMPTY:
        return "bad-cpulist";
    case HINT_NOT_ONLINE:
        return "not-online";
    case HINT_NO_HOUSEKEEPING:
        return "no-housekeeping";
    }
    return "internal";
}

/* "cpu 7" or "cpus 5,7-9", shortened with "..." when the list is long. */
static void describe(const ch_cpuset *s, char *buf, size_t len)
{
    char list[96];

    if (ch_cpulist_format(s, list, sizeof(list)) < 0)
        snprintf(list, sizeof(list), "%d,...", ch_cpuset_next(s, 0));
    snprintf(buf, len, "%s %s", ch_cpuset_count(s) == 1 ? "cpu" : "cpus", list);
}

enum hint_verdict hint_check(const struct ch_hint *h, const ch_cpuset *online,
                             const ch_cpuset *isolated, uint64_t last_seq, char *msg, size_t msglen)
{
    char what[128];

    msg[0] = '\0';
    if (h->seq <= last_seq) {
        snprintf(msg, msglen, "seq %" PRIu64 " is not above the last applied seq %" PRIu64, h->seq,
                 last_seq);
        return HINT_STALE_SEQ;
    }
    if (ch_cpuset_empty(&h->cpus)) {
        snprintf(msg, msglen, "empty cpu list");
        return HINT_EMPTY;
    }
    if (!ch_cpuset_subset(&h->cpus, online)) {
        ch_cpuset off;
        ch_cpuset_andnot(&off, &h->cpus, online);
        describe(&off, what, sizeof(what));
        snprintf(msg, msglen, "%s %s not online", what, ch_cpuset_count(&off) == 1 ? "is" : "are");
        return HINT_NOT_ONLINE;
    }
    /* The kernel takes any set holding one housekeeping CPU (PROTOCOL.md 5.1). */
    ch_cpuset hk, both;
    governor_housekeeping_set(online, isolated, &hk);
    ch_cpuset_and(&both, &h->cpus, &hk);
    if (!ch_cpuset_empty(&hk) && ch_cpuset_empty(&both)) {
        describe(&hk, what, sizeof(what));
        snprintf(msg, msglen, "cpus hold no housekeeping cpu (the housekeeping %s)", what);
        return HINT_NO_HOUSEKEEPING;
    }
    return HINT_OK;
}
