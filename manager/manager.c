/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The manager's lifecycle: new, startup (signals, writer, udev monitor, FUSE tree, statistics,
 * coldplug, in that order), ready (mount, READY=1), run, reload, stop (restore, then exit),
 * free; and sd_notify STATUS=. The jobs it starts live in their own files
 * (manager-internal.h): pipeline.c, persist.c, control.c, readers.c, verify.c.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "agents.h"
#include "hostfs-net.h"
#include "config.h"
#include "log.h"
#include "macro.h"
#include "manager-internal.h"
#include "strv.h"


/* Seconds a stop waits for restores (writes in flight included) before it exits anyway:
 * well inside TimeoutStopSec= (30 s in units/blkmqd.service.in). */
#define MANAGER_STOP_BUDGET_USEC (15 * UINT64_C(1000000))

/* What of c only the machine can check: an Elevator= name no kernel has (not in tree, and this
 * kernel neither lists nor can load it) fails the load. Returns 0, -EINVAL (*ret_error set), -ENOMEM. */
static int config_check_machine(Manager *m, const Config *c, char **ret_error) {
        _cleanup_strv_free_ char **offered = NULL;
        int r = device_elevators_offered(m->hostfs, &m->module_tree, &offered);
        if (r < 0)
                return r;
        return config_check_elevators(c, offered, ret_error);
}

/*
 * After a load's evaluation: an Elevator= name another kernel has but this one cannot give to a
 * disk it applies to (not listed in its queue/scheduler, not built in, no module) is one warning
 * naming the line and those disks (the policy then takes the next name of the list, or leaves
 * the elevator alone: explain says so per disk).
 */
static void warn_unavailable_elevators(Manager *m) {
        const Config *c = &m->config;
        for (size_t i = 0; i < c->n_elevators; i++) {
                const ConfigElevator *e = &c->elevators[i];
                const DeviceRule *rule = NULL;
                bool later = false;
                /* a later line of the same section replaced this one: only the last counts */
                for (size_t j = i + 1; j < c->n_elevators && !later; j++)
                        later = streq(c->elevators[j].section, e->section) && streq(c->elevators[j].name, e->name);
                if (later)
                        continue;
                if (e->cls >= 0 && !strv_contains(c->policy.classes[e->cls].elevators, e->name))
                        continue;
                for (size_t k = 0; e->cls < 0 && k < c->policy.n_rules; k++)
                        if (streq(c->policy.rules[k].label + strlen("config "), e->section))
                                rule = &c->policy.rules[k];
                if (e->cls < 0 && (!rule || !streq_ptr(rule->settings.elevator, e->name)))
                        continue;
                _cleanup_strv_free_ char **disks = NULL;
                for (size_t k = 0; k < m->registry.n_devices; k++) {
                        const Device *d = m->registry.devices[k];
                        if (!d->facts || !d->facts->elevator_configurable || !d->plan.manage)
                                continue;
                        if (e->cls >= 0 ? d->plan.class != e->cls : !device_rule_matches(rule, d->facts))
                                continue;
                        if (disk_facts_elevator_source(d->facts, e->name) == ELEVATOR_UNAVAILABLE &&
                            strv_extend(&disks, d->name) < 0)
                                return;
                }
                if (!disks)
                        continue;
                _cleanup_free_ char *list = strv_join(disks, ", ");
                log_warning("%s: %s Elevator=%s: this kernel cannot give %s to %s (not listed in queue/scheduler, not built "
                            "in, no module for it)%s", e->where, e->section, e->name, e->name, strna(list),
                            e->cls >= 0 ? ": the next name of the list applies there, or the elevator is left as it is" :
                                          ": the class decides there");
        }
}

static ManagerMode effective_mode(const Config *c, bool cli_dry_run) {
        if (cli_dry_run)
                return MODE_DRY_RUN;
        return c->mode >= 0 ? c->mode : MODE_AUTO;
}

