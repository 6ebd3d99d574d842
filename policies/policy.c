/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
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
        [DISK_CLASS_MULTIPATH_LEG]           = "multipath-leg",
        [DISK_CLASS_NO_MQ]                   = "no-mq",
        [DISK_CLASS_UNKNOWN]                 = "unknown",
};

DEFINE_STRING_TABLE_LOOKUP(disk_class, DiskClass, disk_class_table, _DISK_CLASS_MAX, _DISK_CLASS_INVALID);

void device_rule_done(DeviceRule *rule) {
        free(rule->name);
        free(rule->label);
        free(rule->match_name);
        free(rule->match_driver);
        free(rule->match_transport);
        free(rule->match_identity);
        policy_overrides_done(&rule->settings);
        *rule = (DeviceRule) {};
}

void policy_config_done(PolicyConfig *config) {
        for (size_t i = 0; i < _DISK_CLASS_MAX; i++) {
                config->classes[i].elevators = strv_free(config->classes[i].elevators);
                for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                        config->classes[i].iosched[t] = mfree_str(config->classes[i].iosched[t]);
        }
        for (size_t i = 0; i < config->n_rules; i++)
                device_rule_done(&config->rules[i]);
        module_wishes_free(config->module_params, config->n_module_params);
        config->module_params = NULL;
        config->n_module_params = 0;
        free(config->rules);
        config->rules = NULL;
        config->n_rules = 0;
        speed_config_done(&config->speed);
}

static bool glob_matches(const char *glob, const char *value) {
        return !glob || (value && fnmatch(glob, value, 0) == 0);
}

/* A disk name glob matches sysfs's name ("cciss!c0d0") or the kernel's ("cciss/c0d0"). */
static bool name_matches(const char *glob, const char *name) {
        char kernel[64];
        return glob_matches(glob, name) ||
               (name && strchr(name, '!') && disk_name_to_kernel(name, kernel, sizeof(kernel)) && glob_matches(glob, kernel));
}

bool device_rule_matches(const DeviceRule *rule, const DiskFacts *f) {
        assert(rule);
        assert(f);
        if (!name_matches(rule->match_name, f->name) ||
            !glob_matches(rule->match_driver, f->driver) ||
            !glob_matches(rule->match_transport, f->transport) ||
            !glob_matches(rule->match_identity, f->identity))
                return false;
        if (rule->match_hwq_min >= 0 && (int64_t) f->n_hctx < rule->match_hwq_min)
                return false;
        if (rule->match_hwq_max >= 0 && (int64_t) f->n_hctx > rule->match_hwq_max)
                return false;
        if (rule->match_rotational != TRISTATE_UNKNOWN && f->rotational != rule->match_rotational)
                return false;
        return true;
}

/* Admin overrides win; then matching config rules, a later rule over an earlier one. */
/* Whether o gives any knob or elevator tunable a value. */
static bool overrides_have_values(const PolicyOverrides *o) {
        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (policy_overrides_get(o, k))
                        return true;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (o->iosched[t])
                        return true;
        return false;
}

