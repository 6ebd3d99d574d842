// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-hctx blk-mq counters that the kernel stopped exporting in debugfs (hctx "dispatched",
 * "queued" and ctx "completed" went in 5.16 by 9a14d6ce4135 and afd7de03c526, hctx "run" in 6.8 by
 * 49e60333d743).
 *
 * CO-RE: every struct access goes through BPF_CORE_READ, so the object built against one kernel's
 * BTF loads on any kernel with BTF (/sys/kernel/btf/vmlinux) and the fields below.
 *
 *   raw_tp/block_rq_issue     -> dispatched        (blk_mq_start_request(), include/trace/events/block.h)
 *   raw_tp/block_rq_complete  -> completed_local / completed_remote (blk_update_request())
 *   fentry|kprobe/blk_mq_sched_dispatch_requests -> runs  (the old debugfs "run" increment site,
 *                                                    block/blk-mq-sched.c, <= 6.7)
 *
 * Userspace (stats/stats-bpf.c) decides at load time which of the alternatives load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "hctx-stats.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * block_rq_issue's TP_PROTO was (struct request_queue *q, struct request *rq) before a54895fa
 * (v5.11-rc1) and is (struct request *rq) since. Userspace inspects the BTF typedef
 * btf_trace_block_rq_issue and sets this before load (like libbpf-tools' biolatency targ_single).
 */
const volatile bool rq_issue_single_arg = true;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, HCTX_STATS_MAX_ENTRIES);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, struct hctx_stats_key);
        __type(value, struct hctx_stats_value);
} hctx_stats SEC(".maps");

/* Events lost because hctx_stats was full (HCTX_STATS_MAX_ENTRIES pairs): slot 0, per CPU. Events
 * the kernel did not deliver at all (a program already running on this CPU: the raw tracepoint
 * recursion guard in __bpf_trace_run(), kernel/trace/bpf_trace.c) are counted by the kernel in
 * bpf_prog_info.recursion_misses; userspace reads both. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, __u64);
} hctx_stats_map_full SEC(".maps");

/* Before 5.16 the disk hung off the request (rq->rq_disk); since then off the queue (q->disk).
 * Both are flavours, so this file compiles against the BTF of old and new build hosts alike. */
struct request___old {
        struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

struct request_queue___new {
        struct gendisk *disk;
} __attribute__((preserve_access_index));

static __always_inline bool disk_to_kdev(struct gendisk *disk, __u32 *ret) {
        int major, minor;

        if (!disk)
                return false;
        major = BPF_CORE_READ(disk, major);
        minor = BPF_CORE_READ(disk, first_minor);
        *ret = ((__u32) major << HCTX_STATS_MINORBITS) | ((__u32) minor & HCTX_STATS_MINORMASK);
        return true;
}

static __always_inline struct gendisk *queue_disk(struct request_queue *q) {
        struct request_queue___new *nq = (void *) q;

        if (!nq || !bpf_core_field_exists(nq->disk))
                return NULL;
        return BPF_CORE_READ(nq, disk);
}

static __always_inline struct gendisk *rq_disk(struct request *rq) {
        struct request___old *old = (void *) rq;

        if (bpf_core_field_exists(old->rq_disk))
                return BPF_CORE_READ(old, rq_disk);
        return queue_disk(BPF_CORE_READ(rq, q));
}

static __always_inline struct hctx_stats_value *lookup_or_init(const struct hctx_stats_key *key) {
        static const struct hctx_stats_value zero = {};
        struct hctx_stats_value *v;

        v = bpf_map_lookup_elem(&hctx_stats, key);
        if (v)
                return v;
        /* -EEXIST when another CPU raced us is fine; -E2BIG when full: the event is lost. */
        (void) bpf_map_update_elem(&hctx_stats, key, &zero, BPF_NOEXIST);
        v = bpf_map_lookup_elem(&hctx_stats, key);
        if (!v) {
                __u32 slot = 0;
                __u64 *lost = bpf_map_lookup_elem(&hctx_stats_map_full, &slot);

                if (lost)
                        (*lost)++;      /* per-CPU slot: no other writer */
        }
        return v;
}

static __always_inline struct hctx_stats_value *rq_entry(struct request *rq) {
        struct hctx_stats_key key;
        struct blk_mq_hw_ctx *hctx;

        hctx = BPF_CORE_READ(rq, mq_hctx);
        if (!hctx)
                return NULL;
        /* Queues without a gendisk (SCSI passthrough to tapes/changers, NVMe admin) are skipped. */
        if (!disk_to_kdev(rq_disk(rq), &key.kdev))
                return NULL;
        key.hctx = BPF_CORE_READ(hctx, queue_num);
        return lookup_or_init(&key);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(on_block_rq_issue) {
        struct request *rq;
        struct hctx_stats_value *v;

        if (rq_issue_single_arg)
                rq = (struct request *) ctx[0];
        else
                rq = (struct request *) ctx[1];

        v = rq_entry(rq);
        if (v)
                __sync_fetch_and_add(&v->dispatched, 1);
        return 0;
}

/* TP_PROTO(struct request *rq, blk_status_t error, unsigned int nr_bytes), stable since 4.x. */
SEC("raw_tp/block_rq_complete")
int BPF_PROG(on_block_rq_complete) {
        struct request *rq = (struct request *) ctx[0];
        unsigned int nr_bytes = (unsigned int) ctx[2];
        struct hctx_stats_value *v;
        struct blk_mq_ctx *mctx;
        __u32 cpu;

        /* blk_update_request() fires this once per (partial) completion, before __data_len is
         * reduced. Only the call that completes the remaining bytes finishes the request. */
        if (nr_bytes < BPF_CORE_READ(rq, __data_len))
                return 0;

        mctx = BPF_CORE_READ(rq, mq_ctx);
        if (!mctx)
                return 0;
        cpu = BPF_CORE_READ(mctx, cpu);

        v = rq_entry(rq);
        if (!v)
                return 0;
        /* At this tracepoint we run where the completion finally ran, i.e. after any IPI/softirq
         * redirection by blk_mq_complete_request_remote() (block/blk-mq.c). */
        if (bpf_get_smp_processor_id() == cpu)
                __sync_fetch_and_add(&v->completed_local, 1);
        else
                __sync_fetch_and_add(&v->completed_remote, 1);
        return 0;
}

static __always_inline int count_run(struct blk_mq_hw_ctx *hctx) {
        struct hctx_stats_key key;
        struct hctx_stats_value *v;

        if (!hctx)
                return 0;
        if (!disk_to_kdev(queue_disk(BPF_CORE_READ(hctx, queue)), &key.kdev))
                return 0;
        key.hctx = BPF_CORE_READ(hctx, queue_num);
        v = lookup_or_init(&key);
        if (v)
                __sync_fetch_and_add(&v->runs, 1);
        return 0;
}

/* void blk_mq_sched_dispatch_requests(struct blk_mq_hw_ctx *hctx); never inlined 4.13-6.8
 * (DWARF inline analysis of Ubuntu's kernels, DepSurf). Autoload is switched off by userspace unless the kernel can attach it. */
SEC("fentry/blk_mq_sched_dispatch_requests")
int BPF_PROG(on_dispatch_fentry, struct blk_mq_hw_ctx *hctx) {
        return count_run(hctx);
}

/* Same, for kernels with kprobes but without BPF trampolines. */
SEC("kprobe/blk_mq_sched_dispatch_requests")
int BPF_KPROBE(on_dispatch_kprobe, struct blk_mq_hw_ctx *hctx) {
        return count_run(hctx);
}
