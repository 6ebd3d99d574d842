/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The verify: a look at the kernel that writes nothing to it (apply in verify mode, a few
 * reads). Periodic (VerifySec=): it also stores the originals when they changed. When applied/
 * is read (FuseFsContext.verify): reads only, the state directory is not written either
 * (issue 17 item 4); what it found is stored by the next periodic verify, write, restore, stop
 * or the disk's removal (manager_persist_originals() writes whenever the file differs).
 */
#include <assert.h>
#include <errno.h>
#include <time.h>

#include "kernel.h"
#include "log.h"
#include "manager-internal.h"
#include "strv.h"

/* Look at d's knobs; persist: store the originals when the look changed them. */
static void verify_disk(Manager *m, Device *d, bool persist) {
        ApplyOptions o = { .verify_only = true, .reassert = m->config.reassert };

        /* never while the disk's own write is in flight (its run ends in a refresh) */
        if (!d || !d->facts || apply_busy(d))
                return;
        int n = d->plan.manage && m->mode != MODE_OFF ? apply_device(m->hostfs, d, &o) : 0;
        if (persist)
                manager_persist_originals(m, d);        /* also what an earlier read's verify found */
        /* a verify is a look at the kernel: facts/ and explain follow what it has now, also
         * when someone changed a value blkmqd never wrote (no uevent comes for that) */
        manager_refresh(m, d, n > 0, n > 0);
        fuse_fs_invalidate_disk(m->fuse, d->name);
        if (n > 0)
                manager_metrics_changed(m);
}

void manager_verify_disk(void *userdata, const char *device) {
        Manager *m = userdata;
        verify_disk(m, registry_get(&m->registry, device), false);
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
 * The kernel's configuration read again (facts/kernel.c), once for every disk: a cgroup v2
 * cpuset partition made isolated (or given back) at run time sends no uevent, so the periodic
 * verify is what sees it (a reload gathers everything anyway). A disk whose facts differ is
 * gathered again, evaluated and applied, as at its uevent. Returns how many.
 */
static size_t kernel_config_changed(Manager *m) {
        _cleanup_strv_free_ char **again = NULL;
        _cleanup_(gather_cache_done) GatherCache single = { .module_tree = &m->module_tree, .machine = &m->machine };

        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (!d->facts || d->vanished || d->run.active)
                        continue;
                int r = device_kernel_config_changed(m->hostfs, d->facts, &single);
                if (r < 0) {
                        log_warning_errno(r, "Failed to read the kernel's configuration again, ignoring: %m");
                        return 0;
                }
                if (r > 0 && strv_extend(&again, d->name) < 0) {
                        log_warning_errno(ENOMEM, "Failed to follow a change of the kernel's configuration, ignoring: %m");
                        return 0;
                }
        }
        const char *isolated = single.kernel_unknown[KERNEL_UNKNOWN_ISOLATED] ? "unknown" :
                               !isempty(single.kernel.isolated_list) ? single.kernel.isolated_list : "none";
        STRV_FOREACH(name, again) {
                log_device_info(*name, "The kernel's configuration changed (isolated CPUs now %s): gathering again", isolated);
                manager_device_event(m, *name, false);
        }
        return strv_length(again);
}

/*
 * The periodic verify (VerifySec=): the kernel sends no uevent when someone else writes a queue
 * attribute or an IRQ's affinity, so without it a change is only noticed when someone reads
 * applied/. Network disks whose NIC side changed are gathered again first
 * (manager_net_changed()). Every disk blkmqd manages is looked at with a verify that writes
 * nothing (a few reads); only a disk with something to do is applied again (mode auto): a
 * failed write is retried, and with Reassert=yes a changed value rewritten, both with backoff.
 */
