/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents.h"
#include "apply.h"
#include "conf.h"
#include "config.h"
#include "device.h"
#include "fuse-fs.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "net.h"
#include "modules.h"
#include "node.h"
#include "policy.h"
#include "state.h"
#include "stats.h"
#include "strv.h"
#include "udev-monitor.h"

#define IN_SET_STATE(s) ((s) == APPLY_ERROR || (s) == APPLY_UNSUPPORTED)

struct Manager {
        sd_event *event;
        HostFs *hostfs;
        Registry registry;
        Modules modules;
        Config config;
        char *config_path;
        unsigned reloads;               /* successful config (re)loads */
        unsigned restored;              /* values put back by the last restore */
        State *state;
        Stats *stats;
        ProcInterrupts interrupts;      /* parsed /proc/interrupts, reused for 100 ms */
        uint64_t interrupts_usec;
        char *kernel_release;
        uint64_t rate_window_usec;
        UdevMonitor *monitor;
        GatherCache *batch;             /* during coldplug and reload: machine-wide inputs read once */
        ModuleTreeCache module_tree;    /* the module tree's elevators, across gathers while unchanged */
        char **batch_added;             /* disks new in the batch: stored state loaded at its end, when
                                         * every disk's identity is known (identity collisions) */
        char **originals_seen;          /* state keys whose originals this run loaded or wrote */
        char *module_originals_saved;   /* what originals/module-parameters holds ("" none), NULL unknown */
        FuseFs *fuse;
        char *mountpoint;
        char **cli_globs;               /* --devices: wins over Devices= */
        bool cli_dry_run;
        ManagerMode mode;
        bool started;
        Writer *writer;                 /* kernel writes, off this thread (daemon/writer.h) */
        Applier applier;
        struct Waiter *waiters;         /* FUSE writes answered when their disks' writes returned */
        unsigned restore_count;         /* values put back by the restore in progress */
        bool restore_failed;
        RestoreCounts restore_counts;   /* ... restored, failed, left (changed by someone else) */
        bool stopping;                  /* SIGTERM/SIGINT: restoring, then exit */
        bool ready_pending;             /* coldplug done, its writes not settled: not mounted, no READY yet */
        bool stop_done;                 /* the stop restore ran (manager_free does not repeat it) */
        sd_event_source *stop_timer;
        sd_event_source *verify_timer;  /* VerifySec=: NULL when off (no wake-ups at all) */
};

/*
 * A FUSE write (policy/<knob>, mode, reload, restore) whose kernel writes are in flight: its
 * writer gets the answer when every disk it touched has settled (its run ended, or its write
 * passed the deadline: applied/ then says "timeout (still pending)").
 */
typedef struct Waiter {
        struct Waiter *next;
        FuseFsWrite *pending;
        char **disks;
        bool restore;                   /* the answer is the restore's outcome */
} Waiter;

/* Seconds a stop waits for restores (writes in flight included) before it exits anyway:
 * well inside TimeoutStopSec= (30 s in units/blkmqd.service.in). */
#define MANAGER_STOP_BUDGET_USEC (15 * UINT64_C(1000000))

static ManagerMode effective_mode(const Config *c, bool cli_dry_run) {
        if (cli_dry_run)
                return MODE_DRY_RUN;
        return c->mode >= 0 ? c->mode : MODE_AUTO;
}

int manager_new(const ManagerOptions *options, Manager **ret) {
        _cleanup_free_ char *error = NULL;
        Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return -ENOMEM;
        m->cli_dry_run = options->dry_run;
        if ((options->device_globs && !(m->cli_globs = strv_copy(options->device_globs))) ||
            (options->mountpoint && !(m->mountpoint = strdup(options->mountpoint))) ||
            !(m->config_path = strdup(options->config_path ?: BLKMQD_SYSCONFDIR "/blkmqd.conf"))) {
                manager_free(m);
                return -ENOMEM;
        }

        r = hostfs_new(options->root, &m->hostfs);
        if (r < 0) {
                log_error_errno(r, "Failed to open root \"%s\": %m", options->root ?: "/");
                manager_free(m);
                return r;
        }

        r = config_load(m->config_path, &m->config, &error);
        if (r < 0) {
                log_error_errno(r, "Bad configuration, not starting: %s", error ?: strerror(-r));
                manager_free(m);
                return r;
        }
        m->reloads = 1;
        m->mode = effective_mode(&m->config, m->cli_dry_run);

        const char *dir = options->state_dir ?: getenv("STATE_DIRECTORY") ?: BLKMQD_DEFAULT_STATEDIR;
        if (strchr(dir, ':'))           /* StateDirectory= with several entries: the first */
                dir = strndupa(dir, strchr(dir, ':') - dir);
        r = state_open(dir, &m->state);
        if (r < 0)
                log_warning_errno(r, "Cannot use state directory \"%s\", overrides will not persist: %m", dir);

        r = sd_event_default(&m->event);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

static void persist_originals(Manager *m, Device *d);

int manager_restore_all(Manager *m, RestoreCounts *ret) {
        RestoreCounts c = {};
        int ret_r = 0;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                int r = apply_restore(m->hostfs, m->registry.devices[i], &c);
                persist_originals(m, m->registry.devices[i]);
                if (r < 0 && ret_r >= 0)
                        ret_r = r;      /* -EBUSY: a run in progress on that disk */
        }
        if (ret)
                *ret = c;
        return ret_r < 0 ? ret_r : c.failed ? -EIO : 0;
}

/* ", 2 failed, 1 left as changed by someone else" (empty when both are 0). */
static const char *restore_counts_tail(const RestoreCounts *c, char *buf, size_t size) {
        int n = 0;
        buf[0] = 0;
        if (c->failed)
                n = snprintf(buf, size, ", %u failed", c->failed);
        if (c->left && n >= 0 && (size_t) n < size)
                snprintf(buf + n, size - n, ", %u left as changed by someone else", c->left);
        return buf;
}

static void waiters_release_all(Manager *m);

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        if (m->started && !m->stop_done) {
                /* not stopped by a signal (an error): restore here, synchronously */
                (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring original values");
                RestoreCounts c;
                char tail[128];
                (void) manager_restore_all(m, &c);
                log_full(c.failed ? LOG_WARNING : LOG_INFO, 0, NULL, BLKMQD_MESSAGE_STOP, NULL, __FILE__, __LINE__, __func__,
                         "Stopping: %u original value(s) restored%s", c.restored, restore_counts_tail(&c, tail, sizeof(tail)));
        } else if (m->stop_done) {
                size_t left = 0;
                for (size_t i = 0; i < m->registry.n_devices; i++)
                        left += m->registry.devices[i]->run.active;
                char tail[128];
                log_full(m->restore_failed ? LOG_WARNING : LOG_INFO, 0, NULL, BLKMQD_MESSAGE_STOP, NULL, __FILE__, __LINE__, __func__,
                         "Stopping: %u original value(s) restored%s%s", m->restore_count,
                         restore_counts_tail(&m->restore_counts, tail, sizeof(tail)),
                         left ? ", a disk's write to the kernel did not return in time" : "");
        }
        waiters_release_all(m);
        sd_event_source_disable_unref(m->stop_timer);
        sd_event_source_disable_unref(m->verify_timer);
        /* a write that never returns is abandoned; its worker still uses hostfs: keep it */
        bool keep_hostfs = writer_running(m->writer);
        m->writer = writer_free(m->writer);
        fuse_fs_free(m->fuse);
        udev_monitor_free(m->monitor);
        registry_done(&m->registry);
        modules_done(&m->modules);
        stats_free(m->stats);
        proc_interrupts_done(&m->interrupts);
        free(m->kernel_release);
        config_done(&m->config);
        state_free(m->state);
        if (!keep_hostfs)
                hostfs_free(m->hostfs);
        sd_event_unref(m->event);
        strv_free(m->cli_globs);
        strv_free(m->batch_added);
        strv_free(m->originals_seen);
        module_tree_cache_done(&m->module_tree);
        free(m->module_originals_saved);
        free(m->config_path);
        free(m->mountpoint);
        free(m);
        return NULL;
}

