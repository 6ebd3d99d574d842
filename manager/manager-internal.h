/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The manager's private state and the functions its files share (layer 8, libblkmqd-manager;
 * HACKING.md "The pipeline in code"). One file per job:
 *
 *   manager.c   lifecycle: new, startup (a straight line), ready, run, signals, stop, reload, status
 *   pipeline.c  the device pipeline: event -> gather (device.c) -> evaluate (policies/) ->
 *               apply (apply.c, on the writer) -> the run's end (refresh, FUSE tree, modules)
 *   persist.c   the state directory: stored overrides, recorded originals, identity collisions
 *   control.c   writes to the tree (policy/, mode, reload, restore) and the root control files;
 *               FUSE writes answered when their disks' writes have settled (waiters)
 *   readers.c   statistics the tree reads on demand (hctx, disk stat, host_busy, softirqs, BPF)
 *   verify.c    the verify: a look at the kernel without writing (periodic, VerifySec=, or an
 *               applied/ read)
 *   textfile.c  the metrics file for node_exporter's textfile collector (TextfileDirectory=)
 *   speed.c     the measured speed: samples of the disks' I/O fed into their SpeedState
 *
 * Everything here runs on the sd-event loop thread. Not installed, not for the other layers.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "apply.h"
#include "conf.h"
#include "device.h"
#include "fuse-fs.h"
#include "hostfs.h"
#include "manager.h"
#include "modules.h"
#include "net-monitor.h"
#include "node.h"
#include "registry.h"
#include "state.h"
#include "stats.h"
#include "uevent-monitor.h"
#include "writer.h"

