/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * IRQ affinity of request-queue vectors.
 *
 * blk_mq_pci_map_queues() maps hctx N to the CPUs of vector offset+N, so a vector placed
 * on its hctx's CPUs completes where the submitter runs. Kernel-managed vectors
 * (IRQD_AFFINITY_MANAGED; virtio, nvme, most HBAs with pci_alloc_irq_vectors_affinity)
 * already are, and user writes fail (-EIO <= 6.11, -EPERM >= 6.12, eb29369fa543):
 * those are reported as "managed by kernel" and never written.
 *
 * No vector is placed on an isolated CPU (isolcpus=, nohz_full=, an isolated cpuset partition:
 * KernelConfigFacts.isolated): those CPUs are taken out of its target, and a vector whose
 * hctx has only isolated CPUs is not placed; the explain line names each such vector. One
 * blkmqd had placed before its CPUs all became isolated goes back to its affinity before
 * blkmqd at once (apply/apply.c irq_isolated_decide()).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"
#include "memstream.h"
#include "policy-internal.h"

static size_t managed_queue_vectors(const DiskFacts *f) {
        size_t n = 0;
        for (size_t i = 0; i < f->n_irqs; i++)
                n += f->irqs[i].queue && f->irqs[i].managed == TRISTATE_YES;
        return n;
}

bool irq_affinity_hctx_all_managed(const DiskFacts *f) {
        return f->n_hctx > 0 && managed_queue_vectors(f) >= f->n_hctx;
}

bool irq_affinity_needs_map(const DiskFacts *f) {
        for (size_t i = 0; i < f->n_irqs; i++)
                if (f->irqs[i].queue && f->irqs[i].managed != TRISTATE_YES)
                        return !irq_affinity_hctx_all_managed(f);
        return false;
}

int irq_affinity_target(const DiskFacts *f, const char *want, const IrqFacts *q, char **ret, char **ret_wanted) {
        assert(want);
        assert(q);
        assert(ret);
        _cleanup_(cpuset_done) CpuSet parsed = {}, usable = {};
        const CpuSet *cpus;

        *ret = NULL;
        if (ret_wanted)
                *ret_wanted = NULL;
        if (streq(want, "hctx")) {
                if (q->hctx < 0 || (size_t) q->hctx >= f->n_hctx || !f->hctx[q->hctx].cpu_list)
                        return IRQ_TARGET_NONE;
                cpus = &f->hctx[q->hctx].cpus;
        } else {
                int r = cpuset_parse(want, &parsed);
                if (r < 0)
                        return r;
                cpus = &parsed;
        }
        if (cpuset_count(cpus) == 0)
                return IRQ_TARGET_NONE;         /* an hctx without CPUs (mq/N/cpu_list empty) */
        if (disk_facts_usable_cpus(f, cpus, &usable) < 0)
                return -ENOMEM;
        IrqTarget t = cpuset_count(&usable) == 0 ? IRQ_TARGET_ISOLATED :
                      cpuset_count(&usable) < cpuset_count(cpus) ? IRQ_TARGET_TRIMMED : IRQ_TARGET_CPUS;
        if (t != IRQ_TARGET_ISOLATED && !(*ret = cpuset_format(&usable)))
                return -ENOMEM;
        if (ret_wanted && !(*ret_wanted = cpuset_format(cpus))) {
                *ret = mfree_str(*ret);
                return -ENOMEM;
        }
        return t;
}

/* The isolated CPUs of want that the placement left out, added to *removed. 0 or -ENOMEM. */
static int add_removed(const DiskFacts *f, const char *wanted, CpuSet *removed) {
        _cleanup_(cpuset_done) CpuSet w = {};
        int r = cpuset_parse(wanted, &w);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        for (unsigned cpu = 0; cpu < w.n_words * 64; cpu++)
                if (cpuset_isset(&w, cpu) && cpuset_isset(&f->kernel.isolated, cpu) && cpuset_add(removed, cpu) < 0)
                        return -ENOMEM;
        return 0;
}

