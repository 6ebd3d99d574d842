/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: parse_scheduler() on any bytes; the current elevator is one of the listed ones. */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);
        if (!s)
                return 0;
        char **avail = NULL, *cur = NULL;
        bool conf = false;
        int r = parse_scheduler(s, &avail, &cur, &conf);
        assert(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                assert(avail && avail[0]);
                assert(conf == (cur != NULL));
                if (cur)
                        assert(strv_contains(avail, cur));
                STRV_FOREACH(a, avail) {
                        assert(**a != 0);
                        assert(!strpbrk(*a, "[] "));
                }
        } else
                assert(!avail && !cur);
        strv_free(avail);
        free(cur);
        free(s);
        return 0;
}
