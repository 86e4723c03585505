// SPDX-License-Identifier: LGPL-2.1-or-later
#include "lease.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

struct lease {
    struct event *timer;
    lease_expired_fn fn;
    void *ctx;
    bool held;
};

static void expired(evutil_socket_t fd, short what, void *arg)
{
    struct lease *l = arg;

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
    l->timer = evtimer_new(base, expired, l);
    if (!l->timer) {
        free(l);
        return NULL;
    }
    return l;
}

int lease_renew(struct lease *l, uint32_t ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000};

    if (evtimer_add(l->timer, &tv) < 0)
        return -ENOMEM;
    l->held = true;
    return 0;
}

void lease_cancel(struct lease *l)
{
    evtimer_del(l->timer);
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
    event_free(l->timer);
    free(l);
}
