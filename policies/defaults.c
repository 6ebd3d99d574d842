/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shipped defaults, as data. Each class lists acceptable elevators in preference order; a
 * disk already running one of them is left as it is, otherwise the first one the disk can
 * take is set, otherwise the elevator is left alone and explain says why. Every entry, and
 * every elevator left out on purpose, names its evidence (elevator_evidence[] below; the
 * same text reaches explain). An explicit policy/elevator or [Device:] Elevator= may still
 * choose any elevator the device can take; a [Class:] Elevator= replaces the list.
 *
 *  many-hctx-slow           mq-deadline only. A rotating disk wants sorting and merging, and
 *                           mq-deadline is the kernel's own choice for shared tagsets
 *                           (580dca8143d2, 5.13). bfq is not kept or chosen (see below): the
 *                           set-up this project exists for is exactly where it hurts.
 *  fast-multiqueue          none, kyber: the multi-queue-aware choices; mq-deadline/bfq
 *                           serialise every hctx on one lock (QUEUE_FLAG_SQ_SCHED,
 *                           4d337cebcb1c, 5.19; null_blk 128 queues under mq-deadline:
 *                           ~263k IOPS, far higher under none). none is the kernel default
 *                           for nr_hw_queues > 1 (block/elevator.c elevator_set_default()).
 *  shared-tags              mq-deadline, none, kyber: mq-deadline is the kernel default for a
 *                           shared tagset (580dca8143d2, written for a megaraid_sas write
 *                           regression under none); none and kyber never take the single
 *                           queue-wide lock. bfq is replaced (host-tagset stalls, below).
 *  single-queue-rotational  mq-deadline, bfq: the kernel default and BFQ, which openSUSE
 *                           (60-io-scheduler.rules, 48d4b83) and Fedora pick for
 *                           single-queue HDDs; one hctx has neither the many-hctx cost nor a
 *                           host tagset. none/kyber lose sorting and merging on a seeking disk.
 *  single-queue-fast        keep: any elevator is reasonable on one hctx without a shared
 *                           tagset (kernel default mq-deadline; distributions set bfq or none).
 *  stacked                  none: a loop device passes I/O to a device with its own elevator;
 *                           scheduling twice only adds latency (openSUSE 60-io-scheduler.rules
 *                           forces none for loop).
 *  multipath-leg            none: request-based dm-multipath sends clones of the map's
 *                           requests straight to the leg's hardware queue
 *                           (block/blk-mq.c blk_insert_cloned_request() issues them directly,
 *                           past the leg's elevator), so the map schedules and the leg's
 *                           elevator only serves path checkers; distributions set legs to
 *                           none (openSUSE 60-io-scheduler.rules: multipath components).
 *                           A request-based map itself is classified by its own queue.
 *
 * Zoned disks on kernels before zone write plugging (6.10) keep or get mq-deadline whatever
 * the list says: policies/elevator.c.
 *
 * Elevator tunables (IoSched.<elevator>.<tunable>=, issue 18): no class has a shipped value.
 * What was looked at, and why none of it is evidence enough to change a disk unasked:
 *   - bfq slice_idle=0 and low_latency=0, the usual advice for BFQ on RAID or flash: the
 *     kernel's BFQ document (Documentation/block/bfq-iosched.rst) says BFQ favours latency
 *     over throughput by default and to set low_latency=0 where throughput is the only goal;
 *     CFQ's document (Documentation/block/cfq-iosched.txt, where slice_idle comes from) says
 *     slice_idle=0 can raise throughput with many spindles behind one LUN, at the cost of
 *     isolation and I/O priority. Both are trade-offs of the goal, not a fix for a set-up:
 *     the classes where throughput matters most (many-hctx-slow, shared-tags,
 *     fast-multiqueue) do not run bfq under the shipped elevator lists, and on one hctx
 *     whoever chose bfq chose its guarantees. No measurement of it was made here.
 *   - the BFQ waker-detection regression (c65e6fd460b4, 5.16-5.18) is a kernel bug with a
 *     kernel fix (f950667356ce, c5ac56bb6110); explain names it, and no tunable undoes it.
 *   - mq-deadline's one-request-at-a-time dispatch on fast many-queue devices (the 2025
 *     "blk-mq-sched: support request batch dispatching for sq elevator" RFC) is not a
 *     tunable's default: fast-multiqueue moves such disks off mq-deadline instead.
 * An administrator sets them per class or per disk; blkmqd writes them in the right order and
 * keeps them across elevator switches.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "policy.h"
