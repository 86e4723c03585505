// SPDX-License-Identifier: LGPL-2.1-or-later
#include "channel.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "clock.h"
#include "corehint/log.h"

#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 5000
/* Guest input held by libevent before we frame it: bounded like everything else. */
#define CHAN_IN_MAX ((size_t)64 * 1024)

uint64_t chan_session(void)
{
    static uint64_t session;
    static bool drawn;

    if (!drawn) {
        /* One random id for the process: a restarted hostd is a new session to every guest
         * (PROTOCOL.md 4.1).  getrandom() without GRND_NONBLOCK waits only for a pool that was
         * never seeded, which on a booted hypervisor has happened long ago. */
        if (getrandom(&session, sizeof(session), 0) != (ssize_t)sizeof(session)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            session = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                      ((uint64_t)getpid() << 40);
        }
        drawn = true;
    }
    return session;
}

unsigned chan_version(const struct channel *ch)
{
    return ch->has_hello ? ch_negotiate(ch->hello.max_v) : 1;
}

const char *chan_state_name(enum chan_state s)
{
    switch (s) {
    case CHAN_CONNECTING:
        return "connecting";
    case CHAN_UP:
        return "up";
    case CHAN_BACKOFF:
        return "backoff";
    }
    return "?";
}

static void connect_now(struct channel *ch);

static void close_and_retry(struct channel *ch, const char *why)
{
    struct timeval tv = {ch->backoff_ms / 1000, (long)(ch->backoff_ms % 1000) * 1000};

    if (ch->state == CHAN_UP) {
        log_msg(LOG_LVL_INFO, "%s: channel %s closed: %s", ch->name, ch->path, why);
    } else if (strcmp(ch->connect_error, why) != 0) {
        /* Each new reason once; the retries behind it only at debug level. */
        bool refused = strcmp(why, strerror(ECONNREFUSED)) == 0;
        log_msg(LOG_LVL_WARN, "%s: cannot connect to %s: %s%s", ch->name, ch->path, why,
                refused ? " (qemu's chardev takes one client: is another program connected?)" : "");
        snprintf(ch->connect_error, sizeof(ch->connect_error), "%s", why);
    } else {
        log_msg(LOG_LVL_DEBUG, "%s: cannot connect to %s: %s", ch->name, ch->path, why);
    }
    if (ch->bev) {
        bufferevent_free(ch->bev);
        ch->bev = NULL;
    }
    ch->state = CHAN_BACKOFF;
    ch->pending_len = 0; /* a new connection starts with a fresh hint */
    evtimer_del(ch->resume);
    ch_framer_reset(&ch->framer);
    evtimer_add(ch->retry, &tv);
    ch->backoff_ms = ch->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ch->backoff_ms * 2;
}

int chan_send(struct channel *ch, const struct ch_msg *m)
{
    char line[CH_LINE_MAX + 1];
    int len;

    if (ch->state != CHAN_UP) {
        ch->c.dropped_out++;
        return -ENOTCONN;
    }
    if ((len = ch_encode(m, line, sizeof(line))) < 0)
        return len;
    /* A guest that does not read must not make the host buffer without bound. */
    if (evbuffer_get_length(bufferevent_get_output(ch->bev)) + (size_t)len > CHAN_OUT_MAX) {
        ch->c.dropped_out++;
        return -ENOBUFS;
    }
    if (bufferevent_write(ch->bev, line, (size_t)len) < 0) {
        ch->c.dropped_out++;
        return -EIO;
    }
    ch->c.msgs_out++;
    return 0;
}

/*
 * The last hint seq of this process's session.  One counter for every channel, not one per
 * channel: seq must rise within a session (PROTOCOL.md 4.2), and a guest whose channel hostd
 * opens anew in the same session (the domain saved and restored, or gone from a sample and
 * back) keeps its watermark; a channel counting from 1 again had every hint refused as
 * stale-seq until it passed the old one.
 */
static uint64_t session_seq;

