// SPDX-License-Identifier: LGPL-2.1-or-later
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

#include "clock.h"
#include "collect.h"
#include "conn.h"
#include "corehint/log.h"
#include "enforce.h"
#include "qga.h"

#define WK_QUEUE_MAX 256u
#define WK_AQUEUE_MAX 64u
#define WK_INVAL_MAX 64u
#define BACKOFF_MIN_MS 500u
#define BACKOFF_MAX_MS 30000u

struct wk_node {
    struct wk_result r;
    struct wk_node *next;
};

/* A fixed ring of jobs (the worker's and the qemu-ga lane's queues), under the worker's lock. */
struct wk_ring {
    struct wk_job *job;
    unsigned max, head, len;
};

static bool ring_push(struct wk_ring *q, const struct wk_job *j)
{
    if (q->len == q->max)
        return false;
    q->job[(q->head + q->len) % q->max] = *j;
    q->len++;
    return true;
}

static struct wk_job ring_pop(struct wk_ring *q)
{
    struct wk_job j = q->job[q->head];

    q->head = (q->head + 1) % q->max;
    q->len--;
    return j;
}

struct worker {
    /* set at start, then read-only */
    wk_result_fn fn;
    void *ctx;
    char uri[256];
    struct conn *conn;     /* worker thread only */
    struct collector *col; /* worker thread only */
    pthread_t thread, evthread;
    bool thread_started, evthread_started;
    int pipe[2];
    struct event *wake;
    int evtimer;

    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    struct wk_job queue_jobs[WK_QUEUE_MAX];
    struct wk_ring queue;
    bool stop;
    bool closed; /* the close callback fired */
    bool inval_all;
    char inval[WK_INVAL_MAX][SNAP_UUID_LEN + 1];
    unsigned ninval;
    struct wk_node *res_head, **res_tail; /* results not yet delivered to the loop */
    /* The qemu-ga lane: qemu-ga commands on a thread and a libvirt connection of their own,
     * so that a hung agent never delays a sample (on one shared connection, samples waited
     * for the agent call's reply: measured, e2e 15-qga-frozen). */
    pthread_t athread;
    pthread_cond_t acv;
    virConnectPtr avc; /* the lane's connection, lane thread only; NULL until needed */
    struct wk_job aqueue_jobs[WK_AQUEUE_MAX];
    struct wk_ring aqueue;
    uint64_t drain_until_ms;
    bool athread_started;
    bool astop;
    bool sample_pending; /* loop side only, but kept here for wk_sample_pending() */

    atomic_bool connected;
    atomic_bool evstop;
};

/* libvirt's event thread (and the close callback inside a failing call): flags only. */
static void on_conn(void *ctx, enum conn_event ev, const char *uuid)
{
    struct worker *w = ctx;

    pthread_mutex_lock(&w->mu);
    if (ev == CONN_CLOSED) {
        w->closed = true;
        pthread_cond_signal(&w->cv);
    } else if (w->ninval < WK_INVAL_MAX) {
        snprintf(w->inval[w->ninval++], sizeof(w->inval[0]), "%s", uuid);
    } else {
        w->inval_all = true;
    }
    pthread_mutex_unlock(&w->mu);
}

/* Worker thread: hand r to the loop. */
static void post(struct worker *w, const struct wk_result *r)
{
    struct wk_node *n = malloc(sizeof(*n));
    char byte = 0;

    if (!n) {
        snap_free(r->snap);
        log_msg(LOG_LVL_ERR, "out of memory: a libvirt result was lost");
        return;
    }
    n->r = *r;
    n->next = NULL;
    pthread_mutex_lock(&w->mu);
    *w->res_tail = n;
    w->res_tail = &n->next;
    pthread_mutex_unlock(&w->mu);
    /* A full pipe already holds a wake-up. */
    if (write(w->pipe[1], &byte, 1) < 0 && errno != EAGAIN)
        log_msg(LOG_LVL_ERR, "cannot wake the event loop: %s", strerror(errno));
}

/* Event loop: deliver every posted result, in order. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    char buf[64];
    struct wk_node *n;

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        if ((n = w->res_head)) {
            w->res_head = n->next;
            if (!w->res_head)
                w->res_tail = &w->res_head;
            if (n->r.job.kind == WK_SAMPLE)
                w->sample_pending = false;
        }
        pthread_mutex_unlock(&w->mu);
        if (!n)
            break;
        w->fn(w->ctx, &n->r);
        snap_free(n->r.snap); /* NULL when the receiver took it */
        free(n);
    }
}

