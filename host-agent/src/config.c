// SPDX-License-Identifier: LGPL-2.1-or-later
#include "config.h"
#include "snapshot.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "corehint/conf.h"

enum knob_type { K_UINT, K_DOUBLE, K_BOOL, K_STRING };

struct knob {
    const char *key;
    enum knob_type type;
    size_t off;
    double min, max; /* K_UINT, K_DOUBLE; K_STRING: max = buffer size */
    const char *help;
};

#define KU(k, f, lo, hi, h)                                                                        \
    {                                                                                              \
        k, K_UINT, offsetof(struct hd_config, f), lo, hi, h                                        \
    }
#define KD(k, f, lo, hi, h)                                                                        \
    {                                                                                              \
        k, K_DOUBLE, offsetof(struct hd_config, f), lo, hi, h                                      \
    }
#define KB(k, f, h)                                                                                \
    {                                                                                              \
        k, K_BOOL, offsetof(struct hd_config, f), 0, 0, h                                          \
    }
#define KS(k, f, h)                                                                                \
    {                                                                                              \
        k, K_STRING, offsetof(struct hd_config, f), 0, sizeof(((struct hd_config *)0)->f), h       \
    }

/* Every knob of the [global] part of the file; the order is the --dump-config order. */
static const struct knob knobs[] = {
    KU("interval_ms", interval_ms, 100, 600000, "sampling and decision interval"),
    KD("target_utilisation", target_utilisation, 0.1, 1.0, "share of a pool the VMs may fill"),
    KD("headroom", headroom, 0.0, 4.0, "added to the entitlement before rounding up"),
    KU("min_cpus", min_cpus, 1, 8192, "fewest preferred vCPUs per VM"),
    KU("shrink_after", shrink_after, 1, 1000, "intervals of contention before shrinking"),
    KB("use_shares", use_shares, "weight from libvirt's live cpu_shares (the kernel's weight)"),
    KB("metadata_agent", metadata_agent,
       "domain metadata may choose a qemu-ga actuator (opens libvirt read-write)"),
    KD("saturated", saturated, 0.5, 1.0, "busy share of k at which demand is censored"),
    KD("grow_margin", grow_margin, 0.0, 1.0,
       "CPUs an entitlement (with headroom) must exceed a shrunk guest's count by to grow it"),
    KD("hold_band", hold_band, 0.0, 0.5,
       "share of its count an entitlement (with headroom) must pass it by, up or down, to change "
       "a contended guest's count (at least grow_margin CPUs)"),
    KU("claim_after", claim_after, 1, 1000,
       "intervals a saturated VM is held under its fair share before the pool is shared fairly"),
    KU("release_after", release_after, 1, 1000,
       "quiet intervals (demand below the uncontend_margin limit) that end contention"),
    KD("uncontend_margin", uncontend_margin, 0.0, 0.9,
       "share of the capacity demand must drop below it for a contended pool to end contention"),
    KD("replace_margin", replace_margin, 0.0, 8.0,
       "CPUs a fresh placement must take off the busiest pCPU to replace the current one"),
    KD("compliance_run", compliance_run, 0.0, 1.0,
       "run share of a non-preferred vCPU that violates"),
    KU("compliance_intervals", compliance_intervals, 1, 1000,
       "violating intervals = non-compliant"),
    KU("lease_intervals", lease_intervals, 2, 100, "hint lease, in intervals"),
    KU("stale_intervals", stale_intervals, 2, 1000,
       "intervals without a libvirt sample before every guest is widened to all vCPUs"),
    KS("mode", mode,
       "observe: decide and export, hint all vCPUs; hint: send the decisions; enforce: also cap"),
    KS("enforce", enforce,
       "report: mark non-compliant VMs; cap: also limit them to their share (= mode enforce)"),
    KS("metrics_listen", metrics_listen, "ADDR:PORT of /metrics and /status, \"\" = off"),
    KS("channel_dir", channel_dir, "replay only: channel sockets are DIR/NAME.sock"),
    KS("connect", uri, "libvirt URI"),
    KS("user", user, "after start-up run as this user (\"\" = stay as started)"),
    KS("groups", groups, "extra groups for user, e.g. libvirt,libvirt-qemu"),
};

