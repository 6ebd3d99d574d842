/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Minimal assertion helpers shared by the C tests of every suite (unit, fixture, integration). Every check prints
 * what it compared on failure (file:line, expression, both values) and the test keeps
 * going; tap_finish() turns the failure count into the exit code (0 pass, 1 fail).
 * Meson treats 77 as "skipped".
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned tap_failed, tap_checks;

#define TAP_FAIL(...)                                                           \
        do {                                                                    \
                tap_failed++;                                                   \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);            \
                fprintf(stderr, __VA_ARGS__);                                   \
                fputc('\n', stderr);                                            \
        } while (0)

#define CHECK(cond)                                                             \
        do {                                                                    \
                tap_checks++;                                                   \
                if (!(cond))                                                    \
                        TAP_FAIL("%s", #cond);                                  \
        } while (0)

#define CHECK_INT(a, b)                                                         \
        do {                                                                    \
                long long _a = (long long) (a), _b = (long long) (b);           \
                tap_checks++;                                                   \
                if (_a != _b)                                                   \
                        TAP_FAIL("%s == %s: got %lld, expected %lld", #a, #b, _a, _b); \
        } while (0)

/* CHECK_INT whose failure also names the case (printf format and arguments, evaluated only
 * then): for a check in a loop over a table of cases. */
#define CHECK_INT_CASE(a, b, ...)                                               \
        do {                                                                    \
                long long _a = (long long) (a), _b = (long long) (b);           \
                tap_checks++;                                                   \
                if (_a != _b) {                                                 \
                        TAP_FAIL("%s == %s: got %lld, expected %lld", #a, #b, _a, _b); \
                        fprintf(stderr, "     case: ");                         \
                        fprintf(stderr, __VA_ARGS__);                           \
                        fputc('\n', stderr);                                    \
                }                                                               \
        } while (0)

#define CHECK_U64(a, b)                                                         \
        do {                                                                    \
                uint64_t _a = (a), _b = (b);                                    \
                tap_checks++;                                                   \
                if (_a != _b)                                                   \
                        TAP_FAIL("%s == %s: got %" PRIu64 ", expected %" PRIu64, #a, #b, _a, _b); \
        } while (0)

#define CHECK_STR(a, b)                                                         \
        do {                                                                    \
                const char *_a = (a), *_b = (b);                                \
                tap_checks++;                                                   \
                if (!_a || !_b || strcmp(_a, _b) != 0)                          \
                        TAP_FAIL("%s == %s:\n     got      \"%s\"\n     expected \"%s\"", \
                                 #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); \
        } while (0)

#define CHECK_NULL(a)                                                           \
        do {                                                                    \
                const void *_a = (a);                                           \
                tap_checks++;                                                   \
                if (_a)                                                         \
                        TAP_FAIL("%s is not NULL", #a);                         \
        } while (0)

static inline int tap_finish(const char *name) {
        if (tap_failed) {
                fprintf(stderr, "%s: %u of %u checks FAILED\n", name, tap_failed, tap_checks);
                return 1;
        }
        printf("%s: all %u checks passed\n", name, tap_checks);
        return 0;
}
