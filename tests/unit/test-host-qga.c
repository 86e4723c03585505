// SPDX-License-Identifier: LGPL-2.1-or-later
/* qemu-ga helpers: base64 of file contents, per-domain actuator settings, and the parsers of
 * what the agent sends (reply framing, reply parse, the guest-sync wait). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "config.h"
#include "qga.h"

TEST(base64)
{
    char out[64];

    qga_base64((const unsigned char *)"", 0, out);
    CHECK_STR(out, "");
    qga_base64((const unsigned char *)"0\n", 2, out);
    CHECK_STR(out, "MAo=");
    qga_base64((const unsigned char *)"0-3\n", 4, out);
    CHECK_STR(out, "MC0zCg==");
    qga_base64((const unsigned char *)"0,2-5", 5, out);
    CHECK_STR(out, "MCwyLTU=");
    qga_base64((const unsigned char *)"\xff\x00\x80", 3, out);
    CHECK_STR(out, "/wCA");
}

TEST(actuator_setting)
{
    struct hd_config c;
    char err[256];

    cfg_defaults(&c);
    CHECK_INT(cfg_load_text(&c, "t.conf",
                            "[domain a]\nactuator = agent-vcpus\n[domain b]\n"
                            "weight = 2\n",
                            err, sizeof(err)),
              0);
    CHECK_INT(cfg_domain_find(&c, "a", "")->actuator, CFG_ACT_AGENT_VCPUS);
    CHECK_INT(cfg_domain_find(&c, "b", "")->actuator, CFG_ACT_CHANNEL);
    CHECK_STR(cfg_actuator_name(CFG_ACT_AGENT_SYSFS), "agent-sysfs");
    CHECK_INT(cfg_load_text(&c, "t.conf", "[domain a]\nactuator = telepathy\n", err, sizeof(err)),
              -EINVAL);
    CHECK_STR(err, "t.conf:2: actuator: expected channel, agent-sysfs or agent-vcpus, not "
                   "\"telepathy\"");
    cfg_free(&c);
}

/* A fake agent socket: the replies text, handed out chunk bytes per read through a framer, the
 * way sock_line reads them; closed when the text is used up. */
struct agent {
    struct qga_framer f;
    const char *text;
    size_t len, pos, chunk;
    unsigned lines; /* lines taken */
};

static struct agent *agent_new(const char *text, size_t len, size_t chunk)
{
    struct agent *a = calloc(1, sizeof(*a));

    if (a) {
        a->text = text;
        a->len = len;
        a->chunk = chunk;
    }
    return a;
}

static int agent_line(void *ctx, char **line, char *err, size_t errlen)
{
    struct agent *a = ctx;

    for (;;) {
        int rc = qga_framer_line(&a->f, line, err, errlen);
        if (rc != -EAGAIN) {
            a->lines += rc == 0;
            return rc;
        }
        if (a->pos == a->len) {
            snprintf(err, errlen, "agent: closed");
            return -EPIPE;
        }
        size_t n = a->len - a->pos < a->chunk ? a->len - a->pos : a->chunk;
        a->pos += qga_framer_feed(&a->f, a->text + a->pos, n);
    }
}

static int take(struct qga_framer *f, char **line)
{
    char err[128] = "";
    int rc = qga_framer_line(f, line, err, sizeof(err));

    CHECK_MSG(rc == 0 || rc == -EAGAIN, "qga_framer_line: %d %s", rc, err);
    return rc;
}

TEST(framer_two_replies_in_one_read)
{
    struct qga_framer *f = calloc(1, sizeof(*f));
    const char in[] = "{\"return\": 1}\n{\"return\": {}}\n{\"ret";
    char *line = NULL;

    CHECK_INT(qga_framer_feed(f, in, strlen(in)), strlen(in));
    CHECK_INT(take(f, &line), 0);
    CHECK_STR(line, "{\"return\": 1}");
    free(line);
    CHECK_INT(take(f, &line), 0);
    CHECK_STR(line, "{\"return\": {}}");
    free(line);
    CHECK_INT(take(f, &line), -EAGAIN);
    CHECK(line == NULL);
    CHECK_INT(f->len, 5); /* the start of the third stays for the next read */
    free(f);
}

TEST(framer_reply_split_over_reads)
{
    struct qga_framer *f = calloc(1, sizeof(*f));
    const char *parts[] = {"{\"ret", "urn\": 1", "2345", "}", "\n"};
    char *line = NULL;

    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        CHECK_INT(take(f, &line), -EAGAIN);
        CHECK_INT(qga_framer_feed(f, parts[i], strlen(parts[i])), strlen(parts[i]));
    }
    CHECK_INT(take(f, &line), 0);
    CHECK_STR(line, "{\"return\": 12345}");
    free(line);
    CHECK_INT(f->len, 0);
    free(f);
}

/* qemu-ga answers guest-sync-delimited with 0xff ahead of the reply; a stray one anywhere must
 * not break the JSON either. */
