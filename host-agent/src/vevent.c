// SPDX-License-Identifier: LGPL-2.1-or-later
#include "vevent.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>

#include "corehint/log.h"

/*
 * One record per libvirt handle or timeout.  libvirt may remove a callback from inside any
 * callback (its own or another's), and its free callback may take libvirt locks, so removal
 * only marks the record; a deferred event frees marked records from the top of the loop.
 */
struct vev {
    int id;
    bool is_timer;
    bool deleted;
    int fd;
    int events;   /* VIR_EVENT_HANDLE_* */
    int interval; /* ms; -1 disabled, 0 every loop iteration */
    virEventHandleCallback hcb;
    virEventTimeoutCallback tcb;
    void *opaque;
    virFreeCallback ff;
    struct event *ev;
    struct vev *next;
};

static struct {
    struct event_base *base;
    struct event *reaper;
    struct vev *list;
    int next_id;
} vv;

static struct vev *find(int id, bool timer)
{
    for (struct vev *v = vv.list; v; v = v->next)
        if (v->id == id && v->is_timer == timer && !v->deleted)
            return v;
    return NULL;
}

static void on_fd(evutil_socket_t fd, short what, void *arg)
{
    struct vev *v = arg;
    int events = 0;

    if (v->deleted)
        return;
    if (what & EV_READ)
        events |= VIR_EVENT_HANDLE_READABLE;
    if (what & EV_WRITE)
        events |= VIR_EVENT_HANDLE_WRITABLE;
    v->hcb(v->id, (int)fd, events, v->opaque);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct vev *v = arg;

    if (!v->deleted)
        v->tcb(v->id, v->opaque);
}

static void reap(evutil_socket_t fd, short what, void *arg)
{
    struct vev **pp = &vv.list;

    while (*pp) {
        struct vev *v = *pp;
        if (!v->deleted) {
            pp = &v->next;
            continue;
        }
        *pp = v->next;
        if (v->ff)
            v->ff(v->opaque);
        event_free(v->ev);
        free(v);
    }
}

static int arm_fd(struct vev *v)
{
    short what = EV_PERSIST;

    event_del(v->ev);
    if (v->events & VIR_EVENT_HANDLE_READABLE)
        what |= EV_READ;
    if (v->events & VIR_EVENT_HANDLE_WRITABLE)
        what |= EV_WRITE;
    if (!(what & (EV_READ | EV_WRITE)))
        return 0;
    event_assign(v->ev, vv.base, v->fd, what, on_fd, v);
    return event_add(v->ev, NULL);
}

static int arm_timer(struct vev *v)
{
    struct timeval tv = {v->interval / 1000, (long)(v->interval % 1000) * 1000};

    event_del(v->ev);
    if (v->interval < 0)
        return 0;
    return event_add(v->ev, &tv);
}

static struct vev *vev_new(bool timer, void *opaque, virFreeCallback ff)
{
    struct vev *v = calloc(1, sizeof(*v));

    if (!v)
        return NULL;
    v->ev = timer ? event_new(vv.base, -1, EV_PERSIST, on_timer, v)
                  : event_new(vv.base, -1, EV_PERSIST, on_fd, v);
    if (!v->ev) {
        free(v);
        return NULL;
    }
    v->id = ++vv.next_id;
    v->is_timer = timer;
    v->opaque = opaque;
    v->ff = ff;
    v->next = vv.list;
    vv.list = v;
    return v;
}

static int add_handle(int fd, int events, virEventHandleCallback cb, void *opaque,
                      virFreeCallback ff)
{
    struct vev *v = vev_new(false, opaque, ff);

    if (!v)
        return -1;
    v->fd = fd;
    v->events = events;
    v->hcb = cb;
    if (arm_fd(v) < 0) {
        v->ff = NULL; /* libvirt keeps ownership of opaque when adding fails */
        v->deleted = true;
        event_active(vv.reaper, 0, 0);
        return -1;
    }
    return v->id;
}

static void update_handle(int watch, int events)
{
    struct vev *v = find(watch, false);

    if (!v)
        return;
    v->events = events;
    if (arm_fd(v) < 0)
        log_msg(LOG_LVL_WARN, "libvirt event bridge: cannot watch fd %d", v->fd);
}

static int remove_any(int id, bool timer)
{
    struct vev *v = find(id, timer);

    if (!v)
        return -1;
    event_del(v->ev);
    v->deleted = true;
    event_active(vv.reaper, 0, 0);
    return 0;
}

static int remove_handle(int watch)
{
    return remove_any(watch, false);
}

static int add_timeout(int interval, virEventTimeoutCallback cb, void *opaque, virFreeCallback ff)
{
    struct vev *v = vev_new(true, opaque, ff);

    if (!v)
        return -1;
    v->interval = interval;
    v->tcb = cb;
    if (arm_timer(v) < 0) {
        v->ff = NULL;
        v->deleted = true;
        event_active(vv.reaper, 0, 0);
        return -1;
    }
    return v->id;
}

static void update_timeout(int timer, int interval)
{
    struct vev *v = find(timer, true);

    if (!v)
        return;
    v->interval = interval;
    if (arm_timer(v) < 0)
        log_msg(LOG_LVL_WARN, "libvirt event bridge: cannot arm a timer");
}

static int remove_timeout(int timer)
{
    return remove_any(timer, true);
}

int vev_register(struct event_base *base)
{
    vv.base = base;
    vv.reaper = event_new(base, -1, 0, reap, NULL);
    if (!vv.reaper)
        return -ENOMEM;
    virEventRegisterImpl(add_handle, update_handle, remove_handle, add_timeout, update_timeout,
                         remove_timeout);
    return 0;
}

void vev_finalise(void)
{
    for (struct vev *v = vv.list; v; v = v->next) {
        event_del(v->ev);
        v->deleted = true;
    }
    reap(-1, 0, NULL);
    if (vv.reaper)
        event_free(vv.reaper);
    memset(&vv, 0, sizeof(vv));
}
