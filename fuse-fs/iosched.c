/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devices/<disk>/iosched/<tunable>: the running elevator's tunables as the kernel has them. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "memstream.h"
#include "render.h"

/* plan/iosched: "<elevator>.<tunable> <value>" per tunable the plan writes, or "keep". */
static int render_plan_iosched(const Device *d, char **ret) {
        _cleanup_(memstream_done) MemStream m = {};
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        bool any = false;
        for (IoschedTunable t = 0; d->plan.manage && t < _IOSCHED_TUNABLE_MAX; t++)
                if (d->plan.iosched[t]) {
                        const IoschedTunableInfo *i = iosched_tunable_info(t);
                        fprintf(out, "%s.%s %s\n", i->elevator, i->name, d->plan.iosched[t]);
                        any = true;
                }
        if (!any)
                fputs("keep\n", out);
        return memstream_close(&m, ret);
}

IoschedShown applied_iosched_shown(const Device *d, IoschedTunable t) {
        const Applied *a = &d->iosched[t];
        const IoschedTunableInfo *i = iosched_tunable_info(t);
        const char *running = d->facts ? d->facts->elevator : NULL;
        /* another elevator's tunable: only one blkmqd has to put back when it runs again
         * (labelled so by its message), or one an override or the plan wants (it waits); what
         * was said about it while it ran is over */
        if (!streq_ptr(running, i->elevator) && !a->original) {
                if (!d->plan.manage || (!d->overrides.iosched[t] && !d->plan.iosched[t]))
                        return IOSCHED_SHOWN_NOT;
                if (!a->message || !startswith(a->message, "waits:"))
                        return IOSCHED_SHOWN_WAITS;
        }
        if (a->state == APPLY_UNMANAGED && !a->message && !a->original)
                return IOSCHED_SHOWN_NOT;
        return IOSCHED_SHOWN_APPLIED;
}

/* applied/iosched: "<elevator>.<tunable> <state>" per tunable blkmqd has to do with, or "unmanaged". */
static int render_applied_iosched(const Device *d, char **ret) {
        _cleanup_(memstream_done) MemStream m = {};
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        bool any = false;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                _cleanup_free_ char *line = NULL;
                const char *running = d->facts ? d->facts->elevator : NULL;
                switch (applied_iosched_shown(d, t)) {
                case IOSCHED_SHOWN_NOT:
                        continue;
                case IOSCHED_SHOWN_WAITS:
                        fprintf(out, "%s.%s unmanaged: waits: the disk runs %s; written when %s runs\n", i->elevator, i->name,
                                running ?: "no elevator blkmqd knows", i->elevator);
                        any = true;
                        continue;
                case IOSCHED_SHOWN_APPLIED:
                        break;
                }
                if (render_applied(&d->iosched[t], &line) < 0)
                        return -ENOMEM;
                fprintf(out, "%s.%s %s", i->elevator, i->name, line);
                any = true;
        }
        if (!any)
                fputs("unmanaged\n", out);
        return memstream_close(&m, ret);
}

int render_iosched(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
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
        case NODE_POLICY_IOSCHED_TUNABLE:
                if (n->arg < 0 || n->arg >= _IOSCHED_TUNABLE_MAX)
                        return -ENOENT;
                return asprintf(ret, "%s\n", d->overrides.iosched[n->arg] ?: "auto") < 0 ? -ENOMEM : 0;
        case NODE_PLAN_IOSCHED:
                return render_plan_iosched(d, ret);
        case NODE_APPLIED_IOSCHED:
                if (ctx->verify)        /* a look at the kernel: reads only (fuse-fs.h) */
                        ctx->verify(ctx->userdata, n->device);
                d = registry_get(ctx->registry, n->device);
                if (!d)
                        return -ENOENT;
                return render_applied_iosched(d, ret);
        default:
                return -EISDIR;
        }
}
