/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What blkmqd knows about one whole disk: gathered by facts/device.c through
 * hostfs, consumed by the pure policy and rendered by fuse-fs. Plain data.
 *
 * Every fact is either known (typed field valid, unknown[fact] == NULL) or
 * unknown with a reason (unknown[fact] = "debugfs not mounted", ...). A fact
 * the machine cannot give is never reported as 0.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"
#include "net-facts.h"
#include "parse.h"

/* A tristate for yes/no facts that may be unknown. */
typedef enum Tristate {
        TRISTATE_NO = 0,
        TRISTATE_YES = 1,
        TRISTATE_UNKNOWN = -1,
} Tristate;

/* The facts under devices/<disk>/facts/, in display order. */
typedef enum Fact {
        FACT_DEVNUM,              /* "major:minor" */
        FACT_SIZE,                /* bytes (sysfs "size" is in 512-byte sectors) */
        FACT_NR_HW_QUEUES,        /* number of hctx (mq/N directories) */
        FACT_ROTATIONAL,          /* queue/rotational: 0 or 1 */
        FACT_ELEVATOR,            /* current elevator (bracketed in queue/scheduler) */
        FACT_ELEVATORS,           /* elevators the device offers, space-separated */
        FACT_RQ_AFFINITY,         /* queue/rq_affinity: 0, 1 or 2 */
        FACT_NR_REQUESTS,         /* queue/nr_requests */
        FACT_QUEUE_DEPTH,         /* device/queue_depth (SCSI) */
        FACT_DRIVER,              /* scsi_host proc_name, or the bus driver */
        FACT_TRANSPORT,           /* scsi, nvme, virtio, mmc, loop, dm, md, zram, ... */
        FACT_SCSI_HOST,           /* "host0" */
        FACT_HOST_NR_HW_QUEUES,   /* scsi_host/hostN/nr_hw_queues */
        FACT_HOST_CAN_QUEUE,      /* scsi_host/hostN/can_queue */
        FACT_SHARED_TAGS,         /* host-wide shared tagset: debugfs hctx flags TAG_HCTX_SHARED */
        FACT_SQ_SCHED,            /* debugfs queue state SQ_SCHED (single-queue elevator attached) */
        FACT_IRQ_VECTORS,         /* MSI/MSI-X IRQ numbers of the device's PCI function */
        FACT_NUMA_NODE,           /* device NUMA node, -1 = none */
        FACT_KERNEL_RELEASE,      /* uname -r of the kernel the facts come from */
        FACT_STACKED,             /* 1 for loop, dm, md: I/O goes to another block device */
        FACT_IDENTITY,            /* stable key of persisted overrides: "wwid:…", "serial:…", "loop:<file>", "path:…" */
        FACT_ZONED,               /* queue/zoned: none, host-aware, host-managed */
        FACT_ELEVATORS_LOADABLE,  /* elevators not listed in queue/scheduler that the kernel can load or has built in */
        FACT_MULTIPATH,           /* dm-multipath leg or map, NVMe multipath path device, or none */
        FACT_VIRTUAL,             /* 1: not hardware (loop, zram, brd, null_blk, scsi_debug, ublk: policy_virtual_driver()) */
        FACT_MEDIUM_ROTATION,     /* SCSI VPD page B1h MEDIUM ROTATION RATE: 0 not reported, 1 non-rotating, else rpm */
        FACT_ROTATIONAL_HINT,     /* how far queue/rotational can be trusted, and why (policy_rotational_hint()) */
        FACT_SPEED,               /* what the disk's I/O measured: unmeasured, fast, slow with evidence (policies/speed.h);
                                   * history the manager keeps (Device.speed), not gathered: fuse-fs renders it */
        FACT_SPEED_SOURCE,        /* what measures it: BPF service times, the stat's busy time, or why nothing */
        FACT_DRIVER_MODULE,       /* the driver built in or a module: "builtin (...)", "module (...)" */
        FACT_PREEMPT_RT,          /* the kernel is PREEMPT_RT: "1 (<source>)" / "0 (<source>)" (KernelConfigFacts) */
        FACT_IRQ_THREADS_FORCED,  /* force_irqthreads(): "1 (<source>)" / "0 (<source>)" */
        FACT_ISOLATED_CPUS,       /* CPUs no device interrupt may be placed on: "<cpulist> (<sources>)", "none (...)" */
        FACT_TRANSPORT_DEVICE,    /* the device that is the transport when it is not the parent's bus: the USB
                                   * interface above a SCSI host ("devices/.../usb2/2-1/2-1:1.0"), else "none" */
        _FACT_MAX,
        _FACT_INVALID = -EINVAL,
} Fact;

