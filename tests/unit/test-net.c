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
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK(has_line(&p, "nvme1n1: 4 hctx over eth1 (2 combined channels; IRQ 40 -> cpu0, IRQ 41 -> cpu1); "
                           "hctx 2-3 have no NIC queue on their CPUs"));
        CHECK_STR(p.nic_irq_affinity, "40:0-1 41:2-3");
        CHECK_STR(p.xps, "eth1/tx-0:0-1 eth1/tx-1:2-3");
        CHECK_STR(p.nr_io_queues, "nr_io_queues=2");
        CHECK_INT(p.net_hctx_without_queue, 2);
        CHECK(p.net_alignment && startswith(p.net_alignment, "misaligned: hctx 2-3 have no NIC queue on their CPUs"));
        plan_done(&p);

        /* already aligned: nothing wanted but what is (the writes are no-ops), alignment "aligned" */
        disk_facts_free(f);
        f = make(4, 4, (const unsigned[]) { 0, 1, 2, 3 }, 4, false);
        for (unsigned i = 0; i < 4; i++) {
                free(f->net->nic->xps[i]);
                f->net->nic->xps[i] = strdup(f->hctx[i].cpu_list);
        }
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "aligned: 4 hctx over 4 NIC queue(s) of eth1");
        CHECK_NULL(p.nr_io_queues);
        CHECK_INT(p.net_hctx_without_queue, 0);
        CHECK_INT(p.net_action, NET_ACTION_NONE);
        CHECK_STR(p.net_recommended, "none: aligned");
        CHECK_STR(p.net_maps, "default 4 hctx (0-3) -> eth1 queues 0-3");
        plan_done(&p);

        /* managed NIC vectors are never wished for */
        disk_facts_free(f);
        f = make(4, 2, (const unsigned[]) { 0, 1 }, 4, true);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_STR(p.xps, "eth1/tx-0:0-1 eth1/tx-1:2-3");
        CHECK(has_line(&p, "2 managed NIC vector(s) left to the kernel"));
        plan_done(&p);

        /* config keep / overrides */
        disk_facts_free(f);
        f = make(8, 2, (const unsigned[]) { 0, 1 }, 8, false);
        config.net.nic_irq_follow_hctx = false;
        config.net.propose_nr_io_queues = false;
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.nr_io_queues);
        CHECK_STR(p.xps, "eth1/tx-0:0-3 eth1/tx-1:4-7");
        CHECK(has_line(&p, "NIC IRQs left (NicIrqAffinity=keep)"));
        plan_done(&p);
        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_NIC_IRQ_AFFINITY, "hctx"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_XPS, "keep"), 0);
        CHECK_INT(policy_overrides_set(&o, KNOB_NR_IO_QUEUES, "4"), 0);
        CHECK_INT(policy_evaluate(f, NULL, &config, &o, &p), 0);
        CHECK_STR(p.nic_irq_affinity, "40:0-3 41:4-7");
        CHECK_NULL(p.xps);
        CHECK_STR(p.nr_io_queues, "nr_io_queues=4");
        plan_done(&p);
        policy_overrides_done(&o);
        config.net = (NetPolicy) NET_POLICY_DEFAULTS;

        /* policy/enabled=0: alignment shown, nothing wished */
        o.disabled = true;
        CHECK_INT(policy_evaluate(f, NULL, &config, &o, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "misaligned: "));
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.xps);
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);
        o.disabled = false;

        /* more NIC queues than hctx: queue i serves hctx i, the rest none */
        disk_facts_free(f);
        f = make(2, 4, (const unsigned[]) { 0, 0, 0, 0 }, 2, false);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.nic_irq_affinity, "40:0 41:1");
        CHECK_STR(p.xps, "eth1/tx-0:0 eth1/tx-1:1");
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);

        /* unknown channels and no TX queue count: unknown, nothing wished */
        f->net->nic->combined = 0;
        nic_facts_set_unknown(f->net->nic, NIC_FACT_CHANNELS, "ethtool channels: not supported by the driver (EOPNOTSUPP)");
        nic_facts_set_unknown(f->net->nic, NIC_FACT_TX_QUEUES, "class/net/eth1/queues: not present");
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "unknown: ethtool channels: not supported by the driver (EOPNOTSUPP)");
        CHECK_NULL(p.nic_irq_affinity);
        plan_done(&p);

        /* virtual */
        disk_facts_free(f);
        f = make(4, 1, (const unsigned[]) { 0 }, 4, false);
        f->net->nic->virtual_reason = strdup("a software interface (veth) without a parent device: no hardware queue or interrupt to align");
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "not applicable: eth1 is virtual: a software interface (veth)"));
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.xps);
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);

        /* a bio-based multipath head has no hctx: not applicable */
        f->has_mq = false;
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "not applicable: no blk-mq queue here"));
        CHECK_NULL(p.nic_irq_affinity);
        plan_done(&p);

        /* built without libnl */
        f->has_mq = true;
        f->net->unavailable = strdup("built without libnl");
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
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
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_NULL(p.net_alignment);
        CHECK_NULL(p.nic_irq_affinity);
        plan_done(&p);

        disk_facts_free(f);
        policy_config_done(&config);
}