static int merge_overrides(const DiskFacts *f, const PolicyConfig *config, const PolicyOverrides *admin,
                           PolicyOverrides *ret, Plan *plan) {
        PolicyOverrides m = {};
        int r;

        for (Knob k = 0; k < _KNOB_MAX; k++)
                if (policy_overrides_get(admin, k)) {
                        r = policy_overrides_set(&m, k, policy_overrides_get(admin, k));
                        if (r < 0)
                                goto fail;
                        m.origin[k] = admin->origin[k];
                }
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                if (admin->iosched[t]) {
                        r = policy_overrides_set_iosched(&m, t, admin->iosched[t]);
                        if (r < 0)
                                goto fail;
                        m.iosched_origin[t] = admin->iosched_origin[t];
                }
        m.disabled = admin->disabled;
        m.defer_to_set = admin->defer_to_set;
        m.defer_to = admin->defer_to;
        m.defer_to_origin = admin->defer_to_origin;
        m.origin[POLICY_FILE_ENABLED] = admin->origin[POLICY_FILE_ENABLED];
        m.enabled_set = admin->enabled_set;
        bool admin_enabled_set = admin->disabled || admin->enabled_set;

        for (size_t i = config->n_rules; i > 0; i--) {
                const DeviceRule *rule = &config->rules[i - 1];
                if (!device_rule_matches(rule, f))
                        continue;
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "config-match",
                                 "name=%s driver=%s transport=%s identity=%s -> config section [Device:%s] applies",
                                 f->name, f->driver ?: "unknown", f->transport ?: "unknown",
                                 f->identity ?: "unknown", rule->name);
                if (r < 0)
                        goto fail;
                for (Knob k = 0; k < _KNOB_MAX; k++) {
                        const char *v = policy_overrides_get(&rule->settings, k);
                        if (v && !policy_overrides_get(&m, k)) {
                                r = policy_overrides_set(&m, k, v);
                                if (r < 0)
                                        goto fail;
                                m.origin[k] = rule->settings.origin[k];
                        }
                }
                for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                        if (rule->settings.iosched[t] && !m.iosched[t]) {
                                r = policy_overrides_set_iosched(&m, t, rule->settings.iosched[t]);
                                if (r < 0)
                                        goto fail;
                                m.iosched_origin[t] = rule->settings.iosched_origin[t];
                        }
                if (rule->settings.defer_to_set && !m.defer_to_set) {
                        m.defer_to_set = true;
                        m.defer_to = rule->settings.defer_to;
                        m.defer_to_origin = rule->label;
                }
                if (rule->has_enabled && !admin_enabled_set) {
                        m.disabled = rule->settings.disabled;
                        m.origin[POLICY_FILE_ENABLED] = rule->settings.origin[POLICY_FILE_ENABLED];
                        admin_enabled_set = true;
                }
        }
        *ret = m;
        return 0;
fail:
        policy_overrides_done(&m);
        return r;
}

static const char * const knob_table[_KNOB_MAX] = {
        [KNOB_ELEVATOR]     = "elevator",
        [KNOB_RQ_AFFINITY]  = "rq_affinity",
        [KNOB_NR_REQUESTS]  = "nr_requests",
        [KNOB_IRQ_AFFINITY] = "irq_affinity",
        [KNOB_NIC_IRQ_AFFINITY] = "nic_irq_affinity",
        [KNOB_XPS]          = "xps",
        [KNOB_NR_IO_QUEUES] = "nr_io_queues",
};

DEFINE_STRING_TABLE_LOOKUP(knob, Knob, knob_table, _KNOB_MAX, _KNOB_INVALID);

const char *policy_file_to_string(PolicyFile f) {
        return f == POLICY_FILE_ENABLED ? "enabled" : knob_to_string((Knob) f);
}

PolicyFile policy_file_from_string(const char *s) {
        if (streq_ptr(s, "enabled"))
                return POLICY_FILE_ENABLED;
        Knob k = knob_from_string(s);
        return k < 0 ? _POLICY_FILE_INVALID : (PolicyFile) k;
}

