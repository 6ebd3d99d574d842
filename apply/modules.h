/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Module parameters: merge the wishes of every disk's plan (and the config's [Module:]
 * sections) into one state per module parameter, and carry them out:
 *   - load-time-only parameters (0444, e.g. megaraid_sas.host_tagset_enable) are never
 *     written under /sys/module: they go to /etc/modprobe.d/zz-blkmqd.conf, state
 *     pending-reboot, and after the next boot blkmqd checks they took effect;
 *   - runtime-writable ones (0644, nvme write_queues, virtio_blk num_request_queues) are
 *     also written to /sys/module/<m>/parameters/<p>: state pending-reset, they apply at
 *     the next controller reset or probe.
 * Three values of a parameter decide its state: what the module has now (current, read from
 * /sys/module at every decision and back after every write), what the devices were set up with
 * (original when blkmqd wrote it at runtime at this boot, else current; a reset blkmqd cannot
 * see) and what the next boot gives (zz-blkmqd.conf). So a reload or a restart (the originals are
 * in the state directory, with the boot id) still reads pending-reset after a runtime write, and
 * the boot after it effective.
 * Only with ModuleParams=write; otherwise every wish stays "proposed".
 */

#include <stdbool.h>

#include "hostfs.h"
#include "registry.h"
#include "writer.h"

/* The writer lane of every module-parameter job and of originals/module-parameters: one at a time, in order. */
#define MODULES_LANE "modules"

typedef enum ModuleParamState {
        MODPARAM_PROPOSED,        /* wanted, not written (ModuleParams=propose, or dry-run/off) */
        MODPARAM_PENDING_REBOOT,  /* in modprobe.d; the running module still has the old value */
        MODPARAM_PENDING_RESET,   /* the module has the wanted value, which blkmqd wrote at runtime at this boot
                                   * over another (ModuleParam.original): the devices take it at their next
                                   * reset/probe; the next boot from zz-blkmqd.conf (then effective) */
        MODPARAM_EFFECTIVE,       /* the running module has the wanted value, and not because of blkmqd's
                                   * runtime write at this boot (its boot read it, or it was so already) */
        MODPARAM_NOT_EFFECTIVE,   /* was in modprobe.d at this boot, yet the module has another value */
        MODPARAM_UNSUPPORTED,     /* this kernel's module has no such parameter */
        MODPARAM_CONFLICT,        /* disks want different values: nothing written */
        MODPARAM_ERROR,           /* a write failed */
        MODPARAM_PENDING,         /* its write (/sys/module, or modprobe.d) is on a writer worker */
        MODPARAM_TIMEOUT,         /* ... and has not returned within the writer's deadline (still pending) */
        MODPARAM_DEFERRED,        /* another tool's setting wins (an admin's modprobe.d option, the command line):
                                   * nothing written; ModuleParam.owner names it */
        MODPARAM_CHANGED_EXTERNALLY, /* a runtime parameter blkmqd wrote has another value now, neither blkmqd's
                                   * nor the original (ModuleParam.external): left alone with Reassert=no, and
                                   * not put back at stop or restore; rewritten with backoff with Reassert=yes */
        _MODPARAM_STATE_MAX,
        _MODPARAM_STATE_INVALID = -EINVAL,
} ModuleParamState;

const char *module_param_state_to_string(ModuleParamState s);

typedef struct ModuleParam {
        char *module, *param;
        char *current;          /* what /sys/module/<m>/parameters/<p> holds now (read at every modules_decide(),
                                 * and back after every write and put-back); NULL = no such parameter */
        char *wanted;
        char *original;         /* runtime value before blkmqd's first write at this boot (0644 params only):
                                 * what the devices of the driver were set up with until their next reset
                                 * or probe (current == wanted != original: pending-reset) */
        char *wanted_by;        /* "sdb sdc" */
        ModuleParamState state;
        char *note;             /* human detail: when it takes effect, initramfs, errors */
        bool root_disk;         /* a disk using this module holds the root filesystem */
        bool unsupported;       /* a wish says this kernel's module has no such parameter (ModuleWish.unsupported) */
        bool held;              /* an option of blkmqd's zz-blkmqd.conf no disk present can decide (none of its
                                 * driver yet: at boot udev adds them after blkmqd starts): kept as it is */
        bool deferred;          /* every wish for it is left to another tool (Plan.modules_deferred) */
        char *owner;            /* that tool's setting, described (source_describe()); NULL none */
        char *written;          /* the value blkmqd wrote to /sys/module at this boot and that is still its
                                 * wish (kept in the state directory with the original); NULL none */
        char *external;         /* changed externally: the value seen instead of written; NULL none */
        Backoff war;            /* Reassert=yes: rewrites of a value someone else keeps changing */
} ModuleParam;

