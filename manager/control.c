/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writes to the tree: policy/<knob>, policy/iosched/<elevator>/<tunable>, mode, reload,
 * restore (validated, persisted, evaluated and applied), the root control files' content, and
 * the waiters: a FUSE write whose kernel writes are in flight is answered when its disks settle.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "manager-internal.h"
#include "policy.h"
#include "strv.h"

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

static int waiter_result(Manager *m, const Waiter *w) {
        if (!w->restore)
                return 0;
        m->restored = m->restore_count;
        return m->restore_failed ? -EIO : 0;
}

/* Nothing of blkmqd's own files waits within its deadline: the state directory, module parameters. */
static bool files_settled(const Manager *m) {
        return manager_persist_settled(m) && manager_modules_settled(m);
}

/* A restore's summary, once every disk and file it touched has settled (or passed its deadline). */
static void restore_log_check(Manager *m) {
        if (!m->restore_logging || !files_settled(m))
                return;
        for (size_t i = 0; i < m->registry.n_devices; i++)
                if (!manager_disk_settled(m, m->registry.devices[i]->name))
                        return;
        m->restore_logging = false;
        char tail[128];
        log_info("restore: %u original value(s) put back%s%s; mode is now off", m->restore_count,
                 manager_restore_counts_tail(&m->restore_counts, tail, sizeof(tail)),
                 writer_pending(m->writer) ? " so far, the rest when their writes return" : "");
}

