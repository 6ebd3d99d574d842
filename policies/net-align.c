/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Network alignment (rule net-align): line a network disk's I/O queues (hctx) up with the
 * queues of the NIC that carries them. See docs/DESIGN-NOTES.md "Network alignment".
 *
 * The model: the NIC has Q queues in use (ethtool channels: combined + max(rx, tx)). With n hctx,
 * hctx position i is served by NIC queue i * Q / n when n >= Q (contiguous groups), and by
 * queue i when n < Q (queues Q-n.. serve none). NIC queue q should then interrupt on, and
 * transmit from (XPS), the CPUs of its hctx group: an nvme-tcp queue's I/O worker and socket
 * run on the CPUs of its hctx (drivers/nvme/host/tcp.c nvme_tcp_set_queue_io_cpu()), XPS picks
 * the TX queue of the sending CPU (net/core/dev.c get_xps_queue(), net/core/net-sysfs.c
 * xps_cpus_store()), and the RX interrupt's CPU is where the completion runs.
 * When n > Q, several hctx share a queue; nvme-tcp creates one I/O queue per CPU unless
 * nr_io_queues says otherwise (drivers/nvme/host/fabrics.c NVMF_OPT_NR_IO_QUEUES,
 * nvme_tcp_nr_io_queues()), so the count for the next connect is proposed = Q.
 * No NIC IRQ and no XPS mask goes to an isolated CPU (isolcpus=, nohz_full=, an isolated cpuset
 * partition: disk_facts_usable_cpus()): a queue gets the rest of its hctx CPUs, and a queue
 * whose hctx have only isolated CPUs is left as it is; the explain line names them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "net-align.h"
#include "policy-internal.h"

unsigned net_align_queues(const NicFacts *nic) {
        unsigned q = nic_facts_channels(nic);
        if (q == 0 && nic && !nic->unknown[NIC_FACT_TX_QUEUES])
                q = nic->n_tx_queues;   /* no ethtool channels: the TX queues the stack has */
        return q;
}

int net_align_queue_of_hctx(size_t pos, size_t n_hctx, unsigned queues) {
        if (queues == 0 || n_hctx == 0 || pos >= n_hctx)
                return -1;
        if (n_hctx >= queues)
                return (int) (pos * queues / n_hctx);
        return (int) pos;
}

int net_align_target(const DiskFacts *f, unsigned queues, unsigned q, CpuSet *ret) {
        _cleanup_(cpuset_done) CpuSet set = {};
        for (size_t i = 0; i < f->n_hctx; i++) {
                if (net_align_queue_of_hctx(i, f->n_hctx, queues) != (int) q)
                        continue;
                const CpuSet *c = &f->hctx[i].cpus;
                for (unsigned cpu = 0; cpu < c->n_words * 64; cpu++)
                        if (cpuset_isset(c, cpu) && cpuset_add(&set, cpu) < 0)
                                return -ENOMEM;
        }
        *ret = set;
        set = (CpuSet) {};
        return 0;
}

static bool cpusets_intersect(const CpuSet *a, const CpuSet *b) {
        for (unsigned cpu = 0; cpu < a->n_words * 64; cpu++)
                if (cpuset_isset(a, cpu) && cpuset_isset(b, cpu))
                        return true;
        return false;
}

