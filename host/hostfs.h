/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * hostfs: the only code in blkmqd that touches /sys, /proc, debugfs, /dev, /run,
 * /etc/modprobe.d and /lib/modules.
 *
 * Every path is relative to the directory of its kind, and every kind lives below
 * one root: --root DIR, else $BLKMQD_ROOT, else "/". Tests point the root at a fixture
 * tree captured from a real kernel (tests/fixtures/<machine>/). All access is
 * openat() relative to a per-kind dirfd with O_CLOEXEC. Writes never create files
 * (no O_CREAT), are a single write(), and are recorded as
 * "write:<kind>:<path>=<value>" (value without trailing newline) followed by the
 * result, so tests and dry-run can show exactly what was (or would be) written.
 *
 * Like other library-like modules, hostfs logs nothing above debug.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef enum HostFsKind {
        HOSTFS_SYSFS,           /* <root>/sys */
        HOSTFS_PROCFS,          /* <root>/proc */
        HOSTFS_DEBUGFS,         /* <root>/sys/kernel/debug; absent when debugfs is not mounted */
        HOSTFS_RUN,             /* <root>/run */
        HOSTFS_MODPROBE_D,      /* <root>/etc/modprobe.d */
        HOSTFS_MODULES,         /* <root>/lib/modules: modules.dep/modules.builtin per release (read only) */
        HOSTFS_ETC,             /* <root>/etc: other tools' configuration (udev rules, tuned), read only */
        HOSTFS_USR_LIB,         /* <root>/usr/lib: shipped udev rules and tuned profiles, read only */
        HOSTFS_LIB,             /* <root>/lib: udev rules of a system without merged /usr, read only */
        HOSTFS_USR_LOCAL_LIB,   /* <root>/usr/local/lib: the local admin's modprobe.d, udev rules and .link
                                 * files (kmod and udev read it after /etc and /run), read only */
        HOSTFS_BOOT,            /* <root>/boot: config-<release>, the running kernel's configuration (read only) */
        HOSTFS_NETLINK,         /* <root>/netlink: a fixture's captured netlink answers (host/hostfs-net.h); read only,
                                 * never consulted on the live machine */
        _HOSTFS_KIND_MAX,
        _HOSTFS_KIND_INVALID = -EINVAL,
} HostFsKind;

typedef struct HostFs HostFs;

/*
 * Open the per-kind directories below root (NULL: $BLKMQD_ROOT, else "/").
 * A kind whose directory is missing is not an error: its operations return -ENOENT
 * (or -ENODEV for debugfs that is not mounted, see hostfs_debugfs_available()).
 * Returns 0, -ENOENT when root itself does not exist, -ENOMEM.
 */
int hostfs_new(const char *root, HostFs **ret);
HostFs *hostfs_free(HostFs *h);
static inline void hostfs_freep(HostFs **h) {
        if (*h)
                hostfs_free(*h);
}

/* The root in use ("/" for the real machine). */
const char *hostfs_root(const HostFs *h);
/* True when root is "/", i.e. the live machine (libudev and sd-notify apply). */
bool hostfs_is_live(const HostFs *h);

/*
 * True when debugfs is usable: on the live machine a debugfs filesystem is mounted at
 * /sys/kernel/debug (statfs magic DEBUGFS_MAGIC); in a fixture tree the directory
 * sys/kernel/debug/block exists. If ret_reason is given it receives a static reason when false.
 */
bool hostfs_debugfs_available(HostFs *h, const char **ret_reason);

/*
 * Read a whole file (at most 1 MiB) into a NUL-terminated string; content kept as is
 * (trailing newline included); a sysfs attribute in one read() (see hostfs.c).
 * Returns 0, -errno from open/read (-ENOENT, -EACCES, ...),
 * -ENODEV for an unavailable kind, -EFBIG above the limit.
 */
int hostfs_read(HostFs *h, HostFsKind kind, const char *path, char **ret);

/*
 * One uevent's reads: between hostfs_event_begin() and the matching hostfs_event_end() (they
 * nest), a sysfs file that hostfs_read() (and the _u64()/_int() helpers) read successfully on
 * the calling thread is not read again: a second read returns the first one's content (the
 * gathering and apply's check of the current value read queue/scheduler and nr_requests within
 * microseconds, docs/BENCHMARKS.md "Events at the floor"). Other threads (the writer's workers,
 * whose read backs must see the kernel) always read; a write on the event's thread forgets
 * the reads. Failed reads are not kept.
 */
void hostfs_event_begin(HostFs *h);
void hostfs_event_end(HostFs *h);

