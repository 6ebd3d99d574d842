/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Module parameters: merge the wishes of every disk's plan (and the config's [Module:]
 * sections) into one state per module parameter, and carry them out:
 *   - load-time-only parameters (0444, e.g. megaraid_sas.host_tagset_enable) are never
 *     written under /sys/module: they go to /etc/modprobe.d/blkmqd.conf, state
 *     pending-reboot, and after the next boot blkmqd checks they took effect;
 *   - runtime-writable ones (0644, nvme write_queues, virtio_blk num_request_queues) are
 *     also written to /sys/module/<m>/parameters/<p>: state pending-reset, they apply at
 *     the next controller reset or probe.
 * Only with ModuleParams=write; otherwise every wish stays "proposed".
 */

#include <stdbool.h>

#include "hostfs.h"
#include "registry.h"

#define MODPROBE_D_FILE "blkmqd.conf"
/* First line of every blkmqd.conf blkmqd writes: how a later run knows the file is blkmqd's. */
#define MODPROBE_D_HEADER "# Written by blkmqd: blk-mq queue layout parameters. Removed by `echo 1 > /run/blkmqd/restore`."

typedef enum ModuleParamState {
        MODPARAM_PROPOSED,        /* wanted, not written (ModuleParams=propose, or dry-run/off) */
        MODPARAM_PENDING_REBOOT,  /* in modprobe.d; the running module still has the old value */
        MODPARAM_PENDING_RESET,   /* written at runtime; applies at the next reset/probe */
        MODPARAM_EFFECTIVE,       /* the running module has the wanted value */
        MODPARAM_NOT_EFFECTIVE,   /* was in modprobe.d at this boot, yet the module has another value */
        MODPARAM_UNSUPPORTED,     /* this kernel's module has no such parameter */
        MODPARAM_CONFLICT,        /* disks want different values: nothing written */
        MODPARAM_ERROR,           /* a write failed */
        _MODPARAM_STATE_MAX,
        _MODPARAM_STATE_INVALID = -EINVAL,
} ModuleParamState;

const char *module_param_state_to_string(ModuleParamState s);

typedef struct ModuleParam {
        char *module, *param;
        char *current;          /* running value; NULL = no such parameter */
        char *wanted;
        char *original;         /* runtime value before blkmqd wrote it (0644 params only) */
        char *wanted_by;        /* "sdb sdc" */
        ModuleParamState state;
        char *note;             /* human detail: when it takes effect, initramfs, errors */
        bool root_disk;         /* a disk using this module holds the root filesystem */
} ModuleParam;

typedef struct Modules {
        ModuleParam *params;
        size_t n_params;
        bool file_written;      /* modprobe.d/blkmqd.conf is blkmqd's: written in this run, or found at
                                 * start in blkmqd's own form (modprobe_file_is_blkmqd()) */
        bool foreign_logged;    /* "not blkmqd's, not overwriting" said once */
        char *boot_file;        /* content of blkmqd.conf at start, if it predates this boot */
} Modules;

void modules_done(Modules *m);

/*
 * Remember what /etc/modprobe.d/blkmqd.conf held when the system booted (call once at
 * start; "at boot" = its mtime is older than /proc/stat btime).
 */
void modules_init(HostFs *h, Modules *m);

/*
 * Is text (the content of modprobe.d/blkmqd.conf) blkmqd's? True when its first line is
 * MODPROBE_D_HEADER and every other line is one blkmqd writes ("# wanted by ...",
 * "options <module> <param>=<value>"): ownership survives restarts without the state
 * directory, and a file an administrator wrote or edited is never overwritten or removed.
 */
bool modprobe_file_is_blkmqd(const char *text);

/*
 * The runtime values blkmqd changed under /sys/module, as they were before (the originals
 * modules_restore() puts back), for the state directory: a strv of alternating
 * "<module>.<param>", value (NULL when there are none). Returns 0 or -ENOMEM.
 */
int modules_originals(const Modules *m, char ***ret);

/*
 * Take originals an earlier run recorded and did not put back (what modules_originals()
 * gave it), before the first modules_update(): a restart keeps knowing what to restore.
 * Unknown parameters and malformed keys are skipped. Returns 0 or -ENOMEM.
 */
int modules_load_originals(Modules *m, char * const *kv);

/* The state directory key of modules_originals(): no disk identity looks like it. */
#define MODULES_STATE_KEY "module-parameters"

/*
 * Recompute from the registry's plans and carry out. write: ModuleParams=write and mode
 * auto. Returns 0 or -ENOMEM; write failures are kept in the states and logged.
 */
int modules_update(HostFs *h, Modules *m, const Registry *reg, const PolicyConfig *config, bool write);

/*
 * Undo: remove blkmqd.conf if blkmqd wrote it, put back runtime values it changed.
 * Returns the number of things undone or the first -errno.
 */
int modules_restore(HostFs *h, Modules *m);

/* The parameter, or NULL. */
const ModuleParam *modules_get(const Modules *m, const char *module, const char *param);
