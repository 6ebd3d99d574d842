/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device pipeline (HACKING.md "The pipeline in code"): a uevent (or a batch: coldplug,
 * reload) -> facts gathered (device.c, through hostfs) -> policy evaluated (policies/) ->
 * decisions logged -> the plan applied (apply.c, writes on the writer's workers) -> the run's
 * end: originals persisted, facts read again, the FUSE tree and module parameters updated.
 */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "macro.h"
#include "agents.h"
#include "manager-internal.h"
#include "cross-disk.h"
#include "net.h"
#include "parse.h"
#include "policy.h"
#include "strv.h"

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

/* ---- block devices blkmqd does not list (the not_listed file) ------------------------------ */

/* Keep the not_listed file in step after its entries changed (changed > 0). */
static void unlisted_changed(Manager *m, int changed) {
        if (changed > 0 && m->fuse)
                fuse_fs_not_listed_updated(m->fuse);
}

/* name is a block device blkmqd does not list, for the reason fmt says (one line). */
_printf_(4, 5)
static void manager_set_unlisted(Manager *m, const char *name, const char *parent, const char *fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (r < 0 || (r = registry_set_unlisted(&m->registry, name, parent, reason)) < 0) {
                log_device_debug(name, "No memory for the reason it is not listed, ignoring");
                return;
        }
        unlisted_changed(m, r);         /* no log line: the file says it (and the pipeline logs what it must) */
}

/*
 * The partitions of disk name as the not_listed file shows them: one line each while the disk
 * is there (listed or not), none once it is gone (gone: the disk was removed). Called at every
 * event of the disk and at a partition's add or change uevent (manager_partition_event()).
 */
static void manager_sync_partitions(Manager *m, const char *name, bool gone) {
        _cleanup_strv_free_ char **parts = NULL;
        size_t changed = 0;
        if (!gone && device_list_partitions(m->hostfs, name, &parts) < 0)
                parts = NULL;
        changed += registry_forget_partitions(&m->registry, name, parts);
        STRV_FOREACH(p, parts) {
                _cleanup_free_ char *reason = NULL;
                if (asprintf(&reason, "a partition of %s: blkmqd tunes whole disks (the request queue, elevator and hctx are "
                             "%s's: blkmqctl explain %s)", name, name, name) < 0)
                        continue;
                if (registry_get(&m->registry, *p))
                        continue;       /* listed in its own right (never made so by the kernel, but a fixture may) */
                int r = registry_set_unlisted(&m->registry, *p, name, reason);
                changed += r > 0;
        }
        unlisted_changed(m, changed > 0);
}

/* The globs name does not match, for its not_listed line: "--devices loop3,loop4" or "Devices= sd*". */
static char *globs_description(const Manager *m) {
        char * const *globs = m->cli_globs ?: m->config.devices;
        _cleanup_free_ char *joined = strv_join(globs, ",");
        char *s = NULL;
        if (!joined || asprintf(&s, "%s %s", m->cli_globs ? "--devices" : "Devices=", joined) < 0)
                return NULL;
        return s;
}

void manager_remove_device(Manager *m, const char *name) {
        if (!registry_get(&m->registry, name))
                return;
        Device *d = registry_get(&m->registry, name);
        if (m->fuse)
                fuse_fs_device_removed(m->fuse, name);
        manager_metrics_changed(m);
        if (m->stats && d->facts)
                stats_forget_disk(m->stats, d->facts->major, d->facts->minor);
        char prefix[300];
        snprintf(prefix, sizeof(prefix), "block/%s/", name);
        hostfs_close_kept(m->hostfs, HOSTFS_SYSFS, prefix);       /* stat, inflight */
        hostfs_close_kept(m->hostfs, HOSTFS_DEBUGFS, prefix);     /* hctxN/ statistics */
        if (d->facts) {
                manager_persist_originals(m, d);        /* what a read's verify found and did not store */
                manager_persist_measured(m, d);         /* the last window, for the disk's return */
        }
        registry_remove(&m->registry, name);
        log_device_info(name, "Disk removed");
}

/*
 * Apply d's plan: decided here, written by the writer's workers; the run ends in
 * manager_on_apply_finished(). A disk whose run is in progress applies again when it ends.
 */
void manager_apply(Manager *m, Device *d) {
        assert(m);
        assert(d);
        if (m->mode == MODE_OFF || m->stopping || d->leaving)
                return;
        if (d->run.active) {
                d->run.again = true;
                return;
        }
        ApplyOptions o = { .dry_run = m->mode == MODE_DRY_RUN, .reassert = m->config.reassert };
        (void) apply_start(&m->applier, d, &o);
}

/* Put d's originals back (now, or when its run in progress ends). */
void manager_restore_device(Manager *m, Device *d) {
        assert(m);
        if (d->run.active)
                d->run.restore_after = true;
        else if (apply_has_originals(d)) {
                _cleanup_(sources_done) Sources now = {};
                if (agents_gather(m->hostfs, &now) >= 0)
                        (void) apply_forget_gone_originals(d, &now);
                if (apply_has_originals(d))
                        (void) apply_restore_start(&m->applier, d);
                else
                        manager_persist_originals(m, d);
        }
        else
                manager_persist_originals(m, d);        /* nothing to put back: the file follows (a read's verify may have dropped some) */
}

/* d left the managed set and its originals are back: it leaves devices/, status and metrics. */
static void manager_leave_done(Manager *m, const char *name) {
        Device *d = registry_get(&m->registry, name);
        bool failed = d && (d->run.error < 0 || d->run.failed);
        manager_remove_device(m, name);
        log_device_info(name, "No longer managed (not matched by the globs): %s; not listed any more",
                        failed ? "some original values could not be put back (logged above)" : "original values put back");
        if (m->started) {
                manager_update_modules(m);      /* its module parameter wishes went with it */
                manager_update_status(m);
        }
}

/*
 * name's disk (d) is no longer matched by the globs (a reload narrowed Devices=): it is
 * restored now (or when its run in flight ended), then removed from the tree (its stored
 * overrides stay, for the day the globs name it again). Nothing is applied to it meanwhile.
 */
static void manager_release_device(Manager *m, Device *d) {
        if (d->leaving || m->stopping)
                return;
        _cleanup_free_ char *name = strdup(d->name);
        if (!name)
                return;
        d->leaving = true;
        fuse_fs_invalidate_disk(m->fuse, d->name);
        log_device_info(d->name, "Not matched by the globs any more: putting its original values back, then it is not listed");
        manager_restore_device(m, d);
        /* a restore that wrote nothing has ended (and removed d) already */
        d = registry_get(&m->registry, name);
        if (d && d->leaving && !d->run.active)
                manager_leave_done(m, name);
}

void manager_on_apply_finished(Device *d, void *userdata) {
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
                manager_persist_originals(m, d);
        if (d->run.written > 0 && d->facts)
                manager_refresh(m, d, d->run.written_knobs & ((1u << KNOB_IRQ_AFFINITY) | (1u << KNOB_NIC_IRQ_AFFINITY) | (1u << KNOB_XPS)), true); /* facts/, explain: what the kernel has now */
        fuse_fs_invalidate_disk(m->fuse, d->name);      /* applied/: the outcomes */
        manager_metrics_changed(m);
        if (m->started && !m->batch)
                manager_update_status(m);
        manager_update_retry_timer(m, d);       /* a write that failed may be tried again at its backoff time */

        /* a disk the globs no longer match: its restore returned (or the run before it ended) */
        if (d->leaving && !m->stopping) {
                if (manager_matches(m, d->name))
                        d->leaving = false;     /* named again meanwhile: gathered and applied again */
                else {
                        /* (a restore that writes nothing ends inside manager_restore_device(),
                         * here again: d is looked up by name after it) */
                        _cleanup_free_ char *name = strdup(d->name);
                        if (!name)
                                return;
                        if (!d->run.restore)
                                manager_restore_device(m, d);
                        d = registry_get(&m->registry, name);
                        if (d && d->leaving && !d->run.active)
                                manager_leave_done(m, name);
                        manager_settle_check(m);
                        return;
                }
                event = true;
        }

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

        manager_settle_check(m);
}

void manager_on_apply_submit(Device *d, void *userdata) {
        Manager *m = userdata;
        if (!d->run.restore)
                manager_persist_originals_before_write(m, d);
        fuse_fs_invalidate_disk(m->fuse, d->name);      /* applied/<knob>: pending */
}

void manager_on_apply_timeout(Device *d, void *userdata) {
        assert(d);
        Manager *m = userdata;
        fuse_fs_invalidate_disk(m->fuse, d->name);      /* applied/<knob>: timeout */
        manager_metrics_changed(m);
        if (m->started)
                manager_update_status(m);
        manager_waiters_check(m);
        (void) manager_ready_check(m);
}

/* True when name has no run in progress, or only one whose write passed its deadline. */
bool manager_disk_settled(Manager *m, const char *name) {
        assert(m);
        Device *d = registry_get(&m->registry, name);
        return !d || !d->run.active || d->run.timed_out;
}

/* The NIC name of d's network facts, NULL none. */
static const char *disk_nic(const Device *d) {
        return d->facts && d->facts->net && d->facts->net->nic ? d->facts->net->nic->ifname : NULL;
}

/* Rule net-align-shared (policy_net_arbitrate()) over the registry: the other disks over a NIC
 * are its peers, collected only when d's plan wants a NIC placement (most disks want none). */
static int arbitrate_nic(Manager *m, const Device *d, Plan *plan) {
        if (!disk_nic(d) || (!plan->nic_irq_affinity && !plan->xps))
                return 0;
        _cleanup_free_ PolicyPeer *peers = calloc(m->registry.n_devices, sizeof(PolicyPeer));
        if (!peers)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                const Device *e = m->registry.devices[i];
                if (e != d && disk_nic(e))
                        peers[n++] = (PolicyPeer) { .name = e->name, .facts = e->facts, .plan = &e->plan };
        }
        return policy_net_arbitrate(d->name, d->facts, peers, n, plan);
}

