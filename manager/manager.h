/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The manager owns the sd-event loop and everything hanging off it: signals,
 * sd_notify, the udev monitor, the device registry, the policy config and the FUSE
 * tree. Pipeline per device event: gather facts (hostfs) -> evaluate (policies/) ->
 * apply (hostfs writes, originals recorded) -> update the FUSE tree.
 */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "apply.h"
#include "hostfs.h"
#include "registry.h"

typedef struct ManagerOptions {
        const char *root;               /* hostfs root, NULL = $BLKMQD_ROOT or "/" */
        const char *mountpoint;         /* FUSE mount point; NULL = do not mount */
        char **device_globs;            /* fnmatch() patterns of disks to manage; NULL = config Devices= or all */
        bool dry_run;                   /* compute and show, write nothing (wins over config Mode=) */
        const char *config_path;        /* NULL = BLKMQD_SYSCONFDIR/blkmqd.conf */
        const char *state_dir;          /* NULL = $STATE_DIRECTORY or /var/lib/blkmqd */
} ManagerOptions;

typedef struct Manager Manager;

/* Create the manager (does not start anything). Returns 0 or -errno. */
int manager_new(const ManagerOptions *options, Manager **ret);

/* Stop: restore every original value, unmount, free. Returns NULL. */
Manager *manager_free(Manager *m);

/*
 * Start: signals, udev monitor, coldplug, FUSE mount, READY=1.
 * Returns 0 or -errno (logged).
 */
int manager_startup(Manager *m);

/* Run the event loop until SIGTERM/SIGINT. Returns the loop's exit code or -errno. */
int manager_run(Manager *m);

/*
 * Re-read the configuration and re-evaluate every disk. On a bad config the last good
 * one stays in force. Returns 0, or -EINVAL (logged as "file:line: ...").
 */
int manager_reload(Manager *m);

/* Re-gather, re-evaluate and re-apply one disk by name (an event for it arrived). */
void manager_device_event(Manager *m, const char *name, bool removed);

/*
 * Restore every original value on every device, synchronously (apply_restore()); counts in *ret
 * (may be NULL). Returns 0, -EIO when some failed, -EBUSY when a disk had a run in progress.
 */
int manager_restore_all(Manager *m, RestoreCounts *ret);
