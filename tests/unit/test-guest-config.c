// SPDX-License-Identifier: LGPL-2.1-or-later
/* corehint-guestd configuration: defaults -> file -> command line, range checks, errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static char conf_path[64];

static void write_conf(const char *text)
{
    strcpy(conf_path, "/tmp/test-guest-config-XXXXXX");
    int fd = mkstemp(conf_path);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

/* argv from a NULL-terminated list; "@" stands for the temporary file. */
static int load(struct config *cfg, char *err, size_t errlen, const char *const *args)
{
    char *argv[32];
    int argc = 0;

    argv[argc++] = (char *)"corehint-guestd";
    for (; *args; args++)
        argv[argc++] = (char *)(strcmp(*args, "@") == 0 ? conf_path : *args);
    argv[argc] = NULL;
    return config_load(cfg, argc, argv, err, errlen);
}

#define LOAD(cfg, err, ...) load(cfg, err, sizeof(err), (const char *const[]){__VA_ARGS__, NULL})

TEST(defaults)
{
    struct config *cfg = malloc(sizeof(*cfg));
    char err[256];

    write_conf("");
    CHECK_INT(LOAD(cfg, err, "--config", "@"), 0);
    CHECK_STR(cfg->port, "auto");
    CHECK_INT(cfg->fallback, FALLBACK_LOCAL);
    CHECK_INT(cfg->interval_ms, 1000);
    CHECK_INT(cfg->high, 500);
    CHECK_INT(cfg->low, 200);
    CHECK_STR(cfg->sysfs_root, "/sys");
    CHECK_STR(cfg->proc_root, "/proc");
    CHECK_INT(cfg->action, ACTION_RUN);
    CHECK_INT(cfg->log_syslog, 0);
    unlink(conf_path);
    free(cfg);
}

TEST(file_then_command_line)
{
    struct config *cfg = malloc(sizeof(*cfg));
    char err[256];

    write_conf("# comment\nport = /dev/vport0p1\nfallback = kernel\ninterval_ms = 250\n"
               "high_threshold = 800\nlow_threshold = 300\nlog = syslog\nlog_level = warning\n"
               "modprobe = /usr/sbin/modprobe\n");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--interval-ms", "100", "--low", "0", "-v"), 0);
    CHECK_STR(cfg->port, "/dev/vport0p1");
    CHECK_INT(cfg->fallback, FALLBACK_KERNEL);
    CHECK_INT(cfg->interval_ms, 100); /* the command line wins */
    CHECK_INT(cfg->high, 800);
    CHECK_INT(cfg->low, 0);
    CHECK_INT(cfg->log_syslog, 1);
    CHECK_INT(cfg->log_level, LOG_LVL_DEBUG);
    CHECK_STR(cfg->modprobe, "/usr/sbin/modprobe");
    /* The same argv again gives the same result (SIGHUP reload relies on it). */
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--interval-ms", "100", "--low", "0", "-v"), 0);
    CHECK_INT(cfg->interval_ms, 100);
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--once"), 0);
    CHECK_INT(cfg->action, ACTION_ONCE);
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--restore", "--foreground"), 0);
    CHECK_INT(cfg->action, ACTION_RESTORE);
    unlink(conf_path);
    free(cfg);
}

static const struct {
    const char *text;
    int rc;
    const char *err; /* after the file name */
} file_errors[] = {
    {"interval_ms = 99\n", -ERANGE, ":1: interval_ms: 99 is out of range 100..100000"},
    {"\n\ninterval_ms = 100001\n", -ERANGE, ":3: interval_ms: 100001 is out of range 100..100000"},
    {"interval_ms = 1e3\n", -EINVAL, ":1: interval_ms: \"1e3\" is not an unsigned integer"},
    {"high_threshold = 10000\n", -ERANGE, ":1: high_threshold: 10000 is out of range 1..9999"},
    {"low_threshold = -1\n", -EINVAL, ":1: low_threshold: \"-1\" is not an unsigned integer"},
    {"fallback = kernel-ish\n", -EINVAL,
     ":1: fallback: \"kernel-ish\" is not one of local, kernel, none"},
    {"log = journal\n", -EINVAL, ":1: log: \"journal\" is not one of syslog, stderr"},
    {"log_level = loud\n", -EINVAL,
     ":1: log_level: \"loud\" is not one of error, warning, info, debug"},
    {"port =\n", -EINVAL, ":1: port: must be a path of 1..4095 bytes"},
    {"speed = 3\n", -EINVAL, ":1: unknown key \"speed\""},
    {"[guest]\nport = x\n", -EINVAL, ":2: unknown section [guest]"},
    {"just words\n", -EINVAL, ":1: expected \"key = value\""},
};

TEST(file_errors_name_file_and_line)
{
    struct config *cfg = malloc(sizeof(*cfg));
    char err[512], want[600];

    for (size_t i = 0; i < ARRAY_SIZE(file_errors); i++) {
        write_conf(file_errors[i].text);
        snprintf(want, sizeof(want), "%s%s", conf_path, file_errors[i].err);
        CHECK_INT(LOAD(cfg, err, "--config", "@"), file_errors[i].rc);
        CHECK_STR(err, want);
        unlink(conf_path);
    }
    free(cfg);
}

TEST(cross_checks_and_command_line_errors)
{
    struct config *cfg = malloc(sizeof(*cfg));
    char err[512];

    write_conf("high_threshold = 300\n");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--low", "300"), -ERANGE);
    CHECK_STR(err, "low threshold 300 must be below high threshold 300");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--high", "0"), -ERANGE);
    CHECK_STR(err, "--high: 0 is out of range 1..9999");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--interval-ms", "x"), -EINVAL);
    CHECK_STR(err, "--interval-ms: \"x\" is not an unsigned integer");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--nope"), -EINVAL);
    CHECK_STR(err, "--nope: unknown option or missing argument (see --help)");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "-x"), -EINVAL);
    CHECK_STR(err, "-x: unknown option or missing argument (see --help)");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "stray"), -EINVAL);
    CHECK_STR(err, "stray: unexpected argument (see --help)");
    unlink(conf_path);
    /* An explicit --config that does not exist is an error; the default one is optional. */
    CHECK_INT(LOAD(cfg, err, "--config", "/nonexistent/guestd.conf"), -ENOENT);
    CHECK(strstr(err, "/nonexistent/guestd.conf") != NULL);
    /* --help needs no config file at all. */
    CHECK_INT(LOAD(cfg, err, "--config", "/nonexistent/guestd.conf", "--help"), 0);
    CHECK_INT(cfg->action, ACTION_HELP);
    free(cfg);
}

TEST(dump_is_a_valid_config)
{
    struct config *cfg = malloc(sizeof(*cfg)), *again = malloc(sizeof(*again));
    char err[512], text[4096];

    write_conf("fallback = none\nhigh_threshold = 999\n");
    CHECK_INT(LOAD(cfg, err, "--config", "@", "--port", "/run/x.sock"), 0);
    FILE *f = fmemopen(text, sizeof(text), "w");
    config_dump(cfg, f);
    fclose(f);
    unlink(conf_path);
    write_conf(text);
    CHECK_INT(LOAD(again, err, "--config", "@"), 0);
    CHECK_STR(again->port, "/run/x.sock");
    CHECK_INT(again->fallback, FALLBACK_NONE);
    CHECK_INT(again->high, 999);
    unlink(conf_path);
    free(cfg);
    free(again);
}
