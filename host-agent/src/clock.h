/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clock: the one monotonic clock hostd's modules read (CLOCK_MONOTONIC: intervals, leases,
 * timers, latencies, sample stamps), in nanoseconds and milliseconds.
 */
#ifndef HOSTD_CLOCK_H
#define HOSTD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t hd_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t hd_mono_ms(void)
{
    return hd_mono_ns() / 1000000u;
}

#endif
