/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Renderers for statistics: hctx/<n>/<counter>, <counter>_rate, remote_pct; stat; completions. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "memstream.h"
#include "policy.h"
#include "render.h"

void hctx_reading_done(HctxReading *r) {
        hctx_stats_done(&r->stats);
}

#define NO_RATE "unavailable: a rate needs an earlier read at least 0.2 s before; read again"

/* remote share in percent; false when there is nothing to divide */
static bool remote_pct(const HctxStats *s, double *ret, const char **ret_why) {
        const StatValue *l = &s->v[STAT_COMPLETED_LOCAL], *r = &s->v[STAT_COMPLETED_REMOTE];
        if (!l->valid || !r->valid) {
                *ret_why = (l->valid ? r : l)->unavailable ?: "completion counters unavailable";
                return false;
        }
        if (l->value + r->value == 0) {
                *ret_why = "no completions since the BPF provider attached";
                return false;
        }
        *ret = 100.0 * r->value / (l->value + r->value);
        return true;
}

static int render_hctx_stat(const FuseFsContext *ctx, const Node *n, char **ret) {
        _cleanup_(hctx_reading_done) HctxReading rd = {};
        bool rate = n->arg2 >= HCTX_ATTR_RATE;
        StatId id = n->arg2 - (rate ? HCTX_ATTR_RATE : HCTX_ATTR_STAT);
        int r = ctx->read_hctx(ctx->userdata, n->device, n->arg, id == STAT_IRQ_COUNT ? STATS_READ_IRQ_COUNT : 0, &rd);
        if (r < 0)
                return r;

        if (n->arg2 == HCTX_ATTR_REMOTE_PCT) {
                double pct;
                const char *why = NULL;
                r = remote_pct(&rd.stats, &pct, &why) ? asprintf(ret, "%.2f\n", pct) : asprintf(ret, "unavailable: %s\n", why);
                return r < 0 ? -ENOMEM : 0;
        }

        if (id < 0 || id >= _STAT_MAX)
                return -ENOENT;
        const StatValue *v = &rd.stats.v[id];

        if (!v->valid)
                r = asprintf(ret, "unavailable: %s\n", strna(v->unavailable));
        else if (!rate)
                r = asprintf(ret, "%" PRIu64 "\n", v->value);
        else if (rd.rates.valid & (UINT32_C(1) << id))
                r = asprintf(ret, "%.1f\n", rd.rates.per_sec[id]);
        else
                r = asprintf(ret, NO_RATE "\n");
        return r < 0 ? -ENOMEM : 0;
}

static int render_disk_stat(const FuseFsContext *ctx, const Node *n, char **ret) {
        DiskStat st;
        StatRates rates;
        _cleanup_(memstream_done) MemStream m = {};

        int r = ctx->read_disk_stat(ctx->userdata, n->device, 0, &st, &rates);
        if (r < 0)
                return r == -ENOMEM ? r : asprintf(ret, "unavailable: block/%s/stat: %s\n", n->device, strerror(-r)) < 0 ? -ENOMEM : 0;

        FILE *f = memstream_open(&m);
        if (!f)
                return -ENOMEM;
        for (unsigned i = 0; i < st.n; i++)
                fprintf(f, "%s %" PRIu64 "\n", disk_stat_field_to_string(i), st.v[i]);
        if (st.has_inflight)
                fprintf(f, "inflight_read %" PRIu64 "\ninflight_write %" PRIu64 "\n", st.inflight_read, st.inflight_write);
        for (unsigned i = 0; i < st.n; i++) {
                if (i == DISK_STAT_IN_FLIGHT)
                        continue;
                if (rates.valid & (UINT32_C(1) << i))
                        fprintf(f, "%s_per_sec %.1f\n", disk_stat_field_to_string(i), rates.per_sec[i]);
        }
        if (rates.window_sec > 0)
                fprintf(f, "rate_window_sec %.3f\n", rates.window_sec);
        else
                fputs("rate_window_sec unavailable: rates need an earlier read at least 0.2 s before\n", f);
        return memstream_close(&m, ret);
}

/*
 * Last line of completions and stats_source on a kernel that never sends a completion back to
 * the submitting CPU (forced IRQ threading: PREEMPT_RT or threadirqs, 5.11 and later;
 * rq_affinity_ignored(), policies/rq-affinity.c): the remote share is then where the interrupt
 * thread ran, not something rq_affinity failed to fix. The per-hctx counter files stay plain
 * integers (scripts and blkmqctl sum them).
 */
static void put_not_redirected(const Device *d, FILE *f) {
        if (!rq_affinity_ignored(d->facts))
                return;
        fprintf(f, "not redirected: the kernel completes each request where its interrupt thread runs, "
                "whatever rq_affinity is (forced IRQ threading: %s; blk_mq_complete_need_ipi() in "
                "block/blk-mq.c returns false, \"blk-mq: Don't complete on a remote CPU in force threaded "
                "mode\", 5.11); remote counts are not sent back to the submitting CPU\n",
                strna(d->facts->kernel.irq_threads_source));
}

/* "hctx3 completed 411218 remote 38777 9.43%" per hctx: the form of the blk-mq list's patch;
 * then put_not_redirected()'s line where the kernel does not redirect completions. */
