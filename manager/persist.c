/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state directory (state.c) as the manager uses it: overrides set through policy/ and the
 * originals blkmqd recorded before its writes, keyed by disk identity; identity collisions
 * (two present disks, one identity) decide that nothing is stored or loaded for either.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "apply-net.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "manager-internal.h"
#include "policy.h"
#include "strv.h"

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

/*
 * Two present disks with one identity (issue 13 item 10): stored settings cannot say which
 * disk they were made on, so neither gets them, and neither's settings are stored under it.
 * Marks d (and the disk it collides with); one warning per disk. See gather_identity() for
 * where identities are made distinct and where they still can collide.
 */
void manager_check_identity(Manager *m, Device *d) {
        assert(m);
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

static int identity_compare(const void *a, const void *b) {
        return strcmp(*(const char * const *) a, *(const char * const *) b);
}

void manager_check_identities(Manager *m, char * const *names) {
        assert(m);
        const Registry *reg = &m->registry;
        /* copies: a check may remove a disk, and its identity with it */
        _cleanup_strv_free_ char **ids = calloc(reg->n_devices + 1, sizeof(char *));
        size_t n = 0;

        for (size_t i = 0; ids && i < reg->n_devices; i++)
                if (reg->devices[i]->facts && reg->devices[i]->facts->identity &&
                    !(ids[n++] = strdup(reg->devices[i]->facts->identity)))
                        ids = strv_free(ids);
        if (ids)
                qsort(ids, n, sizeof(char *), identity_compare);
        STRV_FOREACH(name, names) {
                Device *d = registry_get(&m->registry, *name);
                if (!d || !d->facts || !d->facts->identity)
                        continue;
                if (ids) {
                        /* a disk whose identity no other disk had when the batch ended has none
                         * now (an earlier check only removes disks): nothing to check */
                        char **k = bsearch(&d->facts->identity, ids, n, sizeof(char *), identity_compare);
                        while (k && k > ids && streq(k[-1], d->facts->identity))
                                k--;
                        if (k && (k + 1 >= ids + n || !streq(k[1], d->facts->identity)))
                                continue;
                }
                manager_check_identity(m, d);
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

/* ---- saves on the writer ---------------------------------------------------------------- */

typedef enum PersistWhat {
        PERSIST_ORIGINALS,              /* originals/<identity> of a disk */
        PERSIST_MODULE_ORIGINALS,       /* originals/module-parameters */
        PERSIST_OVERRIDES,              /* overrides/<identity> */
        PERSIST_MEASURED,               /* measured/<identity> */
} PersistWhat;

typedef struct PersistJob {
        struct PersistJob *next, **prev;        /* in m->persist_jobs while submitted */
        Manager *m;
        PersistWhat what;
        char *name;                     /* the disk's (originals, overrides) */
        char *snapshot;                 /* what d->originals_saved / m->module_originals_saved / d->measured_saved
                                         * became at submit */
        bool inline_done;
} PersistJob;

static PersistJob *persist_job_free(PersistJob *p) {
        if (p) {
                if (p->prev) {
                        *p->prev = p->next;
                        if (p->next)
                                p->next->prev = p->prev;
                }
                free(p->name);
                free(p->snapshot);
                free(p);
        }
        return NULL;
}

static const char *persist_what(const PersistJob *p) {
        return p->what == PERSIST_OVERRIDES ? "overrides" : p->what == PERSIST_MEASURED ? "the measured speed" :
               p->what == PERSIST_MODULE_ORIGINALS ? "original module parameters" : "original values";
}

bool manager_persist_settled(const Manager *m) {
        assert(m);
        return m->persist_unsettled == 0;
}

/* The save returned (loop thread, or inline): a failure is said, and the next save writes again. */
static void persist_finish(PersistJob *p, int r) {
        Manager *m = p->m;
        if (r >= 0) {
                if (p->what == PERSIST_ORIGINALS)
                        log_device_debug(p->name, "Original values saved in the state directory");
                return;
        }
        if (p->what == PERSIST_OVERRIDES) {
                log_device_warning_errno(p->name, r, "Failed to persist overrides, they last until restart: %m");
                return;
        }
        if (p->what == PERSIST_MEASURED) {
                log_device_warning_errno(p->name, r, "Failed to persist the measured speed, a restart measures again: %m");
                Device *d = registry_get(&m->registry, p->name);
                if (d && streq_ptr(d->measured_saved, p->snapshot))
                        d->measured_saved = mfree_str(d->measured_saved);
                return;
        }
        if (p->what == PERSIST_MODULE_ORIGINALS) {
                log_warning_errno(r, "Failed to persist original module parameters, a restart would lose them: %m");
                if (streq_ptr(m->module_originals_saved, p->snapshot))
                        m->module_originals_saved = mfree_str(m->module_originals_saved);
                return;
        }
        log_device_warning_errno(p->name, r, "Failed to persist original values, a crash would lose them: %m");
        Device *d = registry_get(&m->registry, p->name);
        if (d && streq_ptr(d->originals_saved, p->snapshot))
                d->originals_saved = mfree_str(d->originals_saved);
}

static void on_persist_done(WriteJob *j, void *userdata) {
        PersistJob *p = userdata;
        Manager *m = p->m;

        m->persist_pending--;
        if (!j->timed_out)
                m->persist_unsettled--;
        else
                log_info("Saving %s to the state directory returned after %.1f s", persist_what(p),
                         (double) (j->done_usec - j->submitted_usec) / 1e6);
        persist_finish(p, j->ops[0].result);
        persist_job_free(p);
        manager_settle_check(m);
}

static void on_persist_timeout(WriteJob *j, void *userdata) {
        PersistJob *p = userdata;
        Manager *m = p->m;

        m->persist_unsettled--;
        log_warning_errno(ETIMEDOUT, "Saving %s to the state directory \"%s\" has not returned after %g s (a slow or "
                          "frozen file system?); the rest is served, %s", persist_what(p), state_dir(m->state),
                          (double) writer_timeout_usec(m->writer) / 1e6,
                          p->what == PERSIST_OVERRIDES ? "the setting is in force meanwhile" :
                          "the kernel writes that follow it wait for it");
        manager_waiters_check(m);
        (void) manager_ready_check(m);
}

/*
 * Store text (state_format()) as key's file of section: a job in lane, or done here when no
 * loop runs. Takes p. Returns 0 or -errno (nothing submitted; p freed).
 */
static int persist_submit(Manager *m, const char *lane, StateSection section, const char *key, const char *text, PersistJob *p) {
        _cleanup_(write_job_freep) WriteJob *j = write_job_new(lane);
        int r;

        p->m = m;
        if (!j || write_job_add_state(j, m->state, section, key, text) < 0) {
                persist_job_free(p);
                return -ENOMEM;
        }
        if (!m->writer || m->inline_files) {
                writer_run_inline(m->hostfs, j);
                persist_finish(p, j->ops[0].result);
                persist_job_free(p);
                return 0;
        }
        r = writer_submit(m->writer, TAKE_PTR(j), on_persist_done, on_persist_timeout, p);
        if (r < 0) {
                persist_job_free(p);
                return r;
        }
        m->persist_pending++;
        m->persist_unsettled++;
        p->next = m->persist_jobs;
        if (p->next)
                p->next->prev = &p->next;
        p->prev = &m->persist_jobs;
        m->persist_jobs = p;
        return 0;
}

void manager_persist_jobs_free(Manager *m) {
        while (m->persist_jobs)
                persist_job_free(m->persist_jobs);
}

void manager_persist_overrides(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *text = NULL;
        PersistJob *p = NULL;

        if (!m->state || !d->facts || !d->facts->identity)
                return;
        int r = state_overrides_kv(&d->overrides, &kv);
        if (r >= 0 && (!(text = state_format(STATE_OVERRIDES, d->facts->identity, kv)) ||
                       !(p = calloc(1, sizeof(PersistJob))) || !(p->name = strdup(d->name))))
                r = -ENOMEM;
        if (r >= 0) {
                p->what = PERSIST_OVERRIDES;
                r = persist_submit(m, "overrides", STATE_OVERRIDES, d->facts->identity, text, TAKE_PTR(p));
        }
        persist_job_free(p);
        if (r < 0)
                log_device_warning_errno(d->name, r, "Failed to persist overrides, they last until restart: %m");
}

/* Load persisted overrides of a newly seen disk; values no longer valid are dropped with a log line. */
void manager_load_overrides(Manager *m, Device *d) {
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
                PolicyFile k = policy_file_from_string(kv[i]);
                if (k < 0) {
                        log_device_warning_errno(d->name, EINVAL, "Stored override \"%s\" is unknown, ignoring", kv[i]);
                        continue;
                }
                r = policy_override_validate(k, kv[i + 1], strlen(kv[i + 1]), d->facts, NULL, &v);
                if (r < 0) {
                        log_device_warning_errno(d->name, r, "Stored override %s=%s no longer valid, ignoring: %m", kv[i], kv[i + 1]);
                        continue;
                }
                if (k == POLICY_FILE_ENABLED) {
                        d->overrides.enabled_set = v;
                        d->overrides.disabled = v && streq(v, "0");
                } else
                        (void) policy_overrides_set(&d->overrides, (Knob) k, v);
                log_device_info(d->name, "Restored override %s=%s (identity %s)", kv[i], kv[i + 1], d->facts->identity);
        }
}

/*
 * The key under which originals/<identity> records the boot it was written in. A reboot puts
 * back the kernel's own values (elevator, rq_affinity, nr_requests, IRQ affinity are not kept
 * across boots), so originals recorded at an earlier boot describe nothing that is still there.
 */
#define ORIGINALS_BOOT_KEY "boot"

/*
 * The key of Device.nr_before_override: nr_requests under blkmqd's own elevator switch before
 * blkmqd wrote an nr_requests override over it, what the override's "auto" puts back while
 * that switch stands (apply/apply.c queue_knob_no_wish()). Stored only while blkmqd's switch
 * stands (an elevator original is recorded): without the switch it has no use. Not an
 * original: a stop or restore never writes it. A file without it (written by an older blkmqd)
 * leaves it unknown, as before: the override's "auto" then leaves nr_requests as it is.
 * An older blkmqd reading a file with it logs the key as unknown and ignores it.
 */
#define ORIGINALS_NR_BEFORE_OVERRIDE_KEY "nr_requests.before_override"
/*
 * "source.<knob>=", "source.iosched.<elevator>.<tunable>=": the other tool whose value the
 * original is (Applied.original_source), so that a blkmqd started again after a crash still
 * puts it back only while that tool sets it. An older blkmqd logs the key as unknown and
 * ignores it.
 */
#define ORIGINALS_SOURCE_PREFIX "source."

static int kv_add(char ***kv, const char *prefix, const char *key, const char *value) {
        char k[160];
        snprintf(k, sizeof(k), "%s%s", prefix, key);
        return strv_extend(kv, k) < 0 || strv_extend(kv, value) < 0 ? -ENOMEM : 0;
}

static int kv_add_u64(char ***kv, const char *prefix, const char *key, uint64_t value) {
        char v[32];
        snprintf(v, sizeof(v), "%" PRIu64, value);
        return kv_add(kv, prefix, key, v);
}

/*
 * What blkmqd wrote, next to each original (apply_adopt_written() reads it back at a restart):
 * "written.<key>=value", for nr_requests and the tunables "instance.<key>=" (the queue/iosched
 * it was written under) and for a tunable read back otherwise "readback.<key>=". Saved before
 * the write (with the original) and again after it (the instance). An older blkmqd logs these
 * keys as unknown and ignores them; a file without them leaves the writes unknown, as before.
 */
static int written_to_kv(const Device *d, char ***kv) {
        for (Knob k = 0; k < _KNOB_MAX; k++) {
                const Applied *a = &d->applied[k];
                if (k == KNOB_IRQ_AFFINITY || apply_net_knob(k) || !a->original || !a->value || a->state == APPLY_DRY_RUN)
                        continue;
                if (kv_add(kv, APPLY_WRITTEN_PREFIX, knob_to_string(k), a->value) < 0 ||
                    (a->original_source && kv_add(kv, ORIGINALS_SOURCE_PREFIX, knob_to_string(k), a->original_source) < 0) ||
                    (k == KNOB_NR_REQUESTS && d->nr_requests_ino &&
                     kv_add_u64(kv, APPLY_INSTANCE_PREFIX, knob_to_string(k), d->nr_requests_ino) < 0))
                        return -ENOMEM;
        }
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                const Applied *a = &d->iosched[t];
                char key[128];
                if (!a->original || !a->value || a->state == APPLY_DRY_RUN)
                        continue;
                snprintf(key, sizeof(key), "iosched.%s.%s", i->elevator, i->name);
                if (kv_add(kv, APPLY_WRITTEN_PREFIX, key, a->value) < 0 ||
                    (a->original_source && kv_add(kv, ORIGINALS_SOURCE_PREFIX, key, a->original_source) < 0) ||
                    (d->iosched_ino[t] && kv_add_u64(kv, APPLY_INSTANCE_PREFIX, key, d->iosched_ino[t]) < 0) ||
                    (d->iosched_read[t] && !streq(d->iosched_read[t], a->value) &&
                     kv_add(kv, APPLY_READBACK_PREFIX, key, d->iosched_read[t]) < 0))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                const IrqApplied *ia = &d->irq_applied[i];
                char key[32];
                if (!ia->original || !ia->value)
                        continue;
                snprintf(key, sizeof(key), "irq.%u", ia->irq);
                if (kv_add(kv, APPLY_WRITTEN_PREFIX, key, ia->value) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* "boot", boot_id put first in the pairs *kv when there are any and boot_id is known: the boot
 * the originals belong to (dropped at load after a reboot). 0 or -ENOMEM. */
static int kv_prepend_boot(const char *boot_id, char ***kv) {
        _cleanup_strv_free_ char **all = NULL;
        if (!*kv || !boot_id)
                return 0;
        if (strv_extend(&all, ORIGINALS_BOOT_KEY) < 0 || strv_extend(&all, boot_id) < 0)
                return -ENOMEM;
        for (size_t i = 0; (*kv)[i]; i++)
                if (strv_extend(&all, (*kv)[i]) < 0)
                        return -ENOMEM;
        strv_free(*kv);
        *kv = TAKE_PTR(all);
        return 0;
}

/* Originals as "knob=value" and "irq.N=value" pairs, after "boot=<boot_id>" when there are
 * any and boot_id is known (NULL when there are none: the file is removed). */
static int originals_to_kv(const char *boot_id, const Device *d, char ***ret) {
        _cleanup_strv_free_ char **kv = NULL;
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (d->applied[k].original &&
                    (strv_extend(&kv, knob_to_string(k)) < 0 || strv_extend(&kv, d->applied[k].original) < 0))
                        return -ENOMEM;
        if (d->nr_before_override && d->applied[KNOB_ELEVATOR].original &&
            (strv_extend(&kv, ORIGINALS_NR_BEFORE_OVERRIDE_KEY) < 0 || strv_extend(&kv, d->nr_before_override) < 0))
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
        if (kv && written_to_kv(d, &kv) < 0)
                return -ENOMEM;
        if (kv_prepend_boot(boot_id, &kv) < 0)
                return -ENOMEM;
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
 * before every kernel write (manager_on_apply_submit()), where it used to write and fsync() the file
 * (and its directory) every time: on a disk re-added with its originals already stored, or a
 * second knob of the same run, that fsync() stood between the uevent and the write (issue 12
 * item 4). Now the file is written only when its content changes, and the save is a job on the
 * writer in the disk's lane (persist_submit()): the loop never waits for the state directory's
 * disk, and the kernel write submitted after it waits for it in the lane.
 */
void manager_persist_originals(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL, *snapshot = NULL;
        int r;

        if (!m->state || !(key = originals_key(d)))
                return;
        r = originals_to_kv(m->boot_id, d, &kv);
        if (r >= 0 && !kv && m->cli_dry_run)
                return;         /* --dry-run recorded nothing: an earlier run's file stays (manager_load_originals()) */
        if (r >= 0 && (snapshot = originals_snapshot(key, kv)) && streq_ptr(snapshot, d->originals_saved))
                return;         /* the file already holds exactly this (or will: its save is queued) */
        _cleanup_free_ char *text = NULL;
        PersistJob *p = NULL;
        if (r >= 0 && (!(text = state_format(STATE_ORIGINALS, key, kv)) || !(p = calloc(1, sizeof(PersistJob))) ||
                       !(p->name = strdup(d->name)) || (snapshot && !(p->snapshot = strdup(snapshot)))))
                r = -ENOMEM;
        if (r >= 0) {
                p->what = PERSIST_ORIGINALS;
                /* what the file holds once the save returns (a failed save clears it, so the next
                 * one writes; NULL on ENOMEM: the next save writes anyway) */
                free(d->originals_saved);
                d->originals_saved = TAKE_PTR(snapshot);
                /* the disk's lane: on disk before the kernel write submitted after it */
                r = persist_submit(m, d->name, STATE_ORIGINALS, key, text, TAKE_PTR(p));
        }
        persist_job_free(p);
        if (r >= 0 && kv && !strv_contains(m->originals_seen, key))
                (void) strv_extend(&m->originals_seen, key);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to persist original values, a crash would lose them: %m");
                d->originals_saved = mfree_str(d->originals_saved);
        }
}

static bool written_key(const char *k) {
        return startswith(k, APPLY_WRITTEN_PREFIX) || startswith(k, APPLY_INSTANCE_PREFIX) || startswith(k, APPLY_READBACK_PREFIX);
}

/* snapshot (originals_snapshot()) without what blkmqd wrote: the originals alone (NULL: ENOMEM). */
static char *snapshot_core(const char *snapshot) {
        _cleanup_strv_free_ char **l = NULL, **core = NULL;
        for (const char *p = snapshot;;) {
                const char *e = strchrnul(p, '\n');
                _cleanup_free_ char *line = strndup(p, e - p);
                if (!line || strv_extend(&l, line) < 0)
                        return NULL;
                if (!*e)
                        break;
                p = e + 1;
        }
        if (!l || !l[0] || strv_extend(&core, l[0]) < 0)
                return NULL;
        for (size_t i = 1; l[i] && l[i + 1]; i += 2)
                if (!written_key(l[i]) && (strv_extend(&core, l[i]) < 0 || strv_extend(&core, l[i + 1]) < 0))
                        return NULL;
        return strv_join(core, "\n");
}

void manager_persist_originals_before_write(Manager *m, Device *d) {
        assert(m);
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL, *snapshot = NULL, *core = NULL, *saved_core = NULL;

        if (m->state && d->originals_saved && (key = originals_key(d)) && originals_to_kv(m->boot_id, d, &kv) >= 0 &&
            (snapshot = originals_snapshot(key, kv)) && (core = snapshot_core(snapshot)) &&
            (saved_core = snapshot_core(d->originals_saved)) && streq(core, saved_core))
                return;         /* the originals are on disk: what is written is saved after the write */
        manager_persist_originals(m, d);
}

/*
 * Originals recorded by an earlier run that did not get to restore them (crash, kill -9), or
 * by this run before the disk was removed (said once, not on every re-add).
 */
void manager_load_originals(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL;
        unsigned irq;
        int r;

        if (!m->state || !(key = originals_key(d)))
                return;
        bool earlier_run = !strv_contains(m->originals_seen, key);
        r = state_load(m->state, STATE_ORIGINALS, key, &kv);
        if (m->cli_dry_run) {
                /* --dry-run writes nothing, at stop neither: what an earlier run (a crash) left to
                 * put back stays in the state directory for a blkmqd that writes */
                if (r >= 0 && kv && earlier_run) {
                        log_device_info(d->name, "Original values recorded by an earlier run are kept in the state directory for "
                                        "a blkmqd that writes: --dry-run does not put them back");
                        (void) strv_extend(&m->originals_seen, key);
                }
                return;
        }
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Stored original values unreadable%s: %m",
                                         r == -EBADMSG ? ", set aside as .corrupt" : "");
                return;
        }
        /* what the file holds: a save of the same is skipped (an entry ignored below makes the
         * next save differ, and rewrite the file without it) */
        free(d->originals_saved);
        d->originals_saved = originals_snapshot(key, kv);
        const char *stored_boot = NULL;
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                if (streq(kv[i], ORIGINALS_BOOT_KEY))
                        stored_boot = kv[i + 1];
        if (stored_boot && m->boot_id && !streq(stored_boot, m->boot_id)) {
                /* the machine rebooted since: the kernel's values are its own again, and what
                 * the disk has now is what a stop must leave (a file without a boot key, from an
                 * older blkmqd or an unknown boot id, is used as before) */
                log_device_info(d->name, "Original values recorded at an earlier boot (boot id %s) dropped: "
                                "the reboot put the kernel's own values back", stored_boot);
                d->originals_saved = mfree_str(d->originals_saved);
                manager_persist_originals(m, d);        /* nothing recorded yet: removes the file */
                return;
        }
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                if (streq(kv[i], ORIGINALS_BOOT_KEY))
                        continue;
                /* what blkmqd wrote: taken below (apply_adopt_written()), not an original */
                if (written_key(kv[i]))
                        continue;
                const char *of = startswith(kv[i], ORIGINALS_SOURCE_PREFIX);
                if (of) {
                        Knob sk = knob_from_string(of);
                        const char *of_dotted = startswith(of, "iosched.");
                        IoschedTunable st = of_dotted ? iosched_tunable_from_dotted(of_dotted) : _IOSCHED_TUNABLE_INVALID;
                        if (sk >= 0)
                                (void) free_and_strdup(&d->applied[sk].original_source, kv[i + 1]);
                        else if (st >= 0)
                                (void) free_and_strdup(&d->iosched[st].original_source, kv[i + 1]);
                        continue;
                }
                if (streq(kv[i], ORIGINALS_NR_BEFORE_OVERRIDE_KEY)) {
                        /* not an original: what an nr_requests override's "auto" puts back while
                         * blkmqd's elevator switch stands */
                        (void) free_and_strdup(&d->nr_before_override, kv[i + 1]);
                        log_device_debug(d->name, "nr_requests before the override under blkmqd's elevator switch: %s (stored)",
                                         kv[i + 1]);
                        continue;
                }
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
        if (kv && earlier_run) {
                /* the values that run wrote are blkmqd's: one someone else changed while
                 * blkmqd was down is "changed externally" at the first evaluation, as when
                 * running (not written over again) */
                r = apply_adopt_written(m->hostfs, d, kv);
                if (r > 0)
                        log_device_debug(d->name, "%d value(s) written by an earlier run still blkmqd's", r);
                (void) strv_extend(&m->originals_seen, key);
        }
}

/* ---- the measured speed ------------------------------------------------------------------ */

/*
 * Keep measured/<key> in step with d's class by measurement (policies/speed.h
 * speed_state_to_kv(), after "boot=<boot_id>" as an originals file): called when the class
 * changes by measurement, when the disk is removed and at the stop; written only when its
 * content changed (a new window without a class change is saved at the stop, not every
 * second of I/O). Nothing measured (and nothing stored): no file.
 */
void manager_persist_measured(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL, *joined = NULL, *text = NULL;
        PersistJob *p = NULL;

        if (!m->state || !(key = originals_key(d)))
                return;
        int r = speed_state_to_kv(&d->speed, &kv);
        if (r >= 0 && !kv && !d->measured_saved)
                return;         /* nothing measured, no file known to remove */
        if (r >= 0)
                r = kv_prepend_boot(m->boot_id, &kv);
        if (r >= 0 && !(joined = kv ? strv_join(kv, "\n") : strdup("")))
                r = -ENOMEM;
        if (r >= 0 && streq_ptr(joined, d->measured_saved))
                return;         /* the file holds this already (or will: its save is queued) */
        if (r >= 0 && (!(text = state_format(STATE_MEASURED, key, kv)) || !(p = calloc(1, sizeof(PersistJob))) ||
                       !(p->name = strdup(d->name)) || !(p->snapshot = strdup(joined))))
                r = -ENOMEM;
        if (r >= 0) {
                p->what = PERSIST_MEASURED;
                free(d->measured_saved);
                d->measured_saved = TAKE_PTR(joined);   /* a failed save clears it */
                r = persist_submit(m, d->name, STATE_MEASURED, key, text, TAKE_PTR(p));
        }
        persist_job_free(p);
        if (r >= 0 && kv && !strv_contains(m->measured_seen, key))
                (void) strv_extend(&m->measured_seen, key);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to persist the measured speed, a restart measures again: %m");
                d->measured_saved = mfree_str(d->measured_saved);
        }
}

/* "2026-12-02 16:20:01 UTC" of a stored wall-clock second count ("an unknown time"). */
static const char *stored_wall(char * const *kv, char *buf, size_t size) {
        uint64_t sec = 0;
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                if (streq(kv[i], "at_wall"))
                        (void) parse_u64(kv[i + 1], &sec);
        time_t t = (time_t) sec;
        struct tm tm;
        if (sec == 0 || !gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
                snprintf(buf, size, "an unknown time");
        return buf;
}

/*
 * The class by measurement an earlier run of this boot stored (or this run, before the disk
 * was last removed): taken at once, with its evidence and the time of its last change (the
 * hysteresis counts from there: a restart is no free class change). One stored at an earlier
 * boot is dropped and its file removed (docs/DESIGN-NOTES.md "Measured speed": the disk is
 * measured again by the boot's own I/O).
 */
void manager_load_measured(Manager *m, Device *d) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *key = NULL;
        char when[48];

        if (!m->state || !m->config.policy.speed.measure || !(key = originals_key(d)))
                return;
        int r = state_load(m->state, STATE_MEASURED, key, &kv);
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Stored measured speed unreadable%s: %m",
                                         r == -EBADMSG ? ", set aside as .corrupt" : "");
                return;
        }
        if (!kv)
                return;
        _cleanup_free_ char *joined = strv_join(kv, "\n");
        const char *stored_boot = NULL;
        for (size_t i = 0; kv[i] && kv[i + 1]; i += 2)
                if (streq(kv[i], ORIGINALS_BOOT_KEY))
                        stored_boot = kv[i + 1];
        SpeedRestored how = strv_contains(m->measured_seen, key) ? SPEED_RESTORED_READDED : SPEED_RESTORED_RESTART;
        if (stored_boot && m->boot_id && !streq(stored_boot, m->boot_id))
                r = -ESTALE;
        else
                r = speed_state_from_kv(&d->speed, kv, stats_now_usec(), how);
        if (r == -ESTALE) {
                log_device_info(d->name, "Stored speed measurement of an earlier boot (%s%s, measured at %s) dropped: "
                                "the disk is measured again by this boot's I/O", stored_boot ? "boot id " : "boot id unknown",
                                strempty(stored_boot), stored_wall(kv, when, sizeof(when)));
                free(d->measured_saved);
                d->measured_saved = TAKE_PTR(joined);   /* what the file holds: the save below removes it */
                manager_persist_measured(m, d);
                return;
        }
        if (r < 0) {
                log_device_warning_errno(d->name, r, "Stored measured speed is not valid, ignoring (the disk is measured again)");
                free(d->measured_saved);
                d->measured_saved = TAKE_PTR(joined);   /* the next save overwrites it */
                return;
        }
        free(d->measured_saved);
        d->measured_saved = TAKE_PTR(joined);
        if (r > 0) {
                if (!strv_contains(m->measured_seen, key))
                        (void) strv_extend(&m->measured_seen, key);
                log_device_info(d->name, "Stored speed measurement kept: %s, stored %s (measured at %s, %u class change%s)",
                                measured_speed_to_string(d->speed.measured),
                                how == SPEED_RESTORED_RESTART ? "by an earlier run of this boot" : "before the disk was last removed",
                                stored_wall(kv, when, sizeof(when)), d->speed.changes, d->speed.changes == 1 ? "" : "s");
                manager_speed_render(m, d);
        }
}