#include "strv.h"
#include "policy-internal.h"

static const char * const default_elevators[_DISK_CLASS_MAX][4] = {
        [DISK_CLASS_MANY_HCTX_SLOW]          = { "mq-deadline" },
        [DISK_CLASS_FAST_MULTIQUEUE]         = { "none", "kyber" },
        [DISK_CLASS_SHARED_TAGS]             = { "mq-deadline", "none", "kyber" },
        [DISK_CLASS_SINGLE_QUEUE_ROTATIONAL] = { "mq-deadline", "bfq" },
        [DISK_CLASS_STACKED]                 = { "none" },
        [DISK_CLASS_MULTIPATH_LEG]           = { "none" },
};

#define BFQ_HOST_TAGSET \
        "BFQ on a many-hctx host tagset: 14-40 % slower in dbench on a 64-hctx megaraid_sas HDD " \
        "(Jan Kara, \"blk-mq: Improve performance of non-mq IO schedulers with multiple HW queues\", " \
        "linux-block 2021-01-11, b6e68ee82585), and BFQ stalls on megaraid_sas with host tagsets on 5.12-5.18"
#define SQ_LOCK \
        "a single-queue elevator serialises every hctx on one lock (QUEUE_FLAG_SQ_SCHED, 4d337cebcb1c)"
#define NO_SORTING "a seeking disk loses sorting and merging"

/* Elevators the shipped defaults leave out of a class on purpose, and why. */
static const struct {
        DiskClass class;
        const char *elevator;
        const char *why;
} elevator_evidence[] = {
        { DISK_CLASS_MANY_HCTX_SLOW,          "bfq",         BFQ_HOST_TAGSET },
        { DISK_CLASS_MANY_HCTX_SLOW,          "none",        NO_SORTING },
        { DISK_CLASS_MANY_HCTX_SLOW,          "kyber",       NO_SORTING " (kyber only throttles by latency)" },
        { DISK_CLASS_SHARED_TAGS,             "bfq",         BFQ_HOST_TAGSET },
        { DISK_CLASS_FAST_MULTIQUEUE,         "mq-deadline", SQ_LOCK },
        { DISK_CLASS_FAST_MULTIQUEUE,         "bfq",         SQ_LOCK },
        { DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, "none",        NO_SORTING },
        { DISK_CLASS_SINGLE_QUEUE_ROTATIONAL, "kyber",       NO_SORTING " (kyber only throttles by latency)" },
};

const char *policy_elevator_evidence(DiskClass c, const char *elevator) {
        if (!elevator)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(elevator_evidence); i++)
                if (elevator_evidence[i].class == c && streq(elevator_evidence[i].elevator, elevator))
                        return elevator_evidence[i].why;
        if (c == DISK_CLASS_STACKED && !streq(elevator, "none"))
                return "the lower device schedules; scheduling twice only adds latency";
        if (c == DISK_CLASS_MULTIPATH_LEG && !streq(elevator, "none"))
                return "the map's requests are issued to a leg past its elevator (blk_insert_cloned_request()); the map schedules";
        return NULL;
}

/*
 * Elevator names of the legacy (single-queue) block layer, removed in 5.0 with the legacy
 * request path, and the blk-mq elevator an admin most likely meant. A blk-mq queue never
 * lists them, and their 4.x modules (cfq-iosched.ko, deadline-iosched.ko, noop-iosched) could
 * not be attached to a blk-mq queue either.
 */
static const struct {
        const char *legacy, *instead;
} legacy_elevators[] = {
        { "noop",         "none" },
        { "deadline",     "mq-deadline" },
        { "cfq",          "bfq" },
        { "anticipatory", "mq-deadline" },
        { "as",           "mq-deadline" },
};

