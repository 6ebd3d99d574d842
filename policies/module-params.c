/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Module parameters that decide the hardware queue layout (each driver's module_param():
 * megaraid_sas host_tagset_enable 0444 since 81e7eb5bf08f (5.11), mpt3sas host_tagset_enable
 * 0444 since 664f0dce2058 (5.12); known_module_params[] below names the others).
 *
 * The many-hctx-slow fix that needs a reboot: megaraid_sas and mpt3sas expose every
 * MSI-X vector as an hctx over a shared host tagset (host_tagset_enable=1, 0444). A
 * single-queue elevator then contends on one lock from every CPU (dbench 14-40 % slower
 * than host_tagset_enable=0). b6e68ee82585 (5.12: run only the current CPU's hctx for
 * non-MQ-aware elevators) and QUEUE_FLAG_SQ_SCHED (4d337cebcb1c, 5.19) soften it, so by
 * default the parameter is proposed only on kernels older than 5.12.
 *
 * A driver built into the kernel (DiskFacts.driver_module, modules.builtin) reads its
 * parameters only at boot, from "<module>.<param>=" on the kernel command line (kernel/params.c
 * parse_args() over the built-in modules' __param section; modprobe.d is never read for it):
 * its wishes become an explained proposal for the command line, never a modprobe.d option.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cross-disk.h"
#include "macro.h"
#include "policy-internal.h"

const KnownModuleParam known_module_params[] = {
        /* 103fbf8e4020 / 81e7eb5bf08f (5.11) */
        { "megaraid_sas", "host_tagset_enable",   true,  "next boot or module reload" },
        /* 664f0dce2058 (5.12) */
        { "mpt3sas",      "host_tagset_enable",   true,  "next boot or module reload" },
        /* read at controller setup (nvme_setup_io_queues) */
        { "nvme",         "write_queues",         false, "next controller reset or probe" },
        { "nvme",         "poll_queues",          false, "next controller reset or probe" },
        /* 5.15; read at probe */
        { "virtio_blk",   "num_request_queues",   false, "next device probe (unbind/bind or module reload)" },
        { "virtio_blk",   "poll_queues",          false, "next device probe (unbind/bind or module reload)" },
        {}
};

const KnownModuleParam *known_module_param(const char *module, const char *param) {
        for (const KnownModuleParam *k = known_module_params; k->module; k++)
                if (streq(k->module, module) && streq(k->param, param))
                        return k;
        return NULL;
}

const char *module_param_unsupported_reason(const char *module, const char *param, char *buf, size_t size) {
        assert(module);
        assert(param);
        snprintf(buf, size, "sysfs module/%s/parameters/%s does not exist in this kernel", module, param);
        return buf;
}

void module_wishes_free(ModuleWish *w, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(w[i].module);
                free(w[i].param);
                free(w[i].value);
                free(w[i].owner);
        }
        free(w);
}

int module_wishes_add(ModuleWish **w, size_t *n, const char *module, const char *param, const char *value) {
        assert(w);
        assert(n);
        const KnownModuleParam *k = known_module_param(module, param);
        ModuleWish *a = realloc(*w, (*n + 1) * sizeof(ModuleWish));
        if (!a)
                return -ENOMEM;
        *w = a;
        a[*n] = (ModuleWish) {
                .module = strdup(module),
                .param = strdup(param),
                .value = strdup(value),
                .load_time_only = k ? k->load_time_only : true,
                .takes_effect = k ? k->takes_effect : "next boot or module reload",
        };
        if (!a[*n].module || !a[*n].param || !a[*n].value) {
                module_wishes_free(a + *n, 1);  /* frees the strings; keep the array */
                *w = realloc(a, (*n + 1) * sizeof(ModuleWish)) ?: a;
                return -ENOMEM;
        }
        (*n)++;
        return 0;
}

static const ModuleParamFacts *find_param(const DiskFacts *f, const char *module, const char *param) {
        for (size_t i = 0; i < f->n_modparams; i++)
                if (streq(f->modparams[i].module, module) && streq(f->modparams[i].param, param))
                        return &f->modparams[i];
        return NULL;
}