static const char * const plan_outcome_table[_PLAN_OUTCOME_MAX] = {
        [PLAN_OUTCOME_NOTE]       = "note",
        [PLAN_OUTCOME_PLANNED]    = "planned",
        [PLAN_OUTCOME_LEFT_ALONE] = "left-alone",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(plan_outcome, PlanOutcome, plan_outcome_table, _PLAN_OUTCOME_MAX);

static const char * const net_alignment_state_table[_NET_ALIGNMENT_MAX] = {
        [NET_ALIGNMENT_ALIGNED]        = "aligned",
        [NET_ALIGNMENT_MISALIGNED]     = "misaligned",
        [NET_ALIGNMENT_NOT_APPLICABLE] = "not applicable",
        [NET_ALIGNMENT_UNKNOWN]        = "unknown",
        [NET_ALIGNMENT_UNAVAILABLE]    = "unavailable",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(net_alignment_state, NetAlignmentState, net_alignment_state_table, _NET_ALIGNMENT_MAX);

static const char * const net_action_table[_NET_ACTION_MAX] = {
        [NET_ACTION_NONE]         = "none",
        [NET_ACTION_NIC_CHANNELS] = "nic-channels",
        [NET_ACTION_RECONNECT]    = "reconnect",
};

DEFINE_STRING_TABLE_LOOKUP(net_action, NetAction, net_action_table, _NET_ACTION_MAX, _NET_ACTION_INVALID);

const char *net_alignment_state_to_label(NetAlignmentState s) {
        return s == NET_ALIGNMENT_NOT_APPLICABLE ? "not-applicable" : net_alignment_state_to_string(s);
}

void plan_done(Plan *p) {
        free(p->elevator);
        free(p->rq_affinity);
        free(p->nr_requests);
        free(p->irq_affinity);
        free(p->nic_irq_affinity);
        free(p->xps);
        free(p->nr_io_queues);
        free(p->net_alignment);
        free(p->net_maps);
        free(p->net_recommended);
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                free(p->iosched[t]);
                free(p->owner_source_iosched[t]);
        }
        module_wishes_free(p->modules, p->n_modules);
        module_wishes_free(p->modules_deferred, p->n_modules_deferred);
        for (Knob k = 0; k < _KNOB_MAX; k++) {
                free(p->owner_source[k]);
                free(p->isolated[k]);
        }
        for (size_t i = 0; i < p->n_entries; i++) {
                free(p->entries[i].rule);
                free(p->entries[i].text);
        }
        free(p->entries);
        *p = (Plan) {};
}

char **plan_knob_slot(Plan *p, Knob k) {
        switch (k) {
        case KNOB_ELEVATOR:     return &p->elevator;
        case KNOB_RQ_AFFINITY:  return &p->rq_affinity;
        case KNOB_NR_REQUESTS:  return &p->nr_requests;
        case KNOB_IRQ_AFFINITY: return &p->irq_affinity;
        case KNOB_NIC_IRQ_AFFINITY: return &p->nic_irq_affinity;
        case KNOB_XPS:          return &p->xps;
        case KNOB_NR_IO_QUEUES: return &p->nr_io_queues;
        default:                return NULL;
        }
}

const char *plan_get(const Plan *p, Knob k) {
        char **slot = plan_knob_slot((Plan *) p, k);
        return slot ? *slot : NULL;
}

static char **overrides_slot(PolicyOverrides *o, Knob k) {
        switch (k) {
        case KNOB_ELEVATOR:     return &o->elevator;
        case KNOB_RQ_AFFINITY:  return &o->rq_affinity;
        case KNOB_NR_REQUESTS:  return &o->nr_requests;
        case KNOB_IRQ_AFFINITY: return &o->irq_affinity;
        case KNOB_NIC_IRQ_AFFINITY: return &o->nic_irq_affinity;
        case KNOB_XPS:          return &o->xps;
        case KNOB_NR_IO_QUEUES: return &o->nr_io_queues;
        default:                return NULL;
        }
}

const char *policy_overrides_get(const PolicyOverrides *o, Knob k) {
        char **slot = overrides_slot((PolicyOverrides *) o, k);
        return slot ? *slot : NULL;
}

const char *overrides_idle_note(const PolicyOverrides *o, unsigned knobs, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = 0;
        for (Knob k = 0; o && k < _KNOB_MAX && n < size; k++) {
                const char *v = (knobs & KNOB_BIT(k)) ? policy_overrides_get(o, k) : NULL;
                if (!v || streq(v, "keep"))     /* asks for nothing: not idle, just honoured */
                        continue;
                int w = snprintf(buf + n, size - n, "; %s=%s has nothing to act on", override_label(o, k), v);
                if (w < 0)
                        break;
                n += (size_t) w;
        }
        return buf;
}

int policy_overrides_set(PolicyOverrides *o, Knob k, const char *value) {
        char **slot = overrides_slot(o, k);
        if (!slot)
                return -EINVAL;
        return free_and_strdup(slot, value);
}

int policy_overrides_set_iosched(PolicyOverrides *o, IoschedTunable t, const char *value) {
        assert(o);
        if (t < 0 || t >= _IOSCHED_TUNABLE_MAX)
                return -EINVAL;
        return free_and_strdup(&o->iosched[t], value);
}

void policy_overrides_done(PolicyOverrides *o) {
        for (Knob k = 0; k < _KNOB_MAX; k++)
                free(*overrides_slot(o, k));
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++)
                free(o->iosched[t]);
        *o = (PolicyOverrides) {};
}

