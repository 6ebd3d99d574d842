/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* NULL-terminated string vectors (char **), as in systemd's strv.h. */

/* Free every string and the vector. Returns NULL. */
char **strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))

/* Number of strings in l (0 for NULL). */
size_t strv_length(char * const *l);

/* True when l contains a string equal to s. */
bool strv_contains(char * const *l, const char *s);

/* Append a copy of s to *l (allocating *l if NULL). Returns 0 or -ENOMEM. */
int strv_extend(char ***l, const char *s);

/* Join with separator into a newly allocated string ("" for an empty vector); NULL on ENOMEM. */
char *strv_join(char * const *l, const char *separator);

/* Deep copy; NULL on ENOMEM (or when l is NULL). */
char **strv_copy(char * const *l);

#define STRV_FOREACH(s, l) for (char * const *s = (l); s && *s; s++)
