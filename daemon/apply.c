/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

#define IN_SET_OK_EXTERNAL(s) ((s) == APPLY_OK || (s) == APPLY_EXTERNAL)

static inline const char *strempty(const char *s) {
        return s ?: "";
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

static int set_message(Applied *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_message(Applied *a, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        free(a->message);
        a->message = r < 0 ? NULL : s;
        return r < 0 ? -ENOMEM : 0;
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
        log_device_debug(d->name, "Writing \"%s\" to \"%s\"", value, path);
        *ret = j;
        return 0;
}

static void log_write_failed(const Device *d, const char *knob, int r, WriteErrorClass c, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static void log_write_failed(const Device *d, const char *knob, int r, WriteErrorClass c, const char *fmt, ...) {
        char what[512], f_knob[64];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        snprintf(f_knob, sizeof(f_knob), "BLKMQD_KNOB=%s", knob);
        const char *fields[] = { f_knob, NULL };
        log_device_full(LOG_WARNING, r, d->name, BLKMQD_MESSAGE_WRITE_FAILED, fields, "%s: %m%s", what,
                        c == WRITE_ERROR_TRANSIENT ? ", will retry" :
                        c == WRITE_ERROR_UNSUPPORTED ? ", not retrying" : "");
}

/*
 * Decide one queue knob on the loop thread: read the current value, compare, record the
 * original. Returns the number of originals dropped (the caller persists them) or -ENOMEM;
 * *ret_job gets the write when one is needed (finished by queue_knob_finish()).
 */
static int queue_knob_decide(HostFs *h, Device *d, Knob k, const ApplyOptions *o, WriteJob **ret_job) {
        Applied *a = &d->applied[k];
        const char *wanted = plan_get(&d->plan, k), *knob = knob_to_string(k);
        _cleanup_free_ char *current = NULL;
        int r;

        if (!d->plan.manage || !wanted) {
                if (!a->original)
                        a->state = APPLY_UNMANAGED;
                return 0;
        }
        if (a->state == APPLY_UNSUPPORTED && streq_ptr(a->value, wanted))
                return 0;               /* said once; never retried */

        r = read_knob(h, d->name, k, &current);
        if (r < 0) {
                a->state = APPLY_ERROR;
                a->error = r;
                set_message(a, "cannot read queue/%s: %s", queue_attr[k], strerror(-r));
                return 0;
        }

        /* Someone else changed a value we wrote: report once, do not fight. */
        if (IN_SET_OK_EXTERNAL(a->state) && streq_ptr(a->value, wanted) && !streq(current, wanted) &&
            (!o->reassert || o->verify_only)) {
                bool transition = a->state != APPLY_EXTERNAL;
                if (transition) {
                        char f_knob[64];
                        snprintf(f_knob, sizeof(f_knob), "BLKMQD_KNOB=%s", knob);
                        const char *fields[] = { f_knob, NULL };
                        log_device_full(LOG_NOTICE, 0, d->name, BLKMQD_MESSAGE_EXTERNAL_CHANGE, fields,
                                        "%s changed externally to %s (blkmqd wrote %s); leaving it (reassert=no)",
                                        knob, current, wanted);
                }
                a->state = APPLY_EXTERNAL;
                set_message(a, "changed externally to %s (blkmqd wrote %s; it is no longer blkmqd's to restore)",
                            current, wanted);
                /* Someone else owns the value now: restoring our original would clobber it. */
                a->original = mfree_str(a->original);
                return transition;      /* originals changed: the caller persists them */
        }
        if (o->verify_only)
                return 0;

        if (streq(current, wanted)) {
                /* "ok" when the value is blkmqd's doing (an original is recorded, possibly by
                 * an earlier run); otherwise nothing was needed. */
                a->state = a->original ? APPLY_OK : APPLY_KEPT;
                a->error = 0;
                free_and_strdup(&a->value, wanted);
                return 0;
        }

        if (o->dry_run) {
                if (a->state != APPLY_DRY_RUN || !streq_ptr(a->value, wanted))
                        log_device_info(d->name, "dry-run: would set %s %s -> %s", knob, current, wanted);
                a->state = APPLY_DRY_RUN;
                free_and_strdup(&a->value, wanted);
                set_message(a, "would write %s (now %s)", wanted, current);
                return 0;
        }

        if (!a->original && free_and_strdup(&a->original, current) < 0)
                return -ENOMEM;
        free_and_strdup(&a->value, wanted);

        /* An elevator switch resets nr_requests (blk_mq_init_sched(): 2 * min(depth, 128)):
         * record nr_requests as it is now, before the switch, so a restore (elevator first)
         * finds the value that belongs to the original elevator. */
        Applied *nr = &d->applied[KNOB_NR_REQUESTS];
        if (k == KNOB_ELEVATOR && !nr->original) {
                _cleanup_free_ char *depth = NULL;
                if (read_knob(h, d->name, KNOB_NR_REQUESTS, &depth) >= 0)
                        nr->original = TAKE_PTR(depth);
        }

        /* the write (and its read back) goes to a worker: see queue_knob_finish() */
        return knob_job(d, k, wanted, current, true, ret_job) < 0 ? -ENOMEM : 0;
}

/* The write of queue_knob_decide() returned: triage it. Returns 1 when the value was set. */
static int queue_knob_finish(Device *d, Knob k, const WriteJob *j) {
        Applied *a = &d->applied[k];
        const WriteOp *op = &j->ops[0];
        const char *wanted = op->value, *current = op->before, *knob = knob_to_string(k);
        _cleanup_free_ char *after = NULL, *late = NULL;
        int r = op->result;

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
                a->state = c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR;
                a->error = r;
                set_message(a, "%s writing %s to queue/%s%s%s%s", strerrorname_np(-r) ?: "error", wanted,
                            queue_attr[k], after ? ", read back " : "", after ?: "", strempty(late));
                log_write_failed(d, knob, r, c, "Failed to set %s %s (now %s)%s", knob, wanted, after ?: strna(current), strempty(late));
                return 0;
        }

        a->state = APPLY_OK;
        a->error = 0;
        a->message = mfree_str(a->message);
        log_device_info(d->name, "%s %s -> %s%s", knob, strna(current), wanted, strempty(late));
        return 1;
}

static IrqApplied *irq_applied_get(Device *d, unsigned irq) {
        for (size_t i = 0; i < d->n_irq_applied; i++)
                if (d->irq_applied[i].irq == irq)
                        return &d->irq_applied[i];
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

/* The summary of irq_affinity once every vector was decided (and written). */
static void irq_affinity_summarize(Device *d, size_t placed, size_t failed, int first_error) {
        Applied *a = &d->applied[KNOB_IRQ_AFFINITY];
        const ApplyRun *run = &d->run;
        size_t total = run->irq_total, kept = run->irq_kept, managed = run->irq_managed, would = run->irq_would;

        free_and_strdup(&a->value, d->plan.irq_affinity);
        a->error = first_error;
        a->state = failed ? APPLY_ERROR :
                   total > 0 && managed == total ? APPLY_MANAGED :
                   would ? APPLY_DRY_RUN :
                   placed || (a->state == APPLY_OK) ? APPLY_OK : APPLY_KEPT;
        if (would)
                set_message(a, "would place %zu vector(s) on %s, %zu already placed, %zu managed by kernel", would, strna(a->value), kept, managed);
        else
                set_message(a, "%zu vector(s): %zu placed, %zu already placed, %zu managed by kernel, %zu failed",
                            total, placed, kept, managed, failed);
}

/*
 * Decide irq_affinity on the loop thread: every queue vector's current affinity is read and
 * compared; the vectors to place go into one job (*ret_job, finished by
 * irq_affinity_finish()). Returns 0 or -ENOMEM.
 */
static int irq_affinity_decide(HostFs *h, Device *d, const ApplyOptions *o, WriteJob **ret_job) {
        Applied *a = &d->applied[KNOB_IRQ_AFFINITY];
        const char *want = d->plan.irq_affinity;
        const DiskFacts *f = d->facts;
        ApplyRun *run = &d->run;
        _cleanup_(write_job_freep) WriteJob *j = NULL;

        run->irq_total = run->irq_kept = run->irq_managed = run->irq_would = 0;
        if (!d->plan.manage || !want) {
                size_t total = 0, managed = 0;
                bool all_managed = false;
                for (size_t i = 0; i < f->n_irqs; i++)
                        if (f->irqs[i].queue) {
                                total++;
                                managed += f->irqs[i].managed == TRISTATE_YES;
                        }
                all_managed = total > 0 && (managed == total || irq_affinity_hctx_all_managed(f));
                a->state = all_managed ? APPLY_MANAGED : APPLY_UNMANAGED;
                if (all_managed && managed == total)
                        set_message(a, "%zu queue vector(s) managed by kernel", total);
                else if (all_managed)
                        set_message(a, "%zu of %zu queue vector(s) managed by kernel, one per hctx", managed, total);
                return 0;
        }

        for (size_t i = 0; i < f->n_irqs; i++) {
                const IrqFacts *q = &f->irqs[i];
                if (!q->queue)
                        continue;
                const char *target = streq(want, "hctx") ?
                        (q->hctx >= 0 ? f->hctx[q->hctx].cpu_list : NULL) : want;
                if (!target)
                        continue;
                run->irq_total++;

                IrqApplied *ia = irq_applied_get(d, q->irq);
                if (!ia)
                        return -ENOMEM;
                if (q->managed == TRISTATE_YES || ia->managed) {
                        run->irq_managed++;
                        continue;
                }

                _cleanup_free_ char *current = NULL;
                int r = read_irq_affinity(h, q->irq, &current);
                if (r >= 0 && streq(current, target)) {
                        run->irq_kept++;
                        continue;
                }
                if (o->dry_run) {
                        run->irq_would++;
                        continue;
                }
                if (r >= 0 && !ia->original && !(ia->original = strdup(current)))
                        return -ENOMEM;

                char path[64];
                irq_path(path, sizeof(path), q->irq);
                if (!j && !(j = write_job_new(d->name)))
                        return -ENOMEM;
                if (write_job_add(j, HOSTFS_PROCFS, path, target, false) < 0 ||
                    (current && !(j->ops[j->n_ops - 1].before = strdup(current))))
                        return -ENOMEM;
                j->stop_on_error = false;       /* one vector's failure does not stop the others */
                j->tag = KNOB_IRQ_AFFINITY;
                log_device_debug(d->name, "Writing \"%s\" to procfs \"%s\"", target, path);
        }

        if (j)
                *ret_job = TAKE_PTR(j);
        else
                irq_affinity_summarize(d, 0, 0, 0);
        return 0;
}

static const char *irq_name(const Device *d, unsigned irq) {
        for (size_t i = 0; d->facts && i < d->facts->n_irqs; i++)
                if (d->facts->irqs[i].irq == irq)
                        return d->facts->irqs[i].name;
        return NULL;
}

/* The writes of irq_affinity_decide() returned. Returns the number of vectors placed. */
static int irq_affinity_finish(Device *d, const WriteJob *j) {
        size_t placed = 0, failed = 0;
        int first_error = 0;

        for (size_t i = 0; i < j->n_ops; i++) {
                const WriteOp *op = &j->ops[i];
                unsigned irq;
                if (sscanf(op->path, "irq/%u/", &irq) != 1)
                        continue;
                IrqApplied *ia = irq_applied_get(d, irq);
                if (!ia)
                        return -ENOMEM;
                int r = op->result;
                if (r == -EIO || r == -EPERM) {
                        /* managed IRQ: -EIO <= 6.11, -EPERM >= 6.12 (eb29369fa543) */
                        ia->managed = true;
                        ia->original = mfree_str(ia->original);
                        d->run.irq_managed++;
                        log_device_info(d->name, "IRQ %u (%s) is managed by the kernel (%s on write), not retrying",
                                        irq, strna(irq_name(d, irq)), strerrorname_np(-r));
                        continue;
                }
                if (r < 0) {
                        failed++;
                        if (!first_error)
                                first_error = r;
                        log_write_failed(d, "irq_affinity", r, apply_classify_error(r),
                                         "Failed to set IRQ %u affinity to %s", irq, op->value);
                        continue;
                }
                free_and_strdup(&ia->value, op->value);
                placed++;
                log_device_info(d->name, "IRQ %u (%s) affinity %s -> %s", irq, strna(irq_name(d, irq)), strna(op->before), op->value);
        }
        irq_affinity_summarize(d, placed, failed, first_error);
        return placed;
}

bool apply_has_originals(const Device *d) {
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (d->applied[k].original)
                        return true;
        for (size_t i = 0; i < d->n_irq_applied; i++)
                if (d->irq_applied[i].original)
                        return true;
        return false;
}

/* ---- restore ---------------------------------------------------------------------------------- */

static void forget_applied(Applied *a) {
        a->original = mfree_str(a->original);
        a->value = mfree_str(a->value);
        a->state = APPLY_UNMANAGED;
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

static int restore_knob_finish(Device *d, Knob k, const WriteJob *j) {
        Applied *a = &d->applied[k];
        int r = j->ops[0].result;

        if (r < 0) {
                log_device_warning_errno(d->name, r, "Failed to restore %s %s: %m", knob_to_string(k), a->original);
                a->state = APPLY_ERROR;
                a->error = r;
                set_message(a, "%s restoring %s", strerrorname_np(-r) ?: "error", strna(a->original));
                if (d->run.error >= 0)
                        d->run.error = r;
                return 0;
        }
        log_device_info(d->name, "%s restored to %s", knob_to_string(k), a->original);
        forget_applied(a);
        return 1;
}

static int irq_restore_decide(Device *d, WriteJob **ret_job) {
        _cleanup_(write_job_freep) WriteJob *j = NULL;

        for (size_t i = 0; i < d->n_irq_applied; i++) {
                IrqApplied *ia = &d->irq_applied[i];
                char path[64];
                if (!ia->original)
                        continue;
                irq_path(path, sizeof(path), ia->irq);
                if ((!j && !(j = write_job_new(d->name))) || write_job_add(j, HOSTFS_PROCFS, path, ia->original, false) < 0)
                        return -ENOMEM;
                j->stop_on_error = false;
                j->tag = KNOB_IRQ_AFFINITY;
        }
        if (j)
                *ret_job = TAKE_PTR(j);
        else if (d->applied[KNOB_IRQ_AFFINITY].state != APPLY_MANAGED)
                d->applied[KNOB_IRQ_AFFINITY].state = APPLY_UNMANAGED;
        return 0;
}

static int irq_restore_finish(Device *d, const WriteJob *j) {
        int n = 0;
        for (size_t i = 0; i < j->n_ops; i++) {
                const WriteOp *op = &j->ops[i];
                unsigned irq;
                if (sscanf(op->path, "irq/%u/", &irq) != 1)
                        continue;
                IrqApplied *ia = irq_applied_get(d, irq);
                if (!ia)
                        return -ENOMEM;
                if (op->result < 0) {
                        log_device_warning_errno(d->name, op->result, "Failed to restore IRQ %u affinity %s: %m", irq, op->value);
                        if (d->run.error >= 0)
                                d->run.error = op->result;
                        continue;
                }
                log_device_info(d->name, "IRQ %u affinity restored to %s", irq, op->value);
                ia->original = mfree_str(ia->original);
                n++;
        }
        if (d->applied[KNOB_IRQ_AFFINITY].state != APPLY_MANAGED)
                d->applied[KNOB_IRQ_AFFINITY].state = APPLY_UNMANAGED;
        return n;
}

/* ---- runs: decide on the loop, write on a worker, go on when it returned ------------------------ */

static int run_step(Applier *a, Device *d);

static Device *job_device(Applier *a, const WriteJob *j) {
        Device *d = a->registry ? registry_get(a->registry, j->lane) : a->inline_device;
        /* the disk went away (or was re-added) while its write was in flight: nothing to record */
        return d && d->run.job == j ? d : NULL;
}

/* The write of the knob d->run.next returned: record its outcome. */
static void knob_finish(Device *d, const WriteJob *j) {
        Knob k = d->run.next;
        int r;

        if (d->run.restore)
                r = k == KNOB_IRQ_AFFINITY ? irq_restore_finish(d, j) : restore_knob_finish(d, k, j);
        else
                r = k == KNOB_IRQ_AFFINITY ? irq_affinity_finish(d, j) : queue_knob_finish(d, k, j);
        if (r > 0)
                d->run.written += r;
}

static void on_job_done(WriteJob *j, void *userdata) {
        Applier *a = userdata;
        Device *d = job_device(a, j);
        if (!d)
                return;
        d->run.job = NULL;
        d->run.timed_out = false;
        knob_finish(d, j);
        d->run.next++;
        (void) run_step(a, d);
}

static void on_job_timeout(WriteJob *j, void *userdata) {
        Applier *a = userdata;
        Device *d = job_device(a, j);
        if (!d)
                return;
        Knob k = d->run.next;
        Applied *ap = &d->applied[k];
        double sec = (double) writer_timeout_usec(a->writer) / 1e6;

        d->run.timed_out = true;
        ap->state = APPLY_TIMEOUT;
        if (j->n_ops == 1)
                set_message(ap, "%s %s to %s: no answer from the kernel after %.0f s", d->run.restore ? "restoring" : "writing",
                            j->ops[0].value, j->ops[0].path, sec);
        else
                set_message(ap, "%s %zu vector(s): no answer from the kernel after %.0f s", d->run.restore ? "restoring" : "writing",
                            j->n_ops, sec);
        log_device_full(LOG_WARNING, ETIMEDOUT, d->name, BLKMQD_MESSAGE_WRITE_FAILED, NULL,
                        "%s: the write of \"%s\" to \"%s\" has not returned after %.0f s; the rest is served, "
                        "its outcome is recorded when it returns", knob_to_string(k), j->ops[0].value, j->ops[0].path, sec);
        if (a->on_timeout)
                a->on_timeout(d, a->userdata);
}

/* The knob d->run.next waits for its write: say so in applied/. */
static void mark_pending(Device *d, const WriteJob *j) {
        Applied *ap = &d->applied[d->run.next];
        ap->state = APPLY_PENDING;
        if (j->n_ops == 1)
                set_message(ap, "%s %s to %s", d->run.restore ? "restoring" : "writing", j->ops[0].value, j->ops[0].path);
        else
                set_message(ap, "%s %zu vector(s)", d->run.restore ? "restoring" : "writing", j->n_ops);
}

/*
 * Decide the knobs from d->run.next on. A write is done inline (no writer), or handed to the
 * writer: then return 1 and go on in on_job_done(). At the end: on_finished, return 0 (d may
 * be gone after it).
 */
static int run_step(Applier *a, Device *d) {
        ApplyRun *run = &d->run;
        ApplyOptions o = { .dry_run = run->dry_run, .reassert = run->reassert, .verify_only = run->verify_only };

        for (; run->next < _KNOB_MAX; run->next++) {
                Knob k = run->next;
                WriteJob *j = NULL;
                int r;

                if (run->restore)
                        r = k == KNOB_IRQ_AFFINITY ? irq_restore_decide(d, &j) : restore_knob_decide(a->hostfs, d, k, &j);
                else if (k == KNOB_IRQ_AFFINITY && o.verify_only)
                        r = 0;
                else
                        r = k == KNOB_IRQ_AFFINITY ? irq_affinity_decide(a->hostfs, d, &o, &j) :
                                                     queue_knob_decide(a->hostfs, d, k, &o, &j);
                if (r < 0) {
                        log_device_warning_errno(d->name, r, "Failed to apply %s, ignoring: %m", knob_to_string(k));
                        if (run->error >= 0)
                                run->error = r;
                        continue;
                }
                run->written += r;
                if (!j)
                        continue;

                if (!a->writer) {
                        writer_run_inline(a->hostfs, j);
                        run->job = j;
                        knob_finish(d, j);
                        run->job = NULL;
                        write_job_free(j);
                        continue;
                }
                mark_pending(d, j);
                if (a->on_submit)
                        a->on_submit(d, a->userdata);
                run->job = j;
                r = writer_submit(a->writer, j, on_job_done, on_job_timeout, a);
                if (r < 0) {
                        /* no worker thread: nothing was written; like a transient write error */
                        Applied *ap = &d->applied[k];
                        run->job = NULL;
                        ap->state = APPLY_ERROR;
                        ap->error = r;
                        set_message(ap, "cannot start a writer thread: %s", strerror(-r));
                        log_device_warning_errno(d->name, r, "%s: cannot start a writer thread, will retry: %m", knob_to_string(k));
                        if (run->error >= 0)
                                run->error = r;
                        continue;
                }
                return 1;
        }
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
        };
        return run_step(a, d);
}

int apply_restore_start(Applier *a, Device *d) {
        if (d->run.active)
                return -EBUSY;
        d->run = (ApplyRun) { .active = true, .restore = true };
        return run_step(a, d);
}

int apply_device(HostFs *h, Device *d, const ApplyOptions *o) {
        Applier a = { .hostfs = h, .inline_device = d };
        if (d->run.active)
                return 0;
        (void) apply_start(&a, d, o);
        return d->run.written;
}

int apply_restore(HostFs *h, Device *d) {
        Applier a = { .hostfs = h, .inline_device = d };
        if (d->run.active)
                return -EBUSY;
        (void) apply_restore_start(&a, d);
        return d->run.error < 0 ? d->run.error : d->run.written;
}
