/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "registry.h"

static const char * const apply_state_table[_APPLY_STATE_MAX] = {
        [APPLY_UNMANAGED]   = "unmanaged",
        [APPLY_KEPT]        = "kept",
        [APPLY_OK]          = "ok",
        [APPLY_DRY_RUN]     = "dry-run",
        [APPLY_ERROR]       = "error",
        [APPLY_UNSUPPORTED] = "unsupported",
        [APPLY_EXTERNAL]    = "changed externally",
        [APPLY_MANAGED]     = "managed by kernel",
        [APPLY_PENDING]     = "pending",
        [APPLY_TIMEOUT]     = "timeout (still pending)",
        [APPLY_PENDING_RECONNECT] = "pending-reconnect",
        [APPLY_DEFERRED]    = "deferred",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(apply_state, ApplyState, apply_state_table, _APPLY_STATE_MAX);

void applied_done(Applied *a) {
        free(a->original);
        free(a->original_source);
        free(a->value);
        free(a->message);
        *a = (Applied) {};
}

void applied_set(Applied *a, ApplyState state, int error, const char *fmt, ...) {
        assert(a);
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
        a->error = state == APPLY_ERROR || state == APPLY_UNSUPPORTED ? error : 0;
}

static Device *device_free(Device *d) {
        if (!d)
                return NULL;
        free(d->name);
        free(d->originals_saved);
        free(d->measured_saved);
        disk_facts_free(d->facts);
        plan_done(&d->plan);
        policy_overrides_done(&d->overrides);
        for (size_t i = 0; i < _KNOB_MAX; i++)
                applied_done(&d->applied[i]);
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                applied_done(&d->iosched[t]);
                free(d->iosched_read[t]);
        }
        for (size_t i = 0; i < d->n_irq_applied; i++) {
                free(d->irq_applied[i].original);
                free(d->irq_applied[i].value);
                free(d->irq_applied[i].current);
        }
        free(d->irq_logged);
        free(d->speed_text);
        speed_state_reset(&d->speed);
        free(d->irq_applied);
        device_stats_done(&d->stats);
        free(d->nr_before_override);
        free(d->elevator_unloaded);
        policy_history_done(&d->policy_history);
        free(d);
        return NULL;
}

/* Binary search of name among n names sorted by strverscmp(); name_at(reg, i) is the i-th.
 * Returns its index, or the insertion point encoded as -(pos+1). */
static ssize_t sorted_find(const Registry *reg, size_t n, const char *(*name_at)(const Registry *, size_t),
                           const char *name) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strverscmp(name_at(reg, mid), name);
                if (c == 0)
                        return mid;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -(ssize_t) lo - 1;
}

static const char *device_name_at(const Registry *reg, size_t i) {
        return reg->devices[i]->name;
}

/* Index of name, or the insertion point encoded as -(pos+1). */
static ssize_t registry_find(const Registry *reg, const char *name) {
        return sorted_find(reg, reg->n_devices, device_name_at, name);
}

Device *registry_get(const Registry *reg, const char *name) {
        assert(reg);
        ssize_t i = registry_find(reg, name);
        return i >= 0 ? reg->devices[i] : NULL;
}

int registry_add(Registry *reg, const char *name, Device **ret) {
        assert(reg);
        assert(ret);
        ssize_t i = registry_find(reg, name);
        if (i >= 0) {
                *ret = reg->devices[i];
                return 0;
        }
        size_t pos = -(i + 1);

        Device *d = calloc(1, sizeof(Device));
        if (!d)
                return -ENOMEM;
        d->name = strdup(name);
        d->policy_history = POLICY_HISTORY_INIT;
        device_stats_init(&d->stats);
        Device **n = realloc(reg->devices, (reg->n_devices + 1) * sizeof(Device *));
        if (!d->name || !n) {
                if (n)
                        reg->devices = n;
                device_free(d);
                return -ENOMEM;
        }
        reg->devices = n;
        memmove(n + pos + 1, n + pos, (reg->n_devices - pos) * sizeof(Device *));
        n[pos] = d;
        reg->n_devices++;
        *ret = d;
        return 1;
}

int registry_remove(Registry *reg, const char *name) {
        assert(reg);
        ssize_t i = registry_find(reg, name);
        if (i < 0)
                return -ENOENT;
        device_free(reg->devices[i]);
        memmove(reg->devices + i, reg->devices + i + 1, (reg->n_devices - i - 1) * sizeof(Device *));
        reg->n_devices--;
        return 0;
}