const char *cfg_actuator_name(enum cfg_actuator a)
{
    switch (a) {
    case CFG_ACT_CHANNEL:
        return "channel";
    case CFG_ACT_AGENT_SYSFS:
        return "agent-sysfs";
    case CFG_ACT_AGENT_VCPUS:
        return "agent-vcpus";
    }
    return "?";
}

const char *cfg_mode_name(enum cfg_mode m)
{
    switch (m) {
    case CFG_MODE_OBSERVE:
        return "observe";
    case CFG_MODE_HINT:
        return "hint";
    case CFG_MODE_ENFORCE:
        return "enforce";
    }
    return "?";
}

int cfg_mode_parse(const char *name)
{
    for (int m = CFG_MODE_OBSERVE; m <= CFG_MODE_ENFORCE; m++)
        if (strcmp(name, cfg_mode_name((enum cfg_mode)m)) == 0)
            return m;
    return -1;
}

enum cfg_mode cfg_global_mode(const struct hd_config *c)
{
    int m = cfg_mode_parse(c->mode);

    if (m < 0)
        m = CFG_MODE_HINT;
    if (m == CFG_MODE_HINT && strcmp(c->enforce, "cap") == 0)
        m = CFG_MODE_ENFORCE;
    return (enum cfg_mode)m;
}

int cfg_actuator_parse(const char *name)
{
    for (int a = CFG_ACT_CHANNEL; a <= CFG_ACT_AGENT_VCPUS; a++)
        if (strcmp(name, cfg_actuator_name((enum cfg_actuator)a)) == 0)
            return a;
    return -1;
}

void cfg_defaults(struct hd_config *c)
{
    memset(c, 0, sizeof(*c));
    c->interval_ms = 1000;
    c->target_utilisation = 0.9;
    c->headroom = 0.1;
    c->min_cpus = 1;
    c->shrink_after = 1;
    c->use_shares = true;
    c->saturated = 0.95;
    c->replace_margin = 0.25;
    c->uncontend_margin = 0.15;
    c->grow_margin = 0.2;
    c->hold_band = 0.1;
    c->claim_after = 2;
    c->release_after = 2;
    c->compliance_run = 0.05;
    c->compliance_intervals = 3;
    c->lease_intervals = 3;
    c->stale_intervals = 6;
    snprintf(c->enforce, sizeof(c->enforce), "report");
    snprintf(c->mode, sizeof(c->mode), "hint");
    snprintf(c->metrics_listen, sizeof(c->metrics_listen), "%s", CFG_DEFAULT_LISTEN);
    snprintf(c->uri, sizeof(c->uri), "%s", CFG_DEFAULT_URI);
}

bool cfg_needs_write(const struct hd_config *c)
{
    if (cfg_global_mode(c) == CFG_MODE_ENFORCE || c->metadata_agent)
        return true;
    for (unsigned i = 0; i < c->ndomains; i++) {
        const struct cfg_domain *d = &c->domains[i];

        if (!d->opt_out &&
            (d->actuator != CFG_ACT_CHANNEL || (d->has_mode && d->mode == CFG_MODE_ENFORCE)))
            return true;
    }
    return false;
}

static const struct knob *knob_find(const char *key)
{
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
        if (strcmp(knobs[i].key, key) == 0)
            return &knobs[i];
    return NULL;
}

int cfg_set(struct hd_config *c, const char *key, const char *value, char *err, size_t errlen)
{
    const struct knob *k = knob_find(key);
    char *field;
    uint64_t u;
    int rc;

    if (!k) {
        snprintf(err, errlen, "unknown setting \"%s\"", key);
        return -EINVAL;
    }
    field = (char *)c + k->off;
    switch (k->type) {
    case K_UINT:
        if ((rc = ch_conf_uint(key, value, (uint64_t)k->min, (uint64_t)k->max, &u, err, errlen)) <
            0)
            return rc;
        *(unsigned *)(void *)field = (unsigned)u;
        return 0;
    case K_DOUBLE:
        return ch_conf_double(key, value, k->min, k->max, (double *)(void *)field, err, errlen);
    case K_BOOL:
        return ch_conf_bool(key, value, (bool *)(void *)field, err, errlen);
    case K_STRING:
        if (strcmp(key, "enforce") == 0 && strcmp(value, "report") != 0 &&
            strcmp(value, "cap") != 0) {
            snprintf(err, errlen, "enforce: expected \"report\" or \"cap\", not \"%s\"", value);
            return -EINVAL;
        }
        if (strcmp(key, "mode") == 0 && cfg_mode_parse(value) < 0) {
            snprintf(err, errlen, "mode: expected observe, hint or enforce, not \"%s\"", value);
            return -EINVAL;
        }
        if (strlen(value) >= (size_t)k->max) {
            snprintf(err, errlen, "%s: longer than %zu bytes", key, (size_t)k->max - 1);
            return -ERANGE;
        }
        snprintf(field, (size_t)k->max, "%s", value);
        return 0;
    }
    return -EINVAL;
}

