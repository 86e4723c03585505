// SPDX-License-Identifier: LGPL-2.1-or-later
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_TESTS 512

static struct {
    const char *name;
    void (*fn)(void);
} tests[MAX_TESTS];
static unsigned ntests;
static unsigned failures;
static const char *current;
unsigned long ch_test_checks;

void ch_test_register(const char *name, void (*fn)(void))
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        abort();
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
}

void ch_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    failures++;
    fprintf(stderr, "FAIL %s: %s:%d: ", current, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int run(unsigned i)
{
    unsigned before = failures;
    unsigned long checks = ch_test_checks;

    current = tests[i].name;
    tests[i].fn();
    if (ch_test_checks == checks) {
        fprintf(stderr, "FAIL %s: the case checked nothing\n", current);
        failures++;
    }
    printf("%s %s (%lu checks)\n", failures == before ? "PASS" : "FAIL", current,
           ch_test_checks - checks);
    return failures == before ? 0 : 1;
}

int main(int argc, char **argv)
{
    unsigned bad = 0, ran = 0;

    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (unsigned i = 0; i < ntests; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    for (unsigned i = 0; i < ntests; i++) {
        bool wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], tests[i].name) == 0;
        if (wanted) {
            bad += (unsigned)run(i);
            ran++;
        }
    }
    if (ran == 0) {
        fprintf(stderr, "no test matched\n");
        return 2;
    }
    printf("%u passed, %u failed\n", ran - bad, bad);
    return bad ? 1 : 0;
}