/* File name of a fact ("nr_hw_queues"); NULL for an invalid value. */
const char *fact_to_string(Fact f);
/* Inverse of fact_to_string(); _FACT_INVALID when unknown. */
Fact fact_from_string(const char *s);

/* queue/zoned (block/blk-sysfs.c queue_zoned_show()). */
typedef enum Zoned {
        ZONED_NONE,
        ZONED_HOST_AWARE,
        ZONED_HOST_MANAGED,
        _ZONED_MAX,
        _ZONED_INVALID = -EINVAL,
} Zoned;

/* "none", "host-aware", "host-managed"; NULL when out of range. */
const char *zoned_to_string(Zoned z);
Zoned zoned_from_string(const char *s);

/* What a disk is in a multipath set-up. */
typedef enum Multipath {
        MULTIPATH_NONE,
        MULTIPATH_LEG,          /* a path of a request-based dm-multipath map (or claimed by multipathd's udev rules) */
        MULTIPATH_LEG_BIO,      /* a path of a bio-based dm-multipath map (queue_mode bio): bios go through its elevator */
        MULTIPATH_MAP,          /* a request-based dm-multipath map (dm/uuid "mpath-", blk-mq queue) */
        MULTIPATH_NVME_PATH,    /* a hidden NVMe multipath path device (nvme0c0n1) of a bio-based head (nvme0n1) */
        _MULTIPATH_MAX,
        _MULTIPATH_INVALID = -EINVAL,
} Multipath;

/* Where an elevator a disk could run comes from (disk_facts_elevator_source()). */
typedef enum ElevatorSource {
        ELEVATOR_UNAVAILABLE,
        ELEVATOR_LISTED,        /* in queue/scheduler: registered and usable for this queue */
        ELEVATOR_BUILTIN,       /* in lib/modules/<release>/modules.builtin, not listed */
        ELEVATOR_LOADABLE,      /* a module in lib/modules/<release>/modules.dep: the kernel loads it on the write */
} ElevatorSource;

/*
 * The queue map an hctx belongs to: debugfs block/<disk>/hctxN/type, one of the kernel's
 * hctx_types[] names (block/blk-mq-debugfs.c hctx_type_show(); enum hctx_type in
 * include/linux/blk-mq.h). A tag set has up to three maps, each over every CPU: "default"
 * (all I/O, or only writes when the read map has queues of its own), "read", "poll" (polled
 * I/O, REQ_POLLED: no completion interrupt; nvme-pci creates its poll queues without a vector,
 * drivers/nvme/host/pci.c nvme_create_queue()). The hctx of a map are numbered after those of
 * the maps before it (queue_offset). Kernels before 5.0 have one map and no type file.
 */
typedef enum HctxType {
        HCTX_TYPE_DEFAULT,
        HCTX_TYPE_READ,
        HCTX_TYPE_POLL,
        _HCTX_TYPE_MAX,
        _HCTX_TYPE_INVALID = -EINVAL,
} HctxType;

/* "default", "read", "poll"; NULL when out of range. */
const char *hctx_type_to_string(HctxType t);
HctxType hctx_type_from_string(const char *s);

/* One hardware context (/sys/block/X/mq/N). */
typedef struct HctxFacts {       /* 48 bytes: one per hctx of every disk (64 per disk on a big HBA) */
        unsigned index;         /* N; hctx numbers may have gaps (nr_ctx == 0 is not registered) */
        /* mq/N/nr_tags, -1 if unknown; at most BLK_MQ_MAX_DEPTH (10240, include/linux/blk-mq.h) */
        int32_t nr_tags;
        int32_t nr_reserved_tags;
        int irq;                /* position in DiskFacts.irqs of the vector serving this hctx; -1 none */
        CpuSet cpus;            /* mq/N/cpu_list */
        char *cpu_list;         /* normalised cpulist of cpus, "0-3"; NULL if unknown */
        Tristate shared_tags;   /* debugfs hctxN/flags has TAG_HCTX_SHARED */
        HctxType type;          /* debugfs hctxN/type; _HCTX_TYPE_INVALID unknown (DiskFacts.hctx_type_unknown says why) */
} HctxFacts;

