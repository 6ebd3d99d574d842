/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "blkstat.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "stats.h"
#include "stats-bpf.h"

static const char * const stat_id_table[_STAT_MAX] = {
        [STAT_RUNS]             = "runs",
        [STAT_DISPATCHED]       = "dispatched",
        [STAT_DISPATCH_BATCHES] = "dispatch_batches",
        [STAT_QUEUED]           = "queued",
        [STAT_COMPLETED_LOCAL]  = "completed_local",
        [STAT_COMPLETED_REMOTE] = "completed_remote",
        [STAT_IRQ_COUNT]        = "irq_count",
        [STAT_ACTIVE]           = "active",
        [STAT_TAGS_BUSY]        = "tags_busy",
        [STAT_SCHED_TAGS_BUSY]  = "sched_tags_busy",
        [STAT_DISPATCH_BUSY]    = "dispatch_busy",
        [STAT_CTX_DISPATCHED]   = "ctx_dispatched",
        [STAT_CTX_COMPLETED]    = "ctx_completed",
        [STAT_CTX_MERGED]       = "ctx_merged",
};

DEFINE_STRING_TABLE_LOOKUP(stat_id, StatId, stat_id_table, _STAT_MAX, _STAT_INVALID);

/* The rest of each counter's row: its help text (metrics HELP) and whether it only grows. */
static const struct {
        const char *help;
        bool counter;
} stat_table[_STAT_MAX] = {
        [STAT_RUNS]             = { "hctx dispatch runs (blk_mq_sched_dispatch_requests)", true },
        [STAT_DISPATCHED]       = { "requests issued to the driver (block_rq_issue)", true },
        [STAT_DISPATCH_BATCHES] = { "blk_mq_dispatch_rq_list calls (debugfs dispatched histogram)", true },
        [STAT_QUEUED]           = { "requests allocated on this hctx (debugfs queued)", true },
        [STAT_COMPLETED_LOCAL]  = { "requests completed on the submitting CPU", true },
        [STAT_COMPLETED_REMOTE] = { "requests completed on another CPU than the submitter", true },
        [STAT_IRQ_COUNT]        = { "interrupts of the queue vector serving this hctx", true },
        [STAT_ACTIVE]           = { "requests active on a shared tag set (debugfs active)", false },
        [STAT_TAGS_BUSY]        = { "driver tags in use (debugfs tags busy=)", false },
        [STAT_SCHED_TAGS_BUSY]  = { "elevator tags in use (debugfs sched_tags busy=)", false },
        [STAT_DISPATCH_BUSY]    = { "dispatch busy EWMA (debugfs dispatch_busy)", false },
        [STAT_CTX_DISPATCHED]   = { "requests allocated on the hctx's software queues (debugfs cpuN/dispatched)", true },
        [STAT_CTX_COMPLETED]    = { "requests freed, counted on the submitting software queue (debugfs cpuN/completed)", true },
        [STAT_CTX_MERGED]       = { "bio merges into the software queues (debugfs cpuN/merged)", true },
};

bool stat_id_is_counter(StatId s) {
        return s >= 0 && s < _STAT_MAX && stat_table[s].counter;
}

const char *stat_id_help(StatId s) {
        return s >= 0 && s < _STAT_MAX ? stat_table[s].help : NULL;
}

/* Kernel versions as Stats.kernel holds them (major * 1000 + minor), one per debugfs removal,
 * named with the commit that removed the files: from these versions on the files are not even
 * tried (metrics scrapes read every hctx of every disk). */
#define KERNEL_VERSION_MM(major, minor) ((major) * 1000u + (minor))
/* afd7de03c526: hctx queued and the dispatched histogram */
#define KERNEL_HCTX_QUEUED_DISPATCHED_REMOVED KERNEL_VERSION_MM(5, 16)
/* 9a14d6ce4135: per-ctx cpuN/{dispatched,completed,merged} */
#define KERNEL_CTX_COUNTERS_REMOVED           KERNEL_VERSION_MM(5, 16)
/* 49e60333d743: hctx run */
#define KERNEL_HCTX_RUN_REMOVED               KERNEL_VERSION_MM(6, 8)
/* "blk-mq: Use shared tags for shared sbitmap support": one blk_mq_tags for every hctx of a
 * shared tagset (shared_tagset_file()) */
