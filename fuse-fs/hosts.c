/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hosts/<scsi_host>/: the SCSI host (HBA) behind one or more disks, and its shared tag occupancy. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "memstream.h"
#include "render.h"

static const char * const host_attr_table[_HOST_ATTR_MAX] = {
        [HOST_ATTR_DRIVER]       = "driver",
        [HOST_ATTR_NR_HW_QUEUES] = "nr_hw_queues",
        [HOST_ATTR_CAN_QUEUE]    = "can_queue",
        [HOST_ATTR_HOST_BUSY]    = "host_busy",
        [HOST_ATTR_SHARED_TAGS]  = "shared_tags",
        [HOST_ATTR_LUNS]         = "luns",
        [HOST_ATTR_DISKS]        = "disks",
        [HOST_ATTR_OCCUPANCY]    = "occupancy_pct",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(host_attr, HostAttr, host_attr_table, _HOST_ATTR_MAX);

int render_host(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        const char *host = n->parent ? n->parent->name : NULL;
        const DiskFacts *f;
        _cleanup_(memstream_done) MemStream m = {};
        uint64_t busy;
        int r;

        if (!host)
                return -ENOENT;
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        size_t luns = disks_named(ctx->registry, disk_scsi_host, host, n->arg == HOST_ATTR_DISKS ? out : NULL, &f);
        if (!f)
                return -ENOENT;

        switch (n->arg) {
        case HOST_ATTR_DRIVER:
                fprintf(out, "%s", f->driver ?: "unknown");
                break;
        case HOST_ATTR_NR_HW_QUEUES:
                if (f->host_nr_hw_queues >= 0)
                        fprintf(out, "%" PRIi64, f->host_nr_hw_queues);
                else
                        fprintf(out, "unknown: %s", strna(f->unknown[FACT_HOST_NR_HW_QUEUES]));
                break;
        case HOST_ATTR_CAN_QUEUE:
                if (f->host_can_queue >= 0)
                        fprintf(out, "%" PRIi64, f->host_can_queue);
                else
                        fprintf(out, "unknown: %s", strna(f->unknown[FACT_HOST_CAN_QUEUE]));
                break;
        case HOST_ATTR_HOST_BUSY:
        case HOST_ATTR_OCCUPANCY:
                r = ctx->read_host_busy(ctx->userdata, host, &busy);
                if (r < 0)
                        fprintf(out, "unavailable: scsi_host/%s/host_busy: %s", host, strerror(-r));
                else if (n->arg == HOST_ATTR_HOST_BUSY)
                        fprintf(out, "%" PRIu64, busy);
                else if (f->host_can_queue > 0)
                        fprintf(out, "%.2f", 100.0 * busy / f->host_can_queue);
                else
                        fprintf(out, "unavailable: can_queue unknown");
                break;
        case HOST_ATTR_SHARED_TAGS:
                fprintf(out, "%s", f->shared_tags == TRISTATE_UNKNOWN ? "unknown" : tristate_to_string(f->shared_tags));
                if (f->shared_tags == TRISTATE_UNKNOWN)
                        fprintf(out, ": %s", strna(f->unknown[FACT_SHARED_TAGS]));
                break;
        case HOST_ATTR_LUNS:
                fprintf(out, "%zu", luns);
                break;
        case HOST_ATTR_DISKS:
                break;
        default:
                return -ENOENT;
        }
        fputc('\n', out);
        return memstream_close(&m, ret);
}
