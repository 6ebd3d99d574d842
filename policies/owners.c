/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "owners.h"
#include "policy-internal.h"
#include "policy.h"
#include "strv.h"

static const char * const source_tool_table[_SOURCE_TOOL_MAX] = {
        [SOURCE_UDEV_RULE] = "udev rule",
        [SOURCE_TUNED]     = "tuned profile",
        [SOURCE_CMDLINE]   = "kernel command line",
        [SOURCE_LINK]      = ".link file",
        [SOURCE_MODPROBE_D] = "modprobe.d file",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(source_tool, SourceTool, source_tool_table, _SOURCE_TOOL_MAX)

static const char * const defer_to_table[_DEFER_TO_MAX] = {
        [DEFER_TO_ADMIN] = "admin",
        [DEFER_TO_ALL]   = "all",
        [DEFER_TO_NONE]  = "none",
};
DEFINE_STRING_TABLE_LOOKUP(defer_to, DeferTo, defer_to_table, _DEFER_TO_MAX, _DEFER_TO_INVALID)

static const char * const ownership_table[_OWNERSHIP_MAX] = {
        [OWNERSHIP_NONE]       = "none",
        [OWNERSHIP_AGREES]     = "agrees",
        [OWNERSHIP_DEFERRED]   = "deferred",
        [OWNERSHIP_CORRECTED]  = "corrected",
        [OWNERSHIP_OVERRIDDEN] = "overridden",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ownership, Ownership, ownership_table, _OWNERSHIP_MAX)

static void source_done(Source *s) {
        free(s->file);
        free(s->label);
        free(s->what);
        free(s->module);
        free(s->name);
        free(s->value);
        strv_free(s->match);
        strv_free(s->nomatch);
        strv_free(s->match_driver);
        free(s->match_unevaluated);
}

void sources_done(Sources *s) {
        for (size_t i = 0; i < s->n; i++)
                source_done(&s->v[i]);
        free(s->v);
        free(s->irqbalance.config);
        free(s->irqbalance.args);
        free(s->irqbalance.banned_irqs);
        free(s->irqbalance.policy_script);
        free(s->tuned_profile);
        free(s->cmdline_text);
        *s = (Sources) {};
}

static int dup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

int sources_add(Sources *s, const Source *src) {
        assert(s);
        Source *n = realloc(s->v, (s->n + 1) * sizeof(Source));
        if (!n)
                return -ENOMEM;
        s->v = n;
        Source c = *src;
        if (dup_or_null(src->file, &c.file) < 0 || dup_or_null(src->label, &c.label) < 0 ||
            dup_or_null(src->what, &c.what) < 0 || dup_or_null(src->module, &c.module) < 0 ||
            dup_or_null(src->name, &c.name) < 0 || dup_or_null(src->value, &c.value) < 0 ||
            dup_or_null(src->match_unevaluated, &c.match_unevaluated) < 0 ||
            (src->match && !(c.match = strv_copy(src->match))) ||
            (src->nomatch && !(c.nomatch = strv_copy(src->nomatch))) ||
            (src->match_driver && !(c.match_driver = strv_copy(src->match_driver)))) {
                c.match = src->match && c.match != src->match ? c.match : NULL;
                c.nomatch = src->nomatch && c.nomatch != src->nomatch ? c.nomatch : NULL;
                c.match_driver = src->match_driver && c.match_driver != src->match_driver ? c.match_driver : NULL;
                source_done(&c);
                return -ENOMEM;
        }
        s->v[s->n++] = c;
        return 0;
}

const char *source_describe(const Source *src, char *buf, size_t size) {
        assert(src);
        if (src->line)
                snprintf(buf, size, "%s %s:%u %s (%s)", src->label, src->file, src->line, src->what,
                         src->admin ? "the admin's choice" : "a distribution default");
        else
                snprintf(buf, size, "%s %s %s (%s)", src->label, src->file, src->what,
                         src->admin ? "the admin's choice" : "a distribution default");
        return buf;
}

static bool globs_match(char * const *globs, const char *name) {
        STRV_FOREACH(g, globs)
                if (fnmatch(*g, name, 0) == 0)
                        return true;
        return false;
}

/* The name a source of target t is matched against on disk f: the disk, or its NIC. */
static const char *target_name(const DiskFacts *f, SourceTarget t) {
        if (t == SOURCE_TARGET_NIC)
                return f->net && f->net->nic ? f->net->nic->ifname : NULL;
        return f->name;
}

bool source_applies(const Source *src, const DiskFacts *f, const char *value) {
        assert(src);
        assert(f);
        const char *name = target_name(f, src->target);
        if (src->target == SOURCE_TARGET_IRQ || src->target == SOURCE_TARGET_MODULE)
                return true;
        if (!name)
                return false;
        if (src->match && !globs_match(src->match, name))
                return false;
        if (globs_match(src->nomatch, name))
                return false;
        if (src->match_driver) {
                const char *driver = f->net && f->net->nic ? f->net->nic->driver : NULL;
                if (!driver || !globs_match(src->match_driver, driver))
                        return false;
        }
        if (src->match_rotational >= 0 && src->target == SOURCE_TARGET_DISK &&
            (f->rotational == TRISTATE_UNKNOWN || (int) f->rotational != src->match_rotational))
                return false;
        if (src->match_unevaluated)
                /* a match blkmqd cannot check: it counts when the disk has what the source sets */
                return src->value && value && streq(src->value, value);
        return true;
}

/* Whether source src is about knob k of disk f (the kind and the target). */
static bool source_is_knob(const Source *src, int k) {
        if (src->sets != SOURCE_SETS_KNOB)
                return false;
        if (src->knob == k)
                return true;
        /* a source moving every IRQ (tuned isolated_cores, a rule writing /proc/irq) moves the
         * NIC's vectors too */
        return k == KNOB_NIC_IRQ_AFFINITY && src->knob == KNOB_IRQ_AFFINITY && src->target == SOURCE_TARGET_IRQ;
}

/* Knob k's value as the disk had it before blkmqd (h: what a rule or tuned left), else now; into buf. */
static const char *value_before_blkmqd(const DiskFacts *f, const PolicyHistory *h, int k, char *buf, size_t size) {
        switch (k) {
        case KNOB_ELEVATOR:
                return h->elevator_before ?: f->elevator;
        case KNOB_RQ_AFFINITY: {
                int v = h->rq_affinity_before >= 0 ? h->rq_affinity_before : f->rq_affinity;
                if (v < 0)
                        return NULL;
                snprintf(buf, size, "%d", v);
                return buf;
        }
        case KNOB_NR_REQUESTS: {
                int64_t v = h->nr_requests_before >= 0 ? h->nr_requests_before : f->nr_requests;
                if (v < 0)
                        return NULL;
                snprintf(buf, size, "%lld", (long long) v);
                return buf;
        }
        default:
                return NULL;
        }
}

/*
 * The source that wins among the matching ones: the admin's over a distribution's; among
 * those of one kind the last in the list (facts/agents.c lists them in the order they act:
 * the command line, udev rules in udev's order, tuned). .link files: only the first file
 * (lowest group) that matches the NIC at all counts.
 */
static const Source *pick(const Sources *s, const DiskFacts *f, bool (*about)(const Source *, const void *),
                          const void *arg, const char *value) {
        const Source *admin = NULL, *dist = NULL;
        unsigned link_group = (unsigned) -1;

        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++) {
                const Source *src = &s->v[i];
                if (src->tool == SOURCE_LINK && src->group < link_group && source_applies(src, f, NULL))
                        link_group = src->group;
        }
        for (size_t i = 0; i < s->n; i++) {
                const Source *src = &s->v[i];
                if (!about(src, arg) || !source_applies(src, f, value))
                        continue;
                if (src->tool == SOURCE_LINK && src->group != link_group)
                        continue;       /* an earlier .link file is the one applied to this NIC */
                if (src->admin)
                        admin = src;
                else
                        dist = src;
        }
        return admin ?: dist;
}