void manager_waiters_check(Manager *m) {
        restore_log_check(m);   /* before the restore's writer is answered */
        for (Waiter **p = &m->waiters, *w; (w = *p);) {
                bool settled = files_settled(m);
                STRV_FOREACH(n, w->disks)
                        settled = settled && manager_disk_settled(m, *n);
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

void manager_waiters_release_all(Manager *m) {
        assert(m);
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
                if ((!device || streq(device, n)) && !manager_disk_settled(m, n) && strv_extend(&disks, n) < 0)
                        return r;       /* ENOMEM: answer now */
        }
        if (!disks && files_settled(m))
                return restore ? waiter_result(m, &(Waiter) { .restore = true }) : r;
        Waiter *w = calloc(1, sizeof(Waiter));
        if (!w)
                return r;
        *w = (Waiter) { .pending = pending, .disks = TAKE_PTR(disks), .restore = restore, .next = m->waiters };
        m->waiters = w;
        return FUSE_FS_WRITE_DEFERRED;
}

int manager_render_control(void *userdata, NodeType type, char **ret) {
        Manager *m = userdata;
        int r;

        switch (type) {
        case NODE_VERSION: {
                _cleanup_free_ char *kernel = NULL;
                (void) hostfs_kernel_release(m->hostfs, &kernel);
                bool debugfs = hostfs_debugfs_available(m->hostfs, NULL);
                r = asprintf(ret, "blkmqd %s kernel %s source %s debugfs %s stats %s\n",
                             BLKMQD_VERSION, kernel ?: "unknown",
                             m->monitor ? uevent_monitor_source(m->monitor) : "fixture",
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

/*
 * A rejected policy write: one warning naming file ("policy/<knob>"), what was written (a
 * trailing newline dropped, newlines shown as spaces, cut at 64 bytes), why (may be "") and
 * what is expected. Returns r.
 */
static int log_rejected(const char *device, int r, const char *file, const char *data, size_t len, const char *why,
                        const char *expected) {
        _cleanup_free_ char *text = NULL;
        size_t shown = len > 0 && data[len - 1] == '\n' ? len - 1 : len;

        text = strndup(data, MIN(shown, (size_t) 64));
        if (text)
                for (char *c = text; *c; c++)
                        if (*c == '\n')
                                *c = ' ';
        return log_device_full(LOG_WARNING, r, device, NULL, NULL, "%s: rejected \"%s\"%s: %m%s; expected %s", file, text ?: "",
                               shown > 64 ? "..." : "", why, strna(expected));
}

/*
 * d's override behind file (policy/...) was set to v (NULL: auto): said, the facts a write can
 * change read again, the overrides persisted (not for a shared identity), d evaluated and
 * applied, module parameters updated when modules (an override they may follow), STATUS=.
 * Returns 0, or -errno of the read (the override stays set).
 */
static int override_set(Manager *m, Device *d, const char *file, const char *v, bool modules) {
        int r;

        log_device_info(d->name, "%s set to %s by the administrator", file, v ?: "auto");
        /* decide from what the kernel has now (a scheduler write sends no uevent); not while
         * the disk's own write is in flight: its run ends in a refresh anyway */
        if (!apply_busy(d)) {
                r = device_refresh_knobs(m->hostfs, d->facts, true);
                if (r < 0)
                        return r;
        }

        if (m->state && d->facts->identity && d->identity_shared)
                log_device_full(LOG_NOTICE, 0, d->name, NULL, NULL, "%s not stored: identity %s is shared with another disk, the setting "
                                "lasts until %s is removed", file, d->facts->identity, d->name);
        else if (m->state && d->facts->identity)
                manager_persist_overrides(m, d);        /* on the writer: the reply waits for it (settled) */
        manager_evaluate(m, d, false);
        if (modules)
                manager_update_modules(m);
        manager_update_status(m);
        return 0;
}

/* A write to policy/<file> (knob: a PolicyFile, a Knob or POLICY_FILE_ENABLED): validated, persisted, applied. */
static int write_policy(Manager *m, const char *device, int knob, const char *data, size_t len) {
        Device *d = registry_get(&m->registry, device);
        _cleanup_free_ char *v = NULL, *online_text = NULL;
        _cleanup_(cpuset_done) CpuSet online = {};
        char file[64];
        int r;

        if (!d || !d->facts || d->leaving)
                return -ENOENT;         /* leaving: restored, not managed any more */
        snprintf(file, sizeof(file), "policy/%s", policy_file_to_string(knob));

        if (knob == KNOB_IRQ_AFFINITY &&
            hostfs_read(m->hostfs, HOSTFS_SYSFS, "devices/system/cpu/online", &online_text) >= 0)
                (void) cpuset_parse(online_text, &online);      /* also named in the refusal message */

        r = policy_override_validate(knob, data, len, d->facts, online.n_words ? &online : NULL, &v);
        if (r < 0) {
                _cleanup_free_ char *expected = policy_override_expected(knob, d->facts, online.n_words ? &online : NULL);
                char why[192] = "";
                if (knob == KNOB_ELEVATOR) {
                        /* a legacy or malformed name: say what to write instead, as the config load does */
                        char name[64], buf[128];
                        size_t l = len > 0 && data[len - 1] == '\n' ? len - 1 : len;
                        const char *instead, *bad;
                        if (l > 0 && l < sizeof(name) && !memchr(data, 0, l)) {
                                memcpy(name, data, l);
                                name[l] = 0;
                                if (elevator_name_is_legacy(name, &instead))
                                        snprintf(why, sizeof(why), " (\"%s\" is a legacy single-queue name: use \"%s\")", name, instead);
                                else if ((bad = elevator_name_invalid(name, buf, sizeof(buf))) && !strpbrk(name, " \t\n"))
                                        snprintf(why, sizeof(why), " (%s)", bad);
                        }
                }
                return log_rejected(device, r, file, data, len, why, expected);
        }

        if (knob == POLICY_FILE_ENABLED) {
                d->overrides.enabled_set = v;
                d->overrides.disabled = v && streq(v, "0");
        } else {
                r = policy_overrides_set(&d->overrides, knob, v);
                if (r < 0)
                        return r;
        }
        return override_set(m, d, file, v, true);
}

/* A write to policy/iosched/<elevator>/<tunable>: validated like every policy file, persisted, applied. */
static int write_policy_iosched(Manager *m, const char *device, IoschedTunable t, const char *data, size_t len) {
        Device *d = registry_get(&m->registry, device);
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        _cleanup_free_ char *v = NULL;
        char file[128];
        int r;

        if (!d || !d->facts || !info || d->leaving)
                return -ENOENT;
        snprintf(file, sizeof(file), "policy/iosched/%s/%s", info->elevator, info->name);
        r = iosched_override_validate(t, data, len, d->facts, &v);
        if (r < 0) {
                _cleanup_free_ char *expected = iosched_tunable_expected(t);
                const char *why = r != -EINVAL ? "" :
                        disk_facts_elevator_source(d->facts, info->elevator) == ELEVATOR_UNAVAILABLE ? " (the disk cannot run this elevator)" :
                        streq_ptr(d->facts->elevator, info->elevator) && !disk_facts_iosched(d->facts, info->name) ?
                                " (this kernel's elevator has no such file)" : "";
                return log_rejected(device, r, file, data, len, why, expected);
        }
        r = policy_overrides_set_iosched(&d->overrides, t, v);
        if (r < 0)
                return r;
        return override_set(m, d, file, v, false);
}

int manager_fuse_write(void *userdata, NodeType type, const char *device, int knob, const char *data, size_t len,
                       off_t offset, FuseFsWrite *pending) {
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
                const char *file = type == NODE_POLICY_KNOB ? (knob == POLICY_FILE_ENABLED ? "policy/enabled" : NULL) :
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
                m->mode_set_at_runtime = true;
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
                m->restore_count = 0;
                m->restore_failed = false;
                m->restore_counts = (RestoreCounts) {};
                /* module parameters (zz-blkmqd.conf, /sys/module) on the writer, counted when they return */
                manager_restore_modules(m, false);
                m->mode = MODE_OFF;
                m->mode_set_at_runtime = true;
                /* every disk: now, or when its write in flight returned (restore_after) */
                for (size_t i = 0; i < m->registry.n_devices; i++)
                        manager_restore_device(m, m->registry.devices[i]);
                m->restored = m->restore_count;
                manager_reevaluate_all(m);
                manager_update_status(m);
                m->restore_logging = true;      /* said once everything above has settled: now, or later */
                restore_log_check(m);
                return reply_when_settled(m, pending, NULL, true, 0);
        }
        default:
                return -EACCES;
        }
}
