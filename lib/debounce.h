/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Per-disk coalescing of uevents, leading edge (pure: the caller passes the time and arms its
 * timer).
 *
 * A hot-plug burst gives several uevents per disk (add, change for the partition table and
 * the medium, the change udevd synthesises when a writer closes the device, remove, and the
 * same again when it is plugged back): acting on each means a full gather and evaluation per
 * uevent, and writes that race the next removal. So:
 *
 *  - A disk's first uevent is acted upon at once (debounce_add() returns DEBOUNCE_NOW): a
 *    hot-added disk is evaluated without waiting for its burst to end (issue 12 item 4).
 *  - That opens a quiet window of quiet_usec, counted from when the caller's action ended
 *    (debounce_acted()). Further uevents of the disk in the window are merged
 *    (DEBOUNCE_MERGED): each one moves the window's end to quiet_usec after it, and the disk
 *    gets one trailing action with the last action seen when the window ends, at the latest
 *    max_usec after the first merged uevent (a disk that never stops flapping is still looked
 *    at, about once per max_usec).
 *  - After a trailing action the window opens again; a window that ends with nothing merged
 *    just closes (no timer needed for it: debounce_next_due() is only about trailing actions).
 *
 * Disks do not wait for each other. Coldplug does not go through here. Events that arrive while
 * the disk's write is in flight are merged by the manager (Device.run.event_pending): one more
 * evaluation when the write returns.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEBOUNCE_USEC           (UINT64_C(100) * 1000)          /* 100 ms of quiet */
#define DEBOUNCE_MAX_USEC       (UINT64_C(1000) * 1000)         /* a merged event waits at most 1 s */

typedef enum DebounceVerdict {
        DEBOUNCE_MERGED = 0,    /* merged into the disk's trailing action */
        DEBOUNCE_NOW = 1,       /* act upon this event now, then call debounce_acted() */
} DebounceVerdict;

typedef struct DebounceEntry {
        char *name;             /* the disk */
        int action;             /* the last merged action (the caller's enum) */
        unsigned events;        /* events merged since the last action */
        uint64_t first_usec;    /* first merged event (valid when events > 0) */
        uint64_t due_usec;      /* events > 0: when the trailing action is due; else when the
                                 * quiet window closes */
} DebounceEntry;

typedef struct Debouncer {
        DebounceEntry *entries;
        size_t n_entries;
        uint64_t quiet_usec, max_usec;  /* 0: DEBOUNCE_USEC, DEBOUNCE_MAX_USEC */
} Debouncer;

/*
 * An event for name at now_usec (CLOCK_MONOTONIC µs).
 * Returns DEBOUNCE_NOW (act now: no window was open), DEBOUNCE_MERGED (it waits for the
 * trailing action), or -ENOMEM (act now, nothing recorded).
 */
int debounce_add(Debouncer *d, const char *name, int action, uint64_t now_usec);

/*
 * The caller finished acting upon name (a DEBOUNCE_NOW event or a trailing action) at
 * now_usec: its quiet window runs from here, so events that queued up while it worked are
 * merged. Returns 0 or -ENOMEM.
 */
int debounce_acted(Debouncer *d, const char *name, uint64_t now_usec);

/* The earliest due trailing action, UINT64_MAX when none waits. */
uint64_t debounce_next_due(const Debouncer *d);

/*
 * Take the trailing action due at now_usec (the earliest first) into *ret. ret->name is the
 * debouncer's and valid until the next call on d. The disk's window opens again at now_usec
 * (call debounce_acted() when the action is done). Returns 1 when one was taken, 0 when none
 * is due.
 */
int debounce_pop_due(Debouncer *d, uint64_t now_usec, DebounceEntry *ret);

void debounce_done(Debouncer *d);
