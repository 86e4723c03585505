// SPDX-License-Identifier: LGPL-2.1-or-later
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "corehint/proto.h"

static const char *const accept[] = {
    "{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"corehint-hostd/0.1.0\"}",
    "{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"corehint-guestd/"
    "0.1.0\",\"online\":\"0-3\",\"writable\":true}",
    "{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"x\",\"max_v\":3,\"session\":"
    "\"0123456789abcdef\"}",
    "{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"x\",\"session\":"
    "\"ffffffffffffffff\"}",
    "{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0-1\","
    "\"writable\":false,\"reason\":\"busy\"}",
    "{\"v\":2,\"type\":\"hint\",\"session\":\"0000000000000000\",\"seq\":1,\"cpus\":\"0\",\"lease_"
    "ms\":100}",
    "{\"v\":1,\"type\":\"hint\",\"session\":\"00000000000000a1\",\"seq\":1,\"cpus\":\"0\",\"lease_"
    "ms\":100}",
    "{\"v\":2,\"type\":\"status\",\"seq\":0,\"applied\":\"0\",\"mode\":\"fallback\",\"steal_pct_"
    "x100\":0}",
    "{\"v\":1,\"type\":\"hint\",\"seq\":1,\"cpus\":\"0-1\",\"lease_ms\":3000}",
    "{\"v\":1,\"type\":\"hint\",\"seq\":18446744073709551615,\"cpus\":\"0\",\"lease_ms\":100}",
    "{\"v\":1,\"type\":\"hint\",\"seq\":5,\"cpus\":\"0,2\",\"lease_ms\":600000,\"reason\":"
    "\"contended\"}",
    "{\"type\":\"hint\",\"lease_ms\":3000,\"cpus\":\"0-1\",\"seq\":2,\"v\":1}", /* any key order */
    "{\"v\":1,\"type\":\"hint\",\"seq\":1,\"cpus\":\"0\",\"lease_ms\":100,\"future\":{\"a\":[1]}}",
    "{\"v\":1,\"type\":\"hint\",\"seq\":1,\"cpus\":\"0\",\"lease_ms\":100,\"x\":\"{{{[[[\"}",
    "{\"v\":1,\"type\":\"status\",\"seq\":0,\"applied\":\"\",\"mode\":\"unsupported\",\"steal_pct_"
    "x100\":0}",
    "{\"v\":1,\"type\":\"status\",\"seq\":7,\"applied\":\"0-1\",\"mode\":\"host\",\"steal_pct_"
    "x100\":10000}",
    "{\"v\":1,\"type\":\"status\",\"seq\":7,\"applied\":\"0-1\",\"mode\":\"fallback\",\"steal_pct_"
    "x100\":512}",
    "{\"v\":1,\"type\":\"error\",\"seq\":3,\"code\":\"not-online\",\"message\":\"cpu 5 is "
    "offline\"}",
    "  {\"v\":1,\"type\":\"error\",\"seq\":0,\"code\":\"x\",\"message\":\"caf\\u00e9\"} \r",
};

