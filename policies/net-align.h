/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Helpers of the network alignment rule (policies/net-align.c), exported for apply/apply-net.c
 * and the tests. All pure. */

#include <stddef.h>

#include "facts.h"

/* NIC queues that carry traffic: channels combined + max(rx, tx); without ethtool channels the
 * TX queue count. 0 when neither is known. */
unsigned net_align_queues(const NicFacts *nic);

/* The NIC queue serving the hctx of rank pos in a map of n_hctx over queues NIC queues (see
 * net-align.c): pos * queues / n_hctx when n_hctx >= queues, else pos; -1 none. */
int net_align_queue_of_hctx(size_t pos, size_t n_hctx, unsigned queues);

/*
 * The hctx of each queue map of f (ret[HCTX_TYPE_DEFAULT] ...), from hctxN/type. Returns 0;
 * 1 when the types are unknown but no two cpu_lists overlap (one map: every hctx counted as
 * default); -ENODATA when the types are unknown and cpu_lists overlap or are unknown
 * (several maps, or cannot tell).
 */
int net_align_maps(const DiskFacts *f, size_t ret[_HCTX_TYPE_MAX]);

/* The NIC queue serving hctx position pos of f: its rank within its map of maps[] (as
 * net_align_maps() counted them) laid over queues; -1 none. */
int net_align_queue_of(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], size_t pos, unsigned queues);

/* A disk's hctx laid over a NIC's queues. */
typedef struct NetLayout {
        unsigned queues;
        CpuSet *target;         /* [queues]: the CPUs NIC queue q should interrupt on and send from,
                                 * the union of the cpu_lists of the hctx it serves (empty: none) */
        unsigned conflicts;     /* bits 1 << HctxType: maps left out of target[], their hctx would
                                 * put a CPU under two NIC queues of the maps before them */
        unsigned over;          /* bits: maps with more hctx than NIC queues */
} NetLayout;

void net_layout_done(NetLayout *l);

/*
 * Lay the hctx of every map of f over queues NIC queues, map by map (default, read, poll):
 * the hctx of rank i in a map of n goes to net_align_queue_of_hctx(i, n, queues). Returns 0,
 * -EINVAL (queues 0), -ENOMEM.
 */
int net_align_layout(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], unsigned queues, NetLayout *ret);

/* Fabrics options ("nr_io_queues=2 nr_write_queues=2") as nvme-cli spells them
 * ("--nr-io-queues=2 --nr-write-queues=2"). NULL on ENOMEM. */
char *net_align_cli_options(const char *options);