int manager_new(const ManagerOptions *options, Manager **ret) {
        assert(ret);
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
        if (r >= 0)
                r = config_check_machine(m, &m->config, &error);
        if (r < 0) {
                log_error_errno(r, "Bad configuration, not starting: %s", error ?: strerror(-r));
                manager_free(m);
                return r;
        }
        m->reloads = 1;
        m->reload_ok = true;
        m->start_time = m->reload_time = time(NULL);
        m->mode = effective_mode(&m->config, m->cli_dry_run);

        const char *dir = options->state_dir ?: getenv("STATE_DIRECTORY") ?: BLKMQD_DEFAULT_STATEDIR;
        m->default_state = !options->state_dir;
        if (strchr(dir, ':'))           /* StateDirectory= with several entries: the first */
                dir = strndupa(dir, strchr(dir, ':') - dir);
        r = state_open(dir, &m->state);
        if (r == -EBUSY)
                /* a second blkmqd (a --dry-run preview next to the service, say) must not take the
                 * first one's originals for a crashed run's: it would put them back at its stop and
                 * remove them, under the running one */
                log_warning_errno(r, "State directory \"%s\" is in use by another blkmqd: its overrides and originals are "
                                  "neither loaded nor stored by this one (give each blkmqd its own --state-dir)", dir);
        else if (r < 0)
                log_warning_errno(r, "Cannot use state directory \"%s\", overrides will not persist: %m", dir);

        r = sd_event_default(&m->event);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

int manager_restore_all(Manager *m, RestoreCounts *ret) {
        assert(m);
        RestoreCounts c = {};
        int ret_r = 0;
        /* the other tools as they are now: a value one of them left is put back only while it is there */
        _cleanup_(sources_done) Sources now = {};
        if (agents_gather(m->hostfs, &now) < 0)
                log_warning("Failed to read the other tools' configuration at stop: the originals they set are put back as recorded");
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                (void) apply_forget_gone_originals(m->registry.devices[i], &now);
                int r = apply_restore(m->hostfs, m->registry.devices[i], &c);
                manager_persist_originals(m, m->registry.devices[i]);
                if (r < 0 && ret_r >= 0)
                        ret_r = r;      /* -EBUSY: a run in progress on that disk */
        }
        if (ret)
                *ret = c;
        return ret_r < 0 ? ret_r : c.failed ? -EIO : 0;
}

/* ", 2 failed, 1 left as changed by someone else" (empty when both are 0). */
const char *manager_restore_counts_tail(const RestoreCounts *c, char *buf, size_t size) {
        assert(c);
        int n = 0;
        buf[0] = 0;
        if (c->failed)
                n = snprintf(buf, size, ", %u failed", c->failed);
        if (c->left && n >= 0 && (size_t) n < size)
                snprintf(buf + n, size - n, ", %u left as changed by someone else", c->left);
        return buf;
}

/* "FUSE: 1234 request(s) answered since the mount: lookup 10, open 600, release 600, ..." (kinds
 * with none left out): what reading the tree cost, for benchmarks (bench/scale.py) and tests. */
static void manager_log_fuse_requests(Manager *m) {
        char buf[512];
        size_t n = 0;
        uint64_t total = 0;
        if (!m->fuse)
                return;
        buf[0] = 0;
        for (FuseFsRequest r = 0; r < _FUSE_FS_REQUEST_MAX; r++) {
                uint64_t c = fuse_fs_requests(m->fuse, r);
                if (c == 0 || n >= sizeof(buf))
                        continue;
                int k = snprintf(buf + n, sizeof(buf) - n, "%s%s %" PRIu64, total ? ", " : "", fuse_fs_request_to_string(r), c);
                if (k > 0)
                        n += (size_t) k;
                total += c;
        }
        log_info("FUSE: %" PRIu64 " request(s) answered since the mount%s%s", total, total ? ": " : "", buf);
}

