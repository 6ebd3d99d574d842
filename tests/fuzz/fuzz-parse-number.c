/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer: parse_u64(), parse_int(), parse_u64_range() on any bytes. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);   /* the kernel gives text: stop at NUL */
        if (!s)
                return 0;
        uint64_t u;
        int i, r = parse_u64(s, &u);
        assert(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                /* canonical form round-trips (leading zeros aside) */
                char buf[32];
                snprintf(buf, sizeof(buf), "%" PRIu64, u);
                uint64_t v;
                assert(parse_u64(buf, &v) == 0 && v == u);
                assert(strlen(s) > 0 && s[0] >= '0' && s[0] <= '9');
        }
        int q = parse_int(s, &i);
        assert(q == 0 || q == -EINVAL || q == -ERANGE);
        if (q == 0 && r == 0)
                assert((uint64_t) i == u);
        uint64_t w;
        int k = parse_u64_range(s, 10, 1000, &w);
        assert(k == 0 || k == -EINVAL || k == -ERANGE);
        if (k == 0)
                assert(w >= 10 && w <= 1000 && r == 0 && w == u);
        free(s);
        return 0;
}
