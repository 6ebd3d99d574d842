/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * stats-bpf: per-hctx blk-mq counters from BPF, for kernels that no longer export them in debugfs
 * (hctx "dispatched"/"queued" and ctx "completed" were removed in 5.16 by 9a14d6ce4135 and
 * afd7de03c526; hctx "run" in 6.8 by 49e60333d743; nothing replaced them).
 *
 * Sources of each counter (program: stats/bpf/hctx-stats.bpf.c, details: docs/BPF.md):
 *
 *   dispatched        raw_tp block_rq_issue. Fires in blk_mq_start_request() (block/blk-mq.c), i.e.
 *                     when the driver's ->queue_rq() starts the request. A request that is requeued
 *                     and issued again counts twice, as in the removed debugfs counter.
 *   completed_local   raw_tp block_rq_complete, on the call of blk_update_request() that finishes
 *   completed_remote  the request (partial completions are not counted), split by comparing
 *                     bpf_get_smp_processor_id() with rq->mq_ctx->cpu (the CPU whose software queue
 *                     the request was allocated from = the submitting CPU).
 *                     This tracepoint runs where the completion FINALLY ran: after
 *                     blk_mq_complete_request_remote() may have redirected it by IPI to
 *                     rq->mq_ctx->cpu or raised BLOCK_SOFTIRQ (block/blk-mq.c). So "local" means
 *                     "completed on the submitting CPU" (the IRQ arrived there, or rq_affinity
 *                     steered it back), "remote" means it was finished on another CPU (rq_affinity=0,
 *                     rq_affinity=1 with a cache-sharing CPU of equal capacity, force_irqthreads,
 *                     or a driver that completes from a worker, like loop). It is NOT the number of
 *                     completion IPIs; that would need fentry on blk_mq_complete_request_remote.
 *   runs              entries into blk_mq_sched_dispatch_requests() (block/blk-mq-sched.c), the
 *                     increment site of the removed hctx "run" counter (which skipped stopped or
 *                     quiesced hctxs; this one counts those calls too). Needs fentry (BPF
 *                     trampolines) or kprobes; see blkmqd_stats_bpf_has_runs().
 *
 * All counters start at 0 when blkmqd_stats_bpf_new() attaches and only grow (uint64_t, wraps are
 * not a practical concern). Requests on queues without a gendisk (SCSI passthrough to tapes,
 * NVMe admin) are not counted. Requires kernel BTF (CONFIG_DEBUG_INFO_BTF) and raw tracepoint
 * programs (4.17+); request->mq_hctx needs 5.0+.
 *
 * Not thread-safe per object; distinct objects may be used from distinct threads, but the log
 * function (blkmqd_stats_bpf_set_log_func) is process-wide because libbpf's is.
 *
 * This module never logs above debug: everything it or libbpf has to say goes to the log function.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "speed.h"

typedef struct StatsBpf StatsBpf;

typedef struct HctxBpfCounters {
        uint64_t dispatched;       /* requests issued to the driver (block_rq_issue), since attach */
        uint64_t completed_local;  /* requests completed on the submitting ctx's CPU, since attach */
        uint64_t completed_remote; /* requests completed on another CPU, since attach */
        uint64_t runs;             /* hctx dispatch runs since attach; valid only if
                                    * blkmqd_stats_bpf_has_runs(), else 0 */
} HctxBpfCounters;

/*
 * Receives every message of this module and of libbpf, one line without trailing newline.
 * All of them are debug-level: the caller should log them at debug priority or drop them.
 */
typedef void (*StatsBpfLogFunc)(const char *message, void *userdata);

/*
 * Route this module's and libbpf's messages to @func (NULL: drop them; the default).
 * Process-wide (libbpf_set_print() is global). Call before blkmqd_stats_bpf_new() to see why a
 * load failed. Never fails.
 */
void blkmqd_stats_bpf_set_log_func(StatsBpfLogFunc func, void *userdata);