/* One MSI/MSI-X vector of the disk's PCI function. */
typedef struct IrqFacts {
        unsigned irq;
        char *name;             /* /proc/interrupts action name ("virtio1-req.0"); "" unknown */
        CpuSet affinity;        /* /proc/irq/N/smp_affinity_list */
        char *affinity_list;    /* normalised cpulist; NULL if unreadable */
        Tristate managed;       /* kernel-managed affinity (IRQD_AFFINITY_MANAGED): user writes fail */
        char *managed_source;   /* how that is known, for explain; NULL when unknown */
        bool queue;             /* a request queue vector (not config/control/event/admin) */
        int hctx;               /* position in DiskFacts.hctx it serves; -1 none */
} IrqFacts;

/* One file of queue/iosched/: a tunable of the running elevator. */
typedef struct IoschedValue {
        char *name;             /* "slice_idle" */
        char *value;            /* as the kernel shows it, newline stripped; NULL when unreadable (error) */
        int error;              /* -errno of the read, 0 when read */
        bool writable;          /* mode has a write bit (the kernel's elevator attributes are 0644) */
} IoschedValue;

/* A queue-layout module parameter of the disk's driver (/sys/module/<module>/parameters/<param>). */
typedef struct ModuleParamFacts {
        char *module;           /* "megaraid_sas" */
        char *param;            /* "host_tagset_enable" */
        char *value;            /* current value, newline stripped; NULL = the parameter does not exist */
        bool writable;          /* mode has a write bit (0644); 0444 params are load-time only */
} ModuleParamFacts;

/*
 * Boot-time configuration of the running kernel that changes what a knob does, the same for
 * every disk (facts/kernel.c gathers it; every disk's facts hold a copy). Each part is known
 * (its source says from where) or unknown (DiskFacts.unknown[FACT_...] says why).
 *
 *   preempt_rt          CONFIG_PREEMPT_RT: /sys/kernel/realtime "1" (kernel/ksysfs.c of the RT
 *                       patch set, "sysfs: Add /sys/kernel/realtime entry"), "PREEMPT_RT" in
 *                       /proc/sys/kernel/version (UTS_VERSION, scripts/mkcompile_h), or
 *                       /boot/config-<release>; unknown when none of them can be read.
 *   irq_threads_forced  force_irqthreads() (include/linux/interrupt.h): always true under
 *                       PREEMPT_RT; otherwise "threadirqs" on the command line
 *                       (kernel/irq/manage.c setup_forced_irqthreads(), an early_param of
 *                       CONFIG_IRQ_FORCED_THREADING). Then blk_mq_complete_need_ipi()
 *                       (block/blk-mq.c) returns false before it looks at rq_affinity:
 *                       "blk-mq: Don't complete on a remote CPU in force threaded mode"
 *                       (Sebastian Andrzej Siewior, 5.11-rc1, block-5.11-2020-12-23);
 *                       policies/rq-affinity.c.
 *   isolated            CPUs kept free of device interrupts: isolcpus= (any flags:
 *                       kernel/sched/isolation.c housekeeping_isolcpus_setup()), nohz_full=
 *                       (/sys/devices/system/cpu/nohz_full), /sys/devices/system/cpu/isolated,
 *                       and cgroup v2 isolated partitions: /sys/fs/cgroup/cpuset.cpus.isolated
 *                       (877c737db935, 6.8), before it the cgroups whose cpuset.cpus.partition
 *                       reads "isolated" (kernel/cgroup/cpuset.c, f28e22441f35, 6.1), their
 *                       cpuset.cpus.effective (facts/kernel.c). A partition is made at run time
 *                       without a uevent: read again at every gather (a reload, a uevent) and
 *                       at the periodic verify (manager/verify.c).
 */
typedef struct IsolatedSource {
        CpuSet cpus;
        char *label;                    /* "isolcpus=1,3 (/proc/cmdline)", "cgroup /sys/fs/cgroup/rt: isolated partition" */
} IsolatedSource;

