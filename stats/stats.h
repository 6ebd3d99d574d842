/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Live per-hctx statistics. The kernel decides which counters exist
 * (block/blk-mq-debugfs.c; the counters removed in 5.16 and 6.8 are listed in stats-bpf.h), so each value says where it came from or why it is missing:
 *
 *   counter            provider, in order of preference
 *   runs               debugfs hctxN/run (removed in 6.8, 49e60333d743);
 *                      BPF on blk_mq_sched_dispatch_requests (fentry/kprobe) where it attaches
 *   dispatched         BPF block_rq_issue (requests issued to the driver)
 *   dispatch_batches   debugfs hctxN/dispatched histogram sum (removed in 5.16, afd7de03c526)
 *   queued             debugfs hctxN/queued (removed in 5.16, afd7de03c526)
 *   completed_local    BPF block_rq_complete on the submitting CPU (rq->mq_ctx->cpu)
 *   completed_remote   BPF block_rq_complete on another CPU
 *   irq_count          /proc/interrupts, the hctx's queue vector summed over CPUs
 *   active             debugfs hctxN/active (gauge)
 *   tags_busy          debugfs hctxN/tags "busy=" (gauge)
 *   sched_tags_busy    debugfs hctxN/sched_tags "busy=" (gauge; only with an elevator)
 *   dispatch_busy      debugfs hctxN/dispatch_busy (EWMA, not a counter)
 *   ctx_dispatched     debugfs hctxN/cpuM/dispatched "sync async" summed over the hctx's CPUs
 *   ctx_completed      debugfs hctxN/cpuM/completed, counted on the submitting ctx
 *   ctx_merged         debugfs hctxN/cpuM/merged (all three removed in 5.16, 9a14d6ce4135)
 *
 * Nothing is sampled while nobody reads: values are read when a file is opened.
 */

#include <stdbool.h>
#include <stdint.h>

#include "facts.h"
#include "hostfs.h"
#include "interrupts.h"
#include "stats-bpf.h"

typedef enum StatId {
        STAT_RUNS,
        STAT_DISPATCHED,
        STAT_DISPATCH_BATCHES,
        STAT_QUEUED,
        STAT_COMPLETED_LOCAL,
        STAT_COMPLETED_REMOTE,
        STAT_IRQ_COUNT,
        STAT_ACTIVE,
        STAT_TAGS_BUSY,
        STAT_SCHED_TAGS_BUSY,
        STAT_DISPATCH_BUSY,
        STAT_CTX_DISPATCHED,    /* sum of debugfs hctxN/cpuM/dispatched (sync + async), <= 5.15 */
        STAT_CTX_COMPLETED,     /* sum of cpuM/completed: on the SUBMITTING ctx, not the completion CPU */
        STAT_CTX_MERGED,        /* sum of cpuM/merged */
        _STAT_MAX,
        _STAT_INVALID = -EINVAL,
} StatId;

/* File name ("completed_local"); NULL when out of range. */
const char *stat_id_to_string(StatId s);
/* The StatId named s, or _STAT_INVALID (unknown name, NULL). */
StatId stat_id_from_string(const char *s);
/* True for monotonic counters (they get a _rate file and a Prometheus _total). */
bool stat_id_is_counter(StatId s);
/* Prometheus HELP text. */
const char *stat_id_help(StatId s);

typedef struct StatValue {
        bool valid;
        uint64_t value;
        const char *source;     /* "debugfs", "bpf", "procfs" (static) */
        char *unavailable;      /* reason when !valid */
} StatValue;

typedef struct HctxStats {
        StatValue v[_STAT_MAX];
        uint64_t usec;          /* CLOCK_MONOTONIC time of the read */
} HctxStats;

void hctx_stats_done(HctxStats *s);

typedef struct Stats Stats;

/*
 * Set up the providers: BPF is tried (absence reported, not fatal), debugfs is probed at
 * each read. Returns 0 or -ENOMEM.
 */
int stats_new(HostFs *h, Stats **ret);
Stats *stats_free(Stats *s);

/* "debugfs bpf procfs" as available now, for /version. Static or owned by s. */
const char *stats_providers(Stats *s);

/* What a statistics read does besides reading the counters (flags of stats_read_hctx() and of
 * FuseFsContext.read_hctx / read_disk_stat). */
