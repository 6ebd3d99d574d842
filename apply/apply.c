/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apply.h"
#include "apply-net.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

/* WriteJob.tag bit: the job puts a recorded original back within an apply run */
#define TAG_RESTORE 0x100
#define TAG_BEFORE_OVERRIDE 0x200       /* nr_requests back to Device.nr_before_override */

/*
 * The steps of a run, in order: the elevator first (a switch starts the new elevator from its
 * defaults and resets nr_requests), rq_affinity and nr_requests, then the elevator's tunables
 * (queue/iosched/: a nr_requests write resets mq-deadline's async_depth, block/mq-deadline.c
 * dd_depth_updated()), then the other knobs and the IRQ vectors. A restore goes the same way:
 * the elevator blkmqd found comes back first, then nr_requests, then the tunables it had.
 */
#define STEP_IOSCHED _KNOB_MAX
#define N_STEPS (_KNOB_MAX + 1)
static_assert(KNOB_ELEVATOR == 0 && KNOB_RQ_AFFINITY == 1 && KNOB_NR_REQUESTS == 2, "run_step_knob() takes the first three knobs in order");
/* Step i of a run: the elevator (0), rq_affinity (1), nr_requests (2), the tunables (3), then every other knob in Knob order. */
static int run_step_knob(int i) {
        return i <= KNOB_NR_REQUESTS ? i : i == KNOB_NR_REQUESTS + 1 ? STEP_IOSCHED : i - 1;
}

/* The name of step k for messages: the knob, or "iosched". */
static const char *step_name(int k) {
        return k == STEP_IOSCHED ? "iosched" : knob_to_string(k);
}

/* The sysfs queue attribute behind each queue knob (block/blk-sysfs.c). */
static const char * const queue_attr[_KNOB_MAX] = {
        [KNOB_ELEVATOR]    = "scheduler",
        [KNOB_RQ_AFFINITY] = "rq_affinity",
        [KNOB_NR_REQUESTS] = "nr_requests",
};

WriteErrorClass apply_classify_error(int error) {
        switch (error < 0 ? -error : error) {
        case EAGAIN:
        case EBUSY:
        case EINTR:
                return WRITE_ERROR_TRANSIENT;
        case ENOENT:
        case EINVAL:
        case EACCES:
        case EROFS:
        case EPERM:
        case EIO:
                return WRITE_ERROR_UNSUPPORTED;
        default:
                return WRITE_ERROR_OTHER;
        }
}

void apply_dry_run(const Device *d, Applied *a, const char *label, const char *current, const char *wanted) {
        if (a->state != APPLY_DRY_RUN || !streq_ptr(a->value, wanted))
                log_device_info(d->name, "dry-run: would set %s %s -> %s", label, current, wanted);
        applied_set(a, APPLY_DRY_RUN, 0, "would write %s (now %s)", wanted, current);
        free_and_strdup(&a->value, wanted);
}

/* A queue knob's value from the text of its sysfs file (elevator: the bracketed name). */
static int parse_knob(Knob k, const char *text, char **ret) {
        if (k != KNOB_ELEVATOR) {
                *ret = strdup(text);
                if (!*ret)
                        return -ENOMEM;
                strip_newline(*ret);
                return 0;
        }
        int r = parse_scheduler(text, NULL, ret, NULL);
        if (r < 0)
                return r;
        return *ret ? 0 : -EOPNOTSUPP;
}

static void knob_path(char *buf, size_t size, const char *disk, Knob k) {
        snprintf(buf, size, "block/%s/queue/%s", disk, queue_attr[k]);
}

/* Current value of a queue knob as the kernel reports it (elevator: the bracketed name). */
static int read_knob(HostFs *h, const char *disk, Knob k, char **ret) {
        _cleanup_free_ char *s = NULL;
        char path[PATH_MAX];

        knob_path(path, sizeof(path), disk, k);
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r < 0)
                return r;
        return parse_knob(k, s, ret);
}

/* A job writing value to a queue knob of d (read back when read_back); before: for the log. */
static int knob_job(const Device *d, Knob k, const char *value, const char *before, bool read_back, WriteJob **ret) {
        char path[PATH_MAX];
        WriteJob *j = write_job_new(d->name);

        knob_path(path, sizeof(path), d->name, k);
        if (!j || write_job_add(j, HOSTFS_SYSFS, path, value, read_back) < 0 ||
            (before && !(j->ops[0].before = strdup(before)))) {
                write_job_free(j);
                return -ENOMEM;
        }
        j->tag = k;
        *ret = j;
        return 0;
}

/*
 * The debug line before each write of j: said when the job is handed over (after the originals
 * it changes are saved), so the line's time is when the write is issued.
 */
static void log_job_writes(const Device *d, const WriteJob *j) {
        for (size_t i = 0; i < j->n_ops; i++)
                if (j->ops[i].kind == HOSTFS_PROCFS)
                        log_device_debug(d->name, "Writing \"%s\" to procfs \"%s\"", j->ops[i].value, j->ops[i].path);
                else
                        log_device_debug(d->name, "Writing \"%s\" to \"%s\"", j->ops[i].value, j->ops[i].path);
}

/*
 * Did r (a read or write of one of d's files) fail because the disk went away? ENOENT (the
 * file or its directory was removed before the open), ENODEV (kernfs: the node was removed
 * while the file was open, fs/kernfs/file.c kernfs_get_active()) or EBUSY (queue/scheduler
 * and queue/nr_requests only try to take the tag set's update_nr_hwq_lock, block/elevator.c
 * elv_iosched_store(), and fail while del_gendisk() runs: seen on 6.18 during
 * LOOP_CTL_REMOVE) while block/<name> is gone (del_gendisk() removes the link early) or is
 * another disk's now (a re-add racing the removal: a new kernfs node, a new inode), or its
 * queue/ is gone (blk_unregister_queue()). Then one line says so for the disk's lifetime,
 * instead of a write failure per knob and per restore. The same errors while the disk is
 * still all there are queue_unregistered()'s, or a write failure.
 */
static bool disk_vanished(HostFs *h, Device *d, int r) {
        char path[PATH_MAX];
        struct stat st;

        if (d->vanished)
                return true;
        if ((r != -ENOENT && r != -ENODEV && r != -EBUSY) || !h)
                return false;
        snprintf(path, sizeof(path), "block/%s", d->name);
        bool gone = hostfs_stat(h, HOSTFS_SYSFS, path, &st) < 0 ||
                    (d->facts && d->facts->sysfs_ino && (uint64_t) st.st_ino != d->facts->sysfs_ino);
        snprintf(path, sizeof(path), "block/%s/queue", d->name);
        if (!gone && hostfs_exists(h, HOSTFS_SYSFS, path))
                return false;
        d->vanished = true;
        log_device_full(LOG_INFO, r, d->name, NULL, NULL, "Device vanished (%s while blkmqd wrote or read it: sysfs block/%s "
                        "is gone or is another disk's now); nothing more is written to it",
                        strerrorname_np(-r) ?: "error", d->name);
        return true;
}

/*
 * Did a write of k fail because the kernel refuses an elevator switch on a queue that is not
 * registered? ENOENT from queue/scheduler while the file is there (after disk_vanished() said
 * the disk is still this one): elv_iosched_store() (block/elevator.c) returns it when the queue
 * is not registered, and since 6.16 when QUEUE_FLAG_NO_ELV_SWITCH is set. del_gendisk()
 * (block/genhd.c) sets that flag before it removes anything from sysfs, and
 * blk_register_queue() (block/blk-sysfs.c) makes queue/ before it sets QUEUE_FLAG_REGISTERED.
 * Both seen on 6.18 (LOOP_CTL_REMOVE, LOOP_CTL_ADD). So the disk is being removed or added,
 * and its "remove" or "add" uevent is still to come: this run stops (nothing more is written
 * to the disk), and the disk is evaluated again at its next uevent (or the next periodic
 * verify). No write failure, no backoff: the knob is not the disk's problem.
 */
static bool queue_unregistered(HostFs *h, Device *d, Knob k, int r) {
        char path[PATH_MAX];

        if (k != KNOB_ELEVATOR || r != -ENOENT || !h || d->vanished)
                return false;
        knob_path(path, sizeof(path), d->name, k);
        if (!hostfs_exists(h, HOSTFS_SYSFS, path))
                return false;           /* the attribute itself is missing */
        d->run.unregistered = true;
        log_device_info(d->name, "Queue not registered (ENOENT writing queue/scheduler while block/%s is still this disk): "
                        "it is being removed or added; nothing more is written to it until its next uevent", d->name);
        return true;
}

/*
 * Did a switch of queue/scheduler to wanted fail because the kernel has no such elevator
 * registered yet (r: the write's error)? EINVAL for a name queue/scheduler did not list when
 * blkmqd decided (DiskFacts.elevators: elv_iosched_show() lists registered elevators only) that
 * a module may still provide: an in-tree elevator (mq-deadline, kyber, bfq:
 * elevator_name_in_tree()) or one a module of the running release provides (modules.dep,
 * ELEVATOR_LOADABLE). The kernel asks for the module and looks the name up once:
 *   6.1  block/elevator.c elevator_change(): elevator_find_get(), request_module("%s-iosched"),
 *        elevator_find_get() again, -EINVAL when it finds none;
 *   6.12 block/blk-sysfs.c queue_attr_store() calls elv_iosched_load_module() (request_module(),
 *        its result ignored) before it freezes the queue ("block: Prevent deadlocks when
 *        switching elevators", 6.11), then elevator_change() returns -EINVAL when
 *        elevator_find_get() finds none;
 *   later (the code with QUEUE_FLAG_NO_ELV_SWITCH and struct elv_change_ctx, 6.16): the load
 *        is in elv_iosched_store(), the lookup in elevator_switch(): the same -EINVAL.
 * So the module had not registered the elevator when the kernel looked: not installed where
 * modprobe looks yet (a disk added while only the initramfs is mounted, modules installed after
 * boot), or still loading (another request_module() of it in flight returned early: seen on
 * 6.1, tests/vm/scenarios/usb.sh). That may pass: the switch is retried with backoff. A listed
 * elevator refused with EINVAL, or a name no module can give, stays unsupported.
 */
static bool elevator_not_loaded(const Device *d, Knob k, int r, const char *wanted) {
        if (k != KNOB_ELEVATOR || r != -EINVAL || !d->facts || !wanted || streq(wanted, "none") ||
            strv_contains(d->facts->elevators, wanted))
                return false;
        return elevator_name_in_tree(wanted) || strv_contains(d->facts->elevators_loadable, wanted);
}

static const char * const knob_record_message_id[_KNOB_RECORD_MAX] = {
        [KNOB_RECORD_WRITE]    = BLKMQD_MESSAGE_WRITE,
        [KNOB_RECORD_RESTORE]  = BLKMQD_MESSAGE_RESTORE,
        [KNOB_RECORD_EXTERNAL] = BLKMQD_MESSAGE_EXTERNAL_CHANGE,
        [KNOB_RECORD_FAILED]   = BLKMQD_MESSAGE_WRITE_FAILED,
};

/* Written and read on the loop thread only (the finish steps run there: host/writer.h). */
static uint64_t knob_records[_KNOB_RECORD_MAX];

void apply_count_knob_record(KnobRecord what) {
        if (what >= 0 && what < KNOB_RECORD_NOTE)
                knob_records[what]++;
}

uint64_t apply_knob_records(KnobRecord what) {
        return what >= 0 && what < KNOB_RECORD_NOTE ? knob_records[what] : 0;
}

void apply_log_knob(const Device *d, const char *knob, KnobRecord what, int level, int error, const char *old,
                    const char *new, const char *fmt, ...) {
        _cleanup_free_ char *f_knob = NULL, *f_old = NULL, *f_new = NULL, *f_rule = NULL;
        const char *fields[5] = {};
        char msg[2048];
        size_t n = 0;
        va_list ap;

        assert(d);
        assert(knob);
        assert(what >= 0 && what < _KNOB_RECORD_MAX);
        if (what != KNOB_RECORD_NOTE)
                knob_records[what]++;
        /* a field that cannot be had (ENOMEM) is left out; the message still says it all */
        if (asprintf(&f_knob, "BLKMQD_KNOB=%s", knob) >= 0)
                fields[n++] = f_knob;
        if (old && asprintf(&f_old, "BLKMQD_OLD_VALUE=%s", old) >= 0)
                fields[n++] = f_old;
        if (new && asprintf(&f_new, "BLKMQD_NEW_VALUE=%s", new) >= 0)
                fields[n++] = f_new;
        /* a write says which rule decided it (the decision lines are debug at a first evaluation) */
        Knob k = knob_from_string(knob);
        const PlanEntry *e = what == KNOB_RECORD_WRITE && k >= 0 ? plan_decision(&d->plan, k) : NULL;
        if (e && e->rule && asprintf(&f_rule, "BLKMQD_RULE=%s", e->rule) >= 0)
                fields[n++] = f_rule;
        int saved = errno;
        errno = error < 0 ? -error : error;     /* %m is the record's error */
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        errno = saved;
        log_full(level, error, d->name, knob_record_message_id[what], fields, __FILE__, __LINE__, __func__, "%s%s%s%s", msg,
                 f_rule ? " (rule " : "", f_rule ? e->rule : "", f_rule ? ")" : "");
}

/* A write of knob failed with r, of class c (fmt: what was written). */
#define log_write_failed(d, knob, r, c, old, new, fmt, ...)                                              \
        apply_log_knob(d, knob, KNOB_RECORD_FAILED, LOG_WARNING, r, old, new, fmt ": %m%s", __VA_ARGS__, \
                       (c) == WRITE_ERROR_UNSUPPORTED ? ", not retrying" : ", will retry with backoff")
/* Someone else changed knob from old (what blkmqd wrote or kept) to new. */
#define log_external(d, knob, level, old, new, ...) \
        apply_log_knob(d, knob, KNOB_RECORD_EXTERNAL, level, 0, old, new, __VA_ARGS__)
/* blkmqd wrote new over old / put back new (the original) over old. */
#define log_write(d, knob, old, new, ...) apply_log_knob(d, knob, KNOB_RECORD_WRITE, LOG_NOTICE, 0, old, new, __VA_ARGS__)
#define log_restore(d, knob, old, new, ...) apply_log_knob(d, knob, KNOB_RECORD_RESTORE, LOG_NOTICE, 0, old, new, __VA_ARGS__)

bool apply_restore_may_write(Applied *a, const ApplyOptions *o) {
        if (o->verify_only)
                return false;
        if (o->dry_run) {
                applied_set(a, APPLY_DRY_RUN, 0, "would put back %s, the value before blkmqd changed it", a->original);
                return false;
        }
        return true;
}

/* ---- backoff ---------------------------------------------------------------------------------- */

uint64_t apply_backoff_delay(unsigned level) {
        uint64_t d = APPLY_BACKOFF_FIRST_USEC;
        for (unsigned i = 1; i < level && d < APPLY_BACKOFF_MAX_USEC; i++)
                d *= 2;
        return MIN(d, APPLY_BACKOFF_MAX_USEC);
}

static uint64_t clock_now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* One more failed write or overwritten rewrite at now: the next write waits. A level whose
 * last event is older than twice the longest delay starts afresh. */
static void backoff_bump(Backoff *b, uint64_t now) {
        if (b->level > 0 && now - b->last_usec > 2 * APPLY_BACKOFF_MAX_USEC)
                b->level = 0;
        b->level++;
        b->last_usec = now;
        b->retry_usec = now + apply_backoff_delay(b->level);
}

static bool backoff_waiting(const Backoff *b, uint64_t now) {
        return b->level > 0 && now < b->retry_usec;
}

static void retry_earliest(const Applied *a, uint64_t after, uint64_t *best) {
        if (a->state == APPLY_ERROR && a->retry.level > 0 && a->retry.retry_usec > after &&
            (*best == 0 || a->retry.retry_usec < *best))
                *best = a->retry.retry_usec;
}

uint64_t apply_next_retry_usec(const Device *d, uint64_t after) {
        uint64_t best = 0;

        for (Knob k = 0; k < _KNOB_MAX; k++)
                retry_earliest(&d->applied[k], after, &best);
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                retry_earliest(&d->iosched[t], after, &best);
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                const IrqApplied *ia = &d->irq_applied[i];
                if (ia->retry.level > 0 && ia->retry.retry_usec > after && (best == 0 || ia->retry.retry_usec < best))
                        best = ia->retry.retry_usec;
        }
        return best;
}

