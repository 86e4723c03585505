// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * sysfs-poll FILE TIMEOUT_MS: wait for the kernel to signal a change of a sysfs attribute
 * (sysfs_notify()/kernfs_notify(): poll() reports POLLPRI|POLLERR), the way a daemon
 * watching /sys/devices/system/cpu/preferred would.
 *
 * Prints "ready <content>" once the first read is done and the wait begins (a test starts
 * the change after seeing it), then "changed <content>" (exit 0) or "timeout <content>"
 * (exit 1). Exit 2 on errors. Built statically by tests/kernel/run for the test guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_all(int fd, char *buf, size_t size)
{
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	n = read(fd, buf, size - 1);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	char buf[4096];
	struct pollfd pfd;
	char *end;
	long timeout;
	int fd, r;

	if (argc != 3) {
		fprintf(stderr, "usage: sysfs-poll FILE TIMEOUT_MS\n");
		return 2;
	}
	errno = 0;
	timeout = strtol(argv[2], &end, 10);
	if (errno || *end || timeout < 0 || timeout > 3600000) {
		fprintf(stderr, "sysfs-poll: bad timeout %s\n", argv[2]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || read_all(fd, buf, sizeof(buf)) < 0) {
		fprintf(stderr, "sysfs-poll: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	printf("ready %s\n", buf);
	fflush(stdout);

	pfd.fd = fd;
	pfd.events = POLLPRI | POLLERR;
	do {
		r = poll(&pfd, 1, (int)timeout);
	} while (r < 0 && errno == EINTR);
	if (r < 0) {
		fprintf(stderr, "sysfs-poll: poll: %s\n", strerror(errno));
		return 2;
	}
	if (read_all(fd, buf, sizeof(buf)) < 0) {
		fprintf(stderr, "sysfs-poll: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	printf("%s %s\n", r > 0 ? "changed" : "timeout", buf);
	return r > 0 ? 0 : 1;
}
