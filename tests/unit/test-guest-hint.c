// SPDX-License-Identifier: LGPL-2.1-or-later
/* The guest's hint acceptance rules (PROTOCOL.md §4.2), as a table. */
#include <stdio.h>

#include "check.h"
#include "hint.h"

static const struct {
    const char *online;
    const char *isolated;
    uint64_t last_seq;
    uint64_t seq;
    const char *cpus;
    enum hint_verdict verdict;
    const char *message;
} table[] = {
    {"0-3", "", 0, 1, "0-3", HINT_OK, ""},
    {"0-3", "", 0, 1, "0", HINT_OK, ""},
    {"0-3", "", 5, 6, "0,2", HINT_OK, ""},
    {"0-3", "", 0, 1, "0,7", HINT_NOT_ONLINE, "cpu 7 is not online"},
    {"0-3", "", 0, 1, "0-5,9", HINT_NOT_ONLINE, "cpus 4-5,9 are not online"},
    {"0,2-3", "", 0, 1, "0-1", HINT_NOT_ONLINE, "cpu 1 is not online"},
    /* nothing isolated: every online CPU is a housekeeping CPU, any of them will do */
    {"0-3", "", 0, 1, "1-3", HINT_OK, ""},
    {"0-3", "", 0, 1, "3", HINT_OK, ""},
    {"1-3", "", 0, 1, "2-3", HINT_OK, ""},
    {"1-3", "", 0, 1, "1", HINT_OK, ""},
    {"0-3", "", 5, 5, "0", HINT_STALE_SEQ, "seq 5 is not above the last applied seq 5"},
    {"0-3", "", 5, 4, "0", HINT_STALE_SEQ, "seq 4 is not above the last applied seq 5"},
    /* stale is checked first: the content of a replayed hint does not matter */
    {"0-3", "", 9, 2, "7", HINT_STALE_SEQ, "seq 2 is not above the last applied seq 9"},
    {"0-3", "", 0, 1, "", HINT_EMPTY, "empty cpu list"},
    {"0-3", "", UINT64_MAX - 1, UINT64_MAX, "0", HINT_OK, ""},
    /* isolcpus= / nohz_full=: the CPUs the kernel keeps for itself are the housekeeping ones */
    {"0-3", "0", 0, 1, "1-3", HINT_OK, ""},
    {"0-3", "0-1", 0, 1, "0-1", HINT_NO_HOUSEKEEPING,
     "cpus hold no housekeeping cpu (the housekeeping cpus 2-3)"},
    {"0-3", "0-1", 0, 1, "1,3", HINT_OK, ""},
    {"0-3", "1-3", 0, 1, "1-2", HINT_NO_HOUSEKEEPING,
     "cpus hold no housekeeping cpu (the housekeeping cpu 0)"},
    /* everything isolated: back to the first online CPU */
    {"0-3", "0-3", 0, 1, "0", HINT_OK, ""},
};

TEST(validation_table)
{
    for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
        struct ch_hint h = {.seq = table[i].seq, .lease_ms = 1000};
        ch_cpuset online, isolated;
        char msg[256];

        CHECK(ch_cpulist_parse(table[i].online, strlen(table[i].online), &online) == 0);
        CHECK(ch_cpulist_parse(table[i].isolated, strlen(table[i].isolated), &isolated) == 0);
        CHECK(ch_cpulist_parse(table[i].cpus, strlen(table[i].cpus), &h.cpus) == 0);
        enum hint_verdict v =
            hint_check(&h, &online, &isolated, table[i].last_seq, msg, sizeof(msg));
        CHECK_MSG(v == table[i].verdict, "row %zu: verdict %s, expected %s", i,
                  hint_verdict_code(v), hint_verdict_code(table[i].verdict));
        CHECK_MSG(strcmp(msg, table[i].message) == 0, "row %zu: message \"%s\"", i, msg);
    }
}

TEST(codes_are_the_protocol_codes)
{
    CHECK_STR(hint_verdict_code(HINT_NOT_ONLINE), "not-online");
    CHECK_STR(hint_verdict_code(HINT_NO_HOUSEKEEPING), "no-housekeeping");
    CHECK_STR(hint_verdict_code(HINT_STALE_SEQ), "stale-seq");
    CHECK_STR(hint_verdict_code(HINT_EMPTY), "bad-cpulist");
    CHECK_STR(hint_verdict_code(HINT_OK), "ok");
}

TEST(long_offending_lists_are_shortened)
{
    struct ch_hint h = {.seq = 1, .lease_ms = 1000};
    ch_cpuset online;
    char msg[256];

    ch_cpuset_fill(&online, 1);
    ch_cpuset_zero(&h.cpus);
    for (unsigned c = 0; c < 200; c += 2)
        ch_cpuset_set(&h.cpus, c);
    CHECK_INT(hint_check(&h, &online, NULL, 0, msg, sizeof(msg)), HINT_NOT_ONLINE);
    CHECK_STR(msg, "cpus 2,... are not online");
}