static bool about_knob(const Source *src, const void *arg) {
        return source_is_knob(src, *(const int *) arg);
}

const Source *sources_find_knob(const Sources *s, const DiskFacts *f, const PolicyHistory *h, int k) {
        char buf[32];
        return pick(s, f, about_knob, &k, value_before_blkmqd(f, policy_history_or_none(h), k, buf, sizeof(buf)));
}

static bool about_tunable(const Source *src, const void *arg) {
        return src->sets == SOURCE_SETS_TUNABLE && src->name && streq(src->name, arg);
}

const Source *sources_find_tunable(const Sources *s, const DiskFacts *f, IoschedTunable t) {
        assert(f);
        const IoschedTunableInfo *info = iosched_tunable_info(t);
        if (!info)
                return NULL;
        const char *name = info->name;
        const char *cur = NULL;
        for (size_t i = 0; i < f->n_iosched; i++)
                if (streq(f->iosched[i].name, name))
                        cur = f->iosched[i].value;
        return pick(s, f, about_tunable, name, cur);
}

const Source *sources_find_module_param(const Sources *s, const char *module, const char *param) {
        /* pick()'s rule: the admin's over a distribution's, among those of one kind the one that
         * acts last (facts/agents.c lists modprobe.d's options in modprobe's order, then the
         * command line's, which modprobe passes after them) */
        const Source *admin = NULL, *dist = NULL;
        for (size_t i = 0; s && i < s->n; i++) {
                const Source *src = &s->v[i];
                if (src->sets != SOURCE_SETS_MODULE_PARAM || !streq_ptr(src->module, module) || !streq_ptr(src->name, param))
                        continue;
                if (src->admin)
                        admin = src;
                else
                        dist = src;
        }
        return admin ?: dist;
}