const ModuleParamFacts *policy_layout_by_blkmqd(const DiskFacts *f, const PolicyHistory *history) {
        if (!history || !f->driver || (!streq(f->driver, "megaraid_sas") && !streq(f->driver, "mpt3sas")))
                return NULL;
        /* the effect as the kernel shows it: one hctx and no TAG_HCTX_SHARED (the drivers set
         * shost->host_tagset and one hctx per reply queue only when the parameter is 1:
         * megaraid_sas_base.c, mpt3sas_scsih.c) */
        if (f->n_hctx != 1 || f->shared_tags == TRISTATE_YES)
                return NULL;
        const ModuleParamFacts *p = find_param(f, f->driver, "host_tagset_enable");
        if (!p || !streq_ptr(p->value, "0"))
                return NULL;
        for (size_t i = 0; i < history->n_boot_modules; i++) {
                const ModuleWish *w = &history->boot_modules[i];
                if (streq(w->module, f->driver) && streq(w->param, "host_tagset_enable") && streq(w->value, "0"))
                        return p;
        }
        return NULL;
}

static int host_tagset(const DiskFacts *f, const ClassPolicy *cp, const PolicyHistory *history, Plan *plan) {
        unsigned maj = 0, min = 0;
        bool old_kernel;

        if (!f->driver || (!streq(f->driver, "megaraid_sas") && !streq(f->driver, "mpt3sas")))
                return 0;
        if (plan->class != DISK_CLASS_MANY_HCTX_SLOW)
                return 0;
        if (cp->host_tagset == HOST_TAGSET_KEEP)
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "module-host-tagset",
                                    "driver=%s HostTagset=keep -> %s.host_tagset_enable left alone", f->driver, f->driver);

        const ModuleParamFacts *p = find_param(f, f->driver, "host_tagset_enable");
        if (!p || !p->value)
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "module-host-tagset",
                                    "driver=%s -> %s.host_tagset_enable not proposed: this kernel's %s has no such parameter",
                                    f->driver, f->driver, f->driver);

        old_kernel = kernel_release_parse(f->kernel_release, &maj, &min) >= 0 && (maj < 5 || (maj == 5 && min < 12));
        if (cp->host_tagset == HOST_TAGSET_AUTO && !old_kernel)
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "module-host-tagset",
                                    "driver=%s kernel=%u.%u host_tagset_enable=%s -> %s.host_tagset_enable left at %s: kernel has the single-queue elevator fix (b6e68ee82585, 5.12)",
                                    f->driver, maj, min, p->value, f->driver, p->value);

        int r = module_wishes_add(&plan->modules, &plan->n_modules, f->driver, "host_tagset_enable", "0");
        if (r < 0)
                return r;
        if (policy_layout_by_blkmqd(f, history))
                /* its own effect is no reason to take it back: kept until the config or a restore says so */
                return plan_explain(plan, f->name, 0, PLAN_OUTCOME_PLANNED, "module-host-tagset",
                                    "nr_hw_queues=%zu rotational=%s shared_tags=%s driver=%s kernel=%u.%u host_tagset_enable=0 "
                                    "(blkmqd's /etc/modprobe.d/zz-blkmqd.conf at this boot) -> %s.host_tagset_enable=0 kept, "
                                    "effective: the one hctx and no shared tagset are its effect%s",
                                    f->n_hctx, tristate_to_string(f->rotational), tristate_to_string(f->shared_tags),
                                    f->driver, maj, min, f->driver,
                                    f->root_disk ? "; the root filesystem is on this disk: keep the initramfs's copy" : "");
        return plan_explain(plan, f->name, 0, PLAN_OUTCOME_PLANNED, "module-host-tagset",
                            "nr_hw_queues=%zu rotational=%s shared_tags=%s driver=%s kernel=%u.%u -> %s.host_tagset_enable=0 (one hctx; takes effect at the next boot%s)",
                            f->n_hctx, tristate_to_string(f->rotational), tristate_to_string(f->shared_tags),
                            f->driver, maj, min, f->driver, f->root_disk ? ", rebuild the initramfs: the root filesystem is on this disk" : "");
}

