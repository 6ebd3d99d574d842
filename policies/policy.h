/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The pure policy: facts + config + overrides -> plan + explanation.
 *
 * No I/O, no logging, no libudev/libfuse/libsystemd (policies/meson.build links
 * only libc). Every decision is recorded as one PlanEntry: the knobs it decides, its
 * outcome, the rule's name, and the line `cat devices/<disk>/explain` shows,
 *
 *     <disk>: <input>=<value> ... -> <outcome> (rule <name>)
 *
 * rendered once from those fields (plan_explain()). Consumers (the journal's BLKMQD_RULE=,
 * the explain file, tests) read the fields; nothing parses the text back.
 */

#include <stdbool.h>

#include "facts.h"
#include "history.h"
#include "iosched.h"
#include "owners.h"
#include "speed.h"

/* What kind of set-up a disk is. Order matters only for display. */
typedef enum DiskClass {
        DISK_CLASS_MANY_HCTX_SLOW,          /* rotational behind >1 hctx or a shared host tagset */
        DISK_CLASS_FAST_MULTIQUEUE,         /* non-rotational, >1 hctx, no shared tags */
        DISK_CLASS_SHARED_TAGS,             /* non-rotational on a host-wide shared tagset */
        DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, /* 1 hctx, rotational */
        DISK_CLASS_SINGLE_QUEUE_FAST,       /* 1 hctx, non-rotational */
        DISK_CLASS_STACKED,                 /* loop, dm, md: the lower device schedules the I/O */
        DISK_CLASS_MULTIPATH_LEG,           /* a path of a request-based dm-multipath map: the map schedules */
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
/* What the config says about the shared host tagset module parameter of a class. */
typedef enum HostTagsetPolicy {
        HOST_TAGSET_AUTO,       /* propose host_tagset_enable=0 where the kernel lacks the sq-elevator fix */
        HOST_TAGSET_DISABLE,    /* always propose host_tagset_enable=0 */
        HOST_TAGSET_KEEP,       /* never propose */
} HostTagsetPolicy;

typedef struct ClassPolicy {
        char **elevators;       /* strv, preference order; NULL = keep */
        HostTagsetPolicy host_tagset;
        int rq_affinity;        /* 0, 1, 2; -1 = keep (block/blk-sysfs.c queue_rq_affinity_store) */
        bool irq_follow_hctx;   /* place non-managed queue vectors on their hctx's CPUs */
        char *iosched[_IOSCHED_TUNABLE_MAX];    /* IoSched.<elevator>.<tunable>=: validated values; NULL = keep */
} ClassPolicy;

/*
 * A module parameter the policy wants. Module parameters are per driver, not per disk:
 * policy_modules_merge() (cross-disk.h) merges the wishes of all disks for apply/modules.c.
 */
typedef struct ModuleWish {
        char *module, *param, *value;
        bool load_time_only;    /* 0444: only a modprobe.d option and a reboot (or reload) change it */
        const char *takes_effect;       /* "next boot or module reload", "next controller reset or probe" */
        /* this kernel's module has no such parameter (the disk's facts): explained as such and
         * never written; apply/modules.c takes the state "unsupported" from here, with the same
         * sentence (module_param_unsupported_reason()) */
        bool unsupported;
        /* the other tool whose setting of it the owner rule met (source_describe()): in
         * Plan.modules_deferred the one left to; in Plan.modules one corrected or written over
         * (policies/owners.c policy_owner_modules()); NULL none */
        char *owner;
} ModuleWish;

/*
 * The queue-layout parameters blkmqd knows (each driver's module_param() and its mode: 0444 is
 * load-time only, 0644 takes effect at the next probe or controller reset): module, param,
 * load-time only, when a change takes effect. NULL-terminated by module == NULL.
 */
typedef struct KnownModuleParam {
        const char *module, *param;
        bool load_time_only;
        const char *takes_effect;
} KnownModuleParam;
extern const KnownModuleParam known_module_params[];

/* Free an array of wishes. */
void module_wishes_free(ModuleWish *w, size_t n);
/* Append a copy of a wish. Returns 0 or -ENOMEM. */
int module_wishes_add(ModuleWish **w, size_t *n, const char *module, const char *param, const char *value);
/* The entry of module/param, or NULL when blkmqd does not manage it. */
const KnownModuleParam *known_module_param(const char *module, const char *param);
/* The one sentence for a parameter this kernel's module does not have, which explain, the
 * journal and modules/<module>/<param>/note all say: written into buf (size bytes). Returns buf. */
const char *module_param_unsupported_reason(const char *module, const char *param, char *buf, size_t size);

/*
 * blkmqd's own modprobe.d file (/etc/modprobe.d/zz-blkmqd.conf, apply/modules.c). modprobe
 * reads the *.conf files of every modprobe.d directory sorted by name, and for a parameter set
 * twice the module keeps the last value (libkmod/libkmod-config.c conf_files_list(), kernel/
 * params.c parse_args()): "zz-" sorts after the names distributions and drivers ship
 * (nvme.conf, 99-*.conf, scsi-*.conf), so blkmqd's value is the one the next load takes. A
 * name the admin picked to sort later is the admin's choice (policies/owners.c).
 */
#define MODPROBE_D_FILE "zz-blkmqd.conf"
/* The file's name before, /etc/modprobe.d/blkmqd.conf: a start that finds one in blkmqd's form
 * and no MODPROBE_D_FILE renames it (apply/modules.c modules_init()). */
#define MODPROBE_D_FILE_OLD "blkmqd.conf"
/* First line of every zz-blkmqd.conf blkmqd writes: how a later run knows the file is blkmqd's. */
#define MODPROBE_D_HEADER "# Written by blkmqd: blk-mq queue layout parameters. Removed by `echo 1 > /run/blkmqd/restore`."
/*
 * Is text (the content of modprobe.d/zz-blkmqd.conf) blkmqd's? True when its first line is
 * MODPROBE_D_HEADER and every other line is one blkmqd writes ("# wanted by ...",
 * "options <module> <param>=<value>"): ownership survives restarts without the state
 * directory, and a file an administrator wrote or edited is never overwritten or removed.
 */
bool modprobe_file_is_blkmqd(const char *text);




/* Knobs blkmqd writes; one plan/<knob>, applied/<knob> and policy/<knob> file each.
 * _KNOB_MAX is their number and nothing else (policy/enabled is POLICY_FILE_ENABLED). */
typedef enum Knob {
        KNOB_ELEVATOR,          /* queue/scheduler */
        KNOB_RQ_AFFINITY,       /* queue/rq_affinity: 0, 1, 2 */
        KNOB_NR_REQUESTS,       /* queue/nr_requests */
        KNOB_IRQ_AFFINITY,      /* /proc/irq/N/smp_affinity_list of the queue vectors: "hctx" or a cpulist */
        /* network disks (policies/net-align.c, apply/apply-net.c) */
        KNOB_NIC_IRQ_AFFINITY,  /* the NIC's unmanaged queue vectors: "<irq>:<cpulist> ..." */
        KNOB_XPS,               /* class/net/<if>/queues/tx-N/xps_cpus: "<if>/tx-<n>:<cpulist> ..." */
        KNOB_NR_IO_QUEUES,      /* nvme-tcp I/O queues at the next connect: proposed, never written */
        _KNOB_MAX,
        _KNOB_INVALID = -EINVAL,
} Knob;

const char *knob_to_string(Knob k);
Knob knob_from_string(const char *s);

/* The bit of knob k in a set of knobs (PlanEntry.knobs). */
#define KNOB_BIT(k) (1u << (k))

/*
 * The files of devices/<disk>/policy/: one per knob (a Knob converts to the PolicyFile of the
 * same number) and "enabled", which is no knob: it switches the whole disk.
 */
typedef enum PolicyFile {
        POLICY_FILE_ENABLED = _KNOB_MAX,        /* policy/enabled: "0", "1" or "auto" */
        _POLICY_FILE_MAX,
        _POLICY_FILE_INVALID = -EINVAL,
} PolicyFile;

/* "elevator", ..., "enabled"; NULL when out of range. */
const char *policy_file_to_string(PolicyFile f);
/* Inverse of policy_file_to_string(); _POLICY_FILE_INVALID when unknown. */
PolicyFile policy_file_from_string(const char *s);

/*
 * Per-disk overrides set by the admin (policy/<knob> files), as validated, normalised
 * strings. NULL = automatic ("auto"). Zero-initialised = no overrides.
 */
typedef struct PolicyOverrides {
        char *elevator;         /* wins over the class policy when the device offers it */
        char *rq_affinity;      /* "0" | "1" | "2" */
        char *nr_requests;      /* decimal */
        char *irq_affinity;     /* "hctx" or a normalised cpulist */
        char *nic_irq_affinity; /* "hctx" | "keep" */
        char *xps;              /* "hctx" | "keep" */
        char *nr_io_queues;     /* "keep" | decimal 1..65535 */
        bool disabled;          /* policy/enabled = 0: leave this disk alone */
        bool enabled_set;       /* policy/enabled was written 0 or 1 (not "auto"): wins over config */
        /* Where each value (and enabled) came from, for explain: NULL = the admin's
         * policy/<file>, else e.g. "config [Device:hba]". Not owned. */
        const char *origin[_POLICY_FILE_MAX];
        /* policy/iosched/<elevator>/<tunable> (or [Device:] IoSched.<elevator>.<tunable>=):
         * validated values, NULL = auto; origins as above */
        char *iosched[_IOSCHED_TUNABLE_MAX];
        const char *iosched_origin[_IOSCHED_TUNABLE_MAX];
        /* [Device:] DeferTo= (policies/owners.h): whose settings win on this disk; not owned origin */
        bool defer_to_set;
        DeferTo defer_to;
        const char *defer_to_origin;
} PolicyOverrides;

/*
 * A [Device:<name>] section of the config: settings for disks that match every given
 * Match key. Unset matches are NULL / -1 / TRISTATE_UNKNOWN.
 */
typedef struct DeviceRule {
        char *name;                     /* the section name after "Device:" */
        char *label;                    /* "config [Device:<name>]", for explain */
        char *match_name;               /* fnmatch glob on the kernel name ("sd*") */
        char *match_driver;             /* glob on the driver fact */
        char *match_transport;          /* glob on the transport fact */
        char *match_identity;           /* glob on the identity (e.g. wwid:naa.5000c5*) */
        int64_t match_hwq_min, match_hwq_max;   /* nr_hw_queues range, inclusive */
        Tristate match_rotational;
        PolicyOverrides settings;       /* what the section sets */
        bool has_enabled;               /* settings.disabled is meaningful */
} DeviceRule;

/* True when every Match key of rule holds for f. Pure. */
bool device_rule_matches(const DeviceRule *rule, const DiskFacts *f);
void device_rule_done(DeviceRule *rule);

/* [Network] of the config: what the alignment rule (policies/net-align.c) may do. */
typedef struct NetPolicy {
        bool nic_irq_follow_hctx;       /* NicIrqAffinity=hctx (default) | keep */
        bool xps_follow_hctx;           /* Xps=hctx (default) | keep */
        bool propose_nr_io_queues;      /* NrIoQueues=propose (default) | keep */
        bool propose_nic_channels;      /* NicChannels=propose (default) | keep */
} NetPolicy;
#define NET_POLICY_DEFAULTS { .nic_irq_follow_hctx = true, .xps_follow_hctx = true, .propose_nr_io_queues = true, \
                              .propose_nic_channels = true }

