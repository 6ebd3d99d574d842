/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-stats FIXTURES_DIR
 *
 * Unit tests for the statistics pure code:
 *   - stats_rates() (stats/stats.c): window choice, first read has no rate, counter reset
 *     gives no rate, gauges get none, a full ring keeps the samples each value needs (a
 *     value read rarely keeps its rate however many other reads come between), no future samples;
 *   - lib/blkstat.c: /sys/block/X/stat with 17, 15 and 11 fields (truncated -> EINVAL),
 *     debugfs hctx tags (the real 6.1 and 6.18 fixture files), the dispatched histogram
 *     (5.15's block/blk-mq-debugfs.c hctx_dispatched_show() format), /proc/softirqs BLOCK;
 *   - lib/interrupts.c: this machine's /proc/interrupts, synthetic 64- and 256-CPU files in
 *     the kernel's format (kernel/irq/proc.c show_interrupts()), an offline-CPU header
 *     (CPU0 CPU2 CPU3), truncated lines.
 *   - stats_read_hctx() in a metrics scrape (stats_scrape()) on fixture copies: on a shared
 *     tagset (TAG_HCTX_SHARED, >= 5.16) tags, sched_tags and active are read once per disk and
 *     every hctx gets the values its own files hold; per-hctx values (dispatch_busy) are still
 *     read per hctx; no sharing without TAG_HCTX_SHARED, before 5.16, or (active) after 6.18;
 *     nothing is carried from one scrape to the next (hostfs_read_count() counts the reads).
 * With --known-bugs: only the checks of the bugs reported in docs/TESTING.md (fixed in
 * 3de7685; meson test "stats-regressions").
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "blkstat.h"
#include "device.h"
#include "hostfs.h"
#include "interrupts.h"
#include "macro.h"
#include "stats.h"
#include "strv.h"
#include "tap.h"
#include "test-util.h"

static const char *fixtures;

#define CHECK_NEAR(a, b) do {                                                           \
                double _a = (a), _b = (b);                                              \
                tap_checks++;                                                           \
                double _d = _a > _b ? _a - _b : _b - _a, _m = _b < 0 ? -_b : _b;      \
                if (!(_d <= 1e-6 * (_m > 1.0 ? _m : 1.0)))                              \
                        TAP_FAIL("%s == %s: got %.9g, expected %.9g", #a, #b, _a, _b);  \
        } while (0)

/* ---- stats_rates ------------------------------------------------------------------------------ */

#define SEC 1000000ULL
#define T0 (1000 * SEC)   /* CLOCK_MONOTONIC is never 0 in practice; 0 marks an empty slot */

static StatSample sample(uint64_t usec, uint64_t v0, uint64_t v1, uint64_t v2) {
        return (StatSample) { .usec = usec, .v = { v0, v1, v2 }, .valid = 7 };
}

static size_t ring_used(const StatSample *ring) {
        size_t n = 0;
        for (size_t i = 0; i < STATS_HISTORY; i++)
                n += ring[i].usec != 0;
        return n;
}

static void test_rates(void) {
        StatSample ring[STATS_HISTORY] = {};
        StatRates r;
        StatSample s;
        const uint32_t counters = 1 | 2;        /* v0, v1 counters; v2 a gauge */

        /* first read: nothing to compare with */
        s = sample(T0, 100, 1000, 5);
        stats_rates(ring, &s, 3, counters, 1 * SEC, &r);
        CHECK_INT(r.valid, 0);
        CHECK_NEAR(r.window_sec, 0);
        CHECK_INT(ring_used(ring), 1);

        /* 0.1 s later: too young (< 0.2 s), still no rate; but kept (>= 0.1 s spacing) */
        s = sample(T0 + SEC / 10, 110, 1000, 5);
        stats_rates(ring, &s, 3, counters, 1 * SEC, &r);
        CHECK_INT(r.valid, 0);
        CHECK_INT(ring_used(ring), 2);

        /* 50 ms after that: not recorded (a burst of reads does not flush the history) */
        s = sample(T0 + SEC / 10 + SEC / 20, 111, 1000, 5);
        stats_rates(ring, &s, 3, counters, 1 * SEC, &r);
        CHECK_INT(ring_used(ring), 2);

        /* 1 s after the first: rate against the sample whose age is closest to the window */
        s = sample(T0 + SEC, 600, 900, 7);      /* v1 went backwards: counter reset */
        stats_rates(ring, &s, 3, counters, 1 * SEC, &r);
        CHECK_NEAR(r.window_sec, 1.0);
        CHECK(r.valid & 1);
        CHECK_NEAR(r.per_sec[0], 500.0);
        CHECK(!(r.valid & 2));                  /* reset: no rate, not a huge or negative one */
        CHECK(!(r.valid & 4));                  /* gauge: no rate */

        /* a shorter window picks the younger sample: T0+0.1 is 0.9 s old, T0 1.0 s; window 0.5 -> 0.9 */
        memset(ring, 0, sizeof(ring));
        StatSample a = sample(T0, 0, 0, 0), b = sample(T0 + SEC / 2, 1000, 0, 0), c = sample(T0 + 4 * SEC / 5, 1600, 0, 0);
        stats_rates(ring, &a, 3, counters, SEC / 2, &r);
        stats_rates(ring, &b, 3, counters, SEC / 2, &r);
        CHECK_NEAR(r.window_sec, 0.5);
        CHECK_NEAR(r.per_sec[0], 2000.0);
        stats_rates(ring, &c, 3, counters, SEC / 2, &r);
        /* ages: a 0.8, b 0.3 -> |0.8-0.5| = 0.3, |0.3-0.5| = 0.2: b */
        CHECK_NEAR(r.window_sec, 0.3);
        CHECK_NEAR(r.per_sec[0], 2000.0);
        s = sample(T0 + SEC, 2000, 0, 0);       /* ages: a 1.0, b 0.5, c 0.2 -> b exactly */
        stats_rates(ring, &s, 3, counters, SEC / 2, &r);
        CHECK_NEAR(r.window_sec, 0.5);
        CHECK_NEAR(r.per_sec[0], 2000.0);
        s = sample(T0 + SEC + SEC / 10, 2000, 0, 0);
        stats_rates(ring, &s, 3, counters, 2 * SEC, &r);   /* window 2 s: the oldest, a (1.1 s) */
        CHECK_NEAR(r.window_sec, 1.1);

        /* a value invalid now or then gets no rate */
        memset(ring, 0, sizeof(ring));
        a = sample(T0, 10, 10, 10);
        a.valid = 1;                            /* v1 unavailable then */
        stats_rates(ring, &a, 3, 7, SEC, &r);
        b = sample(T0 + SEC, 20, 20, 20);
        b.valid = 2 | 4;                        /* v0 unavailable now */
        stats_rates(ring, &b, 3, 7, SEC, &r);
        CHECK_INT(r.valid, 0);

        /* samples holding different values (irq_count only read when asked): each value
         * gets its rate from the sample that holds it, not from the one nearest in time */
        memset(ring, 0, sizeof(ring));
        a = sample(T0, 100, 1000, 0);                   /* v0 and v1 */
        stats_rates(ring, &a, 3, 3, SEC, &r);
        b = sample(T0 + SEC, 200, 0, 0);
        b.valid = 1;                                    /* v0 only, nearer to the window */
        stats_rates(ring, &b, 3, 3, SEC, &r);
        c = sample(T0 + 2 * SEC, 400, 3000, 0);
        stats_rates(ring, &c, 3, 3, SEC, &r);
        CHECK_INT(r.valid, 3);
        CHECK_NEAR(r.per_sec[0], 200.0);                /* against b, 1 s old */
        CHECK_NEAR(r.per_sec[1], 1000.0);               /* against a, 2 s old: b lacks v1 */
        CHECK_NEAR(r.window_sec, 2.0);                  /* the widest window used */

        /* a value read only 50 ms after a read of others (irq_count_rate right after
         * dispatched) is still recorded: the next read of it has a rate */
        memset(ring, 0, sizeof(ring));
        a = sample(T0, 100, 0, 0);
        a.valid = 1;
        stats_rates(ring, &a, 3, 3, SEC, &r);
        b = sample(T0 + SEC / 20, 101, 7000, 0);
        b.valid = 3;
        stats_rates(ring, &b, 3, 3, SEC, &r);
        CHECK_INT(ring_used(ring), 1);                  /* in a's place: it holds all a held */
        c = sample(T0 + SEC / 20 + 2 * SEC, 301, 7400, 0);
        c.valid = 3;
        stats_rates(ring, &c, 3, 3, SEC, &r);
        CHECK(r.valid & 2);
        CHECK_NEAR(r.per_sec[1], 200.0);
        /* ... also when it lacks one of the others: then beside it */
        memset(ring, 0, sizeof(ring));
        a = sample(T0, 100, 0, 0);
        a.valid = 1;
        stats_rates(ring, &a, 3, 3, SEC, &r);
        b = sample(T0 + SEC / 20, 0, 7000, 0);
        b.valid = 2;
        stats_rates(ring, &b, 3, 3, SEC, &r);
        CHECK_INT(ring_used(ring), 2);
        c = sample(T0 + 2 * SEC, 300, 7400, 0);
        c.valid = 3;
        stats_rates(ring, &c, 3, 3, SEC, &r);
        CHECK_INT(r.valid, 3);

        /* a counter that did not move has rate 0, and that is a valid rate */
        memset(ring, 0, sizeof(ring));
        a = sample(T0, 42, 0, 0);
        b = sample(T0 + SEC, 42, 0, 0);
        stats_rates(ring, &a, 1, 1, SEC, &r);
        stats_rates(ring, &b, 1, 1, SEC, &r);
        CHECK(r.valid & 1);
        CHECK_NEAR(r.per_sec[0], 0.0);

        /* a sample "from the future" (clock confusion) is never used */
        memset(ring, 0, sizeof(ring));
        a = sample(T0 + 10 * SEC, 0, 0, 0);
        stats_rates(ring, &a, 1, 1, SEC, &r);
        b = sample(T0, 100, 0, 0);
        stats_rates(ring, &b, 1, 1, SEC, &r);
        CHECK_INT(r.valid, 0);

        /* a full ring drops the oldest sample no value needs: 20 reads 0.2 s apart with a
         * 100 s window keep the first read (the oldest younger than the window: the best
         * base as it ages), and drop i = 1..4 */
        memset(ring, 0, sizeof(ring));
        for (unsigned i = 0; i < 20; i++) {
                s = sample(T0 + i * SEC / 5, i * 100, 0, 0);
                stats_rates(ring, &s, 1, 1, 100 * SEC, &r);
        }
        CHECK_INT(ring_used(ring), STATS_HISTORY);
        /* the last read (i = 19, 3.8 s) found i = 0 still kept */
        CHECK_NEAR(r.window_sec, 3.8);
        CHECK_NEAR(r.per_sec[0], 500.0);
        /* with a 1 s window the newest sample at least 1 s old is the base: i = 14 for i = 19 */
        memset(ring, 0, sizeof(ring));
        for (unsigned i = 0; i < 20; i++) {
                s = sample(T0 + i * SEC / 5, i * 100, 0, 0);
                stats_rates(ring, &s, 1, 1, SEC, &r);
        }
        CHECK_NEAR(r.window_sec, 1.0);
        CHECK_NEAR(r.per_sec[0], 500.0);

        /* issue 13 item 19: irq_count (v1) read once, then 20 reads of other counters 3 s
         * apart (window 1 s): the irq_count sample is the only one holding v1 and must stay,
         * so the next irq_count read still has a rate (the old ring dropped it after 16) */
        memset(ring, 0, sizeof(ring));
        a = sample(T0, 0, 5000, 0);
        a.valid = 3;
        stats_rates(ring, &a, 3, 3, SEC, &r);
        for (unsigned i = 1; i <= 20; i++) {
                s = sample(T0 + i * 3 * SEC, i * 10, 0, 0);
                s.valid = 1;
                stats_rates(ring, &s, 3, 3, SEC, &r);
                CHECK(r.valid & 1);
        }
        CHECK_INT(ring_used(ring), STATS_HISTORY);
        b = sample(T0 + 63 * SEC, 210, 5000 + 63 * 40, 0);
        b.valid = 3;
        stats_rates(ring, &b, 3, 3, SEC, &r);
        CHECK(r.valid & 2);
        CHECK_NEAR(r.per_sec[1], 40.0);                 /* against the first read, 63 s old */
        CHECK_NEAR(r.per_sec[0], 10.0 / 3.0);           /* against i = 20, 3 s old */
        /* the same with reads 0.2 s apart: the other counters' reads fill the ring in 3 s */
        memset(ring, 0, sizeof(ring));
        stats_rates(ring, &a, 3, 3, SEC, &r);
        for (unsigned i = 1; i <= 40; i++) {
                s = sample(T0 + i * SEC / 5, i, 0, 0);
                s.valid = 1;
                stats_rates(ring, &s, 3, 3, SEC, &r);
        }
        b = sample(T0 + 9 * SEC, 50, 5000 + 900, 0);
        b.valid = 3;
        stats_rates(ring, &b, 3, 3, SEC, &r);
        CHECK(r.valid & 2);
        CHECK_NEAR(r.per_sec[1], 100.0);
        /* and the next irq_count read 1 s later uses the one before, 1 s old */
        c = sample(T0 + 10 * SEC, 55, 5900 + 70, 0);
        c.valid = 3;
        stats_rates(ring, &c, 3, 3, SEC, &r);
        CHECK(r.valid & 2);
        CHECK_NEAR(r.per_sec[1], 70.0);

        /* all STATS_MAX_VALUES values */
        memset(ring, 0, sizeof(ring));
        a = (StatSample) { .usec = T0 };
        b = (StatSample) { .usec = T0 + 2 * SEC };
        for (unsigned i = 0; i < STATS_MAX_VALUES; i++) {
                a.v[i] = i;
                b.v[i] = i + 2 * (i + 1);
        }
        a.valid = b.valid = (UINT32_C(1) << STATS_MAX_VALUES) - 1;
        stats_rates(ring, &a, STATS_MAX_VALUES, a.valid, SEC, &r);
        stats_rates(ring, &b, STATS_MAX_VALUES, a.valid, SEC, &r);
        CHECK_INT(r.valid, a.valid);
        for (unsigned i = 0; i < STATS_MAX_VALUES; i++)
                CHECK_NEAR(r.per_sec[i], i + 1.0);

        /* hctx_stats_to_sample: values in StatId order, valid bits, time */
        HctxStats hs = { .usec = T0 };
        hs.v[STAT_DISPATCHED] = (StatValue) { .valid = true, .value = 77 };
        hs.v[STAT_TAGS_BUSY] = (StatValue) { .valid = true, .value = 3 };
        hctx_stats_to_sample(&hs, &s);
        CHECK_U64(s.usec, T0);
        CHECK_U64(s.v[STAT_DISPATCHED], 77);
        CHECK_U64(s.v[STAT_TAGS_BUSY], 3);
        CHECK_INT(s.valid, (1u << STAT_DISPATCHED) | (1u << STAT_TAGS_BUSY));

        /* counters vs gauges, names (they are file names and Prometheus names) */
        CHECK(stat_id_is_counter(STAT_DISPATCHED) && stat_id_is_counter(STAT_COMPLETED_LOCAL) &&
              stat_id_is_counter(STAT_COMPLETED_REMOTE) && stat_id_is_counter(STAT_RUNS) && stat_id_is_counter(STAT_IRQ_COUNT));
        CHECK(!stat_id_is_counter(STAT_ACTIVE) && !stat_id_is_counter(STAT_TAGS_BUSY) &&
              !stat_id_is_counter(STAT_SCHED_TAGS_BUSY) && !stat_id_is_counter(STAT_DISPATCH_BUSY));
        CHECK_STR(stat_id_to_string(STAT_COMPLETED_REMOTE), "completed_remote");
        CHECK_NULL(stat_id_to_string(_STAT_MAX));
        for (StatId i = 0; i < _STAT_MAX; i++) {
                const char *n = stat_id_to_string(i), *h = stat_id_help(i);
                CHECK(n && strspn(n, "abcdefghijklmnopqrstuvwxyz_") == strlen(n));
                CHECK(h && *h && !strchr(h, '\n'));
        }
        CHECK(_STAT_MAX <= STATS_MAX_VALUES);
}

/* ---- lib/blkstat.c ---------------------------------------------------------------------------- */

static void test_disk_stat(void) {
        DiskStat st;

        /* 17 fields (5.5+): this machine's vda, as printed by block/genhd.c part_stat_show() */
        const char *s17 = "  139540    14779  5433210    44695    34039   149214  5647720    39156        0    45400   123944   196072       48  3621960    38516     3874     1575\n";
        CHECK_INT(disk_stat_parse(s17, &st), 0);
        CHECK_INT(st.n, 17);
        CHECK_U64(st.v[DISK_STAT_READ_IOS], 139540);
        CHECK_U64(st.v[DISK_STAT_READ_SECTORS], 5433210);
        CHECK_U64(st.v[DISK_STAT_IN_FLIGHT], 0);
        CHECK_U64(st.v[DISK_STAT_TIME_IN_QUEUE], 123944);
        CHECK_U64(st.v[DISK_STAT_DISCARD_IOS], 196072);
        CHECK_U64(st.v[DISK_STAT_FLUSH_IOS], 3874);
        CHECK_U64(st.v[DISK_STAT_FLUSH_TICKS], 1575);

        /* 15 fields (4.19 .. 5.4) */
        CHECK_INT(disk_stat_parse("     1        2        3        4        5        6        7        8        9       10       11       12       13       14       15\n", &st), 0);
        CHECK_INT(st.n, 15);
        CHECK_U64(st.v[DISK_STAT_DISCARD_TICKS], 15);
        /* 11 fields (up to 4.18) */
        CHECK_INT(disk_stat_parse("     1        2        3        4        5        6        7        8        9       10       11\n", &st), 0);
        CHECK_INT(st.n, 11);
        CHECK_U64(st.v[DISK_STAT_TIME_IN_QUEUE], 11);
        /* without newline, tabs */
        CHECK_INT(disk_stat_parse("1\t2 3 4 5 6 7 8 9 10 11", &st), 0);
        /* big counters */
        CHECK_INT(disk_stat_parse("18446744073709551615 0 0 0 0 0 0 0 0 0 0\n", &st), 0);
        CHECK_U64(st.v[0], UINT64_MAX);

        /* truncated, empty, junk */
        const char *bad[] = {
                "", "\n", "   \n", "1 2 3\n", "1 2 3 4 5 6 7 8 9 10\n",
                "1 2 3 4 5 6 7 8 9 10 x\n", "1 2 3 4 5 6 7 8 9 10 11 x\n", "-1 2 3 4 5 6 7 8 9 10 11\n",
                "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n",
                "18446744073709551616 0 0 0 0 0 0 0 0 0 0\n",
                "1 2 3 4 5 6 7 8 9 10 11\n12\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                DiskStat x = { .n = 99 };
                CHECK_INT_CASE(disk_stat_parse(bad[i], &x), -EINVAL, "\"%s\"", bad[i]);
                CHECK_INT(x.n, 99);     /* untouched */
        }

        CHECK_STR(disk_stat_field_to_string(DISK_STAT_READ_IOS), "read_ios");
        CHECK_STR(disk_stat_field_to_string(DISK_STAT_IN_FLIGHT), "in_flight");
        CHECK_STR(disk_stat_field_to_string(DISK_STAT_FLUSH_TICKS), "flush_ticks");
        CHECK_NULL(disk_stat_field_to_string(_DISK_STAT_MAX));
}

static void test_tags(void) {
        char path[1024];
        uint64_t nr = 0, busy = 99;

        /* the real 6.1 file (VM capture) */
        snprintf(path, sizeof(path), "%s/vm-6.1-virtio-scsi-4q/sys/kernel/debug/block/sda/hctx0/tags", fixtures);
        _cleanup_free_ char *t61 = test_read_file(path);
        CHECK(t61 != NULL);
        if (t61) {
                CHECK_INT(debugfs_tags_parse(t61, &nr, &busy), 0);
                CHECK_U64(nr, 256);
                CHECK_U64(busy, 0);
                /* truncated before the bitmap_tags section: no busy= -> ENOENT, never 0 */
                char *cut = strstr(t61, "bitmap_tags:");
                if (cut) {
                        _cleanup_free_ char *head = strndup(t61, cut - t61);
                        CHECK_INT(debugfs_tags_parse(head, &nr, &busy), -ENOENT);
                }
                /* cut inside the busy= value line: "busy=" then nothing */
                char *b = strstr(t61, "\nbusy=");
                if (b) {
                        _cleanup_free_ char *head = strndup(t61, b - t61 + 6);
                        CHECK_INT(debugfs_tags_parse(head, &nr, &busy), -EINVAL);
                }
        }
        /* the real 6.18 file (this machine) */
        snprintf(path, sizeof(path), "%s/host-6.18-virtio-blk/sys/kernel/debug/block/vda/hctx0/tags", fixtures);
        _cleanup_free_ char *t618 = test_read_file(path);
        CHECK(t618 != NULL);
        if (t618) {
                CHECK_INT(debugfs_tags_parse(t618, &nr, &busy), 0);
                CHECK_U64(nr, 128);
        }
        /* busy under load, with a reserved-tags section after it: the first busy= is the one */
        const char *loaded = "nr_tags=64\nnr_reserved_tags=1\nactive_queues=0\n\nbitmap_tags:\ndepth=63\nbusy=17\ncleared=3\n"
                             "bits_per_word=16\nmap_nr=4\n\nbreserved_tags:\ndepth=1\nbusy=1\ncleared=0\n";
        CHECK_INT(debugfs_tags_parse(loaded, &nr, &busy), 0);
        CHECK_U64(nr, 64);
        CHECK_U64(busy, 17);
        CHECK_INT(debugfs_tags_parse(loaded, NULL, NULL), 0);
        /* keys must start a line: "ws_active=" and "nr_reserved_tags=" are not "active=" / "nr_tags=" */
        CHECK_INT(debugfs_tags_parse("nr_reserved_tags=5\nxbusy=3\n", &nr, &busy), -ENOENT);
        CHECK_INT(debugfs_tags_parse("", &nr, &busy), -ENOENT);
        CHECK_INT(debugfs_tags_parse("nr_tags=abc\nbusy=1\n", &nr, &busy), -EINVAL);
        CHECK_INT(debugfs_tags_parse("nr_tags=4\nbusy=1x\n", &nr, &busy), -EINVAL);
}

static void test_dispatched(void) {
        uint64_t n = 0;
        /* hctx_dispatched_show(): "%8u\t%lu\n" for 0,1,2,4,8,16 and "%8u+\t%lu\n" for 32 */
        char text[512];
        const unsigned buckets[] = { 0, 1, 2, 4, 8, 16 };
        const uint64_t counts[] = { 123, 4567, 89, 10, 2, 1, 7 };
        char *p = text;
        for (size_t i = 0; i < ELEMENTSOF(buckets); i++)
                p += sprintf(p, "%8u\t%lu\n", buckets[i], (unsigned long) counts[i]);
        p += sprintf(p, "%8u+\t%lu\n", 32u, (unsigned long) counts[6]);
        CHECK(strncmp(text, "       0\t123\n", 13) == 0);     /* the example line of §1.1 */
        CHECK_INT(debugfs_dispatched_parse(text, &n), 0);
        CHECK_U64(n, 123 + 4567 + 89 + 10 + 2 + 1 + 7);

        const char *zero = "       0\t0\n       1\t0\n       2\t0\n       4\t0\n       8\t0\n      16\t0\n      32+\t0\n";
        n = 1;
        CHECK_INT(debugfs_dispatched_parse(zero, &n), 0);
        CHECK_U64(n, 0);

        const char *bad[] = {
                "",                                     /* empty */
                "       0\t123\n       1",              /* cut after a bucket */
                "       0\t123\n       1\t",            /* cut after the tab */
                "       0 123\n",                       /* a blank, not a tab */
                "       0\tx\n",
                "      32-\t1\n",
                "garbage\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                n = 42;
                CHECK_INT_CASE(debugfs_dispatched_parse(bad[i], &n), -EINVAL, "\"%s\"", bad[i]);
                CHECK_U64(n, 42);
        }
}

static void test_softirqs(void) {
        uint64_t c[4] = {};
        size_t n = 0;
        const char *two = "                    CPU0       CPU1       \n          HI:          0          0\n"
                          "       TIMER:     108045      82956\n       BLOCK:   10561004   13288165\n"
                          "    IRQ_POLL:          0          0\n";
        CHECK_INT(proc_softirqs_block_parse(two, c, 4, &n), 0);
        CHECK_INT(n, 2);
        CHECK_U64(c[0], 10561004);
        CHECK_U64(c[1], 13288165);

        /* this machine */
        _cleanup_free_ char *real = test_read_file("/proc/softirqs");
        if (real) {
                uint64_t many[BLKMQD_CPUS_MAX] = {};
                CHECK_INT(proc_softirqs_block_parse(real, many, ELEMENTSOF(many), &n), 0);
                long online = sysconf(_SC_NPROCESSORS_ONLN);
                CHECK_INT(n, online);
        }
        /* more columns than room: all counted, max stored */
        uint64_t one[1] = {};
        CHECK_INT(proc_softirqs_block_parse(two, one, 1, &n), 0);
        CHECK_INT(n, 2);
        CHECK_U64(one[0], 10561004);

        CHECK_INT(proc_softirqs_block_parse("                    CPU0\n          HI:          0\n", c, 4, &n), -ENOENT);
        CHECK_INT(proc_softirqs_block_parse("", c, 4, &n), -ENOENT);
        CHECK_INT(proc_softirqs_block_parse("       BLOCK:\n", c, 4, &n), -EINVAL);
        CHECK_INT(proc_softirqs_block_parse("  NOT_BLOCK:  12\n", c, 4, &n), -ENOENT);
}

/* ---- lib/interrupts.c ------------------------------------------------------------------------ */

/*
 * /proc/interrupts as kernel/irq/proc.c show_interrupts() prints it on x86:
 *   header: "%*s" (prec + 8 blanks), then "CPU%-8d" per online CPU
 *   line:   "%*d: " irq, "%10u " per online CPU, " %8s" chip, " %*lu" hwirq, "-%-8s" handler,
 *           "  %s" first action, ", %s" more actions
 */
static char *gen_interrupts(const unsigned *cpus, size_t n_cpus, unsigned n_irqs, unsigned first_irq) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        int prec = 3;
        fprintf(f, "%*s", prec + 8, "");
        for (size_t j = 0; j < n_cpus; j++)
                fprintf(f, "CPU%-8u", cpus[j]);
        fputc('\n', f);
        for (unsigned i = 0; i < n_irqs; i++) {
                fprintf(f, "%*u: ", prec, first_irq + i);
                for (size_t j = 0; j < n_cpus; j++)
                        fprintf(f, "%10u ", (i * 1000u + cpus[j]) * (j % 3 == 0));
                fprintf(f, " %8s %*u-%-8s  megasas%u-msix%u\n", "IR-PCI-MSIX-0000:3b:00.0", prec, 1 + i, "edge", 0, i);
        }
        fprintf(f, "NMI: ");
        for (size_t j = 0; j < n_cpus; j++)
                fprintf(f, "%10u ", 7u);
        fprintf(f, "  Non-maskable interrupts\nERR:          0\nMIS:          0\n");
        fclose(f);
        return buf;
}