static void manager_verify_all(Manager *m) {
        size_t n = 0, applied = 0;

        if (m->mode == MODE_OFF || m->stopping)
                return;
        /* the NIC side of network disks: what no notification says (a vector's affinity, an
         * XPS mask, channels on a kernel without the ethtool family, a fixture's netlink file) */
        size_t again = manager_net_changed(m, "periodic verify");
        /* isolated CPUs (a cpuset partition made at run time) */
        again += kernel_config_changed(m);
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (!d->facts || !d->plan.manage || d->run.active)
                        continue;
                n++;
                verify_disk(m, d, true);
                if (m->mode == MODE_AUTO && !d->run.active && verify_needs_apply(d, m->config.reassert)) {
                        applied++;
                        manager_apply(m, d);
                }
        }
        /* module parameters: no uevent comes when someone writes /sys/module/<m>/parameters/<p>
         * either; the update reads every one again (a value changed externally: left alone, or
         * with Reassert=yes rewritten with backoff) and writes only what is not in place */
        if (m->modules.n_params > 0)
                manager_update_modules(m);
        log_debug("Periodic verify: %zu disk(s) looked at, %zu applied again, %zu gathered again (network, kernel configuration)", n, applied, again);
}

static int on_verify_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        manager_verify_all(m);
        manager_speed_verify_tick(m);
        m->verify_time = time(NULL);
        manager_metrics_changed(m);
        if (m->config.verify_usec > 0) {
                (void) sd_event_source_set_time_relative(s, m->config.verify_usec);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

/* Arm, re-arm or remove the periodic verify after a (re)load of the configuration. */
void manager_update_verify_timer(Manager *m) {
        assert(m);
        uint64_t usec = m->config.verify_usec;
        int r;

        if (usec == 0) {
                m->verify_timer = sd_event_source_disable_unref(m->verify_timer);
                return;
        }
        r = manager_arm_period(m, &m->verify_timer, usec, on_verify_timer);
        if (r < 0)
                log_warning_errno(r, "Cannot set up the periodic verify (VerifySec=), changes by others are noticed "
                                  "only when applied/ is read: %m");
}

/*
 * A failed write that may pass (an elevator whose module had not registered it yet, EBUSY,
 * ENOSPC on an IRQ's CPUs) is tried again at its backoff time, not at the first periodic verify
 * after it (VerifySec= may be an hour, or 0): one timer for all disks, at the earliest time,
 * off while nothing waits. The apply decides again what is due (apply/apply.c backoff_waiting()).
 */
static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* A retry of d is due at now: its earliest backoff time (any, past ones too) is not after now. */
static bool retry_due(const Device *d, uint64_t now) {
        uint64_t t = apply_next_retry_usec(d, 0);
        return t > 0 && t <= now;
}

static void retry_arm(Manager *m, uint64_t next) {
        int r;

        if (m->retry_timer) {
                r = sd_event_source_set_time(m->retry_timer, next);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->retry_timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time(m->event, &m->retry_timer, CLOCK_MONOTONIC, next, 100 * 1000, on_retry_timer, m);
        if (r < 0) {
                log_warning_errno(r, "Cannot set up the retry of a failed write at its backoff time, it waits for the "
                                  "periodic verify (VerifySec=): %m");
                next = 0;
        }
        m->retry_usec = next;
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t next = 0;

        m->retry_usec = 0;
        if (m->mode != MODE_AUTO || m->stopping)
                return 0;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (d->facts && d->plan.manage && !d->leaving && retry_due(d, usec)) {
                        log_device_debug(d->name, "A failed write's backoff is over: applying again");
                        manager_apply(m, d);    /* its run's end arms the timer for its next retry */
                }
                uint64_t t = apply_next_retry_usec(d, usec);
                if (t > 0 && (next == 0 || t < next))
                        next = t;
        }
        if (next > 0 && (m->retry_usec == 0 || next < m->retry_usec))
                retry_arm(m, next);
        return 0;
}

/* O(1) in the number of disks: called at the end of every disk's run (a coldplug of thousands). */
void manager_update_retry_timer(Manager *m, const Device *d) {
        uint64_t now = 0;

        if (!m->event || m->mode != MODE_AUTO || m->stopping) {
                m->retry_timer = sd_event_source_disable_unref(m->retry_timer);
                m->retry_usec = 0;
                return;
        }
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        uint64_t next = apply_next_retry_usec(d, now);
        if (next > 0 && (m->retry_usec == 0 || next < m->retry_usec))
                retry_arm(m, next);
}
