/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lib/debounce.c with a fake clock (issue 13 item 17, leading edge since issue 12 item 4):
 * a disk's first uevent is acted upon at once; the rest of its burst (20 uevents of 10 plug
 * cycles) is one trailing action with the last action; nothing merged, nothing trailing; a
 * steady stream is acted upon again within DEBOUNCE_MAX_USEC of every merged event; the quiet
 * window runs from the end of the action; disks do not wait for each other.
 */
#include <stdlib.h>

#include "debounce.h"
#include "macro.h"
#include "tap.h"

enum { ADD, CHANGE, REMOVE };
#define MS (UINT64_C(1000))

typedef struct Acted {
        unsigned n;             /* trailing actions taken */
        char name[32];
        int action;
        unsigned events;
} Acted;

/* Take every trailing action due at now (acted upon in no time). */
static unsigned drain(Debouncer *d, uint64_t now, Acted *last) {
        DebounceEntry e;
        unsigned n = 0;
        while (debounce_pop_due(d, now, &e) > 0) {
                snprintf(last->name, sizeof(last->name), "%s", e.name);
                last->action = e.action;
                last->events = e.events;
                last->n++;
                CHECK_INT(debounce_acted(d, last->name, now), 0);
                n++;
        }
        return n;
}

static void test_first_at_once(void) {
        Debouncer d = {};
        Acted last = {};
        uint64_t t = 1000 * MS;

        /* a lone event: at once, and nothing trails it */
        CHECK_INT(debounce_add(&d, "sdb", ADD, t), DEBOUNCE_NOW);
        CHECK_INT(debounce_acted(&d, "sdb", t), 0);
        CHECK(debounce_next_due(&d) == UINT64_MAX);
        CHECK_INT(drain(&d, t + 10 * DEBOUNCE_MAX_USEC, &last), 0);

        /* after the quiet window the next event is again taken at once */
        CHECK_INT(debounce_add(&d, "sdb", CHANGE, t + DEBOUNCE_USEC), DEBOUNCE_NOW);
        CHECK_INT(debounce_acted(&d, "sdb", t + DEBOUNCE_USEC), 0);
        CHECK_INT(debounce_add(&d, "sdb", REMOVE, t + 3 * DEBOUNCE_USEC), DEBOUNCE_NOW);
        CHECK_INT(d.n_entries, 1);              /* closed windows are forgotten */
        debounce_done(&d);
}

static void test_plug_cycles(void) {
        Debouncer d = {};
        Acted last = {};
        uint64_t t = 1000 * MS;

        /* 10 plug cycles (remove + add, 5 ms apart): the first event at once, the other 19 one
         * trailing action with the last action, due DEBOUNCE_USEC after the last of them */
        for (unsigned i = 0; i < 10; i++) {
                int r = debounce_add(&d, "loop700", REMOVE, t);
                CHECK_INT(r, i == 0 ? DEBOUNCE_NOW : DEBOUNCE_MERGED);
                if (r == DEBOUNCE_NOW)
                        CHECK_INT(debounce_acted(&d, "loop700", t), 0);
                t += 5 * MS;
                CHECK_INT(debounce_add(&d, "loop700", ADD, t), DEBOUNCE_MERGED);
                t += 5 * MS;
                CHECK_INT(drain(&d, t, &last), 0);      /* nothing before the burst is quiet */
        }
        t -= 5 * MS;                                    /* the last event */
        CHECK_INT(d.n_entries, 1);
        CHECK(debounce_next_due(&d) == t + DEBOUNCE_USEC);
        CHECK_INT(drain(&d, t + DEBOUNCE_USEC - 1, &last), 0);
        CHECK_INT(drain(&d, t + DEBOUNCE_USEC, &last), 1);
        CHECK_STR(last.name, "loop700");
        CHECK_INT(last.action, ADD);
        CHECK_INT(last.events, 19);
        CHECK(debounce_next_due(&d) == UINT64_MAX);    /* exactly one */
        CHECK_INT(drain(&d, t + DEBOUNCE_USEC + 40 * MS, &last), 0);

        /* an event inside the window the trailing action opened is merged again */
        t += DEBOUNCE_USEC;
        CHECK_INT(debounce_add(&d, "loop700", REMOVE, t + 50 * MS), DEBOUNCE_MERGED);
        CHECK_INT(drain(&d, t + 150 * MS, &last), 1);
        CHECK_INT(last.action, REMOVE);
        CHECK_INT(last.events, 1);
        /* and nothing more however long nothing comes */
        CHECK_INT(drain(&d, t + 150 * MS + 10 * DEBOUNCE_MAX_USEC, &last), 0);
        CHECK_INT(last.n, 2);
        debounce_done(&d);
}

