// SPDX-License-Identifier: LGPL-2.1-or-later
/* Any bytes as a live domain XML: hostd's reader returns 0 or -EINVAL, never a thread count
 * of 0 or above 64, a share above libvirt's maximum, an unterminated channel path, a cap
 * record whose saved period or quota libvirt would refuse to take back, or a per-VM policy
 * that is half taken (an element with an error sets nothing), out of range, or whose error
 * text holds a control or non-ASCII byte. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domxml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dx_info info;
    int rc = dx_parse((const char *)data, size, &info);

    if (rc != 0 && rc != -EINVAL)
        abort();
    if (info.threads < 1 || info.threads > 64 || info.shares > 262144)
        abort();
    if (!memchr(info.channel, '\0', sizeof(info.channel)))
        abort();
    if (rc != 0 && (info.threads != 1 || info.shares || info.channel[0] || info.cap.present))
        abort(); /* a rejected text leaves the defaults */
    if (info.cap.present &&
        (info.cap.cpus < 0 || info.cap.cpus > 65536 || info.cap.saved_period < 1000 ||
         info.cap.saved_period > 1000000 ||
         (info.cap.saved_quota != -1 &&
          (info.cap.saved_quota < 1000 || info.cap.saved_quota > 17592186044415LL))))
        abort();
    const struct snap_policy *p = &info.policy;
    if (!memchr(p->error, '\0', sizeof(p->error)))
        abort();
    for (const char *c = p->error; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            abort();
    if ((!p->present || p->error[0] || rc != 0) &&
        (p->weight != 0 || p->opt_out != -1 || p->actuator != -1))
        abort();
    if (!p->present && p->error[0])
        abort();
    if (p->weight != 0 && !(p->weight >= 0.001 && p->weight <= 1e6))
        abort();
    if (p->opt_out < -1 || p->opt_out > 1 || p->actuator < -1 || p->actuator > 2)
        abort();
    return 0;
}
