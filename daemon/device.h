/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Facts gathering for one whole disk, through hostfs only.
 *
 * Sources (paths relative to sysfs unless noted):
 *   block/<d>/{dev,size}, block/<d>/queue/{rotational,scheduler,rq_affinity,nr_requests},
 *   block/<d>/mq/<n>/{cpu_list,nr_tags,nr_reserved_tags} (block/blk-mq-sysfs.c),
 *   block/<d>/device/queue_depth (SCSI), class/scsi_host/hostN/{proc_name,nr_hw_queues,can_queue}
 *   (drivers/scsi/hosts.c; nr_hw_queues since 5.10), the PCI function's msi_irqs/ and numa_node,
 *   debugfs block/<d>/hctxN/flags (TAG_HCTX_SHARED) and block/<d>/state (SQ_SCHED, ≥ 5.19,
 *   4d337cebcb1c), procfs sys/kernel/osrelease.
 */

#include "facts.h"
#include "hostfs.h"
#include "interrupts.h"

/*
 * Machine-wide inputs read once for many disks (coldplug of thousands of disks would
 * otherwise parse a multi-megabyte /proc/interrupts once per disk). Only for a batch:
 * a hot-plugged disk brings new IRQs, so single events read fresh.
 */
typedef struct GatherCache {
        bool have_interrupts;
        ProcInterrupts interrupts;
        char *mountinfo;
        char *kernel_release;
} GatherCache;

void gather_cache_done(GatherCache *c);

/*
 * Gather the facts of disk name (a /sys/block entry).
 * Returns 0 with *ret set; -ENOENT when the disk does not exist (vanished);
 * -ENOMEDIUM when it has no medium (size 0, e.g. an unbound loop device: like lsblk,
 * blkmqd does not list those); -EINVAL for an invalid name; -ENOMEM.
 * Missing attributes are not errors: the fact reads "unknown: <reason>".
 */
int device_gather(HostFs *h, const char *name, DiskFacts **ret);

/* As device_gather(), with machine-wide inputs from (and filled into) cache; NULL = fresh. */
int device_gather_cached(HostFs *h, const char *name, GatherCache *cache, DiskFacts **ret);

/*
 * Names of the whole disks in sysfs block/ (coldplug without libudev, e.g. on a fixture root).
 * Returns 0 with a strv, or -errno.
 */
int device_list_disks(HostFs *h, char ***ret);