typedef struct KernelConfigFacts {
        Tristate preempt_rt;
        char *preempt_rt_source;
        Tristate irq_threads_forced;
        char *irq_threads_source;       /* "PREEMPT_RT kernel", "threadirqs on the kernel command line" */
        bool isolated_known;
        CpuSet isolated;                /* empty: none */
        char *isolated_list;            /* cpuset_format(&isolated); "" none */
        char *isolated_source;          /* "isolcpus=managed_irq,domain,1 (/proc/cmdline); ..." */
        bool isolated_managed_irq;      /* isolcpus= has managed_irq: the kernel keeps managed vectors off them where it can */
        /* where each isolated CPU came from, in the order read (a CPU may be in several) */
        IsolatedSource *isolated_sources;
        size_t n_isolated_sources;
} KernelConfigFacts;

void kernel_config_facts_done(KernelConfigFacts *k);
/* A deep copy of src into *ret (which must be empty). 0 or -ENOMEM. */
int kernel_config_facts_copy(const KernelConfigFacts *src, KernelConfigFacts *ret);
/* Whether a and b say the same: every fact, its source and its isolated CPUs. Pure. */
bool kernel_config_facts_equal(const KernelConfigFacts *a, const KernelConfigFacts *b);
/*
 * "CPU 3 isolated (cgroup /sys/fs/cgroup/rt: isolated partition)", "CPUs 1,3 isolated
 * (isolcpus=1,3 (/proc/cmdline))", with several sources "CPUs 1,3 isolated (1: isolcpus=1
 * (/proc/cmdline); 3: cgroup /sys/fs/cgroup/rt: isolated partition)": the isolated CPUs of cpus,
 * each named by the first source that has it. Newly allocated into *ret; "" when cpus has no
 * isolated CPU. 0 or -ENOMEM. Pure.
 */
int kernel_isolated_describe(const KernelConfigFacts *k, const CpuSet *cpus, char **ret);

/* How the disk's driver is there (lib/modules/<release>/modules.builtin, modules.dep). */
typedef enum DriverModule {
        DRIVER_MODULE_UNKNOWN,
        DRIVER_MODULE_BUILTIN,  /* built into the kernel: its parameters come only from the kernel command line */
        DRIVER_MODULE_LOADABLE, /* a module: modprobe passes modprobe.d options (and the command line's) at load */
} DriverModule;

