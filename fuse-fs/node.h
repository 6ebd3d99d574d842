/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Node types of the FUSE tree, next to the path names they serve (lxcfs style). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "registry.h"

#define FUSE_FS_VERSION   "version"
#define FUSE_FS_DEVICES   "devices"
#define FUSE_FS_CLASS     "class"
#define FUSE_FS_EXPLAIN   "explain"
#define FUSE_FS_FACTS     "facts"
#define FUSE_FS_PLAN      "plan"
#define FUSE_FS_APPLIED   "applied"
#define FUSE_FS_HCTX      "hctx"

typedef enum NodeType {
        NODE_ROOT,
        NODE_VERSION,           /* /version */
        NODE_DEVICES,           /* /devices/ */
        NODE_DEVICE,            /* /devices/<disk>/ */
        NODE_CLASS,             /* /devices/<disk>/class */
        NODE_EXPLAIN,           /* /devices/<disk>/explain */
        NODE_FACTS,             /* /devices/<disk>/facts/ */
        NODE_FACT,              /* /devices/<disk>/facts/<fact>       arg = Fact */
        NODE_PLAN,              /* /devices/<disk>/plan/ */
        NODE_PLAN_KNOB,         /* /devices/<disk>/plan/<knob>        arg = Knob */
        NODE_APPLIED,           /* /devices/<disk>/applied/ */
        NODE_APPLIED_KNOB,      /* /devices/<disk>/applied/<knob>     arg = Knob */
        NODE_HCTX,              /* /devices/<disk>/hctx/ */
        NODE_HCTX_N,            /* /devices/<disk>/hctx/<n>/          arg = position in facts->hctx */
        NODE_HCTX_ATTR,         /* /devices/<disk>/hctx/<n>/<attr>    arg = position, arg2 = HctxAttr */
        _NODE_TYPE_MAX,
} NodeType;

typedef enum HctxAttr {
        HCTX_ATTR_CPU_LIST,
        HCTX_ATTR_NR_TAGS,
        HCTX_ATTR_NR_RESERVED_TAGS,
        HCTX_ATTR_SHARED_TAGS,
        _HCTX_ATTR_MAX,
} HctxAttr;

const char *hctx_attr_to_string(HctxAttr a);

typedef struct Node Node;
struct Node {
        uint64_t ino;
        NodeType type;
        char *name;
        char *device;           /* disk name for nodes below devices/<disk>/ */
        int arg, arg2;
        Node *parent, *children, *next;
};

static inline bool node_is_dir(const Node *n) {
        switch (n->type) {
        case NODE_ROOT: case NODE_DEVICES: case NODE_DEVICE: case NODE_FACTS:
        case NODE_PLAN: case NODE_APPLIED: case NODE_HCTX: case NODE_HCTX_N:
                return true;
        default:
                return false;
        }
}