static const struct {
    const char *line;
    enum ch_decode_err err;
    const char *field;
    uint64_t seq;
} reject[] = {
    {"", CH_DEC_BAD_JSON, NULL, 0},
    {"not json", CH_DEC_BAD_JSON, NULL, 0},
    {"{\"v\":1,\"type\":\"hint\"", CH_DEC_BAD_JSON, NULL, 0},
    {"{\"v\":1,\"type\":\"hint\"}{}", CH_DEC_BAD_JSON, NULL, 0},
    {"{'v':1}", CH_DEC_BAD_JSON, NULL, 0},
    {"{\"v\":1,}", CH_DEC_BAD_JSON, NULL, 0},
    {"{\"v\":1,\"type\":\"error\",\"seq\":0,\"code\":\"x\",\"message\":\"\xff\xfe\"}",
     CH_DEC_BAD_JSON, NULL, 0},
    {"{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":1}}}}}", CH_DEC_BAD_JSON, NULL, 0}, /* too deep */
    {"{\"v\":1,\"type\":\"hint\",\"x\":{\"y\":{\"z\":{}}}}", CH_DEC_BAD_JSON, NULL, 0},
    {"{\"v\":1,\"type\":\"hint\",\"x\":[[1]],\"y\":[[[2]]]}", CH_DEC_BAD_JSON, NULL, 0},
    {"[1,2]", CH_DEC_NOT_OBJECT, NULL, 0},
    {"\"hint\"", CH_DEC_NOT_OBJECT, NULL, 0},
    {"{\"type\":\"hint\"}", CH_DEC_BAD_VERSION, "v", 0},
    {"{\"v\":\"1\",\"type\":\"hint\"}", CH_DEC_BAD_VERSION, "v", 0},
    {"{\"v\":0,\"type\":\"hint\"}", CH_DEC_BAD_VERSION, "v", 0},
    {"{\"v\":-1,\"type\":\"hint\"}", CH_DEC_BAD_VERSION, "v", 0},
    {"{\"v\":1.0,\"type\":\"hint\"}", CH_DEC_BAD_VERSION, "v", 0},
    {"{\"v\":3,\"type\":\"hint\"}", CH_DEC_UNSUPPORTED_VERSION, "v", 0},
    {"{\"v\":1,\"type\":\"hint\\u0000x\",\"seq\":1,\"cpus\":\"0\",\"lease_ms\":100}",
     CH_DEC_BAD_TYPE, "type", 0},
    {"{\"v\":2,\"type\":\"hint\",\"seq\":4,\"cpus\":\"0\",\"lease_ms\":100}", CH_DEC_MISSING_FIELD,
     "session", 4},
    {"{\"v\":2,\"type\":\"hint\",\"session\":\"0123456789ABCDEF\",\"seq\":4,\"cpus\":\"0\",\"lease_"
     "ms\":100}",
     CH_DEC_BAD_FIELD, "session", 4},
    {"{\"v\":2,\"type\":\"hint\",\"session\":\"0123456789abcde\",\"seq\":4,\"cpus\":\"0\",\"lease_"
     "ms\":100}",
     CH_DEC_BAD_FIELD, "session", 4},
    {"{\"v\":2,\"type\":\"hint\",\"session\":12,\"seq\":4,\"cpus\":\"0\",\"lease_ms\":100}",
     CH_DEC_BAD_FIELD, "session", 4},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"x\",\"max_v\":2}",
     CH_DEC_MISSING_FIELD, "session", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"x\",\"session\":"
     "\"0x23456789abcdef\"}",
     CH_DEC_BAD_FIELD, "session", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0\",\"writable\":"
     "false,\"reason\":\"\"}",
     CH_DEC_BAD_FIELD, "reason", 0},
    {"{\"v\":1,\"type\":\"status\",\"seq\":2,\"applied\":\"\",\"mode\":\"host\",\"steal_pct_x100\":"
     "0}",
     CH_DEC_BAD_CPULIST, "applied", 2},
    {"{\"v\":1,\"type\":\"status\",\"seq\":2,\"applied\":\"\",\"mode\":\"fallback\",\"steal_pct_"
     "x100\":0}",
     CH_DEC_BAD_CPULIST, "applied", 2},
    {"{\"v\":1}", CH_DEC_BAD_TYPE, "type", 0},
    {"{\"v\":1,\"type\":7}", CH_DEC_BAD_TYPE, "type", 0},
    {"{\"v\":1,\"type\":\"reboot\",\"seq\":9}", CH_DEC_UNKNOWN_TYPE, "type", 9},
    {"{\"v\":1,\"type\":\"hint\",\"cpus\":\"0\",\"lease_ms\":100}", CH_DEC_MISSING_FIELD, "seq", 0},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":0,\"cpus\":\"0\",\"lease_ms\":100}", CH_DEC_BAD_FIELD,
     "seq", 0},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":-4,\"cpus\":\"0\",\"lease_ms\":100}", CH_DEC_BAD_FIELD,
     "seq", 0},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":\"4\",\"cpus\":\"0\",\"lease_ms\":100}", CH_DEC_BAD_FIELD,
     "seq", 0},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":1.5,\"cpus\":\"0\",\"lease_ms\":100}", CH_DEC_BAD_FIELD,
     "seq", 0},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":18446744073709551616,\"cpus\":\"0\",\"lease_ms\":100}",
     CH_DEC_BAD_FIELD, "seq", 0},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"lease_ms\":100}", CH_DEC_MISSING_FIELD, "cpus", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"\",\"lease_ms\":100}", CH_DEC_BAD_CPULIST,
     "cpus", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"3-1\",\"lease_ms\":100}", CH_DEC_BAD_CPULIST,
     "cpus", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"9000\",\"lease_ms\":100}", CH_DEC_BAD_CPULIST,
     "cpus", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":[0,1],\"lease_ms\":100}", CH_DEC_BAD_FIELD,
     "cpus", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"0\"}", CH_DEC_MISSING_FIELD, "lease_ms", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"0\",\"lease_ms\":99}", CH_DEC_BAD_FIELD,
     "lease_ms", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"0\",\"lease_ms\":600001}", CH_DEC_BAD_FIELD,
     "lease_ms", 4},
    {"{\"v\":1,\"type\":\"hint\",\"seq\":4,\"cpus\":\"0\",\"lease_ms\":100,\"reason\":5}",
     CH_DEC_BAD_FIELD, "reason", 4},
    {"{\"v\":1,\"type\":\"hello\",\"agent\":\"x\"}", CH_DEC_MISSING_FIELD, "role", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"admin\",\"agent\":\"x\"}", CH_DEC_BAD_FIELD, "role",
     0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\"}", CH_DEC_MISSING_FIELD, "agent", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"\"}", CH_DEC_BAD_FIELD, "agent", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"a\\nb\"}", CH_DEC_BAD_FIELD,
     "agent", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"a\\u0000b\"}", CH_DEC_BAD_FIELD,
     "agent", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":"
     "\"0123456789012345678901234567890123456789012345678901234567890123X\"}",
     CH_DEC_BAD_FIELD, "agent", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"writable\":true}",
     CH_DEC_MISSING_FIELD, "online", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"\",\"writable\":"
     "true}",
     CH_DEC_BAD_CPULIST, "online", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0-1\"}",
     CH_DEC_MISSING_FIELD, "writable", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0-1\","
     "\"writable\":1}",
     CH_DEC_BAD_FIELD, "writable", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0-1\","
     "\"writable\":true,\"housekeeping\":\"\"}",
     CH_DEC_BAD_CPULIST, "housekeeping", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0-1\","
     "\"writable\":true,\"housekeeping\":\"1-2\"}",
     CH_DEC_BAD_CPULIST, "housekeeping", 0},
    {"{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g\",\"online\":\"0-1\","
     "\"writable\":true,\"housekeeping\":1}",
     CH_DEC_BAD_FIELD, "housekeeping", 0},
    {"{\"v\":1,\"type\":\"status\",\"applied\":\"0\",\"mode\":\"host\",\"steal_pct_x100\":0}",
     CH_DEC_MISSING_FIELD, "seq", 0},
    {"{\"v\":1,\"type\":\"status\",\"seq\":2,\"applied\":\"x\",\"mode\":\"host\",\"steal_pct_"
     "x100\":0}",
     CH_DEC_BAD_CPULIST, "applied", 2},
    {"{\"v\":1,\"type\":\"status\",\"seq\":2,\"applied\":\"0\",\"mode\":\"turbo\",\"steal_pct_"
     "x100\":0}",
     CH_DEC_BAD_FIELD, "mode", 2},
    {"{\"v\":1,\"type\":\"status\",\"seq\":2,\"applied\":\"0\",\"mode\":\"host\",\"steal_pct_"
     "x100\":10001}",
     CH_DEC_BAD_FIELD, "steal_pct_x100", 2},
    {"{\"v\":1,\"type\":\"status\",\"seq\":2,\"applied\":\"0\",\"mode\":\"host\"}",
     CH_DEC_MISSING_FIELD, "steal_pct_x100", 2},
    {"{\"v\":1,\"type\":\"error\",\"seq\":1,\"code\":\"Bad_Code\",\"message\":\"m\"}",
     CH_DEC_BAD_FIELD, "code", 1},
    {"{\"v\":1,\"type\":\"error\",\"seq\":1,\"code\":\"-x\",\"message\":\"m\"}", CH_DEC_BAD_FIELD,
     "code", 1},
    {"{\"v\":1,\"type\":\"error\",\"seq\":1,\"code\":\"x\"}", CH_DEC_MISSING_FIELD, "message", 1},
};

