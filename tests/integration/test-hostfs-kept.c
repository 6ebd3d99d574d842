/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostfs_read_kept() on the live machine: what it reads equals a fresh hostfs_read(), a kept
 * file re-read at offset 0 shows the current value (sysfs/seq_file re-render, the kernel
 * behaviour it relies on), at most HOSTFS_KEPT_MAX files stay open, and closing by prefix
 * releases them. hostfs_read_kept_at(): a handle re-reads its kept file (fresh, no new open,
 * the same file hostfs_read_kept() keeps for the path); once the file is closed (by prefix, or
 * evicted and its slot taken by another path) the handle reads its own path again, never the
 * slot's new file. Reads only; no root needed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "hostfs.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static size_t fd_count(void) {
        size_t n = 0;
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return 0;
        for (struct dirent *de; (de = readdir(d)); )
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

int main(void) {
        HostFs *h = NULL;
        if (hostfs_new("/", &h) < 0 || !hostfs_is_live(h)) {
                TAP_FAIL("hostfs_new(\"/\") is no live root");
                return tap_finish("test-hostfs-kept");
        }

        size_t base = fd_count();

        /* /proc/uptime changes every 10 ms: a kept file must not return a stale first rendering */
        _cleanup_free_ char *a = NULL, *b = NULL;
        CHECK_INT(hostfs_read_kept(h, HOSTFS_PROCFS, "uptime", 0, &a), 0);
        struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        CHECK_INT(hostfs_read_kept(h, HOSTFS_PROCFS, "uptime", 0, &b), 0);
        CHECK(a && b && strcmp(a, b) != 0);

        /* a handle on uptime: kept, re-read fresh through the handle, no new descriptor */
        HostFsKept up = {}, up_first;
        const char *t;
        _cleanup_free_ char *by_path = NULL;
        double u1 = 0, u2 = 0, idle;
        hostfs_close_kept(h, HOSTFS_PROCFS, "");
        CHECK_INT(hostfs_read_kept_at(h, &up, HOSTFS_PROCFS, 0, &t, "%s", "uptime"), 0);
        CHECK(up.slot != 0);
        CHECK(sscanf(t, "%lf %lf", &u1, &idle) == 2);
        up_first = up;
        size_t with_up = fd_count();
        CHECK_INT(with_up, base + 1);
        nanosleep(&ts, NULL);
        uint64_t reads = hostfs_read_count(h, HOSTFS_PROCFS);
        CHECK_INT(hostfs_read_kept_at(h, &up, HOSTFS_PROCFS, 0, &t, "%s", "uptime"), 0);
        CHECK(sscanf(t, "%lf %lf", &u2, &idle) == 2 && u2 > u1);
        CHECK_INT(hostfs_read_count(h, HOSTFS_PROCFS), reads + 1);
        CHECK(up.slot == up_first.slot && up.generation == up_first.generation);
        CHECK_INT(fd_count(), with_up);
        /* the path's kept file is the handle's: hostfs_read_kept() opens nothing more */
        CHECK_INT(hostfs_read_kept(h, HOSTFS_PROCFS, "uptime", 0, &by_path), 0);
        CHECK_INT(fd_count(), with_up);
        /* closed: the handle is stale, the path is opened again */
        hostfs_close_kept(h, HOSTFS_PROCFS, "");
        CHECK_INT(fd_count(), base);
        CHECK_INT(hostfs_read_kept_at(h, &up, HOSTFS_PROCFS, 0, &t, "%s", "uptime"), 0);
        CHECK(sscanf(t, "%lf %lf", &u1, &idle) == 2);
        CHECK(up.slot != 0 && !(up.slot == up_first.slot && up.generation == up_first.generation));
        CHECK_INT(fd_count(), base + 1);
        up_first = up;

        /* many sysfs attributes: equal to hostfs_read(), and never more than 512 kept open */
        _cleanup_strv_free_ char **cpus = NULL;
        size_t files = 0, max_fds = base;
        CHECK_INT(hostfs_list(h, HOSTFS_SYSFS, "devices/system/cpu", &cpus), 0);
        static const char * const attrs[] = { "online", "uevent", "topology/core_id", "topology/physical_package_id",
                                               "topology/core_cpus_list", "topology/die_id", "cache/index0/size",
                                               "cache/index0/level", "cache/index1/size", "cache/index2/size" };
        for (unsigned round = 0; round < 2; round++)
                for (size_t i = 0; i < 64; i++)
                        STRV_FOREACH(c, cpus)
                                for (size_t k = 0; k < ELEMENTSOF(attrs); k++) {
                                        char path[256];
                                        _cleanup_free_ char *x = NULL, *y = NULL;
                                        /* the same attribute under 64 spellings ("cpu0//online") = 64 kept entries */
                                        snprintf(path, sizeof(path), "devices/system/cpu/%s/%.*s%s", *c, (int) i, "////////////////////////////////////////////////////////////////////", attrs[k]);
                                        if (hostfs_read(h, HOSTFS_SYSFS, path, &x) < 0)
                                                continue;
                                        CHECK_INT(hostfs_read_kept(h, HOSTFS_SYSFS, path, 0, &y), 0);
                                        if (y && !streq(x, y) && !strstr(path, "uevent"))
                                                TAP_FAIL("%s: kept read \"%s\" != fresh \"%s\"", path, y, x);
                                        files += round == 0;
                                        size_t n = fd_count();
                                        max_fds = n > max_fds ? n : max_fds;
                                }
        printf("%zu distinct paths read kept, fds %zu before, at most %zu\n", files, base, max_fds);
        CHECK(files > 512);             /* enough to need eviction */
        CHECK(max_fds <= base + 512 + 1);       /* + the directory fd_count() itself opens */
        CHECK(max_fds >= base + 256);   /* and files are kept at all */

        /* uptime was evicted meanwhile, its slot taken by a sysfs attribute: the old handle reads
         * uptime, not that attribute */
        CHECK_INT(hostfs_read_kept_at(h, &up_first, HOSTFS_PROCFS, 0, &t, "%s", "uptime"), 0);
        CHECK(sscanf(t, "%lf %lf", &u1, &idle) == 2);
        HostFsKept stale = up_first;
        hostfs_close_kept(h, HOSTFS_PROCFS, "");
        for (size_t i = 0; i < 600; i++) {     /* refill every slot with cpu attributes */
                char path[256];
                _cleanup_free_ char *x = NULL;
                snprintf(path, sizeof(path), "devices/system/cpu/%.*sonline", (int) (i % 64), "////////////////////////////////////////////////////////////////");
                if (i >= 64)
                        snprintf(path, sizeof(path), "devices/system/cpu/%s/%.*scache/index0/level", cpus[i % strv_length(cpus)],
                                 (int) (i / 64 % 64), "////////////////////////////////////////////////////////////////");
                (void) hostfs_read_kept(h, HOSTFS_SYSFS, path, 0, &x);
        }
        CHECK_INT(hostfs_read_kept_at(h, &stale, HOSTFS_PROCFS, 0, &t, "%s", "uptime"), 0);
        CHECK(sscanf(t, "%lf %lf", &u1, &idle) == 2);
        CHECK_INT(hostfs_read_kept_at(h, &stale, HOSTFS_SYSFS, 0, &t, "%s", "devices/system/cpu/online"), 0);
        CHECK(strchr(t, '.') == NULL);  /* a stale handle of another kind is not used either */

        hostfs_close_kept(h, HOSTFS_SYSFS, "devices/system/cpu/");
        hostfs_close_kept(h, HOSTFS_PROCFS, "");
        CHECK_INT(fd_count(), base);

        hostfs_free(h);
        return tap_finish("test-hostfs-kept");
}