typedef enum StatsReadFlags {
        STATS_READ_IRQ_COUNT   = 1u << 0,       /* STAT_IRQ_COUNT too (parses /proc/interrupts) */
        STATS_READ_NO_REASONS  = 1u << 1,       /* an unavailable value is only marked !valid: its
                                                 * reason is not formatted (unavailable stays NULL) */
        STATS_READ_NO_RATES    = 1u << 2,       /* no rates: none computed, no sample kept for later
                                                 * reads' rates (Prometheus computes its own rate());
                                                 * ret_rates may be NULL */
        STATS_READ_NO_INFLIGHT = 1u << 3,       /* block/<disk>/stat only, not block/<disk>/inflight
                                                 * (its read/write split); the in_flight field stays */
        /* /metrics: values only (a value the kernel cannot give is left out there) */
        STATS_READ_METRICS     = STATS_READ_IRQ_COUNT | STATS_READ_NO_REASONS | STATS_READ_NO_RATES | STATS_READ_NO_INFLIGHT,
} StatsReadFlags;

/* The per-hctx debugfs files stats_read_hctx() reads (block/<disk>/hctxN/<file>). */
typedef enum HctxFile {
        HCTX_FILE_RUN,
        HCTX_FILE_QUEUED,
        HCTX_FILE_ACTIVE,
        HCTX_FILE_DISPATCH_BUSY,
        HCTX_FILE_TAGS,
        HCTX_FILE_SCHED_TAGS,
        HCTX_FILE_DISPATCHED,
        _HCTX_FILE_MAX,
} HctxFile;

/*
 * A caller's handles on one hctx's debugfs files (hostfs_read_kept_at()), kept from one read to
 * the next so a scrape neither formats nor looks up their paths. Zeroed: none yet. index: the
 * hctx (hctxN) the handles were made for; stats_read_hctx() starts afresh for another one.
 */
typedef struct HctxStatsFiles {
        bool used;
        unsigned index;
        HostFsKept kept[_HCTX_FILE_MAX];
} HctxStatsFiles;

/*
 * Read the counters of hctx number pos of f (f->hctx[pos]). files: the caller's handles on
 * that hctx's files (NULL: the paths are looked up each time). flags: StatsReadFlags;
 * STATS_READ_IRQ_COUNT: also STAT_IRQ_COUNT, from pi, a parsed /proc/interrupts (NULL: read
 * and parsed fresh) — megabytes on a big machine, so only when asked; otherwise that value is
 * marked "not read". STATS_READ_NO_REASONS: unavailable values get no reason text.
 * Returns 0 or -ENOMEM; missing values are marked in ret.
 */
/* elevator_busy: blkmqd has a write in flight on the disk (an elevator switch, say): the
 * debugfs tags and sched_tags files are not read then ("unavailable: elevator switch in
 * progress"): their .show takes the queue lock the switch holds while the queue is frozen
 * (block/blk-mq-debugfs.c hctx_tags_show(): mutex_lock_interruptible(&q->sysfs_lock) on 6.1,
 * where queue_attr_store() holds q->sysfs_lock across elv_iosched_store()). */
/*
 * Within a metrics scrape (stats_scrape()), on a queue whose hctx share one tagset
 * (TAG_HCTX_SHARED, kernel >= 5.16), the tagset-wide values (tags_busy, sched_tags_busy, and
 * active up to 6.18, the newest kernel checked) are read at the first hctx of the disk the scrape reads and given to every other
 * hctx of the disk in the same scrape: the kernel shows the same numbers there (see
 * stats.c shared_tagset_file()). Nothing is kept from one scrape to the next.
 */
int stats_read_hctx(Stats *s, const DiskFacts *f, size_t pos, HctxStatsFiles *files, unsigned flags, bool elevator_busy,
                    const ProcInterrupts *pi, HctxStats *ret);

/*
 * Events the BPF counters lack, host-wide since attach (StatsBpfMissed in stats-bpf.h: the
 * kernel's recursion guard skipped the program, or the map was full).
 * Returns 0, or -EOPNOTSUPP when the BPF provider is not loaded, other -errno from bpf(2).
 */
int stats_bpf_missed(Stats *s, StatsBpfMissed *ret);

/* The BPF provider (stats/stats-bpf.h), NULL when it is not loaded; then why (never NULL). */
StatsBpf *stats_bpf(Stats *s);
const char *stats_bpf_unavailable(Stats *s);

/* A metrics scrape begins (the BPF map is copied once, blkmqd_stats_bpf_snapshot(); tagset-wide
 * values are read once per disk, see stats_read_hctx()) or ends (reads go to the map and to every
 * hctx's files again). */
void stats_scrape(Stats *s, bool begin);

