// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "corehint/cpulist.h"

static const struct {
    const char *text;
    const char *canonical;
} accept[] = {
    {"", ""},
    {"0", "0"},
    {"7", "7"},
    {"0-3", "0-3"},
    {"0-3,5,8-9", "0-3,5,8-9"},
    {"0,1", "0-1"},     /* adjacent ids fold into a range */
    {"0-1,2-3", "0-3"}, /* adjacent ranges fold */
    {"3-3", "3"},
    {"0,2,4", "0,2,4"},
    {"10-12,100", "10-12,100"},
    {"8191", "8191"},
    {"0-8191", "0-8191"},
};

static const struct {
    const char *text;
    int rc;
} reject[] = {
    {" 0", -EINVAL},
    {"0 ", -EINVAL},
    {"0, 1", -EINVAL},
    {",", -EINVAL},
    {"0,", -EINVAL},
    {",0", -EINVAL},
    {"0,,1", -EINVAL},
    {"-1", -EINVAL},
    {"+1", -EINVAL},
    {"01", -EINVAL}, /* leading zero */
    {"0-03", -EINVAL},
    {"3-1", -EINVAL},   /* descending range */
    {"2,1", -EINVAL},   /* descending order */
    {"0-3,2", -EINVAL}, /* overlap */
    {"1,1", -EINVAL},   /* duplicate */
    {"0-", -EINVAL},
    {"-", -EINVAL},
    {"1-2-3", -EINVAL},
    {"0-7:2/4", -EINVAL}, /* stride syntax is not accepted */
    {"a", -EINVAL},
    {"0x1", -EINVAL},
    {"0\n", -EINVAL}, /* only the sysfs variant takes a newline */
    {"8192", -ERANGE},
    {"0-8192", -ERANGE},
    {"99999999999999999999999", -ERANGE}, /* would overflow any integer type */
    {"4294967297", -ERANGE},
};

TEST(accepts_and_formats_canonically)
{
    for (size_t i = 0; i < ARRAY_SIZE(accept); i++) {
        ch_cpuset s;
        char buf[128];

        CHECK_MSG(ch_cpulist_parse(accept[i].text, strlen(accept[i].text), &s) == 0, "parse \"%s\"",
                  accept[i].text);
        CHECK(ch_cpulist_format(&s, buf, sizeof(buf)) >= 0);
        CHECK_STR(buf, accept[i].canonical);
    }
}

TEST(rejects_every_grammar_violation)
{
    for (size_t i = 0; i < ARRAY_SIZE(reject); i++) {
        ch_cpuset s;
        int rc = ch_cpulist_parse(reject[i].text, strlen(reject[i].text), &s);

        CHECK_MSG(rc == reject[i].rc, "\"%s\": rc %d, expected %d", reject[i].text, rc,
                  reject[i].rc);
        CHECK(ch_cpuset_empty(&s));
    }
}

TEST(parse_honours_length_not_nul)
{
    ch_cpuset s;
    char buf[16];

    /* "0-3" followed by bytes that must not be read */
    CHECK_INT(ch_cpulist_parse("0-3,9", 3, &s), 0);
    ch_cpulist_format(&s, buf, sizeof(buf));
    CHECK_STR(buf, "0-3");
    CHECK_INT(ch_cpulist_parse("1\0002", 3, &s), -EINVAL);
}

TEST(sysfs_variant_takes_one_newline)
{
    ch_cpuset s;

    CHECK_INT(ch_cpulist_parse_sysfs("0-3\n", 4, &s), 0);
    CHECK_INT(ch_cpuset_count(&s), 4);
    CHECK_INT(ch_cpulist_parse_sysfs("\n", 1, &s), 0);
    CHECK(ch_cpuset_empty(&s));
    CHECK_INT(ch_cpulist_parse_sysfs("0\n\n", 3, &s), -EINVAL);
}

TEST(format_reports_short_buffer)
{
    ch_cpuset s;
    char buf[4];

    ch_cpulist_parse("0-3,5", 5, &s);
    CHECK_INT(ch_cpulist_format(&s, buf, sizeof(buf)), -ENOSPC);
    CHECK_STR(buf, "");
    CHECK_INT(ch_cpulist_format(&s, buf, 0), -ENOSPC);
    char exact[6];
    CHECK_INT(ch_cpulist_format(&s, exact, sizeof(exact)), 5);
    CHECK_STR(exact, "0-3,5");
}

TEST(set_operations)
{
    ch_cpuset a, b, c;

    ch_cpulist_parse("0-5", 3, &a);
    ch_cpulist_parse("4-9", 3, &b);
    ch_cpuset_and(&c, &a, &b);
    CHECK_INT(ch_cpuset_count(&c), 2);
    CHECK_INT(ch_cpuset_next(&c, 0), 4);
    ch_cpuset_or(&c, &a, &b);
    CHECK_INT(ch_cpuset_count(&c), 10);
    CHECK_INT(ch_cpuset_last(&c), 9);
    ch_cpuset_andnot(&c, &a, &b);
    CHECK_INT(ch_cpuset_last(&c), 3);
    CHECK(ch_cpuset_subset(&c, &a));
    CHECK(!ch_cpuset_subset(&a, &c));
    ch_cpuset_fill(&c, 6);
    CHECK(ch_cpuset_equal(&c, &a));
    ch_cpuset_set(&c, CH_CPU_MAX); /* out of range: ignored, not a write past the end */
    CHECK(ch_cpuset_equal(&c, &a));
    CHECK(!ch_cpuset_test(&c, CH_CPU_MAX));
    CHECK_INT(ch_cpuset_next(&c, CH_CPU_MAX), -1);
    ch_cpuset_zero(&c);
    CHECK_INT(ch_cpuset_last(&c), -1);
    CHECK_INT(ch_cpuset_next(&c, 0), -1);
    ch_cpuset_set(&c, 63);
    ch_cpuset_set(&c, 64);
    ch_cpuset_set(&c, 8191);
    CHECK_INT(ch_cpuset_next(&c, 0), 63);
    CHECK_INT(ch_cpuset_next(&c, 64), 64);
    CHECK_INT(ch_cpuset_next(&c, 65), 8191);
    unsigned n = 0;
    ch_cpuset_foreach (cpu, &c)
        n += (unsigned)cpu;
    CHECK_INT(n, 63 + 64 + 8191);
}

TEST(random_sets_round_trip)
{
    static char buf[CH_CPULIST_MAX_LEN];
    unsigned seed = 12345;

    for (int round = 0; round < 2000; round++) {
        ch_cpuset s, t;
        ch_cpuset_zero(&s);
        unsigned span = 1 + (unsigned)rand_r(&seed) % CH_CPU_MAX;
        unsigned density = 1 + (unsigned)rand_r(&seed) % 8;
        for (unsigned c = 0; c < span; c++)
            if ((unsigned)rand_r(&seed) % density == 0)
                ch_cpuset_set(&s, c);
        int len = ch_cpulist_format(&s, buf, sizeof(buf));
        CHECK(len >= 0);
        CHECK(ch_cpulist_parse(buf, (size_t)len, &t) == 0);
        CHECK(ch_cpuset_equal(&s, &t));
    }
}

TEST(worst_case_fits_max_len)
{
    static char buf[CH_CPULIST_MAX_LEN];
    ch_cpuset s;

    ch_cpuset_zero(&s);
    for (unsigned c = 0; c < CH_CPU_MAX; c += 2)
        ch_cpuset_set(&s, c);
    int len = ch_cpulist_format(&s, buf, sizeof(buf));
    CHECK(len > 0);
    CHECK((size_t)len < CH_CPULIST_MAX_LEN);
}