/* Seconds (rounded up) until the next write is allowed. */
static unsigned backoff_left_sec(const Backoff *b, uint64_t now) {
        return b->retry_usec > now ? (unsigned) ((b->retry_usec - now + 999999) / 1000000) : 0;
}

/* blkmqd's value was found in place: a write war is over once it held for twice the last delay.
 * Returns true when a war (level >= 2) ended now. */
static bool war_held(Backoff *b, uint64_t now) {
        if (b->level == 0 || now < b->last_usec + 2 * apply_backoff_delay(b->level))
                return false;
        bool war = b->level >= 2;
        *b = (Backoff) {};
        return war;
}

/* The time of d's run (ApplyOptions.now_usec, else when it started): every backoff decision
 * of one pass uses it. */
static uint64_t run_now_usec(const Device *d) {
        return d->run.now_usec ?: clock_now_usec();
}


static int iosched_record_before_switch(HostFs *h, Device *d, const char *elevator);
static int iosched_drop_switch_originals(Device *d, const char *elevator);
static uint64_t iosched_instance(HostFs *h, const char *disk);
static uint64_t nr_requests_instance(HostFs *h, const char *disk);

/* A job putting the recorded original of queue knob k back (within an apply run). */
static int restore_job(const Device *d, Knob k, WriteJob **ret) {
        int r = knob_job(d, k, d->applied[k].original, NULL, false, ret);
        if (r >= 0)
                (*ret)->tag |= TAG_RESTORE;
        return r;
}

/*
 * nr's state after blkmqd's elevator switch el_before -> el_after reset nr_requests from before
 * to after: what applied/nr_requests says, whether the switch is this instance's own write
 * (queue_knob_finish()) or stands from an earlier instance of the disk or an earlier run
 * (queue_knob_no_wish()), so that a disk reads the same after a history as from scratch.
 */
static void nr_reset_said(Applied *nr, const char *before, const char *after, const char *el_before, const char *el_after) {
        applied_set(nr, APPLY_UNMANAGED, 0,
                    "reset by the kernel from %s to %s when blkmqd switched the elevator %s -> %s; %s comes back when the elevator is restored",
                    before, after, el_before, el_after, strna(nr->original));
}

/*
 * The plan has no wish for k (policy keeps it, the override went back to "auto", or the
 * disk is not managed: policy/enabled=0): a value blkmqd wrote is put back now, not at stop
 * (a job, finished by restore_in_run_finish()). nr_requests recorded only because blkmqd
 * switched the elevator (the switch resets it) is the elevator's to put back: it stays
 * recorded while that switch is in force. Returns originals dropped, or -ENOMEM.
 */
static int queue_knob_no_wish(HostFs *h, Device *d, Knob k, const ApplyOptions *o, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        _cleanup_free_ char *current = NULL;

        if (!a->original) {
                a->value = mfree_str(a->value);
                if (a->state != APPLY_UNMANAGED || a->message)
                        applied_set(a, APPLY_UNMANAGED, 0, NULL);
                return 0;
        }
        if (k == KNOB_NR_REQUESTS && d->applied[KNOB_ELEVATOR].original) {
                _cleanup_free_ char *cur = NULL;
                if (a->value && d->nr_before_override && !streq(d->nr_before_override, a->value) &&
                    read_knob(h, d->name, k, &cur) >= 0 && streq(cur, a->value)) {
                        /* the override went while blkmqd's switch stands: the value the kernel
                         * gave that elevator comes back (nr_before_override_finish()); the
                         * original stays for the elevator before the switch */
                        if (!apply_restore_may_write(a, o))
                                return 0;
                        if (knob_job(d, k, d->nr_before_override, cur, true, ret_job) < 0)
                                return -ENOMEM;
                        (*ret_job)->tag |= TAG_BEFORE_OVERRIDE;
                        return 0;
                }
                if (a->value) {
                        /* blkmqd's nr_requests under blkmqd's elevator, the value before it
                         * unknown: the recorded value belongs to the elevator before the
                         * switch and may not even be valid now */
                        applied_set(a, APPLY_UNMANAGED, 0,
                                    "%s stays: %s belongs to the elevator before blkmqd's switch and comes back with it",
                                    a->value, a->original);
                        a->value = mfree_str(a->value);
                        return 0;
                }
                /* blkmqd's switch stands from before this instance of the disk (it was removed
                 * and added again, or blkmqd started again, its originals kept): said as the
                 * switch said it */
                const Applied *el = &d->applied[KNOB_ELEVATOR];
                if (a->state == APPLY_UNMANAGED && !a->message && el->state == APPLY_OK && el->value &&
                    !streq(el->value, el->original) && read_knob(h, d->name, k, &current) >= 0 &&
                    !streq(current, a->original))
                        nr_reset_said(a, a->original, current, el->original, el->value);
                return 0;
        }
        int r = read_knob(h, d->name, k, &current);
        if (r >= 0 && streq(current, a->original)) {
                /* nothing of blkmqd's left to undo */
                a->original = mfree_str(a->original);
                a->value = mfree_str(a->value);
                applied_set(a, APPLY_UNMANAGED, 0, NULL);
                return 1;
        }
        if (r >= 0 && a->value && !streq(current, a->value)) {
                /* only a value that still is blkmqd's goes back: someone else's stays theirs */
                applied_set(a, APPLY_UNMANAGED, 0, "changed externally to %s since blkmqd wrote %s: not blkmqd's to put back",
                            current, a->value);
                a->original = mfree_str(a->original);
                a->value = mfree_str(a->value);
                return 1;
        }
        if (!apply_restore_may_write(a, o))
                return 0;
        return restore_job(d, k, ret_job) < 0 ? -ENOMEM : 0;
}

/*
 * Decide one queue knob on the loop thread: read the current value, compare, record the
 * original. Returns the number of originals dropped (the caller persists them) or -ENOMEM;
 * *ret_job gets the write when one is needed (finished by queue_knob_finish()).
 */
static int queue_knob_decide(HostFs *h, Device *d, Knob k, const ApplyOptions *o, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        Applied *nr = &d->applied[KNOB_NR_REQUESTS];
        ApplyRun *run = &d->run;
        const char *wanted = d->plan.manage ? plan_get(&d->plan, k) : NULL, *knob = knob_to_string(k);
        _cleanup_free_ char *current = NULL;
        uint64_t now = o->now_usec ?: clock_now_usec();
        bool reassert = false;
        int r, dropped_stale = 0;

        run->knob_reassert = run->knob_new_original = run->knob_nr_recorded = run->knob_reapply = false;
        run->knob_prev_error = 0;
        /* the elevator whose module had not loaded is no longer wanted: its retries are over */
        if (k == KNOB_ELEVATOR && d->elevator_unloaded && !streq_ptr(wanted, d->elevator_unloaded))
                d->elevator_unloaded = mfree_str(d->elevator_unloaded);
        if (!wanted)
                return queue_knob_no_wish(h, d, k, o, ret_job);
        /* refused in a way retrying cannot fix: said once, never written again */
        bool refused = a->state == APPLY_UNSUPPORTED && streq_ptr(a->value, wanted);

        r = read_knob(h, d->name, k, &current);
        if (r < 0 && refused)
                return 0;
        if (refused) {
                if (!streq(current, wanted))
                        return 0;
                /* someone else gave the disk what blkmqd wanted and could not write: the
                 * refusal is the past, the value is in place (kept), also for a verify; an
                 * outcome is what the kernel has now, not what the last write met */
                applied_set(a, a->original ? APPLY_OK : APPLY_KEPT, 0, NULL);
                a->retry = (Backoff) {};
                return 0;
        }
        if (r < 0) {
                applied_set(a, APPLY_ERROR, r, "cannot read queue/%s: %s%s", queue_attr[k], strerror(-r),
                            disk_vanished(h, d, r) ? " (the disk vanished)" : "");
                return 0;
        }

        /* An elevator switch since blkmqd wrote nr_requests (queue/iosched is a new directory:
         * the elevator was set up again, by anyone, also away and back) reset it: that is no
         * one's value, it is written again like the tunables. */
        bool nr_reset = false;
        if (k == KNOB_NR_REQUESTS && IN_SET(a->state, APPLY_OK, APPLY_EXTERNAL) && streq_ptr(a->value, wanted) && !streq(current, wanted) &&
            d->nr_requests_ino) {
                uint64_t ino = nr_requests_instance(h, d->name);
                nr_reset = ino && ino != d->nr_requests_ino;
                if (nr_reset && o->verify_only) {
                        applied_set(a, APPLY_EXTERNAL, 0, "reset to %s by an elevator switch since blkmqd wrote %s; written again at the "
                                    "next evaluation", current, wanted);
                        d->iosched_reset = true;
                        return 0;
                }
                /* said once, with the write (queue_knob_finish()), or already by this run's own
                 * elevator switch */
                run->knob_reapply = nr_reset && !run->nr_reset_said;
                /* The original recorded belongs to the elevator that ran when it was recorded:
                 * while blkmqd's switch stands, the one before it (put back after the elevator).
                 * Someone else's elevator that was switched again (their kyber, then their none)
                 * has a new value of its own: what the reset left is the original now, not the
                 * 256 of their kyber (a restore could not write it under none) */
                if (nr_reset && !o->dry_run && a->original && d->applied[KNOB_ELEVATOR].state == APPLY_EXTERNAL &&
                    !d->applied[KNOB_ELEVATOR].original) {
                        a->original = mfree_str(a->original);
                        dropped_stale = 1;
                }
        }

        /* Someone else changed a value we wrote, or one the plan found in place (kept: the same
         * rule, or a value an admin sets between two evaluations would be switched back
         * silently at the next uevent, and never noticed by a verify). */
        if (!nr_reset && IN_SET(a->state, APPLY_OK, APPLY_EXTERNAL, APPLY_KEPT) && streq_ptr(a->value, wanted) &&
            !streq(current, wanted)) {
                if (a->state != APPLY_EXTERNAL)
                        a->external_kept = a->state == APPLY_KEPT;
                const char *how = a->external_kept ? "blkmqd's plan kept" : "blkmqd wrote";
                if (!o->reassert) {
                        /* Report once, do not fight. */
                        bool transition = a->state != APPLY_EXTERNAL;
                        if (transition)
                                log_external(d, knob, LOG_NOTICE, wanted, current, "%s changed externally to %s (%s %s); leaving it (Reassert=no)",
                                             knob, current, how, wanted);
                        applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (%s %s; it is no longer blkmqd's to restore)",
                                    current, how, wanted);
                        /* Someone else owns the value now: restoring our original would clobber it.
                         * So is the nr_requests their elevator switch reset. */
                        bool had = a->original;
                        a->original = mfree_str(a->original);
                        if (k == KNOB_ELEVATOR && transition && nr->original) {
                                /* the recorded nr_requests belongs to an elevator that no longer
                                 * runs; a value of blkmqd's (an override) is written again over
                                 * their switch's reset, and what it finds then is recorded. Only
                                 * when their switch is noticed: at every later look the recorded
                                 * one is that, their elevator's value (queue_knob_decide() drops
                                 * it when their elevator is switched again). */
                                nr->original = mfree_str(nr->original);
                                if (!nr->value)
                                        applied_set(nr, APPLY_UNMANAGED, 0, NULL);
                                had = true;
                        }
                        if (k == KNOB_ELEVATOR)
                                d->nr_before_override = mfree_str(d->nr_before_override);
                        /* and the tunables recorded before blkmqd's switch */
                        if (k == KNOB_ELEVATOR && iosched_drop_switch_originals(d, NULL) > 0)
                                had = true;
                        return had || transition;       /* originals changed: the caller persists them */
                }
                if (o->verify_only) {
                        /* Reassert=yes, but a verify writes nothing: the next evaluation rewrites it. */
                        applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (%s %s); Reassert=yes: rewritten at the next evaluation",
                                    current, how, wanted);
                        return 0;
                }
                if (o->dry_run)
                        return 0;
                if (backoff_waiting(&a->war, now)) {
                        applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s again (%s %s); write war: Reassert=yes rewrites it in %u s",
                                    current, how, wanted, backoff_left_sec(&a->war, now));
                        return 0;
                }
                reassert = true;
        }
        /* a verify writes nothing, but a value back where blkmqd wants it is no longer someone
         * else's: the state says so now, not at the next evaluation */
        if (o->verify_only && !(a->state == APPLY_EXTERNAL && streq(current, wanted)))
                return 0;

        if (streq(current, wanted)) {
                /* "ok" when the value is blkmqd's doing (an original is recorded, possibly by
                 * an earlier run); otherwise nothing was needed. The original itself wanted
                 * again is no longer blkmqd's doing. */
                bool dropped = a->original && streq(a->original, wanted);
                if (dropped)
                        a->original = mfree_str(a->original);
                applied_set(a, a->original ? APPLY_OK : APPLY_KEPT, 0, NULL);
                a->retry = (Backoff) {};
                free_and_strdup(&a->value, wanted);
                if (k == KNOB_ELEVATOR)         /* in place now (someone else's switch loaded it) */
                        d->elevator_unloaded = mfree_str(d->elevator_unloaded);
                /* the elevator instance the value is in place under, as after blkmqd's own write
                 * (queue_knob_finish()): a daemon started again over its earlier write (kill -9)
                 * knew none, and took someone's switch away and back, which resets it, for their
                 * change (the elevator tunables do the same, iosched_decide()) */
                if (k == KNOB_NR_REQUESTS)
                        d->nr_requests_ino = nr_requests_instance(h, d->name);
                if (war_held(&a->war, now))
                        apply_log_knob(d, knob, KNOB_RECORD_NOTE, LOG_INFO, 0, NULL, wanted, "%s %s held since blkmqd's last rewrite: write war over",
                                       knob, wanted);
                return dropped;
        }

        if (o->dry_run) {
                apply_dry_run(d, a, knob, current, wanted);
                return 0;
        }

        /* Policy wants the recorded original back ("auto" after an override whose class plan
         * keeps the value the disk had): a restore, after which the knob is not blkmqd's. */
        if (a->original && streq(a->original, wanted))
                return restore_job(d, k, ret_job) < 0 ? -ENOMEM : 0;

        /* A failed write that may pass is retried with backoff, not at every evaluation. */
        if (a->state == APPLY_ERROR && a->error && streq_ptr(a->value, wanted)) {
                if (backoff_waiting(&a->retry, now))
                        return 0;
                run->knob_prev_error = a->error;
        }

        /* Recorded before the write is handed over (a crash while it hangs must not lose it);
         * dropped again if the kernel refuses the write (then nothing changed). */
        if (!a->original) {
                if (free_and_strdup(&a->original, current) < 0)
                        return -ENOMEM;
                run->knob_new_original = true;
                /* blkmqd writes over another tool's value: whose it is, for the stop */
                Ownership own = d->plan.owner[k];
                if (free_and_strdup(&a->original_source,
                                    own == OWNERSHIP_CORRECTED || own == OWNERSHIP_OVERRIDDEN ? d->plan.owner_source[k] : NULL) < 0)
                        return -ENOMEM;
        }
        /* an override over the value the kernel gave blkmqd's elevator at its switch (not over
         * blkmqd's own earlier write): kept for the override's "auto" (queue_knob_no_wish()) */
        if (k == KNOB_NR_REQUESTS && d->applied[KNOB_ELEVATOR].original && !streq_ptr(a->value, current) &&
            free_and_strdup(&d->nr_before_override, current) < 0)
                return -ENOMEM;
        free_and_strdup(&a->value, wanted);
        run->knob_reassert = reassert;

        /* An elevator switch resets nr_requests (blk_mq_init_sched(): 2 * min(depth, 128);
         * to none: the tag set depth): record nr_requests as it is now, before the switch,
         * so a restore (elevator first) finds the value that belongs to the original
         * elevator, and say what the switch did to it (queue_knob_finish()). */
        d->run.nr_before[0] = 0;
        /* ... and so does every tunable of the elevator; those of the elevator blkmqd found
         * (its original recorded just now) come back after it is restored */
        if (k == KNOB_ELEVATOR && run->knob_new_original) {
                run->knob_iosched_recorded = iosched_record_before_switch(h, d, current) > 0;
                /* a switch of blkmqd's starts anew: a value before an override under an earlier
                 * switch of blkmqd's (since restored) is no one's now (and is not stored either,
                 * manager/persist.c: only while an elevator original is recorded) */
                d->nr_before_override = mfree_str(d->nr_before_override);
        }
        if (k == KNOB_ELEVATOR) {
                _cleanup_free_ char *depth = NULL;
                if (read_knob(h, d->name, KNOB_NR_REQUESTS, &depth) >= 0) {
                        snprintf(d->run.nr_before, sizeof(d->run.nr_before), "%s", depth);
                        if (!nr->original) {
                                nr->original = TAKE_PTR(depth);
                                run->knob_nr_recorded = true;
                        }
                }
        }

        /* the write (and its read back) goes to a worker: see queue_knob_finish() */
        return knob_job(d, k, wanted, current, true, ret_job) < 0 ? -ENOMEM : dropped_stale;
}

