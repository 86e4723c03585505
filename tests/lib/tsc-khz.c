// SPDX-License-Identifier: LGPL-2.1-or-later
/* tsc-khz: print this host's TSC frequency in kHz, measured against CLOCK_MONOTONIC_RAW over
 * 400 ms.  The e2e guests are told it (tests/e2e/lib.sh): under TCG their TSC is the host's.
 * Each end of the interval is the TSC read closest around the clock read, of nine tries, so a
 * preemption between the two reads does not skew it. */
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static void pair(unsigned long long *tsc, long long *ns)
{
    unsigned long long best = ~0ULL;

    for (int i = 0; i < 9; i++) {
        struct timespec ts;
        unsigned long long a = __rdtsc();
        clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        unsigned long long b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        }
    }
}

int main(void)
{
    const struct timespec wait = {0, 400000000};
    unsigned long long t0, t1;
    long long n0, n1;

    pair(&t0, &n0);
    nanosleep(&wait, NULL);
    pair(&t1, &n1);
    if (n1 <= n0 || t1 <= t0) {
        fprintf(stderr, "tsc-khz: the clock or the TSC did not advance\n");
        return 1;
    }
    printf("%llu\n", (unsigned long long)((double)(t1 - t0) * 1e6 / (double)(n1 - n0)));
    return 0;
}
