/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <libudev.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "debounce.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "uevent-monitor.h"

/* Room for bursts (hundreds of loop attach/detach events) while the loop is busy. */
#define MONITOR_RCVBUF (8 * 1024 * 1024)

/* How late the trailing action may run. Not 0: sd_event_add_time() takes 0 as its default
 * of 250 ms (sd_event_add_time(3)), which put 100..350 ms instead of 100 ms behind a burst
 * (measured: 6.12 VM, received -> write started p50 232 ms with the 100 ms window). */
#define DEBOUNCE_TIMER_ACCURACY_USEC UINT64_C(1000)

struct UeventMonitor {
        struct udev *udev;
        struct udev_monitor *monitor;
        sd_event *event;
        sd_event_source *source;
        sd_event_source *timer;         /* the earliest debounced disk's due time */
        Debouncer debounce;
        bool udev_source;
        on_device_event_t cb;
        void *userdata;
};

/*
 * The disk's name as sysfs has it (block/<name>): libudev's sysname turns sysfs's '!' back
 * into the '/' of the kernel's device name ("cciss/c0d0"), which is no path component.
 * NULL when it does not fit a disk name (the manager refuses it with a log line).
 */
static const char *disk_name(struct udev_device *d, char *buf, size_t size) {
        const char *sysname = udev_device_get_sysname(d);
        if (!sysname)
                return NULL;
        return disk_name_from_kernel(sysname, buf, size) ?: sysname;
}

static bool is_disk(struct udev_device *d) {
        const char *devtype = udev_device_get_devtype(d);
        return devtype && streq(devtype, "disk");
}

static bool is_partition(struct udev_device *d) {
        const char *devtype = udev_device_get_devtype(d);
        return devtype && streq(devtype, "partition");
}

/*
 * A partition's uevent: blkmqd lists whole disks only, and says so for each partition (the
 * not_listed file). An add or change names the disk, whose partitions are looked at again; a
 * removal names the partition (its disk may be gone already).
 */
static void on_partition(UeventMonitor *m, struct udev_device *d, const char *action, const char *name) {
        if (streq(action, "remove")) {
                m->cb(m->userdata, DEVICE_ACTION_PARTITION_REMOVE, name);
                return;
        }
        struct udev_device *disk = udev_device_get_parent_with_subsystem_devtype(d, "block", "disk");
        char buf[256];
        const char *disk_name_ = disk ? disk_name(disk, buf, sizeof(buf)) : NULL;
        if (disk_name_)
                m->cb(m->userdata, DEVICE_ACTION_PARTITIONS, disk_name_);
}

static int arm_timer(UeventMonitor *m);

static uint64_t now_usec(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000) + (uint64_t) ts.tv_nsec / 1000;
}

/* Act upon name now; its quiet window runs from the end of the action (lib/debounce.h). */
static void act(UeventMonitor *m, DeviceAction action, const char *name) {
        m->cb(m->userdata, action, name);
        if (debounce_acted(&m->debounce, name, now_usec()) < 0)
                log_device_debug(name, "No memory for its uevent window, its next uevent is taken at once");
}

/* Disks whose merged uevents are due: one trailing action each, with the last action. */
static int on_debounce_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        UeventMonitor *m = userdata;
        DebounceEntry e;
        uint64_t now;

        if (sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
                now = usec;
        while (debounce_pop_due(&m->debounce, now, &e) > 0) {
                static const char * const action[] = { "add", "change", "remove" };
                char name[256];
                snprintf(name, sizeof(name), "%s", e.name);     /* e.name is the debouncer's */
                log_device_debug(name, "%u uevent(s) merged in %.0f ms -> one trailing %s", e.events,
                                 (double) (now - e.first_usec) / 1000, action[e.action]);
                act(m, e.action, name);
        }
        return arm_timer(m);
}

static int arm_timer(UeventMonitor *m) {
        uint64_t due = debounce_next_due(&m->debounce);
        if (due == UINT64_MAX)
                return m->timer ? sd_event_source_set_enabled(m->timer, SD_EVENT_OFF) : 0;
        if (!m->timer)
                return sd_event_add_time(m->event, &m->timer, CLOCK_MONOTONIC, due, DEBOUNCE_TIMER_ACCURACY_USEC,
                                         on_debounce_timer, m);
        int r = sd_event_source_set_time(m->timer, due);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
        return r;
}

