// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * corehintctl: the operator's view of a running corehint-hostd, read from its HTTP endpoint
 * (/status and /metrics, metrics_listen in hostd.conf).  It only reads: hostd's endpoint
 * accepts GET and HEAD and nothing else.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/socket.h>

#include <json-c/json.h>

#include "config.h"
#include "corehint/log.h"

#define BODY_MAX ((size_t)64 << 20)

/* Set by SIGINT/SIGTERM in watch: a wait in progress gives up at once. */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

struct ctl {
    char endpoint[160]; /* ADDR:PORT */
    bool endpoint_given;
    const char *config;
    bool json;
    double timeout_s;
    double interval_s; /* watch: 0 = hostd's own interval */
    unsigned count;    /* watch: 0 = until interrupted */
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: corehintctl [OPTIONS] COMMAND [ARG]\n"
            "\n"
            "What a running corehint-hostd measures and decides, from its HTTP endpoint.\n"
            "\n"
            "Commands:\n"
            "  status         host CPUs, pools and one line per VM: demand, decided and applied\n"
            "                 preferred vCPUs, the guest's mode, compliance (the default)\n"
            "  watch          status again every interval, like top (Ctrl-C ends it)\n"
            "  domain VM      one VM by name or UUID: per-vCPU run and wait, the decision and\n"
            "                 why, what the guest acknowledged, enforcement\n"
            "  metrics        the Prometheus text of /metrics\n"
            "\n"
            "Options:\n"
            "  -e, --endpoint ADDR:PORT  hostd's endpoint (default: metrics_listen of the\n"
            "                            configuration file, else " CFG_DEFAULT_LISTEN ")\n"
            "  -c, --config FILE         hostd's configuration file (default " CFG_DEFAULT_FILE
            ")\n"
            "  -j, --json                status and domain as JSON, for scripts\n"
            "  -t, --timeout SEC         give up on hostd after SEC seconds (default 5)\n"
            "  -i, --interval SEC        watch: refresh every SEC seconds (default: hostd's\n"
            "                            sampling interval)\n"
            "  -n, --count N             watch: stop after N refreshes\n"
            "  -h, --help                this text\n"
            "  -V, --version             the version\n"
            "\n"
            "Exit status: 0 done, 1 hostd unreachable or the VM unknown, 2 bad usage.\n");
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Wait for fd to be ready for events until deadline (CLOCK_MONOTONIC ms): 0, -ETIMEDOUT, or
 * -EINTR once a signal asked to stop. */
static int wait_fd(int fd, short events, double deadline_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int rc;

    do {
        double now = now_ms();
        if (stop)
            return -EINTR;
        if (now >= deadline_ms)
            return -ETIMEDOUT;
        rc = poll(&p, 1, (int)(deadline_ms - now) + 1);
    } while (rc < 0 && errno == EINTR);
    return rc > 0 ? 0 : rc == 0 ? -ETIMEDOUT : -errno;
}

/* Connect to addr:port before the deadline, trying each of its addresses; -errno. */
static int dial(const char *addr, unsigned port, double deadline_ms, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    char service[8];
    int rc, fd = -1, last = ECONNREFUSED;

    snprintf(service, sizeof(service), "%u", port);
    if ((rc = getaddrinfo(addr, service, &hints, &res)) != 0) {
        snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
        return -EINVAL;
    }
    for (ai = res; ai && last != EINTR; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            socklen_t len = sizeof(last);
            if ((rc = wait_fd(fd, POLLOUT, deadline_ms)) < 0)
                last = -rc;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &last, &len) == 0 && last == 0)
                break;
        } else {
            last = errno;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "%s", last == ETIMEDOUT ? "no answer in time" : strerror(last));
        return -last;
    }
    return fd;
}

/* After a send() or recv() that returned n: 0 when it moved data, 1 when it is to be tried
 * again (the socket was waited for), -errno when it failed or time ran out. */
static int io_result(ssize_t n, int fd, short events, double deadline_ms)
{
    int rc;

    if (n >= 0)
        return 0;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return -errno;
    return (rc = wait_fd(fd, events, deadline_ms)) < 0 ? rc : 1;
}

