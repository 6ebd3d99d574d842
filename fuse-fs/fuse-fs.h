/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The FUSE tree (libfuse3 low-level API), served from the manager's sd-event loop: every
 * request is answered on that one thread, so renders need no locking and see a consistent
 * registry. One helper thread (the notifier, fuse-fs.c) sends what must not be sent from
 * the loop: kernel cache notifications (inval, store) and the OPEN replies that wait for a
 * store. It takes work from a queue shared with the loop under a mutex and never touches the
 * registry.
 *
 * Reads are consistent: a file's content is rendered once when it is opened and every
 * read of that open file is served from that snapshot, so `dd bs=1` equals `cat`.
 * getattr renders too, so st_size is the real length (tail -c, wc -c and stat agree).
 * Event-driven files (node_is_cacheable()) are served from the kernel's page cache and
 * invalidated when what they show changes (fuse_fs_invalidate_disk()); the open still
 * renders and re-checks, so content and size are never stale.
 */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "modules.h"
#include "node.h"
#include "registry.h"

#include "blkstat.h"
#include "stats.h"

typedef struct FuseFs FuseFs;
typedef struct MetricsCache MetricsCache;

/* Counters of one hctx with rates, read when a file is opened. */
typedef struct HctxReading {
        HctxStats stats;
        StatRates rates;        /* indexed by StatId */
} HctxReading;

void hctx_reading_done(HctxReading *r);

/* A FUSE write not answered yet (FuseFsContext.write returned FUSE_FS_WRITE_DEFERRED). */
typedef struct FuseFsWrite FuseFsWrite;
#define FUSE_FS_WRITE_DEFERRED 1

/* Answer a deferred write: r < 0 fails it with -r, else the whole write succeeded. Frees w. */
void fuse_fs_write_done(FuseFsWrite *w, int r);

/* What the tree shows besides the registry; supplied by the manager. */
/* What the daemon itself counts, for /metrics (docs/METRICS.md); times are CLOCK_REALTIME seconds. */
typedef struct DaemonCounters {
        uint64_t reloads;               /* configuration reloads that succeeded (the load at start not counted) */
        uint64_t reload_failures;       /* ... that failed (the last good configuration stayed) */
        bool last_reload_success;       /* the last load or reload succeeded */
        int64_t last_reload_time;       /* when it was tried (the start's load: the start) */
        int64_t start_time;
        int64_t last_verify_time;       /* the last periodic verify (VerifySec=); 0: none yet */
        uint64_t metrics_interval_usec; /* MetricsIntervalSec=: the textfile's write interval, 0 = on change only */
} DaemonCounters;

