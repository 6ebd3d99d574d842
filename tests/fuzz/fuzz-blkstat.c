/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer: disk_stat_parse(), debugfs_tags_parse(), debugfs_dispatched_parse(),
 * proc_softirqs_block_parse() (lib/blkstat.c) on the same text: only the documented return
 * codes, outputs untouched on error, n within 11..17.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blkstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = strndup((const char *) data, size);
        if (!text)
                return 0;
        DiskStat st = { .n = 99 };
        int r = disk_stat_parse(text, &st);
        assert(r == 0 || r == -EINVAL);
        assert(r == 0 ? st.n >= 11 && st.n <= 17 : st.n == 99);

        uint64_t nr = 7, busy = 7;
        r = debugfs_tags_parse(text, &nr, &busy);
        assert(r == 0 || r == -EINVAL || r == -ENOENT);
        if (r < 0)
                assert(nr == 7 && busy == 7);

        uint64_t b = 7;
        r = debugfs_dispatched_parse(text, &b);
        assert(r == 0 || r == -EINVAL);
        if (r < 0)
                assert(b == 7);

        uint64_t c[8];
        size_t n = 99;
        r = proc_softirqs_block_parse(text, c, 8, &n);
        assert(r == 0 || r == -EINVAL || r == -ENOENT);
        assert(r == 0 ? n > 0 : n == 99);
        free(text);
        return 0;
}