static int render_completions(const FuseFsContext *ctx, const Node *n, char **ret) {
        const Device *d = registry_get(ctx->registry, n->device);
        _cleanup_(memstream_done) MemStream m = {};

        if (!d || !d->facts)
                return -ENOENT;
        FILE *f = memstream_open(&m);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < d->facts->n_hctx; i++) {
                _cleanup_(hctx_reading_done) HctxReading rd = {};
                if (ctx->read_hctx(ctx->userdata, n->device, i, 0, &rd) < 0) {
                        fprintf(f, "hctx%u unavailable: disk gone\n", d->facts->hctx[i].index);
                        continue;
                }
                const StatValue *l = &rd.stats.v[STAT_COMPLETED_LOCAL], *r = &rd.stats.v[STAT_COMPLETED_REMOTE];
                double pct;
                const char *why;
                if (!l->valid || !r->valid)
                        fprintf(f, "hctx%u unavailable: %s\n", d->facts->hctx[i].index, strna((l->valid ? r : l)->unavailable));
                else if (remote_pct(&rd.stats, &pct, &why))
                        fprintf(f, "hctx%u completed %" PRIu64 " remote %" PRIu64 " %.2f%%\n",
                                d->facts->hctx[i].index, l->value + r->value, r->value, pct);
                else
                        fprintf(f, "hctx%u completed 0 remote 0 -\n", d->facts->hctx[i].index);
        }
        put_not_redirected(d, f);
        return memstream_close(&m, ret);
}

/*
 * "bpf_missed dispatched 0, completed 3, map_full 0 (all disks, since attach)": what the BPF
 * counters lack, so that dispatched - completed_local - completed_remote can be read right on a
 * busy machine (it is in-flight requests + completed misses - dispatched misses).
 */
static void put_bpf_missed(const FuseFsContext *ctx, FILE *f) {
        StatsBpfMissed m;
        int r = ctx->read_bpf_missed ? ctx->read_bpf_missed(ctx->userdata, &m) : -EOPNOTSUPP;

        if (r < 0) {
                fprintf(f, "bpf_missed unknown: %s\n", strerror(-r));
                return;
        }
        if (m.recursion_known)
                fprintf(f, "bpf_missed dispatched %" PRIu64 ", completed %" PRIu64 ", map_full %" PRIu64
                        " (all disks, since attach)\n", m.issue_recursion, m.complete_recursion, m.map_full);
        else
                fprintf(f, "bpf_missed dispatched unknown, completed unknown (kernel without "
                        "bpf_prog_info.recursion_misses, before 5.12), map_full %" PRIu64
                        " (all disks, since attach)\n", m.map_full);
}

static int render_stats_source(const FuseFsContext *ctx, const Node *n, char **ret) {
        const Device *d = registry_get(ctx->registry, n->device);
        _cleanup_(hctx_reading_done) HctxReading rd = {};
        _cleanup_(memstream_done) MemStream m = {};

        if (!d || !d->facts)
                return -ENOENT;
        if (d->facts->n_hctx == 0)
                return asprintf(ret, "unavailable: no blk-mq hardware queues\n") < 0 ? -ENOMEM : 0;
        int r = ctx->read_hctx(ctx->userdata, n->device, 0, STATS_READ_IRQ_COUNT, &rd);
        if (r < 0)
                return r;
        FILE *f = memstream_open(&m);
        if (!f)
                return -ENOMEM;
        bool any_bpf = false;
        for (StatId i = 0; i < _STAT_MAX; i++) {
                const StatValue *v = &rd.stats.v[i];
                if (v->valid) {
                        fprintf(f, "%s %s\n", stat_id_to_string(i), v->source);
                        any_bpf = any_bpf || streq_ptr(v->source, "bpf");
                } else
                        fprintf(f, "%s unavailable: %s\n", stat_id_to_string(i), strna(v->unavailable));
        }
        if (any_bpf)
                put_bpf_missed(ctx, f);
        put_not_redirected(d, f);
        return memstream_close(&m, ret);
}

int render_stats(const FuseFsContext *ctx, const Node *n, char **ret) {
        switch (n->type) {
        case NODE_HCTX_ATTR:
                return render_hctx_stat(ctx, n, ret);
        case NODE_STAT:
                return render_disk_stat(ctx, n, ret);
        case NODE_COMPLETIONS:
                return render_completions(ctx, n, ret);
        case NODE_STATS_SOURCE:
                return render_stats_source(ctx, n, ret);
        default:
                return -ENOENT;
        }
}

#define SOFTIRQ_CPUS_MAX 8192

int render_block_softirqs(const FuseFsContext *ctx, char **ret) {
        _cleanup_free_ uint64_t *counts = calloc(SOFTIRQ_CPUS_MAX, sizeof(uint64_t));
        _cleanup_(memstream_done) MemStream m = {};
        size_t n = 0;

        if (!counts)
                return -ENOMEM;
        int r = ctx->read_block_softirqs(ctx->userdata, counts, SOFTIRQ_CPUS_MAX, &n);
        if (r < 0)
                return asprintf(ret, "unavailable: /proc/softirqs BLOCK: %s\n", strerror(-r)) < 0 ? -ENOMEM : 0;
        FILE *f = memstream_open(&m);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < MIN(n, (size_t) SOFTIRQ_CPUS_MAX); i++)
                fprintf(f, "cpu%zu %" PRIu64 "\n", i, counts[i]);
        return memstream_close(&m, ret);
}