typedef struct PolicyConfig {
        NetPolicy net;
        SpeedConfig speed;              /* [Speed]: thresholds, hysteresis, trusted drivers */
        bool manage_virtual;            /* [Manager] VirtualDevices=manage: write to virtual devices too */
        DeferTo defer_to;               /* [Manager] DeferTo= (policies/owners.h); DEFER_TO_ADMIN by default */
        ClassPolicy classes[_DISK_CLASS_MAX];
        ModuleWish *module_params;      /* [Module:<name>] param=value from the config */
        size_t n_module_params;
        DeviceRule *rules;              /* in file order; a later rule wins */
        size_t n_rules;
} PolicyConfig;

/*
 * Fill config with the shipped defaults (see policies/defaults.c for the table and the
 * reasoning behind each entry). Returns 0 or -ENOMEM; on failure config is left empty.
 */
int policy_config_init_defaults(PolicyConfig *config);

/* A driver whose disks are not hardware (policies/defaults.c virtual_drivers[]). */
typedef struct VirtualDriver {
        const char *driver;     /* the driver fact: "loop", "zram", "brd", "null_blk", "scsi_debug", "ublk" */
        const char *backing;    /* what stands behind the queue */
        const char *source;     /* the driver's source file in the kernel tree */
} VirtualDriver;