/* --devices/Devices= globs match sysfs's name ("cciss!c0d0") or the kernel's ("cciss/c0d0"). */
static bool manager_matches(const Manager *m, const char *name) {
        char * const *globs = m->cli_globs ?: m->config.devices;
        char kernel[256];
        bool bang = strchr(name, '!') && disk_name_to_kernel(name, kernel, sizeof(kernel));
        if (!globs)
                return true;
        STRV_FOREACH(g, globs)
                if (fnmatch(*g, name, 0) == 0 || (bang && fnmatch(*g, kernel, 0) == 0))
                        return true;
        return false;
}

static void manager_update_status(Manager *m) {
        size_t counts[_DISK_CLASS_MAX], errors = 0;
        char buf[512];
        size_t n = 0;

        registry_count_classes(&m->registry, counts);
        for (size_t i = 0; i < m->registry.n_devices; i++)
                for (Knob k = 0; k < _KNOB_MAX; k++)
                        if (IN_SET_STATE(m->registry.devices[i]->applied[k].state))
                                errors++;

        n += snprintf(buf + n, sizeof(buf) - n, "STATUS=mode %s, %zu disk(s)", manager_mode_to_string(m->mode), m->registry.n_devices);
        for (DiskClass c = 0; c < _DISK_CLASS_MAX && n < sizeof(buf); c++)
                if (counts[c])
                        n += snprintf(buf + n, sizeof(buf) - n, ", %zu %s", counts[c], disk_class_to_string(c));
        if (n < sizeof(buf))
                snprintf(buf + n, sizeof(buf) - n, ", %zu error(s)", errors);
        (void) sd_notify(false, buf);
}

static void manager_remove_device(Manager *m, const char *name) {
        if (!registry_get(&m->registry, name))
                return;
        Device *d = registry_get(&m->registry, name);
        if (m->fuse)
                fuse_fs_device_removed(m->fuse, name);
        if (m->stats && d->facts)
                stats_forget_disk(m->stats, d->facts->major, d->facts->minor);
        char prefix[300];
        snprintf(prefix, sizeof(prefix), "block/%s/", name);
        hostfs_close_kept(m->hostfs, HOSTFS_SYSFS, prefix);       /* stat, inflight */
        hostfs_close_kept(m->hostfs, HOSTFS_DEBUGFS, prefix);     /* hctxN/ statistics */
        registry_remove(&m->registry, name);
        log_device_info(name, "Disk removed");
}

static void manager_update_modules(Manager *m);

/*
 * Two present disks with one identity (issue 13 item 10): stored settings cannot say which
 * disk they were made on, so neither gets them, and neither's settings are stored under it.
 * Marks d (and the disk it collides with); one warning per disk. See gather_identity() for
 * where identities are made distinct and where they still can collide.
 */
/*
 * Is e still the disk it was when gathered: its sysfs directory the same, a medium in it?
 * (Its removal, or the detach of a loop device, may still wait in the uevent debounce.)
 */
static bool device_present(Manager *m, const Device *e) {
        char path[300];
        struct stat st;
        uint64_t size;
        snprintf(path, sizeof(path), "block/%s", e->name);
        if (hostfs_stat(m->hostfs, HOSTFS_SYSFS, path, &st) < 0 ||
            (e->facts->sysfs_ino && (uint64_t) st.st_ino != e->facts->sysfs_ino))
                return false;
        snprintf(path, sizeof(path), "block/%s/size", e->name);
        return hostfs_read_u64(m->hostfs, HOSTFS_SYSFS, path, &size) < 0 || size > 0;
}

static void check_identity(Manager *m, Device *d) {
        _cleanup_strv_free_ char **stale = NULL;

        if (!d->facts || !d->facts->identity)
                return;
        /* a disk that came back under another name (sdb -> sdc) before the old name's removal
         * was handled is no collision: the old name goes now */
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *e = m->registry.devices[i];
                if (e != d && e->facts && streq_ptr(e->facts->identity, d->facts->identity) && !device_present(m, e) &&
                    !e->run.active)
                        (void) strv_extend(&stale, e->name);
        }
        STRV_FOREACH(n, stale)
                manager_remove_device(m, *n);
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *e = m->registry.devices[i];
                if (e == d || !e->facts || !streq_ptr(e->facts->identity, d->facts->identity))
                        continue;
                if (!d->identity_shared)
                        log_device_full(LOG_WARNING, 0, d->name, NULL, NULL, "Identity %s is also %s's: stored settings are not applied to %s, "
                                           "and its settings are not stored (they last until it is removed)",
                                           d->facts->identity, e->name, d->name);
                if (!e->identity_shared)
                        log_device_full(LOG_WARNING, 0, e->name, NULL, NULL, "Identity %s is also %s's: %s's settings are not stored from now on",
                                           e->facts->identity, d->name, e->name);
                d->identity_shared = e->identity_shared = true;
        }
}

/* The key of d's originals in the state directory (NULL: none, or ENOMEM). */
static char *originals_key(const Device *d) {
        char *k = NULL;
        if (!d->facts || !d->facts->identity)
                return NULL;
        if (!d->identity_shared)
                return strdup(d->facts->identity);
        /* kernel names are unique at any moment: a restart in the same boot finds them */
        return asprintf(&k, "%s#%s", d->facts->identity, d->name) < 0 ? NULL : k;
}

/* Load persisted overrides of a newly seen disk; values no longer valid are dropped with a log line. */
static void load_overrides(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        int r;

        if (!m->state || !d->facts->identity || d->identity_shared)
                return;
        r = state_load_overrides(m->state, d->facts->identity, &kv);
        if (r == -EBADMSG) {
                log_device_warning_errno(d->name, r, "Stored overrides for %s are corrupt, set aside as .corrupt", d->facts->identity);
                return;
        }
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to load stored overrides, ignoring: %m");
                return;
        }
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                _cleanup_free_ char *v = NULL;
                const char *dotted = startswith(kv[i], "iosched.");
                if (dotted) {
                        IoschedTunable t = iosched_tunable_from_dotted(dotted);
                        r = t < 0 ? -EINVAL : iosched_override_validate(t, kv[i + 1], strlen(kv[i + 1]), d->facts, &v);
                        if (r < 0) {
                                log_device_warning_errno(d->name, r, "Stored override %s=%s no longer valid, ignoring: %m", kv[i], kv[i + 1]);
                                continue;
                        }
                        (void) policy_overrides_set_iosched(&d->overrides, t, v);
                        log_device_info(d->name, "Restored override %s=%s (identity %s)", kv[i], kv[i + 1], d->facts->identity);
                        continue;
                }
                Knob k = streq(kv[i], "enabled") ? _KNOB_MAX : knob_from_string(kv[i]);
                if (k < 0) {
                        log_device_warning_errno(d->name, EINVAL, "Stored override \"%s\" is unknown, ignoring", kv[i]);
                        continue;
                }
                r = policy_override_validate(k, kv[i + 1], strlen(kv[i + 1]), d->facts, NULL, &v);
                if (r < 0) {
                        log_device_warning_errno(d->name, r, "Stored override %s=%s no longer valid, ignoring: %m", kv[i], kv[i + 1]);
                        continue;
                }
                if (k == _KNOB_MAX) {
                        d->overrides.enabled_set = v;
                        d->overrides.disabled = v && streq(v, "0");
                } else
                        (void) policy_overrides_set(&d->overrides, k, v);
                log_device_info(d->name, "Restored override %s=%s (identity %s)", kv[i], kv[i + 1], d->facts->identity);
        }
}

