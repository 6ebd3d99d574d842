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
#define IN_SET_FAILED(s) ((s) == APPLY_ERROR || (s) == APPLY_UNSUPPORTED)
/* WriteJob.tag bit: the job puts a recorded original back within an apply run */
#define TAG_RESTORE 0x100

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

/*
 * Every change of an Applied's state goes through here, so state, error and message always
 * agree: error is 0 unless the state is a failure, message is the given text or NULL (an
 * "ok" after an error does not keep the error's text). value and original are not touched.
 */
static void applied_set(Applied *a, ApplyState state, int error, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void applied_set(Applied *a, ApplyState state, int error, const char *fmt, ...) {
        char *s = NULL;
        if (fmt) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(&s, fmt, ap) < 0)
                        s = NULL;
                va_end(ap);
        }
        free(a->message);
        a->message = s;
        a->state = state;
        a->error = IN_SET_FAILED(state) ? error : 0;
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

/* A job putting the recorded original of queue knob k back (within an apply run). */
static int restore_job(const Device *d, Knob k, WriteJob **ret) {
        int r = knob_job(d, k, d->applied[k].original, NULL, false, ret);
        if (r >= 0)
                (*ret)->tag |= TAG_RESTORE;
        return r;
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
                if (a->value) {
                        /* blkmqd's nr_requests under blkmqd's elevator: the recorded value belongs
                         * to the elevator before the switch and may not even be valid now */
                        applied_set(a, APPLY_UNMANAGED, 0,
                                    "%s stays: %s belongs to the elevator before blkmqd's switch and comes back with it",
                                    a->value, a->original);
                        a->value = mfree_str(a->value);
                }
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
        if (o->verify_only)
                return 0;
        if (o->dry_run) {
                applied_set(a, APPLY_DRY_RUN, 0, "would put back %s, the value before blkmqd changed it", a->original);
                return 0;
        }
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
        const char *wanted = d->plan.manage ? plan_get(&d->plan, k) : NULL, *knob = knob_to_string(k);
        _cleanup_free_ char *current = NULL;
        int r;

        if (!wanted)
                return queue_knob_no_wish(h, d, k, o, ret_job);
        if (a->state == APPLY_UNSUPPORTED && streq_ptr(a->value, wanted))
                return 0;               /* said once; never retried */

        r = read_knob(h, d->name, k, &current);
        if (r < 0) {
                applied_set(a, APPLY_ERROR, r, "cannot read queue/%s: %s", queue_attr[k], strerror(-r));
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
                applied_set(a, APPLY_EXTERNAL, 0, "changed externally to %s (blkmqd wrote %s; it is no longer blkmqd's to restore)",
                            current, wanted);
                /* Someone else owns the value now: restoring our original would clobber it.
                 * So is the nr_requests their elevator switch reset. */
                a->original = mfree_str(a->original);
                if (k == KNOB_ELEVATOR && !nr->value && nr->original) {
                        nr->original = mfree_str(nr->original);
                        applied_set(nr, APPLY_UNMANAGED, 0, NULL);
                }
                return transition;      /* originals changed: the caller persists them */
        }
        if (o->verify_only)
                return 0;

        if (streq(current, wanted)) {
                /* "ok" when the value is blkmqd's doing (an original is recorded, possibly by
                 * an earlier run); otherwise nothing was needed. The original itself wanted
                 * again is no longer blkmqd's doing. */
                bool dropped = a->original && streq(a->original, wanted);
                if (dropped)
                        a->original = mfree_str(a->original);
                applied_set(a, a->original ? APPLY_OK : APPLY_KEPT, 0, NULL);
                free_and_strdup(&a->value, wanted);
                return dropped;
        }

        if (o->dry_run) {
                if (a->state != APPLY_DRY_RUN || !streq_ptr(a->value, wanted))
                        log_device_info(d->name, "dry-run: would set %s %s -> %s", knob, current, wanted);
                applied_set(a, APPLY_DRY_RUN, 0, "would write %s (now %s)", wanted, current);
                free_and_strdup(&a->value, wanted);
                return 0;
        }

        /* Policy wants the recorded original back ("auto" after an override whose class plan
         * keeps the value the disk had): a restore, after which the knob is not blkmqd's. */
        if (a->original && streq(a->original, wanted))
                return restore_job(d, k, ret_job) < 0 ? -ENOMEM : 0;

        if (!a->original && free_and_strdup(&a->original, current) < 0)
                return -ENOMEM;
        free_and_strdup(&a->value, wanted);

        /* An elevator switch resets nr_requests (blk_mq_init_sched(): 2 * min(depth, 128);
         * to none: the tag set depth): record nr_requests as it is now, before the switch,
         * so a restore (elevator first) finds the value that belongs to the original
         * elevator, and say what the switch did to it (queue_knob_finish()). */
        d->run.nr_before[0] = 0;
        if (k == KNOB_ELEVATOR) {
                _cleanup_free_ char *depth = NULL;
                if (read_knob(h, d->name, KNOB_NR_REQUESTS, &depth) >= 0) {
                        snprintf(d->run.nr_before, sizeof(d->run.nr_before), "%s", depth);
                        if (!nr->original)
                                nr->original = TAKE_PTR(depth);
                }
        }

        /* the write (and its read back) goes to a worker: see queue_knob_finish() */
        return knob_job(d, k, wanted, current, true, ret_job) < 0 ? -ENOMEM : 0;
}

