// SPDX-License-Identifier: LGPL-2.1-or-later
/* Encoding and validation of protocol messages, versions 1 and 2 (PROTOCOL.md). */
#include "corehint/proto.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* Messages are flat objects; PROTOCOL.md allows nesting to this depth for extensions. */
#define MAX_NESTING 3
/* json-c's own limit, a backstop behind lex(), which enforces MAX_NESTING exactly. */
#define JSON_DEPTH 8

static void json_put(json_object **o)
{
    if (*o)
        json_object_put(*o);
}
#define AUTO_JSON __attribute__((cleanup(json_put)))

static const char *const err_codes[] = {
    [CH_DEC_OK] = "ok",
    [CH_DEC_TOO_LONG] = "line-too-long",
    [CH_DEC_BAD_JSON] = "bad-json",
    [CH_DEC_NOT_OBJECT] = "not-object",
    [CH_DEC_BAD_VERSION] = "bad-version",
    [CH_DEC_UNSUPPORTED_VERSION] = "unsupported-version",
    [CH_DEC_BAD_TYPE] = "bad-type",
    [CH_DEC_UNKNOWN_TYPE] = "unknown-type",
    [CH_DEC_MISSING_FIELD] = "missing-field",
    [CH_DEC_BAD_FIELD] = "bad-field",
    [CH_DEC_BAD_CPULIST] = "bad-cpulist",
};

static const char *const type_names[] = {
    [CH_MSG_HELLO] = "hello",
    [CH_MSG_HINT] = "hint",
    [CH_MSG_STATUS] = "status",
    [CH_MSG_ERROR] = "error",
};