typedef struct FuseFsContext {
        const Registry *registry;
        const Modules *modules;
        /* Render a root control file (version, mode, reload, restore) into *ret. Returns 0 or -errno. */
        int (*render_control)(void *userdata, NodeType type, char **ret);
        /*
         * A write to a writable file: the bytes as written (not NUL-terminated) and the file
         * offset (a value must come in one write() at offset 0, like sysfs). device is the
         * disk for policy files, NULL at the root; knob: the PolicyFile of a policy file (a
         * Knob, or POLICY_FILE_ENABLED). Returns 0 or -errno (EINVAL, ERANGE, ENOENT ...), which the
         * writer gets; or FUSE_FS_WRITE_DEFERRED: the answer comes later, through
         * fuse_fs_write_done(pending, r) (the writer waits, interruptibly, while the loop
         * serves everyone else: a write whose kernel writes are still in flight).
         */
        int (*write)(void *userdata, NodeType type, const char *device, int knob, const char *data, size_t len, off_t offset,
                     FuseFsWrite *pending);
        /*
         * Make sure device's per-hctx details are read (DiskFacts.hctx_details; gathering
         * leaves them out where policy does not need them). Returns 0, -ENOENT, -ENOMEM.
         * NULL: the facts are used as they are.
         */
        int (*load_hctx_details)(void *userdata, const char *device);
        /*
         * Read the statistics of hctx position pos of device. flags: StatsReadFlags (stats.h):
         * STATS_READ_IRQ_COUNT: STAT_IRQ_COUNT too (parses /proc/interrupts); NO_REASONS: an
         * unavailable value without its reason; NO_RATES: ret->rates left empty.
         * Returns 0, -ENOENT, -ENOMEM.
         */
        int (*read_hctx)(void *userdata, const char *device, size_t pos, unsigned flags, HctxReading *ret);
        /* Read block/<disk>/stat with rates (indexed by DiskStatField) and inflight. flags:
         * StatsReadFlags: NO_INFLIGHT (stat only: has_inflight false), NO_RATES (ret_rates may
         * be NULL, else left empty). Returns 0 or -errno. */
        int (*read_disk_stat)(void *userdata, const char *device, unsigned flags, DiskStat *ret, StatRates *ret_rates);
        /* BLOCK softirqs per CPU from /proc/softirqs (column i = CPU i: possible CPUs are
         * printed in order). counts has room for max; *ret_n gets the CPU count. 0 or -errno. */
        int (*read_block_softirqs)(void *userdata, uint64_t *counts, size_t max, size_t *ret_n);
        /* Events the BPF counters lack (all disks, since attach). 0, -EOPNOTSUPP when the BPF
         * provider is not loaded, other -errno. NULL: not offered. */
        int (*read_bpf_missed)(void *userdata, StatsBpfMissed *ret);
        /* A metrics rendering begins (begin) or ends: counters may be read in one go. NULL: none. */
        void (*scrape)(void *userdata, bool begin);
        /*
         * Look at device's knobs in the kernel again before applied/<knob> or applied/iosched
         * renders, so the file shows what the kernel has now, also after someone else's change
         * (no uevent comes for it). Reads only: a read never writes a kernel knob or the state
         * directory. What it finds (a value changed externally, an original no longer blkmqd's
         * to put back) is kept in memory; the periodic verify, the next apply or the stop acts
         * on it and persists it (manager/verify.c). NULL: applied/ shows the last verify's view.
         */
        void (*verify)(void *userdata, const char *device);
        /* Kernel release and statistics providers, for /metrics' blkmqd_info. */
        const char *(*kernel_release)(void *userdata);
        const char *(*providers)(void *userdata);
        /* The daemon's own counters for /metrics. NULL: those families are left out. */
        void (*daemon_counters)(void *userdata, DaemonCounters *ret);
        /* Read scsi_host <host>'s host_busy now. Returns 0 or -errno. */
        int (*read_host_busy)(void *userdata, const char *host, uint64_t *ret);
        void *userdata;
        /* /metrics' per-disk blocks kept between scrapes (render.h): made and freed by the tree
         * (fuse_fs_new()), not by the caller; NULL: every scrape renders every block. */
        MetricsCache *metrics_cache;
} FuseFsContext;

/*
 * The tree for mountpoint (created if missing), not mounted yet: devices can be added
 * (coldplug) before anyone can look. A stale mount left by a crashed daemon ("Transport
 * endpoint is not connected") is lazily unmounted first. Returns 0, -EBUSY when mountpoint
 * is a live FUSE mount (another blkmqd), -ENOMEM, -errno.
 */
int fuse_fs_new(const char *mountpoint, const FuseFsContext *ctx, FuseFs **ret);

/* Whether fuse_fs_new() found a dead mount at the mount point (a killed blkmqd's) and lazily
 * unmounted it: the caller says so (this module logs nothing above debug). */
bool fuse_fs_cleared_stale_mount(const FuseFs *fs);

