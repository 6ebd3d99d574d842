/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rq_affinity (block/blk-sysfs.c queue_rq_affinity_store(); its effect in block/blk-mq.c
 * blk_mq_complete_need_ipi()):
 *   0  complete wherever the IRQ arrived
 *   1  IPI to the submitter's cache group when the IRQ CPU does not share its cache (default)
 *   2  always complete on the submitting CPU (SAME_FORCE)
 * 2 cured a host hang on one HBA and capped IOPS on another, so it is a per-class,
 * overridable decision; the shipped classes keep the kernel default.
 *
 * Under forced IRQ threading (a PREEMPT_RT kernel, or threadirqs) blk_mq_complete_need_ipi()
 * (block/blk-mq.c) returns false whatever rq_affinity is: no completion is sent to the
 * submitting CPU ("blk-mq: Don't complete on a remote CPU in force threaded mode", Sebastian
 * Andrzej Siewior, 5.11-rc1 by block-5.11-2020-12-23; before it the RT patch set's "block/mq:
 * don't complete requests via IPI" did the same on PREEMPT_RT). The class's rq_affinity is not
 * written there: it would change nothing the kernel does. An admin's explicit value still is,
 * and its explain line says the kernel does not act on it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "parse.h"
#include "policy-internal.h"

bool rq_affinity_ignored(const DiskFacts *f) {
        assert(f);
        if (f->kernel.irq_threads_forced != TRISTATE_YES)
                return false;
        return f->kernel.preempt_rt == TRISTATE_YES || kernel_release_at_least(f->kernel_release, 5, 11) != TRISTATE_NO;
}

#define RQ_AFFINITY_IGNORED_WHY \
        "the kernel does not act on rq_affinity: forced IRQ threading (%s) makes blk_mq_complete_need_ipi() " \
        "return false whatever it is (block/blk-mq.c, \"blk-mq: Don't complete on a remote CPU in force threaded mode\", " \
        "5.11), so completions run where the interrupt thread runs"

int policy_rq_affinity(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan) {
        assert(h);
        assert(cp);
        const char *cls = disk_class_to_string(plan->class);
        char want[16];

        if (!disk_facts_known(f, FACT_RQ_AFFINITY))
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, "rq-affinity-unknown",
                                    "rq_affinity unknown (%s) -> rq_affinity left alone", f->unknown[FACT_RQ_AFFINITY]);

        /* blkmqd wrote the value the disk has (an override, or one taken back): the class
         * decides from the one blkmqd found, and a plan without a wish puts it back
         * (apply/apply.c queue_knob_no_wish()): that is no "left alone" and no "kept" */
        bool wrote = h->rq_affinity_before >= 0 && h->rq_affinity_before != f->rq_affinity;
        char before[48] = "";
        if (wrote)
                snprintf(before, sizeof(before), " (%d before blkmqd wrote it)", h->rq_affinity_before);

        bool ignored = rq_affinity_ignored(f);
        if (ignored && !o->rq_affinity) {
                char wish[48] = "no class setting";
                if (cp->rq_affinity >= 0)
                        snprintf(wish, sizeof(wish), "the class's %d not written", cp->rq_affinity);
                char undone[80] = "";
                if (wrote)
                        snprintf(undone, sizeof(undone), ", blkmqd's write undone: rq_affinity=%d restored", h->rq_affinity_before);
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE,
                                    "rq-affinity-forced-threading",
                                    "class=%s rq_affinity=%d%s -> rq_affinity left alone (%s)%s; " RQ_AFFINITY_IGNORED_WHY,
                                    cls, f->rq_affinity, before, wish, undone, f->kernel.irq_threads_source);
        }
        if (override_keeps(o, KNOB_RQ_AFFINITY)) {
                if (wrote)
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE,
                                            RULE_OF_ORIGIN(o, KNOB_RQ_AFFINITY),
                                            "%s=keep rq_affinity=%d%s -> no wish, blkmqd's write undone: rq_affinity=%d restored",
                                            override_label(o, KNOB_RQ_AFFINITY), f->rq_affinity, before, h->rq_affinity_before);
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, RULE_OF_ORIGIN(o, KNOB_RQ_AFFINITY),
                                    "%s=keep rq_affinity=%d -> rq_affinity left alone", override_label(o, KNOB_RQ_AFFINITY),
                                    f->rq_affinity);
        }
        if (o->rq_affinity) {
                plan->rq_affinity = strdup(o->rq_affinity);
                if (!plan->rq_affinity)
                        return -ENOMEM;
                if (ignored)
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_PLANNED,
                                            RULE_OF_ORIGIN(o, KNOB_RQ_AFFINITY),
                                            "%s=%s rq_affinity=%d%s -> rq_affinity=%s, as asked; " RQ_AFFINITY_IGNORED_WHY,
                                            override_label(o, KNOB_RQ_AFFINITY), o->rq_affinity, f->rq_affinity, before,
                                            o->rq_affinity, f->kernel.irq_threads_source);
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_PLANNED, RULE_OF_ORIGIN(o, KNOB_RQ_AFFINITY),
                                    "%s=%s rq_affinity=%d%s -> rq_affinity=%s", override_label(o, KNOB_RQ_AFFINITY), o->rq_affinity,
                                    f->rq_affinity, before, o->rq_affinity);
        }

        if (cp->rq_affinity < 0 && wrote)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, RULE_OF_CLASS("rq-affinity", cls),
                                    "class=%s rq_affinity=%d (%d before blkmqd wrote it) -> no wish, blkmqd's write undone: "
                                    "rq_affinity=%d restored (no class setting, 1 is the kernel default)", cls, f->rq_affinity, h->rq_affinity_before,
                                    h->rq_affinity_before);
        if (cp->rq_affinity < 0)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, RULE_OF_CLASS("rq-affinity", cls),
                                    "class=%s rq_affinity=%d -> rq_affinity left alone: no class setting, 1 is the kernel default; "
                                    "2 only pays where remote completions are measured high", cls, f->rq_affinity);

        snprintf(want, sizeof(want), "%d", cp->rq_affinity);
        plan->rq_affinity = strdup(want);
        if (!plan->rq_affinity)
                return -ENOMEM;
        if (wrote)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_PLANNED, RULE_OF_CLASS("rq-affinity", cls),
                                    "class=%s rq_affinity=%d (%d before blkmqd wrote it) -> rq_affinity=%s%s",
                                    cls, f->rq_affinity, h->rq_affinity_before, want,
                                    h->rq_affinity_before == cp->rq_affinity ? ", restored" : "");
        return plan_explain(plan, f->name, KNOB_BIT(KNOB_RQ_AFFINITY), PLAN_OUTCOME_PLANNED, RULE_OF_CLASS("rq-affinity", cls),
                            "class=%s rq_affinity=%d -> rq_affinity=%s%s",
                            cls, f->rq_affinity, want, f->rq_affinity == cp->rq_affinity ? ", kept" : "");
}

