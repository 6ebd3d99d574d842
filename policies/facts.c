/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "macro.h"
#include "memstream.h"
#include "policy.h"
#include "strv.h"

static const char * const fact_table[_FACT_MAX] = {
        [FACT_DEVNUM]            = "devnum",
        [FACT_SIZE]              = "size",
        [FACT_NR_HW_QUEUES]      = "nr_hw_queues",
        [FACT_ROTATIONAL]        = "rotational",
        [FACT_ELEVATOR]          = "elevator",
        [FACT_ELEVATORS]         = "elevators",
        [FACT_RQ_AFFINITY]       = "rq_affinity",
        [FACT_NR_REQUESTS]       = "nr_requests",
        [FACT_QUEUE_DEPTH]       = "queue_depth",
        [FACT_DRIVER]            = "driver",
        [FACT_TRANSPORT]         = "transport",
        [FACT_SCSI_HOST]         = "scsi_host",
        [FACT_HOST_NR_HW_QUEUES] = "host_nr_hw_queues",
        [FACT_HOST_CAN_QUEUE]    = "host_can_queue",
        [FACT_SHARED_TAGS]       = "shared_tags",
        [FACT_SQ_SCHED]          = "sq_sched",
        [FACT_IRQ_VECTORS]       = "irq_vectors",
        [FACT_NUMA_NODE]         = "numa_node",
        [FACT_KERNEL_RELEASE]    = "kernel_release",
        [FACT_STACKED]           = "stacked",
        [FACT_IDENTITY]          = "identity",
        [FACT_ZONED]             = "zoned",
        [FACT_ELEVATORS_LOADABLE] = "elevators_loadable",
        [FACT_MULTIPATH]         = "multipath",
        [FACT_VIRTUAL]           = "virtual",
        [FACT_MEDIUM_ROTATION]   = "medium_rotation",
        [FACT_ROTATIONAL_HINT]   = "rotational_hint",
        [FACT_SPEED]             = "speed",
        [FACT_SPEED_SOURCE]      = "speed_source",
        [FACT_DRIVER_MODULE]     = "driver_module",
        [FACT_PREEMPT_RT]        = "preempt_rt",
        [FACT_IRQ_THREADS_FORCED] = "irq_threads_forced",
        [FACT_ISOLATED_CPUS]     = "isolated_cpus",
        [FACT_TRANSPORT_DEVICE]  = "transport_device",
};

static const char * const zoned_table[_ZONED_MAX] = {
        [ZONED_NONE]         = "none",
        [ZONED_HOST_AWARE]   = "host-aware",
        [ZONED_HOST_MANAGED] = "host-managed",
};

DEFINE_STRING_TABLE_LOOKUP(zoned, Zoned, zoned_table, _ZONED_MAX, _ZONED_INVALID);

DEFINE_STRING_TABLE_LOOKUP(fact, Fact, fact_table, _FACT_MAX, _FACT_INVALID);

/* block/blk-mq-debugfs.c hctx_types[] */
static const char * const hctx_type_table[_HCTX_TYPE_MAX] = {
        [HCTX_TYPE_DEFAULT] = "default",
        [HCTX_TYPE_READ]    = "read",
        [HCTX_TYPE_POLL]    = "poll",
};

DEFINE_STRING_TABLE_LOOKUP(hctx_type, HctxType, hctx_type_table, _HCTX_TYPE_MAX, _HCTX_TYPE_INVALID);

int disk_facts_hctx_maps(const DiskFacts *f, size_t ret[_HCTX_TYPE_MAX]) {
        assert(f);
        size_t n[_HCTX_TYPE_MAX] = {};
        for (size_t i = 0; i < f->n_hctx; i++) {
                HctxType t = f->hctx[i].type;
                if (t < 0 || t >= _HCTX_TYPE_MAX)
                        return -ENODATA;
                n[t]++;
        }
        memcpy(ret, n, sizeof(n));
        return 0;
}

