/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Elevator policy.
 *
 * Kernel background:
 *  - block/elevator.c elevator_set_default(): mq-deadline when nr_hw_queues == 1 or the
 *    tagset is shared (580dca8143d2, 5.13), otherwise none.
 *  - Single-queue elevators (mq-deadline, bfq) set QUEUE_FLAG_SQ_SCHED (4d337cebcb1c,
 *    5.19) and take one queue-wide lock: on a fast many-queue device that lock caps IOPS.
 *  - A queue whose scheduler file reads "none" without brackets cannot take an elevator.
 *  - queue/scheduler lists only registered elevators; writing another name makes the kernel
 *    load "<name>-iosched" (elv_iosched_store() -> request_module()), so an elevator is
 *    available when listed, built in or a module of the running release
 *    (disk_facts_elevator_source()). We never choose one that is none of these.
 *  - Zoned disks before zone write plugging (6.10, dd291d77cc90) order writes by
 *    mq-deadline's zone write locking: mq-deadline is kept or set, overrides included.
 * Decisions are made from the elevator the disk had before blkmqd switched it
 * (PolicyHistory.elevator_before) when blkmqd did: a class that keeps what it finds keeps that
 * one, so taking an override back ("auto") puts it back; explain shows what the kernel has.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "memstream.h"
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
                if (streq(*e, cur) && !streq_ptr(cur, f->elevator))     /* what the kernel has now, and the one found */
                        r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "elevator-evidence",
                                         "class=%s elevator=%s (%s before blkmqd switched it) -> %s not wanted here: %s",
                                         cls, f->elevator, *e, *e, why);
                else if (streq(*e, cur))
                        r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "elevator-evidence",
                                         "class=%s elevator=%s -> not wanted here: %s",
                                         cls, *e, why);
                else if (!set)
                        r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "elevator-evidence",
                                         "class=%s offered=%s -> not chosen: %s",
                                         cls, *e, why);
                else
                        continue;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* "none,mq-deadline,bfq(module),kyber(built in)": what this disk can take, listed ones first. NULL on ENOMEM. */
static char *available_list(const DiskFacts *f) {
        _cleanup_(memstream_done) MemStream m = {};
        FILE *out = memstream_open(&m);
        if (!out)
                return NULL;
        const char *sep = "";
        STRV_FOREACH(e, f->elevators) {
                fprintf(out, "%s%s", sep, *e);
                sep = ",";
        }
        char **lists[] = { f->elevators_builtin, f->elevators_loadable };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                STRV_FOREACH(e, lists[i]) {
                        ElevatorSource src = disk_facts_elevator_source(f, *e);
                        if (src != ELEVATOR_BUILTIN && src != ELEVATOR_LOADABLE)
                                continue;
                        fprintf(out, "%s%s(%s)", sep, *e, src == ELEVATOR_BUILTIN ? "built in" : "module");
                        sep = ",";
                }
        return memstream_close_text(&m);
}

/* plan->elevator = name. Returns 0 or -ENOMEM. */
static int plan_set(Plan *plan, const char *name) {
        plan->elevator = strdup(name);
        if (!plan->elevator)
                return -ENOMEM;
        return 0;
}

/* When the planned elevator is not listed, one more line says where it comes from. */
static int explain_source(const DiskFacts *f, Plan *plan) {
        ElevatorSource src = disk_facts_elevator_source(f, plan->elevator);
        if (!plan->elevator || src == ELEVATOR_LISTED || src == ELEVATOR_UNAVAILABLE)
                return 0;
        return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "elevator-available",
                            "elevator=%s not listed in queue/scheduler -> available: %s%s%s",
                            plan->elevator, elevator_source_to_string(src),
                            f->kernel_release ? ", release " : "", strempty(f->kernel_release));
}

/* The elevator the class keeps is the one blkmqd found: "kept" when the disk still has it,
 * "restored" when blkmqd switched away from it (the switch is undone). */
static const char *kept_or_restored(const DiskFacts *f, const char *base) {
        return streq(base, f->elevator) ? "kept" : "restored";
}

