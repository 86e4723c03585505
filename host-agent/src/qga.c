// SPDX-License-Identifier: LGPL-2.1-or-later
#include "qga.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt-qemu.h>

#include "conn.h"
#include "corehint/log.h"

struct qga_link {
    virDomainPtr dom; /* libvirt transport */
    int fd;           /* socket transport, -1 otherwise */
    struct qga_framer in;
};

void qga_base64(const unsigned char *in, size_t len, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;

    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[o] = '\0';
}

size_t qga_framer_feed(struct qga_framer *f, const char *data, size_t n)
{
    size_t room = sizeof(f->buf) - f->len;

    if (n > room)
        n = room;
    for (size_t i = 0; i < n; i++)
        f->buf[f->len + i] = (unsigned char)data[i] == 0xff ? ' ' : data[i];
    f->len += n;
    return n;
}

int qga_framer_line(struct qga_framer *f, char **line, char *err, size_t errlen)
{
    char *nl = memchr(f->buf, '\n', f->len);

    *line = NULL;
    if (nl) {
        size_t used = (size_t)(nl - f->buf) + 1;
        char *s = malloc(used);
        if (!s)
            return -ENOMEM;
        memcpy(s, f->buf, used - 1);
        s[used - 1] = '\0';
        memmove(f->buf, f->buf + used, f->len - used);
        f->len -= used;
        *line = s;
        return 0;
    }
    if (f->len == sizeof(f->buf)) {
        snprintf(err, errlen, "agent reply longer than %u bytes", QGA_REPLY_MAX - 1);
        return -EPROTO;
    }
    return -EAGAIN;
}

/* One reply line from the socket (a qga_line_fn). */
static int sock_line(void *ctx, char **line, char *err, size_t errlen)
{
    struct qga_link *l = ctx;
    char chunk[8192];

    for (;;) {
        int rc = qga_framer_line(&l->in, line, err, errlen);
        size_t room = sizeof(l->in.buf) - l->in.len;
        ssize_t n;

        if (rc != -EAGAIN)
            return rc;
        n = recv(l->fd, chunk, room < sizeof(chunk) ? room : sizeof(chunk), 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* SO_RCVTIMEO */
            snprintf(err, errlen, "agent: no reply in %d s", QGA_TIMEOUT_S);
            return -ETIMEDOUT;
        }
        if (n <= 0) {
            snprintf(err, errlen, "agent: %s", n == 0 ? "closed" : strerror(errno));
            return n == 0 ? -EPIPE : -errno;
        }
        qga_framer_feed(&l->in, chunk, (size_t)n);
    }
}

static int sock_send(struct qga_link *l, const char *cmd, char *err, size_t errlen)
{
    size_t len = strlen(cmd), off = 0;

    while (off < len) {
        ssize_t n = send(l->fd, cmd + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            snprintf(err, errlen, "agent: %s", strerror(errno));
            return -errno;
        }
        off += (size_t)n;
    }
    return send(l->fd, "\n", 1, MSG_NOSIGNAL) == 1 ? 0 : -EIO;
}

/* Run one command; *ret receives the "return" member (new reference). */
static int command(struct qga_link *l, json_object *cmd, json_object **ret, char *err,
                   size_t errlen)
{
    const char *text = json_object_to_json_string_ext(cmd, JSON_C_TO_STRING_PLAIN);
    char *reply = NULL;
    int rc = 0;

    *ret = NULL;
    if (l->dom) {
        if (!(reply = virDomainQemuAgentCommand(l->dom, text, QGA_TIMEOUT_S, 0))) {
            snprintf(err, errlen, "agent: %s", conn_error());
            log_clean(err, strlen(err)); /* libvirt quotes the agent's error desc */
            return -EIO;
        }
    } else if ((rc = sock_send(l, text, err, errlen)) < 0 ||
               (rc = sock_line(l, &reply, err, errlen)) < 0) {
        return rc;
    }
    rc = qga_reply_parse(reply, ret, err, errlen);
    free(reply);
    return rc;
}

int qga_reply_parse(const char *line, json_object **ret, char *err, size_t errlen)
{
    json_object *r = json_tokener_parse(line), *v, *desc;
    int rc = 0;

    *ret = NULL;
    if (!r || !json_object_is_type(r, json_type_object)) {
        snprintf(err, errlen, "agent: reply is not a JSON object");
        rc = -EPROTO;
    } else if (json_object_object_get_ex(r, "error", &v)) {
        const char *text = NULL;
        if (json_object_object_get_ex(v, "desc", &desc))
            text = json_object_get_string(desc);
        snprintf(err, errlen, "agent: %s", text ? text : "error");
        log_clean(err, strlen(err)); /* the guest wrote it: it may not forge a log line */
        rc = -EREMOTEIO;
    } else if (!json_object_object_get_ex(r, "return", &v)) {
        snprintf(err, errlen, "agent: reply without \"return\"");
        rc = -EPROTO;
    } else {
        *ret = json_object_get(v);
    }
    json_object_put(r);
    return rc;
}

static json_object *cmd_new(const char *execute, json_object *args)
{
    json_object *c = json_object_new_object();

    json_object_object_add(c, "execute", json_object_new_string(execute));
    if (args)
        json_object_object_add(c, "arguments", args);
    return c;
}

static bool is_id(json_object *ret, long long id)
{
    return ret && json_object_get_int64(ret) == id;
}

