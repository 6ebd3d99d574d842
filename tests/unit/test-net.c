/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-net: the pure parts of the network alignment (issue 15): NIC vector names, the kernel's
 * hex CPU masks, the hctx -> NIC queue map, and the rule net-align on hand-made facts
 * (queue counts, managed vectors, overrides, virtual NICs, unknown channels, the multipath head).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "macro.h"
#include "net-align.h"
#include "parse.h"
#include "policy.h"
#include "strv.h"
#include "tap.h"
#include "test-plan.h"

static void test_names(void) {
        static const struct {
                const char *name;
                int queue;              /* -1: not a queue vector */
                NicQueueDir dir;
        } t[] = {
                { "virtio0-input.3", 3, NIC_QUEUE_RX },
                { "virtio0-output.0", 0, NIC_QUEUE_TX },
                { "eth1-TxRx-12", 12, NIC_QUEUE_BOTH },
                { "i40e-ens1f0-TxRx-7", 7, NIC_QUEUE_BOTH },
                { "mlx5_comp5@pci:0000:3b:00.0", 5, NIC_QUEUE_BOTH },
                { "enp1s0-rx-2", 2, NIC_QUEUE_RX },
                { "enp1s0-tx-2", 2, NIC_QUEUE_TX },
                /* not queue vectors */
                { "virtio0-config", -1 },
                { "virtio0-control", -1 },
                { "eth1", -1 },
                { "mlx5_async0@pci:0000:3b:00.0", -1 },
                { "", -1 },
                { NULL, -1 },
                { "eth1-TxRx-99999999", -1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                NicQueueDir d = (NicQueueDir) -1;       /* a value the call must overwrite */
                CHECK_INT_CASE(nic_irq_queue_from_name(t[i].name, NULL), t[i].queue, "\"%s\"", strna(t[i].name));
                CHECK_INT_CASE(nic_irq_queue_from_name(t[i].name, &d), t[i].queue, "\"%s\"", strna(t[i].name));
                if (t[i].queue >= 0)
                        CHECK_INT_CASE(d, t[i].dir, "\"%s\"", t[i].name);
        }
}

static void test_masks(void) {
        CpuSet s = {};
        CHECK_INT(cpuset_parse_mask("00000000,0000000f\n", &s), 0);
        char *l = cpuset_format(&s);
        CHECK_STR(l, "0-3");
        free(l);
        char *m = cpuset_format_mask(&s);
        CHECK_STR(m, "f");
        free(m);
        cpuset_done(&s);
        CHECK_INT(cpuset_parse_mask("1,00000001", &s), 0);
        l = cpuset_format(&s);
        CHECK_STR(l, "0,32");
        m = cpuset_format_mask(&s);
        CHECK_STR(m, "1,00000001");
        free(l);
        free(m);
        cpuset_done(&s);
        CHECK_INT(cpuset_parse_mask("00", &s), 0);
        CHECK_INT(cpuset_count(&s), 0);
        m = cpuset_format_mask(&s);
        CHECK_STR(m, "0");
        free(m);
        cpuset_done(&s);
        CHECK_INT(cpuset_parse_mask("", &s), -EINVAL);
        CHECK_INT(cpuset_parse_mask("xyz", &s), -EINVAL);
        CHECK_INT(cpuset_parse_mask("1,", &s), -EINVAL);
        CHECK_INT(cpuset_parse_mask("123456789", &s), -EINVAL);
        CHECK_INT(cpuset_parse_mask("0-3", &s), -EINVAL);
}

static void test_map(void) {
        /* 8 hctx over 2 queues: 0-3 -> 0, 4-7 -> 1; 3 over 2: 0,1 -> 0, 2 -> 1; 2 over 4: 0 -> 0, 1 -> 1 */
        CHECK_INT(net_align_queue_of_hctx(3, 8, 2), 0);
        CHECK_INT(net_align_queue_of_hctx(4, 8, 2), 1);
        CHECK_INT(net_align_queue_of_hctx(1, 3, 2), 0);
        CHECK_INT(net_align_queue_of_hctx(2, 3, 2), 1);
        CHECK_INT(net_align_queue_of_hctx(1, 2, 4), 1);
        CHECK_INT(net_align_queue_of_hctx(0, 2, 0), -1);
        CHECK_INT(net_align_queue_of_hctx(2, 2, 4), -1);
}

/* A disk with n_hctx hctx (one CPU each) over a NIC with q combined channels whose vector i
 * (one per queue, "eth1-TxRx-i") sits on CPU irq_cpu[i]; io = nr_io_queues. */
static DiskFacts *make(size_t n_hctx, unsigned q, const unsigned *irq_cpu, int64_t io, bool managed) {
        DiskFacts *f = disk_facts_new("nvme1n1");
        char buf[32];
        f->has_mq = true;
        f->rotational = TRISTATE_NO;
        f->shared_tags = TRISTATE_NO;
        f->hctx = calloc(n_hctx, sizeof(HctxFacts));
        f->n_hctx = n_hctx;
        for (size_t i = 0; i < n_hctx; i++) {
                f->hctx[i] = (HctxFacts) { .index = i, .nr_tags = 128, .irq = -1 };
                cpuset_add(&f->hctx[i].cpus, i);
                f->hctx[i].cpu_list = cpuset_format(&f->hctx[i].cpus);
        }
        f->hctx_details = true;
        NetFacts *n = f->net = net_facts_new("tcp");
        n->controller = strdup("nvme1");
        n->traddr = strdup("10.0.0.1");
        n->trsvcid = strdup("4420");
        n->nr_io_queues = io;
        n->interface = strdup("eth1");
        NicFacts *nic = n->nic = nic_facts_new("eth1");
        nic->combined = nic->max_combined = q;
        nic->channels_source = strdup("ethtool-netlink");
        nic->n_tx_queues = nic->n_rx_queues = q;
        nic->xps = calloc(q + 1, sizeof(char *));
        for (unsigned i = 0; i < q; i++)
                nic->xps[i] = strdup("");
        nic->irqs = calloc(q + 1, sizeof(NicIrq));
        for (unsigned i = 0; i < q; i++) {
                NicIrq *v = &nic->irqs[nic->n_irqs++];
                snprintf(buf, sizeof(buf), "eth1-TxRx-%u", i);
                *v = (NicIrq) { .irq = 40 + i, .name = strdup(buf), .queue = i,
                                .managed = managed ? TRISTATE_YES : TRISTATE_NO };
                cpuset_add(&v->affinity, irq_cpu[i]);
                v->affinity_list = cpuset_format(&v->affinity);
        }
        return f;
}

static bool has_line(const Plan *p, const char *needle) {
        PLAN_FOREACH_ENTRY(l, p)
                if (strstr(l->text, needle))
                        return true;
        fprintf(stderr, "# explain lacks \"%s\":\n", needle);
        PLAN_FOREACH_ENTRY(l, p)
                fprintf(stderr, "#   %s\n", l->text);
        return false;
}

static void test_rule(void) {
        PolicyConfig config;
        Plan p = {};
        CHECK_INT(test_policy_config_init(&config, false, "*"), 0);

        /* the example: 4 hctx over 2 channels, IRQ 40 -> cpu0, 41 -> cpu1, 4 I/O queues */
        DiskFacts *f = make(4, 2, (const unsigned[]) { 0, 1 }, 4, false);
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK(has_line(&p, "nvme1n1: 4 hctx over eth1 (2 combined channels; IRQ 40 -> cpu0, IRQ 41 -> cpu1); "
                           "hctx 2-3 have no NIC queue on their CPUs"));
        CHECK_STR(p.nic_irq_affinity, "40:0-1 41:2-3");
        CHECK_STR(p.xps, "eth1/tx-0:0-1 eth1/tx-1:2-3");
        CHECK_STR(p.nr_io_queues, "2");
        CHECK_INT(p.net_hctx_without_queue, 2);
        CHECK(p.net_alignment && startswith(p.net_alignment, "misaligned: hctx 2-3 have no NIC queue on their CPUs"));
        plan_done(&p);

        /* already aligned: nothing wanted but what is (the writes are no-ops), alignment "aligned" */
        disk_facts_free(f);
        f = make(4, 2, (const unsigned[]) { 0, 2 }, 2, false);
        cpuset_add(&f->net->nic->irqs[0].affinity, 1);
        cpuset_add(&f->net->nic->irqs[1].affinity, 3);
        free(f->net->nic->irqs[0].affinity_list);
        free(f->net->nic->irqs[1].affinity_list);
        f->net->nic->irqs[0].affinity_list = strdup("0-1");
        f->net->nic->irqs[1].affinity_list = strdup("2-3");
        free(f->net->nic->xps[0]);
        free(f->net->nic->xps[1]);
        f->net->nic->xps[0] = strdup("0-1");
        f->net->nic->xps[1] = strdup("2-3");
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "aligned: 4 hctx over 2 NIC queue(s) of eth1");
        CHECK_NULL(p.nr_io_queues);
        CHECK_INT(p.net_hctx_without_queue, 0);
        plan_done(&p);

        /* managed NIC vectors are never wished for */
        disk_facts_free(f);
        f = make(4, 2, (const unsigned[]) { 0, 1 }, 4, true);
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_STR(p.xps, "eth1/tx-0:0-1 eth1/tx-1:2-3");
        CHECK(has_line(&p, "2 managed NIC vector(s) left to the kernel"));
        plan_done(&p);

        /* config keep / overrides */
        disk_facts_free(f);
        f = make(8, 2, (const unsigned[]) { 0, 1 }, 8, false);
        config.net.nic_irq_follow_hctx = false;
        config.net.propose_nr_io_queues = false;
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.nr_io_queues);
        CHECK_STR(p.xps, "eth1/tx-0:0-3 eth1/tx-1:4-7");
        CHECK(has_line(&p, "NIC IRQs left (NicIrqAffinity=keep)"));
        plan_done(&p);
        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_NIC_IRQ_AFFINITY, "hctx"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_XPS, "keep"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_NR_IO_QUEUES, "4"), 0);
        CHECK_INT(policy_evaluate(f, &config, &o, &p), 0);
        CHECK_STR(p.nic_irq_affinity, "40:0-3 41:4-7");
        CHECK_NULL(p.xps);
        CHECK_STR(p.nr_io_queues, "4");
        plan_done(&p);
        policy_overrides_done(&o);
        config.net = (NetPolicy) NET_POLICY_DEFAULTS;

        /* policy/enabled=0: alignment shown, nothing wished */
        o.disabled = true;
        CHECK_INT(policy_evaluate(f, &config, &o, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "misaligned: "));
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.xps);
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);
        o.disabled = false;

        /* more NIC queues than hctx: queue i serves hctx i, the rest none */
        disk_facts_free(f);
        f = make(2, 4, (const unsigned[]) { 0, 0, 0, 0 }, 2, false);
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK_STR(p.nic_irq_affinity, "40:0 41:1");
        CHECK_STR(p.xps, "eth1/tx-0:0 eth1/tx-1:1");
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);

        /* unknown channels and no TX queue count: unknown, nothing wished */
        f->net->nic->combined = 0;
        nic_facts_set_unknown(f->net->nic, NIC_FACT_CHANNELS, "ethtool channels: not supported by the driver (EOPNOTSUPP)");
        nic_facts_set_unknown(f->net->nic, NIC_FACT_TX_QUEUES, "class/net/eth1/queues: not present");
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "unknown: ethtool channels: not supported by the driver (EOPNOTSUPP)");
        CHECK_NULL(p.nic_irq_affinity);
        plan_done(&p);

        /* virtual */
        disk_facts_free(f);
        f = make(4, 1, (const unsigned[]) { 0 }, 4, false);
        f->net->nic->virtual_reason = strdup("a software interface (veth) without a parent device: no hardware queue or interrupt to align");
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "not applicable: eth1 is virtual: a software interface (veth)"));
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.xps);
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);

        /* a bio-based multipath head has no hctx: not applicable */
        f->has_mq = false;
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "not applicable: no blk-mq queue here"));
        CHECK_NULL(p.nic_irq_affinity);
        plan_done(&p);

        /* built without libnl */
        f->has_mq = true;
        f->net->unavailable = strdup("built without libnl");
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK(has_line(&p, "nvme1n1: network facts: unavailable (built without libnl) (rule net-align-unavailable)"));
        CHECK_STR(p.net_alignment, "unavailable: built without libnl");
        char *s = NULL;
        CHECK_INT(net_facts_render(f->net, NET_FACT_CHANNELS, &s), 0);
        CHECK_STR(s, "unavailable: built without libnl\n");
        free(s);
        CHECK_INT(net_facts_render(f->net, NET_FACT_TRADDR, &s), 0);
        CHECK_STR(s, "10.0.0.1\n");
        free(s);
        plan_done(&p);

        /* not a network disk: no line, no alignment */
        free(f->net->unavailable);
        f->net->unavailable = NULL;
        net_facts_free(f->net);
        f->net = NULL;
        CHECK_INT(policy_evaluate(f, &config, NULL, &p), 0);
        CHECK_NULL(p.net_alignment);
        CHECK_NULL(p.nic_irq_affinity);
        plan_done(&p);

        disk_facts_free(f);
        policy_config_done(&config);
}