/* Zoned disk on a kernel without zone write plugging: mq-deadline is never taken away. */
static int policy_elevator_zoned(const DiskFacts *f, const PolicyHistory *h, const PolicyOverrides *o, Plan *plan,
                                 const char *why) {
        const char *z = zoned_to_string(f->zoned), *kernel = f->kernel_release ?: "unknown";
        int r;

        if (o->elevator && !streq(o->elevator, "mq-deadline")) {
                r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "elevator-zoned",
                                 "%s=%s zoned=%s kernel=%s -> override not applied: %s",
                                 override_label(o, KNOB_ELEVATOR), o->elevator, z, kernel, why);
                if (r < 0)
                        return r;
        }
        if (streq(f->elevator, "mq-deadline") && h->elevator_before && !streq(h->elevator_before, "mq-deadline")) {
                /* blkmqd switched to it: not kept (the switch stays) */
                r = plan_set(plan, "mq-deadline");
                if (r < 0)
                        return r;
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, "elevator-zoned",
                                    "zoned=%s kernel=%s elevator=mq-deadline (%s before blkmqd switched it) -> elevator=mq-deadline: %s",
                                    z, kernel, h->elevator_before, why);
        }
        if (streq(f->elevator, "mq-deadline")) {
                r = plan_set(plan, "mq-deadline");
                if (r < 0)
                        return r;
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, "elevator-zoned",
                                    "zoned=%s kernel=%s elevator=mq-deadline -> elevator=mq-deadline, kept: %s",
                                    z, kernel, why);
        }
        if (disk_facts_elevator_source(f, "mq-deadline") == ELEVATOR_UNAVAILABLE)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_LEFT_ALONE, "elevator-zoned",
                                    "zoned=%s kernel=%s elevator=%s -> elevator left alone: mq-deadline is needed (%s) but neither listed, built in nor loadable",
                                    z, kernel, f->elevator, why);
        r = plan_set(plan, "mq-deadline");
        if (r < 0)
                return r;
        r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, "elevator-zoned",
                         "zoned=%s kernel=%s elevator=%s -> elevator=mq-deadline: %s",
                         z, kernel, f->elevator, why);
        return r < 0 ? r : explain_source(f, plan);
}