/* The write of queue_knob_decide() returned: triage it. Returns 1 when the value was set. */
static int queue_knob_finish(HostFs *h, Device *d, Knob k, const WriteJob *j) {
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
                applied_set(a, c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR, r,
                            "%s writing %s to queue/%s%s%s%s", strerrorname_np(-r) ?: "error", wanted,
                            queue_attr[k], after ? ", read back " : "", after ?: "", strempty(late));
                log_write_failed(d, knob, r, c, "Failed to set %s %s (now %s)%s", knob, wanted, after ?: strna(current), strempty(late));
                return 0;
        }

        applied_set(a, APPLY_OK, 0, NULL);
        log_device_info(d->name, "%s %s -> %s%s", knob, strna(current), wanted, strempty(late));

        /* the switch reset nr_requests (the write returned: the disk's attributes may be read) */
        _cleanup_free_ char *nr_after = NULL;
        if (k == KNOB_ELEVATOR && h && d->run.nr_before[0] && read_knob(h, d->name, KNOB_NR_REQUESTS, &nr_after) >= 0 &&
            !streq(d->run.nr_before, nr_after)) {
                Applied *nr = &d->applied[KNOB_NR_REQUESTS];
                const char *want_nr = d->plan.manage ? plan_get(&d->plan, KNOB_NR_REQUESTS) : NULL;
                log_device_info(d->name, "nr_requests %s -> %s: reset by the kernel on the elevator switch to %s%s%s%s",
                                d->run.nr_before, nr_after, wanted, want_nr ? "; writing " : "", strempty(want_nr),
                                want_nr ? " again" : "");
                if (!want_nr)
                        applied_set(nr, APPLY_UNMANAGED, 0,
                                    "reset by the kernel from %s to %s when blkmqd switched the elevator %s -> %s; %s comes back when the elevator is restored",
                                    d->run.nr_before, nr_after, strna(current), wanted, strna(nr->original));
        }
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
        ApplyState state = failed ? APPLY_ERROR :
                   total > 0 && managed == total ? APPLY_MANAGED :
                   would ? APPLY_DRY_RUN :
                   placed || (a->state == APPLY_OK) ? APPLY_OK : APPLY_KEPT;
        if (would)
                applied_set(a, state, first_error, "would place %zu vector(s) on %s, %zu already placed, %zu managed by kernel", would, strna(a->value), kept, managed);
        else
                applied_set(a, state, first_error, "%zu vector(s): %zu placed, %zu already placed, %zu managed by kernel, %zu failed",
                            total, placed, kept, managed, failed);
}

static int irq_restore_decide(Device *d, WriteJob **ret_job);

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
 * Decide irq_affinity on the loop thread: every queue vector's current affinity is read and
 * compared; the vectors to place go into one job (*ret_job, finished by
 * irq_affinity_finish()). Returns 0 or -ENOMEM.
 */