/*
 * The switch of d's elevator from current to wanted failed with EINVAL because the kernel has
 * no wanted registered yet (elevator_not_loaded()): a failure that may pass, retried with
 * backoff (at its backoff time: manager/verify.c manager_update_retry_timer(); or at the disk's
 * next evaluation).
 * applied/elevator says what failed, why and when the next try is; the first failure is logged
 * as a warning, the others at debug level. Returns 1 (explain changes: the caller refreshes).
 */
static int elevator_not_loaded_finish(Device *d, const char *current, const char *wanted, uint64_t now, const char *late) {
        Applied *a = &d->applied[KNOB_ELEVATOR];
        bool again = streq_ptr(d->elevator_unloaded, wanted) && a->retry.level > 0;
        _cleanup_free_ char *listed = strv_join(d->facts->elevators, " ");

        if (!again)
                a->retry = (Backoff) {};
        backoff_bump(&a->retry, now);
        unsigned next = (unsigned) (apply_backoff_delay(a->retry.level) / 1000000);
        applied_set(a, APPLY_ERROR, -EINVAL,
                    "EINVAL writing %s to queue/scheduler: no elevator %s registered (queue/scheduler lists %s) and the "
                    "kernel's request_module(\"%s-iosched\") did not register one: its module is not installed or not "
                    "loaded yet; attempt %u, retried with backoff, next try in %u s%s",
                    wanted, wanted, strna(listed), wanted, a->retry.level, next, late);
        (void) free_and_strdup(&d->elevator_unloaded, wanted);
        if (!again)
                apply_log_knob(d, "elevator", KNOB_RECORD_FAILED, LOG_WARNING, -EINVAL, current, wanted,
                               "Failed to set elevator %s (now %s): %m: %s is not registered and its module did not load "
                               "(not installed or not loaded yet), will retry with backoff, next try in %u s%s",
                               wanted, strna(current), wanted, next, late);
        else
                log_device_debug(d->name, "Elevator %s still not registered (attempt %u), next try in %u s", wanted,
                                 a->retry.level, next);
        return 1;
}

/* The write of queue_knob_decide() returned: triage it. Returns 1 when the value was set. */
static int queue_knob_finish(HostFs *h, Device *d, Knob k, const WriteJob *j) {
        Applied *a = &d->applied[k];
        ApplyRun *run = &d->run;
        const WriteOp *op = &j->ops[0];
        const char *wanted = op->value, *current = op->before, *knob = knob_to_string(k);
        _cleanup_free_ char *after = NULL, *late = NULL;
        uint64_t now = run_now_usec(d);
        int r = op->result;
        bool written = r >= 0;

        if (j->timed_out &&
            asprintf(&late, " (the write took %.1f s)", (double) (j->done_usec - j->submitted_usec) / 1e6) < 0)
                late = NULL;
        if (r >= 0) {
                r = op->read_result;
                if (r >= 0)
                        r = parse_knob(k, op->read, &after);
                if (r >= 0 && !streq(after, wanted))
                        r = -EIO;
        }
        if (r < 0) {
                WriteErrorClass c = apply_classify_error(r);
                bool dropped = false;
                /* A refused write changed nothing: no original for a value blkmqd did not change. */
                if (!written && run->knob_new_original) {
                        a->original = mfree_str(a->original);
                        dropped = true;
                }
                if (!written && run->knob_nr_recorded) {
                        d->applied[KNOB_NR_REQUESTS].original = mfree_str(d->applied[KNOB_NR_REQUESTS].original);
                        dropped = true;
                }
                if (!written && run->knob_iosched_recorded && iosched_drop_switch_originals(d, current) > 0)
                        dropped = true;
                if (disk_vanished(h, d, r)) {
                        applied_set(a, APPLY_ERROR, r, "%s writing %s to queue/%s: the disk vanished",
                                    strerrorname_np(-r) ?: "error", wanted, queue_attr[k]);
                        return written || dropped;
                }
                if (!written && queue_unregistered(h, d, k, r)) {
                        applied_set(a, APPLY_ERROR, r, "%s writing %s to queue/%s: the queue is not registered (the disk is "
                                    "being removed or added); written again at its next uevent",
                                    strerrorname_np(-r) ?: "error", wanted, queue_attr[k]);
                        return dropped;
                }
                if (!written && elevator_not_loaded(d, k, r, wanted))
                        return elevator_not_loaded_finish(d, current, wanted, now, strempty(late)) || dropped;
                applied_set(a, c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR, r,
                            "%s writing %s to queue/%s%s%s%s", strerrorname_np(-r) ?: "error", wanted,
                            queue_attr[k], after ? ", read back " : "", after ?: "", strempty(late));
                if (c != WRITE_ERROR_UNSUPPORTED)
                        backoff_bump(&a->retry, now);
                if (run->knob_prev_error == r)  /* said at the first failure; the state did not change */
                        log_device_debug(d->name, "Failed to set %s %s again: %s", knob, wanted, strerrorname_np(-r) ?: "error");
                else
                        log_write_failed(d, knob, r, c, after ?: current, wanted, "Failed to set %s %s (now %s)%s", knob, wanted,
                                         after ?: strna(current), strempty(late));
                return written || dropped;      /* originals changed: the caller persists them */
        }

        unsigned unloaded = k == KNOB_ELEVATOR && streq_ptr(d->elevator_unloaded, wanted) ? a->retry.level : 0;
        applied_set(a, APPLY_OK, 0, NULL);
        a->retry = (Backoff) {};
        if (k == KNOB_ELEVATOR)
                d->elevator_unloaded = mfree_str(d->elevator_unloaded);
        if (k == KNOB_NR_REQUESTS && h)
                d->nr_requests_ino = nr_requests_instance(h, d->name);
        if (unloaded)
                log_write(d, knob, current, wanted, "%s %s -> %s: %s is registered now (not at %u earlier attempt(s): its "
                          "module had not loaded)%s", knob, strna(current), wanted, wanted, unloaded, strempty(late));
        else if (run->knob_reassert) {
                backoff_bump(&a->war, now);
                if (a->war.level == 1)
                        log_external(d, knob, LOG_NOTICE, current, wanted, "%s changed externally to %s (blkmqd wrote %s); rewritten (Reassert=yes)%s",
                                     knob, strna(current), wanted, strempty(late));
                else if (a->war.level == 2)
                        log_external(d, knob, LOG_WARNING, current, wanted,
                                     "%s changed externally to %s again after blkmqd rewrote %s: write war; rewritten, further rewrites "
                                     "back off from %u s doubling up to %u s (Reassert=yes)", knob, strna(current), wanted,
                                     (unsigned) (apply_backoff_delay(2) / 1000000), (unsigned) (APPLY_BACKOFF_MAX_USEC / 1000000));
                else
                        log_device_debug(d->name, "%s changed externally to %s again, rewritten (write war, level %u)",
                                         knob, strna(current), a->war.level);
        } else if (run->knob_reapply)
                log_write(d, knob, current, wanted, "%s %s -> %s: written again, an elevator switch since blkmqd wrote it reset it%s",
                          knob, strna(current), wanted, strempty(late));
        else
                log_write(d, knob, current, wanted, "%s %s -> %s%s", knob, strna(current), wanted, strempty(late));

        /* the switch reset nr_requests (the write returned: the disk's attributes may be read) */
        _cleanup_free_ char *nr_after = NULL;
        if (k == KNOB_ELEVATOR && h && d->run.nr_before[0] && read_knob(h, d->name, KNOB_NR_REQUESTS, &nr_after) >= 0 &&
            !streq(d->run.nr_before, nr_after)) {
                Applied *nr = &d->applied[KNOB_NR_REQUESTS];
                const char *want_nr = d->plan.manage ? plan_get(&d->plan, KNOB_NR_REQUESTS) : NULL;
                log_device_info(d->name, "nr_requests %s -> %s: reset by the kernel on the elevator switch to %s%s%s%s",
                                d->run.nr_before, nr_after, wanted, want_nr ? "; writing " : "", strempty(want_nr),
                                want_nr ? " again" : "");
                run->nr_reset_said = want_nr;
                if (!want_nr)
                        nr_reset_said(nr, d->run.nr_before, nr_after, strna(current), wanted);
        }
        return 1;
}

/* d's record of irq, NULL when blkmqd has none. */
static IrqApplied *irq_applied_find(Device *d, unsigned irq) {
        for (size_t i = 0; i < d->n_irq_applied; i++)
                if (d->irq_applied[i].irq == irq)
                        return &d->irq_applied[i];
        return NULL;
}

static IrqApplied *irq_applied_get(Device *d, unsigned irq) {
        IrqApplied *found = irq_applied_find(d, irq);
        if (found)
                return found;
        IrqApplied *n = realloc(d->irq_applied, (d->n_irq_applied + 1) * sizeof(IrqApplied));
        if (!n)
                return NULL;
        d->irq_applied = n;
        n[d->n_irq_applied] = (IrqApplied) { .irq = irq };
        return &n[d->n_irq_applied++];
}

static int irq_path(char *buf, size_t size, unsigned irq) {
        return snprintf(buf, size, "irq/%u/smp_affinity_list", irq);
}

static int read_irq_affinity(HostFs *h, unsigned irq, char **ret) {
        _cleanup_free_ char *s = NULL;
        _cleanup_(cpuset_done) CpuSet set = {};
        char path[64];

        irq_path(path, sizeof(path), irq);
        int r = hostfs_read(h, HOSTFS_PROCFS, path, &s);
        if (r < 0)
                return r;
        r = cpuset_parse(s, &set);
        if (r < 0)
                return r;
        *ret = cpuset_format(&set);
        return *ret ? 0 : -ENOMEM;
}

/* ---- IRQ vectors ------------------------------------------------------------------------------- */

/* What one evaluation did with one queue vector (IrqApplied.outcome). Each is in exactly one count. */
typedef enum IrqOutcome {
        IRQ_KEPT,               /* already on its target */
        IRQ_KEPT_WAR_OVER,      /* ... and a write war on it ended */
        IRQ_MANAGED,            /* managed by the kernel (known before) */
        IRQ_MANAGED_NEW,        /* learned now: EIO/EPERM on write */
        IRQ_EXTERNAL,           /* changed by someone else, known before; left (Reassert=no) */
        IRQ_EXTERNAL_NEW,       /* changed by someone else, seen now; left (Reassert=no) */
        IRQ_EXTERNAL_WAIT,      /* changed by someone else; Reassert=yes rewrites it later (backoff, verify) */
        IRQ_FAILED,             /* a write failed before; waiting for its backoff (or unreadable) */
        IRQ_FAILED_NEW,         /* the write failed now */
        IRQ_WAITING,            /* a verify: placed at the next evaluation */
        IRQ_WOULD,              /* dry-run */
        IRQ_WRITING,            /* write in flight */
        IRQ_WRITING_REASSERT,   /* ... of a value someone else changed (Reassert=yes) */
        IRQ_PLACED,             /* written */
        IRQ_REASSERTED,         /* rewritten after someone else changed it, first time */
        IRQ_WAR_START,          /* rewritten again: a write war begins */
        IRQ_WAR_REWRITE,        /* rewritten in a write war already said */
        IRQ_PUTTING_BACK,       /* its CPUs are all isolated now: the original being written back */
        IRQ_PUT_BACK,           /* ... written: the original is no longer blkmqd's */
        IRQ_NOT_DECIDED,        /* not looked at by this evaluation */
        _IRQ_OUTCOME_MAX,
} IrqOutcome;

/* Append ", item" to *l (at most 8 items, then "..."). */
static void list_add(char **l, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void list_add(char **l, size_t *n, const char *fmt, ...) {
        char item[256], *s = NULL;
        va_list ap;
        if (++*n > 8) {
                if (*n == 9 && asprintf(&s, "%s, ...", strempty(*l)) >= 0) {
                        free(*l);
                        *l = s;
                }
                return;
        }
        va_start(ap, fmt);
        vsnprintf(item, sizeof(item), fmt, ap);
        va_end(ap);
        if (asprintf(&s, "%s%s%s", strempty(*l), *l ? ", " : "", item) >= 0) {
                free(*l);
                *l = s;
        }
}

/* The part of the state that is logged when it changes (not placements, not times). */
static char *irq_signature(const Device *d) {
        _cleanup_free_ char *ext = NULL, *fail = NULL, *war = NULL;
        size_t n_ext = 0, n_fail = 0, n_war = 0, managed = 0;
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                const IrqApplied *ia = &d->irq_applied[i];
                if (!ia->in_pass)
                        continue;
                managed += ia->outcome == IRQ_MANAGED || ia->outcome == IRQ_MANAGED_NEW;
                if (ia->outcome == IRQ_EXTERNAL || ia->outcome == IRQ_EXTERNAL_NEW)
                        list_add(&ext, &n_ext, "%u", ia->irq);
                if (ia->outcome == IRQ_FAILED || ia->outcome == IRQ_FAILED_NEW)
                        list_add(&fail, &n_fail, "%u:%d", ia->irq, ia->error);
                if (ia->war.level >= 2)
                        list_add(&war, &n_war, "%u", ia->irq);
        }
        char *s = NULL;
        if (asprintf(&s, "managed=%zu external=%s failed=%s wars=%s", managed, strempty(ext), strempty(fail), strempty(war)) < 0)
                return NULL;
        return s;
}

/* "<irq>:<cpulist> ..." of d's vectors with an original (the originals), into buf; NULL for none. */
static const char *irq_originals(const Device *d, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = 0;
        for (size_t i = 0; i < d->n_irq_applied && len < size; i++)
                if (d->irq_applied[i].original)
                        len += snprintf(buf + len, size - len, "%s%u:%s", len ? " " : "", d->irq_applied[i].irq,
                                        d->irq_applied[i].original);
        return buf[0] ? buf : NULL;
}

/*
 * The summary of irq_affinity once every vector was decided (and written): applied/irq_affinity
 * with counts that add up to the total, and one log line for the disk when its state changed.
 */
