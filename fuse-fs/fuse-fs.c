/* SPDX-License-Identifier: GPL-2.0-or-later */
#define FUSE_USE_VERSION 35

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "fuse-fs.h"
#include "macro.h"
#include "node.h"
#include "render.h"

#define FUSE_SUPER_MAGIC 0x65735546
/* Seconds the kernel may cache names and attributes (live files: direct_io, never cached). */
#define FUSE_FS_TIMEOUT 1.0
/* Attributes of cacheable files (node_is_cacheable()): blkmqd invalidates them itself when
 * what they show changes (fuse_fs_invalidate_disk()); the timeout only bounds a change that
 * reached no invalidation (an open re-checks content and size anyway, see op_open()). */
#define FUSE_FS_CACHED_TIMEOUT 60.0

struct FuseFs {
        FuseFsContext ctx;
        struct fuse_session *session;
        sd_event_source *io;
        char *mountpoint;
        bool mounted;
        struct fuse_buf buf;
        void *nodes;            /* tsearch tree of Node*, keyed by ino */
        void *device_nodes;     /* tsearch tree of the devices/<disk> Node*, keyed by name */
        uint64_t next_ino;
        Node *root, *devices, *modules, *hosts, *nics, *not_listed;
        bool created_mountpoint;        /* blkmqd made the directory: remove it at stop */
        bool cleared_stale;             /* a dead mount was there, lazily unmounted */
        struct timespec start;
        /* Kernel cache invalidations, sent by a helper thread: the kernel's reverse
         * invalidation waits for the parent directory's lock, which a LOOKUP in progress
         * holds until this (single-threaded) loop answers it; sent from the loop it would
         * hang both forever (found by tests/reliability/test-stress.py). */
        pthread_t notifier;
        bool notifier_started, notifier_quit;
        pthread_mutex_t notify_lock;
        pthread_cond_t notify_cond;
        struct Inval *notify_queue, **notify_tail;
        uint64_t notify_queued, notify_done;    /* items pushed, items sent or dropped (under notify_lock) */
        struct Dying *dying;    /* removed disks whose invalidations are still queued */
        uint64_t requests[_FUSE_FS_REQUEST_MAX];        /* answered, by kind (loop thread only) */
};

/*
 * A removed disk, in two steps: its nodes stay (lookups of devices/<disk> still succeed)
 * until the notifier has sent an inode invalidation for every node of it the kernel knows
 * (pages and attributes: a held fd's next read then comes here and fails, a cached stat()
 * asks again); then the nodes are freed and the entry invalidated (reap_dying()). So once
 * anyone sees the disk gone, no cached content or attribute of it is left.
 */
typedef struct Dying {
        struct Dying *next;
        Node *dev;
        uint64_t ticket;        /* notify_done reaches it: every invalidation of the disk is sent */
} Dying;

typedef struct Inval {
        struct Inval *next;
        fuse_ino_t ino;
        bool entry;             /* true: the entry name in directory ino; false: inode ino */
        fuse_req_t open_req;    /* non-NULL: not an invalidation but an open to finish, see open_finish() */
        struct fuse_file_info open_fi;
        off_t store_offset;     /* ... after storing store_byte there (-1: nothing to store) */
        char store_byte;
        bool inval_first;       /* ... a cacheable file's open: drop the inode's pages and attributes, */
        const char *store_data; /* ... then store its whole snapshot (owned by open_fi.fh) */
        size_t store_len;
        FuseFsWrite *write;     /* non-NULL: a write's answer, sent behind the invalidations before it */
        int write_r;
        char name[];
} Inval;

struct FuseFsWrite {
        fuse_req_t req;
        size_t size;
};

/* The content of one open file, rendered at open(). */
typedef struct Snapshot {
        uint64_t ino;
        char *data;
        size_t size;
        uint64_t hash;          /* content_hash() of data, for a cacheable file's open */
} Snapshot;

static const char *const fuse_fs_request_table[_FUSE_FS_REQUEST_MAX] = {
        [FUSE_FS_REQUEST_LOOKUP] = "lookup",
        [FUSE_FS_REQUEST_GETATTR] = "getattr",
        [FUSE_FS_REQUEST_GETATTR_DIR] = "getattr-dir",
        [FUSE_FS_REQUEST_OPEN] = "open",
        [FUSE_FS_REQUEST_READ] = "read",
        [FUSE_FS_REQUEST_RELEASE] = "release",
        [FUSE_FS_REQUEST_OPENDIR] = "opendir",
        [FUSE_FS_REQUEST_READDIR] = "readdir",
        [FUSE_FS_REQUEST_READDIRPLUS] = "readdirplus",
        [FUSE_FS_REQUEST_FORGET] = "forget",
        [FUSE_FS_REQUEST_SETATTR] = "setattr",
        [FUSE_FS_REQUEST_WRITE] = "write",
};

const char *fuse_fs_request_to_string(FuseFsRequest r) {
        return r >= 0 && r < _FUSE_FS_REQUEST_MAX ? fuse_fs_request_table[r] : NULL;
}

uint64_t fuse_fs_requests(const FuseFs *fs, FuseFsRequest r) {
        return fs && r >= 0 && r < _FUSE_FS_REQUEST_MAX ? fs->requests[r] : 0;
}

/* Count one request of kind r for req's file system; returns that FuseFs. */
static FuseFs *request_begin(fuse_req_t req, FuseFsRequest r) {
        FuseFs *fs = fuse_req_userdata(req);
        fs->requests[r]++;
        return fs;
}

static int node_compare(const void *a, const void *b) {
        uint64_t x = ((const Node *) a)->ino, y = ((const Node *) b)->ino;
        return x < y ? -1 : x > y;
}

static void snapshot_free(Snapshot *s) {
        if (s) {
                free(s->data);
                free(s);
        }
}

/*
 * The second half of an OPEN, on the notifier thread: make the kernel's i_size the snapshot's
 * size, then answer. Why: splice()/sendfile()/copy_file_range() (busybox cat, uutils cat, ...)
 * ignore direct_io on kernels whose fuse ->splice_read is filemap_splice_read(): they read
 * through the page cache and stop at i_size. Seen on Debian 6.12.117 and 6.18.44: a live
 * file (i_size 0) read empty, a static file grown since its LOOKUP read cut. 6.1.0-57 splices
 * through ->read_iter and reads everything either way.
 * Storing the snapshot's last byte at its offset raises i_size to the size
 * (fs/fuse/dev.c fuse_notify_store(): i_size only grows, and only for a store of >= 1 byte);
 * a larger i_size left by a longer, older rendering is cut back by the short read of the
 * last page (fs/fuse/file.c fuse_short_read()), the open having dropped the page cache (no
 * FOPEN_KEEP_CACHE). Not on the FUSE loop: the store locks a page-cache folio, which another
 * reader's page read may hold while it waits for this loop to answer its READ.
 */
static void open_finish(FuseFs *fs, Inval *i) {
        if (i->inval_first)
                (void) fuse_lowlevel_notify_inval_inode(fs->session, i->ino, 0, 0);
        if (i->store_len > 0) {
                /* the page cache gets this open's content: i_size grows to it, and the first
                 * read is a hit (a shorter content than i_size: the short READ of that page
                 * cuts i_size back, as above) */
                struct fuse_bufvec b = FUSE_BUFVEC_INIT(i->store_len);
                b.buf[0].mem = (void *) i->store_data;
                (void) fuse_lowlevel_notify_store(fs->session, i->ino, 0, &b, 0);
        } else if (i->store_offset >= 0) {
                struct fuse_bufvec b = FUSE_BUFVEC_INIT(1);
                b.buf[0].mem = &i->store_byte;
                (void) fuse_lowlevel_notify_store(fs->session, i->ino, i->store_offset, &b, 0);
        }
        if (fuse_reply_open(i->open_req, &i->open_fi) < 0)
                snapshot_free((Snapshot *) (uintptr_t) i->open_fi.fh);
}

static void write_reply(FuseFsWrite *w, int r);

static void *notifier_main(void *userdata) {
        FuseFs *fs = userdata;

        pthread_mutex_lock(&fs->notify_lock);
        for (;;) {
                while (!fs->notify_queue && !fs->notifier_quit)
                        pthread_cond_wait(&fs->notify_cond, &fs->notify_lock);
                Inval *i = fs->notify_queue;
                if (!i)
                        break;
                fs->notify_queue = i->next;
                if (!fs->notify_queue)
                        fs->notify_tail = &fs->notify_queue;
                pthread_mutex_unlock(&fs->notify_lock);
                if (i->open_req)
                        open_finish(fs, i);
                else if (i->write)
                        write_reply(i->write, i->write_r);
                else if (i->entry)
                        (void) fuse_lowlevel_notify_inval_entry(fs->session, i->ino, i->name, strlen(i->name));
                else
                        (void) fuse_lowlevel_notify_inval_inode(fs->session, i->ino, 0, 0);
                free(i);
                pthread_mutex_lock(&fs->notify_lock);
                fs->notify_done++;
        }
        pthread_mutex_unlock(&fs->notify_lock);
        return NULL;
}