/* Drop BPF map entries of a removed disk. */
void stats_forget_disk(Stats *s, unsigned major, unsigned minor);

/* Current CLOCK_MONOTONIC in microseconds. */
uint64_t stats_now_usec(void);

/*
 * Rates. Each read leaves a sample in a small ring; a rate is (now - then) / seconds
 * against the sample whose age is closest to the window (at least 0.2 s old). So the
 * first read after a quiet period has no rate ("unavailable: read again"), and a reader
 * polling every second (blkmqctl watch) gets per-second rates over its own interval.
 * Samples may hold different values (irq_count is read only when asked for); a full ring
 * drops its oldest sample that no value needs, never the samples that give a value its
 * rate (the newest one older than the window, the oldest one younger than it): a rate
 * stays available whatever else was read in between.
 */
#define STATS_HISTORY 16
#define STATS_MAX_VALUES 20

typedef struct StatSample {
        uint64_t usec;                  /* CLOCK_MONOTONIC; 0 = empty slot */
        uint64_t v[STATS_MAX_VALUES];
        uint32_t valid;                 /* bit per value */
} StatSample;

typedef struct StatRates {
        double per_sec[STATS_MAX_VALUES];
        uint32_t valid;                 /* bit per value */
        double window_sec;              /* the interval the rates cover; 0 = none */
} StatRates;

/*
 * Compute rates of cur (n values, valid bits) against ring, then record cur in ring.
 * window_usec: the wanted interval. Pure. counters: bit per value that is a counter
 * (gauges get no rate). A counter that went backwards (reset) gets no rate.
 */
void stats_rates(StatSample ring[STATS_HISTORY], const StatSample *cur, size_t n, uint32_t counters,
                 uint64_t window_usec, StatRates *ret);

/* Pack HctxStats into a sample (values in StatId order). */
void hctx_stats_to_sample(const HctxStats *s, StatSample *ret);

/*
 * One disk's statistics state, kept by stats/ (the model embeds it: Device.stats in
 * model/registry.h): the rate rings of its reads and its handles on the files a read re-reads.
 * Zeroed (device_stats_init()) it holds nothing; each part is made by the first read that needs
 * it (device_stats_fit_hctx(), device_stats_disk_ring()). The handles are slots of the reader's
 * HostFs (hostfs_read_kept_at()), owned there: device_stats_done() does not close them.
 */
typedef struct DeviceStats {
        StatSample *history;            /* STATS_HISTORY samples per hctx position, ring; n_history_hctx positions */
        size_t n_history_hctx;          /* 0: none (not read yet, or out of memory) */
        StatSample *disk_history;       /* STATS_HISTORY DiskStat samples, same ring scheme; NULL until the first read */
        HctxStatsFiles *hctx_files;     /* per hctx position: handles on its debugfs files (stats_read_hctx()) */
        size_t n_hctx_files;            /* 0: none */
        HostFsKept stat_file, inflight_file;    /* handles on block/<disk>/stat and block/<disk>/inflight */
} DeviceStats;

/* Zero s: no rings, no handles. Never fails. */
void device_stats_init(DeviceStats *s);

/* Free s's rings and handle arrays (not the HostFs slots they name) and zero s. */
void device_stats_done(DeviceStats *s);

/*
 * Size s's per-hctx rings and handle arrays to n_hctx positions (the disk's DiskFacts.n_hctx):
 * an array of another size is dropped and made afresh, zeroed (a new facts' hctx are other
 * queues: no rate against the old samples). Out of memory leaves that array absent (its count
 * 0): device_stats_hctx_files() and device_stats_hctx_ring() return NULL, and the next call
 * tries again. Nothing to return.
 */
void device_stats_fit_hctx(DeviceStats *s, size_t n_hctx);

/* The handles of hctx position pos, for stats_read_hctx(); NULL when pos is not below the size
 * device_stats_fit_hctx() made (or it could not allocate). */
HctxStatsFiles *device_stats_hctx_files(DeviceStats *s, size_t pos);

/* The STATS_HISTORY-sample ring of hctx position pos, for stats_rates(); NULL as
 * device_stats_hctx_files(). */
StatSample *device_stats_hctx_ring(DeviceStats *s, size_t pos);

/* The disk's block/<disk>/stat ring (STATS_HISTORY samples, for stats_rates()), made zeroed on
 * the first call; NULL when it cannot be allocated (-ENOMEM to the caller). */
StatSample *device_stats_disk_ring(DeviceStats *s);