/*
 * nr_requests has no automatic policy: the kernel sizes it from the tag set
 * (2 * min(queue_depth, 128) with an elevator, blk_mq_init_sched(); the tag set depth
 * without one). Only overrides set it. An elevator switch resets it to the new elevator's
 * default (blk_mq_init_sched(), block/blk-mq-sched.c), so a switch blkmqd plans or made is explained here; an
 * override is written after the switch, within what the new elevator accepts.
 */
int policy_nr_requests(const DiskFacts *f, const PolicyHistory *h, const PolicyOverrides *o, Plan *plan) {
        assert(f);
        const char *target = policy_target_elevator(f, h, plan);
        bool planned_switch = target && f->elevator && !streq(target, f->elevator);
        bool made_switch = !planned_switch && h->elevator_before && f->elevator && !streq(h->elevator_before, f->elevator);
        char now[32] = "unknown";

        if (disk_facts_known(f, FACT_NR_REQUESTS))
                snprintf(now, sizeof(now), "%" PRIi64, f->nr_requests);

        bool keep = override_keeps(o, KNOB_NR_REQUESTS);
        if (!o->nr_requests || keep) {
                if (planned_switch)
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_LEFT_ALONE,
                                            "nr-requests-elevator-switch",
                                            "nr_requests=%s elevator %s -> %s: the switch resets nr_requests to %s's default; "
                                            "no override, so it is not written (the value comes back when the elevator is restored)",
                                            now, f->elevator, target, target);
                if (made_switch)
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_LEFT_ALONE,
                                            "nr-requests-elevator-switch",
                                            "nr_requests=%s: reset by the kernel when blkmqd switched the elevator %s -> %s; "
                                            "no override, so it is not written (the value before comes back when the elevator is restored)",
                                            now, h->elevator_before, f->elevator);
                if (h->nr_requests_before >= 0 && h->nr_requests_before != f->nr_requests)
                        /* the override that made blkmqd write it was taken back: its write is
                         * undone (apply/apply.c queue_knob_no_wish()), nothing is kept */
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_LEFT_ALONE,
                                            "nr-requests-no-override",
                                            "nr_requests=%s (%" PRIi64 " before blkmqd wrote it) -> no wish, blkmqd's write undone: "
                                            "nr_requests=%" PRIi64 " restored (no override; the kernel sizes it from the tag set and the elevator)",
                                            now, h->nr_requests_before, h->nr_requests_before);
                if (keep)
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_LEFT_ALONE,
                                            RULE_OF_ORIGIN(o, KNOB_NR_REQUESTS), "%s=keep nr_requests=%s -> nr_requests left alone",
                                            override_label(o, KNOB_NR_REQUESTS), now);
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_LEFT_ALONE, "nr-requests-no-override",
                                    "nr_requests=%s -> nr_requests left alone: no override (policy/nr_requests or NrRequests=); "
                                    "the kernel sizes it from the tag set and the elevator", now);
        }

        uint64_t want, min, max;
        if (parse_u64(o->nr_requests, &want) < 0)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_LEFT_ALONE,
                                    RULE_OF_ORIGIN(o, KNOB_NR_REQUESTS), "%s=%s -> nr_requests left alone: not a number",
                                    override_label(o, KNOB_NR_REQUESTS), o->nr_requests);
        nr_requests_limits(f, target, &min, &max);
        uint64_t v = want < min ? min : want > max ? max : want;
        if (asprintf(&plan->nr_requests, "%" PRIu64, v) < 0) {
                plan->nr_requests = NULL;
                return -ENOMEM;
        }
        char capped[160] = "";
        if (v != want)
                snprintf(capped, sizeof(capped), ", %s: the kernel takes %" PRIu64 "..%" PRIu64 " with elevator %s",
                         want > max ? "capped" : "raised", min, max, strna(target));
        char after[96] = "";
        if (planned_switch || made_switch)
                snprintf(after, sizeof(after), ", written after the elevator switch %s -> %s (which resets it)",
                         planned_switch ? f->elevator : h->elevator_before, planned_switch ? target : f->elevator);
        /* blkmqd wrote the value the disk has (not an elevator switch's reset: that is said in after) */
        char before[48] = "";
        if (!planned_switch && !made_switch && h->nr_requests_before >= 0 && h->nr_requests_before != f->nr_requests)
                snprintf(before, sizeof(before), " (%" PRIi64 " before blkmqd wrote it)", h->nr_requests_before);
        return plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_REQUESTS), PLAN_OUTCOME_PLANNED, RULE_OF_ORIGIN(o, KNOB_NR_REQUESTS),
                            "%s=%s nr_requests=%s%s -> nr_requests=%" PRIu64 "%s%s",
                            override_label(o, KNOB_NR_REQUESTS), o->nr_requests, now, before, v, capped, after);
}
