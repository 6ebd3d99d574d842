/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A small domain layer over UMockdevTestbed (after bolt's tests/mock-sysfs.c): whole disks,
 * partitions, dm-multipath maps and legs as the kernel lays them out in sysfs, and udev's
 * database entries, in a testbed whose root blkmqd reads with --root.
 *
 * Disks are /sys/devices/virtual/block/<name> (the /sys/block/<name> and /sys/dev/block/<M:m>
 * links made by umockdev), with the uevent properties DEVTYPE, MAJOR, MINOR, DEVNAME, a
 * queue/ (rotational, scheduler, nr_requests, rq_affinity) and one mq/<n>/ per hardware queue.
 * Majors are from the kernel's LOCAL/EXPERIMENTAL range (Documentation/admin-guide/devices.txt
 * 120-127): no udev database of the machine the test runs on has entries for them.
 */

#include <stdbool.h>
#include <stdint.h>
#include <umockdev.h>

#define MOCK_MAJOR 120

/* Add a whole disk <name> with device number MOCK_MAJOR:minor. rotational: queue/rotational;
 * nr_hw_queues: the mq/<n> directories; sectors: the size attribute (0: no medium, as an
 * unattached loop device). umockdev sends the "add" uevent while the preload is active.
 * Returns the syspath (g_free()). */
char *mock_disk_add(UMockdevTestbed *bed, const char *name, unsigned minor, bool rotational,
                    unsigned nr_hw_queues, uint64_t sectors);

/* A partition <name> (DEVTYPE=partition) of the disk at disk_syspath. Returns the syspath. */
char *mock_partition_add(UMockdevTestbed *bed, const char *disk_syspath, const char *name, unsigned minor);

/* Make the disk a request-based dm-multipath map: dm/uuid "mpath-<wwid>", dm/name <alias>. */
void mock_disk_set_mpath_map(UMockdevTestbed *bed, const char *syspath, const char *wwid, const char *alias);

/* holders/<holder> of the disk, a link to the holder's directory (what dm_get_device() makes). */
void mock_disk_add_holder(UMockdevTestbed *bed, const char *syspath, const char *holder);

/* slaves/<lower> of the map (a link to the lower disk's directory, bd_link_disk_holder()). */
void mock_disk_add_slave(UMockdevTestbed *bed, const char *syspath, const char *lower);

/* Remove holders/<holder> or slaves/<lower> (dir "holders" or "slaves"), as
 * bd_unlink_disk_holder() does when a map's table goes. */
void mock_disk_unlink(UMockdevTestbed *bed, const char *syspath, const char *dir, const char *name);

/* Give the disk nr_hw_queues mq/<n> directories (adds the missing ones, removes the rest). */
void mock_disk_set_hw_queues(UMockdevTestbed *bed, const char *syspath, unsigned nr_hw_queues);

/* udev's database entry run/udev/data/b<MOCK_MAJOR>:<minor> of the testbed, "E:KEY=VALUE"
 * lines from the NULL-terminated key, value list ("I:" initialized mark included); NULL
 * first key: remove the entry. The path libudev reads under umockdev >= 0.17.18 too. */
void mock_udev_db_set(UMockdevTestbed *bed, unsigned minor, ...) __attribute__((sentinel));