/*
 * Mount and serve requests from event (the loop thread). Before it returns, FUSE_INIT is
 * answered (until then every request would wait in fuse_get_req(), in D state) and the kernel
 * has learnt that this file system has no poll and no flush (probe_main() in fuse-fs.c), so
 * nobody's poll()/close() ever waits for this daemon, even when it is stopped.
 * Returns 0, -EPERM without CAP_SYS_ADMIN, -EALREADY, -errno.
 */
int fuse_fs_mount(FuseFs *fs, sd_event *event);

/* Unmount (if mounted) and free. Returns NULL. */
FuseFs *fuse_fs_free(FuseFs *fs);

/*
 * The FUSE requests blkmqd answered since the mount, by kind: the round trips readers of the
 * tree cost (a `cat` of a cached file: one open and one release; docs/BENCHMARKS.md P2/P3).
 * getattr counts files, getattr-dir directories (path walks ask for them when their
 * attributes expired: default_permissions checks each component). forget counts FORGET and
 * BATCH_FORGET requests. RELEASEDIR, STATFS, FLUSH and POLL are answered by libfuse or once
 * (probe_main()) and not counted.
 */
typedef enum FuseFsRequest {
        FUSE_FS_REQUEST_LOOKUP,
        FUSE_FS_REQUEST_GETATTR,
        FUSE_FS_REQUEST_GETATTR_DIR,
        FUSE_FS_REQUEST_OPEN,
        FUSE_FS_REQUEST_READ,
        FUSE_FS_REQUEST_RELEASE,
        FUSE_FS_REQUEST_OPENDIR,
        FUSE_FS_REQUEST_READDIR,
        FUSE_FS_REQUEST_READDIRPLUS,
        FUSE_FS_REQUEST_FORGET,
        FUSE_FS_REQUEST_SETATTR,
        FUSE_FS_REQUEST_WRITE,
        _FUSE_FS_REQUEST_MAX,
} FuseFsRequest;

/* "lookup", "getattr", "getattr-dir", "open", ... NULL when out of range. */
const char *fuse_fs_request_to_string(FuseFsRequest r);

/* Requests of kind r answered since the mount (0 for NULL or r out of range). */
uint64_t fuse_fs_requests(const FuseFs *fs, FuseFsRequest r);

/*
 * Keep the tree in step with the registry: call after a device was added or its facts
 * changed (re-creates the hctx/ subtree when the hctx layout changed), and after removal.
 * Open files of a removed device keep their snapshot; new opens and lookups get ENOENT.
 * Returns 0 or -ENOMEM.
 */
int fuse_fs_device_updated(FuseFs *fs, const Device *d);
void fuse_fs_device_removed(FuseFs *fs, const char *name);

/*
 * blkmqd changed what name's files show (a write's outcome or one in flight, a verify that
 * read the kernel again, an evaluation): every file of devices/<name>/ and of its hosts/<host>/
 * that is served from the kernel's page cache and now shows something else than the kernel
 * holds is invalidated (fuse_lowlevel_notify_inval_inode(): pages and attributes), from a
 * helper thread. Opens and write answers that come later are sent behind those
 * invalidations, so once a reader sees the change, a stat() or read of any other file sees
 * it too. Cheap when nothing changed (only files the kernel knows are looked at).
 * fs NULL or not mounted: nothing to do. fuse_fs_device_updated() calls it itself.
 */
void fuse_fs_invalidate_disk(FuseFs *fs, const char *name);

/*
 * The registry's block devices not listed (Registry.unlisted) changed: not_listed, served from
 * the kernel's page cache, is invalidated when the kernel holds other content or size than it
 * shows now. fs NULL or not mounted: nothing to do.
 */
void fuse_fs_not_listed_updated(FuseFs *fs);

/* Keep hosts/ in step with the registry (call after devices change). Returns 0 or -ENOMEM. */
int fuse_fs_hosts_updated(FuseFs *fs);

/* Keep modules/ in step with the module parameter states. Returns 0 or -ENOMEM. */
int fuse_fs_modules_updated(FuseFs *fs);
