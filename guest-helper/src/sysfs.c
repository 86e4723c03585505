// SPDX-License-Identifier: LGPL-2.1-or-later
#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corehint/file.h"

static int join(char *dst, const char *root, const char *rel)
{
    int n = snprintf(dst, PATH_MAX, "%s%s", root, rel);
    return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int sysfs_init(struct sysfs *s, const char *sysfs_root, const char *proc_root)
{
    memset(s, 0, sizeof(*s));
    if (join(s->root, sysfs_root, "") < 0 ||
        join(s->preferred, sysfs_root, "/devices/system/cpu/preferred") < 0 ||
        join(s->online, sysfs_root, "/devices/system/cpu/online") < 0 ||
        join(s->cpu_dir, sysfs_root, "/devices/system/cpu") < 0 ||
        join(s->proc_stat, proc_root, "/stat") < 0)
        return -ENAMETOOLONG;
    return 0;
}

static int read_cpulist(const char *path, ch_cpuset *out)
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

bool sysfs_supported(const struct sysfs *s)
{
    struct stat st;
    return stat(s->preferred, &st) == 0 && S_ISREG(st.st_mode);
}

bool sysfs_writable(const struct sysfs *s)
{
    /* Opening for writing without writing changes nothing, and kernfs refuses the open
     * itself when the attribute has no store method: the honest test, unlike access(). */
    int fd = open(s->preferred, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

int sysfs_read_preferred(const struct sysfs *s, ch_cpuset *out)
{
    return read_cpulist(s->preferred, out);
}

int sysfs_read_online(const struct sysfs *s, ch_cpuset *out)
{
    int rc = read_cpulist(s->online, out);
    if (rc == 0 && ch_cpuset_empty(out))
        return -EINVAL;
    return rc;
}

void sysfs_read_isolated(const struct sysfs *s, ch_cpuset *out)
{
    static const char *const files[] = {"isolated", "nohz_full"};
    char path[PATH_MAX];
    ch_cpuset set;

    ch_cpuset_zero(out);
    for (unsigned i = 0; i < 2; i++) {
        int n = snprintf(path, sizeof(path), "%s/%s", s->cpu_dir, files[i]);
        if (n > 0 && (size_t)n < sizeof(path) && read_cpulist(path, &set) == 0)
            ch_cpuset_or(out, out, &set);
    }
}

int sysfs_write_preferred(const struct sysfs *s, const ch_cpuset *set)
{
    char buf[CH_CPULIST_MAX_LEN + 2];
    ch_cpuset now;
    int rc, len;

    if (sysfs_read_preferred(s, &now) == 0 && ch_cpuset_equal(&now, set))
        return 1;
    len = ch_cpulist_format(set, buf, sizeof(buf) - 1);
    if (len < 0)
        return len;
    buf[len++] = '\n';
    buf[len] = '\0';
    /* O_TRUNC means nothing to sysfs but keeps a test tree on tmpfs honest. */
    int fd = open(s->preferred, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w;
    do {
        w = write(fd, buf, (size_t)len);
    } while (w < 0 && errno == EINTR);
    rc = w < 0 ? -errno : (w != len ? -EIO : 0);
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0)
        return rc;
    if ((rc = sysfs_read_preferred(s, &now)) < 0)
        return rc;
    return ch_cpuset_equal(&now, set) ? 0 : -EIO;
}

int sysfs_read_topology(const struct sysfs *s, const ch_cpuset *online, struct cpu_topology *t)
{
    char path[PATH_MAX];

    governor_topology_flat(t);
    ch_cpuset_foreach (cpu, online) {
        ch_cpuset sib;
        int n =
            snprintf(path, sizeof(path), "%s/cpu%d/topology/thread_siblings_list", s->cpu_dir, cpu);
        if (n < 0 || (size_t)n >= sizeof(path))
            return -ENAMETOOLONG;
        int rc = read_cpulist(path, &sib);
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

int sysfs_read_cpustat(const struct sysfs *s, struct cpustat *out)
{
    return procstat_read(s->proc_stat, out);
}

int sysfs_sample(const struct sysfs *s, struct sample *out)
{
    int rc = sysfs_read_online(s, &out->online);

    if (rc < 0)
        return rc;
    sysfs_read_isolated(s, &out->isolated);
    out->have_stat = sysfs_read_cpustat(s, &out->stat) == 0;
    return sysfs_read_topology(s, &out->online, &out->topo);
}

bool sysfs_module_loaded(const struct sysfs *s, const char *name)
{
    char path[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof(path), "%s/module/%s", s->root, name);

    return n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0;
}