static int irq_affinity_decide(HostFs *h, Device *d, const ApplyOptions *o, WriteJob **ret_job) {
        const char *want = d->plan.irq_affinity;
        const DiskFacts *f = d->facts;
        ApplyRun *run = &d->run;
        _cleanup_(write_job_freep) WriteJob *j = NULL;

        run->irq_total = run->irq_kept = run->irq_managed = run->irq_would = 0;
        if (!d->plan.manage || !want) {
                /* no wish (any more): vectors blkmqd placed go back now (irq_no_wish_finish()) */
                if (!o->dry_run && !o->verify_only) {
                        int r = irq_restore_decide(d, ret_job);
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
        applied_set(a, APPLY_UNMANAGED, 0, NULL);
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
                applied_set(a, APPLY_ERROR, r, "%s restoring %s", strerrorname_np(-r) ?: "error", strna(a->original));
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
        else if (d->applied[KNOB_IRQ_AFFINITY].state != APPLY_MANAGED && d->run.restore)
                applied_set(&d->applied[KNOB_IRQ_AFFINITY], APPLY_UNMANAGED, 0, NULL);
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
                ia->value = mfree_str(ia->value);
                n++;
        }
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
static int restore_in_run_finish(Device *d, Knob k, const WriteJob *j) {
        if (k == KNOB_IRQ_AFFINITY) {
                size_t failed = 0;
                for (size_t i = 0; i < j->n_ops; i++)
                        failed += j->ops[i].result < 0;
                int n = irq_restore_finish(d, j);
                irq_no_wish_summarize(d, n > 0 ? n : 0, failed);
                return n;
        }
        Applied *a = &d->applied[k];
        const char *wanted = d->plan.manage ? plan_get(&d->plan, k) : NULL;
        _cleanup_free_ char *was = strdup(j->ops[0].value);
        if (!was)
                return -ENOMEM;
        int r = restore_knob_finish(d, k, j);
        if (r <= 0)
                return r;
        if (wanted && streq(wanted, was)) {
                free_and_strdup(&a->value, was);
                applied_set(a, APPLY_KEPT, 0, "put back: the value before blkmqd changed it");
        } else
                applied_set(a, APPLY_UNMANAGED, 0, "put back to %s, the value before blkmqd changed it", was);
        return 1;
}

/* ---- runs: decide on the loop, write on a worker, go on when it returned ------------------------ */

static int run_step(Applier *a, Device *d);

static Device *job_device(Applier *a, const WriteJob *j) {
        Device *d = a->registry ? registry_get(a->registry, j->lane) : a->inline_device;
        /* the disk went away (or was re-added) while its write was in flight: nothing to record */
        return d && d->run.job == j ? d : NULL;
}

/* The write of the knob d->run.next returned: record its outcome. */
static void knob_finish(Applier *a, Device *d, const WriteJob *j) {
        Knob k = d->run.next;
        int r;

        if (d->run.restore)
                r = k == KNOB_IRQ_AFFINITY ? irq_restore_finish(d, j) : restore_knob_finish(d, k, j);
        else if (j->tag & TAG_RESTORE)
                r = restore_in_run_finish(d, k, j);
        else
                r = k == KNOB_IRQ_AFFINITY ? irq_affinity_finish(d, j) : queue_knob_finish(a->hostfs, d, k, j);
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
        knob_finish(a, d, j);
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
        const char *what = d->run.restore || (j->tag & TAG_RESTORE) ? "restoring" : "writing";
        if (j->n_ops == 1)
                applied_set(ap, APPLY_TIMEOUT, 0, "%s %s to %s: no answer from the kernel after %g s", what,
                            j->ops[0].value, j->ops[0].path, sec);
        else
                applied_set(ap, APPLY_TIMEOUT, 0, "%s %zu vector(s): no answer from the kernel after %g s", what,
                            j->n_ops, sec);
        log_device_full(LOG_WARNING, ETIMEDOUT, d->name, BLKMQD_MESSAGE_WRITE_FAILED, NULL,
                        "%s: the write of \"%s\" to \"%s\" has not returned after %g s; the rest is served, "
                        "its outcome is recorded when it returns", knob_to_string(k), j->ops[0].value, j->ops[0].path, sec);
        if (a->on_timeout)
                a->on_timeout(d, a->userdata);
}

/* The knob d->run.next waits for its write: say so in applied/. */
static void mark_pending(Device *d, const WriteJob *j) {
        Applied *ap = &d->applied[d->run.next];
        const char *what = d->run.restore || (j->tag & TAG_RESTORE) ? "restoring" : "writing";
        if (j->n_ops == 1)
                applied_set(ap, APPLY_PENDING, 0, "%s %s to %s", what, j->ops[0].value, j->ops[0].path);
        else
                applied_set(ap, APPLY_PENDING, 0, "%s %zu vector(s)", what, j->n_ops);
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
                        knob_finish(a, d, j);
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
                        applied_set(ap, APPLY_ERROR, r, "cannot start a writer thread: %s", strerror(-r));
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
