/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Slow or fast: by what the disk does, and by what it claims. Pure: no I/O, no clock.
 *
 * The claim is queue/rotational, a hint whose trust depends on where it comes from
 * (policy_rotational_hint(), the table in policies/defaults.c: virtio-blk cannot say, NVMe
 * says it from the controller, a SCSI disk from VPD page B1h, ...). A trusted rotational=1 is
 * slow whatever is measured (the medium seeks); a trusted rotational=0 is fast until measured
 * slow (non-rotating is not fast: a throttled volume behind NVMe, a USB stick).
 *
 * The measurement is the device service time of the I/O that already happens: blkmqd never
 * issues I/O of its own. Two signals, one per source (docs/DESIGN-NOTES.md "Measured speed"):
 *
 *   SPEED_SIGNAL_SERVICE_TIME  per request, issue -> completion (the block_rq_issue and
 *                              block_rq_complete tracepoints through the BPF provider,
 *                              stats/bpf/hctx-stats.bpf.c): blk_mq_start_request() marks the
 *                              request started when the driver's ->queue_rq() takes it, so
 *                              time in the elevator and waiting for a tag does not count.
 *                              Reads and writes of at most 64 KiB only: a large transfer's
 *                              time would make a fast disk look slow. A histogram
 *                              (SpeedHistogram); the p50 decides.
 *   SPEED_SIGNAL_BUSY_PER_IO   without BPF: /sys/block/<disk>/stat deltas, io_ticks (ms the
 *                              disk had a request in flight, block/blk-core.c update_io_ticks())
 *                              per completed read and write; the busy time per I/O. For a disk
 *                              that serves one request at a time it is the service time; for a
 *                              parallel one less (1 / completions per busy second).
 *
 * Samples are cumulative counters taken by the manager (a BPF event every few hundred I/Os
 * of a disk, stats/stats-bpf.h; the periodic verify for the stat signal); speed_feed() keeps
 * the state and its hysteresis. A window of at least SpeedConfig.min_ios I/Os over at least
 * SpeedConfig.window_usec is evaluated:
 * at or below fast_usec it says fast, at or above slow_usec slow, in between nothing (the
 * class stays: the margin). A class change needs min_change_usec since the last one (the
 * first measurement of a disk is not held).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "facts.h"

/* Service-time histogram buckets: value v in µs; bucket 0 is v < 1 µs, bucket 1 + 4k + q holds
 * the q-th quarter of 2^k <= v < 2^(k+1) µs (k = 0..30; q = the two bits below the top one, so a
 * bucket spans at most a factor of 1.25; below 4 µs some buckets stay empty); the last bucket
 * (127) everything from 2^31 µs (36 min) on. The BPF program computes the same index
 * (stats/bpf/hctx-stats.bpf.c svc_bucket()). */
#define SPEED_BUCKETS 128

typedef struct SpeedHistogram {
        uint64_t count;                 /* requests in the buckets */
        uint64_t sum_usec;              /* their service times added up, µs */
        uint64_t buckets[SPEED_BUCKETS];
} SpeedHistogram;

/* The bucket of a service time of usec µs. */
unsigned speed_bucket_of(uint64_t usec);
/* The lowest value bucket i holds, in µs (0 for bucket 0); i >= SPEED_BUCKETS: the highest. */
double speed_bucket_lower_usec(unsigned i);
/* The q quantile (0 < q <= 1) of h in µs, interpolated within its bucket; 0 for an empty h. */
double speed_histogram_quantile(const SpeedHistogram *h, double q);

typedef enum SpeedSignal {
        SPEED_SIGNAL_SERVICE_TIME,
        SPEED_SIGNAL_BUSY_PER_IO,
        _SPEED_SIGNAL_MAX,
        _SPEED_SIGNAL_INVALID = -22,    /* -EINVAL */
} SpeedSignal;

/* "service time" (BPF), "busy per I/O" (stat); NULL when out of range. */
const char *speed_signal_to_string(SpeedSignal s);

/* What the measurement says. */
typedef enum MeasuredSpeed {
        MEASURED_NONE,                  /* too few I/Os yet, or nothing said beyond the margin */
        MEASURED_FAST,
        MEASURED_SLOW,
        _MEASURED_SPEED_MAX,
        _MEASURED_SPEED_INVALID = -22,
} MeasuredSpeed;

/* "unmeasured", "fast", "slow"; NULL when out of range. */
const char *measured_speed_to_string(MeasuredSpeed m);

/* One sample: cumulative counters of one disk since its counters began (a reset shows as a
 * counter going down and starts a new baseline). */