const char *tristate_to_string(Tristate t) {
        return t == TRISTATE_YES ? "1" : t == TRISTATE_NO ? "0" : "unknown";
}

DiskFacts *disk_facts_new(const char *name) {
        DiskFacts *f = calloc(1, sizeof(DiskFacts));
        if (!f)
                return NULL;
        f->name = strdup(name);
        if (!f->name) {
                free(f);
                return NULL;
        }
        f->rotational = f->shared_tags = f->sq_sched = TRISTATE_UNKNOWN;
        f->rq_affinity = -1;
        f->nr_requests = f->queue_depth = f->host_nr_hw_queues = f->host_can_queue = -1;
        f->numa_node = -1;
        f->scsi_channel = f->rotation_rate = -1;
        f->kernel.preempt_rt = f->kernel.irq_threads_forced = TRISTATE_UNKNOWN;
        return f;
}

void kernel_config_facts_done(KernelConfigFacts *k) {
        free(k->preempt_rt_source);
        free(k->irq_threads_source);
        cpuset_done(&k->isolated);
        free(k->isolated_list);
        free(k->isolated_source);
        for (size_t i = 0; i < k->n_isolated_sources; i++) {
                cpuset_done(&k->isolated_sources[i].cpus);
                free(k->isolated_sources[i].label);
        }
        free(k->isolated_sources);
        *k = (KernelConfigFacts) { .preempt_rt = TRISTATE_UNKNOWN, .irq_threads_forced = TRISTATE_UNKNOWN };
}

static int strdup_or_null(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return !s || *ret ? 0 : -ENOMEM;
}

int kernel_config_facts_copy(const KernelConfigFacts *src, KernelConfigFacts *ret) {
        assert(src);
        assert(ret);
        KernelConfigFacts k = {
                .preempt_rt = src->preempt_rt,
                .irq_threads_forced = src->irq_threads_forced,
                .isolated_known = src->isolated_known,
                .isolated_managed_irq = src->isolated_managed_irq,
        };
        if (strdup_or_null(src->preempt_rt_source, &k.preempt_rt_source) < 0 ||
            strdup_or_null(src->irq_threads_source, &k.irq_threads_source) < 0 ||
            strdup_or_null(src->isolated_list, &k.isolated_list) < 0 ||
            strdup_or_null(src->isolated_source, &k.isolated_source) < 0 ||
            cpuset_copy(&src->isolated, &k.isolated) < 0 ||
            (src->n_isolated_sources > 0 &&
             !(k.isolated_sources = calloc(src->n_isolated_sources, sizeof(IsolatedSource))))) {
                kernel_config_facts_done(&k);
                return -ENOMEM;
        }
        for (; k.n_isolated_sources < src->n_isolated_sources; k.n_isolated_sources++) {
                const IsolatedSource *from = &src->isolated_sources[k.n_isolated_sources];
                IsolatedSource *to = &k.isolated_sources[k.n_isolated_sources];
                if (cpuset_copy(&from->cpus, &to->cpus) < 0 || strdup_or_null(from->label, &to->label) < 0) {
                        k.n_isolated_sources++;
                        kernel_config_facts_done(&k);
                        return -ENOMEM;
                }
        }
        *ret = k;
        return 0;
}

bool kernel_config_facts_equal(const KernelConfigFacts *a, const KernelConfigFacts *b) {
        if (a->preempt_rt != b->preempt_rt || a->irq_threads_forced != b->irq_threads_forced ||
            a->isolated_known != b->isolated_known || a->isolated_managed_irq != b->isolated_managed_irq ||
            !streq_ptr(a->preempt_rt_source, b->preempt_rt_source) || !streq_ptr(a->irq_threads_source, b->irq_threads_source) ||
            !streq_ptr(a->isolated_list, b->isolated_list) || !streq_ptr(a->isolated_source, b->isolated_source) ||
            !cpuset_equal(&a->isolated, &b->isolated) || a->n_isolated_sources != b->n_isolated_sources)
                return false;
        for (size_t i = 0; i < a->n_isolated_sources; i++)
                if (!cpuset_equal(&a->isolated_sources[i].cpus, &b->isolated_sources[i].cpus) ||
                    !streq_ptr(a->isolated_sources[i].label, b->isolated_sources[i].label))
                        return false;
        return true;
}

