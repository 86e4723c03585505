/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The few fields hostd reads from a live domain XML (libxml2 XPath): guest topology threads,
 * an explicit <cputune><shares>, the socket of the org.corehint.0 channel and hostd's own cap
 * record.  The XML comes
 * from libvirt but is parsed as untrusted text: any size, any bytes.
 */
#ifndef HOSTD_DOMXML_H
#define HOSTD_DOMXML_H

#include <stdbool.h>
#include <stddef.h>

#include "snapshot.h"

/* hostd's own record of a cap it set (enforce = cap), in the domain's live <metadata> under
 * its own namespace (apart from anything an administrator keeps there): what it capped to and
 * the global period and quota it found, so that any hostd can give them back. */
#define DX_CAP_URI "http://corehint.org/xmlns/hostd-cap/1"
#define DX_CAP_KEY "corehint-cap"

/* Per-VM policy an administrator keeps in the domain's <metadata>:
 *   virsh metadata DOMAIN http://corehint.org/xmlns/policy/1 --key corehint \
 *       --set '<policy weight="2" opt_out="no" actuator="channel"/>' --live --config
 * Every attribute is optional; an unknown attribute or a bad value makes hostd ignore the
 * whole element (policy.error says why). */
#define DX_POLICY_URI "http://corehint.org/xmlns/policy/1"

struct dx_cap {
    bool present;
    double cpus;
    unsigned long long saved_period; /* microseconds */
    long long saved_quota;           /* microseconds per period, -1: no limit */
};

struct dx_info {
    struct dx_cap cap;
    struct snap_policy policy;
    unsigned threads;            /* /domain/cpu/topology/@threads, 1 when absent */
    unsigned shares;             /* /domain/cputune/shares, 0 when absent */
    char channel[SNAP_PATH_MAX]; /* unix channel with target name org.corehint.0, or "" */
};

/* Returns 0, or -EINVAL when the text is not a domain XML (info then holds the defaults). */
int dx_parse(const char *xml, size_t len, struct dx_info *info);

#endif