TEST(accepts_valid_messages)
{
    for (size_t i = 0; i < ARRAY_SIZE(accept); i++) {
        struct ch_msg m;
        struct ch_decode_info info;
        int rc = ch_decode(accept[i], strlen(accept[i]), &m, &info);

        CHECK_MSG(rc == 0, "%s: refused as %s (%s)", accept[i], ch_decode_err_code(info.err),
                  info.field ? info.field : "-");
    }
}

TEST(rejects_with_precise_code)
{
    for (size_t i = 0; i < ARRAY_SIZE(reject); i++) {
        struct ch_msg m;
        struct ch_decode_info info;
        int rc = ch_decode(reject[i].line, strlen(reject[i].line), &m, &info);

        CHECK_MSG(rc == -EINVAL, "%s: accepted", reject[i].line);
        CHECK_MSG(info.err == reject[i].err, "%s: %s, expected %s", reject[i].line,
                  ch_decode_err_code(info.err), ch_decode_err_code(reject[i].err));
        CHECK_MSG((!reject[i].field && !info.field) ||
                      (reject[i].field && info.field && strcmp(reject[i].field, info.field) == 0),
                  "%s: field %s, expected %s", reject[i].line, info.field ? info.field : "-",
                  reject[i].field ? reject[i].field : "-");
        CHECK_MSG(info.seq == reject[i].seq, "%s: seq %" PRIu64, reject[i].line, info.seq);
    }
}