int kernel_isolated_describe(const KernelConfigFacts *k, const CpuSet *cpus, char **ret) {
        assert(k);
        assert(cpus);
        assert(ret);
        _cleanup_(cpuset_done) CpuSet all = {};
        _cleanup_(memstream_done) MemStream m = {};
        _cleanup_free_ char *parts = NULL, *first = NULL;
        size_t n_parts = 0;

        *ret = NULL;
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        /* per source, the CPUs of cpus it isolates that no source before it named */
        for (size_t i = 0; i < k->n_isolated_sources; i++) {
                _cleanup_(cpuset_done) CpuSet mine = {};
                const IsolatedSource *src = &k->isolated_sources[i];
                for (unsigned w = 0; w < cpus->n_words; w++)
                        for (unsigned b = 0; b < 64; b++) {
                                unsigned cpu = w * 64 + b;
                                if ((cpus->bits[w] & (UINT64_C(1) << b)) && cpuset_isset(&src->cpus, cpu) &&
                                    !cpuset_isset(&all, cpu) && (cpuset_add(&mine, cpu) < 0 || cpuset_add(&all, cpu) < 0))
                                        return -ENOMEM;
                        }
                if (cpuset_count(&mine) == 0)
                        continue;
                _cleanup_free_ char *l = cpuset_format(&mine);
                if (!l)
                        return -ENOMEM;
                fprintf(out, "%s%s: %s", n_parts ? "; " : "", l, strna(src->label));
                if (n_parts++ == 0 && !(first = strdup(strna(src->label))))
                        return -ENOMEM;
        }
        if (memstream_close(&m, &parts) < 0)
                return -ENOMEM;
        if (n_parts == 0)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        _cleanup_free_ char *list = cpuset_format(&all);
        if (!list)
                return -ENOMEM;
        /* one source: its label alone, the CPUs are said before it */
        return asprintf(ret, "CPU%s %s isolated (%s)", cpuset_count(&all) > 1 ? "s" : "", list, n_parts == 1 ? first : parts) < 0 ?
                -ENOMEM : 0;
}

int disk_facts_usable_cpus(const DiskFacts *f, const CpuSet *want, CpuSet *ret) {
        assert(f);
        assert(want);
        assert(ret);
        CpuSet u = {};
        for (unsigned w = 0; w < want->n_words; w++)
                for (unsigned b = 0; b < 64; b++) {
                        unsigned cpu = w * 64 + b;
                        if (!(want->bits[w] & (UINT64_C(1) << b)))
                                continue;
                        if (f->kernel.isolated_known && cpuset_isset(&f->kernel.isolated, cpu))
                                continue;
                        if (cpuset_add(&u, cpu) < 0) {
                                cpuset_done(&u);
                                return -ENOMEM;
                        }
                }
        *ret = u;
        return 0;
}

static void irq_facts_done(IrqFacts *q) {
        free(q->name);
        cpuset_done(&q->affinity);
        free(q->affinity_list);
        free(q->managed_source);
}

void irq_facts_free_array(IrqFacts *irqs, size_t n) {
        for (size_t i = 0; i < n; i++)
                irq_facts_done(&irqs[i]);
        free(irqs);
}

static int irq_facts_copy(const IrqFacts *src, IrqFacts *dst) {
        *dst = (IrqFacts) { .irq = src->irq, .managed = src->managed, .queue = src->queue, .hctx = src->hctx };
        if (!(dst->name = strdup(strempty(src->name))) || cpuset_copy(&src->affinity, &dst->affinity) < 0 ||
            (src->affinity_list && !(dst->affinity_list = strdup(src->affinity_list))) ||
            (src->managed_source && !(dst->managed_source = strdup(src->managed_source)))) {
                irq_facts_done(dst);
                return -ENOMEM;
        }
        return 0;
}

