// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mask backend (mask.h): the sysfs implementation against a temporary fake sysfs tree
 * (probe outcomes; the write/read/release contract, release writing when the file already
 * reads as every online CPU), and mask_restore() over a scripted backend (EBUSY from an
 * in-kernel owner is not an error; nothing to release is not either).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "mask.h"

struct tree {
    char root[64];
    char cpu[128];
    char preferred[160];
    char online[160];
    char module[160];
};

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *get(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    size_t n = 0;

    if (f) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

/* <root>/devices/system/cpu/{online,preferred} (4 CPUs), no module loaded. */
static void tree_make(struct tree *t, bool preferred)
{
    char dir[160];

    snprintf(t->root, sizeof(t->root), "/tmp/corehint-mask.XXXXXX");
    CHECK(mkdtemp(t->root) != NULL);
    snprintf(dir, sizeof(dir), "%s/devices", t->root);
    CHECK_INT(mkdir(dir, 0755), 0);
    snprintf(dir, sizeof(dir), "%s/devices/system", t->root);
    CHECK_INT(mkdir(dir, 0755), 0);
    snprintf(t->cpu, sizeof(t->cpu), "%s/devices/system/cpu", t->root);
    CHECK_INT(mkdir(t->cpu, 0755), 0);
    snprintf(t->preferred, sizeof(t->preferred), "%s/preferred", t->cpu);
    snprintf(t->online, sizeof(t->online), "%s/online", t->cpu);
    snprintf(t->module, sizeof(t->module), "%s/module", t->root);
    put(t->online, "0-3\n");
    if (preferred)
        put(t->preferred, "0-3\n");
}

static void tree_remove(struct tree *t)
{
    char path[200];

    snprintf(path, sizeof(path), "%s/steal_governor", t->module);
    rmdir(path);
    rmdir(t->module);
    unlink(t->preferred);
    unlink(t->online);
    rmdir(t->cpu);
    snprintf(path, sizeof(path), "%s/devices/system", t->root);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/devices", t->root);
    rmdir(path);
    rmdir(t->root);
}

static ch_cpuset set_of(const char *list)
{
    ch_cpuset s;

    CHECK_INT(ch_cpulist_parse(list, strlen(list), &s), 0);
    return s;
}

TEST(probe_absent_file_is_unsupported)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    struct mask_probe p;

    tree_make(&t, false);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    mask_probe(&m, &p);
    CHECK(!p.supported && !p.writable && !p.busy);
    CHECK_STR(p.reason, "no preferred file");
    CHECK_STR(mask_where(&m), t.preferred);
    /* a module directory does not make a missing file busy */
    CHECK_INT(mkdir(t.module, 0755), 0);
    char mod[200];
    snprintf(mod, sizeof(mod), "%s/steal_governor", t.module);
    CHECK_INT(mkdir(mod, 0755), 0);
    mask_probe(&m, &p);
    CHECK(!p.supported && !p.busy);
    CHECK_STR(p.reason, "no preferred file");
    mask_close(&m);
    tree_remove(&t);
}

TEST(probe_plain_file_is_usable)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    struct mask_probe p;

    tree_make(&t, true);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    mask_probe(&m, &p);
    CHECK(p.supported && p.writable && !p.busy);
    CHECK_STR(p.reason, "");
    CHECK_STR(p.owner, "");
    mask_close(&m);
    tree_remove(&t);
}

TEST(probe_read_only_is_not_writable)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    struct mask_probe p;

    tree_make(&t, true);
    CHECK_INT(chmod(t.preferred, 0444), 0);
    int fd = open(t.preferred, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        /* root ignores the mode: a kernfs attribute without a store method (the kernels before
         * the series' 0013) refuses the open whoever asks */
        close(fd);
        unlink(t.preferred);
        if (symlink("/sys/devices/system/cpu/possible", t.preferred) < 0 ||
            access("/sys/devices/system/cpu/possible", R_OK) < 0) {
            printf("SKIP: running as root without /sys/devices/system/cpu/possible\n");
            CHECK(true);
            tree_remove(&t);
            return;
        }
    }
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    mask_probe(&m, &p);
    CHECK(p.supported && !p.writable);
    CHECK_STR(p.reason, "preferred file not writable");
    mask_close(&m);
    tree_remove(&t);
}

TEST(probe_owner_module_is_busy)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    struct mask_probe p;
    char mod[200];

    tree_make(&t, true);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    CHECK_INT(mkdir(t.module, 0755), 0);
    snprintf(mod, sizeof(mod), "%s/other_module", t.module);
    CHECK_INT(mkdir(mod, 0755), 0);
    mask_probe(&m, &p);
    CHECK(!p.busy); /* only a module that claims the mask makes it busy */
    CHECK_INT(rmdir(mod), 0);
    snprintf(mod, sizeof(mod), "%s/steal_governor", t.module);
    CHECK_INT(mkdir(mod, 0755), 0);
    mask_probe(&m, &p);
    CHECK(p.supported && p.writable && p.busy);
    CHECK_STR(p.owner, "steal_governor");
    CHECK_STR(p.reason, "busy: steal_governor owns the mask");
    CHECK_INT(rmdir(mod), 0);
    mask_probe(&m, &p);
    CHECK(!p.busy);
    CHECK_STR(p.reason, "");
    mask_close(&m);
    tree_remove(&t);
}