/* Policy for d's facts and what blkmqd did (the history, its own input: apply_history() from
 * the recorded originals, so the elevator is decided from the one blkmqd found and explain
 * knows which rq_affinity, nr_requests and vectors blkmqd wrote; modules_history(): the module
 * parameters its modprobe.d gave this boot). The history is kept as d->policy_history, and the
 * IRQ map of d's facts follows its vectors' affinity before blkmqd. */
static int evaluate_policy(Manager *m, Device *d, Plan *ret) {
        _cleanup_(policy_history_done) PolicyHistory now = POLICY_HISTORY_INIT;
        int r = apply_history(d, m->config.reassert, &now);
        if (r < 0)
                return r;
        r = disk_facts_remap_irqs(d->facts, &d->policy_history, &now);
        if (r < 0)
                return r;
        policy_history_done(&d->policy_history);
        d->policy_history = now;
        now = POLICY_HISTORY_INIT;

        PolicyHistory history = d->policy_history;      /* not owned: d's */
        modules_history(&m->modules, &history);         /* what blkmqd's modprobe.d gave this boot */
        d->facts->sources = &m->sources;
        r = policy_evaluate_measured(d->facts, &history, &m->config.policy, &d->overrides, &d->speed, ret);
        if (r >= 0 && (r = arbitrate_nic(m, d, ret)) < 0)       /* one disk places a NIC */
                plan_done(ret);
        return r;
}