static void test_window_from_action_end(void) {
        Debouncer d = {};
        Acted last = {};
        uint64_t t = 2000 * MS;

        /* the action took 300 ms (a gather under load): events that queued up meanwhile are
         * merged, not taken as a new leading edge */
        CHECK_INT(debounce_add(&d, "sdc", ADD, t), DEBOUNCE_NOW);
        CHECK_INT(debounce_acted(&d, "sdc", t + 300 * MS), 0);
        CHECK_INT(debounce_add(&d, "sdc", CHANGE, t + 350 * MS), DEBOUNCE_MERGED);
        CHECK_INT(drain(&d, t + 450 * MS, &last), 1);
        CHECK_INT(last.action, CHANGE);
        debounce_done(&d);
}

static void test_max_wait(void) {
        Debouncer d = {};
        Acted last = {};
        uint64_t t0 = 5000 * MS, t;
        unsigned now = 0;

        /* a change every 50 ms for 3 s: never quiet, yet every event is covered by an action
         * (at once or trailing) that starts at most DEBOUNCE_MAX_USEC after it */
        uint64_t oldest_uncovered = UINT64_MAX, worst = 0;
        for (t = t0; t < t0 + 3000 * MS; t += 10 * MS) {
                if (drain(&d, t, &last) > 0) {
                        worst = MAX(worst, t - oldest_uncovered);
                        oldest_uncovered = UINT64_MAX;
                }
                if ((t - t0) % (50 * MS) != 0)
                        continue;
                int r = debounce_add(&d, "sdb", CHANGE, t);
                if (r == DEBOUNCE_NOW) {
                        now++;
                        CHECK_INT(debounce_acted(&d, "sdb", t), 0);
                } else {
                        if (oldest_uncovered == UINT64_MAX)
                                oldest_uncovered = t;
                        CHECK(debounce_next_due(&d) <= t + DEBOUNCE_USEC);
                }
        }
        for (; oldest_uncovered != UINT64_MAX; t += 10 * MS)
                if (drain(&d, t, &last) > 0) {
                        worst = MAX(worst, t - oldest_uncovered);
                        oldest_uncovered = UINT64_MAX;
                }
        CHECK_INT(now, 1);
        CHECK(worst <= DEBOUNCE_MAX_USEC);
        CHECK(worst >= DEBOUNCE_MAX_USEC - 50 * MS);    /* the bound is what stopped the wait */
        CHECK(last.n >= 3 && last.n <= 4);              /* ~once per DEBOUNCE_MAX_USEC, not per event */
        debounce_done(&d);
}

static void test_disks_independent(void) {
        Debouncer d = {};
        DebounceEntry e;
        uint64_t t = 100 * MS;

        CHECK_INT(debounce_add(&d, "sda", ADD, t), DEBOUNCE_NOW);
        CHECK_INT(debounce_acted(&d, "sda", t), 0);
        CHECK_INT(debounce_add(&d, "sdb", ADD, t + 10 * MS), DEBOUNCE_NOW);    /* sda's window is sda's */
        CHECK_INT(debounce_acted(&d, "sdb", t + 10 * MS), 0);
        CHECK_INT(debounce_add(&d, "sda", CHANGE, t + 20 * MS), DEBOUNCE_MERGED);
        CHECK_INT(debounce_add(&d, "sdb", CHANGE, t + 60 * MS), DEBOUNCE_MERGED);
        CHECK_INT(debounce_add(&d, "sdb", REMOVE, t + 120 * MS), DEBOUNCE_MERGED); /* sdb's wait grows, sda's does not */
        CHECK(debounce_next_due(&d) == t + 20 * MS + DEBOUNCE_USEC);
        CHECK_INT(debounce_pop_due(&d, t + 20 * MS + DEBOUNCE_USEC, &e), 1);
        CHECK_STR(e.name, "sda");
        CHECK_INT(e.action, CHANGE);
        CHECK_INT(debounce_pop_due(&d, t + 20 * MS + DEBOUNCE_USEC, &e), 0);
        CHECK(debounce_next_due(&d) == t + 120 * MS + DEBOUNCE_USEC);
        CHECK_INT(debounce_pop_due(&d, t + 120 * MS + DEBOUNCE_USEC, &e), 1);
        CHECK_STR(e.name, "sdb");
        CHECK_INT(e.action, REMOVE);
        CHECK_INT(e.events, 2);
        debounce_done(&d);
}

int main(void) {
        test_first_at_once();
        test_plug_cycles();
        test_window_from_action_end();
        test_max_wait();
        test_disks_independent();
        return tap_finish("test-debounce");
}