int plan_explain(Plan *p, const char *disk, unsigned knobs, PlanOutcome outcome, const char *rule,
                 const char *fmt, ...) {
        _cleanup_free_ char *body = NULL, *text = NULL, *rule_copy = NULL;
        va_list ap;

        va_start(ap, fmt);
        int r = vasprintf(&body, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (asprintf(&text, "%s: %s%s%s%s", disk, body, rule ? " (rule " : "", strempty(rule), rule ? ")" : "") < 0) {
                text = NULL;
                return -ENOMEM;
        }
        if (rule && !(rule_copy = strdup(rule)))
                return -ENOMEM;
        PlanEntry *n = realloc(p->entries, (p->n_entries + 1) * sizeof(PlanEntry));
        if (!n)
                return -ENOMEM;
        p->entries = n;
        /* (the initializers are unsequenced: body is computed before text is taken) */
        const char *body_start = text + strlen(disk) + 2;
        p->entries[p->n_entries++] = (PlanEntry) {
                .knobs = knobs,
                .outcome = outcome,
                .rule = TAKE_PTR(rule_copy),
                .body = body_start,
                .text = TAKE_PTR(text),
        };
        return 0;
}

bool plan_has_line(const Plan *p, const char *text) {
        assert(text);
        PLAN_FOREACH_ENTRY(e, p)
                if (streq(e->text, text))
                        return true;
        return false;
}

const PlanEntry *plan_decision(const Plan *p, Knob k) {
        const PlanEntry *found = NULL;
        if (k < 0 || k >= _KNOB_MAX)
                return NULL;
        PLAN_FOREACH_ENTRY(e, p)
                if ((e->knobs & KNOB_BIT(k)) && e->outcome != PLAN_OUTCOME_NOTE)
                        found = e;
        return found;
}

/*
 * Classification rules, first match wins:
 *   no-mq                    no mq/ directory: bio-based, nothing to tune (md, dm-linear,
 *                            dm-crypt, LVM, bio-based multipath maps: they pass bios on, and
 *                            each component's own elevator schedules them)
 *   multipath-leg            a path of a request-based dm-multipath map (holders/, or udev's
 *                            DM_MULTIPATH_DEVICE_PATH=1): the map's requests are cloned onto
 *                            the leg past its elevator (blk_insert_cloned_request()), the map
 *                            schedules
 *   stacked                  loop (and a dm map that is not a request-based multipath map):
 *                            the lower device's queue does the scheduling; a request-based
 *                            dm-multipath map is classified by its own queue below, like a disk
 *   unknown                  slow or fast unknown (an untrusted rotational flag and no measurement
 *                            yet: policies/speed.c), or the hctx count unknown
 *   many-hctx-slow           slow and (nr_hw_queues > 1 or shared tags)
 *   shared-tags              fast on a host-wide shared tagset
 *   unknown                  fast, nr_hw_queues > 1, shared tags unknown (no debugfs,
 *                            driver unknown): fast-multiqueue and shared-tags want
 *                            different elevators, so nothing is done
 *   fast-multiqueue          fast, nr_hw_queues > 1, no shared tags
 *   single-queue-rotational  slow, one hctx
 *   single-queue-fast        fast, one hctx
 * Slow or fast is the trusted rotational flag, else the measurement (policy_speed_verdict()).
 */
static DiskClass classify(const DiskFacts *f, Tristate slow, bool layout_by_blkmqd) {
        if (!f->has_mq)
                return DISK_CLASS_NO_MQ;
        if (f->multipath == MULTIPATH_LEG)
                return DISK_CLASS_MULTIPATH_LEG;
        if (f->stacked && f->multipath != MULTIPATH_MAP)
                return DISK_CLASS_STACKED;
        if (slow == TRISTATE_UNKNOWN || f->n_hctx == 0)
                return DISK_CLASS_UNKNOWN;
        /* one hctx and no shared tagset because of blkmqd's own module parameter: classified as
         * the layout before it (a shared host tagset), so the decision outlives its effect */
        if (slow == TRISTATE_YES)
                return f->n_hctx > 1 || f->shared_tags == TRISTATE_YES || layout_by_blkmqd ?
                        DISK_CLASS_MANY_HCTX_SLOW : DISK_CLASS_SINGLE_QUEUE_ROTATIONAL;
        if (f->shared_tags == TRISTATE_YES || layout_by_blkmqd)
                return DISK_CLASS_SHARED_TAGS;
        if (f->n_hctx > 1 && f->shared_tags == TRISTATE_UNKNOWN)
                return DISK_CLASS_UNKNOWN;      /* fast-multiqueue or shared-tags: cannot tell */
        return f->n_hctx > 1 ? DISK_CLASS_FAST_MULTIQUEUE : DISK_CLASS_SINGLE_QUEUE_FAST;
}

/* The class line: what the class was decided from (speed= where it is not the flag's reading:
 * policy_speed_verdict()). 0 or -ENOMEM. */
static int explain_class(const DiskFacts *f, const SpeedVerdict *v, DiskClass c, const ModuleParamFacts *layout,
                         Plan *plan) {
        if (c == DISK_CLASS_NO_MQ)
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, disk_class_to_string(c),
                                    "mq=0 -> class %s, never written", disk_class_to_string(c));
        const char *speed = v->from_flag ? "" :
                            v->slow == TRISTATE_YES ? " speed=slow" :
                            v->slow == TRISTATE_NO ? " speed=fast" : " speed=unknown";
        char by[192] = "";
        if (layout)
                snprintf(by, sizeof(by), " layout=%s.%s=%s (blkmqd's modprobe.d at this boot: the one hctx is its effect)",
                         layout->module, layout->param, layout->value);
        return plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, disk_class_to_string(c),
                            "nr_hw_queues=%zu rotational=%s%s shared_tags=%s%s%s%s stacked=%d transport=%s driver=%s%s -> class %s",
                            f->n_hctx, tristate_to_string(f->rotational), speed,
                            tristate_to_string(f->shared_tags),
                            f->shared_tags_source ? " (" : "", f->shared_tags_source ?: "", f->shared_tags_source ? ")" : "",
                            f->stacked,
                            f->transport ?: "unknown", f->driver ?: "unknown", by,
                            disk_class_to_string(c));
}

