/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The device registry: every whole disk blkmqd currently shows, with its facts,
 * plan and what apply did. Owned by the manager; fuse-fs renders from it. A part a lower
 * layer owns is that layer's type, embedded and freed through its functions (Device.stats:
 * stats/stats.h DeviceStats).
 */

#include <stddef.h>
#include <stdint.h>

#include "blkstat.h"
#include "facts.h"
#include "policy.h"
#include "stats.h"


typedef enum ApplyState {
        APPLY_UNMANAGED,        /* policy has no wish, or the disk is not managed */
        APPLY_KEPT,             /* the value already was what policy wants: nothing written */
        APPLY_OK,               /* written and read back */
        APPLY_DRY_RUN,          /* would be written; dry-run mode */
        APPLY_ERROR,            /* write failed: error + message */
        APPLY_UNSUPPORTED,      /* the kernel refused in a way retrying cannot fix; not retried */
        APPLY_EXTERNAL,         /* someone else changed a value blkmqd had written; not fought */
        APPLY_MANAGED,          /* irq_affinity: every queue vector is kernel-managed */
        APPLY_PENDING,          /* a write is in flight (on a writer worker, host/writer.h) */
        APPLY_TIMEOUT,          /* a write in flight has passed its deadline; still pending */
        APPLY_PENDING_RECONNECT, /* nr_io_queues: proposed for the next connect; never written */
        APPLY_DEFERRED,         /* another tool's setting wins (Plan.owner, policies/owners.h): not written */
        _APPLY_STATE_MAX,
        _APPLY_STATE_INVALID = -EINVAL,
} ApplyState;

const char *apply_state_to_string(ApplyState s);

/*
 * Retry pacing of one value (apply/apply.c): how often blkmqd found the value it wrote
 * overwritten again (a write war, Reassert=yes) or a write failed in a way that may pass.
 * Times are CLOCK_MONOTONIC microseconds.
 */
typedef struct Backoff {
        unsigned level;         /* consecutive rewrites overwritten again / failed writes; 0 = none */
        uint64_t last_usec;     /* when the last of them happened */
        uint64_t retry_usec;    /* no write before this time (0: any time) */
} Backoff;

typedef struct Applied {
        ApplyState state;
        char *original;         /* value before blkmqd's first write; NULL = never written */
        /* who set original: the other tool blkmqd wrote over (Plan.owner_source when the original
         * was recorded, policies/owners.h), NULL when none is known. Meaningful while original is
         * set; a stop puts original back only while that tool still sets it (apply_forget_original()) */
        char *original_source;
        char *value;            /* value blkmqd wrote (or would write in dry-run), or its plan kept */
        char *message;          /* human detail for errors */
        bool external_kept;     /* APPLY_EXTERNAL of a value blkmqd's plan found in place (kept), not one it wrote */
        int error;              /* -errno of the last failed write, 0 otherwise */
        Backoff war;            /* Reassert=yes: rewrites of a value someone else keeps changing */
        Backoff retry;          /* write errors that may pass */
} Applied;

void applied_done(Applied *a);

/*
 * Every change of an Applied's state goes through here, so state, error and message always
 * agree: error (-errno) is kept only for APPLY_ERROR and APPLY_UNSUPPORTED, 0 otherwise;
 * message is the formatted text, or NULL when fmt is NULL or out of memory (an "ok" after
 * an error does not keep the error's text). value and original are not touched.
 */
