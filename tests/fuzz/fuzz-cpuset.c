/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: cpuset_parse() and cpuset_parse_mask() (xps_cpus/rps_cpus hex masks) on any bytes; a
 * parsed set formats and re-parses to itself in both forms. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);
        if (!s)
                return 0;
        CpuSet a = {}, b = {};
        int r = cpuset_parse(s, &a);
        assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -ENOMEM);
        if (r == 0) {
                char *f = cpuset_format(&a);
                assert(f);
                assert(cpuset_parse(f, &b) == 0);
                assert(cpuset_equal(&a, &b));
                assert(cpuset_count(&a) == cpuset_count(&b));
                assert(cpuset_is_subset(&a, &b) && cpuset_is_subset(&b, &a));
                char *g = cpuset_format(&b);
                assert(g && strcmp(f, g) == 0);                 /* the format is canonical */
                for (unsigned c = 0; c < BLKMQD_CPUS_MAX; c++)
                        if (cpuset_isset(&a, c))
                                assert(c < BLKMQD_CPUS_MAX);
                free(f);
                free(g);
        }
        cpuset_done(&a);
        cpuset_done(&b);

        /* the same bytes as a kernel bitmap mask ("00000000,0000000f") */
        r = cpuset_parse_mask(s, &a);
        assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -ENOMEM);
        if (r == 0) {
                char *m = cpuset_format_mask(&a);
                assert(m);
                assert(cpuset_parse_mask(m, &b) == 0);
                assert(cpuset_equal(&a, &b));
                char *n = cpuset_format_mask(&b);
                assert(n && strcmp(m, n) == 0);
                free(m);
                free(n);
        }
        cpuset_done(&a);
        cpuset_done(&b);
        free(s);
        return 0;
}
