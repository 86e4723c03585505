/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading a whole (pseudo-)file: /proc and /sys files have no size to stat, so read to EOF. */
#ifndef COREHINT_FILE_H
#define COREHINT_FILE_H

#include <stddef.h>

/*
 * Read path into a NUL-terminated buffer the caller frees (*len excludes the NUL).  Stops
 * after max bytes.  Returns 0 when the whole file was read, 1 when it is longer than max (the
 * first max bytes are in *out), -errno on failure (*out is then NULL).
 */
int ch_read_file(const char *path, size_t max, char **out, size_t *len);

#endif
