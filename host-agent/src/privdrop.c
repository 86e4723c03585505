// SPDX-License-Identifier: LGPL-2.1-or-later
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A decimal id, or -1 when s is not one. */
static long long parse_id(const char *s)
{
    char *end;
    long long v;

    if (!*s || strspn(s, "0123456789") != strlen(s))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    return errno || v > 0x7fffffff ? -1 : v;
}

static int add_group(struct privdrop *p, gid_t g, char *err, size_t errlen)
{
    for (unsigned i = 0; i < p->ngroups; i++)
        if (p->groups[i] == g)
            return 0;
    if (p->ngroups >= PRIV_MAX_GROUPS) {
        snprintf(err, errlen, "user %s: more than %d groups", p->user, PRIV_MAX_GROUPS);
        return -E2BIG;
    }
    p->groups[p->ngroups++] = g;
    return 0;
}

static int resolve_user(struct privdrop *p, const char *user, char *err, size_t errlen)
{
    long long id = parse_id(user);
    struct passwd pw, *res = NULL;
    char buf[4096];
    int rc;

    rc = id >= 0 ? getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &res)
                 : getpwnam_r(user, &pw, buf, sizeof(buf), &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "user \"%s\" %s", user, rc ? strerror(rc) : "not found");
        return rc ? -rc : -ENOENT;
    }
    if (strlen(pw.pw_name) >= sizeof(p->user)) {
        snprintf(err, errlen, "user \"%s\": name too long", pw.pw_name);
        return -ENAMETOOLONG;
    }
    snprintf(p->user, sizeof(p->user), "%s", pw.pw_name);
    p->uid = pw.pw_uid;
    p->gid = pw.pw_gid;

    /* The user's own groups from the group database, as login would set them. */
    gid_t own[PRIV_MAX_GROUPS];
    int n = PRIV_MAX_GROUPS;
    if (getgrouplist(p->user, p->gid, own, &n) < 0) {
        snprintf(err, errlen, "user %s: more than %d groups", p->user, PRIV_MAX_GROUPS);
        return -E2BIG;
    }
    for (int i = 0; i < n; i++)
        if ((rc = add_group(p, own[i], err, errlen)) < 0)
            return rc;
    return 0;
}

static int resolve_group(struct privdrop *p, const char *name, char *err, size_t errlen)
{
    long long id = parse_id(name);
    struct group gr, *res = NULL;
    char buf[16384];
    int rc;

    if (id >= 0) /* a number needs no entry in the group database */
        return add_group(p, (gid_t)id, err, errlen);
    rc = getgrnam_r(name, &gr, buf, sizeof(buf), &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "group \"%s\" %s", name, rc ? strerror(rc) : "not found");
        return rc ? -rc : -ENOENT;
    }
    return add_group(p, gr.gr_gid, err, errlen);
}

int priv_resolve(struct privdrop *p, const char *user, const char *extra, char *err, size_t errlen)
{
    char list[512], *save = NULL;
    int rc;

    memset(p, 0, sizeof(*p));
    if (!user[0]) {
        if (extra[0]) {
            snprintf(err, errlen, "groups needs user: name the user to switch to");
            return -EINVAL;
        }
        return 0;
    }
    if ((rc = resolve_user(p, user, err, errlen)) < 0)
        return rc;
    if (strlen(extra) >= sizeof(list)) {
        snprintf(err, errlen, "groups: longer than %zu bytes", sizeof(list) - 1);
        return -ERANGE;
    }
    snprintf(list, sizeof(list), "%s", extra);
    for (char *g = strtok_r(list, ", \t", &save); g; g = strtok_r(NULL, ", \t", &save))
        if ((rc = resolve_group(p, g, err, errlen)) < 0)
            return rc;
    p->active = true;
    return 0;
}

static bool have_group(gid_t g, const gid_t *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == g)
            return true;
    return false;
}

/* Already the user with every group: nothing to switch (a non-root start as that user). */
static int check_unprivileged(const struct privdrop *p, char *err, size_t errlen)
{
    gid_t cur[PRIV_MAX_GROUPS * 2];
    int n = getgroups(PRIV_MAX_GROUPS * 2, cur);

    if (getuid() != p->uid || geteuid() != p->uid) {
        snprintf(err, errlen, "switching to user %s needs root (running as uid %u)", p->user,
                 (unsigned)geteuid());
        return -EPERM;
    }
    for (unsigned i = 0; i < p->ngroups; i++)
        if (p->groups[i] != getegid() && (n < 0 || !have_group(p->groups[i], cur, n))) {
            snprintf(err, errlen, "not root, and this process lacks group %u of user %s",
                     (unsigned)p->groups[i], p->user);
            return -EPERM;
        }
    return 0;
}

static bool caps_left(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

    memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &hdr, data) < 0)
        return true; /* cannot tell: refuse to claim the drop worked */
    for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
        if (data[i].effective || data[i].permitted)
            return true;
    return false;
}

int priv_apply(const struct privdrop *p, char *err, size_t errlen)
{
    uid_t ru, eu, su;
    gid_t rg, eg, sg;

    if (!p->active)
        return 0;
    if (geteuid() != 0)
        return check_unprivileged(p, err, errlen);
    if (setgroups(p->ngroups, p->groups) < 0 || setresgid(p->gid, p->gid, p->gid) < 0 ||
        setresuid(p->uid, p->uid, p->uid) < 0) {
        snprintf(err, errlen, "cannot switch to user %s: %s", p->user, strerror(errno));
        return -errno;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        snprintf(err, errlen, "cannot set no_new_privs: %s", strerror(errno));
        return -errno;
    }
    if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 || ru != p->uid ||
        eu != p->uid || su != p->uid || rg != p->gid || eg != p->gid || sg != p->gid) {
        snprintf(err, errlen, "user %s: the switch did not take", p->user);
        return -EPERM;
    }
    if (p->uid != 0 && (setuid(0) == 0 || caps_left())) {
        snprintf(err, errlen, "user %s: root or a capability is still within reach", p->user);
        return -EPERM;
    }
    return 0;
}

void priv_describe(const struct privdrop *p, char *buf, size_t len)
{
    size_t off;
    int n = snprintf(buf, len, "uid=%u(%s) gid=%u groups=", (unsigned)p->uid, p->user,
                     (unsigned)p->gid);

    off = n < 0 ? 0 : (size_t)n;
    for (unsigned i = 0; i < p->ngroups && off < len; i++) {
        n = snprintf(buf + off, len - off, "%s%u", i ? "," : "", (unsigned)p->groups[i]);
        off += n < 0 ? 0 : (size_t)n;
    }
}
