/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "memstream.h"
#include "render.h"

int render_applied(const Applied *a, char **ret) {
        assert(a);
        const char *state = apply_state_to_string(a->state);
        int r;

        switch (a->state) {
        case APPLY_UNMANAGED:
                r = asprintf(ret, "%s%s%s\n", state, a->message ? ": " : "", a->message ?: "");
                break;
        case APPLY_KEPT:
                r = asprintf(ret, "%s: %s%s%s%s\n", state, strna(a->value),
                             a->message ? " (" : "", a->message ?: "", a->message ? ")" : "");
                break;
        case APPLY_OK:
                r = asprintf(ret, "%s: %s%s%s%s%s%s\n", state, strna(a->value),
                             a->original ? " (was " : "", a->original ?: "", a->original ? ")" : "",
                             a->message ? ": " : "", a->message ?: "");
                break;
        case APPLY_EXTERNAL:
                /* the state word first, as every state (blkmqctl status reads it there): a
                 * message "changed externally to X (...)" says it already, a count of vectors
                 * ("4 vector(s): ... 1 changed externally") does not */
                if (a->message && startswith(a->message, state))
                        r = asprintf(ret, "%s\n", a->message);
                else
                        r = asprintf(ret, "%s: %s\n", state, strna(a->message));
                break;
        default:
                r = asprintf(ret, "%s: %s\n", state, strna(a->message));
                break;
        }
        return r < 0 ? -ENOMEM : 0;
}

/* /not_listed: "<name>: <reason>" per block device blkmqd saw and does not list, sorted by
 * name (Registry.unlisted); empty when it lists every one. */
int render_not_listed(const FuseFsContext *ctx, char **ret) {
        assert(ctx);
        _cleanup_(memstream_done) MemStream m = {};
        FILE *f = memstream_open(&m);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < ctx->registry->n_unlisted; i++)
                fprintf(f, "%s: %s\n", ctx->registry->unlisted[i].name, ctx->registry->unlisted[i].reason);
        return memstream_close(&m, ret);
}

static int render_plan(const Device *d, Knob k, char **ret) {
        const char *v = plan_get(&d->plan, k);
        /* "keep": the policy has no wish for this disk; blkmqd will not write the knob. */
        return asprintf(ret, "%s\n", d->plan.manage && v ? v : "keep") < 0 ? -ENOMEM : 0;
}

int render_device(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        const Device *d = registry_get(ctx->registry, n->device);
        if (!d || !d->facts)
                return -ENOENT;

        switch (n->type) {
        case NODE_CLASS:
                return asprintf(ret, "%s\n", disk_class_to_string(d->plan.class)) < 0 ? -ENOMEM : 0;
        case NODE_EXPLAIN: {
                /* one line per plan entry, as plan_explain() rendered it */
                _cleanup_(memstream_done) MemStream m = {};
                FILE *out = memstream_open(&m);
                if (!out)
                        return -ENOMEM;
                PLAN_FOREACH_ENTRY(e, &d->plan)
                        fprintf(out, "%s%s", e != d->plan.entries ? "\n" : "", e->text);
                fputc('\n', out);
                return memstream_close(&m, ret);
        }
        case NODE_FACT:
                if (n->arg == FACT_SPEED && !d->speed_text) {
                        SpeedConfig c;
                        char buf[SPEED_TEXT_MAX];
                        speed_config_defaults(&c);
                        return asprintf(ret, "%s\n", speed_state_format(&d->speed, &c, buf, sizeof(buf))) < 0 ? -ENOMEM : 0;
                }
                if (n->arg == FACT_ROTATIONAL_HINT && d->plan.rotational_hint.row)       /* with TrustRotational= */
                        return asprintf(ret, "%s: %s\n", hint_trust_to_string(d->plan.rotational_hint.trust),
                                        d->plan.rotational_hint.why) < 0 ? -ENOMEM : 0;
                if (n->arg == FACT_SPEED)
                        return asprintf(ret, "%s\n", d->speed_text) < 0 ? -ENOMEM : 0;
                if (n->arg == FACT_SPEED_SOURCE)
                        return asprintf(ret, "%s\n", d->speed_source ?: "not measured: the daemon has not sampled it yet") < 0 ?
                                -ENOMEM : 0;
                return disk_facts_render(d->facts, n->arg, ret);
        case NODE_PLAN_KNOB:
                return render_plan(d, n->arg, ret);
        case NODE_OWNER_KNOB:
                if (n->arg < 0 || n->arg >= _KNOB_MAX)
                        return -ENOENT;
                /* "blkmqd" (no other tool sets it), or "<ownership>: <source>" */
                return asprintf(ret, "%s%s%s\n", ownership_to_string(d->plan.owner[n->arg]),
                                d->plan.owner_source[n->arg] ? ": " : "", strempty(d->plan.owner_source[n->arg])) < 0 ? -ENOMEM : 0;
        case NODE_APPLIED_KNOB:
                if (n->arg < 0 || n->arg >= _KNOB_MAX)
                        return -ENOENT;
                if (ctx->verify)        /* a look at the kernel: reads only (fuse-fs.h) */
                        ctx->verify(ctx->userdata, n->device);
                d = registry_get(ctx->registry, n->device);
                if (!d)
                        return -ENOENT;
                return render_applied(&d->applied[n->arg], ret);
        case NODE_POLICY_KNOB:
                if (n->arg == POLICY_FILE_ENABLED)
                        return asprintf(ret, "%s\n", d->overrides.disabled ? "0" : d->overrides.enabled_set ? "1" : "auto") < 0 ? -ENOMEM : 0;
                return asprintf(ret, "%s\n", policy_overrides_get(&d->overrides, n->arg) ?: "auto") < 0 ? -ENOMEM : 0;
        default:
                return -EISDIR;
        }
}