/*
 * A disk whose hctx i has cpu_list cpus[i] and map type types[i] (NULL: all unknown, with a
 * reason), over eth1 with q combined channels of max_combined, one vector per queue on irq[q],
 * XPS of tx-q irq[q] too; io = nr_io_queues.
 */
static DiskFacts *make_maps(size_t n_hctx, const char * const *cpus, const HctxType *types, unsigned q, unsigned max_combined,
                            const char * const *irq, int64_t io) {
        DiskFacts *f = make(n_hctx, q, (const unsigned[64]) {}, io, false);
        for (size_t i = 0; i < n_hctx; i++) {
                cpuset_done(&f->hctx[i].cpus);
                free(f->hctx[i].cpu_list);
                CHECK_INT(cpuset_parse(cpus[i], &f->hctx[i].cpus), 0);
                f->hctx[i].cpu_list = cpuset_format(&f->hctx[i].cpus);
                f->hctx[i].type = types ? types[i] : _HCTX_TYPE_INVALID;
        }
        if (!types)
                f->hctx_type_unknown = strdup("debugfs not mounted at /sys/kernel/debug (hctxN/type is shown only there)");
        NicFacts *nic = f->net->nic;
        nic->max_combined = max_combined;
        for (unsigned k = 0; k < q; k++) {
                NicIrq *v = &nic->irqs[k];
                cpuset_done(&v->affinity);
                free(v->affinity_list);
                CHECK_INT(cpuset_parse(irq[k], &v->affinity), 0);
                v->affinity_list = cpuset_format(&v->affinity);
                free(nic->xps[k]);
                nic->xps[k] = strdup(v->affinity_list);
        }
        return f;
}

