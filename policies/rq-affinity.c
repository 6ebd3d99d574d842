/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rq_affinity (block/blk-sysfs.c queue_rq_affinity_store(); KERNEL-FACTS.md §5):
 *   0  complete wherever the IRQ arrived
 *   1  IPI to the submitter's cache group when the IRQ CPU does not share its cache (default)
 *   2  always complete on the submitting CPU (SAME_FORCE)
 * 2 cured a host hang on one HBA and capped IOPS on another, so it is a per-class,
 * overridable decision; the shipped classes keep the kernel default.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "policy-internal.h"

int policy_rq_affinity(const DiskFacts *f, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan) {
        const char *cls = disk_class_to_string(plan->class);
        char want[16];

        if (!disk_facts_known(f, FACT_RQ_AFFINITY))
                return plan_explain(plan, "%s: rq_affinity unknown (%s) -> rq_affinity left alone (rule rq-affinity-unknown)",
                                    f->name, f->unknown[FACT_RQ_AFFINITY]);

        if (o->rq_affinity) {
                plan->rq_affinity = strdup(o->rq_affinity);
                if (!plan->rq_affinity)
                        return -ENOMEM;
                return plan_explain(plan, "%s: %s=%s rq_affinity=%d -> rq_affinity=%s (rule %s)",
                                    f->name, override_label(o, KNOB_RQ_AFFINITY), o->rq_affinity,
                                    f->rq_affinity, o->rq_affinity, o->origin[KNOB_RQ_AFFINITY] ? "config" : "override");
        }

        if (cp->rq_affinity < 0)
                return plan_explain(plan, "%s: class=%s rq_affinity=%d -> rq_affinity left alone: no class setting, 1 is the kernel default; "
                                    "2 only pays where remote completions are measured high (rule rq-affinity-%s)",
                                    f->name, cls, f->rq_affinity, cls);

        snprintf(want, sizeof(want), "%d", cp->rq_affinity);
        plan->rq_affinity = strdup(want);
        if (!plan->rq_affinity)
                return -ENOMEM;
        return plan_explain(plan, "%s: class=%s rq_affinity=%d -> rq_affinity=%s%s (rule rq-affinity-%s)",
                            f->name, cls, f->rq_affinity, want, f->rq_affinity == cp->rq_affinity ? ", kept" : "", cls);
}

/*
 * nr_requests has no automatic policy: the kernel sizes it from the tag set
 * (2 * min(queue_depth, 128) with an elevator, blk_mq_init_sched()). Only overrides set it.
 */
int policy_nr_requests(const DiskFacts *f, const PolicyOverrides *o, Plan *plan) {
        if (!o->nr_requests)
                return 0;
        plan->nr_requests = strdup(o->nr_requests);
        if (!plan->nr_requests)
                return -ENOMEM;
        if (disk_facts_known(f, FACT_NR_REQUESTS))
                return plan_explain(plan, "%s: %s=%s nr_requests=%" PRIi64 " -> nr_requests=%s (rule %s)",
                                    f->name, override_label(o, KNOB_NR_REQUESTS), o->nr_requests,
                                    f->nr_requests, o->nr_requests, o->origin[KNOB_NR_REQUESTS] ? "config" : "override");
        return plan_explain(plan, "%s: %s=%s -> nr_requests=%s (rule %s)",
                            f->name, override_label(o, KNOB_NR_REQUESTS), o->nr_requests,
                            o->nr_requests, o->origin[KNOB_NR_REQUESTS] ? "config" : "override");
}
