// SPDX-License-Identifier: LGPL-2.1-or-later
#include "port.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "corehint/framer.h"
#include "corehint/log.h"
#include "corehint/proto.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u
#define OUT_MAX (64u << 10)
#define READ_CHUNK (64u << 10)
/* While the host side of a virtio port is closed, SIGIO says when it opens; this probe is the
 * safety net for a signal that never comes (a kernel without fasync on the port). */
#define AWAY_PROBE_MS 1000u

struct port {
    struct event_base *base;
    const struct port_ops *ops;
    void *ctx;
    char port[PATH_MAX];
    char dev_root[PATH_MAX];
    char sysfs_root[PATH_MAX];
    char path[PATH_MAX]; /* what the last open attempt resolved to */

    int fd;
    bool is_socket;
    bool broken; /* a write failed inside a callback: close once the callback returns */
    bool heard;  /* the peer sent something in this session */
    bool away;   /* virtio: the port is open, the host side is not (POLLHUP) */
    struct event *ev_read, *ev_write, *ev_retry, *ev_close;
    struct event *ev_sigio, *ev_probe; /* virtio: host side opened or closed */
    unsigned backoff_ms;
    int last_err; /* errno of the last failed attempt, to log changes only */

    struct ch_framer framer;
    char out[OUT_MAX];
    size_t out_len;
    struct port_stats stats;
};

int port_resolve(const char *port, const char *dev_root, const char *sysfs_root, char *out,
                 size_t outlen)
{
    char path[PATH_MAX];
    struct stat st;
    int n;

    if (strcmp(port, CONFIG_PORT_AUTO) != 0) {
        n = snprintf(out, outlen, "%s", port);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
    }
    n = snprintf(path, sizeof(path), "%s/virtio-ports/%s", dev_root, CH_PORT_NAME);
    if (n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0) {
        snprintf(out, outlen, "%s", path);
        return 0;
    }
    /* No udev (a minimal initramfs): find the port by its name attribute. */
    n = snprintf(path, sizeof(path), "%s/class/virtio-ports", sysfs_root);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -ENAMETOOLONG;
    DIR *d = opendir(path);
    if (!d)
        return -ENOENT;
    int rc = -ENOENT;
    const struct dirent *e;
    while ((e = readdir(d))) {
        char name_path[PATH_MAX], name[64];
        if (strncmp(e->d_name, "vport", 5) != 0)
            continue;
        n = snprintf(name_path, sizeof(name_path), "%s/%s/name", path, e->d_name);
        if (n < 0 || (size_t)n >= sizeof(name_path))
            continue;
        FILE *f = fopen(name_path, "re");
        if (!f)
            continue;
        bool match = fgets(name, sizeof(name), f) && strcspn(name, "\n") == strlen(CH_PORT_NAME) &&
                     strncmp(name, CH_PORT_NAME, strlen(CH_PORT_NAME)) == 0;
        fclose(f);
        if (!match)
            continue;
        n = snprintf(out, outlen, "%s/%s", dev_root, e->d_name);
        rc = n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
        break;
    }
    closedir(d);
    return rc;
}

static void schedule_retry(struct port *p)
{
    struct timeval tv = {.tv_sec = p->backoff_ms / 1000,
                         .tv_usec = (suseconds_t)(p->backoff_ms % 1000) * 1000};

    evtimer_add(p->ev_retry, &tv);
    p->backoff_ms = p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
}

static void close_port(struct port *p, const char *why)
{
    if (p->fd < 0)
        return;
    p->away = false;
    evtimer_del(p->ev_probe);
    /* A virtio port without a host opens and hangs up at once, every backoff period: only
     * sessions that carried something are worth an info line. */
    log_msg(p->heard || p->is_socket ? LOG_LVL_INFO : LOG_LVL_DEBUG,
            "port %s closed: %s; reopening in %u ms", p->path, why, p->backoff_ms);
    event_free(p->ev_read);
    event_free(p->ev_write);
    p->ev_read = p->ev_write = NULL;
    close(p->fd);
    p->fd = -1;
    p->out_len = 0;
    p->broken = false;
    evtimer_del(p->ev_close);
    ch_framer_reset(&p->framer);
    schedule_retry(p);
    p->ops->down(p->ctx);
}

