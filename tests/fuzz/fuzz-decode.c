// SPDX-License-Identifier: LGPL-2.1-or-later
/* Any bytes into the message decoder; an accepted message must obey the rules PROTOCOL.md states
 * for it (line limit of its version, sessions in version 2, an empty applied set only when
 * unsupported), must encode, and that encoding must decode to a message that encodes
 * identically. */
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "corehint/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ch_msg m, m2;
    static char out[CH_LINE_MAX], out2[CH_LINE_MAX];
    struct ch_decode_info info;

    if (ch_decode((const char *)data, size, &m, &info) < 0) {
        if (info.err == CH_DEC_OK || !ch_decode_err_code(info.err))
            abort();
        return 0;
    }
    if (size >= ch_line_max(m.v))
        abort();
    if (m.type == CH_MSG_HINT && m.v >= 2 && !m.u.hint.has_session)
        abort();
    if (m.type == CH_MSG_HELLO && m.u.hello.role == CH_ROLE_HOST && m.u.hello.max_v >= 2 &&
        !m.u.hello.has_session)
        abort();
    if (m.type == CH_MSG_STATUS && ch_cpuset_empty(&m.u.status.applied) &&
        m.u.status.mode != CH_MODE_UNSUPPORTED)
        abort();
    int len = ch_encode(&m, out, sizeof(out));
    if (len == -ENOSPC) /* unknown fields dropped, but canonical cpulists can be longer */
        return 0;
    if (len <= 0 || ch_decode(out, (size_t)len - 1, &m2, NULL) < 0)
        abort();
    if (ch_encode(&m2, out2, sizeof(out2)) != len || memcmp(out, out2, (size_t)len) != 0)
        abort();
    return 0;
}
