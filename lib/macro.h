/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Small helpers in the systemd idiom: cleanup attributes, TAKE_PTR/TAKE_FD,
 * string equality. Header-only; links nothing.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

/* IN_SET(x, a, b, ...): x equals one of the values (each compared once, x evaluated once), as
 * systemd's macro.h spells it. The values take x's type. */
#define IN_SET(x, ...)                                                                     \
        ({                                                                                 \
                const __typeof__(x) _in_set_x_ = (x);                                      \
                const __typeof__(x) _in_set_v_[] = { __VA_ARGS__ };                        \
                bool _in_set_found_ = false;                                               \
                for (size_t _in_set_i_ = 0; _in_set_i_ < ELEMENTSOF(_in_set_v_); _in_set_i_++) \
                        if (_in_set_v_[_in_set_i_] == _in_set_x_) {                        \
                                _in_set_found_ = true;                                     \
                                break;                                                     \
                        }                                                                  \
                _in_set_found_;                                                            \
        })

/* Take ownership of a pointer/fd out of a cleanup variable. */
#define TAKE_PTR(p)                          \
        ({                                   \
                __typeof__(p) _tp_ = (p);    \
                (p) = NULL;                  \
                _tp_;                        \
        })
#define TAKE_FD(fd)                          \
        ({                                   \
                int _tf_ = (fd);             \
                (fd) = -EBADF;               \
                _tf_;                        \
        })

/* Define a cleanup function for "type *" that calls func(p) when p != NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)          \
        static inline void func##p(type *p) {            \
                if (*p)                                  \
                        func(*p);                        \
        }

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

/*
 * Enum <-> string over a table of names indexed by the enum (designated initializers; a NULL
 * hole has no name), as systemd's DEFINE_STRING_TABLE_LOOKUP:
 *   const char *name##_to_string(type)       NULL when out of range or a hole
 *   type name##_from_string(const char *)    the index whose name equals s; invalid when none or
 *                                            s is NULL
 * n is the table's length (the enum's _MAX).
 */
#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table, n)                               \
        const char *name##_to_string(type i) {                                                 \
                if ((unsigned long) (long) i >= (unsigned long) (n)) /* negative: huge */      \
                        return NULL;                                                           \
                return table[i];                                                               \
        }

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table, n, invalid)                    \
        type name##_from_string(const char *s) {                                               \
                for (size_t i = 0; s && i < (size_t) (n); i++)                                 \
                        if (table[i] && strcmp(table[i], s) == 0)                              \
                                return (type) i;                                               \
                return invalid;                                                                \
        }

#define DEFINE_STRING_TABLE_LOOKUP(name, type, table, n, invalid)                               \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, table, n)                             \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, table, n, invalid)

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline bool isempty(const char *s) {
        return !s || !*s;
}

static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* Replace *p with a copy of s (NULL allowed). Returns 0 or -ENOMEM. */
static inline int free_and_strdup(char **p, const char *s) {
        char *t = NULL;
        if (s) {
                t = strdup(s);
                if (!t)
                        return -ENOMEM;
        }
        free(*p);
        *p = t;
        return 0;
}

/* Replace *p with the text fmt formats (vasprintf). Returns 0, or -ENOMEM with *p unchanged. */
static inline int free_and_vasprintf(char **p, const char *fmt, va_list ap) {
        char *t;
        if (vasprintf(&t, fmt, ap) < 0)
                return -ENOMEM;
        free(*p);
        *p = t;
        return 0;
}

static inline int free_and_asprintf(char **p, const char *fmt, ...) _printf_(2, 3);
static inline int free_and_asprintf(char **p, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = free_and_vasprintf(p, fmt, ap);
        va_end(ap);
        return r;
}

/* Negative errno from a libc call that returns -1 and sets errno. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* free() and return NULL, for "p = mfree_str(p)". */
static inline char *mfree_str(char *p) {
        free(p);
        return NULL;
}

/* Drop one trailing newline in place. */
static inline void strip_newline_inplace(char *s) {
        size_t l = strlen(s);
        if (l > 0 && s[l - 1] == '\n')
                s[l - 1] = 0;
}