/* Originals as "knob=value" and "irq.N=value" pairs. */
static int originals_to_kv(const Device *d, char ***ret) {
        _cleanup_strv_free_ char **kv = NULL;
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (d->applied[k].original &&
                    (strv_extend(&kv, knob_to_string(k)) < 0 || strv_extend(&kv, d->applied[k].original) < 0))
                        return -ENOMEM;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                char key[128];
                snprintf(key, sizeof(key), "iosched.%s.%s", i->elevator, i->name);
                if (d->iosched[t].original && (strv_extend(&kv, key) < 0 || strv_extend(&kv, d->iosched[t].original) < 0))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                char key[32];
                snprintf(key, sizeof(key), "irq.%u", d->irq_applied[i].irq);
                if (d->irq_applied[i].original &&
                    (strv_extend(&kv, key) < 0 || strv_extend(&kv, d->irq_applied[i].original) < 0))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(kv);
        return 0;
}

/* What d's originals file holds for key and kv, to compare with d->originals_saved (NULL: ENOMEM). */
static char *originals_snapshot(const char *key, char * const *kv) {
        _cleanup_free_ char *joined = strv_join(kv, "\n");
        char *s = NULL;
        if (!joined || asprintf(&s, "%s\n%s", key, joined) < 0)
                return NULL;
        return s;
}

/*
 * Keep originals/<identity> in step with what is recorded in memory (crash safety). Called
 * before every kernel write (on_apply_submit()), where it used to write and fsync() the file
 * (and its directory) every time: on a disk re-added with its originals already stored, or a
 * second knob of the same run, that fsync() stood between the uevent and the write (issue 12
 * item 4). Now the file is written only when its content changes.
 */
static void persist_originals(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL, *snapshot = NULL;
        int r;

        if (!m->state || !(key = originals_key(d)))
                return;
        r = originals_to_kv(d, &kv);
        if (r >= 0 && (snapshot = originals_snapshot(key, kv)) && streq_ptr(snapshot, d->originals_saved))
                return;         /* the file already holds exactly this */
        if (r >= 0)
                r = state_save(m->state, STATE_ORIGINALS, key, kv);
        if (r >= 0 && kv && !strv_contains(m->originals_seen, key))
                (void) strv_extend(&m->originals_seen, key);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to persist original values, a crash would lose them: %m");
                d->originals_saved = mfree_str(d->originals_saved);
                return;
        }
        free(d->originals_saved);
        d->originals_saved = TAKE_PTR(snapshot);        /* NULL (ENOMEM): the next save writes */
}

/*
 * Originals recorded by an earlier run that did not get to restore them (crash, kill -9), or
 * by this run before the disk was removed (said once, not on every re-add).
 */
static void load_originals(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL;
        unsigned irq;
        int r;

        if (!m->state || !(key = originals_key(d)))
                return;
        bool earlier_run = !strv_contains(m->originals_seen, key);
        r = state_load(m->state, STATE_ORIGINALS, key, &kv);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Stored original values unreadable%s: %m",
                                         r == -EBADMSG ? ", set aside as .corrupt" : "");
                return;
        }
        /* what the file holds: a save of the same is skipped (an entry ignored below makes the
         * next save differ, and rewrite the file without it) */
        free(d->originals_saved);
        d->originals_saved = originals_snapshot(key, kv);
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                Knob k = knob_from_string(kv[i]);
                const char *dotted = startswith(kv[i], "iosched.");
                IoschedTunable t = dotted ? iosched_tunable_from_dotted(dotted) : _IOSCHED_TUNABLE_INVALID;
                if (t >= 0)
                        (void) free_and_strdup(&d->iosched[t].original, kv[i + 1]);
                else if (k >= 0 && k != KNOB_IRQ_AFFINITY)
                        (void) free_and_strdup(&d->applied[k].original, kv[i + 1]);
                else if (sscanf(kv[i], "irq.%u", &irq) == 1) {
                        IrqApplied *n = realloc(d->irq_applied, (d->n_irq_applied + 1) * sizeof(IrqApplied));
                        if (!n)
                                return;
                        d->irq_applied = n;
                        n[d->n_irq_applied++] = (IrqApplied) { .irq = irq, .original = strdup(kv[i + 1]) };
                } else {
                        log_device_warning_errno(d->name, EINVAL, "Stored original \"%s\" unknown, ignoring", kv[i]);
                        continue;
                }
                if (earlier_run)
                        log_device_info(d->name, "Original %s=%s recorded by an earlier run will be restored on stop",
                                        kv[i], kv[i + 1]);
                else
                        log_device_debug(d->name, "Original %s=%s recorded before the disk was last removed, kept",
                                         kv[i], kv[i + 1]);
        }
        if (kv && earlier_run)
                (void) strv_extend(&m->originals_seen, key);
}

/* A disk just added: its identity checked against the others', then what is stored for it. */
static void load_stored(Manager *m, Device *d) {
        check_identity(m, d);
        load_overrides(m, d);
        load_originals(m, d);
}

static void waiters_check(Manager *m);
static void manager_refresh(Manager *m, Device *d, bool irqs, bool evaluate);
static void manager_update_verify_timer(Manager *m);
static void stop_check(Manager *m);
static int manager_ready_check(Manager *m);

/*
 * Apply d's plan: decided here, written by the writer's workers; the run ends in
 * on_apply_finished(). A disk whose run is in progress applies again when it ends.
 */
static void manager_apply(Manager *m, Device *d) {
        if (m->mode == MODE_OFF || m->stopping)
                return;
        if (d->run.active) {
                d->run.again = true;
                return;
        }
        ApplyOptions o = { .dry_run = m->mode == MODE_DRY_RUN, .reassert = m->config.reassert };
        (void) apply_start(&m->applier, d, &o);
}

/* Put d's originals back (now, or when its run in progress ends). */
static void manager_restore_device(Manager *m, Device *d) {
        if (d->run.active)
                d->run.restore_after = true;
        else if (apply_has_originals(d))
                (void) apply_restore_start(&m->applier, d);
}

static void on_apply_finished(Device *d, void *userdata) {
        Manager *m = userdata;
        bool again = d->run.again, event = d->run.event_pending, restore_after = d->run.restore_after;

        d->run.again = d->run.event_pending = d->run.restore_after = false;
        if (d->run.restore) {
                m->restore_count += d->run.written;
                m->restore_failed = m->restore_failed || d->run.error < 0 || d->run.failed;
                m->restore_counts.restored += d->run.written;
                m->restore_counts.failed += d->run.failed;
                m->restore_counts.left += d->run.left;
        }
        if (d->run.written > 0 || d->run.restore)
                persist_originals(m, d);
        if (d->run.written > 0 && d->facts)
                manager_refresh(m, d, d->run.written_knobs & ((1u << KNOB_IRQ_AFFINITY) | (1u << KNOB_NIC_IRQ_AFFINITY) | (1u << KNOB_XPS)), true); /* facts/, explain: what the kernel has now */
        fuse_fs_invalidate_disk(m->fuse, d->name);      /* applied/: the outcomes */
        if (m->started && !m->batch)
                manager_update_status(m);

        /* what came in while the disk's write was in flight; d may be gone after it */
        if ((m->stopping || restore_after) && !d->run.restore)
                manager_restore_device(m, d);   /* (the plan is not applied again when stopping) */
        else if (event || d->vanished) {
                /* a vanished disk: gone (removed now) or back as a new disk (added afresh) */
                _cleanup_free_ char *name = strdup(d->name);
                if (name)
                        manager_device_event(m, name, false);
        } else if (again)
                manager_apply(m, d);

        waiters_check(m);
        (void) manager_ready_check(m);
        stop_check(m);
}

static void on_apply_submit(Device *d, void *userdata) {
        Manager *m = userdata;
        if (!d->run.restore)
                persist_originals(m, d);
        fuse_fs_invalidate_disk(m->fuse, d->name);      /* applied/<knob>: pending */
}

