/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Parsers for block statistics files. Pure: text in, numbers out; -EINVAL for text that
 * does not have the documented shape (truncated, empty), never a made-up 0.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * /sys/block/<disk>/stat (Documentation/block/stat.rst): 11 fields up to 4.18, 15 with
 * discards (4.18), 17 with flushes (5.5). Times in ms, sectors of 512 bytes.
 */
typedef enum DiskStatField {
        DISK_STAT_READ_IOS, DISK_STAT_READ_MERGES, DISK_STAT_READ_SECTORS, DISK_STAT_READ_TICKS,
        DISK_STAT_WRITE_IOS, DISK_STAT_WRITE_MERGES, DISK_STAT_WRITE_SECTORS, DISK_STAT_WRITE_TICKS,
        DISK_STAT_IN_FLIGHT, DISK_STAT_IO_TICKS, DISK_STAT_TIME_IN_QUEUE,
        DISK_STAT_DISCARD_IOS, DISK_STAT_DISCARD_MERGES, DISK_STAT_DISCARD_SECTORS, DISK_STAT_DISCARD_TICKS,
        DISK_STAT_FLUSH_IOS, DISK_STAT_FLUSH_TICKS,
        _DISK_STAT_MAX,
} DiskStatField;

typedef struct DiskStat {
        uint64_t v[_DISK_STAT_MAX];
        unsigned n;             /* fields present: 11, 15 or 17 */
        bool has_inflight;      /* /sys/block/<disk>/inflight read: */
        uint64_t inflight_read, inflight_write;
} DiskStat;

/* /sys/block/<disk>/inflight: "%8u %8u\n" reads and writes in flight. Returns 0 or -EINVAL. */
int disk_inflight_parse(const char *text, uint64_t *ret_read, uint64_t *ret_write);

/* Field name as in stat.rst ("read_ios", "in_flight", ...). */
const char *disk_stat_field_to_string(DiskStatField f);

/* Returns 0, or -EINVAL for fewer than 11 numbers or junk. */
int disk_stat_parse(const char *text, DiskStat *ret);

/*
 * debugfs hctx "tags" / "sched_tags" (block/blk-mq-debugfs.c blk_mq_debugfs_tags_show()):
 * "nr_tags=N" and the first "busy=N" of the bitmap_tags section.
 * Returns 0, -ENOENT when a key is missing (truncated file).
 */
int debugfs_tags_parse(const char *text, uint64_t *ret_nr_tags, uint64_t *ret_busy);

/*
 * debugfs hctx "dispatched" (<= 5.15): batch-size histogram, lines "%8u\t%lu" and a last
 * "%8u+\t%lu" (block/blk-mq-debugfs.c hctx_dispatched_show(), BLK_MQ_MAX_DISPATCH_ORDER 7;
 * removed in 5.16 by afd7de03c526). ret_batches = number of blk_mq_dispatch_rq_list()
 * calls (sum of all buckets). Returns 0 or -EINVAL.
 */
int debugfs_dispatched_parse(const char *text, uint64_t *ret_batches);

/*
 * The BLOCK line of /proc/softirqs, per CPU column. ret_counts gets up to max entries;
 * *ret_n the number of CPU columns. Returns 0, -ENOENT (no BLOCK line), -EINVAL.
 */
int proc_softirqs_block_parse(const char *text, uint64_t *ret_counts, size_t max, size_t *ret_n);