/* The table row of driver (the driver fact), or NULL for a driver of real devices or NULL. Pure. */
const VirtualDriver *policy_virtual_driver(const char *driver);

/*
 * Why the shipped defaults leave elevator out of class c (evidence: kernel commit, thread or
 * distribution rule; see policies/defaults.c), or NULL when they do not. Static string. Pure.
 */
const char *policy_elevator_evidence(DiskClass c, const char *elevator);

/*
 * True when name is an elevator of the legacy single-queue block layer (noop, deadline, cfq,
 * anticipatory, as: removed in 5.0), in any case ("NOOP", "Deadline"); *ret_instead (static)
 * then names the blk-mq elevator to use instead. Pure.
 */
bool elevator_name_is_legacy(const char *name, const char **ret_instead);

/*
 * Why name can never be what a kernel's queue/scheduler shows or takes, or NULL when it can:
 * elevator names are compared byte for byte (block/elevator.c elevator_match(): strcmp) and
 * are at most ELV_NAME_MAX - 1 = 15 bytes (include/linux/elevator.h); every elevator known,
 * in tree or out of it, is lower-case letters, digits, '-' and '_'. So "BFQ" (suggest: the
 * name in lower case, into buf), "mq-deadline,bfq" (a list written with commas), a quoted
 * name or one longer than 15 bytes is refused. Legacy names are elevator_name_is_legacy()'s.
 * buf/size: room for the reason (static text otherwise). Pure.
 */
