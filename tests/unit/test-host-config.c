// SPDX-License-Identifier: LGPL-2.1-or-later
/* hostd configuration: defaults, file syntax errors naming file and line, domain sections. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "snapshot.h"

static int load(const char *text, char *err, size_t errlen, struct hd_config *c)
{
    cfg_defaults(c);
    return cfg_load_text(c, "hostd.conf", text, err, errlen);
}

TEST(defaults)
{
    struct hd_config c;

    cfg_defaults(&c);
    CHECK_INT(c.interval_ms, 1000);
    CHECK_INT(c.shrink_after, 1);
    CHECK_INT(c.min_cpus, 1);
    CHECK(c.use_shares);
    CHECK_STR(c.uri, "qemu:///system");
    CHECK_STR(c.metrics_listen, "127.0.0.1:9477");
    CHECK(c.target_utilisation > 0.89 && c.target_utilisation < 0.91);
}

TEST(values_and_domains)
{
    struct hd_config c;
    char err[256];

    CHECK_INT(load("interval_ms = 500\nheadroom = 0.25\nuse_shares = no\n"
                   "[domain web]\nweight = 4\n[domain 6695eb01-f6a4-8304-79aa-97f2502e193f]\n"
                   "opt_out = yes\n",
                   err, sizeof(err), &c),
              0);
    CHECK_INT(c.interval_ms, 500);
    CHECK(c.headroom > 0.24 && c.headroom < 0.26);
    CHECK(!c.use_shares);
    CHECK_INT(c.ndomains, 2);
    const struct cfg_domain *d = cfg_domain_find(&c, "web", "0000");
    CHECK(d && d->weight > 3.9 && !d->opt_out);
    d = cfg_domain_find(&c, "other", "6695EB01-F6A4-8304-79AA-97F2502E193F");
    CHECK(d && d->opt_out);
    CHECK(cfg_domain_find(&c, "nobody", "1234") == NULL);
    cfg_free(&c);
}

TEST(errors_name_file_and_line)
{
    struct hd_config c;
    char err[256];

    CHECK_INT(load("interval_ms = 1000\nbogus = 1\n", err, sizeof(err), &c), -EINVAL);
    CHECK_STR(err, "hostd.conf:2: unknown setting \"bogus\"");
    cfg_free(&c);
    CHECK(load("\n\ninterval_ms = 5\n", err, sizeof(err), &c) < 0);
    CHECK(strncmp(err, "hostd.conf:3: interval_ms", 25) == 0);
    cfg_free(&c);
    CHECK(load("headroom = lots\n", err, sizeof(err), &c) < 0);
    CHECK(strncmp(err, "hostd.conf:1: headroom", 22) == 0);
    cfg_free(&c);
    CHECK_INT(load("[vm x]\nweight = 1\n", err, sizeof(err), &c), -EINVAL);
    CHECK_STR(err, "hostd.conf:2: unknown section [vm]");
    cfg_free(&c);
    CHECK_INT(load("[domain]\nweight = 1\n", err, sizeof(err), &c), -EINVAL);
    CHECK_STR(err, "hostd.conf:2: [domain] needs a name or UUID: [domain NAME]");
    cfg_free(&c);
    CHECK_INT(load("[domain a]\ncolour = red\n", err, sizeof(err), &c), -EINVAL);
    CHECK_STR(err,
              "hostd.conf:2: unknown domain setting \"colour\" (weight, opt_out, actuator, mode)");
    cfg_free(&c);
    CHECK(load("[domain a]\nweight = 0\n", err, sizeof(err), &c) < 0);
    CHECK(strncmp(err, "hostd.conf:2: weight", 20) == 0);
    cfg_free(&c);
    CHECK(load("use_shares = maybe\n", err, sizeof(err), &c) < 0);
    cfg_free(&c);
    CHECK_INT(load("enforce = cap\nenforce = always\n", err, sizeof(err), &c), -EINVAL);
    CHECK_STR(err, "hostd.conf:2: enforce: expected \"report\" or \"cap\", not \"always\"");
    CHECK_STR(c.enforce, "cap");
    cfg_free(&c);
}

TEST(files)
{
    struct hd_config c;
    char err[256], path[] = "/tmp/test-host-config-XXXXXX";
    int fd = mkstemp(path);

    cfg_defaults(&c);
    CHECK_INT(cfg_load_file(&c, "/nonexistent/hostd.conf", false, err, sizeof(err)), 0);
    CHECK_INT(cfg_load_file(&c, "/nonexistent/hostd.conf", true, err, sizeof(err)), -ENOENT);
    CHECK_STR(err, "/nonexistent/hostd.conf: no such file");
    CHECK(fd >= 0);
    CHECK(write(fd, "min_cpus = 2\nmin_cpus = 0\n", 26) == 26);
    close(fd);
    CHECK(cfg_load_file(&c, path, true, err, sizeof(err)) < 0);
    char want[128];
    snprintf(want, sizeof(want), "%s:2: min_cpus", path);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    unlink(path);
    /* the command line has the last word and is checked the same way */
    CHECK_INT(cfg_set(&c, "interval_ms", "250", err, sizeof(err)), 0);
    CHECK_INT(c.interval_ms, 250);
    CHECK(cfg_set(&c, "interval_ms", "99", err, sizeof(err)) < 0);
    c.record[0] = 'x';
    c.replay[0] = 'y';
    CHECK_INT(cfg_check(&c, err, sizeof(err)), -EINVAL);
    cfg_free(&c);
}

