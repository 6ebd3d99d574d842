/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Facts gathering for one whole disk, through hostfs only.
 *
 * Sources (paths relative to sysfs unless noted):
 *   block/<d>/{dev,size}, block/<d>/queue/{rotational,scheduler,rq_affinity,nr_requests},
 *   block/<d>/mq/<n>/{cpu_list,nr_tags,nr_reserved_tags} (block/blk-mq-sysfs.c),
 *   block/<d>/device/queue_depth (SCSI), class/scsi_host/hostN/{proc_name,nr_hw_queues,can_queue}
 *   (drivers/scsi/hosts.c; nr_hw_queues since 5.10), the PCI function's msi_irqs/ and numa_node,
 *   debugfs block/<d>/hctxN/flags (TAG_HCTX_SHARED) and block/<d>/state (SQ_SCHED, ≥ 5.19,
 *   4d337cebcb1c), procfs sys/kernel/osrelease; block/<d>/queue/zoned, block/<d>/hidden,
 *   block/<d>/holders/ and block/<holder>/dm/{uuid,name} (dm-multipath legs), block/<d>/dm/uuid
 *   (maps), block/<head>/multipath/ (NVMe multipath), run/udev/data/b<maj>:<min>
 *   (DM_MULTIPATH_DEVICE_PATH), lib/modules/<release>/modules.{builtin,dep,alias} (elevators
 *   the kernel can load: block/elevator.c elv_iosched_load_module()).
 */

#include <sys/stat.h>

#include "facts.h"
#include "hostfs.h"
#include "interrupts.h"
#include "kernel.h"

/* One SCSI host's attributes as read once in a batch (class/scsi_host/<host>/...). */
typedef struct GatherHost {
        char *name;                     /* "host0" */
        char *proc_name;                /* driver; NULL when unreadable (proc_name_error) */
        int proc_name_error;
        int64_t nr_hw_queues, can_queue;
        int nr_hw_queues_error, can_queue_error;
} GatherHost;

/* The MSI/MSI-X vectors of one PCI function as read once in a batch (gather_irqs()). */
typedef struct GatherFunction {
        char *path;                     /* sysfs path of the function, "devices/pci0000:00/0000:00:03.0" */
        IrqVectors *vectors;            /* shared with the facts of its disks (policies/facts.h); NULL none read */
        int error;                      /* listing msi_irqs/ failed: -errno */
        uint64_t procfs_writes;         /* hostfs_write_count(PROCFS) when read: a later IRQ write makes it stale */
} GatherFunction;

/*
 * Inputs shared by many disks, read once per batch (coldplug or reload of thousands of
 * disks would otherwise parse a multi-megabyte /proc/interrupts once per disk, and read a
 * host's 65 vectors once for each of its 64 LUNs). Only for a batch: a hot-plugged disk
 * brings new IRQs, so single events read fresh. A batch is a snapshot: values blkmqd itself
 * writes during it (IRQ affinity) invalidate the vectors read before.
 */
/*
 * The elevators of the running release's module tree, kept across gathers (the manager owns
 * one) while modules.dep, modules.builtin and modules.alias are the same files (inode, size,
 * mtime): a single uevent does not read and scan them again (~2 MB on a Debian kernel, most of
 * a gather's time; issue 12 item 4). modprobe.d is read at every gather (small, and an edit
 * there must count at once).
 */
typedef struct ModuleTreeCache {
        bool valid;
        char *release;
        struct stat files[3];           /* modules.dep, modules.builtin, modules.alias; st_ino 0: absent */
        int error;                      /* reading modules.dep failed: -errno */
        char **builtin, **loadable;     /* before modprobe.d */
        char **pairs;                   /* "<elevator>=<module>" */
} ModuleTreeCache;

void module_tree_cache_done(ModuleTreeCache *c);

/*
 * The devices of the mounts on "/" (field 3 of each proc/self/mountinfo line whose mount point
 * is "/", proc(5)), each with its sysfs path: what DiskFacts.root_disk is decided from. A
 * mounted device keeps its number and its sysfs path while it is mounted (the mount holds it
 * open: a partition in use cannot be deleted, block/partitions/core.c bdev_del_partition()
 * -EBUSY, and a removed disk's number is not handed out again before its last opener closes),
 * so the paths hold as long as the mount table does. What sits below them (slaves/: dm, md)
 * can change without a mount and is read at every gather.
 */