/* Queue an invalidation for the notifier thread (started on first use). Best effort, like
 * the direct call it replaces: on failure the kernel's cache expires after FUSE_FS_TIMEOUT. */
static bool notify_push(FuseFs *fs, Inval *i);

static void notify_inval(FuseFs *fs, fuse_ino_t ino, const char *name) {
        if (!fs->mounted)
                return;
        Inval *i = calloc(1, sizeof(Inval) + (name ? strlen(name) : 0) + 1);
        if (!i)
                return;
        i->ino = ino;
        i->entry = name;
        if (name)
                strcpy(i->name, name);
        if (!notify_push(fs, i))
                free(i);
}

/* Hand i to the notifier thread (started on first use); false when it cannot run. */
static bool notify_push(FuseFs *fs, Inval *i) {
        bool queued = false;
        pthread_mutex_lock(&fs->notify_lock);
        if (!fs->notifier_started) {
                fs->notify_tail = &fs->notify_queue;
                fs->notifier_started = pthread_create(&fs->notifier, NULL, notifier_main, fs) == 0;
        }
        if (fs->notifier_started) {
                *fs->notify_tail = i;
                fs->notify_tail = &i->next;
                fs->notify_queued++;
                pthread_cond_signal(&fs->notify_cond);
                queued = true;
        }
        pthread_mutex_unlock(&fs->notify_lock);
        return queued;
}

/* True while something queued for the notifier has not been sent yet: an answer that may show
 * a change then goes behind it (op_open(), fuse_fs_write_done()), so whoever sees the change
 * finds every invalidation the change made already done. */
static bool notify_busy(FuseFs *fs) {
        pthread_mutex_lock(&fs->notify_lock);
        bool busy = fs->notify_done != fs->notify_queued;
        pthread_mutex_unlock(&fs->notify_lock);
        return busy;
}

/*
 * Answer the OPEN i carries (open_finish()): here when now (no reader can hold a folio of the
 * inode meanwhile: op_open() says why), else behind the notifier's queue. Returns true when it
 * is answered or queued; false when the notifier cannot run (i is freed, the caller answers).
 */
static bool open_hand_off(FuseFs *fs, Inval *i, bool now) {
        if (now) {
                open_finish(fs, i);
                free(i);
                return true;
        }
        if (notify_push(fs, i))
                return true;
        free(i);
        return false;
}

/*
 * A 64-bit hash of s: what a cacheable file's page cache holds, without keeping the text.
 * Eight bytes a step (multiply, xor-shift): every open of a cached file hashes its rendering,
 * and a byte-wise FNV-1a (a dependent multiply per byte) cost ~1.5 µs of a 1 KiB explain's
 * 15 µs `cat`. Not for adversaries: a collision needs two renderings of one file to differ
 * and hash alike.
 */
static uint64_t content_hash(const char *s, size_t n) {
        const uint64_t k = UINT64_C(0x9e3779b97f4a7c15);
        uint64_t h = UINT64_C(0xcbf29ce484222325) ^ (n * k);
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                h = (h ^ w) * k;
                h ^= h >> 29;
        }
        if (i < n) {
                uint64_t w = 0;
                memcpy(&w, s + i, n - i);
                h = (h ^ w) * k;
                h ^= h >> 29;
        }
        h ^= h >> 32;
        return h * k;
}

/* Drop what is queued and join the notifier; while it is inside the kernel, keep answering
 * requests: the LOOKUP it waits behind needs this loop. */
static void notifier_stop(FuseFs *fs) {
        if (!fs->notifier_started)
                return;
        pthread_mutex_lock(&fs->notify_lock);
        fs->notifier_quit = true;
        while (fs->notify_queue) {
                Inval *i = fs->notify_queue;
                fs->notify_queue = i->next;
                if (i->open_req && fuse_reply_open(i->open_req, &i->open_fi) < 0)
                        snapshot_free((Snapshot *) (uintptr_t) i->open_fi.fh);
                if (i->write)
                        write_reply(i->write, i->write_r);
                fs->notify_done++;
                free(i);
        }
        pthread_cond_signal(&fs->notify_cond);
        pthread_mutex_unlock(&fs->notify_lock);
        while (pthread_tryjoin_np(fs->notifier, NULL) == EBUSY) {
                struct pollfd p = { .fd = fuse_session_fd(fs->session), .events = POLLIN };
                if (fs->mounted && poll(&p, 1, 10) > 0 && fuse_session_receive_buf(fs->session, &fs->buf) > 0)
                        fuse_session_process_buf(fs->session, &fs->buf);
                else if (!fs->mounted)
                        (void) poll(NULL, 0, 10);
        }
        fs->notifier_started = false;
}

static int node_name_compare(const void *a, const void *b) {
        return strcmp(((const Node *) a)->name, ((const Node *) b)->name);
}

static void node_free(FuseFs *fs, Node *n);

static Node *node_get(FuseFs *fs, uint64_t ino) {
        Node key = { .ino = ino };
        Node **n = tfind(&key, &fs->nodes, node_compare);
        return n ? *n : NULL;
}

static void node_free_strings(Node *n) {
        if (n->own_name)
                free(n->name);
        if (n->own_device)
                free(n->device);
}

/*
 * A node below parent. static_name: name is a string that outlives the node (a constant or
 * a static table entry) and is not copied. device is not copied either when it is the
 * parent's: everything below devices/<disk>/ shares the disk node's string, which outlives
 * its children. A tree of thousands of disks has hundreds of thousands of nodes.
 */
static Node *node_new_full(FuseFs *fs, Node *parent, NodeType type, const char *name, bool static_name,
                           const char *device, int arg, int arg2) {
        Node *n = calloc(1, sizeof(Node));
        if (!n)
                return NULL;
        n->own_name = !static_name;
        n->name = static_name ? (char *) name : strdup(name);
        n->own_device = device && !(parent && streq_ptr(parent->device, device));
        n->device = !device ? NULL : n->own_device ? strdup(device) : parent->device;
        if (!n->name || (device && !n->device)) {
                node_free_strings(n);
                free(n);
                return NULL;
        }
        if (type == NODE_HCTX_ATTR)
                n->ino = parent->ino + 1 + arg2;                /* reserved by the hctx/<n> directory */
        else {
                n->ino = parent ? fs->next_ino++ : FUSE_ROOT_ID;
                if (type == NODE_HCTX_N)
                        fs->next_ino += HCTX_INO_SPAN;
        }
        n->type = type;
        n->arg = arg;
        n->arg2 = arg2;
        n->parent = parent;
        if (!tsearch(n, &fs->nodes, node_compare)) {
                node_free_strings(n);
                free(n);
                return NULL;
        }
        if (parent) {
                /* append, so readdir order is creation order */
                if (parent->last_child)
                        parent->last_child->next = n;
                else
                        parent->children = n;
                parent->last_child = n;
        }
        if (type == NODE_DEVICE && !tsearch(n, &fs->device_nodes, node_name_compare)) {
                node_free(fs, n);
                return NULL;
        }
        return n;
}

static Node *node_new(FuseFs *fs, Node *parent, NodeType type, const char *name, const char *device, int arg, int arg2) {
        return node_new_full(fs, parent, type, name, false, device, arg, arg2);
}

/* node_new() for a name that is a constant or static table entry. */
static Node *node_new_static(FuseFs *fs, Node *parent, NodeType type, const char *name, const char *device, int arg, int arg2) {
        return node_new_full(fs, parent, type, name, true, device, arg, arg2);
}

/* Free n and its subtree; unlinks n from its parent. */
static void node_free(FuseFs *fs, Node *n) {
        while (n->children)
                node_free(fs, n->children);
        if (n->parent) {
                Node **p = &n->parent->children, *prev = NULL;
                while (*p != n) {
                        prev = *p;
                        p = &(*p)->next;
                }
                *p = n->next;
                if (n->parent->last_child == n)
                        n->parent->last_child = prev;
        }
        if (n->type == NODE_DEVICE)
                tdelete(n, &fs->device_nodes, node_name_compare);
        tdelete(n, &fs->nodes, node_compare);
        node_free_strings(n);
        free(n);
}

/* devices/<name>, through the index (devices/ may hold thousands). */
static Node *device_node(FuseFs *fs, const char *name) {
        Node key = { .name = (char *) name };
        Node **n = tfind(&key, &fs->device_nodes, node_name_compare);
        return n ? *n : NULL;
}

