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
#define FUSE_FS_OWNER     "owner"
#define FUSE_FS_HCTX      "hctx"
#define FUSE_FS_POLICY    "policy"
#define FUSE_FS_MODE      "mode"
#define FUSE_FS_RELOAD    "reload"
#define FUSE_FS_RESTORE   "restore"
#define FUSE_FS_ENABLED   "enabled"
#define FUSE_FS_MODULES   "modules"
#define FUSE_FS_HOSTS     "hosts"
#define FUSE_FS_METRICS   "metrics"
#define FUSE_FS_STAT      "stat"
#define FUSE_FS_COMPLETIONS "completions"
#define FUSE_FS_STATS_SOURCE "stats_source"
#define FUSE_FS_BLOCK_SOFTIRQS "block_softirqs"
#define FUSE_FS_IOSCHED   "iosched"
#define FUSE_FS_NETWORK   "network"
#define FUSE_FS_NICS      "nics"
#define FUSE_FS_ALIGNMENT "alignment"
#define FUSE_FS_NET_MAPS  "maps"
#define FUSE_FS_RECOMMENDED "recommended"
#define FUSE_FS_NIC_DISKS "disks"
#define FUSE_FS_NOT_LISTED "not_listed"

typedef enum NodeType {
        NODE_ROOT,
        NODE_VERSION,           /* /version */
        NODE_MODE,              /* /mode      rw  auto | dry-run | off */
        NODE_RELOAD,            /* /reload    rw  1 -> re-read config, re-evaluate every disk */
        NODE_RESTORE,           /* /restore   rw  1 -> restore every original value, then mode off */
        NODE_METRICS,           /* /metrics   Prometheus text exposition 0.0.4 */
        NODE_BLOCK_SOFTIRQS,    /* /block_softirqs: BLOCK softirqs per CPU (/proc/softirqs) */
        NODE_NOT_LISTED,        /* /not_listed: "<name>: <reason>" per block device seen and not under devices/ */
        NODE_HOSTS,             /* /hosts/ */
        NODE_HOST,              /* /hosts/<scsi_host>/ */
        NODE_HOST_ATTR,         /* /hosts/<scsi_host>/<attr>           arg = HostAttr */
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
        NODE_STAT,              /* /devices/<disk>/stat: block/<disk>/stat counters and rates */
        NODE_COMPLETIONS,       /* /devices/<disk>/completions: per-hctx locality table */
        NODE_STATS_SOURCE,      /* /devices/<disk>/stats_source: where each counter comes from */
        NODE_POLICY,            /* /devices/<disk>/policy/ */
        NODE_POLICY_KNOB,       /* /devices/<disk>/policy/<knob>  rw  arg = PolicyFile: a Knob or POLICY_FILE_ENABLED */
        NODE_MODULES,           /* /modules/ */
        NODE_MODULE,            /* /modules/<module>/ */
        NODE_MODULE_PARAM,      /* /modules/<module>/<param>/ */
        NODE_MODULE_ATTR,       /* /modules/<module>/<param>/<attr>   arg = ModuleAttr */
        NODE_HCTX,              /* /devices/<disk>/hctx/ */
        NODE_HCTX_N,            /* /devices/<disk>/hctx/<n>/          arg = position in facts->hctx, arg2 = 1
                                 * once READDIRPLUS listed its statistics files with attributes */
        NODE_HCTX_ATTR,         /* /devices/<disk>/hctx/<n>/<attr>    arg = position, arg2 = HctxAttr */
        NODE_IOSCHED,           /* /devices/<disk>/iosched/: the running elevator's queue/iosched/ */
        NODE_IOSCHED_ATTR,      /* /devices/<disk>/iosched/<tunable>  read-only, the kernel's value */
        NODE_NETWORK,           /* /devices/<disk>/network/ (network disks only) */
        NODE_NETWORK_ATTR,      /* /devices/<disk>/network/<fact>     arg = NetFact or a NetFile (past them) */
        NODE_NICS,              /* /nics/ */
        NODE_NIC,               /* /nics/<if>/ */
        NODE_NIC_ATTR,          /* /nics/<if>/<fact>                   arg = NicFact, _NIC_FACT_MAX = disks */
        NODE_POLICY_IOSCHED,    /* /devices/<disk>/policy/iosched/ */
        NODE_POLICY_IOSCHED_ELEVATOR,   /* /devices/<disk>/policy/iosched/<elevator>/ */
        NODE_POLICY_IOSCHED_TUNABLE,    /* /devices/<disk>/policy/iosched/<elevator>/<tunable>  rw  arg = IoschedTunable */
        NODE_PLAN_IOSCHED,      /* /devices/<disk>/plan/iosched: "<elevator>.<tunable> <value>" per wanted tunable, or "keep" */
        NODE_APPLIED_IOSCHED,   /* /devices/<disk>/applied/iosched: "<elevator>.<tunable> <state>" per tunable blkmqd tracks */
        NODE_OWNER,             /* /devices/<disk>/owner/ */
        NODE_OWNER_KNOB,        /* /devices/<disk>/owner/<knob>: whose value it is (policies/owners.h)  arg = Knob */
        _NODE_TYPE_MAX,
} NodeType;