/* Append printf text to *s (a growing string). */
static int append(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int append(char **s, const char *fmt, ...) {
        char *add, *n;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&add, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = asprintf(&n, "%s%s", strempty(*s), add);
        free(add);
        if (r < 0)
                return -ENOMEM;
        free(*s);
        *s = n;
        return 0;
}

/* "2-3" style list of hctx indices from a bool array. */
static int format_ranges(const HctxFacts *h, const bool *set, size_t n, char **ret) {
        char *s = NULL;
        for (size_t i = 0; i < n; i++) {
                if (!set[i])
                        continue;
                size_t e = i;
                while (e + 1 < n && set[e + 1] && h[e + 1].index == h[e].index + 1)
                        e++;
                if (append(&s, "%s%u", s ? "," : "", h[i].index) < 0 ||
                    (e > i && append(&s, "-%u", h[e].index) < 0)) {
                        free(s);
                        return -ENOMEM;
                }
                i = e;
        }
        *ret = s;
        return 0;
}

/* The knobs of a network disk's alignment. */
#define NET_KNOBS (KNOB_BIT(KNOB_NIC_IRQ_AFFINITY) | KNOB_BIT(KNOB_XPS) | KNOB_BIT(KNOB_NR_IO_QUEUES))

/* plan->net_alignment = "<state>: <why>", plan->net_alignment_state = state. 0 or -ENOMEM. */
static int set_alignment(Plan *plan, NetAlignmentState state, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_alignment(Plan *plan, NetAlignmentState state, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&why, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = free_and_asprintf(&plan->net_alignment, "%s: %s", net_alignment_state_to_string(state), why);
        if (r < 0)
                return r;
        plan->net_alignment_state = state;
        return 0;
}

int policy_net(const DiskFacts *f, const NetPolicy *np, const PolicyOverrides *o, Plan *plan) {
        const NetFacts *n = f->net;
        static const NetPolicy defaults = NET_POLICY_DEFAULTS;
        int r;

        plan->net_hctx_without_queue = -1;
        char idle[512];
        if (!n)         /* a managed disk says why its plan/ network knobs are "keep" (a disk left alone said so) */
                return !plan->manage ? 0 :
                       plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align-local",
                                    "transport=%s -> nic_irq_affinity, xps and nr_io_queues left alone: not a network block device%s",
                                    f->transport ?: "unknown", overrides_idle_note(o, NET_KNOBS, idle, sizeof(idle)));
        if (!np)
                np = &defaults;
        if (n->unavailable) {
                r = set_alignment(plan, NET_ALIGNMENT_UNAVAILABLE, "%s", n->unavailable);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE,
                                                "net-align-unavailable", "network facts: unavailable (%s)", n->unavailable);
        }
        if (!n->nic) {
                const char *why = n->unknown[NET_FACT_INTERFACE] ?: n->unknown[NET_FACT_LOWER_DEVICE] ?: "no NIC found";
                r = set_alignment(plan, NET_ALIGNMENT_UNKNOWN, "%s", why);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align",
                                                "transport=%s traddr=%s -> network alignment unknown: %s",
                                                n->transport, n->traddr ?: "unknown", why);
        }
        const NicFacts *nic = n->nic;
        if (!f->has_mq || f->n_hctx == 0) {
                /* an NVMe multipath head (nvme0n1 over nvme0c0n1, ...) is bio-based: the hidden
                 * path disks have the hctx and get the alignment (drivers/nvme/host/multipath.c) */
                r = set_alignment(plan, NET_ALIGNMENT_NOT_APPLICABLE, "no blk-mq queue here%s", f->multipath == MULTIPATH_NONE ? "" :
                                  "; the path devices (nvme<S>c<C>n<N>) carry the hctx and are aligned");
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align-head",
                                                "over %s -> network alignment not applicable: no hctx on this "
                                                "(bio-based) disk; its path devices are aligned", nic->ifname);
        }
        if (nic->virtual_reason) {
                r = set_alignment(plan, NET_ALIGNMENT_NOT_APPLICABLE, "%s is virtual: %s", nic->ifname, nic->virtual_reason);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align-virtual",
                                                "%zu hctx over %s%s%s%s -> not applicable: %s",
                                                f->n_hctx, nic->ifname, n->lower_chain ? " (" : "",
                                                strempty(n->lower_chain), n->lower_chain ? ")" : "", nic->virtual_reason);
        }

        unsigned queues = net_align_queues(nic);
        if (queues == 0) {
                const char *why = nic->unknown[NIC_FACT_CHANNELS] ?: "the NIC reports no channels";
                r = set_alignment(plan, NET_ALIGNMENT_UNKNOWN, "%s", why);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align",
                                                "%zu hctx over %s -> network alignment unknown: %s",
                                                f->n_hctx, nic->ifname, why);
        }

        /* what is: the IRQ of each queue, which hctx have a NIC queue vector on their CPUs */
        _cleanup_free_ char *channels = NULL, *irqs = NULL, *orphans = NULL, *why = NULL;
        _cleanup_free_ char *want_irq = NULL, *want_xps = NULL, *notes = NULL, *isolated = NULL;
        _cleanup_free_ bool *orphan = calloc(f->n_hctx + 1, sizeof(bool));
        size_t n_orphans = 0, managed = 0, misplaced = 0, xps_off = 0;
        bool hctx_known = true;

        if (!orphan)
                return -ENOMEM;
        if (nic->unknown[NIC_FACT_CHANNELS])
                r = asprintf(&channels, "%u TX queues, channels unknown", queues);
        else if (nic->combined)
                r = asprintf(&channels, "%u combined channel%s%s", nic->combined, nic->combined == 1 ? "" : "s",
                             nic->rx || nic->tx ? " +rx/tx" : "");
        else
                r = asprintf(&channels, "%u rx %u tx channels", nic->rx, nic->tx);
        if (r < 0)
                return -ENOMEM;
        for (size_t i = 0; i < nic->n_irqs; i++) {
                const NicIrq *q = &nic->irqs[i];
                if (q->queue < 0)
                        continue;
                if (append(&irqs, "%sIRQ %u -> cpu%s", irqs ? ", " : "", q->irq, q->affinity_list ?: "?") < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < f->n_hctx; i++) {
                if (!f->hctx[i].cpu_list) {
                        hctx_known = false;
                        continue;
                }
                bool near = false;
                for (size_t k = 0; k < nic->n_irqs && !near; k++)
                        near = nic->irqs[k].queue >= 0 && nic->irqs[k].affinity_list &&
                               cpusets_intersect(&nic->irqs[k].affinity, &f->hctx[i].cpus);
                orphan[i] = !near;
                n_orphans += !near;
        }
        r = format_ranges(f->hctx, orphan, f->n_hctx, &orphans);
        if (r < 0)
                return r;

        /* what should be: per queue the CPUs of its hctx group */
        for (unsigned q = 0; q < queues && hctx_known; q++) {
                _cleanup_(cpuset_done) CpuSet hctx_cpus = {}, target = {};
                r = net_align_target(f, queues, q, &hctx_cpus);
                if (r < 0)
                        return r;
                if (cpuset_count(&hctx_cpus) == 0)
                        continue;       /* serves no hctx */
                if (disk_facts_usable_cpus(f, &hctx_cpus, &target) < 0)
                        return -ENOMEM;
                _cleanup_free_ char *t = cpuset_format(&target), *all = cpuset_format(&hctx_cpus);
                if (!t || !all)
                        return -ENOMEM;
                if (cpuset_count(&target) == 0) {
                        /* only isolated CPUs: its vectors and XPS stay as they are */
                        if (append(&isolated, "%squeue %u (CPUs %s) left as it is", isolated ? ", " : "", q, all) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (cpuset_count(&target) < cpuset_count(&hctx_cpus) &&
                    append(&isolated, "%squeue %u on %s (not %s)", isolated ? ", " : "", q, t, all) < 0)
                        return -ENOMEM;
                for (size_t k = 0; k < nic->n_irqs; k++) {
                        const NicIrq *v = &nic->irqs[k];
                        if (v->queue != (int) q)
                                continue;
                        bool placed = v->affinity_list && cpuset_equal(&v->affinity, &target);
                        if (v->managed == TRISTATE_YES) {
                                managed++;
                                continue;
                        }
                        misplaced += !placed;
                        if (append(&want_irq, "%s%u:%s", want_irq ? " " : "", v->irq, t) < 0)
                                return -ENOMEM;
                }
                if (q < nic->n_tx_queues && nic->xps) {
                        xps_off += !nic->xps[q] || !streq(nic->xps[q], t);
                        if (append(&want_xps, "%s%s/tx-%u:%s", want_xps ? " " : "", nic->ifname, q, t) < 0)
                                return -ENOMEM;
                }
        }

        bool more_queues = n->nr_io_queues > (int64_t) queues;
        plan->net_queues = queues;
        if (hctx_known)
                plan->net_hctx_without_queue = (int) n_orphans;
        bool aligned = hctx_known && n_orphans == 0 && misplaced == 0 && xps_off == 0 && !more_queues;
        if (!hctx_known && append(&why, "hctx cpu_lists unknown") < 0)
                return -ENOMEM;
        if (n_orphans && append(&why, "%shctx %s have no NIC queue on their CPUs", why ? "; " : "", orphans) < 0)
                return -ENOMEM;
        if (misplaced && append(&why, "%s%zu queue IRQ(s) off their hctx CPUs", why ? "; " : "", misplaced) < 0)
                return -ENOMEM;
        if (xps_off && append(&why, "%sXPS of %zu TX queue(s) differs", why ? "; " : "", xps_off) < 0)
                return -ENOMEM;
        if (more_queues && append(&why, "%s%lld I/O queues over %u NIC queues", why ? "; " : "",
                                  (long long) n->nr_io_queues, queues) < 0)
                return -ENOMEM;
        r = aligned ? set_alignment(plan, NET_ALIGNMENT_ALIGNED, "%zu hctx over %u NIC queue(s) of %s", f->n_hctx, queues, nic->ifname) :
                      set_alignment(plan, NET_ALIGNMENT_MISALIGNED, "%s", why);
        if (r < 0)
                return r;

        /* the wishes */
        const char *o_irq = o ? o->nic_irq_affinity : NULL, *o_xps = o ? o->xps : NULL, *o_nr = o ? o->nr_io_queues : NULL;
        bool do_irq = o_irq ? streq(o_irq, "hctx") : np->nic_irq_follow_hctx;
        bool do_xps = o_xps ? streq(o_xps, "hctx") : np->xps_follow_hctx;
        bool do_nr = o_nr ? !streq(o_nr, "keep") : np->propose_nr_io_queues;
        _cleanup_free_ char *outcome = NULL;

        if (plan->manage && do_irq && want_irq) {
                if (!(plan->nic_irq_affinity = strdup(want_irq)))
                        return -ENOMEM;
                if (append(&outcome, "nic_irq_affinity=%s", want_irq) < 0)
                        return -ENOMEM;
        } else if (want_irq && append(&notes, "; NIC IRQs left (%s)", !plan->manage ? "disk not managed" :
                                      o_irq ? override_label(o, KNOB_NIC_IRQ_AFFINITY) : "NicIrqAffinity=keep") < 0)
                return -ENOMEM;
        if (managed && append(&notes, "; %zu managed NIC vector(s) left to the kernel", managed) < 0)
                return -ENOMEM;
        if (plan->manage && do_xps && want_xps) {
                if (!(plan->xps = strdup(want_xps)))
                        return -ENOMEM;
                if (append(&outcome, "%sxps=%s", outcome ? " " : "", want_xps) < 0)
                        return -ENOMEM;
        } else if (want_xps && append(&notes, "; XPS left (%s)", !plan->manage ? "disk not managed" :
                                      o_xps ? override_label(o, KNOB_XPS) : "Xps=keep") < 0)
                return -ENOMEM;
        if (!nic->xps && append(&notes, "; XPS unknown (%s)", nic->unknown[NIC_FACT_XPS] ?: "no TX queues") < 0)
                return -ENOMEM;
        if (isolated && append(&notes, "; isolated CPUs %s (%s) get no NIC IRQ and no XPS: %s", f->kernel.isolated_list,
                               strna(f->kernel.isolated_source), isolated) < 0)
                return -ENOMEM;
        if (plan->manage && do_nr && n->unknown[NET_FACT_NR_IO_QUEUES] == NULL && streq(n->transport, "tcp")) {
                unsigned want_nr = queues;
                if (o_nr && !streq(o_nr, "auto")) {
                        uint64_t v;
                        if (parse_u64(o_nr, &v) >= 0 && v > 0 && v <= 65535)
                                want_nr = (unsigned) v;
                }
                if (more_queues || (o_nr && (int64_t) want_nr != n->nr_io_queues)) {
                        if (asprintf(&plan->nr_io_queues, "%u", want_nr) < 0)
                                return -ENOMEM;
                        if (append(&outcome, "%snr_io_queues=%u at the next connect (pending-reconnect; a live controller is "
                                   "never disconnected)", outcome ? " " : "", want_nr) < 0)
                                return -ENOMEM;
                }
        }

        unsigned planned = (plan->nic_irq_affinity ? KNOB_BIT(KNOB_NIC_IRQ_AFFINITY) : 0) |
                           (plan->xps ? KNOB_BIT(KNOB_XPS) : 0) | (plan->nr_io_queues ? KNOB_BIT(KNOB_NR_IO_QUEUES) : 0);
        return plan_explain(plan, f->name, planned ?: NET_KNOBS, planned ? PLAN_OUTCOME_PLANNED : PLAN_OUTCOME_LEFT_ALONE,
                            "net-align", "%zu hctx over %s%s%s%s (%s; %s)%s%s -> %s%s",
                            f->n_hctx, nic->ifname, n->lower_chain ? " via " : "", strempty(n->lower_chain), "",
                            channels, irqs ?: "no queue IRQs", why ? "; " : "", strempty(why),
                            outcome ?: aligned ? "aligned, nothing to do" : "nothing blkmqd may change",
                            strempty(notes));
}