static void check_generated(size_t n_cpus, const unsigned *cpus, unsigned n_irqs) {
        _cleanup_free_ char *text = gen_interrupts(cpus, n_cpus, n_irqs, 45);
        ProcInterrupts p = {};
        CHECK_INT(proc_interrupts_parse(text, &p), 0);
        CHECK_INT(p.n_cpus, n_cpus);
        bool ok = p.n_cpus == n_cpus;
        for (size_t j = 0; ok && j < n_cpus; j++)
                ok = p.cpus[j] == cpus[j];
        tap_checks++;
        if (!ok)
                TAP_FAIL("%zu CPUs: the column CPU numbers differ", n_cpus);
        CHECK_INT(p.n_lines, n_irqs);  /* NMI/ERR/MIS skipped */
        for (unsigned i = 0; i < n_irqs && i < p.n_lines; i++) {
                const IrqLine *l = proc_interrupts_find(&p, 45 + i);
                tap_checks++;
                if (!l) {
                        TAP_FAIL("%zu CPUs: irq %u missing", n_cpus, 45 + i);
                        continue;
                }
                char name[64];
                snprintf(name, sizeof(name), "megasas0-msix%u", i);
                CHECK_STR(l->chip, "IR-PCI-MSIX-0000:3b:00.0");
                CHECK_STR(l->name, name);
                uint64_t want = 0;
                for (size_t j = 0; j < n_cpus; j++) {
                        uint64_t c = (i * 1000u + cpus[j]) * (j % 3 == 0);
                        want += c;
                        if (l->counts[j] != c) {
                                TAP_FAIL("%zu CPUs: irq %u column %zu (CPU%u) = %" PRIu64 ", expected %" PRIu64,
                                         n_cpus, 45 + i, j, cpus[j], l->counts[j], c);
                                break;
                        }
                }
                CHECK_U64(irq_line_total(&p, l), want);
        }
        CHECK_NULL(proc_interrupts_find(&p, 44));
        CHECK_NULL(proc_interrupts_find(&p, 45 + n_irqs));
        proc_interrupts_done(&p);
        CHECK_INT(p.n_lines, 0);
}