/*
 * GET path from the endpoint: 0 and the body (NUL-terminated, the caller frees it) on a 200;
 * -errno with the reason in err otherwise.
 */
static int http_get(const struct ctl *c, const char *path, char **body, char *err, size_t errlen)
{
    char addr[128], req[512], *buf = NULL;
    size_t len = 0, cap = 0;
    unsigned port;
    double deadline;
    int fd, rc;

    *body = NULL;
    if (cfg_split_listen(c->endpoint, addr, sizeof(addr), &port, err, errlen) < 0)
        return -EINVAL;
    /* hostd listening on every address answers on loopback */
    if (!addr[0] || strcmp(addr, "0.0.0.0") == 0)
        snprintf(addr, sizeof(addr), "127.0.0.1");
    else if (strcmp(addr, "::") == 0)
        snprintf(addr, sizeof(addr), "::1");
    deadline = now_ms() + c->timeout_s * 1e3;
    if ((fd = dial(addr, port, deadline, err, errlen)) < 0)
        return fd;
    snprintf(
        req, sizeof(req),
        "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: corehintctl/%s\r\nConnection: close\r\n\r\n",
        path, c->endpoint, COREHINT_VERSION);
    for (size_t off = 0, n = strlen(req); off < n;) {
        ssize_t w = send(fd, req + off, n - off, MSG_NOSIGNAL);
        if ((rc = io_result(w, fd, POLLOUT, deadline)) < 0)
            goto io_error;
        if (rc == 0)
            off += (size_t)w;
    }
    for (;;) {
        ssize_t r;

        if (len == cap) {
            char *nb;
            if (cap > BODY_MAX) {
                snprintf(err, errlen, "answer longer than %zu bytes", BODY_MAX);
                rc = -EFBIG;
                goto out;
            }
            cap = cap ? cap * 2 : (size_t)1 << 17;
            if (cap > BODY_MAX)
                cap = BODY_MAX + 1; /* one byte more tells a longer answer */
            if (!(nb = realloc(buf, cap + 1))) {
                rc = -ENOMEM;
                snprintf(err, errlen, "%s", strerror(ENOMEM));
                goto out;
            }
            buf = nb;
        }
        r = recv(fd, buf + len, cap - len, 0);
        if (r == 0)
            break;
        if ((rc = io_result(r, fd, POLLIN, deadline)) < 0)
            goto io_error;
        if (rc == 0)
            len += (size_t)r;
    }
    buf[len] = '\0';
    if (memchr(buf, '\0', len)) {
        snprintf(err, errlen, "the answer holds a NUL byte (is this hostd's metrics_listen?)");
        rc = -EPROTO;
        goto out;
    }
    {
        long status = 0;
        char *start = strstr(buf, "\r\n\r\n"), *sp = strchr(buf, ' '), *end = NULL;
        if (sp && strncmp(buf, "HTTP/1.", 7) == 0 && sp - buf == 8)
            status = strtol(sp + 1, &end, 10);
        if (!end || end != sp + 4 || !start) {
            snprintf(err, errlen, "not an HTTP answer (is this hostd's metrics_listen?)");
            rc = -EPROTO;
            goto out;
        }
        if (status != 200) {
            char *eol = strstr(buf, "\r\n");
            *eol = '\0';
            snprintf(err, errlen, "%s answered \"%s\"", path, buf);
            rc = -EPROTO;
            goto out;
        }
        start += 4;
        memmove(buf, start, strlen(start) + 1);
    }
    *body = buf;
    buf = NULL;
    rc = 0;
    goto out;
io_error:
    snprintf(err, errlen, "%s", rc == -ETIMEDOUT ? "no answer in time" : strerror(-rc));
out:
    close(fd);
    free(buf);
    return rc;
}

/* hostd cleans what it takes from a guest before /status shows it; this is the terminal's
 * own guard: no control character of the document reaches the screen in the tables (an
 * escape sequence would drive the operator's terminal, a newline forge a line).  --json
 * prints the document as hostd wrote it, JSON-escaped. */