static void irq_affinity_summarize(Device *d) {
        Applied *a = &d->applied[KNOB_IRQ_AFFINITY];
        const ApplyRun *run = &d->run;
        const char *want = d->plan.irq_affinity;
        size_t n[_IRQ_OUTCOME_MAX] = {}, total = 0;
        _cleanup_free_ char *put_back = NULL;
        size_t n_put_back = 0;
        _cleanup_free_ char *ext_new = NULL, *failed = NULL, *reasserted = NULL, *war = NULL, *how = NULL;
        size_t n_ext_new = 0, n_failed = 0, n_reasserted = 0, n_war = 0, n_how = 0;
        char sv_old[1024];
        int first_error = 0;
        uint64_t now = run_now_usec(d);
        bool ours = false;
        size_t failed_writes = 0, kept_ours = 0;

        for (size_t i = 0; i < d->n_irq_applied; i++) {
                const IrqApplied *ia = &d->irq_applied[i];
                ours = ours || ia->original;
                /* put back because its CPUs are isolated now: in none of the counts (no target) */
                if (ia->outcome == IRQ_PUT_BACK)
                        list_add(&put_back, &n_put_back, "IRQ %u: %s", ia->irq, strna(ia->current));
                if (!ia->in_pass)
                        continue;
                total++;
                n[ia->outcome]++;
                kept_ours += IN_SET(ia->outcome, IRQ_KEPT, IRQ_KEPT_WAR_OVER) && ia->original;
                switch (ia->outcome) {
                case IRQ_EXTERNAL_NEW:
                        list_add(&ext_new, &n_ext_new, "IRQ %u to %s", ia->irq, strna(ia->current));
                        break;
                case IRQ_FAILED:
                case IRQ_FAILED_NEW:
                        if (!first_error)
                                first_error = ia->error;
                        failed_writes += ia->retry.level > 0;
                        if (ia->retry.level > 0)
                                list_add(&failed, &n_failed, "IRQ %u: %s, retry in %u s", ia->irq,
                                         strerrorname_np(-ia->error) ?: "error", backoff_left_sec(&ia->retry, now));
                        else
                                list_add(&failed, &n_failed, "IRQ %u: cannot read (%s)", ia->irq, strerrorname_np(-ia->error) ?: "error");
                        break;
                case IRQ_REASSERTED:
                        list_add(&reasserted, &n_reasserted, "IRQ %u from %s", ia->irq, strna(ia->current));
                        break;
                case IRQ_WAR_START:
                        list_add(&war, &n_war, "IRQ %u (to %s again)", ia->irq, strna(ia->current));
                        break;
                case IRQ_MANAGED_NEW:
                        if (!how || !strstr(how, strerrorname_np(-ia->error) ?: "error"))
                                list_add(&how, &n_how, "%s", strerrorname_np(-ia->error) ?: "error");
                        break;
                default:
                        break;
                }
        }
        /* The counts are states of the vectors, not what this evaluation did: a vector blkmqd
         * placed (it holds an original) and finds still in place is "placed" at every later
         * look (a verify, a reload, a restart), as the journal said when it was written;
         * "already placed" is one that was there before blkmqd. placed_now: written by this
         * evaluation (what the journal line is about). */
        size_t kept = n[IRQ_KEPT] + n[IRQ_KEPT_WAR_OVER] - kept_ours, managed = n[IRQ_MANAGED] + n[IRQ_MANAGED_NEW],
               external = n[IRQ_EXTERNAL] + n[IRQ_EXTERNAL_NEW] + n[IRQ_EXTERNAL_WAIT],
               failed_n = n[IRQ_FAILED] + n[IRQ_FAILED_NEW],
               placed_now = n[IRQ_PLACED] + n[IRQ_REASSERTED] + n[IRQ_WAR_START] + n[IRQ_WAR_REWRITE], placed = placed_now + kept_ours,
               would = n[IRQ_WOULD], waiting = n[IRQ_WAITING] + n[IRQ_WRITING] + n[IRQ_WRITING_REASSERT];

        free_and_strdup(&a->value, want);
        ApplyState state = failed_n ? APPLY_ERROR :
                           total > 0 && managed == total ? APPLY_MANAGED :
                           external ? APPLY_EXTERNAL :
                           would ? APPLY_DRY_RUN :
                           ours ? APPLY_OK : APPLY_KEPT;
        if (would) {
                applied_set(a, state, first_error, "would place %zu vector(s) on %s, %zu already placed, %zu managed by kernel%s",
                            would, strna(want), kept, managed, external ? ", some changed externally" : "");
                return;
        }
        /* Every vector is in exactly one count: they add up to the total. */
        char extra[128] = "";
        if (waiting)
                snprintf(extra, sizeof(extra), ", %zu to place at the next evaluation", waiting);
        /* the vectors isolated CPUs kept off their hctx CPUs, and why (Plan.isolated,
         * policies/irq-affinity.c): a vector left where it is is in none of the counts */
        const char *isolated = d->plan.isolated[KNOB_IRQ_AFFINITY];
        char back[1024] = "";
        if (put_back)
                snprintf(back, sizeof(back), "; %zu put back to %s affinity before blkmqd (%s): %s CPUs are isolated now", n_put_back,
                         n_put_back > 1 ? "their" : "its", put_back, n_put_back > 1 ? "their" : "its");
        applied_set(a, state, first_error, "%zu vector(s): %zu placed, %zu already placed, %zu managed by kernel, %zu changed externally%s%s, %zu failed%s%s%s%s%s%s",
                    total, placed, kept, managed, external,
                    external ? (run->reassert ? " (Reassert=yes: rewritten with backoff)" : " (left alone, Reassert=no)") : "",
                    extra, failed_n, failed ? " (" : "", strempty(failed), failed ? ")" : "", back, isolated ? "; " : "", strempty(isolated));

        if (run->verify_only && !ext_new)
                return;

        /* One line per disk, when the state changes (not per vector, not at every evaluation). */
        _cleanup_free_ char *sig = irq_signature(d);
        if (!d->irq_logged && !placed_now && !n[IRQ_MANAGED_NEW] && !failed_n && !external) {
                d->irq_logged = TAKE_PTR(sig);  /* nothing to say: every vector already where it belongs */
                return;
        }
        bool news = placed_now > n[IRQ_WAR_REWRITE] || n[IRQ_MANAGED_NEW] || ext_new || war || n[IRQ_KEPT_WAR_OVER] ||
                    !streq_ptr(sig, d->irq_logged);
        if (!news)
                return;
        free(d->irq_logged);
        d->irq_logged = TAKE_PTR(sig);

        char line[2048];
        size_t len = snprintf(line, sizeof(line), "irq_affinity=%s: %zu vector(s)", strna(want), total);
#define ADD(...) do { if (len < sizeof(line)) len += snprintf(line + len, sizeof(line) - len, __VA_ARGS__); } while (0)
        if (placed)
                ADD(", %zu placed", placed);
        if (reasserted)
                ADD(" (rewritten: %s changed externally, Reassert=yes)", reasserted);
        if (kept)
                ADD(", %zu already placed", kept);
        if (managed)
                ADD(", %zu managed by kernel%s%s%s", managed, how ? " (" : "", strempty(how), how ? " on write, not retried)" : "");
        if (ext_new)
                ADD(", changed externally: %s, over the value blkmqd wrote or kept; leaving %s (Reassert=no)", ext_new,
                    n_ext_new > 1 ? "them" : "it");
        else if (external)
                ADD(", %zu changed externally%s", external, run->reassert ? " (Reassert=yes: rewritten with backoff)" : " (left alone)");
        if (war)
                ADD(", write war on %s: rewritten, further rewrites back off from %u s doubling up to %u s (Reassert=yes)", war,
                    (unsigned) (apply_backoff_delay(2) / 1000000), (unsigned) (APPLY_BACKOFF_MAX_USEC / 1000000));
        if (n[IRQ_KEPT_WAR_OVER])
                ADD(", %zu write war(s) over", n[IRQ_KEPT_WAR_OVER]);
        if (waiting)
                ADD(", %zu to place at the next evaluation", waiting);
        if (failed_n)
                ADD(", %zu failed: %s", failed_n, strempty(failed));
#undef ADD
        if (failed_n)
                apply_log_knob(d, "irq_affinity", KNOB_RECORD_FAILED, LOG_WARNING, first_error, irq_originals(d, sv_old, sizeof(sv_old)),
                               want, "%s%s", line, failed_writes ? " (failed writes are retried with backoff)" : "");
        else if (ext_new || war || reasserted)
                log_external(d, "irq_affinity", war ? LOG_WARNING : LOG_NOTICE, irq_originals(d, sv_old, sizeof(sv_old)), want, "%s", line);
        else if (placed_now)
                log_write(d, "irq_affinity", irq_originals(d, sv_old, sizeof(sv_old)), want, "%s", line);
        else
                log_device_info(d->name, "%s", line);
}

static int irq_restore_decide(HostFs *h, Device *d, WriteJob **ret_job);

/* irq_affinity of a disk the plan does not place vectors on: managed, or unmanaged, and
 * what was put back. */
static void irq_no_wish_summarize(Device *d, size_t restored, size_t failed) {
        Applied *a = &d->applied[KNOB_IRQ_AFFINITY];
        const DiskFacts *f = d->facts;
        size_t total = 0, managed = 0;

        for (size_t i = 0; i < f->n_irqs; i++)
                if (f->irqs[i].queue) {
                        total++;
                        managed += f->irqs[i].managed == TRISTATE_YES;
                }
        bool all_managed = total > 0 && (managed == total || irq_affinity_hctx_all_managed(f));
        a->value = mfree_str(a->value);
        if (failed)
                applied_set(a, APPLY_ERROR, -EIO, "%zu vector(s) put back, %zu could not be put back", restored, failed);
        else if (all_managed && managed == total)
                applied_set(a, APPLY_MANAGED, 0, "%zu queue vector(s) managed by kernel", total);
        else if (all_managed)
                applied_set(a, APPLY_MANAGED, 0, "%zu of %zu queue vector(s) managed by kernel, one per hctx", managed, total);
        else if (restored)
                applied_set(a, APPLY_UNMANAGED, 0, "%zu vector(s) put back to their affinity before blkmqd changed it", restored);
        else if (a->state != APPLY_UNMANAGED || a->message)
                applied_set(a, APPLY_UNMANAGED, 0, NULL);
}

/*
 * One vector: read, compare, decide. Sets ia->outcome; a write is added to *j.
 * Returns 1 when originals were dropped (someone else owns the value now), 0, or -ENOMEM.
 */
static int irq_vector_decide(HostFs *h, Device *d, IrqApplied *ia, const char *target, uint64_t now,
                             const ApplyOptions *o, WriteJob **j) {
        _cleanup_free_ char *current = NULL;
        bool reassert = false;
        char path[64];

        int r = read_irq_affinity(h, ia->irq, &current);
        if (r < 0) {
                ia->outcome = IRQ_FAILED;
                ia->error = r;
                ia->retry = (Backoff) {};
                return 0;
        }
        free_and_strdup(&ia->current, current);

        if (streq(current, target)) {
                ia->outcome = war_held(&ia->war, now) ? IRQ_KEPT_WAR_OVER : IRQ_KEPT;
                ia->external = false;
                ia->error = 0;
                ia->retry = (Backoff) {};
                /* kept: blkmqd's value from now on, like one it wrote (only a write sets an
                 * original, so a restore still writes nothing here) */
                if (!streq_ptr(ia->value, target) && free_and_strdup(&ia->value, target) < 0)
                        return -ENOMEM;
                return 0;
        }

        /* Someone else changed the value blkmqd wrote, or one the plan kept. */
        if (streq_ptr(ia->value, target)) {
                if (!o->reassert) {
                        ia->outcome = ia->external ? IRQ_EXTERNAL : IRQ_EXTERNAL_NEW;
                        ia->external = true;
                        /* Someone else owns the value now: restoring our original would clobber it. */
                        bool had = ia->original;
                        ia->original = mfree_str(ia->original);
                        return had;
                }
                ia->external = true;
                if (o->verify_only || o->dry_run || backoff_waiting(&ia->war, now)) {
                        ia->outcome = IRQ_EXTERNAL_WAIT;
                        return 0;
                }
                reassert = true;
        }

        if (ia->error && (o->verify_only || backoff_waiting(&ia->retry, now))) {
                ia->outcome = IRQ_FAILED;
                return 0;
        }
        if (o->verify_only) {
                ia->outcome = IRQ_WAITING;
                return 0;
        }
        if (o->dry_run) {
                ia->outcome = IRQ_WOULD;
                return 0;
        }

        /* Recorded before the write (crash safety), dropped if the kernel refuses it. */
        ia->new_original = false;
        if (!ia->original) {
                if (!(ia->original = strdup(current)))
                        return -ENOMEM;
                ia->new_original = true;
        }
        irq_path(path, sizeof(path), ia->irq);
        if (!*j && !(*j = write_job_new(d->name)))
                return -ENOMEM;
        if (write_job_add(*j, HOSTFS_PROCFS, path, target, false) < 0 ||
            !((*j)->ops[(*j)->n_ops - 1].before = strdup(current)))
                return -ENOMEM;
        (*j)->stop_on_error = false;    /* one vector's failure does not stop the others */
        (*j)->tag = KNOB_IRQ_AFFINITY;
        ia->outcome = reassert ? IRQ_WRITING_REASSERT : IRQ_WRITING;
        return 0;
}

/*
 * A vector whose target CPUs are all isolated now (IRQ_TARGET_ISOLATED, policies/irq-affinity.c):
 * one blkmqd placed (it holds an original, not changed by someone else) goes back to its
 * original in the same job as the placements (irq_affinity_finish() drops the original once
 * written). Already back at the original, or changed by someone else since blkmqd wrote it:
 * the original is dropped, nothing is written. A dry run or a verify-only run (a read of
 * applied/) does nothing; the evaluation after it does. Returns 1 when the
 * original was dropped, 0, or -ENOMEM.
 */
static int irq_isolated_decide(HostFs *h, Device *d, IrqApplied *ia, const ApplyOptions *o, WriteJob **j) {
        _cleanup_free_ char *current = NULL;
        char path[64];

        if (!ia->original || ia->external || ia->managed || o->dry_run || o->verify_only)
                return 0;
        if (read_irq_affinity(h, ia->irq, &current) < 0)
                return 0;       /* unreadable: looked at again at the next evaluation */
        free_and_strdup(&ia->current, current);
        if (streq(current, ia->original) || !streq_ptr(current, ia->value)) {
                if (!streq(current, ia->original))
                        log_device_debug(d->name, "IRQ %u changed externally to %s (blkmqd wrote %s): its original %s dropped, "
                                         "not put back over it", ia->irq, current, strna(ia->value), ia->original);
                ia->original = mfree_str(ia->original);
                ia->value = mfree_str(ia->value);
                return 1;
        }
        irq_path(path, sizeof(path), ia->irq);
        if (!*j && !(*j = write_job_new(d->name)))
                return -ENOMEM;
        if (write_job_add(*j, HOSTFS_PROCFS, path, ia->original, false) < 0 ||
            !((*j)->ops[(*j)->n_ops - 1].before = strdup(current)))
                return -ENOMEM;
        (*j)->stop_on_error = false;
        (*j)->tag = KNOB_IRQ_AFFINITY;
        ia->outcome = IRQ_PUTTING_BACK;
        return 0;
}

/*
 * Decide irq_affinity on the loop thread: every queue vector's current affinity is read and
 * compared; the vectors to place go into one job (*ret_job, finished by
 * irq_affinity_finish()). Returns the number of originals dropped, or -ENOMEM.
 */
static int irq_affinity_decide(HostFs *h, Device *d, const ApplyOptions *o, WriteJob **ret_job) {
        const char *want = d->plan.irq_affinity;
        const DiskFacts *f = d->facts;
        ApplyRun *run = &d->run;
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        uint64_t now = o->now_usec ?: clock_now_usec();
        int dropped = 0;

        run->irq_total = run->irq_kept = run->irq_managed = run->irq_would = 0;
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                d->irq_applied[i].in_pass = false;
                d->irq_applied[i].outcome = IRQ_NOT_DECIDED;
        }
        if (!d->plan.manage || !want) {
                /* no wish (any more): vectors blkmqd placed go back now (irq_no_wish_finish()) */
                if (!o->dry_run && !o->verify_only) {
                        int r = irq_restore_decide(h, d, ret_job);
                        if (r < 0)
                                return r;
                        if (*ret_job) {
                                (*ret_job)->tag |= TAG_RESTORE;
                                return 0;
                        }
                }
                irq_no_wish_summarize(d, 0, 0);
                return 0;
        }

        for (size_t i = 0; i < f->n_irqs; i++) {
                const IrqFacts *q = &f->irqs[i];
                if (!q->queue)
                        continue;
                /* its hctx's CPUs (or the list asked for) without the isolated ones; a vector
                 * with only isolated CPUs is not placed, and one blkmqd placed goes back to
                 * its original (policies/irq-affinity.c) */
                _cleanup_free_ char *target = NULL;
                int t = irq_affinity_target(f, want, q, &target, NULL);
                if (t == -ENOMEM)
                        return t;
                if (!target) {
                        IrqApplied *ia = t == IRQ_TARGET_ISOLATED && q->managed != TRISTATE_YES ? irq_applied_find(d, q->irq) : NULL;
                        int r = ia ? irq_isolated_decide(h, d, ia, o, &j) : 0;
                        if (r < 0)
                                return r;
                        dropped += r;
                        continue;
                }
                run->irq_total++;

                IrqApplied *ia = irq_applied_get(d, q->irq);
                if (!ia)
                        return -ENOMEM;
                ia->in_pass = true;
                if (q->managed == TRISTATE_YES || ia->managed) {
                        ia->outcome = IRQ_MANAGED;
                        run->irq_managed++;
                        continue;
                }
                int r = irq_vector_decide(h, d, ia, target, now, o, &j);
                if (r < 0)
                        return r;
                dropped += r;
                run->irq_kept += ia->outcome == IRQ_KEPT || ia->outcome == IRQ_KEPT_WAR_OVER;
                run->irq_would += ia->outcome == IRQ_WOULD;
        }

        if (j)
                *ret_job = TAKE_PTR(j);
        else
                irq_affinity_summarize(d);
        return dropped;
}