#define KERNEL_SHARED_TAGS                    KERNEL_VERSION_MM(5, 16)
/* the newest kernel whose hctx_active_show() was checked to print the queue-wide count for
 * shared tags (shared_tagset_file()) */
#define KERNEL_ACTIVE_SHARED_CHECKED          KERNEL_VERSION_MM(6, 18)

struct Stats {
        HostFs *hostfs;
        unsigned kernel;        /* KERNEL_VERSION_MM(major, minor); 0 = unknown (then every file is tried) */
        StatsBpf *bpf;
        char *bpf_unavailable;
        char providers[64];
        bool debugfs;           /* hostfs_debugfs_available() at the start of this stats_read_hctx() */
        int snapshot_error;     /* the last failure of the BPF batch copy, logged once */
        bool scraping;          /* between stats_scrape(begin) and stats_scrape(end) */
        struct {                /* tagset-wide values of the disk being scraped (shared_tagset_file()) */
                const DiskFacts *f;
                bool have[_HCTX_FILE_MAX];
                int r[_HCTX_FILE_MAX];          /* read_hctx_file()'s result: 0 or 1 (unparsable) */
                uint64_t v[_HCTX_FILE_MAX];
        } shared;
};

uint64_t stats_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void hctx_stats_done(HctxStats *s) {
        for (size_t i = 0; i < _STAT_MAX; i++)
                free(s->v[i].unavailable);
        *s = (HctxStats) {};
}

static void on_bpf_log(const char *message, void *userdata) {
        log_debug("bpf: %s", message);
}

int stats_new(HostFs *h, Stats **ret) {
        Stats *s = calloc(1, sizeof(Stats));
        if (!s)
                return -ENOMEM;
        s->hostfs = h;
        _cleanup_free_ char *release = NULL;
        unsigned maj, min;
        if (hostfs_kernel_release(h, &release) >= 0 && kernel_release_parse(release, &maj, &min) >= 0)
                s->kernel = KERNEL_VERSION_MM(maj, min);
        if (!HAVE_BPF)
                s->bpf_unavailable = strdup("BPF provider not built (meson -Dbpf=disabled, or no clang/bpftool/BTF at build time)");
        else if (hostfs_is_live(h)) {
                blkmqd_stats_bpf_set_log_func(on_bpf_log, NULL);
                int r = blkmqd_stats_bpf_new(&s->bpf);
                if (r < 0) {
                        if (asprintf(&s->bpf_unavailable, "BPF provider not loaded: %s%s", strerror(-r),
                                     r == -ENOENT ? " (no kernel BTF or block tracepoints)" :
                                     r == -EPERM ? " (needs CAP_BPF/CAP_SYS_ADMIN)" : "") < 0)
                                s->bpf_unavailable = NULL;
                        log_info("Statistics: %s", strna(s->bpf_unavailable));
                } else
                        log_info("Statistics: BPF provider loaded (dispatch and completion locality per hctx; queue runs %s%s; "
                                 "device service times %s%s)",
                                 blkmqd_stats_bpf_has_runs(s->bpf) ? "through " : "not counted: ",
                                 blkmqd_stats_bpf_has_runs(s->bpf) ? blkmqd_stats_bpf_runs_attach(s->bpf) :
                                                                     strna(blkmqd_stats_bpf_runs_unavailable_reason(s->bpf)),
                                 blkmqd_stats_bpf_has_service(s->bpf) ? "measured" : "not measured: ",
                                 strempty(blkmqd_stats_bpf_service_unavailable_reason(s->bpf)));
        } else
                s->bpf_unavailable = strdup("BPF provider not loaded: fixture root");
        *ret = s;
        return 0;
}

Stats *stats_free(Stats *s) {
        if (!s)
                return NULL;
        blkmqd_stats_bpf_free(s->bpf);
        free(s->bpf_unavailable);
        free(s);
        return NULL;
}

const char *stats_providers(Stats *s) {
        snprintf(s->providers, sizeof(s->providers), "%s%sprocfs",
                 hostfs_debugfs_available(s->hostfs, NULL) ? "debugfs " : "",
                 s->bpf ? "bpf " : "");
        return s->providers;
}

