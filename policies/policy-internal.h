/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Shared between the policy areas (one file per knob); not a public interface. */

#include "policy.h"

#define IN_SET_CLASS(x, a, b) ((x) == (a) || (x) == (b))

/* Append one printf-formatted explanation line to the plan. Returns 0 or -ENOMEM. */
int plan_explain(Plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Elevator area (policies/elevator.c): sets plan->elevator and explains. 0 or -ENOMEM. */
int policy_elevator(const DiskFacts *f, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);

/* rq_affinity (policies/rq-affinity.c), nr_requests and irq_affinity (policies/irq-affinity.c). 0 or -ENOMEM. */
int policy_rq_affinity(const DiskFacts *f, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);
int policy_nr_requests(const DiskFacts *f, const PolicyOverrides *o, Plan *plan);
int policy_irq_affinity(const DiskFacts *f, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan);

/* "policy/<knob>" for an admin override, else where the config set it. */
static inline const char *override_label(const PolicyOverrides *o, Knob k, const char *admin) {
        return o->origin[k] ?: admin;
}