/* DeferTo= in force for this disk: [Device:] (merged overrides), else [Manager]. */
static DeferTo defer_to(const PolicyConfig *config, const PolicyOverrides *o, const char **ret_origin) {
        if (o && o->defer_to_set) {
                *ret_origin = o->defer_to_origin ?: "config [Device:]";
                return o->defer_to;
        }
        *ret_origin = "config [Manager]";
        return config ? config->defer_to : DEFER_TO_ADMIN;
}

static bool defers(DeferTo d, const Source *src) {
        return d == DEFER_TO_ALL || (d == DEFER_TO_ADMIN && src->admin);
}

/* What to write in [Device:] to turn the decision around. */
static const char *turn_around(DeferTo d, const Source *src) {
        if (defers(d, src))
                return "DeferTo=none in [Manager] or a [Device:] section makes blkmqd write over it";
        return src->admin ? "DeferTo=admin (the default) leaves it to the admin's tool" :
                            "DeferTo=all in [Manager] or a [Device:] section leaves it to the distribution's rule";
}


/* The rule that planned knob k (the last entry deciding it), for "blkmqd would ...". */
static const char *deciding_rule(const Plan *p, int k) {
        const PlanEntry *e = plan_decision(p, (Knob) k);
        return e && e->rule ? e->rule : "policy";
}

static int set_owner(Plan *plan, int k, Ownership o, const Source *src) {
        char buf[512];
        plan->owner[k] = o;
        free(plan->owner_source[k]);
        plan->owner_source[k] = NULL;
        if (src && !(plan->owner_source[k] = strdup(source_describe(src, buf, sizeof(buf)))))
                return -ENOMEM;
        return 0;
}

static bool about_channels(const Source *src, const void *arg) {
        return src->sets == SOURCE_SETS_CHANNELS;
}

/* A network disk's NIC whose channel count another tool sets: blkmqd never sets channels; the
 * nr_io_queues it proposes is computed from the channels the NIC has, so it follows theirs. */
const Source *sources_find_channels(const Sources *s, const DiskFacts *f) {
        assert(f);
        return f->net && f->net->nic ? pick(s, f, about_channels, NULL, NULL) : NULL;
}

static int owner_channels(const DiskFacts *f, Plan *plan) {
        char desc[512];
        const Source *src = sources_find_channels(f->sources, f);
        if (!src)
                return set_owner(plan, KNOB_NR_IO_QUEUES, OWNERSHIP_NONE, NULL);
        int r = set_owner(plan, KNOB_NR_IO_QUEUES, OWNERSHIP_AGREES, src);
        if (r >= 0)
                r = plan_explain(plan, f->name, KNOB_BIT(KNOB_NR_IO_QUEUES), PLAN_OUTCOME_NOTE, "owner-channels",
                                 "%s channels: %s -> blkmqd never changes a NIC's channels; the alignment and "
                                 "nr_io_queues follow the channels the NIC has", f->net->nic->ifname,
                                 source_describe(src, desc, sizeof(desc)));
        return r;
}

