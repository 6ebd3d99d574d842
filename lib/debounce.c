/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debounce.h"
#include "macro.h"

int debounce_add(Debouncer *d, const char *name, int action, uint64_t now_usec) {
        uint64_t quiet = d->quiet_usec ?: DEBOUNCE_USEC, max = d->max_usec ?: DEBOUNCE_MAX_USEC;
        DebounceEntry *e = NULL;

        for (size_t i = 0; i < d->n_entries && !e; i++)
                if (streq(d->entries[i].name, name))
                        e = &d->entries[i];
        if (!e) {
                DebounceEntry *n = realloc(d->entries, (d->n_entries + 1) * sizeof(DebounceEntry));
                if (!n)
                        return -ENOMEM;
                d->entries = n;
                e = &n[d->n_entries];
                *e = (DebounceEntry) { .name = strdup(name), .first_usec = now_usec };
                if (!e->name)
                        return -ENOMEM;
                d->n_entries++;
        }
        e->action = action;
        e->events++;
        e->due_usec = now_usec + quiet;
        if (e->due_usec > e->first_usec + max)
                e->due_usec = MAX(e->first_usec + max, now_usec);
        return 0;
}

uint64_t debounce_next_due(const Debouncer *d) {
        uint64_t t = UINT64_MAX;
        for (size_t i = 0; i < d->n_entries; i++)
                t = MIN(t, d->entries[i].due_usec);
        return t;
}

int debounce_pop_due(Debouncer *d, uint64_t now_usec, DebounceEntry *ret) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < d->n_entries; i++)
                if (d->entries[i].due_usec <= now_usec && (best == SIZE_MAX || d->entries[i].due_usec < d->entries[best].due_usec))
                        best = i;
        if (best == SIZE_MAX)
                return 0;
        *ret = d->entries[best];
        memmove(&d->entries[best], &d->entries[best + 1], (d->n_entries - best - 1) * sizeof(DebounceEntry));
        d->n_entries--;
        return 1;
}

void debounce_done(Debouncer *d) {
        for (size_t i = 0; i < d->n_entries; i++)
                free(d->entries[i].name);
        free(d->entries);
        *d = (Debouncer) { .quiet_usec = d->quiet_usec, .max_usec = d->max_usec };
}
