/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The pure policy: facts + config + overrides -> plan + explanation.
 *
 * No I/O, no logging, no libudev/libfuse/libsystemd (policies/meson.build links
 * only libc). Every decision is recorded as one explanation line of the form
 *
 *     <disk>: <input>=<value> ... -> <outcome> (rule <name>)
 *
 * so that `cat devices/<disk>/explain` says what blkmqd saw and why it acts.
 */

#include <stdbool.h>

#include "facts.h"

/* What kind of set-up a disk is. Order matters only for display. */
typedef enum DiskClass {
        DISK_CLASS_MANY_HCTX_SLOW,          /* rotational behind >1 hctx or a shared host tagset */
        DISK_CLASS_FAST_MULTIQUEUE,         /* non-rotational, >1 hctx, no shared tags */
        DISK_CLASS_SHARED_TAGS,             /* non-rotational on a host-wide shared tagset */
        DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, /* 1 hctx, rotational */
        DISK_CLASS_SINGLE_QUEUE_FAST,       /* 1 hctx, non-rotational */
        DISK_CLASS_STACKED,                 /* loop, dm, md: the lower device schedules the I/O */
        DISK_CLASS_NO_MQ,                   /* no blk-mq queue (zram, bio-based dm): never written */
        DISK_CLASS_UNKNOWN,                 /* facts too incomplete to decide: left alone */
        _DISK_CLASS_MAX,
        _DISK_CLASS_INVALID = -EINVAL,
} DiskClass;

/* "many-hctx-slow", ...; NULL when out of range. */
const char *disk_class_to_string(DiskClass c);
/* Inverse of disk_class_to_string(); _DISK_CLASS_INVALID when unknown. */
DiskClass disk_class_from_string(const char *s);

/*
 * Per-class elevator policy: a preference list. If the current elevator is in the
 * list it is kept (no surprise writes); otherwise the first listed elevator the
 * device offers is set. An empty list (NULL) means "keep whatever the device has".
 */
typedef struct ClassPolicy {
        char **elevators;       /* strv, preference order; NULL = keep */
} ClassPolicy;

typedef struct PolicyConfig {
        ClassPolicy classes[_DISK_CLASS_MAX];
} PolicyConfig;

/*
 * Fill config with the shipped defaults (see policies/defaults.c for the table and the
 * reasoning behind each entry). Returns 0 or -ENOMEM; on failure config is left empty.
 */
int policy_config_init_defaults(PolicyConfig *config);
void policy_config_done(PolicyConfig *config);

/* Per-disk overrides set by the admin (policy/<knob> files). NULL/false = automatic. */
typedef struct PolicyOverrides {
        char *elevator;         /* wins over the class policy when the device offers it */
        bool disabled;          /* "enabled = 0": leave this disk alone */
} PolicyOverrides;

/* What the policy wants for one disk. */
typedef struct Plan {
        DiskClass class;
        bool manage;            /* false: blkmqd writes nothing to this disk */
        char *elevator;         /* wanted elevator; NULL = leave as is */
        char **explain;         /* strv of explanation lines, without trailing newline */
} Plan;

void plan_done(Plan *p);

/*
 * Classify a disk. Pure function of the facts (see policies/classify.c for the rules).
 * If ret_reason is non-NULL it receives the rule's explanation line (newly allocated,
 * may be NULL on ENOMEM).
 */
DiskClass policy_classify(const DiskFacts *f, char **ret_reason);

/*
 * Evaluate the policy for one disk.
 *   facts:     gathered facts (must not be NULL)
 *   config:    class policies (must not be NULL)
 *   overrides: admin overrides, or NULL for none
 *   ret:       the plan; call plan_done() on it
 * Returns 0 or -ENOMEM. An override the device cannot take is not an error: the plan
 * leaves the knob alone and the explanation says why.
 */
int policy_evaluate(const DiskFacts *facts, const PolicyConfig *config,
                    const PolicyOverrides *overrides, Plan *ret);