/*
 * The other disks over d's NIC after d's NIC vectors or XPS were read again: their copy of the
 * NIC's facts (net_refresh()) and their explain follow, so that blkmqd's own placement, written
 * for one disk, is not taken for another tool's change by the next periodic verify of the
 * others (the NVMe multipath head over the same controller, a second session or controller
 * over the NIC): that would gather them again and log a network change nobody made. A disk
 * with a run in flight is left to its run.
 */
static void refresh_nic_peers(Manager *m, const Device *d) {
        const char *nic = disk_nic(d);

        for (size_t i = 0; nic && i < m->registry.n_devices; i++) {
                Device *o = m->registry.devices[i];
                Plan plan;
                if (o == d || o->vanished || o->run.active || !streq_ptr(disk_nic(o), nic))
                        continue;
                int r = net_refresh(m->hostfs, o->facts);
                if (r == 0)
                        continue;               /* its copy was current */
                if (r > 0)
                        r = evaluate_policy(m, o, &plan);
                if (r < 0) {
                        log_device_warning_errno(o->name, r, "Failed to read %s's placement again after a change, ignoring: %m", nic);
                        continue;
                }
                plan_done(&o->plan);
                o->plan = plan;
                fuse_fs_invalidate_disk(m->fuse, o->name);
        }
}

/*
 * After blkmqd wrote, put something back, or noticed someone else's change: the facts are
 * read again (every fact a write can change, device_refresh_knobs()) and the explain lines
 * computed again from them, so facts/, explain, metrics and blkmqctl show what the kernel
 * has now. The decisions are the same (the elevator is decided from the one blkmqd found):
 * nothing is applied and nothing logged again.
 */