void stats_scrape(Stats *s, bool begin) {
        if (!s)
                return;
        s->scraping = begin;
        s->shared.f = NULL;     /* nothing from an earlier scrape */
        if (!s->bpf)
                return;
        if (begin) {
                /* failure: every hctx is looked up on its own (which reports its own errno) */
                int r = blkmqd_stats_bpf_snapshot(s->bpf);
                if (r < 0 && r != s->snapshot_error)    /* said once per kind of failure */
                        log_info_errno(r, "Statistics: BPF map batch copy failed (%m%s), reading the counters one hctx at a time",
                                       r == -EINVAL ? ": no BPF_MAP_LOOKUP_BATCH before Linux 5.6" : "");
                s->snapshot_error = r < 0 ? r : s->snapshot_error;
        } else
                blkmqd_stats_bpf_snapshot_drop(s->bpf);
}

StatsBpf *stats_bpf(Stats *s) {
        return s ? s->bpf : NULL;
}

const char *stats_bpf_unavailable(Stats *s) {
        return s ? s->bpf_unavailable : "no statistics";
}

int stats_bpf_missed(Stats *s, StatsBpfMissed *ret) {
        if (!s->bpf)
                return -EOPNOTSUPP;
        return blkmqd_stats_bpf_missed(s->bpf, ret);
}

void stats_forget_disk(Stats *s, unsigned major, unsigned minor) {
        if (s->bpf) {
                (void) blkmqd_stats_bpf_forget(s->bpf, makedev(major, minor));
                (void) blkmqd_stats_bpf_service_watch(s->bpf, makedev(major, minor), false);
        }
}

static void set_value(StatValue *v, uint64_t value, const char *source) {
        v->valid = true;
        v->value = value;
        v->source = source;
        v->unavailable = mfree_str(v->unavailable);
}

static void mark_unavailable(StatValue *v) {
        v->valid = false;
        v->unavailable = mfree_str(v->unavailable);
}

