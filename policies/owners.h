/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Owners: the other places that set what blkmqd writes, and whose choice each one is.
 *
 * facts/agents.c finds them below the root (udev rules files, tuned's active profile, the
 * kernel command line, systemd .link files, irqbalance's configuration) and fills a Sources;
 * the manager hands it to every disk's evaluation (DiskFacts.sources). Which of them sets a
 * knob of one disk, and what blkmqd does about it, is decided here, a pure function of the
 * sources, the disk's facts and the configuration (policy_owner()).
 *
 * The rule (docs/OPERATIONS.md "Next to tuned, irqbalance and udev rules"):
 *   - the admin's explicit choice wins: a udev rule in /etc, /run or /usr/local/lib udev/rules.d,
 *     tuned's active profile, elevator= or <module>.<param>= on the kernel command line, a
 *     .link file in /etc, /run or /usr/local/lib systemd/network, an options line in
 *     /etc, /run or /usr/local/lib modprobe.d. blkmqd leaves the knob ("deferred"), and explain
 *     names the source and what blkmqd would do and why;
 *   - a distribution default (a rule in /usr/lib/udev/rules.d or /lib/udev/rules.d, a .link
 *     file in /usr/lib/systemd/network, an options line in /usr/lib/modprobe.d or
 *     /lib/modprobe.d) is what blkmqd exists to correct: it writes its value and says once
 *     whose value it replaces;
 *   - DeferTo= in [Manager] or [Device:] changes it: admin (the default), all (distribution
 *     defaults too), none (blkmqd writes over every other tool, naming it);
 *   - a value set for blkmqd itself (policy/<knob>, [Device:] Elevator= ...) is the admin's
 *     word to blkmqd and wins over the other tools (explain names the conflict).
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "history.h"
#include "iosched.h"

typedef struct DiskFacts DiskFacts;
typedef struct Plan Plan;
typedef struct PolicyConfig PolicyConfig;
typedef struct PolicyOverrides PolicyOverrides;

/* The tool that applies a source. */
typedef enum SourceTool {
        SOURCE_UDEV_RULE,       /* systemd-udevd, running a rules file */
        SOURCE_TUNED,           /* tuned, with its active profile */
        SOURCE_CMDLINE,         /* the kernel command line (read by the kernel, modprobe, or a rule) */
        SOURCE_LINK,            /* a systemd .link file (systemd-udevd's net_setup_link builtin) */
        SOURCE_MODPROBE_D,      /* a modprobe.d file's options line (modprobe, when the module loads) */
        _SOURCE_TOOL_MAX,
        _SOURCE_TOOL_INVALID = -EINVAL,
} SourceTool;

/* "udev rule", "tuned profile", "kernel command line", ".link file", "modprobe.d file"; NULL when out of range. */
const char *source_tool_to_string(SourceTool t);

/* What a source sets, beyond blkmqd's own knobs. */
typedef enum SourceSetting {
        SOURCE_SETS_KNOB,       /* Source.knob */
        SOURCE_SETS_TUNABLE,    /* an elevator tunable: Source.name is the queue/iosched/ file */
        SOURCE_SETS_MODULE_PARAM, /* Source.module and Source.name: a module parameter */
        SOURCE_SETS_CHANNELS,   /* a NIC's channel count (ethtool -L, CombinedChannels=, tuned [net] channels=) */
        SOURCE_SETS_NOTHING,    /* a .link file that sets none of these: it still hides later ones */
} SourceSetting;

/* Which devices a source acts on. */
typedef enum SourceTarget {
        SOURCE_TARGET_DISK,     /* block devices, by kernel name */
        SOURCE_TARGET_NIC,      /* network interfaces, by name (and driver for .link) */
        SOURCE_TARGET_IRQ,      /* every IRQ of the machine (tuned [scheduler] isolated_cores=, a rule writing /proc/irq) */
        SOURCE_TARGET_MODULE,   /* a module, wherever its devices are */
} SourceTarget;

/* One place that sets one thing blkmqd writes. Strings are owned. */
typedef struct Source {
        SourceTool tool;
        bool admin;             /* the admin's explicit choice; false: a distribution default */
        char *file;             /* as the admin knows it: "/etc/udev/rules.d/60-x.rules", "(/proc/cmdline)" for the command line */
        unsigned line;          /* 1-based; 0 for none */
        char *label;            /* "udev rule", "tuned profile \"throughput\"", "kernel command line", ".link file" */
        char *what;             /* the setting as written: ATTR{queue/scheduler}="bfq", "[disk] elevator=bfq" */
        SourceSetting sets;
        int knob;               /* a Knob when sets == SOURCE_SETS_KNOB, else -1 */
        char *module;           /* SOURCE_SETS_MODULE_PARAM: the module */
        char *name;             /* SOURCE_SETS_TUNABLE: the tunable ("slice_idle"); MODULE_PARAM: the parameter */
        char *value;            /* the value it sets; NULL when not known (a RUN program, a tuned "calc") */
        SourceTarget target;
        char **match;           /* globs (fnmatch, udev's "a|b" alternatives split) one of which the device's
                                 * name must match; NULL: every device of the target kind */
        char **nomatch;         /* globs it must match none of (KERNEL!=, tuned's "!sdb") */
        char **match_driver;    /* .link Driver=: globs of the NIC's driver; NULL any */
        int match_rotational;   /* udev ATTR{queue/rotational}=="0"/"1": 0 or 1; -1 no such match */
        /* a match blkmqd does not evaluate (ATTRS{model}==, ENV{ID_...}==, MACAddress=): it counts
         * for a device only when the device has the value the source sets (the source ran) */
        char *match_unevaluated;
        unsigned group;         /* .link files: the file's position in systemd-udevd's order (the first
                                 * file that matches a NIC is the only one applied to it) */
} Source;

/* irqbalance, as its unit starts it (irqbalance.service ExecStart=... $IRQBALANCE_ARGS). */
typedef struct IrqbalanceFacts {
        bool running;           /* /run/irqbalance/irqbalance<PID>.sock names a live process */
        unsigned pid;
        char *config;           /* "/etc/default/irqbalance" (Debian) or "/etc/sysconfig/irqbalance"; NULL none read */
        unsigned args_line;     /* the IRQBALANCE_ARGS= line, 0 none */
        char *args;             /* its value */
        unsigned *banned_irqs;  /* --banirq=N / -i N in the args (irqbalance.c parse_command_line()) */
        size_t n_banned_irqs;
        char *policy_script;    /* --policyscript=FILE / -l FILE: it may ban any IRQ (ban=true) */
        bool oneshot;           /* IRQBALANCE_ONESHOT= or --oneshot: balances once after start, then exits */
} IrqbalanceFacts;

/* Everything facts/agents.c found. Zero-initialised = no other tool. */
typedef struct Sources {
        Source *v;
        size_t n;
        IrqbalanceFacts irqbalance;
        char *tuned_profile;    /* the active profile of a running tuned (a "a b" list as tuned writes it); NULL none */
        char *cmdline_text;     /* /proc/cmdline as read, NULL when unreadable */
} Sources;

void sources_done(Sources *s);
/* Append a copy of *src (its strings duplicated). Returns 0 or -ENOMEM. */
int sources_add(Sources *s, const Source *src);

/* DeferTo= of [Manager] and [Device:]. */
typedef enum DeferTo {
        DEFER_TO_ADMIN,         /* the admin's explicit choices win; distribution defaults are corrected (default) */
        DEFER_TO_ALL,           /* every other tool's setting wins, distribution defaults too */
        DEFER_TO_NONE,          /* blkmqd writes over every other tool, naming it */
        _DEFER_TO_MAX,
        _DEFER_TO_INVALID = -EINVAL,
} DeferTo;

const char *defer_to_to_string(DeferTo d);
DeferTo defer_to_from_string(const char *s);

/* Whose value a knob of one disk is (Plan.owner[]); the owner column of status and explain. */
typedef enum Ownership {
        OWNERSHIP_NONE,         /* no other tool sets it */
        OWNERSHIP_AGREES,       /* another tool sets it, to what blkmqd wants (or blkmqd has no wish) */
        OWNERSHIP_DEFERRED,     /* another tool's choice wins: blkmqd leaves the knob */
        OWNERSHIP_CORRECTED,    /* a distribution default blkmqd writes over */
        OWNERSHIP_OVERRIDDEN,   /* the admin's other tool, written over (DeferTo=none, or blkmqd's own setting) */
        _OWNERSHIP_MAX,
        _OWNERSHIP_INVALID = -EINVAL,
} Ownership;

/* "none", "agrees", "deferred", "corrected", "overridden"; NULL out of range. */
const char *ownership_to_string(Ownership o);

/*
 * The source that sets knob k (a Knob) of disk f, or NULL: the admin's before a
 * distribution's; among those of one kind, the one that acts last (udev rules in order, then
 * tuned, which acts after udev; for a NIC only the first .link file that matches it counts,
 * systemd src/udev/net/link-config.c link_get_config()). The disk's NIC (network disks:
 * DiskFacts.net) for the NIC knobs. h: what blkmqd did (policies/history.h, NULL: nothing), a
 * source's value is compared with the knob's value before blkmqd's write. Pure.
 */
const Source *sources_find_knob(const Sources *s, const DiskFacts *f, const PolicyHistory *h, int k);
/* The same for elevator tunable t of the elevator the disk runs. Pure. */
const Source *sources_find_tunable(const Sources *s, const DiskFacts *f, IoschedTunable t);
/* The source that sets the channel count of the NIC under network disk f (a .link file's
 * CombinedChannels=, tuned's [net] channels=), or NULL (also for a disk without a NIC). Pure. */
const Source *sources_find_channels(const Sources *s, const DiskFacts *f);
/* The source that sets module parameter module.param (the command line, a modprobe.d options
 * line), or NULL: the admin's before a distribution's, among those the one modprobe passes last. Pure. */
const Source *sources_find_module_param(const Sources *s, const char *module, const char *param);
/* Whether source src acts on disk f (its name, rotational, NIC); value: the disk's current value
 * of what it sets (for a match blkmqd does not evaluate), NULL unknown. Pure. */
bool source_applies(const Source *src, const DiskFacts *f, const char *value);

/*
 * "<label> <file>:<line> <what> (the admin's choice)" / "(a distribution default)", for
 * explain, the journal and the owner column. Written into buf (truncated). Pure.
 */
const char *source_describe(const Source *src, char *buf, size_t size);

/*
 * Decide who owns knob k (a Knob) of this disk now that its area has planned it: when a source
 * sets it and the plan wants another value, the plan's value is dropped (deferred: an explain
 * line names the source, the value blkmqd would write and its rule, and how to change it) or
 * kept with a line naming what it corrects or overrides. Sets plan->owner[k] and
 * plan->owner_source[k]. o: the merged overrides (DeferTo= of [Device:], the knob's own
 * value); h: what blkmqd did (policies/history.h, NULL: nothing). 0 or -ENOMEM. Pure.
 */
int policy_owner(const DiskFacts *f, const PolicyHistory *h, const PolicyConfig *config, const PolicyOverrides *o, int k,
                 Plan *plan);
/* The same for the elevator tunables the plan wants (plan->iosched) and the module parameters
 * (plan->modules: a <module>.<param>= on the kernel command line or an options line in
 * /etc/modprobe.d is the admin's; a deferred wish moves to plan->modules_deferred). */
int policy_owner_tunables(const DiskFacts *f, const PolicyConfig *config, const PolicyOverrides *o, Plan *plan);
int policy_owner_modules(const DiskFacts *f, const PolicyConfig *config, const PolicyOverrides *o, Plan *plan);

/*
 * Whether an original recorded over another tool's value (described as source_describe() gave
 * it when blkmqd first wrote) is still right to put back: true while now (the tools as they
 * are at the stop) still has that source (a rule still in place, the same tuned profile still
 * active), or when source is NULL (nothing else set it). False after `tuned-adm off`, a rule
 * removed, a profile switched: putting back the value such a tool left would leave a mix
 * that neither the tool nor the boot wants. Pure.
 */
bool policy_original_still_right(const Sources *now, const char *source);

/*
 * irqbalance and the vectors the plan places (irq_affinity, nic_irq_affinity): a note naming
 * the IRQs irqbalance would move and how to ban them (IRQBALANCE_ARGS="--banirq=N ...", or
 * the policy script's "ban=true"), under the knob that places them (IrqAffinity= or
 * NicIrqAffinity=). Pure. 0 or -ENOMEM.
 */
int policy_owner_irqbalance(const DiskFacts *f, Plan *plan);
