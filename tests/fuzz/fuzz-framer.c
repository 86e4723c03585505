// SPDX-License-Identifier: LGPL-2.1-or-later
/* The framer fed the input in chunks whose sizes come from the input itself must hand out the
 * same lines as when fed all at once, never a line of CH_LINE_MAX bytes or more, and never hold
 * more than a line's worth. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corehint/framer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct digest {
    uint64_t hash;
    uint64_t n;
};

static bool fold(void *ctx, const char *line, size_t len)
{
    struct digest *d = ctx;

    if (len >= CH_LINE_MAX || memchr(line, '\n', len))
        abort();
    for (size_t i = 0; i < len; i++)
        d->hash = (d->hash ^ (uint8_t)line[i]) * 1099511628211u;
    d->hash = (d->hash ^ 0x100) * 1099511628211u; /* line boundary */
    d->n++;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ch_framer whole, pieces;
    struct digest a = {14695981039346656037u, 0}, b = {14695981039346656037u, 0};

    if (size < 1)
        return 0;
    unsigned step = 1 + data[0] % 64;
    data++;
    size--;
    ch_framer_init(&whole);
    ch_framer_init(&pieces);
    if (ch_framer_feed(&whole, (const char *)data, size, fold, &a) != size)
        abort();
    for (size_t pos = 0; pos < size;) {
        size_t n = size - pos < step ? size - pos : step;
        ch_framer_feed(&pieces, (const char *)data + pos, n, fold, &b);
        pos += n;
        if (ch_framer_pending(&pieces) >= CH_LINE_MAX)
            abort();
        step = 1 + (step * 7 + 3) % 200;
    }
    if (a.hash != b.hash || a.n != b.n || whole.oversized != pieces.oversized ||
        whole.bytes != size || pieces.bytes != size)
        abort();
    return 0;
}
