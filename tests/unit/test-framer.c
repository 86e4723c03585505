// SPDX-License-Identifier: LGPL-2.1-or-later
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "corehint/framer.h"

struct sink {
    char lines[16][CH_LINE_MAX];
    size_t lens[16];
    unsigned n;
    unsigned stop_after;
};

static bool collect(void *ctx, const char *line, size_t len)
{
    struct sink *s = ctx;

    if (s->n < 16) {
        memcpy(s->lines[s->n], line, len);
        s->lines[s->n][len] = '\0';
        s->lens[s->n] = len;
    }
    s->n++;
    return s->stop_after == 0 || s->n < s->stop_after;
}

static struct sink *new_sink(void)
{
    return calloc(1, sizeof(struct sink));
}

TEST(splits_lines_in_one_chunk)
{
    struct ch_framer f;
    struct sink *s = new_sink();
    const char in[] = "a\nbb\n\nccc\nrest";

    ch_framer_init(&f);
    CHECK_INT(ch_framer_feed(&f, in, strlen(in), collect, s), strlen(in));
    CHECK_INT(s->n, 4);
    CHECK_STR(s->lines[0], "a");
    CHECK_STR(s->lines[1], "bb");
    CHECK_STR(s->lines[2], "");
    CHECK_STR(s->lines[3], "ccc");
    CHECK_INT(ch_framer_pending(&f), 4);
    ch_framer_feed(&f, "!\n", 2, collect, s);
    CHECK_STR(s->lines[4], "rest!");
    CHECK_INT(f.lines, 5);
    free(s);
}

TEST(one_byte_at_a_time_equals_whole)
{
    struct ch_framer f;
    struct sink *s = new_sink();
    const char in[] = "{\"v\":1}\nxy\n\nlast\n";

    ch_framer_init(&f);
    for (size_t i = 0; i < strlen(in); i++)
        CHECK_INT(ch_framer_feed(&f, in + i, 1, collect, s), 1);
    CHECK_INT(s->n, 4);
    CHECK_STR(s->lines[0], "{\"v\":1}");
    CHECK_STR(s->lines[3], "last");
    CHECK_INT(f.bytes, strlen(in));
    free(s);
}

TEST(longest_line_kept_longer_dropped)
{
    static char big[3 * CH_LINE_MAX];
    struct ch_framer f;
    struct sink *s = new_sink();

    ch_framer_init(&f);
    /* exactly CH_LINE_MAX bytes including '\n': accepted */
    memset(big, 'x', CH_LINE_MAX - 1);
    big[CH_LINE_MAX - 1] = '\n';
    ch_framer_feed(&f, big, CH_LINE_MAX, collect, s);
    CHECK_INT(s->n, 1);
    CHECK_INT(s->lens[0], CH_LINE_MAX - 1);
    /* one byte more: dropped and counted, and the next line is intact */
    memset(big, 'y', CH_LINE_MAX);
    big[CH_LINE_MAX] = '\n';
    memcpy(big + CH_LINE_MAX + 1, "ok\n", 3);
    ch_framer_feed(&f, big, CH_LINE_MAX + 4, collect, s);
    CHECK_INT(s->n, 2);
    CHECK_STR(s->lines[1], "ok");
    CHECK_INT(f.oversized, 1);
    free(s);
}

TEST(megabyte_line_in_small_chunks_bounded)
{
    struct ch_framer f;
    struct sink *s = new_sink();
    char chunk[1000];

    ch_framer_init(&f);
    ch_framer_feed(&f, "pre", 3, collect, s); /* a partial line that becomes over-long */
    memset(chunk, 'z', sizeof(chunk));
    for (int i = 0; i < 1024; i++) {
        ch_framer_feed(&f, chunk, sizeof(chunk), collect, s);
        CHECK(ch_framer_pending(&f) < CH_LINE_MAX);
    }
    ch_framer_feed(&f, "\nnext\n", 6, collect, s);
    CHECK_INT(s->n, 1);
    CHECK_STR(s->lines[0], "next");
    CHECK_INT(f.oversized, 1);
    CHECK_INT(f.lines, 1);
    free(s);
}

TEST(megabyte_in_one_feed)
{
    size_t n = 1 << 20;
    char *buf = malloc(n + 8);
    struct ch_framer f;
    struct sink *s = new_sink();

    memset(buf, 'q', n);
    memcpy(buf + n, "\nend\n", 5);
    ch_framer_init(&f);
    CHECK_INT(ch_framer_feed(&f, buf, n + 5, collect, s), n + 5);
    CHECK_INT(s->n, 1);
    CHECK_STR(s->lines[0], "end");
    CHECK_INT(f.oversized, 1);
    free(buf);
    free(s);
}

TEST(callback_can_stop_and_resume)
{
    struct ch_framer f;
    struct sink *s = new_sink();
    const char in[] = "a\nb\nc\n";

    s->stop_after = 1;
    ch_framer_init(&f);
    size_t used = ch_framer_feed(&f, in, 6, collect, s);
    CHECK_INT(used, 2);
    s->stop_after = 0;
    ch_framer_feed(&f, in + used, 6 - used, collect, s);
    CHECK_INT(s->n, 3);
    CHECK_STR(s->lines[2], "c");
    free(s);
}

TEST(reset_drops_partial_line)
{
    struct ch_framer f;
    struct sink *s = new_sink();

    ch_framer_init(&f);
    ch_framer_feed(&f, "half", 4, collect, s);
    ch_framer_reset(&f);
    CHECK_INT(ch_framer_pending(&f), 0);
    ch_framer_feed(&f, "whole\n", 6, collect, s);
    CHECK_STR(s->lines[0], "whole");
    free(s);
}