void manager_refresh(Manager *m, Device *d, bool irqs, bool evaluate) {
        assert(m);
        assert(d);
        Plan plan;
        int r = device_refresh_knobs(m->hostfs, d->facts, irqs);
        bool changed = r > 0;
        if (changed && irqs)
                refresh_nic_peers(m, d);
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

/*
 * Evaluate and apply d with the facts it has. The decision lines (new ones only, so a
 * re-evaluation does not repeat them; all of them when log_decisions) are logged once the
 * plan's first write is handed to the writer: a write waits for nothing but the decision
 * itself (journald or a pipe reader woken per line cost 0.1-2.7 ms before the write,
 * docs/BENCHMARKS.md P1). Lines apply itself logs before that handover (dry-run, a change
 * by someone else) come before them.
 */
void manager_evaluate(Manager *m, Device *d, bool log_decisions) {
        _cleanup_strv_free_ char **lines = NULL;        /* body, rule, knob, source, "i"nfo or "d"ebug; ... ("" for none) */
        _cleanup_free_ char *name = NULL, *f_class = NULL;
        Plan plan;
        int r = evaluate_policy(m, d, &plan);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to evaluate policy, ignoring: %m");
                return;
        }
        PLAN_FOREACH_ENTRY(e, &plan) {
                if (!log_decisions && plan_has_line(&d->plan, e->text))
                        continue;
                /* an ownership decision about one knob: BLKMQD_KNOB= and BLKMQD_SOURCE= */
                const char *knob = "", *source = "";
                if (e->rule && startswith(e->rule, "owner-"))
                        for (Knob k = 0; k < _KNOB_MAX; k++)
                                if (e->knobs == KNOB_BIT(k)) {
                                        knob = knob_to_string(k);
                                        source = strempty(plan.owner_source[k]);
                                }
                if (strv_extend(&lines, e->body) < 0 || strv_extend(&lines, strempty(e->rule)) < 0 ||
                    strv_extend(&lines, knob) < 0 || strv_extend(&lines, source) < 0 ||
                    strv_extend(&lines, log_decisions && e != plan.entries ? "d" : "i") < 0)
                        log_device_warning_errno(d->name, ENOMEM, "Failed to keep a decision line for the journal, ignoring: %m");
        }
        name = strdup(d->name);
        if (lines && (!name || asprintf(&f_class, "BLKMQD_CLASS=%s", disk_class_to_string(plan.class)) < 0)) {
                log_device_warning_errno(d->name, ENOMEM, "Failed to log the disk's decisions, ignoring: %m");
                lines = strv_free(lines);
        }
        plan_done(&d->plan);
        d->plan = plan;

        manager_apply(m, d);
        /* a run that ended at once (nothing to write) may have taken up an event that removed d */
        if (name)
                d = registry_get(&m->registry, name);
        if (m->fuse && d) {
                r = fuse_fs_device_updated(m->fuse, d);
                if (r < 0)
                        log_device_warning_errno(d->name, r, "Failed to update FUSE tree, ignoring: %m");
        }
        manager_metrics_changed(m);

        /* At a disk's first evaluation (and a reload) its class line is logged at info and the
         * others at debug: a disk where nothing is written costs one line; what is written has
         * a record of its own, naming the deciding rule (apply_log_knob()), and blkmqctl explain
         * has every line. A decision that changed later (an override, a change uevent) is info;
         * leaving a knob to another tool is a notice: the admin should see it. */
        for (char **l = lines; l && l[0] && l[1] && l[2] && l[3] && l[4]; l += 5) {
                _cleanup_free_ char *f_rule = NULL, *f_knob = NULL, *f_source = NULL;
                if (asprintf(&f_rule, "BLKMQD_RULE=%s", l[1]) < 0)
                        f_rule = NULL;
                if (*l[2] && (asprintf(&f_knob, "BLKMQD_KNOB=%s", l[2]) < 0 || asprintf(&f_source, "BLKMQD_SOURCE=%s", l[3]) < 0))
                        f_knob = f_source = NULL;
                const char *fields[] = { f_class, f_rule, f_knob, f_source, NULL };
                /* DEVICE= for journalctl; log_full() prefixes the name, so the body goes without it */
                bool deferred = streq(l[1], "owner-admin") || streq(l[1], "owner-defer-all");
                log_full(deferred ? LOG_NOTICE : l[4][0] == 'i' ? LOG_INFO : LOG_DEBUG, 0, name, BLKMQD_MESSAGE_DECISION, fields,
                         __FILE__, __LINE__, __func__, "%s", l[0]);
        }
}

/* The end of an event's reads (hostfs_event_begin()), once: *h is NULLed. */
static void event_reads_end(HostFs **h) {
        if (*h)
                hostfs_event_end(*h);
        *h = NULL;
}

