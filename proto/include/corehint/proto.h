/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * corehint protocol (version 2, reading version 1): messages, their encoding and their
 * validation.  PROTOCOL.md is the normative description; this header follows it field for field.
 */
#ifndef COREHINT_PROTO_H
#define COREHINT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corehint/cpulist.h"

#define CH_PROTO_VERSION 2
#define CH_PORT_NAME "org.corehint.0"
/* One line on the wire, including its terminating '\n': what a receiver accepts and a version 2
 * line may hold.  A version 1 line (every hello among them) holds at most CH_LINE_MAX_V1. */
#define CH_LINE_MAX 32768u
#define CH_LINE_MAX_V1 4096u
#define CH_SESSION_LEN 16u /* lowercase hex digits of a session id */
#define CH_LEASE_MIN_MS 100u
#define CH_LEASE_MAX_MS 600000u
#define CH_AGENT_MAX 64u /* bytes of "agent", NUL excluded */
#define CH_REASON_MAX 64u
#define CH_CODE_MAX 32u
#define CH_MESSAGE_MAX 256u
#define CH_STEAL_MAX 10000u /* steal_pct_x100: 0..100 % */

enum ch_msg_type {
    CH_MSG_HELLO,
    CH_MSG_HINT,
    CH_MSG_STATUS,
    CH_MSG_ERROR,
};

enum ch_role {
    CH_ROLE_HOST,
    CH_ROLE_GUEST,
};

enum ch_mode {
    CH_MODE_HOST,
    CH_MODE_FALLBACK,
    CH_MODE_UNSUPPORTED,
};

struct ch_hello {
    enum ch_role role;
    char agent[CH_AGENT_MAX + 1];
    unsigned max_v; /* highest version the sender speaks; 1 when absent */
    /* host only: the session this hello opens (optional in a version 1 host's hello) */
    uint64_t session;
    bool has_session;
    /* guest only */
    ch_cpuset online;
    bool writable;
    char reason[CH_REASON_MAX + 1]; /* optional: why writable is false, "" when absent */
    /* The guest's housekeeping CPUs (online, not isolated): a preferred set must hold one.
     * Optional: when absent (has_housekeeping false) the host assumes the lowest online CPU. */
    ch_cpuset housekeeping;
    bool has_housekeeping;
};

struct ch_hint {
    uint64_t session; /* required in version 2, optional in version 1 */
    bool has_session;
    uint64_t seq;
    ch_cpuset cpus;
    uint32_t lease_ms;
    char reason[CH_REASON_MAX + 1]; /* optional, "" when absent */
};

struct ch_status {
    uint64_t seq;
    ch_cpuset applied;
    enum ch_mode mode;
    uint32_t steal_pct_x100;
};

struct ch_error {
    uint64_t seq;
    char code[CH_CODE_MAX + 1];
    char message[CH_MESSAGE_MAX + 1];
};

struct ch_msg {
    unsigned v;
    enum ch_msg_type type;
    union {
        struct ch_hello hello;
        struct ch_hint hint;
        struct ch_status status;
        struct ch_error error;
    } u;
};

/* Why a line was refused.  Each maps to the kebab-case code of an "error" reply. */
enum ch_decode_err {
    CH_DEC_OK = 0,
    CH_DEC_TOO_LONG,            /* "line-too-long" */
    CH_DEC_BAD_JSON,            /* "bad-json": not JSON, trailing bytes, NUL, bad UTF-8 */
    CH_DEC_NOT_OBJECT,          /* "not-object" */
    CH_DEC_BAD_VERSION,         /* "bad-version": "v" missing or not a positive integer */
    CH_DEC_UNSUPPORTED_VERSION, /* "unsupported-version": v > CH_PROTO_VERSION */
    CH_DEC_BAD_TYPE,            /* "bad-type": "type" missing or not a string */
    CH_DEC_UNKNOWN_TYPE,        /* "unknown-type" */
    CH_DEC_MISSING_FIELD,       /* "missing-field" */
    CH_DEC_BAD_FIELD,           /* "bad-field": wrong JSON type, out of range, too long */
    CH_DEC_BAD_CPULIST,         /* "bad-cpulist" */
};

struct ch_decode_info {
    enum ch_decode_err err;
    const char *field; /* the offending field, static storage, or NULL */
    uint64_t seq;      /* "seq" of the message when it could be read, else 0 */
    char type[16];     /* "type" when it could be read, else "" */
};

const char *ch_decode_err_code(enum ch_decode_err err);
const char *ch_msg_type_name(enum ch_msg_type t);
const char *ch_mode_name(enum ch_mode m);
/* Returns 0 and sets *out, or -EINVAL for an unknown name. */
int ch_mode_parse(const char *name, enum ch_mode *out);

/*
 * Decode one line (without its '\n'; a trailing '\r' or other JSON whitespace is allowed).
 * Returns 0 and fills *msg, or -EINVAL and describes the refusal in *info (which may be NULL).
 * Never reads beyond len; the text need not be NUL-terminated.
 */
int ch_decode(const char *line, size_t len, struct ch_msg *msg, struct ch_decode_info *info);

/*
 * Encode msg as one line of version msg->v, '\n' included, NUL-terminated.  Returns the length
 * written (without the NUL), -EINVAL when msg breaks a rule of the protocol (seq 0 in a hint,
 * empty cpus, lease out of range, a version 2 hint without session, ...), or -ENOSPC when it
 * does not fit in size bytes or in its version's line limit (ch_line_max()).
 */
int ch_encode(const struct ch_msg *msg, char *buf, size_t size);

/* The longest line, '\n' included, a message of version v may be written as. */
size_t ch_line_max(unsigned v);
/* The version two peers write after both hellos: min(ours, theirs). */
unsigned ch_negotiate(unsigned peer_max_v);
/* A session id as its 16 lowercase hex digits; out holds CH_SESSION_LEN + 1 bytes. */
void ch_session_format(uint64_t session, char *out);

/* Convenience constructors; strings are truncated to their field's limit.  Hellos are version
 * 1 (every peer reads them), the rest CH_PROTO_VERSION: set m->v to the negotiated version. */
void ch_msg_host_hello(struct ch_msg *m, const char *agent);
void ch_msg_guest_hello(struct ch_msg *m, const char *agent, const ch_cpuset *online,
                        bool writable);
void ch_msg_hint(struct ch_msg *m, uint64_t seq, const ch_cpuset *cpus, uint32_t lease_ms,
                 const char *reason);
void ch_msg_status(struct ch_msg *m, uint64_t seq, const ch_cpuset *applied, enum ch_mode mode,
                   uint32_t steal_pct_x100);
void ch_msg_error(struct ch_msg *m, uint64_t seq, const char *code, const char *message);

#endif