bool elevator_name_is_legacy(const char *name, const char **ret_instead) {
        for (size_t i = 0; name && i < ELEMENTSOF(legacy_elevators); i++)
                if (strcasecmp(name, legacy_elevators[i].legacy) == 0) {
                        if (ret_instead)
                                *ret_instead = legacy_elevators[i].instead;
                        return true;
                }
        return false;
}

#define ELV_NAME_MAX 16  /* include/linux/elevator.h: char elevator_name[ELV_NAME_MAX] */

/*
 * The elevators mainline blk-mq kernels have shipped (block/mq-deadline.c since 4.11,
 * block/kyber-iosched.c and block/bfq-iosched.c since 4.12; "none" is no elevator at all).
 * Any other name is an out-of-tree module's or a misspelling.
 */
static const char * const in_tree_elevators[] = { "none", "mq-deadline", "kyber", "bfq" };

bool elevator_name_in_tree(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(in_tree_elevators); i++)
                if (streq(name, in_tree_elevators[i]))
                        return true;
        return false;
}

/* Levenshtein distance of a and b, capped: anything above cap returns cap + 1. */
static size_t edit_distance(const char *a, const char *b, size_t cap) {
        size_t la = strlen(a), lb = strlen(b), row[32];
        if (la >= ELEMENTSOF(row) || lb >= ELEMENTSOF(row))
                return cap + 1;
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0], best;
                row[0] = best = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];
                        size_t v = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + (a[i - 1] != b[j - 1]));
                        row[j] = v;
                        diag = up;
                        best = MIN(best, v);
                }
                if (best > cap)
                        return cap + 1;
        }
        return MIN(row[lb], cap + 1);
}

const char *elevator_name_suggest(const char *name) {
        char norm[ELV_NAME_MAX * 2];
        size_t l = 0;
        if (!name)
                return NULL;
        /* the module's name ("mq_deadline": kmod takes '-' and '_' alike, elevator_match() does
         * not) and its alias ("bfq-iosched", what elv_iosched_load_module() requests) */
        for (const char *c = name; *c && l + 1 < sizeof(norm); c++)
                norm[l++] = *c == '_' ? '-' : (*c >= 'A' && *c <= 'Z') ? (char) (*c - 'A' + 'a') : *c;
        norm[l] = 0;
        if (l > 8 && streq(norm + l - 8, "-iosched"))
                norm[l - 8] = 0;
        const char *best = NULL;
        size_t best_d = 3;
        for (size_t i = 0; i < ELEMENTSOF(in_tree_elevators); i++) {
                if (streq(norm, in_tree_elevators[i]))
                        return streq(name, norm) ? NULL : in_tree_elevators[i];
                size_t d = edit_distance(norm, in_tree_elevators[i], 2);
                /* a short name ("bfq") only for a near miss of one letter */
                if (d < best_d && d * 3 <= strlen(in_tree_elevators[i])) {
                        best = in_tree_elevators[i];
                        best_d = d;
                }
        }
        return best;
}


const char *elevator_name_invalid(const char *name, char *buf, size_t size) {
        size_t l = name ? strlen(name) : 0;
        bool upper = false;

        if (l == 0)
                return "an empty name";
        for (const char *c = name; *c; c++) {
                if (*c >= 'A' && *c <= 'Z')
                        upper = true;
                else if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_')) {
                        if (*c == ',' || *c == ';' || *c == '|' || *c == '/')
                                return "not one elevator name: separate the names of a list with spaces";
                        return "not an elevator name: elevator names are letters, digits, '-' and '_'";
                }
        }
        if (upper) {
                char lower[ELV_NAME_MAX * 4];
                size_t i = 0;
                for (const char *c = name; *c && i + 1 < sizeof(lower); c++)
                        lower[i++] = (*c >= 'A' && *c <= 'Z') ? (char) (*c - 'A' + 'a') : *c;
                lower[i] = 0;
                snprintf(buf, size, "elevator names are lower case and the kernel compares them exactly; use \"%s\"", lower);
                return buf;
        }
        if (l >= ELV_NAME_MAX)
                return "longer than an elevator name can be (15 bytes, ELV_NAME_MAX in include/linux/elevator.h)";
        return NULL;
}

