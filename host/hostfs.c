/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "hostfs.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

#define HOSTFS_READ_MAX (1024 * 1024)
#define HOSTFS_MODULES_READ_MAX (64 * 1024 * 1024)
/*
 * Files hostfs_read_kept() keeps open at most. Each costs an fd and, for seq_file, the
 * kernel's buffer of a page or more; systemd starts services with a soft RLIMIT_NOFILE of
 * 1024, and the daemon's own descriptors (FUSE, netlink, BPF maps, dirfds) stay well below
 * the rest.
 */
#define HOSTFS_KEPT_MAX 512
#define HOSTFS_WRITES_MAX 4096
#define HOSTFS_LINKS_MAX 40
#define DEBUGFS_MAGIC 0x64626720

static const char * const kind_dir[_HOSTFS_KIND_MAX] = {
        [HOSTFS_SYSFS]      = "sys",
        [HOSTFS_PROCFS]     = "proc",
        [HOSTFS_DEBUGFS]    = "sys/kernel/debug",
        [HOSTFS_RUN]        = "run",
        [HOSTFS_MODPROBE_D] = "etc/modprobe.d",
        [HOSTFS_MODULES]    = "lib/modules",
        [HOSTFS_ETC]        = "etc",
        [HOSTFS_USR_LIB]    = "usr/lib",
        [HOSTFS_LIB]        = "lib",
        [HOSTFS_USR_LOCAL_LIB] = "usr/local/lib",
        [HOSTFS_BOOT]       = "boot",
        [HOSTFS_NETLINK]    = "netlink",
};

static const char * const kind_name[_HOSTFS_KIND_MAX] = {
        [HOSTFS_SYSFS]      = "sysfs",
        [HOSTFS_PROCFS]     = "procfs",
        [HOSTFS_DEBUGFS]    = "debugfs",
        [HOSTFS_RUN]        = "run",
        [HOSTFS_MODPROBE_D] = "modprobe.d",
        [HOSTFS_MODULES]    = "modules",
        [HOSTFS_ETC]        = "etc",
        [HOSTFS_USR_LIB]    = "usr-lib",
        [HOSTFS_LIB]        = "lib",
        [HOSTFS_USR_LOCAL_LIB] = "usr-local-lib",
        [HOSTFS_BOOT]       = "boot",
        [HOSTFS_NETLINK]    = "netlink",
};

struct HostFs {
        char *root;
        bool live;
        int root_fd;
        int fd[_HOSTFS_KIND_MAX];
        char **writes;
        size_t n_writes;
        uint64_t write_count[_HOSTFS_KIND_MAX];
        void *kept;                     /* tsearch tree of KeptFile (hostfs_read_kept()) */
        size_t n_kept;
        uint64_t kept_clock;
        struct KeptFile *kept_slot[HOSTFS_KEPT_MAX];    /* each kept file by its slot (HostFsKept) */
        uint32_t kept_generation[HOSTFS_KEPT_MAX];      /* bumped when the slot's file is closed */
        char *scratch;                  /* hostfs_read_kept_at()'s buffer, reused */
        size_t scratch_size;
        uint64_t read_count[_HOSTFS_KIND_MAX];
        hostfs_write_hook_t write_hook;
        void *write_hook_userdata;
        char *hold;                     /* $BLKMQD_TEST_HOLD_WRITE as given */
        HostFsKind hold_kind;
        char *hold_glob;
        uint64_t hold_usec;
        uint64_t debugfs_checked_usec;  /* debugfs availability, re-checked at most once a second */
        const char *debugfs_reason;
        unsigned event_depth;           /* hostfs_event_begin() minus hostfs_event_end() */
        pthread_t event_thread;         /* the thread of the event: only its reads are kept */
        struct EventRead *event_reads;  /* sysfs files read in the event, their content */
        size_t n_event_reads;
};

typedef struct EventRead {
        char *path;
        char *text;
} EventRead;

static void event_reads_clear(HostFs *h) {
        for (size_t i = 0; i < h->n_event_reads; i++) {
                free(h->event_reads[i].path);
                free(h->event_reads[i].text);
        }
        free(h->event_reads);
        h->event_reads = NULL;
        h->n_event_reads = 0;
}

void hostfs_event_begin(HostFs *h) {
        assert(h);
        if (h->event_depth++ == 0)
                h->event_thread = pthread_self();
}

void hostfs_event_end(HostFs *h) {
        if (h->event_depth > 0 && --h->event_depth == 0)
                event_reads_clear(h);
}

