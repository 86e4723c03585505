// SPDX-License-Identifier: LGPL-2.1-or-later
#include "registry.h"

#include <errno.h>
#include <stddef.h>
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

/* Rebuild the records in model order, keeping those of VMs still there. */
int reg_sync(struct registry *r, const struct engine *e)
{
    const struct model *m = &e->model;
    struct vm_entry *n;
    unsigned j = 0;

    if (!e->decided)
        return 0;
    if (r->steps == e->steps)
        return 0;
    if (!(n = calloc(m->ndom + 1, sizeof(*n))))
        return -ENOMEM;
    for (unsigned i = 0; i < m->ndom; i++) {
        const struct model_dom *d = &m->dom[i];
        struct vm_entry *v = &n[i];

        while (j < r->nvm && strcmp(r->vm[j].uuid, d->uuid) < 0)
            forget(&r->vm[j++]);
        if (j < r->nvm && strcmp(r->vm[j].uuid, d->uuid) == 0)
            *v = r->vm[j++];
        else
            memcpy(v->uuid, d->uuid, sizeof(v->uuid));
        memcpy(v->name, d->name, sizeof(v->name));
        v->dom = d;
        v->dec = &e->dec[i];
    }
    for (; j < r->nvm; j++)
        forget(&r->vm[j]);
    free(r->vm);
    r->vm = n;
    r->nvm = m->ndom;
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