static void test_interrupts(void) {
        unsigned cpus[256];
        for (unsigned i = 0; i < 256; i++)
                cpus[i] = i;

        check_generated(2, cpus, 3);
        check_generated(64, cpus, 65);          /* megaraid_sas: 65 MSI-X vectors on 64 CPUs */
        check_generated(256, cpus, 130);
        const unsigned offline[] = { 0, 2, 3 }; /* CPU1 offline: the header omits it */
        check_generated(3, offline, 4);
        const unsigned sparse[] = { 0, 1, 4095 };
        check_generated(3, sparse, 2);

        /* this machine's real file: every numeric line, columns = CPU header tokens */
        _cleanup_free_ char *real = test_read_file("/proc/interrupts");
        CHECK(real != NULL);
        if (real) {
                ProcInterrupts p = {};
                CHECK_INT(proc_interrupts_parse(real, &p), 0);
                long online = sysconf(_SC_NPROCESSORS_ONLN);
                CHECK_INT(p.n_cpus, online);
                size_t numeric = 0;
                for (const char *l = real; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                        const char *s = l + strspn(l, " ");
                        if (*s >= '0' && *s <= '9')
                                numeric++;
                }
                CHECK_INT(p.n_lines, numeric);
                for (size_t i = 0; i < p.n_lines; i++)
                        CHECK(p.lines[i].chip && *p.lines[i].chip && p.lines[i].name);
                proc_interrupts_done(&p);
        }
        /* the committed capture of this machine: exact values */
        char path[1024];
        snprintf(path, sizeof(path), "%s/host-6.18-virtio-blk/proc/interrupts", fixtures);
        _cleanup_free_ char *cap = test_read_file(path);
        CHECK(cap != NULL);
        if (cap) {
                ProcInterrupts p = {};
                CHECK_INT(proc_interrupts_parse(cap, &p), 0);
                CHECK_INT(p.n_cpus, 2);
                const IrqLine *l = proc_interrupts_find(&p, 36);
                CHECK(l != NULL);
                if (l) {
                        CHECK_STR(l->chip, "PCI-MSIX-0000:00:02.0");
                        CHECK_STR(l->name, "virtio1-req.0");
                }
                l = proc_interrupts_find(&p, 24);
                CHECK(l && streq(l->chip, "IO-APIC") && streq(l->name, "ACPI:Ged") && l->counts[0] == 1 && l->counts[1] == 0);
                proc_interrupts_done(&p);
        }

        /* shared IRQ with two actions; an IRQ without an action; old kernels without "-edge" */
        ProcInterrupts p = {};
        CHECK_INT(proc_interrupts_parse("           CPU0       CPU1\n"
                                        " 16:         10         20   IO-APIC  16-fasteoi   ehci_hcd:usb1, nvme0q0\n"
                                        " 17:          0          0   IO-APIC  17-fasteoi\n"
                                        " 18:          5          5   PCI-MSI-edge      eth0\n", &p), 0);
        CHECK_INT(p.n_lines, 3);
        if (p.n_lines == 3) {
                CHECK_STR(p.lines[0].name, "ehci_hcd:usb1, nvme0q0");
                CHECK_U64(irq_line_total(&p, &p.lines[0]), 30);
                CHECK_STR(p.lines[1].name, "");
                CHECK_STR(p.lines[2].chip, "PCI-MSI-edge");
                CHECK_STR(p.lines[2].name, "eth0");
        }
        proc_interrupts_done(&p);

        /* truncated line (fewer counts than columns), no header, garbage header */
        const char *bad[] = {
                "",
                " 36:          0      93662 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n",
                "           CPU0       CPU1\n 36:          0\n",
                "           CPU0       CPU1\n 36:          0      ",
                "           CPU0       CPU1\n 35:  1 2 x\n 36:          0\n",
                "           CPU0       CPUx\n",
                "           CPU0       GPU1\n",
                "\n 36: 1 2\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ProcInterrupts q = { .n_cpus = 777 };
                CHECK_INT_CASE(proc_interrupts_parse(bad[i], &q), -EINVAL, "bad[%zu]", i);
                CHECK_INT(q.n_cpus, 777);       /* untouched */
        }
        /* a 64-CPU file cut in the middle of an IRQ line */
        _cleanup_free_ char *big = gen_interrupts(cpus, 64, 65, 45);
        char *cut = strstr(big, " 80: ");
        if (cut) {
                cut[5 + 11 * 30] = 0;   /* 30 of 64 counts */
                CHECK_INT(proc_interrupts_parse(big, &p), -EINVAL);
        }
}