static int send_hint(struct channel *ch, const ch_cpuset *cpus, uint32_t lease_ms,
                     const char *reason)
{
    struct ch_msg m;
    uint64_t seq = session_seq + 1;
    int rc;

    ch_msg_hint(&m, seq, cpus, lease_ms, reason);
    m.v = chan_version(ch);
    m.u.hint.session = chan_session(); /* in version 1 an extension field, ignored */
    m.u.hint.has_session = true;
    if (ch->state == CHAN_UP && evbuffer_get_length(bufferevent_get_output(ch->bev)) > 0) {
        /* The guest has not taken what was written: this hint waits alone, and a newer one
         * replaces it.  A guest that resumes reading gets the newest lease, not a backlog. */
        if ((rc = ch_encode(&m, ch->pending, sizeof(ch->pending))) < 0)
            return rc;
        if (ch->pending_len)
            ch->c.replaced++;
        ch->pending_len = (size_t)rc;
    } else if ((rc = chan_send(ch, &m)) < 0) {
        return rc;
    }
    ch->seq = session_seq = seq;
    ch->seq_sent_ns = hd_mono_ns();
    ch->lease_ms = lease_ms;
    ch->acked = false;
    ch->error_sent = false;
    return 0;
}

int chan_send_hint(struct channel *ch, const ch_cpuset *cpus, uint32_t lease_ms, const char *reason)
{
    int rc = send_hint(ch, cpus, lease_ms, reason);

    if (rc == 0) {
        ch->last_cpus = *cpus;
        snprintf(ch->last_reason, sizeof(ch->last_reason), "%s", reason ? reason : "");
        ch->decided_ns = ch->seq_sent_ns;
        ch->decided_lease_ms = lease_ms;
    }
    return rc;
}

bool chan_silent(const struct channel *ch, uint64_t now_ns)
{
    /* A live guest acknowledges every hint; nothing valid for a whole lease means nobody is
     * applying them (the helper died, hung, or was never there). */
    return ch->last_rx_ns == 0 ||
           (ch->lease_ms && now_ns - ch->last_rx_ns > (uint64_t)ch->lease_ms * 1000000u);
}

static void send_hello(struct channel *ch)
{
    struct ch_msg m;

    ch_msg_host_hello(&m, "corehint-hostd/" COREHINT_VERSION);
    m.u.hello.session = chan_session();
    m.u.hello.has_session = true;
    if (chan_send(ch, &m) == 0)
        ch->c.hellos_out++;
}

static void reply_error(struct channel *ch, const struct ch_decode_info *info)
{
    struct ch_msg m;
    char text[CH_MESSAGE_MAX];

    /* Rate limit: one error per hint interval, and never for a guest error line. */
    if (ch->error_sent || strcmp(info->type, "error") == 0)
        return;
    snprintf(text, sizeof(text), "type \"%s\" not understood", info->type);
    ch_msg_error(&m, info->seq, ch_decode_err_code(info->err), text);
    m.v = chan_version(ch);
    if (chan_send(ch, &m) == 0)
        ch->error_sent = true;
}

/* A guest hello says the guest (re)opened its port or restarted: whatever was written before
 * may be lost (a virtio port discards what it held when the guest closes it, which it does on
 * the hangup of a host that may already be back).  The decision still in its lease goes out
 * again at once, under a new seq, instead of an interval later. */
static void resend_current(struct channel *ch)
{
    uint64_t age_ms = (hd_mono_ns() - ch->decided_ns) / 1000000u;
    ch_cpuset cpus;

    if (!ch->decided_ns || age_ms + CH_LEASE_MIN_MS > ch->decided_lease_ms)
        return;
    /* Only what the guest has online (a helper restarted after a hotplug), and only for what
     * is left of the decision's lease: a resend never makes a decision outlive it. */
    ch_cpuset_and(&cpus, &ch->last_cpus, &ch->hello.online);
    if (ch_cpuset_empty(&cpus))
        return;
    if (send_hint(ch, &cpus, ch->decided_lease_ms - (uint32_t)age_ms,
                  ch->last_reason[0] ? ch->last_reason : NULL) == 0)
        ch->c.resent++;
}