IrqVectors *irq_vectors_new(size_t n) {
        IrqVectors *v = calloc(1, sizeof(IrqVectors) + (n ?: 1) * sizeof(IrqFacts));
        if (v)
                v->refs = 1;
        return v;
}

IrqVectors *irq_vectors_ref(IrqVectors *v) {
        if (v)
                __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
        return v;
}

IrqVectors *irq_vectors_unref(IrqVectors *v) {
        if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return NULL;
        for (size_t i = 0; i < v->n; i++)
                irq_facts_done(&v->v[i]);
        free(v);
        return NULL;
}

void disk_facts_share_irqs(DiskFacts *f, IrqVectors *v) {
        assert(f);
        f->irqs_shared = irq_vectors_ref(v);
        f->irqs = v->v;
        f->n_irqs = v->n;
}

int disk_facts_own_irqs(DiskFacts *f) {
        assert(f);
        IrqVectors *v = f->irqs_shared;
        if (!v || __atomic_load_n(&v->refs, __ATOMIC_ACQUIRE) == 1)
                return 0;       /* its own already, or the last holder: only f sees a change */
        IrqFacts *own = calloc(v->n ?: 1, sizeof(IrqFacts));
        if (!own)
                return -ENOMEM;
        for (size_t i = 0; i < v->n; i++)
                if (irq_facts_copy(&v->v[i], &own[i]) < 0) {
                        irq_facts_free_array(own, i);
                        return -ENOMEM;
                }
        f->irqs = own;
        f->irqs_shared = irq_vectors_unref(v);
        return 0;
}

DiskFacts *disk_facts_free(DiskFacts *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n_hctx; i++) {
                cpuset_done(&f->hctx[i].cpus);
                free(f->hctx[i].cpu_list);
        }
        if (f->irqs_shared)
                irq_vectors_unref(f->irqs_shared);
        else
                irq_facts_free_array(f->irqs, f->n_irqs);
        free(f->irq_mapping);
        free(f->hctx_type_unknown);
        free(f->shared_tags_source);
        for (size_t i = 0; i < f->n_modparams; i++) {
                free(f->modparams[i].module);
                free(f->modparams[i].param);
                free(f->modparams[i].value);
        }
        free(f->modparams);
        free(f->hctx);
        free(f->name);
        free(f->elevator);
        strv_free(f->elevators);
        free(f->driver);
        free(f->transport);
        free(f->transport_device);
        free(f->scsi_host);
        free(f->kernel_release);
        free(f->identity);
        strv_free(f->elevators_builtin);
        strv_free(f->elevators_loadable);
        strv_free(f->elevators_blocked);
        free(f->multipath_of);
        free(f->multipath_source);
        free(f->driver_module_source);
        kernel_config_facts_done(&f->kernel);
        disk_facts_clear_iosched(f);
        net_facts_free(f->net);
        for (size_t i = 0; i < _FACT_MAX; i++)
                free(f->unknown[i]);
        free(f);
        return NULL;
}

void disk_facts_clear_iosched(DiskFacts *f) {
        assert(f);
        for (size_t i = 0; i < f->n_iosched; i++) {
                free(f->iosched[i].name);
                free(f->iosched[i].value);
        }
        free(f->iosched);
        f->iosched = NULL;
        f->n_iosched = 0;
        f->iosched_elevator = mfree_str(f->iosched_elevator);
        f->iosched_unknown = mfree_str(f->iosched_unknown);
        f->iosched_ino = 0;
}

const IoschedValue *disk_facts_iosched(const DiskFacts *f, const char *name) {
        assert(f);
        for (size_t i = 0; name && i < f->n_iosched; i++)
                if (streq(f->iosched[i].name, name))
                        return &f->iosched[i];
        return NULL;
}