/* "; isolated CPUs <list> (<source>) get no vector: IRQ 45 (hctx 1, CPUs 1) left where it is, IRQ 44 on 0 (not 0-1)"
 * for the vectors want would place that isolated CPUs change; "" when none. A vector with only
 * isolated CPUs that blkmqd had moved (its affinity before blkmqd in h, not its affinity now) reads
 * "back to <its affinity before blkmqd>". Newly allocated; NULL on ENOMEM.
 * *ret_applied: the same vectors for applied/irq_affinity, after the CPUs left out and where
 * each came from ("CPU 3 isolated (...): IRQ 28 (hctx 3, CPUs 3) left where it is"); NULL when none. */
static char *isolated_note(const DiskFacts *f, const PolicyHistory *h, const char *want, char **ret_applied) {
        _cleanup_(memstream_done) MemStream m = {};
        _cleanup_(cpuset_done) CpuSet removed = {};
        FILE *out = memstream_open(&m);
        size_t n = 0;
        *ret_applied = NULL;
        if (!out)
                return NULL;
        for (size_t i = 0; f->kernel.isolated_known && i < f->n_irqs; i++) {
                const IrqFacts *q = &f->irqs[i];
                _cleanup_free_ char *target = NULL, *wanted = NULL;
                if (!q->queue || q->managed == TRISTATE_YES)
                        continue;
                int t = irq_affinity_target(f, want, q, &target, &wanted);
                if (t == -ENOMEM)
                        return NULL;
                if (t != IRQ_TARGET_TRIMMED && t != IRQ_TARGET_ISOLATED)
                        continue;
                if (add_removed(f, wanted, &removed) < 0)
                        return NULL;
                fprintf(out, "%s", n++ ? ", " : "");
                if (q->hctx >= 0 && streq(want, "hctx"))
                        fprintf(out, "IRQ %u (hctx %u, CPUs %s) ", q->irq, f->hctx[q->hctx].index, wanted);
                else
                        fprintf(out, "IRQ %u (CPUs %s) ", q->irq, wanted);
                const char *before = policy_history_irq_before(h, q->irq);
                if (t == IRQ_TARGET_ISOLATED && before && !streq_ptr(before, q->affinity_list))
                        /* blkmqd placed it: apply puts its original back (irq_isolated_decide()) */
                        fprintf(out, "back to %s (its affinity before blkmqd)", before);
                else if (t == IRQ_TARGET_ISOLATED)
                        fputs("left where it is", out);
                else
                        fprintf(out, "on %s", target);
        }
        _cleanup_free_ char *list = NULL;
        if (memstream_close(&m, &list) < 0)
                return NULL;
        char *s = NULL;
        if (n == 0)
                return strdup("");
        _cleanup_free_ char *which = NULL;
        if (kernel_isolated_describe(&f->kernel, &removed, &which) < 0 ||
            asprintf(ret_applied, "%s: %s", which, list) < 0) {
                *ret_applied = NULL;
                return NULL;
        }
        if (asprintf(&s, "; isolated CPUs %s (%s) get no vector: %s", f->kernel.isolated_list,
                     strna(f->kernel.isolated_source), list) < 0) {
                *ret_applied = mfree_str(*ret_applied);
                return NULL;
        }
        return s;
}

