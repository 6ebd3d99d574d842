/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>

#include "macro.h"
#include "render.h"

int render_node(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(n);
        switch (n->type) {
        case NODE_VERSION:
        case NODE_MODE:
        case NODE_RELOAD:
        case NODE_RESTORE:
                return render_control(ctx, n, ret);
        case NODE_CLASS:
        case NODE_EXPLAIN:
        case NODE_FACT:
        case NODE_PLAN_KNOB:
        case NODE_APPLIED_KNOB:
        case NODE_POLICY_KNOB:
        case NODE_OWNER_KNOB:
                return render_device(ctx, n, ret);
        case NODE_HCTX_ATTR:
                return n->arg2 >= HCTX_ATTR_STAT || n->arg2 == HCTX_ATTR_REMOTE_PCT ?
                        render_stats(ctx, n, ret) : render_hctx(ctx, n, ret);
        case NODE_STAT:
        case NODE_COMPLETIONS:
        case NODE_STATS_SOURCE:
                return render_stats(ctx, n, ret);
        case NODE_NOT_LISTED:
                return render_not_listed(ctx, ret);
        case NODE_HOST_ATTR:
                return render_host(ctx, n, ret);
        case NODE_NETWORK_ATTR:
                return render_network(ctx, n, ret);
        case NODE_NIC_ATTR:
                return render_nic(ctx, n, ret);
        case NODE_BLOCK_SOFTIRQS:
                return render_block_softirqs(ctx, ret);
        case NODE_METRICS:
                return render_metrics(ctx, ret);
        case NODE_MODULE_ATTR:
                return render_module(ctx, n, ret);
        case NODE_IOSCHED_ATTR:
        case NODE_POLICY_IOSCHED_TUNABLE:
        case NODE_PLAN_IOSCHED:
        case NODE_APPLIED_IOSCHED:
                return render_iosched(ctx, n, ret);
        default:
                return -EISDIR;
        }
}

const char *disk_scsi_host(const DiskFacts *f) {
        return f ? f->scsi_host : NULL;
}

const char *disk_nic(const DiskFacts *f) {
        return f && f->net && f->net->nic ? f->net->nic->ifname : NULL;
}

size_t disks_named(const Registry *reg, disk_child_name_t name_of, const char *name, FILE *out,
                   const DiskFacts **ret_first) {
        size_t n = 0;
        *ret_first = NULL;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const DiskFacts *f = reg->devices[i]->facts;
                if (!streq_ptr(name_of(f), name))
                        continue;
                if (out)
                        fprintf(out, "%s%s", n ? " " : "", f->name);
                *ret_first = *ret_first ?: f;
                n++;
        }
        return n;
}