int policy_owner(const DiskFacts *f, const PolicyHistory *h, const PolicyConfig *config, const PolicyOverrides *o, int k,
                 Plan *plan) {
        char **slot = plan_knob_slot(plan, (Knob) k);
        const char *knob = knob_to_string((Knob) k), *origin;
        char desc[512];

        if (!slot)
                return 0;
        if (k == KNOB_NR_IO_QUEUES)
                return owner_channels(f, plan);
        const Source *src = sources_find_knob(f->sources, f, h, k);
        if (!src)
                return set_owner(plan, k, OWNERSHIP_NONE, NULL);
        source_describe(src, desc, sizeof(desc));
        const char *wanted = plan->manage ? *slot : NULL;
        if (!wanted || (src->value && streq(src->value, wanted)))
                return set_owner(plan, k, OWNERSHIP_AGREES, src);

        DeferTo d = defer_to(config, o, &origin);
        const char *own = policy_overrides_get(o, (Knob) k);
        if (own && !streq(own, "keep")) {
                /* the admin asked blkmqd for this value: their word to blkmqd wins */
                int r = set_owner(plan, k, OWNERSHIP_OVERRIDDEN, src);
                if (r >= 0)
                        r = plan_explain(plan, f->name, KNOB_BIT(k), PLAN_OUTCOME_NOTE, "owner-override",
                                         "%s: %s sets %s; %s=%s asks blkmqd for %s -> written over it, as asked",
                                         knob, desc, src->value ?: "it", override_label(o, (Knob) k), own, wanted);
                return r;
        }
        if (defers(d, src)) {
                _cleanup_free_ char *would = strdup(wanted);
                const char *rule = deciding_rule(plan, k);
                _cleanup_free_ char *rule_copy = strdup(rule);
                if (!would || !rule_copy)
                        return -ENOMEM;
                free(*slot);
                *slot = NULL;
                int r = set_owner(plan, k, OWNERSHIP_DEFERRED, src);
                if (r >= 0)
                        r = plan_explain(plan, f->name, KNOB_BIT(k), PLAN_OUTCOME_LEFT_ALONE,
                                         src->admin ? "owner-admin" : "owner-defer-all",
                                         "%s: %s -> left to it (%s DeferTo=%s); blkmqd would set %s (rule %s); %s",
                                         knob, desc, origin, defer_to_to_string(d), would, rule_copy, turn_around(d, src));
                return r;
        }
        int r = set_owner(plan, k, src->admin ? OWNERSHIP_OVERRIDDEN : OWNERSHIP_CORRECTED, src);
        if (r >= 0)
                r = plan_explain(plan, f->name, KNOB_BIT(k), PLAN_OUTCOME_NOTE,
                                 src->admin ? "owner-override" : "owner-distribution",
                                 "%s: %s -> %s to %s (%s DeferTo=%s); %s",
                                 knob, desc, src->admin ? "written over" : "corrected", wanted, origin,
                                 defer_to_to_string(d), turn_around(d, src));
        return r;
}

int policy_owner_tunables(const DiskFacts *f, const PolicyConfig *config, const PolicyOverrides *o, Plan *plan) {
        assert(f);
        assert(plan);
        char desc[512];
        const char *origin;
        for (IoschedTunable t = 0; t < _IOSCHED_TUNABLE_MAX; t++) {
                plan->owner_iosched[t] = OWNERSHIP_NONE;
                plan->owner_source_iosched[t] = mfree_str(plan->owner_source_iosched[t]);
                const Source *src = sources_find_tunable(f->sources, f, t);
                if (!src)
                        continue;
                if (!(plan->owner_source_iosched[t] = strdup(source_describe(src, desc, sizeof(desc)))))
                        return -ENOMEM;
                const char *wanted = plan->iosched[t];
                plan->owner_iosched[t] = OWNERSHIP_AGREES;
                if (!wanted || (src->value && streq(src->value, wanted)))
                        continue;
                source_describe(src, desc, sizeof(desc));
                DeferTo d = defer_to(config, o, &origin);
                int r;
                if (o && o->iosched[t]) {
                        plan->owner_iosched[t] = OWNERSHIP_OVERRIDDEN;
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, "owner-override",
                                         "iosched %s: %s; %s asks blkmqd for %s -> written over it, as asked",
                                         iosched_tunable_info(t)->name, desc, o->iosched_origin[t] ?: "policy/iosched", wanted);
                } else if (defers(d, src)) {
                        plan->owner_iosched[t] = OWNERSHIP_DEFERRED;
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, src->admin ? "owner-admin" : "owner-defer-all",
                                         "iosched %s: %s -> left to it (%s DeferTo=%s); blkmqd would set %s; %s",
                                         iosched_tunable_info(t)->name, desc, origin, defer_to_to_string(d), wanted, turn_around(d, src));
                        plan->iosched[t] = mfree_str(plan->iosched[t]);
                } else {
                        plan->owner_iosched[t] = src->admin ? OWNERSHIP_OVERRIDDEN : OWNERSHIP_CORRECTED;
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE, src->admin ? "owner-override" : "owner-distribution",
                                         "iosched %s: %s -> %s to %s (%s DeferTo=%s); %s", iosched_tunable_info(t)->name, desc,
                                         src->admin ? "written over" : "corrected", wanted, origin, defer_to_to_string(d),
                                         turn_around(d, src));
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Move plan->modules[i] to plan->modules_deferred, naming the source it is left to. 0 or -ENOMEM. */
static int module_defer(Plan *plan, size_t i, const char *desc) {
        const ModuleWish *w = &plan->modules[i];
        int r = module_wishes_add(&plan->modules_deferred, &plan->n_modules_deferred, w->module, w->param, w->value);
        if (r < 0)
                return r;
        if (!(plan->modules_deferred[plan->n_modules_deferred - 1].owner = strdup(desc)))
                return -ENOMEM;
        plan_module_drop(plan, i);
        return 0;
}

