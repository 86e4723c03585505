/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hint: the guest's acceptance rules for a host hint (PROTOCOL.md §4.2).  Pure: the caller
 * supplies the online set and the seq watermark of the current connection.
 */
#ifndef GUESTD_HINT_H
#define GUESTD_HINT_H

#include <stddef.h>
#include <stdint.h>

#include "corehint/proto.h"

enum hint_verdict {
    HINT_OK,
    HINT_STALE_SEQ,       /* "stale-seq" */
    HINT_EMPTY,           /* "bad-cpulist": the codec refuses these already */
    HINT_NOT_ONLINE,      /* "not-online" */
    HINT_NO_HOUSEKEEPING, /* "no-housekeeping" */
};

const char *hint_verdict_code(enum hint_verdict v);

/*
 * Check hint h against the online set, the isolated CPUs (may be NULL; they decide which CPUs
 * are housekeeping ones, of which h must hold one, see governor_housekeeping_set()) and
 * last_seq, the highest seq applied on this connection (0 for none).  Stale seq is checked
 * first: a replayed or reordered hint is ignored whatever it says.  On refusal a human-readable
 * reason goes into msg.
 */
enum hint_verdict hint_check(const struct ch_hint *h, const ch_cpuset *online,
                             const ch_cpuset *isolated, uint64_t last_seq, char *msg,
                             size_t msglen);

#endif
