// SPDX-License-Identifier: LGPL-2.1-or-later
#include "corehint/cpulist.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define NWORDS (CH_CPU_MAX / 64)

void ch_cpuset_zero(ch_cpuset *s)
{
    memset(s, 0, sizeof(*s));
}

void ch_cpuset_set(ch_cpuset *s, unsigned cpu)
{
    if (cpu < CH_CPU_MAX)
        s->w[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

void ch_cpuset_clear(ch_cpuset *s, unsigned cpu)
{
    if (cpu < CH_CPU_MAX)
        s->w[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

bool ch_cpuset_test(const ch_cpuset *s, unsigned cpu)
{
    return cpu < CH_CPU_MAX && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned ch_cpuset_count(const ch_cpuset *s)
{
    unsigned n = 0;

    for (unsigned i = 0; i < NWORDS; i++)
        n += (unsigned)__builtin_popcountll(s->w[i]);
    return n;
}

bool ch_cpuset_empty(const ch_cpuset *s)
{
    for (unsigned i = 0; i < NWORDS; i++)
        if (s->w[i])
            return false;
    return true;
}

bool ch_cpuset_equal(const ch_cpuset *a, const ch_cpuset *b)
{
    return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

bool ch_cpuset_subset(const ch_cpuset *a, const ch_cpuset *b)
{
    for (unsigned i = 0; i < NWORDS; i++)
        if (a->w[i] & ~b->w[i])
            return false;
    return true;
}

void ch_cpuset_and(ch_cpuset *dst, const ch_cpuset *a, const ch_cpuset *b)
{
    for (unsigned i = 0; i < NWORDS; i++)
        dst->w[i] = a->w[i] & b->w[i];
}

void ch_cpuset_or(ch_cpuset *dst, const ch_cpuset *a, const ch_cpuset *b)
{
    for (unsigned i = 0; i < NWORDS; i++)
        dst->w[i] = a->w[i] | b->w[i];
}

void ch_cpuset_andnot(ch_cpuset *dst, const ch_cpuset *a, const ch_cpuset *b)
{
    for (unsigned i = 0; i < NWORDS; i++)
        dst->w[i] = a->w[i] & ~b->w[i];
}

int ch_cpuset_next(const ch_cpuset *s, unsigned from)
{
    if (from >= CH_CPU_MAX)
        return -1;
    unsigned i = from / 64;
    uint64_t word = s->w[i] & (~UINT64_C(0) << (from % 64));

    for (;;) {
        if (word)
            return (int)(i * 64 + (unsigned)__builtin_ctzll(word));
        if (++i == NWORDS)
            return -1;
        word = s->w[i];
    }
}

int ch_cpuset_last(const ch_cpuset *s)
{
    for (unsigned i = NWORDS; i-- > 0;)
        if (s->w[i])
            return (int)(i * 64 + 63 - (unsigned)__builtin_clzll(s->w[i]));
    return -1;
}

void ch_cpuset_fill(ch_cpuset *s, unsigned n)
{
    ch_cpuset_zero(s);
    for (unsigned cpu = 0; cpu < n && cpu < CH_CPU_MAX; cpu++)
        ch_cpuset_set(s, cpu);
}

/* Read one id at text[*pos]; strict decimal, no leading zero, bounded before it can overflow. */
static int parse_id(const char *text, size_t len, size_t *pos, unsigned *id)
{
    size_t p = *pos;
    unsigned v = 0;

    if (p >= len || text[p] < '0' || text[p] > '9')
        return -EINVAL;
    if (text[p] == '0' && p + 1 < len && text[p + 1] >= '0' && text[p + 1] <= '9')
        return -EINVAL;
    while (p < len && text[p] >= '0' && text[p] <= '9') {
        v = v * 10 + (unsigned)(text[p] - '0');
        if (v >= CH_CPU_MAX)
            return -ERANGE;
        p++;
    }
    *pos = p;
    *id = v;
    return 0;
}

int ch_cpulist_parse(const char *text, size_t len, ch_cpuset *out)
{
    size_t pos = 0;
    int next_min = 0; /* the lowest id the next range may start at */
    int rc;

    ch_cpuset_zero(out);
    if (len == 0)
        return 0;
    for (;;) {
        unsigned lo, hi;

        if ((rc = parse_id(text, len, &pos, &lo)) < 0)
            goto fail;
        hi = lo;
        if (pos < len && text[pos] == '-') {
            pos++;
            if ((rc = parse_id(text, len, &pos, &hi)) < 0)
                goto fail;
        }
        if (hi < lo || (int)lo < next_min) {
            rc = -EINVAL;
            goto fail;
        }
        for (unsigned c = lo; c <= hi; c++)
            ch_cpuset_set(out, c);
        next_min = (int)hi + 1;
        if (pos == len)
            return 0;
        if (text[pos] != ',' || ++pos == len) {
            rc = -EINVAL;
            goto fail;
        }
    }
fail:
    ch_cpuset_zero(out);
    return rc;
}

int ch_cpulist_parse_sysfs(const char *text, size_t len, ch_cpuset *out)
{
    if (len > 0 && text[len - 1] == '\n')
        len--;
    return ch_cpulist_parse(text, len, out);
}

int ch_cpulist_format(const ch_cpuset *s, char *buf, size_t size)
{
    size_t used = 0;
    int lo = ch_cpuset_next(s, 0);

    if (size == 0)
        return -ENOSPC;
    buf[0] = '\0';
    while (lo >= 0) {
        int hi = lo;
        int n;

        while (ch_cpuset_test(s, (unsigned)hi + 1))
            hi++;
        if (hi == lo)
            n = snprintf(buf + used, size - used, "%s%d", used ? "," : "", lo);
        else
            n = snprintf(buf + used, size - used, "%s%d-%d", used ? "," : "", lo, hi);
        if (n < 0 || (size_t)n >= size - used) {
            buf[0] = '\0';
            return -ENOSPC;
        }
        used += (size_t)n;
        lo = ch_cpuset_next(s, (unsigned)hi + 1);
    }
    return (int)used;
}
