/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU sets and the Linux cpulist text form ("0-3,5,8-9").
 *
 * The parser is strict: decimal ids without leading zeros or signs, single ids or "a-b" ranges
 * with a <= b, ranges in ascending order and not overlapping, no spaces, no stride syntax,
 * ids below CH_CPU_MAX.  The formatter emits the canonical form: maximal ranges, a lone id for
 * a range of one, "a,b" for two adjacent ids is written "a-b".
 */
#ifndef COREHINT_CPULIST_H
#define COREHINT_CPULIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CH_CPU_MAX 8192u
/* Longest canonical cpulist: every even id below CH_CPU_MAX, comma separated. */
#define CH_CPULIST_MAX_LEN 36000u

typedef struct ch_cpuset {
    uint64_t w[CH_CPU_MAX / 64];
} ch_cpuset;

void ch_cpuset_zero(ch_cpuset *s);
void ch_cpuset_set(ch_cpuset *s, unsigned cpu);
void ch_cpuset_clear(ch_cpuset *s, unsigned cpu);
bool ch_cpuset_test(const ch_cpuset *s, unsigned cpu);
unsigned ch_cpuset_count(const ch_cpuset *s);
bool ch_cpuset_empty(const ch_cpuset *s);
bool ch_cpuset_equal(const ch_cpuset *a, const ch_cpuset *b);
/* true when every member of a is in b */
bool ch_cpuset_subset(const ch_cpuset *a, const ch_cpuset *b);
void ch_cpuset_and(ch_cpuset *dst, const ch_cpuset *a, const ch_cpuset *b);
void ch_cpuset_or(ch_cpuset *dst, const ch_cpuset *a, const ch_cpuset *b);
/* a minus b */
void ch_cpuset_andnot(ch_cpuset *dst, const ch_cpuset *a, const ch_cpuset *b);
/* first member >= from, or -1 */
int ch_cpuset_next(const ch_cpuset *s, unsigned from);
/* highest member, or -1 */
int ch_cpuset_last(const ch_cpuset *s);
/* members 0..n-1 */
void ch_cpuset_fill(ch_cpuset *s, unsigned n);

#define ch_cpuset_foreach(cpu, set)                                                                \
    for (int cpu = ch_cpuset_next((set), 0); cpu >= 0;                                             \
         cpu = ch_cpuset_next((set), (unsigned)cpu + 1))

/*
 * Parse exactly len bytes of text.  An empty text is the empty set.  Returns 0, -EINVAL for a
 * grammar error (bad character, leading zero, descending or overlapping range) or -ERANGE for
 * an id >= CH_CPU_MAX.  *out is left zeroed on error.
 */
int ch_cpulist_parse(const char *text, size_t len, ch_cpuset *out);

/* As ch_cpulist_parse, but one trailing "\n" (as sysfs prints it) is accepted. */
int ch_cpulist_parse_sysfs(const char *text, size_t len, ch_cpuset *out);

/*
 * Write the canonical cpulist of s into buf (NUL-terminated).  Returns its length, or -ENOSPC
 * when it does not fit in size bytes (buf then holds "").
 */
int ch_cpulist_format(const ch_cpuset *s, char *buf, size_t size);

#endif