static Node *node_child(const Node *dir, const char *name) {
        for (Node *c = dir->children; c; c = c->next)
                if (streq(c->name, name))
                        return c;
        return NULL;
}

static mode_t node_mode(const Node *n) {
        return node_is_dir(n) ? S_IFDIR | 0555 : node_is_writable(n) ? S_IFREG | 0644 : S_IFREG | 0444;
}

/*
 * Fill st for n; renders files to learn their size. Returns 0 or -errno.
 * Times: a live file (node_is_live()) and applied/<knob> (verified against the kernel at
 * render) are rendered from what the kernel has at the moment they are read, so their
 * mtime/ctime is now, like /proc's; a monitor of file ages (node_exporter's
 * the age of a metrics scrape) then sees them fresh. Every other
 * file has the mount time.
 */
static int node_stat(FuseFs *fs, Node *n, struct stat *st) {
        struct timespec t = fs->start;
        if (node_is_live(n) || n->type == NODE_APPLIED_KNOB || n->type == NODE_APPLIED_IOSCHED)
                (void) clock_gettime(CLOCK_REALTIME, &t);
        *st = (struct stat) {
                .st_ino = n->ino,
                .st_mode = node_mode(n),
                .st_nlink = node_is_dir(n) ? 2 : 1,
                .st_blksize = 4096,
                .st_atim = t, .st_mtim = t, .st_ctim = t,
        };
        if (!node_is_dir(n) && n->n_open > 0) {
                /* while open: what the newest open reads, so a splice reader that fstat()s
                 * first (the kernel then drops the i_size open_finish() set) still reads it */
                st->st_size = n->open_size;
                st->st_blocks = (st->st_size + 511) / 512;
        } else if (!node_is_dir(n) && !node_is_live(n)) {
                _cleanup_free_ char *s = NULL;
                int r = render_node(&fs->ctx, n, &s);
                if (r < 0)
                        return r;
                st->st_size = strlen(s);
                st->st_blocks = (st->st_size + 511) / 512;
        }
        if (node_is_cacheable(n)) {
                /* the size the kernel is told now (LOOKUP, GETATTR, SETATTR answers) */
                n->ka_size = (uint32_t) st->st_size;
                n->ka_valid = st->st_size <= UINT32_MAX;
        }
        return 0;
}

static double attr_timeout(const Node *n) {
        return node_is_cacheable(n) ? FUSE_FS_CACHED_TIMEOUT : FUSE_FS_TIMEOUT;
}

static int populate(FuseFs *fs, Node *dir);
static void reap_dying(FuseFs *fs, const char *force);
static Node *hctx_attr_node(FuseFs *fs, Node *h, const char *name);

/* Render n with no side effect on the manager: applied/<knob> and applied/iosched without the
 * verify their open does (that verify may be what is invalidating). */
static int render_quiet(FuseFs *fs, const Node *n, char **ret) {
        FuseFsContext quiet = fs->ctx;
        quiet.verify = NULL;
        return render_node(&quiet, n, ret);
}

/*
 * A cacheable file the kernel knows: when what its page cache or attributes hold is not what
 * the file shows now, forget both and queue fuse_lowlevel_notify_inval_inode() (pages and
 * attributes). While the file is open, getattr keeps reporting the open's size (node_stat()),
 * so the check is made again at its last close.
 */
static void check_cached(FuseFs *fs, Node *n) {
        if (!node_is_cacheable(n) || n->nlookup == 0 || (!n->kc_valid && !n->ka_valid))
                return;
        _cleanup_free_ char *s = NULL;
        if (render_quiet(fs, n, &s) >= 0) {
                size_t size = strlen(s);
                if ((!n->kc_valid || n->kc_hash == content_hash(s, size)) && (!n->ka_valid || n->ka_size == size))
                        return;
        }
        n->kc_valid = n->ka_valid = false;
        n->recheck = n->n_open > 0;
        notify_inval(fs, n->ino, NULL);
}

static void check_cached_tree(FuseFs *fs, Node *n) {
        check_cached(fs, n);
        for (Node *c = n->children; c; c = c->next)
                check_cached_tree(fs, c);
}

void fuse_fs_invalidate_disk(FuseFs *fs, const char *name) {
        if (!fs || !fs->mounted || !name)
                return;
        Node *dev = device_node(fs, name);
        if (dev)
                check_cached_tree(fs, dev);
        /* hosts/<host>/ shows the disks behind it */
        const Device *d = registry_get(fs->ctx.registry, name);
        Node *h = d && d->facts && d->facts->scsi_host ? node_child(fs->hosts, d->facts->scsi_host) : NULL;
        if (h)
                check_cached_tree(fs, h);
}

/*
 * Free an hctx/<n>/<attr> node the kernel holds no reference to: gone from the kernel's
 * caches (FORGET), so from ours (they are ~95 % of a fully read tree); a later LOOKUP makes
 * it again with the same inode number. Other nodes live as long as their device.
 */
static void free_unreferenced(FuseFs *fs, Node *n) {
        /* n_open: a listed node's reference count is a guess (hctx_listed_node()); an open
         * file keeps its node whatever a FORGET says, its last RELEASE frees it */
        if (n->nlookup == 0 && n->n_open == 0 && n->type == NODE_HCTX_ATTR)
                node_free(fs, n);
}
static size_t hctx_entries(int *out, size_t max);
static const char *hctx_entry_name(int arg2);

/* True for the hctx/<n>/ entry arg2 that is a live statistics file (node_is_live()). */
static bool hctx_entry_is_live(int arg2) {
        Node probe = { .type = NODE_HCTX_ATTR, .arg2 = arg2 };
        return node_is_live(&probe);
}

/*
 * The hctx/<n>/<statistic> file with inode number ino, which READDIRPLUS handed to the kernel
 * with its attributes but without making a node (readdir_common()): made now, with one kernel
 * reference (the kernel holds at least the listing's; a FORGET's count is clamped, and an
 * open node stays until its last RELEASE, free_unreferenced()). NULL when ino is no such file
 * (its disk or hctx layout is gone: ENOENT, as for a LOOKUP).
 */
static Node *hctx_listed_node(FuseFs *fs, uint64_t ino) {
        /* the hctx/<n>/ directory owns the HCTX_INO_SPAN numbers after its own: walk down to
         * it (or to a sibling file, whose parent it is) */
        for (uint64_t k = 1; k <= HCTX_INO_SPAN && k < ino; k++) {
                Node *d = node_get(fs, ino - k);
                if (!d)
                        continue;
                if (d->type == NODE_HCTX_ATTR)
                        d = d->parent;
                if (d->type != NODE_HCTX_N || ino - d->ino - 1 >= HCTX_INO_SPAN)
                        return NULL;
                int arg2 = (int) (ino - d->ino - 1);
                if (!hctx_entry_is_live(arg2))
                        return NULL;
                const char *name = hctx_entry_name(arg2);
                Node *n = name ? hctx_attr_node(fs, d, name) : NULL;
                if (!n || n->ino != ino)
                        return NULL;
                n->nlookup = MAX(n->nlookup, (uint64_t) 1);
                return n;
        }
        return NULL;
}

/* node_get(), and the listed hctx statistics files the kernel may ask for by number. */
static Node *node_find(FuseFs *fs, uint64_t ino) {
        Node *n = node_get(fs, ino);
        return n ?: hctx_listed_node(fs, ino);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_LOOKUP);
        reap_dying(fs, NULL);
        Node *p = node_get(fs, parent), *n;
        if (p && populate(fs, p) < 0) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        n = !p ? NULL : p == fs->devices ? device_node(fs, name) :
            p->type == NODE_HCTX_N ? hctx_attr_node(fs, p, name) : node_child(p, name);
        struct fuse_entry_param e = {
                .attr_timeout = FUSE_FS_TIMEOUT,
                .entry_timeout = FUSE_FS_TIMEOUT,
        };

        if (!n) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        int r = node_stat(fs, n, &e.attr);
        if (r < 0) {
                fuse_reply_err(req, -r);
                free_unreferenced(fs, n);       /* made for this lookup, which failed */
                return;
        }
        e.ino = n->ino;
        e.attr_timeout = attr_timeout(n);
        if (fuse_reply_entry(req, &e) == 0)
                n->nlookup++;
        else
                free_unreferenced(fs, n);
}

static void forget_one(FuseFs *fs, fuse_ino_t ino, uint64_t nlookup) {
        Node *n = node_get(fs, ino);
        if (!n)
                return;         /* freed with its device already */
        n->nlookup -= MIN(nlookup, n->nlookup);
        free_unreferenced(fs, n);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        forget_one(request_begin(req, FUSE_FS_REQUEST_FORGET), ino, nlookup);
        fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_FORGET);
        for (size_t i = 0; i < count; i++)
                forget_one(fs, forgets[i].ino, forgets[i].nlookup);
        fuse_reply_none(req);
}