/* ---- stats_read_hctx() in a scrape ------------------------------------------------------------- */

/* Read every hctx of f (in a scrape when scrape), values into out[], debugfs reads counted. */
static uint64_t read_all_hctx(HostFs *h, Stats *s, const DiskFacts *f, bool scrape, HctxStats *out) {
        uint64_t before = hostfs_read_count(h, HOSTFS_DEBUGFS);
        if (scrape)
                stats_scrape(s, true);
        for (size_t i = 0; i < f->n_hctx; i++) {
                hctx_stats_done(&out[i]);       /* a second read into the same out[] frees the first */
                CHECK_INT(stats_read_hctx(s, f, i, NULL, STATS_READ_NO_RATES, false, NULL, &out[i]), 0);
        }
        if (scrape)
                stats_scrape(s, false);
        return hostfs_read_count(h, HOSTFS_DEBUGFS) - before;
}

static void put_hctx_values(const char *root, const DiskFacts *f, unsigned tags_busy, unsigned sched_busy, unsigned active) {
        for (size_t i = 0; i < f->n_hctx; i++) {
                char rel[256], text[256];
                unsigned n = f->hctx[i].index;
                snprintf(rel, sizeof(rel), "sys/kernel/debug/block/%s/hctx%u/tags", f->name, n);
                snprintf(text, sizeof(text), "nr_tags=64\nnr_reserved_tags=0\nactive_queues=1\n\nbitmap_tags:\ndepth=64\n"
                         "busy=%u\ncleared=0\nbits_per_word=16\nmap_nr=4\n", tags_busy);
                test_put(root, rel, text);
                snprintf(rel, sizeof(rel), "sys/kernel/debug/block/%s/hctx%u/sched_tags", f->name, n);
                snprintf(text, sizeof(text), "nr_tags=128\nnr_reserved_tags=0\nactive_queues=0\n\nbitmap_tags:\ndepth=128\n"
                         "busy=%u\ncleared=0\n", sched_busy);
                test_put(root, rel, text);
                snprintf(rel, sizeof(rel), "sys/kernel/debug/block/%s/hctx%u/active", f->name, n);
                snprintf(text, sizeof(text), "%u\n", active);
                test_put(root, rel, text);
                /* per hctx, never shared: a value of its own at each */
                snprintf(rel, sizeof(rel), "sys/kernel/debug/block/%s/hctx%u/dispatch_busy", f->name, n);
                snprintf(text, sizeof(text), "%u\n", 10 + n);
                test_put(root, rel, text);
        }
}

