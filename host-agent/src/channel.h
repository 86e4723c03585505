/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * channel: one guest's org.corehint.0 virtio-serial channel, seen from the host as the UNIX
 * socket of qemu's chardev.  Non-blocking and bounded both ways: input goes through the
 * shared line framer (4096-byte lines, longer ones dropped and counted), output stops at
 * 64 KiB of unsent bytes (further messages dropped and counted).  Every guest byte is
 * hostile: malformed lines are counted and dropped, unknown types answered with at most one
 * error per hint, and input is read within a budget (CHAN_IN_LINES_PER_S lines and
 * CHAN_IN_BYTES_PER_S bytes a second, token buckets with one burst of each): past it the
 * channel stops reading for a while, so a flooding guest is held back by its own socket
 * buffer and costs bounded CPU.  Hints are never queued behind older unsent ones: while the
 * guest has not taken what was written, the newest hint waits alone and replaces the one
 * waiting before it; the socket's send buffer is kept small so the kernel does not queue
 * them either.  The channel reconnects with backoff when the socket closes or is missing.
 */
#ifndef HOSTD_CHANNEL_H
#define HOSTD_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "corehint/framer.h"
#include "corehint/proto.h"
#include "snapshot.h"

#define CHAN_OUT_MAX ((size_t)64 * 1024)
#define CHAN_IN_LINES_PER_S 100u
#define CHAN_IN_LINES_BURST 400u
#define CHAN_IN_BYTES_PER_S (4u * 1024u * 1024u)
#define CHAN_IN_BYTES_BURST (4u * 1024u * 1024u)

enum chan_state {
    CHAN_CONNECTING,
    CHAN_UP,
    CHAN_BACKOFF, /* waiting to retry after a failure or a close */
};

struct chan_counters {
    uint64_t msgs_in;     /* valid guest messages */
    uint64_t msgs_out;    /* messages queued to the guest */
    uint64_t dropped_out; /* messages dropped: output buffer full or not connected */
    uint64_t malformed;   /* guest lines that did not decode */
    uint64_t oversized;   /* guest lines longer than CH_LINE_MAX */
    uint64_t errors_in;   /* guest error messages */
    uint64_t connects;
    uint64_t bytes_in;
    uint64_t lines_in;   /* every guest line framed, valid or not */
    uint64_t throttled;  /* times reading paused for the input budget */
    uint64_t replaced;   /* hints replaced unsent by a newer one */
    uint64_t hellos_out; /* hellos sent: one per connect, guest hello and unknown-session */
    uint64_t resent;     /* current hints sent again in answer to a guest hello */
};

struct channel;

/* A status acknowledging hint seq arrived, latency_ns after the hint was queued. */
typedef void (*chan_ack_fn)(void *ctx, struct channel *ch, uint64_t seq, uint64_t latency_ns);

struct channel {
    char name[SNAP_NAME_MAX];
    char path[SNAP_PATH_MAX];
    enum chan_state state;
    struct event_base *base;
    struct bufferevent *bev;
    struct event *retry;
    unsigned backoff_ms;
    struct ch_framer framer;
    uint64_t framer_oversized; /* framer count already added to counters */
    bool error_sent;           /* an error reply since the last hint */
    uint64_t seq;              /* last hint seq sent; increasing for the session (process) */
    uint64_t hello_resent_seq; /* the hint an unknown-session error made us say hello for */
    uint64_t seq_sent_ns;      /* when it was queued */
    uint64_t decided_ns;       /* when the engine made its last decision (a resend does not) */
    uint32_t decided_lease_ms; /* and that decision's lease */
    ch_cpuset last_cpus;       /* that decision, sent again after a guest hello */
    bool acked;                /* the guest acknowledged seq */
    bool has_hello, has_status, has_error;
    struct ch_hello hello;   /* the guest's latest hello */
    struct ch_status status; /* its latest status */
    struct ch_error error;   /* its latest error */
    uint64_t last_rx_ns;     /* CLOCK_MONOTONIC of the last valid guest message, 0 never */
    uint64_t up_ns;          /* CLOCK_MONOTONIC of the last connect */
    uint32_t lease_ms;       /* lease of the last hint sent, 0 before the first */
    char connect_error[128]; /* why the last connect failed, "" once connected */
    struct chan_counters c;
    /* input budget: tokens left, refilled from last_refill_ns */
    double tok_lines, tok_bytes;
    uint64_t last_refill_ns;
    uint64_t throttle_warned_ns;
    struct event *resume;                /* reading again after a pause for the budget */
    char last_reason[CH_REASON_MAX + 1]; /* the last decision's reason */
    /* the newest hint, waiting for the guest to take what was already written */
    char pending[CH_LINE_MAX + 1];
    size_t pending_len;
    chan_ack_fn on_ack;
    void *ctx;
};

struct channel *chan_new(struct event_base *base, const char *name, const char *path,
                         chan_ack_fn on_ack, void *ctx);
/* Write everything queued (and a hint waiting to replace it) to the socket now, waiting for
 * room until deadline_ns (hd_mono_ns()): for a clean stop, whose loop will not run again.
 * False when the guest did not take it all in time (the rest is lost with the channel). */
bool chan_flush(struct channel *ch, uint64_t deadline_ns);
void chan_free(struct channel *ch);
/* Queue a message; -ENOTCONN when not connected, -ENOBUFS when the output is full. */
int chan_send(struct channel *ch, const struct ch_msg *m);
/* Queue the next hint (seq chosen here); returns chan_send's result.  When earlier output is
 * still unsent the hint waits in its place, replacing a hint that waited there. */
int chan_send_hint(struct channel *ch, const ch_cpuset *cpus, uint32_t lease_ms,
                   const char *reason);
const char *chan_state_name(enum chan_state s);
/* This process's session id (PROTOCOL.md 4.1), drawn once from getrandom(). */
uint64_t chan_session(void);
/* The version hints are written in: min(ours, the guest's max_v) once it said hello, else 1. */
unsigned chan_version(const struct channel *ch);
/* Silent: no valid guest message ever, or none for longer than the last hint's lease. */
bool chan_silent(const struct channel *ch, uint64_t now_ns);

#endif