struct Manager {
        sd_event *event;
        HostFs *hostfs;
        Registry registry;
        Modules modules;
        Config config;
        /* the admin's other tools (facts/agents.c), read at start and at every reload: every
         * disk's evaluation gets them (DiskFacts.sources) */
        Sources sources;
        bool sources_warned;            /* agents_warn() ran for sources, under sources_defer_to */
        DeferTo sources_defer_to;
        char *config_path;
        unsigned reloads;               /* successful config (re)loads */
        unsigned reload_failures;       /* refused reloads */
        bool reload_ok;                 /* the last load or reload succeeded */
        int64_t reload_time;            /* CLOCK_REALTIME s of the last load or reload attempt */
        int64_t start_time;             /* ... of the start */
        int64_t verify_time;            /* ... of the last periodic verify, 0 none */
        bool default_state;             /* the state directory is the default one (no --state-dir) */
        unsigned restored;              /* values put back by the last restore */
        State *state;
        Stats *stats;
        ProcInterrupts interrupts;      /* parsed /proc/interrupts, reused for 100 ms */
        uint64_t interrupts_usec;
        char *kernel_release;
        bool mode_set_at_runtime;       /* mode file or restore since the last load: a reload keeps it unless Mode= changed */
        char *boot_id;                  /* this boot's (stored with originals); NULL: unknown */
        uint64_t rate_window_usec;
        UeventMonitor *monitor;
        NetMonitor *net_monitor;        /* rtnetlink + ethtool notifications (host/net-monitor.h); NULL: none */
        GatherCache *batch;             /* during coldplug and reload: machine-wide inputs read once */
        ModuleTreeCache module_tree;    /* the module tree's elevators, across gathers while unchanged */
        MachineCache machine;           /* kernel release, the root file system's devices (device.h) */
        sd_event_source *mounts_source; /* proc/self/mountinfo POLLPRI: machine.roots read again */
        char **batch_added;             /* disks new in the batch: stored state loaded at its end, when
                                         * every disk's identity is known (identity collisions) */
        char **originals_seen;          /* state keys whose originals this run loaded or wrote */
        char **measured_seen;           /* state keys whose measurement this run loaded or wrote */
        char *module_originals_saved;   /* what originals/module-parameters holds ("" none), NULL unknown */
        FuseFs *fuse;
        char *mountpoint;
        char **cli_globs;               /* --devices: wins over Devices= */
        bool cli_dry_run;
        ManagerMode mode;
        bool started;
        Writer *writer;                 /* kernel writes, off this thread (host/writer.h) */
        Applier applier;
        struct Waiter *waiters;         /* FUSE writes answered when their disks' writes returned (control.c) */
        unsigned restore_count;         /* values put back by the restore in progress */
        bool restore_failed;
        RestoreCounts restore_counts;   /* ... restored, failed, left (changed by someone else) */
        bool cascading;                 /* re-gathering the disks below a holder that changed (pipeline.c) */
        bool stopping;                  /* SIGTERM/SIGINT: restoring, then exit */
        sd_event_source *status_timer;  /* the window after a STATUS= send (manager_update_status()) */
        bool status_due;                /* an update came within it: send at its end */
        bool ready_pending;             /* coldplug done, its writes not settled: not mounted, no READY yet */
        size_t ready_unsettled;         /* where manager_ready_check() last found a run unsettled: its next
                                         * look starts there (a hint only; every disk is looked at before READY) */
        bool stop_done;                 /* the stop restore ran (manager_free does not repeat it) */
        /* disk writes of blkmqd's own files, on the writer too (persist.c, pipeline.c) */
        bool inline_files;              /* after the loop ended (manager_free()): done on this thread */
        size_t persist_pending;         /* state directory saves submitted, not returned */
        struct PersistJob *persist_jobs; /* ... their callbacks' data (freed at exit when dropped) */
        size_t persist_unsettled;       /* ... of them, not past the writer's deadline either */
        bool modules_busy;              /* a module-parameter job (lane MODULES_LANE) submitted, not returned */
        bool modules_timed_out;         /* ... and past the writer's deadline */
        bool modules_again;             /* manager_update_modules() asked while busy: again when it returns */
        bool modules_restore_wanted;    /* a restore asked while busy: when it returns */
        bool modules_restore_keep_file; /* ... a stop's: zz-blkmqd.conf stays (every request asked so) */
        bool restore_logging;           /* a restore's summary line waits for everything to settle */
        sd_event_source *stop_timer;
        sd_event_source *verify_timer;  /* VerifySec=: NULL when off (no wake-ups at all) */
        sd_event_source *retry_timer;   /* the next retry of a failed write that may pass (manager_update_retry_timer()) */
        uint64_t retry_usec;            /* ... its CLOCK_MONOTONIC time; 0: off */
        /* the metrics file (textfile.c) */
        char *textfile_path;            /* <TextfileDirectory=>/blkmqd.prom; NULL: none written */
        MetricsCache *textfile_cache;   /* its per-disk blocks, kept between writes */
        sd_event_source *textfile_timer;        /* a change's write, coalesced */
        sd_event_source *metrics_interval;      /* MetricsIntervalSec=: NULL when 0 or no file */
        bool textfile_busy;             /* a write submitted, not returned */
        bool textfile_dirty;            /* ... and something changed since it was rendered */
        int textfile_error;             /* the last write's -errno (said once), 0 */
        uint64_t textfile_writes;       /* files written */
        sd_event_source *speed_events;  /* the BPF provider's service-time ring buffer; NULL: not measured so */
        sd_event_source *speed_tail;    /* one sample of the disks below after their last event (speed.c) */
        char **speed_tail_disks;
};

/* ---- manager.c: lifecycle ------------------------------------------------------------- */

/* Send sd_notify STATUS= (mode, disks per class, knobs in error): at once, or, within 100 ms
 * of the last send, once at the end of that window with the state then. Nothing once stopping. */
void manager_update_status(Manager *m);

/*
 * Not yet ready (coldplug's writes in flight) and now every disk has settled: mount the tree,
 * log the start, READY=1. Returns 0 (also when not ready yet) or -errno of the mount (logged,
 * the loop is told to exit).
 */
int manager_ready_check(Manager *m);

/* Stopping and no disk has a run in progress: leave the loop. */
void manager_stop_check(Manager *m);
/* A write, save or run returned: answer the control writes waiting for it, mount once
 * coldplug settled (manager_ready_check()), leave the loop once a stop settled. */
void manager_settle_check(Manager *m);

/* ", 2 failed, 1 left as changed by someone else" for c in buf (size bytes; empty when both
 * are 0). Returns buf. */
const char *manager_restore_counts_tail(const RestoreCounts *c, char *buf, size_t size);

/* ---- pipeline.c: event -> gather -> evaluate -> apply -> refresh ----------------------------- */

/* (manager_device_event() is public: manager.h.) */

/* Coldplug found disk name not initialized by udev yet (its add event follows, after udev's
 * rules ran): not listed until then, and not_listed says so. */
