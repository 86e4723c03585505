// SPDX-License-Identifier: LGPL-2.1-or-later
/* Any bytes into the cpulist parser; whatever it accepts must format back to a text that
 * parses to the same set, and the canonical text must be a fixed point. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corehint/cpulist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[CH_CPULIST_MAX_LEN];
    static char again[CH_CPULIST_MAX_LEN];
    ch_cpuset a, b;

    if (ch_cpulist_parse((const char *)data, size, &a) < 0) {
        if (!ch_cpuset_empty(&a))
            abort();
        return 0;
    }
    int len = ch_cpulist_format(&a, text, sizeof(text));
    if (len < 0 || ch_cpulist_parse(text, (size_t)len, &b) < 0 || !ch_cpuset_equal(&a, &b))
        abort();
    if (ch_cpulist_format(&b, again, sizeof(again)) != len || strcmp(text, again) != 0)
        abort();
    /* the canonical text is never longer than the input */
    if ((size_t)len > size)
        abort();
    return 0;
}