/*
 * Load stats/bpf/hctx-stats.bpf.c (embedded skeleton) and attach its programs.
 *
 * The block_rq_issue/block_rq_complete raw tracepoints must attach, or this fails. The run counter
 * is optional: fentry is used when the kernel has BPF trampolines, else a kprobe is tried; if
 * neither attaches, the object is still returned and blkmqd_stats_bpf_has_runs() is false.
 *
 * @ret: on success, a new object; free with blkmqd_stats_bpf_free().
 *
 * Returns 0 on success, or:
 *   -EOPNOTSUPP  built without BPF (HAVE_BPF=0), or the kernel lacks BPF raw tracepoints
 *                (load fails with EINVAL/ENOTSUPP/ENOSYS, all mapped to EOPNOTSUPP)
 *   -ENOENT      no kernel BTF (/sys/kernel/btf/vmlinux), so CO-RE cannot relocate, or the
 *                block_rq_issue/complete tracepoints do not exist
 *   -EPERM       not privileged enough to load BPF (needs CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN),
 *                or BPF is locked down (kernel.unprivileged_bpf_disabled, lockdown)
 *   -ENOMEM, other -errno from bpf(2)
 */
int blkmqd_stats_bpf_new(StatsBpf **ret);

/* Detach and unload everything. Accepts NULL. Always returns NULL. */
StatsBpf *blkmqd_stats_bpf_free(StatsBpf *s);

static inline void blkmqd_stats_bpf_freep(StatsBpf **s) {
        if (s && *s)
                *s = blkmqd_stats_bpf_free(*s);
}

/*
 * Read the counters of one hardware queue.
 *
 * @devnum: the whole disk's device number, as userspace makedev() encodes it (st_rdev of
 *          /dev/<disk>, or the MAJOR:MINOR of /sys/block/<disk>/dev). Partitions are not keyed
 *          separately: their I/O counts on the disk. (The map stores the kernel-internal encoding
 *          major << 20 | minor; the conversion happens here.)
 * @hctx:   the hardware queue number, N in /sys/block/<disk>/mq/N (hctx->queue_num).
 * @ret:    receives the summed counters (sum over the per-CPU copies).
 *
 * Returns 0 on success, or:
 *   -ENOENT      no event seen on that hctx since attach (so all its counters are 0), or the
 *                entry was dropped by blkmqd_stats_bpf_forget()
 *   -EINVAL      @devnum cannot exist in the kernel (major >= 4096 or minor >= 2^20), or NULL args
 *   -EOPNOTSUPP  built without BPF
 *   other -errno from bpf(2)
 */
int blkmqd_stats_bpf_read(StatsBpf *s, dev_t devnum, unsigned hctx, HctxBpfCounters *ret);

/*
 * Copy the whole per-hctx map with BPF_MAP_LOOKUP_BATCH (Linux >= 5.6, kernel/bpf/hashtab.c
 * htab_percpu_map_lookup_batch()), a few syscalls instead of one lookup per hctx; until
 * blkmqd_stats_bpf_snapshot_drop(), blkmqd_stats_bpf_read() answers from that copy (a
 * metrics scrape: every hctx as of the scrape's start). Returns 0; -EINVAL, -ENOTSUPP or
 * another -errno when the kernel has no batch operation (reads then go to the map, one
 * lookup each, as without a snapshot); -ENOMEM.
 */
int blkmqd_stats_bpf_snapshot(StatsBpf *s);
void blkmqd_stats_bpf_snapshot_drop(StatsBpf *s);

/* Events the counters above do not contain, host-wide (all disks), since attach. */
typedef struct StatsBpfMissed {
        /* Tracepoint hits the kernel did not run the program for, because it was already running
         * on that CPU (the per-program recursion guard of raw tracepoints, __bpf_trace_run() in
         * kernel/trace/bpf_trace.c; e.g. a completion in hard IRQ context that interrupted the
         * program handling a completion in softirq context). bpf_prog_info.recursion_misses,
         * kernel 5.12+ (9ed9e9ba2337); valid only if recursion_known. */
        uint64_t issue_recursion;    /* block_rq_issue: dispatched undercounts by this much */
        uint64_t complete_recursion; /* block_rq_complete: completed_* undercount by this much */
        bool recursion_known;        /* false: the kernel predates recursion_misses */
        /* Events dropped because the (disk, hctx) map was full (HCTX_STATS_MAX_ENTRIES). */
        uint64_t map_full;
} StatsBpfMissed;

/*
 * Read how many events were lost (see StatsBpfMissed). Needed to interpret the counters: on a busy
 * machine dispatched minus completed_local minus completed_remote is in-flight requests plus
 * complete_recursion minus issue_recursion, not in-flight requests alone.
 *
 * Returns 0 on success, -EINVAL for NULL args, -EOPNOTSUPP when built without BPF, other -errno
 * from bpf(2).
 */
