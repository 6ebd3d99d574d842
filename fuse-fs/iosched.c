/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devices/<disk>/iosched/<tunable>: the running elevator's tunables as the kernel has them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "render.h"

int render_iosched(const FuseFsContext *ctx, const Node *n, char **ret) {
        const Device *d = registry_get(ctx->registry, n->device);
        if (!d || !d->facts)
                return -ENOENT;

        switch (n->type) {
        case NODE_IOSCHED_ATTR: {
                const IoschedValue *v = disk_facts_iosched(d->facts, n->name);
                if (!v)
                        return -ENOENT;         /* the elevator was switched since the lookup */
                if (!v->value)
                        return asprintf(ret, "unknown: queue/iosched/%s: %s\n", v->name, strerror(-v->error)) < 0 ? -ENOMEM : 0;
                return asprintf(ret, "%s\n", v->value) < 0 ? -ENOMEM : 0;
        }
        default:
                return -EISDIR;
        }
}
