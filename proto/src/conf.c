// SPDX-License-Identifier: LGPL-2.1-or-later
#include "corehint/conf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF_MAX_BYTES (1u << 20)
#define CONF_LINE_MAX 1024u

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* Strip a comment that is not inside double quotes, then unquote the value in place. */
static int split_value(char *v, char *err, size_t errlen)
{
    bool quoted = false;

    for (char *p = v; *p; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == '#' && !quoted) {
            *p = '\0';
            break;
        }
    }
    if (quoted) {
        snprintf(err, errlen, "unterminated quote");
        return -EINVAL;
    }
    return 0;
}

static int parse_line(char *raw, const char *name, unsigned lineno, char *section,
                      char *section_arg, ch_conf_fn fn, void *ctx, char *err, size_t errlen)
{
    char msg[256] = "";
    char *s = trim(raw);
    int rc;

    if (*s == '\0' || *s == '#')
        return 0;
    if (*s == '[') {
        char *close = strchr(s, ']');
        if (!close || *trim(close + 1) != '\0') {
            snprintf(err, errlen, "%s:%u: malformed section header", name, lineno);
            return -EINVAL;
        }
        *close = '\0';
        char *hdr = trim(s + 1);
        char *sp = strpbrk(hdr, " \t");
        char *arg = "";
        if (sp) {
            *sp = '\0';
            arg = trim(sp + 1);
            size_t alen = strlen(arg);
            if (alen >= 2 && arg[0] == '"' && arg[alen - 1] == '"') {
                arg[alen - 1] = '\0';
                arg++;
            }
        }
        if (*hdr == '\0' || strlen(hdr) >= 64 || strlen(arg) >= 256) {
            snprintf(err, errlen, "%s:%u: malformed section header", name, lineno);
            return -EINVAL;
        }
        strcpy(section, hdr);
        strcpy(section_arg, arg);
        return 0;
    }
    char *eq = strchr(s, '=');
    if (!eq) {
        snprintf(err, errlen, "%s:%u: expected \"key = value\"", name, lineno);
        return -EINVAL;
    }
    *eq = '\0';
    char *key = trim(s);
    char *value = eq + 1;
    if (*key == '\0') {
        snprintf(err, errlen, "%s:%u: missing key before '='", name, lineno);
        return -EINVAL;
    }
    if ((rc = split_value(value, msg, sizeof(msg))) < 0) {
        snprintf(err, errlen, "%s:%u: %s: %s", name, lineno, key, msg);
        return rc;
    }
    value = trim(value);
    size_t vlen = strlen(value);
    if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
        value[vlen - 1] = '\0';
        value++;
    }
    struct ch_conf_line l = {
        .file = name,
        .line = lineno,
        .section = section,
        .section_arg = section_arg,
        .key = key,
        .value = value,
    };
    if ((rc = fn(ctx, &l, msg, sizeof(msg))) < 0) {
        snprintf(err, errlen, "%s:%u: %s", name, lineno, msg[0] ? msg : "invalid setting");
        return rc;
    }
    return 0;
}

int ch_conf_parse_text(const char *name, const char *text, ch_conf_fn fn, void *ctx, char *err,
                       size_t errlen)
{
    char section[64] = "";
    char section_arg[256] = "";
    char line[CONF_LINE_MAX];
    unsigned lineno = 0;
    const char *p = text;

    err[0] = '\0';
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        int rc;

        lineno++;
        if (len >= sizeof(line)) {
            snprintf(err, errlen, "%s:%u: line longer than %u bytes", name, lineno,
                     CONF_LINE_MAX - 1);
            return -EINVAL;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        rc = parse_line(line, name, lineno, section, section_arg, fn, ctx, err, errlen);
        if (rc < 0)
            return rc;
        p += len + (nl ? 1 : 0);
    }
    return 0;
}

int ch_conf_parse_file(const char *path, ch_conf_fn fn, void *ctx, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    char *text = NULL;
    int rc;

    err[0] = '\0';
    if (!f) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return rc;
    }
    text = malloc(CONF_MAX_BYTES + 1);
    if (!text) {
        rc = -ENOMEM;
        snprintf(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }
    size_t n = fread(text, 1, CONF_MAX_BYTES + 1, f);
    if (ferror(f)) {
        rc = -EIO;
        snprintf(err, errlen, "%s: read error", path);
        goto cleanup;
    }
    if (n > CONF_MAX_BYTES) {
        rc = -EFBIG;
        snprintf(err, errlen, "%s: larger than %u bytes", path, CONF_MAX_BYTES);
        goto cleanup;
    }
    if (memchr(text, '\0', n)) {
        rc = -EINVAL;
        snprintf(err, errlen, "%s: contains a NUL byte", path);
        goto cleanup;
    }
    text[n] = '\0';
    rc = ch_conf_parse_text(path, text, fn, ctx, err, errlen);
cleanup:
    free(text);
    fclose(f);
    return rc;
}

int ch_conf_uint(const char *key, const char *value, uint64_t min, uint64_t max, uint64_t *out,
                 char *err, size_t errlen)
{
    char *end;

    if (*value < '0' || *value > '9') {
        snprintf(err, errlen, "%s: \"%s\" is not an unsigned integer", key, value);
        return -EINVAL;
    }
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (*end != '\0') {
        snprintf(err, errlen, "%s: \"%s\" is not an unsigned integer", key, value);
        return -EINVAL;
    }
    if (errno == ERANGE || v < min || v > max) {
        snprintf(err, errlen, "%s: %s is out of range %llu..%llu", key, value,
                 (unsigned long long)min, (unsigned long long)max);
        return -ERANGE;
    }
    *out = v;
    return 0;
}

int ch_conf_double(const char *key, const char *value, double min, double max, double *out,
                   char *err, size_t errlen)
{
    char *end;

    errno = 0;
    double v = strtod(value, &end);
    if (*value == '\0' || *end != '\0' || !isfinite(v)) {
        snprintf(err, errlen, "%s: \"%s\" is not a number", key, value);
        return -EINVAL;
    }
    if (errno == ERANGE || v < min || v > max) {
        snprintf(err, errlen, "%s: %s is out of range %g..%g", key, value, min, max);
        return -ERANGE;
    }
    *out = v;
    return 0;
}

int ch_conf_bool(const char *key, const char *value, bool *out, char *err, size_t errlen)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};

    for (unsigned i = 0; i < 4; i++) {
        if (strcmp(value, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(value, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    snprintf(err, errlen, "%s: \"%s\" is not a boolean (yes/no)", key, value);
    return -EINVAL;
}
