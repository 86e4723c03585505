/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Userspace stand-ins for the kernel's bitmap helpers (see types.h). */
#ifndef CH_KERNEL_SHIM_BITMAP_H
#define CH_KERNEL_SHIM_BITMAP_H

#include <linux/types.h>

static inline bool test_bit(unsigned int nr, const unsigned long *addr)
{
    return (addr[BIT_WORD(nr)] & BIT_MASK(nr)) != 0;
}

static inline void __set_bit(unsigned int nr, unsigned long *addr)
{
    addr[BIT_WORD(nr)] |= BIT_MASK(nr);
}

static inline void __clear_bit(unsigned int nr, unsigned long *addr)
{
    addr[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}

static inline bool bitmap_empty(const unsigned long *src, unsigned int nbits)
{
    for (unsigned int i = 0; i < nbits; i++)
        if (test_bit(i, src))
            return false;
    return true;
}

/* Is every bit of src1 set in src2? */
static inline bool bitmap_subset(const unsigned long *src1, const unsigned long *src2,
                                 unsigned int nbits)
{
    for (unsigned int i = 0; i < nbits; i++)
        if (test_bit(i, src1) && !test_bit(i, src2))
            return false;
    return true;
}

#endif