int blkmqd_stats_bpf_missed(StatsBpf *s, StatsBpfMissed *ret);

/* True if HctxBpfCounters.runs is being counted (a run program is attached). */
bool blkmqd_stats_bpf_has_runs(StatsBpf *s);

/*
 * How runs are counted: "fentry" (BPF trampoline, needs the tracing program type:
 * CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS; Debian 6.1 and 6.12 have it) or "kprobe"; NULL when
 * they are not (then blkmqd_stats_bpf_runs_unavailable_reason() says why). Static string.
 */
const char *blkmqd_stats_bpf_runs_attach(StatsBpf *s);

/*
 * Why runs are not counted, as one human-readable line for "unavailable: <reason>" files, e.g.
 * "no BPF attach point for blk_mq_sched_dispatch_requests on this kernel (fentry: BPF tracing
 * programs not supported; kprobe: attach failed: Operation not supported)".
 * NULL if blkmqd_stats_bpf_has_runs(). The string is owned by @s (NULL @s: a static string
 * saying BPF stats are not loaded).
 */
const char *blkmqd_stats_bpf_runs_unavailable_reason(StatsBpf *s);

/*
 * Drop all map entries of a disk, e.g. when it is removed, so that a new disk reusing the same
 * device number starts from zero (and the map, HCTX_STATS_MAX_ENTRIES = 8192 (disk, hctx) pairs,
 * does not fill up; events on new pairs are lost while it is full).
 *
 * @devnum: as for blkmqd_stats_bpf_read().
 *
 * Returns the number of entries removed (>= 0), -EINVAL for an impossible @devnum, -EOPNOTSUPP
 * when built without BPF, other -errno from bpf(2). Events racing with the removal may re-create
 * an entry; call again after the disk is gone from the block layer.
 */
int blkmqd_stats_bpf_forget(StatsBpf *s, dev_t devnum);

/*
 * Device service time of each disk (the measured speed, policies/speed.h): the programs
 * on_svc_issue/on_svc_complete of hctx-stats.bpf.c time every read and write of at most 64 KiB
 * from block_rq_issue (blk_mq_start_request(): the driver's ->queue_rq() took it, so time in
 * the elevator and waiting for a tag is not counted) to the block_rq_complete that finishes it,
 * into a histogram per disk (SPEED_BUCKETS), and send the disk's number through a ring buffer
 * after every 256 requests, at most once a second per disk: nothing while no disk does I/O.
 * Needs BPF ring buffers (5.8+); without them the rest of the provider loads alone.
 */

/* True when service times are measured (the programs loaded and attached, and enabled). */
bool blkmqd_stats_bpf_has_service(StatsBpf *s);
/* Why not (static or owned by s), NULL when they are. */
const char *blkmqd_stats_bpf_service_unavailable_reason(StatsBpf *s);
/* Attach (on) or detach the two programs: [Speed] Measure=no costs nothing. 0 or -errno. */
int blkmqd_stats_bpf_service_enable(StatsBpf *s, bool on);
/* The histogram of devnum (userspace encoding) since attach: 0, -ENOENT (nothing measured),
 * -EINVAL, -EOPNOTSUPP, -errno. ret->count and the buckets agree. */
int blkmqd_stats_bpf_read_service(StatsBpf *s, dev_t devnum, SpeedHistogram *ret);
/* Time devnum's requests (on) or stop and forget its histogram (off): only watched disks are
 * measured and send events. 0, -EINVAL, -EOPNOTSUPP, -errno. */
int blkmqd_stats_bpf_service_watch(StatsBpf *s, dev_t devnum, bool on);
/* The ring buffer's epoll fd: readable when events wait; -EOPNOTSUPP without service times. */
int blkmqd_stats_bpf_service_fd(StatsBpf *s);
/* Call on_disk(devnum, userdata) for every event waiting (a disk may come more than once).
 * Returns the number of events, or -errno. */
typedef void (*StatsBpfServiceFunc)(dev_t devnum, void *userdata);
int blkmqd_stats_bpf_service_consume(StatsBpf *s, StatsBpfServiceFunc on_disk, void *userdata);