TEST(write_read_contract)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    ch_cpuset s, got;

    tree_make(&t, true);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    s = set_of("0-1");
    CHECK_INT(mask_write(&m, &s), 0); /* wrote */
    CHECK_STR(get(t.preferred), "0-1\n");
    CHECK_INT(mask_read(&m, &got), 0);
    CHECK(ch_cpuset_equal(&got, &s));
    /* the same set again: nothing written */
    put(t.preferred, "0,1\n");
    CHECK_INT(mask_write(&m, &s), 1);
    CHECK_STR(get(t.preferred), "0,1\n");
    s = set_of("0,2-3");
    CHECK_INT(mask_write(&m, &s), 0);
    CHECK_STR(get(t.preferred), "0,2-3\n");
    /* a file gone: reads and writes fail with -errno, nothing is created for a read */
    unlink(t.preferred);
    CHECK_INT(mask_read(&m, &got), -ENOENT);
    mask_close(&m);
    tree_remove(&t);
}

TEST(write_refused_is_errno)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    ch_cpuset s = set_of("0-1");
    char target[64];

    tree_make(&t, false);
    /* A kernel file that takes one integer: "0-1\n" is refused with EINVAL, as the preferred
     * file refuses a set without a housekeeping CPU. */
    snprintf(target, sizeof(target), "/proc/%ld/oom_score_adj", (long)getpid());
    CHECK_INT(symlink(target, t.preferred), 0);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    CHECK_INT(mask_write(&m, &s), -EINVAL);
    CHECK_INT(mask_release(&m), -EINVAL);
    mask_close(&m);
    tree_remove(&t);
}

/* The file reads as every online CPU, but a request may stand behind that (one naming a CPU
 * that is offline now): release writes anyway, where write() would skip it. */
TEST(release_writes_when_equal)
{
    struct tree t = {.root = ""};
    struct mask_backend m;
    ch_cpuset all = set_of("0-3");

    tree_make(&t, true);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    put(t.preferred, "0,1,2,3\n"); /* the same set, spelt so that a write shows */
    CHECK_INT(mask_write(&m, &all), 1);
    CHECK_STR(get(t.preferred), "0,1,2,3\n");
    CHECK_INT(mask_release(&m), 0);
    CHECK_STR(get(t.preferred), "0-3\n");
    /* narrowed, and a CPU offline: every online CPU */
    put(t.preferred, "1\n");
    put(t.online, "0-2\n");
    CHECK_INT(mask_release(&m), 0);
    CHECK_STR(get(t.preferred), "0-2\n");
    /* no online set to give back: an error, nothing written */
    put(t.preferred, "1\n");
    put(t.online, "\n");
    CHECK_INT(mask_release(&m), -EINVAL);
    unlink(t.online);
    CHECK_INT(mask_release(&m), -ENOENT);
    CHECK_STR(get(t.preferred), "1\n");
    mask_close(&m);
    tree_remove(&t);
}

TEST(restore_releases_when_equal)
{
    struct tree t = {.root = ""};
    struct mask_backend m;

    tree_make(&t, true);
    CHECK_INT(mask_sysfs_open(&m, t.root), 0);
    put(t.preferred, "0,1,2,3\n");
    CHECK_INT(mask_restore(&m), 0);
    CHECK_STR(get(t.preferred), "0-3\n");
    unlink(t.preferred);
    CHECK_INT(mask_restore(&m), 0); /* no file: nothing to restore */
    mask_close(&m);
    tree_remove(&t);
}

/* A scripted backend: what the probe says and what release answers. */
static struct {
    struct mask_probe probe;
    int release_rc;
    unsigned releases;
} fake;

static void fake_probe(void *ctx, struct mask_probe *out)
{
    *out = fake.probe;
}

static int fake_read(void *ctx, ch_cpuset *out)
{
    ch_cpuset_zero(out);
    return -ENOSYS;
}

static int fake_write(void *ctx, const ch_cpuset *set)
{
    return -ENOSYS;
}

static int fake_release(void *ctx)
{
    fake.releases++;
    return fake.release_rc;
}

static const char *fake_where(void *ctx)
{
    return "fake";
}

static void fake_close(void *ctx)
{
}

static const struct mask_ops fake_ops = {
    .name = "fake",
    .probe = fake_probe,
    .read = fake_read,
    .write = fake_write,
    .release = fake_release,
    .where = fake_where,
    .close = fake_close,
};

static int restore_with(bool supported, bool writable, bool busy, int release_rc)
{
    struct mask_backend m = {.ops = &fake_ops, .ctx = NULL};

    memset(&fake, 0, sizeof(fake));
    fake.probe.supported = supported;
    fake.probe.writable = writable;
    fake.probe.busy = busy;
    if (busy)
        snprintf(fake.probe.owner, sizeof(fake.probe.owner), "steal_governor");
    fake.release_rc = release_rc;
    return mask_restore(&m);
}

TEST(restore_outcomes)
{
    CHECK_INT(restore_with(true, true, false, 0), 0);
    CHECK_INT(fake.releases, 1);
    /* the in-kernel governor owns the mask: defined, not an error (it releases on unload) */
    CHECK_INT(restore_with(true, true, true, -EBUSY), 0);
    CHECK_INT(fake.releases, 1);
    /* an owner the probe did not see: the kernel's EBUSY says the same */
    CHECK_INT(restore_with(true, true, false, -EBUSY), 0);
    /* the probe's busy does not stop the attempt: the write decides */
    CHECK_INT(restore_with(true, true, true, 0), 0);
    CHECK_INT(fake.releases, 1);
    /* other refusals are errors */
    CHECK_INT(restore_with(true, true, false, -EINVAL), -EINVAL);
    CHECK_INT(restore_with(true, true, false, -EIO), -EIO);
    /* nothing to release: no mask */
    CHECK_INT(restore_with(false, false, false, -EINVAL), 0);
    CHECK_INT(fake.releases, 0);
    /* a mask this process may not write: a request may stand that it cannot clear */
    CHECK_INT(restore_with(true, false, false, -EINVAL), -EACCES);
    CHECK_INT(fake.releases, 0);
}