static const char *irq_name(const Device *d, unsigned irq) {
        for (size_t i = 0; d->facts && i < d->facts->n_irqs; i++)
                if (d->facts->irqs[i].irq == irq)
                        return d->facts->irqs[i].name;
        return NULL;
}

/* The vector an IRQ write op of j was for, and its record: 1, 0 for an op that is not an IRQ
 * write, -ENOMEM. */
/*
 * The next write of j from *i on that is about an IRQ ("irq/<n>/smp_affinity_list"), with that
 * IRQ's IrqApplied in d; *i moves past it. Returns 1, 0 when no such write is left, -ENOMEM.
 */
static int irq_op_next(Device *d, const WriteJob *j, size_t *i, const WriteOp **ret_op, IrqApplied **ret) {
        while (*i < j->n_ops) {
                const WriteOp *op = &j->ops[(*i)++];
                unsigned irq;
                if (sscanf(op->path, "irq/%u/", &irq) != 1)
                        continue;
                *ret_op = op;
                *ret = irq_applied_get(d, irq);
                return *ret ? 1 : -ENOMEM;
        }
        return 0;
}

/* The writes of irq_affinity_decide() returned. Returns the number of vectors placed (plus
 * originals dropped: the caller persists them). */
static int irq_affinity_finish(HostFs *h, Device *d, const WriteJob *j) {
        uint64_t now = run_now_usec(d);
        const WriteOp *op;
        IrqApplied *ia;
        int n = 0, k;

        _cleanup_free_ char *back = NULL, *back_failed = NULL;
        size_t n_back = 0, n_back_failed = 0;

        for (size_t i = 0; (k = irq_op_next(d, j, &i, &op, &ia)) > 0;) {
                unsigned irq = ia->irq;
                bool reassert = ia->outcome == IRQ_WRITING_REASSERT;
                int r = op->result;
                if (ia->outcome == IRQ_PUTTING_BACK) {
                        /* its CPUs are isolated now (irq_isolated_decide()) */
                        if (r < 0 && disk_vanished(h, d, r))
                                continue;
                        if (r < 0) {
                                /* the original stays: tried again at the next evaluation */
                                ia->error = r;
                                ia->outcome = IRQ_NOT_DECIDED;
                                list_add(&back_failed, &n_back_failed, "IRQ %u to %s: %s", irq, op->value,
                                         strerrorname_np(-r) ?: "error");
                                continue;
                        }
                        list_add(&back, &n_back, "IRQ %u %s -> %s", irq, strna(op->before), op->value);
                        free_and_strdup(&ia->current, op->value);
                        ia->original = mfree_str(ia->original);
                        ia->value = mfree_str(ia->value);
                        ia->error = 0;
                        ia->outcome = IRQ_PUT_BACK;
                        n++;
                        continue;
                }
                if (r < 0) {
                        /* Nothing changed: not an original. */
                        if (ia->new_original) {
                                ia->original = mfree_str(ia->original);
                                n++;
                        }
                        ia->new_original = false;
                        ia->error = r;
                        /* a removed device's vectors go with it: /proc/irq/N is gone */
                        if (disk_vanished(h, d, r))
                                continue;
                        if (r == -EIO || r == -EPERM) {
                                /* managed IRQ: -EIO <= 6.11, -EPERM >= 6.12 (eb29369fa543) */
                                ia->managed = true;
                                ia->original = mfree_str(ia->original);
                                ia->outcome = IRQ_MANAGED_NEW;
                                d->run.irq_managed++;
                                log_device_debug(d->name, "IRQ %u is managed by the kernel (%s on write)", irq, strerrorname_np(-r));
                                continue;
                        }
                        /* ENOSPC (no free vector on those CPUs), EBUSY, ... may pass: retried with
                         * backoff, not at every evaluation. */
                        backoff_bump(&ia->retry, now);
                        ia->outcome = IRQ_FAILED_NEW;
                        continue;
                }
                ia->new_original = false;
                free_and_strdup(&ia->value, op->value);
                ia->external = false;
                ia->error = 0;
                ia->retry = (Backoff) {};
                ia->outcome = IRQ_PLACED;
                if (reassert) {
                        backoff_bump(&ia->war, now);
                        ia->outcome = ia->war.level == 1 ? IRQ_REASSERTED : ia->war.level == 2 ? IRQ_WAR_START : IRQ_WAR_REWRITE;
                }
                n++;
                log_device_debug(d->name, "IRQ %u (%s) affinity %s -> %s%s", irq, strna(irq_name(d, irq)), strna(op->before), op->value,
                                 reassert ? " (changed externally, Reassert=yes)" : "");
        }
        if (k < 0)
                return k;
        if (n_back)
                log_restore(d, "irq_affinity", NULL, back, "irq_affinity: %zu vector(s) put back to their affinity before blkmqd, "
                            "their CPUs are isolated now (%s): %s", n_back, strna(d->facts ? d->facts->kernel.isolated_list : NULL), back);
        if (n_back_failed)
                apply_log_knob(d, "irq_affinity", KNOB_RECORD_FAILED, LOG_WARNING, 0, NULL, back_failed,
                               "irq_affinity: %zu vector(s) on isolated CPUs failed to be put back: %s", n_back_failed, back_failed);
        irq_affinity_summarize(d);
        return n;
}

bool apply_forget_original(Device *d, Knob k, const char *why) {
        assert(d);
        Applied *a = &d->applied[k];
        if (k == KNOB_IRQ_AFFINITY || apply_net_knob(k) || !a->original)
                return false;
        _cleanup_free_ char *was = TAKE_PTR(a->original);
        apply_log_knob(d, knob_to_string(k), KNOB_RECORD_NOTE, LOG_NOTICE, 0, was, NULL,
                       "%s: %s, recorded before blkmqd's first write, came from %s, %s: not put back", knob_to_string(k), was,
                       strna(a->original_source), why);
        applied_set(a, APPLY_UNMANAGED, 0, "%s not put back: it came from %s, %s", was, strna(a->original_source), why);
        a->original_source = mfree_str(a->original_source);
        a->value = mfree_str(a->value);
        if (k == KNOB_ELEVATOR) {
                /* what the switch reset (nr_requests, the tunables) belongs to the elevator left in
                 * place now, not to the one that is not coming back */
                Applied *nr = &d->applied[KNOB_NR_REQUESTS];
                if (nr->original && !nr->original_source) {
                        nr->original = mfree_str(nr->original);
                        nr->value = mfree_str(nr->value);
                        applied_set(nr, APPLY_UNMANAGED, 0, NULL);
                }
                (void) iosched_drop_switch_originals(d, NULL);
        }
        return true;
}

int apply_forget_gone_originals(Device *d, const Sources *now) {
        static const char why[] = "which no longer sets it (tuned off, its profile switched, the rule removed)";
        int n = 0;
        assert(d);
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (d->applied[k].original && !policy_original_still_right(now, d->applied[k].original_source))
                        n += apply_forget_original(d, k, why);
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (d->iosched[t].original && !policy_original_still_right(now, d->iosched[t].original_source))
                        n += apply_forget_iosched_original(d, t, why);
        return n;
}

bool apply_has_originals(const Device *d) {
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (d->applied[k].original)
                        return true;
        for (size_t i = 0; i < d->n_irq_applied; i++)
                if (d->irq_applied[i].original)
                        return true;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (d->iosched[t].original)
                        return true;
        return false;
}

/* ---- restore ---------------------------------------------------------------------------------- */

static void forget_applied(Applied *a) {
        a->original = mfree_str(a->original);
        a->value = mfree_str(a->value);
        applied_set(a, APPLY_UNMANAGED, 0, NULL);
}

/*
 * Before any restore write of d (an elevator switch resets nr_requests): a queue knob whose value
 * is neither what blkmqd wrote nor the original was changed by someone else after the last check.
 * It is theirs: left, its original forgotten, counted in d->run.left.
 */
static void restore_check_external(HostFs *h, Device *d) {
        for (Knob k = 0; k < _KNOB_MAX; k++) {
                Applied *a = &d->applied[k];
                _cleanup_free_ char *now = NULL;
                if (k == KNOB_IRQ_AFFINITY || apply_net_knob(k) || !a->original || !a->value || a->state == APPLY_DRY_RUN)
                        continue;
                if (read_knob(h, d->name, k, &now) < 0 || streq(now, a->value) || streq(now, a->original))
                        continue;
                log_external(d, knob_to_string(k), LOG_NOTICE, a->value, now,
                             "%s changed externally to %s (blkmqd wrote %s); not restoring %s over it",
                             knob_to_string(k), now, a->value, a->original);
                d->run.left++;
                a->original = mfree_str(a->original);
                applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (blkmqd wrote %s; it is no longer blkmqd's to restore)",
                            now, a->value);
                /* so is the nr_requests the other tool's elevator switch reset: recorded under an
                 * elevator that no longer runs, it is not put back under theirs (a value of
                 * blkmqd's still there after their switch keeps its original) */
                Applied *nr = &d->applied[KNOB_NR_REQUESTS];
                _cleanup_free_ char *nr_now = NULL;
                if (k == KNOB_ELEVATOR && nr->original &&
                    (!nr->value || (read_knob(h, d->name, KNOB_NR_REQUESTS, &nr_now) >= 0 && !streq(nr_now, nr->value)))) {
                        nr->original = mfree_str(nr->original);
                        applied_set(nr, APPLY_UNMANAGED, 0, NULL);
                }
                if (k == KNOB_ELEVATOR)
                        (void) iosched_drop_switch_originals(d, NULL);
        }
}

/* A queue knob with an original: a job putting it back (*ret_job), or nothing to write. */
static int restore_knob_decide(HostFs *h, Device *d, Knob k, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        _cleanup_free_ char *current = NULL;

        if (!a->original)
                return 0;
        int r = read_knob(h, d->name, k, &current);
        if (r < 0 || !streq(current, a->original))
                return knob_job(d, k, a->original, NULL, false, ret_job) < 0 ? -ENOMEM : 0;
        forget_applied(a);
        return 0;
}

static int restore_knob_finish(HostFs *h, Device *d, Knob k, const WriteJob *j) {
        Applied *a = &d->applied[k];
        int r = j->ops[0].result;

        if (r < 0 && disk_vanished(h, d, r)) {
                /* nothing left to put back on this disk; the stored original stays for a re-add */
                applied_set(a, APPLY_ERROR, r, "the disk vanished before %s was put back", strna(a->original));
                return 0;
        }
        if (r < 0 && queue_unregistered(h, d, k, r)) {
                /* the original stays: put back at the next restore, if the disk is still there */
                applied_set(a, APPLY_ERROR, r, "the queue is not registered (the disk is being removed or added): %s not "
                            "put back yet", strna(a->original));
                return 0;
        }
        if (r < 0) {
                /* the elevator blkmqd found, not registered any more (its module unloaded since) and
                 * not loadable now: the same EINVAL as a switch's (elevator_not_loaded()) */
                const char *why = elevator_not_loaded(d, k, r, a->original) ?
                                  ": it is not registered and its module did not load (not installed or not loaded yet); "
                                  "kept for the next restore" : "";
                apply_log_knob(d, knob_to_string(k), KNOB_RECORD_FAILED, LOG_WARNING, r, a->value, a->original,
                               "Failed to restore %s %s: %m%s", knob_to_string(k), a->original, why);
                applied_set(a, APPLY_ERROR, r, "%s restoring %s%s", strerrorname_np(-r) ?: "error", strna(a->original), why);
                if (d->run.error >= 0)
                        d->run.error = r;
                d->run.failed++;
                return 0;
        }
        log_restore(d, knob_to_string(k), a->value, a->original, "%s restored to %s", knob_to_string(k), a->original);
        forget_applied(a);
        return 1;
}

/* Vectors with an original: put back, unless already there or someone else changed them since. */
static int irq_restore_decide(HostFs *h, Device *d, WriteJob **ret_job) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        _cleanup_free_ char *left = NULL;
        size_t n_left = 0;

        for (size_t i = 0; i < d->n_irq_applied; i++) {
                IrqApplied *ia = &d->irq_applied[i];
                _cleanup_free_ char *current = NULL;
                char path[64];
                if (!ia->original)
                        continue;
                int r = read_irq_affinity(h, ia->irq, &current);
                if (r >= 0 && streq(current, ia->original)) {
                        ia->original = mfree_str(ia->original);
                        ia->value = mfree_str(ia->value);
                        continue;
                }
                if (r >= 0 && ia->value && !streq(current, ia->value)) {
                        list_add(&left, &n_left, "IRQ %u at %s", ia->irq, current);
                        d->run.left++;
                        ia->original = mfree_str(ia->original);
                        ia->external = true;
                        continue;
                }
                irq_path(path, sizeof(path), ia->irq);
                if ((!j && !(j = write_job_new(d->name))) || write_job_add(j, HOSTFS_PROCFS, path, ia->original, false) < 0)
                        return -ENOMEM;
                j->stop_on_error = false;
                j->tag = KNOB_IRQ_AFFINITY;
        }
        if (n_left)
                log_external(d, "irq_affinity", LOG_NOTICE, NULL, NULL, "irq_affinity: %zu vector(s) changed externally, not restored over: %s",
                             n_left, left);
        if (j)
                *ret_job = TAKE_PTR(j);
        else if (d->applied[KNOB_IRQ_AFFINITY].state != APPLY_MANAGED && d->run.restore)
                applied_set(&d->applied[KNOB_IRQ_AFFINITY], APPLY_UNMANAGED, 0, NULL);
        return 0;
}

static int irq_restore_finish(HostFs *h, Device *d, const WriteJob *j) {
        _cleanup_free_ char *restored = NULL, *failed = NULL;
        size_t n_failed = 0, n_restored = 0;
        int n = 0, first_error = 0, k;
        const WriteOp *op;
        IrqApplied *ia;

        for (size_t i = 0; (k = irq_op_next(d, j, &i, &op, &ia)) > 0;) {
                unsigned irq = ia->irq;
                if (op->result < 0 && disk_vanished(h, d, op->result))
                        continue;
                if (op->result < 0) {
                        list_add(&failed, &n_failed, "IRQ %u to %s: %s", irq, op->value, strerrorname_np(-op->result) ?: "error");
                        if (!first_error)
                                first_error = op->result;
                        if (d->run.error >= 0)
                                d->run.error = op->result;
                        d->run.failed++;
                        continue;
                }
                list_add(&restored, &n_restored, "IRQ %u to %s", irq, op->value);
                ia->original = mfree_str(ia->original);
                ia->value = mfree_str(ia->value);
                n++;
        }
        if (k < 0)
                return k;
        /* one line for the disk, not one per vector */
        if (n_restored)
                log_restore(d, "irq_affinity", NULL, restored, "irq_affinity: %zu vector(s) restored: %s", n_restored, restored);
        if (n_failed)
                apply_log_knob(d, "irq_affinity", KNOB_RECORD_FAILED, LOG_WARNING, first_error, NULL, failed,
                               "irq_affinity: %zu vector(s) failed to restore: %s", n_failed, failed);
        d->irq_logged = mfree_str(d->irq_logged);
        if (!(j->tag & TAG_RESTORE) && d->applied[KNOB_IRQ_AFFINITY].state != APPLY_MANAGED) {
                d->applied[KNOB_IRQ_AFFINITY].value = mfree_str(d->applied[KNOB_IRQ_AFFINITY].value);
                applied_set(&d->applied[KNOB_IRQ_AFFINITY], APPLY_UNMANAGED, 0, NULL);
        }
        return n;
}