static struct cfg_domain *domain_get(struct hd_config *c, const char *match)
{
    struct cfg_domain *d;

    for (unsigned i = 0; i < c->ndomains; i++)
        if (strcmp(c->domains[i].match, match) == 0)
            return &c->domains[i];
    d = realloc(c->domains, (c->ndomains + 1) * sizeof(*d));
    if (!d)
        return NULL;
    c->domains = d;
    d = &c->domains[c->ndomains++];
    memset(d, 0, sizeof(*d));
    snprintf(d->match, sizeof(d->match), "%s", match);
    return d;
}

static int on_line(void *ctx, const struct ch_conf_line *l, char *err, size_t errlen)
{
    struct hd_config *c = ctx;
    struct cfg_domain *d;

    if (l->section[0] == '\0' || strcmp(l->section, "global") == 0)
        return cfg_set(c, l->key, l->value, err, errlen);
    if (strcmp(l->section, "domain") != 0) {
        snprintf(err, errlen, "unknown section [%s]", l->section);
        return -EINVAL;
    }
    if (l->section_arg[0] == '\0') {
        snprintf(err, errlen, "[domain] needs a name or UUID: [domain NAME]");
        return -EINVAL;
    }
    if (!(d = domain_get(c, l->section_arg))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (strcmp(l->key, "weight") == 0)
        return ch_conf_double(l->key, l->value, 0.001, 1e6, &d->weight, err, errlen);
    if (strcmp(l->key, "opt_out") == 0) {
        d->has_opt_out = true;
        return ch_conf_bool(l->key, l->value, &d->opt_out, err, errlen);
    }
    if (strcmp(l->key, "mode") == 0) {
        int m = cfg_mode_parse(l->value);
        if (m >= 0) {
            d->mode = (enum cfg_mode)m;
            d->has_mode = true;
            return 0;
        }
        snprintf(err, errlen, "mode: expected observe, hint or enforce, not \"%s\"", l->value);
        return -EINVAL;
    }
    if (strcmp(l->key, "actuator") == 0) {
        int a = cfg_actuator_parse(l->value);
        if (a >= 0) {
            d->actuator = (enum cfg_actuator)a;
            d->has_actuator = true;
            return 0;
        }
        snprintf(err, errlen, "actuator: expected channel, agent-sysfs or agent-vcpus, not \"%s\"",
                 l->value);
        return -EINVAL;
    }
    snprintf(err, errlen, "unknown domain setting \"%s\" (weight, opt_out, actuator, mode)",
             l->key);
    return -EINVAL;
}

int cfg_load_file(struct hd_config *c, const char *path, bool must_exist, char *err, size_t errlen)
{
    int rc = ch_conf_parse_file(path, on_line, c, err, errlen);

    if (rc == -ENOENT && !must_exist) {
        err[0] = '\0';
        return 0;
    }
    if (rc == -ENOENT)
        snprintf(err, errlen, "%s: no such file", path);
    if (rc == 0)
        snprintf(c->file, sizeof(c->file), "%s", path);
    return rc;
}

int cfg_load_text(struct hd_config *c, const char *name, const char *text, char *err, size_t errlen)
{
    return ch_conf_parse_text(name, text, on_line, c, err, errlen);
}

int cfg_check(const struct hd_config *c, char *err, size_t errlen)
{
    if (c->record[0] && c->replay[0]) {
        snprintf(err, errlen, "--record and --replay exclude each other");
        return -EINVAL;
    }
    if (c->groups[0] && !c->user[0]) {
        snprintf(err, errlen, "groups needs user: name the user to switch to");
        return -EINVAL;
    }
    if (strcmp(c->mode, "observe") == 0 && strcmp(c->enforce, "cap") == 0) {
        snprintf(err, errlen,
                 "mode = observe never caps: drop enforce = cap (or set mode = "
                 "enforce)");
        return -EINVAL;
    }
    if (c->channel_dir[0] && !c->replay[0]) {
        snprintf(err, errlen, "channel_dir only applies to --replay");
        return -EINVAL;
    }
    return 0;
}

const struct cfg_domain *cfg_domain_find(const struct hd_config *c, const char *name,
                                         const char *uuid)
{
    for (unsigned i = 0; i < c->ndomains; i++)
        if (strcasecmp(c->domains[i].match, uuid) == 0)
            return &c->domains[i];
    for (unsigned i = 0; i < c->ndomains; i++)
        if (strcmp(c->domains[i].match, name) == 0)
            return &c->domains[i];
    return NULL;
}

unsigned cfg_domain_settings(const struct hd_config *c, const char *name, const char *uuid,
                             const struct snap_policy *meta, struct cfg_domain *out)
{
    const struct cfg_domain *cd = cfg_domain_find(c, name, uuid);
    const struct snap_policy *m = meta && meta->present && !meta->error[0] ? meta : NULL;
    unsigned from = 0;

    memset(out, 0, sizeof(*out));
    out->actuator = CFG_ACT_CHANNEL;
    out->mode = cfg_global_mode(c);
    if (cd && cd->has_mode) {
        out->mode = cd->mode;
        from |= CFG_FROM_CONF;
    }
    if (cd)
        snprintf(out->match, sizeof(out->match), "%s", cd->match);
    if (cd && cd->weight > 0) {
        out->weight = cd->weight;
        from |= CFG_FROM_CONF;
    } else if (m && m->weight > 0) {
        out->weight = m->weight;
        from |= CFG_FROM_METADATA;
    }
    if (cd && cd->has_opt_out) {
        out->opt_out = cd->opt_out;
        from |= CFG_FROM_CONF;
    } else if (m && m->opt_out >= 0) {
        out->opt_out = m->opt_out;
        from |= CFG_FROM_METADATA;
    }
    if (cd && cd->has_actuator) {
        out->actuator = cd->actuator;
        from |= CFG_FROM_CONF;
    } else if (m && m->actuator >= 0 && (m->actuator == CFG_ACT_CHANNEL || c->metadata_agent)) {
        out->actuator = (enum cfg_actuator)m->actuator;
        from |= CFG_FROM_METADATA;
    }
    return from;
}

void cfg_dump(const struct hd_config *c, FILE *out)
{
    fprintf(out, "# corehint-hostd configuration in force (%s)\n",
            c->file[0] ? c->file : "built-in defaults");
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
        const struct knob *k = &knobs[i];
        const char *field = (const char *)c + k->off;

        fprintf(out, "# %s\n", k->help);
        switch (k->type) {
        case K_UINT:
            fprintf(out, "%s = %u\n", k->key, *(const unsigned *)(const void *)field);
            break;
        case K_DOUBLE:
            fprintf(out, "%s = %g\n", k->key, *(const double *)(const void *)field);
            break;
        case K_BOOL:
            fprintf(out, "%s = %s\n", k->key, *(const bool *)(const void *)field ? "yes" : "no");
            break;
        case K_STRING:
            fprintf(out, "%s = \"%s\"\n", k->key, field);
            break;
        }
    }
    for (unsigned i = 0; i < c->ndomains; i++) {
        const struct cfg_domain *d = &c->domains[i];

        fprintf(out, "\n[domain %s]\n", d->match);
        if (d->weight > 0)
            fprintf(out, "weight = %g\n", d->weight);
        if (d->has_opt_out)
            fprintf(out, "opt_out = %s\n", d->opt_out ? "yes" : "no");
        if (d->has_actuator)
            fprintf(out, "actuator = %s\n", cfg_actuator_name(d->actuator));
        if (d->has_mode)
            fprintf(out, "mode = %s\n", cfg_mode_name(d->mode));
    }
}