const char *elevator_name_invalid(const char *name, char *buf, size_t size);

/*
 * True when name is one of the elevators mainline blk-mq kernels have shipped: none,
 * mq-deadline, kyber, bfq (block/mq-deadline.c, block/kyber-iosched.c, block/bfq-iosched.c).
 * Every other name is an out-of-tree module's, or a name no kernel has. Pure.
 */
bool elevator_name_in_tree(const char *name);

/*
 * The in-tree elevator name probably meant by name, or NULL: the module's name
 * ("mq_deadline", kmod takes '-' and '_' alike, queue/scheduler does not), the alias the kernel
 * requests ("bfq-iosched"), another case, or a typo of one or two letters ("mq-dedline").
 * NULL for a name that is in tree already or close to none. Static string. Pure.
 */
const char *elevator_name_suggest(const char *name);
void policy_config_done(PolicyConfig *config);


void policy_overrides_done(PolicyOverrides *o);
/* The override of knob k (NULL = auto). */
const char *policy_overrides_get(const PolicyOverrides *o, Knob k);
/* Set (value != NULL) or clear (NULL) the override of k. Returns 0 or -ENOMEM. */
int policy_overrides_set(PolicyOverrides *o, Knob k, const char *value);
/* Set or clear the override of an elevator tunable (a value iosched_tunable_validate() gave). 0, -EINVAL, -ENOMEM. */
int policy_overrides_set_iosched(PolicyOverrides *o, IoschedTunable t, const char *value);

