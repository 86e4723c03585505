// SPDX-License-Identifier: LGPL-2.1-or-later
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int notify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, rc = 0;

    if (!path || !*path)
        return 0;
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
        return -EINVAL;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0'; /* abstract namespace */
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

uint64_t notify_watchdog_usec(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    const char *pid = getenv("WATCHDOG_PID");
    char *end;

    if (!usec || !*usec)
        return 0;
    if (pid && *pid) {
        errno = 0;
        unsigned long long p = strtoull(pid, &end, 10);
        if (errno || *end || p != (unsigned long long)getpid())
            return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(usec, &end, 10);
    if (errno || *end || usec[0] == '-')
        return 0;
    return (uint64_t)v;
}