int manager_arm_period(Manager *m, sd_event_source **s, uint64_t usec, sd_event_time_handler_t handler) {
        int r;

        assert(m);
        assert(s);
        assert(usec > 0);
        if (!*s)
                return sd_event_add_time_relative(m->event, s, CLOCK_MONOTONIC, usec, usec / 10, handler, m);
        r = sd_event_source_set_time_relative(*s, usec);
        if (r >= 0)
                r = sd_event_source_set_time_accuracy(*s, usec / 10);
        if (r >= 0)
                r = sd_event_source_set_enabled(*s, SD_EVENT_ONESHOT);
        return r;
}

void manager_fuse_context(Manager *m, FuseFsContext *ret) {
        assert(m);
        assert(ret);
        *ret = (FuseFsContext) {
                .registry = &m->registry,
                .modules = &m->modules,
                .render_control = manager_render_control,
                .write = manager_fuse_write,
                .load_hctx_details = manager_load_hctx_details,
                .read_hctx = manager_read_hctx,
                .read_disk_stat = manager_read_disk_stat,
                .read_host_busy = manager_read_host_busy,
                .verify = manager_verify_disk,
                .read_block_softirqs = manager_read_block_softirqs,
                .read_bpf_missed = manager_read_bpf_missed,
                .scrape = manager_scrape,
                .kernel_release = manager_kernel_release,
                .providers = manager_stats_providers,
                .daemon_counters = manager_daemon_counters,
                .userdata = m,
        };
}

static State *abandoned_state;

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->inline_files = true;         /* the loop has ended: saves below are done on this thread */
        if (m->started && !m->stop_done) {
                /* not stopped by a signal (an error): restore here, synchronously */
                (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring original values");
                RestoreCounts c;
                char tail[128];
                for (size_t i = 0; i < m->registry.n_devices; i++)
                        manager_persist_measured(m, m->registry.devices[i]);
                (void) manager_restore_all(m, &c);
                log_full(c.failed ? LOG_WARNING : LOG_INFO, 0, NULL, BLKMQD_MESSAGE_STOP, NULL, __FILE__, __LINE__, __func__,
                         "Stopping: %u original value(s) restored%s", c.restored, manager_restore_counts_tail(&c, tail, sizeof(tail)));
        } else if (m->stop_done) {
                size_t left = 0;
                for (size_t i = 0; i < m->registry.n_devices; i++)
                        left += m->registry.devices[i]->run.active;
                char tail[128];
                log_full(m->restore_failed ? LOG_WARNING : LOG_INFO, 0, NULL, BLKMQD_MESSAGE_STOP, NULL, __FILE__, __LINE__, __func__,
                         "Stopping: %u original value(s) restored%s%s", m->restore_count,
                         manager_restore_counts_tail(&m->restore_counts, tail, sizeof(tail)),
                         left ? ", a disk's write to the kernel did not return in time" : "");
        }
        manager_waiters_release_all(m);
        sd_event_source_disable_unref(m->stop_timer);
        sd_event_source_disable_unref(m->status_timer);
        sd_event_source_disable_unref(m->verify_timer);
        sd_event_source_disable_unref(m->retry_timer);
        sd_event_source_disable_unref(m->speed_events);
        sd_event_source_disable_unref(m->speed_tail);
        strv_free(m->speed_tail_disks);
        sd_event_source_disable_unref(m->mounts_source);
        manager_textfile_done(m);
        /* a write that never returns is abandoned; its worker still uses hostfs (or the state
         * directory): keep them */
        bool keep_hostfs = writer_running(m->writer);
        m->writer = writer_free(m->writer);
        manager_log_fuse_requests(m);
        fuse_fs_free(m->fuse);
        uevent_monitor_free(m->monitor);
        net_monitor_free(m->net_monitor);
        registry_done(&m->registry);
        modules_done(&m->modules);
        stats_free(m->stats);
        proc_interrupts_done(&m->interrupts);
        free(m->kernel_release);
        free(m->boot_id);
        config_done(&m->config);
        sources_done(&m->sources);
        /* a worker may be inside a state directory save that never returns: the State stays
         * too (reachable, the process exits next) */
        if (keep_hostfs && m->persist_pending > 0)
                abandoned_state = m->state;
        else
                state_free(m->state);
        manager_persist_jobs_free(m);   /* the saves the writer dropped: their callbacks never run */
        if (!keep_hostfs)
                hostfs_free(m->hostfs);
        sd_event_unref(m->event);
        strv_free(m->cli_globs);
        strv_free(m->batch_added);
        strv_free(m->originals_seen);
        strv_free(m->measured_seen);
        module_tree_cache_done(&m->module_tree);
        machine_cache_done(&m->machine);
        free(m->module_originals_saved);
        free(m->config_path);
        free(m->mountpoint);
        free(m);
        return NULL;
}