/*
 * A restore within an apply run returned (queue_knob_no_wish(), or the plan wanting the
 * original back): the knob is no longer blkmqd's. Returns 1 when written.
 */
static int restore_in_run_finish(HostFs *h, Device *d, Knob k, const WriteJob *j) {
        if (k == KNOB_IRQ_AFFINITY) {
                size_t failed = 0;
                for (size_t i = 0; i < j->n_ops; i++)
                        failed += j->ops[i].result < 0;
                int n = irq_restore_finish(h, d, j);
                irq_no_wish_summarize(d, n > 0 ? n : 0, failed);
                return n;
        }
        Applied *a = &d->applied[k];
        const char *wanted = d->plan.manage ? plan_get(&d->plan, k) : NULL;
        _cleanup_free_ char *was = strdup(j->ops[0].value);
        if (!was)
                return -ENOMEM;
        int r = restore_knob_finish(h, d, k, j);
        if (r <= 0)
                return r;
        if (wanted && streq(wanted, was)) {
                free_and_strdup(&a->value, was);
                applied_set(a, APPLY_KEPT, 0, "put back: the value before blkmqd changed it");
        } else
                applied_set(a, APPLY_UNMANAGED, 0, "put back to %s, the value before blkmqd changed it", was);
        return 1;
}

/* The write of nr_requests back to the value before an override (queue_knob_no_wish()) returned. */
static int nr_before_override_finish(Device *d, const WriteJob *j) {
        Applied *a = &d->applied[KNOB_NR_REQUESTS];
        const char *elevator = d->applied[KNOB_ELEVATOR].value;
        int r = j->ops[0].result;

        if (r < 0) {
                apply_log_knob(d, "nr_requests", KNOB_RECORD_FAILED, LOG_WARNING, r, j->ops[0].before, j->ops[0].value,
                               "Failed to put nr_requests back to %s: %m", j->ops[0].value);
                applied_set(a, APPLY_ERROR, r, "%s putting back %s, the value before the override", strerrorname_np(-r) ?: "error",
                            j->ops[0].value);
                if (d->run.error >= 0)
                        d->run.error = r;
                d->run.failed++;
                return 0;
        }
        log_restore(d, "nr_requests", j->ops[0].before, j->ops[0].value, "nr_requests %s -> %s: put back, %s's value before the override (%s comes back with the elevator "
                        "before blkmqd's switch)", strna(j->ops[0].before), j->ops[0].value, strna(elevator), strna(a->original));
        applied_set(a, APPLY_UNMANAGED, 0, "put back to %s, %s's value before the override; %s belongs to the elevator before "
                    "blkmqd's switch and comes back with it", j->ops[0].value, strna(elevator), strna(a->original));
        a->value = mfree_str(a->value);
        d->nr_before_override = mfree_str(d->nr_before_override);
        return 1;
}

/* ---- elevator tunables (queue/iosched/) -------------------------------------------------------- */

/* IoschedTunable bits of ApplyRun.iosched_ops for the job in flight. */
enum {
        IOSCHED_OP_WRITE = 1,           /* the wanted value */
        IOSCHED_OP_RESTORE = 2,         /* the original, put back */
        IOSCHED_OP_NEW_ORIGINAL = 4,    /* the original was recorded for this write (dropped if refused) */
        IOSCHED_OP_REASSERT = 8,        /* a rewrite of a value someone else changed (Reassert=yes) */
        IOSCHED_OP_REAPPLY = 16,        /* a write again after an elevator switch reset it */
        IOSCHED_OP_DERIVED = 32,        /* ... after this run's nr_requests write reset it (iosched_follows_nr_requests()) */
};

/*
 * The order tunables are written in: table order, but bfq's strict_guarantees first: setting it
 * raises slice_idle to 8 ms when lower (block/bfq-iosched.c bfq_strict_guarantees_store()), so
 * a slice_idle written after it stays as written.
 */
static IoschedTunable iosched_order(size_t i) {
        if (i == 0)
                return IOSCHED_BFQ_STRICT_GUARANTEES;
        IoschedTunable t = (IoschedTunable) (i - 1);
        return t >= IOSCHED_BFQ_STRICT_GUARANTEES ? t + 1 : t;
}

static void iosched_path(char *buf, size_t size, const char *disk, const char *name) {
        if (name)
                snprintf(buf, size, "block/%s/queue/iosched/%s", disk, name);
        else
                snprintf(buf, size, "block/%s/queue/iosched", disk);
}

/* The inode number of queue/iosched: every elevator set-up makes a new one; 0 when none. */
static uint64_t iosched_instance(HostFs *h, const char *disk) {
        char path[PATH_MAX];
        struct stat st;
        iosched_path(path, sizeof(path), disk, NULL);
        return h && hostfs_stat(h, HOSTFS_SYSFS, path, &st) >= 0 ? (uint64_t) st.st_ino : 0;
}

/*
 * Which elevator set-up nr_requests was written under, for the reset check: the inode of
 * queue/iosched, or NR_REQUESTS_NO_ELEVATOR when there is none (elevator "none": no iosched
 * directory). Every switch, to none as well, sets nr_requests again (block/elevator.c:
 * elevator_switch() and elevator_disable() both set q->nr_requests), so a write made under
 * none is reset by a switch to mq-deadline just as one made under mq-deadline is by a switch
 * away. 0: unknown (no hostfs, or the stat failed otherwise).
 */
#define NR_REQUESTS_NO_ELEVATOR UINT64_MAX

static uint64_t nr_requests_instance(HostFs *h, const char *disk) {
        char path[PATH_MAX];
        struct stat st;
        if (!h)
                return 0;
        iosched_path(path, sizeof(path), disk, NULL);
        int r = hostfs_stat(h, HOSTFS_SYSFS, path, &st);
        if (r >= 0)
                return (uint64_t) st.st_ino;
        return r == -ENOENT ? NR_REQUESTS_NO_ELEVATOR : 0;
}

static int read_tunable(HostFs *h, const char *disk, const char *name, char **ret) {
        char path[PATH_MAX];
        iosched_path(path, sizeof(path), disk, name);
        int r = hostfs_read(h, HOSTFS_SYSFS, path, ret);
        if (r >= 0)
                strip_newline(*ret);
        return r;
}

static const char *tunable_label(IoschedTunable t, char *buf, size_t size) {
        const IoschedTunableInfo *i = iosched_tunable_info(t);
        snprintf(buf, size, "%s.%s", i->elevator, i->name);
        return buf;
}
#define TUNABLE_LABEL(t) tunable_label(t, (char[96]) {}, 96)

/* Nothing of blkmqd's is left of tunable t. */
static void iosched_forget(Device *d, IoschedTunable t) {
        d->iosched[t].original = mfree_str(d->iosched[t].original);
        d->iosched[t].original_source = mfree_str(d->iosched[t].original_source);
        d->iosched[t].value = mfree_str(d->iosched[t].value);
        d->iosched_read[t] = mfree_str(d->iosched_read[t]);
        d->iosched_ino[t] = 0;
}

bool apply_forget_iosched_original(Device *d, IoschedTunable t, const char *why) {
        assert(d);
        Applied *a = &d->iosched[t];
        if (!a->original || !a->value)
                return false;   /* recorded only for blkmqd's elevator switch: the elevator's decides */
        char lbl[96];
        _cleanup_free_ char *source = TAKE_PTR(a->original_source);
        apply_log_knob(d, tunable_label(t, lbl, sizeof(lbl)), KNOB_RECORD_NOTE, LOG_NOTICE, 0, a->original, NULL,
                       "iosched %s: %s, recorded before blkmqd's first write, came from %s, %s: not put back", lbl,
                       a->original, strna(source), why);
        applied_set(a, APPLY_UNMANAGED, 0, "%s not put back: it came from %s, %s", a->original, strna(source), why);
        iosched_forget(d, t);
        return true;
}

/*
 * Whether value of tunable t is what the kernel derives from nr_requests itself, which is
 * nobody's choice: mq-deadline's async_depth is set by dd_depth_updated() (block/mq-deadline.c)
 * whenever nr_requests changes (a write to it, an elevator set-up): to nr_requests on current
 * kernels (6.18 here), to max(1, 3 * nr_requests / 4) on those with "block/mq-deadline: Reserve
 * 25% of scheduler tags for synchronous requests" (5.14) until the tag reservation was reworked.
 * Recording such a value before a switch would put back a depth that followed a nr_requests
 * blkmqd wrote, over the one the kernel derives from the nr_requests restored.
 */
static bool iosched_follows_nr_requests(HostFs *h, const Device *d, IoschedTunable t, const char *value) {
        _cleanup_free_ char *nr_text = NULL;
        uint64_t nr, v;
        if (t != IOSCHED_DEADLINE_ASYNC_DEPTH || parse_u64(value, &v) < 0 || read_knob(h, d->name, KNOB_NR_REQUESTS, &nr_text) < 0 ||
            parse_u64(nr_text, &nr) < 0)
                return false;
        return v == nr || v == MAX((uint64_t) 1, 3 * nr / 4);
}

/*
 * Before blkmqd switches the elevator away from elevator: its tunables' values now (a switch
 * resets them), for those with no original yet and not derived by the kernel from nr_requests
 * (iosched_follows_nr_requests()). They are recorded with no value of blkmqd's, like
 * nr_requests, and come back after the elevator is restored. Returns how many.
 */
static int iosched_record_before_switch(HostFs *h, Device *d, const char *elevator) {
        int n = 0;
        for (IoschedTunable t = 0; elevator && t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = iosched_tunable_info(t);
                Applied *a = &d->iosched[t];
                _cleanup_free_ char *v = NULL;
                if (!streq(i->elevator, elevator) || a->original || read_tunable(h, d->name, i->name, &v) < 0 ||
                    iosched_follows_nr_requests(h, d, t, v))
                        continue;
                applied_set(a, APPLY_UNMANAGED, 0, "to put back when %s runs again: %s, its value when blkmqd switched away from it "
                            "(a switch resets it)", elevator, v);
                a->original = TAKE_PTR(v);
                n++;
        }
        return n;
}

/* Forget the tunables recorded only because of blkmqd's switch (no value of blkmqd's), of elevator (NULL: any). */
static int iosched_drop_switch_originals(Device *d, const char *elevator) {
        int n = 0;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                Applied *a = &d->iosched[t];
                if (!a->original || a->value || (elevator && !streq(iosched_tunable_info(t)->elevator, elevator)))
                        continue;
                iosched_forget(d, t);
                n++;
        }
        return n;
}

static int iosched_add_op(WriteJob **j, const Device *d, IoschedTunable t, const char *value, const char *before, bool read_back) {
        char path[PATH_MAX];
        iosched_path(path, sizeof(path), d->name, iosched_tunable_info(t)->name);
        if (!*j && !(*j = write_job_new(d->name)))
                return -ENOMEM;
        if (write_job_add(*j, HOSTFS_SYSFS, path, value, read_back) < 0 ||
            (before && !((*j)->ops[(*j)->n_ops - 1].before = strdup(before))))
                return -ENOMEM;
        (*j)->stop_on_error = false;    /* one tunable's failure does not stop the others */
        (*j)->tag = STEP_IOSCHED;
        log_device_debug(d->name, "Writing \"%s\" to \"%s\"", value, path);
        return 0;
}

/* The tunable an op of the iosched job in flight is for (by file name among those with an op). */
static IoschedTunable iosched_op_tunable(const Device *d, const WriteOp *op) {
        const char *name = strrchr(op->path, '/');
        for (IoschedTunable t = 0; name && t < _IOSCHED_TUNABLE_MAX; t++)
                if (d->run.iosched_ops[t] && streq(iosched_tunable_info(t)->name, name + 1))
                        return t;
        return _IOSCHED_TUNABLE_INVALID;
}

/*
 * The next write of j from *i on that is about an elevator tunable of this run, *i moved past
 * it. Returns its tunable (*ret_op the write), or _IOSCHED_TUNABLE_INVALID when none is left.
 */
static IoschedTunable iosched_op_next(const Device *d, const WriteJob *j, size_t *i, const WriteOp **ret_op) {
        while (*i < j->n_ops) {
                const WriteOp *op = &j->ops[(*i)++];
                IoschedTunable t = iosched_op_tunable(d, op);
                if (t >= 0) {
                        *ret_op = op;
                        return t;
                }
        }
        return _IOSCHED_TUNABLE_INVALID;
}

/*
 * Decide the elevator tunables on the loop thread, after the elevator: those of the running
 * elevator the plan wants are written (one job, each read back); one blkmqd wrote that the plan
 * no longer wants is put back; one whose elevator is not running waits for it. A value that
 * differs from what blkmqd wrote while queue/iosched is a new directory was reset by an
 * elevator switch (by anyone, also away and back): it is written again, it is nobody's change;
 * in the same directory it was changed by someone else and follows the rules of every knob
 * (Reassert=). Returns the number of originals dropped, or -errno.
 */
