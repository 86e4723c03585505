/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Userspace stand-ins for the kernel's 64-bit divisions (see types.h). */
#ifndef CH_KERNEL_SHIM_MATH64_H
#define CH_KERNEL_SHIM_MATH64_H

#include <linux/types.h>

static inline u64 div_u64(u64 dividend, u32 divisor)
{
    return dividend / divisor;
}

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
    return dividend / divisor;
}

#endif
