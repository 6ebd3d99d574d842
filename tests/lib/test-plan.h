/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Plan checks shared by the unit and fixture tests (header only, like tap.h):
 *
 *   test_check_plan_entries(disk, plan)   every entry's fields agree with its line and the plan
 *   test_policy_config_init(c, virt, trust)  the shipped defaults as the suites run them
 *   test_evaluate_as_manager(d, mods, config, o)  d's plan with the history the manager gives
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply.h"
#include "macro.h"
#include "modules.h"
#include "policy.h"
#include "strv.h"
#include "tap.h"

/*
 * d's plan as the manager evaluates it (manager/pipeline.c evaluate_policy()), d->facts just
 * gathered: with the history apply_history() takes from d's records (Reassert=no), d->facts'
 * IRQ map made with it (disk_facts_remap_irqs(): a gather maps without it) and what mods (NULL:
 * none) gave this boot (modules_history()). d->plan is replaced. Returns policy_evaluate()'s
 * (0 or -ENOMEM).
 */
static inline int test_evaluate_as_manager(Device *d, const Modules *mods, const PolicyConfig *config,
                                           const PolicyOverrides *o) {
        PolicyHistory history = POLICY_HISTORY_INIT;
        int r = apply_history(d, /* reassert = */ false, &history);
        if (r >= 0)
                r = disk_facts_remap_irqs(d->facts, NULL, &history);
        if (mods)
                modules_history(mods, &history);
        plan_done(&d->plan);
        if (r >= 0)
                r = policy_evaluate(d->facts, &history, config, o, &d->plan);
        policy_history_done(&history);
        return r;
}

/*
 * policy_config_init_defaults(), then what the suites opt in (docs/TESTING.md "Virtual devices
 * in the suites", "Speed in the suites"): virtual devices when manage_virtual, and the
 * rotational flag of the drivers in trust (space-separated globs, as [Speed] TrustRotational=
 * takes them; "*" every disk, NULL none). Returns 0 or -ENOMEM.
 */
static inline int test_policy_config_init(PolicyConfig *c, bool manage_virtual, const char *trust) {
        int r = policy_config_init_defaults(c);
        if (r < 0)
                return r;
        c->manage_virtual = manage_virtual;
        for (const char *p = trust; p && *p;) {
                size_t l = strcspn(p, " ");
                char word[64];
                snprintf(word, sizeof(word), "%.*s", (int) l, p);
                if (l > 0 && strv_extend(&c->speed.trust_rotational, word) < 0)
                        return -ENOMEM;
                p += l + (p[l] == ' ');
        }
        return 0;
}

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