static void device_event_one(Manager *m, const char *name, bool removed) {
        _cleanup_(event_reads_end) HostFs *reads = NULL;
        _cleanup_(disk_facts_freep) DiskFacts *facts = NULL;
        /* a single event: machine-wide inputs read for it alone, but the module tree's
         * elevators from the manager's cache while the tree is unchanged */
        _cleanup_(gather_cache_done) GatherCache single = { .module_tree = &m->module_tree, .machine = &m->machine };
        Device *d;
        int r;

        if (removed) {
                /* gone: neither it nor its partitions are block devices any more */
                unlisted_changed(m, registry_forget_unlisted(&m->registry, name));
                if (disk_name_is_valid(name))
                        manager_sync_partitions(m, name, true);
        }
        if (!manager_matches(m, name)) {
                if (removed && registry_get(&m->registry, name)) {
                        /* listed before a reload's Devices= left it out: its removal still ends it */
                        manager_remove_device(m, name);
                        goto finish;
                }
                if (!removed) {
                        _cleanup_free_ char *globs = globs_description(m);
                        manager_set_unlisted(m, name, NULL, "not matched by %s: blkmqd lists only the disks its globs name",
                                             strna(globs));
                        if (disk_name_is_valid(name))
                                manager_sync_partitions(m, name, false);
                        /* listed before a reload's Devices= left it out: put back, then gone */
                        d = registry_get(&m->registry, name);
                        if (d)
                                manager_release_device(m, d);
                }
                return;
        }
        if (!disk_name_is_valid(name)) {
                /* never silently: a disk the kernel has and blkmqd does not show needs a why */
                if (!removed) {
                        log_warning_errno(EINVAL, "Disk \"%s\" not managed: its name is no usable file name (empty, \".\", "
                                          "\"..\", longer than 31 bytes or containing \"/\"), ignoring", name);
                        manager_set_unlisted(m, name, NULL, "its name is no usable file name (empty, \".\", \"..\", longer than "
                                             "31 bytes or containing \"/\")");
                }
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

        /* from the gathering to the write handed over, a sysfs file is read once: apply's
         * check of the current value finds what the gathering read (hostfs_event_begin()) */
        hostfs_event_begin(m->hostfs);
        reads = m->hostfs;
        r = device_gather_cached(m->hostfs, name, m->batch ?: &single, &facts);
        if (r == -ENOENT || r == -ENOMEDIUM || r == -EINVAL) {
                char path[300];
                struct stat st;
                snprintf(path, sizeof(path), "block/%s", name);
                bool there = hostfs_stat(m->hostfs, HOSTFS_SYSFS, path, &st) >= 0;
                if (r == -ENOMEDIUM) {
                        log_device_debug(name, "No medium (size 0), not listed");
                        manager_set_unlisted(m, name, NULL, "no medium (size 0): an unused loop or zram device, a drive "
                                             "without a medium; listed once it has one (its change uevent)");
                } else if (there)
                        manager_set_unlisted(m, name, NULL, "its sysfs entry block/%s has no readable device number (dev) or "
                                             "size: nothing blkmqd can gather; gathered again at its next uevent", name);
                else    /* gone while read: its remove uevent follows */
                        unlisted_changed(m, registry_forget_unlisted(&m->registry, name));
                manager_sync_partitions(m, name, !there);
                manager_remove_device(m, name);
                goto finish;
        }
        if (r < 0) {
                log_device_warning_errno(name, r, "Failed to gather facts, ignoring: %m");
                if (!registry_get(&m->registry, name))  /* a listed disk stays, with the facts it had */
                        manager_set_unlisted(m, name, NULL, "its facts could not be read (%s): gathered again at its next "
                                             "uevent", strerror(-r));
                return;
        }
        unlisted_changed(m, registry_forget_unlisted(&m->registry, name));
        manager_sync_partitions(m, name, false);

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
        policy_history_done(&d->policy_history);        /* the new facts' map is made without it */
        d->generation++;
        if (added)
                manager_speed_watch(m, d);
        if (added && m->batch) {
                /* stored settings wait for the batch's end: a disk later in it may have the same
                 * identity, and then neither may get them */
                if (strv_extend(&m->batch_added, name) >= 0)
                        goto finish;
        }
        if (added)
                manager_load_stored(m, d);

        log_device_debug(name, "Evaluating (facts gathered%s)", added ? ", new disk" : "");
        manager_evaluate(m, d, added);
finish:
        event_reads_end(&reads);        /* what follows reads anew (module parameters) */
        if (m->fuse && !m->batch)       /* a batch updates hosts/ once at its end */
                (void) fuse_fs_hosts_updated(m->fuse);
        if (m->started) {
                manager_update_modules(m);
                manager_update_status(m);
        }
        /* a disk removed while its write was in flight: that write's return will find no disk
         * and say nothing, so whoever waited for the disk is answered now */
        manager_waiters_check(m);
        manager_stop_check(m);
}

size_t manager_net_changed(Manager *m, const char *why) {
        assert(m);
        _cleanup_strv_free_ char **again = NULL, **nics = NULL;
        _cleanup_(gather_cache_done) GatherCache single = { .module_tree = &m->module_tree, .machine = &m->machine };

        if (m->stopping)
                return 0;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                Device *d = m->registry.devices[i];
                if (!d->facts || !d->facts->net || d->vanished)
                        continue;
                int r = net_recheck(m->hostfs, d->facts, &single);
                if (r < 0)
                        log_device_warning_errno(d->name, r, "Failed to read the network facts again, ignoring: %m");
                if (r <= 0)
                        continue;
                if (strv_extend(&again, d->name) < 0 || (disk_nic(d) && strv_extend(&nics, disk_nic(d)) < 0)) {
                        log_warning_errno(ENOMEM, "Failed to follow a network change, ignoring: %m");
                        return 0;
                }
        }
        /* the other disks over a NIC that changed: their facts (and the owner of the NIC's
         * placement, policy_net_arbitrate()) follow too */
        for (size_t i = 0; nics && i < m->registry.n_devices; i++) {
                const Device *d = m->registry.devices[i];
                if (disk_nic(d) && strv_contains(nics, disk_nic(d)) && !strv_contains(again, d->name) &&
                    strv_extend(&again, d->name) < 0) {
                        log_warning_errno(ENOMEM, "Failed to follow a network change, ignoring: %m");
                        return 0;
                }
        }
        STRV_FOREACH(name, again) {
                log_device_info(*name, "Network facts changed (%s): gathering again", why);
                manager_device_event(m, *name, false);
        }
        return strv_length(again);
}

