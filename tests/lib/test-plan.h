/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Plan checks shared by the unit and fixture tests (header only, like tap.h):
 *
 *   test_check_plan_entries(disk, plan)   every entry's fields agree with its line and the plan
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "policy.h"
#include "tap.h"

/*
 * The fields of every plan entry agree with its line and with the plan: the line is
 * "<disk>: <body>[ (rule <rule>)]" with body pointing past "<disk>: "; a knob the plan
 * wants a value for has a deciding entry (planned), and the last deciding entry of a knob
 * says planned exactly when the plan has a value (issue 17: consumers read the fields); every
 * knob of a managed disk has a deciding entry with a rule, also when it is left alone.
 */
static inline void test_check_plan_entries(const char *disk, const Plan *p) {
        PLAN_FOREACH_ENTRY(e, p) {
                size_t nl = strlen(disk), tl = strlen(e->text);
                tap_checks++;
                if (!startswith(e->text, disk) || e->text[nl] != ':' || e->text[nl + 1] != ' ' || e->body != e->text + nl + 2)
                        TAP_FAIL("%s: entry body does not follow \"<disk>: \": %s", disk, e->text);
                _cleanup_free_ char *suffix = NULL;
                if (e->rule && asprintf(&suffix, " (rule %s)", e->rule) < 0)
                        abort();
                tap_checks++;
                if (e->rule ? (tl < strlen(suffix) || !streq(e->text + tl - strlen(suffix), suffix)) : !!strstr(e->text, "(rule "))
                        TAP_FAIL("%s: entry rule %s does not end its line: %s", disk, strna(e->rule), e->text);
                tap_checks++;
                if (!plan_outcome_to_string(e->outcome) || e->knobs >= KNOB_BIT(_KNOB_MAX))
                        TAP_FAIL("%s: entry outcome %d knobs %#x out of range: %s", disk, e->outcome, e->knobs, e->text);
        }
        for (Knob k = 0; p->manage && k < _KNOB_MAX; k++) {
                const PlanEntry *e = plan_decision(p, k);
                tap_checks++;
                if (plan_get(p, k) && (!e || e->outcome != PLAN_OUTCOME_PLANNED))
                        TAP_FAIL("%s: %s=%s planned, but its last deciding entry is %s", disk, knob_to_string(k),
                                 plan_get(p, k), e ? e->text : "(none)");
                else if (!plan_get(p, k) && e && e->outcome == PLAN_OUTCOME_PLANNED)
                        TAP_FAIL("%s: %s not planned, but its last deciding entry says %s: %s", disk,
                                 knob_to_string(k), plan_outcome_to_string(e->outcome), e->text);
                /* one line per decision (README): a managed disk's plan/<knob> "keep" is
                 * explained too, by a rule (nr_requests had none when left alone) */
                tap_checks++;
                if (!e || !e->rule)
                        TAP_FAIL("%s: %s has no deciding entry with a rule (plan/%s reads %s)", disk, knob_to_string(k),
                                 knob_to_string(k), plan_get(p, k) ?: "keep");
        }
}
