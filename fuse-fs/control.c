/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>

#include "render.h"

/* The root control files (version, mode, reload, restore: render_node() picks them) are the
 * manager's to render: FuseFsContext.render_control (-ENOENT for any other type). */
int render_control(const FuseFsContext *ctx, const Node *n, char **ret) {
        assert(ctx);
        assert(n);
        return ctx->render_control(ctx->userdata, n->type, ret);
}
