/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"

char **strv_free(char **l) {
        STRV_FOREACH(s, l)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char * const *l) {
        size_t n = 0;
        STRV_FOREACH(s, l)
                n++;
        return n;
}

bool strv_contains(char * const *l, const char *s) {
        STRV_FOREACH(i, l)
                if (streq(*i, s))
                        return true;
        return false;
}

int strv_extend(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        char **t = realloc(*l, sizeof(char *) * (n + 2));
        if (!t) {
                free(c);
                return -ENOMEM;
        }
        t[n] = c;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

char *strv_join(char * const *l, const char *separator) {
        size_t k = strlen(separator), n = 1;
        STRV_FOREACH(s, l)
                n += strlen(*s) + k;
        char *r = malloc(n), *p = r;
        if (!r)
                return NULL;
        *p = 0;
        STRV_FOREACH(s, l) {
                if (s != l)
                        p = stpcpy(p, separator);
                p = stpcpy(p, *s);
        }
        return r;
}

char **strv_copy(char * const *l) {
        char **r = calloc(strv_length(l) + 1, sizeof(char *));
        if (!r)
                return NULL;
        size_t i = 0;
        STRV_FOREACH(s, l) {
                r[i] = strdup(*s);
                if (!r[i])
                        return strv_free(r);
                i++;
        }
        return r;
}
