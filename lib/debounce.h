/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Per-disk debouncing of uevents (pure: the caller passes the time and arms its timer).
 *
 * A hot-plug burst gives several uevents per disk (add, change for the partition table and
 * the medium, remove, and the same again when it is plugged back): acting on each means a
 * full gather and evaluation per uevent, and writes that race the next removal. An event
 * for a disk opens (or extends) a quiet window: the disk is acted upon once, with its last
 * action, when DEBOUNCE_USEC passed without another event for it, and at the latest
 * DEBOUNCE_MAX_USEC after the window's first event (a disk that never stops flapping is
 * still looked at). Disks do not wait for each other. Coldplug does not go through here.
 */

#include <stddef.h>
#include <stdint.h>

#define DEBOUNCE_USEC           (UINT64_C(100) * 1000)          /* 100 ms of quiet */
#define DEBOUNCE_MAX_USEC       (UINT64_C(1000) * 1000)         /* at most 1 s after the first event */

typedef struct DebounceEntry {
        char *name;             /* the disk */
        int action;             /* the last action seen (the caller's enum) */
        unsigned events;        /* events merged into this one */
        uint64_t first_usec;    /* first event of the window */
        uint64_t due_usec;      /* when it is acted upon */
} DebounceEntry;

typedef struct Debouncer {
        DebounceEntry *entries;
        size_t n_entries;
        uint64_t quiet_usec, max_usec;  /* 0: DEBOUNCE_USEC, DEBOUNCE_MAX_USEC */
} Debouncer;

/* An event for name at now_usec (CLOCK_MONOTONIC µs). Returns 0 or -ENOMEM. */
int debounce_add(Debouncer *d, const char *name, int action, uint64_t now_usec);

/* The earliest due time, UINT64_MAX when nothing waits. */
uint64_t debounce_next_due(const Debouncer *d);

/*
 * Take one entry due at now_usec (the earliest first) into *ret (the caller frees ret->name).
 * Returns 1 when one was taken, 0 when none is due.
 */
int debounce_pop_due(Debouncer *d, uint64_t now_usec, DebounceEntry *ret);

void debounce_done(Debouncer *d);