static void clean_strings(json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_object: {
        json_object_object_foreach(o, key, v)
        {
            (void)key;
            clean_strings(v);
        }
        break;
    }
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(o); i++)
            clean_strings(json_object_array_get_idx(o, i));
        break;
    case json_type_string: {
        int n = json_object_get_string_len(o);
        char *copy = malloc((size_t)n + 1);

        if (!copy)
            break;
        memcpy(copy, json_object_get_string(o), (size_t)n + 1);
        log_clean(copy, (size_t)n);
        if (memcmp(copy, json_object_get_string(o), (size_t)n) != 0)
            json_object_set_string_len(o, copy, n);
        free(copy);
        break;
    }
    default:
        break;
    }
}

static json_object *get_status(const struct ctl *c)
{
    char err[512], *body;
    json_object *doc;
    enum json_tokener_error jerr;

    if (http_get(c, "/status", &body, err, sizeof(err)) < 0) {
        if (stop)
            return NULL; /* interrupted: nothing to say */
        fprintf(stderr,
                "corehintctl: cannot read corehint-hostd's status at %s: %s\n"
                "corehintctl: is hostd running, and is that its metrics_listen%s%s?\n",
                c->endpoint, err, c->endpoint_given ? "" : " in ",
                c->endpoint_given ? "" : c->config);
        return NULL;
    }
    doc = json_tokener_parse_verbose(body, &jerr);
    free(body);
    if (!doc || !json_object_is_type(doc, json_type_object)) {
        fprintf(stderr, "corehintctl: %s/status is not hostd's JSON: %s\n", c->endpoint,
                doc ? "not an object" : json_tokener_error_desc(jerr));
        json_object_put(doc);
        return NULL;
    }
    if (!c->json)
        clean_strings(doc);
    return doc;
}

static json_object *field(json_object *o, const char *key)
{
    json_object *v;

    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *str(json_object *o, const char *key, const char *dflt)
{
    json_object *v = field(o, key);

    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
}

static double dbl(json_object *o, const char *key, double dflt)
{
    json_object *v = field(o, key);

    return v && (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))
               ? json_object_get_double(v)
               : dflt;
}

static bool flag(json_object *o, const char *key)
{
    json_object *v = field(o, key);

    return v && json_object_get_boolean(v);
}

static bool has(json_object *o, const char *key)
{
    return field(o, key) != NULL;
}

/* What the guest says it applied: the helper's status, else what qemu-ga carried out. */
static const char *applied_of(json_object *d)
{
    json_object *st = field(field(d, "channel"), "status");

    if (st)
        return str(st, "applied", "-");
    return str(field(d, "agent"), "applied", "-");
}

/* Judged only in a contended pool and against a set the guest acknowledged. */
static const char *compliance_of(json_object *d, json_object *dec)
{
    if (!dec || !flag(dec, "contended") || !flag(d, "acked"))
        return "-";
    return flag(dec, "compliant") ? "yes" : "NO";
}