static const char *const mode_names[] = {
    [CH_MODE_HOST] = "host",
    [CH_MODE_FALLBACK] = "fallback",
    [CH_MODE_UNSUPPORTED] = "unsupported",
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *ch_decode_err_code(enum ch_decode_err err)
{
    return (unsigned)err < ARRAY_LEN(err_codes) ? err_codes[err] : "internal";
}

const char *ch_msg_type_name(enum ch_msg_type t)
{
    return (unsigned)t < ARRAY_LEN(type_names) ? type_names[t] : "?";
}

const char *ch_mode_name(enum ch_mode m)
{
    return (unsigned)m < ARRAY_LEN(mode_names) ? mode_names[m] : "?";
}

int ch_mode_parse(const char *name, enum ch_mode *out)
{
    for (unsigned i = 0; i < ARRAY_LEN(mode_names); i++) {
        if (strcmp(name, mode_names[i]) == 0) {
            *out = (enum ch_mode)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* ---- decoding ---------------------------------------------------------------------------- */

struct dec {
    json_object *obj;
    struct ch_decode_info *info;
    bool overflow; /* the text holds an integer literal above UINT64_MAX */
};

static int refuse(struct dec *d, enum ch_decode_err err, const char *field)
{
    d->info->err = err;
    d->info->field = field;
    return -EINVAL;
}

/* An unsigned integer field in [min, max]; absent is an error unless optional. */
static int get_uint(struct dec *d, const char *key, uint64_t min, uint64_t max, bool optional,
                    uint64_t *out)
{
    json_object *f;

    if (!json_object_object_get_ex(d->obj, key, &f))
        return optional ? 1 : refuse(d, CH_DEC_MISSING_FIELD, key);
    if (!json_object_is_type(f, json_type_int) || json_object_get_int64(f) < 0)
        return refuse(d, CH_DEC_BAD_FIELD, key);
    errno = 0;
    uint64_t v = json_object_get_uint64(f);
    /* json-c saturates literals above UINT64_MAX instead of failing; lex() noticed them. */
    if (errno || v < min || v > max || (v == UINT64_MAX && d->overflow))
        return refuse(d, CH_DEC_BAD_FIELD, key);
    *out = v;
    return 0;
}

static bool printable(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* A string of 1..max bytes without control characters, copied into out[max + 1]. */
static int get_str(struct dec *d, const char *key, size_t max, bool optional, char *out)
{
    json_object *f;

    out[0] = '\0';
    if (!json_object_object_get_ex(d->obj, key, &f))
        return optional ? 1 : refuse(d, CH_DEC_MISSING_FIELD, key);
    if (!json_object_is_type(f, json_type_string))
        return refuse(d, CH_DEC_BAD_FIELD, key);
    const char *s = json_object_get_string(f);
    size_t len = (size_t)json_object_get_string_len(f);
    if (len == 0 || len > max || !printable(s, len))
        return refuse(d, CH_DEC_BAD_FIELD, key);
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

static int get_cpulist(struct dec *d, const char *key, bool nonempty, ch_cpuset *out)
{
    json_object *f;

    if (!json_object_object_get_ex(d->obj, key, &f))
        return refuse(d, CH_DEC_MISSING_FIELD, key);
    if (!json_object_is_type(f, json_type_string))
        return refuse(d, CH_DEC_BAD_FIELD, key);
    if (ch_cpulist_parse(json_object_get_string(f), (size_t)json_object_get_string_len(f), out) <
            0 ||
        (nonempty && ch_cpuset_empty(out)))
        return refuse(d, CH_DEC_BAD_CPULIST, key);
    return 0;
}

static int get_bool(struct dec *d, const char *key, bool *out)
{
    json_object *f;

    if (!json_object_object_get_ex(d->obj, key, &f))
        return refuse(d, CH_DEC_MISSING_FIELD, key);
    if (!json_object_is_type(f, json_type_boolean))
        return refuse(d, CH_DEC_BAD_FIELD, key);
    *out = json_object_get_boolean(f);
    return 0;
}

/* A session id: exactly CH_SESSION_LEN lowercase hex digits.  Returns 1 when absent. */
static int get_session(struct dec *d, const char *key, bool required, uint64_t *out, bool *has)
{
    char text[CH_SESSION_LEN + 1];
    int rc = get_str(d, key, CH_SESSION_LEN, !required, text);

    *has = false;
    if (rc != 0)
        return rc;
    uint64_t v = 0;
    if (strlen(text) != CH_SESSION_LEN)
        return refuse(d, CH_DEC_BAD_FIELD, key);
    for (const char *c = text; *c; c++) {
        if (*c >= '0' && *c <= '9')
            v = v << 4 | (uint64_t)(*c - '0');
        else if (*c >= 'a' && *c <= 'f')
            v = v << 4 | (uint64_t)(*c - 'a' + 10);
        else
            return refuse(d, CH_DEC_BAD_FIELD, key);
    }
    *out = v;
    *has = true;
    return 0;
}

static bool kebab(const char *s)
{
    if (*s == '-' || *s == '\0')
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return s[-1] != '-';
}

static int decode_hello(struct dec *d, unsigned v, struct ch_hello *h)
{
    char role[8];
    uint64_t max_v = 1;

    if (get_str(d, "role", sizeof(role) - 1, false, role) < 0)
        return -EINVAL;
    if (strcmp(role, "host") == 0)
        h->role = CH_ROLE_HOST;
    else if (strcmp(role, "guest") == 0)
        h->role = CH_ROLE_GUEST;
    else
        return refuse(d, CH_DEC_BAD_FIELD, "role");
    if (get_str(d, "agent", CH_AGENT_MAX, false, h->agent) < 0)
        return -EINVAL;
    if (get_uint(d, "max_v", 1, 1000, true, &max_v) < 0)
        return -EINVAL;
    h->max_v = (unsigned)max_v;
    if (h->role == CH_ROLE_HOST) {
        /* A host that speaks version 2 opens a session with every hello it sends. */
        bool need = v >= 2 || h->max_v >= 2;
        return get_session(d, "session", need, &h->session, &h->has_session) < 0 ? -EINVAL : 0;
    }
    if (get_cpulist(d, "online", true, &h->online) < 0)
        return -EINVAL;
    if (get_bool(d, "writable", &h->writable) < 0)
        return -EINVAL;
    if (get_str(d, "reason", CH_REASON_MAX, true, h->reason) < 0)
        return -EINVAL;
    h->has_housekeeping = json_object_object_get_ex(d->obj, "housekeeping", NULL);
    if (!h->has_housekeeping)
        return 0;
    if (get_cpulist(d, "housekeeping", true, &h->housekeeping) < 0)
        return -EINVAL;
    if (!ch_cpuset_subset(&h->housekeeping, &h->online))
        return refuse(d, CH_DEC_BAD_CPULIST, "housekeeping");
    return 0;
}

static int decode_hint(struct dec *d, unsigned v, struct ch_hint *h)
{
    uint64_t lease;

    if (get_uint(d, "seq", 1, UINT64_MAX, false, &h->seq) < 0)
        return -EINVAL;
    d->info->seq = h->seq;
    if (get_session(d, "session", v >= 2, &h->session, &h->has_session) < 0 ||
        get_cpulist(d, "cpus", true, &h->cpus) < 0 ||
        get_uint(d, "lease_ms", CH_LEASE_MIN_MS, CH_LEASE_MAX_MS, false, &lease) < 0 ||
        get_str(d, "reason", CH_REASON_MAX, true, h->reason) < 0)
        return -EINVAL;
    h->lease_ms = (uint32_t)lease;
    return 0;
}

static int decode_status(struct dec *d, struct ch_status *s)
{
    char mode[16];
    uint64_t steal;

    if (get_uint(d, "seq", 0, UINT64_MAX, false, &s->seq) < 0)
        return -EINVAL;
    d->info->seq = s->seq;
    if (get_cpulist(d, "applied", false, &s->applied) < 0 ||
        get_str(d, "mode", sizeof(mode) - 1, false, mode) < 0)
        return -EINVAL;
    if (ch_mode_parse(mode, &s->mode) < 0)
        return refuse(d, CH_DEC_BAD_FIELD, "mode");
    /* Only a guest that applies nothing (mode unsupported) has an empty set in force. */
    if (ch_cpuset_empty(&s->applied) && s->mode != CH_MODE_UNSUPPORTED)
        return refuse(d, CH_DEC_BAD_CPULIST, "applied");
    if (get_uint(d, "steal_pct_x100", 0, CH_STEAL_MAX, false, &steal) < 0)
        return -EINVAL;
    s->steal_pct_x100 = (uint32_t)steal;
    return 0;
}

static int decode_error(struct dec *d, struct ch_error *e)
{
    if (get_uint(d, "seq", 0, UINT64_MAX, false, &e->seq) < 0)
        return -EINVAL;
    d->info->seq = e->seq;
    if (get_str(d, "code", CH_CODE_MAX, false, e->code) < 0)
        return -EINVAL;
    if (!kebab(e->code))
        return refuse(d, CH_DEC_BAD_FIELD, "code");
    return get_str(d, "message", CH_MESSAGE_MAX, false, e->message);
}

static bool json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * What json-c's strict mode still lets through: single-quoted strings and integer literals too
 * large for uint64_t (saturated).  Outside strings only JSON's own characters may appear, and
 * objects and arrays nest at most MAX_NESTING deep.
 */
static bool lex(const char *s, size_t len, bool *overflow)
{
    static const char outside[] = "{}[]:,-+.eE0123456789truefalsn \t\r\n";
    bool in_str = false, esc = false;
    int depth = 0;

    *overflow = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];

        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            continue;
        }
        if (!strchr(outside, c))
            return false;
        if ((c == '{' || c == '[') && ++depth > MAX_NESTING)
            return false;
        if (c == '}' || c == ']')
            depth--;
        if (c >= '0' && c <= '9') {
            size_t j = i;
            while (j < len && s[j] >= '0' && s[j] <= '9')
                j++;
            size_t n = j - i;
            if (n > 20 || (n == 20 && memcmp(s + i, "18446744073709551615", 20) > 0))
                *overflow = true;
            i = j - 1;
        }
    }
    return true;
}

int ch_decode(const char *line, size_t len, struct ch_msg *msg, struct ch_decode_info *info)
{
    struct ch_decode_info scratch = {0};
    AUTO_JSON json_object *obj = NULL;
    json_object *f;
    struct dec d = {.info = info ? info : &scratch};
    uint64_t v;

    memset(d.info, 0, sizeof(*d.info));
    memset(msg, 0, sizeof(*msg));
    if (len >= CH_LINE_MAX)
        return refuse(&d, CH_DEC_TOO_LONG, NULL);
    if (len == 0 || memchr(line, '\0', len) || !lex(line, len, &d.overflow))
        return refuse(&d, CH_DEC_BAD_JSON, NULL);

    json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
    if (!tok)
        return -ENOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    obj = json_tokener_parse_ex(tok, line, (int)len);
    size_t end = json_tokener_get_parse_end(tok);
    bool ok = obj && json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    if (!ok)
        return refuse(&d, CH_DEC_BAD_JSON, NULL);
    while (end < len && json_space(line[end]))
        end++;
    if (end != len)
        return refuse(&d, CH_DEC_BAD_JSON, NULL);
    if (!json_object_is_type(obj, json_type_object))
        return refuse(&d, CH_DEC_NOT_OBJECT, NULL);
    d.obj = obj;

    /* "type" first, so a receiver knows not to answer an error line, whatever its "v". */
    const char *type = NULL;
    if (json_object_object_get_ex(obj, "type", &f) && json_object_is_type(f, json_type_string) &&
        strlen(json_object_get_string(f)) == (size_t)json_object_get_string_len(f)) {
        type = json_object_get_string(f);
        snprintf(d.info->type, sizeof(d.info->type), "%s", type);
        if (!printable(d.info->type, strlen(d.info->type)))
            d.info->type[0] = '\0';
    }

    if (!json_object_object_get_ex(obj, "v", &f))
        return refuse(&d, CH_DEC_BAD_VERSION, "v");
    if (get_uint(&d, "v", 1, UINT64_MAX, false, &v) < 0)
        return refuse(&d, CH_DEC_BAD_VERSION, "v");
    if (v > CH_PROTO_VERSION)
        return refuse(&d, CH_DEC_UNSUPPORTED_VERSION, "v");
    msg->v = (unsigned)v;
    if (len >= ch_line_max(msg->v))
        return refuse(&d, CH_DEC_TOO_LONG, NULL);

    /* A NUL inside the string ("hint\u0000x") is not the type it starts with. */
    if (!type)
        return refuse(&d, CH_DEC_BAD_TYPE, "type");

    if (strcmp(type, "hello") == 0) {
        msg->type = CH_MSG_HELLO;
        return decode_hello(&d, msg->v, &msg->u.hello);
    }
    if (strcmp(type, "hint") == 0) {
        msg->type = CH_MSG_HINT;
        return decode_hint(&d, msg->v, &msg->u.hint);
    }
    if (strcmp(type, "status") == 0) {
        msg->type = CH_MSG_STATUS;
        return decode_status(&d, &msg->u.status);
    }
    if (strcmp(type, "error") == 0) {
        msg->type = CH_MSG_ERROR;
        return decode_error(&d, &msg->u.error);
    }
    /* Read seq when there is one so the error reply can name it. */
    if (json_object_object_get_ex(obj, "seq", &f) && json_object_is_type(f, json_type_int) &&
        json_object_get_int64(f) > 0)
        d.info->seq = json_object_get_uint64(f);
    return refuse(&d, CH_DEC_UNKNOWN_TYPE, "type");
}

/* ---- encoding ---------------------------------------------------------------------------- */

static int add(json_object *o, const char *key, json_object *val)
{
    if (!val || json_object_object_add(o, key, val) < 0) {
        json_object_put(val);
        return -ENOMEM;
    }
    return 0;
}

static int add_cpulist(json_object *o, const char *key, const ch_cpuset *set)
{
    char buf[CH_LINE_MAX];

    if (ch_cpulist_format(set, buf, sizeof(buf)) < 0)
        return -ENOSPC;
    return add(o, key, json_object_new_string(buf));
}

static int add_u64(json_object *o, const char *key, uint64_t v)
{
    return add(o, key, json_object_new_uint64(v));
}

static int add_session(json_object *o, uint64_t session)
{
    char text[CH_SESSION_LEN + 1];

    ch_session_format(session, text);
    return add(o, "session", json_object_new_string(text));
}

static bool valid_str(const char *s, size_t max, bool allow_empty)
{
    size_t len = strnlen(s, max + 1);

    return len <= max && (allow_empty || len > 0) && printable(s, len);
}

static int encode_body(const struct ch_msg *m, json_object *o)
{
    int rc;

    switch (m->type) {
    case CH_MSG_HELLO: {
        const struct ch_hello *h = &m->u.hello;
        if (!valid_str(h->agent, CH_AGENT_MAX, false))
            return -EINVAL;
        if ((rc = add(o, "role",
                      json_object_new_string(h->role == CH_ROLE_HOST ? "host" : "guest"))) ||
            (rc = add(o, "agent", json_object_new_string(h->agent))))
            return rc;
        if (h->max_v > 1 && (rc = add_u64(o, "max_v", h->max_v)))
            return rc;
        if (h->role == CH_ROLE_HOST) {
            if (!h->has_session)
                return m->v >= 2 || h->max_v >= 2 ? -EINVAL : 0;
            return add_session(o, h->session);
        }
        if (ch_cpuset_empty(&h->online))
            return -EINVAL;
        if ((rc = add_cpulist(o, "online", &h->online)))
            return rc;
        if (h->has_housekeeping) {
            if (ch_cpuset_empty(&h->housekeeping) ||
                !ch_cpuset_subset(&h->housekeeping, &h->online))
                return -EINVAL;
            if ((rc = add_cpulist(o, "housekeeping", &h->housekeeping)))
                return rc;
        }
        if (!valid_str(h->reason, CH_REASON_MAX, true))
            return -EINVAL;
        if (h->reason[0] && (rc = add(o, "reason", json_object_new_string(h->reason))))
            return rc;
        return add(o, "writable", json_object_new_boolean(h->writable));
    }
    case CH_MSG_HINT: {
        const struct ch_hint *h = &m->u.hint;
        if (h->seq == 0 || ch_cpuset_empty(&h->cpus) || h->lease_ms < CH_LEASE_MIN_MS ||
            h->lease_ms > CH_LEASE_MAX_MS || !valid_str(h->reason, CH_REASON_MAX, true) ||
            (m->v >= 2 && !h->has_session))
            return -EINVAL;
        if (h->has_session && (rc = add_session(o, h->session)))
            return rc;
        if ((rc = add_u64(o, "seq", h->seq)) || (rc = add_cpulist(o, "cpus", &h->cpus)) ||
            (rc = add_u64(o, "lease_ms", h->lease_ms)))
            return rc;
        return h->reason[0] ? add(o, "reason", json_object_new_string(h->reason)) : 0;
    }
    case CH_MSG_STATUS: {
        const struct ch_status *s = &m->u.status;
        if (s->steal_pct_x100 > CH_STEAL_MAX || (unsigned)s->mode > CH_MODE_UNSUPPORTED ||
            (ch_cpuset_empty(&s->applied) && s->mode != CH_MODE_UNSUPPORTED))
            return -EINVAL;
        if ((rc = add_u64(o, "seq", s->seq)) || (rc = add_cpulist(o, "applied", &s->applied)) ||
            (rc = add(o, "mode", json_object_new_string(ch_mode_name(s->mode)))))
            return rc;
        return add_u64(o, "steal_pct_x100", s->steal_pct_x100);
    }
    case CH_MSG_ERROR: {
        const struct ch_error *e = &m->u.error;
        if (!valid_str(e->code, CH_CODE_MAX, false) || !kebab(e->code) ||
            !valid_str(e->message, CH_MESSAGE_MAX, false))
            return -EINVAL;
        if ((rc = add_u64(o, "seq", e->seq)) ||
            (rc = add(o, "code", json_object_new_string(e->code))))
            return rc;
        return add(o, "message", json_object_new_string(e->message));
    }
    }
    return -EINVAL;
}

int ch_encode(const struct ch_msg *m, char *buf, size_t size)
{
    AUTO_JSON json_object *o = json_object_new_object();
    int rc;

    if (size)
        buf[0] = '\0';
    if (!o)
        return -ENOMEM;
    if ((unsigned)m->type > CH_MSG_ERROR || m->v < 1 || m->v > CH_PROTO_VERSION)
        return -EINVAL;
    if ((rc = add(o, "v", json_object_new_int((int)m->v))) ||
        (rc = add(o, "type", json_object_new_string(type_names[m->type]))) ||
        (rc = encode_body(m, o)))
        return rc;

    size_t len;
    const char *text = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!text)
        return -ENOMEM;
    if (len + 1 > ch_line_max(m->v) || len + 2 > size)
        return -ENOSPC;
    memcpy(buf, text, len);
    buf[len] = '\n';
    buf[len + 1] = '\0';
    return (int)len + 1;
}

size_t ch_line_max(unsigned v)
{
    return v >= 2 ? CH_LINE_MAX : CH_LINE_MAX_V1;
}

unsigned ch_negotiate(unsigned peer_max_v)
{
    return peer_max_v < CH_PROTO_VERSION ? (peer_max_v ? peer_max_v : 1) : CH_PROTO_VERSION;
}

void ch_session_format(uint64_t session, char *out)
{
    snprintf(out, CH_SESSION_LEN + 1, "%016llx", (unsigned long long)session);
}

/* ---- constructors ------------------------------------------------------------------------ */

/* Copy at most cap - 1 bytes, never ending inside a UTF-8 sequence; control bytes become '?'. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;

    if (src && src[n] != '\0')
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    for (size_t i = 0; i < n; i++)
        dst[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ? '?' : src[i];
    dst[n] = '\0';
}

void ch_msg_host_hello(struct ch_msg *m, const char *agent)
{
    memset(m, 0, sizeof(*m));
    m->v = 1; /* hellos are version 1: every peer reads them */
    m->type = CH_MSG_HELLO;
    m->u.hello.role = CH_ROLE_HOST;
    m->u.hello.max_v = CH_PROTO_VERSION;
    copy_str(m->u.hello.agent, sizeof(m->u.hello.agent), agent);
}

void ch_msg_guest_hello(struct ch_msg *m, const char *agent, const ch_cpuset *online, bool writable)
{
    ch_msg_host_hello(m, agent);
    m->u.hello.role = CH_ROLE_GUEST;
    m->u.hello.online = *online;
    m->u.hello.writable = writable;
}

void ch_msg_hint(struct ch_msg *m, uint64_t seq, const ch_cpuset *cpus, uint32_t lease_ms,
                 const char *reason)
{
    memset(m, 0, sizeof(*m));
    m->v = CH_PROTO_VERSION;
    m->type = CH_MSG_HINT;
    m->u.hint.seq = seq;
    m->u.hint.cpus = *cpus;
    m->u.hint.lease_ms = lease_ms;
    copy_str(m->u.hint.reason, sizeof(m->u.hint.reason), reason);
}

void ch_msg_status(struct ch_msg *m, uint64_t seq, const ch_cpuset *applied, enum ch_mode mode,
                   uint32_t steal_pct_x100)
{
    memset(m, 0, sizeof(*m));
    m->v = CH_PROTO_VERSION;
    m->type = CH_MSG_STATUS;
    m->u.status.seq = seq;
    m->u.status.applied = *applied;
    m->u.status.mode = mode;
    m->u.status.steal_pct_x100 = steal_pct_x100;
}

void ch_msg_error(struct ch_msg *m, uint64_t seq, const char *code, const char *message)
{
    memset(m, 0, sizeof(*m));
    m->v = CH_PROTO_VERSION;
    m->type = CH_MSG_ERROR;
    m->u.error.seq = seq;
    copy_str(m->u.error.code, sizeof(m->u.error.code), code);
    copy_str(m->u.error.message, sizeof(m->u.error.message), message);
}
