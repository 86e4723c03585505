/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The few fields hostd reads from a live domain XML (libxml2 XPath): guest topology threads,
 * an explicit <cputune><shares>, and the socket of the org.corehint.0 channel.  The XML comes
 * from libvirt but is parsed as untrusted text: any size, any bytes.
 */
#ifndef HOSTD_DOMXML_H
#define HOSTD_DOMXML_H

#include <stddef.h>

#include "snapshot.h"

struct dx_info {
    unsigned threads;            /* /domain/cpu/topology/@threads, 1 when absent */
    unsigned shares;             /* /domain/cputune/shares, 0 when absent */
    char channel[SNAP_PATH_MAX]; /* unix channel with target name org.corehint.0, or "" */
};

/* Returns 0, or -EINVAL when the text is not a domain XML (info then holds the defaults). */
int dx_parse(const char *xml, size_t len, struct dx_info *info);

#endif