/* Module names compare with dashes and underscores alike (kernel/params.c parameq()). */
static bool module_eq(const char *a, const char *b) {
        for (; *a && *b; a++, b++)
                if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
                        return false;
        return *a == *b;
}

/* The wishes for f's driver when it is built in: each one an explain line pointing to the kernel
 * command line (what it has there now, and what the parameter reads), and no wish left. */
static int builtin_wishes(const DiskFacts *f, Plan *plan) {
        if (f->unknown[FACT_DRIVER_MODULE] || f->driver_module != DRIVER_MODULE_BUILTIN || !f->driver)
                return 0;
        for (size_t i = 0; i < plan->n_modules;) {
                const ModuleWish *w = &plan->modules[i];
                if (!module_eq(w->module, f->driver)) {
                        i++;
                        continue;
                }
                const Source *src = sources_find_module_param(f->sources, w->module, w->param);
                const ModuleParamFacts *p = find_param(f, w->module, w->param);
                char now[256], reads[160] = "";
                if (src && src->tool == SOURCE_CMDLINE)
                        snprintf(now, sizeof(now), "now %s.%s=%s there", w->module, w->param, strna(src->value));
                else
                        snprintf(now, sizeof(now), "%s", f->sources && f->sources->cmdline_text ? "not set there now" :
                                 "the command line was not read");
                if (p && p->value)
                        snprintf(reads, sizeof(reads), "; the parameter reads %s", p->value);
                int r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "module-builtin",
                                     "module %s.%s=%s: %s is built into the kernel (%s) -> no modprobe.d option, a built-in "
                                     "driver never reads one; put %s.%s=%s on the kernel command line (%s) for the next boot%s",
                                     w->module, w->param, w->value, f->driver, strna(f->driver_module_source),
                                     w->module, w->param, w->value, now, reads);
                if (r < 0)
                        return r;
                plan_module_drop(plan, i);
        }
        return 0;
}

int policy_module_params(const DiskFacts *f, const PolicyConfig *config, const ClassPolicy *cp,
                         const PolicyHistory *history, Plan *plan) {
        int r = host_tagset(f, cp, history, plan);
        if (r < 0)
                return r;

        /* [Module:<name>] settings apply to disks driven by that module. */
        for (size_t i = 0; i < config->n_module_params; i++) {
                const ModuleWish *w = &config->module_params[i];
                if (!f->driver || !streq(f->driver, w->module))
                        continue;
                r = module_wishes_add(&plan->modules, &plan->n_modules, w->module, w->param, w->value);
                if (r < 0)
                        return r;
                /* one outcome told everywhere: this kernel lacking the parameter is decided here, from
                 * the facts; apply/modules.c takes it from the wish (modules/, its note) */
                const ModuleParamFacts *p = find_param(f, w->module, w->param);
                if (!p || !p->value) {
                        char why[256];
                        plan->modules[plan->n_modules - 1].unsupported = true;
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_LEFT_ALONE, "config",
                                         "driver=%s config [Module:%s] %s=%s -> %s.%s unsupported, nothing written: %s",
                                         f->driver, w->module, w->param, w->value, w->module, w->param,
                                         module_param_unsupported_reason(w->module, w->param, why, sizeof(why)));
                } else
                        r = plan_explain(plan, f->name, 0, PLAN_OUTCOME_PLANNED, "config",
                                         "driver=%s config [Module:%s] %s=%s %s=%s -> %s.%s=%s wanted, takes effect at %s once "
                                         "set (%s); its state: modules/%s/%s",
                                         f->driver, w->module, w->param, w->value, w->param, p->value, w->module, w->param,
                                         w->value, w->takes_effect,
                                         w->load_time_only ? "load-time only: /etc/modprobe.d" : "runtime-writable: /sys/module",
                                         w->module, w->param);
                if (r < 0)
                        return r;
        }
        return builtin_wishes(f, plan);
}

