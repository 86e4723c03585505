// SPDX-License-Identifier: LGPL-2.1-or-later
#include "snapshot.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void pset_zero(struct hd_pset *s)
{
    memset(s, 0, sizeof(*s));
}

void pset_set(struct hd_pset *s, unsigned cpu)
{
    if (cpu < HD_PCPU_MAX)
        s->w[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

bool pset_test(const struct hd_pset *s, unsigned cpu)
{
    return cpu < HD_PCPU_MAX && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned pset_count(const struct hd_pset *s)
{
    unsigned n = 0;

    for (unsigned i = 0; i < HD_PSET_WORDS; i++)
        n += (unsigned)__builtin_popcountll(s->w[i]);
    return n;
}

int pset_next(const struct hd_pset *s, unsigned from)
{
    for (unsigned i = from / 64; i < HD_PSET_WORDS; i++) {
        uint64_t w = s->w[i];
        if (i == from / 64)
            w &= ~UINT64_C(0) << (from % 64);
        if (w)
            return (int)(i * 64 + (unsigned)__builtin_ctzll(w));
    }
    return -1;
}

void pset_or(struct hd_pset *dst, const struct hd_pset *a)
{
    for (unsigned i = 0; i < HD_PSET_WORDS; i++)
        dst->w[i] |= a->w[i];
}

int pset_from_cpuset(struct hd_pset *dst, const ch_cpuset *src)
{
    pset_zero(dst);
    if (ch_cpuset_last(src) >= (int)HD_PCPU_MAX)
        return -ERANGE;
    memcpy(dst->w, src->w, sizeof(dst->w));
    return 0;
}

void pset_to_cpuset(ch_cpuset *dst, const struct hd_pset *src)
{
    ch_cpuset_zero(dst);
    memcpy(dst->w, src->w, sizeof(src->w));
}

int pset_format(const struct hd_pset *s, char *buf, size_t size)
{
    ch_cpuset c;

    pset_to_cpuset(&c, s);
    return ch_cpulist_format(&c, buf, size);
}

struct snapshot *snap_new(void)
{
    return calloc(1, sizeof(struct snapshot));
}

void snap_free(struct snapshot *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->ndom; i++)
        free(s->dom[i].vcpu);
    free(s->dom);
    free(s->pcpu);
    free(s);
}

static int cmp_dom(const void *a, const void *b)
{
    return strcmp(((const struct snap_dom *)a)->uuid, ((const struct snap_dom *)b)->uuid);
}

static int cmp_vcpu(const void *a, const void *b)
{
    unsigned x = ((const struct snap_vcpu *)a)->id, y = ((const struct snap_vcpu *)b)->id;

    return x < y ? -1 : x > y;
}

void snap_sort(struct snapshot *s)
{
    if (s->ndom > 1)
        qsort(s->dom, s->ndom, sizeof(*s->dom), cmp_dom);
    for (unsigned i = 0; i < s->ndom; i++)
        if (s->dom[i].nvcpu > 1)
            qsort(s->dom[i].vcpu, s->dom[i].nvcpu, sizeof(*s->dom[i].vcpu), cmp_vcpu);
}

void *hd_find_uuid(const void *base, unsigned n, size_t size, size_t off, const char *uuid)
{
    unsigned lo = 0, hi = base ? n : 0;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        const char *elem = (const char *)base + (size_t)mid * size;
        int c = strcmp(elem + off, uuid);
        if (c == 0)
            return (void *)elem;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct snap_dom *snap_find(const struct snapshot *s, const char *uuid)
{
    return s ? hd_find_uuid(s->dom, s->ndom, sizeof(*s->dom), offsetof(struct snap_dom, uuid), uuid)
             : NULL;
}
