/* SPDX-License-Identifier: GPL-2.0-or-later */
/* modules/<module>/<param>/{current,wanted,state,wanted_by,note}: the renderer of the module
 * parameters apply/modules.c aggregates. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>

#include "macro.h"
#include "render.h"

static const char * const module_attr_table[_MODULE_ATTR_MAX] = {
        [MODULE_ATTR_CURRENT]   = "current",
        [MODULE_ATTR_WANTED]    = "wanted",
        [MODULE_ATTR_STATE]     = "state",
        [MODULE_ATTR_WANTED_BY] = "wanted_by",
        [MODULE_ATTR_NOTE]      = "note",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(module_attr, ModuleAttr, module_attr_table, _MODULE_ATTR_MAX);

int render_module(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        const Node *param = n->parent, *module = param ? param->parent : NULL;
        const ModuleParam *p = module && ctx->modules ? modules_get(ctx->modules, module->name, param->name) : NULL;
        int r;

        if (!p)
                return -ENOENT;
        switch (n->arg) {
        case MODULE_ATTR_CURRENT:
                r = p->current ? asprintf(ret, "%s\n", p->current) :
                                 asprintf(ret, "unknown: /sys/module/%s/parameters/%s does not exist\n", p->module, p->param);
                break;
        case MODULE_ATTR_WANTED:
                r = asprintf(ret, "%s\n", p->wanted ?: "none");
                break;
        case MODULE_ATTR_STATE:
                r = asprintf(ret, "%s\n", module_param_state_to_string(p->state));
                break;
        case MODULE_ATTR_WANTED_BY:
                r = asprintf(ret, "%s\n", p->wanted_by ?: "");
                break;
        case MODULE_ATTR_NOTE:
                r = asprintf(ret, "%s\n", p->note ?: "");
                break;
        default:
                return -ENOENT;
        }
        return r < 0 ? -ENOMEM : 0;
}
