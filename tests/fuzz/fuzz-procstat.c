// SPDX-License-Identifier: LGPL-2.1-or-later
/* Any bytes as guestd's /proc/stat: an accepted text names at least one CPU, counters only for
 * the CPUs it names, and no CPU's steal above its total (the governor divides by it). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "corehint/procstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cpustat st;
    int rc = procstat_parse((const char *)data, size, &st);

    if (rc != 0 && rc != -EINVAL)
        abort();
    if (rc != 0)
        return 0;
    if (ch_cpuset_empty(&st.present))
        abort();
    for (unsigned c = 0; c < CH_CPU_MAX; c++) {
        if (!ch_cpuset_test(&st.present, c) && (st.total[c] || st.steal[c]))
            abort();
        if (st.steal[c] > st.total[c])
            abort();
    }
    return 0;
}
