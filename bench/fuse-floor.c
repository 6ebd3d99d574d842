/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuse-floor: the cheapest FUSE file system that serves a directory tree, to measure what the
 * FUSE round trips alone cost on a machine (P3 in docs/BENCHMARKS.md).
 *
 *   fuse-floor [--direct-io] [--timeout SECONDS] SOURCE MOUNTPOINT
 *
 * A read-only, single-threaded libfuse low-level pass-through of SOURCE (fuse_session_loop(),
 * as blkmqd answers on one thread): LOOKUP/GETATTR are lstat(), READDIRPLUS lists a directory
 * read once at OPENDIR with every entry's attributes, READLINK is readlink(), OPEN opens the file (no FLUSH), READ is a
 * pread(), RELEASE closes it. Nothing is rendered or computed: whatever a walk of this mount
 * costs beyond a walk of SOURCE itself is the FUSE protocol on this kernel and machine.
 *
 *   --direct-io        every file is opened FOPEN_DIRECT_IO, as blkmqd's live statistics files
 *                      are (a `cat` then costs a second READ to find EOF); default: the page
 *                      cache (FOPEN_KEEP_CACHE), as blkmqd's static files
 *   --timeout SECONDS  entry and attribute timeout (default 1, blkmqd's for names)
 *
 * Runs in the foreground until unmounted or signalled. Inode numbers are SOURCE's (one file
 * system: a tmpfs tree). Not a product: no writes, no xattrs, no locking, paths are rebuilt
 * from the parent's path at each LOOKUP.
 */
#define FUSE_USE_VERSION 35
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Node {
        fuse_ino_t ino;         /* the FUSE inode number: SOURCE's st_ino, FUSE_ROOT_ID for the top */
        char *path;             /* absolute path in SOURCE */
        uint64_t nlookup;
} Node;

typedef struct Dir {
        char **names;
        size_t n;
} Dir;

static void *nodes;             /* tsearch tree of Node*, by ino */
static double timeout = 1.0;
static int direct_io;