void manager_device_uninitialized(Manager *m, const char *name);

/*
 * Something changed on the network side (a netlink notification, the periodic verify): every
 * network disk whose route, lower device, bond, NIC channels, vectors or XPS now differ from
 * its facts (net_recheck()) is gathered again, evaluated and applied like at a uevent, and so
 * is every other disk over the same NIC (before or after). why: what was seen, for the log.
 * Returns the number of disks gathered again.
 */
size_t manager_net_changed(Manager *m, const char *why);

/* A partition uevent: name is the disk whose partitions changed (added, changed), or the
 * partition removed (removed). Only not_listed follows it. */
void manager_partition_event(Manager *m, const char *name, bool removed);

/* Evaluate d with the facts it has, log decisions (all when log_decisions, else only new
 * ones), apply the plan and update d's FUSE files. Failures are logged. */
void manager_evaluate(Manager *m, Device *d, bool log_decisions);

/*
 * After a write, a restore or a verify: read d's facts a write can change again (irqs: the
 * IRQ affinities too) and, when something changed or evaluate is set, recompute the plan's
 * explain (decisions stay, nothing is applied or logged). Failures are logged.
 */
void manager_refresh(Manager *m, Device *d, bool irqs, bool evaluate);

/* Apply d's plan on the writer (not in mode off or while stopping); a disk whose run is in
 * progress applies again when it ends. */
void manager_apply(Manager *m, Device *d);

/* Put d's originals back, now or when its run in progress ends. */
void manager_restore_device(Manager *m, Device *d);

/* Forget disk name: FUSE files, statistics, kept files, registry entry. No-op when unknown. */
void manager_remove_device(Manager *m, const char *name);

/* Decide and (mode auto, ModuleParamsWrite=) write module parameters for all disks' plans,
 * persist their originals, update modules/. The writes (/sys/module, modprobe.d) are a job on
 * the writer (lane MODULES_LANE): modules/ says "pending" meanwhile, "timeout" past the
 * deadline; asked while one is in flight, it runs again when that returns. Failures are logged. */
void manager_update_modules(Manager *m);

/* Undo the module parameters: runtime values put back under /sys/module and, unless keep_file
 * (a stop: zz-blkmqd.conf is a boot-time setting, blkmqd(8)), zz-blkmqd.conf removed (restore); on the
 * writer, counted in m->restore_count/restore_counts when it returns (after the job in flight). */
void manager_restore_modules(Manager *m, bool keep_file);

/* True when no module-parameter job waits to be done or answered within its deadline. */
bool manager_modules_settled(const Manager *m);

/* End a coldplug or reload batch (m->batch): stored settings of the disks new in it are loaded
 * (every identity collision known first), they are evaluated; hosts/ updated once. */
void manager_batch_end(Manager *m);

/* Gather and evaluate every disk again as one batch (reload, mode change, restore). */
void manager_reevaluate_all(Manager *m);

/* Read the admin's other tools again (facts/agents.c agents_gather()) into m->sources and
 * warn once per place that sets what blkmqd manages (agents_warn(): a reload warns only about
 * places new or changed since, or about all when DeferTo= changed); at start, before coldplug,
 * and at every reload, before the disks are evaluated again (manager.c). */
void manager_gather_sources(Manager *m);

/* True when disk name has no run in progress, or only one whose write passed its deadline
 * (also when there is no such disk). */
bool manager_disk_settled(Manager *m, const char *name);

/* Applier callbacks (apply.h; userdata is the Manager): a run ended, a job is about to be
 * submitted to the writer, a job passed its deadline. */
void manager_on_apply_finished(Device *d, void *userdata);
void manager_on_apply_submit(Device *d, void *userdata);
void manager_on_apply_timeout(Device *d, void *userdata);

/* ---- persist.c: the state directory ----------------------------------------------------- */

/*
 * A disk just added: check its identity against the other disks' (manager_check_identity()),
 * then load its stored overrides and originals. Problems are logged, never fatal.
 */
void manager_load_stored(Manager *m, Device *d);
void manager_load_measured(Manager *m, Device *d);
void manager_persist_measured(Manager *m, Device *d);

/*
 * Two present disks with one identity: mark both Device.identity_shared (one warning each);
 * a disk of the same identity that is no longer present is removed first. No-op without
 * facts or identity.
 */