typedef struct DiskFacts {
        char *name;                     /* "sda" */
        unsigned major, minor;
        uint64_t sysfs_ino;             /* inode of sysfs block/<name> when gathered, 0 unknown: a disk
                                         * removed and added again under one name has a new one */
        uint64_t size_bytes;
        bool has_mq;                    /* a blk-mq queue (mq/ directory) exists */

        HctxFacts *hctx;                /* sorted by index */
        size_t n_hctx;
        /*
         * hctx[0] is always read in full; every other hctx[i] has only its index until the
         * per-hctx details are read (cpu_list, nr_tags, nr_reserved_tags, shared_tags) and
         * the queue vectors are matched to hctx (irqs[].hctx, hctx[].irq, irq_mapping):
         * facts/device.c device_gather_hctx_details(), at gather time when the IRQ policy
         * needs the map, otherwise when a reader first asks. Policy needs neither.
         */
        bool hctx_details;
        /* why some hctx's type is unknown ("debugfs not mounted ..."); NULL when every read hctx has one */
        char *hctx_type_unknown;

        Tristate rotational;
        char *elevator;                 /* current; NULL if unknown or not configurable */
        char **elevators;               /* available (strv) */
        bool elevator_configurable;     /* false: scheduler reads "none" without brackets */
        int rq_affinity;                /* -1 unknown */
        int64_t nr_requests;            /* -1 unknown */
        int64_t queue_depth;            /* -1 unknown */

        char *driver;
        char *transport;                /* "usb" for a disk whose SCSI host sits on a USB interface (uas,
                                         * usb-storage): the USB device above the host is the transport */
        char *transport_device;         /* that USB interface's sysfs path ("devices/.../2-1:1.0"); NULL: none */
        char *scsi_host;
        int scsi_channel;               /* the C of the SCSI device's H:C:T:L, -1 unknown or not SCSI: RAID
                                         * HBAs put logical drives on channels of their own (policies/defaults.c) */
        /*
         * MEDIUM ROTATION RATE of the SCSI disk's VPD page B1h (SBC-4; device/vpd_pgb1, read by
         * sd for queue/rotational: drivers/scsi/sd.c sd_read_block_characteristics()): 0 not
         * reported, 1 non-rotating medium, 0x401-0xfffe nominal rpm; -1 unknown (not SCSI, no
         * such page: unknown[FACT_MEDIUM_ROTATION] says why).
         */
        int rotation_rate;
        int64_t host_nr_hw_queues;      /* -1 unknown */
        int64_t host_can_queue;         /* -1 unknown */

        Tristate shared_tags;
        char *shared_tags_source;       /* how shared_tags is known: "debugfs hctx flags", "megaraid_sas.host_tagset_enable=1", ... */
        Tristate sq_sched;

        IrqFacts *irqs;                 /* ascending IRQ number */
        size_t n_irqs;
        /* irqs is irqs_shared->v, the PCI function's vectors shared with the other disks behind
         * it (facts/device.c gather_irqs()), while this is set: change irqs only after
         * disk_facts_own_irqs(). NULL: irqs is this disk's own array. */
        struct IrqVectors *irqs_shared;
        char *irq_mapping;              /* how vectors were matched to hctx: "affinity", "order"; NULL none */

        int numa_node;
        char *kernel_release;
        bool stacked;

        DriverModule driver_module;     /* valid when unknown[FACT_DRIVER_MODULE] is NULL */
        char *driver_module_source;     /* "lib/modules/<release>/modules.builtin", ... */

        KernelConfigFacts kernel;       /* the running kernel's configuration (FACT_PREEMPT_RT ... FACT_ISOLATED_CPUS) */

        ModuleParamFacts *modparams;    /* known queue-layout params of the driver (see policies/module-params.c) */
        size_t n_modparams;
        bool root_disk;                 /* the root filesystem lives on this disk (initramfs matters) */

        /* Stable identity for persisted settings, one per disk: "wwid:…", "serial:…", "mmc:<CID>/boot0",
         * "loop:<backing file>", "dm:<uuid>", "path:…" (facts/device.c gather_identity()); may be NULL */
        char *identity;

        Zoned zoned;                    /* valid when unknown[FACT_ZONED] is NULL */
        bool zoned_unreadable;          /* unknown because queue/zoned is there but gave no known model
                                         * (a read error, a value with no name here): the disk may be
                                         * zoned; an absent file (a hand-made tree) is not that */
        /*
         * Elevators the kernel can run that queue/scheduler does not list (it lists only
         * registered ones, block/elevator.c elv_iosched_show()): from modules.builtin and
         * modules.dep of the running release (elevator name, e.g. "bfq" for bfq.ko, "kyber"
         * for kyber-iosched.ko). elv_iosched_store() loads "<name>-iosched" on demand
         * (request_module()). NULL = none (or unknown: unknown[FACT_ELEVATORS_LOADABLE]).
         */
        char **elevators_builtin;
        char **elevators_loadable;
        /* modules modprobe.d keeps from loading: "<name>: <why>" ("bfq: blacklist bfq in /etc/modprobe.d/x.conf (...)") */
        char **elevators_blocked;

        /*
         * queue/iosched/ of the running elevator: every file the elevator registered
         * (block/elevator.c elv_register_queue() adds its elevator_attrs), sorted by name.
         * A switch frees the old elevator's directory and makes a new one with the new
         * elevator's defaults (a new kernfs node: iosched_ino changes), so values blkmqd
         * wrote are gone after any switch, also away and back. Unknown when
         * iosched_unknown is set ("none" has no directory: n_iosched 0, not unknown).
         */
        IoschedValue *iosched;
        size_t n_iosched;
        char *iosched_elevator;         /* the elevator the values belong to (the current one) */
        uint64_t iosched_ino;           /* inode number of queue/iosched, 0 none */
        char *iosched_unknown;          /* why queue/iosched cannot be read; NULL = read (or none) */

        Multipath multipath;
        char *multipath_of;             /* leg: the map ("dm-3"); nvme path: the head ("nvme0n1"); NULL */
        char *multipath_source;         /* how it is known, for explain: "holders/dm-3 dm/uuid mpath-…", … */

        /*
         * A disk reached over the network (nvme-tcp/rdma, iSCSI, NBD): its network facts
         * (policies/net-facts.h, gathered by facts/net.c); NULL for every other disk.
         */
        NetFacts *net;

        /*
         * Not gathered: set by the manager (not owned): what the admin's other tools set, as
         * facts/agents.c found them at start or reload (policies/owners.h); NULL: none known.
         */
        const struct Sources *sources;

        char *unknown[_FACT_MAX];       /* reason per fact; NULL = known */
} DiskFacts;

