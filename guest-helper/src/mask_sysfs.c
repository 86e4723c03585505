// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mask as the v11 series offers it: <sysfs>/devices/system/cpu/preferred (0013).  Root
 * writes a cpulist; the kernel keeps it as a request (the mask is the request restricted to the
 * active CPUs); a write of every active CPU ends the request; while an in-kernel policy owns
 * the mask (steal_governor loaded) writes fail with EBUSY.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corehint/file.h"
#include "mask.h"
#include "sample.h"

/* In-kernel policies that claim the mask while loaded (cpu_preferred_claim()): a module
 * directory under <sysfs>/module/ means the file answers writes with EBUSY. */
static const char *const owners[] = {"steal_governor"};

struct mask_sysfs {
    char preferred[PATH_MAX];
    char online[PATH_MAX];
    char module_dir[PATH_MAX];
};

static bool is_supported(const struct mask_sysfs *s)
{
    struct stat st;
    return stat(s->preferred, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_writable(const struct mask_sysfs *s)
{
    /* Opening for writing without writing changes nothing, and kernfs refuses the open
     * itself when the attribute has no store method: the honest test, unlike access(). */
    int fd = open(s->preferred, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* The first known owner whose module is loaded (or built in), NULL when none. */
static const char *loaded_owner(const struct mask_sysfs *s)
{
    char path[PATH_MAX];
    struct stat st;

    for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
        int n = snprintf(path, sizeof(path), "%s/%s", s->module_dir, owners[i]);
        if (n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0)
            return owners[i];
    }
    return NULL;
}

static void sysfs_probe(void *ctx, struct mask_probe *out)
{
    const struct mask_sysfs *s = ctx;
    const char *owner;

    memset(out, 0, sizeof(*out));
    out->supported = is_supported(s);
    out->writable = out->supported && is_writable(s);
    owner = out->supported ? loaded_owner(s) : NULL;
    out->busy = owner != NULL;
    if (owner)
        snprintf(out->owner, sizeof(out->owner), "%s", owner);
    if (!out->supported)
        snprintf(out->reason, sizeof(out->reason), "no preferred file");
    else if (!out->writable)
        snprintf(out->reason, sizeof(out->reason), "preferred file not writable");
    else if (out->busy)
        snprintf(out->reason, sizeof(out->reason), "busy: %s owns the mask", owner);
}

static int sysfs_read(void *ctx, ch_cpuset *out)
{
    const struct mask_sysfs *s = ctx;
    return sample_read_cpulist(s->preferred, out);
}

/* The whole cpulist and "\n" in one write(); write and close checked; read back. */
static int write_now(const struct mask_sysfs *s, const ch_cpuset *set)
{
    char buf[CH_CPULIST_MAX_LEN + 2];
    ch_cpuset now;
    int rc, len;

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
    if ((rc = sample_read_cpulist(s->preferred, &now)) < 0)
        return rc;
    return ch_cpuset_equal(&now, set) ? 0 : -EIO;
}

static int sysfs_write(void *ctx, const ch_cpuset *set)
{
    const struct mask_sysfs *s = ctx;
    ch_cpuset now;

    if (sample_read_cpulist(s->preferred, &now) == 0 && ch_cpuset_equal(&now, set))
        return 1;
    return write_now(s, set);
}

static int sysfs_release(void *ctx)
{
    const struct mask_sysfs *s = ctx;
    ch_cpuset online;
    int rc = sample_read_cpulist(s->online, &online);

    if (rc == 0 && ch_cpuset_empty(&online))
        rc = -EINVAL;
    if (rc < 0)
        return rc;
    /* Written even when the file reads as every online CPU: the file shows the request
     * restricted to the active CPUs, so a request naming a CPU that is offline now reads as
     * "all" and narrows the guest again when that CPU comes back.  Only a write of every
     * active CPU ends the request (0013). */
    return write_now(s, &online);
}

static const char *sysfs_where(void *ctx)
{
    const struct mask_sysfs *s = ctx;
    return s->preferred;
}

static void sysfs_close(void *ctx)
{
    free(ctx);
}

static const struct mask_ops sysfs_ops = {
    .name = "sysfs",
    .probe = sysfs_probe,
    .read = sysfs_read,
    .write = sysfs_write,
    .release = sysfs_release,
    .where = sysfs_where,
    .close = sysfs_close,
};

int mask_sysfs_open(struct mask_backend *m, const char *sysfs_root)
{
    struct mask_sysfs *s = calloc(1, sizeof(*s));

    m->ops = NULL;
    m->ctx = NULL;
    if (!s)
        return -ENOMEM;
    if (sample_join(s->preferred, sysfs_root, "/devices/system/cpu/preferred") < 0 ||
        sample_join(s->online, sysfs_root, "/devices/system/cpu/online") < 0 ||
        sample_join(s->module_dir, sysfs_root, "/module") < 0) {
        free(s);
        return -ENAMETOOLONG;
    }
    m->ops = &sysfs_ops;
    m->ctx = s;
    return 0;
}
