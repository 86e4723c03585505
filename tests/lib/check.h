/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal table-driven unit test harness.  TEST(name) registers a case; the test binary runs
 * every case, or the one named on its command line (that is how ctest runs them one by one).
 * A failed CHECK records the failure and the case goes on, so one run shows every broken rule.
 */
#ifndef COREHINT_TEST_CHECK_H
#define COREHINT_TEST_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

void ch_test_register(const char *name, void (*fn)(void));
void ch_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Number of CHECKs evaluated so far: a case that evaluates none is reported as a failure. */
extern unsigned long ch_test_checks;

#define TEST(n)                                                                                    \
    static void test_##n(void);                                                                    \
    __attribute__((constructor)) static void register_##n(void)                                    \
    {                                                                                              \
        ch_test_register(#n, test_##n);                                                            \
    }                                                                                              \
    static void test_##n(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        ch_test_checks++;                                                                          \
        if (!(cond))                                                                               \
            ch_test_fail(__FILE__, __LINE__, "%s", #cond);                                         \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        ch_test_checks++;                                                                          \
        if (!(cond))                                                                               \
            ch_test_fail(__FILE__, __LINE__, __VA_ARGS__);                                         \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        ch_test_checks++;                                                                          \
        if (a_ != b_)                                                                              \
            ch_test_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, a_, #b, b_);   \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        ch_test_checks++;                                                                          \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            ch_test_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a,                  \
                         a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                  \
    } while (0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