/*
 * Read at most size bytes of a binary file (a sysfs bin_attribute such as a SCSI device's
 * vpd_pgb1, drivers/scsi/scsi_sysfs.c) from offset 0 into buf; *ret_n is the number read.
 * Returns 0 or -errno from open/read (-ENOENT, -EACCES, ...), -ENODEV for an unavailable kind.
 */
int hostfs_read_bytes(HostFs *h, HostFsKind kind, const char *path, void *buf, size_t size, size_t *ret_n);

/*
 * As hostfs_read(), for a file read again and again (statistics at every scrape): on the
 * live machine the file stays open and is re-read from offset 0, where sysfs and seq_file
 * render it anew (fs/seq_file.c seq_read_iter() resets its iterator at offset 0). That
 * spares the path walk, open and close: one pread() instead of four syscalls. At most
 * HOSTFS_KEPT_MAX (512) files stay open, the least recently read closed first. A kept
 * file that fails to read (ENODEV: the sysfs node was removed; EIO: the debugfs file was)
 * is closed and the path opened afresh, so a disk re-added under the same name is read,
 * not the old one. Under a fixture root (not live) this is hostfs_read(): a test may
 * replace a file, and a kept descriptor would read the old one.
 * flags: HOSTFS_READ_ONE_RECORD or 0. Returns as hostfs_read().
 */
typedef enum HostFsReadFlags {
        /*
         * The file is one seq_file record, like every sysfs attribute: a single_open()
         * file (blk-mq debugfs .show attributes, block/blk-mq-debugfs.c; kernel/irq/debugfs.c).
         * Then a read shorter than the buffer returned all of it and the read that would
         * return 0 is spared. Wrong for a multi-record file (it would be cut short).
         */
        HOSTFS_READ_ONE_RECORD = 1 << 0,
} HostFsReadFlags;

int hostfs_read_kept(HostFs *h, HostFsKind kind, const char *path, HostFsReadFlags flags, char **ret);

/*
 * A caller's handle on a kept file, for hostfs_read_kept_at(): the slot of h's table the file
 * is kept in and the slot's generation then. Closing a kept file (the least recently read one
 * when the table is full, hostfs_close_kept(), a read that failed) moves its slot to a new
 * generation, so a handle on it no longer matches and the path is looked up again. Zero
 * (HostFsKept) {}: no file yet. A handle stands for the one path it was made with: the caller
 * keeps one per path.
 */
typedef struct HostFsKept {
        uint32_t slot;          /* 1 + slot; 0: none */
        uint32_t generation;
} HostFsKept;

/*
 * As hostfs_read_kept(), for a file read at every scrape (per-hctx and per-disk statistics):
 * when *handle names a file still kept, that file is re-read at once, no path formatted and
 * none looked up; else the path (fmt and its arguments, printf-style, relative to kind) is
 * formatted and read as hostfs_read_kept() does, and *handle set to the file kept for it
 * (zeroed when it could not be kept: a fixture root keeps nothing). handle may be NULL (the
 * path every time). The content goes to a buffer of h that is reused: *ret points there,
 * NUL-terminated, valid until the next hostfs_read_kept_at() on h (no allocation per read).
 * Returns as hostfs_read_kept(), plus -ENAMETOOLONG for a path over PATH_MAX.
 */