TEST(decoded_fields)
{
    struct ch_msg m;
    const char *l = "{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g/"
                    "1\",\"online\":\"0-3,6\",\"writable\":false}";
    char buf[64];

    CHECK_INT(ch_decode(l, strlen(l), &m, NULL), 0);
    CHECK_INT(m.type, CH_MSG_HELLO);
    CHECK_INT(m.u.hello.role, CH_ROLE_GUEST);
    CHECK_STR(m.u.hello.agent, "g/1");
    CHECK_INT(m.u.hello.max_v, 1);
    CHECK(!m.u.hello.writable);
    ch_cpulist_format(&m.u.hello.online, buf, sizeof(buf));
    CHECK_STR(buf, "0-3,6");
    CHECK(!m.u.hello.has_housekeeping);
    l = "{\"v\":1,\"type\":\"hello\",\"role\":\"guest\",\"agent\":\"g/1\",\"online\":\"0-3\","
        "\"writable\":true,\"housekeeping\":\"1,3\"}";
    CHECK_INT(ch_decode(l, strlen(l), &m, NULL), 0);
    CHECK(m.u.hello.has_housekeeping);
    ch_cpulist_format(&m.u.hello.housekeeping, buf, sizeof(buf));
    CHECK_STR(buf, "1,3");

    l = "{\"v\":1,\"type\":\"hint\",\"seq\":18446744073709551615,\"cpus\":\"0,2\",\"lease_ms\":"
        "3000}";
    CHECK_INT(ch_decode(l, strlen(l), &m, NULL), 0);
    CHECK(m.u.hint.seq == UINT64_MAX);
    CHECK_INT(m.u.hint.lease_ms, 3000);
    CHECK_INT(ch_cpuset_count(&m.u.hint.cpus), 2);
    CHECK_STR(m.u.hint.reason, "");
}

/* The longest line a message of version v may be: max - 1 bytes before the '\n'. */
static void check_line_limit(const char *head, size_t max)
{
    static char line[CH_LINE_MAX + 8];
    struct ch_msg m;
    struct ch_decode_info info;
    size_t len = max - 1;

    memset(line, 'a', len);
    memcpy(line, head, strlen(head));
    memcpy(line + len - 2, "\"}", 2);
    CHECK_INT(ch_decode(line, len, &m, &info), 0);
    line[len - 2] = 'a'; /* the closing quote moves one byte right */
    memcpy(line + len - 1, "\"}", 2);
    CHECK_INT(ch_decode(line, len + 1, &m, &info), -EINVAL);
    CHECK_INT(info.err, CH_DEC_TOO_LONG);
    CHECK_STR(ch_decode_err_code(info.err), "line-too-long");
}

TEST(line_length_limit)
{
    check_line_limit(
        "{\"v\":1,\"type\":\"hint\",\"seq\":1,\"cpus\":\"0\",\"lease_ms\":100,\"pad\":\"",
        CH_LINE_MAX_V1);
    check_line_limit("{\"v\":2,\"type\":\"hint\",\"session\":\"0000000000000001\",\"seq\":1,"
                     "\"cpus\":\"0\",\"lease_ms\":100,\"pad\":\"",
                     CH_LINE_MAX);
    CHECK_INT(ch_line_max(1), CH_LINE_MAX_V1);
    CHECK_INT(ch_line_max(2), CH_LINE_MAX);
}

/* PROTOCOL.md 2: the longest canonical cpulist (ids below 8192, two of every three) fits in a
 * version 2 hint, and not in a version 1 one. */