/*
 * Validate what a user wrote into policy/<file> and normalise it.
 *   file:   a PolicyFile: a Knob, or POLICY_FILE_ENABLED (int, so a Knob passes as it is)
 *   input:  the bytes written (len bytes, may lack a NUL; one trailing "\n" is dropped)
 *   facts:  the disk (for the elevator list, queue depth, reserved tags)
 *   online: online CPUs (/sys/devices/system/cpu/online) for irq_affinity
 *   ret:    normalised value, NULL for "auto"
 * Returns 0, or -EINVAL (not a valid value: empty, embedded NUL, over 4096 bytes,
 * unknown elevator, "0x2", a cpulist naming an offline CPU, ...), -ERANGE (a number
 * outside the knob's range: rq_affinity 3 or -1; nr_requests outside the kernel's
 * limits, block/blk-sysfs.c queue_requests_store()), -ENOMEM. Pure.
 * enabled (file POLICY_FILE_ENABLED): "0" or "1" -> ret "0"/"1"; "auto" -> NULL like every
 * knob (one grammar for every policy file). Every knob (not enabled) takes "keep": blkmqd leaves
 * it to the disk whatever the class wants (a value it wrote is put back).
 */
int policy_override_validate(int file, const char *input, size_t len, const DiskFacts *facts,
                             const CpuSet *online, char **ret);

/*
 * What policy/<knob> accepts on this disk, for the message that goes with a refusal:
 * e.g. "one of the elevators the device offers (none mq-deadline kyber bfq), or \"auto\"".
 * Newly allocated; NULL on ENOMEM. Pure.
 */
char *policy_override_expected(int file, const DiskFacts *facts, const CpuSet *online);


/* What one explanation line decides (PlanEntry.outcome). */
typedef enum PlanOutcome {
        PLAN_OUTCOME_NOTE,              /* a finding that decides no knob: the class, a role, a known issue, evidence */
        PLAN_OUTCOME_PLANNED,           /* a value is wanted for its knobs (it may be the one the kernel has: "kept") */
        PLAN_OUTCOME_LEFT_ALONE,        /* its knobs are not written: no wish, an override refused, facts unknown */
        _PLAN_OUTCOME_MAX,
        _PLAN_OUTCOME_INVALID = -EINVAL,
} PlanOutcome;

/* "note", "planned", "left-alone"; NULL when out of range. */
const char *plan_outcome_to_string(PlanOutcome o);

/* One decision of the policy, and the explain line that says it. */
typedef struct PlanEntry {
        unsigned knobs;         /* KNOB_BIT()s of the knobs it is about (a note decides none of them); 0: no knob (the
                                 * class, the disk's role, the disk as a whole (enabled, unknown class), elevator
                                 * tunables, module parameters) */
        PlanOutcome outcome;
        char *rule;             /* the rule's name ("elevator-fast-multiqueue"); NULL: a line that applies no rule */
        char *text;             /* the explain line: "<disk>: <body>[ (rule <rule>)]", no trailing newline */
        const char *body;       /* text past "<disk>: " (the journal's MESSAGE= prefixes the disk itself) */
} PlanEntry;

/* The state of a network disk's alignment (Plan.net_alignment_state). */
typedef enum NetAlignmentState {
        NET_ALIGNMENT_ALIGNED,
        NET_ALIGNMENT_MISALIGNED,
        NET_ALIGNMENT_NOT_APPLICABLE,
        NET_ALIGNMENT_UNKNOWN,
        NET_ALIGNMENT_UNAVAILABLE,
        _NET_ALIGNMENT_MAX,
        _NET_ALIGNMENT_INVALID = -EINVAL,
} NetAlignmentState;