/* The files of devices/<disk>/network/ the policy writes (NODE_NETWORK_ATTR arg, after the NetFacts). */
typedef enum NetFile {
        NET_FILE_ALIGNMENT = _NET_FACT_MAX,     /* Plan.net_alignment */
        NET_FILE_MAPS,                          /* Plan.net_maps: the queue maps over the NIC's queues */
        NET_FILE_RECOMMENDED,                   /* Plan.net_recommended */
        _NET_FILE_MAX,
} NetFile;

typedef enum HctxAttr {
        HCTX_ATTR_CPU_LIST,
        HCTX_ATTR_NR_TAGS,
        HCTX_ATTR_NR_RESERVED_TAGS,
        HCTX_ATTR_SHARED_TAGS,
        HCTX_ATTR_IRQ,          /* IRQ number of the queue vector serving this hctx */
        HCTX_ATTR_IRQ_AFFINITY, /* its smp_affinity_list */
        HCTX_ATTR_IRQ_MANAGED,  /* 1 when kernel-managed */
        HCTX_ATTR_REMOTE_PCT,   /* completed_remote / completions, percent */
        HCTX_ATTR_TYPE,         /* the queue map: default | read | poll (debugfs hctxN/type) */
        _HCTX_ATTR_MAX,
        /* statistics files: HCTX_ATTR_STAT + StatId, and HCTX_ATTR_RATE + StatId (counters) */
        HCTX_ATTR_STAT = 64,
        HCTX_ATTR_RATE = 128,
} HctxAttr;

const char *hctx_attr_to_string(HctxAttr a);

typedef enum ModuleAttr {
        MODULE_ATTR_CURRENT,    /* the running value, or "unknown: no such parameter" */
        MODULE_ATTR_WANTED,
        MODULE_ATTR_STATE,      /* effective | pending-reboot | pending-reset | proposed | unsupported | ... */
        MODULE_ATTR_WANTED_BY,  /* the disks that want it */
        MODULE_ATTR_NOTE,       /* when it takes effect, initramfs, errors */
        _MODULE_ATTR_MAX,
} ModuleAttr;

const char *module_attr_to_string(ModuleAttr a);

typedef enum HostAttr {
        HOST_ATTR_DRIVER,
        HOST_ATTR_NR_HW_QUEUES,
        HOST_ATTR_CAN_QUEUE,
        HOST_ATTR_HOST_BUSY,    /* live: commands outstanding on the host (scsi_host host_busy) */
        HOST_ATTR_SHARED_TAGS,
        HOST_ATTR_LUNS,         /* disks blkmqd shows behind this host */
        HOST_ATTR_DISKS,
        HOST_ATTR_OCCUPANCY,    /* host_busy / can_queue, percent */
        _HOST_ATTR_MAX,
} HostAttr;

const char *host_attr_to_string(HostAttr a);

typedef struct Node Node;
struct Node {
        uint64_t ino;
        NodeType type;
        bool own_name;          /* name is allocated (else a static string) */
        bool own_device;        /* device is allocated (else the parent's) */
        bool populated;         /* a directory of a disk whose children are made on first use has them
                                 * (fuse-fs.c populate()) */
        char *name;
        char *device;           /* disk name for nodes below devices/<disk>/ */
        int arg, arg2;
        Node *parent, *children, *next;
        Node *last_child;       /* tail of children: appending stays O(1) in devices/ of thousands of disks */
        uint64_t nlookup;       /* kernel references (LOOKUP minus FORGET); hctx/<n>/<attr> is freed at 0 */
        uint32_t n_open;        /* open file handles (OPEN minus RELEASE) */
        uint64_t open_size;     /* size of the newest open handle's snapshot, reported while n_open > 0 */
        /*
         * What the kernel holds for a cacheable file (node_is_cacheable()): kc_hash is the
         * content (content_hash() of the bytes) its page cache was given at an open, kc_size the
         * size its attributes were last told (LOOKUP, GETATTR, open). Cleared when an
         * invalidation for the inode is queued. See fuse_fs_invalidate_disk().
         */
        bool kc_valid, ka_valid;
        bool recheck;           /* changed while open (getattr reports the open's size): check at the last close */
        bool k_pages;           /* the kernel may hold page-cache pages of it: a cacheable file was opened
                                 * (keep_cache reads, a store, a splice or mmap of a direct open) since the
                                 * node was made; a new node (a new inode) has none */
        uint32_t ka_size;
        uint64_t kc_hash;
};

