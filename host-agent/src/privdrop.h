/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * privdrop: after start-up hostd gives up root for an ordinary user.  What it still needs is
 * reached through group membership: the libvirt socket (group libvirt with Debian's polkit
 * rule, or unix_sock_group) and the channel sockets qemu creates (group libvirt-qemu).
 *
 * Resolution (names to ids) happens before the daemon detaches, so a typo is an error on
 * the terminal; the switch itself happens once the listener is bound and the record file is
 * open, and before the first libvirt connection, so that what works at start-up also works
 * on every reconnect.
 */
#ifndef HOSTD_PRIVDROP_H
#define HOSTD_PRIVDROP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PRIV_MAX_GROUPS 64

struct privdrop {
    bool active; /* a user was asked for */
    char user[64];
    uid_t uid;
    gid_t gid;
    unsigned ngroups;
    gid_t groups[PRIV_MAX_GROUPS]; /* the user's own groups, then the extra ones */
};

/*
 * Resolve user (a name or a number; "" = no switch) and extra, a list of group names or
 * numbers separated by commas or blanks.  -errno with a message in err on failure.
 */
int priv_resolve(struct privdrop *p, const char *user, const char *extra, char *err, size_t errlen);
/*
 * Switch to the resolved identity: supplementary groups, gid, uid (real, effective, saved),
 * no_new_privs; then check that root cannot be regained and that no capability is left.
 * Not root: fine when already running as that user with every group asked for, else
 * -EPERM.  Does nothing when !p->active.
 */
int priv_apply(const struct privdrop *p, char *err, size_t errlen);
/* "uid=65534(nobody) gid=65534 groups=65534,64055": what priv_apply switched to. */
void priv_describe(const struct privdrop *p, char *buf, size_t len);

#endif