/* Answer with the attributes of n (rendering it for st_size unless it is live). */
static void reply_attr(fuse_req_t req, FuseFs *fs, Node *n) {
        struct stat st;
        int r = node_stat(fs, n, &st);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_attr(req, &st, attr_timeout(n));
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        FuseFs *fs = fuse_req_userdata(req);
        reap_dying(fs, NULL);
        Node *n = node_find(fs, ino);
        fs->requests[n && node_is_dir(n) ? FUSE_FS_REQUEST_GETATTR_DIR : FUSE_FS_REQUEST_GETATTR]++;

        if (!n) {
                /* fi: asked for an open file (a read past the cached i_size): like op_read() */
                fuse_reply_err(req, fi ? EIO : ENOENT);
                return;
        }
        reply_attr(req, fs, n);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_OPENDIR);
        reap_dying(fs, NULL);
        Node *n = node_get(fs, ino);

        if (!n)
                fuse_reply_err(req, ENOENT);
        else if (!node_is_dir(n))
                fuse_reply_err(req, ENOTDIR);
        else
                fuse_reply_open(req, fi);
}

/*
 * READDIR and READDIRPLUS. plus: each entry with its attributes (rendered like a LOOKUP, and
 * counted as one), so a tree walk (find, ls -l, a `cat` of every file) needs no LOOKUP per
 * name. hctx/<n>/ files exist here only while the kernel holds them (a walk of 4,096 x 64 hctx
 * would make all 8 M of them at once): the live statistics among them (25 of 32; size 0, no
 * render) are listed with their attributes and no node, made when the kernel asks for the
 * inode (hctx_listed_node()); the static ones (their size needs a render, and the first-open
 * path needs the size the kernel was told) by name only, looked up when used; an existing
 * node is listed with its attributes and counted.
 */
static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
        FuseFs *fs = fuse_req_userdata(req);
        reap_dying(fs, NULL);
        Node *n = node_get(fs, ino);

        if (!n) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        if (populate(fs, n) < 0) {
                fuse_reply_err(req, ENOMEM);
                return;
        }

        _cleanup_free_ char *buf = malloc(size);
        if (!buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }

        size_t used = 0;
        off_t i = 0;
        Node *c = n->children, *child, listed;
        int entries[HCTX_INO_SPAN];
        size_t n_entries = n->type == NODE_HCTX_N ? hctx_entries(entries, ELEMENTSOF(entries)) : 0;
        for (;; i++) {
                const char *name;
                struct stat st = {};
                child = NULL;
                if (i == 0) {
                        name = ".";
                        st.st_ino = n->ino;
                        st.st_mode = S_IFDIR;
                } else if (i == 1) {
                        name = "..";
                        st.st_ino = n->parent ? n->parent->ino : n->ino;
                        st.st_mode = S_IFDIR;
                } else if (n->type == NODE_HCTX_N) {
                        /* listed from the table: the files need not exist to be listed */
                        if ((size_t) i - 2 >= n_entries)
                                break;
                        name = hctx_entry_name(entries[i - 2]);
                        st.st_ino = n->ino + 1 + entries[i - 2];
                        st.st_mode = S_IFREG | 0444;
                        listed = (Node) { .ino = st.st_ino, .type = NODE_HCTX_ATTR, .name = (char *) name,
                                          .device = n->device, .arg = n->arg, .arg2 = entries[i - 2], .parent = n };
                        if (plus && !(child = node_get(fs, st.st_ino)) && hctx_entry_is_live(listed.arg2)) {
                                child = &listed;
                                n->arg2 = 1;    /* for queue_inval_known() */
                        }
                } else {
                        if (!c)
                                break;
                        name = c->name;
                        st.st_ino = c->ino;
                        st.st_mode = node_mode(c);
                        child = c;
                        c = c->next;
                }
                if (i < off)
                        continue;
                size_t k;
                if (plus) {
                        struct fuse_entry_param e = { .attr = st };
                        if (child && node_stat(fs, child, &e.attr) >= 0) {
                                e.ino = child->ino;
                                e.attr_timeout = attr_timeout(child);
                                e.entry_timeout = FUSE_FS_TIMEOUT;
                        } else
                                e.attr = st;    /* ino 0: a name only, looked up when used */
                        k = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, i + 1);
                        if (k <= size - used && e.ino && child != &listed)
                                child->nlookup++;
                } else
                        k = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
                if (k > size - used)
                        break;
                used += k;
        }
        fuse_reply_buf(req, buf, used);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        request_begin(req, FUSE_FS_REQUEST_READDIR);
        readdir_common(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        request_begin(req, FUSE_FS_REQUEST_READDIRPLUS);
        readdir_common(req, ino, size, off, true);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_OPEN);
        reap_dying(fs, NULL);
        Node *n = node_find(fs, ino);
        int r;

        if (!n) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        if (node_is_dir(n)) {
                fuse_reply_err(req, EISDIR);
                return;
        }
        if ((fi->flags & O_ACCMODE) != O_RDONLY && !node_is_writable(n)) {
                fuse_reply_err(req, EACCES);
                return;
        }

        Snapshot *s = calloc(1, sizeof(Snapshot));
        if (!s) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        r = render_node(&fs->ctx, n, &s->data);
        if (r < 0) {
                free(s);
                fuse_reply_err(req, -r);
                return;
        }
        s->size = strlen(s->data);
        s->ino = ino;
        fi->fh = (uintptr_t) s;
        fi->noflush = 1;        /* close() sends no FUSE_FLUSH (FOPEN_NOFLUSH, Linux >= 5.16): see probe_main() */
        n->n_open++;
        n->open_size = s->size;

        if (node_is_cacheable(n) && (fi->flags & O_ACCMODE) == O_RDONLY && s->size <= UINT32_MAX) {
                /*
                 * Served from the kernel's page cache (FOPEN_KEEP_CACHE): one round trip
                 * (this OPEN) instead of OPEN + READ. The content was rendered anyway, so
                 * whatever the kernel holds is checked against it: the same bytes and size,
                 * and nothing queued for the notifier -> answer now; else (first open, or a
                 * change no invalidation covered yet) on the notifier thread, behind what is
                 * queued: drop the inode's pages and attributes, store this content, answer.
                 */
                uint64_t h = s->hash = content_hash(s->data, s->size);
                bool had_pages = n->k_pages;
                fi->keep_cache = 1;
                n->k_pages = true;
                if (n->kc_valid && n->kc_hash == h && n->ka_valid && n->ka_size == s->size && !notify_busy(fs)) {
                        if (fuse_reply_open(req, fi) < 0)
                                snapshot_free(s);
                        return;
                }
                Inval *i = fs->mounted ? calloc(1, sizeof(Inval) + 1) : NULL;
                if (i) {
                        *i = (Inval) { .ino = ino, .open_req = req, .open_fi = *fi, .store_offset = -1,
                                       .inval_first = true, .store_data = s->data, .store_len = s->size };
                        /*
                         * The first open of an inode (no page of it ever, its attributes told
                         * this size: a LOOKUP or READDIRPLUS of a tree walk): nothing to drop, so
                         * no invalidation (it would cost the reader a GETATTR at its fstat() or
                         * read), and with no other open handle nothing queued no reader can
                         * hold a folio of it (see the live case below): the store is made here,
                         * no hand-off to the notifier thread.
                         */
                        bool first = !had_pages && n->ka_valid && n->ka_size == s->size && n->n_open == 1 &&
                                     !notify_busy(fs);
                        n->kc_valid = n->ka_valid = true;
                        n->kc_hash = h;
                        n->ka_size = (uint32_t) s->size;
                        i->inval_first = !first;
                        if (open_hand_off(fs, i, first))
                                return;
                }
                /* no notifier: what the kernel holds is unknown, read this open directly */
                n->kc_valid = n->ka_valid = false;
                fi->keep_cache = 0;
        }
        fi->direct_io = 1;      /* sizes change between opens; never serve stale page cache */

        /* i_size = this snapshot's size before the open returns (open_finish()) */
        Inval *i = fs->mounted ? calloc(1, sizeof(Inval) + 1) : NULL;
        if (i) {
                *i = (Inval) { .ino = ino, .open_req = req, .open_fi = *fi, .store_offset = -1 };
                if (s->size > 0) {
                        i->store_offset = (off_t) s->size - 1;
                        i->store_byte = s->data[s->size - 1];
                }
                /*
                 * The only open handle of the inode (n_open was 0) and nothing queued: no
                 * reader can hold a page-cache folio of it (a page read needs an open fd), so
                 * the store cannot wait for this loop; done here, it spares the hand-off to
                 * the notifier thread (a live file's `cat`). Else behind the queue, as above.
                 */
                if (open_hand_off(fs, i, n->n_open == 1 && !notify_busy(fs)))
                        return;
        }
        if (fuse_reply_open(req, fi) < 0)
                snapshot_free(s);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_READ);
        Snapshot *s = (Snapshot *) (uintptr_t) fi->fh;

        /* The node is gone: its device was removed while this file was open. */
        Node *n = node_get(fs, ino);
        if (!n) {
                fuse_reply_err(req, EIO);
                return;
        }
        /* a page read for an older open (the cache was dropped since): the page cache gets
         * that open's content, so what the kernel holds is no longer known */
        if (n->kc_valid && s->hash != n->kc_hash)
                n->kc_valid = false;
        if (off < 0 || (size_t) off >= s->size) {
                fuse_reply_buf(req, NULL, 0);
                return;
        }
        fuse_reply_buf(req, s->data + off, MIN(size, s->size - (size_t) off));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_RELEASE);
        Node *n = node_get(fs, ino);
        if (n && n->n_open > 0)
                n->n_open--;
        if (n && n->n_open == 0 && n->recheck) {
                n->recheck = false;
                n->ka_valid = true;     /* getattr answered with the open's size meanwhile */
                n->ka_size = n->open_size > UINT32_MAX ? UINT32_MAX : (uint32_t) n->open_size;
                check_cached(fs, n);
        }
        snapshot_free((Snapshot *) (uintptr_t) fi->fh);
        fuse_reply_err(req, 0);
        if (n)
                free_unreferenced(fs, n);       /* forgotten while open */
}

