// SPDX-License-Identifier: LGPL-2.1-or-later
/* hostd privilege drop: resolving the user and the extra groups (the switch itself needs
 * root and is covered by the component case hostd.privilege_drop). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "privdrop.h"

static unsigned count(const struct privdrop *p, gid_t g)
{
    unsigned n = 0;

    for (unsigned i = 0; i < p->ngroups; i++)
        n += p->groups[i] == g;
    return n;
}

TEST(no_user_is_no_switch)
{
    struct privdrop p;
    char err[256] = "";

    CHECK_INT(priv_resolve(&p, "", "", err, sizeof(err)), 0);
    CHECK(!p.active);
    CHECK_INT(priv_apply(&p, err, sizeof(err)), 0);
    CHECK_INT(priv_resolve(&p, "", "root", err, sizeof(err)), -EINVAL);
    CHECK(strstr(err, "groups needs user") != NULL);
}

TEST(user_by_name_or_number)
{
    struct privdrop a, b;
    char err[256] = "";

    CHECK_INT(priv_resolve(&a, "root", "", err, sizeof(err)), 0);
    CHECK(a.active);
    CHECK_STR(a.user, "root");
    CHECK_INT(a.uid, 0);
    CHECK_INT(a.gid, 0);
    CHECK_INT(count(&a, 0), 1); /* the primary group is among the groups, once */
    CHECK_INT(priv_resolve(&b, "0", "", err, sizeof(err)), 0);
    CHECK_STR(b.user, "root");
    CHECK_INT(b.ngroups, a.ngroups);
}

TEST(extra_groups_deduplicated_any_separator)
{
    struct privdrop p;
    char err[256] = "";

    CHECK_INT(priv_resolve(&p, "root", "root, 0,\t4242  4242", err, sizeof(err)), 0);
    CHECK_INT(count(&p, 0), 1);
    CHECK_INT(count(&p, 4242), 1); /* a number needs no group entry */
}

TEST(unknown_names_are_errors)
{
    struct privdrop p;
    char err[256] = "";

    CHECK_INT(priv_resolve(&p, "no-such-user-xyz", "", err, sizeof(err)), -ENOENT);
    CHECK_STR(err, "user \"no-such-user-xyz\" not found");
    CHECK_INT(priv_resolve(&p, "root", "0,no-such-group-xyz", err, sizeof(err)), -ENOENT);
    CHECK_STR(err, "group \"no-such-group-xyz\" not found");
    CHECK(!p.active);
}

TEST(too_many_groups)
{
    struct privdrop p;
    char list[512] = "", err[256] = "";

    for (int g = 1000; g < 1000 + PRIV_MAX_GROUPS + 1; g++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%d,", g);
    CHECK_INT(priv_resolve(&p, "root", list, err, sizeof(err)), -E2BIG);
    CHECK(strstr(err, "more than") != NULL);
}