static void unlisted_done(Unlisted *u) {
        free(u->name);
        free(u->parent);
        free(u->reason);
}

static const char *unlisted_name_at(const Registry *reg, size_t i) {
        return reg->unlisted[i].name;
}

/* Index of name in reg->unlisted, or the insertion point encoded as -(pos+1). */
static ssize_t unlisted_find(const Registry *reg, const char *name) {
        return sorted_find(reg, reg->n_unlisted, unlisted_name_at, name);
}

const Unlisted *registry_get_unlisted(const Registry *reg, const char *name) {
        assert(reg);
        ssize_t i = unlisted_find(reg, name);
        return i >= 0 ? &reg->unlisted[i] : NULL;
}

/* s with every control character (a newline would split the file's line) replaced by '?'. */
static char *one_line(const char *s) {
        char *c = strdup(s);
        for (char *p = c; p && *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        return c;
}

int registry_set_unlisted(Registry *reg, const char *name, const char *parent, const char *reason) {
        assert(reg);
        ssize_t i = unlisted_find(reg, name);
        _cleanup_free_ char *r = one_line(reason), *p = parent ? strdup(parent) : NULL;
        if (!r || (parent && !p))
                return -ENOMEM;
        if (i >= 0) {
                Unlisted *u = &reg->unlisted[i];
                if (streq(u->reason, r) && streq_ptr(u->parent, p) && !u->udev_pending)
                        return 0;
                u->udev_pending = false;
                free(u->reason);
                u->reason = TAKE_PTR(r);
                free(u->parent);
                u->parent = TAKE_PTR(p);
                return 1;
        }
        size_t pos = -(i + 1);
        _cleanup_free_ char *n = one_line(name);
        if (!n)
                return -ENOMEM;
        Unlisted *a = realloc(reg->unlisted, (reg->n_unlisted + 1) * sizeof(Unlisted));
        if (!a)
                return -ENOMEM;
        reg->unlisted = a;
        memmove(a + pos + 1, a + pos, (reg->n_unlisted - pos) * sizeof(Unlisted));
        a[pos] = (Unlisted) { .name = TAKE_PTR(n), .parent = TAKE_PTR(p), .reason = TAKE_PTR(r) };
        reg->n_unlisted++;
        return 1;
}

static void unlisted_remove_at(Registry *reg, size_t i) {
        unlisted_done(&reg->unlisted[i]);
        memmove(reg->unlisted + i, reg->unlisted + i + 1, (reg->n_unlisted - i - 1) * sizeof(Unlisted));
        reg->n_unlisted--;
}

void registry_unlisted_udev_pending(Registry *reg, const char *name) {
        assert(reg);
        ssize_t i = unlisted_find(reg, name);
        if (i >= 0)
                reg->unlisted[i].udev_pending = true;
}

int registry_forget_unlisted(Registry *reg, const char *name) {
        ssize_t i = unlisted_find(reg, name);
        if (i < 0)
                return 0;
        unlisted_remove_at(reg, i);
        return 1;
}

size_t registry_forget_partitions(Registry *reg, const char *parent, char * const *keep) {
        assert(reg);
        size_t n = 0;
        if (!parent)
                return 0;
        for (size_t i = 0; i < reg->n_unlisted;) {
                const Unlisted *u = &reg->unlisted[i];
                bool kept = false;
                for (char * const *k = keep; k && *k && !kept; k++)
                        kept = streq(*k, u->name);
                if (streq_ptr(u->parent, parent) && !kept) {
                        unlisted_remove_at(reg, i);
                        n++;
                } else
                        i++;
        }
        return n;
}

void registry_done(Registry *reg) {
        for (size_t i = 0; i < reg->n_devices; i++)
                device_free(reg->devices[i]);
        free(reg->devices);
        for (size_t i = 0; i < reg->n_unlisted; i++)
                unlisted_done(&reg->unlisted[i]);
        free(reg->unlisted);
        *reg = (Registry) {};
}

void registry_count_classes(const Registry *reg, size_t counts[]) {
        assert(reg);
        memset(counts, 0, sizeof(size_t) * _DISK_CLASS_MAX);
        for (size_t i = 0; i < reg->n_devices; i++)
                counts[reg->devices[i]->plan.class]++;
}
