/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration file syntax both daemons read: one "key = value" per line, '#' starts a
 * comment, blank lines ignored, "[section]" headers group keys ("[domain NAME]" style headers
 * carry an argument).  Values may be double-quoted to keep '#' or surrounding spaces.
 * Typed helpers range-check values so every daemon reports errors the same way:
 * "FILE:LINE: message".
 */
#ifndef COREHINT_CONF_H
#define COREHINT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ch_conf_line {
    const char *file;
    unsigned line;
    const char *section;     /* "" before the first header */
    const char *section_arg; /* "NAME" of "[domain NAME]", "" when absent */
    const char *key;
    const char *value;
};

/*
 * fn is called for each key; it returns 0 or a negative errno after writing a message into
 * err (size errlen).  ch_conf_parse_file returns 0, -ENOENT when the file does not exist (the
 * caller decides whether that is fine), or another -errno with "FILE:LINE: message" in err.
 */
typedef int (*ch_conf_fn)(void *ctx, const struct ch_conf_line *l, char *err, size_t errlen);

int ch_conf_parse_file(const char *path, ch_conf_fn fn, void *ctx, char *err, size_t errlen);
int ch_conf_parse_text(const char *name, const char *text, ch_conf_fn fn, void *ctx, char *err,
                       size_t errlen);

/* Typed values; on error they write "KEY: reason" into err and return -EINVAL / -ERANGE. */
int ch_conf_uint(const char *key, const char *value, uint64_t min, uint64_t max, uint64_t *out,
                 char *err, size_t errlen);
int ch_conf_double(const char *key, const char *value, double min, double max, double *out,
                   char *err, size_t errlen);
int ch_conf_bool(const char *key, const char *value, bool *out, char *err, size_t errlen);

#endif
