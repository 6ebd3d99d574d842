/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blkstat.h"
#include "macro.h"

static const char * const disk_stat_table[_DISK_STAT_MAX] = {
        "read_ios", "read_merges", "read_sectors", "read_ticks",
        "write_ios", "write_merges", "write_sectors", "write_ticks",
        "in_flight", "io_ticks", "time_in_queue",
        "discard_ios", "discard_merges", "discard_sectors", "discard_ticks",
        "flush_ios", "flush_ticks",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(disk_stat_field, DiskStatField, disk_stat_table, _DISK_STAT_MAX);

/* Parse the next unsigned decimal at *p (after blanks); -EINVAL when none. */
static int next_u64(const char **p, uint64_t *ret) {
        const char *s = *p;
        while (*s == ' ' || *s == '\t')
                s++;
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        char *e;
        errno = 0;
        unsigned long long v = strtoull(s, &e, 10);
        if (errno)
                return -EINVAL;
        *ret = v;
        *p = e;
        return 0;
}

int disk_stat_parse(const char *text, DiskStat *ret) {
        assert(ret);
        DiskStat st = {};
        const char *p = text;

        while (st.n < _DISK_STAT_MAX && next_u64(&p, &st.v[st.n]) >= 0)
                st.n++;
        while (*p == ' ' || *p == '\t' || *p == '\n')
                p++;
        if (*p || (st.n != 11 && st.n != 15 && st.n != 17))   /* the three layouts stat.rst knows */
                return -EINVAL;
        *ret = st;
        return 0;
}

static int key_u64(const char *text, const char *key, uint64_t *ret) {
        size_t l = strlen(key);
        for (const char *p = text; (p = strstr(p, key)); p += l)
                if (p == text || p[-1] == '\n') {
                        const char *v = p + l;
                        if (next_u64(&v, ret) < 0 || (*v != '\n' && *v != 0))
                                return -EINVAL;
                        return 0;
                }
        return -ENOENT;
}

int debugfs_tags_parse(const char *text, uint64_t *ret_nr_tags, uint64_t *ret_busy) {
        uint64_t nr, busy;
        int r = key_u64(text, "nr_tags=", &nr);
        if (r < 0)
                return r;
        r = key_u64(text, "busy=", &busy);
        if (r < 0)
                return r;
        if (ret_nr_tags)
                *ret_nr_tags = nr;
        if (ret_busy)
                *ret_busy = busy;
        return 0;
}

int debugfs_dispatched_parse(const char *text, uint64_t *ret_batches) {
        assert(ret_batches);
        uint64_t sum = 0, bucket, count;
        const char *p = text;
        unsigned lines = 0;
        bool last = false;

        while (*p) {
                if (last || next_u64(&p, &bucket) < 0)
                        return -EINVAL;         /* nothing may follow the "32+" bucket */
                if (*p == '+') {
                        last = true;
                        p++;
                }
                if (*p != '\t' || next_u64(&p, &count) < 0)
                        return -EINVAL;
                if (*p == '\n')
                        p++;
                else if (*p)
                        return -EINVAL;
                sum += count;
                lines++;
        }
        if (lines == 0 || !last)
                return -EINVAL;         /* cut short: the last bucket ("%8u+") is missing */
        *ret_batches = sum;
        return 0;
}

int proc_softirqs_block_parse(const char *text, uint64_t *ret_counts, size_t max, size_t *ret_n) {
        assert(ret_n);
        const char *p = strstr(text, "BLOCK:");
        size_t n = 0;
        if (!p || (p != text && p[-1] != ' ' && p[-1] != '\n'))
                return -ENOENT;
        p += 6;
        uint64_t v;
        while (next_u64(&p, &v) >= 0) {
                if (n < max)
                        ret_counts[n] = v;
                n++;
        }
        while (*p == ' ' || *p == '\t')
                p++;
        if (n == 0 || (*p != '\n' && *p != 0))
                return -EINVAL;
        *ret_n = n;
        return 0;
}

int disk_inflight_parse(const char *text, uint64_t *ret_read, uint64_t *ret_write) {
        assert(ret_read);
        assert(ret_write);
        const char *p = text;
        uint64_t r, w;
        if (next_u64(&p, &r) < 0 || next_u64(&p, &w) < 0)
                return -EINVAL;
        while (*p == ' ' || *p == '\n')
                p++;
        if (*p)
                return -EINVAL;
        *ret_read = r;
        *ret_write = w;
        return 0;
}