void manager_check_identity(Manager *m, Device *d);

/*
 * manager_check_identity() for each disk of names (a strv; names no longer in the registry are
 * skipped), in order, after a batch added them: the identities are sorted once, and only a disk
 * whose identity another disk has too is checked against them all (a scan per disk made a
 * coldplug of n disks O(n^2): 20,480 multipath legs and maps spent minutes in strcmp()).
 * Without memory for the sort, every disk is checked.
 */
void manager_check_identities(Manager *m, char * const *names);

/* Load d's stored overrides (not for a shared identity); invalid ones are dropped, logged. */
void manager_load_overrides(Manager *m, Device *d);

/* Load originals an earlier run (or this one, before d was removed) recorded for d. */
void manager_load_originals(Manager *m, Device *d);

/* Save d's recorded originals when they differ from what the state directory holds (crash
 * safety: called before every kernel write). A failure is logged. */
void manager_persist_originals(Manager *m, Device *d);
/*
 * manager_persist_originals() before a kernel write (manager_on_apply_submit()): saved only when
 * the originals changed (a new one must be on disk before the write that makes it one); when
 * only what blkmqd writes changed (a new override over a recorded original), the save waits
 * for the run's end (manager_on_apply_finished()), so no fsync() stands between a uevent and
 * its write (issue 12 item 4; integration/hotplug (q5)). A crash in between leaves the earlier
 * written value stored: at a restart the kernel's value is then the plan's (ok) or, if the
 * plan went back meanwhile, reported as changed externally and left.
 */
void manager_persist_originals_before_write(Manager *m, Device *d);

/* Load originals/module-parameters into m->modules (at startup). A failure is logged. */
void manager_load_module_originals(Manager *m);

/* Save the runtime module parameters blkmqd changed, when they differ (lane MODULES_LANE, so
 * before the module job that follows). A failure is logged. */
void manager_persist_module_originals(Manager *m);

/* Save d's overrides (not for a shared identity: the caller says so). A failure is logged. */
void manager_persist_overrides(Manager *m, Device *d);

/*
 * Every save of the state directory is a job on the writer (WRITE_OP_STATE: temp file, fsync,
 * rename, fsync of the directory; a slow or frozen disk holds a worker, never the loop), in
 * the lane of what it is about: a disk's originals in the disk's lane, so they are on disk
 * before the kernel write that follows them (crash safety), the module originals in
 * MODULES_LANE before the module writes, overrides in "overrides". Done inline when no loop
 * runs (m->inline_files, no writer). True when every save returned or passed its deadline.
 */
bool manager_persist_settled(const Manager *m);

/* Free the saves still out (after writer_free(): their callbacks never run). */
void manager_persist_jobs_free(Manager *m);

/* ---- control.c: writes to the tree, root control files --------------------------------- */

/* FuseFsContext.render_control (fuse-fs.h): version, mode, reload, restore into *ret.
 * Returns 0, -ENOENT for another node type, -ENOMEM. */
int manager_render_control(void *userdata, NodeType type, char **ret);

/*
 * FuseFsContext.write (fuse-fs.h): a write to policy/<knob>, policy/iosched/..., mode, reload
 * or restore. Returns 0, -EINVAL/-ERANGE (logged, nothing changed), -ENOENT, -EACCES, -EIO
 * (a restore that failed), or FUSE_FS_WRITE_DEFERRED (answered through pending when the
 * disks it touched have settled, manager_waiters_check()).
 */
int manager_fuse_write(void *userdata, NodeType type, const char *device, int knob, const char *data, size_t len,
                       off_t offset, FuseFsWrite *pending);

/* Answer every deferred FUSE write whose disks have all settled. */
void manager_waiters_check(Manager *m);

/* Answer every deferred FUSE write now (at exit). */
void manager_waiters_release_all(Manager *m);

/* ---- readers.c: statistics read on demand (FuseFsContext callbacks, fuse-fs.h) ----------- */

/* .load_hctx_details: read device's per-hctx details. Returns 0, -ENOENT, -ENOMEM. */
int manager_load_hctx_details(void *userdata, const char *device);

/* .read_hctx: statistics and rates of hctx position pos of device (flags: StatsReadFlags).
 * Returns 0, -ENOENT, -errno. */