/* Only "truncate to 0" on a writable file, which `echo value > file` asks for (O_TRUNC). */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_SETATTR);
        Node *n = node_find(fs, ino);

        if (!n) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        if ((to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                        FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME)) ||
            ((to_set & FUSE_SET_ATTR_SIZE) && (!node_is_writable(n) || attr->st_size != 0))) {
                fuse_reply_err(req, EPERM);
                return;
        }
        reply_attr(req, fs, n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        FuseFs *fs = request_begin(req, FUSE_FS_REQUEST_WRITE);
        Node *n = node_get(fs, ino);

        if (!n) {
                fuse_reply_err(req, EIO);
                return;
        }
        if (!node_is_writable(n)) {
                fuse_reply_err(req, EACCES);
                return;
        }
        /* the kernel moves i_size itself after a write: its size and pages are unknown now */
        n->kc_valid = n->ka_valid = false;
        FuseFsWrite *w = calloc(1, sizeof(FuseFsWrite));
        if (!w) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        *w = (FuseFsWrite) { .req = req, .size = size };
        /* Like sysfs: one value per write(), at offset 0; the manager refuses (and logs) others. */
        int r = fs->ctx.write(fs->ctx.userdata, n->type, n->device, n->arg, buf, size, off, w);
        if (r == FUSE_FS_WRITE_DEFERRED)
                return;         /* answered by fuse_fs_write_done() */
        fuse_fs_write_done(w, r);
}

static void write_reply(FuseFsWrite *w, int r) {
        if (r < 0)
                fuse_reply_err(w->req, -r);
        else
                fuse_reply_write(w->req, w->size);
        free(w);
}

void fuse_fs_write_done(FuseFsWrite *w, int r) {
        if (!w)
                return;
        /* behind the invalidations the write caused (an evaluation, its writes' outcomes) */
        FuseFs *fs = fuse_req_userdata(w->req);
        if (fs->mounted && notify_busy(fs)) {
                Inval *i = calloc(1, sizeof(Inval) + 1);
                if (i) {
                        *i = (Inval) { .write = w, .write_r = r, .store_offset = -1 };
                        if (notify_push(fs, i))
                                return;
                        free(i);
                }
        }
        write_reply(w, r);
}

/*
 * The tree's shape is blkmqd's: like sysfs (kernfs has no create/mknod/symlink/link op for
 * these directories), creating a file is EACCES and mkdir, mknod, symlink, link, unlink, rmdir
 * and rename are EPERM, not libfuse's ENOSYS ("Function not implemented").
 */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
        fuse_reply_err(req, EACCES);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
        fuse_reply_err(req, EPERM);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
        fuse_reply_err(req, EPERM);
}

static void op_remove(fuse_req_t req, fuse_ino_t parent, const char *name) {
        fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
        fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
        fuse_reply_err(req, EPERM);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
        fuse_reply_err(req, EPERM);
}

static const struct fuse_lowlevel_ops fuse_fs_ops = {
        .create = op_create,
        .mknod = op_mknod,
        .mkdir = op_mkdir,
        .unlink = op_remove,
        .rmdir = op_remove,
        .symlink = op_symlink,
        .link = op_link,
        .rename = op_rename,
        .setattr = op_setattr,
        .write = op_write,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .open = op_open,
        .read = op_read,
        .release = op_release,
};

/*
 * Requests answered per wake-up of the loop at most. The device is non-blocking
 * (fuse_fs_mount()), so after a request the next one is read at once when the kernel has it
 * queued (a `cat` sends its OPEN while the loop answers the previous file's RELEASE; a tree
 * walk queues LOOKUP, OPEN, READs back to back), and -EAGAIN ends the round otherwise. One
 * round of sd_event_run() costs an epoll_wait() and a gettid() (sd_event_prepare()); answered
 * in the same round, a request costs one read() and one writev(). Bounded so the loop's other
 * sources (uevents, timers, writers) run between rounds under a flood of reads.
 */
#define FUSE_FS_REQUESTS_PER_WAKE 16

static int on_fuse_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FuseFs *fs = userdata;

        for (unsigned k = 0; k < FUSE_FS_REQUESTS_PER_WAKE; k++) {
                int r = fuse_session_receive_buf(fs->session, &fs->buf);
                if (r == -EINTR || r == -EAGAIN)
                        return 0;
                if (r <= 0 || fuse_session_exited(fs->session)) {
                        /* Unmounted from outside (umount, fusermount -u): stop serving, keep running. */
                        fs->mounted = false;
                        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
                }
                fuse_session_process_buf(fs->session, &fs->buf);
        }
        return 0;
}

/*
 * Lazily unmount a dead FUSE mount left behind by a crashed daemon. statfs() is the probe:
 * unlike stat() it is never answered from the attribute cache, so a dead connection
 * always shows as ENOTCONN.
 */
static int clear_stale_mount(const char *mountpoint) {
        struct statfs sfs;

        if (statfs(mountpoint, &sfs) >= 0)
                return sfs.f_type == FUSE_SUPER_MAGIC ? -EBUSY : 0;   /* a live FUSE mount: another blkmqd? */
        if (errno == ENOTCONN) {
                if (umount2(mountpoint, MNT_DETACH) < 0)
                        return negative_errno();
                return 1;
        }
        if (errno == ENOENT) {
                if (mkdir(mountpoint, 0755) < 0)
                        return errno == EEXIST ? 0 : negative_errno();
                return 2;       /* created: removed again at stop */
        }
        return negative_errno();
}

bool fuse_fs_cleared_stale_mount(const FuseFs *fs) {
        return fs && fs->cleared_stale;
}

static int build_static(FuseFs *fs) {
        fs->root = node_new(fs, NULL, NODE_ROOT, "", NULL, 0, 0);
        if (!fs->root)
                return -ENOMEM;
        if (!node_new(fs, fs->root, NODE_VERSION, FUSE_FS_VERSION, NULL, 0, 0) ||
            !node_new(fs, fs->root, NODE_MODE, FUSE_FS_MODE, NULL, 0, 0) ||
            !node_new(fs, fs->root, NODE_RELOAD, FUSE_FS_RELOAD, NULL, 0, 0) ||
            !node_new(fs, fs->root, NODE_RESTORE, FUSE_FS_RESTORE, NULL, 0, 0))
                return -ENOMEM;
        fs->devices = node_new(fs, fs->root, NODE_DEVICES, FUSE_FS_DEVICES, NULL, 0, 0);
        fs->modules = node_new(fs, fs->root, NODE_MODULES, FUSE_FS_MODULES, NULL, 0, 0);
        fs->hosts = node_new(fs, fs->root, NODE_HOSTS, FUSE_FS_HOSTS, NULL, 0, 0);
        fs->nics = node_new(fs, fs->root, NODE_NICS, FUSE_FS_NICS, NULL, 0, 0);
        if (!fs->devices || !fs->modules || !fs->hosts || !fs->nics ||
            !node_new(fs, fs->root, NODE_METRICS, FUSE_FS_METRICS, NULL, 0, 0) ||
            !node_new(fs, fs->root, NODE_BLOCK_SOFTIRQS, FUSE_FS_BLOCK_SOFTIRQS, NULL, 0, 0) ||
            !(fs->not_listed = node_new(fs, fs->root, NODE_NOT_LISTED, FUSE_FS_NOT_LISTED, NULL, 0, 0)))
                return -ENOMEM;
        return 0;
}

