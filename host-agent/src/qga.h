/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qga: the two qemu-guest-agent actuators for guests without corehint-guestd, opt-in per
 * domain (actuator = agent-sysfs | agent-vcpus):
 *   agent-sysfs  guest-file-open/-write/-close of /sys/devices/system/cpu/preferred (patched
 *                kernel), the whole cpulist in one write;
 *   agent-vcpus  guest-set-vcpus, offlining non-preferred vCPUs (unpatched kernel, heavy);
 *                vCPU 0 is never touched.
 * The transport is opaque: live, virDomainQemuAgentCommand through libvirt; in replay, the
 * agent's own socket (a fake agent in tests), synchronised with guest-sync.  Both block for at
 * most QGA_TIMEOUT_S per command: live, the libvirt worker runs them (worker.h), never the
 * event loop; and hostd only acts when a decision changes.
 */
#ifndef HOSTD_QGA_H
#define HOSTD_QGA_H

#include <stddef.h>

#include <json-c/json.h>
#include <libvirt/libvirt.h>

#include "config.h"
#include "corehint/cpulist.h"

#define QGA_TIMEOUT_S 2
#define QGA_PREFERRED_PATH "/sys/devices/system/cpu/preferred"
#define QGA_REPLY_MAX (64u * 1024u) /* longest reply line from the agent socket */
#define QGA_SYNC_TRIES 8            /* stale replies skipped before guest-sync gives up */

struct qga_link;

/* Open a link: through libvirt to domain uuid, or (vc NULL) to the agent socket at path. */
struct qga_link *qga_open(virConnectPtr vc, const char *uuid, const char *path, char *err,
                          size_t errlen);
void qga_close(struct qga_link *l);

/* Returns 0 or -errno with a reason in err. */
int qga_write_preferred(struct qga_link *l, const ch_cpuset *cpus, char *err, size_t errlen);
int qga_set_vcpus(struct qga_link *l, const ch_cpuset *online, unsigned nvcpu, char *err,
                  size_t errlen);
/* The actuator how (CFG_ACT_AGENT_SYSFS or CFG_ACT_AGENT_VCPUS) applied to cpus. */
int qga_apply(struct qga_link *l, enum cfg_actuator how, const ch_cpuset *cpus, unsigned nvcpu,
              char *err, size_t errlen);

/*
 * The parsers of what the agent sends (untrusted text), exposed for unit tests and fuzzing.
 * Framing: bytes from the socket go in, reply lines come out; the buffer holds QGA_REPLY_MAX
 * bytes, and a reply whose '\n' does not come within them is refused.
 */
struct qga_framer {
    char buf[QGA_REPLY_MAX];
    size_t len;
};

/* Append what fits of n bytes, qemu-ga's 0xff resync bytes as spaces; returns the bytes taken. */
size_t qga_framer_feed(struct qga_framer *f, const char *data, size_t n);
/* The first whole line, without its '\n', into *line (malloc'd): 0; -EAGAIN when more bytes are
 * needed; -EPROTO (reason in err) when the buffer is full without a line; -ENOMEM. */
int qga_framer_line(struct qga_framer *f, char **line, char *err, size_t errlen);
/* One reply: 0 with *ret its "return" member (new reference; NULL for null), -EREMOTEIO for an
 * error object (its desc, cleaned of control characters, in err), or -EPROTO. */
int qga_reply_parse(const char *line, json_object **ret, char *err, size_t errlen);

/* A source of reply lines, as qga_framer_line returns them (0 or -errno with err). */
typedef int qga_line_fn(void *ctx, char **line, char *err, size_t errlen);
/* Take the reply to guest-sync id from next: the first line is parsed as any reply (an error
 * reply ends the wait); after it at most QGA_SYNC_TRIES stale lines an interrupted user of the
 * socket left are skipped. 0, or -errno with a reason in err. */
int qga_sync_wait(long long id, qga_line_fn *next, void *ctx, char *err, size_t errlen);

/* Base64 of len bytes into out (size >= 4 * ((len + 2) / 3) + 1); exposed for unit tests. */
void qga_base64(const unsigned char *in, size_t len, char *out);

#endif