static void print_status(json_object *doc)
{
    json_object *dm = field(doc, "daemon"), *host = field(doc, "host"), *pcs = field(host, "pcpus");
    json_object *pools = field(doc, "pools"), *doms = field(doc, "domains");
    char when[32];
    time_t now = time(NULL);

    strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
    printf("%s  corehint-hostd %s  interval %.1f s  decisions %.0f", when, str(doc, "version", "?"),
           dbl(doc, "interval_s", 0), dbl(dm, "decisions", 0));
    if (has(dm, "libvirt"))
        printf("  libvirt %s", str(dm, "libvirt", "?"));
    if (flag(dm, "stale"))
        printf("  STALE (no fresh sample for %.1f s)", dbl(dm, "decision_age_ms", 0) / 1e3);
    if (flag(dm, "dry_run"))
        printf("  dry-run");
    printf("\n");
    printf("host CPUs (contention, CPUs):");
    for (size_t i = 0; pcs && i < json_object_array_length(pcs); i++) {
        json_object *p = json_object_array_get_idx(pcs, i);
        printf(" cpu%.0f %.2f", dbl(p, "cpu", (double)i), dbl(p, "contention", 0));
    }
    printf("\n");
    for (size_t i = 0; pools && i < json_object_array_length(pools); i++) {
        json_object *p = json_object_array_get_idx(pools, i);
        printf("pool %.0f: CPUs %s, capacity %.2f, demand %.2f, %s, %.0f VMs\n", dbl(p, "id", 0),
               str(p, "cpus", "?"), dbl(p, "capacity", 0), dbl(p, "demand", 0),
               flag(p, "contended") ? "contended" : "not contended", dbl(p, "domains", 0));
    }
    printf("\n%-24s %4s %6s %6s %-10s %-10s %-8s %-9s %s\n", "VM", "POOL", "DEMAND", "WAIT",
           "DECIDED", "APPLIED", "GUEST", "COMPLIANT", "REASON");
    for (size_t i = 0; doms && i < json_object_array_length(doms); i++) {
        json_object *d = json_object_array_get_idx(doms, i), *dec = field(d, "decision");
        printf("%-24s %4.0f %6.2f %6.2f %-10s %-10s %-8s %-9s %s\n", str(d, "name", "?"),
               dbl(d, "pool", 0), dbl(d, "demand", 0), dbl(d, "wait", 0),
               str(dec, "preferred", "-"), applied_of(d), str(d, "guest_mode", "-"),
               compliance_of(d, dec), str(dec, "reason", "-"));
    }
    if (!doms || json_object_array_length(doms) == 0)
        printf("(no running VMs%s)\n", dbl(dm, "decisions", 0) > 0 ? "" : " measured yet");
}

static json_object *find_domain(json_object *doc, const char *which)
{
    json_object *doms = field(doc, "domains");

    for (size_t i = 0; doms && i < json_object_array_length(doms); i++) {
        json_object *d = json_object_array_get_idx(doms, i);
        if (strcmp(str(d, "uuid", ""), which) == 0)
            return d;
    }
    for (size_t i = 0; doms && i < json_object_array_length(doms); i++) {
        json_object *d = json_object_array_get_idx(doms, i);
        if (strcmp(str(d, "name", ""), which) == 0)
            return d;
    }
    return NULL;
}

static json_object *pool_of(json_object *doc, double id)
{
    json_object *pools = field(doc, "pools");

    for (size_t i = 0; pools && i < json_object_array_length(pools); i++) {
        json_object *p = json_object_array_get_idx(pools, i);
        if (dbl(p, "id", -1) == id)
            return p;
    }
    return NULL;
}

/* The per-VM settings in force and their sources ("hostd.conf and metadata", "defaults"). */
static void print_settings(json_object *d)
{
    json_object *set = field(d, "settings"), *from = field(set, "from");
    size_t n =
        from && json_object_is_type(from, json_type_array) ? json_object_array_length(from) : 0;
    char src[64] = "";

    if (!set)
        return;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(from, i));
        snprintf(src + strlen(src), sizeof(src) - strlen(src), "%s%s", i ? " and " : "",
                 s ? s : "?");
    }
    printf("  settings: ");
    if (field(set, "weight"))
        printf("weight %.6g, ", dbl(set, "weight", 0));
    else
        printf("weight from the host's cpu_shares, ");
    printf("opt_out %s, actuator %s; from %s\n", flag(set, "opt_out") ? "yes" : "no",
           str(set, "actuator", "?"), n ? src : "the defaults");
    if (field(set, "metadata_error"))
        printf("  corehint metadata IGNORED: %s\n", str(set, "metadata_error", "?"));
}