int fuse_fs_new(const char *mountpoint, const FuseFsContext *ctx, FuseFs **ret) {
        assert(ctx);
        assert(ret);
        FuseFs *fs;
        int r;

        fs = calloc(1, sizeof(FuseFs));
        if (!fs)
                return -ENOMEM;
        pthread_mutex_init(&fs->notify_lock, NULL);
        pthread_cond_init(&fs->notify_cond, NULL);
        fs->ctx = *ctx;
        fs->ctx.metrics_cache = NULL;
        r = metrics_cache_new(&fs->ctx.metrics_cache);
        if (r < 0) {
                fuse_fs_free(fs);
                return r;
        }
        fs->next_ino = FUSE_ROOT_ID + 1;
        clock_gettime(CLOCK_REALTIME, &fs->start);
        fs->mountpoint = strdup(mountpoint);
        if (!fs->mountpoint) {
                fuse_fs_free(fs);
                return -ENOMEM;
        }
        r = build_static(fs);
        if (r < 0) {
                fuse_fs_free(fs);
                return r;
        }

        r = clear_stale_mount(mountpoint);
        if (r < 0) {
                fuse_fs_free(fs);
                return r;
        }
        fs->created_mountpoint = r == 2;
        fs->cleared_stale = r == 1;

        *ret = fs;
        return 0;
}

/* The loop thread answers requests (for at most timeout_ms) until *done: a helper thread's
 * requests, before the sd-event loop runs. Returns 0, -ETIMEDOUT, -ENOTCONN. */
static int serve_until(FuseFs *fs, const bool *done, pthread_mutex_t *lock, int timeout_ms) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                pthread_mutex_lock(lock);
                bool d = *done;
                pthread_mutex_unlock(lock);
                if (d)
                        return 0;
                clock_gettime(CLOCK_MONOTONIC, &now);
                int64_t left = timeout_ms - ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
                if (left <= 0)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fuse_session_fd(fs->session), .events = POLLIN };
                if (poll(&p, 1, MIN(left, 10)) <= 0)
                        continue;
                int r = fuse_session_receive_buf(fs->session, &fs->buf);
                if (r == -EINTR || r == -EAGAIN)
                        continue;
                if (r <= 0)
                        return -ENOTCONN;
                fuse_session_process_buf(fs->session, &fs->buf);
        }
}

typedef struct Probe {
        const char *path;
        pthread_mutex_t lock;
        bool done;
        int poll_error, close_error;
} Probe;

/*
 * One poll() and one close() on a file of the fresh mount: the kernel sends FUSE_POLL and
 * FUSE_FLUSH, gets ENOSYS (no .poll, no .flush in fuse_fs_ops) and stops sending either for the
 * connection (fs/fuse/file.c fuse_file_poll(): fc->no_poll; fuse_flush(): fc->no_flush). From
 * then on poll()/select() and close() on the tree never wait for this daemon: a stopped
 * (SIGSTOP, frozen) daemon leaves no poller in a wait and no closer in D state (FLUSH is sent
 * with args.force, i.e. an uninterruptible wait). Opens also say FOPEN_NOFLUSH (op_open(),
 * Linux >= 5.16); this teaches older kernels too.
 */
static void *probe_main(void *userdata) {
        Probe *p = userdata;
        int fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0) {
                struct pollfd q = { .fd = fd, .events = POLLIN };
                p->poll_error = poll(&q, 1, 0) < 0 ? -errno : 0;
                p->close_error = close(fd) < 0 ? -errno : 0;
        } else
                p->poll_error = p->close_error = -errno;
        pthread_mutex_lock(&p->lock);
        p->done = true;
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int fuse_fs_mount(FuseFs *fs, sd_event *event) {
        int r;

        if (fs->session)
                return -EALREADY;
        char *argv[] = { (char *) "blkmqd", (char *) "-o",
                         (char *) "allow_other,default_permissions,fsname=blkmqd,subtype=blkmqd", NULL };
        struct fuse_args args = FUSE_ARGS_INIT(3, argv);
        fs->session = fuse_session_new(&args, &fuse_fs_ops, sizeof(fuse_fs_ops), fs);
        fuse_opt_free_args(&args);      /* fuse_session_new() replaced argv with a malloc'ed copy */
        if (!fs->session)
                return -EINVAL;
        if (fuse_session_mount(fs->session, fs->mountpoint) != 0) {
                fuse_session_destroy(fs->session);
                fs->session = NULL;
                return -EPERM;
        }
        fs->mounted = true;

        /* Answer FUSE_INIT now: until it is answered every request waits in fuse_get_req()
         * (killable only: D state). Then teach the kernel "no poll, no flush". */
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/" FUSE_FS_VERSION, fs->mountpoint) < 0)
                path = NULL;
        Probe p = { .path = path };
        pthread_t t;
        pthread_mutex_init(&p.lock, NULL);
        if (path && pthread_create(&t, NULL, probe_main, &p) == 0) {
                /* (only this loop can answer the probe: serve until it is done; -ENOTCONN: the
                 * mount went away, and the kernel fails the probe's requests) */
                while (serve_until(fs, &p.done, &p.lock, 1000) == -ETIMEDOUT)
                        ;
                pthread_join(t, NULL);
                if (p.poll_error < 0 || p.close_error < 0)
                        fprintf(stderr, "<7>FUSE probe: poll %s, close %s\n", strerror(-p.poll_error), strerror(-p.close_error));
        }
        pthread_mutex_destroy(&p.lock);

        int fd = fuse_session_fd(fs->session);
        /* non-blocking: on_fuse_io() reads until the queue is empty */
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return negative_errno();
        r = sd_event_add_io(event, &fs->io, fd, EPOLLIN, on_fuse_io, fs);
        if (r < 0)
                return r;
        return 0;
}

FuseFs *fuse_fs_free(FuseFs *fs) {
        if (!fs)
                return NULL;
        sd_event_source_disable_unref(fs->io);
        notifier_stop(fs);
        if (fs->session) {
                if (fs->mounted)
                        fuse_session_unmount(fs->session);
                fuse_session_destroy(fs->session);
        }
        if (fs->created_mountpoint && fs->mountpoint)
                (void) rmdir(fs->mountpoint);   /* only if empty, i.e. our mount is gone */
        while (fs->dying) {
                Dying *x = fs->dying;
                fs->dying = x->next;
                free(x);        /* its nodes go with the root */
        }
        if (fs->root)
                node_free(fs, fs->root);
        free(fs->buf.mem);
        free(fs->mountpoint);
        metrics_cache_free(fs->ctx.metrics_cache);
        free(fs);
        return NULL;
}

static int build_hctx(FuseFs *fs, Node *hctx, const Device *d) {
        for (size_t i = 0; i < d->facts->n_hctx; i++) {
                char name[16];
                snprintf(name, sizeof(name), "%u", d->facts->hctx[i].index);
                if (!node_new(fs, hctx, NODE_HCTX_N, name, d->name, i, 0))
                        return -ENOMEM;
        }
        return 0;
}

/*
 * The files of an hctx/<n>/ directory in readdir order, as arg2 values: the HctxAttr files,
 * then each statistic and, for counters, its _rate. Returns how many (at most max).
 */
static size_t hctx_entries(int *out, size_t max) {
        size_t n = 0;
        for (HctxAttr a = 0; a < _HCTX_ATTR_MAX && n < max; a++)
                out[n++] = a;
        for (StatId st = 0; st < _STAT_MAX && n < max; st++) {
                out[n++] = HCTX_ATTR_STAT + st;
                if (stat_id_is_counter(st) && n < max)
                        out[n++] = HCTX_ATTR_RATE + st;
        }
        return n;
}

/* The file name of hctx/<n>/ entry arg2: a static string ("<stat>_rate" from a table made once). */
static const char *hctx_entry_name(int arg2) {
        static char rate_names[_STAT_MAX][64];
        if (arg2 >= HCTX_ATTR_RATE) {
                StatId st = arg2 - HCTX_ATTR_RATE;
                if (st < 0 || st >= _STAT_MAX)
                        return NULL;
                if (!rate_names[st][0])
                        snprintf(rate_names[st], sizeof(rate_names[st]), "%s_rate", stat_id_to_string(st));
                return rate_names[st];
        }
        if (arg2 >= HCTX_ATTR_STAT)
                return stat_id_to_string(arg2 - HCTX_ATTR_STAT);
        return hctx_attr_to_string(arg2);
}