static bool on_line(void *ctx, const char *line, size_t len)
{
    struct channel *ch = ctx;
    struct ch_decode_info info;
    struct ch_msg m;

    ch->c.lines_in++;
    ch->tok_lines -= 1;
    if (ch_decode(line, len, &m, &info) < 0) {
        ch->c.malformed++;
        if (info.err == CH_DEC_UNKNOWN_TYPE || info.err == CH_DEC_UNSUPPORTED_VERSION)
            reply_error(ch, &info);
        return true;
    }
    ch->c.msgs_in++;
    ch->last_rx_ns = hd_mono_ns();
    switch (m.type) {
    case CH_MSG_HELLO:
        if (m.u.hello.role != CH_ROLE_GUEST) {
            ch->c.malformed++;
            ch->c.msgs_in--;
            break;
        }
        /* Every guest hello is answered: a guestd restarted behind a connection that stayed up
         * learns the session from it.  The guest answers only a hello that starts a session,
         * which ours does not after the first, so hellos cannot ping-pong. */
        ch->hello = m.u.hello;
        ch->has_hello = true;
        send_hello(ch);
        resend_current(ch);
        break;
    case CH_MSG_STATUS:
        ch->status = m.u.status;
        ch->has_status = true;
        if (m.u.status.seq == ch->seq && ch->seq && !ch->acked) {
            ch->acked = true;
            if (ch->on_ack)
                ch->on_ack(ch->ctx, ch, ch->seq, ch->last_rx_ns - ch->seq_sent_ns);
        }
        break;
    case CH_MSG_ERROR:
        ch->error = m.u.error;
        ch->has_error = true;
        ch->c.errors_in++;
        log_msg(LOG_LVL_DEBUG, "%s: guest error %s for hint %llu: %s", ch->name, m.u.error.code,
                (unsigned long long)m.u.error.seq, m.u.error.message);
        /* The guest never heard our hello (lost while it was away): say it again, once per
         * hint, and the next hint is in a session it knows. */
        if (strcmp(m.u.error.code, "unknown-session") == 0 && m.u.error.seq == ch->seq &&
            ch->hello_resent_seq != ch->seq) {
            ch->hello_resent_seq = ch->seq;
            send_hello(ch);
        }
        break;
    case CH_MSG_HINT:
        /* Hints only flow host -> guest. */
        ch->c.msgs_in--;
        ch->c.malformed++;
        break;
    }
    return true;
}

static void refill(struct channel *ch, uint64_t now)
{
    double dt = ch->last_refill_ns ? (double)(now - ch->last_refill_ns) / 1e9 : 1e9;

    ch->last_refill_ns = now;
    ch->tok_lines += dt * CHAN_IN_LINES_PER_S;
    if (ch->tok_lines > CHAN_IN_LINES_BURST)
        ch->tok_lines = CHAN_IN_LINES_BURST;
    ch->tok_bytes += dt * CHAN_IN_BYTES_PER_S;
    if (ch->tok_bytes > CHAN_IN_BYTES_BURST)
        ch->tok_bytes = CHAN_IN_BYTES_BURST;
}