static void test_overrides(void) {
        DiskFacts *f = disk_facts_new("nvme1n1");
        char *v = NULL;
        CHECK_INT(policy_override_validate(KNOB_NIC_IRQ_AFFINITY, "hctx\n", 5, f, NULL, &v), 0);
        CHECK_STR(v, "hctx");
        free(v);
        CHECK_INT(policy_override_validate(KNOB_XPS, "keep", 4, f, NULL, &v), 0);
        CHECK_STR(v, "keep");
        free(v);
        CHECK_INT(policy_override_validate(KNOB_XPS, "0-3", 3, f, NULL, &v), -EINVAL);
        CHECK_INT(policy_override_validate(KNOB_NR_IO_QUEUES, "04", 2, f, NULL, &v), 0);
        CHECK_STR(v, "4");
        free(v);
        CHECK_INT(policy_override_validate(KNOB_NR_IO_QUEUES, "0", 1, f, NULL, &v), -ERANGE);
        CHECK_INT(policy_override_validate(KNOB_NR_IO_QUEUES, "70000", 5, f, NULL, &v), -ERANGE);
        CHECK_INT(policy_override_validate(KNOB_NR_IO_QUEUES, "two", 3, f, NULL, &v), -EINVAL);
        CHECK_INT(policy_override_validate(KNOB_NR_IO_QUEUES, "-4", 2, f, NULL, &v), -ERANGE);     /* a number out of range */
        CHECK_INT(policy_override_validate(KNOB_NR_IO_QUEUES, "auto", 4, f, NULL, &v), 0);
        CHECK_NULL(v);
        CHECK_STR(knob_to_string(KNOB_NIC_IRQ_AFFINITY), "nic_irq_affinity");
        CHECK_INT(knob_from_string("nr_io_queues"), KNOB_NR_IO_QUEUES);
        disk_facts_free(f);
}

int main(int argc, char **argv) {
        test_names();
        test_masks();
        test_map();
        test_rule();
        test_overrides();
        return tap_finish("test-net");
}