/* STATUS= counts every disk (O(disks)); a coldplug of 16,384 disks ends as many runs, one
 * after another: updates within MANAGER_STATUS_COALESCE_USEC of a send are folded into one
 * send at the end of that window (the first is sent at once). */
#define MANAGER_STATUS_COALESCE_USEC (100 * UINT64_C(1000))

static void status_send(Manager *m);

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        m->status_timer = sd_event_source_disable_unref(m->status_timer);
        if (m->status_due) {
                m->status_due = false;
                manager_update_status(m);       /* sends, and opens the next window */
        }
        return 0;
}

void manager_update_status(Manager *m) {
        if (m->stopping)
                return;         /* "Restoring original values" stays until the exit */
        if (m->status_timer) {
                m->status_due = true;
                return;
        }
        status_send(m);
        if (m->event && sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC, MANAGER_STATUS_COALESCE_USEC,
                                                   MANAGER_STATUS_COALESCE_USEC / 4, on_status_timer, m) < 0)
                m->status_timer = NULL;         /* not coalesced: every update is sent */
}

static void status_send(Manager *m) {
        size_t counts[_DISK_CLASS_MAX], errors = 0;
        char buf[512];
        size_t n = 0;

        registry_count_classes(&m->registry, counts);
        for (size_t i = 0; i < m->registry.n_devices; i++)
                for (Knob k = 0; k < _KNOB_MAX; k++)
                        if (IN_SET(m->registry.devices[i]->applied[k].state, APPLY_ERROR, APPLY_UNSUPPORTED))
                                errors++;

        n += snprintf(buf + n, sizeof(buf) - n, "STATUS=mode %s, %zu disk(s)", manager_mode_to_string(m->mode), m->registry.n_devices);
        for (DiskClass c = 0; c < _DISK_CLASS_MAX && n < sizeof(buf); c++)
                if (counts[c])
                        n += snprintf(buf + n, sizeof(buf) - n, ", %zu %s", counts[c], disk_class_to_string(c));
        if (n < sizeof(buf))
                snprintf(buf + n, sizeof(buf) - n, ", %zu error(s)", errors);
        (void) sd_notify(false, buf);
}

static void on_net_change(void *userdata, const char *what) {
        Manager *m = userdata;
        if (m->started)         /* coldplug gathers everything anyway */
                (void) manager_net_changed(m, what);
}

static void on_device_event(void *userdata, DeviceAction action, const char *sysname) {
        if (action == DEVICE_ACTION_UNINITIALIZED)
                manager_device_uninitialized(userdata, sysname);
        else if (action == DEVICE_ACTION_PARTITIONS || action == DEVICE_ACTION_PARTITION_REMOVE)
                manager_partition_event(userdata, sysname, action == DEVICE_ACTION_PARTITION_REMOVE);
        else
                manager_device_event(userdata, sysname, action == DEVICE_ACTION_REMOVE);
}

/* The admin's other tools, again (start, reload), and one warning for each place that sets
 * what blkmqd manages and was not warned about before under the same DeferTo=. A failure to
 * read them (ENOMEM) leaves none known. */
