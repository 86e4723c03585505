/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hostd configuration: defaults, then the file (default /etc/corehint/hostd.conf), then the
 * command line.  Only the event loop reads it; SIGHUP replaces it there (cfg_reload), between
 * two events; --dump-config prints what is in force.
 */
#ifndef HOSTD_CONFIG_H
#define HOSTD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CFG_DEFAULT_FILE "/etc/corehint/hostd.conf"
#define CFG_DEFAULT_URI "qemu:///system"
#define CFG_DEFAULT_LISTEN "127.0.0.1:9477"

enum cfg_actuator {
    CFG_ACT_CHANNEL,     /* the org.corehint.0 channel to corehint-guestd (default) */
    CFG_ACT_AGENT_SYSFS, /* qemu-ga writes the preferred file (patched kernel, no helper) */
    CFG_ACT_AGENT_VCPUS, /* qemu-ga offlines non-preferred vCPUs (unpatched kernel; heavy) */
};

/* What hostd does for a VM. */
enum cfg_mode {
    CFG_MODE_OBSERVE, /* decide and export; every hint names all vCPUs, nothing is capped */
    CFG_MODE_HINT,    /* send its decisions (the default) */
    CFG_MODE_ENFORCE, /* hint, and cap a non-compliant VM to its share (was enforce = cap) */
};

struct cfg_domain {
    char match[256]; /* domain name or UUID */
    double weight;   /* 0 = not set */
    bool opt_out;
    enum cfg_actuator actuator;
    enum cfg_mode mode;
    bool has_opt_out;  /* the section sets opt_out / actuator / mode (else the metadata's or */
    bool has_actuator; /* the default) */
    bool has_mode;
};

/* Where a domain's settings came from (cfg_domain_settings): bits. */
enum {
    CFG_FROM_CONF = 1,     /* a [domain] section of hostd.conf */
    CFG_FROM_METADATA = 2, /* the domain's corehint <metadata> */
};

struct snap_policy;

const char *cfg_actuator_name(enum cfg_actuator a);
const char *cfg_mode_name(enum cfg_mode m);
/* The mode called name (cfg_mode_name's words), or -1. */
int cfg_mode_parse(const char *name);
/* The actuator called name (cfg_actuator_name's words), or -1. */
int cfg_actuator_parse(const char *name);

struct hd_config {
    /* sampling */
    unsigned interval_ms;
    /* policy */
    double target_utilisation; /* share of a pool's pCPUs the VMs may fill */
    double headroom;           /* added to the entitlement before rounding up to vCPUs */
    unsigned min_cpus;         /* never prefer fewer vCPUs than this */
    unsigned shrink_after;     /* intervals of contention before a shrink takes effect */
    bool use_shares;           /* weight from libvirt <shares> when the XML sets it */
    bool metadata_agent;       /* domain metadata may choose a qemu-ga actuator */
    double saturated;          /* preferred vCPUs busier than this share of k are censored */
    double replace_margin;     /* CPUs a fresh placement must save on the busiest pCPU */
    double uncontend_margin;   /* a contended pool ends contention below cap * (1 - this) */
    double grow_margin;        /* CPUs past its count before a shrunk guest grows */
    double hold_band;       /* share of its count need must move by to change it (>= grow_margin) */
    unsigned claim_after;   /* intervals a censored VM waits under its fair share */
    unsigned release_after; /* quiet intervals that end a pool's contention */
    double compliance_run;  /* a non-preferred vCPU running more than this is a violation */
    unsigned compliance_intervals; /* consecutive violating intervals = non-compliant */
    /* delivery */
    unsigned lease_intervals; /* hint lease in intervals */
    unsigned stale_intervals; /* no sample for this long: hints widen to all vCPUs */
    char enforce[16];         /* "report" or "cap" (cap: the older spelling of mode = enforce) */
    char mode[16];            /* "observe", "hint" or "enforce": every VM's, unless its section */
    char metrics_listen[128];
    char channel_dir[256]; /* replay: channel sockets are DIR/<name>.sock */
    /* process */
    char uri[256];
    char user[64];    /* switch to this user after start-up; "" = stay */
    char groups[256]; /* extra supplementary groups for user, comma or blank separated */
    char record[256];
    char replay[256];
    bool once;
    bool dry_run;
    bool foreground;
    bool replay_realtime;
    unsigned verbose;
    char file[256]; /* the file that was read, "" for none */
    unsigned ndomains;
    struct cfg_domain *domains;
};

