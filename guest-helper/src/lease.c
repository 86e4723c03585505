// SPDX-License-Identifier: LGPL-2.1-or-later
#include "lease.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "corehint/log.h"

struct lease {
    int fd; /* timerfd on CLOCK_BOOTTIME (CLOCK_MONOTONIC where the kernel has no such timer) */
    clockid_t clock;
    struct event *ev;
    lease_expired_fn fn;
    void *ctx;
    bool held;
};

static void expired(evutil_socket_t fd, short what, void *arg)
{
    struct lease *l = arg;
    uint64_t n;

    if (read(l->fd, &n, sizeof(n)) != (ssize_t)sizeof(n) || !l->held)
        return; /* a renewal raced the expiry, or nothing was armed */
    l->held = false;
    l->fn(l->ctx);
}

struct lease *lease_new(struct event_base *base, lease_expired_fn fn, void *ctx)
{
    struct lease *l = calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    l->fn = fn;
    l->ctx = ctx;
    /* CLOCK_BOOTTIME counts a suspended guest's sleep: after a resume an expired lease has
     * expired (CLOCK_MONOTONIC, libevent's timers' clock, would hold it for the sleep again). */
    l->clock = CLOCK_BOOTTIME;
    l->fd = timerfd_create(l->clock, TFD_NONBLOCK | TFD_CLOEXEC);
    if (l->fd < 0) {
        l->clock = CLOCK_MONOTONIC;
        l->fd = timerfd_create(l->clock, TFD_NONBLOCK | TFD_CLOEXEC);
        if (l->fd >= 0)
            log_msg(LOG_LVL_WARN, "no CLOCK_BOOTTIME timer: the lease stops while suspended");
    }
    if (l->fd < 0 || !(l->ev = event_new(base, l->fd, EV_READ | EV_PERSIST, expired, l)) ||
        event_add(l->ev, NULL) < 0) {
        lease_free(l);
        return NULL;
    }
    return l;
}

int lease_renew(struct lease *l, uint32_t ms)
{
    struct itimerspec its = {0};

    /* Absolute, so the deadline is "ms after now" on the lease's clock, whatever happens
     * to the process in between. */
    if (clock_gettime(l->clock, &its.it_value) < 0)
        return -errno;
    its.it_value.tv_sec += ms / 1000;
    its.it_value.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (its.it_value.tv_nsec >= 1000000000L) {
        its.it_value.tv_sec++;
        its.it_value.tv_nsec -= 1000000000L;
    }
    if (timerfd_settime(l->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        return -errno;
    l->held = true;
    return 0;
}

void lease_cancel(struct lease *l)
{
    const struct itimerspec off = {0};

    (void)timerfd_settime(l->fd, 0, &off, NULL);
    l->held = false;
}

bool lease_held(const struct lease *l)
{
    return l->held;
}

void lease_free(struct lease *l)
{
    if (!l)
        return;
    if (l->ev)
        event_free(l->ev);
    if (l->fd >= 0)
        close(l->fd);
    free(l);
}