/*
 * One case: fixture name with osrelease release (NULL: as captured), its disk. shared_files:
 * the files a scrape should read once per disk (0: every hctx reads its own). edit: write known
 * values into every hctx's files first (tags busy=5, sched_tags busy=2, active=3,
 * dispatch_busy=10+N), and check them.
 */
static void check_scrape_reads(const char *name, const char *disk, const char *release, unsigned shared_files, bool edit) {
        char label[128];
        snprintf(label, sizeof(label), "%s as %s", name, release ?: "captured");
        _cleanup_free_ char *root = test_copy_fixture_as(fixtures, name, label, release);
        HostFs *h = NULL;
        DiskFacts *f = NULL;
        Stats *s = NULL;
        if (!root)
                return;
        CHECK_INT(hostfs_new(root, &h), 0);
        if (h && device_gather(h, disk, &f) >= 0 && device_gather_hctx_details(h, f, NULL) >= 0 && stats_new(h, &s) >= 0 &&
            f->n_hctx > 1) {
                if (edit)
                        put_hctx_values(root, f, 5, 2, 3);
                HctxStats *a = calloc(f->n_hctx, sizeof(HctxStats)), *b = calloc(f->n_hctx, sizeof(HctxStats));
                uint64_t alone = read_all_hctx(h, s, f, false, a);
                uint64_t scraped = read_all_hctx(h, s, f, true, b);
                /* each hctx after the first spares the shared files */
                CHECK_INT_CASE(scraped, alone - (f->n_hctx - 1) * shared_files, "%s: debugfs reads of %zu hctx in a scrape",
                               label, f->n_hctx);
                for (size_t i = 0; i < f->n_hctx; i++)
                        for (StatId k = 0; k < _STAT_MAX; k++) {
                                CHECK_INT_CASE(b[i].v[k].valid, a[i].v[k].valid, "%s hctx%u %s valid", label,
                                               f->hctx[i].index, stat_id_to_string(k));
                                CHECK_INT_CASE(b[i].v[k].value, a[i].v[k].value, "%s hctx%u %s", label,
                                               f->hctx[i].index, stat_id_to_string(k));
                        }
                if (edit)
                        for (size_t i = 0; i < f->n_hctx; i++) {
                                CHECK_INT_CASE(b[i].v[STAT_TAGS_BUSY].value, 5, "%s hctx%zu", label, i);
                                CHECK_INT_CASE(b[i].v[STAT_SCHED_TAGS_BUSY].value, 2, "%s hctx%zu", label, i);
                                CHECK_INT_CASE(b[i].v[STAT_ACTIVE].value, 3, "%s hctx%zu", label, i);
                                CHECK_INT_CASE(b[i].v[STAT_DISPATCH_BUSY].value, 10 + f->hctx[i].index, "%s hctx%zu", label, i);
                        }
                /* nothing crosses scrapes: the next one reads the files anew */
                if (edit) {
                        put_hctx_values(root, f, 7, 4, 6);
                        (void) read_all_hctx(h, s, f, true, b);
                        for (size_t i = 0; i < f->n_hctx; i++) {
                                CHECK_INT_CASE(b[i].v[STAT_TAGS_BUSY].value, 7, "%s second scrape hctx%zu", label, i);
                                CHECK_INT_CASE(b[i].v[STAT_SCHED_TAGS_BUSY].value, 4, "%s second scrape hctx%zu", label, i);
                                CHECK_INT_CASE(b[i].v[STAT_ACTIVE].value, 6, "%s second scrape hctx%zu", label, i);
                        }
                }
                for (size_t i = 0; i < f->n_hctx; i++) {
                        hctx_stats_done(&a[i]);
                        hctx_stats_done(&b[i]);
                }
                free(a);
                free(b);
        } else
                TAP_FAIL("%s: no facts of %s with several hctx", label, disk);
        stats_free(s);
        disk_facts_free(f);
        hostfs_free(h);
        (void) test_remove_tree(root);
}