static void on_apply_timeout(Device *d, void *userdata) {
        Manager *m = userdata;
        fuse_fs_invalidate_disk(m->fuse, d->name);      /* applied/<knob>: timeout */
        if (m->started)
                manager_update_status(m);
        waiters_check(m);
        (void) manager_ready_check(m);
}

/* True when name has no run in progress, or only one whose write passed its deadline. */
static bool disk_settled(Manager *m, const char *name) {
        Device *d = registry_get(&m->registry, name);
        return !d || !d->run.active || d->run.timed_out;
}

static int waiter_result(Manager *m, const Waiter *w) {
        if (!w->restore)
                return 0;
        m->restored = m->restore_count;
        return m->restore_failed ? -EIO : 0;
}

static void waiters_check(Manager *m) {
        for (Waiter **p = &m->waiters, *w; (w = *p);) {
                bool settled = true;
                STRV_FOREACH(n, w->disks)
                        settled = settled && disk_settled(m, *n);
                if (!settled) {
                        p = &w->next;
                        continue;
                }
                *p = w->next;
                fuse_fs_write_done(w->pending, waiter_result(m, w));
                strv_free(w->disks);
                free(w);
        }
}

static void waiters_release_all(Manager *m) {
        while (m->waiters) {
                Waiter *w = m->waiters;
                m->waiters = w->next;
                fuse_fs_write_done(w->pending, waiter_result(m, w));
                strv_free(w->disks);
                free(w);
        }
}

/*
 * Answer a FUSE write now (returns r) or when every disk (one, or all when device is NULL)
 * has settled (returns FUSE_FS_WRITE_DEFERRED; the waiter owns pending).
 */
static int reply_when_settled(Manager *m, FuseFsWrite *pending, const char *device, bool restore, int r) {
        _cleanup_strv_free_ char **disks = NULL;
        if (r < 0 || !pending)
                return r;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                const char *n = m->registry.devices[i]->name;
                if ((!device || streq(device, n)) && !disk_settled(m, n) && strv_extend(&disks, n) < 0)
                        return r;       /* ENOMEM: answer now */
        }
        if (!disks)
                return restore ? waiter_result(m, &(Waiter) { .restore = true }) : r;
        Waiter *w = calloc(1, sizeof(Waiter));
        if (!w)
                return r;
        *w = (Waiter) { .pending = pending, .disks = TAKE_PTR(disks), .restore = restore, .next = m->waiters };
        m->waiters = w;
        return FUSE_FS_WRITE_DEFERRED;
}

/* Policy for d's facts, deciding the elevator from the one blkmqd found (its recorded original). */
static int evaluate_policy(Manager *m, Device *d, Plan *ret) {
        int r = free_and_strdup(&d->facts->elevator_before, d->applied[KNOB_ELEVATOR].original);
        if (r < 0)
                return r;
        r = policy_evaluate(d->facts, &m->config.policy, &d->overrides, ret);
        if (r >= 0 && (r = net_arbitrate(&m->registry, d, ret)) < 0)    /* one disk places a NIC */
                plan_done(ret);
        return r;
}

/*
 * After blkmqd wrote, put something back, or noticed someone else's change: the facts are
 * read again (every fact a write can change, device_refresh_knobs()) and the explain lines
 * computed again from them, so facts/, explain, metrics and blkmqctl show what the kernel
 * has now. The decisions are the same (the elevator is decided from the one blkmqd found):
 * nothing is applied and nothing logged again.
 */
static void manager_refresh(Manager *m, Device *d, bool irqs, bool evaluate) {
        Plan plan;
        int r = device_refresh_knobs(m->hostfs, d->facts, irqs);
        bool changed = r > 0;
        if (r == 0 && !evaluate)
                return;                 /* nothing changed (a verify of a quiet disk): the explain stands */
        if (r >= 0)
                r = evaluate_policy(m, d, &plan);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to read the disk's state again after a change, ignoring: %m");
                return;
        }
        plan_done(&d->plan);
        d->plan = plan;
        /* the elevator's tunables (iosched/) come and go with the elevator */
        if (changed && m->fuse && fuse_fs_device_updated(m->fuse, d) < 0)
                log_device_warning_errno(d->name, ENOMEM, "Failed to update FUSE tree, ignoring: %m");
}

/* Evaluate and apply d with the facts it has. */
static void manager_evaluate(Manager *m, Device *d, bool log_decisions) {
        Plan plan;
        int r = evaluate_policy(m, d, &plan);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to evaluate policy, ignoring: %m");
                return;
        }
        /* Log decisions that are new, so a re-evaluation does not repeat them. */
        char f_class[64];
        snprintf(f_class, sizeof(f_class), "BLKMQD_CLASS=%s", disk_class_to_string(plan.class));
        STRV_FOREACH(line, plan.explain) {
                if (!log_decisions && strv_contains(d->plan.explain, *line))
                        continue;
                const char *rule = strstr(*line, "(rule ");
                char f_rule[96] = "BLKMQD_RULE=";
                if (rule)
                        snprintf(f_rule, sizeof(f_rule), "BLKMQD_RULE=%.*s", (int) strcspn(rule + 6, ")"), rule + 6);
                const char *fields[] = { f_class, f_rule, NULL };
                /* DEVICE= for journalctl; log_full() prefixes the name, the line starts with it */
                const char *text = *line;
                size_t nl = strlen(d->name);
                if (strncmp(text, d->name, nl) == 0 && text[nl] == ':' && text[nl + 1] == ' ')
                        text += nl + 2;
                log_full(LOG_INFO, 0, d->name, BLKMQD_MESSAGE_DECISION, fields, __FILE__, __LINE__, __func__, "%s", text);
        }
        plan_done(&d->plan);
        d->plan = plan;

        manager_apply(m, d);
        if (m->fuse) {
                r = fuse_fs_device_updated(m->fuse, d);
                if (r < 0)
                        log_device_warning_errno(d->name, r, "Failed to update FUSE tree, ignoring: %m");
        }
}

void manager_device_event(Manager *m, const char *name, bool removed) {
        _cleanup_(disk_facts_freep) DiskFacts *facts = NULL;
        /* a single event: machine-wide inputs read for it alone, but the module tree's
         * elevators from the manager's cache while the tree is unchanged */
        _cleanup_(gather_cache_done) GatherCache single = { .module_tree = &m->module_tree };
        Device *d;
        int r;

        if (!manager_matches(m, name))
                return;
        if (!disk_name_is_valid(name)) {
                /* never silently: a disk the kernel has and blkmqd does not show needs a why */
                if (!removed)
                        log_warning_errno(EINVAL, "Disk \"%s\" not managed: its name is no usable file name (empty, \".\", "
                                          "\"..\", longer than 31 bytes or containing \"/\"), ignoring", name);
                return;
        }

        /* A disk whose write is in flight is not read again until it returns (its queue
         * attributes may wait for the same lock): the event is taken up then. */
        d = registry_get(&m->registry, name);
        if (d && apply_busy(d) && !removed) {
                d->run.event_pending = true;
                return;
        }
        if (m->stopping && !removed)
                return;

        if (removed) {
                manager_remove_device(m, name);
                goto finish;
        }

        r = device_gather_cached(m->hostfs, name, m->batch ?: &single, &facts);
        if (r == -ENOENT || r == -ENOMEDIUM || r == -EINVAL) {
                if (r == -ENOMEDIUM)
                        log_device_debug(name, "No medium (size 0), not listed");
                manager_remove_device(m, name);
                goto finish;
        }
        if (r < 0) {
                log_device_warning_errno(name, r, "Failed to gather facts, ignoring: %m");
                return;
        }

        /* Same name, another disk (a loop device re-bound to another file, or removed and
         * added again while its events were debounced: a new sysfs directory): start afresh. */
        d = registry_get(&m->registry, name);
        bool new_instance = d && d->facts && facts->sysfs_ino && d->facts->sysfs_ino && facts->sysfs_ino != d->facts->sysfs_ino;
        if (d && d->vanished && !new_instance) {
                /* still the disk that went away (its removal in progress): its remove uevent ends it */
                log_device_debug(name, "Vanished, waiting for its removal");
                return;
        }
        if (d && d->facts && (!streq_ptr(d->facts->identity, facts->identity) || new_instance))
                manager_remove_device(m, name);

        r = registry_add(&m->registry, name, &d);
        if (r < 0) {
                log_device_warning_errno(name, r, "Failed to add disk, ignoring: %m");
                return;
        }
        bool added = r > 0;

        disk_facts_free(d->facts);
        d->facts = TAKE_PTR(facts);
        d->generation++;
        if (added && m->batch) {
                /* stored settings wait for the batch's end: a disk later in it may have the same
                 * identity, and then neither may get them */
                if (strv_extend(&m->batch_added, name) >= 0)
                        goto finish;
        }
        if (added)
                load_stored(m, d);

        log_device_debug(name, "Evaluating (facts gathered%s)", added ? ", new disk" : "");
        manager_evaluate(m, d, added);
finish:
        if (m->fuse && !m->batch)       /* a batch updates hosts/ once at its end */
                (void) fuse_fs_hosts_updated(m->fuse);
        if (m->started) {
                manager_update_modules(m);
                manager_update_status(m);
        }
        /* a disk removed while its write was in flight: that write's return will find no disk
         * and say nothing, so whoever waited for the disk is answered now */
        waiters_check(m);
        stop_check(m);
}

