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

/* Base64 of len bytes into out (size >= 4 * ((len + 2) / 3) + 1); exposed for unit tests. */
void qga_base64(const unsigned char *in, size_t len, char *out);

#endif