/* Fill c with the built-in defaults. */
void cfg_defaults(struct hd_config *c);
/*
 * Read path into c.  A missing file is fine when !must_exist (the default path); any other
 * problem returns -errno with "FILE:LINE: message" in err.
 */
int cfg_load_file(struct hd_config *c, const char *path, bool must_exist, char *err, size_t errlen);
/* Parse text as if it were a file named name (unit tests). */
int cfg_load_text(struct hd_config *c, const char *name, const char *text, char *err,
                  size_t errlen);
/* Set one knob by its file key, as the command line does ("interval_ms", "1000"). */
int cfg_set(struct hd_config *c, const char *key, const char *value, char *err, size_t errlen);
/* Cross-field checks once everything is loaded. */
int cfg_check(const struct hd_config *c, char *err, size_t errlen);
/* The [domain ...] section that matches name or uuid (uuid first), or NULL. */
const struct cfg_domain *cfg_domain_find(const struct hd_config *c, const char *name,
                                         const char *uuid);
/*
 * The settings in force for one domain, key by key: its [domain] section in hostd.conf, else
 * its metadata (meta may be NULL), else the defaults (weight 0 = from the host's weights, not
 * opted out, the channel).  A qemu-ga actuator named only in metadata counts only with
 * metadata_agent = yes.  Returns the CFG_FROM_* bits of the sources used.
 */
unsigned cfg_domain_settings(const struct hd_config *c, const char *name, const char *uuid,
                             const struct snap_policy *meta, struct cfg_domain *out);
void cfg_dump(const struct hd_config *c, FILE *out);
/*
 * The [global] keys whose values differ between a and b, blank separated ("" when none), plus
 * "[domain]" when the domain sections differ.  Returns the length written (truncated to fit).
 */
size_t cfg_changed(const struct hd_config *a, const struct hd_config *b, char *buf, size_t len);
/*
 * SIGHUP: make next (a freshly loaded and checked configuration) the one in force in cur.
 * Keys that only a restart can change (connect, metrics_listen, user, groups, channel_dir,
 * interval_ms) keep cur's values; their names go to kept ("" when none).  Run-time options
 * given on the command line only (--once, --dry-run, --record, --replay, --foreground,
 * --replay-realtime, -v) stay as they were.  Refused with -EPERM, cur untouched, when next
 * needs libvirt read-write (enforce = cap, a qemu-ga actuator) and hostd opened it read-only
 * (!rw).  On success cur owns next's domain sections and next is emptied; on failure next
 * is still the caller's to free.  changed gets what cfg_changed() says of the two, once the
 * restart-only keys are put back.
 */
int cfg_reload(struct hd_config *cur, struct hd_config *next, bool rw, char *kept, size_t keptlen,
               char *changed, size_t changedlen, char *err, size_t errlen);
/* The mode of VMs without one of their own: mode, with enforce = cap read as mode = enforce. */
enum cfg_mode cfg_global_mode(const struct hd_config *c);
/* Does this configuration change anything through libvirt (mode = enforce for any VM, a
 * qemu-ga actuator)?  Otherwise hostd opens libvirt read-only. */
bool cfg_needs_write(const struct hd_config *c);
void cfg_free(struct hd_config *c);
/*
 * Split a metrics_listen value "ADDR:PORT" ("[V6ADDR]:PORT" too) into addr (brackets gone)
 * and port.  Returns 0, or -EINVAL with the reason in err.
 */
int cfg_split_listen(const char *listen, char *addr, size_t addrlen, unsigned *port, char *err,
                     size_t errlen);

#endif