/* Allocate empty facts for a disk with every numeric field set to "unknown". NULL on ENOMEM. */
DiskFacts *disk_facts_new(const char *name);
DiskFacts *disk_facts_free(DiskFacts *f);
/* Free n IrqFacts and the array. */
void irq_facts_free_array(IrqFacts *irqs, size_t n);

/*
 * The vectors of one PCI function as read once per gather batch (facts/device.c), handed to
 * the facts of every disk behind it instead of a copy each: at 4,096 disks on 64 hosts of 65
 * vectors each, 266,240 copies (≈ 30 MiB) become 4,160. Reference-counted (atomically: facts
 * may be freed off the loop thread); read only while more than one holds it.
 */
typedef struct IrqVectors {
        unsigned refs;
        size_t n;
        IrqFacts v[];
} IrqVectors;

/* Room for n vectors (n 0 counts as 1), none filled (v->n = 0), one reference. NULL on ENOMEM. */
IrqVectors *irq_vectors_new(size_t n);
IrqVectors *irq_vectors_ref(IrqVectors *v);
/* Drop a reference; the last one frees the vectors. Returns NULL. */
IrqVectors *irq_vectors_unref(IrqVectors *v);

/* Let f->irqs be the shared vectors v (a reference is taken). */
void disk_facts_share_irqs(DiskFacts *f, IrqVectors *v);

/*
 * Make f->irqs writable: while f shares its vectors with another holder, replace them by a
 * copy of its own (pointers into f->irqs change); the only holder left keeps them. Every
 * change of an IrqFacts field after gathering goes through here. Returns 0 or -ENOMEM (f
 * unchanged).
 */
int disk_facts_own_irqs(DiskFacts *f);
static inline void disk_facts_freep(DiskFacts **f) {
        if (*f)
                disk_facts_free(*f);
}

/* Mark a fact unknown with a printf-style reason (replaces an earlier reason). Returns 0,
 * -EINVAL for a fact out of range, or -ENOMEM. */