/* A disk just added: its identity checked against the others', then what is stored for it. */
void manager_load_stored(Manager *m, Device *d) {
        manager_check_identity(m, d);
        manager_load_overrides(m, d);
        manager_load_originals(m, d);
        manager_load_measured(m, d);
}

/* Module parameter originals an earlier run recorded (restored on stop, like a disk's). */
void manager_load_module_originals(Manager *m) {
        _cleanup_strv_free_ char **kv = NULL;
        int r;

        if (!m->state || m->cli_dry_run)       /* as a disk's (manager_load_originals()) */
                return;
        r = state_load(m->state, STATE_ORIGINALS, MODULES_STATE_KEY, &kv);
        const char *stored_boot = NULL;
        for (size_t i = 0; r >= 0 && kv && kv[i] && kv[i + 1]; i += 2)
                if (streq(kv[i], ORIGINALS_BOOT_KEY))
                        stored_boot = kv[i + 1];
        if (r >= 0 && stored_boot && m->boot_id && !streq(stored_boot, m->boot_id)) {
                /* as a disk's: the reboot put the module's own values back (its default, or
                 * zz-blkmqd.conf's), and a stop must not write an earlier boot's value over them */
                log_info("Original module parameters recorded at an earlier boot (boot id %s) dropped: the reboot "
                         "loaded the modules with their own values", stored_boot);
                manager_persist_module_originals(m);    /* nothing recorded: removes the file */
                return;
        }
        if (r >= 0)
                r = modules_load_originals(&m->modules, kv);    /* "boot" (no dot) is no parameter: skipped */
        if (r < 0)
                log_warning_errno(r, "Stored original module parameters unreadable, ignoring: %m");
}

