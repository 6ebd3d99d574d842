/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * apply-net: the network knobs of a disk (policies/net-align.c), carried out like every other
 * knob by apply/apply.c's run (decide on the loop thread, write on a worker, read back,
 * originals recorded before the first write and persisted, restored on stop, dry-run honoured):
 *
 *   nic_irq_affinity  "<irq>:<cpulist> ..."        procfs irq/<irq>/smp_affinity_list
 *   xps               "<if>/tx-<n>:<cpulist> ..."  sysfs class/net/<if>/queues/tx-<n>/xps_cpus
 *                                                  (written as a hex mask, net/core/net-sysfs.c
 *                                                  xps_cpus_store() parses it with bitmap_parse())
 *   nr_io_queues      "<n>"                        never written: applied/ reads pending-reconnect
 *                                                  with the nvme connect option for the next connect;
 *                                                  blkmqd never disconnects a live controller
 *
 * The value and the original of nic_irq_affinity and xps are the composite of their items; an
 * item whose value already is the wanted one is not written.
 */

#include <stdbool.h>

#include "apply.h"

/* True for the knobs handled here. */
bool apply_net_knob(Knob k);

/* Decide knob k for d's plan (see apply/apply.c queue_knob_decide()): returns originals
 * dropped (>= 0) or -ENOMEM, *ret_job the write when one is needed. */
int apply_net_decide(HostFs *h, Device *d, Knob k, const ApplyOptions *o, WriteJob **ret_job);

/* Put k's original back: *ret_job the write, or nothing to write. Returns 0 or -ENOMEM. */
int apply_net_restore_decide(HostFs *h, Device *d, Knob k, WriteJob **ret_job);

/* The job of apply_net_decide() (restore: of apply_net_restore_decide(), or a put-back within an
 * apply run) returned. Returns the number of values written or originals dropped. */
int apply_net_finish(HostFs *h, Device *d, Knob k, const WriteJob *j, bool restore);
