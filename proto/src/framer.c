// SPDX-License-Identifier: LGPL-2.1-or-later
#include "corehint/framer.h"

#include <string.h>

void ch_framer_init(struct ch_framer *f)
{
    memset(f, 0, sizeof(*f));
}

void ch_framer_reset(struct ch_framer *f)
{
    f->len = 0;
    f->discarding = false;
}

size_t ch_framer_pending(const struct ch_framer *f)
{
    return f->len;
}

size_t ch_framer_feed(struct ch_framer *f, const char *data, size_t len, ch_line_fn fn, void *ctx)
{
    size_t pos = 0;

    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t chunk = nl ? (size_t)(nl - (data + pos)) : len - pos;

        if (!f->discarding && f->len + chunk >= CH_LINE_MAX) {
            /* The line with its '\n' cannot fit: drop what we hold and skip to the '\n'. */
            f->discarding = true;
            f->len = 0;
        }
        if (f->discarding) {
            f->bytes += chunk + (nl ? 1 : 0);
            pos += chunk + (nl ? 1 : 0);
            if (nl) {
                f->discarding = false;
                f->oversized++;
            }
            continue;
        }
        memcpy(f->buf + f->len, data + pos, chunk);
        f->len += chunk;
        f->bytes += chunk + (nl ? 1 : 0);
        pos += chunk + (nl ? 1 : 0);
        if (!nl)
            break;
        size_t line_len = f->len;
        f->len = 0;
        f->lines++;
        if (fn && !fn(ctx, f->buf, line_len))
            return pos;
    }
    return pos;
}
