/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lib/debounce.c with a fake clock (issue 13 item 17): 20 uevents of 10 plug cycles of one
 * disk within the quiet window -> one action, the last; a steady stream is still acted upon
 * after DEBOUNCE_MAX_USEC; disks do not wait for each other; an event after the window
 * opens a new one.
 */
#include <stdlib.h>

#include "debounce.h"
#include "macro.h"
#include "tap.h"

enum { ADD, CHANGE, REMOVE };
#define MS (UINT64_C(1000))

static unsigned drain(Debouncer *d, uint64_t now, DebounceEntry *last) {
        DebounceEntry e;
        unsigned n = 0;
        while (debounce_pop_due(d, now, &e) > 0) {
                free(last->name);
                *last = e;
                n++;
        }
        return n;
}

static void test_plug_cycles(void) {
        Debouncer d = {};
        DebounceEntry last = {};
        uint64_t t = 1000 * MS;

        CHECK_INT(debounce_next_due(&d) == UINT64_MAX, 1);
        for (unsigned i = 0; i < 10; i++) {       /* add + remove, 5 ms apart */
                CHECK_INT(debounce_add(&d, "loop700", ADD, t), 0);
                t += 5 * MS;
                CHECK_INT(debounce_add(&d, "loop700", REMOVE, t), 0);
                t += 5 * MS;
                CHECK_INT(drain(&d, t, &last), 0);      /* nothing before the quiet window ends */
        }
        CHECK_INT(debounce_add(&d, "loop700", ADD, t), 0);         /* plugged back for good */
        CHECK_INT(d.n_entries, 1);
        CHECK(debounce_next_due(&d) == t + DEBOUNCE_USEC);
        CHECK_INT(drain(&d, t + DEBOUNCE_USEC - 1, &last), 0);
        CHECK_INT(drain(&d, t + DEBOUNCE_USEC, &last), 1);
        CHECK_STR(last.name, "loop700");
        CHECK_INT(last.action, ADD);
        CHECK_INT(last.events, 21);
        CHECK(debounce_next_due(&d) == UINT64_MAX);

        /* the next event opens a new window */
        CHECK_INT(debounce_add(&d, "loop700", REMOVE, t + 500 * MS), 0);
        CHECK_INT(drain(&d, t + 600 * MS, &last), 1);
        CHECK_INT(last.action, REMOVE);
        CHECK_INT(last.events, 1);
        free(last.name);
        debounce_done(&d);
}

static void test_max_delay(void) {
        Debouncer d = {};
        DebounceEntry last = {};
        uint64_t t0 = 5000 * MS, t = t0;
        unsigned acted = 0;

        /* a change every 50 ms for 3 s: acted upon at most DEBOUNCE_MAX_USEC after a window opens */
        for (; t < t0 + 3000 * MS; t += 50 * MS) {
                acted += drain(&d, t, &last);
                CHECK_INT(debounce_add(&d, "sdb", CHANGE, t), 0);
                CHECK(debounce_next_due(&d) <= t + DEBOUNCE_USEC);
        }
        CHECK(acted >= 2 && acted <= 3);
        free(last.name);
        debounce_done(&d);
}

static void test_disks_independent(void) {
        Debouncer d = {};
        DebounceEntry e;
        uint64_t t = 100 * MS;

        CHECK_INT(debounce_add(&d, "sda", ADD, t), 0);
        CHECK_INT(debounce_add(&d, "sdb", ADD, t + 60 * MS), 0);
        CHECK_INT(debounce_add(&d, "sdb", CHANGE, t + 120 * MS), 0);   /* sdb's window grows, sda's does not */
        CHECK(debounce_next_due(&d) == t + DEBOUNCE_USEC);
        CHECK_INT(debounce_pop_due(&d, t + DEBOUNCE_USEC, &e), 1);
        CHECK_STR(e.name, "sda");
        free(e.name);
        CHECK_INT(debounce_pop_due(&d, t + DEBOUNCE_USEC, &e), 0);
        CHECK(debounce_next_due(&d) == t + 120 * MS + DEBOUNCE_USEC);
        CHECK_INT(debounce_pop_due(&d, t + 120 * MS + DEBOUNCE_USEC, &e), 1);
        CHECK_STR(e.name, "sdb");
        CHECK_INT(e.action, CHANGE);
        CHECK_INT(e.events, 2);
        free(e.name);
        debounce_done(&d);
}

int main(void) {
        test_plug_cycles();
        test_max_delay();
        test_disks_independent();
        return tap_finish("test-debounce");
}
