/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * apply: carry a plan out through hostfs. For every knob: read the current value,
 * do nothing if it already is the wanted one, record the original before the first
 * write, write once, read back, and triage errors like irqbalance's activate.c:
 *   transient   (EAGAIN, EBUSY, EINTR)                     -> retried with backoff
 *   unsupported (ENOENT, EINVAL, EACCES, EROFS, EPERM, EIO) -> marked, logged once, not retried
 * except an elevator switch refused with EINVAL because the kernel has no such elevator
 * registered yet (not listed in queue/scheduler, a module may still bring it: apply.c
 * elevator_not_loaded(), block/elevator.c elevator_change() on 6.1 and 6.12): an error, retried
 * with backoff, applied/elevator and explain (rule elevator-not-loaded) say when.
 *   other                                                   -> reported once, retried with backoff
 * A write the kernel refused changed nothing: its original is dropped again. A value blkmqd
 * wrote that later reads differently was changed by someone else: it is reported ("changed
 * externally to X", logged once) and not fought unless reassert is set; with reassert, a
 * rewrite overwritten again is a write war and further rewrites back off exponentially
 * (APPLY_BACKOFF_FIRST_USEC doubling up to APPLY_BACKOFF_MAX_USEC), as do failed writes that
 * may pass. IRQ vectors follow the same rules per vector and are logged as one line per disk
 * when their summary changes. apply_restore() puts originals back unless someone else changed
 * the value since.
 */

#include <stdbool.h>
#include <stdint.h>

#include "hostfs.h"
#include "macro.h"
#include "registry.h"
#include "writer.h"

typedef enum WriteErrorClass {
        WRITE_ERROR_TRANSIENT,
        WRITE_ERROR_UNSUPPORTED,
        WRITE_ERROR_OTHER,
} WriteErrorClass;

/* Triage a negative errno from a sysfs/procfs write. */
WriteErrorClass apply_classify_error(int error);

/*
 * Dry-run in place of a write of wanted over current: a's state is dry-run ("would write
 * <wanted> (now <current>)") and its value wanted; one info line "dry-run: would set <label>
 * <current> -> <wanted>" when that is news (another state or value before).
 */
void apply_dry_run(const Device *d, Applied *a, const char *label, const char *current, const char *wanted);

/*
 * What a journal record about one knob of one disk says happened (apply_log_knob()). Each kind
 * has its MESSAGE_ID (host/log.h; units/blkmqd.catalog explains them) and a process-wide
 * counter, the metrics' blkmqd_*_total families (docs/METRICS.md): one record, one count.
 */
typedef enum KnobRecord {
        KNOB_RECORD_WRITE,      /* blkmqd wrote new over old: BLKMQD_MESSAGE_WRITE, notice */
        KNOB_RECORD_RESTORE,    /* blkmqd put back new, the value before it changed old: BLKMQD_MESSAGE_RESTORE, notice */
        KNOB_RECORD_EXTERNAL,   /* someone else changed what blkmqd wrote or kept: BLKMQD_MESSAGE_EXTERNAL_CHANGE */
        KNOB_RECORD_FAILED,     /* a write or a restore failed: BLKMQD_MESSAGE_WRITE_FAILED, warning */
        KNOB_RECORD_NOTE,       /* about the knob, nothing happened to it (a write war over): no MESSAGE_ID, not counted */
        _KNOB_RECORD_MAX,
} KnobRecord;

/*
 * One journal record about knob (a Knob's name, "iosched.<elevator>.<tunable>", ...) of d, at
 * level, with DEVICE=, BLKMQD_KNOB=knob, the MESSAGE_ID of what, BLKMQD_OLD_VALUE=old and
 * BLKMQD_NEW_VALUE=new (each left out when NULL); error: a -errno or errno for ERRNO= and %m,
 * 0 for none. Counted in apply_knob_records() whatever the log level.
 */
void apply_log_knob(const Device *d, const char *knob, KnobRecord what, int level, int error, const char *old,
                    const char *new, const char *fmt, ...) _printf_(8, 9);

/* How many records of what this process logged (KNOB_RECORD_NOTE: 0). */
uint64_t apply_knob_records(KnobRecord what);
/* Count one record of kind what logged elsewhere (a module parameter's, apply/modules.c). Loop thread. */
void apply_count_knob_record(KnobRecord what);

/* Pacing of rewrites in a write war and of retries after a failed write: 10 s, 20 s, ... 1 h. */
#define APPLY_BACKOFF_FIRST_USEC (UINT64_C(10) * 1000000)
#define APPLY_BACKOFF_MAX_USEC   (UINT64_C(3600) * 1000000)

typedef struct ApplyOptions {
        bool dry_run;           /* compute and record what would be written; write nothing */
        bool reassert;          /* rewrite values changed by someone else (with backoff in a write war) */
        bool verify_only;       /* write nothing: only notice values changed by someone else */
        uint64_t now_usec;      /* CLOCK_MONOTONIC time of this pass in µs; 0 = read the clock */
} ApplyOptions;

/*
 * Whether a knob's original (a->original) may be put back within this run: not in a verify
 * (o->verify_only); in a dry run a says what would be put back instead. The callers' restore
 * writes follow only when this is true.
 */
bool apply_restore_may_write(Applied *a, const ApplyOptions *o);

/* The delay before the next write at backoff level (>= 1): 10 s * 2^(level-1), at most 1 h. */
uint64_t apply_backoff_delay(unsigned level);

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
 * What blkmqd did to d, as the policy's history (policies/history.h): the disk's part of *ret
 * (elevator_before, elevator_held, elevator_unloaded with its attempts and retry delay,
 * rq_affinity_before, nr_requests_before, irq_written, irqs) from the recorded originals and
 * states in d->applied, d->irq_applied and d->elevator_unloaded, for an evaluation: a decision
 * is made from the values blkmqd found, so carrying it out does not change it. d's facts are
 * not touched (their IRQ map follows with disk_facts_remap_irqs()).
 *   d:        the disk (its facts are not read)
 *   reassert: the config's Reassert= (elevator_held only without it)
 *   ret:      filled in its disk's part, which must hold nothing (POLICY_HISTORY_INIT); the
 *             modules' part (modules_history()) is left; policy_history_done() frees it
 * The one place the manager (manager/pipeline.c) and the fixture tests take this history from.
 * Returns 0 or -ENOMEM (*ret's disk's part then unchanged).
 */
int apply_history(const Device *d, bool reassert, PolicyHistory *ret);

typedef struct RestoreCounts {
        unsigned restored;      /* originals written back */
        unsigned failed;        /* originals whose write failed (kept for the next restore) */
        unsigned left;          /* originals not written: someone else changed the value since blkmqd wrote it */
} RestoreCounts;

/*
 * Put back every original value blkmqd recorded for d (and forget it on success), except where
 * the value now is neither what blkmqd wrote nor the original: that is another tool's value and
 * is left (the original forgotten). Adds to *counts (NULL: not counted).
 * Returns the number of values restored (>= 0), or -EBUSY while a run is in progress on d;
 * failures are logged and counted, and never hide the values that were restored.
 */
int apply_restore(HostFs *h, Device *d, RestoreCounts *counts);

/*
 * The earliest time, CLOCK_MONOTONIC µs, after `after` at which a failed write of d that may
 * pass (applied/ `error` with a retry backoff: an elevator whose module had not registered it
 * yet, EBUSY, ENOSPC on an IRQ's CPUs) may be tried again: a queue knob, an elevator tunable or
 * a vector. 0 when none waits past `after` (a due retry waits for the next evaluation or the
 * periodic verify). The manager wakes up then (manager/verify.c manager_update_retry_timer()).
 */
uint64_t apply_next_retry_usec(const Device *d, uint64_t after);

/* True when d has any recorded original (blkmqd changed something on it). */
bool apply_has_originals(const Device *d);

/*
 * Forget queue knob k's original (elevator, rq_affinity, nr_requests), so that a stop does not
 * put it back: the value it recorded came from another tool that no longer sets it
 * (Applied.original_source; policies/owners.c policy_original_still_right()). why is logged
 * (BLKMQD_KNOB=) and shown in applied/<knob>. The elevator's takes nr_requests and the
 * tunables recorded for its switch along. True when an original was forgotten.
 */
bool apply_forget_original(Device *d, Knob k, const char *why);

/*
 * The same for elevator tunable t (a value tuned's [sysfs] or a udev rule's
 * ATTR{queue/iosched/...} set and blkmqd wrote over): its original is forgotten, a stop leaves
 * the tunable. True when an original was forgotten.
 */
bool apply_forget_iosched_original(Device *d, IoschedTunable t, const char *why);

/*
 * Before d's originals are put back (a stop, a restore): forget each queue knob's and each
 * tunable's original that was recorded over another tool's value when that tool no longer
 * sets it in now, the other tools as they are now (facts/agents.c agents_gather();
 * policies/owners.c policy_original_still_right()). Returns the number forgotten.
 */
int apply_forget_gone_originals(Device *d, const Sources *now);

/*
 * What blkmqd wrote, stored next to the originals (manager/persist.c, originals/<identity>):
 * "written.<knob>=", "written.iosched.<elevator>.<tunable>=", "written.irq.<N>=" is the value
 * written; "instance.nr_requests=" and "instance.iosched.<elevator>.<tunable>=" the inode of
 * queue/iosched it was written under (an elevator switch since resets it: nobody's change);
 * "readback.iosched.<elevator>.<tunable>=" what the kernel read back (jiffies rounding).
 * A file without them (an older blkmqd) leaves the value unknown, as before.
 */
#define APPLY_WRITTEN_PREFIX "written."
#define APPLY_INSTANCE_PREFIX "instance."
#define APPLY_READBACK_PREFIX "readback."

/*
 * A restart over an earlier run's writes (kill -9, crash): take the values kv (the stored
 * originals file, strv of alternating key, value) says that run wrote as blkmqd's own, for
 * each knob, tunable and IRQ vector whose original is loaded, so the first evaluation treats
 * them as the running daemon does its writes: a value someone else changed while blkmqd was
 * down is "changed externally" (Reassert=no: reported once and left, its original forgotten).
 * A knob that reads its original while the stored write was another value is not taken (the
 * write never landed, or was put back: applied as at a first start), nor one that cannot be
 * read, nor a tunable whose elevator does not run. Call after the originals are loaded.
 * Returns the number of values taken, or -ENOMEM.
 */
int apply_adopt_written(HostFs *h, Device *d, char * const *kv);

/*
 * Asynchronous apply, as the daemon does it: the same decisions, made on the loop thread, with
 * each write handed to writer (host/writer.h) and the run continued when it returned. While a
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
