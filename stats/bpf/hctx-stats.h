/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Layout shared by hctx-stats.bpf.c (BPF side) and stats-bpf.c (userspace). Plain fixed-width
 * types only, so both the BPF target (vmlinux.h) and glibc see the same layout.
 */

#ifdef __BPF__
typedef __u32 hs_u32;
typedef __u64 hs_u64;
#else
#include <stdint.h>
typedef uint32_t hs_u32;
typedef uint64_t hs_u64;
#endif

/* Map key: one entry per (disk, hardware queue). */
struct hctx_stats_key {
        /* Disk as the kernel encodes dev_t internally (MKDEV in include/linux/kdev_t.h):
         * major << 20 | minor. NOT userspace makedev(); stats-bpf.c converts. */
        hs_u32 kdev;
        /* struct blk_mq_hw_ctx.queue_num, i.e. the N of /sys/block/<disk>/mq/N */
        hs_u32 hctx;
};

/* Map value, one copy per possible CPU (BPF_MAP_TYPE_PERCPU_HASH); userspace sums them. */
struct hctx_stats_value {
        hs_u64 dispatched;       /* block_rq_issue */
        hs_u64 completed_local;  /* block_rq_complete (final) on rq->mq_ctx->cpu */
        hs_u64 completed_remote; /* block_rq_complete (final) elsewhere */
        hs_u64 runs;             /* entries into blk_mq_sched_dispatch_requests() */
};

#define HCTX_STATS_MAX_ENTRIES 8192

/*
 * Device service time per disk (on_svc_issue/on_svc_complete): reads and writes of at most
 * SVC_MAX_BYTES, issue -> final completion, in the buckets of policies/speed.h (SPEED_BUCKETS:
 * bucket 0 below 1 µs, 1 + 4k + q for the q-th quarter of 2^k <= v < 2^(k+1) µs, 127 from 2^31 µs).
 */
#define SVC_BUCKETS 128
#define SVC_MAX_BYTES 65536
#define SVC_MAX_DISKS 4096
#define SVC_MAX_INFLIGHT 16384          /* requests between issue and completion, all disks */
#define SVC_EVENT_EVERY 256             /* a disk's ring buffer event: every 256 requests ... */
#define SVC_EVENT_GAP_NS 1000000000ULL  /* ... and at most one a second: no event while it is idle */

struct svc_hist {
        hs_u64 count;                   /* requests measured */
        hs_u64 sum_usec;                /* their service times added up */
        hs_u64 last_event_ns;           /* bpf_ktime_get_ns() of the last event sent */
        hs_u64 buckets[SVC_BUCKETS];
};

/* Kernel-internal dev_t encoding (include/linux/kdev_t.h). */
#define HCTX_STATS_MINORBITS 20
#define HCTX_STATS_MINORMASK ((1U << HCTX_STATS_MINORBITS) - 1)