/*
 * hctx/<n>/<attr> files have fixed inode numbers: the hctx/<n> directory's plus 1 + arg2.
 * Each hctx/<n> directory reserves HCTX_INO_SPAN numbers, so a file can be listed by readdir
 * without existing, created by LOOKUP and freed by FORGET, and comes back with the same number.
 */
#define HCTX_INO_SPAN 192       /* > HCTX_ATTR_RATE + STATS_MAX_VALUES */

static inline bool node_is_dir(const Node *n) {
        switch (n->type) {
        case NODE_ROOT: case NODE_DEVICES: case NODE_DEVICE: case NODE_FACTS:
        case NODE_PLAN: case NODE_APPLIED: case NODE_HCTX: case NODE_HCTX_N: case NODE_POLICY:
        case NODE_OWNER: case NODE_MODULES: case NODE_MODULE: case NODE_MODULE_PARAM:
        case NODE_HOSTS: case NODE_HOST: case NODE_IOSCHED:
        case NODE_NETWORK: case NODE_NICS: case NODE_NIC:
        case NODE_POLICY_IOSCHED: case NODE_POLICY_IOSCHED_ELEVATOR:
                return true;
        default:
                return false;
        }
}

/*
 * Files whose content changes only when blkmqd changes what it knows about a disk (an
 * evaluation, a write's outcome, a verify that noticed someone else's change, a hot-plug):
 * served from the kernel's page cache (FOPEN_KEEP_CACHE) with an exact st_size, and
 * invalidated when that happens (fuse_fs_invalidate_disk(), fuse-fs.c). Live files
 * (node_is_live()) and the root control files are rendered at every open (direct_io).
 */
static inline bool node_is_cacheable(const Node *n);

/* Files root may write (mode 0644); everything else is 0444. */
static inline bool node_is_writable(const Node *n) {
        return n->type == NODE_MODE || n->type == NODE_RELOAD || n->type == NODE_RESTORE ||
               n->type == NODE_POLICY_KNOB || n->type == NODE_POLICY_IOSCHED_TUNABLE;
}

/*
 * Live statistics: their content changes between any two reads, so a size from getattr would
 * be stale by the time of the read anyway. They report st_size 0, like /proc files (cat, dd,
 * head and tail all read to EOF), and getattr does not render them: a metrics scrape renders
 * once (at open), not twice.
 */
static inline bool node_is_live(const Node *n) {
        switch (n->type) {
        case NODE_METRICS: case NODE_STAT: case NODE_COMPLETIONS:
        case NODE_BLOCK_SOFTIRQS:
                return true;
        case NODE_HCTX_ATTR:
                return n->arg2 >= HCTX_ATTR_STAT || n->arg2 == HCTX_ATTR_REMOTE_PCT;
        case NODE_HOST_ATTR:
                return n->arg == HOST_ATTR_HOST_BUSY || n->arg == HOST_ATTR_OCCUPANCY;
        default:
                return false;
        }
}

static inline bool node_is_cacheable(const Node *n) {
        switch (n->type) {
        case NODE_CLASS: case NODE_EXPLAIN: case NODE_FACT: case NODE_PLAN_KNOB: case NODE_OWNER_KNOB:
        case NODE_APPLIED_KNOB: case NODE_POLICY_KNOB: case NODE_MODULE_ATTR:
        case NODE_PLAN_IOSCHED: case NODE_APPLIED_IOSCHED: case NODE_POLICY_IOSCHED_TUNABLE:
        case NODE_NOT_LISTED:
                return true;
        case NODE_HCTX_ATTR: case NODE_HOST_ATTR:
                return !node_is_live(n);
        default:
                return false;
        }
}
