/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The configuration: /etc/blkmqd/blkmqd.conf, then the drop-ins blkmqd.conf.d/NAME.conf in
 * lexical order (a later file's key wins), systemd-style INI parsed by libinih.
 *
 *   [Manager]
 *   Mode=auto|dry-run|off         Devices=GLOB...      Reassert=yes|no
 *   ModuleParams=propose|write    write /etc/modprobe.d/zz-blkmqd.conf and 0644 params (default propose)
 *   RateWindowSec=SECONDS         interval the *_rate files cover (default 1, 0.2 to 3600)
 *   VerifySec=SECONDS|0           read back what blkmqd wrote every SECONDS (default 60, 1 to
 *                                 86400; 0 or off: never, no timer at all): the kernel sends no
 *                                 uevent when someone else writes a queue attribute
 *   VirtualDevices=list|manage    loop, zram, brd, null_blk, scsi_debug, ublk disks: listed and
 *                                 explained only (default list), or tuned like hardware (manage)
 *   TextfileDirectory=DIR|off     where the metrics file blkmqd.prom is written for node_exporter's
 *                                 textfile collector (default: /var/lib/prometheus/node-exporter,
 *                                 for the blkmqd that owns the default state directory only)
 *   MetricsIntervalSec=SECONDS|0  write it also every SECONDS (default 60, 1 to 86400); 0: only
 *                                 when something blkmqd shows changed (no timer)
 *
 *   [Class:<class>]               one of many-hctx-slow, fast-multiqueue, shared-tags,
 *                                 single-queue-rotational, single-queue-fast, stacked
 *   Elevator=NAME... | keep       preference list
 *   RqAffinity=0|1|2|keep
 *   IrqAffinity=hctx|keep
 *   HostTagset=auto|disable|keep  megaraid_sas/mpt3sas host_tagset_enable=0 (auto: kernels < 5.12)
 *   IoSched.<elevator>.<tunable>=NUMBER|keep   an elevator tunable (policies/iosched.h ranges)
 *
 *   [Network]                     network disks (nvme-tcp/rdma, iSCSI, NBD; policies/net-align.c)
 *   NicIrqAffinity=hctx|keep      the NIC's unmanaged queue IRQs on their hctx's CPUs (default hctx)
 *   Xps=hctx|keep                 XPS of each TX queue = its hctx's CPUs (default hctx)
 *   NrIoQueues=propose|keep       propose nr_io_queues = NIC queues for the next connect (default propose)
 *
 *   [Speed]                       slow or fast (policies/speed.h; defaults: policies/defaults.c)
 *   FastMs=MS                     a measured p50 at or below: fast (default 2)
 *   SlowMs=MS                     at or above: slow (default 5); between them the class stays
 *   MinIOs=N                      I/Os a measurement needs (default 1024)
 *   WindowSec=SECONDS             ... and the time it covers at least (default 10)
 *   MinChangeSec=SECONDS          at least this long between two class changes of a disk (600)
 *   Measure=yes|no                no: nothing is measured, the rotational flag alone decides
 *   TrustRotational=GLOB...       drivers whose queue/rotational describes the medium
 *
 *   [Module:<module>]             known queue-layout params only (policies/module-params.c)
 *   <param>=<number>              e.g. [Module:virtio_blk] num_request_queues=1
 *
 *   [Device:<name>]               every Match key must hold
 *   MatchName= MatchDriver= MatchTransport= MatchIdentity=   (fnmatch globs)
 *   MatchHwQueues=N | MIN-MAX     MatchRotational=yes|no
 *   Elevator= RqAffinity= NrRequests= IrqAffinity=hctx|CPULIST  IoSched.*=  Enabled=yes|no
 *   NicIrqAffinity=hctx|keep  Xps=hctx|keep  NrIoQueues=keep|N   (network disks)
 *
 * A bad line is reported as "file:line: what is wrong" and the whole load fails, so the
 * last good configuration stays in force. See man/blkmqd.conf.5.scd.
 */

#include <stdbool.h>

#include "policy.h"

typedef enum ManagerMode {
        MODE_AUTO,              /* apply the plan */
        MODE_DRY_RUN,           /* compute and show; write nothing */
        MODE_OFF,               /* compute and show; no apply at all */
        _MODE_MAX,
        _MODE_INVALID = -EINVAL,
} ManagerMode;

const char *manager_mode_to_string(ManagerMode m);
ManagerMode manager_mode_from_string(const char *s);

/* VerifySec= default: 60 s. A pass reads 3 queue attributes per disk (and the smp_affinity_list
 * of vectors blkmqd placed): about 12,000 small reads a minute at 4,096 disks. */
#define CONFIG_VERIFY_USEC_DEFAULT (UINT64_C(60) * 1000000)

/* One name of an Elevator= line: what config_check_elevators() checks against the running
 * kernel, and where the manager's warnings point. */
typedef struct ConfigElevator {
        char *name;
        char *where;            /* "file:line" */
        char *section;          /* "[Class:many-hctx-slow]", "[Device:hba]" */
        DiskClass cls;          /* the [Class:] section's class; _DISK_CLASS_INVALID for a [Device:] section */
} ConfigElevator;
/* TextfileDirectory= default: Debian's prometheus-node-exporter reads this directory
 * (--collector.textfile.directory in its /lib/systemd/system/prometheus-node-exporter.service). */
#define CONFIG_TEXTFILE_DIR_DEFAULT "/var/lib/prometheus/node-exporter"
/* MetricsIntervalSec= default: a standard staleness alert (monitoring/) waits 5 minutes. */
#define CONFIG_METRICS_INTERVAL_USEC_DEFAULT (UINT64_C(60) * 1000000)

typedef struct Config {
        PolicyConfig policy;
        ManagerMode mode;       /* _MODE_INVALID when not set (command line decides) */
        char **devices;         /* Devices= globs; NULL = all */
        bool reassert;
        uint64_t rate_window_usec;    /* RateWindowSec=: the interval rates are computed over (default 1 s) */
        uint64_t verify_usec;         /* VerifySec=: periodic verify interval, 0 = off (default 60 s) */
        bool module_params_write;     /* ModuleParams=write: write modprobe.d and runtime params */
        ConfigElevator *elevators;    /* every Elevator= name, in file order (also ones a later line replaced) */
        size_t n_elevators;
        char *textfile_dir;           /* TextfileDirectory=: NULL not set (the default applies), "" off */
        uint64_t metrics_interval_usec; /* MetricsIntervalSec=: 0 = on change only (default 60 s) */
} Config;

void config_done(Config *c);

/*
 * Load path (a file; missing is fine: defaults) and the path.d/NAME.conf drop-ins into ret
 * (starting from the shipped defaults). Returns 0; -EINVAL with *ret_error set to
 * "file:line: what is wrong" (newly allocated) on a bad line; -errno on I/O errors.
 * ret is untouched on failure.
 */
int config_load(const char *path, Config *ret, char **ret_error);

/*
 * Parse one file's text (for tests and fuzzing). name is used in messages.
 * Returns as config_load(). c must be initialised (config_load's defaults or earlier files).
 */
int config_parse_text(Config *c, const char *name, const char *text, char **ret_error);

/*
 * Refuse an Elevator= name no kernel has: one that is not an in-tree elevator
 * (elevator_name_in_tree()) and not in offered (what the running kernel lists or can load:
 * an out-of-tree module). An in-tree name the running kernel lacks is no error (another
 * kernel has it; the manager warns, naming the disks). Returns 0, or -EINVAL with *ret_error
 * "file:line: [Class:x] Elevator=: no kernel has an elevator \"mq_deadline\" ...; did you mean
 * \"mq-deadline\"?" (newly allocated).
 */
int config_check_elevators(const Config *c, char * const *offered, char **ret_error);

/* Fresh defaults. Returns 0 or -ENOMEM. */
int config_init(Config *c);
