// SPDX-License-Identifier: LGPL-2.1-or-later
#include "corehint/procstat.h"

#include "corehint/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* /proc/stat of an 8192-CPU guest stays below 1 MiB in its cpu lines; the rest is skipped. */
#define PROCSTAT_MAX (2u << 20)
/* user nice system idle iowait irq softirq steal guest guest_nice */
#define FIELDS_MAX 10
#define FIELD_IDLE 3
#define FIELD_IOWAIT 4
#define FIELD_STEAL 7

static int parse_u64(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;

    if (s == end || *s < '0' || *s > '9')
        return -EINVAL;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return 0;
}

static int parse_cpu_line(const char *s, const char *end, struct cpustat *out)
{
    uint64_t id, f[FIELDS_MAX] = {0};
    unsigned n = 0;

    s += 3; /* "cpu" */
    if (parse_u64(&s, end, &id) < 0 || id >= CH_CPU_MAX)
        return -EINVAL;
    if (s == end || *s != ' ')
        return -EINVAL;
    while (s < end) {
        while (s < end && *s == ' ')
            s++;
        if (s == end)
            break;
        if (n == FIELDS_MAX) /* a future kernel's extra column: not ours to count */
            break;
        if (parse_u64(&s, end, &f[n]) < 0)
            return -EINVAL;
        n++;
    }
    if (n < 4 || ch_cpuset_test(&out->present, (unsigned)id))
        return -EINVAL;
    uint64_t total = 0;
    for (unsigned i = 0; i <= FIELD_STEAL && i < n; i++) {
        if (f[i] > UINT64_MAX - total) /* no kernel counts that far: not a /proc/stat */
            return -EINVAL;
        total += f[i];
    }
    ch_cpuset_set(&out->present, (unsigned)id);
    out->total[id] = total;
    out->steal[id] = f[FIELD_STEAL];
    /* f[] is at most total, field by field: this cannot overflow */
    out->idle[id] = f[FIELD_IDLE] + f[FIELD_IOWAIT];
    return 0;
}

int procstat_parse(const char *text, size_t len, struct cpustat *out)
{
    const char *p = text, *end = text + len;

    memset(out, 0, sizeof(*out));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* truncated */
        if (nl - p > 3 && memcmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9') {
            if (parse_cpu_line(p, nl, out) < 0)
                return -EINVAL;
        }
        p = nl + 1;
    }
    return ch_cpuset_empty(&out->present) ? -EINVAL : 0;
}

int procstat_read(const char *path, struct cpustat *out)
{
    char *buf;
    size_t len;
    /* Longer than PROCSTAT_MAX is fine: the cpu lines are at the top, the rest is skipped. */
    int rc = ch_read_file(path, PROCSTAT_MAX, &buf, &len);

    if (rc < 0)
        return rc;
    rc = procstat_parse(buf, len, out);
    free(buf);
    return rc;
}