TEST(longest_cpulist_fits_a_v2_line)
{
    static char buf[CH_LINE_MAX + 1], list[CH_CPULIST_MAX_LEN];
    struct ch_msg m, out;
    ch_cpuset set;

    ch_cpuset_zero(&set);
    for (unsigned c = 0; c < CH_CPU_MAX; c++)
        if (c % 3 != 2)
            ch_cpuset_set(&set, c);
    CHECK_INT(ch_cpulist_format(&set, list, sizeof(list)), 26568);
    ch_msg_hint(&m, UINT64_MAX, &set, CH_LEASE_MAX_MS, "0123456789012345678901234567890123456789");
    m.u.hint.session = UINT64_MAX;
    m.u.hint.has_session = true;
    int len = ch_encode(&m, buf, sizeof(buf));
    CHECK(len > 26568 && (size_t)len <= CH_LINE_MAX);
    CHECK_INT(ch_decode(buf, (size_t)len - 1, &out, NULL), 0);
    CHECK(ch_cpuset_equal(&out.u.hint.cpus, &set));
    m.v = 1;
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -ENOSPC);
}

/* An error line is never answered, whatever else is wrong with it: the receiver must be able
 * to tell its type even when "v" is bad. */
TEST(error_type_known_despite_bad_version)
{
    static const char *const lines[] = {
        "{\"v\":0,\"type\":\"error\",\"seq\":1,\"code\":\"x\",\"message\":\"m\"}",
        "{\"type\":\"error\"}",
        "{\"v\":99,\"type\":\"error\"}",
        "{\"v\":\"1\",\"type\":\"error\"}",
    };
    for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
        struct ch_msg m;
        struct ch_decode_info info;
        CHECK_INT(ch_decode(lines[i], strlen(lines[i]), &m, &info), -EINVAL);
        CHECK_STR(info.type, "error");
    }
}

TEST(embedded_nul_refused)
{
    const char l[] = "{\"v\":1,\"type\":\"hint\"}\0{}";
    struct ch_msg m;
    struct ch_decode_info info;

    CHECK_INT(ch_decode(l, sizeof(l) - 1, &m, &info), -EINVAL);
    CHECK_INT(info.err, CH_DEC_BAD_JSON);
}

TEST(encode_round_trips)
{
    struct ch_msg in[6], out;
    ch_cpuset set;
    char buf[CH_LINE_MAX];

    ch_cpulist_parse("0-2,7", 5, &set);
    ch_msg_host_hello(&in[0], "corehint-hostd/0.1.0");
    in[0].u.hello.session = 0x5f0c1d9e2a7b4c03ull;
    in[0].u.hello.has_session = true;
    ch_msg_guest_hello(&in[1], "corehint-guestd/0.1.0", &set, true);
    ch_msg_hint(&in[2], 42, &set, 3000, "contention");
    in[2].u.hint.session = 0x5f0c1d9e2a7b4c03ull;
    in[2].u.hint.has_session = true;
    ch_msg_status(&in[3], 42, &set, CH_MODE_FALLBACK, 250);
    ch_msg_error(&in[4], 42, "not-online", "cpu \"7\" is not online / gone");
    ch_msg_guest_hello(&in[5], "corehint-guestd/0.1.0", &set, true);
    ch_cpulist_parse("1-2", 3, &in[5].u.hello.housekeeping);
    in[5].u.hello.has_housekeeping = true;
    for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
        int len = ch_encode(&in[i], buf, sizeof(buf));
        CHECK(len > 0);
        CHECK(buf[len - 1] == '\n');
        CHECK(strchr(buf, '\n') == buf + len - 1);
        CHECK_INT(ch_decode(buf, (size_t)len - 1, &out, NULL), 0);
        CHECK_INT(out.type, in[i].type);
        char again[CH_LINE_MAX];
        CHECK_INT(ch_encode(&out, again, sizeof(again)), len);
        CHECK_STR(again, buf);
    }
    ch_encode(&in[0], buf, sizeof(buf));
    CHECK_STR(buf,
              "{\"v\":1,\"type\":\"hello\",\"role\":\"host\",\"agent\":\"corehint-hostd/0.1.0\","
              "\"max_v\":2,\"session\":\"5f0c1d9e2a7b4c03\"}\n");
    ch_encode(&in[2], buf, sizeof(buf));
    CHECK_STR(buf, "{\"v\":2,\"type\":\"hint\",\"session\":\"5f0c1d9e2a7b4c03\",\"seq\":42,"
                   "\"cpus\":\"0-2,7\",\"lease_ms\":3000,\"reason\":\"contention\"}\n");
    /* To a version 1 guest: the same hint in version 1 (session an extension it ignores). */
    in[2].v = 1;
    in[2].u.hint.has_session = false;
    ch_encode(&in[2], buf, sizeof(buf));
    CHECK_STR(buf, "{\"v\":1,\"type\":\"hint\",\"seq\":42,\"cpus\":\"0-2,7\",\"lease_ms\":3000,"
                   "\"reason\":\"contention\"}\n");
    ch_encode(&in[3], buf, sizeof(buf));
    CHECK_STR(buf,
              "{\"v\":2,\"type\":\"status\",\"seq\":42,\"applied\":\"0-2,7\",\"mode\":\"fallback\","
              "\"steal_pct_x100\":250}\n");
}