/*
 * Drivers whose disks are not hardware: a file, RAM or nothing stands behind their queue, so
 * its elevator, rq_affinity and nr_requests say nothing about any device, and a host may
 * attach hundreds of them (containers, CI runners). blkmqd lists them with their class and
 * explain and writes nothing to them unless [Manager] VirtualDevices=manage, a matching
 * [Device:] Enabled=yes or policy/enabled 1 opts them in (policies/policy.c). The driver
 * fact comes from facts/device.c: the loop/ directory, the block major's name in
 * /proc/devices (register_blkdev()), or the SCSI host's proc_name.
 */
static const VirtualDriver virtual_drivers[] = {
        { "loop",       "a file or another block device behind it", "drivers/block/loop.c" },
        { "zram",       "compressed RAM",                           "drivers/block/zram/zram_drv.c" },
        { "brd",        "RAM (/dev/ram<N>)",                        "drivers/block/brd.c" },
        { "null_blk",   "no storage at all, requests complete without data", "drivers/block/null_blk/main.c" },
        { "scsi_debug", "a SCSI disk emulated in RAM",              "drivers/scsi/scsi_debug.c" },
        { "ublk",       "a userspace program serving its requests", "drivers/block/ublk_drv.c" },
};

const VirtualDriver *policy_virtual_driver(const char *driver) {
        for (size_t i = 0; driver && i < ELEMENTSOF(virtual_drivers); i++)
                if (streq(virtual_drivers[i].driver, driver))
                        return &virtual_drivers[i];
        return NULL;
}

/*
 * queue/rotational as a hint (policies/speed.c policy_rotational_hint()): the first row that
 * matches the disk says whether the flag describes its medium. A trusted rotational=1 decides
 * slow against any measurement (the medium seeks; a rotating disk reading sequentially, or from
 * its cache, measures fast); a trusted rotational=0 decides fast until a window measures slow
 * (a non-rotating medium is not a fast one: a throttled cloud volume behind an NVMe front end,
 * a USB stick). An untrusted flag is no evidence at all: without a measurement the disk's speed
 * is unknown and the kernel's default stays. No row: untrusted.
 */
