/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqd-emu: the daemon (manager/main.c, unchanged) with the kernel's write semantics emulated
 * on a fixture copy, for the integration tests that run it with --root (tests/integration/
 * test-histories.py). Linked with -Wl,--wrap=hostfs_new: every HostFs the manager opens gets
 * the write hook below (hostfs_set_write_hook(), the seam the fixture tests use), which does
 * what a plain file copy cannot:
 *
 *   queue/scheduler   the write is taken as block/elevator.c takes it: a name the file does
 *                     not list is EINVAL; the file then reads "a [b] c"; nr_requests is reset
 *                     (tests/lib/test-util.h test_emulate_scheduler_at()); queue/iosched/ is a
 *                     new directory (a new inode, as the kernel's new elevator instance) with
 *                     the new elevator's default tunables (those the copy had at start when it
 *                     ran that elevator, else the table below), empty for none
 *   modules           <root>/emu-modules, read at every scheduler write: one elevator name a
 *                     line whose module loads now (installed where modprobe looks): a write of
 *                     a name the file does not list registers it, as request_module("%s-iosched")
 *                     does (it is listed from then on); without the file, or for another name,
 *                     the write is EINVAL (no module registered it: not installed yet, e.g.
 *                     only the initramfs mounted)
 *   faults            <root>/emu-fail, read at every write: lines "<kind>:<glob> <ERRNO>"
 *                     (kind sysfs, procfs, ...; glob fnmatch()ed against the path below it;
 *                     ERRNO a name: EINVAL, EIO, EPERM, EBUSY): a matching write fails with it
 *                     and changes nothing (a managed IRQ's EIO, a refused elevator)
 *
 * Every other write goes to the file as it is. A live root ("/") is refused: the emulation
 * exists for fixture copies only.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostfs.h"
#include "macro.h"
#include "strv.h"
#include "test-util.h"

int __real_hostfs_new(const char *root, HostFs **ret);
int __wrap_hostfs_new(const char *root, HostFs **ret);

static char emu_root[PATH_MAX];

static const char *const kind_names[] = {
        [HOSTFS_SYSFS] = "sysfs", [HOSTFS_PROCFS] = "procfs", [HOSTFS_DEBUGFS] = "debugfs",
        [HOSTFS_RUN] = "run", [HOSTFS_MODPROBE_D] = "modprobe.d",
};

/* The default tunables of a new elevator instance (as captured: tests/fixtures/vm-6.12-*). */
static const struct {
        const char *elevator;
        const char *tunables[12];       /* "name=value" */
} defaults[] = {
        { "mq-deadline", { "async_depth=128", "fifo_batch=16", "front_merges=1", "prio_aging_expire=10000",
                           "read_expire=500", "write_expire=5000", "writes_starved=2" } },
        { "kyber", { "read_lat_nsec=2000000", "write_lat_nsec=10000000" } },
        { "bfq", { "back_seek_max=16384", "back_seek_penalty=2", "fifo_expire_async=250", "fifo_expire_sync=125",
                   "low_latency=1", "max_budget=0", "slice_idle=8", "slice_idle_us=8000", "strict_guarantees=0",
                   "timeout_sync=125" } },
};

/* Each disk's tunables as the copy had them at start, under the elevator it ran then: that
 * elevator's defaults on that disk (a table cannot know what the captured kernel derived, e.g.
 * async_depth from the tag depth). */
typedef struct Captured {
        char disk[64], elevator[32];
        char **tunables;        /* "name=value" */
} Captured;
static Captured captured[256];
static size_t n_captured;

static void read_line_at(int dirfd, const char *path, char *buf, size_t size) {
        buf[0] = 0;
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        buf[n > 0 ? strcspn(buf, "\n") < (size_t) n ? strcspn(buf, "\n") : (size_t) n : 0] = 0;
}

static void current_elevator(const char *text, char *ret, size_t size) {
        const char *lb = strchr(text, '['), *rb = lb ? strchr(lb, ']') : NULL;
        ret[0] = 0;
        if (lb && rb && (size_t) (rb - lb - 1) < size)
                snprintf(ret, size, "%.*s", (int) (rb - lb - 1), lb + 1);
}

static void capture_defaults(const char *root) {
        char path[PATH_MAX * 2], buf[512];
        snprintf(path, sizeof(path), "%s/sys/block", root);
        DIR *dd = opendir(path);
        if (!dd)
                return;
        int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent *de;
        while (rootfd >= 0 && (de = readdir(dd)) && n_captured < ELEMENTSOF(captured)) {
                if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(captured[0].disk))
                        continue;
                Captured *c = &captured[n_captured];
                snprintf(path, sizeof(path), "sys/block/%s/queue/scheduler", de->d_name);
                read_line_at(rootfd, path, buf, sizeof(buf));
                current_elevator(buf, c->elevator, sizeof(c->elevator));
                if (!c->elevator[0])
                        continue;
                snprintf(c->disk, sizeof(c->disk), "%s", de->d_name);
                snprintf(path, sizeof(path), "%s/sys/block/%s/queue/iosched", root, de->d_name);
                DIR *td = opendir(path);
                struct dirent *te;
                while (td && (te = readdir(td))) {
                        char rel[PATH_MAX], line[1024];
                        if (te->d_name[0] == '.')
                                continue;
                        snprintf(rel, sizeof(rel), "sys/block/%s/queue/iosched/%s", de->d_name, te->d_name);
                        read_line_at(rootfd, rel, buf, sizeof(buf));
                        snprintf(line, sizeof(line), "%s=%s", te->d_name, buf);
                        (void) strv_extend(&c->tunables, line);
                }
                if (td)
                        closedir(td);
                n_captured++;
        }
        if (rootfd >= 0)
                close(rootfd);
        closedir(dd);
}