static void set_unavailable(StatValue *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_unavailable(StatValue *v, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        v->valid = false;
        free(v->unavailable);
        v->unavailable = s;
}

static const char * const hctx_file_table[_HCTX_FILE_MAX] = {
        [HCTX_FILE_RUN]           = "run",
        [HCTX_FILE_QUEUED]        = "queued",
        [HCTX_FILE_ACTIVE]        = "active",
        [HCTX_FILE_DISPATCH_BUSY] = "dispatch_busy",
        [HCTX_FILE_TAGS]          = "tags",
        [HCTX_FILE_SCHED_TAGS]    = "sched_tags",
        [HCTX_FILE_DISPATCHED]    = "dispatched",
};

/*
 * Read and parse debugfs block/<disk>/hctxN/<file> (N = hctx) through the caller's handle, if
 * any: the number (parse_u64()), the busy= of tags and sched_tags (debugfs_tags_parse()), the
 * sum of the dispatched histogram (debugfs_dispatched_parse()). Returns 0 with *ret, 1 when the
 * file was read but does not parse, -ENOENT (file gone from this kernel), -ENODEV (no debugfs),
 * other -errno of the read. Every file read here is a .show attribute, opened with
 * single_open() (block/blk-mq-debugfs.c blk_mq_debugfs_open()): one record, hence
 * HOSTFS_READ_ONE_RECORD. Never the .seq_ops lists (dispatch, busy, default_rq_list).
 */
static int read_hctx_file(Stats *s, const DiskFacts *f, unsigned hctx, HctxStatsFiles *files, HctxFile which, uint64_t *ret) {
        const char *text;
        int r;

        if (!s->debugfs)
                return -ENODEV;         /* as hostfs says then; no path formatted, nothing tried */
        r = hostfs_read_kept_at(s->hostfs, files ? &files->kept[which] : NULL, HOSTFS_DEBUGFS, HOSTFS_READ_ONE_RECORD,
                                &text, "block/%s/hctx%u/%s", f->name, hctx, hctx_file_table[which]);
        if (r < 0)
                return r;
        switch (which) {
        case HCTX_FILE_TAGS:
        case HCTX_FILE_SCHED_TAGS:
                r = debugfs_tags_parse(text, NULL, ret);
                break;
        case HCTX_FILE_DISPATCHED:
                r = debugfs_dispatched_parse(text, ret);
                break;
        default:
                r = parse_u64(text, ret);
        }
        return r < 0 ? 1 : 0;
}

/*
 * True when which shows the same number at every hctx of f because the queue's hctx share one
 * tagset (BLK_MQ_F_TAG_HCTX_SHARED, debugfs flags TAG_HCTX_SHARED: megaraid_sas and mpt3sas with
 * host_tagset_enable, smartpqi, hisi_sas v3, scsi_debug with host_max_queue), on a kernel where
 * that is so by construction:
 *   tags        since 5.16 ("blk-mq: Use shared tags for shared sbitmap support") every hctx's
 *               tags is the tag set's one blk_mq_tags (block/blk-mq.c blk_mq_alloc_map_and_rqs():
 *               set->tags[hctx_idx] = set->shared_tags), so hctx_tags_show() prints the same
 *               bitmap_tags, busy= included, at every hctx;
 *   sched_tags  likewise every hctx's sched_tags is the queue's one q->sched_shared_tags
 *               (block/blk-mq-sched.c), and with no elevator every hctx's file is empty;
 *   active      hctx_active_show() prints __blk_mq_active_requests(hctx) (block/blk-mq.h), which
 *               for shared tags is the queue's nr_active_requests_shared_tags, not the hctx's
 *               nr_active; checked up to 6.18 (patches were posted to count per hctx there,
 *               so a later kernel reads every hctx until checked again).
 * Before 5.16 (the shared sbitmap of 5.10-5.15) each hctx has its own blk_mq_tags: every hctx
 * is read. An unknown kernel: every hctx is read.
 */
static bool shared_tagset_file(const Stats *s, const DiskFacts *f, HctxFile which) {
        if (f->n_hctx < 2 || f->hctx[0].shared_tags != TRISTATE_YES || s->kernel < KERNEL_SHARED_TAGS)
                return false;
        switch (which) {
        case HCTX_FILE_TAGS:
        case HCTX_FILE_SCHED_TAGS:
                return true;
        case HCTX_FILE_ACTIVE:
                return s->kernel <= KERNEL_ACTIVE_SHARED_CHECKED;
        default:
                return false;
        }
}

/*
 * read_hctx_file(), but within a scrape a tagset-wide file (shared_tagset_file()) is read at
 * the first hctx of f the scrape reads, and its value given to the other hctx of f read in the
 * same scrape (stats_scrape() forgets it): one read per disk instead of one per hctx (64 per
 * LUN on a megaraid_sas host). What was read is kept, parsed or not (an empty sched_tags under
 * no elevator); a failed read is not: the next hctx tries its own file.
 */
static int read_hctx_value(Stats *s, const DiskFacts *f, const HctxFacts *x, HctxStatsFiles *files, HctxFile which,
                           uint64_t *ret) {
        bool shared = s->scraping && shared_tagset_file(s, f, which);
        if (shared && s->shared.f == f && s->shared.have[which]) {
                *ret = s->shared.v[which];
                return s->shared.r[which];
        }
        int r = read_hctx_file(s, f, x->index, files, which, ret);
        if (shared && r >= 0) {
                if (s->shared.f != f) {
                        memset(&s->shared, 0, sizeof(s->shared));
                        s->shared.f = f;
                }
                s->shared.have[which] = true;
                s->shared.r[which] = r;
                s->shared.v[which] = r == 0 ? *ret : 0;
        }
        return r;
}

/*
 * Read debugfs block/<disk>/hctxN/<file> by path (the per-ctx cpuM/ files of kernels <= 5.15);
 * 0, -ENOENT (file gone from this kernel), -ENODEV (no debugfs). *ret points into hostfs's
 * buffer (hostfs_read_kept_at()). One record, as read_hctx_file().
 */
static int read_debugfs(Stats *s, const DiskFacts *f, unsigned hctx, const char *file, const char **ret) {
        if (!s->debugfs)
                return -ENODEV;         /* as hostfs says then; no path formatted, nothing tried */
        return hostfs_read_kept_at(s->hostfs, NULL, HOSTFS_DEBUGFS, HOSTFS_READ_ONE_RECORD, ret,
                                   "block/%s/hctx%u/%s", f->name, hctx, file);
}

static const char *debugfs_why(int r, const char *removed) {
        return r == -ENODEV ? "debugfs not mounted at /sys/kernel/debug" :
               r == -ENOENT ? removed : "debugfs file unreadable";
}

/*
 * The busy tags of hctx's debugfs "tags" or "sched_tags" (debugfs_tags_parse()) into *v, or why
 * not: an elevator switch in progress (elevator_busy: its lock would hold this read), missing
 * (the file is not there), unparsable (it has no busy= line). reasons: false leaves v without
 * its reason (STATS_READ_NO_REASONS).
 */
static void read_tags_busy(Stats *s, const DiskFacts *f, const HctxFacts *x, HctxStatsFiles *files, HctxFile which,
                           bool elevator_busy, const char *missing, const char *unparsable, bool reasons, StatValue *v) {
        uint64_t busy;
        int r = elevator_busy ? -EBUSY : read_hctx_value(s, f, x, files, which, &busy);
        if (r == 0)
                set_value(v, busy, "debugfs");
        else if (!reasons)
                mark_unavailable(v);
        else if (r == -EBUSY)
                set_unavailable(v, "elevator switch in progress (its lock would hold this read)");
        else
                set_unavailable(v, "%s", r < 0 ? debugfs_why(r, missing) : unparsable);
}

int stats_read_hctx(Stats *s, const DiskFacts *f, size_t pos, HctxStatsFiles *files, unsigned flags, bool elevator_busy,
                    const ProcInterrupts *pi, HctxStats *ret) {
        const HctxFacts *x = &f->hctx[pos];
        HctxStats st = { .usec = stats_now_usec() };
        bool irq_count = flags & STATS_READ_IRQ_COUNT, reasons = !(flags & STATS_READ_NO_REASONS);
        uint64_t u;
        int r;

        s->debugfs = hostfs_debugfs_available(s->hostfs, NULL);
        if (files && (!files->used || files->index != x->index))
                *files = (HctxStatsFiles) { .used = true, .index = x->index };    /* handles of another hctx */
        /* every value starts invalid without a reason; "not read" is given at the end to those
         * still without one (a scrape of 64 disks would otherwise format and free 14 of them per hctx) */
#define UNAVAILABLE(v, ...) (reasons ? set_unavailable((v), __VA_ARGS__) : mark_unavailable(v))

        /* debugfs counters and gauges */
        /* removed_in: files a known kernel no longer has are not even tried (metrics scrapes
         * read every hctx of every disk) */
        static const struct {
                StatId id;
                HctxFile file;
                const char *removed;
                unsigned removed_in;
        } dbg[] = {
                { STAT_RUNS,          HCTX_FILE_RUN,           "hctx run was removed from debugfs in 6.8 (49e60333d743)", KERNEL_HCTX_RUN_REMOVED },
                { STAT_QUEUED,        HCTX_FILE_QUEUED,        "hctx queued was removed from debugfs in 5.16 (afd7de03c526); no BPF replacement", KERNEL_HCTX_QUEUED_DISPATCHED_REMOVED },
                { STAT_ACTIVE,        HCTX_FILE_ACTIVE,        "no hctx active file", 0 },
                { STAT_DISPATCH_BUSY, HCTX_FILE_DISPATCH_BUSY, "no hctx dispatch_busy file", 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(dbg); i++) {
                r = dbg[i].removed_in && s->kernel >= dbg[i].removed_in ? -ENOENT :
                    read_hctx_value(s, f, x, files, dbg[i].file, &u);
                if (r == 0)
                        set_value(&st.v[dbg[i].id], u, "debugfs");
                else
                        UNAVAILABLE(&st.v[dbg[i].id], "%s", r < 0 ? debugfs_why(r, dbg[i].removed) : "unparsable debugfs value");
        }

        read_tags_busy(s, f, x, files, HCTX_FILE_TAGS, elevator_busy, "no hctx tags file", "unparsable debugfs tags", reasons,
                       &st.v[STAT_TAGS_BUSY]);
        read_tags_busy(s, f, x, files, HCTX_FILE_SCHED_TAGS, elevator_busy, "no sched_tags file",
                       "no elevator attached (sched_tags empty)", reasons, &st.v[STAT_SCHED_TAGS_BUSY]);
        r = s->kernel >= KERNEL_HCTX_QUEUED_DISPATCHED_REMOVED ? -ENOENT : read_hctx_value(s, f, x, files, HCTX_FILE_DISPATCHED, &u);
        if (r == 0)
                set_value(&st.v[STAT_DISPATCH_BATCHES], u, "debugfs");
        else
                UNAVAILABLE(&st.v[STAT_DISPATCH_BATCHES], "%s",
                                r < 0 ? debugfs_why(r, "hctx dispatched histogram was removed from debugfs in 5.16 (afd7de03c526)") :
                                        "unparsable debugfs dispatched histogram");

        /* per-ctx counters (<= 5.15): "%lu %lu" (sync async) or "%lu", summed over the hctx's CPUs */
        static const struct {
                StatId id;
                const char *file;
        } ctx[] = {
                { STAT_CTX_DISPATCHED, "dispatched" },
                { STAT_CTX_COMPLETED,  "completed" },
                { STAT_CTX_MERGED,     "merged" },
        };
        for (size_t i = 0; i < ELEMENTSOF(ctx); i++) {
                uint64_t sum = 0;
                unsigned seen = 0;
                r = s->kernel >= KERNEL_CTX_COUNTERS_REMOVED ? -ENOENT : 0;
                for (unsigned cpu = 0; cpu < x->cpus.n_words * 64 && r >= 0; cpu++) {
                        const char *text;
                        char file[64];
                        unsigned long long a = 0, b = 0;
                        if (!cpuset_isset(&x->cpus, cpu))
                                continue;
                        snprintf(file, sizeof(file), "cpu%u/%s", cpu, ctx[i].file);
                        r = read_debugfs(s, f, x->index, file, &text);
                        if (r >= 0 && sscanf(text, "%llu %llu", &a, &b) >= 1) {
                                sum += a + b;
                                seen++;
                        } else if (r >= 0)
                                r = -EINVAL;
                }
                if (r >= 0 && seen > 0)
                        set_value(&st.v[ctx[i].id], sum, "debugfs");
                else
                        UNAVAILABLE(&st.v[ctx[i].id], "%s", r < 0 && r != -EINVAL ?
                                        debugfs_why(r, "per-ctx counters were removed from debugfs in 5.16 (9a14d6ce4135)") :
                                        "unparsable debugfs per-ctx counter");
        }

        /* BPF: dispatches, completion locality, runs where debugfs has none */
        if (s->bpf && f->unknown[FACT_DEVNUM]) {
                /* the BPF maps are keyed by dev_t, which sysfs does not give for a hidden disk */
                UNAVAILABLE(&st.v[STAT_DISPATCHED], "no device number to match BPF events: %s", f->unknown[FACT_DEVNUM]);
                UNAVAILABLE(&st.v[STAT_COMPLETED_LOCAL], "no device number to match BPF events: %s", f->unknown[FACT_DEVNUM]);
                UNAVAILABLE(&st.v[STAT_COMPLETED_REMOTE], "no device number to match BPF events: %s", f->unknown[FACT_DEVNUM]);
                if (!st.v[STAT_RUNS].valid)
                        UNAVAILABLE(&st.v[STAT_RUNS], "no device number to match BPF events: %s", f->unknown[FACT_DEVNUM]);
        } else if (s->bpf) {
                HctxBpfCounters c = {};
                r = blkmqd_stats_bpf_read(s->bpf, makedev(f->major, f->minor), x->index, &c);
                if (r == -ENOENT)
                        r = 0;          /* no I/O seen since attach: genuinely 0 */
                if (r >= 0) {
                        set_value(&st.v[STAT_DISPATCHED], c.dispatched, "bpf");
                        set_value(&st.v[STAT_COMPLETED_LOCAL], c.completed_local, "bpf");
                        set_value(&st.v[STAT_COMPLETED_REMOTE], c.completed_remote, "bpf");
                        if (!st.v[STAT_RUNS].valid) {
                                if (blkmqd_stats_bpf_has_runs(s->bpf))
                                        set_value(&st.v[STAT_RUNS], c.runs, "bpf");
                                else
                                        UNAVAILABLE(&st.v[STAT_RUNS], "removed from debugfs in 6.8; %s",
                                                        blkmqd_stats_bpf_runs_unavailable_reason(s->bpf));
                        }
                } else {
                        UNAVAILABLE(&st.v[STAT_DISPATCHED], "BPF map read failed: %s", strerror(-r));
                        UNAVAILABLE(&st.v[STAT_COMPLETED_LOCAL], "BPF map read failed: %s", strerror(-r));
                        UNAVAILABLE(&st.v[STAT_COMPLETED_REMOTE], "BPF map read failed: %s", strerror(-r));
                }
        } else {
                const char *why = s->bpf_unavailable ?: "BPF provider not loaded";
                UNAVAILABLE(&st.v[STAT_DISPATCHED], "%s", why);
                UNAVAILABLE(&st.v[STAT_COMPLETED_LOCAL], "%s", why);
                UNAVAILABLE(&st.v[STAT_COMPLETED_REMOTE], "%s", why);
                if (!st.v[STAT_RUNS].valid)
                        UNAVAILABLE(&st.v[STAT_RUNS], "removed from debugfs in 6.8 (or debugfs not mounted); %s", why);
        }

        /* procfs: interrupts of the hctx's queue vector */
        ProcInterrupts own = {};
        if (!irq_count)
                ;       /* stays "not read" */
        else if (x->irq < 0 || (size_t) x->irq >= f->n_irqs)
                UNAVAILABLE(&st.v[STAT_IRQ_COUNT], "%s", f->unknown[FACT_IRQ_VECTORS] ?: "no queue vector matched this hctx");
        else {
                _cleanup_free_ char *text = NULL;
                if (!pi && hostfs_read(s->hostfs, HOSTFS_PROCFS, "interrupts", &text) >= 0 &&
                    proc_interrupts_parse(text, &own) >= 0)
                        pi = &own;
                const IrqLine *l = pi ? proc_interrupts_find(pi, f->irqs[x->irq].irq) : NULL;
                if (l)
                        set_value(&st.v[STAT_IRQ_COUNT], irq_line_total(pi, l), "procfs");
                else
                        UNAVAILABLE(&st.v[STAT_IRQ_COUNT], "IRQ %u not in /proc/interrupts", f->irqs[x->irq].irq);
        }
        proc_interrupts_done(&own);
#undef UNAVAILABLE

        for (StatId i = 0; reasons && i < _STAT_MAX; i++)
                if (!st.v[i].valid && !st.v[i].unavailable)
                        set_unavailable(&st.v[i], "not read");
        *ret = st;
        return 0;
}

#define RATE_MIN_AGE_USEC 200000
#define SAMPLE_MIN_SPACING_USEC 100000

/*
 * The slot a new sample replaces: an empty one, else the oldest sample no value needs.
 * Samples may hold different values (irq_count is only read when asked for), so "oldest"
 * alone would let reads of other files push out the only sample of a value. For every
 * counter a sample holds, the samples that give (or will give) its best rate are kept:
 * the newest one at least window_usec old (the rate's base now) and the oldest one younger
 * than that (the base once it has aged).
 */
static StatSample *ring_victim(StatSample ring[STATS_HISTORY], uint64_t now, uint32_t counters, uint64_t window_usec) {
        bool keep[STATS_HISTORY] = {};

        for (size_t i = 0; i < STATS_HISTORY; i++)
                if (!ring[i].usec)
                        return &ring[i];
        for (unsigned v = 0; v < STATS_MAX_VALUES; v++) {
                uint32_t bit = UINT32_C(1) << v;
                int anchor = -1, young = -1;
                if (!(counters & bit))
                        continue;
                for (size_t i = 0; i < STATS_HISTORY; i++) {
                        const StatSample *x = &ring[i];
                        if (!(x->valid & bit) || x->usec > now)
                                continue;
                        if (now - x->usec >= window_usec) {
                                if (anchor < 0 || x->usec > ring[anchor].usec)
                                        anchor = (int) i;
                        } else if (young < 0 || x->usec < ring[young].usec)
                                young = (int) i;
                }
                if (anchor >= 0)
                        keep[anchor] = true;
                if (young >= 0)
                        keep[young] = true;
        }

        StatSample *victim = NULL, *oldest = NULL;
        for (size_t i = 0; i < STATS_HISTORY; i++) {
                StatSample *x = &ring[i];
                if (!oldest || x->usec < oldest->usec)
                        oldest = x;
                if (!keep[i] && (!victim || x->usec < victim->usec))
                        victim = x;
        }
        return victim ?: oldest;
}

void stats_rates(StatSample ring[STATS_HISTORY], const StatSample *cur, size_t n, uint32_t counters,
                 uint64_t window_usec, StatRates *ret) {
        StatSample *newest = NULL;

        *ret = (StatRates) {};
        for (size_t i = 0; i < STATS_HISTORY; i++) {
                StatSample *x = &ring[i];
                if (x->usec && (!newest || x->usec > newest->usec))
                        newest = x;
        }

        /* per value: the sample holding it whose age is closest to the window (samples may
         * hold different values: irq_count is only read when asked for) */
        double window_sec = 0;
        for (size_t v = 0; v < n; v++) {
                uint32_t bit = UINT32_C(1) << v;
                const StatSample *best = NULL;
                uint64_t best_dist = UINT64_MAX;
                if (!(counters & bit) || !(cur->valid & bit))
                        continue;
                for (size_t i = 0; i < STATS_HISTORY; i++) {
                        const StatSample *x = &ring[i];
                        if (!x->usec || !(x->valid & bit) || x->usec > cur->usec || cur->usec - x->usec < RATE_MIN_AGE_USEC)
                                continue;
                        uint64_t age = cur->usec - x->usec;
                        uint64_t dist = age > window_usec ? age - window_usec : window_usec - age;
                        if (dist < best_dist) {
                                best = x;
                                best_dist = dist;
                        }
                }
                if (!best || cur->v[v] < best->v[v])
                        continue;
                double dt = (cur->usec - best->usec) / 1e6;
                ret->per_sec[v] = (cur->v[v] - best->v[v]) / dt;
                ret->valid |= bit;
                window_sec = window_sec > dt ? window_sec : dt;
        }
        ret->window_sec = window_sec;

        /* A burst of reads does not flush the history (at most one sample per 0.1 s), unless
         * this read holds a value the newest sample lacks (irq_count read right after another
         * counter): then it is kept too, in the newest sample's place when it holds all of it. */
        uint32_t mask = n >= 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1;
        if (!newest || cur->usec >= newest->usec + SAMPLE_MIN_SPACING_USEC)
                *ring_victim(ring, cur->usec, counters & mask, window_usec) = *cur;
        else if (cur->usec >= newest->usec && (cur->valid & mask & ~newest->valid)) {
                if ((cur->valid & newest->valid) == newest->valid)
                        *newest = *cur;
                else
                        *ring_victim(ring, cur->usec, counters & mask, window_usec) = *cur;
        }
}

void hctx_stats_to_sample(const HctxStats *s, StatSample *ret) {
        *ret = (StatSample) { .usec = s->usec };
        for (StatId i = 0; i < _STAT_MAX; i++)
                if (s->v[i].valid) {
                        ret->v[i] = s->v[i].value;
                        ret->valid |= UINT32_C(1) << i;
                }
}

void device_stats_init(DeviceStats *s) {
        *s = (DeviceStats) {};
}

void device_stats_done(DeviceStats *s) {
        free(s->history);
        free(s->disk_history);
        free(s->hctx_files);
        device_stats_init(s);
}

void device_stats_fit_hctx(DeviceStats *s, size_t n_hctx) {
        if (s->n_hctx_files != n_hctx) {
                free(s->hctx_files);
                s->hctx_files = calloc(n_hctx, sizeof(HctxStatsFiles));
                s->n_hctx_files = s->hctx_files ? n_hctx : 0;
        }
        if (s->n_history_hctx != n_hctx) {
                free(s->history);
                s->history = calloc(n_hctx * STATS_HISTORY, sizeof(StatSample));
                s->n_history_hctx = s->history ? n_hctx : 0;
        }
}

HctxStatsFiles *device_stats_hctx_files(DeviceStats *s, size_t pos) {
        return s->hctx_files && pos < s->n_hctx_files ? &s->hctx_files[pos] : NULL;
}

StatSample *device_stats_hctx_ring(DeviceStats *s, size_t pos) {
        return s->history && pos < s->n_history_hctx ? &s->history[pos * STATS_HISTORY] : NULL;
}

StatSample *device_stats_disk_ring(DeviceStats *s) {
        if (!s->disk_history)
                s->disk_history = calloc(STATS_HISTORY, sizeof(StatSample));
        return s->disk_history;
}