/*
 * The disks whose facts depend on name as their holder: the legs blkmqd knows as legs of name
 * (facts multipath_of), and, while name exists, the disks in its slaves/. A dm-multipath map
 * that is made, reloaded (queue_mode), or removed changes what its legs are (multipath-leg or
 * tuned as themselves), but the kernel sends uevents for the map only: bd_link_disk_holder()
 * (block/holder.c) adds holders/ links without an event for the lower disk, and multipathd
 * sends "change" to the paths only when it made the map itself. read_slaves: also list
 * slaves/ (not for a removed device). Returns a strv (possibly empty) or NULL on ENOMEM.
 */
static char **stacked_on(Manager *m, const char *name, bool read_slaves) {
        _cleanup_strv_free_ char **lower = NULL, **out = calloc(1, sizeof(char *));
        if (!out)
                return NULL;
        for (size_t i = 0; i < m->registry.n_devices; i++) {
                const Device *e = m->registry.devices[i];
                if (e->facts && streq_ptr(e->facts->multipath_of, name) && !streq(e->name, name) &&
                    strv_extend(&out, e->name) < 0)
                        return NULL;
        }
        if (read_slaves && device_list_lower(m->hostfs, name, &lower) >= 0)
                STRV_FOREACH(l, lower)
                        if (!streq(*l, name) && !strv_contains(out, *l) && registry_get(&m->registry, *l) &&
                            strv_extend(&out, *l) < 0)
                                return NULL;
        return TAKE_PTR(out);
}

void manager_partition_event(Manager *m, const char *name, bool removed) {
        assert(m);
        if (removed) {
                const Unlisted *u = registry_get_unlisted(&m->registry, name);
                if (u && u->parent)
                        unlisted_changed(m, registry_forget_unlisted(&m->registry, name));
                return;
        }
        if (disk_name_is_valid(name))
                manager_sync_partitions(m, name, false);
}

void manager_device_uninitialized(Manager *m, const char *name) {
        assert(m);
        if (!manager_matches(m, name)) {
                device_event_one(m, name, false);       /* its not_listed line says so */
                return;
        }
        if (registry_get(&m->registry, name))
                return;
        manager_set_unlisted(m, name, NULL, "not initialized by udev yet: listed at its add event, after udev's rules "
                             "ran (a udev rule may still be setting its queue attributes)");
        registry_unlisted_udev_pending(&m->registry, name);     /* a reload leaves it to udev's add event */
}