typedef struct Modules {
        ModuleParam *params;
        size_t n_params;
        bool file_written;      /* modprobe.d/zz-blkmqd.conf is blkmqd's: written in this run, or found at
                                 * start in blkmqd's own form (modprobe_file_is_blkmqd()) */
        bool foreign_logged;    /* "not blkmqd's, not overwriting" said once */
        char *boot_file;        /* content of zz-blkmqd.conf at start, if it predates this boot */
        /* boot_file's options when it is blkmqd's (what this boot's modules read from blkmqd):
         * the policy's history (modules_history()); dropped by a restore that removed the file */
        ModuleWish *boot_options;
        size_t n_boot_options;
        /* why modules_decide() is told not to write (the caller's, static): in a proposed
         * parameter's note; NULL = "ModuleParams=propose" */
        const char *not_written_why;
        /* Reassert= of [Manager]: a runtime parameter changed externally is written again (with
         * backoff) instead of left alone */
        bool reassert;
} Modules;

void modules_done(Modules *m);

/*
 * Remember what /etc/modprobe.d/zz-blkmqd.conf held when the system booted (call once at
 * start; "at boot" = its mtime is older than /proc/stat btime).
 */
void modules_init(HostFs *h, Modules *m);

/*
 * What blkmqd's own modprobe.d gave this boot, as the policy's history (PolicyHistory: a
 * wish whose own effect removed its cause stays wanted): sets ret's modules' part
 * (boot_modules, n_boot_modules) and leaves the rest of *ret (the disk's part, apply_history()).
 * It points into m: valid until the next modules_init(), restore or modules_done().
 */
void modules_history(const Modules *m, PolicyHistory *ret);

/*
 * The runtime values blkmqd changed under /sys/module, as they were before (the originals
 * modules_restore() puts back), for the state directory: a strv of alternating
 * "<module>.<param>", value, and "<module>.<param>@written", the value blkmqd wrote (NULL when
 * there are none). Returns 0 or -ENOMEM.
 */
int modules_originals(const Modules *m, char ***ret);

/*
 * Take originals an earlier run recorded and did not put back (what modules_originals()
 * gave it), before the first modules_update(): a restart keeps knowing what to restore.
 * Unknown parameters and malformed keys are skipped. Returns 0 or -ENOMEM.
 */
int modules_load_originals(Modules *m, char * const *kv);

/* modules_originals() also stores what blkmqd wrote, under "<module>.<param>" this suffix. */
#define MODULES_WRITTEN_SUFFIX "@written"
/* ... and the value someone else wrote over it (changed externally), under this one. */
#define MODULES_EXTERNAL_SUFFIX "@external"

/* The state directory key of modules_originals(): no disk identity looks like it. */
#define MODULES_STATE_KEY "module-parameters"

/*
 * Recompute from the registry's plans and carry out. write: ModuleParams=write and mode
 * auto. Returns 0 or -ENOMEM; write failures are kept in the states and logged.
 * The synchronous form (tests, fixture runs) of modules_decide() + modules_finish().
 */
int modules_update(HostFs *h, Modules *m, const Registry *reg, const PolicyConfig *config, bool write);

/*
 * The loop thread's half of modules_update(): recompute every state from the registry's plans
 * (reads only: the running values come from the disks' facts, zz-blkmqd.conf is read to compare)
 * and put what must be written into *ret_job (NULL: nothing; lane MODULES_LANE): the runtime
 * parameters' /sys/module writes, then zz-blkmqd.conf replaced or removed. The parameters a
 * write is for read MODPARAM_PENDING until modules_finish() (the original of a runtime
 * parameter is recorded first: persist it before the job runs). Returns 0 or -ENOMEM.
 */
int modules_decide(HostFs *h, Modules *m, const Registry *reg, bool write, WriteJob **ret_job);

/* The outcome of a modules_decide() job, once every op returned (loop thread): states, notes,
 * log lines, as the synchronous write's were. */
void modules_finish(Modules *m, const WriteJob *j);

/* A modules_decide() job past the writer's deadline (usec): the pending parameters read
 * MODPARAM_TIMEOUT until it returns; one warning. */
void modules_timeout(Modules *m, const WriteJob *j, uint64_t usec);

/*
 * Undo (restore): remove zz-blkmqd.conf if blkmqd wrote it, put back runtime values it changed.
 * Returns the number of things undone or the first -errno.
 * The synchronous form of modules_restore_decide() + modules_restore_finish().
 */
int modules_restore(HostFs *h, Modules *m);

/* What a stop undoes (blkmqd(8) SIGTERM): the runtime values blkmqd changed under /sys/module put
 * back, zz-blkmqd.conf kept (a boot-time setting; restore removes it). Returns as modules_restore(). */
int modules_stop(HostFs *h, Modules *m);

/* The job that undoes (NULL: nothing to undo; lane MODULES_LANE): the runtime values, and
 * zz-blkmqd.conf's removal unless keep_file (a stop). Returns 0 or -ENOMEM. */
int modules_restore_decide(HostFs *h, Modules *m, bool keep_file, WriteJob **ret_job);
/* Its outcome: returns the number of things undone or the first -errno (logged). */
int modules_restore_finish(Modules *m, const WriteJob *j);

/* The parameter, or NULL. */
const ModuleParam *modules_get(const Modules *m, const char *module, const char *param);
