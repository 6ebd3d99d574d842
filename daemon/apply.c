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

/* Current value of a queue knob as the kernel reports it (elevator: the bracketed name). */
static int read_knob(HostFs *h, const char *disk, Knob k, char **ret) {
        _cleanup_free_ char *s = NULL;
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "block/%s/queue/%s", disk, queue_attr[k]);
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r < 0)
                return r;
        if (k != KNOB_ELEVATOR) {
                *ret = TAKE_PTR(s);
                strip_newline(*ret);
                return 0;
        }
        r = parse_scheduler(s, NULL, ret, NULL);
        if (r < 0)
                return r;
        return *ret ? 0 : -EOPNOTSUPP;
}

static int write_knob(HostFs *h, const char *disk, Knob k, const char *value) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "block/%s/queue/%s", disk, queue_attr[k]);
        log_device_debug(disk, "Writing \"%s\" to \"%s\"", value, path);
        return hostfs_write(h, HOSTFS_SYSFS, path, value);
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

static int apply_queue_knob(HostFs *h, Device *d, Knob k, const ApplyOptions *o) {
        Applied *a = &d->applied[k];
        const char *wanted = plan_get(&d->plan, k), *knob = knob_to_string(k);
        _cleanup_free_ char *current = NULL, *after = NULL;
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

        r = write_knob(h, d->name, k, wanted);
        if (r >= 0) {
                r = read_knob(h, d->name, k, &after);
                if (r >= 0 && !streq(after, wanted))
                        r = -EIO;
        }
        if (r < 0) {
                WriteErrorClass c = apply_classify_error(r);
                a->state = c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR;
                a->error = r;
                set_message(a, "%s writing %s to queue/%s%s%s", strerrorname_np(-r) ?: "error", wanted,
                            queue_attr[k], after ? ", read back " : "", after ?: "");
                log_write_failed(d, knob, r, c, "Failed to set %s %s (now %s)", knob, wanted, after ?: current);
                return 0;
        }

        a->state = APPLY_OK;
        a->error = 0;
        a->message = mfree_str(a->message);
        log_device_info(d->name, "%s %s -> %s", knob, current, wanted);
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

static int apply_irq_affinity(HostFs *h, Device *d, const ApplyOptions *o) {
        Applied *a = &d->applied[KNOB_IRQ_AFFINITY];
        const char *want = d->plan.irq_affinity;
        const DiskFacts *f = d->facts;
        size_t total = 0, placed = 0, kept = 0, managed = 0, failed = 0, would = 0;
        int first_error = 0;

        if (!d->plan.manage || !want) {
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
                total++;

                IrqApplied *ia = irq_applied_get(d, q->irq);
                if (!ia)
                        return -ENOMEM;
                if (q->managed == TRISTATE_YES || ia->managed) {
                        managed++;
                        continue;
                }

                _cleanup_free_ char *current = NULL;
                int r = read_irq_affinity(h, q->irq, &current);
                if (r >= 0 && streq(current, target)) {
                        kept++;
                        continue;
                }
                if (o->dry_run) {
                        would++;
                        continue;
                }
                if (r >= 0 && !ia->original && !(ia->original = strdup(current)))
                        return -ENOMEM;

                char path[64];
                irq_path(path, sizeof(path), q->irq);
                log_device_debug(d->name, "Writing \"%s\" to procfs \"%s\"", target, path);
                r = hostfs_write(h, HOSTFS_PROCFS, path, target);
                if (r == -EIO || r == -EPERM) {
                        /* managed IRQ: -EIO <= 6.11, -EPERM >= 6.12 (eb29369fa543) */
                        ia->managed = true;
                        ia->original = mfree_str(ia->original);
                        managed++;
                        log_device_info(d->name, "IRQ %u (%s) is managed by the kernel (%s on write), not retrying",
                                        q->irq, q->name, strerrorname_np(-r));
                        continue;
                }
                if (r < 0) {
                        failed++;
                        if (!first_error)
                                first_error = r;
                        log_write_failed(d, "irq_affinity", r, apply_classify_error(r),
                                         "Failed to set IRQ %u affinity to %s", q->irq, target);
                        continue;
                }
                free_and_strdup(&ia->value, target);
                placed++;
                log_device_info(d->name, "IRQ %u (%s) affinity %s -> %s", q->irq, q->name, strna(current), target);
        }

        free_and_strdup(&a->value, want);
        a->error = first_error;
        a->state = failed ? APPLY_ERROR :
                   total > 0 && managed == total ? APPLY_MANAGED :
                   would ? APPLY_DRY_RUN :
                   placed || (a->state == APPLY_OK) ? APPLY_OK : APPLY_KEPT;
        if (would)
                set_message(a, "would place %zu vector(s) on %s, %zu already placed, %zu managed by kernel", would, want, kept, managed);
        else
                set_message(a, "%zu vector(s): %zu placed, %zu already placed, %zu managed by kernel, %zu failed",
                            total, placed, kept, managed, failed);
        return placed;
}

int apply_device(HostFs *h, Device *d, const ApplyOptions *o) {
        int n = 0;

        for (Knob k = 0; k < _KNOB_MAX; k++) {
                if (k == KNOB_IRQ_AFFINITY && o->verify_only)
                        continue;
                int r = k == KNOB_IRQ_AFFINITY ? apply_irq_affinity(h, d, o) : apply_queue_knob(h, d, k, o);
                if (r > 0)
                        n += r;
        }
        return n;
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

int apply_restore(HostFs *h, Device *d) {
        int n = 0, ret = 0;

        for (Knob k = 0; k < _KNOB_MAX; k++) {
                Applied *a = &d->applied[k];
                _cleanup_free_ char *current = NULL;
                if (!a->original || k == KNOB_IRQ_AFFINITY)
                        continue;
                int r = read_knob(h, d->name, k, &current);
                if (r < 0 || !streq(current, a->original)) {
                        r = write_knob(h, d->name, k, a->original);
                        if (r < 0) {
                                log_device_warning_errno(d->name, r, "Failed to restore %s %s: %m", knob_to_string(k), a->original);
                                if (ret >= 0)
                                        ret = r;
                                continue;
                        }
                        log_device_info(d->name, "%s restored to %s", knob_to_string(k), a->original);
                        n++;
                }
                a->original = mfree_str(a->original);
                a->value = mfree_str(a->value);
                a->state = APPLY_UNMANAGED;
        }

        for (size_t i = 0; i < d->n_irq_applied; i++) {
                IrqApplied *ia = &d->irq_applied[i];
                char path[64];
                if (!ia->original)
                        continue;
                irq_path(path, sizeof(path), ia->irq);
                int r = hostfs_write(h, HOSTFS_PROCFS, path, ia->original);
                if (r < 0) {
                        log_device_warning_errno(d->name, r, "Failed to restore IRQ %u affinity %s: %m", ia->irq, ia->original);
                        if (ret >= 0)
                                ret = r;
                        continue;
                }
                log_device_info(d->name, "IRQ %u affinity restored to %s", ia->irq, ia->original);
                ia->original = mfree_str(ia->original);
                n++;
        }
        if (d->applied[KNOB_IRQ_AFFINITY].state != APPLY_MANAGED)
                d->applied[KNOB_IRQ_AFFINITY].state = APPLY_UNMANAGED;
        return ret < 0 ? ret : n;
}