/* The event's reads apply to this call: a sysfs read on the thread of an open event. */
static bool event_reads_apply(const HostFs *h, HostFsKind kind) {
        return h->event_depth > 0 && kind == HOSTFS_SYSFS && pthread_equal(h->event_thread, pthread_self());
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void hostfs_set_write_hook(HostFs *h, hostfs_write_hook_t hook, void *userdata) {
        assert(h);
        h->write_hook = hook;
        h->write_hook_userdata = userdata;
}

/* "<kind>:<glob>=<seconds>"; anything else leaves no hold (and hostfs_test_hold() NULL). */
static void parse_test_hold(HostFs *h, const char *spec) {
        const char *colon, *eq;
        char kind[16];
        unsigned sec;

        if (isempty(spec) || !(colon = strchr(spec, ':')) || !(eq = strrchr(colon, '=')) ||
            (size_t) (colon - spec) >= sizeof(kind) || sscanf(eq + 1, "%u", &sec) != 1)
                return;
        snprintf(kind, sizeof(kind), "%.*s", (int) (colon - spec), spec);
        for (HostFsKind k = 0; k < _HOSTFS_KIND_MAX; k++)
                if (streq(kind, kind_name[k]) && k != HOSTFS_DEBUGFS) {
                        h->hold_kind = k;
                        h->hold_glob = strndup(colon + 1, eq - colon - 1);
                        h->hold = strdup(spec);
                        h->hold_usec = (uint64_t) sec * 1000000;
                }
}

const char *hostfs_test_hold(const HostFs *h) {
        assert(h);
        return h->hold_glob ? h->hold : NULL;
}

int hostfs_new(const char *root, HostFs **ret) {
        assert(ret);
        if (!root)
                root = getenv("BLKMQD_ROOT");
        if (isempty(root))
                root = "/";

        HostFs *h = calloc(1, sizeof(HostFs));
        if (!h)
                return -ENOMEM;
        h->root_fd = -EBADF;
        for (size_t i = 0; i < _HOSTFS_KIND_MAX; i++)
                h->fd[i] = -EBADF;

        h->root = strdup(root);
        if (!h->root) {
                hostfs_free(h);
                return -ENOMEM;
        }

        h->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (h->root_fd < 0) {
                int r = negative_errno();
                hostfs_free(h);
                return r;
        }

        struct stat a, b;
        h->live = stat("/", &a) == 0 && fstat(h->root_fd, &b) == 0 &&
                  a.st_dev == b.st_dev && a.st_ino == b.st_ino;

        for (size_t i = 0; i < _HOSTFS_KIND_MAX; i++)
                h->fd[i] = openat(h->root_fd, kind_dir[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* merged-/usr systems without the /lib symlink keep the module tree in /usr/lib/modules (kmod 34) */
        if (h->fd[HOSTFS_MODULES] < 0)
                h->fd[HOSTFS_MODULES] = openat(h->root_fd, "usr/lib/modules", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        parse_test_hold(h, getenv("BLKMQD_TEST_HOLD_WRITE"));
        *ret = h;
        return 0;
}

HostFs *hostfs_free(HostFs *h) {
        if (!h)
                return NULL;
        for (HostFsKind k = 0; k < _HOSTFS_KIND_MAX; k++)
                hostfs_close_kept(h, k, "");
        for (size_t i = 0; i < _HOSTFS_KIND_MAX; i++)
                closep(&h->fd[i]);
        closep(&h->root_fd);
        free(h->scratch);
        event_reads_clear(h);
        strv_free(h->writes);
        free(h->hold);
        free(h->hold_glob);
        free(h->root);
        free(h);
        return NULL;
}

const char *hostfs_root(const HostFs *h) {
        assert(h);
        return h->root;
}

bool hostfs_is_live(const HostFs *h) {
        assert(h);
        return h->live;
}

bool hostfs_debugfs_available(HostFs *h, const char **ret_reason) {
        uint64_t now = now_usec();

        /* debugfs can be mounted (or unmounted) while blkmqd runs: look again after a second,
         * not at every one of the many reads a metrics scrape makes */
        if (!h->debugfs_checked_usec || now - h->debugfs_checked_usec >= 1000000) {
                const char *reason = NULL;
                if (h->debugfs_reason || h->fd[HOSTFS_DEBUGFS] < 0) {
                        /* mounted since we opened the directory? the old fd is the mount point's
                         * underlying directory, never the new mount */
                        closep(&h->fd[HOSTFS_DEBUGFS]);
                        h->fd[HOSTFS_DEBUGFS] = openat(h->root_fd, kind_dir[HOSTFS_DEBUGFS], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                }
                if (h->fd[HOSTFS_DEBUGFS] < 0)
                        reason = "no sys/kernel/debug directory";
                else if (h->live) {
                        struct statfs sfs;
                        if (fstatfs(h->fd[HOSTFS_DEBUGFS], &sfs) < 0 || sfs.f_type != DEBUGFS_MAGIC)
                                reason = "debugfs not mounted at /sys/kernel/debug";
                }
                if (!reason && faccessat(h->fd[HOSTFS_DEBUGFS], "block", F_OK, 0) < 0)
                        reason = "debugfs has no block/ directory";
                h->debugfs_reason = reason;
                h->debugfs_checked_usec = now;
        }
        if (ret_reason)
                *ret_reason = h->debugfs_reason;
        return !h->debugfs_reason;
}

/*
 * A configuration directory (kind_config_late()) absent when hostfs_new() looked: opened when it
 * appears (the admin, a package or another tool may make it later). For HOSTFS_MODPROBE_D only,
 * create makes it (0755, /etc too when absent) for the first write of blkmqd's file. Called on
 * the loop (reads) and on a writer worker (the write): the fd is published once, atomically; the
 * loser of a race closes its own. Returns the fd or -errno (-ENOENT while absent).
 */
static int kind_fd_late(HostFs *h, HostFsKind kind, bool create) {
        int fd = __atomic_load_n(&h->fd[kind], __ATOMIC_ACQUIRE);
        if (fd >= 0)
                return fd;
        fd = openat(h->root_fd, kind_dir[kind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create && kind == HOSTFS_MODPROBE_D) {
                /* "etc", then "etc/modprobe.d": 0755 whatever the umask (root:root, as the package's /etc) */
                static const char * const dirs[] = { "etc", "etc/modprobe.d" };
                for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                        if (mkdirat(h->root_fd, dirs[i], 0755) < 0) {
                                if (errno != EEXIST)
                                        return negative_errno();
                        } else if (fchmodat(h->root_fd, dirs[i], 0755, 0) < 0)
                                return negative_errno();
                }
                fd = openat(h->root_fd, kind_dir[kind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        if (fd < 0)
                return negative_errno();
        int expected = __atomic_load_n(&h->fd[kind], __ATOMIC_ACQUIRE);
        while (expected < 0)    /* -1 from hostfs_new()'s openat(), -EBADF before it */
                if (__atomic_compare_exchange_n(&h->fd[kind], &expected, fd, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE))
                        return fd;
        close(fd);              /* another thread published its own first */
        return expected;
}

/* The kinds that are other tools' (and blkmqd's own modprobe.d) configuration: any of them may
 * be made after blkmqd started, so an absent one is looked for again at each use. */
static bool kind_config_late(HostFsKind kind) {
        return kind == HOSTFS_MODPROBE_D || kind == HOSTFS_RUN || kind == HOSTFS_ETC ||
               kind == HOSTFS_USR_LIB || kind == HOSTFS_LIB || kind == HOSTFS_USR_LOCAL_LIB;
}

static int kind_fd(HostFs *h, HostFsKind kind) {
        if (kind < 0 || kind >= _HOSTFS_KIND_MAX)
                return -EINVAL;
        if (kind_config_late(kind))
                return kind_fd_late(h, kind, false);
        if (h->fd[kind] < 0)
                return kind == HOSTFS_DEBUGFS ? -ENODEV : -ENOENT;
        if (kind == HOSTFS_DEBUGFS && !hostfs_debugfs_available(h, NULL))
                return -ENODEV;
        return h->fd[kind];
}

/* The dirfd of kind for a relative path: -EINVAL for an empty or absolute path. */
static int kind_fd_for(HostFs *h, HostFsKind kind, const char *path) {
        if (isempty(path) || path[0] == '/')
                return -EINVAL;
        return kind_fd(h, kind);
}

/*
 * Read all of fd from offset 0 into *buf (capacity *size bytes plus the NUL; NULL/0: none yet),
 * growing it up to max (pread: a kept file is re-read from the start; at offset 0 sysfs and
 * seq_file render the content anew, fs/seq_file.c seq_read_iter()). *ret_n: the length.
 * Returns 0, -errno, -EFBIG above max, -EBADMSG for an embedded NUL.
 */
static int read_fd_into(int fd, bool one_record, size_t max, char **buf, size_t *size, size_t *ret_n) {
        size_t n = 0;
        if (!*buf) {
                *buf = malloc(4096 + 1);
                if (!*buf)
                        return -ENOMEM;
                *size = 4096;
        }
        for (;;) {
                ssize_t k = pread(fd, *buf + n, *size - n, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += k;
                /*
                 * One record: a read that did not fill the buffer returned all of it.
                 * kernfs shows a sysfs attribute as one seq_file record of at most
                 * PAGE_SIZE (fs/sysfs/file.c sysfs_kf_seq_show()), single_open() files
                 * have one record too, and seq_read_iter() grows its buffer until a
                 * record fits, so all of it is copied when our buffer is large enough;
                 * a regular file (fixture trees) is only short at EOF. That spares the
                 * read returning 0. Not in general: a multi-record seq_file stops a read
                 * where its own buffer overflows (fs/seq_file.c), short of EOF.
                 */
                if (one_record && n < *size)
                        break;
                if (n == *size) {
                        if (*size >= max)
                                return -EFBIG;
                        char *b = realloc(*buf, *size * 2 + 1);
                        if (!b)
                                return -ENOMEM;
                        *buf = b;
                        *size *= 2;
                }
        }
        (*buf)[n] = 0;
        if (memchr(*buf, 0, n))         /* embedded NUL: not a text attribute */
                return -EBADMSG;
        *ret_n = n;
        return 0;
}

static int read_fd_max(int fd, bool one_record, size_t max, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, n;
        int r = read_fd_into(fd, one_record, max, &buf, &size, &n);
        if (r < 0)
                return r;
        /* callers keep values (facts of thousands of disks): not a 4 KiB buffer for "1\n" */
        char *fit = realloc(buf, n + 1);
        *ret = fit ?: TAKE_PTR(buf);
        if (fit)
                buf = NULL;
        return 0;
}

static int read_fd(int fd, bool one_record, char **ret) {
        return read_fd_max(fd, one_record, HOSTFS_READ_MAX, ret);
}

uint64_t hostfs_read_count(const HostFs *h, HostFsKind kind) {
        assert(h);
        return kind >= 0 && kind < _HOSTFS_KIND_MAX ? h->read_count[kind] : 0;
}

/* path of kind opened for reading, counted: an fd, or -errno. */
static int open_read(HostFs *h, HostFsKind kind, const char *path) {
        int dfd = kind_fd_for(h, kind, path);
        if (dfd < 0)
                return dfd;
        h->read_count[kind]++;
        int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? negative_errno() : fd;
}

int hostfs_read(HostFs *h, HostFsKind kind, const char *path, char **ret) {
        assert(h);
        assert(ret);
        bool event = event_reads_apply(h, kind);
        for (size_t i = 0; event && i < h->n_event_reads; i++)
                if (streq(h->event_reads[i].path, path))
                        return (*ret = strdup(h->event_reads[i].text)) ? 0 : -ENOMEM;

        _cleanup_close_ int fd = open_read(h, kind, path);
        if (fd < 0)
                return fd;
        /* modules.dep of a distribution kernel is ~1 MiB (6,000 modules) */
        int r = read_fd_max(fd, kind == HOSTFS_SYSFS, kind == HOSTFS_MODULES ? HOSTFS_MODULES_READ_MAX : HOSTFS_READ_MAX, ret);
        if (r < 0 || !event)
                return r;
        /* kept for the rest of the event (no memory: simply read again) */
        EventRead *n = reallocarray(h->event_reads, h->n_event_reads + 1, sizeof(EventRead));
        if (!n)
                return 0;
        h->event_reads = n;
        EventRead e = { .path = strdup(path), .text = strdup(*ret) };
        if (!e.path || !e.text) {
                free(e.path);
                free(e.text);
                return 0;
        }
        h->event_reads[h->n_event_reads++] = e;
        return 0;
}

int hostfs_read_bytes(HostFs *h, HostFsKind kind, const char *path, void *buf, size_t size, size_t *ret_n) {
        assert(ret_n);
        _cleanup_close_ int fd = open_read(h, kind, path);
        if (fd < 0)
                return fd;
        size_t n = 0;
        while (n < size) {
                ssize_t k = pread(fd, (char *) buf + n, size - n, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += k;
        }
        *ret_n = n;
        return 0;
}

/* ---- files kept open for statistics ---------------------------------------------------------- */

typedef struct KeptFile {
        HostFsKind kind;
        char *path;
        int fd;
        uint32_t slot;          /* its place in h->kept_slot[] */
        uint64_t last_use;      /* h->kept_clock at the last read */
} KeptFile;

static int kept_compare(const void *a, const void *b) {
        const KeptFile *x = a, *y = b;
        return x->kind != y->kind ? (x->kind < y->kind ? -1 : 1) : strcmp(x->path, y->path);
}

static void kept_drop(HostFs *h, KeptFile *k) {
        tdelete(k, &h->kept, kept_compare);
        h->n_kept--;
        h->kept_slot[k->slot] = NULL;
        h->kept_generation[k->slot]++;  /* handles on this file are stale now */
        closep(&k->fd);
        free(k->path);
        free(k);
}

static void find_oldest(const void *node, VISIT which, void *userdata) {
        KeptFile *k = *(KeptFile * const *) node, **oldest = userdata;
        if ((which == postorder || which == leaf) && (!*oldest || k->last_use < (*oldest)->last_use))
                *oldest = k;
}

/* Close the least recently read kept file (a linear pass; only when the table is full). */
static void kept_evict_one(HostFs *h) {
        KeptFile *oldest = NULL;
        twalk_r(h->kept, find_oldest, &oldest);
        if (oldest)
                kept_drop(h, oldest);
}

/* Keep fd (just read) open as path's kept file; on failure fd is left to the caller.
 * Returns the KeptFile or NULL (keeping is an optimisation: the value is read either way). */
static KeptFile *kept_add(HostFs *h, HostFsKind kind, const char *path, int fd) {
        if (h->n_kept >= HOSTFS_KEPT_MAX)
                kept_evict_one(h);
        uint32_t slot = 0;
        while (slot < HOSTFS_KEPT_MAX && h->kept_slot[slot])
                slot++;
        if (slot >= HOSTFS_KEPT_MAX)
                return NULL;
        KeptFile *k = malloc(sizeof(KeptFile));
        if (!k)
                return NULL;
        *k = (KeptFile) { .kind = kind, .path = strdup(path), .fd = fd, .slot = slot, .last_use = ++h->kept_clock };
        if (!k->path || !tsearch(k, &h->kept, kept_compare)) {
                free(k->path);
                free(k);
                return NULL;
        }
        h->kept_slot[slot] = k;
        h->n_kept++;
        return k;
}

/* The kept file of kind at path, or NULL. */
static KeptFile *kept_find(HostFs *h, HostFsKind kind, const char *path) {
        KeptFile key = { .kind = kind, .path = (char *) path };
        KeptFile **found = tfind(&key, &h->kept, kept_compare);
        return found ? *found : NULL;
}

int hostfs_read_kept(HostFs *h, HostFsKind kind, const char *path, HostFsReadFlags flags, char **ret) {
        bool one_record = kind == HOSTFS_SYSFS || (flags & HOSTFS_READ_ONE_RECORD);

        if (!h->live)           /* fixture trees may replace files: no stale inode */
                return hostfs_read(h, kind, path, ret);

        int dfd = kind_fd_for(h, kind, path);
        if (dfd < 0)
                return dfd;
        h->read_count[kind]++;

        KeptFile *k = kept_find(h, kind, path);
        if (k) {
                k->last_use = ++h->kept_clock;
                int r = read_fd(k->fd, one_record, ret);
                if (r >= 0 || r == -ENOMEM)
                        return r;
                /* ENODEV (kernfs node removed), EIO (debugfs file removed): the file we hold
                 * is gone; a new disk may have taken the name. Open the path afresh. */
                kept_drop(h, k);
        }

        _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        int r = read_fd(fd, one_record, ret);
        if (r < 0)
                return r;
        if (kept_add(h, kind, path, fd))
                fd = -EBADF;            /* owned by the kept file now */
        return 0;
}

int hostfs_read_kept_at(HostFs *h, HostFsKept *handle, HostFsKind kind, HostFsReadFlags flags, const char **ret,
                        const char *fmt, ...) {
        bool one_record = kind == HOSTFS_SYSFS || (flags & HOSTFS_READ_ONE_RECORD);
        char path[PATH_MAX];
        size_t n;
        int r;

        int dfd = kind_fd(h, kind);
        if (dfd < 0)
                return dfd;

        /* the handle's file, when it is still the one kept in its slot: no path, no lookup */
        if (h->live && handle && handle->slot > 0 && handle->slot <= HOSTFS_KEPT_MAX) {
                KeptFile *k = h->kept_slot[handle->slot - 1];
                if (k && k->kind == kind && h->kept_generation[handle->slot - 1] == handle->generation) {
                        h->read_count[kind]++;
                        k->last_use = ++h->kept_clock;
                        r = read_fd_into(k->fd, one_record, HOSTFS_READ_MAX, &h->scratch, &h->scratch_size, &n);
                        if (r >= 0 || r == -ENOMEM) {
                                *ret = h->scratch;
                                return r;
                        }
                        kept_drop(h, k);        /* gone (ENODEV, EIO): the path afresh, as hostfs_read_kept() */
                }
        }
        if (handle)
                *handle = (HostFsKept) {};

        va_list ap;
        va_start(ap, fmt);
        int len = vsnprintf(path, sizeof(path), fmt, ap);
        va_end(ap);
        if (len < 0 || (size_t) len >= sizeof(path))
                return -ENAMETOOLONG;
        if (isempty(path) || path[0] == '/')
                return -EINVAL;
        h->read_count[kind]++;

        if (!h->live) {         /* fixture trees may replace files: no stale inode, as hostfs_read_kept() */
                _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return negative_errno();
                r = read_fd_into(fd, one_record, HOSTFS_READ_MAX, &h->scratch, &h->scratch_size, &n);
                if (r >= 0)
                        *ret = h->scratch;
                return r;
        }

        KeptFile *k = kept_find(h, kind, path);
        if (k) {
                k->last_use = ++h->kept_clock;
                r = read_fd_into(k->fd, one_record, HOSTFS_READ_MAX, &h->scratch, &h->scratch_size, &n);
                if (r >= 0 || r == -ENOMEM) {
                        if (r >= 0 && handle)
                                *handle = (HostFsKept) { .slot = k->slot + 1, .generation = h->kept_generation[k->slot] };
                        if (r >= 0)
                                *ret = h->scratch;
                        return r;
                }
                kept_drop(h, k);
        }

        _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        r = read_fd_into(fd, one_record, HOSTFS_READ_MAX, &h->scratch, &h->scratch_size, &n);
        if (r < 0)
                return r;
        *ret = h->scratch;
        k = kept_add(h, kind, path, fd);
        if (k) {
                fd = -EBADF;            /* owned by the kept file now */
                if (handle)
                        *handle = (HostFsKept) { .slot = k->slot + 1, .generation = h->kept_generation[k->slot] };
        }
        return 0;
}

typedef struct KeptMatch {
        HostFsKind kind;
        const char *prefix;
        size_t len;
        KeptFile *match;
} KeptMatch;

static void find_prefix(const void *node, VISIT which, void *userdata) {
        KeptFile *k = *(KeptFile * const *) node;
        KeptMatch *m = userdata;
        if (!m->match && (which == postorder || which == leaf) && k->kind == m->kind &&
            strncmp(k->path, m->prefix, m->len) == 0)
                m->match = k;
}

void hostfs_close_kept(HostFs *h, HostFsKind kind, const char *prefix) {
        assert(h);
        for (;;) {
                KeptMatch m = { .kind = kind, .prefix = prefix, .len = strlen(prefix) };
                twalk_r(h->kept, find_prefix, &m);
                if (!m.match)
                        return;
                kept_drop(h, m.match);
        }
}

int hostfs_read_u64(HostFs *h, HostFsKind kind, const char *path, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r = hostfs_read(h, kind, path, &s);
        if (r < 0)
                return r;
        return parse_u64(s, ret);
}

int hostfs_read_int(HostFs *h, HostFsKind kind, const char *path, int *ret) {
        _cleanup_free_ char *s = NULL;
        int r = hostfs_read(h, kind, path, &s);
        if (r < 0)
                return r;
        return parse_int(s, ret);
}

uint64_t hostfs_write_count(const HostFs *h, HostFsKind kind) {
        assert(h);
        return kind >= 0 && kind < _HOSTFS_KIND_MAX ? h->write_count[kind] : 0;
}

static void record_write(HostFs *h, HostFsKind kind, const char *path, const char *value, int result) {
        h->write_count[kind]++;
        _cleanup_free_ char *v = strdup(value), *line = NULL;
        if (!v)
                return;
        strip_newline(v);
        if (asprintf(&line, "write:%s:%s=%s -> %s", kind_name[kind], path, v,
                     result >= 0 ? "ok" : strerrorname_np(-result) ?: "error") < 0)
                return;
        if (h->n_writes >= HOSTFS_WRITES_MAX) {
                free(h->writes[0]);
                memmove(h->writes, h->writes + 1, (h->n_writes - 1) * sizeof(char *));
                h->writes[--h->n_writes] = NULL;
        }
        if (strv_extend(&h->writes, line) >= 0)
                h->n_writes++;
}

/* The test hold ($BLKMQD_TEST_HOLD_WRITE) for a write of kind to path: sleep when it matches. */
static void test_hold(HostFs *h, HostFsKind kind, const char *path) {
        if (!h->hold_glob || kind != h->hold_kind || fnmatch(h->hold_glob, path, FNM_PATHNAME) != 0)
                return;
        struct timespec ts = { .tv_sec = h->hold_usec / 1000000, .tv_nsec = h->hold_usec % 1000000 * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int hostfs_write_raw(HostFs *h, HostFsKind kind, const char *path, const char *value) {
        return hostfs_write_raw_instance(h, kind, path, value, NULL, 0);
}

int hostfs_write_raw_instance(HostFs *h, HostFsKind kind, const char *path, const char *value, const char *dir, uint64_t ino) {
        int r;

        if (kind == HOSTFS_DEBUGFS)
                return -EOPNOTSUPP;     /* its dirfd may change under a worker; never written */
        if (kind == HOSTFS_MODULES || kind == HOSTFS_ETC || kind == HOSTFS_USR_LIB || kind == HOSTFS_LIB ||
            kind == HOSTFS_USR_LOCAL_LIB || kind == HOSTFS_BOOT || kind == HOSTFS_NETLINK)
                return -EPERM;          /* read only: the module tree, other tools' configuration */
        int dfd = kind_fd_for(h, kind, path);
        if (dfd < 0)
                return dfd;
        /* a write of the event's own thread (apply_device() without a writer): read anew after it */
        if (event_reads_apply(h, kind))
                event_reads_clear(h);

        test_hold(h, kind, path);

        if (dir && ino) {
                /* still the disk the write was decided for? (right before the open, after the hold) */
                struct stat st;
                if (fstatat(dfd, dir, &st, 0) < 0 || (uint64_t) st.st_ino != ino)
                        return -ENODEV;
        }

        r = h->write_hook ? h->write_hook(h->write_hook_userdata, kind, dfd, path, value) : 0;
        if (r != 0)
                return r < 0 ? r : 0;

        _cleanup_close_ int fd = openat(dfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        size_t l = strlen(value);
        ssize_t k = write(fd, value, l);
        return k < 0 ? negative_errno() : (size_t) k != l ? -EIO : 0;
}

void hostfs_write_record(HostFs *h, HostFsKind kind, const char *path, const char *value, int result) {
        if (kind >= 0 && kind < _HOSTFS_KIND_MAX)
                record_write(h, kind, path, value, result);
}

int hostfs_write(HostFs *h, HostFsKind kind, const char *path, const char *value) {
        int dfd = kind_fd_for(h, kind, path);
        if (dfd < 0)
                return dfd;     /* refused before anything was tried: not recorded */
        int r = hostfs_write_raw(h, kind, path, value);
        hostfs_write_record(h, kind, path, value, r);
        return r;
}

int hostfs_readlink(HostFs *h, HostFsKind kind, const char *path, char **ret) {
        assert(ret);
        int dfd = kind_fd_for(h, kind, path);
        if (dfd < 0)
                return dfd;

        char buf[PATH_MAX];
        ssize_t k = readlinkat(dfd, path, buf, sizeof(buf) - 1);
        if (k < 0)
                return negative_errno();
        buf[k] = 0;
        char *s = strdup(buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* Append component c to the path in buf (no leading slash), handling "." and "..". */
static int path_push(char *buf, size_t size, const char *c, size_t l) {
        if (l == 0 || (l == 1 && c[0] == '.'))
                return 0;
        if (l == 2 && c[0] == '.' && c[1] == '.') {
                char *s = strrchr(buf, '/');
                if (s)
                        *s = 0;
                else if (*buf)
                        *buf = 0;
                else
                        return -EXDEV;          /* above the kind's root */
                return 0;
        }
        size_t n = strlen(buf);
        if (n + l + 2 > size)
                return -ENAMETOOLONG;
        if (n > 0)
                buf[n++] = '/';
        memcpy(buf + n, c, l);
        buf[n + l] = 0;
        return 0;
}

int hostfs_resolve(HostFs *h, HostFsKind kind, const char *path, char **ret) {
        assert(ret);
        int dfd = kind_fd_for(h, kind, path), r;
        if (dfd < 0)
                return dfd;

        char done[PATH_MAX] = "";
        _cleanup_free_ char *todo = strdup(path);
        if (!todo)
                return -ENOMEM;
        unsigned links = 0;

        while (*todo) {
                char *slash = strchr(todo, '/');
                size_t l = slash ? (size_t) (slash - todo) : strlen(todo);
                char saved[PATH_MAX];

                strcpy(saved, done);
                r = path_push(done, sizeof(done), todo, l);
                if (r < 0)
                        return r;
                const char *rest = slash ? slash + 1 : "";

                char target[PATH_MAX];
                ssize_t k = *done ? readlinkat(dfd, done, target, sizeof(target) - 1) : -1;
                if (k >= 0) {
                        target[k] = 0;
                        if (++links > HOSTFS_LINKS_MAX)
                                return -ELOOP;
                        if (target[0] == '/')
                                return -EXDEV;  /* absolute links leave the tree */
                        strcpy(done, saved);
                        char *n = NULL;
                        if (asprintf(&n, "%s%s%s", target, *rest ? "/" : "", rest) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = n;
                        continue;
                }
                if (errno != EINVAL && *done)
                        return negative_errno();
                memmove(todo, rest, strlen(rest) + 1);
        }

        char *s = strdup(done);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int name_compare(const void *a, const void *b) {
        return strverscmp(*(char * const *) a, *(char * const *) b);
}

static int list_entries(HostFs *h, HostFsKind kind, const char *path, bool dirs_only, char ***ret) {
        int dfd = kind_fd_for(h, kind, path), r;
        if (dfd < 0)
                return dfd;

        int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        DIR *d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                close(fd);
                return r;
        }

        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        size_t n = 0;
        if (!l) {
                closedir(d);
                return -ENOMEM;
        }
        struct dirent *de;
        errno = 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (dirs_only && de->d_type != DT_DIR) {
                        struct stat st;
                        if (de->d_type != DT_UNKNOWN || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            !S_ISDIR(st.st_mode))
                                continue;
                }
                r = strv_extend(&l, de->d_name);
                if (r < 0) {
                        closedir(d);
                        return r;
                }
                n++;
        }
        closedir(d);
        qsort(l, n, sizeof(char *), name_compare);
        *ret = TAKE_PTR(l);
        return 0;
}

int hostfs_list(HostFs *h, HostFsKind kind, const char *path, char ***ret) {
        return list_entries(h, kind, path, false, ret);
}

int hostfs_list_dirs(HostFs *h, HostFsKind kind, const char *path, char ***ret) {
        return list_entries(h, kind, path, true, ret);
}

int hostfs_stat(HostFs *h, HostFsKind kind, const char *path, struct stat *ret) {
        int dfd = kind_fd_for(h, kind, path);
        if (dfd < 0)
                return dfd;
        if (fstatat(dfd, path, ret, 0) < 0)
                return negative_errno();
        return 0;
}

bool hostfs_exists(HostFs *h, HostFsKind kind, const char *path) {
        struct stat st;
        return hostfs_stat(h, kind, path, &st) >= 0;
}

bool hostfs_udevd_running(HostFs *h) {
        if (h->fd[HOSTFS_RUN] < 0 || faccessat(h->fd[HOSTFS_RUN], "udev/control", F_OK, 0) < 0)
                return false;
        if (!h->live)
                return true;
        /* The socket file outlives a killed udevd: only a listening socket counts. udevd
         * listens with a backlog of 0 (one connection it has not accepted yet fills it: a
         * udevadm client, someone else's probe), and then a non-blocking connect() fails with
         * EAGAIN (net/unix/af_unix.c unix_stream_connect(): unix_recvq_full() and no timeo);
         * that is a listening udevd too. No listener: ECONNREFUSED. */
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/run/udev/control" };
        return fd >= 0 && (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) >= 0 || errno == EAGAIN);
}

static int read_proc_line(HostFs *h, const char *path, char **ret) {
        char *s = NULL;
        int r = hostfs_read(h, HOSTFS_PROCFS, path, &s);
        if (r < 0)
                return r;
        strip_newline(s);
        *ret = s;
        return 0;
}

int hostfs_kernel_release(HostFs *h, char **ret) {
        return read_proc_line(h, "sys/kernel/osrelease", ret);
}

int hostfs_boot_id(HostFs *h, char **ret) {
        return read_proc_line(h, "sys/kernel/random/boot_id", ret);
}

char * const *hostfs_writes(const HostFs *h) {
        assert(h);
        return h->writes;
}

void hostfs_writes_clear(HostFs *h) {
        h->writes = strv_free(h->writes);
        h->n_writes = 0;
}

int hostfs_replace_file_raw(HostFs *h, HostFsKind kind, const char *name, const char *content) {
        assert(name);
        _cleanup_free_ char *tmp = NULL;
        int dfd, r;

        if (kind != HOSTFS_MODPROBE_D || strchr(name, '/'))
                return -EPERM;
        dfd = kind_fd_late(h, HOSTFS_MODPROBE_D, true);
        if (dfd < 0)
                return dfd;
        if (asprintf(&tmp, ".%s.blkmqd-tmp", name) < 0)
                return -ENOMEM;
        test_hold(h, kind, name);

        _cleanup_close_ int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return negative_errno();
        size_t l = strlen(content);
        ssize_t k = write(fd, content, l);
        r = k < 0 ? negative_errno() : (size_t) k != l ? -EIO : 0;
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dfd, tmp, 0);
        else
                (void) fsync(dfd);
        return r;
}

void hostfs_replace_file_record(HostFs *h, HostFsKind kind, const char *name, const char *content, int result) {
        assert(content);
        _cleanup_free_ char *first = strndup(content, strcspn(content, "\n"));
        if (kind >= 0 && kind < _HOSTFS_KIND_MAX)
                record_write(h, kind, name, first ?: "", result);
}

int hostfs_replace_file(HostFs *h, HostFsKind kind, const char *name, const char *content) {
        assert(name);
        if (kind != HOSTFS_MODPROBE_D || strchr(name, '/'))
                return -EPERM;
        int r = hostfs_replace_file_raw(h, kind, name, content);
        hostfs_replace_file_record(h, kind, name, content, r);
        return r;
}

int hostfs_textfile_replace(const char *path, const char *content) {
        _cleanup_free_ char *dir = NULL, *tmp = NULL;
        const char *slash = path ? strrchr(path, '/') : NULL;
        int r = 0;

        if (!path || path[0] != '/' || !slash[1])
                return -EINVAL;
        dir = slash == path ? strdup("/") : strndup(path, slash - path);
        if (!dir || asprintf(&tmp, ".%s.tmp", slash + 1) < 0)
                return -ENOMEM;
        _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        _cleanup_close_ int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, 0644) < 0)               /* node_exporter reads it as another user; not the umask's */
                r = negative_errno();
        for (size_t done = 0, l = strlen(content); r >= 0 && done < l;) {
                ssize_t k = write(fd, content + done, l - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        r = k < 0 ? negative_errno() : -EIO;
                else
                        done += (size_t) k;
        }
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(dfd, tmp, dfd, slash + 1) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dfd, tmp, 0);
        return r;
}

int hostfs_rename_file(HostFs *h, HostFsKind kind, const char *from, const char *to) {
        assert(from);
        assert(to);
        char what[512];
        int dfd, r = 0;

        if (kind != HOSTFS_MODPROBE_D || strchr(from, '/') || strchr(to, '/'))
                return -EPERM;
        dfd = kind_fd_late(h, HOSTFS_MODPROBE_D, false);
        if (dfd < 0)
                return dfd;
        if (renameat(dfd, from, dfd, to) < 0)
                r = negative_errno();
        else
                (void) fsync(dfd);
        snprintf(what, sizeof(what), "(renamed from %s)", from);
        record_write(h, kind, to, what, r);
        return r;
}

/* The directory fd an unlink of name in kind may use: only modprobe.d, only a plain name. */
static int unlink_dir_fd(HostFs *h, HostFsKind kind, const char *name) {
        if (kind != HOSTFS_MODPROBE_D || strchr(name, '/'))
                return -EPERM;
        return kind_fd(h, kind);
}

int hostfs_unlink_raw(HostFs *h, HostFsKind kind, const char *name) {
        int dfd = unlink_dir_fd(h, kind, name);
        if (dfd < 0)
                return dfd;
        test_hold(h, kind, name);
        return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? negative_errno() : 0;
}

int hostfs_unlink(HostFs *h, HostFsKind kind, const char *name) {
        int dfd = unlink_dir_fd(h, kind, name);
        if (dfd < 0)
                return dfd;     /* refused before anything was tried: not recorded */
        int r = hostfs_unlink_raw(h, kind, name);
        record_write(h, kind, name, HOSTFS_UNLINK_RECORD, r);
        return r;
}

int hostfs_open_mounts_watch(HostFs *h) {
        if (!h->live)
                return -EOPNOTSUPP;
        int dfd = kind_fd(h, HOSTFS_PROCFS);
        if (dfd < 0)
                return dfd;
        int fd = openat(dfd, "self/mountinfo", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? negative_errno() : fd;
}

int hostfs_mtime(HostFs *h, HostFsKind kind, const char *path, int64_t *ret) {
        assert(ret);
        struct stat st;
        int r = hostfs_stat(h, kind, path, &st);
        if (r < 0)
                return r;
        *ret = st.st_mtim.tv_sec;
        return 0;
}
