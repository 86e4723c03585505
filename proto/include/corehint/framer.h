/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Incremental line framer for the corehint channel.  Fed arbitrary chunks, it hands out
 * complete lines (without '\n').  Memory is bounded by CH_LINE_MAX: a line longer than that is
 * discarded up to its '\n' and counted, never buffered.
 */
#ifndef COREHINT_FRAMER_H
#define COREHINT_FRAMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corehint/proto.h"

struct ch_framer {
    char buf[CH_LINE_MAX];
    size_t len;
    bool discarding;    /* inside an over-long line, dropping bytes until '\n' */
    uint64_t lines;     /* complete lines delivered */
    uint64_t oversized; /* lines dropped for exceeding CH_LINE_MAX */
    uint64_t bytes;     /* bytes fed */
};

/* Called once per complete line.  Return false to stop feeding (the rest stays unconsumed). */
typedef bool (*ch_line_fn)(void *ctx, const char *line, size_t len);

void ch_framer_init(struct ch_framer *f);
/* Drop any partial line, e.g. after the peer reconnected; counters are kept. */
void ch_framer_reset(struct ch_framer *f);
/* Returns the number of bytes consumed: len unless the callback asked to stop. */
size_t ch_framer_feed(struct ch_framer *f, const char *data, size_t len, ch_line_fn fn, void *ctx);
/* Bytes of the current partial line held in the buffer. */
size_t ch_framer_pending(const struct ch_framer *f);

#endif
