/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Checks shared by the C tests of every suite (unit, fixture, integration), reported as TAP
 * (the Test Anything Protocol, version 12) on stdout, which meson reads (`protocol : 'tap'`):
 *
 *   CHECK(cond), CHECK_INT(a, b), CHECK_INT_CASE(a, b, fmt, ...), CHECK_U64, CHECK_STR,
 *   CHECK_NULL        one check: on failure "FAIL file:line: ..." with both values on stderr;
 *                     the test keeps going
 *   TAP_FAIL(fmt, ...) a failed check without a condition (a set-up step that went wrong)
 *   tap_section(name) starts a TAP test point: every check until the next tap_section() (or
 *                     tap_finish()) belongs to it; the point is "ok N - name (K checks)", or
 *                     "not ok N - name (F of K checks failed)", or "not ok N - name (no check
 *                     ran)": a section without a check fails
 *   tap_skip(name, reason)   a TAP point "ok N - name # SKIP reason": what could not be
 *                     checked here, named, counted by meson as a skipped subtest
 *   tap_skip_all(reason)     the test cannot run here at all: "1..0 # SKIP reason"; returns
 *                     the exit status for main() (0: under TAP a skip is told by the plan,
 *                     an exit status other than 0 is an error)
 *   tap_plain_stdout()  stdout as it was, for a helper mode of a test program (no TAP)
 *   tap_finish(name)  closes the last section (a test that opened none is one section named
 *                     name), prints the plan "1..N" and returns the exit status for main():
 *                     0 when every point passed, 1 when one failed or no check ran at all
 *
 * Everything else a test prints to stdout (printf) is turned into a TAP comment ("# ...")
 * by a stream that replaces stdout before main() runs, so no line of a test's own output
 * can be taken for a result; the TAP points are written to the original stdout.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned tap_failed, tap_checks;

/* TAP state: the points printed, the open section and the counts when it began */
static struct {
        FILE *out;              /* the original stdout: TAP points and the plan only */
        unsigned points;
        char section[256];
        bool in_section;
        unsigned section_skips;
        unsigned mark_checks, mark_failed;      /* the counts when the last point was made */
        bool any_failed_point;
        char line[4096];        /* the comment stream's partial line */
        size_t line_len;
} tap_state;

static inline void tap_comment_flush_line(void) {
        FILE *o = tap_state.out ? tap_state.out : stderr;
        fprintf(o, "# %.*s\n", (int) tap_state.line_len, tap_state.line);
        fflush(o);
        tap_state.line_len = 0;
}

static inline ssize_t tap_comment_write(void *cookie, const char *buf, size_t size) {
        for (size_t i = 0; i < size; i++) {
                if (buf[i] == '\n' || tap_state.line_len == sizeof(tap_state.line)) {
                        tap_comment_flush_line();
                        if (buf[i] == '\n')
                                continue;
                }
                tap_state.line[tap_state.line_len++] = buf[i];
        }
        return (ssize_t) size;
}

static inline int tap_comment_close(void *cookie) {
        if (tap_state.line_len)
                tap_comment_flush_line();
        return 0;
}

/* Before main(): TAP goes to a duplicate of fd 1, and stdout becomes the comment stream.
 * Child processes the test starts still write to fd 1: their lines are not TAP either, and
 * meson lists them as unknown lines, which is no result. */
__attribute__((constructor)) static void tap_init(void) {
        int fd = dup(STDOUT_FILENO);
        if (fd < 0)
                return;
        tap_state.out = fdopen(fd, "w");
        if (!tap_state.out) {
                close(fd);
                return;
        }
        setvbuf(tap_state.out, NULL, _IOLBF, 0);
        FILE *c = fopencookie(NULL, "w", (cookie_io_functions_t) {
                .write = tap_comment_write,
                .close = tap_comment_close,
        });
        if (c) {
                setvbuf(c, NULL, _IOLBF, 0);
                fflush(stdout);
                stdout = c;
        }
}

/* stdout as it was before main(), for a helper mode of a test program that is no test (its
 * output is read by a script, not by meson). */
static inline void tap_plain_stdout(void) {
        if (!tap_state.out)
                return;
        fflush(stdout);
        stdout = tap_state.out;
}

/* One TAP line on the original stdout, after whatever the test printed before it. */
static inline void tap_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_line(const char *fmt, ...) {
        FILE *o = tap_state.out ? tap_state.out : stdout;
        va_list ap;
        fflush(stdout);
        if (tap_state.line_len)
                tap_comment_flush_line();       /* a partial line printed before this point */
        fflush(stderr);
        va_start(ap, fmt);
        vfprintf(o, fmt, ap);
        va_end(ap);
        fputc('\n', o);
        fflush(o);
}

static inline void tap_section_close(void) {
        unsigned checks = tap_checks - tap_state.mark_checks;
        unsigned failed = tap_failed - tap_state.mark_failed;
        if (!tap_state.in_section)
                return;
        tap_state.in_section = false;
        tap_state.mark_checks = tap_checks;
        tap_state.mark_failed = tap_failed;
        if (checks == 0 && tap_state.section_skips > 0)
                return;                 /* all of it was skipped: the skip points say so */
        tap_state.points++;
        if (checks == 0) {
                tap_state.any_failed_point = true;
                tap_line("not ok %u - %s (no check ran)", tap_state.points, tap_state.section);
        } else if (failed) {
                tap_state.any_failed_point = true;
                tap_line("not ok %u - %s (%u of %u checks failed)", tap_state.points, tap_state.section,
                         failed, checks);
        } else
                tap_line("ok %u - %s (%u checks)", tap_state.points, tap_state.section, checks);
}

static inline void tap_section(const char *name) {
        if (!tap_state.in_section && tap_checks > tap_state.mark_checks) {
                /* checks made outside any section before this one: a point of their own */
                snprintf(tap_state.section, sizeof(tap_state.section), "checks before %s", name);
                tap_state.in_section = true;
                tap_state.section_skips = 0;
        }
        tap_section_close();
        snprintf(tap_state.section, sizeof(tap_state.section), "%s", name);
        tap_state.in_section = true;
        tap_state.section_skips = 0;
}

/* Runs f() as a section of its own, named after the function: TAP_RUN(test_parse_u64). */
#define TAP_RUN(f)                                                              \
        do {                                                                    \
                tap_section(#f);                                                \
                f();                                                            \
        } while (0)

/* Inside a section the skip point comes first, the section's own point when it closes. */
static inline void tap_skip(const char *name, const char *reason) {
        tap_state.points++;
        tap_state.section_skips++;
        tap_line("ok %u - %s # SKIP %s", tap_state.points, name, reason);
}

static inline int tap_skip_all(const char *reason) {
        tap_line("1..0 # SKIP %s", reason);
        return 0;
}

#define TAP_FAIL(...)                                                           \
        do {                                                                    \
                tap_failed++;                                                   \
                fflush(stdout);                                                 \
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
        tap_section_close();
        if (tap_checks > tap_state.mark_checks || tap_state.points == 0) {
                /* the checks outside any section (a test without sections: all of them) */
                snprintf(tap_state.section, sizeof(tap_state.section), "%s", name);
                tap_state.in_section = true;
                tap_state.section_skips = 0;
        }
        tap_section_close();
        fflush(stdout);
        tap_line("1..%u", tap_state.points);
        if (tap_failed || tap_state.any_failed_point) {
                fprintf(stderr, "%s: %u of %u checks FAILED%s\n", name, tap_failed, tap_checks,
                        tap_failed ? "" : " (a section ran no check)");
                return 1;
        }
        return 0;
}
