/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "policy-internal.h"
#include "strv.h"

static const char * const disk_class_table[_DISK_CLASS_MAX] = {
        [DISK_CLASS_MANY_HCTX_SLOW]          = "many-hctx-slow",
        [DISK_CLASS_FAST_MULTIQUEUE]         = "fast-multiqueue",
        [DISK_CLASS_SHARED_TAGS]             = "shared-tags",
        [DISK_CLASS_SINGLE_QUEUE_ROTATIONAL] = "single-queue-rotational",
        [DISK_CLASS_SINGLE_QUEUE_FAST]       = "single-queue-fast",
        [DISK_CLASS_STACKED]                 = "stacked",
        [DISK_CLASS_NO_MQ]                   = "no-mq",
        [DISK_CLASS_UNKNOWN]                 = "unknown",
};

const char *disk_class_to_string(DiskClass c) {
        if (c < 0 || c >= _DISK_CLASS_MAX)
                return NULL;
        return disk_class_table[c];
}

DiskClass disk_class_from_string(const char *s) {
        for (DiskClass c = 0; c < _DISK_CLASS_MAX; c++)
                if (streq(disk_class_table[c], s))
                        return c;
        return _DISK_CLASS_INVALID;
}

void policy_config_done(PolicyConfig *config) {
        for (size_t i = 0; i < _DISK_CLASS_MAX; i++)
                config->classes[i].elevators = strv_free(config->classes[i].elevators);
}

void plan_done(Plan *p) {
        free(p->elevator);
        strv_free(p->explain);
        *p = (Plan) {};
}

int plan_explain(Plan *p, const char *fmt, ...) {
        _cleanup_free_ char *line = NULL;
        va_list ap;

        va_start(ap, fmt);
        int r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return strv_extend(&p->explain, line);
}

/*
 * Classification rules, first match wins:
 *   no-mq                    no mq/ directory: bio-based, nothing to tune
 *   stacked                  loop, dm, md: the lower device's queue does the scheduling
 *   unknown                  rotational or the hctx count unknown
 *   many-hctx-slow           rotational and (nr_hw_queues > 1 or shared tags)
 *   shared-tags              non-rotational on a host-wide shared tagset
 *   fast-multiqueue          non-rotational, nr_hw_queues > 1
 *   single-queue-rotational  rotational, one hctx
 *   single-queue-fast        non-rotational, one hctx
 */
static DiskClass classify(const DiskFacts *f) {
        if (!f->has_mq)
                return DISK_CLASS_NO_MQ;
        if (f->stacked)
                return DISK_CLASS_STACKED;
        if (f->rotational == TRISTATE_UNKNOWN || f->n_hctx == 0)
                return DISK_CLASS_UNKNOWN;
        if (f->rotational == TRISTATE_YES)
                return f->n_hctx > 1 || f->shared_tags == TRISTATE_YES ?
                        DISK_CLASS_MANY_HCTX_SLOW : DISK_CLASS_SINGLE_QUEUE_ROTATIONAL;
        if (f->shared_tags == TRISTATE_YES)
                return DISK_CLASS_SHARED_TAGS;
        return f->n_hctx > 1 ? DISK_CLASS_FAST_MULTIQUEUE : DISK_CLASS_SINGLE_QUEUE_FAST;
}

DiskClass policy_classify(const DiskFacts *f, char **ret_reason) {
        DiskClass c = classify(f);

        if (ret_reason) {
                char *s = NULL;
                if (c == DISK_CLASS_NO_MQ) {
                        if (asprintf(&s, "%s: mq=0 -> class %s, never written (rule %s)",
                                     f->name, disk_class_to_string(c), disk_class_to_string(c)) < 0)
                                s = NULL;
                } else if (asprintf(&s, "%s: nr_hw_queues=%zu rotational=%s shared_tags=%s stacked=%d transport=%s driver=%s -> class %s (rule %s)",
                                    f->name, f->n_hctx, tristate_to_string(f->rotational),
                                    tristate_to_string(f->shared_tags), f->stacked,
                                    f->transport ?: "unknown", f->driver ?: "unknown",
                                    disk_class_to_string(c), disk_class_to_string(c)) < 0)
                        s = NULL;
                *ret_reason = s;
        }
        return c;
}

int policy_evaluate(const DiskFacts *facts, const PolicyConfig *config,
                    const PolicyOverrides *overrides, Plan *ret) {
        _cleanup_(plan_done) Plan plan = {};
        _cleanup_free_ char *reason = NULL;
        static const PolicyOverrides no_overrides = {};
        int r;

        if (!overrides)
                overrides = &no_overrides;

        plan.class = policy_classify(facts, &reason);
        if (!reason)
                return -ENOMEM;
        r = strv_extend(&plan.explain, reason);
        if (r < 0)
                return r;

        if (IN_SET_CLASS(plan.class, DISK_CLASS_NO_MQ, DISK_CLASS_UNKNOWN)) {
                if (plan.class == DISK_CLASS_UNKNOWN) {
                        r = plan_explain(&plan, "%s: rotational=%s nr_hw_queues=%zu -> left alone, facts incomplete (rule unknown)",
                                         facts->name, facts->unknown[FACT_ROTATIONAL] ?: tristate_to_string(facts->rotational),
                                         facts->n_hctx);
                        if (r < 0)
                                return r;
                }
                *ret = plan;
                plan = (Plan) {};
                return 0;
        }

        if (overrides->disabled) {
                r = plan_explain(&plan, "%s: policy/enabled=0 -> left alone (rule override)", facts->name);
                if (r < 0)
                        return r;
                *ret = plan;
                plan = (Plan) {};
                return 0;
        }

        plan.manage = true;
        r = policy_elevator(facts, &config->classes[plan.class], overrides, &plan);
        if (r < 0)
                return r;

        *ret = plan;
        plan = (Plan) {};
        return 0;
}