typedef struct RootDevice {
        char majmin[32];                /* "254:1" */
        char *path;                     /* dev/block/<majmin> resolved ("devices/.../block/vda/vda1"); NULL: none (no
                                         * block device behind the number: nfs, overlay, btrfs's anonymous numbers) */
} RootDevice;

typedef struct RootMounts {
        bool valid;                     /* read (else read at the next gather) */
        RootDevice *devices;
        size_t n_devices;
} RootMounts;

void root_mounts_done(RootMounts *r);

/*
 * Machine-wide inputs kept across gathers by their owner (the manager), not freed with a
 * GatherCache: the kernel release (a running kernel keeps its release: read once at start),
 * and the root file system's devices while the mount table is unchanged (the owner watches
 * proc/self/mountinfo for POLLPRI and calls root_mounts_done() on a change; without a
 * watch, mounts_watched false, every GatherCache reads them itself).
 */
typedef struct MachineCache {
        char *kernel_release;           /* NULL: unreadable at start, read at every gather */
        bool have_boot;                 /* boot read at start; false: read at every gather */
        KernelBoot boot;
        bool mounts_watched;
        RootMounts roots;
} MachineCache;

void machine_cache_done(MachineCache *c);

typedef struct GatherCache {
        bool have_interrupts;
        ProcInterrupts interrupts;
        RootMounts roots;               /* when machine does not keep them */
        char *kernel_release;
        GatherHost *hosts;
        size_t n_hosts;
        GatherFunction *functions;
        size_t n_functions;
        /* elevators of the running release's module tree (gather_elevator_modules()) */
        bool have_elevator_modules;
        int elevator_modules_error;     /* reading modules.dep failed: -errno */
        char **elevators_builtin, **elevators_loadable;
        char **elevators_blocked;       /* "bfq: blacklist bfq in /etc/modprobe.d/x.conf (...)" */
        bool have_proc_devices;
        char *proc_devices;             /* /proc/devices, NULL when unreadable */
        /* the kernel's boot-time configuration (facts/kernel.c), once per batch */
        bool have_kernel_config;
        KernelConfigFacts kernel;
        char *kernel_unknown[3];        /* KERNEL_UNKNOWN_PREEMPT_RT, _IRQ_THREADS, _ISOLATED */
        bool have_builtin_modules;
        char *builtin_modules;          /* lib/modules/<release>/modules.builtin, NULL unreadable */
        int builtin_modules_error;
        ModuleTreeCache *module_tree;   /* optional, outlives the cache (not freed with it) */
        MachineCache *machine;          /* optional, outlives the cache (not freed with it) */
} GatherCache;

void gather_cache_done(GatherCache *c);

/*
 * Gather the facts of disk name (a /sys/block entry).
 * Returns 0 with *ret set; -ENOENT when the disk does not exist (vanished);
 * -ENOMEDIUM when it has no medium (size 0, e.g. an unbound loop device: like lsblk,
 * blkmqd does not list those); -EINVAL for an invalid name; -ENOMEM.
 * Missing attributes are not errors: the fact reads "unknown: <reason>".
 */
int device_gather(HostFs *h, const char *name, DiskFacts **ret);

/* As device_gather(), with machine-wide inputs from (and filled into) cache; NULL = fresh. */
int device_gather_cached(HostFs *h, const char *name, GatherCache *cache, DiskFacts **ret);

/*
 * Read the per-hctx details device_gather() leaves out (see DiskFacts.hctx_details): for
 * hctx 1..n-1 mq/N/{cpu_list,nr_tags,nr_reserved_tags} and debugfs hctxN/flags, then match
 * queue vectors to hctx (disk_facts_map_irqs(): a vector blkmqd moved by its affinity before, from
 * history; NULL: blkmqd moved none, as at gather time). ~4 reads per hctx; a no-op when already
 * read. A value that cannot be read stays unknown (-1, NULL, TRISTATE_UNKNOWN) as at gather time.
 * Returns 0 or -ENOMEM.
 */
int device_gather_hctx_details(HostFs *h, DiskFacts *f, const PolicyHistory *history);

