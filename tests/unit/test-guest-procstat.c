// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "corehint/procstat.h"

static int parse(const char *text, struct cpustat *st)
{
    return procstat_parse(text, strlen(text), st);
}

TEST(parses_cpu_lines)
{
    struct cpustat *st = malloc(sizeof(*st));
    const char *text = "cpu  10 20 30 40 50 60 70 80 90 100\n"
                       "cpu0 1 2 3 4 5 6 7 8 9 10\n"
                       "cpu2 100 0 0 900 0 0 0 50 30 0\n"
                       "intr 1 2 3\n"
                       "ctxt 5\n";

    CHECK_INT(parse(text, st), 0);
    CHECK_INT(ch_cpuset_count(&st->present), 2);
    CHECK(ch_cpuset_test(&st->present, 0) && ch_cpuset_test(&st->present, 2));
    CHECK_INT(st->total[0], 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8); /* guest time is inside user */
    CHECK_INT(st->steal[0], 8);
    CHECK_INT(st->idle[0], 4 + 5); /* idle + iowait, hostd's idle time */
    CHECK_INT(st->total[2], 1050);
    CHECK_INT(st->steal[2], 50);
    CHECK_INT(st->idle[2], 900);
    free(st);
}

TEST(old_kernels_and_future_columns)
{
    struct cpustat *st = malloc(sizeof(*st));

    /* 2.6-era: 4 columns, no steal. */
    CHECK_INT(parse("cpu0 1 2 3 4\n", st), 0);
    CHECK_INT(st->total[0], 10);
    CHECK_INT(st->steal[0], 0);
    /* Extra columns a future kernel may add are ignored. */
    CHECK_INT(parse("cpu1 1 1 1 1 1 1 1 1 1 1 77 88\n", st), 0);
    CHECK_INT(st->total[1], 8);
    /* Repeated spaces between columns. */
    CHECK_INT(parse("cpu3  1  1 1 1 0 0 0 2\n", st), 0);
    CHECK_INT(st->steal[3], 2);
    free(st);
}

TEST(rejects_malformed)
{
    struct cpustat *st = malloc(sizeof(*st));
    static const char *const bad[] = {
        "",                                  /* no cpu line */
        "cpu  1 2 3 4\n",                    /* aggregate only */
        "cpu0 1 2 3\n",                      /* too few columns */
        "cpu0 1 x 3 4\n",                    /* not a number */
        "cpu0 1 2 3 4\ncpu0 1 2 3 4\n",      /* duplicate */
        "cpu8192 1 2 3 4\n",                 /* id too large */
        "cpu0 99999999999999999999 1 1 1\n", /* overflow */
        /* each counter fits, their sum does not: steal would exceed the total */
        "cpu0 18446744073709551000 1000 0 0 0 0 0 5\n",
        "cpu0\n",
    };

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        CHECK_MSG(parse(bad[i], st) == -EINVAL, "accepted %s", bad[i]);
    /* A truncated last line is ignored, not misread. */
    CHECK_INT(parse("cpu0 1 2 3 4\ncpu1 5 6", st), 0);
    CHECK_INT(ch_cpuset_count(&st->present), 1);
    /* Lines that merely start with "cpu" but are not cpuN are skipped. */
    CHECK_INT(parse("cpufreq 1\ncpu0 1 2 3 4\n", st), 0);
    free(st);
}

TEST(reads_a_file)
{
    struct cpustat *st = malloc(sizeof(*st));
    char path[] = "/tmp/test-procstat-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    fprintf(f, "cpu  0 0 0 0\n");
    for (int c = 0; c < 300; c++)
        fprintf(f, "cpu%d %d 0 0 100 0 0 0 %d 0 0\n", c, c, c % 7);
    /* a long intr line, as on a real machine */
    fprintf(f, "intr");
    for (int i = 0; i < 20000; i++)
        fprintf(f, " %d", i);
    fprintf(f, "\nctxt 1\n");
    fclose(f);
    CHECK_INT(procstat_read(path, st), 0);
    CHECK_INT(ch_cpuset_count(&st->present), 300);
    CHECK_INT(st->steal[299], 299 % 7);
    CHECK_INT(st->total[299], 299 + 100 + 299 % 7);
    unlink(path);
    CHECK_INT(procstat_read(path, st), -ENOENT);
    free(st);
}