int policy_irq_affinity(const DiskFacts *f, const PolicyHistory *h, const ClassPolicy *cp, const PolicyOverrides *o, Plan *plan) {
        assert(cp);
        const char *cls = disk_class_to_string(plan->class);
        size_t queue = 0, managed = 0, mapped = 0;

        for (size_t i = 0; i < f->n_irqs; i++)
                if (f->irqs[i].queue) {
                        queue++;
                        managed += f->irqs[i].managed == TRISTATE_YES;
                        mapped += f->irqs[i].hctx >= 0;
                }

        char idle[256];
        if (queue == 0)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, "irq-affinity-none",
                                    "queue vectors=0 -> irq_affinity left alone: no request-queue IRQ vectors (%s)%s",
                                    f->unknown[FACT_IRQ_VECTORS] ?:
                                    f->n_irqs == 0 ? "no MSI/MSI-X vectors: legacy INTx interrupts" : "only config/control vectors",
                                    overrides_idle_note(o, KNOB_BIT(KNOB_IRQ_AFFINITY), idle, sizeof(idle)));

        const char *want = o->irq_affinity ?: (cp->irq_follow_hctx ? "hctx" : NULL);
        if (override_keeps(o, KNOB_IRQ_AFFINITY)) {
                if (h->irq_written > 0)
                        return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE,
                                            RULE_OF_ORIGIN(o, KNOB_IRQ_AFFINITY),
                                            "%s=keep queue vectors=%zu (%zu placed by blkmqd) -> no wish, blkmqd's write undone: "
                                            "irq_affinity before blkmqd restored", override_label(o, KNOB_IRQ_AFFINITY), queue,
                                            h->irq_written);
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, RULE_OF_ORIGIN(o, KNOB_IRQ_AFFINITY),
                                    "%s=keep queue vectors=%zu -> irq_affinity left alone", override_label(o, KNOB_IRQ_AFFINITY), queue);
        }
        if (!want && h->irq_written > 0)
                /* an override taken back: blkmqd's writes are undone (apply/apply.c), not left */
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE,
                                    RULE_OF_CLASS("irq-affinity", cls),
                                    "class=%s queue vectors=%zu (%zu placed by blkmqd) -> no wish, blkmqd's write undone: "
                                    "irq_affinity before blkmqd restored (IrqAffinity=keep for [Class:%s])",
                                    cls, queue, h->irq_written, cls);
        if (!want)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE,
                                    RULE_OF_CLASS("irq-affinity", cls),
                                    "class=%s queue vectors=%zu -> irq_affinity left alone: the class does not place IRQs "
                                    "(IrqAffinity=keep for [Class:%s])", cls, queue, cls);

        if (managed == queue)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, "irq-affinity-managed",
                                    "queue vectors=%zu managed=%zu -> irq_affinity left alone: managed by kernel%s", queue, managed,
                                    overrides_idle_note(o, KNOB_BIT(KNOB_IRQ_AFFINITY), idle, sizeof(idle)));

        if (streq(want, "hctx") && irq_affinity_hctx_all_managed(f))
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, "irq-affinity-managed",
                                    "queue vectors=%zu managed=%zu hctx=%zu -> irq_affinity left alone: every hctx has its own kernel-managed vector, the other %zu serve no hctx",
                                    queue, managed, f->n_hctx, queue - managed);

        if (streq(want, "hctx") && mapped == 0)
                return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_LEFT_ALONE, "irq-affinity-unmapped",
                                    "queue vectors=%zu hctx=%zu -> irq_affinity left alone: no vector could be matched to an hctx",
                                    queue, f->n_hctx);

        _cleanup_free_ char *isolated = isolated_note(f, h, want, &plan->isolated[KNOB_IRQ_AFFINITY]);
        plan->irq_affinity = strdup(want);
        if (!plan->irq_affinity || !isolated)
                return -ENOMEM;
        return plan_explain(plan, f->name, KNOB_BIT(KNOB_IRQ_AFFINITY), PLAN_OUTCOME_PLANNED,
                            !o->irq_affinity ? "irq-affinity-follow-hctx" : RULE_OF_ORIGIN(o, KNOB_IRQ_AFFINITY),
                            "%s=%s queue vectors=%zu managed=%zu mapping=%s -> irq_affinity=%s, managed vectors skipped%s",
                            o->irq_affinity ? override_label(o, KNOB_IRQ_AFFINITY) : "class",
                            o->irq_affinity ?: cls, queue, managed, f->irq_mapping ?: "none", want, isolated);
}