/*
 * Read again every fact a blkmqd write can change: queue/scheduler (elevator, elevators),
 * rq_affinity, nr_requests (an elevator switch resets it), debugfs SQ_SCHED (follows the
 * elevator), the driver's queue-layout module parameters (/sys/module/<driver>/parameters/,
 * known_module_params[]) and the queue vectors' smp_affinity_list. After an apply that wrote, a
 * module parameter job that returned,
 * verify that found a change, and before an override is evaluated, so facts/, explain
 * and metrics show what the kernel has now. A value that cannot be read becomes unknown.
 * irqs: the vectors too (one read each; a verify of an unchanged disk skips them).
 * debugfs SQ_SCHED is read again only when the elevator changed.
 * Returns 1 when a fact changed, 0 when all read the same, or -ENOMEM.
 */
int device_refresh_knobs(HostFs *h, DiskFacts *f, bool irqs);

/*
 * Whether the kernel's configuration (facts/kernel.c: PREEMPT_RT, forced threading, the isolated
 * CPUs and their sources) reads otherwise now than in f. A cgroup v2 cpuset partition made,
 * changed or removed at run time sends no uevent: the periodic verify asks this and gathers a
 * disk again when it changed. c holds one read for every disk asked about. Returns 1 changed,
 * 0 the same, -ENOMEM.
 */
int device_kernel_config_changed(HostFs *h, const DiskFacts *f, GatherCache *c);

/*
 * The nearest of sysfs path devpath ("devices/...") and its ancestors, up to "devices", that has
 * an entry named child ("scsi_host", "msi_irqs", "iscsi_session"): its path, newly allocated, or
 * NULL when none has one (or out of memory).
 */
char *device_ancestor_with(HostFs *h, const char *devpath, const char *child);

/*
 * The MSI/MSI-X vectors of the PCI function above sysfs path devpath (the nearest ancestor
 * with msi_irqs/), as gathered for disks: name, affinity, managed state (for NIC queue vectors,
 * facts/net.c). *ret points into cache (valid until the next call with it); *ret_pci (newly
 * allocated) names the function. Returns 0, -ENOENT (no function with msi_irqs/ above it),
 * -errno of listing msi_irqs/, -ENOMEM.
 */
int device_function_irqs(HostFs *h, const char *devpath, const char *kernel_release, bool debugfs,
                         GatherCache *cache, const IrqFacts **ret, size_t *ret_n, char **ret_pci);

/*
 * Names of the whole disks in sysfs block/ (coldplug without libudev, e.g. on a fixture root),
 * every entry as listed: the caller refuses names disk_name_is_valid() rejects, with a log
 * line (the manager does). Returns 0 with a strv, or -errno.
 */
int device_list_disks(HostFs *h, char ***ret);

/*
 * The disks a stacking device sits on: the entries of sysfs block/<name>/slaves/ (a dm map's
 * legs or components, an md array's members; drivers/md/dm-table.c and md.c link them with
 * bd_link_disk_holder(), block/holder.c, which sends no uevent to the lower disk). Partitions
 * there ("sda1") are returned as listed; the caller looks them up among its disks.
 * Returns 0 with a strv (empty when the device stacks on nothing), -ENOENT (no such device,
 * e.g. already removed), -errno.
 */
int device_list_lower(HostFs *h, const char *name, char ***ret);

/*
 * The elevators the running kernel has or can load: every name a disk's queue/scheduler lists
 * (registered now), the built-in and loadable ones of its module tree (tree: the manager's
 * cache, or NULL), modprobe.d blacklists included (the module is still there). For refusing a
 * configured name no kernel has (config_check_elevators()). Returns 0 with a strv (possibly
 * empty), -ENOMEM.
 */
int device_elevators_offered(HostFs *h, ModuleTreeCache *tree, char ***ret);

/*
 * The partitions of disk name: the entries of sysfs block/<name>/ that have a "partition"
 * attribute (block/partitions/core.c add_partition() makes each partition a child device
 * of its disk, with that attribute). Returns 0 with a strv (possibly empty), -ENOENT (no such
 * disk), -errno.
 */
int device_list_partitions(HostFs *h, const char *name, char ***ret);