bool modprobe_file_is_blkmqd(const char *text) {
        assert(text);
        const char *p = startswith(text, MODPROBE_D_HEADER "\n");
        bool wanted_by = false;

        if (!p)
                return false;
        /* only what modprobe_content() writes: pairs of "# wanted by ..." and "options M P=V" */
        while (*p) {
                size_t l = strcspn(p, "\n");
                char m[128], pv[256], rest;
                if (p[l] != '\n')
                        return false;           /* a torn or hand-appended last line */
                if (!wanted_by && startswith(p, "# wanted by "))
                        wanted_by = true;
                else if (wanted_by && startswith(p, "options ") && l < 384 &&
                         sscanf(p, "options %127s %255s%c", m, pv, &rest) == 3 && rest == '\n' && strchr(pv, '='))
                        wanted_by = false;
                else
                        return false;
                p += l + 1;
        }
        return !wanted_by;
}

void module_merged_free(ModuleMerged *a, size_t n) {
        for (size_t i = 0; a && i < n; i++) {
                free(a[i].module);
                free(a[i].param);
                free(a[i].wanted);
                free(a[i].wanted_by);
                free(a[i].owner);
        }
        free(a);
}

static ModuleMerged *merged_get_or_add(ModuleMerged **a, size_t *n, const char *module, const char *param) {
        for (size_t i = 0; i < *n; i++)
                if (streq((*a)[i].module, module) && streq((*a)[i].param, param))
                        return &(*a)[i];
        ModuleMerged *b = reallocarray(*a, *n + 1, sizeof(ModuleMerged));
        if (!b)
                return NULL;
        *a = b;
        ModuleMerged *e = &b[(*n)++];
        *e = (ModuleMerged) { .module = strdup(module), .param = strdup(param) };
        return e->module && e->param ? e : NULL;
}

static int append_name(char **list, const char *name) {
        char *s = NULL;
        if (asprintf(&s, "%s%s%s", *list ?: "", *list ? " " : "", name) < 0)
                return -ENOMEM;
        free(*list);
        *list = s;
        return 0;
}

int policy_modules_merge(const PolicyPeer *peers, size_t n_peers, ModuleMerged **ret, size_t *ret_n) {
        assert(ret);
        assert(ret_n);
        ModuleMerged *a = NULL;
        size_t n = 0;

        for (size_t i = 0; i < n_peers; i++) {
                const Plan *pl = peers[i].plan;
                for (size_t j = 0; j < pl->n_modules; j++) {
                        const ModuleWish *w = &pl->modules[j];
                        ModuleMerged *e = merged_get_or_add(&a, &n, w->module, w->param);
                        if (!e)
                                goto oom;
                        if (e->wanted && !streq(e->wanted, w->value))
                                e->conflict = true;
                        else if (free_and_strdup(&e->wanted, w->value) < 0)
                                goto oom;
                        if (append_name(&e->wanted_by, peers[i].name) < 0)
                                goto oom;
                        e->unsupported = e->unsupported || w->unsupported;
                        e->root_disk = e->root_disk || peers[i].facts->root_disk;
                }
        }
        /* the wishes another tool's setting wins over: deferred, unless a disk wants it written */
        for (size_t i = 0; i < n_peers; i++) {
                const Plan *pl = peers[i].plan;
                for (size_t j = 0; j < pl->n_modules_deferred; j++) {
                        const ModuleWish *w = &pl->modules_deferred[j];
                        ModuleMerged *e = merged_get_or_add(&a, &n, w->module, w->param);
                        if (!e)
                                goto oom;
                        if (e->wanted && !e->deferred)
                                continue;
                        if (free_and_strdup(&e->wanted, w->value) < 0 || free_and_strdup(&e->owner, w->owner) < 0 ||
                            append_name(&e->wanted_by, peers[i].name) < 0)
                                goto oom;
                        e->deferred = true;
                        e->root_disk = e->root_disk || peers[i].facts->root_disk;
                }
        }
        *ret = a;
        *ret_n = n;
        return 0;
oom:
        module_merged_free(a, n);
        return -ENOMEM;
}