/* As network/alignment starts its line: "aligned", "misaligned", "not applicable", "unknown", "unavailable". */
const char *net_alignment_state_to_string(NetAlignmentState s);
/* As the blkmqd_net_alignment metric labels it: "not-applicable" for "not applicable", else the same. */
const char *net_alignment_state_to_label(NetAlignmentState s);

/*
 * What blkmqd recommends for a network disk whose hctx outnumber the NIC's queues in a map
 * (Plan.net_action; the blkmqd_net_recommended_action metric's action label).
 */
typedef enum NetAction {
        NET_ACTION_NONE,                /* "none": nothing to change, or nothing blkmqd may propose */
        NET_ACTION_NIC_CHANNELS,        /* "nic-channels": ethtool -L <if> combined N, no reconnect */
        NET_ACTION_RECONNECT,           /* "reconnect": other queue counts at the next connect (nr_io_queues) */
        _NET_ACTION_MAX,
        _NET_ACTION_INVALID = -EINVAL,
} NetAction;

const char *net_action_to_string(NetAction a);
NetAction net_action_from_string(const char *s);

/* What the policy wants for one disk. Each knob: wanted value as written to the kernel, NULL = leave. */
typedef struct Plan {
        DiskClass class;
        bool manage;            /* false: blkmqd writes nothing to this disk */
        char *elevator;
        char *rq_affinity;
        char *nr_requests;
        char *irq_affinity;     /* "hctx": each queue vector on its hctx's CPUs; or a cpulist */
        char *nic_irq_affinity; /* "<irq>:<cpulist> ..." for the NIC's unmanaged queue vectors */
        char *xps;              /* "<if>/tx-<n>:<cpulist> ..." */
        /* proposed for the next connect (pending-reconnect): the fabrics options that give every
         * queue map its count, "nr_io_queues=N[ nr_write_queues=N][ nr_poll_queues=N]" */
        char *nr_io_queues;
        char *net_alignment;    /* network disks: "<state>: <why>", e.g. "misaligned: hctx 2-3 have no NIC queue ..." */
        NetAlignmentState net_alignment_state;  /* the state net_alignment starts with (when net_alignment is set) */
        int net_hctx_without_queue;     /* hctx with no NIC queue vector on their CPUs; -1 not computed */
        unsigned net_queues;            /* NIC queues the alignment counted (0: not computed) */
        /* the queue maps as the alignment counted them: hctx per map (net_maps_known), and
         * network/maps, one line per map with the NIC queues its hctx go to */
        bool net_maps_known;
        size_t net_map_hctx[_HCTX_TYPE_MAX];
        char *net_maps;
        unsigned net_channels;          /* proposed: ethtool -L <if> combined N (0: none) */
        NetAction net_action;           /* the recommended one of the proposals */
        char *net_recommended;          /* network/recommended: the action and why; NULL before an evaluation */
        /* elevator tunables wanted, only of the elevator the disk will run (the planned one,
         * else the current one): written after the elevator (a switch resets them) */
        char *iosched[_IOSCHED_TUNABLE_MAX];
        ModuleWish *modules;    /* module parameters wanted because of this disk */
        size_t n_modules;
        /* ... and those another tool's setting wins over (the owner rule: an admin's modprobe.d
         * option, the command line): never written; modules/<m>/<p> says deferred, naming it */
        ModuleWish *modules_deferred;
        size_t n_modules_deferred;
        /* whose value each knob is (policies/owners.c policy_owner()): the owner column; the
         * source, described, when another tool sets it (NULL otherwise) */
        Ownership owner[_KNOB_MAX];
        char *owner_source[_KNOB_MAX];
        Ownership owner_iosched[_IOSCHED_TUNABLE_MAX];
        char *owner_source_iosched[_IOSCHED_TUNABLE_MAX];      /* as owner_source, per tunable */
        /* what isolated CPUs changed in a placing knob's plan (irq_affinity, nic_irq_affinity,
         * xps), for its applied/ line: "CPU 3 isolated (cgroup /sys/fs/cgroup/rt: isolated
         * partition): IRQ 28 (hctx 3, CPUs 3) left where it is"; NULL when they changed nothing */
        char *isolated[_KNOB_MAX];
        /* how far queue/rotational was trusted, under the config's TrustRotational= (policies/speed.c
         * policy_rotational_hint(); static strings; row NULL: not evaluated) */
        RotationalHint rotational_hint;
        PlanEntry *entries;     /* the decisions in the order made: explain shows one line each */
        size_t n_entries;
} Plan;