static struct snap_policy meta(double weight, int opt_out, int actuator)
{
    struct snap_policy p = {.present = true, .weight = weight};
    p.opt_out = (signed char)opt_out;
    p.actuator = (signed char)actuator;
    return p;
}

TEST(settings_conf_over_metadata_over_defaults)
{
    struct hd_config c;
    struct cfg_domain d;
    struct snap_policy m = meta(3, 1, CFG_ACT_CHANNEL), none = meta(0, -1, -1);
    char err[256];

    CHECK_INT(load("[domain web]\nweight = 4\n[domain db]\nopt_out = no\nactuator = agent-vcpus\n",
                   err, sizeof(err), &c),
              0);
    /* nothing anywhere: the defaults */
    CHECK_INT(cfg_domain_settings(&c, "other", "0000", NULL, &d), 0);
    CHECK(d.weight == 0 && !d.opt_out && d.actuator == CFG_ACT_CHANNEL);
    CHECK_INT(cfg_domain_settings(&c, "other", "0000", &none, &d), 0);
    /* metadata alone */
    CHECK_INT(cfg_domain_settings(&c, "other", "0000", &m, &d), CFG_FROM_METADATA);
    CHECK(d.weight == 3 && d.opt_out && d.actuator == CFG_ACT_CHANNEL);
    /* key by key: hostd.conf's weight, the metadata's opt_out */
    CHECK_INT(cfg_domain_settings(&c, "web", "0000", &m, &d), CFG_FROM_METADATA | CFG_FROM_CONF);
    CHECK(d.weight == 4 && d.opt_out);
    /* an explicit "opt_out = no" in hostd.conf beats the metadata's yes */
    CHECK_INT(cfg_domain_settings(&c, "db", "0000", &m, &d), CFG_FROM_METADATA | CFG_FROM_CONF);
    CHECK(d.weight == 3 && !d.opt_out && d.actuator == CFG_ACT_AGENT_VCPUS);
    /* only the sources of values in force count */
    m.weight = 0;
    CHECK_INT(cfg_domain_settings(&c, "db", "0000", &m, &d), CFG_FROM_CONF);
    /* metadata that was ignored as invalid counts as none */
    snprintf(m.error, sizeof(m.error), "unknown attribute");
    CHECK_INT(cfg_domain_settings(&c, "other", "0000", &m, &d), 0);
    CHECK(d.weight == 0 && !d.opt_out);
    cfg_free(&c);
}

TEST(settings_metadata_agent_needs_consent)
{
    struct hd_config c;
    struct cfg_domain d;
    struct snap_policy m = meta(0, -1, CFG_ACT_AGENT_SYSFS);
    char err[256];

    CHECK_INT(load("", err, sizeof(err), &c), 0);
    CHECK(!c.metadata_agent && !cfg_needs_write(&c));
    CHECK_INT(cfg_domain_settings(&c, "vm", "0000", &m, &d), 0);
    CHECK(d.actuator == CFG_ACT_CHANNEL);
    CHECK_INT(load("metadata_agent = yes\n", err, sizeof(err), &c), 0);
    CHECK(cfg_needs_write(&c)); /* qemu-ga commands need a read-write connection */
    CHECK_INT(cfg_domain_settings(&c, "vm", "0000", &m, &d), CFG_FROM_METADATA);
    CHECK(d.actuator == CFG_ACT_AGENT_SYSFS);
    cfg_free(&c);
}

TEST(changed_lists_keys_and_domains)
{
    struct hd_config a, b;
    char err[256], buf[256];

    CHECK_INT(load("[domain web]\nweight = 2\n", err, sizeof(err), &a), 0);
    CHECK_INT(load("[domain web]\nweight = 2\n", err, sizeof(err), &b), 0);
    CHECK_INT((int)cfg_changed(&a, &b, buf, sizeof(buf)), 0);
    CHECK_STR(buf, "");
    cfg_free(&b);
    CHECK_INT(
        load("headroom = 0.3\nenforce = cap\n[domain web]\nweight = 3\n", err, sizeof(err), &b), 0);
    cfg_changed(&a, &b, buf, sizeof(buf));
    CHECK_STR(buf, "headroom enforce [domain]");
    /* a short buffer is cut, never overrun */
    CHECK(cfg_changed(&a, &b, buf, 6) <= 5);
    CHECK_STR(buf, "headr");
    cfg_free(&a);
    cfg_free(&b);
}