int disk_facts_set_unknown(DiskFacts *f, Fact fact, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Defines int name(type *x, fact_type f, const char *fmt, ...), the *_set_unknown() of a facts
 * struct with "char *unknown[max]": x->unknown[f] becomes the text fmt formats, replacing an
 * earlier reason. Returns 0, -EINVAL for f outside [0, max), -ENOMEM. (facts.c, net-facts.c)
 */
#define DEFINE_FACTS_SET_UNKNOWN(name, type, fact_type, max)                                     \
        int name(type *x, fact_type f, const char *fmt, ...) {                                \
                va_list ap;                                                                     \
                if ((int) f < 0 || (int) f >= (int) (max))                                      \
                        return -EINVAL;                                                         \
                va_start(ap, fmt);                                                              \
                int r = free_and_vasprintf(&x->unknown[f], fmt, ap);                            \
                va_end(ap);                                                                     \
                return r;                                                                       \
        }

/* True when the fact is known. */
static inline bool disk_facts_known(const DiskFacts *f, Fact fact) {
        return !f->unknown[fact];
}

/*
 * Render a fact as its file content: the value and "\n", or "unknown: <reason>\n".
 * Returns 0 and a newly allocated string, or -ENOMEM / -EINVAL (bad fact).
 */
int disk_facts_render(const DiskFacts *f, Fact fact, char **ret);

/*
 * Parse a kernel release ("6.18.44-fc-v782", "5.10.0-28-amd64") into major and minor.
 * Returns 0 or -EINVAL.
 */
int kernel_release_parse(const char *release, unsigned *ret_major, unsigned *ret_minor);

/*
 * Is the kernel release ("6.10.0-rc1", "5.10.0-28-amd64") at least major.minor? Parsed and
 * compared numerically (6.9 < 6.10; an -rcN of 6.10 counts as 6.10). TRISTATE_UNKNOWN when
 * release is NULL or unparsable. Pure.
 */
Tristate kernel_release_at_least(const char *release, unsigned major, unsigned minor);

/*
 * Where elevator name comes from for this disk: listed in queue/scheduler, built in, or a
 * loadable module; unavailable otherwise, and for a queue that cannot take an elevator. A
 * zoned disk on a kernel before zone write plugging (6.10) lists only elevators that
 * support zoned writes (ELEVATOR_F_ZBD_SEQ_WRITE: mq-deadline); a built-in or loadable other
 * one would be refused by elevator_find(), so only mq-deadline counts there. Pure.
 */
ElevatorSource disk_facts_elevator_source(const DiskFacts *f, const char *name);
/* Why modprobe.d keeps elevator name's module from loading (elevators_blocked), or NULL. Pure. */
const char *disk_facts_elevator_blocked(const DiskFacts *f, const char *name);

/* "listed in queue/scheduler", "built in (modules.builtin)", "loadable module (modules.dep)", "unavailable" */
const char *elevator_source_to_string(ElevatorSource s);

/*
 * True when zoned writes to this disk rely on mq-deadline's zone write locking
 * (5700f69178e9, 4.16): queue/zoned is host-managed or host-aware and the kernel predates
 * zone write plugging ("block: Introduce zone write plugging", dd291d77cc90, 6.10), or its
 * release is unknown. *ret_why (static or NULL) names the case for explain. Pure.
 */
bool disk_facts_zoned_needs_deadline(const DiskFacts *f, const char **ret_why);

/*
 * The number of hctx of each map (ret[HCTX_TYPE_DEFAULT] ...), counted over every hctx.
 * Returns 0, or -ENODATA when some hctx's type is unknown (the details are not read yet, or
 * debugfs cannot say). Pure.
 */
int disk_facts_hctx_maps(const DiskFacts *f, size_t ret[_HCTX_TYPE_MAX]);

/*
 * The CPUs of want that a device interrupt (an IRQ vector, a NIC queue IRQ, an XPS mask) may
 * be placed on: want minus the isolated CPUs (KernelConfigFacts.isolated; none when that is
 * unknown). The one place the IRQ and the network placement take their CPUs from. *ret gets
 * a new set (possibly empty: nothing of want may be used). 0 or -ENOMEM. Pure.
 */
int disk_facts_usable_cpus(const DiskFacts *f, const CpuSet *want, CpuSet *ret);

/* The IRQ facts of irq number, or NULL. */
const IrqFacts *disk_facts_find_irq(const DiskFacts *f, unsigned irq);

/*
 * Match request-queue vectors to hctx: a vector whose affinity equals the hctx cpu_list
 * serves it (blk_mq_pci_map_queues(): hctx N's CPUs are the affinity mask of vector
 * offset+N, block/blk-mq-pci.c), the affinity it had before blkmqd moved it
 * (policy_history_irq_before() of history, NULL: blkmqd moved none) when there is one; when no
 * affinity matches (vectors moved by irqbalance), the i-th queue vector serves the i-th hctx if
 * the counts agree. A poll hctx (HCTX_TYPE_POLL) has no vector and is left out of both. Fills
 * hctx[].irq, irqs[].hctx and irq_mapping. Pure. Returns 0 or -ENOMEM.
 */
int disk_facts_map_irqs(DiskFacts *f, const PolicyHistory *history);

/*
 * Map f's vectors again (disk_facts_map_irqs() with now) when the affinity before blkmqd's write
 * of one of them differs between was, the history the map was made with (NULL: none, as
 * gathered), and now; and only when the map is there (f->hctx_details). After a reload or a
 * restart the vectors blkmqd moved have blkmqd's placement, which matches no hctx. Returns 1
 * when mapped again, 0 when not, -ENOMEM. Pure.
 */
int disk_facts_remap_irqs(DiskFacts *f, const PolicyHistory *was, const PolicyHistory *now);

/* Free the queue/iosched values of f (n_iosched 0 after). */
void disk_facts_clear_iosched(DiskFacts *f);
/* The queue/iosched value of name, or NULL. */
const IoschedValue *disk_facts_iosched(const DiskFacts *f, const char *name);

/* Value of Tristate as "0", "1" or "unknown". */
const char *tristate_to_string(Tristate t);
