/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Helpers of the network alignment rule (policies/net-align.c), exported for apply/apply-net.c
 * and the tests. All pure. */

#include <stddef.h>

#include "facts.h"

/* NIC queues that carry traffic: channels combined + max(rx, tx); without ethtool channels the
 * TX queue count. 0 when neither is known. */
unsigned net_align_queues(const NicFacts *nic);

/* The NIC queue serving hctx position pos of n_hctx over queues queues (see net-align.c), -1 none. */
int net_align_queue_of_hctx(size_t pos, size_t n_hctx, unsigned queues);

/* The CPUs NIC queue q should interrupt on and transmit from: the union of its hctx's cpu_lists.
 * Returns 0 (ret may be empty: the queue serves no hctx) or -ENOMEM. */
int net_align_target(const DiskFacts *f, unsigned queues, unsigned q, CpuSet *ret);
