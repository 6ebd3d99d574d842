/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Block device discovery with libudev: coldplug by enumeration, then a monitor on
 * the "udev" source when systemd-udevd runs, or on raw kernel uevents ("kernel"
 * source) when it does not (containers, initramfs, CI machines). Only whole disks
 * (DEVTYPE=disk) are reported; partitions are ignored, their disk is what is tuned.
 * Uevents are coalesced per disk, leading edge (lib/debounce.h): a disk's first uevent is
 * reported at once; the rest of its burst (uevents until 100 ms of quiet after the report
 * ended) is reported once more, with its last action, at the latest 1 s after the first of
 * them. Coldplug is not delayed.
 */

#include <stdbool.h>
#include <systemd/sd-event.h>

typedef struct UeventMonitor UeventMonitor;

typedef enum DeviceAction {
        DEVICE_ACTION_ADD,      /* also coldplug */
        DEVICE_ACTION_CHANGE,
        DEVICE_ACTION_REMOVE,
        DEVICE_ACTION_UNINITIALIZED,    /* coldplug: a disk udev has not initialized yet (its add event follows) */
        DEVICE_ACTION_PARTITIONS,       /* a partition of this disk was added or changed (not debounced) */
        DEVICE_ACTION_PARTITION_REMOVE, /* this partition was removed (sysname is the partition's) */
} DeviceAction;

/* Called for each whole-disk event. sysname: the name sysfs shows, "sda", "cciss!c0d0" (libudev's
 * "cciss/c0d0" mapped back by disk_name_from_kernel()). Return value is ignored. */
typedef void (*on_device_event_t)(void *userdata, DeviceAction action, const char *sysname);

/*
 * Create the monitor and attach it to event. use_udev_source: listen to udevd's
 * processed events instead of raw kernel uevents. Returns 0 or -errno.
 */
int uevent_monitor_new(sd_event *event, bool use_udev_source, on_device_event_t cb, void *userdata, UeventMonitor **ret);
UeventMonitor *uevent_monitor_free(UeventMonitor *m);
static inline void uevent_monitor_freep(UeventMonitor **m) {
        uevent_monitor_free(*m);
}

/* Report every existing whole disk as DEVICE_ACTION_ADD. Returns the number reported or -errno. */
int uevent_monitor_coldplug(UeventMonitor *m);

/* "udev" or "kernel". */
const char *uevent_monitor_source(const UeventMonitor *m);
