// SPDX-License-Identifier: LGPL-2.1-or-later
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct {
    struct sockaddr_un addr;
    socklen_t len;
    uint64_t watchdog_usec;
} nt;

void notify_init(void)
{
    const char *path = getenv("NOTIFY_SOCKET");
    const char *wd = getenv("WATCHDOG_USEC");
    const char *wd_pid = getenv("WATCHDOG_PID");
    size_t n;

    if (path && (path[0] == '/' || path[0] == '@') &&
        (n = strlen(path)) < sizeof(nt.addr.sun_path)) {
        nt.addr.sun_family = AF_UNIX;
        memcpy(nt.addr.sun_path, path, n);
        if (path[0] == '@')
            nt.addr.sun_path[0] = '\0'; /* abstract namespace */
        nt.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    }
    if (wd && (!wd_pid || strtol(wd_pid, NULL, 10) == (long)getpid()))
        nt.watchdog_usec = strtoull(wd, NULL, 10);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

int notify_send(const char *state)
{
    int fd, rc = 0;

    if (!nt.len)
        return 1;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&nt.addr, nt.len) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

uint64_t notify_watchdog_usec(void)
{
    return nt.watchdog_usec;
}
