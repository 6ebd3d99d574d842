/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devices/<disk>/network/ and nics/<if>/: network facts (policies/net-facts.h) and alignment. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "memstream.h"
#include "render.h"

int render_network(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        const Device *d = registry_get(ctx->registry, n->device);
        if (!d || !d->facts || !d->facts->net)
                return -ENOENT;
        if (n->arg >= _NET_FACT_MAX) {
                const Plan *p = &d->plan;
                const char *v = n->arg == NET_FILE_ALIGNMENT ? p->net_alignment : n->arg == NET_FILE_MAPS ? p->net_maps :
                                n->arg == NET_FILE_RECOMMENDED ? p->net_recommended : NULL;
                if (n->arg >= _NET_FILE_MAX)
                        return -ENOENT;
                /* maps and recommended come with a NIC's alignment; before or without one, why not */
                if (!v && p->net_alignment && n->arg != NET_FILE_ALIGNMENT)
                        return asprintf(ret, "%s%s\n", n->arg == NET_FILE_RECOMMENDED ? "none: alignment " : "",
                                        p->net_alignment) < 0 ? -ENOMEM : 0;
                return asprintf(ret, "%s\n", v ?: "unknown: not evaluated yet") < 0 ? -ENOMEM : 0;
        }
        return net_facts_render(d->facts->net, n->arg, ret);
}

int render_nic(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        const char *ifname = n->parent ? n->parent->name : NULL;
        _cleanup_(memstream_done) MemStream m = {};
        const DiskFacts *first;

        if (!ifname)
                return -ENOENT;
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        (void) disks_named(ctx->registry, disk_nic, ifname, out, &first);
        fputc('\n', out);
        if (!first)
                return -ENOENT;
        if (n->arg == _NIC_FACT_MAX)            /* nics/<if>/disks */
                return memstream_close(&m, ret);
        return nic_facts_render(first->net->nic, n->arg, ret);
}

/* "aligned", "misaligned", "not-applicable", "unknown", "unavailable": the plan's state, "unknown" before one. */
static const char *alignment_state(const Plan *p) {
        return p->net_alignment ? net_alignment_state_to_label(p->net_alignment_state) : "unknown";
}

void render_net_metrics(FILE *f, const Registry *reg, void (*family)(FILE *, const char *, const char *, const char *),
                        void (*put_label)(FILE *, const char *, const char *, bool)) {
        bool any = false;

        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                const NetFacts *n = d->facts ? d->facts->net : NULL;
                if (!n)
                        continue;
                if (!any)
                        family(f, "blkmqd_net_alignment", "gauge",
                               "one per network disk: how its hctx line up with the NIC queues (state label)");
                any = true;
                fputs("blkmqd_net_alignment{", f);
                put_label(f, "device", d->name, true);
                put_label(f, "transport", n->transport, false);
                put_label(f, "interface", n->interface ?: "", false);
                put_label(f, "nic", n->nic ? n->nic->ifname : "", false);
                put_label(f, "state", alignment_state(&d->plan), false);
                fputs("} 1\n", f);
        }
        any = false;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                const NetFacts *n = d->facts ? d->facts->net : NULL;
                if (!n || !n->nic || d->plan.net_hctx_without_queue < 0)
                        continue;
                if (!any)
                        family(f, "blkmqd_net_hctx_without_nic_queue", "gauge",
                               "hctx of a network disk with no NIC queue interrupt on their CPUs");
                any = true;
                fputs("blkmqd_net_hctx_without_nic_queue{", f);
                put_label(f, "device", d->name, true);
                put_label(f, "nic", n->nic->ifname, false);
                fprintf(f, "} %d\n", d->plan.net_hctx_without_queue);
        }
        any = false;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                const NetFacts *n = d->facts ? d->facts->net : NULL;
                if (!n || n->nr_io_queues < 0)
                        continue;
                if (!any)
                        family(f, "blkmqd_net_io_queues", "gauge", "I/O queues of a network disk's controller (nvme queue_count - 1)");
                any = true;
                fputs("blkmqd_net_io_queues{", f);
                put_label(f, "device", d->name, true);
                put_label(f, "controller", n->controller ?: "", false);
                fprintf(f, "} %lld\n", (long long) n->nr_io_queues);
        }
        any = false;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                const NetFacts *n = d->facts ? d->facts->net : NULL;
                if (!n || !d->plan.net_maps_known)
                        continue;
                if (!any)
                        family(f, "blkmqd_net_queue_map_hctx", "gauge",
                               "hctx of a network disk in each queue map (map: default, read, poll), as the alignment counts them");
                any = true;
                for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++) {
                        fputs("blkmqd_net_queue_map_hctx{", f);
                        put_label(f, "device", d->name, true);
                        put_label(f, "map", hctx_type_to_string(t), false);
                        fprintf(f, "} %zu\n", d->plan.net_map_hctx[t]);
                }
        }
        any = false;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const Device *d = reg->devices[i];
                const NetFacts *n = d->facts ? d->facts->net : NULL;
                if (!n || !d->plan.net_recommended)
                        continue;
                if (!any)
                        family(f, "blkmqd_net_recommended_action", "gauge",
                               "1 per network disk: what blkmqd recommends for its queue counts (action: none, nic-channels, reconnect)");
                any = true;
                fputs("blkmqd_net_recommended_action{", f);
                put_label(f, "device", d->name, true);
                put_label(f, "action", net_action_to_string(d->plan.net_action), false);
                fputs("} 1\n", f);
        }
        /* per NIC, once (the first disk's facts) */
        any = false;
        for (size_t i = 0; i < reg->n_devices; i++) {
                const NetFacts *n = reg->devices[i]->facts ? reg->devices[i]->facts->net : NULL;
                const NicFacts *nic = n ? n->nic : NULL;
                bool seen = false;
                if (!nic || nic->unknown[NIC_FACT_CHANNELS])
                        continue;
                for (size_t k = 0; k < i && !seen; k++) {
                        const NetFacts *o = reg->devices[k]->facts ? reg->devices[k]->facts->net : NULL;
                        seen = o && o->nic && streq(o->nic->ifname, nic->ifname);
                }
                if (seen)
                        continue;
                if (!any)
                        family(f, "blkmqd_nic_channels", "gauge", "ethtool channels of a NIC below a network disk, by type");
                any = true;
                const struct { const char *type; uint32_t v; } ch[] = {
                        { "combined", nic->combined }, { "rx", nic->rx }, { "tx", nic->tx }, { "other", nic->other },
                };
                for (size_t c = 0; c < ELEMENTSOF(ch); c++) {
                        fputs("blkmqd_nic_channels{", f);
                        put_label(f, "device", nic->ifname, true);
                        put_label(f, "type", ch[c].type, false);
                        fprintf(f, "} %u\n", ch[c].v);
                }
        }
}