TEST(encode_refuses_invalid)
{
    struct ch_msg m;
    ch_cpuset set, empty;
    char buf[CH_LINE_MAX];

    ch_cpuset_fill(&set, 2);
    ch_cpuset_zero(&empty);
    ch_msg_hint(&m, 0, &set, 1000, NULL);
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_hint(&m, 1, &empty, 1000, NULL);
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_hint(&m, 1, &set, 99, NULL);
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_hint(&m, 1, &set, 600001, NULL);
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_guest_hello(&m, "g", &empty, true);
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_error(&m, 1, "Not_Kebab", "m");
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_status(&m, 1, &set, CH_MODE_HOST, 10001);
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_status(&m, 1, &empty, CH_MODE_HOST, 0); /* only "unsupported" applies nothing */
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_status(&m, 1, &empty, CH_MODE_UNSUPPORTED, 0);
    CHECK(ch_encode(&m, buf, sizeof(buf)) > 0);
    ch_msg_hint(&m, 1, &set, 1000, NULL); /* version 2 without a session */
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    ch_msg_host_hello(&m, "h"); /* announces max_v 2: must open a session */
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    m.u.hello.max_v = 1;
    CHECK(ch_encode(&m, buf, sizeof(buf)) > 0);
    ch_msg_hint(&m, 1, &set, 1000, NULL);
    m.v = 3;
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -EINVAL);
    m.v = 1;
    CHECK_INT(ch_encode(&m, buf, 8), -ENOSPC);
    CHECK_STR(buf, "");
    /* A cpulist too long for a version 1 line. */
    ch_cpuset_zero(&set);
    for (unsigned c = 0; c < CH_CPU_MAX; c += 2)
        ch_cpuset_set(&set, c);
    ch_msg_hint(&m, 1, &set, 1000, NULL);
    m.v = 1;
    CHECK_INT(ch_encode(&m, buf, sizeof(buf)), -ENOSPC);
}

TEST(constructors_sanitise_strings)
{
    struct ch_msg m;
    char buf[CH_LINE_MAX];
    char longmsg[600];

    ch_msg_error(&m, 0, "x", "line\nbreak\ttab");
    CHECK_STR(m.u.error.message, "line?break?tab");
    CHECK(ch_encode(&m, buf, sizeof(buf)) > 0);
    /* Truncation never splits a UTF-8 sequence ("é" is 2 bytes at the cut). */
    memset(longmsg, 'a', sizeof(longmsg));
    memcpy(longmsg + CH_MESSAGE_MAX - 1, "\xc3\xa9", 2);
    longmsg[sizeof(longmsg) - 1] = '\0';
    ch_msg_error(&m, 0, "x", longmsg);
    CHECK_INT(strlen(m.u.error.message), CH_MESSAGE_MAX - 1);
    int len = ch_encode(&m, buf, sizeof(buf));
    CHECK(len > 0);
    struct ch_msg out;
    CHECK_INT(ch_decode(buf, (size_t)len - 1, &out, NULL), 0);
}

TEST(names)
{
    enum ch_mode mode;

    CHECK_STR(ch_mode_name(CH_MODE_UNSUPPORTED), "unsupported");
    CHECK_INT(ch_mode_parse("fallback", &mode), 0);
    CHECK_INT(mode, CH_MODE_FALLBACK);
    CHECK_INT(ch_mode_parse("Host", &mode), -EINVAL);
    CHECK_STR(ch_msg_type_name(CH_MSG_STATUS), "status");
    CHECK_STR(ch_decode_err_code(CH_DEC_BAD_CPULIST), "bad-cpulist");
    CHECK_STR(ch_decode_err_code((enum ch_decode_err)99), "internal");
}