void plan_done(Plan *p);
/* The wanted value of knob k (NULL = leave). */
const char *plan_get(const Plan *p, Knob k);

/*
 * Append one decision to p.
 *   disk:    the disk's name; the line starts "<disk>: "
 *   knobs:   KNOB_BIT()s of the knobs decided, 0 for none
 *   outcome: what it decides
 *   rule:    the rule's name (copied), or NULL for a line that applies none; the line ends
 *            " (rule <rule>)"
 *   fmt:     printf format of the body between the two
 * Returns 0 or -ENOMEM (p unchanged). Pure.
 */
int plan_explain(Plan *p, const char *disk, unsigned knobs, PlanOutcome outcome, const char *rule,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* True when p has an entry whose line is text. */
bool plan_has_line(const Plan *p, const char *text);
/* The last entry of p that decides knob k (outcome planned or left-alone), or NULL. */
const PlanEntry *plan_decision(const Plan *p, Knob k);

#define PLAN_FOREACH_ENTRY(e, p) \
        for (const PlanEntry *e = (p)->entries; e && e < (p)->entries + (p)->n_entries; e++)

/*
 * Classify a disk without a measurement, under the shipped trust table (the rules:
 * classify() in policies/policy.c). If ret_reason is non-NULL it receives the rule's
 * explanation line (newly allocated, may be NULL on ENOMEM).
 */
DiskClass policy_classify(const DiskFacts *f, char **ret_reason);

/*
 * Evaluate the policy for one disk.
 *   facts:     gathered facts (must not be NULL)
 *   history:   what blkmqd itself did (policies/history.h: the originals it recorded, the
 *              options its modprobe.d gave this boot), NULL for nothing (a first start); a
 *              layout parameter blkmqd's modprobe.d set at this boot and the running module has
 *              (policy_layout_by_blkmqd()) classifies the disk as the layout before it, and its
 *              wish stays
 *   config:    class policies (must not be NULL)
 *   overrides: admin overrides, or NULL for none
 *   speed:     what the disk's I/O measured so far (the manager keeps it, speed_feed()), NULL
 *              for nothing (policy_evaluate())
 *   ret:       the plan; call plan_done() on it
 * Returns 0 or -ENOMEM. An override the device cannot take is not an error: the plan
 * leaves the knob alone and the explanation says why. Pure.
 */
int policy_evaluate_measured(const DiskFacts *facts, const PolicyHistory *history, const PolicyConfig *config,
                             const PolicyOverrides *overrides, const SpeedState *speed, Plan *ret);

/*
 * The queue-layout module parameter of f's driver whose running value blkmqd's own modprobe.d
 * gave it at this boot (history), when that value takes the layout a rule looks for away
 * (megaraid_sas/mpt3sas host_tagset_enable=0: one hctx, no shared host tagset, where the
 * driver would have given one hctx per MSI-X vector over a shared tagset); NULL otherwise.
 * The disk's one hctx is then blkmqd's effect, not the disk's nature. Pure.
 */
const ModuleParamFacts *policy_layout_by_blkmqd(const DiskFacts *f, const PolicyHistory *history);
/* policy_evaluate_measured() without a measurement (a disk idle since blkmqd started): the same
 * arguments, the same returns. */
int policy_evaluate(const DiskFacts *facts, const PolicyHistory *history, const PolicyConfig *config,
                    const PolicyOverrides *overrides, Plan *ret);

/* Slow or fast for the class: a trusted rotational=1 (a seeking medium, whatever a window
 * measured), a trusted rotational=0 unless measured slow, else the measurement. */
typedef struct SpeedVerdict {
        Tristate slow;                  /* TRISTATE_YES slow, TRISTATE_NO fast, TRISTATE_UNKNOWN */
        bool from_flag;                 /* decided by the (trusted) flag as it reads */
        RotationalHint hint;
        const char *rule;               /* "speed-hint", "speed-measured", "speed-unknown" */
} SpeedVerdict;

/* The verdict for f with measurement s (NULL: none) under config (NULL: shipped defaults). Pure. */
void policy_speed_verdict(const DiskFacts *f, const PolicyConfig *config, const SpeedState *s, SpeedVerdict *ret);

/* Append the explain line of verdict v (the flag, its trust, the measurement, the bounds and the
 * last change) to plan. 0 or -ENOMEM. Pure. */
int policy_explain_speed(const DiskFacts *f, const PolicyConfig *config, const SpeedState *s, const SpeedVerdict *v,
                         Plan *plan);

/* What irq_affinity_target() found for one queue vector. */
typedef enum IrqTarget {
        IRQ_TARGET_NONE,        /* nothing to place it on: "hctx" and the vector serves no hctx, or one without CPUs */
        IRQ_TARGET_CPUS,        /* *ret is the hctx's CPUs (or the cpulist asked for) */
        IRQ_TARGET_TRIMMED,     /* *ret is those CPUs without the isolated ones */
        IRQ_TARGET_ISOLATED,    /* every one of those CPUs is isolated: the vector is not placed */
} IrqTarget;

/*
 * Where irq_affinity want ("hctx", or a cpulist policy_override_validate() normalised) puts
 * queue vector q of disk f: its hctx's CPUs, or want, without the isolated CPUs
 * (KernelConfigFacts.isolated: isolcpus=, nohz_full=, cpuset partitions get no device
 * interrupt). *ret: a newly allocated cpulist for IRQ_TARGET_CPUS and _TRIMMED, else NULL;
 * ret_wanted (optional): the CPUs before isolated ones were taken out (newly allocated, NULL
 * for IRQ_TARGET_NONE). Returns an IrqTarget, -EINVAL (want no cpulist) or -ENOMEM. Pure.
 */
int irq_affinity_target(const DiskFacts *f, const char *want, const IrqFacts *q, char **ret, char **ret_wanted);

/*
 * True when the kernel does not act on rq_affinity: forced IRQ threading
 * (KernelConfigFacts.irq_threads_forced: PREEMPT_RT or threadirqs) on a kernel where
 * blk_mq_complete_need_ipi() (block/blk-mq.c) returns false under force_irqthreads() ("blk-mq:
 * Don't complete on a remote CPU in force threaded mode", 5.11-rc1; PREEMPT_RT kernels before
 * it by the RT patch set). False when forced threading is unknown. Pure.
 */
bool rq_affinity_ignored(const DiskFacts *f);

/*
 * True when every hctx has its own kernel-managed vector: at least nr_hw_queues queue
 * vectors are managed. A driver's vectors are the pre/post vectors (not managed) and the
 * spread set (managed: kernel/irq/affinity.c irq_create_affinity_masks()), and
 * blk_mq_pci_map_queues() (block/blk-mq-pci.c) gives hctx N the spread vector offset+N;
 * so the unmanaged rest (megaraid_sas's low-latency pre-vectors) serve no hctx, and
 * following hctx has nothing to write. Pure.
 */
bool irq_affinity_hctx_all_managed(const DiskFacts *f);

/*
 * True when the IRQ policy may need vectors matched to hctx (DiskFacts.hctx_details): a
 * queue vector that is not known to be managed exists, and not every hctx has a managed
 * vector. Gathering reads every hctx's cpu_list only then. Pure.
 */
bool irq_affinity_needs_map(const DiskFacts *f);
