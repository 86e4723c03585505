// SPDX-License-Identifier: LGPL-2.1-or-later
/* Any bytes as what a guest's qemu-ga sends back, read in chunks whose sizes come from the input
 * itself: the guest-sync wait for id 12345 and then every further reply line.  A line never
 * holds '\n' or a 0xff byte nor reaches QGA_REPLY_MAX bytes; a failure always says why, and no
 * reason holds a control character (it is logged); only a parsed reply hands out a value. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qga.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct agent {
    struct qga_framer f;
    const uint8_t *data;
    size_t size, pos;
    unsigned step;
};

static void check_err(int rc, const char *err)
{
    if (rc < 0 && !err[0])
        abort();
    for (const char *c = err; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            abort();
}

static int agent_line(void *ctx, char **line, char *err, size_t errlen)
{
    struct agent *a = ctx;

    for (;;) {
        int rc = qga_framer_line(&a->f, line, err, errlen);
        if (rc == 0 && (strlen(*line) >= QGA_REPLY_MAX || memchr(*line, 0xff, strlen(*line))))
            abort();
        if (rc != -EAGAIN)
            return rc;
        if (a->pos == a->size) {
            snprintf(err, errlen, "agent: closed");
            return -EPIPE;
        }
        size_t n = a->size - a->pos < a->step ? a->size - a->pos : a->step;
        a->pos += qga_framer_feed(&a->f, (const char *)a->data + a->pos, n);
        a->step = 1 + (a->step * 7 + 3) % 9000;
        if (a->f.len > QGA_REPLY_MAX)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct agent a;
    json_object *ret = NULL;
    char *line = NULL, err[256] = "";
    int rc;

    if (size < 1)
        return 0;
    a.f.len = 0;
    a.data = data + 1;
    a.size = size - 1;
    a.pos = 0;
    a.step = 1 + data[0] * 64u;
    rc = qga_sync_wait(12345, agent_line, &a, err, sizeof(err));
    if (rc != 0 && rc != -EPROTO && rc != -EREMOTEIO && rc != -EPIPE && rc != -ENOMEM)
        abort();
    check_err(rc, err);
    while (agent_line(&a, &line, err, sizeof(err)) == 0) {
        err[0] = '\0';
        rc = qga_reply_parse(line, &ret, err, sizeof(err));
        if ((rc != 0 && rc != -EPROTO && rc != -EREMOTEIO) || (rc < 0 && ret))
            abort();
        check_err(rc, err);
        json_object_put(ret);
        free(line);
    }
    return 0;
}