static int iosched_decide(HostFs *h, Device *d, const ApplyOptions *o, WriteJob **ret_job) {
        ApplyRun *run = &d->run;
        _cleanup_free_ char *elevator = NULL;
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        uint64_t now = o->now_usec ?: clock_now_usec();
        int dropped = 0, r;
        bool any = false;

        memset(run->iosched_ops, 0, sizeof(run->iosched_ops));
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                any = any || d->iosched[t].original || d->iosched[t].value || d->iosched[t].state != APPLY_UNMANAGED ||
                      (d->plan.manage && d->plan.iosched[t]);
        if (!any)
                return 0;               /* no tunable wanted or recorded: nothing to read */
        if (read_knob(h, d->name, KNOB_ELEVATOR, &elevator) < 0)
                elevator = NULL;
        uint64_t ino = iosched_instance(h, d->name);
        run->iosched_ino = ino;
        if (!o->verify_only)
                d->iosched_reset = false;

        for (size_t n = 0; n < _IOSCHED_TUNABLE_MAX; n++) {
                IoschedTunable t = iosched_order(n);
                const IoschedTunableInfo *info = iosched_tunable_info(t);
                Applied *a = &d->iosched[t];
                const char *wanted = d->plan.manage ? d->plan.iosched[t] : NULL, *label = TUNABLE_LABEL(t);
                _cleanup_free_ char *cur = NULL;
                char lbl[96];
                snprintf(lbl, sizeof(lbl), "%s", label);

                if (!elevator || !streq(elevator, info->elevator)) {
                        /* blkmqd's value went with its elevator; one recorded before blkmqd's
                         * switch (no value) stays: it comes back with the elevator */
                        if (a->value) {
                                iosched_forget(d, t);
                                dropped++;
                        }
                        if (wanted)
                                applied_set(a, APPLY_UNMANAGED, 0, "waits: the disk runs %s; written when %s runs%s", strna(elevator),
                                            info->elevator, streq_ptr(d->elevator_unloaded, info->elevator) ?
                                            " (not registered yet: its module had not loaded at blkmqd's switch, which is "
                                            "retried with backoff: applied/elevator)" : "");
                        else if (a->original)   /* its message (iosched_record_before_switch()) stays */
                                ;
                        else if (a->state != APPLY_UNMANAGED || a->message)
                                applied_set(a, APPLY_UNMANAGED, 0, NULL);
                        continue;
                }
                r = read_tunable(h, d->name, info->name, &cur);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (disk_vanished(h, d, r))
                                return dropped;
                        if (wanted)
                                applied_set(a, r == -ENOENT ? APPLY_UNSUPPORTED : APPLY_ERROR, r, "cannot read queue/iosched/%s: %s",
                                            info->name, strerror(-r));
                        continue;
                }
                bool new_instance = d->iosched_ino[t] && ino && ino != d->iosched_ino[t];
                const char *eff = d->iosched_read[t] ?: a->value;

                if (!wanted) {
                        if (!a->original) {
                                if (a->state != APPLY_UNMANAGED || a->message)
                                        applied_set(a, APPLY_UNMANAGED, 0, NULL);
                                continue;
                        }
                        /* The other file of the same variable is wanted (bfq's slice_idle_us over
                         * slice_idle, rule iosched-conflict): putting this one back would undo
                         * that write (and the next look would call it someone else's change).
                         * The variable's original goes with the file blkmqd writes, in its unit
                         * (one recorded there after blkmqd's write here is blkmqd's value). */
                        IoschedTunable alias = iosched_tunable_alias(t);
                        if (alias >= 0 && d->plan.manage && d->plan.iosched[alias] && !o->verify_only) {
                                Applied *b = &d->iosched[alias];
                                _cleanup_free_ char *orig = NULL, *ours_there = NULL;
                                if (iosched_alias_value(t, a->original, &orig) == -ENOMEM ||
                                    (a->value && iosched_alias_value(t, a->value, &ours_there) == -ENOMEM))
                                        return -ENOMEM;
                                if (orig && (!b->original || streq_ptr(b->original, ours_there))) {
                                        free(b->original);
                                        b->original = TAKE_PTR(orig);
                                }
                                log_device_info(d->name, "%s left as blkmqd's %s sets it: the same variable (%s); its value before "
                                                "blkmqd, %s, comes back with %s", lbl, TUNABLE_LABEL(alias), info->source, a->original,
                                                TUNABLE_LABEL(alias));
                                iosched_forget(d, t);
                                applied_set(a, APPLY_UNMANAGED, 0, "set through %s (the same variable); put back with it",
                                            TUNABLE_LABEL(alias));
                                dropped++;
                                continue;
                        }
                        if (a->value && new_instance) {
                                iosched_forget(d, t);
                                applied_set(a, APPLY_UNMANAGED, 0, "reset to %s by an elevator switch since blkmqd wrote it: nothing to put back", cur);
                                dropped++;
                                continue;
                        }
                        if (streq(cur, a->original)) {
                                iosched_forget(d, t);
                                applied_set(a, APPLY_UNMANAGED, 0, NULL);
                                dropped++;
                                continue;
                        }
                        if (a->value && !streq(cur, eff)) {
                                applied_set(a, APPLY_UNMANAGED, 0, "changed externally to %s since blkmqd wrote %s: not blkmqd's to put back",
                                            cur, a->value);
                                iosched_forget(d, t);
                                dropped++;
                                continue;
                        }
                        if (!apply_restore_may_write(a, o))
                                continue;
                        if (iosched_add_op(&j, d, t, a->original, cur, false) < 0)
                                return -ENOMEM;
                        run->iosched_ops[t] = IOSCHED_OP_RESTORE;
                        continue;
                }

                /* wanted */
                bool ours = a->value && streq(a->value, wanted);
                if (streq(cur, wanted) || (ours && eff && streq(cur, eff) && !new_instance)) {
                        if (a->original && streq(a->original, wanted)) {
                                a->original = mfree_str(a->original);
                                dropped++;
                        }
                        if (a->state != APPLY_OK || !ours || a->message)
                                applied_set(a, a->original ? APPLY_OK : APPLY_KEPT, 0, NULL);
                        a->retry = (Backoff) {};
                        free_and_strdup(&a->value, wanted);
                        d->iosched_ino[t] = ino;
                        if (war_held(&a->war, now))
                                apply_log_knob(d, lbl, KNOB_RECORD_NOTE, LOG_INFO, 0, NULL, wanted, "%s %s held since blkmqd's last rewrite: write war over",
                                               lbl, wanted);
                        continue;
                }
                unsigned char ops = IOSCHED_OP_WRITE;
                /* this run's nr_requests write made the kernel derive it again: nobody's change */
                bool derived = (run->written_knobs & (1u << KNOB_NR_REQUESTS)) && iosched_follows_nr_requests(h, d, t, cur);
                if (ours && IN_SET(a->state, APPLY_OK, APPLY_EXTERNAL, APPLY_KEPT)) {
                        if (derived && !o->verify_only && !o->dry_run)
                                ops |= IOSCHED_OP_REAPPLY | IOSCHED_OP_DERIVED;
                        else if (new_instance) {
                                /* the elevator was set up again since blkmqd wrote it: its default is back */
                                if (o->verify_only) {
                                        applied_set(a, APPLY_EXTERNAL, 0, "reset to %s by an elevator switch since blkmqd wrote %s; written "
                                                    "again at the next evaluation", cur, wanted);
                                        d->iosched_reset = true;
                                        continue;
                                }
                                ops |= IOSCHED_OP_REAPPLY;
                        } else if (!o->reassert) {
                                bool transition = a->state != APPLY_EXTERNAL, had = a->original;
                                if (transition)
                                        log_external(d, lbl, LOG_NOTICE, wanted, cur,
                                                     "%s changed externally to %s (blkmqd wrote %s); leaving it (Reassert=no)", lbl, cur, wanted);
                                applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (blkmqd wrote %s; it is no longer blkmqd's to restore)",
                                            cur, wanted);
                                a->original = mfree_str(a->original);
                                dropped += had || transition;
                                continue;
                        } else if (o->verify_only) {
                                applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (blkmqd wrote %s); Reassert=yes: rewritten at the "
                                            "next evaluation", cur, wanted);
                                continue;
                        } else if (o->dry_run)
                                continue;
                        else if (backoff_waiting(&a->war, now)) {
                                applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s again (blkmqd wrote %s); write war: Reassert=yes "
                                            "rewrites it in %u s", cur, wanted, backoff_left_sec(&a->war, now));
                                continue;
                        } else
                                ops |= IOSCHED_OP_REASSERT;
                }
                if (o->verify_only) {
                        /* not written yet on this elevator (it came back, or blkmqd could not write): the next evaluation does */
                        if (a->state != APPLY_ERROR && a->state != APPLY_UNSUPPORTED)
                                d->iosched_reset = true;
                        continue;
                }
                if (o->dry_run) {
                        apply_dry_run(d, a, lbl, cur, wanted);
                        continue;
                }
                if (a->state == APPLY_UNSUPPORTED && ours)
                        continue;               /* said once; never retried */
                if (a->state == APPLY_ERROR && a->error && ours && backoff_waiting(&a->retry, now))
                        continue;
                if (!a->original) {
                        if (!(a->original = strdup(cur)))
                                return -ENOMEM;
                        ops |= IOSCHED_OP_NEW_ORIGINAL;
                        /* blkmqd writes over another tool's value: whose it is, for the stop */
                        Ownership own = d->plan.owner_iosched[t];
                        if (free_and_strdup(&a->original_source, own == OWNERSHIP_CORRECTED || own == OWNERSHIP_OVERRIDDEN
                                                                         ? d->plan.owner_source_iosched[t] : NULL) < 0)
                                return -ENOMEM;
                }
                free_and_strdup(&a->value, wanted);
                if (iosched_add_op(&j, d, t, wanted, cur, true) < 0)
                        return -ENOMEM;
                run->iosched_ops[t] = ops;
        }
        if (j)
                *ret_job = TAKE_PTR(j);
        return dropped;
}

/* The writes of iosched_decide() returned. Returns values written plus originals dropped. */
static int iosched_finish(HostFs *h, Device *d, const WriteJob *j) {
        uint64_t now = run_now_usec(d);
        const WriteOp *op;
        IoschedTunable t;
        int n = 0;

        for (size_t i = 0; (t = iosched_op_next(d, j, &i, &op)) >= 0;) {
                const IoschedTunableInfo *info = iosched_tunable_info(t);
                Applied *a = &d->iosched[t];
                unsigned char ops = d->run.iosched_ops[t];
                const char *lbl = TUNABLE_LABEL(t);
                int r = op->result;
                char label[96];
                snprintf(label, sizeof(label), "%s", lbl);

                if (ops & IOSCHED_OP_RESTORE) {
                        if (r < 0 && disk_vanished(h, d, r))
                                continue;
                        if (r < 0) {
                                apply_log_knob(d, label, KNOB_RECORD_FAILED, LOG_WARNING, r, op->before, op->value,
                                               "Failed to put back %s %s: %m", label, op->value);
                                applied_set(a, APPLY_ERROR, r, "%s putting back %s", strerrorname_np(-r) ?: "error", op->value);
                                continue;
                        }
                        log_restore(d, label, op->before, op->value, "%s put back to %s, the value before blkmqd changed it", label,
                                    op->value);
                        iosched_forget(d, t);
                        applied_set(a, APPLY_UNMANAGED, 0, "put back to %s, the value before blkmqd changed it", op->value);
                        n++;
                        continue;
                }

                _cleanup_free_ char *after = NULL;
                bool written = r >= 0;
                if (r >= 0) {
                        r = op->read_result;
                        if (r >= 0 && !(after = strdup(op->read)))
                                return -ENOMEM;
                        if (after)
                                strip_newline(after);
                }
                /* kept in jiffies (msecs_to_jiffies() on store, jiffies_to_msecs() on show): the
                 * value reads back rounded to the tick; that is the kernel's, not a failure */
                bool rounded = r >= 0 && !streq(after, op->value) && info->jiffies;
                if (r >= 0 && !streq(after, op->value) && !rounded)
                        r = -EIO;
                if (r < 0) {
                        WriteErrorClass c = apply_classify_error(r);
                        if (!written && (ops & IOSCHED_OP_NEW_ORIGINAL)) {
                                a->original = mfree_str(a->original);
                                n++;
                        }
                        if (disk_vanished(h, d, r)) {
                                applied_set(a, APPLY_ERROR, r, "%s writing %s to queue/iosched/%s: the disk vanished",
                                            strerrorname_np(-r) ?: "error", op->value, info->name);
                                continue;
                        }
                        bool again = a->state == APPLY_ERROR && a->error == r;
                        applied_set(a, c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR, r, "%s writing %s to queue/iosched/%s%s%s",
                                    strerrorname_np(-r) ?: "error", op->value, info->name, after ? ", read back " : "", strempty(after));
                        if (c != WRITE_ERROR_UNSUPPORTED)
                                backoff_bump(&a->retry, now);
                        if (again)
                                log_device_debug(d->name, "Failed to set %s %s again: %s", label, op->value, strerrorname_np(-r) ?: "error");
                        else
                                log_write_failed(d, label, r, c, after ?: op->before, op->value, "Failed to set %s %s (now %s)", label, op->value,
                                                 after ?: strna(op->before));
                        n += written;
                        continue;
                }
                free_and_strdup(&d->iosched_read[t], rounded ? after : NULL);
                d->iosched_ino[t] = d->run.iosched_ino;
                a->retry = (Backoff) {};
                if (a->original && streq(a->original, after)) {
                        a->original = mfree_str(a->original);
                        applied_set(a, APPLY_KEPT, 0, NULL);
                } else if (rounded)
                        applied_set(a, APPLY_OK, 0, "reads %s: the kernel keeps it in jiffies (%s)", after, info->source);
                else
                        applied_set(a, APPLY_OK, 0, NULL);
                if (ops & IOSCHED_OP_REASSERT) {
                        backoff_bump(&a->war, now);
                        if (a->war.level == 1)
                                log_external(d, label, LOG_NOTICE, op->before, op->value, "%s changed externally to %s (blkmqd wrote %s); rewritten (Reassert=yes)",
                                             label, strna(op->before), op->value);
                        else if (a->war.level == 2)
                                log_external(d, label, LOG_WARNING, op->before, op->value, "%s changed externally to %s again after blkmqd rewrote %s: write war; "
                                             "further rewrites back off (Reassert=yes)", label, strna(op->before), op->value);
                } else if (ops & IOSCHED_OP_REAPPLY)
                        log_write(d, label, op->before, op->value, "%s %s -> %s: written again, %s reset it", label, strna(op->before), op->value,
                                        ops & IOSCHED_OP_DERIVED ? "blkmqd's nr_requests write (the kernel derives it from nr_requests)" :
                                        "an elevator switch since blkmqd wrote it");
                else
                        log_write(d, label, op->before, op->value, "%s %s -> %s", label, strna(op->before), op->value);
                n++;
        }
        return n;
}

/*
 * Restore (stop, restore): after the elevator blkmqd found is back, put back the tunables
 * blkmqd changed on it, and those its own switch reset (recorded before it). A tunable whose
 * elevator is not running has nothing to put back (its directory went with it); one reset by
 * someone else's switch since blkmqd wrote it holds the elevator's default, which is nobody's;
 * one someone else changed is left to them.
 */
static int iosched_restore_decide(HostFs *h, Device *d, WriteJob **ret_job) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;
        _cleanup_free_ char *elevator = NULL;
        bool any = false;

        memset(d->run.iosched_ops, 0, sizeof(d->run.iosched_ops));
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                any = any || d->iosched[t].original;
        if (!any)
                return 0;
        if (read_knob(h, d->name, KNOB_ELEVATOR, &elevator) < 0)
                elevator = NULL;
        uint64_t ino = iosched_instance(h, d->name);

        for (size_t n = 0; n < _IOSCHED_TUNABLE_MAX; n++) {
                IoschedTunable t = iosched_order(n);
                const IoschedTunableInfo *info = iosched_tunable_info(t);
                Applied *a = &d->iosched[t];
                _cleanup_free_ char *cur = NULL;
                if (!a->original)
                        continue;
                const char *lbl = TUNABLE_LABEL(t);
                if (!elevator || !streq(elevator, info->elevator) || read_tunable(h, d->name, info->name, &cur) < 0) {
                        log_device_debug(d->name, "%s: %s does not run (%s): nothing to put back", lbl, info->elevator, strna(elevator));
                        iosched_forget(d, t);
                        applied_set(a, APPLY_UNMANAGED, 0, NULL);
                        continue;
                }
                bool new_instance = d->iosched_ino[t] && ino && ino != d->iosched_ino[t];
                const char *eff = d->iosched_read[t] ?: a->value;
                if (streq(cur, a->original) || (a->value && new_instance)) {
                        iosched_forget(d, t);
                        applied_set(a, APPLY_UNMANAGED, 0, NULL);
                        continue;
                }
                if (a->value && !streq(cur, eff)) {
                        log_external(d, lbl, LOG_NOTICE, a->value, cur, "%s changed externally to %s (blkmqd wrote %s); not restoring %s over it",
                                     lbl, cur, a->value, a->original);
                        d->run.left++;
                        iosched_forget(d, t);
                        applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (it is no longer blkmqd's to restore)", cur);
                        continue;
                }
                if (iosched_add_op(&j, d, t, a->original, cur, false) < 0)
                        return -ENOMEM;
                d->run.iosched_ops[t] = IOSCHED_OP_RESTORE;
        }
        if (j)
                *ret_job = TAKE_PTR(j);
        return 0;
}

static int iosched_restore_finish(HostFs *h, Device *d, const WriteJob *j) {
        const WriteOp *op;
        IoschedTunable t;
        int n = 0;
        for (size_t i = 0; (t = iosched_op_next(d, j, &i, &op)) >= 0;) {
                Applied *a = &d->iosched[t];
                const char *lbl = TUNABLE_LABEL(t);
                if (op->result < 0 && disk_vanished(h, d, op->result)) {
                        applied_set(a, APPLY_ERROR, op->result, "the disk vanished before %s was put back", strna(a->original));
                        continue;
                }
                if (op->result < 0) {
                        apply_log_knob(d, lbl, KNOB_RECORD_FAILED, LOG_WARNING, op->result, op->before, op->value,
                                       "Failed to restore %s %s: %m", lbl, op->value);
                        applied_set(a, APPLY_ERROR, op->result, "%s restoring %s", strerrorname_np(-op->result) ?: "error", op->value);
                        if (d->run.error >= 0)
                                d->run.error = op->result;
                        d->run.failed++;
                        continue;
                }
                log_restore(d, lbl, op->before, op->value, "%s restored to %s", lbl, op->value);
                iosched_forget(d, t);
                applied_set(a, APPLY_UNMANAGED, 0, NULL);
                n++;
        }
        return n;
}

/* The step's state in applied/ while its job waits (pending, timeout) or could not start. */
static void step_set(Device *d, int k, ApplyState state, int error, const char *what) {
        if (k != STEP_IOSCHED) {
                applied_set(&d->applied[k], state, error, "%s", what);
                return;
        }
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (d->run.iosched_ops[t])
                        applied_set(&d->iosched[t], state, error, "%s", what);
}

