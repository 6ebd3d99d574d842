/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "render.h"

int render_control(const FuseFsContext *ctx, const Node *n, char **ret) {
        switch (n->type) {
        case NODE_VERSION:
                return ctx->render_version(ctx->userdata, ret);
        default:
                return -EISDIR;
        }
}