static void run_sample(struct worker *w, virConnectPtr vc, struct wk_result *r)
{
    char uuids[WK_INVAL_MAX][SNAP_UUID_LEN + 1];
    unsigned n;
    bool all;

    pthread_mutex_lock(&w->mu);
    n = w->ninval;
    all = w->inval_all;
    memcpy(uuids, w->inval, sizeof(uuids[0]) * n);
    w->ninval = 0;
    w->inval_all = false;
    pthread_mutex_unlock(&w->mu);
    if (all)
        col_invalidate(w->col, NULL);
    for (unsigned i = 0; i < n; i++)
        col_invalidate(w->col, uuids[i]);
    r->rc = col_sample(w->col, vc, &r->snap);
}

static void run_agent(virConnectPtr vc, struct wk_result *r)
{
    struct qga_link *l = qga_open(vc, r->job.uuid, NULL, r->err, sizeof(r->err));

    if (!l) {
        r->rc = -EIO;
        return;
    }
    r->rc = qga_apply(l, r->job.how, &r->job.cpus, r->job.nvcpu, r->err, sizeof(r->err));
    qga_close(l);
}

static void run_job(struct worker *w, const struct wk_job *j)
{
    virConnectPtr vc = conn_get(w->conn);
    struct wk_result r;
    uint64_t t0 = hd_mono_ms();

    memset(&r, 0, sizeof(r));
    r.job = *j;
    r.gen = conn_generation(w->conn);
    if (!vc) {
        r.rc = -ENOTCONN;
        snprintf(r.err, sizeof(r.err), "not connected to libvirt");
    } else if (j->kind == WK_SAMPLE) {
        run_sample(w, vc, &r);
    } else if (j->kind == WK_QUOTA) {
        r.rc = enf_set_quota(vc, j->uuid, j->quota_cpus, r.err, sizeof(r.err));
    }
    if (r.rc < 0 && vc && virConnectIsAlive(vc) != 1)
        on_conn(w, CONN_CLOSED, NULL); /* torn down before the next job */
    r.took_ms = hd_mono_ms() - t0;
    post(w, &r);
}

static void lose(struct worker *w)
{
    struct wk_result r;

    memset(&r, 0, sizeof(r));
    r.job.kind = WK_DOWN;
    r.gen = conn_generation(w->conn);
    snprintf(r.err, sizeof(r.err), "connection lost");
    log_msg(LOG_LVL_WARN, "lost libvirt connection %s; reconnecting", w->uri);
    conn_drop(w->conn);
    atomic_store(&w->connected, false);
    post(w, &r);
}

/* One attempt; true when connected. */
static bool try_open(struct worker *w, unsigned backoff_ms)
{
    struct wk_result r;

    memset(&r, 0, sizeof(r));
    if (conn_open(w->conn) == 0) {
        col_invalidate(w->col, NULL);
        atomic_store(&w->connected, true);
        r.job.kind = WK_UP;
        r.gen = conn_generation(w->conn);
        post(w, &r);
        return true;
    }
    r.job.kind = WK_DOWN;
    r.rc = -ENOTCONN;
    r.denied = conn_error_is_denied();
    snprintf(r.err, sizeof(r.err), "%s", conn_error());
    log_msg(LOG_LVL_WARN, "cannot connect to %s: %s; retrying in %u ms", w->uri, r.err, backoff_ms);
    post(w, &r);
    return false;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned backoff = BACKOFF_MIN_MS;
    uint64_t retry_at = 0;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        bool up = conn_get(w->conn) != NULL;

        if (w->closed && up) {
            w->closed = false;
            pthread_mutex_unlock(&w->mu);
            lose(w);
            retry_at = hd_mono_ms() + backoff;
            pthread_mutex_lock(&w->mu);
            continue;
        }
        w->closed = false;
        if (w->stop && (!up || w->queue.len == 0 || hd_mono_ms() >= w->drain_until_ms))
            break;
        if (!up && !w->stop && hd_mono_ms() >= retry_at) {
            pthread_mutex_unlock(&w->mu);
            if (try_open(w, backoff)) {
                backoff = BACKOFF_MIN_MS;
            } else {
                retry_at = hd_mono_ms() + backoff;
                backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
            }
            pthread_mutex_lock(&w->mu);
            continue;
        }
        if (w->queue.len > 0 && (up || !w->stop)) {
            struct wk_job j = ring_pop(&w->queue);
            pthread_mutex_unlock(&w->mu);
            run_job(w, &j); /* while disconnected: fails at once with -ENOTCONN */
            pthread_mutex_lock(&w->mu);
            continue;
        }
        if (up) {
            pthread_cond_wait(&w->cv, &w->mu);
        } else {
            uint64_t at = retry_at;
            struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000L};
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
    }
    pthread_mutex_unlock(&w->mu);
    conn_drop(w->conn);
    atomic_store(&w->connected, false);
    return NULL;
}

