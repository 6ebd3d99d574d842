/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debounce.h"
#include "macro.h"

static uint64_t quiet_of(const Debouncer *d) {
        return d->quiet_usec ?: DEBOUNCE_USEC;
}

static uint64_t max_of(const Debouncer *d) {
        return d->max_usec ?: DEBOUNCE_MAX_USEC;
}

/* Forget windows that closed with nothing merged (no timer closes them: done lazily here). */
static void prune(Debouncer *d, uint64_t now_usec) {
        size_t j = 0;
        for (size_t i = 0; i < d->n_entries; i++) {
                DebounceEntry *e = &d->entries[i];
                if (e->events == 0 && e->due_usec <= now_usec) {
                        free(e->name);
                        continue;
                }
                d->entries[j++] = *e;
        }
        d->n_entries = j;
}

static DebounceEntry *find(Debouncer *d, const char *name) {
        for (size_t i = 0; i < d->n_entries; i++)
                if (streq(d->entries[i].name, name))
                        return &d->entries[i];
        return NULL;
}

/* A new open window for name, closing at due_usec. */
static int window_new(Debouncer *d, const char *name, uint64_t due_usec) {
        DebounceEntry *n = realloc(d->entries, (d->n_entries + 1) * sizeof(DebounceEntry));
        if (!n)
                return -ENOMEM;
        d->entries = n;
        char *s = strdup(name);
        if (!s)
                return -ENOMEM;
        n[d->n_entries++] = (DebounceEntry) { .name = s, .due_usec = due_usec };
        return 0;
}

int debounce_add(Debouncer *d, const char *name, int action, uint64_t now_usec) {
        prune(d, now_usec);
        DebounceEntry *e = find(d, name);
        if (!e) {
                /* no window open: act now; the window opens (and debounce_acted() moves it to
                 * the action's end) */
                int r = window_new(d, name, now_usec + quiet_of(d));
                return r < 0 ? r : DEBOUNCE_NOW;
        }
        if (e->events == 0)
                e->first_usec = now_usec;
        e->events++;
        e->action = action;
        e->due_usec = MAX(MIN(now_usec + quiet_of(d), e->first_usec + max_of(d)), now_usec);
        return DEBOUNCE_MERGED;
}

int debounce_acted(Debouncer *d, const char *name, uint64_t now_usec) {
        DebounceEntry *e = find(d, name);
        if (!e)
                return window_new(d, name, now_usec + quiet_of(d));
        if (e->events == 0)
                e->due_usec = MAX(e->due_usec, now_usec + quiet_of(d));
        return 0;
}

uint64_t debounce_next_due(const Debouncer *d) {
        assert(d);
        uint64_t t = UINT64_MAX;
        for (size_t i = 0; i < d->n_entries; i++)
                if (d->entries[i].events > 0)
                        t = MIN(t, d->entries[i].due_usec);
        return t;
}

int debounce_pop_due(Debouncer *d, uint64_t now_usec, DebounceEntry *ret) {
        assert(ret);
        prune(d, now_usec);
        DebounceEntry *best = NULL;
        for (size_t i = 0; i < d->n_entries; i++) {
                DebounceEntry *e = &d->entries[i];
                if (e->events > 0 && e->due_usec <= now_usec && (!best || e->due_usec < best->due_usec))
                        best = e;
        }
        if (!best)
                return 0;
        *ret = *best;
        /* the trailing action opens the window again */
        best->events = 0;
        best->first_usec = 0;
        best->due_usec = now_usec + quiet_of(d);
        return 1;
}

void debounce_done(Debouncer *d) {
        for (size_t i = 0; i < d->n_entries; i++)
                free(d->entries[i].name);
        free(d->entries);
        *d = (Debouncer) { .quiet_usec = d->quiet_usec, .max_usec = d->max_usec };
}