DEFINE_FACTS_SET_UNKNOWN(disk_facts_set_unknown, DiskFacts, Fact, _FACT_MAX);

/* Every MSI/MSI-X vector of the disk's PCI function; one that is no request-queue vector
 * (virtio "-config", nvme admin "nvmeNq0", no handler) says so with its name, e.g.
 * "35(virtio1-config:not-queue) 36": blkmqd never places those (policies/irq-affinity.c,
 * apply/apply.c count and write queue vectors only). */
static int render_irqs(const DiskFacts *f, FILE *out) {
        for (size_t i = 0; i < f->n_irqs; i++) {
                const IrqFacts *q = &f->irqs[i];
                fprintf(out, "%s%u", i ? " " : "", q->irq);
                if (!q->queue)
                        fprintf(out, "(%s:not-queue)", !isempty(q->name) ? q->name : "unused");
        }
        return 0;
}

int disk_facts_render(const DiskFacts *f, Fact fact, char **ret) {
        _cleanup_(memstream_done) MemStream m = {};

        if (fact < 0 || fact >= _FACT_MAX)
                return -EINVAL;

        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;

        if (f->unknown[fact])
                fprintf(out, "unknown: %s", f->unknown[fact]);
        else if (fact == FACT_VIRTUAL && f->unknown[FACT_DRIVER])
                fprintf(out, "unknown: driver unknown (%s)", f->unknown[FACT_DRIVER]);
        else
                switch (fact) {
                case FACT_DEVNUM:
                        fprintf(out, "%u:%u", f->major, f->minor);
                        break;
                case FACT_SIZE:
                        fprintf(out, "%" PRIu64, f->size_bytes);
                        break;
                case FACT_NR_HW_QUEUES:
                        fprintf(out, "%zu", f->n_hctx);
                        break;
                case FACT_ROTATIONAL:
                        fputs(tristate_to_string(f->rotational), out);
                        break;
                case FACT_ELEVATOR:
                        fputs(strna(f->elevator), out);
                        break;
                case FACT_ELEVATORS:
                        STRV_FOREACH(e, f->elevators)
                                fprintf(out, "%s%s", e == f->elevators ? "" : " ", *e);
                        break;
                case FACT_RQ_AFFINITY:
                        fprintf(out, "%d", f->rq_affinity);
                        break;
                case FACT_NR_REQUESTS:
                        fprintf(out, "%" PRIi64, f->nr_requests);
                        break;
                case FACT_QUEUE_DEPTH:
                        fprintf(out, "%" PRIi64, f->queue_depth);
                        break;
                case FACT_DRIVER:
                        fputs(strna(f->driver), out);
                        break;
                case FACT_TRANSPORT:
                        fputs(strna(f->transport), out);
                        break;
                case FACT_SCSI_HOST:
                        fputs(strna(f->scsi_host), out);
                        break;
                case FACT_TRANSPORT_DEVICE:
                        fputs(f->transport_device ?: "none", out);
                        break;
                case FACT_HOST_NR_HW_QUEUES:
                        fprintf(out, "%" PRIi64, f->host_nr_hw_queues);
                        break;
                case FACT_HOST_CAN_QUEUE:
                        fprintf(out, "%" PRIi64, f->host_can_queue);
                        break;
                case FACT_SHARED_TAGS:
                        fputs(tristate_to_string(f->shared_tags), out);
                        break;
                case FACT_SQ_SCHED:
                        fputs(tristate_to_string(f->sq_sched), out);
                        break;
                case FACT_IRQ_VECTORS:
                        render_irqs(f, out);
                        break;
                case FACT_NUMA_NODE:
                        fprintf(out, "%d", f->numa_node);
                        break;
                case FACT_KERNEL_RELEASE:
                        fputs(strna(f->kernel_release), out);
                        break;
                case FACT_STACKED:
                        fputs(f->stacked ? "1" : "0", out);
                        break;
                case FACT_IDENTITY:
                        fputs(f->identity ?: "", out);
                        break;
                case FACT_ZONED:
                        fputs(strna(zoned_to_string(f->zoned)), out);
                        break;
                case FACT_ELEVATORS_LOADABLE: {
                        const char *sep = "";
                        /* not what queue/scheduler lists now (a module loaded since gathering) */
                        STRV_FOREACH(e, f->elevators_builtin)
                                if (!strv_contains(f->elevators, *e)) {
                                        fprintf(out, "%s%s(built in)", sep, *e);
                                        sep = " ";
                                }
                        STRV_FOREACH(e, f->elevators_loadable)
                                if (!strv_contains(f->elevators, *e)) {
                                        fprintf(out, "%s%s(module)", sep, *e);
                                        sep = " ";
                                }
                        STRV_FOREACH(e, f->elevators_blocked) {
                                const char *colon = strchr(*e, ':');
                                if (!colon)
                                        continue;
                                fprintf(out, "%s%.*s(module, not loadable:%s)", sep, (int) (colon - *e), *e, colon + 1);
                                sep = " ";
                        }
                        break;
                }
                case FACT_VIRTUAL:
                        fputs(policy_virtual_driver(f->driver) ? "1" : "0", out);
                        break;
                case FACT_MEDIUM_ROTATION:
                        fprintf(out, "%d", f->rotation_rate);
                        break;
                case FACT_SPEED:
                case FACT_SPEED_SOURCE:
                        /* not a gathered fact: the manager's measurement (fuse-fs/devices.c) */
                        fputs("unknown: not measured here (the daemon measures it)", out);
                        break;
                case FACT_ROTATIONAL_HINT: {   /* the table alone; the daemon renders its evaluated plan's, with TrustRotational= */
                        RotationalHint hint;
                        policy_rotational_hint(f, NULL, &hint);
                        fprintf(out, "%s: %s", hint_trust_to_string(hint.trust), hint.why);
                        break;
                }
                case FACT_DRIVER_MODULE:
                        fputs(f->driver_module == DRIVER_MODULE_BUILTIN ? "builtin" :
                              f->driver_module == DRIVER_MODULE_LOADABLE ? "module" : "unknown", out);
                        if (f->driver_module_source)
                                fprintf(out, " (%s)", f->driver_module_source);
                        break;
                case FACT_PREEMPT_RT:
                case FACT_IRQ_THREADS_FORCED: {
                        bool rt = fact == FACT_PREEMPT_RT;
                        const char *src = rt ? f->kernel.preempt_rt_source : f->kernel.irq_threads_source;
                        fputs(tristate_to_string(rt ? f->kernel.preempt_rt : f->kernel.irq_threads_forced), out);
                        if (src)
                                fprintf(out, " (%s)", src);
                        break;
                }
                case FACT_ISOLATED_CPUS:
                        if (!f->kernel.isolated_known) {
                                fputs("unknown", out);
                                break;
                        }
                        fprintf(out, "%s (%s)", !isempty(f->kernel.isolated_list) ? f->kernel.isolated_list : "none",
                                strna(f->kernel.isolated_source));
                        break;
                case FACT_MULTIPATH:
                        switch (f->multipath) {
                        case MULTIPATH_LEG:
                                fprintf(out, "leg of %s", f->multipath_of ?: "a dm-multipath map");
                                break;
                        case MULTIPATH_LEG_BIO:
                                fprintf(out, "leg of bio-based %s", f->multipath_of ?: "dm-multipath map");
                                break;
                        case MULTIPATH_MAP:
                                fputs("request-based dm-multipath map", out);
                                break;
                        case MULTIPATH_NVME_PATH:
                                fprintf(out, "nvme path of %s", f->multipath_of ?: "a hidden head");
                                break;
                        default:
                                fputs("none", out);
                        }
                        break;
                default:
                        break;
                }
        fputc('\n', out);

        return memstream_close(&m, ret);
}