static int on_monitor(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        UeventMonitor *m = userdata;
        int r;

        for (;;) {
                struct udev_device *d = udev_monitor_receive_device(m->monitor);
                if (!d)
                        break;
                char buf[256];
                const char *action = udev_device_get_action(d), *name = disk_name(d, buf, sizeof(buf));
                if (action && name && is_disk(d)) {
                        /* the time of this event, not of the loop iteration: an action taken
                         * for an earlier event of this batch may have taken a while */
                        uint64_t now = now_usec();
                        DeviceAction a = streq(action, "remove") ? DEVICE_ACTION_REMOVE :
                                         streq(action, "add") ? DEVICE_ACTION_ADD : DEVICE_ACTION_CHANGE;
                        r = debounce_add(&m->debounce, name, a, now);
                        log_device_debug(name, "uevent %s (%s source)%s", action, uevent_monitor_source(m),
                                         r == DEBOUNCE_MERGED ? ", merged into the next evaluation" : "");
                        if (r == DEBOUNCE_NOW)
                                act(m, a, name);
                        else if (r < 0)
                                m->cb(m->userdata, a, name);    /* ENOMEM: at once, nothing merged */
                } else if (action && name && is_partition(d))
                        on_partition(m, d, action, name);
                udev_device_unref(d);
        }
        r = arm_timer(m);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the uevent debounce timer, ignoring: %m");
        return 0;
}

int uevent_monitor_new(sd_event *event, bool use_udev_source, on_device_event_t cb, void *userdata, UeventMonitor **ret) {
        assert(ret);
        _cleanup_(uevent_monitor_freep) UeventMonitor *m = calloc(1, sizeof(UeventMonitor));
        int r;

        if (!m)
                return -ENOMEM;
        m->cb = cb;
        m->userdata = userdata;
        m->event = sd_event_ref(event);
        m->udev_source = use_udev_source;

        m->udev = udev_new();
        if (!m->udev)
                return -ENOMEM;
        m->monitor = udev_monitor_new_from_netlink(m->udev, use_udev_source ? "udev" : "kernel");
        if (!m->monitor)
                return negative_errno();
        (void) udev_monitor_set_receive_buffer_size(m->monitor, MONITOR_RCVBUF);
        r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, "block", "disk");
        if (r >= 0)     /* for the not_listed file only */
                r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, "block", "partition");
        if (r >= 0)
                r = udev_monitor_enable_receiving(m->monitor);
        if (r >= 0)
                r = sd_event_add_io(event, &m->source, udev_monitor_get_fd(m->monitor), EPOLLIN, on_monitor, m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

UeventMonitor *uevent_monitor_free(UeventMonitor *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->source);
        sd_event_source_disable_unref(m->timer);
        debounce_done(&m->debounce);
        sd_event_unref(m->event);
        udev_monitor_unref(m->monitor);
        udev_unref(m->udev);
        free(m);
        return NULL;
}

int uevent_monitor_coldplug(UeventMonitor *m) {
        assert(m);
        struct udev_enumerate *e = udev_enumerate_new(m->udev);
        struct udev_list_entry *item;
        int r, n = 0;

        if (!e)
                return -ENOMEM;
        r = udev_enumerate_add_match_subsystem(e, "block");
        if (r >= 0)
                r = udev_enumerate_add_match_property(e, "DEVTYPE", "disk");
        if (r >= 0)
                r = udev_enumerate_scan_devices(e);
        if (r < 0) {
                udev_enumerate_unref(e);
                return r;
        }
        udev_list_entry_foreach(item, udev_enumerate_get_list_entry(e)) {
                struct udev_device *d = udev_device_new_from_syspath(m->udev, udev_list_entry_get_name(item));
                if (!d)
                        continue;
                char buf[256];
                const char *name = disk_name(d, buf, sizeof(buf));
                /* udev source: a disk udev has not finished yet (its rules may still be
                 * writing queue attributes, e.g. a udev rule setting the scheduler) comes
                 * with udev's "add" event, after the rules ran; taking it now would evaluate
                 * it before them and fight the rule afterwards (issue 12). */
                if (name && is_disk(d) && m->udev_source && udev_device_get_is_initialized(d) <= 0) {
                        log_device_info(name, "Not initialized by udev yet, waiting for its add event");
                        m->cb(m->userdata, DEVICE_ACTION_UNINITIALIZED, name);
                } else if (name && is_disk(d)) {
                        m->cb(m->userdata, DEVICE_ACTION_ADD, name);
                        n++;
                }
                udev_device_unref(d);
        }
        udev_enumerate_unref(e);
        return n;
}

const char *uevent_monitor_source(const UeventMonitor *m) {
        assert(m);
        return m->udev_source ? "udev" : "kernel";
}