static void print_domain(json_object *doc, json_object *d)
{
    json_object *dec = field(d, "decision"), *vs = field(d, "vcpu"), *ch = field(d, "channel");
    json_object *pool = pool_of(doc, dbl(d, "pool", -1)), *enf = field(d, "enforce");
    json_object *ag = field(d, "agent");
    bool show_last = false;

    printf("%s  %s\n", str(d, "name", "?"), str(d, "uuid", "?"));
    printf("  vCPUs %.0f (threads per core %.0f), pool %.0f (CPUs %s)\n", dbl(d, "vcpus", 0),
           dbl(d, "threads", 1), dbl(d, "pool", 0), str(pool, "cpus", "?"));
    if (!flag(d, "measured"))
        printf("  not measured yet (a new VM, or its counters restarted): no decision before "
               "the next sample\n");
    printf("  demand %.2f CPUs = run %.2f + host run-queue wait %.2f\n", dbl(d, "demand", 0),
           dbl(d, "run", 0), dbl(d, "wait", 0));
    print_settings(d);
    /* where a vCPU last ran is known only from a trace or a driver without vCPU statistics */
    for (size_t i = 0; vs && i < json_object_array_length(vs); i++)
        if (dbl(json_object_array_get_idx(vs, i), "last", -1) >= 0)
            show_last = true;
    printf("  %5s %6s %6s %7s%s\n", "vCPU", "run", "wait", "pinned", show_last ? "  last" : "");
    for (size_t i = 0; vs && i < json_object_array_length(vs); i++) {
        json_object *v = json_object_array_get_idx(vs, i);
        double home = dbl(v, "home", -1), last = dbl(v, "last", -1);
        char pinned[16], lastb[16] = "";

        snprintf(pinned, sizeof(pinned), home >= 0 ? "%.0f" : "-", home);
        if (show_last && last >= 0)
            snprintf(lastb, sizeof(lastb), " %5.0f", last);
        else if (show_last)
            snprintf(lastb, sizeof(lastb), " %5s", "-");
        printf("  %5.0f %6.2f %6.2f %7s%s%s\n", dbl(v, "id", 0), dbl(v, "run", 0),
               dbl(v, "wait", 0), pinned, lastb, flag(v, "halted") ? "  halted" : "");
    }
    if (!dec) {
        printf("  decision: none yet\n");
    } else {
        printf("  decision: preferred vCPUs %s (%.0f of %.0f; target %.0f), reason %s, "
               "unchanged for %.0f intervals\n",
               str(dec, "preferred", "-"), dbl(dec, "count", 0), dbl(d, "vcpus", 0),
               dbl(dec, "target", 0), str(dec, "reason", "?"), dbl(dec, "age", 0));
        if (flag(dec, "opt_out"))
            printf("    why: opted out (see settings): always all vCPUs\n");
        else if (flag(dec, "contended"))
            printf("    why: pool %.0f is contended (demand %.2f on %.2f CPUs); weight %.6g "
                   "entitles this VM to %.2f CPUs%s\n",
                   dbl(d, "pool", 0), dbl(pool, "demand", 0), dbl(pool, "capacity", 0),
                   dbl(dec, "weight", 0), dbl(dec, "entitlement", 0),
                   flag(dec, "censored") ? "; its demand is censored (every vCPU busy: it may "
                                           "want more than it shows)"
                                         : "");
        else
            printf("    why: pool %.0f is not contended (demand %.2f on %.2f CPUs): no "
                   "reason to narrow\n",
                   dbl(d, "pool", 0), dbl(pool, "demand", 0), dbl(pool, "capacity", 0));
        if (flag(dec, "claimed"))
            printf("    claim: held under its fair share (every saturated VM counted as wanting "
                   "all its vCPUs), it gets that share: a pool member waited claim_after "
                   "intervals for it\n");
        else if (dbl(dec, "claim_pending", 0) > 0)
            printf("    claim: %.0f vCPUs claimed, waiting for the guest to run on them before "
                   "it is judged used or not\n",
                   dbl(dec, "claim_pending", 0));
        if (flag(dec, "contended"))
            printf("    compliance: %s (%.0f violations)%s\n",
                   flag(dec, "compliant") ? "compliant" : "NON-COMPLIANT",
                   dbl(dec, "violations", 0),
                   flag(d, "acked") ? ""
                                    : "; judged only against sets the guest acknowledged, "
                                      "and it has acknowledged none");
    }
    if (flag(d, "acked"))
        printf("  guest acknowledged applying %s\n", str(d, "applied", "-"));
    printf("  guest mode: %s\n", str(d, "guest_mode", "none"));
    if (ch) {
        json_object *st = field(ch, "status"), *hello = field(ch, "hello");
        printf("  channel %s: %s, %.0f hints sent, %.0f resent after a hello%s\n",
               str(ch, "path", "?"), str(ch, "state", "?"), dbl(ch, "hints", 0),
               dbl(ch, "resent", 0), flag(ch, "silent") ? ", guest SILENT" : "");
        if (hello)
            printf("    helper %s, online vCPUs %s, preferred file %s\n", str(hello, "agent", "?"),
                   str(hello, "online", "?"),
                   flag(hello, "writable") ? "writable" : str(hello, "reason", "not writable"));
        if (st)
            printf("    last status: seq %.0f, applied %s\n", dbl(st, "seq", 0),
                   str(st, "applied", "-"));
        if (dbl(ch, "held_for_hello", 0) > 0)
            printf("    %.0f decisions held for the helper's first hello\n",
                   dbl(ch, "held_for_hello", 0));
        if (has(ch, "connect_error"))
            printf("    cannot connect: %s\n", str(ch, "connect_error", ""));
    }
    if (ag)
        printf("  qemu-ga: %.0f commands carried out, %.0f failed%s%s\n", dbl(ag, "ok", 0),
               dbl(ag, "failed", 0), has(ag, "error") ? "; last error: " : "",
               str(ag, "error", ""));
    if (enf)
        printf("  enforcement (%s): %s\n", str(enf, "mode", "?"),
               flag(enf, "capped") ? "capped" : "not capped");
    if (flag(enf, "capped"))
        printf("    capped to %.2f CPUs\n", dbl(enf, "cap_cpus", 0));
}