static int node_cmp(const void *a, const void *b) {
        const Node *x = a, *y = b;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static Node *node_get(fuse_ino_t ino) {
        Node key = { .ino = ino };
        Node **n = tfind(&key, &nodes, node_cmp);
        return n ? *n : NULL;
}

/* The node for path with attributes st: found by ino, or made; one more lookup counted. */
static Node *node_ref(const char *path, const struct stat *st) {
        Node key = { .ino = st->st_ino }, *n;
        Node **found = tfind(&key, &nodes, node_cmp);
        if (found)
                n = *found;
        else {
                n = calloc(1, sizeof(Node));
                if (n)
                        n->ino = st->st_ino;
                if (!n || !(n->path = strdup(path)) || !tsearch(n, &nodes, node_cmp)) {
                        if (n)
                                free(n->path);
                        free(n);
                        return NULL;
                }
        }
        n->nlookup++;
        return n;
}

static void child_path(char *buf, size_t size, const Node *p, const char *name) {
        snprintf(buf, size, "%s/%s", p->path, name);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        Node *p = node_get(parent), *n;
        char path[PATH_MAX];
        struct fuse_entry_param e = { .attr_timeout = timeout, .entry_timeout = timeout };

        if (!p) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        child_path(path, sizeof(path), p, name);
        if (lstat(path, &e.attr) < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        if (!(n = node_ref(path, &e.attr))) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        e.ino = n->ino;
        fuse_reply_entry(req, &e);
}

static void forget_one(fuse_ino_t ino, uint64_t nlookup) {
        Node *n = node_get(ino);
        if (!n || ino == FUSE_ROOT_ID)
                return;
        n->nlookup -= nlookup < n->nlookup ? nlookup : n->nlookup;
        if (n->nlookup == 0) {
                tdelete(n, &nodes, node_cmp);
                free(n->path);
                free(n);
        }
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        forget_one(ino, nlookup);
        fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f) {
        for (size_t i = 0; i < count; i++)
                forget_one(f[i].ino, f[i].nlookup);
        fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        Node *n = node_get(ino);
        struct stat st;
        if (!n)
                fuse_reply_err(req, ENOENT);
        else if (lstat(n->path, &st) < 0)
                fuse_reply_err(req, errno);
        else {
                st.st_ino = ino;
                fuse_reply_attr(req, &st, timeout);
        }
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
        Node *n = node_get(ino);
        char target[PATH_MAX];
        ssize_t k = n ? readlink(n->path, target, sizeof(target) - 1) : -1;
        if (k < 0) {
                fuse_reply_err(req, n ? errno : ENOENT);
                return;
        }
        target[k] = 0;
        fuse_reply_readlink(req, target);       /* relative links resolve inside the mount */
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        Node *n = node_get(ino);
        DIR *d = n ? opendir(n->path) : NULL;
        Dir *dir = calloc(1, sizeof(Dir));
        struct dirent *de;

        if (!d || !dir) {
                fuse_reply_err(req, !n ? ENOENT : !d ? errno : ENOMEM);
                if (d)
                        closedir(d);
                free(dir);
                return;
        }
        while ((de = readdir(d))) {
                char **names = realloc(dir->names, (dir->n + 1) * sizeof(char *));
                if (!names || !(names[dir->n] = strdup(de->d_name))) {
                        dir->names = names ?: dir->names;
                        break;
                }
                dir->names = names;
                dir->n++;
        }
        closedir(d);
        fi->fh = (uintptr_t) dir;
        fuse_reply_open(req, fi);
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
                           int plus) {
        Node *p = node_get(ino);
        Dir *dir = (Dir *) (uintptr_t) fi->fh;
        char *buf = malloc(size), path[PATH_MAX];
        size_t used = 0;

        if (!p || !buf) {
                fuse_reply_err(req, !p ? ENOENT : ENOMEM);
                free(buf);
                return;
        }
        for (size_t i = (size_t) off; i < dir->n; i++) {
                const char *name = dir->names[i];
                struct fuse_entry_param e = { .attr_timeout = timeout, .entry_timeout = timeout };
                size_t k;
                int dot = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;

                child_path(path, sizeof(path), p, name);
                if (lstat(path, &e.attr) < 0)
                        continue;
                if (!plus) {
                        k = fuse_add_direntry(req, buf + used, size - used, name, &e.attr, (off_t) i + 1);
                        if (k > size - used)
                                break;
                        used += k;
                        continue;
                }
                /* "." and ".." go without a node: the kernel does not look them up */
                e.ino = dot ? 0 : e.attr.st_ino;
                k = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, (off_t) i + 1);
                if (k > size - used)
                        break;
                if (!dot && !node_ref(path, &e.attr))
                        break;
                used += k;
        }
        fuse_reply_buf(req, buf, used);
        free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        readdir_common(req, ino, size, off, fi, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        readdir_common(req, ino, size, off, fi, 1);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        Dir *dir = (Dir *) (uintptr_t) fi->fh;
        for (size_t i = 0; i < dir->n; i++)
                free(dir->names[i]);
        free(dir->names);
        free(dir);
        fuse_reply_err(req, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        Node *n = node_get(ino);
        int fd;
        if (!n) {
                fuse_reply_err(req, ENOENT);
                return;
        }
        if ((fi->flags & O_ACCMODE) != O_RDONLY) {
                fuse_reply_err(req, EROFS);
                return;
        }
        fd = open(n->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        fi->fh = (uint64_t) fd;
        fi->noflush = 1;
        fi->direct_io = direct_io;
        fi->keep_cache = !direct_io;
        fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        char *buf = malloc(size ?: 1);
        ssize_t k = buf ? pread((int) fi->fh, buf, size, off) : -1;
        if (k < 0)
                fuse_reply_err(req, buf ? errno : ENOMEM);
        else
                fuse_reply_buf(req, buf, (size_t) k);
        free(buf);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        close((int) fi->fh);
        fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .readlink = op_readlink,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .releasedir = op_releasedir,
        .open = op_open,
        .read = op_read,
        .release = op_release,
};

int main(int argc, char **argv) {
        int a = 1;
        for (; a < argc && argv[a][0] == '-'; a++) {
                if (strcmp(argv[a], "--direct-io") == 0)
                        direct_io = 1;
                else if (strcmp(argv[a], "--timeout") == 0 && a + 1 < argc)
                        timeout = strtod(argv[++a], NULL);
                else
                        break;
        }
        if (argc - a != 2) {
                fprintf(stderr, "usage: %s [--direct-io] [--timeout SECONDS] SOURCE MOUNTPOINT\n", argv[0]);
                return 2;
        }

        char *src = realpath(argv[a], NULL);
        struct stat st;
        if (!src || stat(src, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "%s: %s: not a directory\n", argv[0], argv[a]);
                return 1;
        }
        Node *root = calloc(1, sizeof(Node));
        if (!root)
                return 1;
        *root = (Node) { .ino = FUSE_ROOT_ID, .path = src, .nlookup = 1 };
        tsearch(root, &nodes, node_cmp);

        char *fargv[] = { argv[0], "-o", "fsname=fuse-floor,default_permissions", NULL };
        struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
        struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
        if (!se)
                return 1;
        int r = 1;
        if (fuse_set_signal_handlers(se) == 0) {
                if (fuse_session_mount(se, argv[a + 1]) == 0) {
                        /* < 0: an error; > 0: the signal that ended it (libfuse's handler), an exit */
                        r = fuse_session_loop(se) < 0;
                        fuse_session_unmount(se);
                }
                fuse_remove_signal_handlers(se);
        }
        fuse_session_destroy(se);
        return r;
}