int policy_elevator(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan) {
        assert(h);
        assert(o);
        assert(plan);
        _cleanup_free_ char *available = NULL, *wanted = NULL, *shown = NULL;
        const char *cls = disk_class_to_string(plan->class), *zwhy;
        /* what the disk had before blkmqd switched it (decisions), and what it has (shown) */
        const char *base = h->elevator_before && strv_contains(f->elevators, h->elevator_before) ?
                           h->elevator_before : f->elevator;
        int r;

        if (!f->elevator_configurable || !f->elevator) {
                const char *why = f->unknown[FACT_ELEVATOR] ?: "queue/scheduler reads \"none\" without brackets";
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_LEFT_ALONE, "elevator-not-configurable",
                                    "elevator unknown or not configurable (%s) -> elevator left alone", why);
        }

        if (disk_facts_zoned_needs_deadline(f, &zwhy))
                return policy_elevator_zoned(f, h, o, plan, zwhy);

        available = available_list(f);
        if (!available)
                return -ENOMEM;
        if (!streq(base, f->elevator) ? asprintf(&shown, "%s (%s before blkmqd switched it)", f->elevator, base) < 0 :
            !(shown = strdup(f->elevator)))
                return -ENOMEM;

        if (override_keeps(o, KNOB_ELEVATOR)) {
                /* as the class's Elevator=keep: the elevator blkmqd found (its switch undone) */
                r = plan_set(plan, base);
                if (r < 0)
                        return r;
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, RULE_OF_ORIGIN(o, KNOB_ELEVATOR),
                                    "%s=keep elevator=%s -> elevator=%s, %s", override_label(o, KNOB_ELEVATOR), shown, base,
                                    kept_or_restored(f, base));
        }
        if (o->elevator) {
                if (disk_facts_elevator_source(f, o->elevator) == ELEVATOR_UNAVAILABLE) {
                        const char *blocked = disk_facts_elevator_blocked(f, o->elevator);
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_LEFT_ALONE,
                                            RULE_OF_ORIGIN(o, KNOB_ELEVATOR),
                                            "%s=%s available=%s -> elevator left alone, override not offered by the device%s%s",
                                            override_label(o, KNOB_ELEVATOR), o->elevator, available,
                                            blocked ? ": its module is kept from loading: " : "", strempty(blocked));
                }
                r = plan_set(plan, o->elevator);
                /* "kept" only when the disk had it before blkmqd: one blkmqd switched to is not
                 * kept, it is the switch (shown says from what), and the one blkmqd found is
                 * put back */
                if (r >= 0)
                        r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED,
                                         RULE_OF_ORIGIN(o, KNOB_ELEVATOR), "%s=%s elevator=%s -> elevator=%s%s",
                                         override_label(o, KNOB_ELEVATOR), o->elevator, shown, o->elevator,
                                         !streq(o->elevator, f->elevator) ? "" :
                                         streq(base, f->elevator) ? ", kept" : "");
                return r < 0 ? r : explain_source(f, plan);
        }

        if (!cp->elevators) {
                r = plan_set(plan, base);
                if (r < 0)
                        return r;
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, RULE_OF_CLASS("elevator", cls),
                                    "class=%s elevator=%s -> elevator=%s, %s: any elevator is fine for this class",
                                    cls, shown, base, kept_or_restored(f, base));
        }

        wanted = strv_join(cp->elevators, ",");
        if (!wanted)
                return -ENOMEM;

        /* queue/zoned unreadable, or a model this code does not know, on a kernel that may
         * predate zone write plugging: a disk found under mq-deadline may be zoned and rely on
         * it, so it is not taken away; nothing is switched to it either. (Absent: every kernel
         * with blk-mq elevators has the file; a tree without it says nothing about zones.) */
        if (!strv_contains(cp->elevators, base) && streq(base, "mq-deadline") && f->unknown[FACT_ZONED] && f->zoned_unreadable &&
            kernel_release_at_least(f->kernel_release, 6, 10) != TRISTATE_YES) {
                r = plan_set(plan, base);
                if (r < 0)
                        return r;
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, "elevator-zoned-unknown",
                                    "class=%s elevator=%s wanted=%s zoned=unknown (%s) kernel=%s -> elevator=mq-deadline, %s: "
                                    "a zoned disk needs it before zone write plugging (6.10, dd291d77cc90) and this one may be zoned",
                                    cls, shown, wanted, f->unknown[FACT_ZONED], f->kernel_release ?: "unknown",
                                    kept_or_restored(f, base));
        }

        if (strv_contains(cp->elevators, base)) {
                r = plan_set(plan, base);
                if (r < 0)
                        return r;
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, RULE_OF_CLASS("elevator", cls),
                                    "class=%s elevator=%s wanted=%s -> elevator=%s, %s", cls, shown, wanted, base,
                                    kept_or_restored(f, base));
        }

        /* the current elevator is not wanted: the first wanted one the disk can take, then why */
        const char *e_set = NULL;
        STRV_FOREACH(e, cp->elevators)
                if (disk_facts_elevator_source(f, *e) != ELEVATOR_UNAVAILABLE) {
                        e_set = *e;
                        break;
                }
        if (e_set) {
                r = plan_set(plan, e_set);
                if (r >= 0)
                        r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_PLANNED, RULE_OF_CLASS("elevator", cls),
                                         "class=%s elevator=%s wanted=%s available=%s -> elevator=%s",
                                         cls, shown, wanted, available, e_set);
                if (r >= 0)
                        r = explain_source(f, plan);
        } else {
                /* a wanted elevator whose module exists but is kept from loading: say by what */
                STRV_FOREACH(e, cp->elevators) {
                        const char *blocked = disk_facts_elevator_blocked(f, *e);
                        if (blocked && (r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "elevator-available",
                                                         "elevator=%s wanted by class=%s -> not available: its module is kept from loading: %s",
                                                         *e, cls, blocked)) < 0)
                                return r;
                }
                r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_LEFT_ALONE, RULE_OF_CLASS("elevator", cls),
                                 "class=%s elevator=%s wanted=%s available=%s -> elevator left alone, none of the wanted elevators is offered",
                                 cls, shown, wanted, available);
        }
        if (r < 0)
                return r;
        return explain_evidence(f, plan, base, e_set);
}