TEST(reload_takes_policy_keeps_restart_only_keys)
{
    struct hd_config cur, next;
    char err[256], kept[128], changed[128];

    CHECK_INT(load("headroom = 0.1\n[domain web]\nweight = 2\n", err, sizeof(err), &cur), 0);
    cur.dry_run = true;
    cur.verbose = 2;
    snprintf(cur.record, sizeof(cur.record), "/var/tmp/trace");
    CHECK_INT(load("headroom = 0.5\ninterval_ms = 250\nmetrics_listen = \"0.0.0.0:1\"\n"
                   "[domain db]\nopt_out = yes\n",
                   err, sizeof(err), &next),
              0);
    CHECK_INT(cfg_reload(&cur, &next, false, kept, sizeof(kept), changed, sizeof(changed), err,
                         sizeof(err)),
              0);
    CHECK_STR(kept, "metrics_listen interval_ms");
    CHECK_STR(changed, "headroom [domain]");
    CHECK(cur.headroom > 0.49 && cur.headroom < 0.51);
    CHECK_INT(cur.interval_ms, 1000);
    CHECK_STR(cur.metrics_listen, "127.0.0.1:9477");
    /* the command line's run options stay */
    CHECK(cur.dry_run);
    CHECK_INT(cur.verbose, 2);
    CHECK_STR(cur.record, "/var/tmp/trace");
    /* the new domain sections are in force, the old ones gone, next emptied */
    CHECK(cfg_domain_find(&cur, "web", "0") == NULL);
    CHECK(cfg_domain_find(&cur, "db", "0") != NULL);
    CHECK(next.domains == NULL && next.ndomains == 0);
    cfg_free(&cur);
    cfg_free(&next);
}

TEST(reload_refuses_write_access_on_a_read_only_connection)
{
    struct hd_config cur, next;
    char err[256] = "", kept[128], changed[128];

    CHECK_INT(load("headroom = 0.1\n", err, sizeof(err), &cur), 0);
    CHECK_INT(load("headroom = 0.7\nenforce = cap\n", err, sizeof(err), &next), 0);
    CHECK_INT(cfg_reload(&cur, &next, false, kept, sizeof(kept), changed, sizeof(changed), err,
                         sizeof(err)),
              -EPERM);
    CHECK(strstr(err, "read-only") != NULL);
    CHECK_STR(cur.enforce, "report");
    CHECK(cur.headroom < 0.11);
    /* opened read-write at start: taken */
    CHECK_INT(cfg_reload(&cur, &next, true, kept, sizeof(kept), changed, sizeof(changed), err,
                         sizeof(err)),
              0);
    CHECK_STR(cur.enforce, "cap");
    cfg_free(&cur);
    cfg_free(&next);
}

TEST(mode_global_per_domain_and_the_enforce_alias)
{
    struct hd_config c;
    struct cfg_domain d;
    char err[256];

    CHECK_INT(load("", err, sizeof(err), &c), 0);
    CHECK_INT(cfg_global_mode(&c), CFG_MODE_HINT);
    CHECK(!cfg_needs_write(&c));
    cfg_free(&c);
    /* enforce = cap is the older spelling of mode = enforce */
    CHECK_INT(load("enforce = cap\n", err, sizeof(err), &c), 0);
    CHECK_INT(cfg_global_mode(&c), CFG_MODE_ENFORCE);
    CHECK(cfg_needs_write(&c));
    cfg_free(&c);
    CHECK_INT(load("mode = observe\n[domain web]\nmode = enforce\n[domain db]\nmode = hint\n", err,
                   sizeof(err), &c),
              0);
    CHECK_INT(cfg_check(&c, err, sizeof(err)), 0);
    CHECK_INT(cfg_global_mode(&c), CFG_MODE_OBSERVE);
    CHECK(cfg_needs_write(&c)); /* one VM may be capped */
    CHECK_INT(cfg_domain_settings(&c, "web", "0", NULL, &d), CFG_FROM_CONF);
    CHECK_INT(d.mode, CFG_MODE_ENFORCE);
    cfg_domain_settings(&c, "db", "0", NULL, &d);
    CHECK_INT(d.mode, CFG_MODE_HINT);
    CHECK_INT(cfg_domain_settings(&c, "other", "0", NULL, &d), 0);
    CHECK_INT(d.mode, CFG_MODE_OBSERVE);
    cfg_free(&c);
    /* observe never caps */
    CHECK_INT(load("mode = observe\nenforce = cap\n", err, sizeof(err), &c), 0);
    CHECK_INT(cfg_check(&c, err, sizeof(err)), -EINVAL);
    CHECK(strstr(err, "observe never caps") != NULL);
    cfg_free(&c);
    CHECK_INT(load("mode = watch\n", err, sizeof(err), &c), -EINVAL);
    CHECK_STR(err, "hostd.conf:1: mode: expected observe, hint or enforce, not \"watch\"");
    cfg_free(&c);
    CHECK_INT(load("[domain a]\nmode = off\n", err, sizeof(err), &c), -EINVAL);
    cfg_free(&c);
}