/* Leading decimal digits of *p as unsigned (no sign, no blanks, no overflow); advances *p. */
static int parse_release_number(const char **p, unsigned *ret) {
        unsigned long v = 0;
        const char *s = *p;
        if (*s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                v = v * 10 + (unsigned) (*s - '0');
                if (v > 1000000)
                        return -EINVAL;
        }
        *p = s;
        *ret = v;
        return 0;
}

int kernel_release_parse(const char *release, unsigned *ret_major, unsigned *ret_minor) {
        assert(ret_major);
        assert(ret_minor);
        unsigned a, b;
        const char *p = release;

        /* "<major>.<minor>" then the end or anything that is not a digit ("6.10.0-rc1", "6.1-foo") */
        if (!release || parse_release_number(&p, &a) < 0 || *p++ != '.' || parse_release_number(&p, &b) < 0)
                return -EINVAL;
        *ret_major = a;
        *ret_minor = b;
        return 0;
}

Tristate kernel_release_at_least(const char *release, unsigned major, unsigned minor) {
        unsigned a, b;
        if (kernel_release_parse(release, &a, &b) < 0)
                return TRISTATE_UNKNOWN;
        return a > major || (a == major && b >= minor) ? TRISTATE_YES : TRISTATE_NO;
}

bool disk_facts_zoned_needs_deadline(const DiskFacts *f, const char **ret_why) {
        assert(f);
        const char *why = NULL;
        if (f->unknown[FACT_ZONED] || (f->zoned != ZONED_HOST_AWARE && f->zoned != ZONED_HOST_MANAGED))
                goto out;
        switch (kernel_release_at_least(f->kernel_release, 6, 10)) {
        case TRISTATE_YES:
                break;
        case TRISTATE_NO:
                why = "kernel before zone write plugging (6.10, dd291d77cc90): zoned writes are ordered by mq-deadline's zone write locking (5700f69178e9)";
                break;
        default:
                why = "kernel release unknown, so zone write plugging (6.10, dd291d77cc90) may be missing: zoned writes may need mq-deadline's zone write locking";
        }
out:
        if (ret_why)
                *ret_why = why;
        return why != NULL;
}

