/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The decisions that span disks: what one disk wants depends on what the others over the same
 * NIC or module want. Pure functions over arrays of peers (name, facts, plan) that the manager
 * and apply/ collect from the registry; every one of them is a rule of its own name.
 */

#include <stdbool.h>
#include <stddef.h>

#include "facts.h"
#include "policy.h"

/* A disk as a cross-disk rule sees it: its name, facts and plan (read only, not owned). */
typedef struct PolicyPeer {
        const char *name;
        const DiskFacts *facts;
        const Plan *plan;
} PolicyPeer;

/*
 * Rule net-align-shared: one disk places a NIC. Disks of one controller share its tagset, hence
 * one hctx layout and the same NIC wishes; disks of different controllers over one NIC may want
 * different ones and would overwrite each other (and each other's originals). So when one of
 * peers (n_peers; the disk itself among them is skipped by name) over the same NIC wants other
 * nic_irq_affinity/xps values and sorts before name (strverscmp), plan (the disk's, being
 * evaluated) drops its NIC wishes and says whose placement it is in one explain line;
 * nr_io_queues stays (it is the controller's). Returns 0 or -ENOMEM. Pure.
 */
int policy_net_arbitrate(const char *name, const DiskFacts *facts, const PolicyPeer *peers, size_t n_peers, Plan *plan);

/*
 * One module parameter as the disks' plans want it (Plan.modules and Plan.modules_deferred of
 * every peer), merged: module parameters are per driver, not per disk.
 */
typedef struct ModuleMerged {
        char *module, *param;
        char *wanted;           /* the value wanted: the first disk's when they disagree */
        char *wanted_by;        /* "sda sdb": every disk that wants it, in peer order */
        bool conflict;          /* disks want different values (rule module-conflict): none is written */
        bool unsupported;       /* a disk found this kernel's module without the parameter */
        bool root_disk;         /* a disk that wants it holds the root file system */
        /* only wishes another tool's setting wins over (the owner rule): wanted is the last of
         * them and owner its tool (ModuleWish.owner); never written */
        bool deferred;
        char *owner;
} ModuleMerged;

void module_merged_free(ModuleMerged *a, size_t n);

/*
 * Merge the module wishes of peers (n_peers, in their order; each peer's plan holds its
 * wishes). One entry per (module, param) in the order first wanted: the wishes to write first,
 * then those only deferred. A wish to write wins over deferred ones; two disks wanting
 * different values are a conflict. Returns 0 with *ret (free with module_merged_free()) and
 * *ret_n, or -ENOMEM. Pure.
 */
int policy_modules_merge(const PolicyPeer *peers, size_t n_peers, ModuleMerged **ret, size_t *ret_n);