static bool knob_equal(const struct knob *k, const struct hd_config *a, const struct hd_config *b)
{
    const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;

    switch (k->type) {
    case K_UINT:
        return *(const unsigned *)(const void *)x == *(const unsigned *)(const void *)y;
    case K_DOUBLE:
        return *(const double *)(const void *)x == *(const double *)(const void *)y;
    case K_BOOL:
        return *(const bool *)(const void *)x == *(const bool *)(const void *)y;
    case K_STRING:
        return strcmp(x, y) == 0;
    }
    return false;
}

static bool domains_equal(const struct hd_config *a, const struct hd_config *b)
{
    if (a->ndomains != b->ndomains)
        return false;
    for (unsigned i = 0; i < a->ndomains; i++) {
        const struct cfg_domain *x = &a->domains[i], *y = &b->domains[i];

        if (strcmp(x->match, y->match) != 0 || x->weight != y->weight || x->opt_out != y->opt_out ||
            x->actuator != y->actuator || x->has_opt_out != y->has_opt_out ||
            x->has_actuator != y->has_actuator || x->mode != y->mode || x->has_mode != y->has_mode)
            return false;
    }
    return true;
}

static void append_word(char *buf, size_t len, size_t *used, const char *word)
{
    int n = snprintf(buf + *used, len - *used, "%s%s", *used ? " " : "", word);

    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

size_t cfg_changed(const struct hd_config *a, const struct hd_config *b, char *buf, size_t len)
{
    size_t used = 0;

    if (!len)
        return 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
        if (!knob_equal(&knobs[i], a, b))
            append_word(buf, len, &used, knobs[i].key);
    if (!domains_equal(a, b))
        append_word(buf, len, &used, "[domain]");
    return used;
}

/* The keys a running hostd cannot take: sockets, the identity it switched to, its timers. */
static const char *const restart_only[] = {
    "connect", "metrics_listen", "user", "groups", "channel_dir", "interval_ms",
};

int cfg_reload(struct hd_config *cur, struct hd_config *next, bool rw, char *kept, size_t keptlen,
               char *changed, size_t changedlen, char *err, size_t errlen)
{
    size_t used = 0;

    if (keptlen)
        kept[0] = '\0';
    if (!rw && cfg_needs_write(next)) {
        snprintf(err, errlen,
                 "it needs libvirt read-write (mode = enforce, enforce = cap or a qemu-ga "
                 "actuator) and hostd opened it read-only: restart hostd to take it");
        return -EPERM;
    }
    for (size_t i = 0; i < sizeof(restart_only) / sizeof(restart_only[0]); i++) {
        const struct knob *k = knob_find(restart_only[i]);

        if (k && !knob_equal(k, cur, next)) {
            memcpy((char *)next + k->off, (const char *)cur + k->off,
                   k->type == K_STRING ? (size_t)k->max : sizeof(unsigned));
            if (keptlen)
                append_word(kept, keptlen, &used, k->key);
        }
    }
    /* command-line-only run options */
    next->once = cur->once;
    next->dry_run = cur->dry_run;
    next->foreground = cur->foreground;
    next->replay_realtime = cur->replay_realtime;
    next->verbose = cur->verbose;
    memcpy(next->record, cur->record, sizeof(next->record));
    memcpy(next->replay, cur->replay, sizeof(next->replay));
    cfg_changed(cur, next, changed, changedlen);
    cfg_free(cur);
    *cur = *next;
    next->domains = NULL;
    next->ndomains = 0;
    return 0;
}

void cfg_free(struct hd_config *c)
{
    free(c->domains);
    c->domains = NULL;
    c->ndomains = 0;
}

int cfg_split_listen(const char *listen, char *addr, size_t addrlen, unsigned *port, char *err,
                     size_t errlen)
{
    const char *colon = strrchr(listen, ':');
    unsigned long n;
    size_t len;
    char *end;

    if (!colon || colon == listen || (len = (size_t)(colon - listen)) >= addrlen) {
        snprintf(err, errlen, "\"%s\": expected ADDR:PORT", listen);
        return -EINVAL;
    }
    errno = 0;
    n = strtoul(colon + 1, &end, 10);
    if (*end || end == colon + 1 || errno || n > 65535 || colon[1] < '0' || colon[1] > '9') {
        snprintf(err, errlen, "\"%s\": bad port", listen);
        return -EINVAL;
    }
    memcpy(addr, listen, len);
    addr[len] = '\0';
    if (len >= 2 && addr[0] == '[' && addr[len - 1] == ']') {
        memmove(addr, addr + 1, len - 2);
        addr[len - 2] = '\0';
    }
    *port = (unsigned)n;
    return 0;
}
