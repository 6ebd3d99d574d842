/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Elevator tunables (queue/iosched/<tunable>): the ones blkmqd can set, with the range each
 * store function of the kernel keeps (a value outside it is clamped by the kernel, so
 * blkmqd refuses it with ERANGE instead of writing a value that reads back differently),
 * and the kernel releases with a known issue of an elevator. Pure: no I/O.
 *
 * Sources (the store functions; torvalds/linux, the same ranges in 6.1 and 6.12):
 *   bfq          block/bfq-iosched.c bfq_attrs, STORE_FUNCTION()/USEC_STORE_FUNCTION(),
 *                bfq_max_budget_store(), bfq_timeout_sync_store(), bfq_strict_guarantees_store(),
 *                bfq_low_latency_store(): kstrtoul(page, 10), then clamped to [min, max].
 *   mq-deadline  block/mq-deadline.c deadline_attrs, STORE_INT()/STORE_JIFFIES():
 *                kstrtoint(page, 0), then clamped; *_expire are kept in jiffies.
 *   kyber        block/kyber-iosched.c kyber_sched_attrs, KYBER_LAT_SHOW_STORE():
 *                kstrtoull(page, 10), any u64, not clamped.
 * A switch of the elevator frees the old elevator's data and starts the new one from its
 * defaults (block/elevator.c elevator_switch(): elevator_exit() + init_sched()): every tunable
 * is reset by a switch, so blkmqd writes them after the elevator.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum IoschedTunable {
        IOSCHED_BFQ_FIFO_EXPIRE_SYNC,
        IOSCHED_BFQ_FIFO_EXPIRE_ASYNC,
        IOSCHED_BFQ_BACK_SEEK_MAX,
        IOSCHED_BFQ_BACK_SEEK_PENALTY,
        IOSCHED_BFQ_SLICE_IDLE,
        IOSCHED_BFQ_SLICE_IDLE_US,
        IOSCHED_BFQ_MAX_BUDGET,
        IOSCHED_BFQ_TIMEOUT_SYNC,
        IOSCHED_BFQ_STRICT_GUARANTEES,
        IOSCHED_BFQ_LOW_LATENCY,
        IOSCHED_DEADLINE_READ_EXPIRE,
        IOSCHED_DEADLINE_WRITE_EXPIRE,
        IOSCHED_DEADLINE_WRITES_STARVED,
        IOSCHED_DEADLINE_FRONT_MERGES,
        IOSCHED_DEADLINE_ASYNC_DEPTH,
        IOSCHED_DEADLINE_FIFO_BATCH,
        IOSCHED_DEADLINE_PRIO_AGING_EXPIRE,
        IOSCHED_KYBER_READ_LAT_NSEC,
        IOSCHED_KYBER_WRITE_LAT_NSEC,
        _IOSCHED_TUNABLE_MAX,
        _IOSCHED_TUNABLE_INVALID = -22, /* -EINVAL */
} IoschedTunable;

typedef struct IoschedTunableInfo {
        const char *elevator;           /* "bfq", "mq-deadline", "kyber" */
        const char *name;               /* the file in queue/iosched/ */
        int64_t min;                    /* smallest value the kernel keeps as written */
        uint64_t max;                   /* largest */
        const char *unit;               /* for messages: "ms", "µs", "ns", "0 or 1", ... */
        bool jiffies;                   /* kept in jiffies: reads back rounded to the tick (HZ) */
        const char *source;             /* the kernel function that stores it */
} IoschedTunableInfo;

/* The table entry of t; NULL when out of range. */
const IoschedTunableInfo *iosched_tunable_info(IoschedTunable t);

/* The tunable of elevator named name ("bfq", "slice_idle"); _IOSCHED_TUNABLE_INVALID when blkmqd does not know it. */
IoschedTunable iosched_tunable_find(const char *elevator, const char *name);

/* "bfq.slice_idle" form (config keys "IoSched.bfq.slice_idle", state keys "iosched.bfq.slice_idle"). */
IoschedTunable iosched_tunable_from_dotted(const char *s);

/*
 * The other file of the same kernel variable, or _IOSCHED_TUNABLE_INVALID: bfq's slice_idle
 * (ms) and slice_idle_us (µs) both show and store bfqd->bfq_slice_idle (block/bfq-iosched.c
 * bfq_slice_idle_store(), bfq_slice_idle_us_store()).
 * A write to one changes what the other reads. Pure.
 */
IoschedTunable iosched_tunable_alias(IoschedTunable t);

/*
 * value (decimal, as tunable t reads) in the unit of t's alias, as the alias would read it
 * (slice_idle 8 -> slice_idle_us 8000; slice_idle_us 8500 -> slice_idle 8, the kernel's
 * division). Returns 0 (*ret newly allocated), -EINVAL (no alias, not a decimal number),
 * -ERANGE (does not fit), -ENOMEM. Pure.
 */
int iosched_alias_value(IoschedTunable t, const char *value, char **ret);

/* True when blkmqd knows tunables of this elevator. */
bool iosched_elevator_known(const char *elevator);

/*
 * Validate a value for tunable t as written into policy/iosched/<elevator>/<tunable> or a
 * config key: decimal, an optional "-" only where the kernel keeps negative values, one
 * trailing newline; "auto" clears (ret NULL). Normalised ("007" -> "7", "-0" -> "0").
 * Returns 0, -EINVAL (not a decimal number, empty, blanks, embedded NUL, "0x10", "+1"),
 * -ERANGE (outside [min, max]: the kernel would clamp it), -ENOMEM. Pure.
 */
int iosched_tunable_validate(IoschedTunable t, const char *input, size_t len, char **ret);

struct DiskFacts;
/*
 * Validate a write to devices/<disk>/policy/iosched/<elevator>/<tunable>: as
 * iosched_tunable_validate(), and -EINVAL when the disk cannot run the elevator at all
 * (not listed, built in or loadable: disk_facts_elevator_source()) or runs it and this
 * kernel's elevator has no such file. "auto" is always accepted. Pure.
 */
int iosched_override_validate(IoschedTunable t, const char *input, size_t len, const struct DiskFacts *f, char **ret);

/* What the tunable takes, for a refusal message ("0 to 2147483647 (ms), or \"auto\""). Newly allocated. */
char *iosched_tunable_expected(IoschedTunable t);

/*
 * A known issue of elevator on kernel release (uname -r), for explain, or NULL. *ret_rule
 * (static) names it. Only issues whose introducing and fixing commits and releases were
 * checked are listed (policies/iosched.c). Pure.
 */
const char *iosched_known_issue(const char *elevator, const char *release, const char **ret_rule);
