/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mock-disk.h"

static char *path_in(UMockdevTestbed *bed, const char *rel) {
        g_autofree char *root = umockdev_testbed_get_root_dir(bed);
        return g_build_filename(root, rel, NULL);
}

static void mkdir_p(const char *path) {
        if (g_mkdir_with_parents(path, 0755) < 0)
                g_error("mkdir %s: %s", path, g_strerror(errno));
}

char *mock_disk_add(UMockdevTestbed *bed, const char *name, unsigned minor, bool rotational,
                    unsigned nr_hw_queues, uint64_t sectors) {
        g_autofree char *parent_dir = path_in(bed, "sys/devices/virtual/block");
        g_autofree char *dev = g_strdup_printf("%u:%u\n", MOCK_MAJOR, minor);
        g_autofree char *major_s = g_strdup_printf("%u", MOCK_MAJOR), *minor_s = g_strdup_printf("%u", minor);
        g_autofree char *devname = g_strdup_printf("/dev/%s", name);
        /* the kernel's name has '/' where sysfs has '!' (cciss!c0d0 is /dev/cciss/c0d0) */
        g_strdelimit(devname, "!", '/');
        g_autofree char *size = g_strdup_printf("%" PRIu64 "\n", sectors);
        g_autoptr(GPtrArray) attrs = g_ptr_array_new_with_free_func(g_free);
        const char *fixed[] = {
                "dev", dev,
                "size", size,
                "removable", "0\n",
                "queue/rotational", rotational ? "1\n" : "0\n",
                "queue/scheduler", "[mq-deadline] none\n",
                "queue/nr_requests", "256\n",
                "queue/rq_affinity", "1\n",
                NULL,
        };
        const char *props[] = { "DEVTYPE", "disk", "MAJOR", major_s, "MINOR", minor_s, "DEVNAME", devname, NULL };

        for (size_t i = 0; fixed[i]; i++)
                g_ptr_array_add(attrs, g_strdup(fixed[i]));
        /* queue/ and mq/ are there when the kernel sends "add": device_add_disk() holds the
         * disk's uevent back until blk_register_queue() made them (block/genhd.c) */
        for (unsigned i = 0; i < nr_hw_queues; i++) {
                g_ptr_array_add(attrs, g_strdup_printf("mq/%u/cpu_list", i));
                g_ptr_array_add(attrs, g_strdup_printf("%u\n", i));
                g_ptr_array_add(attrs, g_strdup_printf("mq/%u/nr_tags", i));
                g_ptr_array_add(attrs, g_strdup("256\n"));
                g_ptr_array_add(attrs, g_strdup_printf("mq/%u/nr_reserved_tags", i));
                g_ptr_array_add(attrs, g_strdup("0\n"));
        }
        g_ptr_array_add(attrs, NULL);

        mkdir_p(parent_dir);
        char *syspath = umockdev_testbed_add_devicev(bed, "block", name, "/sys/devices/virtual/block",
                                                     (char **) attrs->pdata, (char **) props);
        g_assert_nonnull(syspath);
        return syspath;
}

char *mock_partition_add(UMockdevTestbed *bed, const char *disk_syspath, const char *name, unsigned minor) {
        g_autofree char *dev = g_strdup_printf("%u:%u\n", MOCK_MAJOR, minor);
        g_autofree char *major_s = g_strdup_printf("%u", MOCK_MAJOR), *minor_s = g_strdup_printf("%u", minor);
        const char *attrs[] = { "dev", dev, "size", "1024\n", "partition", "1\n", "start", "2048\n", NULL };
        const char *props[] = { "DEVTYPE", "partition", "MAJOR", major_s, "MINOR", minor_s, "PARTN", "1", NULL };
        char *syspath = umockdev_testbed_add_devicev(bed, "block", name, disk_syspath, (char **) attrs, (char **) props);
        g_assert_nonnull(syspath);
        return syspath;
}

void mock_disk_set_mpath_map(UMockdevTestbed *bed, const char *syspath, const char *wwid, const char *alias) {
        g_autofree char *uuid = g_strdup_printf("mpath-%s\n", wwid), *name = g_strdup_printf("%s\n", alias);
        umockdev_testbed_set_attribute(bed, syspath, "dm/uuid", uuid);
        umockdev_testbed_set_attribute(bed, syspath, "dm/name", name);
        umockdev_testbed_set_attribute(bed, syspath, "queue/scheduler", "[none] mq-deadline\n");
}

void mock_disk_add_holder(UMockdevTestbed *bed, const char *syspath, const char *holder) {
        g_autofree char *name = g_strdup_printf("holders/%s", holder), *target = g_strdup_printf("../../%s", holder);
        umockdev_testbed_set_attribute_link(bed, syspath, name, target);
}

void mock_disk_add_slave(UMockdevTestbed *bed, const char *syspath, const char *lower) {
        g_autofree char *name = g_strdup_printf("slaves/%s", lower), *target = g_strdup_printf("../../%s", lower);
        umockdev_testbed_set_attribute_link(bed, syspath, name, target);
}

void mock_disk_unlink(UMockdevTestbed *bed, const char *syspath, const char *dir, const char *name) {
        g_autofree char *rel = g_build_filename(syspath, dir, name, NULL);
        g_autofree char *path = path_in(bed, rel);
        if (unlink(path) < 0)
                g_error("unlink %s: %s", path, g_strerror(errno));
}

void mock_disk_set_hw_queues(UMockdevTestbed *bed, const char *syspath, unsigned nr_hw_queues) {
        for (unsigned i = 0; i < 64; i++) {
                g_autofree char *rel = g_strdup_printf("%s/mq/%u", syspath, i);
                g_autofree char *dir = path_in(bed, rel);
                if (i < nr_hw_queues) {
                        g_autofree char *cpu_list = g_strdup_printf("mq/%u/cpu_list", i), *cpus = g_strdup_printf("%u\n", i);
                        g_autofree char *tags = g_strdup_printf("mq/%u/nr_tags", i);
                        g_autofree char *reserved = g_strdup_printf("mq/%u/nr_reserved_tags", i);
                        umockdev_testbed_set_attribute(bed, syspath, cpu_list, cpus);
                        umockdev_testbed_set_attribute(bed, syspath, tags, "256\n");
                        umockdev_testbed_set_attribute(bed, syspath, reserved, "0\n");
                } else if (access(dir, F_OK) == 0) {
                        const char *files[] = { "cpu_list", "nr_tags", "nr_reserved_tags" };
                        for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
                                g_autofree char *f = g_build_filename(dir, files[k], NULL);
                                (void) unlink(f);
                        }
                        if (rmdir(dir) < 0)
                                g_error("rmdir %s: %s", dir, g_strerror(errno));
                }
        }
}

void mock_udev_db_set(UMockdevTestbed *bed, unsigned minor, ...) {
        g_autofree char *dir = path_in(bed, "run/udev/data");
        g_autofree char *file = g_strdup_printf("%s/b%u:%u", dir, MOCK_MAJOR, minor);
        g_autoptr(GString) s = g_string_new("I:1\n");
        va_list ap;
        const char *k;
        bool any = false;

        mkdir_p(dir);
        va_start(ap, minor);
        while ((k = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);
                g_string_append_printf(s, "E:%s=%s\n", k, v);
                any = true;
        }
        va_end(ap);
        if (!any) {
                (void) unlink(file);
                return;
        }
        g_autoptr(GError) error = NULL;
        if (!g_file_set_contents(file, s->str, -1, &error))
                g_error("%s: %s", file, error->message);
}