DiskClass policy_classify(const DiskFacts *f, char **ret_reason) {
        SpeedVerdict v;
        policy_speed_verdict(f, NULL, NULL, &v);
        DiskClass c = classify(f, v.slow, false);

        if (ret_reason) {
                _cleanup_(plan_done) Plan p = {};
                *ret_reason = explain_class(f, &v, c, NULL, &p) >= 0 ? TAKE_PTR(p.entries[0].text) : NULL;
        }
        return c;
}

/* The class depends on slow or fast only where speed decides (not no-mq, multipath legs, stacked). */
static bool class_needs_speed(const DiskFacts *f) {
        return f->has_mq && f->multipath != MULTIPATH_LEG && !(f->stacked && f->multipath != MULTIPATH_MAP);
}

/* What the disk is in a multipath set-up, and whether it is zoned: one line each, when so. */
static int explain_role(const DiskFacts *f, Plan *plan) {
        const char *src = f->multipath_source ?: "unknown source";
        int r = 0;

        switch (f->multipath) {
        case MULTIPATH_LEG:
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "multipath-leg",
                                 "multipath=leg (%s) -> a path of a request-based dm-multipath map%s%s: "
                                 "the map's requests reach it past its elevator (blk_insert_cloned_request()), "
                                 "so the map schedules; distributions set legs to none",
                                 src, f->multipath_of ? " " : "", strempty(f->multipath_of));
                break;
        case MULTIPATH_LEG_BIO:
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "multipath-leg-bio",
                                 "multipath=leg (%s) -> a path of a bio-based dm-multipath map: bios go through "
                                 "this disk's own elevator, tuned as itself", src);
                break;
        case MULTIPATH_MAP:
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "multipath-map",
                                 "multipath=map (%s) -> a request-based dm-multipath map schedules for all its legs: "
                                 "tuned by its own queue like a disk, not as stacked", src);
                break;
        case MULTIPATH_NVME_PATH:
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "multipath-nvme-path",
                                 "multipath=nvme-path (%s) -> hidden NVMe multipath path device%s%s: the head is "
                                 "bio-based, this queue schedules; tuned as itself",
                                 src, f->multipath_of ? " of " : "", strempty(f->multipath_of));
                break;
        default:
                break;
        }
        if (r < 0)
                return r;
        if (!f->unknown[FACT_ZONED] && f->zoned != ZONED_NONE)
                r = plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "zoned",
                                 "zoned=%s kernel=%s -> %s", zoned_to_string(f->zoned), f->kernel_release ?: "unknown",
                                 disk_facts_zoned_needs_deadline(f, NULL) ?
                                 "zoned writes need mq-deadline before zone write plugging (6.10, dd291d77cc90)" :
                                 "zone write plugging (6.10, dd291d77cc90) orders zoned writes under any elevator");
        return r;
}

