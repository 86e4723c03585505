// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "corehint/conf.h"

struct seen {
    char keys[8][64];
    char values[8][128];
    char sections[8][64];
    char args[8][64];
    unsigned lines[8];
    unsigned n;
};

static int record(void *ctx, const struct ch_conf_line *l, char *err, size_t errlen)
{
    struct seen *s = ctx;

    if (strcmp(l->key, "bad") == 0) {
        snprintf(err, errlen, "bad: not allowed");
        return -EINVAL;
    }
    if (s->n < 8) {
        snprintf(s->keys[s->n], 64, "%s", l->key);
        snprintf(s->values[s->n], 128, "%s", l->value);
        snprintf(s->sections[s->n], 64, "%s", l->section);
        snprintf(s->args[s->n], 64, "%s", l->section_arg);
        s->lines[s->n] = l->line;
    }
    s->n++;
    return 0;
}

TEST(parses_keys_sections_comments)
{
    struct seen s = {0};
    char err[256];
    const char *text = "# comment\n"
                       "interval_ms = 1000\n"
                       "\n"
                       "  headroom=0.25   # trailing comment\n"
                       "name = \"a # not a comment \"\n"
                       "[domain web-1]\n"
                       "weight = 4\r\n"
                       "[domain \"with space\"]\n"
                       "opt_out = yes";

    CHECK_INT(ch_conf_parse_text("t.conf", text, record, &s, err, sizeof(err)), 0);
    CHECK_INT(s.n, 5);
    CHECK_STR(s.keys[0], "interval_ms");
    CHECK_STR(s.values[0], "1000");
    CHECK_INT(s.lines[0], 2);
    CHECK_STR(s.values[1], "0.25");
    CHECK_STR(s.values[2], "a # not a comment ");
    CHECK_STR(s.sections[3], "domain");
    CHECK_STR(s.args[3], "web-1");
    CHECK_STR(s.values[3], "4");
    CHECK_STR(s.args[4], "with space");
    CHECK_INT(s.lines[4], 9);
}

TEST(errors_name_file_and_line)
{
    struct seen s = {0};
    char err[256];

    CHECK_INT(ch_conf_parse_text("x.conf", "a = 1\nnovalue\n", record, &s, err, sizeof(err)),
              -EINVAL);
    CHECK_STR(err, "x.conf:2: expected \"key = value\"");
    CHECK_INT(ch_conf_parse_text("x.conf", "\n\nbad = 1\n", record, &s, err, sizeof(err)), -EINVAL);
    CHECK_STR(err, "x.conf:3: bad: not allowed");
    CHECK_INT(ch_conf_parse_text("x.conf", "[domain\n", record, &s, err, sizeof(err)), -EINVAL);
    CHECK_STR(err, "x.conf:1: malformed section header");
    CHECK_INT(ch_conf_parse_text("x.conf", "k = \"open\n", record, &s, err, sizeof(err)), -EINVAL);
    CHECK_STR(err, "x.conf:1: k: unterminated quote");
    CHECK_INT(ch_conf_parse_text("x.conf", " = 3\n", record, &s, err, sizeof(err)), -EINVAL);
    CHECK_STR(err, "x.conf:1: missing key before '='");
}

TEST(missing_file_is_enoent)
{
    struct seen s = {0};
    char err[256];

    CHECK_INT(ch_conf_parse_file("/nonexistent/corehint.conf", record, &s, err, sizeof(err)),
              -ENOENT);
    char path[] = "/tmp/corehint-conf-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "k = v\n", 6) == 6);
    close(fd);
    CHECK_INT(ch_conf_parse_file(path, record, &s, err, sizeof(err)), 0);
    CHECK_INT(s.n, 1);
    unlink(path);
}

TEST(typed_values_range_checked)
{
    char err[128];
    uint64_t u;
    double d;
    bool b;

    CHECK_INT(ch_conf_uint("interval_ms", "1000", 100, 100000, &u, err, sizeof(err)), 0);
    CHECK_INT(u, 1000);
    CHECK_INT(ch_conf_uint("interval_ms", "99", 100, 100000, &u, err, sizeof(err)), -ERANGE);
    CHECK_STR(err, "interval_ms: 99 is out of range 100..100000");
    CHECK_INT(ch_conf_uint("interval_ms", "-5", 0, 10, &u, err, sizeof(err)), -EINVAL);
    CHECK_INT(ch_conf_uint("interval_ms", "12abc", 0, 100, &u, err, sizeof(err)), -EINVAL);
    CHECK_INT(ch_conf_uint("n", "99999999999999999999999", 0, UINT64_MAX, &u, err, sizeof(err)),
              -ERANGE);
    CHECK_INT(ch_conf_double("headroom", "0.5", 0, 1, &d, err, sizeof(err)), 0);
    CHECK(d == 0.5);
    CHECK_INT(ch_conf_double("headroom", "1.5", 0, 1, &d, err, sizeof(err)), -ERANGE);
    CHECK_INT(ch_conf_double("headroom", "nan", 0, 1, &d, err, sizeof(err)), -EINVAL);
    CHECK_INT(ch_conf_double("headroom", "", 0, 1, &d, err, sizeof(err)), -EINVAL);
    CHECK_INT(ch_conf_bool("opt_out", "yes", &b, err, sizeof(err)), 0);
    CHECK(b);
    CHECK_INT(ch_conf_bool("opt_out", "off", &b, err, sizeof(err)), 0);
    CHECK(!b);
    CHECK_INT(ch_conf_bool("opt_out", "maybe", &b, err, sizeof(err)), -EINVAL);
}
