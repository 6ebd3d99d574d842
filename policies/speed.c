/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Slow or fast: the measured speed with its hysteresis, and the rotational flag as a hint
 * (policies/speed.h). The table and the thresholds are data in policies/defaults.c.
 */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "parse.h"
#include "policy-internal.h"
#include "speed.h"
#include "strv.h"

static const char * const speed_signal_table[_SPEED_SIGNAL_MAX] = {
        [SPEED_SIGNAL_SERVICE_TIME] = "service time",
        [SPEED_SIGNAL_BUSY_PER_IO]  = "busy per I/O",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(speed_signal, SpeedSignal, speed_signal_table, _SPEED_SIGNAL_MAX);

static const char * const measured_speed_table[_MEASURED_SPEED_MAX] = {
        [MEASURED_NONE] = "unmeasured",
        [MEASURED_FAST] = "fast",
        [MEASURED_SLOW] = "slow",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(measured_speed, MeasuredSpeed, measured_speed_table, _MEASURED_SPEED_MAX);

static const char * const hint_trust_table[_HINT_TRUST_MAX] = {
        [HINT_TRUSTED]    = "trusted",
        [HINT_UNTRUSTED]  = "untrusted",
        [HINT_UNREADABLE] = "unreadable",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(hint_trust, HintTrust, hint_trust_table, _HINT_TRUST_MAX);

/* ---- the histogram ------------------------------------------------------------------------ */

/* The quarter q of v's octave k (floor(log2(v))): the two bits below the top one. */
static unsigned quarter_of(uint64_t v, unsigned k) {
        return k >= 2 ? (unsigned) (v >> (k - 2)) & 3 : k == 1 ? (unsigned) (v & 1) << 1 : 0;
}

unsigned speed_bucket_of(uint64_t usec) {
        if (usec == 0)
                return 0;
        unsigned k = 63 - (unsigned) __builtin_clzll(usec);     /* floor(log2(usec)) */
        if (k > 30)
                return SPEED_BUCKETS - 1;
        return 1 + 4 * k + quarter_of(usec, k);
}

double speed_bucket_lower_usec(unsigned i) {
        if (i == 0)
                return 0;
        if (i >= SPEED_BUCKETS - 1)
                return (double) (UINT64_C(1) << 31);
        unsigned k = (i - 1) / 4, q = (i - 1) % 4;
        return (double) (UINT64_C(1) << k) * (1.0 + q / 4.0);
}

/* The end of bucket i (what it holds is below it), µs. */
static double bucket_upper_usec(unsigned i) {
        if (i == 0)
                return 1;
        unsigned k = (i - 1) / 4, q = (i - 1) % 4;
        if (k == 0)
                return 2;                               /* [1, 2): one value */
        if (k == 1)
                return q < 2 ? 3 : 4;                   /* [2, 3), [3, 4) */
        return (double) (UINT64_C(1) << k) * (1.0 + (q + 1) / 4.0);
}

double speed_histogram_quantile(const SpeedHistogram *h, double q) {
        assert(h);
        uint64_t n = 0;
        for (unsigned i = 0; i < SPEED_BUCKETS; i++)
                n += h->buckets[i];
        if (n == 0)
                return 0;
        double rank = q * (double) n, seen = 0;
        for (unsigned i = 0; i < SPEED_BUCKETS; i++) {
                uint64_t b = h->buckets[i];
                if (b == 0 || seen + (double) b < rank) {
                        seen += (double) b;
                        continue;
                }
                double lo = speed_bucket_lower_usec(i);
                if (i == SPEED_BUCKETS - 1)
                        return lo;
                return lo + (bucket_upper_usec(i) - lo) * (rank - seen) / (double) b;
        }
        return speed_bucket_lower_usec(SPEED_BUCKETS - 1);
}

/* ---- the measured state ------------------------------------------------------------------- */

void speed_state_reset(SpeedState *s) {
        assert(s);
        free(s->hists);
        *s = (SpeedState) {};
}

static void window_start(SpeedState *s, uint64_t usec) {
        if (s->hists)
                s->hists->window = (SpeedHistogram) {};
        s->window_ios = s->window_busy_ms = 0;
        s->window_usec = usec;
}

/* Add sample - s->base to the window; false when a counter went down (a reset). */
static bool window_add(SpeedState *s, const SpeedSample *x) {
        const SpeedBase *b = &s->base;
        uint64_t ios;
        if (x->signal == SPEED_SIGNAL_SERVICE_TIME) {
                const SpeedHistogram *bh = &s->hists->base;
                SpeedHistogram *w = &s->hists->window;
                if (x->hist.count < bh->count || x->hist.sum_usec < bh->sum_usec)
                        return false;
                for (unsigned i = 0; i < SPEED_BUCKETS; i++)
                        if (x->hist.buckets[i] < bh->buckets[i])
                                return false;
                w->count += x->hist.count - bh->count;
                w->sum_usec += x->hist.sum_usec - bh->sum_usec;
                for (unsigned i = 0; i < SPEED_BUCKETS; i++)
                        w->buckets[i] += x->hist.buckets[i] - bh->buckets[i];
                ios = x->hist.count - bh->count;
        } else {
                if (x->ios < b->ios || x->busy_ms < b->busy_ms)
                        return false;
                ios = x->ios - b->ios;
                s->window_busy_ms += x->busy_ms - b->busy_ms;
        }
        s->window_ios += ios;
        s->seen += ios;
        return true;
}

/* What one window says on its own: fast, slow, or nothing (between the bounds). */
static MeasuredSpeed verdict_of(const SpeedConfig *c, double value_usec) {
        if (value_usec <= (double) c->fast_usec)
                return MEASURED_FAST;
        if (value_usec >= (double) c->slow_usec)
                return MEASURED_SLOW;
        return MEASURED_NONE;
}

/* x as the new baseline: its counters but the histogram into s->hists->base. */
static void base_set(SpeedState *s, const SpeedSample *x) {
        s->base.signal = x->signal;
        s->base.usec = x->usec;
        s->base.ios = x->ios;
        s->base.busy_ms = x->busy_ms;
        if (x->signal == SPEED_SIGNAL_SERVICE_TIME)
                s->hists->base = x->hist;
}

int speed_feed(SpeedState *s, const SpeedConfig *c, const SpeedSample *x) {
        assert(c);
        assert(x);
        if (x->signal == SPEED_SIGNAL_SERVICE_TIME && !s->hists && !(s->hists = calloc(1, sizeof(SpeedHistograms))))
                return -ENOMEM;
        if (!s->have_base || s->base.signal != x->signal || x->usec < s->base.usec) {
                /* a first sample, another signal, a clock going back: a new baseline */
                base_set(s, x);
                s->have_base = true;
                window_start(s, x->usec);
                return 0;
        }
        if (!window_add(s, x)) {
                base_set(s, x);         /* the counters began anew (a disk forgotten and seen again) */
                window_start(s, x->usec);
                return 0;
        }
        base_set(s, x);
        if (s->window_ios < MAX(c->min_ios, UINT64_C(1)) || x->usec - s->window_usec < c->window_usec)
                return 0;

        SpeedEvidence e = {
                .signal = x->signal,
                .ios = s->window_ios,
                .span_usec = x->usec - s->window_usec,
                .at_usec = x->usec,
                .at_wall_sec = x->wall_sec,
        };
        if (x->signal == SPEED_SIGNAL_SERVICE_TIME) {
                e.p50_usec = speed_histogram_quantile(&s->hists->window, 0.5);
                e.p99_usec = speed_histogram_quantile(&s->hists->window, 0.99);
                e.value_usec = e.p50_usec;
        } else
                e.value_usec = (double) s->window_busy_ms * 1000.0 / (double) s->window_ios;
        e.verdict = verdict_of(c, e.value_usec);
        s->evidence = e;
        s->have_evidence = true;
        s->restored = SPEED_RESTORED_NO;        /* this run's evidence from now on */
        window_start(s, x->usec);

        s->held = false;
        if (e.verdict == MEASURED_NONE || e.verdict == s->measured)
                return 0;
        if (s->measured != MEASURED_NONE && x->usec - s->changed_usec < c->min_change_usec) {
                s->held = true;         /* the margin was crossed, but too soon after the last change */
                return 0;
        }
        s->before = s->measured;
        s->measured = e.verdict;
        s->changed_usec = x->usec;
        s->changed_wall_sec = x->wall_sec;
        s->changes++;
        return 1;
}

/* ---- stored ------------------------------------------------------------------------------- */

/* the signal's token in the state file (no blank: a token, not the text speed_signal_to_string() shows) */
static const char * const signal_token[_SPEED_SIGNAL_MAX] = {
        [SPEED_SIGNAL_SERVICE_TIME] = "service-time",
        [SPEED_SIGNAL_BUSY_PER_IO]  = "busy-per-io",
};

static int kv_put(char ***kv, const char *k, const char *fmt, ...) _printf_(3, 4);
static int kv_put(char ***kv, const char *k, const char *fmt, ...) {
        char v[64];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v, sizeof(v), fmt, ap);
        va_end(ap);
        return strv_extend(kv, k) < 0 || strv_extend(kv, v) < 0 ? -ENOMEM : 0;
}

int speed_state_to_kv(const SpeedState *s, char ***ret) {
        assert(s);
        assert(ret);
        _cleanup_strv_free_ char **kv = NULL;
        const SpeedEvidence *e = &s->evidence;

        *ret = NULL;
        if (s->measured == MEASURED_NONE)
                return 0;
        if (kv_put(&kv, "speed", "%s", measured_speed_to_string(s->measured)) < 0 ||
            kv_put(&kv, "before", "%s", measured_speed_to_string(s->before)) < 0 ||
            kv_put(&kv, "changes", "%u", s->changes) < 0 ||
            kv_put(&kv, "changed_usec", "%" PRIu64, s->changed_usec) < 0 ||
            kv_put(&kv, "changed_wall", "%" PRIu64, s->changed_wall_sec) < 0)
                return -ENOMEM;
        if (s->have_evidence &&
            (kv_put(&kv, "signal", "%s", signal_token[e->signal]) < 0 ||
             kv_put(&kv, "verdict", "%s", measured_speed_to_string(e->verdict)) < 0 ||
             kv_put(&kv, "value_usec", "%.3f", e->value_usec) < 0 ||
             kv_put(&kv, "p50_usec", "%.3f", e->p50_usec) < 0 ||
             kv_put(&kv, "p99_usec", "%.3f", e->p99_usec) < 0 ||
             kv_put(&kv, "ios", "%" PRIu64, e->ios) < 0 ||
             kv_put(&kv, "span_usec", "%" PRIu64, e->span_usec) < 0 ||
             kv_put(&kv, "at_usec", "%" PRIu64, e->at_usec) < 0 ||
             kv_put(&kv, "at_wall", "%" PRIu64, e->at_wall_sec) < 0))
                return -ENOMEM;
        *ret = TAKE_PTR(kv);
        return 0;
}

static MeasuredSpeed measured_from(const char *v) {
        for (MeasuredSpeed m = 0; m < _MEASURED_SPEED_MAX; m++)
                if (streq_ptr(v, measured_speed_table[m]))
                        return m;
        return _MEASURED_SPEED_INVALID;
}

static int parse_double(const char *v, double *ret) {
        char *end;
        if (!v || !*v)
                return -EINVAL;
        errno = 0;
        double d = strtod(v, &end);
        if (errno || *end || !(d >= 0) || d > 1e15)
                return -EINVAL;
        *ret = d;
        return 0;
}

int speed_state_from_kv(SpeedState *s, char * const *kv, uint64_t now_usec, SpeedRestored how) {
        assert(s);
        const char *v[14] = {};
        static const char * const keys[14] = { "speed", "before", "changes", "changed_usec", "changed_wall", "signal", "verdict",
                                               "value_usec", "p50_usec", "p99_usec", "ios", "span_usec", "at_usec", "at_wall" };
        for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
                for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                        if (streq(kv[i], keys[k]))
                                v[k] = kv[i + 1];
        if (!v[0])
                return 0;
        SpeedState n = *s;
        uint64_t changes;
        n.measured = measured_from(v[0]);
        n.before = measured_from(v[1]);
        if (n.measured <= MEASURED_NONE || n.before < 0 || parse_u64(v[2], &changes) < 0 || changes > UINT32_MAX ||
            parse_u64(v[3], &n.changed_usec) < 0 || parse_u64(v[4], &n.changed_wall_sec) < 0)
                return -EINVAL;
        n.changes = (unsigned) changes;
        n.held = false;
        n.have_evidence = false;
        n.evidence = (SpeedEvidence) {};
        if (!v[5])
                return -EINVAL;         /* a class is stored with the window that made it */
        {
                SpeedEvidence *e = &n.evidence;
                e->signal = _SPEED_SIGNAL_INVALID;
                for (SpeedSignal g = 0; g < _SPEED_SIGNAL_MAX; g++)
                        if (streq(v[5], signal_token[g]))
                                e->signal = g;
                e->verdict = measured_from(v[6]);
                if (e->signal < 0 || e->verdict < 0 || parse_double(v[7], &e->value_usec) < 0 ||
                    parse_double(v[8], &e->p50_usec) < 0 || parse_double(v[9], &e->p99_usec) < 0 ||
                    parse_u64(v[10], &e->ios) < 0 || parse_u64(v[11], &e->span_usec) < 0 ||
                    parse_u64(v[12], &e->at_usec) < 0 || parse_u64(v[13], &e->at_wall_sec) < 0)
                        return -EINVAL;
                if (e->at_usec > now_usec)
                        return -ESTALE;
                n.have_evidence = true;
                /* a window that said the other class was held by the hysteresis (or it would
                 * have changed the class): held still */
                n.held = e->verdict != MEASURED_NONE && e->verdict != n.measured;
        }
        if (n.changed_usec > now_usec)
                return -ESTALE;         /* the monotonic clock started again since: another boot */
        n.restored = how;
        *s = n;
        return 1;
}

/* ---- formatting --------------------------------------------------------------------------- */

const char *speed_format_usec(double usec, char *buf, size_t size) {
        if (usec < 1000)
                snprintf(buf, size, "%.0f µs", usec);
        else if (usec < 10000)
                snprintf(buf, size, "%.1f ms", usec / 1000);
        else if (usec < 1000000)
                snprintf(buf, size, "%.0f ms", usec / 1000);
        else
                snprintf(buf, size, "%.1f s", usec / 1e6);
        return buf;
}

/* n with a comma every three digits ("12,408"). */
static const char *format_count(uint64_t n, char *buf, size_t size) {
        char digits[32];
        int l = snprintf(digits, sizeof(digits), "%" PRIu64, n);
        size_t o = 0;
        for (int i = 0; i < l && o + 2 < size; i++) {
                if (i > 0 && (l - i) % 3 == 0)
                        buf[o++] = ',';
                buf[o++] = digits[i];
        }
        buf[o] = 0;
        return buf;
}

/* The window's figures: "p50 84 µs, p99 310 µs" or "6.7 ms busy per I/O". */
static const char *format_figures(const SpeedEvidence *e, char *buf, size_t size) {
        char a[32], b[32];
        if (e->signal == SPEED_SIGNAL_SERVICE_TIME)
                snprintf(buf, size, "p50 %s, p99 %s", speed_format_usec(e->p50_usec, a, sizeof(a)),
                         speed_format_usec(e->p99_usec, b, sizeof(b)));
        else
                snprintf(buf, size, "%s busy per I/O", speed_format_usec(e->value_usec, a, sizeof(a)));
        return buf;
}

static const char *format_wall(uint64_t sec, char *buf, size_t size);

const char *speed_state_format(const SpeedState *s, const SpeedConfig *c, char *buf, size_t size) {
        assert(c);
        char fig[96], n[32], m[32], fast[32], slow[32], when[48], stored[128] = "";
        const SpeedEvidence *e = &s->evidence;
        double span = (double) e->span_usec / 1e6;

        if (!s->have_evidence) {
                snprintf(buf, size, "unmeasured (%s I/Os seen, %s needed)", format_count(s->seen, n, sizeof(n)),
                         format_count(MAX(c->min_ios, UINT64_C(1)), m, sizeof(m)));
                return buf;
        }
        format_figures(e, fig, sizeof(fig));
        if (s->measured == MEASURED_NONE)
                snprintf(buf, size, "unmeasured: %s %s is between fast (<= %s) and slow (>= %s) (%s I/Os in %.0f s)",
                         e->signal == SPEED_SIGNAL_SERVICE_TIME ? "p50" : "busy per I/O",
                         speed_format_usec(e->value_usec, m, sizeof(m)),
                         speed_format_usec((double) c->fast_usec, fast, sizeof(fast)),
                         speed_format_usec((double) c->slow_usec, slow, sizeof(slow)),
                         format_count(e->ios, n, sizeof(n)), span);
        else {
                if (s->restored != SPEED_RESTORED_NO)
                        snprintf(stored, sizeof(stored), ", measured before %s at %s",
                                 s->restored == SPEED_RESTORED_RESTART ? "the restart" : "the disk was last removed",
                                 format_wall(e->at_wall_sec, when, sizeof(when)));
                if (s->held)
                        /* the class stays; the window that said otherwise is shown as what it is */
                        snprintf(buf, size, "%s, held: the last window measured %s (%s over %s I/Os in %.0f s%s), "
                                 "and a change waits MinChangeSec=%" PRIu64 " s after the last one",
                                 measured_speed_to_string(s->measured), measured_speed_to_string(e->verdict), fig,
                                 format_count(e->ios, n, sizeof(n)), span, stored, c->min_change_usec / 1000000);
                else
                        snprintf(buf, size, "%s: %s over %s I/Os in %.0f s%s", measured_speed_to_string(s->measured), fig,
                                 format_count(e->ios, n, sizeof(n)), span, stored);
        }
        return buf;
}

/* ---- the rotational flag as a hint -------------------------------------------------------- */

static bool rate_matches(TrustRate want, const DiskFacts *f) {
        bool reported = !f->unknown[FACT_MEDIUM_ROTATION] &&
                        (f->rotation_rate == 1 || (f->rotation_rate >= 0x401 && f->rotation_rate <= 0xfffe));
        return want == RATE_ANY || (want == RATE_REPORTED) == reported;
}

static bool row_matches(const TrustRow *t, const DiskFacts *f) {
        if (t->driver && !streq_ptr(t->driver, f->driver))
                return false;
        if (t->transport && !streq_ptr(t->transport, f->transport))
                return false;
        if (t->channels && (f->scsi_channel < 0 || f->scsi_channel > 31 || !(t->channels & CHANNEL(f->scsi_channel))))
                return false;
        return rate_matches(t->rate, f);
}

void policy_rotational_hint(const DiskFacts *f, const SpeedConfig *c, RotationalHint *ret) {
        assert(f);
        assert(ret);
        if (f->rotational == TRISTATE_UNKNOWN) {
                *ret = (RotationalHint) { HINT_UNREADABLE, "unreadable", "queue/rotational could not be read" };
                return;
        }
        STRV_FOREACH(g, c ? c->trust_rotational : NULL)
                if (fnmatch(*g, f->driver ?: "", 0) == 0) {     /* "*": every disk, its driver known or not */
                        *ret = (RotationalHint) { HINT_TRUSTED, "config",
                                                  "[Speed] TrustRotational= names the driver: the administrator says "
                                                  "the flag describes the medium" };
                        return;
                }
        for (size_t i = 0; i < n_rotational_trust; i++)
                if (row_matches(&rotational_trust[i], f)) {
                        *ret = (RotationalHint) { rotational_trust[i].trust, rotational_trust[i].row, rotational_trust[i].why };
                        return;
                }
        *ret = (RotationalHint) { HINT_UNTRUSTED, "none",
                                  "no row of blkmqd's table covers this driver: nothing says its flag describes a medium" };
}

bool policy_rotational_trust_row(size_t i, const char **ret_row, HintTrust *ret_trust, const char **ret_why) {
        assert(ret_row);
        assert(ret_trust);
        assert(ret_why);
        if (i >= n_rotational_trust)
                return false;
        *ret_row = rotational_trust[i].row;
        *ret_trust = rotational_trust[i].trust;
        *ret_why = rotational_trust[i].why;
        return true;
}

void speed_config_done(SpeedConfig *c) {
        c->trust_rotational = strv_free(c->trust_rotational);
}

/* ---- slow or fast, for the class ---------------------------------------------------------- */

void policy_speed_verdict(const DiskFacts *f, const PolicyConfig *config, const SpeedState *s, SpeedVerdict *ret) {
        assert(ret);
        const SpeedConfig *c = config ? &config->speed : NULL;
        MeasuredSpeed m = s && (!c || c->measure) ? s->measured : MEASURED_NONE;
        SpeedVerdict v = {};

        policy_rotational_hint(f, c, &v.hint);
        if (v.hint.trust == HINT_TRUSTED && (f->rotational == TRISTATE_YES || m != MEASURED_SLOW)) {
                /* a rotating medium seeks whatever a window measured (sequential reads, the
                 * drive's cache); a non-rotating one is fast until its I/O says otherwise */
                v.slow = f->rotational;
                v.from_flag = true;
                v.rule = "speed-hint";
        } else if (m != MEASURED_NONE) {
                /* untrusted, or a non-rotating medium measured slow: a throttled or remote
                 * volume behind an NVMe or SCSI front end, a USB stick */
                v.slow = m == MEASURED_SLOW ? TRISTATE_YES : TRISTATE_NO;
                v.rule = "speed-measured";
        } else {
                v.slow = TRISTATE_UNKNOWN;
                v.rule = "speed-unknown";
        }
        *ret = v;
}

/* "2026-12-01 23:10:22 UTC" of a wall-clock second count. */
static const char *format_wall(uint64_t sec, char *buf, size_t size) {
        time_t t = (time_t) sec;
        struct tm tm;
        if (sec == 0 || !gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
                snprintf(buf, size, "an unknown time");
        return buf;
}

int policy_explain_speed(const DiskFacts *f, const PolicyConfig *config, const SpeedState *s, const SpeedVerdict *v,
                         Plan *plan) {
        static const SpeedState none = {};
        const SpeedConfig *c = &config->speed;
        char state[SPEED_TEXT_MAX], fast[32], slow[32], since[48], flag[32];

        if (!s)
                s = &none;
        if (!c->measure)
                snprintf(state, sizeof(state), "not measured ([Speed] Measure=no)");
        else
                speed_state_format(s, c, state, sizeof(state));
        if (f->rotational == TRISTATE_UNKNOWN)
                snprintf(flag, sizeof(flag), "rotational=unknown");
        else
                snprintf(flag, sizeof(flag), "rotational=%s", tristate_to_string(f->rotational));
        const char *kind = v->slow == TRISTATE_YES ? "slow" : "fast";
        bool measured = c->measure && s->measured != MEASURED_NONE;

        if (v->from_flag) {
                bool against = measured && (s->measured == MEASURED_SLOW) != (v->slow == TRISTATE_YES);
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, v->rule,
                                    "%s (trusted: %s) speed=%s -> %s%s", flag, v->hint.why, state, kind,
                                    against ? ": the trusted flag stands against the measurement (the medium is what "
                                              "it is; a rotating disk reading sequentially measures fast)" :
                                    measured ? ", and the measurement agrees" :
                                    ", from the flag until a measurement exists (a disk idle since blkmqd started stays so)");
        }
        if (v->slow != TRISTATE_UNKNOWN)
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, v->rule,
                                    "%s (%s: %s) speed=%s (fast <= %s, slow >= %s; %s since %s, %u change%s) -> %s, by measurement%s",
                                    flag, hint_trust_to_string(v->hint.trust), v->hint.why, state,
                                    speed_format_usec((double) c->fast_usec, fast, sizeof(fast)),
                                    speed_format_usec((double) c->slow_usec, slow, sizeof(slow)),
                                    measured_speed_to_string(s->measured), format_wall(s->changed_wall_sec, since, sizeof(since)),
                                    s->changes, s->changes == 1 ? "" : "s", kind,
                                    v->hint.trust == HINT_TRUSTED ? " (a non-rotating medium is not a fast one: the "
                                    "measurement wins over rotational=0)" : "");
        return plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, v->rule,
                            "%s (%s: %s) speed=%s -> slow or fast unknown: waiting for a measurement",
                            flag, hint_trust_to_string(v->hint.trust), v->hint.why, state);
}