TEST(framer_0xff_resync_becomes_space)
{
    struct qga_framer *f = calloc(1, sizeof(*f));
    const char in[] = "\xff{\"return\":\xff 7}\n\xff\xff\n";
    json_object *ret = NULL;
    char *line = NULL, err[128] = "";

    CHECK_INT(qga_framer_feed(f, in, strlen(in)), strlen(in));
    CHECK(memchr(f->buf, 0xff, f->len) == NULL);
    CHECK_INT(take(f, &line), 0);
    CHECK_STR(line, " {\"return\":  7}");
    CHECK_INT(qga_reply_parse(line, &ret, err, sizeof(err)), 0);
    CHECK_INT(json_object_get_int64(ret), 7);
    json_object_put(ret);
    free(line);
    CHECK_INT(take(f, &line), 0);
    CHECK_STR(line, "  ");
    free(line);
    free(f);
}

/* A reply of QGA_REPLY_MAX bytes or more without its '\n' is refused, not buffered. */
TEST(framer_64k_cap)
{
    struct qga_framer *f = calloc(1, sizeof(*f));
    size_t big = QGA_REPLY_MAX + 100;
    char *in = malloc(big), *line = NULL, err[128] = "";

    memset(in, ' ', big);
    /* the longest line that fits: QGA_REPLY_MAX - 1 bytes and its '\n' */
    in[QGA_REPLY_MAX - 1] = '\n';
    CHECK_INT(qga_framer_feed(f, in, big), QGA_REPLY_MAX);
    CHECK_INT(qga_framer_feed(f, in, big), 0);
    CHECK_INT(take(f, &line), 0);
    CHECK_INT(line ? strlen(line) : 0, QGA_REPLY_MAX - 1);
    free(line);
    line = NULL;
    CHECK_INT(f->len, 0);
    /* one byte more and no '\n' fits */
    in[QGA_REPLY_MAX - 1] = ' ';
    CHECK_INT(qga_framer_feed(f, in, big), QGA_REPLY_MAX);
    CHECK_INT(qga_framer_line(f, &line, err, sizeof(err)), -EPROTO);
    CHECK(line == NULL);
    CHECK_STR(err, "agent reply longer than 65535 bytes");
    free(in);
    free(f);
}

TEST(reply_return)
{
    json_object *ret = NULL;
    char err[128] = "";

    CHECK_INT(qga_reply_parse("{\"return\": {}}", &ret, err, sizeof(err)), 0);
    CHECK(json_object_is_type(ret, json_type_object));
    json_object_put(ret);
    CHECK_INT(qga_reply_parse("{\"return\": 12345}", &ret, err, sizeof(err)), 0);
    CHECK_INT(json_object_get_int64(ret), 12345);
    json_object_put(ret);
    CHECK_INT(qga_reply_parse("{\"return\": null}", &ret, err, sizeof(err)), 0);
    CHECK(ret == NULL);
    CHECK_STR(err, "");
}

TEST(reply_not_an_object_or_without_return)
{
    const char *bad[] = {"", "[1, 2]", "\"return\"", "12345", "null", "{\"return\": 1", "\xff\xfe"};
    json_object *ret = NULL;
    char err[128];

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        err[0] = '\0';
        CHECK_INT(qga_reply_parse(bad[i], &ret, err, sizeof(err)), -EPROTO);
        CHECK(ret == NULL);
        CHECK_STR(err, "agent: reply is not a JSON object");
    }
    CHECK_INT(qga_reply_parse("{\"Return\": 1, \"id\": 2}", &ret, err, sizeof(err)), -EPROTO);
    CHECK(ret == NULL);
    CHECK_STR(err, "agent: reply without \"return\"");
}

TEST(reply_error_desc)
{
    json_object *ret = NULL;
    char err[128] = "", small[16] = "";

    CHECK_INT(qga_reply_parse("{\"error\": {\"class\": \"GenericError\", \"desc\": \"failed to "
                              "open file '/x': No such file or directory\"}}",
                              &ret, err, sizeof(err)),
              -EREMOTEIO);
    CHECK(ret == NULL);
    CHECK_STR(err, "agent: failed to open file '/x': No such file or directory");
    /* an error wins over a return beside it */
    CHECK_INT(
        qga_reply_parse("{\"return\": 1, \"error\": {\"desc\": \"no\"}}", &ret, err, sizeof(err)),
        -EREMOTEIO);
    CHECK(ret == NULL);
    CHECK_STR(err, "agent: no");
    CHECK_INT(qga_reply_parse("{\"error\": {\"desc\": \"0123456789abcdef\"}}", &ret, small,
                              sizeof(small)),
              -EREMOTEIO);
    CHECK_STR(small, "agent: 01234567");
}

TEST(reply_error_without_desc)
{
    const char *replies[] = {"{\"error\": {\"class\": \"GenericError\"}}",
                             "{\"error\": {\"desc\": null}}", "{\"error\": \"desc\"}",
                             "{\"error\": null}"};
    json_object *ret = NULL;
    char err[128];

    for (size_t i = 0; i < ARRAY_SIZE(replies); i++) {
        err[0] = '\0';
        CHECK_INT(qga_reply_parse(replies[i], &ret, err, sizeof(err)), -EREMOTEIO);
        CHECK(ret == NULL);
        CHECK_STR(err, "agent: error");
    }
}