/* Keep originals/module-parameters in step with the runtime module values blkmqd changed. */
static void persist_module_originals(Manager *m) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *joined = NULL;
        if (!m->state)
                return;
        int r = modules_originals(&m->modules, &kv);
        if (r >= 0 && !(joined = strv_join(kv, "\n")))
                r = -ENOMEM;
        if (r >= 0 && streq_ptr(joined, m->module_originals_saved))
                return;         /* unchanged: not rewritten on every uevent */
        if (r >= 0)
                r = state_save(m->state, STATE_ORIGINALS, MODULES_STATE_KEY, kv);
        if (r < 0) {
                log_warning_errno(r, "Failed to persist original module parameters, a restart would lose them: %m");
                return;
        }
        free(m->module_originals_saved);
        m->module_originals_saved = TAKE_PTR(joined);
}

static void manager_update_modules(Manager *m) {
        int r = modules_update(m->hostfs, &m->modules, &m->registry, &m->config.policy,
                               m->mode == MODE_AUTO && m->config.module_params_write);
        persist_module_originals(m);
        if (r >= 0 && m->fuse)
                r = fuse_fs_modules_updated(m->fuse);
        if (r < 0)
                log_warning_errno(r, "Failed to update module parameters, ignoring: %m");
}

static void on_device_event(void *userdata, DeviceAction action, const char *sysname) {
        manager_device_event(userdata, sysname, action == DEVICE_ACTION_REMOVE);
}

/* After a coldplug or reload batch: machine-wide inputs are no longer shared; hosts/ once for all. */
static void manager_batch_end(Manager *m) {
        _cleanup_strv_free_ char **added = TAKE_PTR(m->batch_added);

        m->batch = NULL;
        STRV_FOREACH(n, added) {                /* every collision known before anything is loaded */
                Device *d = registry_get(&m->registry, *n);
                if (d)
                        check_identity(m, d);
        }
        STRV_FOREACH(n, added) {
                Device *d = registry_get(&m->registry, *n);
                if (!d || !d->facts)
                        continue;
                load_overrides(m, d);
                load_originals(m, d);
                manager_evaluate(m, d, true);
        }
        if (m->fuse)
                (void) fuse_fs_hosts_updated(m->fuse);
}

/* Every disk again: re-gather (a SIGHUP or reload may follow hardware changes too). */
static void manager_reevaluate_all(Manager *m) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_(gather_cache_done) GatherCache batch = { .module_tree = &m->module_tree };
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (strv_extend(&names, m->registry.devices[i]->name) < 0)
                        return;
        m->batch = &batch;
        STRV_FOREACH(n, names)
                manager_device_event(m, *n, false);
        manager_batch_end(m);
}

int manager_reload(Manager *m) {
        _cleanup_free_ char *error = NULL;
        Config c;

        int r = config_load(m->config_path, &c, &error);
        if (r < 0)
                return log_error_errno(r, "Reload failed, keeping the last good configuration: %s", error ?: strerror(-r));
        config_done(&m->config);
        m->config = c;
        m->reloads++;
        m->mode = effective_mode(&m->config, m->cli_dry_run);
        m->rate_window_usec = m->config.rate_window_usec;
        if (m->started)
                manager_update_verify_timer(m);
        log_info("Configuration reloaded from \"%s\"%s (mode %s)", m->config_path,
                 access(m->config_path, F_OK) < 0 ? ": the file does not exist, shipped defaults (and drop-ins) in force" : "",
                 manager_mode_to_string(m->mode));
        manager_reevaluate_all(m);
        return 0;
}

static int render_control(void *userdata, NodeTypeRef type, char **ret) {
        Manager *m = userdata;
        int r;

        switch (type) {
        case NODE_VERSION: {
                _cleanup_free_ char *kernel = NULL;
                (void) hostfs_kernel_release(m->hostfs, &kernel);
                bool debugfs = hostfs_debugfs_available(m->hostfs, NULL);
                r = asprintf(ret, "blkmqd %s kernel %s source %s debugfs %s stats %s\n",
                             BLKMQD_VERSION, kernel ?: "unknown",
                             m->monitor ? udev_monitor_source(m->monitor) : "fixture",
                             debugfs ? "yes" : "no", stats_providers(m->stats));
                break;
        }
        case NODE_MODE:
                r = asprintf(ret, "%s\n", manager_mode_to_string(m->mode));
                break;
        case NODE_RELOAD:
                r = asprintf(ret, "%u\n", m->reloads);
                break;
        case NODE_RESTORE:
                r = asprintf(ret, "%u\n", m->restored);
                break;
        default:
                return -ENOENT;
        }
        return r < 0 ? -ENOMEM : 0;
}

/* The written bytes as a string: one trailing newline dropped; -EINVAL for NUL, empty, too long. */
static int control_value(const char *data, size_t len, char *buf, size_t size) {
        if (len > 0 && data[len - 1] == '\n')
                len--;
        if (len == 0 || len >= size || memchr(data, 0, len))
                return -EINVAL;
        memcpy(buf, data, len);
        buf[len] = 0;
        return 0;
}

static int write_policy(Manager *m, const char *device, int knob, const char *data, size_t len) {
        Device *d = registry_get(&m->registry, device);
        _cleanup_free_ char *v = NULL, *text = NULL, *online_text = NULL;
        _cleanup_(cpuset_done) CpuSet online = {};
        const char *kname = knob == _KNOB_MAX ? "enabled" : knob_to_string(knob);
        int r;

        if (!d || !d->facts)
                return -ENOENT;

        if (knob == KNOB_IRQ_AFFINITY &&
            hostfs_read(m->hostfs, HOSTFS_SYSFS, "devices/system/cpu/online", &online_text) >= 0)
                (void) cpuset_parse(online_text, &online);      /* also named in the refusal message */

        r = policy_override_validate(knob, data, len, d->facts, online.n_words ? &online : NULL, &v);
        if (r < 0) {
                size_t shown = len > 0 && data[len - 1] == '\n' ? len - 1 : len;
                text = strndup(data, MIN(shown, (size_t) 64));
                if (text)
                        for (char *c = text; *c; c++)
                                if (*c == '\n')
                                        *c = ' ';
                _cleanup_free_ char *expected = policy_override_expected(knob, d->facts, online.n_words ? &online : NULL);
                return log_device_full(LOG_WARNING, r, device, NULL, NULL,
                                       "policy/%s: rejected \"%s\"%s: %m; expected %s", kname, text ?: "",
                                       shown > 64 ? "..." : "", strna(expected));
        }

        if (knob == _KNOB_MAX) {
                d->overrides.enabled_set = v;
                d->overrides.disabled = v && streq(v, "0");
        } else {
                r = policy_overrides_set(&d->overrides, knob, v);
                if (r < 0)
                        return r;
        }
        log_device_info(device, "policy/%s set to %s by the administrator", kname, v ?: "auto");
        /* decide from what the kernel has now (a scheduler write sends no uevent); not while
         * the disk's own write is in flight: its run ends in a refresh anyway */
        if (!apply_busy(d)) {
                r = device_refresh_knobs(m->hostfs, d->facts, true);
                if (r < 0)
                        return r;
        }

        if (m->state && d->facts->identity && d->identity_shared)
                log_device_full(LOG_NOTICE, 0, device, NULL, NULL, "policy/%s not stored: identity %s is shared with another disk, the setting "
                                  "lasts until %s is removed", kname, d->facts->identity, device);
        else if (m->state && d->facts->identity) {
                r = state_save_overrides(m->state, d->facts->identity, &d->overrides);
                if (r < 0)
                        log_device_warning_errno(device, r, "Failed to persist overrides, they last until restart: %m");
        }
        manager_evaluate(m, d, false);
        manager_update_modules(m);
        manager_update_status(m);
        return 0;
}