static int errno_from_name(const char *s) {
        static const struct { const char *name; int e; } t[] = {
                { "EINVAL", EINVAL }, { "EIO", EIO }, { "EPERM", EPERM }, { "EBUSY", EBUSY }, { "EAGAIN", EAGAIN },
                { "ENOSPC", ENOSPC }, { "EACCES", EACCES }, { "ENODEV", ENODEV }, { "ENOENT", ENOENT },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                if (streq(s, t[i].name))
                        return t[i].e;
        return EIO;
}

/* The errno <root>/emu-fail gives a write of kind:path, 0 for none. */
static int injected_fault(HostFsKind kind, const char *path) {
        char file[PATH_MAX + 16], line[PATH_MAX + 64];
        snprintf(file, sizeof(file), "%s/emu-fail", emu_root);
        FILE *f = fopen(file, "re");
        if (!f)
                return 0;
        int e = 0;
        while (!e && fgets(line, sizeof(line), f)) {
                char *sp = strchr(line, ' '), *colon = strchr(line, ':');
                if (!sp || !colon || colon > sp)
                        continue;
                *sp = *colon = 0;
                sp[1 + strcspn(sp + 1, " \n")] = 0;
                if ((size_t) kind < ELEMENTSOF(kind_names) && kind_names[kind] && streq(line, kind_names[kind]) &&
                    fnmatch(colon + 1, path, FNM_PATHNAME) == 0)
                        e = errno_from_name(sp + 1);
        }
        fclose(f);
        return e;
}

/* queue/iosched below dir ("block/sda") as a new instance of elevator: a new directory (made
 * before the old one goes, so its inode differs) holding the elevator's defaults. */
static void new_iosched(int dirfd, const char *dir, const char *elevator) {
        char old[PATH_MAX], tmp[PATH_MAX], p[PATH_MAX * 2];
        snprintf(old, sizeof(old), "%s/queue/iosched", dir);
        snprintf(tmp, sizeof(tmp), "%s/queue/.iosched-new", dir);
        if (mkdirat(dirfd, tmp, 0755) < 0)
                return;
        const char *disk = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        char * const *mine = NULL;
        bool found = false;
        for (size_t i = 0; i < n_captured; i++)
                if (streq(captured[i].disk, disk) && streq(captured[i].elevator, elevator)) {
                        mine = captured[i].tunables;
                        found = true;   /* (none captured: an empty directory, as the copy had) */
                }
        STRV_FOREACH(t, mine) {
                const char *eq = strchr(*t, '=');
                snprintf(p, sizeof(p), "%s/%.*s", tmp, (int) (eq - *t), *t);
                int fd = openat(dirfd, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        dprintf(fd, "%s\n", eq + 1);
                        close(fd);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(defaults) && !found; i++) {
                if (!streq(defaults[i].elevator, elevator))
                        continue;
                for (size_t t = 0; t < ELEMENTSOF(defaults[i].tunables) && defaults[i].tunables[t]; t++) {
                        const char *eq = strchr(defaults[i].tunables[t], '=');
                        snprintf(p, sizeof(p), "%s/%.*s", tmp, (int) (eq - defaults[i].tunables[t]), defaults[i].tunables[t]);
                        int fd = openat(dirfd, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                        if (fd >= 0) {
                                dprintf(fd, "%s\n", eq + 1);
                                close(fd);
                        }
                }
        }
        _cleanup_strv_free_ char **names = NULL;
        int fd = openat(dirfd, old, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dd = fd >= 0 ? fdopendir(fd) : NULL;
        if (dd) {
                struct dirent *de;
                while ((de = readdir(dd)))
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                (void) strv_extend(&names, de->d_name);
                closedir(dd);
        } else if (fd >= 0)
                close(fd);
        STRV_FOREACH(n, names) {
                snprintf(p, sizeof(p), "%s/%s", old, *n);
                (void) unlinkat(dirfd, p, 0);
        }
        (void) unlinkat(dirfd, old, AT_REMOVEDIR);
        (void) renameat(dirfd, tmp, dirfd, old);
}

/* The elevators whose module loads now: <root>/emu-modules, one name a line (NULL: none). */
static char **loadable_modules(void) {
        char file[PATH_MAX + 16], line[256];
        char **names = NULL;
        snprintf(file, sizeof(file), "%s/emu-modules", emu_root);
        FILE *f = fopen(file, "re");
        if (!f)
                return NULL;
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, " \n")] = 0;
                if (line[0])
                        (void) strv_extend(&names, line);
        }
        fclose(f);
        return names;
}

static int emu_hook(void *userdata, HostFsKind kind, int dirfd, const char *path, const char *value) {
        int e = injected_fault(kind, path);
        if (e)
                return -e;
        size_t len = strlen(path), sl = strlen("/queue/scheduler");
        if (kind != HOSTFS_SYSFS || len <= sl || !streq(path + len - sl, "/queue/scheduler"))
                return 0;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *want = NULL;
        int r = test_read_scheduler_at(dirfd, path, value, &names, &want);
        if (r < 0)
                return r;
        char cur[64], buf[512];
        read_line_at(dirfd, path, buf, sizeof(buf));
        current_elevator(buf, cur, sizeof(cur));
        _cleanup_strv_free_ char **loadable = loadable_modules();
        r = test_emulate_scheduler_at(dirfd, path, value, loadable, true);
        if (r < 0)
                return r;
        if (!streq(cur, want)) {        /* elevator_switch(): the same elevator again is a no-op */
                _cleanup_free_ char *dir = strndup(path, len - sl);
                if (dir)
                        new_iosched(dirfd, dir, want);
        }
        return 1;
}

int __wrap_hostfs_new(const char *root, HostFs **ret) {
        int r = __real_hostfs_new(root, ret);
        if (r < 0)
                return r;
        if (hostfs_is_live(*ret)) {
                fprintf(stderr, "blkmqd-emu: refusing to emulate the kernel on the live machine: give --root a fixture copy\n");
                hostfs_free(*ret);
                *ret = NULL;
                return -EPERM;
        }
        if (!emu_root[0]) {
                snprintf(emu_root, sizeof(emu_root), "%s", hostfs_root(*ret));
                capture_defaults(emu_root);
        }
        hostfs_set_write_hook(*ret, emu_hook, NULL);
        return r;
}