/* hctx/<n>/<name>: the existing node, or a new one (LOOKUP creates, FORGET frees). NULL: no such file or ENOMEM. */
static Node *hctx_attr_node(FuseFs *fs, Node *h, const char *name) {
        Node *c = node_child(h, name);
        if (c)
                return c;
        int e[HCTX_INO_SPAN];
        size_t n = hctx_entries(e, ELEMENTSOF(e));
        for (size_t i = 0; i < n; i++) {
                const char *entry = hctx_entry_name(e[i]);
                if (streq_ptr(entry, name))
                        return node_new_static(fs, h, NODE_HCTX_ATTR, entry, h->device, h->arg, e[i]);
        }
        return NULL;
}

/* True when the hctx/ children match the device's current hctx numbers. */
static bool hctx_layout_matches(const Node *hctx, const Device *d) {
        size_t i = 0;
        for (const Node *c = hctx->children; c; c = c->next, i++) {
                char name[16];
                if (i >= d->facts->n_hctx)
                        return false;
                snprintf(name, sizeof(name), "%u", d->facts->hctx[i].index);
                if (!streq(c->name, name))
                        return false;
        }
        return i == d->facts->n_hctx;
}

/* ---- iosched/: the running elevator's tunables (names change with the elevator) ---------------- */

/*
 * Make devices/<disk>/iosched/ list exactly the files of the disk's queue/iosched/: a file
 * that stays keeps its node (and inode number), one the new elevator lacks goes, a new one
 * comes. Returns 1 when the listing changed, 0, or -ENOMEM.
 */
static int iosched_sync(FuseFs *fs, Node *dir, const Device *d) {
        int changed = 0;
        for (Node *c = dir->children, *next; c; c = next) {
                next = c->next;
                if (!disk_facts_iosched(d->facts, c->name)) {
                        node_free(fs, c);
                        changed = 1;
                }
        }
        for (size_t i = 0; i < d->facts->n_iosched; i++) {
                const char *name = d->facts->iosched[i].name;
                if (node_child(dir, name))
                        continue;
                if (!node_new(fs, dir, NODE_IOSCHED_ATTR, name, d->name, 0, 0))
                        return -ENOMEM;
                changed = 1;
        }
        return changed;
}

/* devices/<disk>/network/: the disk's network facts and alignment */
static int build_network(FuseFs *fs, Node *dev, const Device *d) {
        Node *dir = node_new_static(fs, dev, NODE_NETWORK, FUSE_FS_NETWORK, d->name, 0, 0);
        if (!dir)
                return -ENOMEM;
        for (NetFact f = 0; f < _NET_FACT_MAX; f++)
                if (!node_new_static(fs, dir, NODE_NETWORK_ATTR, net_fact_to_string(f), d->name, f, 0))
                        return -ENOMEM;
        return node_new_static(fs, dir, NODE_NETWORK_ATTR, FUSE_FS_ALIGNMENT, d->name, NET_FILE_ALIGNMENT, 0) &&
               node_new_static(fs, dir, NODE_NETWORK_ATTR, FUSE_FS_NET_MAPS, d->name, NET_FILE_MAPS, 0) &&
               node_new_static(fs, dir, NODE_NETWORK_ATTR, FUSE_FS_RECOMMENDED, d->name, NET_FILE_RECOMMENDED, 0) ? 0 : -ENOMEM;
}

/* plan/<knob>, applied/<knob>, owner/<knob> or policy/<knob>: one file of type per knob. */
static int build_knob_files(FuseFs *fs, Node *dir, NodeType type) {
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (!node_new_static(fs, dir, type, knob_to_string(k), dir->device, k, 0))
                        return -ENOMEM;
        return 0;
}

/* policy/iosched/<elevator>/<tunable> for every tunable blkmqd knows. */
static int build_policy_iosched(FuseFs *fs, Node *dir) {
        Node *elev = NULL;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                if ((!elev || !streq(elev->name, i->elevator)) &&
                    !(elev = node_new_static(fs, dir, NODE_POLICY_IOSCHED_ELEVATOR, i->elevator, dir->device, 0, 0)))
                        return -ENOMEM;
                if (!node_new_static(fs, elev, NODE_POLICY_IOSCHED_TUNABLE, i->name, dir->device, t, 0))
                        return -ENOMEM;
        }
        return 0;
}

/* The children of dir, a directory of a disk made empty (build_device()). d: the disk, for
 * the directories whose files follow its facts (hctx/, iosched/). Returns 0 or -ENOMEM. */
static int build_dir(FuseFs *fs, Node *dir, const Device *d) {
        switch (dir->type) {
        case NODE_FACTS:
                for (Fact f = 0; f < _FACT_MAX; f++)
                        if (!node_new_static(fs, dir, NODE_FACT, fact_to_string(f), dir->device, f, 0))
                                return -ENOMEM;
                return 0;
        case NODE_PLAN:
                return build_knob_files(fs, dir, NODE_PLAN_KNOB) < 0 ||
                       !node_new_static(fs, dir, NODE_PLAN_IOSCHED, FUSE_FS_IOSCHED, dir->device, 0, 0) ? -ENOMEM : 0;
        case NODE_APPLIED:
                return build_knob_files(fs, dir, NODE_APPLIED_KNOB) < 0 ||
                       !node_new_static(fs, dir, NODE_APPLIED_IOSCHED, FUSE_FS_IOSCHED, dir->device, 0, 0) ? -ENOMEM : 0;
        case NODE_OWNER:
                return build_knob_files(fs, dir, NODE_OWNER_KNOB);
        case NODE_POLICY:
                return build_knob_files(fs, dir, NODE_POLICY_KNOB) < 0 ||
                       !node_new_static(fs, dir, NODE_POLICY_KNOB, FUSE_FS_ENABLED, dir->device, POLICY_FILE_ENABLED, 0) ||
                       !node_new_static(fs, dir, NODE_POLICY_IOSCHED, FUSE_FS_IOSCHED, dir->device, 0, 0) ? -ENOMEM : 0;
        case NODE_POLICY_IOSCHED:
                return build_policy_iosched(fs, dir);
        case NODE_IOSCHED:
                return iosched_sync(fs, dir, d) < 0 ? -ENOMEM : 0;
        case NODE_HCTX:
                return build_hctx(fs, dir, d);
        default:
                return 0;
        }
}

/*
 * A disk's directories get their children on first use (a LOOKUP in them or a READDIR):
 * a disk has some 90 files and directories below facts/, plan/, applied/, owner/, policy/ and
 * iosched/ and some 2,000 below hctx/, thousands of disks would spend most of the daemon's
 * memory on nodes nobody looks at, and a disk's invalidation walks only the nodes made. Once
 * made, they live as long as the disk's node (hctx/<n>/<attr> files only while the kernel
 * holds them: hctx_attr_node(), op_forget()); hctx/ is emptied again when the disk's hctx
 * layout changes, iosched/ follows the elevator (fuse_fs_device_updated()). Returns 0, or
 * -ENOMEM with dir left empty.
 */
static int populate(FuseFs *fs, Node *dir) {
        const Device *d = NULL;

        if (dir->populated || !dir->device || dir->type == NODE_DEVICE || !node_is_dir(dir))
                return 0;
        if (dir->type == NODE_HCTX || dir->type == NODE_IOSCHED) {
                d = registry_get(fs->ctx.registry, dir->device);
                if (!d || !d->facts)
                        return 0;       /* a disk being removed: nothing below */
        }
        int r = build_dir(fs, dir, d);
        if (r < 0) {
                while (dir->children)
                        node_free(fs, dir->children);
                return r;
        }
        dir->populated = true;
        return 0;
}

/* devices/<disk>/ and its files; its directories are filled by populate(). */
static int build_device(FuseFs *fs, const Device *d) {
        Node *dev = node_new(fs, fs->devices, NODE_DEVICE, d->name, d->name, 0, 0);
        if (!dev)
                return -ENOMEM;

        static const struct {
                NodeType type;
                const char *name;
        } entries[] = {
                { NODE_CLASS,        FUSE_FS_CLASS },
                { NODE_EXPLAIN,      FUSE_FS_EXPLAIN },
                { NODE_STAT,         FUSE_FS_STAT },
                { NODE_COMPLETIONS,  FUSE_FS_COMPLETIONS },
                { NODE_STATS_SOURCE, FUSE_FS_STATS_SOURCE },
                { NODE_FACTS,        FUSE_FS_FACTS },
                { NODE_PLAN,         FUSE_FS_PLAN },
                { NODE_APPLIED,      FUSE_FS_APPLIED },
                { NODE_OWNER,        FUSE_FS_OWNER },
                { NODE_POLICY,       FUSE_FS_POLICY },
                { NODE_IOSCHED,      FUSE_FS_IOSCHED },
        };
        for (size_t i = 0; i < ELEMENTSOF(entries); i++)
                if (!node_new_static(fs, dev, entries[i].type, entries[i].name, d->name, 0, 0))
                        return -ENOMEM;
        if (d->facts->net && build_network(fs, dev, d) < 0)
                return -ENOMEM;
        return node_new_static(fs, dev, NODE_HCTX, FUSE_FS_HCTX, d->name, 0, 0) ? 0 : -ENOMEM;
}

