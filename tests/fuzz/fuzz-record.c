// SPDX-License-Identifier: LGPL-2.1-or-later
/* Any bytes as one line of a --record trace: a rejected line says why and yields nothing; an
 * accepted one formats to a line that parses again and formats identically (replay of a
 * recorded trace reproduces the run). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1), err[256] = "";
    struct snapshot *s = NULL, *t = NULL;
    char *a = NULL, *b = NULL;

    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    int rc = rec_parse(line, &s, err, sizeof(err));
    if (rc < 0) {
        if (s || !err[0] || (rc != -EINVAL && rc != -ENOMEM))
            abort();
        free(line);
        return 0;
    }
    if (!s || !(a = rec_format(s)))
        abort();
    if (rec_parse(a, &t, err, sizeof(err)) != 0 || !(b = rec_format(t)) || strcmp(a, b) != 0)
        abort();
    free(a);
    free(b);
    snap_free(s);
    snap_free(t);
    free(line);
    return 0;
}
