/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: cpuset_parse() and cpuset_parse_mask() (xps_cpus/rps_cpus hex masks) on any bytes; a
 * parsed set formats and re-parses to itself in both forms. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* s through parse: a documented error, or a set that format writes, parse reads back as the same
 * set, and format writes again the same way (the format is canonical). */
static void round_trip(const char *s, int (*parse)(const char *s, CpuSet *ret), char *(*format)(const CpuSet *s)) {
        CpuSet a = {}, b = {};
        int r = parse(s, &a);
        assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -ENOMEM);
        if (r == 0) {
                char *f = format(&a);
                assert(f);
                assert(parse(f, &b) == 0);
                assert(cpuset_equal(&a, &b));
                assert(cpuset_count(&a) == cpuset_count(&b));
                assert(cpuset_is_subset(&a, &b) && cpuset_is_subset(&b, &a));
                char *g = format(&b);
                assert(g && strcmp(f, g) == 0);
                unsigned n = 0;
                for (unsigned c = 0; c < BLKMQD_CPUS_MAX; c++)
                        n += cpuset_isset(&a, c);
                assert(n == cpuset_count(&a));          /* every CPU of the set is below BLKMQD_CPUS_MAX */
                free(f);
                free(g);
        }
        cpuset_done(&a);
        cpuset_done(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);
        if (!s)
                return 0;
        round_trip(s, cpuset_parse, cpuset_format);
        /* the same bytes as a kernel bitmap mask ("00000000,0000000f") */
        round_trip(s, cpuset_parse_mask, cpuset_format_mask);
        free(s);
        return 0;
}