int qga_sync_wait(long long id, qga_line_fn *next, void *ctx, char *err, size_t errlen)
{
    json_object *ret = NULL;
    char *line = NULL;
    int rc;

    if ((rc = next(ctx, &line, err, errlen)) < 0)
        return rc;
    rc = qga_reply_parse(line, &ret, err, errlen);
    free(line);
    for (int tries = 0; rc == 0 && !is_id(ret, id) && tries < QGA_SYNC_TRIES; tries++) {
        json_object *r, *v;
        json_object_put(ret);
        ret = NULL;
        if ((rc = next(ctx, &line, err, errlen)) < 0)
            break;
        r = json_tokener_parse(line);
        if (r && json_object_object_get_ex(r, "return", &v))
            ret = json_object_get(v);
        json_object_put(r);
        free(line);
    }
    if (rc == 0 && !is_id(ret, id)) {
        snprintf(err, errlen, "agent: guest-sync did not answer");
        rc = -EPROTO;
    }
    json_object_put(ret);
    return rc;
}

/* Skip stale replies a previous, interrupted user of the socket may have left. */
static int sync_socket(struct qga_link *l, char *err, size_t errlen)
{
    long long id = (long long)time(NULL) ^ (long long)getpid();
    json_object *args = json_object_new_object(), *c;
    int rc;

    json_object_object_add(args, "id", json_object_new_int64(id));
    c = cmd_new("guest-sync", args);
    rc = sock_send(l, json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN), err, errlen);
    if (rc == 0)
        rc = qga_sync_wait(id, sock_line, l, err, errlen);
    json_object_put(c);
    return rc;
}

struct qga_link *qga_open(virConnectPtr vc, const char *uuid, const char *path, char *err,
                          size_t errlen)
{
    struct qga_link *l = calloc(1, sizeof(*l));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct timeval tv = {QGA_TIMEOUT_S, 0};

    if (!l)
        return NULL;
    l->fd = -1;
    if (vc) {
        if (!(l->dom = virDomainLookupByUUIDString(vc, uuid))) {
            snprintf(err, errlen, "no domain %s: %s", uuid, conn_error());
            free(l);
            return NULL;
        }
        return l;
    }
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "agent socket path too long");
        free(l);
        return NULL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if ((l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(l->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || sync_socket(l, err, errlen) < 0) {
        if (!err[0])
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        qga_close(l);
        return NULL;
    }
    return l;
}

void qga_close(struct qga_link *l)
{
    if (!l)
        return;
    if (l->dom)
        virDomainFree(l->dom);
    if (l->fd >= 0)
        close(l->fd);
    free(l);
}

int qga_write_preferred(struct qga_link *l, const ch_cpuset *cpus, char *err, size_t errlen)
{
    char list[CH_CPULIST_MAX_LEN + 2], *b64;
    json_object *args, *c, *ret = NULL;
    int64_t handle;
    int rc, len;

    if ((len = ch_cpulist_format(cpus, list, sizeof(list) - 1)) < 0)
        return len;
    memcpy(list + len, "\n", 2);
    len++;
    args = json_object_new_object();
    json_object_object_add(args, "path", json_object_new_string(QGA_PREFERRED_PATH));
    json_object_object_add(args, "mode", json_object_new_string("w"));
    c = cmd_new("guest-file-open", args);
    rc = command(l, c, &ret, err, errlen);
    json_object_put(c);
    if (rc < 0)
        return rc;
    handle = json_object_get_int64(ret);
    json_object_put(ret);
    if (!(b64 = malloc(4 * (((size_t)len + 2) / 3) + 1)))
        return -ENOMEM;
    qga_base64((const unsigned char *)list, (size_t)len, b64);
    /* The whole value in one write, as sysfs wants it. */
    args = json_object_new_object();
    json_object_object_add(args, "handle", json_object_new_int64(handle));
    json_object_object_add(args, "buf-b64", json_object_new_string(b64));
    free(b64);
    c = cmd_new("guest-file-write", args);
    rc = command(l, c, &ret, err, errlen);
    json_object_put(c);
    json_object_put(ret);
    args = json_object_new_object();
    json_object_object_add(args, "handle", json_object_new_int64(handle));
    c = cmd_new("guest-file-close", args);
    /* Close even after a failed write; report the first error. */
    char ignored[128] = "";
    int crc =
        rc < 0 ? command(l, c, &ret, ignored, sizeof(ignored)) : command(l, c, &ret, err, errlen);
    json_object_put(c);
    json_object_put(ret);
    return rc < 0 ? rc : crc;
}

int qga_set_vcpus(struct qga_link *l, const ch_cpuset *online, unsigned nvcpu, char *err,
                  size_t errlen)
{
    json_object *list = json_object_new_array(), *args = json_object_new_object(), *c, *ret = NULL;
    int rc;

    for (unsigned v = 1; v < nvcpu; v++) { /* vCPU 0 is never offlined */
        json_object *o = json_object_new_object();
        json_object_object_add(o, "logical-id", json_object_new_int64(v));
        json_object_object_add(o, "online", json_object_new_boolean(ch_cpuset_test(online, v)));
        json_object_array_add(list, o);
    }
    json_object_object_add(args, "vcpus", list);
    c = cmd_new("guest-set-vcpus", args);
    rc = command(l, c, &ret, err, errlen);
    json_object_put(c);
    json_object_put(ret);
    return rc;
}

int qga_apply(struct qga_link *l, enum cfg_actuator how, const ch_cpuset *cpus, unsigned nvcpu,
              char *err, size_t errlen)
{
    return how == CFG_ACT_AGENT_SYSFS ? qga_write_preferred(l, cpus, err, errlen)
                                      : qga_set_vcpus(l, cpus, nvcpu, err, errlen);
}
