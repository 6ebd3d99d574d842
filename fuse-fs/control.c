/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "render.h"

int render_control(const FuseFsContext *ctx, const Node *n, char **ret) {
        switch (n->type) {
        case NODE_VERSION:
        case NODE_MODE:
        case NODE_RELOAD:
        case NODE_RESTORE:
                return ctx->render_control(ctx->userdata, n->type, ret);
        default:
                return -EISDIR;
        }
}