/* A write to policy/iosched/<elevator>/<tunable>: validated like every policy file, persisted, applied. */
static int write_policy_iosched(Manager *m, const char *device, IoschedTunable t, const char *data, size_t len) {
        Device *d = registry_get(&m->registry, device);
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        _cleanup_free_ char *v = NULL, *text = NULL;
        int r;

        if (!d || !d->facts || !info)
                return -ENOENT;
        r = iosched_override_validate(t, data, len, d->facts, &v);
        if (r < 0) {
                size_t shown = len > 0 && data[len - 1] == '\n' ? len - 1 : len;
                text = strndup(data, MIN(shown, (size_t) 64));
                if (text)
                        for (char *c = text; *c; c++)
                                if (*c == '\n')
                                        *c = ' ';
                _cleanup_free_ char *expected = iosched_tunable_expected(t);
                const char *why = r != -EINVAL ? "" :
                        disk_facts_elevator_source(d->facts, info->elevator) == ELEVATOR_UNAVAILABLE ? " (the disk cannot run this elevator)" :
                        streq_ptr(d->facts->elevator, info->elevator) && !disk_facts_iosched(d->facts, info->name) ?
                                " (this kernel's elevator has no such file)" : "";
                return log_device_full(LOG_WARNING, r, device, NULL, NULL,
                                       "policy/iosched/%s/%s: rejected \"%s\"%s: %m%s; expected %s", info->elevator, info->name,
                                       text ?: "", shown > 64 ? "..." : "", why, strna(expected));
        }
        r = policy_overrides_set_iosched(&d->overrides, t, v);
        if (r < 0)
                return r;
        log_device_info(device, "policy/iosched/%s/%s set to %s by the administrator", info->elevator, info->name, v ?: "auto");
        if (!apply_busy(d)) {
                r = device_refresh_knobs(m->hostfs, d->facts, true);
                if (r < 0)
                        return r;
        }
        if (m->state && d->facts->identity && d->identity_shared)
                log_device_full(LOG_NOTICE, 0, device, NULL, NULL, "policy/iosched/%s/%s not stored: identity %s is shared with another "
                                "disk, the setting lasts until %s is removed", info->elevator, info->name, d->facts->identity, device);
        else if (m->state && d->facts->identity) {
                r = state_save_overrides(m->state, d->facts->identity, &d->overrides);
                if (r < 0)
                        log_device_warning_errno(device, r, "Failed to persist overrides, they last until restart: %m");
        }
        manager_evaluate(m, d, false);
        manager_update_status(m);
        return 0;
}

static int on_fuse_write(void *userdata, NodeTypeRef type, const char *device, int knob, const char *data, size_t len, off_t offset,
                         FuseFsWrite *pending) {
        Manager *m = userdata;
        char v[32];
        int r;

        if (offset != 0 && type == NODE_POLICY_IOSCHED_TUNABLE) {
                const IoschedTunableInfo *i = iosched_tunable_info(knob);
                return log_full(LOG_WARNING, EINVAL, device, NULL, NULL, __FILE__, __LINE__, __func__,
                                "policy/iosched/%s/%s: write at offset %jd rejected: a value must be written in one write() at offset 0",
                                i ? i->elevator : "?", i ? i->name : "?", (intmax_t) offset);
        }
        if (offset != 0) {
                const char *file = type == NODE_POLICY_KNOB ? (knob == _KNOB_MAX ? "policy/enabled" : NULL) :
                                   type == NODE_MODE ? "mode" : type == NODE_RELOAD ? "reload" : "restore";
                return log_full(LOG_WARNING, EINVAL, device, NULL, NULL, __FILE__, __LINE__, __func__,
                                "%s%s: write at offset %jd rejected: a value must be written in one write() at offset 0",
                                file ? file : "policy/", file ? "" : knob_to_string(knob), (intmax_t) offset);
        }

        if (type == NODE_POLICY_KNOB)
                return reply_when_settled(m, pending, device, false, write_policy(m, device, knob, data, len));
        if (type == NODE_POLICY_IOSCHED_TUNABLE)
                return reply_when_settled(m, pending, device, false, write_policy_iosched(m, device, knob, data, len));

        r = control_value(data, len, v, sizeof(v));
        if (r < 0)
                return log_warning_errno(r, "Control write rejected: empty, too long or not text");

        switch (type) {
        case NODE_MODE: {
                ManagerMode mode = manager_mode_from_string(v);
                if (mode < 0)
                        return log_warning_errno(EINVAL, "mode: rejected \"%s\": expected auto, dry-run or off", v);
                if (mode == m->mode)
                        return 0;
                log_info("mode %s -> %s", manager_mode_to_string(m->mode), v);
                m->mode = mode;
                manager_reevaluate_all(m);
                manager_update_status(m);
                return reply_when_settled(m, pending, NULL, false, 0);
        }
        case NODE_RELOAD:
                if (!streq(v, "1"))
                        return log_warning_errno(EINVAL, "reload: rejected \"%s\": write 1", v);
                return reply_when_settled(m, pending, NULL, false, manager_reload(m));
        case NODE_RESTORE: {
                if (!streq(v, "1"))
                        return log_warning_errno(EINVAL, "restore: rejected \"%s\": write 1", v);
                int k = modules_restore(m->hostfs, &m->modules);
                persist_module_originals(m);
                m->restore_count = k > 0 ? k : 0;
                m->restore_failed = k < 0;
                m->restore_counts = (RestoreCounts) { .restored = m->restore_count, .failed = k < 0 };
                m->mode = MODE_OFF;
                /* every disk: now, or when its write in flight returned (restore_after) */
                for (size_t i = 0; i < m->registry.n_devices; i++)
                        manager_restore_device(m, m->registry.devices[i]);
                m->restored = m->restore_count;
                char tail[128];
                log_info("restore: %u original value(s) put back%s%s; mode is now off", m->restore_count,
                         restore_counts_tail(&m->restore_counts, tail, sizeof(tail)),
                         writer_pending(m->writer) ? " so far, the rest when their writes return" : "");
                manager_reevaluate_all(m);
                manager_update_status(m);
                return reply_when_settled(m, pending, NULL, true, 0);
        }
        default:
                return -EACCES;
        }
}

/* The parsed /proc/interrupts, re-read at most every 100 ms (a metrics scrape reads it once). */
static const ProcInterrupts *manager_interrupts(Manager *m) {
        uint64_t now = stats_now_usec();
        if (m->interrupts_usec && now - m->interrupts_usec < 100000)
                return &m->interrupts;
        _cleanup_free_ char *text = NULL;
        proc_interrupts_done(&m->interrupts);
        m->interrupts_usec = 0;
        if (hostfs_read_kept(m->hostfs, HOSTFS_PROCFS, "interrupts", 0, &text) < 0 ||
            proc_interrupts_parse(text, &m->interrupts) < 0)
                return NULL;
        m->interrupts_usec = now;
        return &m->interrupts;
}

