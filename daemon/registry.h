/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The device registry: every whole disk blkmqd currently shows, with its facts,
 * plan and what apply did. Owned by the manager; fuse-fs renders from it.
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
        _APPLY_STATE_MAX,
        _APPLY_STATE_INVALID = -EINVAL,
} ApplyState;

const char *apply_state_to_string(ApplyState s);

typedef struct Applied {
        ApplyState state;
        char *original;         /* value before blkmqd's first write; NULL = never written */
        char *value;            /* value blkmqd wrote (or would write in dry-run) */
        char *message;          /* human detail for errors */
        int error;              /* -errno of the last failed write, 0 otherwise */
} Applied;

void applied_done(Applied *a);

/* Per-vector state of irq_affinity. */
typedef struct IrqApplied {
        unsigned irq;
        char *original;         /* smp_affinity_list before blkmqd's first write; NULL = never written */
        char *value;            /* what blkmqd wrote */
        bool managed;           /* learned: a write failed with EIO/EPERM (managed IRQ); never retried */
} IrqApplied;

typedef struct Device {
        char *name;
        DiskFacts *facts;
        Plan plan;
        PolicyOverrides overrides;
        Applied applied[_KNOB_MAX];
        IrqApplied *irq_applied;
        size_t n_irq_applied;
        StatSample *history;    /* STATS_HISTORY per hctx position, ring; sized to facts->n_hctx */
        size_t n_history_hctx;
        StatSample *disk_history;       /* STATS_HISTORY DiskStat samples, same ring scheme; on first read */
        uint64_t generation;    /* bumped on every re-gather */
} Device;

typedef struct Registry {
        Device **devices;       /* sorted by name (strverscmp) */
        size_t n_devices;
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

/* Number of devices of each class; counts has _DISK_CLASS_MAX entries. */
void registry_count_classes(const Registry *reg, size_t counts[]);