int hostfs_read_kept_at(HostFs *h, HostFsKept *handle, HostFsKind kind, HostFsReadFlags flags, const char **ret,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/*
 * Number of file reads of kind since h was opened (hostfs_read(), hostfs_read_kept(),
 * hostfs_read_kept_at(), the hostfs_read_u64()/_int() helpers; each counts once, whether it
 * succeeded or not, once the kind and path were accepted). For tests that count what a
 * scrape reads.
 */
uint64_t hostfs_read_count(const HostFs *h, HostFsKind kind);

/* Close the kept files of kind whose path starts with prefix ("block/sda/" when sda goes). */
void hostfs_close_kept(HostFs *h, HostFsKind kind, const char *prefix);

/* Read and parse_u64()/parse_int() a file. Returns as hostfs_read() plus -EINVAL/-ERANGE. */
int hostfs_read_u64(HostFs *h, HostFsKind kind, const char *path, uint64_t *ret);
int hostfs_read_int(HostFs *h, HostFsKind kind, const char *path, int *ret);

/*
 * Write value to an existing file: open(O_WRONLY|O_TRUNC|O_CLOEXEC), one write() of
 * value as given. Never creates. Records "write:<kind>:<path>=<value>" with the result.
 * Returns 0, -errno of open or write, -EIO on a short write.
 * Same as hostfs_write_raw() followed by hostfs_write_record().
 */
int hostfs_write(HostFs *h, HostFsKind kind, const char *path, const char *value);

/*
 * The two halves of hostfs_write(), for writes done on a worker thread (host/writer.h):
 *
 * hostfs_write_raw() does the write (through the write hook, after the test hold below) and
 * records nothing. It is safe to call from any thread, concurrently with anything else on h,
 * for every kind but HOSTFS_DEBUGFS (whose dirfd is re-opened when debugfs gets mounted): it
 * only reads fields hostfs_new() set. hostfs_read() of HOSTFS_SYSFS/HOSTFS_PROCFS is thread-safe
 * in the same way (a read-back). It may block as long as the kernel takes (an elevator switch
 * freezes the queue and may load a module). Returns as hostfs_write().
 *
 * hostfs_write_record() records a write done by hostfs_write_raw() (result: its return value);
 * call it on the thread that owns h (it is what hostfs_writes() and hostfs_write_count() show).
 *
 * Test hold (fault injection, like a stuck kernel): when $BLKMQD_TEST_HOLD_WRITE is set at
 * hostfs_new() to "<kind>:<path glob>=<seconds>" (e.g. "sysfs:block/loop7/queue/scheduler=8"),
 * every matching hostfs_write_raw() (and hostfs_replace_file_raw(), hostfs_unlink_raw() of
 * modprobe.d) sleeps that long before it writes. Never set in production.
 */
int hostfs_write_raw(HostFs *h, HostFsKind kind, const char *path, const char *value);
/*
 * hostfs_write_raw(), for a write decided for one disk: when dir (relative to kind's root,
 * symlinks followed, e.g. "block/loop7") is gone or has another inode than ino (the disk was
 * removed, or removed and added again under its name: a new kernfs node) right before the
 * open (after the test hold), nothing is written and -ENODEV is returned. ino 0 or dir NULL:
 * no check. Thread-safe like hostfs_write_raw().
 */
int hostfs_write_raw_instance(HostFs *h, HostFsKind kind, const char *path, const char *value, const char *dir, uint64_t ino);
void hostfs_write_record(HostFs *h, HostFsKind kind, const char *path, const char *value, int result);

/* The test hold in force ("sysfs:block/loop7/queue/scheduler=8"), NULL when none. */
const char *hostfs_test_hold(const HostFs *h);

/* readlink() relative to the kind; ret is newly allocated. Returns 0 or -errno (-EINVAL: not a link). */
int hostfs_readlink(HostFs *h, HostFsKind kind, const char *path, char **ret);

/*
 * Resolve every symlink in path textually, staying inside the kind's tree (so a fixture
 * tree resolves like the real sysfs): "block/vda/device" -> "devices/pci0000:00/0000:00:04.0/virtio1".
 * Returns 0, -ELOOP (more than 40 links), -EXDEV (escapes the tree), -errno.
 */
int hostfs_resolve(HostFs *h, HostFsKind kind, const char *path, char **ret);

/*
 * Names in a directory, "." and ".." skipped, sorted (strverscmp, so hctx 2 < 10).
 * Returns 0 with a strv (possibly empty, never NULL), or -errno.
 */
int hostfs_list(HostFs *h, HostFsKind kind, const char *path, char ***ret);

/* hostfs_list() of the directories only (readdir()'s d_type, fstatat() where it is DT_UNKNOWN;
 * no link followed): a cgroup's child cgroups without its control files. Same returns. */
int hostfs_list_dirs(HostFs *h, HostFsKind kind, const char *path, char ***ret);

/* fstatat() relative to the kind (following links). Returns 0 or -errno. */
int hostfs_stat(HostFs *h, HostFsKind kind, const char *path, struct stat *ret);

/* True when path exists (following links). */
bool hostfs_exists(HostFs *h, HostFsKind kind, const char *path);

/* True when systemd-udevd runs (it owns /run/udev/control), i.e. the "udev" monitor source works. */
bool hostfs_udevd_running(HostFs *h);

/* The kernel release: <root>/proc/sys/kernel/osrelease, newline stripped. Returns 0 or -errno. */
int hostfs_kernel_release(HostFs *h, char **ret);

/*
 * This boot's id: <root>/proc/sys/kernel/random/boot_id (a random UUID the kernel makes at
 * each boot, drivers/char/random.c), newline stripped. -ENOENT on a fixture root without it.
 * Returns 0 or -errno.
 */
int hostfs_boot_id(HostFs *h, char **ret);

/*
 * Recorded writes, oldest first, each "write:<kind>:<path>=<value> -> ok|<errno name>";
 * at most the last 4096. The returned vector is owned by h and valid until the next write.
 */
char * const *hostfs_writes(const HostFs *h);
void hostfs_writes_clear(HostFs *h);

/*
 * Number of write attempts to kind since h was opened (successful or not; never reset by
 * hostfs_writes_clear()). Values of that kind cached before the count changed may be stale.
 */
uint64_t hostfs_write_count(const HostFs *h, HostFsKind kind);

/*
 * Replace a whole file atomically (temp file in the same directory, fsync, rename).
 * Only for HOSTFS_MODPROBE_D, the one kind where blkmqd owns files (blkmqd.conf): it
 * may create, and makes the directory (/etc/modprobe.d, 0755; /etc too) when it is absent:
 * a modprobe.d that appears after hostfs_new() is found by every later call of that kind.
 * Recorded like hostfs_write() with the first line of content.
 * Returns 0, -EPERM for another kind, -errno.
 */
int hostfs_replace_file(HostFs *h, HostFsKind kind, const char *name, const char *content);

/* Rename a file blkmqd owns from to to (HOSTFS_MODPROBE_D only, plain names; renameat(), its
 * mtime kept, the directory fsync()ed). Recorded as "write:modprobe.d:<to>=(renamed from <from>)".
 * Returns 0, -ENOENT when from is absent, -EPERM, -errno. */
int hostfs_rename_file(HostFs *h, HostFsKind kind, const char *from, const char *to);

/* Remove a file blkmqd owns (HOSTFS_MODPROBE_D only). Returns 0 (also when absent), -EPERM, -errno.
 * Recorded as "write:modprobe.d:<name>=(removed)". */
int hostfs_unlink(HostFs *h, HostFsKind kind, const char *name);
#define HOSTFS_UNLINK_RECORD "(removed)"

/*
 * The halves of hostfs_replace_file() and hostfs_unlink(), for a writer worker (host/writer.h),
 * like hostfs_write_raw(): the _raw() functions do it and record nothing; they are safe on any
 * thread (they use only the dirfds hostfs_new() opened, and modprobe.d's, published once when
 * it appears) and may block as long as the file system takes (the fsync() of a slow disk, a
 * frozen file system). The test hold applies to
 * them too ("modprobe.d:zz-blkmqd.conf=<seconds>"). hostfs_replace_file_record() records a
 * replacement on the thread that owns h (an unlink: hostfs_write_record() with
 * HOSTFS_UNLINK_RECORD). Return as hostfs_replace_file() and hostfs_unlink().
 */
int hostfs_replace_file_raw(HostFs *h, HostFsKind kind, const char *name, const char *content);
void hostfs_replace_file_record(HostFs *h, HostFsKind kind, const char *name, const char *content, int result);
int hostfs_unlink_raw(HostFs *h, HostFsKind kind, const char *name);

/*
 * Replace path, a file in node_exporter's textfile directory (an absolute path the admin
 * chose, outside the root like the state directory), by content the way node_exporter's
 * textfile collector expects (its README.textfile): written to ".<name>.tmp" in the same
 * directory (a name the collector skips: it reads only *.prom), mode 0644, then renamed over
 * path, so a scrape reads the old file or the new one, never a part; the file's mtime is the
 * time of the write. No fsync: after a crash the file is the last one written or the new one,
 * and the next write replaces it. Thread-safe (a writer worker calls it); it may block as long
 * as the file system takes. Never creates the directory. Returns 0, -EINVAL (not an absolute
 * path to a file), -ENOENT (no such directory), -errno.
 */
int hostfs_textfile_replace(const char *path, const char *content);

/*
 * Test seam: a hook consulted by hostfs_write() before it writes. Return 0 to let the
 * write proceed, > 0 when the hook did the write itself (e.g. a fixture test emulating
 * the kernel's queue/scheduler brackets), < 0 to fail the write with that errno (a
 * managed IRQ's EIO). The write is recorded either way. NULL removes the hook.
 * Production code never sets one.
 */
typedef int (*hostfs_write_hook_t)(void *userdata, HostFsKind kind, int dirfd, const char *path, const char *value);
/* (The hook runs where the write runs: on a writer worker thread in the daemon, so a hook that
 * sleeps stands for a kernel write that blocks. It must be thread-safe there.) */
void hostfs_set_write_hook(HostFs *h, hostfs_write_hook_t hook, void *userdata);

/* Modification time of a file in seconds since the epoch. Returns 0 or -errno. */
int hostfs_mtime(HostFs *h, HostFsKind kind, const char *path, int64_t *ret);

/*
 * The mount table of blkmqd's mount namespace, opened to be watched: proc/self/mountinfo
 * polls POLLPRI|POLLERR once after each mount or unmount in the namespace, propagated ones
 * included (fs/proc_namespace.c mounts_poll(): the namespace's event count against the
 * one the open file last saw; the poll itself catches up, no read needed). Only on the live
 * root: a fixture's mountinfo is a plain file, which poll() always reports ready.
 * Returns the fd (O_RDONLY|O_CLOEXEC, the caller owns it), -EOPNOTSUPP on a fixture root, -errno.
 */
int hostfs_open_mounts_watch(HostFs *h);