/* A known issue of elevator on the running kernel (policies/iosched.c): one line, when there is one. */
static int explain_known_issue(const DiskFacts *f, const char *elevator, bool planned, Plan *plan) {
        const char *rule = NULL, *issue = iosched_known_issue(elevator, f->kernel_release, &rule);
        if (!issue)
                return 0;
        return plan_explain(plan, f->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, rule,
                            "elevator=%s%s kernel=%s -> known issue: %s", elevator, planned ? " (planned)" : "",
                            f->kernel_release, issue);
}

/*
 * A virtual device (policy_virtual_driver()): listed and explained, written only when opted in
 * by [Manager] VirtualDevices=manage, or by an explicit Enabled=yes of a matching [Device:]
 * section or policy/enabled 1 (o is the merged overrides). Returns 1 when the disk is to be
 * managed (not virtual, or opted in: a note says by what), 0 when it is left alone (explained),
 * -ENOMEM.
 */
static int explain_virtual(const DiskFacts *f, const VirtualDriver *virt, const PolicyConfig *config,
                           const PolicyOverrides *o, Plan *plan) {
        if (!virt)
                return 1;
        const char *origin = o->origin[POLICY_FILE_ENABLED];
        bool explicit = !o->disabled && (o->enabled_set || origin);
        int r;

        if (explicit || config->manage_virtual)
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "virtual-device",
                                 "driver=%s -> a virtual device: %s (%s); tuned as its class, opted in by %s%s",
                                 virt->driver, virt->backing, virt->source,
                                 !explicit ? "[Manager] VirtualDevices=manage" : origin ?: "policy/enabled=1",
                                 explicit && origin ? " Enabled=yes" : "");
        else
                r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "virtual-device",
                                 "driver=%s -> a virtual device: %s (%s); listed, not written: its queue settings say "
                                 "nothing about any hardware ([Manager] VirtualDevices=manage, a [Device:] section "
                                 "with Enabled=yes or policy/enabled 1 opts it in)",
                                 virt->driver, virt->backing, virt->source);
        if (r < 0)
                return r;
        return explicit || config->manage_virtual;
}

/* Who else sets each knob, for a disk blkmqd does not manage (the owner column only). */
static int owners_unmanaged(const DiskFacts *f, const PolicyHistory *h, const PolicyConfig *config,
                            const PolicyOverrides *o, Plan *plan) {
        for (Knob k = 0; k < _KNOB_MAX; k++) {
                int r = policy_owner(f, h, config, o, k, plan);
                if (r < 0)
                        return r;
        }
        return 0;
}

int policy_evaluate(const DiskFacts *facts, const PolicyHistory *history, const PolicyConfig *config,
                    const PolicyOverrides *overrides, Plan *ret) {
        return policy_evaluate_measured(facts, history, config, overrides, NULL, ret);
}

