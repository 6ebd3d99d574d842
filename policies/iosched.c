/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Elevator tunables: the table of what the kernel keeps, validation, known issues. Pure. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "iosched.h"
#include "macro.h"
#include "parse.h"
#include "policy-internal.h"

#define BFQ "block/bfq-iosched.c "
#define DD "block/mq-deadline.c "
#define KY "block/kyber-iosched.c "

static const IoschedTunableInfo table[_IOSCHED_TUNABLE_MAX] = {
        [IOSCHED_BFQ_FIFO_EXPIRE_SYNC]  = { "bfq", "fifo_expire_sync", 1, INT_MAX, "ms", false, BFQ "bfq_fifo_expire_sync_store()" },
        [IOSCHED_BFQ_FIFO_EXPIRE_ASYNC] = { "bfq", "fifo_expire_async", 1, INT_MAX, "ms", false, BFQ "bfq_fifo_expire_async_store()" },
        [IOSCHED_BFQ_BACK_SEEK_MAX]     = { "bfq", "back_seek_max", 0, INT_MAX, "KiB", false, BFQ "bfq_back_seek_max_store()" },
        [IOSCHED_BFQ_BACK_SEEK_PENALTY] = { "bfq", "back_seek_penalty", 1, INT_MAX, "factor", false, BFQ "bfq_back_seek_penalty_store()" },
        [IOSCHED_BFQ_SLICE_IDLE]        = { "bfq", "slice_idle", 0, INT_MAX, "ms", false, BFQ "bfq_slice_idle_store()" },
        [IOSCHED_BFQ_SLICE_IDLE_US]     = { "bfq", "slice_idle_us", 0, UINT_MAX, "µs", false, BFQ "bfq_slice_idle_us_store()" },
        [IOSCHED_BFQ_MAX_BUDGET]        = { "bfq", "max_budget", 0, INT_MAX, "sectors, 0 = automatic", false, BFQ "bfq_max_budget_store()" },
        [IOSCHED_BFQ_TIMEOUT_SYNC]      = { "bfq", "timeout_sync", 1, INT_MAX, "ms", true, BFQ "bfq_timeout_sync_store()" },
        [IOSCHED_BFQ_STRICT_GUARANTEES] = { "bfq", "strict_guarantees", 0, 1, "0 or 1", false, BFQ "bfq_strict_guarantees_store()" },
        [IOSCHED_BFQ_LOW_LATENCY]       = { "bfq", "low_latency", 0, 1, "0 or 1", false, BFQ "bfq_low_latency_store()" },
        [IOSCHED_DEADLINE_READ_EXPIRE]  = { "mq-deadline", "read_expire", 0, INT_MAX, "ms", true, DD "deadline_read_expire_store()" },
        [IOSCHED_DEADLINE_WRITE_EXPIRE] = { "mq-deadline", "write_expire", 0, INT_MAX, "ms", true, DD "deadline_write_expire_store()" },
        [IOSCHED_DEADLINE_WRITES_STARVED] = { "mq-deadline", "writes_starved", INT_MIN, INT_MAX, "dispatches", false, DD "deadline_writes_starved_store()" },
        [IOSCHED_DEADLINE_FRONT_MERGES] = { "mq-deadline", "front_merges", 0, 1, "0 or 1", false, DD "deadline_front_merges_store()" },
        [IOSCHED_DEADLINE_ASYNC_DEPTH]  = { "mq-deadline", "async_depth", 1, INT_MAX, "requests", false, DD "deadline_async_depth_store()" },
        [IOSCHED_DEADLINE_FIFO_BATCH]   = { "mq-deadline", "fifo_batch", 0, INT_MAX, "requests", false, DD "deadline_fifo_batch_store()" },
        [IOSCHED_DEADLINE_PRIO_AGING_EXPIRE] = { "mq-deadline", "prio_aging_expire", 0, INT_MAX, "ms", true, DD "deadline_prio_aging_expire_store()" },
        [IOSCHED_KYBER_READ_LAT_NSEC]   = { "kyber", "read_lat_nsec", 0, UINT64_MAX, "ns", false, KY "kyber_read_lat_store()" },
        [IOSCHED_KYBER_WRITE_LAT_NSEC]  = { "kyber", "write_lat_nsec", 0, UINT64_MAX, "ns", false, KY "kyber_write_lat_store()" },
};