/* The qemu-ga lane's connection: opened when a command needs it, dropped when it dies. */
static virConnectPtr lane_conn(struct worker *w, char *err, size_t errlen)
{
    if (w->avc && virConnectIsAlive(w->avc) != 1) {
        virConnectClose(w->avc);
        w->avc = NULL;
    }
    /* read-write: qemu-ga commands need it (and exist only when hostd.conf asks for them) */
    if (!w->avc && !(w->avc = conn_connect(w->uri, false)))
        snprintf(err, errlen, "cannot connect to libvirt: %s", conn_error());
    return w->avc;
}

/* The qemu-ga lane: one command at a time, in the order submitted. */
static void *agent_main(void *arg)
{
    struct worker *w = arg;

    pthread_mutex_lock(&w->mu);
    while (!w->astop) {
        if (w->aqueue.len == 0) {
            pthread_cond_wait(&w->acv, &w->mu);
            continue;
        }
        struct wk_result r;
        memset(&r, 0, sizeof(r));
        r.job = ring_pop(&w->aqueue);
        pthread_mutex_unlock(&w->mu);
        uint64_t t0 = hd_mono_ms();
        virConnectPtr vc = lane_conn(w, r.err, sizeof(r.err));
        if (!vc)
            r.rc = -ENOTCONN;
        else
            run_agent(vc, &r);
        r.took_ms = hd_mono_ms() - t0;
        post(w, &r);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    if (w->avc)
        virConnectClose(w->avc);
    w->avc = NULL;
    return NULL;
}

static void *event_main(void *arg)
{
    struct worker *w = arg;

    while (!atomic_load(&w->evstop))
        if (virEventRunDefaultImpl() < 0) {
            log_msg(LOG_LVL_ERR, "libvirt's event loop failed: %s", conn_error());
            break;
        }
    return NULL;
}

static void on_evtimer(int timer, void *opaque)
{
}

int wk_submit(struct worker *w, const struct wk_job *j)
{
    bool agent = j->kind == WK_AGENT; /* qemu-ga commands go to the lane */
    int rc = -EBUSY;

    pthread_mutex_lock(&w->mu);
    if (!w->stop && ring_push(agent ? &w->aqueue : &w->queue, j)) {
        if (j->kind == WK_SAMPLE)
            w->sample_pending = true;
        pthread_cond_signal(agent ? &w->acv : &w->cv);
        rc = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

bool wk_sample_pending(const struct worker *w)
{
    struct worker *m = (struct worker *)w;
    bool p;

    pthread_mutex_lock(&m->mu);
    p = m->sample_pending;
    pthread_mutex_unlock(&m->mu);
    return p;
}

bool wk_connected(const struct worker *w)
{
    return atomic_load(&w->connected);
}

/* Start a thread with every signal blocked: signals belong to the event loop's thread. */
static int spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -rc;
}

struct worker *wk_start(struct event_base *base, const char *uri, bool readonly,
                        const char *proc_root, wk_result_fn fn, void *ctx)
{
    static bool registered;
    struct worker *w = calloc(1, sizeof(*w));
    int rc;

    if (!w)
        return NULL;
    snprintf(w->uri, sizeof(w->uri), "%s", uri);
    w->fn = fn;
    w->ctx = ctx;
    w->pipe[0] = w->pipe[1] = -1;
    w->evtimer = -1;
    w->res_tail = &w->res_head;
    w->queue = (struct wk_ring){.job = w->queue_jobs, .max = WK_QUEUE_MAX};
    w->aqueue = (struct wk_ring){.job = w->aqueue_jobs, .max = WK_AQUEUE_MAX};
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->acv, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_destroy(&w->cv);
        pthread_cond_init(&w->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (!registered && virEventRegisterDefaultImpl() < 0) {
        log_msg(LOG_LVL_ERR, "cannot start libvirt's event loop: %s", conn_error());
        goto fail;
    }
    registered = true;
    /* A timer that never fires on its own, so that wk_stop() can wake the event thread. */
    w->evtimer = virEventAddTimeout(-1, on_evtimer, NULL, NULL);
    if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
        !(w->wake = event_new(base, w->pipe[0], EV_READ | EV_PERSIST, on_wake, w)) ||
        event_add(w->wake, NULL) < 0 || !(w->col = col_new(proc_root)) ||
        !(w->conn = conn_new(uri, readonly, on_conn, w))) {
        log_msg(LOG_LVL_ERR, "cannot set up the libvirt worker: %s", strerror(errno));
        goto fail;
    }
    if ((rc = spawn(&w->evthread, event_main, w)) < 0) {
        log_msg(LOG_LVL_ERR, "cannot start libvirt's event thread: %s", strerror(-rc));
        goto fail;
    }
    w->evthread_started = true;
    if ((rc = spawn(&w->thread, worker_main, w)) < 0) {
        log_msg(LOG_LVL_ERR, "cannot start the libvirt worker: %s", strerror(-rc));
        goto fail;
    }
    w->thread_started = true;
    if ((rc = spawn(&w->athread, agent_main, w)) < 0) {
        log_msg(LOG_LVL_ERR, "cannot start the qemu-ga thread: %s", strerror(-rc));
        goto fail;
    }
    w->athread_started = true;
    return w;

fail:
    wk_stop(w, 0);
    return NULL;
}

/* Join t by deadline (monotonic ms); false: it is still running (stuck in a call). */
static bool join_by(pthread_t t, uint64_t deadline)
{
    bool done;

    while (!(done = pthread_tryjoin_np(t, NULL) == 0) && hd_mono_ms() < deadline)
        usleep(10000);
    return done;
}

/*
 * At stop, with the event loop no longer reading results: the quota jobs' results go to the
 * result function (a cap or release is logged and counted when it is made, here too), and the
 * quota jobs that never ran are told as cancelled; everything else is dropped.
 */
static void tell_quota(struct worker *w)
{
    for (;;) {
        struct wk_node *n;
        struct wk_result r;
        bool left = false;

        pthread_mutex_lock(&w->mu);
        if ((n = w->res_head)) {
            w->res_head = n->next;
            if (!w->res_head)
                w->res_tail = &w->res_head;
        } else {
            while (w->queue.len > 0 && !left) {
                r = (struct wk_result){.job = ring_pop(&w->queue), .rc = -ECANCELED};
                left = r.job.kind == WK_QUOTA;
            }
        }
        pthread_mutex_unlock(&w->mu);
        if (n) {
            if (n->r.job.kind == WK_QUOTA)
                w->fn(w->ctx, &n->r);
            snap_free(n->r.snap);
            free(n);
        } else if (left) {
            snprintf(r.err, sizeof(r.err), "corehint-hostd stopped before libvirt made it");
            w->fn(w->ctx, &r);
        } else {
            return;
        }
    }
}

void wk_stop(struct worker *w, unsigned drain_ms)
{
    if (!w)
        return;
    if (w->thread_started) {
        uint64_t deadline = hd_mono_ms() + drain_ms;

        pthread_mutex_lock(&w->mu);
        w->stop = true;
        w->drain_until_ms = deadline;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        /* Wait for the drain, but never for a thread stuck in a hung libvirtd. */
        if (!join_by(w->thread, deadline + 1000)) {
            log_msg(LOG_LVL_WARN, "the libvirt worker is stuck in a call; leaving it behind");
            tell_quota(w);
            return; /* its memory stays: the thread still uses it */
        }
        tell_quota(w); /* before waiting for the qemu-ga lane, which may be stuck */
    }
    if (w->athread_started) {
        /* qemu-ga commands are not drained: a decision nobody will keep is not worth one.  A
         * command running now may wait for libvirt's guest-sync (5 s), then QGA_TIMEOUT_S. */
        uint64_t deadline = hd_mono_ms() + 5500 + (uint64_t)QGA_TIMEOUT_S * 1000u;

        pthread_mutex_lock(&w->mu);
        w->astop = true;
        pthread_cond_signal(&w->acv);
        pthread_mutex_unlock(&w->mu);
        if (!join_by(w->athread, deadline)) {
            log_msg(LOG_LVL_WARN, "the qemu-ga thread is stuck in a call; leaving it behind");
            tell_quota(w);
            return; /* its memory stays: the thread still uses it */
        }
        w->athread_started = false;
    }
    if (w->evthread_started) {
        atomic_store(&w->evstop, true);
        virEventUpdateTimeout(w->evtimer, 0); /* wakes virEventRunDefaultImpl() */
        pthread_join(w->evthread, NULL);
    }
    if (w->evtimer >= 0)
        virEventRemoveTimeout(w->evtimer);
    tell_quota(w); /* what the loop has not read */
    if (w->wake)
        event_free(w->wake);
    if (w->pipe[0] >= 0)
        close(w->pipe[0]);
    if (w->pipe[1] >= 0)
        close(w->pipe[1]);
    conn_free(w->conn);
    col_free(w->col);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->acv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
