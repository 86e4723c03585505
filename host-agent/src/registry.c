// SPDX-License-Identifier: LGPL-2.1-or-later
#include "registry.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"

void reg_init(struct registry *r)
{
    memset(r, 0, sizeof(*r));
}

struct vm_entry *reg_find(const struct registry *r, const char *uuid)
{
    return hd_find_uuid(r->vm, r->nvm, sizeof(*r->vm), offsetof(struct vm_entry, uuid), uuid);
}

/* A VM that is gone: its channel closes; a cap went with the domain. */
static void forget(struct vm_entry *v)
{
    chan_free(v->act.ch);
    v->act.ch = NULL;
}

/*
 * Replace the records by one per element of base[0..n) (each size bytes, sorted by the uuid
 * string uuid_off bytes into each, with a name string name_off bytes in), in that order:
 * a VM still there keeps its record (its channel, hello, qemu-ga and cap state), one gone has
 * its channel closed.  dom and dec are left to the caller (NULL in new records).
 */
static int rebuild(struct registry *r, const void *base, unsigned n, size_t size, size_t uuid_off,
                   size_t name_off)
{
    struct vm_entry *nv;
    unsigned j = 0;

    if (!(nv = calloc(n + 1, sizeof(*nv))))
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        const char *el = (const char *)base + i * size;
        const char *uuid = el + uuid_off;
        struct vm_entry *v = &nv[i];

        while (j < r->nvm && strcmp(r->vm[j].uuid, uuid) < 0)
            forget(&r->vm[j++]);
        if (j < r->nvm && strcmp(r->vm[j].uuid, uuid) == 0)
            *v = r->vm[j++];
        else
            snprintf(v->uuid, sizeof(v->uuid), "%s", uuid);
        snprintf(v->name, sizeof(v->name), "%s", el + name_off);
        v->dom = NULL;
        v->dec = NULL;
    }
    for (; j < r->nvm; j++)
        forget(&r->vm[j]);
    free(r->vm);
    r->vm = nv;
    r->nvm = n;
    return 0;
}

int reg_track(struct registry *r, const struct snapshot *s)
{
    if (r->steps)
        return 0;
    return rebuild(r, s->dom, s->ndom, sizeof(*s->dom), offsetof(struct snap_dom, uuid),
                   offsetof(struct snap_dom, name));
}

int reg_sync(struct registry *r, const struct engine *e)
{
    const struct model *m = &e->model;
    int rc;

    if (!e->decided || r->steps == e->steps)
        return 0;
    rc = rebuild(r, m->dom, m->ndom, sizeof(*m->dom), offsetof(struct model_dom, uuid),
                 offsetof(struct model_dom, name));
    if (rc < 0)
        return rc;
    for (unsigned i = 0; i < m->ndom; i++) {
        r->vm[i].dom = &m->dom[i];
        r->vm[i].dec = &e->dec[i];
    }
    r->steps = e->steps;
    return 0;
}

void reg_finalise(struct registry *r)
{
    for (unsigned i = 0; i < r->nvm; i++)
        forget(&r->vm[i]);
    free(r->vm);
    r->vm = NULL;
    r->nvm = 0;
    r->steps = 0;
}