void applied_set(Applied *a, ApplyState state, int error, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Per-vector state of irq_affinity. */
typedef struct IrqApplied {
        unsigned irq;
        char *original;         /* smp_affinity_list before blkmqd's first write; NULL = never written */
        char *value;            /* what blkmqd wrote */
        bool managed;           /* learned: a write failed with EIO/EPERM (managed IRQ); never retried */
        bool external;          /* someone else changed value: left alone (Reassert=no), not restored */
        char *current;          /* smp_affinity_list as read at the last evaluation */
        int error;              /* -errno of the last failed write (or read), 0 otherwise */
        Backoff war;            /* Reassert=yes: rewrites of a value someone else keeps changing */
        Backoff retry;          /* write errors that may pass (ENOSPC: no free vector on those CPUs, EBUSY) */
        /* the evaluation in progress (apply/apply.c) */
        bool in_pass;           /* a queue vector of the current plan */
        int outcome;            /* what this evaluation did with it (apply.c IrqOutcome) */
        bool new_original;      /* original recorded for the write in flight (dropped if it fails) */
} IrqApplied;

/*
 * An apply (or restore) in progress on one disk (apply/apply.c). The knobs are decided in
 * order on the loop thread; a knob that needs a write hands it to a writer worker and the run
 * goes on with the next knob when the write returned. So at most one write per disk is in
 * flight, and no queue attribute of the disk is read while it is.
 */
typedef struct ApplyRun {
        bool active;
        bool restore;           /* putting originals back, not applying the plan */
        bool dry_run, reassert, verify_only;
        int next;               /* the Knob decided next (or whose write is in flight) */
        void *job;              /* the WriteJob in flight, NULL when none */
        bool timed_out;         /* ... and it passed its deadline */
        int written;            /* values written (or originals dropped) so far */
        unsigned written_knobs; /* bit per Knob whose write returned written (facts to read again) */
        int error;              /* restore: the first -errno */
        unsigned failed;        /* restore: originals whose write failed */
        unsigned left;          /* restore: originals not written, someone else changed the value */
        uint64_t now_usec;      /* CLOCK_MONOTONIC time the run started (backoff decisions) */
        /* the queue knob whose write is in flight */
        bool knob_reassert;     /* a rewrite of a value changed externally (Reassert=yes) */
        bool knob_new_original; /* its original was recorded for this write (dropped if refused) */
        bool knob_nr_recorded;  /* nr_requests' original was recorded before this elevator switch */
        int knob_prev_error;    /* the same write failed before with this error (0: not) */
        size_t irq_total, irq_kept, irq_managed, irq_would;     /* irq_affinity, decided before its write */
        char nr_before[32];     /* nr_requests before the elevator write in flight ("" unknown): the switch resets it */
        bool knob_iosched_recorded;     /* the elevator's tunables were recorded before this elevator switch */
        bool knob_reapply;      /* a write again of nr_requests an elevator switch reset (logged with the write) */
        bool nr_reset_said;     /* this run's elevator write logged that it reset nr_requests and that it is written again */
        bool unregistered;      /* queue/scheduler said the queue is not registered (being removed or added):
                                 * the run stops; the disk's next uevent evaluates it again (apply.c queue_unregistered()) */
        /* the elevator tunables' job in flight (apply.c iosched_decide()): IOSCHED_OP_* per tunable */
        unsigned char iosched_ops[_IOSCHED_TUNABLE_MAX];
        uint64_t iosched_ino;   /* inode of queue/iosched when they were decided */
        /* set by the manager while a write is in flight, acted upon when the run ends */
        bool again;             /* the plan changed: apply again */
        bool event_pending;     /* a uevent came: gather again (not while the disk's write is in flight) */
        bool restore_after;     /* a restore was asked for */
} ApplyRun;

typedef struct Device {
        char *name;
        DiskFacts *facts;
        Plan plan;
        PolicyOverrides overrides;
        Applied applied[_KNOB_MAX];
        IrqApplied *irq_applied;
        size_t n_irq_applied;
        /*
         * Elevator tunables (apply/apply.c, after the elevator): like applied[], per tunable.
         * value is what blkmqd asked for; iosched_read what the kernel read back (differs for
         * tunables kept in jiffies); iosched_ino the inode of queue/iosched when blkmqd wrote
         * (a new one means the elevator was set up again by a switch: the tunable is back at
         * its default, which is no one's change). An original with value NULL was recorded
         * only because blkmqd switched the elevator away from it (like nr_requests): it comes
         * back after the elevator is restored.
         */
        Applied iosched[_IOSCHED_TUNABLE_MAX];
        char *iosched_read[_IOSCHED_TUNABLE_MAX];
        uint64_t iosched_ino[_IOSCHED_TUNABLE_MAX];
        bool iosched_reset;     /* a verify found a wanted tunable reset by an elevator switch: apply again */
        uint64_t nr_requests_ino;       /* inode of queue/iosched when blkmqd wrote nr_requests (a switch resets it) */
        char *nr_before_override;       /* nr_requests under blkmqd's elevator switch before blkmqd wrote an override
                                         * over it: what the override's "auto" puts back while the switch stands (the
                                         * recorded original belongs to the elevator before the switch); stored
                                         * with the originals while the switch stands (manager/persist.c) */
        /*
         * The elevator blkmqd's last switch found not registered: the write failed with EINVAL
         * while queue/scheduler did not list it and its module may still come (apply.c
         * elevator_not_loaded()); the switch is retried with applied[KNOB_ELEVATOR].retry. NULL
         * otherwise. Into PolicyHistory.elevator_unloaded for explain (apply_history()).
         */
        char *elevator_unloaded;
        /*
         * What blkmqd did, as d's last evaluation took it (the disk's part of a PolicyHistory:
         * apply_history() at manager/pipeline.c evaluate_policy(); boot_modules NULL): the IRQ
         * map of facts is made with its vectors' affinity before blkmqd (disk_facts_remap_irqs(),
         * and device_gather_hctx_details() when a reader asks for the map later). Reset when
         * facts is replaced (a gather maps without it). Owned.
         */
        PolicyHistory policy_history;
        DeviceStats stats;      /* statistics rings and file handles, stats/'s (stats/stats.h): made by the
                                 * reads (manager/readers.c), freed with the device */
        uint64_t generation;    /* bumped on every re-gather */
        bool vanished;          /* a write or read failed with ENOENT/ENODEV/EBUSY and the disk's sysfs
                                 * directory is gone (or another disk's now): said once, nothing
                                 * more is written to it (apply.c disk_vanished()) */
        bool leaving;           /* no longer matched by the globs (a reload narrowed Devices=): its originals
                                 * are being put back, then it is removed; nothing is applied to it and
                                 * writes to its tree are refused meanwhile (manager/pipeline.c) */
        bool identity_shared;   /* another present disk had the same identity when this one was
                                 * added: nothing stored is applied to it, its overrides are
                                 * not persisted, its originals go to "<identity>#<name>" */
        char *irq_logged;       /* irq_affinity state last logged (one line per change of state) */
        /* What the disk's own I/O measured (policies/speed.h; fed by manager/speed.c from the BPF
         * provider's events or the stat at the verify); a policy input of its own, not a fact */
        SpeedState speed;
        char *speed_text;       /* facts/speed as of the last sample (speed_state_format()); NULL: not yet */
        const char *speed_source;       /* facts/speed_source: what measures it (static); NULL: not yet */
        char *measured_saved;   /* what measured/<key> holds ("" none) as last written or read; NULL: unknown
                                 * (manager/persist.c manager_persist_measured()) */
        char *originals_saved;  /* "<key>\n<k>=<v>..." as last written to or read from the state
                                 * directory (persist.c manager_persist_originals()): an unchanged save
                                 * is skipped, so no fsync() waits in front of a kernel write */
        ApplyRun run;
} Device;

/*
 * A block device blkmqd saw and does not list under devices/ (not matched by --devices/Devices=,
 * no medium, a partition, ...), with the one reason the not_listed file shows for it
 * (manager/pipeline.c sets and forgets them; fuse-fs renders them).
 */
typedef struct Unlisted {
        char *name;             /* sysfs's name: "sdc", "cciss!c0d1", "sda1" */
        char *parent;           /* a partition's disk, whose events keep its line; NULL for a disk */
        char *reason;           /* one line, no newline */
        bool udev_pending;      /* not initialized by udev yet: its add event lists it, a reload does not */
} Unlisted;

typedef struct Registry {
        Device **devices;       /* sorted by name (strverscmp) */
        size_t n_devices;
        Unlisted *unlisted;     /* sorted by name (strverscmp); never a name of devices[] */
        size_t n_unlisted;
} Registry;

/* Find a device by disk name; NULL if absent. */
Device *registry_get(const Registry *reg, const char *name);

/*
 * Add a device named name, or return the existing one.
 * Returns 1 when added, 0 when it existed, -ENOMEM. *ret points into the registry.
 */
int registry_add(Registry *reg, const char *name, Device **ret);

/* Remove and free the device; returns 0, or -ENOENT if absent. */
int registry_remove(Registry *reg, const char *name);

void registry_done(Registry *reg);

/*
 * name is not listed, for reason (one line; a newline or other control character becomes '?').
 * parent: a partition's disk, else NULL. Returns 1 when the entry is new or changed, 0 when it
 * was already so, -ENOMEM (nothing changed).
 */
int registry_set_unlisted(Registry *reg, const char *name, const char *parent, const char *reason);

/* Mark name's entry (registry_set_unlisted() made it) as waiting for udev (Unlisted.udev_pending);
 * a later registry_set_unlisted() clears the mark. */
void registry_unlisted_udev_pending(Registry *reg, const char *name);

/* Forget name's entry. Returns 1 when there was one, else 0. */
int registry_forget_unlisted(Registry *reg, const char *name);

/* Forget the entries of parent's partitions whose name is not in keep (a strv, NULL: forget
 * them all). Returns the number forgotten. */
size_t registry_forget_partitions(Registry *reg, const char *parent, char * const *keep);

/* name's entry, or NULL. */
const Unlisted *registry_get_unlisted(const Registry *reg, const char *name);

/* Number of devices of each class; counts has _DISK_CLASS_MAX entries. */
void registry_count_classes(const Registry *reg, size_t counts[]);