const TrustRow rotational_trust[] = {
        /* emulators: no medium, the flag is what they were set up to claim */
        { "null_blk", "null_blk", NULL, 0, RATE_ANY, HINT_TRUSTED,
          "null_blk has no medium: its flag is its own rotational setting, what the emulator was set up to claim "
          "(drivers/block/null_blk/main.c; non-rotational before the setting came, November 2024)" },
        { "scsi_debug", "scsi_debug", NULL, 0, RATE_ANY, HINT_TRUSTED,
          "scsi_debug has no medium: its VPD page B1h says what the emulator was set up to claim "
          "(drivers/scsi/scsi_debug.c inquiry_vpd_b1())" },
        { "ram", "brd", NULL, 0, RATE_ANY, HINT_TRUSTED,
          "RAM, no rotating medium: brd marks its disks non-rotational (drivers/block/brd.c)" },
        { "ram", "zram", NULL, 0, RATE_ANY, HINT_TRUSTED,
          "compressed RAM, no rotating medium: zram marks its disks non-rotational (drivers/block/zram/zram_drv.c)" },
        /* the flag is the bridge's, the hypervisor's, the server's or the controller's */
        { "usb", NULL, "usb", 0, RATE_ANY, HINT_UNTRUSTED,
          "a USB bridge translates for the disk behind it and reports what it likes: sd keeps rotational=1 unless the "
          "bridge passes a VPD page B1h rotation rate of 1 (drivers/scsi/sd.c sd_read_block_characteristics(), "
          "drivers/usb/storage/)" },
        { "virtio_blk", "virtio_blk", NULL, 0, RATE_ANY, HINT_UNTRUSTED,
          "virtio_blk cannot report the medium: the virtio block device has no feature bit for it "
          "(include/uapi/linux/virtio_blk.h), so every disk keeps the rotational default (drivers/block/virtio_blk.c; "
          "an explicit opt-in since bd4a633b6f7c, 6.11)" },
        { "xen-blkfront", NULL, "xen", 0, RATE_ANY, HINT_UNTRUSTED,
          "Xen's blkfront marks every disk non-rotational whatever the backend stores it on (drivers/block/xen-blkfront.c: "
          "QUEUE_FLAG_VIRT, an alias of QUEUE_FLAG_NONROT, before 6.11; the non-rotational default since, bd4a633b6f7c)" },
        { "virtio_scsi", "virtio_scsi", NULL, 0, RATE_ANY, HINT_UNTRUSTED,
          "a paravirtual SCSI front end (drivers/scsi/virtio_scsi.c): the hypervisor's emulated disk answers VPD page B1h "
          "as it is configured (QEMU scsi-hd rotation_rate=, 0 = not reported by default), whatever stores the data" },
        { "hyper-v", "storvsc", NULL, 0, RATE_ANY, HINT_UNTRUSTED,
          "Hyper-V's paravirtual SCSI front end (drivers/scsi/storvsc_drv.c): the host's virtual disk answers INQUIRY "
          "and VPD, whatever stores the data" },
        { "vmware", "vmw_pvscsi", NULL, 0, RATE_ANY, HINT_UNTRUSTED,
          "VMware's paravirtual SCSI front end (drivers/scsi/vmw_pvscsi.c): the virtual disk answers INQUIRY and VPD, "
          "whatever stores the data" },
        { "raid-volume", "megaraid_sas", NULL, CHANNEL(2) | CHANNEL(3), RATE_ANY, HINT_UNTRUSTED,
          "a MegaRAID logical drive (SCSI channel 2 or 3; physical disks are on 0 and 1: MEGASAS_MAX_PD_CHANNELS, "
          "drivers/scsi/megaraid/megaraid_sas.h): the controller answers for the volume" },
        { "raid-volume", "mpt3sas", NULL, CHANNEL(1), RATE_ANY, HINT_UNTRUSTED,
          "an mpt3sas Integrated RAID volume (SCSI channel 1: RAID_CHANNEL, drivers/scsi/mpt3sas/mpt3sas_scsih.c): "
          "the controller answers for the volume" },
        { "raid-volume", "hpsa", NULL, CHANNEL(1) | CHANNEL(2), RATE_ANY, HINT_UNTRUSTED,
          "a Smart Array logical drive (SCSI channel 1 or 2: HPSA_RAID_VOLUME_BUS, HPSA_EXTERNAL_RAID_VOLUME_BUS, "
          "drivers/scsi/hpsa.h): the controller answers for the volume" },
        { "raid-volume", "smartpqi", NULL, CHANNEL(1) | CHANNEL(3), RATE_ANY, HINT_UNTRUSTED,
          "a smartpqi logical drive (SCSI channel 1 or 3: PQI_RAID_VOLUME_BUS, PQI_EXTERNAL_RAID_VOLUME_BUS, "
          "drivers/scsi/smartpqi/smartpqi.h): the controller answers for the volume" },
        { "raid-volume", "aacraid", NULL, CHANNEL(0), RATE_ANY, HINT_UNTRUSTED,
          "an aacraid container (SCSI channel 0: CONTAINER_CHANNEL, drivers/scsi/aacraid/aacraid.h): the controller "
          "answers for the array" },
        { "iscsi", "iscsi_tcp", NULL, 0, RATE_ANY, HINT_UNTRUSTED,
          "an iSCSI LUN (drivers/scsi/iscsi_tcp.c): the target answers for a volume of its own" },
        { "nbd", "nbd", NULL, 0, RATE_ANY, HINT_UNTRUSTED,
          "an NBD export: the flag is the server's NBD_FLAG_ROTATIONAL (drivers/block/nbd.c nbd_set_size(); "
          "include/uapi/linux/nbd.h), which a server sends as configured (nbd-server rotational=; qemu-nbd never), "
          "whatever stores the data" },
        /* the flag comes from the device itself */
        { "nvme", NULL, "nvme", 0, RATE_ANY, HINT_TRUSTED,
          "NVMe: the kernel marks a namespace rotational only when the controller reports rotational media, flash "
          "otherwise (drivers/nvme/host/core.c)" },
        { "mmc", NULL, "mmc", 0, RATE_ANY, HINT_TRUSTED,
          "MMC/SD: flash, never rotational (drivers/mmc/core/queue.c)" },
        { "scsi-rotation-rate", NULL, "scsi", 0, RATE_REPORTED, HINT_TRUSTED,
          "the disk reports its medium rotation rate in VPD page B1h, which sd turns into the flag "
          "(drivers/scsi/sd.c sd_read_block_characteristics(); SBC-4)" },
        { "scsi-no-rotation-rate", NULL, "scsi", 0, RATE_NOT_REPORTED, HINT_UNTRUSTED,
          "the disk reports no medium rotation rate (no VPD page B1h, or 0): rotational=1 is sd's default for a disk "
          "that does not say (drivers/scsi/sd.c sd_read_block_characteristics())" },
};
const size_t n_rotational_trust = ELEMENTSOF(rotational_trust);