typedef struct SpeedSample {
        SpeedSignal signal;
        uint64_t usec;                  /* CLOCK_MONOTONIC when taken */
        uint64_t wall_sec;              /* CLOCK_REALTIME seconds when taken (for what explain shows) */
        SpeedHistogram hist;            /* SPEED_SIGNAL_SERVICE_TIME */
        uint64_t ios;                   /* SPEED_SIGNAL_BUSY_PER_IO: reads + writes completed */
        uint64_t busy_ms;               /* SPEED_SIGNAL_BUSY_PER_IO: io_ticks */
} SpeedSample;

/* The thresholds and the hysteresis ([Speed] of blkmqd.conf; shipped defaults and their
 * evidence: policies/defaults.c speed_defaults). */
typedef struct SpeedConfig {
        uint64_t fast_usec;             /* a window's value at or below it: fast (FastMs=) */
        uint64_t slow_usec;             /* at or above it: slow (SlowMs=); fast_usec < slow_usec */
        uint64_t min_ios;               /* I/Os a window needs before it says anything (MinIOs=) */
        uint64_t window_usec;           /* ... and the time it must cover at least (WindowSec=) */
        uint64_t min_change_usec;       /* time between two class changes of a disk (MinChangeSec=) */
        bool measure;                   /* Measure=no: nothing is measured, hints alone decide */
        char **trust_rotational;        /* TrustRotational=: driver globs whose queue/rotational is taken
                                         * as it is (the admin knows the hypervisor passes the medium);
                                         * "*" every disk (the flag alone, as before measuring) */
} SpeedConfig;

/* The shipped SpeedConfig (no trust globs). */
void speed_config_defaults(SpeedConfig *c);
void speed_config_done(SpeedConfig *c);

/* What the last evaluated window of a disk measured. */
typedef struct SpeedEvidence {
        SpeedSignal signal;
        MeasuredSpeed verdict;          /* what this window said on its own: fast, slow, MEASURED_NONE
                                         * (between the bounds) */
        double value_usec;              /* the deciding number: p50 (service time) or busy per I/O */
        double p50_usec, p99_usec;      /* service time only (0 for busy per I/O) */
        uint64_t ios;                   /* I/Os in the window */
        uint64_t span_usec;             /* how long the window took */
        uint64_t at_usec;               /* when it was evaluated */
        uint64_t at_wall_sec;           /* ... in wall-clock seconds */
} SpeedEvidence;

/* Where a disk's class by measurement came from (speed_state_from_kv()). */
typedef enum SpeedRestored {
        SPEED_RESTORED_NO,              /* measured by this run */
        SPEED_RESTORED_RESTART,         /* stored by an earlier run of this boot, restored at its start */
        SPEED_RESTORED_READDED,         /* stored by this run before the disk was last removed */
        _SPEED_RESTORED_MAX,
} SpeedRestored;

/* The counters of a SpeedState's last sample but its histogram (SpeedHistograms.base). */
typedef struct SpeedBase {
        SpeedSignal signal;
        uint64_t usec;
        uint64_t ios, busy_ms;
} SpeedBase;

/* The two service-time histograms of a SpeedState: the last sample's counters and the window
 * being filled (2 KiB together: allocated at the first service-time sample, so a disk measured
 * by busy per I/O, or not at all, carries none). */
typedef struct SpeedHistograms {
        SpeedHistogram base;
        SpeedHistogram window;
} SpeedHistograms;

/*
 * The measured speed of one disk over time. Zero-initialised: nothing seen; speed_state_reset()
 * frees what speed_feed() allocated. Owned by the manager (model/registry.h Device.speed),
 * changed only by speed_feed().
 */
typedef struct SpeedState {
        MeasuredSpeed measured;         /* the class by measurement, after the hysteresis */
        MeasuredSpeed before;           /* measured before its last change */
        uint64_t changed_usec;          /* when measured last changed (0: never) */
        uint64_t changed_wall_sec;      /* ... in wall-clock seconds */
        unsigned changes;               /* how often it changed */
        bool held;                      /* the last window said the other class, within min_change_usec */
        bool have_base;                 /* base holds the counters of the last sample */
        SpeedBase base;
        SpeedHistograms *hists;         /* SPEED_SIGNAL_SERVICE_TIME: base and window; NULL before */
        /* the window being filled */
        uint64_t window_usec;           /* its start: the sample it counts from */
        uint64_t window_ios, window_busy_ms;
        uint64_t seen;                  /* I/Os counted since the first sample */
        bool have_evidence;
        SpeedEvidence evidence;         /* the last evaluated window */
        SpeedRestored restored;         /* measured, changed_*, changes and evidence were stored, not
                                         * measured by this run (until its first window) */
} SpeedState;

