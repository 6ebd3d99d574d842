/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * apply: carry a plan out through hostfs. For every knob: read the current value,
 * do nothing if it already is the wanted one, record the original before the first
 * write, write once, read back, and triage errors like irqbalance's activate.c:
 *   transient   (EAGAIN, EBUSY, EINTR)                     -> retried at the next evaluation
 *   unsupported (ENOENT, EINVAL, EACCES, EROFS, EPERM, EIO) -> marked, logged once, not retried
 *   other                                                   -> reported, retried next time
 * A value blkmqd wrote that later reads differently was changed by someone else: it is
 * reported ("changed externally to X", logged once) and not fought unless reassert is set.
 * Originals are restored by apply_restore().
 */

#include <stdbool.h>

#include "hostfs.h"
#include "registry.h"

typedef enum WriteErrorClass {
        WRITE_ERROR_TRANSIENT,
        WRITE_ERROR_UNSUPPORTED,
        WRITE_ERROR_OTHER,
} WriteErrorClass;

/* Triage a negative errno from a sysfs/procfs write. */
WriteErrorClass apply_classify_error(int error);

typedef struct ApplyOptions {
        bool dry_run;           /* compute and record what would be written; write nothing */
        bool reassert;          /* rewrite values changed by someone else */
        bool verify_only;       /* write nothing: only notice values changed by someone else */
} ApplyOptions;

/*
 * Apply d->plan for every knob.
 * Returns the number of values written or originals dropped (0 when nothing changed; the
 * caller persists originals when > 0); failures are kept in
 * d->applied[] and logged, never returned: one disk's failure does not stop the others.
 */
int apply_device(HostFs *h, Device *d, const ApplyOptions *o);

/*
 * Put back every original value blkmqd recorded for d (and forget it on success).
 * Returns the number of values restored, or the first -errno (the others are still tried).
 */
int apply_restore(HostFs *h, Device *d);

/* True when d has any recorded original (blkmqd changed something on it). */
bool apply_has_originals(const Device *d);