/*
 * The speed thresholds ([Speed] FastMs=, SlowMs=, MinIOs=, MinChangeSec=) and their evidence:
 * what the p50 device service time of small (<= 64 KiB) requests is on each kind of disk.
 *   rotating disks    a random access waits for the seek and half a revolution: 4.2 ms of
 *                     rotational latency at 7,200 rpm (60 s / 7,200 / 2), 2 ms at 15,000 rpm,
 *                     plus a 3-9 ms average seek (SBC-4 nominal rotation rates; vendor data
 *                     sheets): 5-15 ms. Sequential reads served from the drive's cache take
 *                     tens of µs, which is why a trusted rotational flag is not overruled.
 *   SATA/SAS SSDs     80-200 µs for a 4 KiB read at low queue depth, under 1 ms at QD 32.
 *   NVMe              10-100 µs.
 *   network volumes   cloud block storage: "single-digit millisecond" latency for gp3/st1-class
 *                     volumes and sub-millisecond for io2-class (AWS EBS documentation); most
 *                     measure 0.5-2 ms, a throttled one far more (a queue of requests waits
 *                     inside the device for its IOPS budget).
 *   measured here     a loop device on tmpfs (this machine, 6.18): ~10 µs; a RAM-backed
 *                     virtio-blk disk and a QEMU disk throttled to 200 IOPS in the 6.1/6.12
 *                     guests under TCG: docs/DESIGN-NOTES.md "Measured speed" has the figures.
 * So: fast at or below 2 ms (every SSD, NVMe and a healthy network volume), slow at or above
 * 5 ms (a rotating disk seeking, a throttled volume), and in between the class stays what it
 * was (the margin). A window needs 1,024 I/Os and 10 s (a steady p50, one evaluation per 10 s
 * of a busy disk at the most); the p50 is known within its histogram bucket (a factor of 1.25).
 * A class change waits 10 minutes after the last one, so a load that swings around the bounds
 * moves the elevator at most six times an hour.
 */
static const SpeedConfig speed_defaults = {
        .fast_usec = 2000,
        .slow_usec = 5000,
        .min_ios = 1024,
        .window_usec = UINT64_C(10) * 1000000,
        .min_change_usec = UINT64_C(600) * 1000000,
        .measure = true,
};

void speed_config_defaults(SpeedConfig *c) {
        assert(c);
        *c = speed_defaults;
}

/* Vectors follow their hctx where blk-mq spreads queues over CPUs. */
static const bool default_irq_follow_hctx[_DISK_CLASS_MAX] = {
        [DISK_CLASS_MANY_HCTX_SLOW]  = true,
        [DISK_CLASS_FAST_MULTIQUEUE] = true,
        [DISK_CLASS_SHARED_TAGS]     = true,
};

int policy_config_init_defaults(PolicyConfig *config) {
        *config = (PolicyConfig) { .net = NET_POLICY_DEFAULTS };
        speed_config_defaults(&config->speed);
        for (size_t c = 0; c < _DISK_CLASS_MAX; c++) {
                config->classes[c].rq_affinity = -1;    /* keep the kernel default (1) */
                config->classes[c].irq_follow_hctx = default_irq_follow_hctx[c];
        }
        for (size_t c = 0; c < _DISK_CLASS_MAX; c++)
                for (size_t i = 0; i < ELEMENTSOF(default_elevators[c]) && default_elevators[c][i]; i++)
                        if (strv_extend(&config->classes[c].elevators, default_elevators[c][i]) < 0) {
                                policy_config_done(config);
                                return -ENOMEM;
                        }
        return 0;
}
