/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Userspace stand-ins for the kernel's find_*_bit helpers (see types.h): they return size
 * when no bit is found. */
#ifndef CH_KERNEL_SHIM_FIND_H
#define CH_KERNEL_SHIM_FIND_H

#include <linux/bitmap.h>

static inline unsigned int find_next_bit(const unsigned long *addr, unsigned int size,
                                         unsigned int offset)
{
    for (unsigned int i = offset; i < size; i++)
        if (test_bit(i, addr))
            return i;
    return size;
}

static inline unsigned int find_first_and_bit(const unsigned long *a, const unsigned long *b,
                                              unsigned int size)
{
    for (unsigned int i = 0; i < size; i++)
        if (test_bit(i, a) && test_bit(i, b))
            return i;
    return size;
}

/* The first bit at or after offset set in a and clear in b. */
static inline unsigned int find_next_andnot_bit(const unsigned long *a, const unsigned long *b,
                                                unsigned int size, unsigned int offset)
{
    for (unsigned int i = offset; i < size; i++)
        if (test_bit(i, a) && !test_bit(i, b))
            return i;
    return size;
}

#define for_each_set_bit(bit, addr, size)                                                       \
    for ((bit) = find_next_bit((addr), (size), 0); (bit) < (size);                              \
         (bit) = find_next_bit((addr), (size), (bit) + 1))

#endif