static int flush(struct port *p)
{
    size_t off = 0;
    int rc = 0;

    while (off < p->out_len) {
        ssize_t w = p->is_socket ? send(p->fd, p->out + off, p->out_len - off, MSG_NOSIGNAL)
                                 : write(p->fd, p->out + off, p->out_len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            /* virtio: EAGAIN while no host is connected; the read side sees the hangup. */
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                rc = -errno;
            break;
        }
        if (w == 0) {
            /* virtio_console returns 0 when its queue takes nothing: retrying at once would
             * spin; EV_WRITE says when there is room. */
            p->stats.write_stalls++;
            break;
        }
        off += (size_t)w;
    }
    memmove(p->out, p->out + off, p->out_len - off);
    p->out_len -= off;
    if (rc == 0 && p->out_len && !p->away)
        event_add(p->ev_write, NULL);
    else
        event_del(p->ev_write);
    return rc;
}

static void on_broken(evutil_socket_t fd, short what, void *arg)
{
    struct port *p = arg;

    if (p->broken)
        close_port(p, "write error");
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    struct port *p = arg;
    int rc = flush(p);

    if (rc < 0)
        close_port(p, strerror(-rc));
}

static bool on_line(void *arg, const char *line, size_t len)
{
    struct port *p = arg;

    p->ops->line(p->ctx, line, len);
    return !p->broken && p->fd >= 0;
}

/*
 * SIGIO only while the host side is away.  virtio_console raises it for every buffer that
 * arrives too, and with it on during a burst of hints the port was seen to miss read wake-ups
 * (a hint read only 10 s later, in qemu-virtio-check); while away nothing arrives.
 */
static void set_async(struct port *p, bool on)
{
    int fl = fcntl(p->fd, F_GETFL);

    if (fl < 0 || fcntl(p->fd, F_SETFL, on ? fl | O_ASYNC : fl & ~O_ASYNC) < 0)
        log_msg(LOG_LVL_DEBUG, "port %s: O_ASYNC: %s", p->path, strerror(errno));
}

static void probe(struct port *p, const char *cause);

static void arm_probe(struct port *p)
{
    struct timeval tv = {AWAY_PROBE_MS / 1000, (suseconds_t)(AWAY_PROBE_MS % 1000) * 1000};

    evtimer_add(p->ev_probe, &tv);
}

/*
 * The virtio port stays open while the host side is closed, as qemu-ga keeps its own: reading
 * would return EOF at once and poll() report POLLHUP forever, so the port leaves the loop and
 * waits for SIGIO (virtio_console raises it when the host side opens or closes) or the probe.
 * Nothing is reopened, so the guest sees no open/close cycle and the host no port events.
 */
static void host_away(struct port *p)
{
    if (p->away)
        return;
    log_msg(p->heard ? LOG_LVL_INFO : LOG_LVL_DEBUG, "port %s: host side closed; waiting for it",
            p->path);
    p->away = true;
    event_del(p->ev_read);
    event_del(p->ev_write);
    p->out_len = 0; /* PROTOCOL.md 1: bytes for an absent host may be lost */
    ch_framer_reset(&p->framer);
    set_async(p, true);
    arm_probe(p);
    p->ops->down(p->ctx);
    probe(p, "at once"); /* it may have come back before SIGIO was on */
}

enum host_side { HOST_PRESENT, HOST_AWAY, HOST_GONE };

/*
 * The host side of the virtio port, by poll() without waiting: virtio_console reports
 * POLLIN|POLLHUP while the host side is closed (a read returns what is left, then 0), and
 * POLLHUP alone once the port itself is gone (hot-unplugged: a read fails with ENODEV).
 */
static enum host_side host_side(const struct port *p)
{
    struct pollfd pfd = {.fd = p->fd, .events = POLLIN | POLLOUT};

    if (poll(&pfd, 1, 0) < 0 || (pfd.revents & (POLLERR | POLLNVAL)))
        return HOST_GONE;
    if (!(pfd.revents & POLLHUP))
        return HOST_PRESENT;
    return (pfd.revents & POLLIN) ? HOST_AWAY : HOST_GONE;
}

/*
 * Lines a host wrote before it left, unread while we were away, belong to its session, not to
 * the next host's (the reopen cycle dropped them with the port).  A host arriving between the
 * poll() and this read may lose its first lines: its answer to our hello brings them back.
 */