/* Keep originals/module-parameters in step with the runtime module values blkmqd changed. */
void manager_persist_module_originals(Manager *m) {
        _cleanup_strv_free_ char **kv = NULL;
        _cleanup_free_ char *joined = NULL;
        if (!m->state)
                return;
        int r = modules_originals(&m->modules, &kv);
        if (r >= 0 && !kv && m->cli_dry_run)
                return;         /* --dry-run recorded nothing: an earlier run's file stays */
        if (r >= 0)
                r = kv_prepend_boot(m->boot_id, &kv);   /* the boot they belong to, as a disk's */
        if (r >= 0 && !(joined = strv_join(kv, "\n")))
                r = -ENOMEM;
        if (r >= 0 && streq_ptr(joined, m->module_originals_saved))
                return;         /* unchanged: not rewritten on every uevent */
        _cleanup_free_ char *text = NULL;
        PersistJob *p = NULL;
        if (r >= 0 && (!(text = state_format(STATE_ORIGINALS, MODULES_STATE_KEY, kv)) || !(p = calloc(1, sizeof(PersistJob))) ||
                       !(p->snapshot = strdup(joined))))
                r = -ENOMEM;
        if (r >= 0) {
                p->what = PERSIST_MODULE_ORIGINALS;
                free(m->module_originals_saved);
                m->module_originals_saved = TAKE_PTR(joined);   /* a failed save clears it */
                r = persist_submit(m, MODULES_LANE, STATE_ORIGINALS, MODULES_STATE_KEY, text, TAKE_PTR(p));
        }
        persist_job_free(p);
        if (r < 0) {
                log_warning_errno(r, "Failed to persist original module parameters, a restart would lose them: %m");
                m->module_originals_saved = mfree_str(m->module_originals_saved);
        }
}
