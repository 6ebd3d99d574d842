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
#include "writer.h"

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
 * Synchronous apply: every write done on this thread (tests, fixture runs).
 * Apply d->plan for every knob.
 * Returns the number of values written or originals dropped (0 when nothing changed; the
 * caller persists originals when > 0); failures are kept in
 * d->applied[] and logged, never returned: one disk's failure does not stop the others.
 * A disk with a run in progress (apply_start()) is left alone: returns 0.
 */
int apply_device(HostFs *h, Device *d, const ApplyOptions *o);

/*
 * Put back every original value blkmqd recorded for d (and forget it on success).
 * Returns the number of values restored, or the first -errno (the others are still tried).
 */
int apply_restore(HostFs *h, Device *d);

/* True when d has any recorded original (blkmqd changed something on it). */
bool apply_has_originals(const Device *d);

/*
 * Asynchronous apply, as the daemon does it: the same decisions, made on the loop thread, with
 * each write handed to writer (daemon/writer.h) and the run continued when it returned. While a
 * write is in flight its knob reads "pending", past the writer's deadline "timeout (still
 * pending)"; when it returns, the outcome is recorded as a synchronous write's would be.
 */
typedef struct Applier {
        HostFs *hostfs;
        Writer *writer;                 /* NULL: writes are done inline (apply_device()) */
        const Registry *registry;       /* where a returning write finds its disk again (by name) */
        /* the run on d ended (d->run.written, d->run.error tell how); d->run.active is false */
        void (*on_finished)(Device *d, void *userdata);
        /* a write on d is about to be handed to the writer: originals it recorded are to be
         * persisted now (a crash while the write hangs must not lose them) */
        void (*on_submit)(Device *d, void *userdata);
        /* the write in flight on d passed its deadline (d->run.timed_out is set) */
        void (*on_timeout)(Device *d, void *userdata);
        void *userdata;
        Device *inline_device;          /* private: the disk of a synchronous run */
} Applier;

/*
 * Start applying d->plan (o: as apply_device()), or putting d's originals back (restore).
 * Returns 1 when a write is in flight (on_finished runs later), 0 when the run ended already
 * (on_finished ran), -EBUSY when a run is in progress on d (nothing done), -ENOMEM.
 */
int apply_start(Applier *a, Device *d, const ApplyOptions *o);
int apply_restore_start(Applier *a, Device *d);

/* True while d has a write in flight: none of its queue attributes may be read. */
static inline bool apply_busy(const Device *d) {
        return d->run.job;
}