static int on_load_hctx_details(void *userdata, const char *device) {
        Manager *m = userdata;
        Device *d = registry_get(&m->registry, device);
        if (!d || !d->facts)
                return -ENOENT;
        return device_gather_hctx_details(m->hostfs, d->facts);
}

static int on_read_hctx(void *userdata, const char *device, size_t pos, bool irq_count, HctxReading *ret) {
        Manager *m = userdata;
        Device *d = registry_get(&m->registry, device);
        int r;

        if (!d || !d->facts || pos >= d->facts->n_hctx)
                return -ENOENT;
        r = device_gather_hctx_details(m->hostfs, d->facts);    /* cpu_list, queue vector */
        if (r < 0)
                return r;
        if (d->n_history_hctx != d->facts->n_hctx) {
                free(d->history);
                d->history = calloc(d->facts->n_hctx * STATS_HISTORY, sizeof(StatSample));
                d->n_history_hctx = d->history ? d->facts->n_hctx : 0;
        }

        HctxReading rd = {};
        r = stats_read_hctx(m->stats, d->facts, pos, irq_count, apply_busy(d), irq_count ? manager_interrupts(m) : NULL, &rd.stats);
        if (r < 0)
                return r;
        if (d->history) {
                StatSample cur;
                uint32_t counters = 0;
                for (StatId i = 0; i < _STAT_MAX; i++)
                        if (stat_id_is_counter(i))
                                counters |= UINT32_C(1) << i;
                hctx_stats_to_sample(&rd.stats, &cur);
                stats_rates(&d->history[pos * STATS_HISTORY], &cur, _STAT_MAX, counters, m->rate_window_usec, &rd.rates);
        }
        *ret = rd;
        return 0;
}

static int on_read_disk_stat(void *userdata, const char *device, DiskStat *ret, StatRates *ret_rates) {
        Manager *m = userdata;
        _cleanup_free_ char *text = NULL;
        char path[64 + 32];
        Device *d = registry_get(&m->registry, device);
        DiskStat st;

        if (!d)
                return -ENOENT;
        snprintf(path, sizeof(path), "block/%s/stat", device);
        int r = hostfs_read_kept(m->hostfs, HOSTFS_SYSFS, path, 0, &text);
        if (r < 0)
                return r;
        r = disk_stat_parse(text, &st);
        if (r < 0)
                return r;
        _cleanup_free_ char *inflight = NULL;
        snprintf(path, sizeof(path), "block/%s/inflight", device);
        st.has_inflight = hostfs_read_kept(m->hostfs, HOSTFS_SYSFS, path, 0, &inflight) >= 0 &&
                          disk_inflight_parse(inflight, &st.inflight_read, &st.inflight_write) >= 0;

        StatSample cur = { .usec = stats_now_usec() };
        uint32_t counters = 0;
        for (unsigned i = 0; i < st.n; i++) {
                cur.v[i] = st.v[i];
                cur.valid |= UINT32_C(1) << i;
                if (i != DISK_STAT_IN_FLIGHT)
                        counters |= UINT32_C(1) << i;
        }
        if (!d->disk_history && !(d->disk_history = calloc(STATS_HISTORY, sizeof(StatSample))))
                return -ENOMEM;
        stats_rates(d->disk_history, &cur, st.n, counters, m->rate_window_usec, ret_rates);
        *ret = st;
        return 0;
}

static int on_read_host_busy(void *userdata, const char *host, uint64_t *ret) {
        Manager *m = userdata;
        char path[128];
        snprintf(path, sizeof(path), "class/scsi_host/%s/host_busy", host);
        return hostfs_read_u64(m->hostfs, HOSTFS_SYSFS, path, ret);
}

static int on_read_block_softirqs(void *userdata, uint64_t *counts, size_t max, size_t *ret_n) {
        Manager *m = userdata;
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read_kept(m->hostfs, HOSTFS_PROCFS, "softirqs", 0, &text);
        if (r < 0)
                return r;
        return proc_softirqs_block_parse(text, counts, max, ret_n);
}

static void on_scrape(void *userdata, bool begin) {
        stats_scrape(((Manager *) userdata)->stats, begin);
}

static int on_read_bpf_missed(void *userdata, StatsBpfMissed *ret) {
        Manager *m = userdata;
        return stats_bpf_missed(m->stats, ret);
}

static void on_verify(void *userdata, const char *device) {
        Manager *m = userdata;
        Device *d = registry_get(&m->registry, device);
        ApplyOptions o = { .verify_only = true, .reassert = m->config.reassert };

        /* never while the disk's own write is in flight (its run ends in a refresh) */
        if (!d || !d->facts || apply_busy(d))
                return;
        int n = d->plan.manage && m->mode != MODE_OFF ? apply_device(m->hostfs, d, &o) : 0;
        if (n > 0)
                persist_originals(m, d);
        /* a verify is a look at the kernel: facts/ and explain follow what it has now, also
         * when someone changed a value blkmqd never wrote (no uevent comes for that) */
        manager_refresh(m, d, n > 0, n > 0);
        fuse_fs_invalidate_disk(m->fuse, d->name);
}

/* After a verify: something an apply would act on (a failed write whose backoff may have
 * passed; with Reassert=yes a value someone else changed). The apply decides the backoff. */
static bool verify_needs_apply(const Device *d, bool reassert) {
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (d->applied[k].state == APPLY_ERROR || (reassert && d->applied[k].state == APPLY_EXTERNAL))
                        return true;
        /* an elevator switch (away and back, by anyone) reset a tunable or nr_requests blkmqd wrote */
        if (d->iosched_reset)
                return true;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (d->iosched[t].state == APPLY_ERROR || (reassert && d->iosched[t].state == APPLY_EXTERNAL))
                        return true;
        return false;
}

/*
 * The periodic verify (VerifySec=): the kernel sends no uevent when someone else writes a queue
 * attribute or an IRQ's affinity, so without it a change is only noticed when someone reads
 * applied/. Every disk blkmqd manages is looked at with a verify that writes nothing (a few
 * reads); only a disk with something to do is applied again (mode auto): a failed write is
 * retried, and with Reassert=yes a changed value rewritten, both with backoff.
 */
static void manager_verify_all(Manager *m) {
        size_t n = 0, applied = 0;

        if (m->mode == MODE_OFF || m->stopping)
                return;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (!d->facts || !d->plan.manage || d->run.active)
                        continue;
                n++;
                on_verify(m, d->name);
                if (m->mode == MODE_AUTO && !d->run.active && verify_needs_apply(d, m->config.reassert)) {
                        applied++;
                        manager_apply(m, d);
                }
        }
        log_debug("Periodic verify: %zu disk(s) looked at, %zu applied again", n, applied);
}