/* The file name of a modprobe.d source sorts after zz-blkmqd.conf: modprobe passes its options
 * after blkmqd's (libkmod-config.c conf_files_list(): every directory's *.conf by name), so at
 * the module's next load its value wins over blkmqd's option. */
static bool modprobe_after_blkmqd(const Source *src) {
        const char *base = src->tool == SOURCE_MODPROBE_D ? strrchr(src->file, '/') : NULL;
        return base && strcmp(base + 1, MODPROBE_D_FILE) > 0;
}

int policy_owner_modules(const DiskFacts *f, const PolicyConfig *config, const PolicyOverrides *o, Plan *plan) {
        assert(f);
        assert(plan);
        char desc[512];
        const char *origin;
        module_wishes_free(plan->modules_deferred, plan->n_modules_deferred);
        plan->modules_deferred = NULL;
        plan->n_modules_deferred = 0;
        for (size_t i = 0; i < plan->n_modules;) {
                ModuleWish *w = &plan->modules[i];
                const Source *src = sources_find_module_param(f->sources, w->module, w->param);
                DeferTo d = defer_to(config, o, &origin);
                if (src && src->tool == SOURCE_CMDLINE && !(src->value && streq(src->value, w->value)) && !defers(d, src)) {
                        /* modprobe passes the command line's options after modprobe.d's
                         * (libkmod/libkmod-config.c kmod_config_new() parses /proc/cmdline last) and
                         * kernel/params.c parse_args() keeps the last value: an option would lose */
                        int r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "owner-cmdline-wins",
                                             "module %s.%s: %s.%s=%s on the kernel command line -> no modprobe.d option "
                                             "(%s DeferTo=%s): the command line's value wins when the module loads (modprobe "
                                             "passes it after modprobe.d's); change it there for %s.%s=%s",
                                             w->module, w->param, w->module, w->param, strna(src->value), origin,
                                             defer_to_to_string(d), w->module, w->param, w->value);
                        if (r < 0)
                                return r;
                        plan_module_drop(plan, i);
                        continue;
                }
                if (!src || (src->value && streq(src->value, w->value))) {
                        i++;
                        continue;
                }
                source_describe(src, desc, sizeof(desc));
                if (!defers(d, src)) {
                        /* a distribution's modprobe.d default (or, DeferTo=none, the admin's): blkmqd's
                         * option and runtime write correct it, and explain says whose value it replaces */
                        char order[512] = "";
                        if (modprobe_after_blkmqd(src))
                                snprintf(order, sizeof(order), "; %s sorts after " MODPROBE_D_FILE ", so modprobe passes "
                                         "its value last and it wins at the module's next load: an empty /etc/modprobe.d/%s "
                                         "masks it", src->file, strrchr(src->file, '/') + 1);
                        if (!(w->owner = strdup(desc)))
                                return -ENOMEM;
                        int r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_NOTE,
                                             src->admin ? "owner-override" : "owner-distribution",
                                             "module %s.%s: %s -> %s to %s (%s DeferTo=%s); %s%s",
                                             w->module, w->param, desc, src->admin ? "written over" : "corrected", w->value,
                                             origin, defer_to_to_string(d), turn_around(d, src), order);
                        if (r < 0)
                                return r;
                        i++;
                        continue;
                }
                int r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, src->admin ? "owner-admin" : "owner-defer-all",
                                     "module %s.%s: %s -> left to it (%s DeferTo=%s): nothing written, neither the "
                                     "running module's value nor a modprobe.d option; blkmqd would propose %s.%s=%s; %s",
                                     w->module, w->param, desc, origin, defer_to_to_string(d), w->module, w->param,
                                     w->value, turn_around(d, src));
                if (r < 0 || (r = module_defer(plan, i, desc)) < 0)
                        return r;
        }
        return 0;
}