void manager_device_event(Manager *m, const char *name, bool removed) {
        assert(m);
        /* A batch (coldplug, reload) gathers every disk anyway; a cascade's own events do not
         * cascade again (a leg is no holder of its map). */
        if (m->batch || m->cascading) {
                device_event_one(m, name, removed);
                return;
        }
        _cleanup_strv_free_ char **before = stacked_on(m, name, false);
        device_event_one(m, name, removed);
        _cleanup_strv_free_ char **after = stacked_on(m, name, !removed);

        m->cascading = true;
        STRV_FOREACH(l, before)
                if (registry_get(&m->registry, *l)) {
                        log_device_debug(*l, "Gathering again: %s, which it was a leg of, %s", name, removed ? "was removed" : "changed");
                        device_event_one(m, *l, false);
                }
        STRV_FOREACH(l, after)
                if (!strv_contains(before, *l) && registry_get(&m->registry, *l)) {
                        log_device_debug(*l, "Gathering again: it is below %s now (slaves/)", name);
                        device_event_one(m, *l, false);
                }
        m->cascading = false;
}

/* ---- module parameters: decided here, written on the writer (lane MODULES_LANE) ------------- */

enum { MODULES_JOB_UPDATE, MODULES_JOB_RESTORE };

bool manager_modules_settled(const Manager *m) {
        return (!m->modules_busy || m->modules_timed_out) && !m->modules_restore_wanted;
}

/* A module job returned (or was done inline): its outcome, then what was asked meanwhile. */
static void modules_job_finish(Manager *m, WriteJob *j) {
        int r;

        if (j->tag == MODULES_JOB_RESTORE) {
                int k = modules_restore_finish(&m->modules, j);
                m->restore_count += k > 0 ? k : 0;
                m->restore_counts.restored += k > 0 ? k : 0;
                if (k < 0) {
                        m->restore_failed = true;
                        m->restore_counts.failed++;
                }
                m->restored = m->restore_count;
        } else
                modules_finish(&m->modules, j);
        /* the disks of a driver whose parameter was written: facts/ and explain read it again
         * (manager_refresh()); one with a run in flight is refreshed when it returns */
        for (size_t i = 0; i < j->n_ops; i++) {
                char module[128];
                if (j->ops[i].type != WRITE_OP_WRITE || sscanf(j->ops[i].path, "module/%127[^/]/", module) != 1)
                        continue;
                for (size_t k = 0; k < m->registry.n_devices; k++) {
                        Device *d = m->registry.devices[k];
                        if (d->facts && !d->run.active && streq_ptr(d->facts->driver, module))
                                manager_refresh(m, d, false, false);
                }
        }
        manager_persist_module_originals(m);
        r = m->fuse ? fuse_fs_modules_updated(m->fuse) : 0;
        manager_metrics_changed(m);
        if (r < 0)
                log_warning_errno(r, "Failed to update module parameters, ignoring: %m");
}

static void on_modules_done(WriteJob *j, void *userdata) {
        Manager *m = userdata;

        m->modules_busy = false;
        if (j->timed_out)
                log_info("Module parameters: the write of \"%s\" returned after %.1f s", j->ops[0].path,
                         (double) (j->done_usec - j->submitted_usec) / 1e6);
        size_t boot_options = m->modules.n_boot_options;
        modules_job_finish(m, j);
        if (j->tag == MODULES_JOB_RESTORE && m->modules.n_boot_options != boot_options && !m->stopping)
                /* the restore removed zz-blkmqd.conf: what it gave this boot is no history any more
                 * (modules_history()), and the disks are decided again from what they now are
                 * (the restore's own evaluation ran before this job returned; done inline, it
                 * follows the job) */
                manager_reevaluate_all(m);
        if (m->modules_restore_wanted)
                manager_restore_modules(m, m->modules_restore_keep_file);
        else if (m->modules_again)
                manager_update_modules(m);
        if (m->started)
                manager_update_status(m);
        manager_settle_check(m);
}

static void on_modules_timeout(WriteJob *j, void *userdata) {
        Manager *m = userdata;

        m->modules_timed_out = true;
        modules_timeout(&m->modules, j, writer_timeout_usec(m->writer));
        if (m->fuse)
                (void) fuse_fs_modules_updated(m->fuse);
        manager_metrics_changed(m);
        manager_waiters_check(m);
        (void) manager_ready_check(m);
}