const IoschedTunableInfo *iosched_tunable_info(IoschedTunable t) {
        return t >= 0 && t < _IOSCHED_TUNABLE_MAX ? &table[t] : NULL;
}

IoschedTunable iosched_tunable_find(const char *elevator, const char *name) {
        if (!elevator || !name)
                return _IOSCHED_TUNABLE_INVALID;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (streq(table[t].elevator, elevator) && streq(table[t].name, name))
                        return t;
        return _IOSCHED_TUNABLE_INVALID;
}

IoschedTunable iosched_tunable_from_dotted(const char *s) {
        const char *dot = s ? strchr(s, '.') : NULL;
        if (!dot || dot == s)
                return _IOSCHED_TUNABLE_INVALID;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                size_t l = strlen(table[t].elevator);
                if ((size_t) (dot - s) == l && strncmp(s, table[t].elevator, l) == 0 && streq(dot + 1, table[t].name))
                        return t;
        }
        return _IOSCHED_TUNABLE_INVALID;
}

IoschedTunable iosched_tunable_alias(IoschedTunable t) {
        switch (t) {
        case IOSCHED_BFQ_SLICE_IDLE:
                return IOSCHED_BFQ_SLICE_IDLE_US;
        case IOSCHED_BFQ_SLICE_IDLE_US:
                return IOSCHED_BFQ_SLICE_IDLE;
        default:
                return _IOSCHED_TUNABLE_INVALID;
        }
}