static void discard_input(struct port *p)
{
    char buf[4096];
    ssize_t r;

    while ((r = read(p->fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
        p->stats.discarded += r > 0 ? (uint64_t)r : 0;
}

static void host_arrived(struct port *p, const char *cause)
{
    p->away = false;
    p->heard = false;
    evtimer_del(p->ev_probe);
    set_async(p, false);
    if (event_add(p->ev_read, NULL) < 0) {
        close_port(p, "cannot register events");
        return;
    }
    p->stats.arrivals++;
    log_msg(LOG_LVL_INFO, "port %s: host connected (%s)", p->path, cause);
    p->ops->up(p->ctx);
}

/* While away: has the host come back (cause: what made us look), or the port gone? */
static void probe(struct port *p, const char *cause)
{
    if (p->fd < 0 || p->is_socket || !p->away)
        return;
    switch (host_side(p)) {
    case HOST_PRESENT:
        host_arrived(p, cause);
        break;
    case HOST_AWAY:
        discard_input(p);
        arm_probe(p);
        break;
    case HOST_GONE:
        close_port(p, "port gone");
        break;
    }
}

static void on_sigio(evutil_socket_t sig, short what, void *arg)
{
    probe(arg, "SIGIO");
}

static void on_probe(evutil_socket_t fd, short what, void *arg)
{
    probe(arg, "probe");
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    static char buf[READ_CHUNK];
    struct port *p = arg;
    ssize_t r;

    do {
        r = read(p->fd, buf, sizeof(buf));
    } while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (r == 0 && !p->is_socket) {
        host_away(p);
        return;
    }
    if (r <= 0) {
        /* EOF on a socket: the peer is gone for good; an error on either: reopen. */
        close_port(p, r == 0 ? "hangup" : strerror(errno));
        return;
    }
    p->backoff_ms = BACKOFF_MIN_MS; /* the peer is really there */
    p->heard = true;
    uint64_t before = p->framer.oversized;
    ch_framer_feed(&p->framer, buf, (size_t)r, on_line, p);
    for (uint64_t i = before; p->fd >= 0 && !p->broken && i < p->framer.oversized; i++) {
        log_msg(LOG_LVL_WARN, "port %s: dropped a line longer than %u bytes", p->path, CH_LINE_MAX);
        p->ops->oversized(p->ctx);
    }
    if (p->broken)
        close_port(p, "write error");
}

void port_drain(struct port *p)
{
    /* non-blocking: EAGAIN when nothing is there; a virtio port whose host is away waits for
     * SIGIO, which says hello before anything is read */
    if (p->fd >= 0 && !p->broken && !p->away)
        on_read(p->fd, EV_READ, p);
}

static int open_path(struct port *p, bool *is_socket)
{
    struct stat st;
    int fd;

    if (stat(p->path, &st) < 0)
        return -errno;
    if (S_ISCHR(st.st_mode)) {
        *is_socket = false;
        fd = open(p->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
    }
    if (!S_ISSOCK(st.st_mode))
        return -ENOTSUP;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(p->path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, p->path);
    *is_socket = true;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* A local connect completes at once or fails (EAGAIN: backlog full) - no EINPROGRESS. */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

static void try_open(evutil_socket_t unused, short what, void *arg)
{
    struct port *p = arg;
    bool is_socket = false;
    int fd;

    if (p->fd >= 0)
        return;
    fd = port_resolve(p->port, p->dev_root, p->sysfs_root, p->path, sizeof(p->path));
    if (fd == 0)
        fd = open_path(p, &is_socket);
    if (fd < 0) {
        if (-fd != p->last_err)
            log_msg(-fd == ENOENT ? LOG_LVL_INFO : LOG_LVL_WARN,
                    "port %s: %s; retrying with backoff up to %u ms",
                    strcmp(p->port, CONFIG_PORT_AUTO) == 0 ? "auto (" CH_PORT_NAME ")" : p->path,
                    -fd == ENOTSUP ? "not a character device or UNIX socket" : strerror(-fd),
                    BACKOFF_MAX_MS);
        else
            log_msg(LOG_LVL_DEBUG, "port %s: %s", p->path, strerror(-fd));
        p->last_err = -fd;
        schedule_retry(p);
        return;
    }
    p->ev_read = event_new(p->base, fd, EV_READ | EV_PERSIST, on_read, p);
    p->ev_write = event_new(p->base, fd, EV_WRITE | EV_PERSIST, on_write, p);
    if (!is_socket && fcntl(fd, F_SETOWN, getpid()) < 0)
        log_msg(LOG_LVL_WARN, "port %s: no SIGIO (%s); noticing the host within %u ms", p->path,
                strerror(errno), AWAY_PROBE_MS);
    if (!p->ev_read || !p->ev_write || (is_socket && event_add(p->ev_read, NULL) < 0)) {
        log_msg(LOG_LVL_ERR, "port %s: cannot register events", p->path);
        event_free(p->ev_read);
        event_free(p->ev_write);
        p->ev_read = p->ev_write = NULL;
        close(fd);
        schedule_retry(p);
        return;
    }
    p->fd = fd;
    p->is_socket = is_socket;
    p->heard = false;
    p->last_err = 0;
    p->stats.opens++;
    if (is_socket)
        p->backoff_ms = BACKOFF_MIN_MS; /* somebody accepted */
    if (is_socket) {
        log_msg(LOG_LVL_INFO, "port %s connected (UNIX socket)", p->path);
        p->ops->up(p->ctx);
        return;
    }
    log_msg(LOG_LVL_INFO, "port %s open (character device)", p->path);
    p->away = true; /* until poll() says the host side is open */
    set_async(p, true);
    arm_probe(p);
    probe(p, "open");
}

struct port *port_new(struct event_base *base, const struct config *cfg, const struct port_ops *ops,
                      void *ctx)
{
    struct port *p = calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    p->base = base;
    p->ops = ops;
    p->ctx = ctx;
    p->fd = -1;
    p->backoff_ms = BACKOFF_MIN_MS;
    ch_framer_init(&p->framer);
    p->ev_retry = evtimer_new(base, try_open, p);
    p->ev_close = evtimer_new(base, on_broken, p);
    p->ev_probe = evtimer_new(base, on_probe, p);
    p->ev_sigio = evsignal_new(base, SIGIO, on_sigio, p);
    if (!p->ev_retry || !p->ev_close || !p->ev_probe || !p->ev_sigio ||
        event_add(p->ev_sigio, NULL) < 0) {
        port_free(p);
        return NULL;
    }
    port_reconfigure(p, cfg);
    return p;
}

void port_start(struct port *p)
{
    try_open(-1, 0, p);
}

void port_reconfigure(struct port *p, const struct config *cfg)
{
    bool changed = strcmp(p->port, cfg->port) != 0 || strcmp(p->dev_root, cfg->dev_root) != 0 ||
                   strcmp(p->sysfs_root, cfg->sysfs_root) != 0;

    snprintf(p->port, sizeof(p->port), "%s", cfg->port);
    snprintf(p->dev_root, sizeof(p->dev_root), "%s", cfg->dev_root);
    snprintf(p->sysfs_root, sizeof(p->sysfs_root), "%s", cfg->sysfs_root);
    if (changed && p->fd >= 0) {
        p->backoff_ms = 0; /* reopen on the next loop iteration */
        close_port(p, "port changed by configuration reload");
        p->backoff_ms = BACKOFF_MIN_MS;
    }
}

int port_send(struct port *p, const char *buf, size_t len)
{
    if (p->fd < 0 || p->broken || p->away)
        return -ENOTCONN;
    if (len > OUT_MAX - p->out_len) {
        /* The host does not read: keep what is queued (whole lines), drop this one. */
        if (p->stats.dropped_msgs++ % 1000 == 0)
            log_msg(LOG_LVL_WARN, "port %s: output buffer full, %llu message(s) dropped", p->path,
                    (unsigned long long)p->stats.dropped_msgs);
        return -ENOBUFS;
    }
    memcpy(p->out + p->out_len, buf, len);
    p->out_len += len;
    if (event_pending(p->ev_write, EV_WRITE, NULL))
        return 0; /* already waiting for room */
    int rc = flush(p);
    if (rc < 0) {
        /* Not closed here: the caller may be inside the read callback's framer loop. */
        static const struct timeval now = {0, 0};
        p->broken = true;
        evtimer_add(p->ev_close, &now);
    }
    return 0;
}

bool port_connected(const struct port *p)
{
    return p->fd >= 0 && !p->away;
}

void port_get_stats(const struct port *p, struct port_stats *out)
{
    *out = p->stats;
    out->oversized = p->framer.oversized;
    out->lines = p->framer.lines;
}

void port_free(struct port *p)
{
    if (!p)
        return;
    if (p->fd >= 0) {
        event_free(p->ev_read);
        event_free(p->ev_write);
        close(p->fd);
    }
    if (p->ev_retry)
        event_free(p->ev_retry);
    if (p->ev_close)
        event_free(p->ev_close);
    if (p->ev_probe)
        event_free(p->ev_probe);
    if (p->ev_sigio)
        event_free(p->ev_sigio);
    free(p);
}