/* ---- runs: decide on the loop, write on a worker, go on when it returned ------------------------ */

static int run_step(Applier *a, Device *d);

static Device *job_device(Applier *a, const WriteJob *j) {
        Device *d = a->registry ? registry_get(a->registry, j->lane) : a->inline_device;
        /* the disk went away (or was re-added) while its write was in flight: nothing to record */
        return d && d->run.job == j ? d : NULL;
}

/* The write of the step d->run.next returned: record its outcome. */
static void knob_finish(Applier *a, Device *d, const WriteJob *j) {
        int k = run_step_knob(d->run.next);
        int r;

        if (k == STEP_IOSCHED)
                r = d->run.restore ? iosched_restore_finish(a->hostfs, d, j) : iosched_finish(a->hostfs, d, j);
        else if (apply_net_knob(k))
                r = apply_net_finish(a->hostfs, d, k, j, d->run.restore || (j->tag & TAG_RESTORE));
        else if (d->run.restore)
                r = k == KNOB_IRQ_AFFINITY ? irq_restore_finish(a->hostfs, d, j) : restore_knob_finish(a->hostfs, d, k, j);
        else if (j->tag & TAG_RESTORE)
                r = restore_in_run_finish(a->hostfs, d, k, j);
        else if (j->tag & TAG_BEFORE_OVERRIDE)
                r = nr_before_override_finish(d, j);
        else
                r = k == KNOB_IRQ_AFFINITY ? irq_affinity_finish(a->hostfs, d, j) : queue_knob_finish(a->hostfs, d, k, j);
        if (r > 0) {
                d->run.written += r;
                d->run.written_knobs |= 1u << k;
        }
}

static void on_job_done(WriteJob *j, void *userdata) {
        Applier *a = userdata;
        Device *d = job_device(a, j);
        if (!d)
                return;
        d->run.job = NULL;
        d->run.timed_out = false;
        log_device_debug(d->name, "Write of \"%s\" to \"%s\" returned after %.1f ms%s", j->ops[0].value, j->ops[0].path,
                         (double) (j->done_usec - j->submitted_usec) / 1e3, j->n_ops > 1 ? " (with the others of its job)" : "");
        knob_finish(a, d, j);
        d->run.next++;
        (void) run_step(a, d);
}

static void on_job_timeout(WriteJob *j, void *userdata) {
        Applier *a = userdata;
        Device *d = job_device(a, j);
        if (!d)
                return;
        int k = run_step_knob(d->run.next);
        double sec = (double) writer_timeout_usec(a->writer) / 1e6;
        char what_s[PATH_MAX + 256];

        d->run.timed_out = true;
        const char *what = d->run.restore || (j->tag & TAG_RESTORE) ? "restoring" : "writing";
        /* not started: it waits in the disk's lane for the save of its originals (state directory) */
        const char *why = j->lane_blocked ? "waiting for the originals to be saved in the state directory" : "no answer from the kernel";
        if (j->n_ops == 1 || k == STEP_IOSCHED)
                snprintf(what_s, sizeof(what_s), "%s %s to %s: %s after %g s", what, j->ops[0].value, j->ops[0].path, why, sec);
        else
                snprintf(what_s, sizeof(what_s), "%s %zu vector(s): %s after %g s", what, j->n_ops, why, sec);
        step_set(d, k, APPLY_TIMEOUT, 0, what_s);
        apply_log_knob(d, step_name(k), KNOB_RECORD_FAILED, LOG_WARNING, ETIMEDOUT, NULL, j->ops[0].value,
                        "%s: the write of \"%s\" to \"%s\" has not returned after %g s; the rest is served, "
                        "its outcome is recorded when it returns", step_name(k), j->ops[0].value, j->ops[0].path, sec);
        if (a->on_timeout)
                a->on_timeout(d, a->userdata);
}

/* The step d->run.next waits for its write: say so in applied/. */
static void mark_pending(Device *d, const WriteJob *j) {
        int k = run_step_knob(d->run.next);
        const char *what = d->run.restore || (j->tag & TAG_RESTORE) ? "restoring" : "writing";
        char what_s[PATH_MAX + 64];
        if (k == STEP_IOSCHED) {
                /* each tunable says what is written to it */
                for (size_t i = 0; i < j->n_ops; i++) {
                        IoschedTunable t = iosched_op_tunable(d, &j->ops[i]);
                        if (t >= 0)
                                applied_set(&d->iosched[t], APPLY_PENDING, 0, "%s %s to %s", what, j->ops[i].value, j->ops[i].path);
                }
                return;
        }
        if (j->n_ops == 1)
                snprintf(what_s, sizeof(what_s), "%s %s to %s", what, j->ops[0].value, j->ops[0].path);
        else
                snprintf(what_s, sizeof(what_s), "%s %zu vector(s)", what, j->n_ops);
        step_set(d, k, APPLY_PENDING, 0, what_s);
}

/*
 * Decide the knobs from d->run.next on. A write is done inline (no writer), or handed to the
 * writer: then return 1 and go on in on_job_done(). At the end: on_finished, return 0 (d may
 * be gone after it).
 */
/*
 * A knob the plan leaves to another tool (Plan.owner, policies/owners.c) and that holds
 * nothing of blkmqd's (no original left to put back): applied/ and the metric say
 * "deferred", naming the source.
 */
static void mark_deferred(Device *d) {
        for (Knob k = 0; k < _KNOB_MAX; k++) {
                Applied *a = &d->applied[k];
                if (d->plan.owner[k] != OWNERSHIP_DEFERRED || a->original || a->state != APPLY_UNMANAGED)
                        continue;
                applied_set(a, APPLY_DEFERRED, 0, "left to %s", strna(d->plan.owner_source[k]));
        }
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                Applied *a = &d->iosched[t];
                if (d->plan.owner_iosched[t] == OWNERSHIP_DEFERRED && !a->original && a->state == APPLY_UNMANAGED)
                        applied_set(a, APPLY_DEFERRED, 0, "left to another tool (explain names it)");
        }
}

static int run_step(Applier *a, Device *d) {
        ApplyRun *run = &d->run;
        ApplyOptions o = { .dry_run = run->dry_run, .reassert = run->reassert, .verify_only = run->verify_only,
                           .now_usec = run->now_usec };

        for (; run->next < N_STEPS && !d->vanished && !run->unregistered; run->next++) {
                int k = run_step_knob(run->next);
                WriteJob *j = NULL;
                int r;

                if (k == STEP_IOSCHED)
                        r = run->restore ? iosched_restore_decide(a->hostfs, d, &j) : iosched_decide(a->hostfs, d, &o, &j);
                else if (apply_net_knob(k))
                        r = run->restore ? apply_net_restore_decide(a->hostfs, d, k, &j) : apply_net_decide(a->hostfs, d, k, &o, &j);
                else if (run->restore)
                        r = k == KNOB_IRQ_AFFINITY ? irq_restore_decide(a->hostfs, d, &j) : restore_knob_decide(a->hostfs, d, k, &j);
                else
                        r = k == KNOB_IRQ_AFFINITY ? irq_affinity_decide(a->hostfs, d, &o, &j) :
                                                     queue_knob_decide(a->hostfs, d, k, &o, &j);
                if (r < 0) {
                        log_device_warning_errno(d->name, r, "Failed to apply %s, ignoring: %m", step_name(k));
                        if (run->error >= 0)
                                run->error = r;
                        continue;
                }
                run->written += r;
                if (!j)
                        continue;

                /* written only while block/<name> is still the disk decided for (a removal and
                 * re-add under the name may come between the decision and the worker's open) */
                if (d->facts && d->facts->sysfs_ino && asprintf(&j->instance_dir, "block/%s", d->name) >= 0)
                        j->instance_ino = d->facts->sysfs_ino;
                else
                        j->instance_dir = NULL;
                if (!a->writer) {
                        log_job_writes(d, j);
                        writer_run_inline(a->hostfs, j);
                        run->job = j;
                        knob_finish(a, d, j);
                        run->job = NULL;
                        write_job_free(j);
                        continue;
                }
                mark_pending(d, j);
                if (a->on_submit)
                        a->on_submit(d, a->userdata);
                run->job = j;
                log_job_writes(d, j);
                r = writer_submit(a->writer, j, on_job_done, on_job_timeout, a);
                if (r < 0) {
                        /* no worker thread: nothing was written; like a transient write error */
                        char what_s[128];
                        snprintf(what_s, sizeof(what_s), "cannot start a writer thread: %s", strerror(-r));
                        step_set(d, k, APPLY_ERROR, r, what_s);
                        run->job = NULL;
                        log_device_warning_errno(d->name, r, "%s: cannot start a writer thread, will retry: %m", step_name(k));
                        if (run->error >= 0)
                                run->error = r;
                        continue;
                }
                return 1;
        }
        if (!run->restore)
                mark_deferred(d);
        run->active = false;
        if (a->on_finished)
                a->on_finished(d, a->userdata);
        return 0;
}

int apply_start(Applier *a, Device *d, const ApplyOptions *o) {
        if (d->run.active)
                return -EBUSY;
        d->run = (ApplyRun) {
                .active = true,
                .dry_run = o->dry_run,
                .reassert = o->reassert,
                .verify_only = o->verify_only,
                .now_usec = o->now_usec ?: clock_now_usec(),
        };
        return run_step(a, d);
}

int apply_restore_start(Applier *a, Device *d) {
        if (d->run.active)
                return -EBUSY;
        d->run = (ApplyRun) { .active = true, .restore = true, .now_usec = clock_now_usec() };
        restore_check_external(a->hostfs, d);
        return run_step(a, d);
}

int apply_device(HostFs *h, Device *d, const ApplyOptions *o) {
        Applier a = { .hostfs = h, .inline_device = d };
        if (d->run.active)
                return 0;
        (void) apply_start(&a, d, o);
        return d->run.written;
}

int apply_restore(HostFs *h, Device *d, RestoreCounts *counts) {
        Applier a = { .hostfs = h, .inline_device = d };
        if (d->run.active)
                return -EBUSY;
        (void) apply_restore_start(&a, d);
        if (counts) {
                counts->restored += d->run.written;
                counts->failed += d->run.failed;
                counts->left += d->run.left;
        }
        return d->run.written;
}

/* The stored value of key in kv (strv of alternating key, value), NULL when absent. */
static const char *written_kv_get(char * const *kv, const char *key) {
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                if (streq(kv[i], key))
                        return kv[i + 1];
        return NULL;
}

static uint64_t written_kv_u64(char * const *kv, const char *key) {
        const char *v = written_kv_get(kv, key);
        char *end;
        if (!v || !*v)
                return 0;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        return errno || *end ? 0 : (uint64_t) n;
}

/*
 * Is the value read now blkmqd's earlier write? Not when it is the original and the write was
 * another value: the write never landed (a crash between the save and the write) or was put
 * back; the knob is then as blkmqd found it, and applied as at a first start.
 */
static bool written_adoptable(const char *current, const char *original, const char *written) {
        return !(streq(current, original) && !streq(current, written));
}

int apply_adopt_written(HostFs *h, Device *d, char * const *kv) {
        int n = 0;

        if (!h)
                return 0;

        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                const char *what = startswith(kv[i], APPLY_WRITTEN_PREFIX), *written = kv[i + 1];
                _cleanup_free_ char *current = NULL;
                const char *dotted;
                unsigned irq;
                Knob k;

                if (!what)
                        continue;
                if ((dotted = startswith(what, "iosched."))) {
                        IoschedTunable t = iosched_tunable_from_dotted(dotted);
                        _cleanup_free_ char *elevator = NULL;
                        char key[160];
                        if (t < 0)
                                continue;
                        const IoschedTunableInfo *info = iosched_tunable_info(t);
                        Applied *a = &d->iosched[t];
                        /* only while its elevator runs: otherwise the value went with it, and
                         * an original recorded before blkmqd's switch comes back with it */
                        if (!a->original || read_knob(h, d->name, KNOB_ELEVATOR, &elevator) < 0 || !streq(elevator, info->elevator) ||
                            read_tunable(h, d->name, info->name, &current) < 0)
                                continue;
                        snprintf(key, sizeof(key), "%s%s", APPLY_READBACK_PREFIX, what);
                        const char *readback = written_kv_get(kv, key);
                        if (!written_adoptable(current, a->original, readback ?: written))
                                continue;
                        if (free_and_strdup(&a->value, written) < 0 || (readback && free_and_strdup(&d->iosched_read[t], readback) < 0))
                                return -ENOMEM;
                        snprintf(key, sizeof(key), "%s%s", APPLY_INSTANCE_PREFIX, what);
                        d->iosched_ino[t] = written_kv_u64(kv, key);
                        applied_set(a, APPLY_OK, 0, NULL);
                        n++;
                } else if (sscanf(what, "irq.%u", &irq) == 1) {
                        for (size_t v = 0; v < d->n_irq_applied; v++) {
                                IrqApplied *ia = &d->irq_applied[v];
                                if (ia->irq != irq || !ia->original || read_irq_affinity(h, irq, &current) < 0)
                                        continue;
                                if (!written_adoptable(current, ia->original, written))
                                        break;
                                if (free_and_strdup(&ia->value, written) < 0)
                                        return -ENOMEM;
                                n++;
                                break;
                        }
                } else if ((k = knob_from_string(what)) >= 0 && k != KNOB_IRQ_AFFINITY && !apply_net_knob(k)) {
                        Applied *a = &d->applied[k];
                        if (!a->original || read_knob(h, d->name, k, &current) < 0 || !written_adoptable(current, a->original, written))
                                continue;
                        if (free_and_strdup(&a->value, written) < 0)
                                return -ENOMEM;
                        if (k == KNOB_NR_REQUESTS)
                                d->nr_requests_ino = written_kv_u64(kv, APPLY_INSTANCE_PREFIX "nr_requests");
                        applied_set(a, APPLY_OK, 0, NULL);
                        n++;
                }
        }
        return n;
}

int apply_history(const Device *d, bool reassert, PolicyHistory *ret) {
        _cleanup_(policy_history_done) PolicyHistory h = POLICY_HISTORY_INIT;
        uint64_t nr;
        int rq;

        assert(d);
        assert(ret);
        const Applied *e = &d->applied[KNOB_ELEVATOR];
        bool unloaded = d->elevator_unloaded && e->state == APPLY_ERROR;
        if ((e->original && !(h.elevator_before = strdup(e->original))) ||
            (unloaded && !(h.elevator_unloaded = strdup(d->elevator_unloaded))))
                return -ENOMEM;
        h.elevator_held = e->state == APPLY_EXTERNAL && !reassert;
        h.elevator_load_attempts = unloaded ? e->retry.level : 0;
        h.elevator_retry_sec = unloaded ? (unsigned) (apply_backoff_delay(e->retry.level) / 1000000) : 0;
        h.rq_affinity_before = d->applied[KNOB_RQ_AFFINITY].original &&
                               parse_int(d->applied[KNOB_RQ_AFFINITY].original, &rq) >= 0 ? rq : -1;
        h.nr_requests_before = d->applied[KNOB_NR_REQUESTS].original &&
                               parse_u64(d->applied[KNOB_NR_REQUESTS].original, &nr) >= 0 && nr <= INT64_MAX ?
                               (int64_t) nr : -1;
        /* the vectors blkmqd moved, with the affinity they had before (after a reload or a
         * restart their affinity is blkmqd's placement, which matches no hctx: the IRQ map
         * matches them by this, disk_facts_map_irqs()) */
        if (d->n_irq_applied > 0 && !(h.irqs = calloc(d->n_irq_applied, sizeof(IrqHistory))))
                return -ENOMEM;
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                const IrqApplied *a = &d->irq_applied[i];
                h.irq_written += a->original && !a->external;
                if (!a->original)
                        continue;
                if (!(h.irqs[h.n_irqs].affinity_before = strdup(a->original)))
                        return -ENOMEM;
                h.irqs[h.n_irqs++].irq = a->irq;
        }

        /* the disk's part into *ret; the modules' part stays */
        h.boot_modules = ret->boot_modules;
        h.n_boot_modules = ret->n_boot_modules;
        *ret = h;
        h = POLICY_HISTORY_INIT;
        return 0;
}