static void print_json(json_object *o)
{
    printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int cmd_status(const struct ctl *c)
{
    json_object *doc = get_status(c);

    if (!doc)
        return 1;
    if (c->json)
        print_json(doc);
    else
        print_status(doc);
    json_object_put(doc);
    return 0;
}

static int cmd_domain(const struct ctl *c, const char *which)
{
    json_object *doc = get_status(c), *d;
    int rc = 0;

    if (!doc)
        return 1;
    if (!(d = find_domain(doc, which))) {
        fprintf(stderr,
                "corehintctl: no running VM named or with UUID \"%s\" in hostd's status "
                "(`corehintctl status` lists them)\n",
                which);
        rc = 1;
    } else if (c->json) {
        print_json(d);
    } else {
        print_domain(doc, d);
    }
    json_object_put(doc);
    return rc;
}

static int cmd_metrics(const struct ctl *c)
{
    char err[512], *body;

    if (http_get(c, "/metrics", &body, err, sizeof(err)) < 0) {
        fprintf(stderr, "corehintctl: cannot read corehint-hostd's metrics at %s: %s\n",
                c->endpoint, err);
        return 1;
    }
    fputs(body, stdout);
    free(body);
    return 0;
}

static int cmd_watch(const struct ctl *c)
{
    bool tty = isatty(STDOUT_FILENO);
    struct sigaction sa = {.sa_handler = on_signal};
    unsigned n = 0;
    int rc = 0;

    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!stop) {
        json_object *doc = get_status(c);
        double every = c->interval_s;

        if (stop) {
            json_object_put(doc);
            break;
        }
        if (tty && !c->json)
            fputs("\033[H\033[2J", stdout);
        if (doc) {
            if (c->json) {
                printf("%s\n", json_object_to_json_string_ext(
                                   doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
            } else {
                print_status(doc);
                if (!tty)
                    printf("\n");
            }
            if (every <= 0)
                every = dbl(doc, "interval_s", 0);
            json_object_put(doc);
            rc = 0;
        } else {
            rc = 1; /* said on stderr; try again, hostd may be restarting */
        }
        fflush(stdout);
        if (c->count && ++n >= c->count)
            break;
        if (every <= 0)
            every = 1;
        struct timespec ts = {(time_t)every, (long)((every - floor(every)) * 1e9)};
        while (!stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    return rc;
}

static int number(const char *s, double lo, double hi, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(s, &end);
    return *s && !*end && !errno && isfinite(*out) && *out >= lo && *out <= hi ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"endpoint", required_argument, NULL, 'e'},
                                             {"config", required_argument, NULL, 'c'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"timeout", required_argument, NULL, 't'},
                                             {"interval", required_argument, NULL, 'i'},
                                             {"count", required_argument, NULL, 'n'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"version", no_argument, NULL, 'V'},
                                             {NULL, 0, NULL, 0}};
    struct ctl c = {.config = CFG_DEFAULT_FILE, .timeout_s = 5};
    bool config_given = false;
    const char *cmd;
    double v;
    int opt;

    while ((opt = getopt_long(argc, argv, "e:c:jt:i:n:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'e':
            snprintf(c.endpoint, sizeof(c.endpoint), "%s", optarg);
            c.endpoint_given = true;
            break;
        case 'c':
            c.config = optarg;
            config_given = true;
            break;
        case 'j':
            c.json = true;
            break;
        case 't':
            if (number(optarg, 0.001, 3600, &c.timeout_s) < 0) {
                fprintf(stderr, "corehintctl: --timeout \"%s\": seconds, 0.001 to 3600\n", optarg);
                return 2;
            }
            break;
        case 'i':
            if (number(optarg, 0.05, 86400, &c.interval_s) < 0) {
                fprintf(stderr, "corehintctl: --interval \"%s\": seconds, 0.05 to 86400\n", optarg);
                return 2;
            }
            break;
        case 'n':
            if (number(optarg, 1, 1e9, &v) < 0 || v != floor(v)) {
                fprintf(stderr, "corehintctl: --count \"%s\": a whole number from 1\n", optarg);
                return 2;
            }
            c.count = (unsigned)v;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("corehintctl %s\n", COREHINT_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    cmd = optind < argc ? argv[optind++] : "status";
    if (!c.endpoint_given) {
        struct hd_config cfg;
        char err[512];

        cfg_defaults(&cfg);
        if (cfg_load_file(&cfg, c.config, config_given, err, sizeof(err)) < 0) {
            fprintf(stderr, "corehintctl: %s\n", err);
            cfg_free(&cfg);
            return 2;
        }
        if (!cfg.metrics_listen[0]) {
            fprintf(stderr,
                    "corehintctl: %s turns hostd's endpoint off (metrics_listen = \"\"); "
                    "name one with --endpoint\n",
                    c.config);
            cfg_free(&cfg);
            return 2;
        }
        snprintf(c.endpoint, sizeof(c.endpoint), "%s", cfg.metrics_listen);
        cfg_free(&cfg);
    }
    {
        char addr[128], err[256];
        unsigned port;
        if (cfg_split_listen(c.endpoint, addr, sizeof(addr), &port, err, sizeof(err)) < 0) {
            fprintf(stderr, "corehintctl: endpoint %s\n", err);
            return 2;
        }
    }
    if (strcmp(cmd, "domain") == 0) {
        if (optind + 1 != argc) {
            fprintf(stderr, "corehintctl: domain takes one VM name or UUID\n");
            return 2;
        }
        return cmd_domain(&c, argv[optind]);
    }
    if (optind != argc) {
        fprintf(stderr, "corehintctl: %s takes no argument (\"%s\")\n", cmd, argv[optind]);
        return 2;
    }
    if (strcmp(cmd, "status") == 0)
        return cmd_status(&c);
    if (strcmp(cmd, "watch") == 0)
        return cmd_watch(&c);
    if (strcmp(cmd, "metrics") == 0) {
        if (c.json) {
            fprintf(stderr, "corehintctl: metrics is Prometheus text; --json is for status and "
                            "domain\n");
            return 2;
        }
        return cmd_metrics(&c);
    }
    fprintf(stderr, "corehintctl: unknown command \"%s\" (status, watch, domain, metrics)\n", cmd);
    return 2;
}