/*
 * Feed one sample (cumulative counters) into s. The first sample is the baseline; later ones
 * add what happened since the previous one to the window. A window of at least c->min_ios
 * I/Os is evaluated (evidence) and a new one started. Returns 1 when s->measured changed,
 * else 0; -ENOMEM when the first service-time sample's histograms (s->hists) cannot be
 * allocated (s unchanged). Pure but for that allocation.
 */
int speed_feed(SpeedState *s, const SpeedConfig *c, const SpeedSample *sample);

/* Forget everything measured (the disk was replaced, or measuring was switched off), and free
 * s->hists: also what a SpeedState's owner calls before freeing it. */
void speed_state_reset(SpeedState *s);

/*
 * The class by measurement and its evidence as the state directory stores it (manager/persist.c
 * measured/<identity>): a strv of alternating key, value ("speed=fast", "changed_usec=...",
 * "p50_usec=84.000", ...); NULL when nothing is measured (measured is MEASURED_NONE: the file
 * is removed). Times in µs of CLOCK_MONOTONIC (changed_usec, at_usec: meaningful within one
 * boot only) and wall-clock seconds. Returns 0 or -ENOMEM.
 */
int speed_state_to_kv(const SpeedState *s, char ***ret);

/*
 * Take what speed_state_to_kv() stored into s (measured, before, changes, changed_*, the
 * evidence; the window, the baseline and seen stay as they are) and mark it restored as how.
 * now_usec is CLOCK_MONOTONIC now: a stored time after it is from another boot (the clock
 * started again). Returns 1 when restored, 0 when kv holds no class, -EINVAL for a value that
 * does not parse (s unchanged), -ESTALE for a time from another boot (s unchanged). Pure.
 */
int speed_state_from_kv(SpeedState *s, char * const *kv, uint64_t now_usec, SpeedRestored how);

/*
 * s as devices/<disk>/facts/speed shows it, into buf (size bytes), returned:
 *   "unmeasured (120 I/Os seen, 1,024 needed)"
 *   "unmeasured: p50 3.1 ms is between fast (<= 2 ms) and slow (>= 5 ms) (4,096 I/Os in 12 s)"
 *   "fast: p50 84 µs, p99 310 µs over 12,408 I/Os in 60 s"
 *   "slow: 6.7 ms busy per I/O over 1,204 I/Os in 8 s"
 *   "fast, held: the last window measured slow (p50 6.1 ms, p99 9 ms over 1,100 I/Os in 10 s),
 *    and a change waits MinChangeSec=600 s after the last one"
 * and, while the class is a stored one (SpeedState.restored), ", measured before the restart
 * at 2026-12-02 16:20:01 UTC" (or "before the disk was last removed") after it. buf should
 * hold SPEED_TEXT_MAX bytes.
 */
#define SPEED_TEXT_MAX 384
const char *speed_state_format(const SpeedState *s, const SpeedConfig *c, char *buf, size_t size);

/* A duration in µs as "84 µs", "1.2 ms", "310 ms", "2.1 s" into buf. */
const char *speed_format_usec(double usec, char *buf, size_t size);

/* ---- the rotational flag as a hint --------------------------------------------------------- */

typedef enum HintTrust {
        HINT_TRUSTED,                   /* the flag says what the medium is */
        HINT_UNTRUSTED,                 /* the flag says nothing about the medium: measure */
        HINT_UNREADABLE,                /* queue/rotational could not be read */
        _HINT_TRUST_MAX,
        _HINT_TRUST_INVALID = -22,
} HintTrust;

/* "trusted", "untrusted", "unreadable"; NULL when out of range. */
const char *hint_trust_to_string(HintTrust t);

typedef struct RotationalHint {
        HintTrust trust;
        const char *row;                /* the table row that decided ("virtio_blk", "raid-volume", ...,
                                         * "config" for TrustRotational=, "none" when no row matches) */
        const char *why;                /* the row's reason and source (static) */
} RotationalHint;

/*
 * How far f's queue/rotational can be trusted: the first matching row of the shipped table
 * (policies/defaults.c rotational_trust[]); c's TrustRotational= globs (on the driver fact)
 * win over the table (c NULL: the table alone). A disk no row matches is untrusted: no source
 * says its driver's flag describes a medium. Pure.
 */
void policy_rotational_hint(const DiskFacts *f, const SpeedConfig *c, RotationalHint *ret);

/* The table's rows for docs and tests: row i's name, trust and reason; false past the end. */
bool policy_rotational_trust_row(size_t i, const char **ret_row, HintTrust *ret_trust, const char **ret_why);
