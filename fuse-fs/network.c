/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devices/<disk>/network/ and nics/<if>/: network facts (policies/net-facts.h) and alignment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "render.h"

int render_network(const FuseFsContext *ctx, const Node *n, char **ret) {
        const Device *d = registry_get(ctx->registry, n->device);
        if (!d || !d->facts || !d->facts->net)
                return -ENOENT;
        if (n->arg == _NET_FACT_MAX) {
                const char *a = d->plan.net_alignment;
                return asprintf(ret, "%s\n", a ?: "unknown: not evaluated yet") < 0 ? -ENOMEM : 0;
        }
        return net_facts_render(d->facts->net, n->arg, ret);
}

int render_nic(const FuseFsContext *ctx, const Node *n, char **ret) {
        const char *ifname = n->parent ? n->parent->name : NULL;
        const NicFacts *nic = NULL;
        char *buf = NULL;
        size_t size = 0, disks = 0;

        if (!ifname)
                return -ENOENT;
        FILE *out = open_memstream(&buf, &size);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < ctx->registry->n_devices; i++) {
                const DiskFacts *f = ctx->registry->devices[i]->facts;
                if (!f || !f->net || !f->net->nic || !streq(f->net->nic->ifname, ifname))
                        continue;
                fprintf(out, "%s%s", disks++ ? " " : "", f->name);
                nic = nic ?: f->net->nic;
        }
        fputc('\n', out);
        if (fclose(out) != 0) {
                free(buf);
                return -ENOMEM;
        }
        if (!nic) {
                free(buf);
                return -ENOENT;
        }
        if (n->arg == _NIC_FACT_MAX) {
                *ret = buf;
                return 0;
        }
        free(buf);
        return nic_facts_render(nic, n->arg, ret);
}