void manager_gather_sources(Manager *m) {
        assert(m);
        Sources s = {};
        int r = agents_gather(m->hostfs, &s);
        if (r < 0)
                log_warning_errno(r, "Failed to read the configuration of udev rules, tuned and irqbalance, ignoring: %m");
        (void) agents_warn(&s, m->config.policy.defer_to, m->sources_warned ? &m->sources : NULL, m->sources_defer_to);
        sources_done(&m->sources);
        m->sources = s;
        m->sources_warned = true;
        m->sources_defer_to = m->config.policy.defer_to;
}

int manager_reload(Manager *m) {
        _cleanup_free_ char *error = NULL;
        Config c;

        int r = config_load(m->config_path, &c, &error);
        if (r >= 0 && (r = config_check_machine(m, &c, &error)) < 0)
                config_done(&c);
        m->reload_time = time(NULL);
        m->reload_ok = r >= 0;
        if (r < 0) {
                m->reload_failures++;
                manager_metrics_changed(m);
                return log_full(LOG_ERR, r, NULL, BLKMQD_MESSAGE_RELOAD, NULL, __FILE__, __LINE__, __func__,
                                "Reload failed, keeping the last good configuration: %s", error ?: strerror(-r));
        }
        /* a mode set at runtime (the mode file, restore's off) stays until Mode= in the file
         * itself changes: a reload for another key must not turn a restored machine back on */
        ManagerMode was = effective_mode(&m->config, m->cli_dry_run), now = effective_mode(&c, m->cli_dry_run);
        bool keep = m->mode_set_at_runtime && was == now && m->mode != now;
        config_done(&m->config);
        m->config = c;
        m->reloads++;
        if (keep)
                log_info("Mode %s kept: set at runtime (mode file or restore), and Mode= in the configuration did not change "
                         "(write auto to mode to go back to the configuration's %s)",
                         manager_mode_to_string(m->mode), manager_mode_to_string(now));
        else {
                m->mode = now;
                m->mode_set_at_runtime = false;
        }
        m->rate_window_usec = m->config.rate_window_usec;
        if (m->started)
                manager_update_verify_timer(m);
        manager_gather_sources(m);
        if (m->stats)
                manager_speed_config_changed(m);
        if (m->started && !m->ready_pending)
                manager_textfile_update(m);
        log_full(LOG_INFO, 0, NULL, BLKMQD_MESSAGE_RELOAD, NULL, __FILE__, __LINE__, __func__,
                 "Configuration reloaded from \"%s\"%s (mode %s)", m->config_path,
                 access(m->config_path, F_OK) < 0 ? ": the file does not exist, shipped defaults (and drop-ins) in force" : "",
                 manager_mode_to_string(m->mode));
        manager_reevaluate_all(m);
        warn_unavailable_elevators(m);
        manager_metrics_changed(m);
        return 0;
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
void manager_settle_check(Manager *m) {
        manager_waiters_check(m);
        (void) manager_ready_check(m);
        manager_stop_check(m);
}

void manager_stop_check(Manager *m) {
        if (!m->stopping)
                return;
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (m->registry.devices[i]->run.active)
                        return;
        /* the saves of the restores' originals and a module job in flight: returned, or the budget */
        if (m->persist_pending > 0 || m->modules_busy)
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
        if (m->persist_pending > 0)
                log_warning_errno(ETIMEDOUT, "Stopping: %zu save(s) to the state directory \"%s\" have not returned after %.0f s; "
                                  "exiting without them", m->persist_pending, m->state ? state_dir(m->state) : "",
                                  (double) MANAGER_STOP_BUDGET_USEC / 1e6);
        if (m->modules_busy)
                log_warning_errno(ETIMEDOUT, "Stopping: a module parameter write has not returned after %.0f s; exiting without "
                                  "its outcome", (double) MANAGER_STOP_BUDGET_USEC / 1e6);
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
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                manager_persist_measured(m, m->registry.devices[i]);    /* the last window, for the next start */
                manager_restore_device(m, m->registry.devices[i]);
        }
        /* the runtime module parameters blkmqd wrote too (zz-blkmqd.conf stays: a boot-time setting) */
        manager_restore_modules(m, true);
        if (sd_event_add_time_relative(m->event, &m->stop_timer, CLOCK_MONOTONIC, MANAGER_STOP_BUDGET_USEC, 0,
                                       on_stop_budget, m) < 0)
                return sd_event_exit(m->event, 0);
        manager_waiters_check(m);
        manager_stop_check(m);
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


/* The mount table changed: the root file system's devices are looked up again at the next gather. */
static int on_mounts_changed(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        log_debug("Mount table changed: the root file system's disks are looked up again at the next uevent");
        root_mounts_done(&m->machine.roots);
        return 0;
}

/*
 * Keep the root file system's devices (DiskFacts.root_disk) across uevents while the mount
 * table is unchanged: proc/self/mountinfo polls POLLPRI on a change. Dispatched before a
 * uevent that is pending at the same time. Without the watch (fixture root, or it failed)
 * every gather reads mountinfo as before.
 */
static void watch_mounts(Manager *m) {
        int fd = hostfs_open_mounts_watch(m->hostfs), r = fd;
        if (fd == -EOPNOTSUPP)
                return;
        if (r >= 0) {
                r = sd_event_add_io(m->event, &m->mounts_source, fd, EPOLLPRI, on_mounts_changed, m);
                if (r >= 0)
                        r = sd_event_source_set_io_fd_own(m->mounts_source, true);
                if (r < 0) {
                        m->mounts_source = sd_event_source_disable_unref(m->mounts_source);
                        close(fd);      /* owned by no source */
                }
        }
        if (r >= 0 && (r = sd_event_source_set_priority(m->mounts_source, SD_EVENT_PRIORITY_IMPORTANT)) < 0)
                m->mounts_source = sd_event_source_disable_unref(m->mounts_source);     /* closes fd */
        if (r < 0) {
                log_debug_errno(r, "Cannot watch the mount table, the root disk is looked up at every uevent: %m");
                return;
        }
        m->machine.mounts_watched = true;
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
                .on_finished = manager_on_apply_finished,
                .on_submit = manager_on_apply_submit,
                .on_timeout = manager_on_apply_timeout,
                .userdata = m,
        };
        if (hostfs_test_hold(m->hostfs))
                log_warning("BLKMQD_TEST_HOLD_WRITE=%s: matching kernel writes are held (fault injection for tests)",
                            hostfs_test_hold(m->hostfs));

        /* BLKMQD_TEST_UDEV_MONITOR=1: watch uevents with a --root tree too (tests/umockdev: libudev
         * under umockdev's preload sees the tree's sys/ and receives the testbed's uevents) */
        if (hostfs_is_live(m->hostfs) || streq_ptr(secure_getenv("BLKMQD_TEST_UDEV_MONITOR"), "1")) {
                bool udevd = hostfs_udevd_running(m->hostfs);
                r = uevent_monitor_new(m->event, udevd, on_device_event, m, &m->monitor);
                if (r < 0)
                        return log_error_errno(r, "Failed to start the udev monitor: %m");
                log_info("Watching block devices (%s source%s)", uevent_monitor_source(m->monitor),
                         udevd ? "" : ": systemd-udevd is not running, using raw kernel uevents");
        } else
                log_info("Root is \"%s\": fixture mode, no udev monitor", hostfs_root(m->hostfs));

        /* network disks follow their NIC: netlink notifications on a live machine (a fixture's
         * netlink answers are a file: the periodic verify looks at it) */
        if (hostfs_is_live(m->hostfs) && hostfs_net_available(m->hostfs, NULL)) {
                r = net_monitor_new(m->event, on_net_change, m, &m->net_monitor);
                if (r < 0)
                        log_warning_errno(r, "Cannot watch netlink for network changes, network disks follow their NIC only at "
                                          "the periodic verify (VerifySec=): %m");
                else
                        log_debug("Watching netlink: links, routes%s", net_monitor_ethtool(m->net_monitor) ? ", ethtool channels" : "");
        }

        if (m->mountpoint) {
                FuseFsContext ctx;
                manager_fuse_context(m, &ctx);
                /* mounted by manager_ready_check(), once coldplug is done */
                r = fuse_fs_new(m->mountpoint, &ctx, &m->fuse);
                if (r == -EBUSY)
                        return log_error_errno(r, "\"%s\" is already a live FUSE mount (is another blkmqd running?)", m->mountpoint);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up the FUSE tree at \"%s\": %m", m->mountpoint);
                if (fuse_fs_cleared_stale_mount(m->fuse))
                        log_notice("\"%s\" held a dead FUSE mount (\"Transport endpoint is not connected\": a blkmqd that was "
                                   "killed); lazily unmounted", m->mountpoint);
        }

        (void) hostfs_kernel_release(m->hostfs, &m->kernel_release);
        (void) hostfs_boot_id(m->hostfs, &m->boot_id);
        if (m->kernel_release && !(m->machine.kernel_release = strdup(m->kernel_release)))
                return log_error_errno(ENOMEM, "Out of memory: %m");
        /* the command line and UTS_VERSION are the boot's: read once, not at every uevent */
        if (kernel_boot_read(m->hostfs, &m->machine.boot) < 0)
                return log_error_errno(ENOMEM, "Out of memory: %m");
        m->machine.have_boot = true;
        watch_mounts(m);
        r = stats_new(m->hostfs, &m->stats);
        if (r < 0)
                return log_error_errno(r, "Failed to set up statistics: %m");
        manager_speed_config_changed(m);
        m->rate_window_usec = m->config.rate_window_usec;
        modules_init(m->hostfs, &m->modules);
        manager_gather_sources(m);      /* before the first evaluation: whose settings they are */
        manager_load_module_originals(m);
        _cleanup_(gather_cache_done) GatherCache batch = { .module_tree = &m->module_tree, .machine = &m->machine };
        m->batch = &batch;
        r = m->monitor ? uevent_monitor_coldplug(m->monitor) : coldplug_from_hostfs(m);
        manager_batch_end(m);
        if (r < 0)
                return log_error_errno(r, "Coldplug failed: %m");
        warn_unavailable_elevators(m);

        m->started = true;
        manager_update_modules(m);
        manager_update_verify_timer(m);
        m->ready_pending = true;
        return manager_ready_check(m);
}

/*
 * Ready when coldplug's writes have settled (returned, or passed their deadline: then the tree
 * says "timeout (still pending)"): mount the tree, log the start, READY=1. Before, the loop runs
 * but nothing is mounted, so nobody can wait on a tree that cannot answer yet.
 * Returns 0 or -errno of the mount (logged).
 */
int manager_ready_check(Manager *m) {
        int r;

        if (!m->ready_pending)
                return 0;
        /* called as each coldplug run ends: starting where the last look found a run going
         * (they end about in registry order) keeps n disks' coldplug from O(n^2) looks */
        size_t n = m->registry.n_devices;
        for (size_t k = 0; k < n; k++) {
                size_t i = (m->ready_unsettled + k) % n;
                const Device *d = m->registry.devices[i];
                if (d->run.active && !d->run.timed_out) {       /* manager_disk_settled() */
                        m->ready_unsettled = i;
                        return 0;
                }
        }
        if (!manager_persist_settled(m) || !manager_modules_settled(m))
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
        manager_textfile_update(m);
        return 0;
}

int manager_run(Manager *m) {
        assert(m);
        return sd_event_loop(m->event);
}
