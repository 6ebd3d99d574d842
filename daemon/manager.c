/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "apply.h"
#include "config.h"
#include "device.h"
#include "fuse-fs.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "policy.h"
#include "strv.h"
#include "udev-monitor.h"

#define IN_SET_STATE(s) ((s) == APPLY_ERROR || (s) == APPLY_UNSUPPORTED)

struct Manager {
        sd_event *event;
        HostFs *hostfs;
        Registry registry;
        PolicyConfig config;
        UdevMonitor *monitor;
        FuseFs *fuse;
        char *mountpoint;
        char **device_globs;
        bool dry_run;
        bool started;
};

const Registry *manager_registry(const Manager *m) {
        return &m->registry;
}

HostFs *manager_hostfs(const Manager *m) {
        return m->hostfs;
}

int manager_new(const ManagerOptions *options, Manager **ret) {
        Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return -ENOMEM;
        m->dry_run = options->dry_run;
        if (options->device_globs && !(m->device_globs = strv_copy(options->device_globs))) {
                manager_free(m);
                return -ENOMEM;
        }
        if (options->mountpoint && !(m->mountpoint = strdup(options->mountpoint))) {
                manager_free(m);
                return -ENOMEM;
        }

        r = hostfs_new(options->root, &m->hostfs);
        if (r < 0) {
                log_error_errno(r, "Failed to open root \"%s\": %m", options->root ?: "/");
                manager_free(m);
                return r;
        }
        r = policy_config_init_defaults(&m->config);
        if (r >= 0)
                r = sd_event_default(&m->event);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

int manager_restore_all(Manager *m) {
        int ret = 0;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                int r = apply_restore(m->hostfs, m->registry.devices[i]);
                if (r < 0 && ret >= 0)
                        ret = r;
                else if (r > 0 && ret >= 0)
                        ret += r;
        }
        return ret;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        if (m->started) {
                (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring original values");
                int r = manager_restore_all(m);
                log_full(LOG_INFO, 0, NULL, BLKMQD_MESSAGE_STOP, NULL, __FILE__, __LINE__, __func__,
                         "Stopping: %d original value(s) restored%s", r < 0 ? 0 : r, r < 0 ? ", some restores failed" : "");
        }
        fuse_fs_free(m->fuse);
        udev_monitor_free(m->monitor);
        registry_done(&m->registry);
        policy_config_done(&m->config);
        hostfs_free(m->hostfs);
        sd_event_unref(m->event);
        strv_free(m->device_globs);
        free(m->mountpoint);
        free(m);
        return NULL;
}

static bool manager_matches(const Manager *m, const char *name) {
        if (!m->device_globs)
                return true;
        STRV_FOREACH(g, m->device_globs)
                if (fnmatch(*g, name, 0) == 0)
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

        n += snprintf(buf + n, sizeof(buf) - n, "STATUS=%zu disk(s)%s", m->registry.n_devices, m->dry_run ? " (dry-run)" : "");
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
        if (m->fuse)
                fuse_fs_device_removed(m->fuse, name);
        registry_remove(&m->registry, name);
        log_device_info(name, "Disk removed");
}

void manager_device_event(Manager *m, const char *name, bool removed) {
        _cleanup_(disk_facts_freep) DiskFacts *facts = NULL;
        Device *d;
        int r;

        if (!manager_matches(m, name))
                return;

        if (removed) {
                manager_remove_device(m, name);
                goto finish;
        }

        r = device_gather(m->hostfs, name, &facts);
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

        r = registry_add(&m->registry, name, &d);
        if (r < 0) {
                log_device_warning_errno(name, r, "Failed to add disk, ignoring: %m");
                return;
        }
        bool added = r > 0;

        disk_facts_free(d->facts);
        d->facts = TAKE_PTR(facts);
        d->generation++;

        Plan plan;
        r = policy_evaluate(d->facts, &m->config, &d->overrides, &plan);
        if (r < 0) {
                log_device_warning_errno(name, r, "Failed to evaluate policy, ignoring: %m");
                return;
        }
        plan_done(&d->plan);
        d->plan = plan;

        if (added || log_get_max_level() >= LOG_DEBUG) {
                char f_class[64];
                snprintf(f_class, sizeof(f_class), "BLKMQD_CLASS=%s", disk_class_to_string(d->plan.class));
                STRV_FOREACH(line, d->plan.explain) {
                        const char *rule = strstr(*line, "(rule ");
                        char f_rule[96] = "BLKMQD_RULE=";
                        if (rule)
                                snprintf(f_rule, sizeof(f_rule), "BLKMQD_RULE=%.*s", (int) strcspn(rule + 6, ")"), rule + 6);
                        const char *fields[] = { f_class, f_rule, NULL };
                        log_full(LOG_INFO, 0, NULL, BLKMQD_MESSAGE_DECISION, fields, __FILE__, __LINE__, __func__, "%s", *line);
                }
        }

        (void) apply_device(m->hostfs, d, m->dry_run);

        if (m->fuse) {
                r = fuse_fs_device_updated(m->fuse, d);
                if (r < 0)
                        log_device_warning_errno(name, r, "Failed to update FUSE tree, ignoring: %m");
        }
finish:
        if (m->started)
                manager_update_status(m);
}

static void on_device_event(void *userdata, DeviceAction action, const char *sysname) {
        manager_device_event(userdata, sysname, action == DEVICE_ACTION_REMOVE);
}

static int render_version(void *userdata, char **ret) {
        Manager *m = userdata;
        _cleanup_free_ char *kernel = NULL;
        const char *why = NULL;

        (void) hostfs_kernel_release(m->hostfs, &kernel);
        bool debugfs = hostfs_debugfs_available(m->hostfs, &why);
        int r = asprintf(ret, "blkmqd %s kernel %s source %s debugfs %s%s\n",
                         BLKMQD_VERSION, kernel ?: "unknown",
                         m->monitor ? udev_monitor_source(m->monitor) : "fixture",
                         debugfs ? "yes" : "no", m->dry_run ? " dry-run" : "");
        return r < 0 ? -ENOMEM : 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        (void) sd_notify(false, "RELOADING=1");
        log_info("SIGHUP: re-evaluating every disk");
        /* Copy the names: an event may remove the device from the registry. */
        _cleanup_strv_free_ char **names = NULL;
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (strv_extend(&names, m->registry.devices[i]->name) < 0)
                        return 0;
        STRV_FOREACH(n, names)
                manager_device_event(m, *n, false);
        (void) sd_notify(false, "READY=1");
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
        r = sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");
        (void) sd_event_set_watchdog(m->event, true);

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
                        .render_version = render_version,
                        .userdata = m,
                };
                r = fuse_fs_new(m->event, m->mountpoint, &ctx, &m->fuse);
                if (r == -EBUSY)
                        return log_error_errno(r, "\"%s\" is already a live FUSE mount (is another blkmqd running?)", m->mountpoint);
                if (r < 0)
                        return log_error_errno(r, "Failed to mount the FUSE tree at \"%s\": %m", m->mountpoint);
        }

        r = m->monitor ? udev_monitor_coldplug(m->monitor) : coldplug_from_hostfs(m);
        if (r < 0)
                return log_error_errno(r, "Coldplug failed: %m");

        m->started = true;
        log_full(LOG_INFO, 0, NULL, BLKMQD_MESSAGE_START, NULL, __FILE__, __LINE__, __func__,
                 "blkmqd %s started: %zu disk(s)%s%s%s", BLKMQD_VERSION, m->registry.n_devices,
                 m->mountpoint ? ", tree at " : "", m->mountpoint ?: "", m->dry_run ? ", dry-run: nothing is written" : "");
        manager_update_status(m);
        (void) sd_notify(false, "READY=1");
        return 0;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}