static int on_verify_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        manager_verify_all(m);
        if (m->config.verify_usec > 0) {
                (void) sd_event_source_set_time_relative(s, m->config.verify_usec);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* Arm, re-arm or remove the periodic verify after a (re)load of the configuration. */
static void manager_update_verify_timer(Manager *m) {
        uint64_t usec = m->config.verify_usec;
        int r;

        if (usec == 0) {
                m->verify_timer = sd_event_source_disable_unref(m->verify_timer);
                return;
        }
        /* accuracy: a tenth of the interval, so the wake-up can be coalesced with others */
        if (!m->verify_timer)
                r = sd_event_add_time_relative(m->event, &m->verify_timer, CLOCK_MONOTONIC, usec, usec / 10, on_verify_timer, m);
        else {
                r = sd_event_source_set_time_relative(m->verify_timer, usec);
                if (r >= 0)
                        r = sd_event_source_set_time_accuracy(m->verify_timer, usec / 10);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->verify_timer, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_warning_errno(r, "Cannot set up the periodic verify (VerifySec=), changes by others are noticed "
                                  "only when applied/ is read: %m");
}

static const char *on_kernel_release(void *userdata) {
        Manager *m = userdata;
        return m->kernel_release;
}

static const char *on_providers(void *userdata) {
        Manager *m = userdata;
        return stats_providers(m->stats);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        (void) sd_notify(false, "RELOADING=1");
        log_info("SIGHUP: reloading configuration");
        (void) manager_reload(m);
        (void) sd_notify(false, "READY=1");
        manager_update_status(m);
        return 0;
}

/* Stopping and no disk has a run in progress: leave the loop (manager_free() does the rest). */
static void stop_check(Manager *m) {
        if (!m->stopping)
                return;
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (m->registry.devices[i]->run.active)
                        return;
        (void) sd_event_exit(m->event, 0);
}

static int on_stop_budget(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (d->run.active)
                        log_device_warning_errno(d->name, ETIMEDOUT, "Stopping: a write to the kernel has not returned after %.0f s; "
                                           "exiting without restoring this disk (its originals stay recorded for the next start)",
                                           (double) MANAGER_STOP_BUDGET_USEC / 1e6);
        }
        return sd_event_exit(m->event, 0);
}

/*
 * SIGTERM/SIGINT: put originals back on every disk, with the writes on the workers as usual, so
 * the tree stays served and a write that hangs holds up only its own disk; exit when every disk
 * is done, or after MANAGER_STOP_BUDGET_USEC with what could be restored.
 */
static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (m->stopping)
                return 0;
        m->stopping = true;
        m->stop_done = true;
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring original values");
        m->restore_count = 0;
        m->restore_failed = false;
        m->restore_counts = (RestoreCounts) {};
        for (size_t i = 0; i < m->registry.n_devices; i++)
                manager_restore_device(m, m->registry.devices[i]);
        if (sd_event_add_time_relative(m->event, &m->stop_timer, CLOCK_MONOTONIC, MANAGER_STOP_BUDGET_USEC, 0,
                                       on_stop_budget, m) < 0)
                return sd_event_exit(m->event, 0);
        waiters_check(m);
        stop_check(m);
        return 0;
}

static int coldplug_from_hostfs(Manager *m) {
        _cleanup_strv_free_ char **disks = NULL;
        int r = device_list_disks(m->hostfs, &disks);
        if (r < 0)
                return r;
        STRV_FOREACH(d, disks)
                manager_device_event(m, *d, false);
        return strv_length(disks);
}

int manager_startup(Manager *m) {
        int r;
        sigset_t ss;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_stop_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_stop_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");
        (void) sd_event_set_watchdog(m->event, true);

        r = writer_new(m->event, m->hostfs, 0, &m->writer);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the kernel writer: %m");
        m->applier = (Applier) {
                .hostfs = m->hostfs,
                .writer = m->writer,
                .registry = &m->registry,
                .on_finished = on_apply_finished,
                .on_submit = on_apply_submit,
                .on_timeout = on_apply_timeout,
                .userdata = m,
        };
        if (hostfs_test_hold(m->hostfs))
                log_warning("BLKMQD_TEST_HOLD_WRITE=%s: matching kernel writes are held (fault injection for tests)",
                            hostfs_test_hold(m->hostfs));

        if (hostfs_is_live(m->hostfs)) {
                bool udevd = hostfs_udevd_running(m->hostfs);
                r = udev_monitor_new(m->event, udevd, on_device_event, m, &m->monitor);
                if (r < 0)
                        return log_error_errno(r, "Failed to start the udev monitor: %m");
                log_info("Watching block devices (%s source%s)", udev_monitor_source(m->monitor),
                         udevd ? "" : ": systemd-udevd is not running, using raw kernel uevents");
        } else
                log_info("Root is \"%s\": fixture mode, no udev monitor", hostfs_root(m->hostfs));

        if (m->mountpoint) {
                FuseFsContext ctx = {
                        .registry = &m->registry,
                        .modules = &m->modules,
                        .render_control = render_control,
                        .write = on_fuse_write,
                        .load_hctx_details = on_load_hctx_details,
                        .read_hctx = on_read_hctx,
                        .read_disk_stat = on_read_disk_stat,
                        .read_host_busy = on_read_host_busy,
                        .verify = on_verify,
                        .read_block_softirqs = on_read_block_softirqs,
                        .read_bpf_missed = on_read_bpf_missed,
                        .scrape = on_scrape,
                        .kernel_release = on_kernel_release,
                        .providers = on_providers,
                        .userdata = m,
                };
                /* mounted by manager_ready_check(), once coldplug is done */
                r = fuse_fs_new(m->mountpoint, &ctx, &m->fuse);
                if (r == -EBUSY)
                        return log_error_errno(r, "\"%s\" is already a live FUSE mount (is another blkmqd running?)", m->mountpoint);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up the FUSE tree at \"%s\": %m", m->mountpoint);
        }

        (void) hostfs_kernel_release(m->hostfs, &m->kernel_release);
        r = stats_new(m->hostfs, &m->stats);
        if (r < 0)
                return log_error_errno(r, "Failed to set up statistics: %m");
        m->rate_window_usec = m->config.rate_window_usec;
        modules_init(m->hostfs, &m->modules);
        if (m->state) {
                _cleanup_strv_free_ char **kv = NULL;
                r = state_load(m->state, STATE_ORIGINALS, MODULES_STATE_KEY, &kv);
                if (r >= 0)
                        r = modules_load_originals(&m->modules, kv);
                if (r < 0)
                        log_warning_errno(r, "Stored original module parameters unreadable, ignoring: %m");
        }
        _cleanup_(gather_cache_done) GatherCache batch = { .module_tree = &m->module_tree };
        m->batch = &batch;
        r = m->monitor ? udev_monitor_coldplug(m->monitor) : coldplug_from_hostfs(m);
        manager_batch_end(m);
        if (r < 0)
                return log_error_errno(r, "Coldplug failed: %m");

        m->started = true;
        manager_update_modules(m);
        manager_update_verify_timer(m);
        (void) agents_warn(m->hostfs);  /* udev rules or tuned setting what blkmqd manages */
        m->ready_pending = true;
        return manager_ready_check(m);
}

/*
 * Ready when coldplug's writes have settled (returned, or passed their deadline: then the tree
 * says "timeout (still pending)"): mount the tree, log the start, READY=1. Before, the loop runs
 * but nothing is mounted, so nobody can wait on a tree that cannot answer yet.
 * Returns 0 or -errno of the mount (logged).
 */
static int manager_ready_check(Manager *m) {
        int r;

        if (!m->ready_pending)
                return 0;
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (!disk_settled(m, m->registry.devices[i]->name))
                        return 0;
        m->ready_pending = false;
        if (m->fuse) {
                r = fuse_fs_mount(m->fuse, m->event);
                if (r < 0) {
                        log_error_errno(r, "Failed to mount the FUSE tree at \"%s\": %m", m->mountpoint);
                        (void) sd_event_exit(m->event, r);
                        return r;
                }
        }
        char verify[64] = "periodic verify off (VerifySec=0)";
        if (m->config.verify_usec > 0)
                snprintf(verify, sizeof(verify), "verify every %g s", (double) m->config.verify_usec / 1e6);
        log_full(LOG_INFO, 0, NULL, BLKMQD_MESSAGE_START, NULL, __FILE__, __LINE__, __func__,
                 "blkmqd %s started: %zu disk(s), mode %s%s%s, state in %s, %s", BLKMQD_VERSION, m->registry.n_devices,
                 manager_mode_to_string(m->mode), m->mountpoint ? ", tree at " : "", m->mountpoint ?: "",
                 m->state ? state_dir(m->state) : "(none)", verify);
        manager_update_status(m);
        (void) sd_notify(false, "READY=1");
        return 0;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}
