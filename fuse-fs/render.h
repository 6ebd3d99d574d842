/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Renderers: registry snapshot + node -> file content. Each subtree module has the same
 * signature. Return 0 with a newly allocated, newline-terminated string, or -ENOENT (the
 * device or hctx is gone), -EISDIR (a directory), -ENOMEM.
 *
 * They write nothing. Three kinds read first: applied/<knob> and applied/iosched call
 * FuseFsContext.verify (the manager reads the disk's knobs from the kernel again, so the file
 * shows the truth after an outside change; never a write to a kernel knob or the state
 * directory), the hctx/<n>/ files may complete the disk's per-hctx facts in memory
 * (FuseFsContext.load_hctx_details: what gathering left out because the policy did not need
 * it), and live files read counters through the context's readers. Everything else is a
 * function of the registry snapshot.
 */

#include <stdio.h>

#include "fuse-fs.h"
#include "node.h"

int render_node(const FuseFsContext *ctx, const Node *n, char **ret);

int render_control(const FuseFsContext *ctx, const Node *n, char **ret);   /* control.c: version */
int render_device(const FuseFsContext *ctx, const Node *n, char **ret);    /* devices.c */
int render_not_listed(const FuseFsContext *ctx, char **ret);               /* devices.c: /not_listed */
int render_hctx(const FuseFsContext *ctx, const Node *n, char **ret);      /* hctx.c */
int render_module(const FuseFsContext *ctx, const Node *n, char **ret);    /* module-params.c */
int render_iosched(const FuseFsContext *ctx, const Node *n, char **ret);   /* iosched.c */
int render_stats(const FuseFsContext *ctx, const Node *n, char **ret);     /* stats.c: hctx stats, stat, completions */
int render_host(const FuseFsContext *ctx, const Node *n, char **ret);      /* hosts.c */
int render_network(const FuseFsContext *ctx, const Node *n, char **ret);   /* network.c */
int render_nic(const FuseFsContext *ctx, const Node *n, char **ret);       /* network.c */
/* The name of the child a disk has in hosts/ (its SCSI host) or nics/ (its NIC); NULL for none. */
typedef const char *(*disk_child_name_t)(const DiskFacts *f);
const char *disk_scsi_host(const DiskFacts *f);                            /* render.c */
const char *disk_nic(const DiskFacts *f);                                  /* render.c */
/*
 * The disks of reg whose name_of() is name (those of hosts/<host>/, nics/<if>/): their names,
 * blank-separated, to out unless it is NULL, the first one's facts to *ret_first (NULL: none).
 * Returns how many.
 */
size_t disks_named(const Registry *reg, disk_child_name_t name_of, const char *name, FILE *out,
                   const DiskFacts **ret_first);                           /* render.c */
/* The network families of /metrics (network.c). */
void render_net_metrics(FILE *f, const Registry *reg, void (*family)(FILE *, const char *, const char *, const char *),
                        void (*put_label)(FILE *, const char *, const char *, bool));
/* /metrics. With ctx->metrics_cache, each disk's event-driven lines (disk_info, applied,
 * applied_iosched, the fact gauges) are kept between scrapes and rendered again only when what they show changed;
 * without, all are rendered. Returns 0 or -ENOMEM. */
int render_metrics(const FuseFsContext *ctx, char **ret);                  /* metrics.c */
/* The cache of /metrics' per-disk blocks (metrics.c). new: 0 or -ENOMEM. */
int metrics_cache_new(MetricsCache **ret);
MetricsCache *metrics_cache_free(MetricsCache *c);
/* Blocks rendered anew and blocks taken from the cache by all scrapes so far (tests, bench). */
void metrics_cache_counts(const MetricsCache *c, uint64_t *ret_rendered, uint64_t *ret_reused);
int render_block_softirqs(const FuseFsContext *ctx, char **ret);           /* stats.c */

/*
 * Whether and how applied/iosched (iosched.c) shows tunable t of d, which /metrics'
 * blkmqd_applied_iosched follows: not at all (blkmqd has nothing to do with it), as waiting
 * (another elevator's tunable an override or the plan wants: "unmanaged: waits: ..."), or
 * with its Applied (d->iosched[t]: a value blkmqd wrote, wants, or recorded to put back).
 */
typedef enum IoschedShown {
        IOSCHED_SHOWN_NOT,
        IOSCHED_SHOWN_WAITS,
        IOSCHED_SHOWN_APPLIED,
} IoschedShown;
IoschedShown applied_iosched_shown(const Device *d, IoschedTunable t);

/* Render the applied/<knob> line: "ok: mq-deadline (was none)", "kept: none", ... */
int render_applied(const Applied *a, char **ret);
