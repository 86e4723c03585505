// SPDX-License-Identifier: LGPL-2.1-or-later
#include "corehint/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int ch_read_file(const char *path, size_t max, char **out, size_t *len)
{
    size_t cap = max < 4096 ? max + 1 : 4096, n = 0;
    char *buf = NULL;
    int fd, rc = 0;

    *out = NULL;
    *len = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (!(buf = malloc(cap))) {
        rc = -ENOMEM;
        goto fail;
    }
    for (;;) {
        if (n + 1 == cap) {
            if (n == max) {
                char probe;
                ssize_t r;
                while ((r = read(fd, &probe, 1)) < 0 && errno == EINTR)
                    ;
                if (r < 0) {
                    rc = -errno;
                    goto fail;
                }
                rc = r > 0 ? 1 : 0;
                break;
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = -ENOMEM;
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            goto fail;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return rc;
fail:
    close(fd);
    free(buf);
    return rc;
}
