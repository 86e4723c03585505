// SPDX-License-Identifier: LGPL-2.1-or-later
#include "sample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corehint/file.h"

int sample_join(char *dst, const char *root, const char *rel)
{
    int n = snprintf(dst, PATH_MAX, "%s%s", root, rel);
    return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int sample_init(struct sampler *s, const char *sysfs_root, const char *proc_root)
{
    memset(s, 0, sizeof(*s));
    if (sample_join(s->online, sysfs_root, "/devices/system/cpu/online") < 0 ||
        sample_join(s->cpu_dir, sysfs_root, "/devices/system/cpu") < 0 ||
        sample_join(s->proc_stat, proc_root, "/stat") < 0)
        return -ENAMETOOLONG;
    return 0;
}

int sample_read_cpulist(const char *path, ch_cpuset *out)
{
    char *buf;
    size_t len;
    int rc = ch_read_file(path, CH_CPULIST_MAX_LEN + 1, &buf, &len);

    ch_cpuset_zero(out);
    if (rc == 0)
        rc = ch_cpulist_parse_sysfs(buf, len, out);
    else if (rc > 0)
        rc = -EFBIG;
    free(buf);
    return rc;
}

int sample_read_online(const struct sampler *s, ch_cpuset *out)
{
    int rc = sample_read_cpulist(s->online, out);
    if (rc == 0 && ch_cpuset_empty(out))
        return -EINVAL;
    return rc;
}

void sample_read_isolated(const struct sampler *s, ch_cpuset *out)
{
    static const char *const files[] = {"isolated", "nohz_full"};
    char path[PATH_MAX];
    ch_cpuset set;

    ch_cpuset_zero(out);
    for (unsigned i = 0; i < 2; i++) {
        int n = snprintf(path, sizeof(path), "%s/%s", s->cpu_dir, files[i]);
        if (n > 0 && (size_t)n < sizeof(path) && sample_read_cpulist(path, &set) == 0)
            ch_cpuset_or(out, out, &set);
    }
}

int sample_read_topology(const struct sampler *s, const ch_cpuset *online, struct cpu_topology *t)
{
    char path[PATH_MAX];

    governor_topology_flat(t);
    ch_cpuset_foreach (cpu, online) {
        ch_cpuset sib;
        int n =
            snprintf(path, sizeof(path), "%s/cpu%d/topology/thread_siblings_list", s->cpu_dir, cpu);
        if (n < 0 || (size_t)n >= sizeof(path))
            return -ENAMETOOLONG;
        int rc = sample_read_cpulist(path, &sib);
        if (rc == -ENOENT)
            continue;
        if (rc < 0)
            return rc;
        int first = ch_cpuset_next(&sib, 0);
        /* A list that does not hold the CPU itself is nonsense: keep it alone. */
        if (first >= 0 && ch_cpuset_test(&sib, (unsigned)cpu))
            t->core[cpu] = (uint16_t)first;
    }
    return 0;
}

int sample_read_cpustat(const struct sampler *s, struct cpustat *out)
{
    return procstat_read(s->proc_stat, out);
}

int sample_take(const struct sampler *s, struct sample *out)
{
    int rc = sample_read_online(s, &out->online);

    if (rc < 0)
        return rc;
    sample_read_isolated(s, &out->isolated);
    out->have_stat = sample_read_cpustat(s, &out->stat) == 0;
    return sample_read_topology(s, &out->online, &out->topo);
}
