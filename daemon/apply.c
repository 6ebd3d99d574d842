/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "log.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

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

static int read_elevator(HostFs *h, const char *disk, char **ret) {
        _cleanup_free_ char *s = NULL;
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "block/%s/queue/scheduler", disk);
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (r < 0)
                return r;
        r = parse_scheduler(s, NULL, ret, NULL);
        if (r < 0)
                return r;
        return *ret ? 0 : -EOPNOTSUPP;
}

static int write_elevator(HostFs *h, const char *disk, const char *value) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "block/%s/queue/scheduler", disk);
        log_device_debug(disk, "Writing \"%s\" to \"%s\"", value, path);
        return hostfs_write(h, HOSTFS_SYSFS, path, value);
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

static int apply_elevator(HostFs *h, Device *d, bool dry_run) {
        Applied *a = &d->applied[KNOB_ELEVATOR];
        const char *wanted = d->plan.elevator;
        _cleanup_free_ char *current = NULL, *after = NULL;
        int r;

        if (!d->plan.manage || !wanted) {
                a->state = APPLY_UNMANAGED;
                return 0;
        }
        if (a->state == APPLY_UNSUPPORTED && streq_ptr(a->value, wanted))
                return 0;               /* said once; never retried */

        r = read_elevator(h, d->name, &current);
        if (r < 0) {
                a->state = APPLY_ERROR;
                a->error = r;
                set_message(a, "cannot read queue/scheduler: %s", strerror(-r));
                return 0;
        }

        if (streq(current, wanted)) {
                /* Keep "ok" for a value we wrote ourselves; otherwise nothing was needed. */
                if (!(a->state == APPLY_OK && streq_ptr(a->value, wanted)))
                        a->state = APPLY_KEPT;
                a->error = 0;
                free_and_strdup(&a->value, wanted);
                return 0;
        }

        if (dry_run) {
                a->state = APPLY_DRY_RUN;
                free_and_strdup(&a->value, wanted);
                set_message(a, "would write %s (now %s)", wanted, current);
                log_device_info(d->name, "dry-run: would set elevator %s -> %s", current, wanted);
                return 0;
        }

        if (!a->original && free_and_strdup(&a->original, current) < 0)
                return -ENOMEM;
        free_and_strdup(&a->value, wanted);

        r = write_elevator(h, d->name, wanted);
        if (r >= 0) {
                r = read_elevator(h, d->name, &after);
                if (r >= 0 && !streq(after, wanted))
                        r = -EIO;
        }
        if (r < 0) {
                WriteErrorClass c = apply_classify_error(r);
                a->state = c == WRITE_ERROR_UNSUPPORTED ? APPLY_UNSUPPORTED : APPLY_ERROR;
                a->error = r;
                set_message(a, "%s writing %s to queue/scheduler%s%s", strerrorname_np(-r) ?: "error", wanted,
                            after ? ", read back " : "", after ?: "");
                const char *fields[] = { "BLKMQD_KNOB=elevator", NULL };
                log_device_full(LOG_WARNING, r, d->name, BLKMQD_MESSAGE_WRITE_FAILED, fields,
                                "Failed to set elevator %s (now %s)%s: %m", wanted, after ?: current,
                                c == WRITE_ERROR_TRANSIENT ? ", will retry" :
                                c == WRITE_ERROR_UNSUPPORTED ? ", not retrying" : "");
                return 0;
        }

        a->state = APPLY_OK;
        a->error = 0;
        a->message = mfree_str(a->message);
        log_device_info(d->name, "elevator %s -> %s", current, wanted);
        return 1;
}

int apply_device(HostFs *h, Device *d, bool dry_run) {
        return apply_elevator(h, d, dry_run);
}

int apply_restore(HostFs *h, Device *d) {
        Applied *a = &d->applied[KNOB_ELEVATOR];
        _cleanup_free_ char *current = NULL;
        int r;

        if (!a->original)
                return 0;

        r = read_elevator(h, d->name, &current);
        if (r >= 0 && streq(current, a->original)) {
                a->original = mfree_str(a->original);
                a->state = APPLY_UNMANAGED;
                return 0;
        }
        r = write_elevator(h, d->name, a->original);
        if (r < 0)
                return log_device_warning_errno(d->name, r, "Failed to restore elevator %s: %m", a->original);
        log_device_info(d->name, "elevator restored to %s", a->original);
        a->original = mfree_str(a->original);
        a->state = APPLY_UNMANAGED;
        return 1;
}