static void test_scrape_shared_tags(void) {
        /* TAG_HCTX_SHARED on 6.12 and 6.1 (>= 5.16): tags, sched_tags, active once per disk */
        check_scrape_reads("vm-6.12-scsi-debug-shared", "sda", NULL, 3, true);
        check_scrape_reads("vm-6.1-scsi-debug-shared", "sda", NULL, 3, true);
        /* megaraid_sas-like, 64 hctx, no elevator (no sched_tags file: not read, not shared) */
        check_scrape_reads("synthetic-megaraid-64q", "sda", NULL, 2, false);
        check_scrape_reads("synthetic-megaraid-64q", "sda", NULL, 3, true);
        /* after the newest kernel checked, active is read per hctx again */
        check_scrape_reads("vm-6.12-scsi-debug-shared", "sda", "6.19.0", 2, true);
        /* before 5.16 each hctx had its own blk_mq_tags: no sharing */
        check_scrape_reads("vm-6.12-scsi-debug-shared", "sda", "5.15.0", 0, true);
        /* no TAG_HCTX_SHARED: every hctx has its own tags */
        check_scrape_reads("vm-6.12-virtio-scsi-4q", "sda", NULL, 0, false);
        check_scrape_reads("vm-6.12-nvme-4q", "nvme0n1", NULL, 0, false);
}

