/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "macro.h"
#include "render.h"

static const char * const hctx_attr_table[_HCTX_ATTR_MAX] = {
        [HCTX_ATTR_CPU_LIST]         = "cpu_list",
        [HCTX_ATTR_NR_TAGS]          = "nr_tags",
        [HCTX_ATTR_NR_RESERVED_TAGS] = "nr_reserved_tags",
        [HCTX_ATTR_SHARED_TAGS]      = "shared_tags",
        [HCTX_ATTR_IRQ]              = "irq",
        [HCTX_ATTR_IRQ_AFFINITY]     = "irq_affinity",
        [HCTX_ATTR_IRQ_MANAGED]      = "irq_managed",
        [HCTX_ATTR_REMOTE_PCT]       = "remote_pct",
        [HCTX_ATTR_TYPE]             = "type",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(hctx_attr, HctxAttr, hctx_attr_table, _HCTX_ATTR_MAX);

static int render_i64(int64_t v, const char *what, char **ret) {
        int r = v < 0 ? asprintf(ret, "unknown: %s not readable\n", what) : asprintf(ret, "%" PRIi64 "\n", v);
        return r < 0 ? -ENOMEM : 0;
}

int render_hctx(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        if (ctx->load_hctx_details) {
                int r = ctx->load_hctx_details(ctx->userdata, n->device);
                if (r < 0)
                        return r;
        }
        const Device *d = registry_get(ctx->registry, n->device);
        if (!d || !d->facts || n->arg < 0 || (size_t) n->arg >= d->facts->n_hctx)
                return -ENOENT;
        const HctxFacts *x = &d->facts->hctx[n->arg];
        int r;

        switch (n->arg2) {
        case HCTX_ATTR_CPU_LIST:
                r = x->cpu_list ? asprintf(ret, "%s\n", x->cpu_list) : asprintf(ret, "unknown: mq/%u/cpu_list not readable\n", x->index);
                return r < 0 ? -ENOMEM : 0;
        case HCTX_ATTR_NR_TAGS:
                return render_i64(x->nr_tags, "nr_tags", ret);
        case HCTX_ATTR_NR_RESERVED_TAGS:
                return render_i64(x->nr_reserved_tags, "nr_reserved_tags", ret);
        case HCTX_ATTR_SHARED_TAGS: {
                /* TAG_HCTX_SHARED is a tag-set flag every hctx copies (block/blk-mq.c
                 * blk_mq_alloc_hctx()): without this hctx's debugfs flags, the disk's fact
                 * (from another hctx or the driver fallback) is this hctx's too. */
                Tristate t = x->shared_tags != TRISTATE_UNKNOWN ? x->shared_tags : d->facts->shared_tags;
                r = t == TRISTATE_UNKNOWN ?
                        asprintf(ret, "unknown: %s\n", d->facts->unknown[FACT_SHARED_TAGS] ?: "debugfs hctx flags unreadable") :
                        asprintf(ret, "%s\n", tristate_to_string(t));
                return r < 0 ? -ENOMEM : 0;
        }
        case HCTX_ATTR_TYPE:
                r = x->type >= 0 ? asprintf(ret, "%s\n", hctx_type_to_string(x->type)) :
                    asprintf(ret, "unknown: %s\n", d->facts->hctx_type_unknown ?: "debugfs hctx type unreadable");
                return r < 0 ? -ENOMEM : 0;
        case HCTX_ATTR_IRQ:
        case HCTX_ATTR_IRQ_AFFINITY:
        case HCTX_ATTR_IRQ_MANAGED: {
                /* a poll queue is created without a vector (drivers/nvme/host/pci.c
                 * nvme_create_queue(): polled queues get no interrupt) */
                if (x->type == HCTX_TYPE_POLL && (x->irq < 0 || (size_t) x->irq >= d->facts->n_irqs))
                        return asprintf(ret, "none: poll queue (completions are polled, no interrupt)\n") < 0 ? -ENOMEM : 0;
                if (x->irq < 0 || (size_t) x->irq >= d->facts->n_irqs) {
                        const char *why = d->facts->unknown[FACT_IRQ_VECTORS] ?:
                                          "no request-queue vector matched this hctx's cpu_list";
                        return asprintf(ret, "unknown: %s\n", why) < 0 ? -ENOMEM : 0;
                }
                const IrqFacts *q = &d->facts->irqs[x->irq];
                if (n->arg2 == HCTX_ATTR_IRQ)
                        r = asprintf(ret, "%u\n", q->irq);
                else if (n->arg2 == HCTX_ATTR_IRQ_AFFINITY)
                        r = q->affinity_list ? asprintf(ret, "%s\n", q->affinity_list) :
                                               asprintf(ret, "unknown: /proc/irq/%u/smp_affinity_list unreadable\n", q->irq);
                else {
                        /* what a write taught blkmqd (EIO <= 6.11, EPERM >= 6.12) counts too */
                        bool learned = false;
                        for (size_t i = 0; i < d->n_irq_applied; i++)
                                learned = learned || (d->irq_applied[i].irq == q->irq && d->irq_applied[i].managed);
                        r = learned || q->managed == TRISTATE_YES ? asprintf(ret, "1\n") :
                            q->managed == TRISTATE_NO ? asprintf(ret, "0\n") :
                            asprintf(ret, "unknown: no debugfs irq/irqs/%u and kernel < 6.12; learned at the first write\n", q->irq);
                }
                return r < 0 ? -ENOMEM : 0;
        }
        default:
                return -ENOENT;
        }
}