int fuse_fs_device_updated(FuseFs *fs, const Device *d) {
        int r;

        reap_dying(fs, d->name);        /* the same name again: the old one goes now */
        Node *dev = device_node(fs, d->name);

        if (!d->facts)
                return 0;
        if (!dev) {
                r = build_device(fs, d);
                if (r < 0)
                        fuse_fs_device_removed(fs, d->name);
                return r;
        }

        Node *iosched = node_child(dev, FUSE_FS_IOSCHED);
        if (iosched && iosched->populated) {
                r = iosched_sync(fs, iosched, d);
                if (r < 0)
                        return r;
                if (r > 0)
                        notify_inval(fs, iosched->ino, NULL);
        }

        /* a disk that became (or stopped being) network-attached on a re-gather */
        Node *net = node_child(dev, FUSE_FS_NETWORK);
        if (!net != !d->facts->net) {
                if (net) {
                        node_free(fs, net);
                        notify_inval(fs, dev->ino, FUSE_FS_NETWORK);
                } else if (build_network(fs, dev, d) < 0)
                        return -ENOMEM;
        }

        Node *hctx = node_child(dev, FUSE_FS_HCTX);
        if (hctx && hctx->populated && !hctx_layout_matches(hctx, d)) {
                while (hctx->children)
                        node_free(fs, hctx->children);
                hctx->populated = false;        /* filled again on next use */
                notify_inval(fs, hctx->ino, NULL);
        }
        fuse_fs_invalidate_disk(fs, d->name);   /* evaluated again: class, explain, facts/, plan/ ... */
        return 0;
}

static void queue_inval_known(FuseFs *fs, Node *n) {
        if (n->nlookup > 0) {
                n->kc_valid = n->ka_valid = false;
                notify_inval(fs, n->ino, NULL);
        }
        if (n->type == NODE_HCTX_N && n->arg2) {
                /* listed with attributes: the kernel may hold statistics files of it that have
                 * no node here (readdir_common()); their cached attributes go too */
                int e[HCTX_INO_SPAN];
                size_t k = hctx_entries(e, ELEMENTSOF(e));
                for (size_t i = 0; i < k; i++)
                        if (hctx_entry_is_live(e[i]) && !node_get(fs, n->ino + 1 + e[i]))
                                notify_inval(fs, n->ino + 1 + e[i], NULL);
        }
        for (Node *c = n->children; c; c = c->next)
                queue_inval_known(fs, c);
}

static void dying_free(FuseFs *fs, Dying **p) {
        Dying *x = *p;
        char name[256];
        snprintf(name, sizeof(name), "%s", x->dev->name);
        *p = x->next;
        node_free(fs, x->dev);
        free(x);
        notify_inval(fs, fs->devices->ino, name);
}

/* Free the removed disks whose invalidations are all sent (force: name's now, whatever). */
static void reap_dying(FuseFs *fs, const char *force) {
        if (!fs->dying)
                return;
        pthread_mutex_lock(&fs->notify_lock);
        uint64_t done = fs->notify_done;
        pthread_mutex_unlock(&fs->notify_lock);
        for (Dying **p = &fs->dying; *p;)
                if ((*p)->ticket <= done || streq_ptr(force, (*p)->dev->name))
                        dying_free(fs, p);
                else
                        p = &(*p)->next;
}

void fuse_fs_device_removed(FuseFs *fs, const char *name) {
        assert(fs);
        Node *dev = device_node(fs, name);
        if (!dev)
                return;
        for (Dying *x = fs->dying; x; x = x->next)
                if (x->dev == dev)
                        return;         /* removed already, its invalidations under way */
        Dying *x = fs->mounted ? calloc(1, sizeof(Dying)) : NULL;
        if (!x) {
                node_free(fs, dev);
                notify_inval(fs, fs->devices->ino, name);
                return;
        }
        queue_inval_known(fs, dev);
        pthread_mutex_lock(&fs->notify_lock);
        x->ticket = fs->notify_queued;
        pthread_mutex_unlock(&fs->notify_lock);
        x->dev = dev;
        x->next = fs->dying;
        fs->dying = x;
        reap_dying(fs, NULL);           /* nothing the kernel knew: gone at once */
}

/* True when modules/ lists exactly the module parameters in ctx->modules. */
static bool modules_layout_matches(const FuseFs *fs) {
        const Modules *m = fs->ctx.modules;
        size_t seen = 0;
        for (const Node *mod = fs->modules->children; mod; mod = mod->next)
                for (const Node *p = mod->children; p; p = p->next) {
                        if (!modules_get(m, mod->name, p->name))
                                return false;
                        seen++;
                }
        return seen == m->n_params;
}

int fuse_fs_modules_updated(FuseFs *fs) {
        const Modules *m = fs->ctx.modules;

        if (!m)
                return 0;
        if (modules_layout_matches(fs)) {
                if (fs->mounted)
                        check_cached_tree(fs, fs->modules);
                return 0;
        }
        while (fs->modules->children)
                node_free(fs, fs->modules->children);
        notify_inval(fs, fs->modules->ino, NULL);

        for (size_t i = 0; i < m->n_params; i++) {
                const ModuleParam *p = &m->params[i];
                Node *mod = node_child(fs->modules, p->module);
                if (!mod && !(mod = node_new(fs, fs->modules, NODE_MODULE, p->module, NULL, 0, 0)))
                        return -ENOMEM;
                Node *param = node_new(fs, mod, NODE_MODULE_PARAM, p->param, NULL, 0, 0);
                if (!param)
                        return -ENOMEM;
                for (ModuleAttr a = 0; a < _MODULE_ATTR_MAX; a++)
                        if (!node_new(fs, param, NODE_MODULE_ATTR, module_attr_to_string(a), NULL, a, 0))
                                return -ENOMEM;
        }
        return 0;
}

static int add_host_attrs(FuseFs *fs, Node *h) {
        for (HostAttr a = 0; a < _HOST_ATTR_MAX; a++)
                if (!node_new_static(fs, h, NODE_HOST_ATTR, host_attr_to_string(a), NULL, a, 0))
                        return -ENOMEM;
        return 0;
}

static int add_nic_attrs(FuseFs *fs, Node *c) {
        for (NicFact a = 0; a < _NIC_FACT_MAX; a++)
                if (!node_new_static(fs, c, NODE_NIC_ATTR, nic_fact_to_string(a), NULL, a, 0))
                        return -ENOMEM;
        if (!node_new_static(fs, c, NODE_NIC_ATTR, FUSE_FS_NIC_DISKS, NULL, _NIC_FACT_MAX, 0))
                return -ENOMEM;
        return 0;
}

/*
 * dir (hosts/, nics/) gets one child per name name_of() gives a disk of the registry: a child
 * no disk names any more goes (and the kernel forgets its name), a new name gets a child of
 * type with the files add_attrs() makes. Returns 0 or -ENOMEM.
 */
static int sync_disk_named_children(FuseFs *fs, Node *dir, NodeType type, disk_child_name_t name_of,
                                    int (*add_attrs)(FuseFs *fs, Node *n)) {
        const Registry *reg = fs->ctx.registry;

        for (Node *c = dir->children, *next; c; c = next) {
                const DiskFacts *first;
                next = c->next;
                if (disks_named(reg, name_of, c->name, NULL, &first) == 0) {
                        char name[64];
                        snprintf(name, sizeof(name), "%s", c->name);
                        node_free(fs, c);
                        notify_inval(fs, dir->ino, name);
                }
        }
        for (size_t i = 0; i < reg->n_devices; i++) {
                const char *name = name_of(reg->devices[i]->facts);
                if (!name || node_child(dir, name))
                        continue;
                Node *c = node_new(fs, dir, type, name, NULL, 0, 0);
                if (!c)
                        return -ENOMEM;
                int r = add_attrs(fs, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

void fuse_fs_not_listed_updated(FuseFs *fs) {
        if (fs && fs->mounted)
                check_cached(fs, fs->not_listed);
}

int fuse_fs_hosts_updated(FuseFs *fs) {
        assert(fs);
        /* nics/<if>/: every NIC below a network disk's route */
        int r = sync_disk_named_children(fs, fs->nics, NODE_NIC, disk_nic, add_nic_attrs);
        if (r < 0)
                return r;

        if (fs->mounted)
                check_cached_tree(fs, fs->hosts);       /* luns, disks ... of the hosts that stay */
        return sync_disk_named_children(fs, fs->hosts, NODE_HOST, disk_scsi_host, add_host_attrs);
}