/* Queue maps laid over the NIC each on its own (issue: write and poll maps were flattened). */
static void test_maps(void) {
        PolicyConfig config;
        Plan p = {};
        CHECK_INT(test_policy_config_init(&config, false, "*"), 0);
        const HctxType dr[] = { HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT, HCTX_TYPE_READ, HCTX_TYPE_READ };

        /* nr_io_queues=2,nr_write_queues=2 on 4 CPUs (6.12: "mapped 2/2/0"), virtio-net's own
         * placement: queue 0 on CPUs 0-1, queue 1 on 2-3: aligned, nothing to change or propose */
        DiskFacts *f = make_maps(4, (const char *[]) { "0-1", "2-3", "0-1", "2-3" }, dr, 2, 2, (const char *[]) { "0-1", "2-3" }, 4);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "aligned: 4 hctx over 2 NIC queue(s) of eth1");
        CHECK_STR(p.nic_irq_affinity, "40:0-1 41:2-3");
        CHECK_STR(p.xps, "eth1/tx-0:0-1 eth1/tx-1:2-3");
        CHECK_NULL(p.nr_io_queues);
        CHECK_INT(p.net_channels, 0);
        CHECK_INT(p.net_action, NET_ACTION_NONE);
        CHECK(p.net_maps_known && p.net_map_hctx[HCTX_TYPE_DEFAULT] == 2 && p.net_map_hctx[HCTX_TYPE_READ] == 2 &&
              p.net_map_hctx[HCTX_TYPE_POLL] == 0);
        CHECK_STR(p.net_maps, "default 2 hctx (0-1) -> eth1 queues 0-1\nread 2 hctx (2-3) -> eth1 queues 0-1");
        CHECK(has_line(&p, "nvme1n1: 4 hctx (default 2, read 2) over eth1 (2 combined channels; IRQ 40 -> cpu0-1, "
                           "IRQ 41 -> cpu2-3) -> nic_irq_affinity=40:0-1 41:2-3 xps=eth1/tx-0:0-1 eth1/tx-1:2-3 (rule net-align)"));
        plan_done(&p);

        /* the same hctx without their types (no debugfs): overlapping cpu_lists are several maps
         * nobody can tell apart: unknown, nothing wished */
        disk_facts_free(f);
        f = make_maps(4, (const char *[]) { "0-1", "2-3", "0-1", "2-3" }, NULL, 2, 2, (const char *[]) { "0-1", "2-3" }, 4);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK(p.net_alignment && startswith(p.net_alignment, "unknown: the hctx cpu_lists overlap (several queue maps)"));
        CHECK(p.net_alignment && strstr(p.net_alignment, "debugfs not mounted"));
        CHECK_NULL(p.nic_irq_affinity);
        CHECK_NULL(p.xps);
        CHECK_NULL(p.nr_io_queues);
        CHECK(!p.net_maps_known);
        plan_done(&p);
        /* types unknown but cpu_lists apart: one map */
        disk_facts_free(f);
        f = make_maps(2, (const char *[]) { "0-1", "2-3" }, NULL, 2, 2, (const char *[]) { "0-1", "2-3" }, 2);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "aligned: 2 hctx over 2 NIC queue(s) of eth1");
        CHECK(p.net_maps && startswith(p.net_maps, "default 2 hctx (0-1) -> eth1 queues 0-1\n(one map: hctxN/type unread"));
        plan_done(&p);

        /* 4 write (default) hctx, 2 read hctx over 2 NIC queues: only the default map is over;
         * the proposal names both options, the read map's count as it is */
        disk_facts_free(f);
        const HctxType d4r2[] = { HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT,
                                  HCTX_TYPE_READ, HCTX_TYPE_READ };
        f = make_maps(6, (const char *[]) { "0", "1", "2", "3", "0-1", "2-3" }, d4r2, 2, 2, (const char *[]) { "0-1", "2-3" }, 6);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "misaligned: the default map's 4 hctx over 2 NIC queues");
        CHECK_STR(p.nr_io_queues, "nr_io_queues=2 nr_write_queues=2");
        CHECK_INT(p.net_action, NET_ACTION_RECONNECT);
        CHECK(p.net_recommended && startswith(p.net_recommended, "reconnect: nr_io_queues=2 nr_write_queues=2 at the next connect "
                                                                 "of nvme1 (nvme connect ... --nr-io-queues=2 --nr-write-queues=2)"));
        CHECK(p.net_recommended && strstr(p.net_recommended, "more channels on eth1 are not proposed: its maximum is lower"));
        CHECK_STR(p.nic_irq_affinity, "40:0-1 41:2-3");
        CHECK_STR(p.net_maps, "default 4 hctx (0-3) -> eth1 queues 0-1 (more hctx than NIC queues)\nread 2 hctx (4-5) -> eth1 queues 0-1");
        plan_done(&p);
        /* the same NIC able to run 4 channels: no help, the read map's 2 hctx would then not fit
         * the default map's 4 queues */
        f->net->nic->max_combined = 4;
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_INT(p.net_channels, 0);
        CHECK(p.net_recommended && strstr(p.net_recommended, "not proposed: the maps would still not fit"));
        plan_done(&p);
        /* 4 write and 4 read hctx (one CPU each) over 2 of 4 channels: ethtool -L eth1 combined 4
         * gives every hctx a queue (recommended); the reconnect stays the alternative */
        disk_facts_free(f);
        const HctxType d4r4[] = { HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT,
                                  HCTX_TYPE_READ, HCTX_TYPE_READ, HCTX_TYPE_READ, HCTX_TYPE_READ };
        f = make_maps(8, (const char *[]) { "0", "1", "2", "3", "0", "1", "2", "3" }, d4r4, 2, 4, (const char *[]) { "0-1", "2-3" }, 8);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "misaligned: the default map's 4 hctx over 2 NIC queues; the read map's 4 hctx over 2 NIC queues");
        CHECK_INT(p.net_channels, 4);
        CHECK_INT(p.net_action, NET_ACTION_NIC_CHANNELS);
        CHECK_STR(p.nr_io_queues, "nr_io_queues=2 nr_write_queues=2");
        CHECK(p.net_recommended && startswith(p.net_recommended, "nic-channels: ethtool -L eth1 combined 4: no reconnect"));
        CHECK(p.net_recommended && strstr(p.net_recommended, "the alternative, nr_io_queues=2 nr_write_queues=2 at the next connect"));
        CHECK(has_line(&p, "; or ethtool -L eth1 combined 4 (proposed: eth1 runs 2 of its 4 combined channels; no reconnect) "
                           "(recommended)"));
        plan_done(&p);
        config.net.propose_nic_channels = false;        /* NicChannels=keep */
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_INT(p.net_channels, 0);
        CHECK_INT(p.net_action, NET_ACTION_RECONNECT);
        CHECK(p.net_recommended && strstr(p.net_recommended, "not proposed: NicChannels=keep"));
        plan_done(&p);
        config.net.propose_nic_channels = true;

        /* one poll hctx over every CPU cannot share the default map's placement on 2 queues: left
         * out, and proposed 2 poll queues; the default map's count stays */
        disk_facts_free(f);
        const HctxType d2p1[] = { HCTX_TYPE_DEFAULT, HCTX_TYPE_DEFAULT, HCTX_TYPE_POLL };
        f = make_maps(3, (const char *[]) { "0-1", "2-3", "0-3" }, d2p1, 2, 2, (const char *[]) { "0-1", "2-3" }, 3);
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.net_alignment, "misaligned: the poll map's 1 hctx do not fit the placement of the maps before it on 2 NIC queues");
        CHECK_STR(p.nic_irq_affinity, "40:0-1 41:2-3");
        CHECK_STR(p.nr_io_queues, "nr_io_queues=2 nr_poll_queues=2");
        plan_done(&p);

        /* the spare channels of one map: 4 hctx over 2 of 4 channels (a NIC run below its
         * ethtool maximum, tests/fixtures/vm-6.12-nvme-tcp-spare) */
        disk_facts_free(f);
        f = make(4, 2, (const unsigned[]) { 0, 2 }, 4, false);
        f->net->nic->max_combined = 4;
        CHECK_INT(policy_evaluate(f, NULL, &config, NULL, &p), 0);
        CHECK_STR(p.nr_io_queues, "nr_io_queues=2");
        CHECK_INT(p.net_channels, 4);
        CHECK_INT(p.net_action, NET_ACTION_NIC_CHANNELS);
        CHECK(p.net_alignment && strstr(p.net_alignment, "4 I/O queues over 2 NIC queues"));
        plan_done(&p);
        /* what is in use is never proposed: nr_io_queues 4 asked for (override) with 4 in use */
        PolicyOverrides o = {};
        CHECK_INT(policy_overrides_set(&o, KNOB_NR_IO_QUEUES, "4"), 0);
        CHECK_INT(policy_evaluate(f, NULL, &config, &o, &p), 0);
        CHECK_NULL(p.nr_io_queues);
        plan_done(&p);
        policy_overrides_done(&o);

        char *c = net_align_cli_options("nr_io_queues=2 nr_write_queues=1 nr_poll_queues=3");
        CHECK_STR(c, "--nr-io-queues=2 --nr-write-queues=1 --nr-poll-queues=3");
        free(c);
        CHECK_STR(net_action_to_string(NET_ACTION_NIC_CHANNELS), "nic-channels");
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
        test_maps();
        test_overrides();
        return tap_finish("test-net");
}
