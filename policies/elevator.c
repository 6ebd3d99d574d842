/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Elevator policy.
 *
 * Kernel background (see ../shared/docs/KERNEL-FACTS.md §3, §7):
 *  - block/elevator.c elevator_set_default(): mq-deadline when nr_hw_queues == 1 or the
 *    tagset is shared (580dca8143d2, 5.13), otherwise none.
 *  - Single-queue elevators (mq-deadline, bfq) set QUEUE_FLAG_SQ_SCHED (4d337cebcb1c,
 *    5.19) and take one queue-wide lock: on a fast many-queue device that lock caps IOPS.
 *  - A queue whose scheduler file reads "none" without brackets cannot take an elevator.
 * We never choose an elevator the device does not list in queue/scheduler.
 * Decisions are made from the elevator the disk had before blkmqd switched it
 * (DiskFacts.elevator_before) when blkmqd did: a class that keeps what it finds keeps that
 * one, so taking an override back ("auto") puts it back; explain shows what the kernel has.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "policy-internal.h"
#include "strv.h"

/*
 * After a decision that moves away from (or cannot replace) the current elevator: one line per
 * offered elevator the shipped defaults leave out of this class on purpose, with the evidence
 * (policies/defaults.c). cur: the elevator decided from (the one blkmqd found); set: the
 * elevator the plan sets, NULL when left alone.
 */
static int explain_evidence(const DiskFacts *f, Plan *plan, const char *cur, const char *set) {
        const char *cls = disk_class_to_string(plan->class);
        STRV_FOREACH(e, f->elevators) {
                const char *why = policy_elevator_evidence(plan->class, *e);
                int r;
                if (!why)
                        continue;
                if (streq(*e, cur))
                        r = plan_explain(plan, "%s: class=%s elevator=%s -> not wanted here: %s (rule elevator-evidence)",
                                         f->name, cls, *e, why);
                else if (!set)
                        r = plan_explain(plan, "%s: class=%s offered=%s -> not chosen: %s (rule elevator-evidence)",
                                         f->name, cls, *e, why);
                else
                        continue;
                if (r < 0)
                        return r;
        }
        return 0;
}

int policy_elevator(const DiskFacts *f, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan) {
        _cleanup_free_ char *available = NULL, *wanted = NULL, *shown = NULL;
        const char *cls = disk_class_to_string(plan->class);
        /* what the disk had before blkmqd switched it (decisions), and what it has (shown) */
        const char *base = f->elevator_before && strv_contains(f->elevators, f->elevator_before) ?
                           f->elevator_before : f->elevator;

        if (!f->elevator_configurable || !f->elevator) {
                const char *why = f->unknown[FACT_ELEVATOR] ?: "queue/scheduler reads \"none\" without brackets";
                return plan_explain(plan, "%s: elevator unknown or not configurable (%s) -> elevator left alone (rule elevator-not-configurable)",
                                    f->name, why);
        }

        available = strv_join(f->elevators, ",");
        if (!available)
                return -ENOMEM;
        if (!streq(base, f->elevator) ? asprintf(&shown, "%s (%s before blkmqd switched it)", f->elevator, base) < 0 :
            !(shown = strdup(f->elevator)))
                return -ENOMEM;

        if (o->elevator) {
                if (!strv_contains(f->elevators, o->elevator))
                        return plan_explain(plan, "%s: %s=%s available=%s -> elevator left alone, override not offered by the device (rule %s)",
                                            f->name, override_label(o, KNOB_ELEVATOR), o->elevator, available,
                                            o->origin[KNOB_ELEVATOR] ? "config" : "override");
                plan->elevator = strdup(o->elevator);
                if (!plan->elevator)
                        return -ENOMEM;
                return plan_explain(plan, "%s: %s=%s elevator=%s -> elevator=%s%s (rule %s)",
                                    f->name, override_label(o, KNOB_ELEVATOR), o->elevator, shown, o->elevator,
                                    streq(o->elevator, f->elevator) ? ", kept" : "",
                                    o->origin[KNOB_ELEVATOR] ? "config" : "override");
        }

        if (!cp->elevators) {
                plan->elevator = strdup(base);
                if (!plan->elevator)
                        return -ENOMEM;
                return plan_explain(plan, "%s: class=%s elevator=%s -> elevator=%s, kept: any elevator is fine for this class (rule elevator-%s)",
                                    f->name, cls, shown, base, cls);
        }

        wanted = strv_join(cp->elevators, ",");
        if (!wanted)
                return -ENOMEM;

        if (strv_contains(cp->elevators, base)) {
                plan->elevator = strdup(base);
                if (!plan->elevator)
                        return -ENOMEM;
                return plan_explain(plan, "%s: class=%s elevator=%s wanted=%s -> elevator=%s, kept (rule elevator-%s)",
                                    f->name, cls, shown, wanted, base, cls);
        }

        /* the current elevator is not wanted: the decision, then why (when the defaults leave it out on purpose) */
        const char *e_set = NULL;
        int r;
        STRV_FOREACH(e, cp->elevators)
                if (strv_contains(f->elevators, *e)) {
                        e_set = *e;
                        break;
                }
        if (e_set) {
                plan->elevator = strdup(e_set);
                if (!plan->elevator)
                        return -ENOMEM;
                r = plan_explain(plan, "%s: class=%s elevator=%s wanted=%s available=%s -> elevator=%s (rule elevator-%s)",
                                 f->name, cls, shown, wanted, available, e_set, cls);
        } else
                r = plan_explain(plan, "%s: class=%s elevator=%s wanted=%s available=%s -> elevator left alone, none of the wanted elevators is offered (rule elevator-%s)",
                                 f->name, cls, shown, wanted, available, cls);
        if (r < 0)
                return r;
        return explain_evidence(f, plan, base, e_set);
}