int iosched_alias_value(IoschedTunable t, const char *value, char **ret) {
        assert(ret);
        uint64_t v;
        char *s;
        if (iosched_tunable_alias(t) < 0 || !value || parse_u64(value, &v) < 0)
                return -EINVAL;
        if (t == IOSCHED_BFQ_SLICE_IDLE) {
                if (v > UINT64_MAX / 1000)
                        return -ERANGE;
                v *= 1000;              /* ms -> µs */
        } else
                v /= 1000;              /* µs -> ms, as bfq_slice_idle_show() divides */
        if (asprintf(&s, "%" PRIu64, v) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

bool iosched_elevator_known(const char *elevator) {
        for (IoschedTunable t = 0; elevator && t < _IOSCHED_TUNABLE_MAX; t++)
                if (streq(table[t].elevator, elevator))
                        return true;
        return false;
}

int iosched_tunable_validate(IoschedTunable t, const char *input, size_t len, char **ret) {
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        char buf[64];
        uint64_t v;
        int r;

        if (!info)
                return -EINVAL;
        if (len > 0 && input[len - 1] == '\n')
                len--;
        if (len == 0 || len >= sizeof(buf) || memchr(input, 0, len) || memchr(input, '\n', len))
                return -EINVAL;
        memcpy(buf, input, len);
        buf[len] = 0;
        if (streq(buf, "auto")) {
                *ret = NULL;
                return 0;
        }
        bool neg = buf[0] == '-';
        r = parse_u64(buf + neg, &v);           /* digits only: no "+", "0x", blanks */
        if (r == -ERANGE)
                return -ERANGE;
        if (r < 0)
                return r;
        if (neg && v == 0)
                neg = false;                    /* "-0" */
        if (neg) {
                if (info->min >= 0)
                        return -ERANGE;
                if (v > (uint64_t) -(info->min + 1) + 1)
                        return -ERANGE;
                return asprintf(ret, "-%" PRIu64, v) < 0 ? -ENOMEM : 0;
        }
        if ((info->min > 0 && v < (uint64_t) info->min) || v > info->max)
                return -ERANGE;
        return asprintf(ret, "%" PRIu64, v) < 0 ? -ENOMEM : 0;
}

int iosched_override_validate(IoschedTunable t, const char *input, size_t len, const DiskFacts *f, char **ret) {
        assert(ret);
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        char *v = NULL;
        int r = iosched_tunable_validate(t, input, len, &v);
        if (r < 0)
                return r;
        if (v && (disk_facts_elevator_source(f, info->elevator) == ELEVATOR_UNAVAILABLE ||
                  (streq_ptr(f->elevator, info->elevator) && !f->iosched_unknown && !disk_facts_iosched(f, info->name)))) {
                free(v);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

char *iosched_tunable_expected(IoschedTunable t) {
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        char *s = NULL;
        if (!info)
                return NULL;
        if (asprintf(&s, "a decimal number from %" PRId64 " to %" PRIu64 " (%s; %s clamps anything else), or \"auto\"",
                     info->min, info->max, info->unit, info->source) < 0)
                return NULL;
        return s;
}

/*
 * Known issues, each checked in the sources named (linux-block and stable list archives):
 *
 * bfq waker detection. c65e6fd460b4 ("bfq: Do not let waker requests skip proper
 * accounting", Jan Kara, for-5.17/block; also in the 5.16 stable review series of
 * 2022-01-24) made the waker's requests enter BFQ queues, which then no longer qualified for
 * the old waker detection: with many processes sharing a queue (dbench, 128 clients) BFQ
 * idled for nobody. Jan Kara's series "bfq: Improve waker detection" (2022-05-19) measured
 * 1237 s on 5.18-rc3 against 950 s with c65e6fd460b4 reverted and 988 s with the fix, and
 * fixed it with f950667356ce ("bfq: Relax waker detection for shared queues") and
 * c5ac56bb6110 ("bfq: Allow current waker to defend against a tentative one"), applied for
 * 5.19 (for-5.19/block) and sent to the 5.17 and 5.18 stable trees (review series of
 * 2022-06-07). So 5.16 (with the stable backport), 5.17 and 5.18 are affected unless their
 * stable update carries the fix; blkmqd cannot see the sublevel's patches and says so.
 */
const char *iosched_known_issue(const char *elevator, const char *release, const char **ret_rule) {
        unsigned major, minor;

        if (!elevator || !streq(elevator, "bfq") || !release || kernel_release_parse(release, &major, &minor) < 0)
                return NULL;
        if (major != 5 || minor < 16 || minor > 18)
                return NULL;
        if (ret_rule)
                *ret_rule = "known-issue-bfq-waker";
        if (minor == 16)
                return "bfq waker detection regression: c65e6fd460b4 (\"bfq: Do not let waker requests skip proper accounting\", "
                       "5.17) was backported to 5.16 stable (review of 2022-01-24); its fixes f950667356ce and c5ac56bb6110 "
                       "(5.19) were sent only to 5.17 and 5.18 stable: dbench with 128 clients 1237 s against 950-988 s "
                       "without the regression; bfq idles for processes that share a queue";
        return "bfq waker detection regression: c65e6fd460b4 (\"bfq: Do not let waker requests skip proper accounting\", "
               "5.17) until f950667356ce (\"bfq: Relax waker detection for shared queues\") and c5ac56bb6110 "
               "(\"bfq: Allow current waker to defend against a tentative one\"), in 5.19 and in 5.17/5.18 stable updates "
               "from June 2022 (the sublevel's patches cannot be checked here): dbench with 128 clients 1237 s against "
               "950-988 s without the regression; bfq idles for processes that share a queue";
}

/* "policy/iosched/bfq/slice_idle" for an admin override, else "config [Device:x] IoSched.bfq.slice_idle". */
static const char *iosched_label(const PolicyOverrides *o, IoschedTunable t, char *buf, size_t size) {
        const IoschedTunableInfo *i = &table[t];
        if (o->iosched_origin[t])
                snprintf(buf, size, "%s IoSched.%s.%s", o->iosched_origin[t], i->elevator, i->name);
        else
                snprintf(buf, size, "policy/iosched/%s/%s", i->elevator, i->name);
        return buf;
}

/*
 * The tunables of the elevator the disk will run (plan->elevator when blkmqd switches it,
 * else the current one: policy_target_elevator()). An override (policy/iosched/..., [Device:] IoSched.*=) wins over
 * the class's IoSched.*= for the same tunable. A wish for another elevator's tunable waits
 * (explained for overrides: the admin asked for it); a tunable the running elevator of this
 * kernel does not have is left out (explained). bfq's slice_idle and slice_idle_us are one
 * variable (bfqd->bfq_slice_idle): with both wanted, slice_idle_us wins and slice_idle is
 * left out (else each write would undo the other).
 */
int policy_iosched(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan) {
        assert(cp);
        assert(o);
        assert(plan);
        const char *running = policy_target_elevator(f, h, plan);
        bool current = running && streq_ptr(running, f->elevator);
        char label[256];
        size_t lines = plan->n_entries;
        int r;
        /* slice_idle_us is planned: slice_idle, the same variable, is not (explained in its place) */
        bool conflict = (o->iosched[IOSCHED_BFQ_SLICE_IDLE_US] ?: cp->iosched[IOSCHED_BFQ_SLICE_IDLE_US]) && running &&
                        streq(running, "bfq") && (!current || f->iosched_unknown || disk_facts_iosched(f, "slice_idle_us"));

        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                const IoschedTunableInfo *i = &table[t];
                const char *want = o->iosched[t] ?: cp->iosched[t];
                bool override = o->iosched[t];

                if (!want)
                        continue;
                if (override)
                        iosched_label(o, t, label, sizeof(label));
                else
                        snprintf(label, sizeof(label), "config [Class:%s] IoSched.%s.%s", disk_class_to_string(plan->class),
                                 i->elevator, i->name);
                if (!running || !streq(running, i->elevator)) {
                        if (override && (r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "iosched-elevator",
                                                          "%s=%s elevator=%s -> %s.%s waits: it is written when %s runs",
                                                          label, want, running ?: "unknown",
                                                          i->elevator, i->name, i->elevator)) < 0)
                                return r;
                        continue;
                }
                const IoschedValue *v = current ? disk_facts_iosched(f, i->name) : NULL;
                if (t == IOSCHED_BFQ_SLICE_IDLE && conflict) {
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "iosched-conflict",
                                         "%s=%s bfq.slice_idle_us=%s -> bfq.slice_idle left alone: both set the same "
                                         "value (bfqd->bfq_slice_idle, block/bfq-iosched.c); slice_idle_us wins",
                                         label, want, o->iosched[IOSCHED_BFQ_SLICE_IDLE_US] ?: cp->iosched[IOSCHED_BFQ_SLICE_IDLE_US]);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (current && !f->iosched_unknown && !v) {
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "iosched-missing",
                                         "%s=%s elevator=%s -> %s.%s left alone: this kernel's %s has no queue/iosched/%s", label, want, running, i->elevator, i->name,
                                         i->elevator, i->name);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!(plan->iosched[t] = strdup(want)))
                        return -ENOMEM;
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_PLANNED, "iosched", "elevator=%s%s %s.%s=%s %s=%s -> %s.%s=%s%s", running,
                                 current ? "" : " (planned)", i->elevator, i->name,
                                 v && v->value ? v->value : current ? "unknown" : "default", label, want, i->elevator, i->name, want,
                                 current ? "" : ", written after the switch (a switch starts the elevator from its defaults)");
                if (r < 0)
                        return r;
        }
        if (plan->n_entries == lines && running && streq(running, "none"))
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "iosched-none",
                                    "elevator=none -> no iosched tunables: none has no queue/iosched/");
        if (plan->n_entries == lines)   /* no wish for the running elevator: plan/iosched/ is empty, said why */
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "iosched-none",
                                    "elevator=%s -> iosched tunables left alone: no IoSched.%s.*= setting or policy/iosched/%s/ override",
                                    running ?: "unknown", running ?: "<elevator>", running ?: "<elevator>");
        return 0;
}