/* Hand j (taken) to the writer, or do it here when no loop runs. */
static void modules_submit(Manager *m, WriteJob *j, int tag) {
        j->tag = tag;
        if (!m->writer || m->inline_files) {
                writer_run_inline(m->hostfs, j);
                modules_job_finish(m, j);
                write_job_free(j);
                return;
        }
        int r = writer_submit(m->writer, j, on_modules_done, on_modules_timeout, m);
        if (r < 0) {
                /* nothing was written: like a transient error, tried again at the next update */
                log_warning_errno(r, "Module parameters: cannot start a writer thread, will retry: %m");
                for (size_t i = 0; i < m->modules.n_params; i++)
                        if (m->modules.params[i].state == MODPARAM_PENDING)
                                m->modules.params[i].state = MODPARAM_ERROR;
                if (tag == MODULES_JOB_RESTORE) {
                        m->restore_failed = true;
                        m->restore_counts.failed++;
                }
                return;
        }
        m->modules_busy = true;
        m->modules_timed_out = false;
}

void manager_update_modules(Manager *m) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;

        if (m->stopping)
                return;         /* the stop puts back what blkmqd wrote: nothing is written again */
        if (m->modules_busy) {
                m->modules_again = true;        /* decided again from the plans then in force */
                return;
        }
        m->modules_again = false;
        m->modules.not_written_why = m->mode == MODE_OFF ? "mode off (restore sets it)" :
                                     m->mode == MODE_DRY_RUN ? "mode dry-run" : NULL;
        m->modules.reassert = m->config.reassert;
        int r = modules_decide(m->hostfs, &m->modules, &m->registry,
                               m->mode == MODE_AUTO && m->config.module_params_write, &j);
        manager_persist_module_originals(m);    /* the originals decide recorded: saved before j (same lane) */
        if (r >= 0 && m->fuse)
                r = fuse_fs_modules_updated(m->fuse);
        manager_metrics_changed(m);
        if (r < 0)
                log_warning_errno(r, "Failed to update module parameters, ignoring: %m");
        if (j)
                modules_submit(m, TAKE_PTR(j), MODULES_JOB_UPDATE);
}

void manager_restore_modules(Manager *m, bool keep_file) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;

        if (m->modules_busy) {
                /* after the job in flight, deciding from what it did; the file goes if any request says so */
                m->modules_restore_keep_file = (!m->modules_restore_wanted || m->modules_restore_keep_file) && keep_file;
                m->modules_restore_wanted = true;
                return;
        }
        m->modules_restore_wanted = false;
        int r = modules_restore_decide(m->hostfs, &m->modules, keep_file, &j);
        if (r < 0) {
                log_warning_errno(r, "Failed to restore module parameters: %m");
                m->restore_failed = true;
                m->restore_counts.failed++;
                return;
        }
        if (j)
                modules_submit(m, TAKE_PTR(j), MODULES_JOB_RESTORE);
}

/* After a coldplug or reload batch: machine-wide inputs are no longer shared; hosts/ once for all. */
void manager_batch_end(Manager *m) {
        assert(m);
        _cleanup_strv_free_ char **added = TAKE_PTR(m->batch_added);

        m->batch = NULL;
        manager_check_identities(m, added);     /* every collision known before anything is loaded */
        STRV_FOREACH(n, added) {
                Device *d = registry_get(&m->registry, *n);
                if (!d || !d->facts)
                        continue;
                manager_load_overrides(m, d);
                manager_load_originals(m, d);
                manager_load_measured(m, d);
                manager_evaluate(m, d, true);
        }
        if (m->fuse)
                (void) fuse_fs_hosts_updated(m->fuse);
}

/* Every disk again: re-gather (a SIGHUP or reload may follow hardware changes too). */
void manager_reevaluate_all(Manager *m) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_(gather_cache_done) GatherCache batch = { .module_tree = &m->module_tree, .machine = &m->machine };
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (strv_extend(&names, m->registry.devices[i]->name) < 0)
                        return;
        /* and the disks not listed: a reload's Devices= may name them now (or name them
         * otherwise: their not_listed line follows); partitions follow their disk, and a disk
         * udev has not initialized yet waits for its add event, as at coldplug */
        for (size_t i = 0; i < m->registry.n_unlisted; i++) {
                const Unlisted *u = &m->registry.unlisted[i];
                if (!u->parent && !u->udev_pending && strv_extend(&names, u->name) < 0)
                        return;
        }
        m->batch = &batch;
        STRV_FOREACH(n, names)
                manager_device_event(m, *n, false);
        manager_batch_end(m);
}
