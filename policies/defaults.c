/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shipped defaults, as data. Each class lists acceptable elevators in preference
 * order; a disk already running one of them is left as it is.
 *
 *  many-hctx-slow           mq-deadline, bfq: a rotating disk wants sorting and merging;
 *                           the many-hctx cost itself is fixed by the queue count
 *                           (module parameters), not by dropping the elevator.
 *                           mq-deadline first: the kernel's own choice for shared
 *                           tagsets (580dca8143d2) and the cheapest per request.
 *  fast-multiqueue          none, kyber: the multi-queue-aware choices; mq-deadline/bfq
 *                           serialise every hctx on one lock (null_blk 128 queues under
 *                           mq-deadline: ~263k IOPS, far higher under none).
 *  shared-tags              keep: the kernel picks mq-deadline for shared tagsets on
 *                           purpose (megaraid_sas write regression, 580dca8143d2).
 *  single-queue-rotational  mq-deadline, bfq: the kernel default; "none" on a disk
 *                           with seek cost loses sorting and merging.
 *  single-queue-fast        keep: the kernel default (mq-deadline) is reasonable.
 *  stacked                  none: loop/dm/md pass I/O to a device with its own
 *                           elevator; scheduling twice only adds latency
 *                           (openSUSE 60-io-scheduler.rules forces none for loop).
 */
#include <errno.h>

#include "macro.h"
#include "policy.h"
#include "strv.h"

static const char * const default_elevators[_DISK_CLASS_MAX][4] = {
        [DISK_CLASS_MANY_HCTX_SLOW]          = { "mq-deadline", "bfq" },
        [DISK_CLASS_FAST_MULTIQUEUE]         = { "none", "kyber" },
        [DISK_CLASS_SINGLE_QUEUE_ROTATIONAL] = { "mq-deadline", "bfq" },
        [DISK_CLASS_STACKED]                 = { "none" },
};

/* Vectors follow their hctx where blk-mq spreads queues over CPUs. */
static const bool default_irq_follow_hctx[_DISK_CLASS_MAX] = {
        [DISK_CLASS_MANY_HCTX_SLOW]  = true,
        [DISK_CLASS_FAST_MULTIQUEUE] = true,
        [DISK_CLASS_SHARED_TAGS]     = true,
};

int policy_config_init_defaults(PolicyConfig *config) {
        *config = (PolicyConfig) {};
        for (size_t c = 0; c < _DISK_CLASS_MAX; c++) {
                config->classes[c].rq_affinity = -1;    /* keep the kernel default (1) */
                config->classes[c].irq_follow_hctx = default_irq_follow_hctx[c];
        }
        for (size_t c = 0; c < _DISK_CLASS_MAX; c++)
                for (size_t i = 0; i < ELEMENTSOF(default_elevators[c]) && default_elevators[c][i]; i++)
                        if (strv_extend(&config->classes[c].elevators, default_elevators[c][i]) < 0) {
                                policy_config_done(config);
                                return -ENOMEM;
                        }
        return 0;
}