int manager_read_hctx(void *userdata, const char *device, size_t pos, unsigned flags, HctxReading *ret);

/* .read_disk_stat: block/<disk>/stat and inflight with rates (flags: StatsReadFlags). Returns 0, -ENOENT, -errno. */
int manager_read_disk_stat(void *userdata, const char *device, unsigned flags, DiskStat *ret, StatRates *ret_rates);

/* .read_host_busy: scsi_host <host>'s host_busy. Returns 0 or -errno. */
int manager_read_host_busy(void *userdata, const char *host, uint64_t *ret);

/* .read_block_softirqs: BLOCK softirqs per CPU. Returns 0 or -errno. */
int manager_read_block_softirqs(void *userdata, uint64_t *counts, size_t max, size_t *ret_n);

/* .read_bpf_missed: events the BPF counters lack. Returns 0, -EOPNOTSUPP, -errno. */
int manager_read_bpf_missed(void *userdata, StatsBpfMissed *ret);

/* .scrape: a metrics rendering begins (begin) or ends. */
void manager_scrape(void *userdata, bool begin);

/* .kernel_release, .providers: for blkmqd_info (never NULL for providers; release may be). */
const char *manager_kernel_release(void *userdata);
const char *manager_stats_providers(void *userdata);

/*
 * A one-shot CLOCK_MONOTONIC timer *s firing in usec (> 0) with handler (userdata m), created or
 * re-armed; accuracy a tenth of usec, so that sd-event can coalesce the wake-up with the other
 * periodic ones (the verify's, the metrics file's). The handler re-arms it. Returns 0 or -errno.
 */
int manager_arm_period(Manager *m, sd_event_source **s, uint64_t usec, sd_event_time_handler_t handler);

/* The FuseFsContext of m's tree (callbacks into this layer), also for rendering without a
 * mount (textfile.c); metrics_cache NULL. */
void manager_fuse_context(Manager *m, FuseFsContext *ret);

/* ---- textfile.c: the metrics file ------------------------------------------------------- */

/* Something /metrics shows changed: the file is written within a second (no-op without one). */
void manager_metrics_changed(Manager *m);
/* After the start's coldplug and each (re)load: pick the file (TextfileDirectory=), arm or
 * remove the interval timer (MetricsIntervalSec=), write the file now. */
void manager_textfile_update(Manager *m);
/* Stop writing; free. The file stays. */
void manager_textfile_done(Manager *m);
/* FuseFsContext.daemon_counters. */
void manager_daemon_counters(void *userdata, DaemonCounters *ret);

/* ---- verify.c: a look at the kernel, no writes ---------------------------------------- */

/*
 * FuseFsContext.verify (fuse-fs.h), before applied/ renders: re-read device's knobs so applied/
 * notices changes by others; facts/ and explain follow. Reads only: no kernel knob and no state
 * directory write (the periodic verify stores what it found). Not while its run is in progress.
 */
void manager_verify_disk(void *userdata, const char *device);

/* Arm, re-arm or remove the periodic verify (VerifySec=) after a (re)load of the configuration.
 * A failure is logged. */
void manager_update_verify_timer(Manager *m);
/* d's run ended: arm the retry timer at d's earliest backoff time of a failed write that may
 * pass (apply_next_retry_usec()) when no earlier one is armed. When it fires, every disk
 * with a retry due is applied again and the timer follows the earliest one left. */
void manager_update_retry_timer(Manager *m, const Device *d);

/* ---- speed.c: the measured speed ------------------------------------------------------------- */

/* A disk just listed: its measurement starts afresh (the baseline sample). */
void manager_speed_watch(Manager *m, Device *d);
/* facts/speed and speed_source again (a stored measurement taken) */
void manager_speed_render(Manager *m, Device *d);

/* Sample d's counters and feed them into d->speed (policies/speed.h): a class change by
 * measurement is logged and d evaluated and applied again, new evidence renews explain. */
void manager_speed_sample(Manager *m, Device *d);

/* After the configuration was (re)loaded and at startup: the BPF programs on or off
 * ([Speed] Measure=), the event source, every disk's facts/speed text. */
void manager_speed_config_changed(Manager *m);

/* The periodic verify: without BPF service times, sample every disk's stat. */
void manager_speed_verify_tick(Manager *m);