int policy_evaluate_measured(const DiskFacts *facts, const PolicyHistory *history, const PolicyConfig *config,
                             const PolicyOverrides *overrides, const SpeedState *speed, Plan *ret) {
        _cleanup_(plan_done) Plan plan = {};
        static const PolicyOverrides no_overrides = {};
        const PolicyHistory *h = policy_history_or_none(history);
        SpeedVerdict verdict;
        int r;

        if (!overrides)
                overrides = &no_overrides;

        policy_speed_verdict(facts, config, speed, &verdict);
        plan.rotational_hint = verdict.hint;
        const ModuleParamFacts *layout = policy_layout_by_blkmqd(facts, history);
        plan.class = classify(facts, verdict.slow, layout);
        r = explain_class(facts, &verdict, plan.class, layout, &plan);
        if (r < 0)
                return r;
        if (class_needs_speed(facts) && facts->n_hctx > 0 &&
            (r = policy_explain_speed(facts, config, speed, &verdict, &plan)) < 0)
                return r;
        r = explain_role(facts, &plan);
        if (r < 0)
                return r;
        r = explain_known_issue(facts, facts->elevator, false, &plan);
        if (r < 0)
                return r;

        const VirtualDriver *virt = policy_virtual_driver(facts->driver);
        /* An untrusted flag not measured yet leaves the class unknown, and the class's settings
         * wait; the values given for this very disk (a [Device:] section that matches it, its
         * policy/ files) do not depend on the class and apply now (a USB disk: the bridge's flag
         * is untrusted, and [Device:usb] MatchTransport=usb Elevator=bfq was ignored until the
         * disk had done 1,024 I/Os in a window; tests/vm/scenarios/usb.sh). */
        bool waits_for_speed = plan.class == DISK_CLASS_UNKNOWN && verdict.slow == TRISTATE_UNKNOWN &&
                               verdict.hint.trust == HINT_UNTRUSTED && facts->n_hctx > 0;
        _cleanup_(policy_overrides_done) PolicyOverrides merged = {};
        bool merged_done = false, explicit_values = false;
        if (waits_for_speed) {
                r = merge_overrides(facts, config, overrides, &merged, &plan);
                if (r < 0)
                        return r;
                merged_done = true;
                explicit_values = !merged.disabled && overrides_have_values(&merged);
                if (explicit_values &&
                    (r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_NOTE, "unknown",
                                      "rotational=%s (untrusted) speed=unknown -> the class's settings wait for a "
                                      "measurement; the values set for this disk apply",
                                      tristate_to_string(facts->rotational))) < 0)
                        return r;
        }
        if (IN_SET(plan.class, DISK_CLASS_NO_MQ, DISK_CLASS_UNKNOWN) && !explicit_values) {
                if (virt)
                        r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_NOTE, "virtual-device",
                                         "driver=%s -> a virtual device: %s (%s)", virt->driver, virt->backing,
                                         virt->source);
                if (r < 0)
                        return r;
                if (plan.class == DISK_CLASS_UNKNOWN && verdict.slow == TRISTATE_NO)
                        r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_LEFT_ALONE, "unknown",
                                         "%s nr_hw_queues=%zu shared_tags=unknown (%s) -> left alone: fast-multiqueue and shared-tags want different elevators; mount debugfs to tell",
                                         verdict.from_flag ? "rotational=0" : "speed=fast",
                                         facts->n_hctx, facts->unknown[FACT_SHARED_TAGS] ?: "no source");
                else if (plan.class == DISK_CLASS_UNKNOWN && verdict.slow == TRISTATE_UNKNOWN &&
                         verdict.hint.trust == HINT_UNTRUSTED && facts->n_hctx > 0)
                        r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_LEFT_ALONE, "unknown",
                                         "rotational=%s (untrusted) speed=unknown -> left alone: slow or fast is not known until "
                                         "the disk's I/O is measured, the kernel's default stays",
                                         tristate_to_string(facts->rotational));
                else if (plan.class == DISK_CLASS_UNKNOWN)
                        r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_LEFT_ALONE, "unknown",
                                         "rotational=%s nr_hw_queues=%zu -> left alone, facts incomplete",
                                         facts->unknown[FACT_ROTATIONAL] ?: tristate_to_string(facts->rotational),
                                         facts->n_hctx);
                if (r >= 0)
                        r = policy_net(facts, &config->net, NULL, &plan);
                if (r >= 0)
                        r = owners_unmanaged(facts, h, config, NULL, &plan);
                if (r < 0)
                        return r;
                *ret = plan;
                plan = (Plan) {};
                return 0;
        }

        if (!merged_done && (r = merge_overrides(facts, config, overrides, &merged, &plan)) < 0)
                return r;
        overrides = &merged;

        if (overrides->disabled) {
                const char *origin = overrides->origin[POLICY_FILE_ENABLED];
                r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_LEFT_ALONE, origin ? "config" : "override",
                                 "%s%s -> left alone", origin ?: "policy/enabled=0", origin ? " Enabled=no" : "");
                if (r >= 0)
                        r = policy_net(facts, &config->net, overrides, &plan);
                if (r >= 0)
                        r = owners_unmanaged(facts, h, config, overrides, &plan);
                if (r < 0)
                        return r;
                *ret = plan;
                plan = (Plan) {};
                return 0;
        }

        r = explain_virtual(facts, virt, config, overrides, &plan);
        if (r < 0)
                return r;
        if (r == 0) {
                if ((r = policy_net(facts, &config->net, overrides, &plan)) < 0 ||
                    (r = owners_unmanaged(facts, h, config, overrides, &plan)) < 0)
                        return r;
                *ret = plan;
                plan = (Plan) {};
                return 0;
        }

        plan.manage = true;
        const ClassPolicy *cp = &config->classes[plan.class];
        r = policy_elevator(facts, h, cp, overrides, &plan);
        /* another tool's elevator may win: decided before what follows the running elevator */
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_ELEVATOR, &plan);
        if (r >= 0 && h->elevator_held && plan.elevator && !streq_ptr(plan.elevator, facts->elevator))
                /* the line above is blkmqd's wish; apply leaves their elevator (Reassert=no) */
                r = plan_explain(&plan, facts->name, 0, PLAN_OUTCOME_NOTE, "elevator-external",
                                 "elevator=%s: switched by someone else over blkmqd's %s, left as theirs (Reassert=no) -> "
                                 "not switched back; nr_requests and the elevator tunables follow %s",
                                 facts->elevator, plan.elevator, facts->elevator);
        else if (r >= 0 && plan.elevator && !streq_ptr(plan.elevator, facts->elevator))
                r = explain_known_issue(facts, plan.elevator, true, &plan);
        if (r >= 0 && h->elevator_unloaded && streq_ptr(plan.elevator, h->elevator_unloaded) &&
            !streq_ptr(plan.elevator, facts->elevator))
                /* apply/apply.c elevator_not_loaded(): EINVAL for an elevator no module registered yet */
                r = plan_explain(&plan, facts->name, KNOB_BIT(KNOB_ELEVATOR), PLAN_OUTCOME_NOTE, "elevator-not-loaded",
                                 "elevator=%s wanted=%s: not registered at blkmqd's switch (EINVAL at %u attempt(s): the kernel's "
                                 "request_module(\"%s-iosched\") did not register it, its module is not installed or not "
                                 "loaded yet) -> retried with backoff, next try %u s after the last; %s's tunables wait for it",
                                 facts->elevator, plan.elevator, h->elevator_load_attempts, plan.elevator,
                                 h->elevator_retry_sec, plan.elevator);
        if (r >= 0)
                r = policy_rq_affinity(facts, h, cp, overrides, &plan);
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_RQ_AFFINITY, &plan);
        if (r >= 0)
                r = policy_nr_requests(facts, h, overrides, &plan);
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_NR_REQUESTS, &plan);
        if (r >= 0)
                r = policy_irq_affinity(facts, h, cp, overrides, &plan);
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_IRQ_AFFINITY, &plan);
        if (r >= 0)
                r = policy_iosched(facts, h, cp, overrides, &plan);
        if (r >= 0)
                r = policy_owner_tunables(facts, config, overrides, &plan);
        if (r >= 0)
                r = policy_module_params(facts, config, cp, history, &plan);
        if (r >= 0)
                r = policy_owner_modules(facts, config, overrides, &plan);
        if (r >= 0)
                r = policy_net(facts, &config->net, overrides, &plan);
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_NIC_IRQ_AFFINITY, &plan);
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_XPS, &plan);
        if (r >= 0)
                r = policy_owner(facts, h, config, overrides, KNOB_NR_IO_QUEUES, &plan);
        if (r >= 0)
                r = policy_owner_irqbalance(facts, &plan);
        if (r < 0)
                return r;

        *ret = plan;
        plan = (Plan) {};
        return 0;
}
