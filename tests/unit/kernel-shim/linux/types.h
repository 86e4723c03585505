/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The few kernel helpers drivers/virt/steal_governor.h uses, in userspace, so that the unit
 * test test-governor-agree compiles the kernel series' policy functions unchanged.  Semantics
 * as in include/linux/{bitmap,find,math64,minmax}.h for the uses there.
 */
#ifndef CH_KERNEL_SHIM_TYPES_H
#define CH_KERNEL_SHIM_TYPES_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

typedef uint64_t u64;
typedef uint32_t u32;

#define BITS_PER_LONG ((unsigned int)(sizeof(unsigned long) * CHAR_BIT))
#define BIT_WORD(nr) ((nr) / BITS_PER_LONG)
#define BIT_MASK(nr) (1UL << ((nr) % BITS_PER_LONG))

#endif
