/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostfs_read_kept() on the live machine: what it reads equals a fresh hostfs_read(), a kept
 * file re-read at offset 0 shows the current value (sysfs/seq_file re-render, the kernel
 * behaviour it relies on), at most HOSTFS_KEPT_MAX files stay open, and closing by prefix
 * releases them. Reads only; no root needed.
 */
#include <dirent.h>
#include <errno.h>
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
                printf("SKIP: no live root\n");
                return 77;
        }

        size_t base = fd_count();

        /* /proc/uptime changes every 10 ms: a kept file must not return a stale first rendering */
        _cleanup_free_ char *a = NULL, *b = NULL;
        CHECK_INT(hostfs_read_kept(h, HOSTFS_PROCFS, "uptime", 0, &a), 0);
        struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        CHECK_INT(hostfs_read_kept(h, HOSTFS_PROCFS, "uptime", 0, &b), 0);
        CHECK(a && b && strcmp(a, b) != 0);

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

        hostfs_close_kept(h, HOSTFS_SYSFS, "devices/system/cpu/");
        hostfs_close_kept(h, HOSTFS_PROCFS, "");
        CHECK_INT(fd_count(), base);

        hostfs_free(h);
        return tap_finish("test-hostfs-kept");
}
