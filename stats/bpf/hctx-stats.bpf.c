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
 *   raw_tp/block_rq_issue + block_rq_complete (on_svc_*) -> per-disk device service time
 *                             histogram (svc_hist) and a ring buffer event per disk now and then
 *                             (svc_events): the measured speed (policies/speed.h)
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

/* ---- device service time (the measured speed, policies/speed.h) ------------------------------- */

/* include/linux/blk_types.h: the op is the low REQ_OP_BITS (8) bits of cmd_flags since 4.10
 * (ef295ecf090d); REQ_OP_READ 0, REQ_OP_WRITE 1 (enum req_op). Macros are not in vmlinux.h. */
#define SVC_REQ_OP_MASK 0xffu

/* Issue time of each request in flight, by its address (a requeued request issued again is
 * timed from the new issue; LRU: an entry whose completion was never seen is dropped). */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, SVC_MAX_INFLIGHT);
        __type(key, __u64);
        __type(value, __u64);
} svc_start SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, SVC_MAX_DISKS);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct svc_hist);
} svc_hist SEC(".maps");

/* The disks userspace measures (kdev -> 1): the others are not timed into svc_hist and send no
 * events, so a disk blkmqd does not list wakes nobody. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, SVC_MAX_DISKS);
        __type(key, __u32);
        __type(value, __u8);
} svc_watch SEC(".maps");

/* kdev (__u32) of a disk whose histogram grew: userspace reads it then (no timer of its own). */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 4096);
} svc_events SEC(".maps");

static const struct svc_hist svc_zero = {};

/* The bucket of v µs (policies/speed.c speed_bucket_of()). */
static __always_inline __u32 svc_bucket(__u64 v) {
        __u32 k = 0;
        __u64 x = v;

        if (v == 0)
                return 0;
        if (x >> 32) { x >>= 32; k += 32; }
        if (x >> 16) { x >>= 16; k += 16; }
        if (x >> 8) { x >>= 8; k += 8; }
        if (x >> 4) { x >>= 4; k += 4; }
        if (x >> 2) { x >>= 2; k += 2; }
        if (x >> 1) { k += 1; }
        if (k > 30)
                return SVC_BUCKETS - 1;
        if (k >= 2)
                return 1 + 4 * k + ((__u32) (v >> (k - 2)) & 3);
        return 1 + 4 * k + (k == 1 ? ((__u32) v & 1) << 1 : 0);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(on_svc_issue) {
        struct request *rq;
        __u64 key, now;
        __u32 op, len;

        if (rq_issue_single_arg)
                rq = (struct request *) ctx[0];
        else
                rq = (struct request *) ctx[1];
        op = BPF_CORE_READ(rq, cmd_flags) & SVC_REQ_OP_MASK;
        if (op > 1)                     /* not a read or a write: a flush, discard, zone op, passthrough */
                return 0;
        len = BPF_CORE_READ(rq, __data_len);
        if (len == 0 || len > SVC_MAX_BYTES)
                return 0;
        key = (__u64) rq;
        now = bpf_ktime_get_ns();
        (void) bpf_map_update_elem(&svc_start, &key, &now, BPF_ANY);
        return 0;
}

/* TP_PROTO(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
SEC("raw_tp/block_rq_complete")
int BPF_PROG(on_svc_complete) {
        struct request *rq = (struct request *) ctx[0];
        unsigned int nr_bytes = (unsigned int) ctx[2];
        struct svc_hist *h;
        __u64 key = (__u64) rq, *start, now, usec;
        __u32 kdev, b;

        /* the call of blk_update_request() that finishes the request (see on_block_rq_complete) */
        if (nr_bytes < BPF_CORE_READ(rq, __data_len))
                return 0;
        start = bpf_map_lookup_elem(&svc_start, &key);
        if (!start)
                return 0;
        now = bpf_ktime_get_ns();
        usec = now > *start ? (now - *start) / 1000 : 0;
        (void) bpf_map_delete_elem(&svc_start, &key);
        if (!disk_to_kdev(rq_disk(rq), &kdev) || !bpf_map_lookup_elem(&svc_watch, &kdev))
                return 0;

        h = bpf_map_lookup_elem(&svc_hist, &kdev);
        if (!h) {
                (void) bpf_map_update_elem(&svc_hist, &kdev, &svc_zero, BPF_NOEXIST);
                h = bpf_map_lookup_elem(&svc_hist, &kdev);
                if (!h)
                        return 0;
        }
        b = svc_bucket(usec);
        /* A mask the compiler cannot drop (it knows b < SVC_BUCKETS and removed a compare): 6.1's
         * verifier loses b's bound through the OR in svc_bucket() and refused the program with "R1
         * unbounded memory access"; an AND with a constant it does follow. */
        _Static_assert((SVC_BUCKETS & (SVC_BUCKETS - 1)) == 0, "SVC_BUCKETS is a power of two");
        asm volatile("" : "+r"(b));
        b &= SVC_BUCKETS - 1;
        __sync_fetch_and_add(&h->buckets[b], 1);
        __sync_fetch_and_add(&h->sum_usec, usec);
        __sync_fetch_and_add(&h->count, 1);
        /* a plain read after the add: two CPUs may both see a multiple, or none; either only
         * moves an event by SVC_EVENT_EVERY requests */
        if (h->count % SVC_EVENT_EVERY == 0 && now - h->last_event_ns >= SVC_EVENT_GAP_NS) {
                h->last_event_ns = now;
                (void) bpf_ringbuf_output(&svc_events, &kdev, sizeof(kdev), 0);
        }
        return 0;
}