/* Bugs found here (docs/TESTING.md, fixed in 3de7685), the meson test "stats-regressions". */
static void test_known_bugs(void) {
        /* lib/blkstat.c disk_stat_parse(): n must be 11, 15 or 17 (blkstat.h, stat.rst); a file
         * cut inside the discard or flush fields (12, 13, 14, 16 numbers) is accepted */
        const char *cut[] = { "1 2 3 4 5 6 7 8 9 10 11 12\n", "1 2 3 4 5 6 7 8 9 10 11 12 13\n",
                              "1 2 3 4 5 6 7 8 9 10 11 12 13 14\n", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n" };
        for (size_t i = 0; i < ELEMENTSOF(cut); i++) {
                DiskStat x = {};
                CHECK_INT_CASE(disk_stat_parse(cut[i], &x), -EINVAL, "\"%.*s\" (n=%u)", (int) strlen(cut[i]) - 1, cut[i], x.n);
        }
        /* lib/blkstat.c proc_softirqs_block_parse(): junk after the numbers is accepted */
        uint64_t c[4];
        size_t nc;
        CHECK_INT(proc_softirqs_block_parse("       BLOCK:  12 x\n", c, 4, &nc), -EINVAL);

        /* lib/interrupts.c parse_irq_line(): the generic format with CONFIG_GENERIC_IRQ_SHOW_LEVEL
         * (arm64) prints " %8s" chip, " %*lu" hwirq, " %-8s" Level/Edge, then the actions; the
         * parser only skips a type token containing "edge"/"level"/"fasteoi" (lower case), so the
         * hwirq and "Edge" end up in the name and an nvme queue vector is not found by name */
        ProcInterrupts p = {};
        CHECK_INT(proc_interrupts_parse("           CPU0       CPU1\n"
                                        " 45:       1024          0   ITS-MSI 524289 Edge      nvme0q1\n"
                                        " 11:        301        299     GICv3  27 Level     arch_timer\n", &p), 0);
        if (p.n_lines == 2) {
                CHECK_STR(p.lines[0].chip, "ITS-MSI");
                CHECK_STR(p.lines[0].name, "nvme0q1");
                CHECK_STR(p.lines[1].name, "arch_timer");
        }
        proc_interrupts_done(&p);

        /* lib/blkstat.c debugfs_dispatched_parse(): a histogram cut at a line boundary (no "32+"
         * last bucket) is accepted and gives a made-up smaller sum */
        uint64_t n = 42;
        CHECK_INT(debugfs_dispatched_parse("       0\t123\n       1\t4567\n", &n), -EINVAL);
}

/* StatId <-> file name (DEFINE_STRING_TABLE_LOOKUP): every id named, names distinct, exact match. */
static void test_stat_id_names(void) {
        for (StatId i = 0; i < _STAT_MAX; i++) {
                const char *n = stat_id_to_string(i);
                CHECK(n != NULL);
                if (!n)
                        continue;
                CHECK_INT(stat_id_from_string(n), i);
                CHECK(stat_id_help(i) != NULL);
        }
        CHECK_STR(stat_id_to_string(STAT_COMPLETED_REMOTE), "completed_remote");
        CHECK(stat_id_is_counter(STAT_RUNS) && !stat_id_is_counter(STAT_DISPATCH_BUSY));
        CHECK_NULL(stat_id_to_string(_STAT_MAX));
        CHECK_NULL(stat_id_to_string(_STAT_INVALID));
        CHECK_INT(stat_id_from_string("completed_remote_rate"), _STAT_INVALID);
        CHECK_INT(stat_id_from_string("Runs"), _STAT_INVALID);
        CHECK_INT(stat_id_from_string(""), _STAT_INVALID);
        CHECK_INT(stat_id_from_string(NULL), _STAT_INVALID);
}

int main(int argc, char *argv[]) {
        if (argc > 1 && streq(argv[1], "--known-bugs")) {
                test_known_bugs();
                return tap_finish("test-stats --known-bugs");
        }
        fixtures = argc > 1 ? argv[1] : "tests/fixtures";
        test_stat_id_names();
        test_rates();
        test_disk_stat();
        test_tags();
        test_dispatched();
        test_softirqs();
        test_interrupts();
        test_scrape_shared_tags();
        return tap_finish("test-stats");
}