/* The desc is the guest's text: a newline in it must not start a forged log line of hostd's. */
TEST(reply_error_desc_control_chars_cleaned)
{
    json_object *ret = NULL;
    char err[128] = "";

    CHECK_INT(qga_reply_parse("{\"error\": {\"desc\": \"x\\n<0>corehint-hostd[error]: FORGED\"}}",
                              &ret, err, sizeof(err)),
              -EREMOTEIO);
    CHECK_STR(err, "agent: x?<0>corehint-hostd[error]: FORGED");
    CHECK_INT(qga_reply_parse("{\"error\": {\"desc\": \"\\r\\t\\u001b[2J\\u007f\\u0001 "
                              "d\\u00e9j\\u00e0\"}}",
                              &ret, err, sizeof(err)),
              -EREMOTEIO);
    CHECK_STR(err, "agent: ???[2J?? d\xc3\xa9j\xc3\xa0");
    /* C1 controls (CSI, U+009B, in UTF-8) are control characters too; U+00A0 is not */
    CHECK_INT(qga_reply_parse("{\"error\": {\"desc\": \"a\\u009b2Jb\\u0085c\\u00a0\"}}", &ret, err,
                              sizeof(err)),
              -EREMOTEIO);
    CHECK_STR(err, "agent: a??2Jb??c\xc2\xa0");
    /* a non-string desc is quoted as JSON, control characters escaped by json-c */
    CHECK_INT(qga_reply_parse("{\"error\": {\"desc\": [\"a\\nb\"]}}", &ret, err, sizeof(err)),
              -EREMOTEIO);
    CHECK(strchr(err, '\n') == NULL);
}

TEST(sync_id_first)
{
    const char in[] = "{\"return\": 12345}\n";
    struct agent *a = agent_new(in, strlen(in), 4096);
    char err[128] = "";

    CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    CHECK_INT(a->lines, 1);
    free(a);
}

/* What an interrupted user of the socket left is skipped: other ids, other replies, junk. */
TEST(sync_stale_replies_skipped)
{
    const char in[] = "{\"return\": 1}\n"
                      "{\"return\": {}}\n"
                      "not json at all\n"
                      "\xff\n"
                      "{\"error\": {\"desc\": \"stale\"}}\n"
                      "[12345]\n"
                      "{\"return\": null}\n"
                      "{\"return\": 12346}\n"
                      "\xff{\"return\": 12345}\n" /* the 8th after the first */
                      "{\"return\": 99}\n";
    char err[128] = "";

    for (size_t chunk = 1; chunk <= 4096; chunk *= 8) {
        struct agent *a = agent_new(in, strlen(in), chunk);
        CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), 0);
        CHECK_INT(a->lines, 1 + QGA_SYNC_TRIES);
        free(a);
    }
    CHECK_STR(err, "");
}

TEST(sync_did_not_answer)
{
    char *in = calloc(QGA_SYNC_TRIES + 3, 64), err[128] = "";
    struct agent *a;
    size_t len = 0;

    for (unsigned i = 0; i < QGA_SYNC_TRIES + 1; i++)
        len += (size_t)sprintf(in + len, "{\"return\": %u}\n", i);
    len += (size_t)sprintf(in + len, "{\"return\": 12345}\n"); /* one too late */
    a = agent_new(in, len, 4096);
    CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), -EPROTO);
    CHECK_STR(err, "agent: guest-sync did not answer");
    CHECK_INT(a->lines, 1 + QGA_SYNC_TRIES);
    free(a);
    free(in);
}

TEST(sync_errors)
{
    const char first_error[] = "{\"error\": {\"desc\": \"guest-sync\\nFORGED\"}}\n"
                               "{\"return\": 12345}\n";
    const char closed[] = "{\"return\": 1}\n{\"return\": 2}\n{\"ret";
    struct agent *a;
    char err[128] = "";

    /* the first reply is a reply to guest-sync: an error ends the wait */
    a = agent_new(first_error, strlen(first_error), 4096);
    CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), -EREMOTEIO);
    CHECK_STR(err, "agent: guest-sync?FORGED");
    CHECK_INT(a->lines, 1);
    free(a);
    a = agent_new(closed, strlen(closed), 4096);
    CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), -EPIPE);
    CHECK_STR(err, "agent: closed");
    free(a);
    a = agent_new("", 0, 4096);
    CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), -EPIPE);
    free(a);
    /* a stale reply too long to frame ends it too */
    size_t big = QGA_REPLY_MAX + 16;
    char *junk = malloc(big);
    memset(junk, 'x', big);
    a = agent_new(junk, big, 8192);
    CHECK_INT(qga_sync_wait(12345, agent_line, a, err, sizeof(err)), -EPROTO);
    CHECK_STR(err, "agent reply longer than 65535 bytes");
    free(a);
    free(junk);
}
