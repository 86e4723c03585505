// SPDX-License-Identifier: LGPL-2.1-or-later
/* ch_read_file: whole files, the limit, pseudo-files without a size, errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "corehint/file.h"

static char path[64];

static void make(const char *text, size_t len)
{
    snprintf(path, sizeof(path), "/tmp/corehint-test-file.XXXXXX");
    int fd = mkstemp(path);
    if (fd >= 0) {
        if (write(fd, text, len) != (ssize_t)len)
            path[0] = '\0';
        close(fd);
    }
}

TEST(whole_file_nul_terminated)
{
    char *buf;
    size_t len;

    make("0-3\n", 4);
    CHECK_INT(ch_read_file(path, 100, &buf, &len), 0);
    CHECK_INT(len, 4);
    CHECK_STR(buf, "0-3\n");
    free(buf);
    CHECK_INT(ch_read_file(path, 4, &buf, &len), 0); /* exactly max: still whole */
    CHECK_INT(len, 4);
    free(buf);
    unlink(path);
}

TEST(longer_than_max_is_cut_and_says_so)
{
    static char big[100000];
    char *buf;
    size_t len;

    memset(big, 'x', sizeof(big));
    make(big, sizeof(big));
    CHECK_INT(ch_read_file(path, 3, &buf, &len), 1);
    CHECK_INT(len, 3);
    CHECK_STR(buf, "xxx");
    free(buf);
    CHECK_INT(ch_read_file(path, 99999, &buf, &len), 1);
    CHECK_INT(len, 99999);
    free(buf);
    CHECK_INT(ch_read_file(path, 1 << 20, &buf, &len), 0);
    CHECK_INT(len, sizeof(big));
    CHECK(buf[len] == '\0');
    free(buf);
    unlink(path);
}

TEST(empty_and_pseudo_files)
{
    char *buf;
    size_t len;

    make("", 0);
    CHECK_INT(ch_read_file(path, 0, &buf, &len), 0);
    CHECK_INT(len, 0);
    CHECK_STR(buf, "");
    free(buf);
    unlink(path);
    /* /proc files report size 0: only reading to EOF finds their length */
    CHECK_INT(ch_read_file("/proc/self/status", 1 << 20, &buf, &len), 0);
    CHECK(len > 100 && strncmp(buf, "Name:", 5) == 0);
    free(buf);
}

TEST(errors)
{
    char *buf = (char *)1;
    size_t len = 7;

    CHECK_INT(ch_read_file("/nonexistent/corehint", 10, &buf, &len), -ENOENT);
    CHECK(buf == NULL);
    CHECK_INT(len, 0);
    CHECK_INT(ch_read_file("/", 10, &buf, &len), -EISDIR);
    CHECK(buf == NULL);
}