bool policy_original_still_right(const Sources *now, const char *source) {
        char buf[512];
        if (!source)
                return true;
        for (size_t i = 0; now && i < now->n; i++)
                if (streq(source_describe(&now->v[i], buf, sizeof(buf)), source))
                        return true;
        return false;
}

static bool irq_banned(const IrqbalanceFacts *ib, unsigned irq) {
        for (size_t i = 0; i < ib->n_banned_irqs; i++)
                if (ib->banned_irqs[i] == irq)
                        return true;
        return false;
}

/* Append "<sep><prefix>N" to a list of IRQ numbers in buf. */
static void irq_list_add(char *buf, size_t size, bool first, const char *prefix, unsigned irq) {
        size_t l = strlen(buf);
        if (l < size)
                snprintf(buf + l, size - l, "%s%s%u", first ? "" : " ", prefix, irq);
}

static int irqbalance_note(const DiskFacts *f, const IrqbalanceFacts *ib, int k, const char *key,
                           const unsigned *irqs, size_t n, Plan *plan) {
        char list[1024] = "", bans[2048] = "";
        size_t moved = 0;
        for (size_t i = 0; i < n; i++) {
                if (irq_banned(ib, irqs[i]))
                        continue;
                irq_list_add(list, sizeof(list), moved == 0, "", irqs[i]);
                irq_list_add(bans, sizeof(bans), moved == 0, "--banirq=", irqs[i]);
                moved++;
        }
        if (moved == 0)
                return plan_explain(plan, f->name, KNOB_BIT(k), PLAN_OUTCOME_NOTE, "owner-irqbalance",
                                    "%s: irqbalance (pid %u) runs; the vectors blkmqd places are banned from it (%s) -> no conflict",
                                    knob_to_string((Knob) k), ib->pid, ib->args ?: "IRQBALANCE_ARGS");
        if (ib->policy_script)
                return plan_explain(plan, f->name, KNOB_BIT(k), PLAN_OUTCOME_NOTE, "owner-irqbalance",
                                    "%s: irqbalance (pid %u) may move IRQ %s, which blkmqd places (%s=); its policy script %s "
                                    "decides: have it print ban=true for them (irqbalance(1) --policyscript), or %s=keep",
                                    knob_to_string((Knob) k), ib->pid, list, key, ib->policy_script, key);
        return plan_explain(plan, f->name, KNOB_BIT(k), PLAN_OUTCOME_NOTE, "owner-irqbalance",
                            "%s: irqbalance (pid %u) moves IRQ %s, which blkmqd places (%s=) -> ban them: "
                            "IRQBALANCE_ARGS=\"%s%s%s\" in %s and restart irqbalance, or %s=keep to leave them to irqbalance",
                            knob_to_string((Knob) k), ib->pid, list, key, ib->args ? ib->args : "", ib->args ? " " : "", bans,
                            ib->config ?: "/etc/default/irqbalance", key);
}

int policy_owner_irqbalance(const DiskFacts *f, Plan *plan) {
        assert(f);
        const IrqbalanceFacts *ib = f->sources ? &f->sources->irqbalance : NULL;
        if (!ib || !ib->running || ib->oneshot || !plan->manage)
                return 0;
        int r = 0;
        if (plan->irq_affinity) {
                unsigned irqs[256];
                size_t n = 0;
                for (size_t i = 0; i < f->n_irqs && n < ELEMENTSOF(irqs); i++)
                        if (f->irqs[i].queue && f->irqs[i].managed != TRISTATE_YES)
                                irqs[n++] = f->irqs[i].irq;
                if (n > 0)
                        r = irqbalance_note(f, ib, KNOB_IRQ_AFFINITY, "IrqAffinity", irqs, n, plan);
        }
        if (r >= 0 && plan->nic_irq_affinity) {
                /* "<irq>:<cpulist> ..." */
                unsigned irqs[256];
                size_t n = 0;
                for (const char *p = plan->nic_irq_affinity; *p && n < ELEMENTSOF(irqs);) {
                        char *e;
                        unsigned long irq = strtoul(p, &e, 10);
                        if (e == p)
                                break;
                        irqs[n++] = (unsigned) irq;
                        p = strchr(e, ' ');
                        if (!p)
                                break;
                        p++;
                }
                if (n > 0)
                        r = irqbalance_note(f, ib, KNOB_NIC_IRQ_AFFINITY, "NicIrqAffinity", irqs, n, plan);
        }
        return r;
}