/* Over budget with input left: stop reading until tokens for a chunk have come back. */
static void throttle(struct channel *ch, uint64_t now)
{
    struct timeval tv = {0, 100000};

    bufferevent_disable(ch->bev, EV_READ);
    evtimer_add(ch->resume, &tv);
    ch->c.throttled++;
    if (!ch->throttle_warned_ns || now - ch->throttle_warned_ns > 60000000000ull) {
        log_msg(LOG_LVL_WARN,
                "%s: guest input over budget (%u lines, %u bytes a second): reading paused "
                "(said once a minute)",
                ch->name, CHAN_IN_LINES_PER_S, CHAN_IN_BYTES_PER_S);
        ch->throttle_warned_ns = now;
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct channel *ch = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    uint64_t now = hd_mono_ns();
    char buf[4096];
    int n;

    refill(ch, now);
    while (evbuffer_get_length(in) > 0) {
        if (ch->tok_lines < 1 || ch->tok_bytes < sizeof(buf)) {
            throttle(ch, now);
            break;
        }
        if ((n = evbuffer_remove(in, buf, sizeof(buf))) <= 0)
            break;
        ch->c.bytes_in += (uint64_t)n;
        ch->tok_bytes -= n;
        ch_framer_feed(&ch->framer, buf, (size_t)n, on_line, ch);
    }
    ch->c.oversized += ch->framer.oversized - ch->framer_oversized;
    ch->framer_oversized = ch->framer.oversized;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct channel *ch = arg;

    if (!ch->bev)
        return;
    bufferevent_enable(ch->bev, EV_READ);
    on_read(ch->bev, ch); /* what is already buffered */
}

/* Everything written has gone to the socket: the hint that waited goes now. */
static void on_write(struct bufferevent *bev, void *arg)
{
    struct channel *ch = arg;

    if (!ch->pending_len)
        return;
    if (bufferevent_write(bev, ch->pending, ch->pending_len) == 0)
        ch->c.msgs_out++;
    else
        ch->c.dropped_out++;
    ch->pending_len = 0;
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct channel *ch = arg;

    if (what & BEV_EVENT_CONNECTED) {
        log_msg(LOG_LVL_INFO, "%s: channel %s connected", ch->name, ch->path);
        ch->state = CHAN_UP;
        ch->connect_error[0] = '\0';
        ch->backoff_ms = BACKOFF_MIN_MS;
        /* What the guest said counts for this connection only. */
        ch->has_hello = ch->has_status = ch->has_error = false;
        ch->last_rx_ns = 0;
        ch->up_ns = hd_mono_ns();
        ch->c.connects++;
        send_hello(ch);
        return;
    }
    if (what & BEV_EVENT_EOF)
        close_and_retry(ch, "end of file");
    else if (what & BEV_EVENT_ERROR)
        close_and_retry(ch, strerror(EVUTIL_SOCKET_ERROR()));
}

static void connect_now(struct channel *ch)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    if (strlen(ch->path) >= sizeof(sa.sun_path)) {
        close_and_retry(ch, "socket path too long");
        return;
    }
    memcpy(sa.sun_path, ch->path, strlen(ch->path) + 1);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
        close_and_retry(ch, strerror(errno));
        return;
    }
    /* The smallest send buffer the kernel allows (it rounds up to a few KiB): hints that the
     * guest does not take wait in hostd, where a newer one replaces them. */
    {
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
    }
    if (!(ch->bev = bufferevent_socket_new(ch->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
        evutil_closesocket(fd);
        close_and_retry(ch, "out of memory");
        return;
    }
    ch->state = CHAN_CONNECTING;
    bufferevent_setcb(ch->bev, on_read, on_write, on_event, ch);
    bufferevent_setwatermark(ch->bev, EV_READ, 0, CHAN_IN_MAX);
    bufferevent_enable(ch->bev, EV_READ | EV_WRITE);
    /* A UNIX connect completes or fails at once; either way the event callback reports it. */
    if (bufferevent_socket_connect(ch->bev, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        close_and_retry(ch, strerror(errno ? errno : ECONNREFUSED));
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    connect_now(arg);
}

struct channel *chan_new(struct event_base *base, const char *name, const char *path,
                         chan_ack_fn on_ack, void *ctx)
{
    struct channel *ch = calloc(1, sizeof(*ch));

    if (!ch)
        return NULL;
    ch->base = base;
    snprintf(ch->name, sizeof(ch->name), "%s", name);
    snprintf(ch->path, sizeof(ch->path), "%s", path);
    ch->backoff_ms = BACKOFF_MIN_MS;
    ch->on_ack = on_ack;
    ch->ctx = ctx;
    ch_framer_init(&ch->framer);
    if (!(ch->retry = evtimer_new(base, on_retry, ch)) ||
        !(ch->resume = evtimer_new(base, on_resume, ch))) {
        if (ch->retry)
            event_free(ch->retry);
        free(ch);
        return NULL;
    }
    connect_now(ch);
    return ch;
}

/* write() all of buf[len] to the non-blocking fd, waiting for room until deadline_ns. */
static bool write_until(int fd, const unsigned char *buf, size_t len, uint64_t deadline_ns)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        uint64_t now = hd_mono_ns();
        struct pollfd pf = {.fd = fd, .events = POLLOUT};

        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if ((n < 0 && errno != EAGAIN) || now >= deadline_ns ||
            poll(&pf, 1, (int)((deadline_ns - now + 999999) / 1000000)) <= 0)
            return false;
    }
    return true;
}

bool chan_flush(struct channel *ch, uint64_t deadline_ns)
{
    struct evbuffer *out;
    unsigned char *data;
    size_t len;
    int fd;

    if (!ch || !ch->bev || ch->state != CHAN_UP)
        return false;
    /* The bufferevent keeps its output's front frozen (only it drains it): write a copy; the
     * channel is freed next, buffer and all. */
    out = bufferevent_get_output(ch->bev);
    len = evbuffer_get_length(out);
    data = len ? evbuffer_pullup(out, -1) : NULL;
    fd = (int)bufferevent_getfd(ch->bev);
    if (fd < 0 || (len && (!data || !write_until(fd, data, len, deadline_ns))))
        return false;
    if (ch->pending_len) {
        if (!write_until(fd, (const unsigned char *)ch->pending, ch->pending_len, deadline_ns))
            return false;
        ch->c.msgs_out++;
        ch->pending_len = 0;
    }
    return true;
}

void chan_free(struct channel *ch)
{
    if (!ch)
        return;
    if (ch->bev)
        bufferevent_free(ch->bev);
    event_free(ch->retry);
    event_free(ch->resume);
    free(ch);
}