static const char * const elevator_source_table[] = {
        [ELEVATOR_UNAVAILABLE] = "unavailable",
        [ELEVATOR_LISTED]      = "listed in queue/scheduler",
        [ELEVATOR_BUILTIN]     = "built in (modules.builtin)",
        [ELEVATOR_LOADABLE]    = "loadable module (modules.dep): the kernel loads it on the write",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(elevator_source, ElevatorSource, elevator_source_table, ELEMENTSOF(elevator_source_table));

const char *disk_facts_elevator_blocked(const DiskFacts *f, const char *name) {
        assert(f);
        size_t l = name ? strlen(name) : 0;
        STRV_FOREACH(e, f->elevators_blocked)
                if (l && strncmp(*e, name, l) == 0 && (*e)[l] == ':')
                        return *e + l + 2;
        return NULL;
}

ElevatorSource disk_facts_elevator_source(const DiskFacts *f, const char *name) {
        if (!f->elevator_configurable || !name)
                return ELEVATOR_UNAVAILABLE;
        if (strv_contains(f->elevators, name))
                return ELEVATOR_LISTED;
        /* before 6.10 a zoned queue requires ELEVATOR_F_ZBD_SEQ_WRITE: only mq-deadline has it */
        if (disk_facts_zoned_needs_deadline(f, NULL) && !streq(name, "mq-deadline"))
                return ELEVATOR_UNAVAILABLE;
        if (strv_contains(f->elevators_builtin, name))
                return ELEVATOR_BUILTIN;
        if (strv_contains(f->elevators_loadable, name))
                return ELEVATOR_LOADABLE;
        return ELEVATOR_UNAVAILABLE;
}

const IrqFacts *disk_facts_find_irq(const DiskFacts *f, unsigned irq) {
        for (size_t i = 0; i < f->n_irqs; i++)
                if (f->irqs[i].irq == irq)
                        return &f->irqs[i];
        return NULL;
}

/* Set f->irqs[].hctx to hctx (n_irqs entries), owning the vectors first only where one changes:
 * the disks behind one function map its shared vectors alike. 0 or -ENOMEM. */
static int irqs_set_hctx(DiskFacts *f, const int *hctx) {
        size_t i = 0;
        while (i < f->n_irqs && f->irqs[i].hctx == hctx[i])
                i++;
        if (i == f->n_irqs)
                return 0;
        int r = disk_facts_own_irqs(f);
        if (r < 0)
                return r;
        for (; i < f->n_irqs; i++)
                f->irqs[i].hctx = hctx[i];
        return 0;
}

int disk_facts_map_irqs(DiskFacts *f, const PolicyHistory *history) {
        size_t n_queue = 0, mapped = 0, n_irq_hctx = 0;
        const char *how = NULL;
        _cleanup_free_ int *hctx = calloc(f->n_irqs ?: 1, sizeof(int));     /* each vector's hctx, -1 none */
        if (!hctx)
                return -ENOMEM;

        for (size_t i = 0; i < f->n_hctx; i++) {
                f->hctx[i].irq = -1;
                n_irq_hctx += f->hctx[i].type != HCTX_TYPE_POLL;        /* a poll hctx has no vector */
        }
        for (size_t i = 0; i < f->n_irqs; i++) {
                hctx[i] = -1;
                n_queue += f->irqs[i].queue;
        }

        /* By affinity: exact cpu set equality, each vector used once; a vector blkmqd moved by
         * the affinity it had before (the kernel's spread, which blkmqd's placement replaced) */
        for (size_t h = 0; h < f->n_hctx; h++)
                for (size_t i = 0; i < f->n_irqs && f->hctx[h].type != HCTX_TYPE_POLL; i++) {
                        const IrqFacts *q = &f->irqs[i];
                        _cleanup_(cpuset_done) CpuSet before = {};
                        const CpuSet *aff = &q->affinity;
                        const char *was = policy_history_irq_before(history, q->irq);
                        if (was && cpuset_parse(was, &before) >= 0)
                                aff = &before;
                        else if (!q->affinity_list)
                                continue;
                        if (!q->queue || hctx[i] >= 0 || !f->hctx[h].cpu_list)
                                continue;
                        if (cpuset_equal(aff, &f->hctx[h].cpus)) {
                                hctx[i] = h;
                                f->hctx[h].irq = i;
                                mapped++;
                                break;
                        }
                }
        if (mapped == n_irq_hctx && mapped > 0)
                how = "affinity";
        else if (n_queue == n_irq_hctx && n_queue > 0) {
                /* By order, when every hctx that takes interrupts has exactly one queue vector. */
                size_t h = 0;
                for (size_t i = 0; i < f->n_hctx; i++)
                        f->hctx[i].irq = -1;
                for (size_t i = 0; i < f->n_irqs; i++) {
                        hctx[i] = -1;
                        if (!f->irqs[i].queue)
                                continue;
                        while (f->hctx[h].type == HCTX_TYPE_POLL)
                                h++;
                        hctx[i] = h;
                        f->hctx[h++].irq = i;
                }
                how = "order";
        } else if (mapped > 0)
                how = "affinity (partial)";
        int r = irqs_set_hctx(f, hctx);
        if (r < 0)
                return r;
        return how ? free_and_strdup(&f->irq_mapping, how) : 0;
}

int disk_facts_remap_irqs(DiskFacts *f, const PolicyHistory *was, const PolicyHistory *now) {
        bool remap = false;
        for (size_t i = 0; i < f->n_irqs && !remap; i++)
                remap = !streq_ptr(policy_history_irq_before(was, f->irqs[i].irq),
                                   policy_history_irq_before(now, f->irqs[i].irq));
        if (!remap || !f->hctx_details)
                return 0;
        int r = disk_facts_map_irqs(f, now);
        return r < 0 ? r : 1;
}
