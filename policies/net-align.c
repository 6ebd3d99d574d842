/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Network alignment (rule net-align): line a network disk's I/O queues (hctx) up with the
 * queues of the NIC that carries them. See docs/DESIGN-NOTES.md "Network alignment".
 *
 * The model: the NIC has Q queues in use (ethtool channels: combined + max(rx, tx)). A disk's
 * hctx form up to three queue maps (default, read, poll: debugfs hctxN/type), each spread over
 * every CPU on its own (block/blk-mq-cpumap.c blk_mq_map_queues(); for nvme fabrics
 * nvmf_map_queues(), drivers/nvme/host/fabrics.c). Each map is laid over the NIC on its own:
 * the hctx of rank i in a map of n is served by NIC queue i * Q / n when n >= Q (contiguous
 * groups), and by queue i when n < Q (queues n.. serve none of that map). A map whose hctx
 * would put a CPU under two NIC queues of the maps before it is left out of the placement.
 * NIC queue q should then interrupt on, and transmit from (XPS), the CPUs of the hctx it
 * serves: an nvme-tcp queue's I/O worker and socket run on the CPUs of its hctx
 * (drivers/nvme/host/tcp.c nvme_tcp_set_queue_io_cpu(), per map), XPS picks the TX queue of
 * the sending CPU (net/core/dev.c get_xps_queue(), net/core/net-sysfs.c xps_cpus_store()),
 * and the RX interrupt's CPU is where the completion runs.
 * When a map has n > Q hctx, several share a queue. Two ways out are proposed, never carried
 * out: the NIC runs more channels (ethtool -L <if> combined N, when its maximum covers the
 * largest map: no reconnect, every hctx keeps a queue of its own; recommended), or the map
 * gets Q queues at the next connect, as nvme fabrics options: nr_io_queues (the read map when
 * nr_write_queues gives the default map queues of its own, else the default map),
 * nr_write_queues, nr_poll_queues (fabrics.c nvmf_set_io_queues(); nvme-cli --nr-io-queues,
 * --nr-write-queues, --nr-poll-queues); for NBD, whose hctx i sends on connection i
 * (drivers/block/nbd.c nbd_queue_rq()) in its one map, connections=N (nbd-client -C N).
 * No NIC IRQ and no XPS mask goes to an isolated CPU (isolcpus=, nohz_full=, an isolated cpuset
 * partition: disk_facts_usable_cpus()): a queue gets the rest of its hctx CPUs, and a queue
 * whose hctx have only isolated CPUs is left as it is; the explain line names them.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cross-disk.h"
#include "macro.h"
#include "net-align.h"
#include "owners.h"
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

static bool cpusets_intersect(const CpuSet *a, const CpuSet *b);

int net_align_maps(const DiskFacts *f, size_t ret[_HCTX_TYPE_MAX]) {
        if (disk_facts_hctx_maps(f, ret) >= 0)
                return 0;
        /* types unknown: within one map every CPU has one hctx (block/blk-mq-cpumap.c
         * blk_mq_map_queues()), so cpu_lists that never overlap are one map */
        for (size_t i = 0; i < f->n_hctx; i++) {
                if (!f->hctx[i].cpu_list)
                        return -ENODATA;
                for (size_t k = 0; k < i; k++)
                        if (cpusets_intersect(&f->hctx[i].cpus, &f->hctx[k].cpus))
                                return -ENODATA;
        }
        for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++)
                ret[t] = 0;
        ret[HCTX_TYPE_DEFAULT] = f->n_hctx;
        return 1;
}

/* The map of hctx position pos (HCTX_TYPE_DEFAULT when types are unknown: one map). */
static HctxType type_of(const DiskFacts *f, size_t pos) {
        return f->hctx[pos].type >= 0 && f->hctx[pos].type < _HCTX_TYPE_MAX ? f->hctx[pos].type : HCTX_TYPE_DEFAULT;
}

int net_align_queue_of(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], size_t pos, unsigned queues) {
        assert(f);
        if (pos >= f->n_hctx)
                return -1;
        HctxType t = type_of(f, pos);
        size_t rank = 0;
        for (size_t i = 0; i < pos; i++)
                rank += type_of(f, i) == t;
        return net_align_queue_of_hctx(rank, maps[t], queues);
}

void net_layout_done(NetLayout *l) {
        for (unsigned q = 0; l->target && q < l->queues; q++)
                cpuset_done(&l->target[q]);
        free(l->target);
        *l = (NetLayout) {};
}

static int cpuset_union(CpuSet *into, const CpuSet *add) {
        for (unsigned cpu = 0; cpu < add->n_words * 64; cpu++)
                if (cpuset_isset(add, cpu) && cpuset_add(into, cpu) < 0)
                        return -ENOMEM;
        return 0;
}

static void cpusets_free(CpuSet *sets, unsigned n) {
        for (unsigned i = 0; sets && i < n; i++)
                cpuset_done(&sets[i]);
        free(sets);
}

/* The CPUs map t's hctx put under each NIC queue (ret: queues sets). 0 or -ENOMEM. */
static int map_targets(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], HctxType t, unsigned queues, CpuSet **ret) {
        CpuSet *mine = calloc(queues, sizeof(CpuSet));
        if (!mine)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_hctx; i++) {
                int q = type_of(f, i) == t ? net_align_queue_of(f, maps, i, queues) : -1;
                if (q >= 0 && cpuset_union(&mine[q], &f->hctx[i].cpus) < 0) {
                        cpusets_free(mine, queues);
                        return -ENOMEM;
                }
        }
        *ret = mine;
        return 0;
}

int net_align_layout(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], unsigned queues, NetLayout *ret) {
        assert(ret);
        _cleanup_(net_layout_done) NetLayout l = { .queues = queues };

        if (queues == 0)
                return -EINVAL;
        l.target = calloc(queues, sizeof(CpuSet));
        if (!l.target)
                return -ENOMEM;
        /* map by map, default first: one whose hctx would put a CPU under two NIC queues of the
         * maps before it is left out (conflicts) */
        for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++) {
                CpuSet *mine = NULL;
                if (maps[t] == 0)
                        continue;
                if (maps[t] > queues)
                        l.over |= 1u << t;
                if (map_targets(f, maps, t, queues, &mine) < 0)
                        return -ENOMEM;
                bool clash = false;
                for (unsigned q = 0; q < queues && !clash; q++)
                        for (unsigned o = 0; o < queues && !clash; o++)
                                clash = o != q && cpusets_intersect(&l.target[o], &mine[q]);
                int r = 0;
                for (unsigned q = 0; q < queues && !clash && r >= 0; q++)
                        r = cpuset_union(&l.target[q], &mine[q]);
                cpusets_free(mine, queues);
                if (r < 0)
                        return r;
                if (clash)
                        l.conflicts |= 1u << t;
        }
        *ret = l;
        l = (NetLayout) {};
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

/* "0-1,4" of the hctx of f in map t (index numbers, ranges of consecutive ones). */
static int map_hctx_ranges(const DiskFacts *f, HctxType t, char **ret) {
        _cleanup_free_ bool *in = calloc(f->n_hctx + 1, sizeof(bool));
        if (!in)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_hctx; i++)
                in[i] = type_of(f, i) == t;
        return format_ranges(f->hctx, in, f->n_hctx, ret);
}

/* "0-1" of the NIC queues map t's hctx go to, over queues; NULL on ENOMEM. */
static char *map_queue_ranges(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], HctxType t, unsigned queues) {
        _cleanup_(cpuset_done) CpuSet used = {};
        for (size_t i = 0; i < f->n_hctx; i++) {
                int q = type_of(f, i) == t ? net_align_queue_of(f, maps, i, queues) : -1;
                if (q >= 0 && cpuset_add(&used, (unsigned) q) < 0)
                        return NULL;
        }
        return cpuset_format(&used);
}

/* network/maps: one line per map, "<type> <n> hctx (<indices>) -> <if> queue(s) <q>[ (...)]". */
static int render_maps(const DiskFacts *f, const size_t maps[_HCTX_TYPE_MAX], const NetLayout *l, const char *ifname,
                       bool inferred, char **ret) {
        _cleanup_free_ char *s = NULL;
        for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++) {
                if (maps[t] == 0)
                        continue;
                _cleanup_free_ char *h = NULL, *q = map_queue_ranges(f, maps, t, l->queues);
                if (!q || map_hctx_ranges(f, t, &h) < 0 ||
                    append(&s, "%s%s %zu hctx (%s) -> %s queue%s %s%s%s", s ? "\n" : "", hctx_type_to_string(t), maps[t],
                           strempty(h), ifname, strchr(q, '-') || strchr(q, ',') ? "s" : "", q,
                           l->over & (1u << t) ? " (more hctx than NIC queues)" : "",
                           l->conflicts & (1u << t) ? " (not placed: it would put a CPU under two NIC queues of the maps "
                                                      "before it)" : "") < 0)
                        return -ENOMEM;
        }
        if (inferred && append(&s, "\n(one map: hctxN/type unread (%s), and the hctx cpu_lists do not overlap)",
                               f->hctx_type_unknown ?: "unknown") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The largest map's hctx count. */
static size_t largest_map(const size_t maps[_HCTX_TYPE_MAX]) {
        size_t m = 0;
        for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++)
                m = MAX(m, maps[t]);
        return m;
}

/*
 * The fabrics options of a connect that gives map t want[t] queues: nr_io_queues serves the
 * read map when nr_write_queues gives the default map queues of its own (a read map is
 * there), else the default map (drivers/nvme/host/fabrics.c nvmf_set_io_queues()).
 */
static int connect_options(const size_t want[_HCTX_TYPE_MAX], bool read_map, bool poll_map, char **ret) {
        int r = read_map ? asprintf(ret, "nr_io_queues=%zu nr_write_queues=%zu", want[HCTX_TYPE_READ], want[HCTX_TYPE_DEFAULT]) :
                           asprintf(ret, "nr_io_queues=%zu", want[HCTX_TYPE_DEFAULT]);
        if (r < 0)
                return -ENOMEM;
        return poll_map ? append(ret, " nr_poll_queues=%zu", want[HCTX_TYPE_POLL]) : 0;
}

char *net_align_cli_options(const char *options) {
        _cleanup_free_ char *s = NULL;
        for (const char *p = options; p && *p;) {
                size_t l = strcspn(p, " ");
                const char *eq = memchr(p, '=', l);
                if (eq) {
                        _cleanup_free_ char *key = strndup(p, eq - p);
                        if (!key)
                                return NULL;
                        for (char *c = key; *c; c++)
                                if (*c == '_')
                                        *c = '-';
                        if (append(&s, "%s--%s=%.*s", s ? " " : "", key, (int) (l - (eq - p) - 1), eq + 1) < 0)
                                return NULL;
                }
                p += l;
                p += *p == ' ';
        }
        return s ? TAKE_PTR(s) : strdup("");
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
        if (n->offload) {
                r = set_alignment(plan, NET_ALIGNMENT_NOT_APPLICABLE, "%s", n->offload);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align-offload",
                                                "transport=%s %s -> not applicable: %s", n->transport,
                                                strna(n->controller), n->offload);
        }
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

        /* one TCP connection carries all the disk's I/O (an iSCSI session sends every command on
         * its leading connection, drivers/scsi/libiscsi.c iscsi_queuecommand(); nvme-tcp with one
         * I/O queue): the flow's NIC queues are the RSS hash's and the sending CPU's XPS, no hctx's */
        bool iscsi = streq(n->transport, "iscsi"), nbd = streq(n->transport, "nbd");
        /* NBD: hctx i sends on connection i (drivers/block/nbd.c nbd_queue_rq()); without one
         * socket per hctx which connection is whose is unknown */
        if (nbd && n->connections < 0) {
                const char *why = n->unknown[NET_FACT_CONNECTIONS] ?: "the connections are unknown";
                r = set_alignment(plan, NET_ALIGNMENT_UNKNOWN, "%s", why);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align",
                                                "%zu hctx over %s -> network alignment unknown: %s", f->n_hctx, nic->ifname, why);
        }
        if (iscsi || n->connections == 1) {
                r = set_alignment(plan, NET_ALIGNMENT_NOT_APPLICABLE, "one TCP connection carries every hctx (%s): its NIC "
                                  "queues are picked by the RSS hash (receive) and the XPS of the sending CPU (transmit), "
                                  "not by hctx", iscsi ? "an iSCSI session sends every command on its leading connection" :
                                  nbd ? "one NBD connection" : "one I/O queue");
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align-one-connection",
                                                "%zu hctx over %s, one TCP connection (%s%s) -> not applicable: nothing to align "
                                                "per hctx", f->n_hctx, nic->ifname, strna(n->controller),
                                                iscsi ? ", iSCSI: the leading connection" : "");
        }

        unsigned queues = net_align_queues(nic);
        if (queues == 0) {
                const char *why = nic->unknown[NIC_FACT_CHANNELS] ?: "the NIC reports no channels";
                r = set_alignment(plan, NET_ALIGNMENT_UNKNOWN, "%s", why);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align",
                                                "%zu hctx over %s -> network alignment unknown: %s",
                                                f->n_hctx, nic->ifname, why);
        }

        /* the queue maps (debugfs hctxN/type); cpu_lists that overlap while the types are unknown
         * are several maps nobody can tell apart: nothing placed */
        bool hctx_known = true;
        for (size_t i = 0; i < f->n_hctx; i++)
                hctx_known = hctx_known && f->hctx[i].cpu_list;
        size_t maps[_HCTX_TYPE_MAX] = {};
        int m = net_align_maps(f, maps);
        if (m < 0 && hctx_known) {
                const char *why = f->hctx_type_unknown ?: "hctx types unread";
                r = set_alignment(plan, NET_ALIGNMENT_UNKNOWN, "the hctx cpu_lists overlap (several queue maps) and which map each "
                                  "hctx serves is unknown: %s", why);
                if (r >= 0)
                        r = free_and_asprintf(&plan->net_maps, "unknown: the hctx cpu_lists overlap (several queue maps), their "
                                              "types are unknown: %s", why);
                return r < 0 ? r : plan_explain(plan, f->name, NET_KNOBS, PLAN_OUTCOME_LEFT_ALONE, "net-align",
                                                "%zu hctx over %s with overlapping cpu_lists -> network alignment unknown: which "
                                                "queue map each hctx serves is unknown (%s)", f->n_hctx, nic->ifname, why);
        }
        if (m < 0) {            /* cpu_lists unknown too: counted as one map, nothing placed (below) */
                for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++)
                        maps[t] = 0;
                maps[HCTX_TYPE_DEFAULT] = f->n_hctx;
        }
        _cleanup_(net_layout_done) NetLayout layout = {};
        r = net_align_layout(f, maps, queues, &layout);
        if (r < 0)
                return r;
        plan->net_maps_known = m >= 0;
        memcpy(plan->net_map_hctx, maps, sizeof(maps));
        r = render_maps(f, maps, &layout, nic->ifname, m == 1, &plan->net_maps);
        if (r < 0)
                return r;
        size_t n_maps = 0;
        for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++)
                n_maps += maps[t] > 0;

        /* what is: the IRQ of each queue in use, which hctx have a NIC queue vector on their CPUs */
        _cleanup_free_ char *channels = NULL, *irqs = NULL, *orphans = NULL, *why = NULL, *map_counts = NULL;
        _cleanup_free_ char *want_irq = NULL, *want_xps = NULL, *notes = NULL, *isolated = NULL;
        _cleanup_free_ bool *orphan = calloc(f->n_hctx + 1, sizeof(bool));
        _cleanup_(cpuset_done) CpuSet removed = {};     /* the isolated CPUs left out */
        size_t n_orphans = 0, managed = 0, misplaced = 0, xps_off = 0;

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
        for (HctxType t = 0; n_maps > 1 && t < _HCTX_TYPE_MAX; t++)
                if (maps[t] && append(&map_counts, "%s%s %zu", map_counts ? ", " : " (", hctx_type_to_string(t), maps[t]) < 0)
                        return -ENOMEM;
        if (map_counts && append(&map_counts, ")") < 0)
                return -ENOMEM;
        /* a vector of a queue the NIC does not run (channels lowered with ethtool -L) serves nothing */
        for (size_t i = 0; i < nic->n_irqs; i++) {
                const NicIrq *q = &nic->irqs[i];
                if (q->queue < 0 || (unsigned) q->queue >= queues)
                        continue;
                if (append(&irqs, "%sIRQ %u -> cpu%s", irqs ? ", " : "", q->irq, q->affinity_list ?: "?") < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < f->n_hctx; i++) {
                if (!f->hctx[i].cpu_list)
                        continue;
                bool near = false;
                for (size_t k = 0; k < nic->n_irqs && !near; k++)
                        near = nic->irqs[k].queue >= 0 && (unsigned) nic->irqs[k].queue < queues && nic->irqs[k].affinity_list &&
                               cpusets_intersect(&nic->irqs[k].affinity, &f->hctx[i].cpus);
                orphan[i] = !near;
                n_orphans += !near;
        }
        r = format_ranges(f->hctx, orphan, f->n_hctx, &orphans);
        if (r < 0)
                return r;

        /* what should be: per queue the CPUs of the hctx it serves, of every map placed */
        for (unsigned q = 0; q < queues && hctx_known; q++) {
                const CpuSet *hctx_cpus = &layout.target[q];
                _cleanup_(cpuset_done) CpuSet usable = {};
                const CpuSet *target = &usable;
                if (cpuset_count(hctx_cpus) == 0)
                        continue;       /* serves no hctx */
                if (disk_facts_usable_cpus(f, hctx_cpus, &usable) < 0)
                        return -ENOMEM;
                _cleanup_free_ char *t = cpuset_format(target), *all = cpuset_format(hctx_cpus);
                if (!t || !all)
                        return -ENOMEM;
                for (unsigned cpu = 0; cpu < hctx_cpus->n_words * 64; cpu++)
                        if (cpuset_isset(hctx_cpus, cpu) && !cpuset_isset(target, cpu) && cpuset_add(&removed, cpu) < 0)
                                return -ENOMEM;
                if (cpuset_count(target) == 0) {
                        /* only isolated CPUs: its vectors and XPS stay as they are */
                        if (append(&isolated, "%squeue %u (CPUs %s) left as it is", isolated ? ", " : "", q, all) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (cpuset_count(target) < cpuset_count(hctx_cpus) &&
                    append(&isolated, "%squeue %u on %s (not %s)", isolated ? ", " : "", q, t, all) < 0)
                        return -ENOMEM;
                for (size_t k = 0; k < nic->n_irqs; k++) {
                        const NicIrq *v = &nic->irqs[k];
                        if (v->queue != (int) q)
                                continue;
                        bool placed = v->affinity_list && cpuset_equal(&v->affinity, target);
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

        plan->net_queues = queues;
        if (hctx_known)
                plan->net_hctx_without_queue = (int) n_orphans;
        bool aligned = hctx_known && n_orphans == 0 && misplaced == 0 && xps_off == 0 && !layout.over && !layout.conflicts;
        if (!hctx_known && append(&why, "hctx cpu_lists unknown") < 0)
                return -ENOMEM;
        if (n_orphans && append(&why, "%shctx %s have no NIC queue on their CPUs", why ? "; " : "", orphans) < 0)
                return -ENOMEM;
        if (misplaced && append(&why, "%s%zu queue IRQ(s) off their hctx CPUs", why ? "; " : "", misplaced) < 0)
                return -ENOMEM;
        if (xps_off && append(&why, "%sXPS of %zu TX queue(s) differs", why ? "; " : "", xps_off) < 0)
                return -ENOMEM;
        for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++) {
                if (layout.over & (1u << t) &&
                    (n_maps == 1 ? append(&why, "%s%zu I/O queues over %u NIC queues", why ? "; " : "", maps[t], queues) :
                                   append(&why, "%sthe %s map's %zu hctx over %u NIC queues", why ? "; " : "",
                                          hctx_type_to_string(t), maps[t], queues)) < 0)
                        return -ENOMEM;
                if (layout.conflicts & (1u << t) &&
                    append(&why, "%sthe %s map's %zu hctx do not fit the placement of the maps before it on %u NIC queues",
                           why ? "; " : "", hctx_type_to_string(t), maps[t], queues) < 0)
                        return -ENOMEM;
        }
        r = aligned ? set_alignment(plan, NET_ALIGNMENT_ALIGNED, "%zu hctx over %u NIC queue(s) of %s", f->n_hctx, queues, nic->ifname) :
                      set_alignment(plan, NET_ALIGNMENT_MISALIGNED, "%s", why);
        if (r < 0)
                return r;

        /* the wishes */
        const char *o_irq = o ? o->nic_irq_affinity : NULL, *o_xps = o ? o->xps : NULL, *o_nr = o ? o->nr_io_queues : NULL;
        bool do_irq = o_irq ? streq(o_irq, "hctx") : np->nic_irq_follow_hctx;
        bool do_xps = o_xps ? streq(o_xps, "hctx") : np->xps_follow_hctx;
        bool do_nr = o_nr ? !streq(o_nr, "keep") : np->propose_nr_io_queues;
        _cleanup_free_ char *outcome = NULL, *alternative = NULL;

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
        if (isolated) {
                /* for applied/nic_irq_affinity and applied/xps: which CPUs, from where */
                _cleanup_free_ char *which = NULL;
                if (kernel_isolated_describe(&f->kernel, &removed, &which) < 0)
                        return -ENOMEM;
                Knob knobs[] = { KNOB_NIC_IRQ_AFFINITY, KNOB_XPS };
                for (size_t i = 0; i < ELEMENTSOF(knobs); i++)
                        if (plan_get(plan, knobs[i]) && asprintf(&plan->isolated[knobs[i]], "%s: %s", which, isolated) < 0)
                                return -ENOMEM;
        }

        /* the NIC's spare channels: at the largest map's count every map's hctx get a queue of
         * their own, when the NIC can run it (ethtool -L: no reconnect) */
        size_t largest = largest_map(maps);
        bool combined_nic = !nic->unknown[NIC_FACT_CHANNELS] && nic->combined > 0 && nic->rx == 0 && nic->tx == 0;
        const char *no_channels = NULL;
        /* who else sets the NIC's channel count (a .link file's CombinedChannels=, tuned's [net]
         * channels=): the admin's count is not proposed away, a distribution's is named */
        const Source *ch_src = sources_find_channels(f->sources, f);
        char ch_desc[512] = "", ch_why[700];
        if (ch_src)
                source_describe(ch_src, ch_desc, sizeof(ch_desc));
        if ((layout.over || layout.conflicts) && hctx_known && m >= 0) {
                if (!np->propose_nic_channels)
                        no_channels = "NicChannels=keep";
                else if (ch_src && ch_src->admin) {
                        snprintf(ch_why, sizeof(ch_why), "its channel count is set by %s; raising it there to %zu would give each "
                                 "hctx a NIC queue of its own", ch_desc, largest);
                        no_channels = ch_why;
                }
                else if (!combined_nic)
                        no_channels = nic->unknown[NIC_FACT_CHANNELS] ? "its channels are unknown" : "it runs separate rx/tx channels";
                else if (largest > nic->max_combined)
                        no_channels = "its maximum is lower";
                else {
                        _cleanup_(net_layout_done) NetLayout more = {};
                        r = net_align_layout(f, maps, (unsigned) largest, &more);
                        if (r < 0)
                                return r;
                        if (more.over || more.conflicts)
                                no_channels = "the maps would still not fit";
                        else if (plan->manage)
                                plan->net_channels = (unsigned) largest;
                }
        }

        /* the queue counts at the next connect (nvme-tcp): a map with more hctx than NIC queues,
         * or one that does not fit the placement, gets Q; what is in use is never proposed */
        /* NBD: nbd-client -C N at the next connect, one map (drivers/block/nbd.c: nr_maps 1) */
        bool nbd_count = nbd && maps[HCTX_TYPE_READ] == 0 && maps[HCTX_TYPE_POLL] == 0;
        if (plan->manage && do_nr && m >= 0 &&
            ((n->unknown[NET_FACT_NR_IO_QUEUES] == NULL && streq(n->transport, "tcp")) || nbd_count)) {
                size_t want[_HCTX_TYPE_MAX];
                bool read_map = maps[HCTX_TYPE_READ] > 0, poll_map = maps[HCTX_TYPE_POLL] > 0;
                for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++)
                        want[t] = maps[t] && ((layout.over | layout.conflicts) & (1u << t)) ? queues : maps[t];
                if (o_nr && !streq(o_nr, "auto")) {
                        uint64_t v;
                        if (parse_u64(o_nr, &v) >= 0 && v > 0 && v <= 65535)
                                want[read_map ? HCTX_TYPE_READ : HCTX_TYPE_DEFAULT] = (size_t) v;
                }
                bool change = false;
                for (HctxType t = 0; t < _HCTX_TYPE_MAX; t++)
                        change = change || want[t] != maps[t];
                if (change && nbd) {
                        if (asprintf(&plan->nr_io_queues, "connections=%zu", want[HCTX_TYPE_DEFAULT]) < 0)
                                return -ENOMEM;
                        if (append(&outcome, "%s%s (nbd-client -C %zu) at the next connect (pending-reconnect; a connected NBD "
                                   "device is never disconnected)", outcome ? " " : "", plan->nr_io_queues,
                                   want[HCTX_TYPE_DEFAULT]) < 0)
                                return -ENOMEM;
                } else if (change) {
                        r = connect_options(want, read_map, poll_map, &plan->nr_io_queues);
                        if (r < 0)
                                return r;
                        if (append(&outcome, "%s%s at the next connect (pending-reconnect; a live controller is never disconnected)",
                                   outcome ? " " : "", plan->nr_io_queues) < 0)
                                return -ENOMEM;
                }
        }
        if (plan->net_channels &&
            append(&outcome, "%sethtool -L %s combined %u (proposed: %s runs %u of its %u combined channels; no reconnect)",
                   plan->nr_io_queues ? "; or " : outcome ? " " : "", nic->ifname, plan->net_channels, nic->ifname, nic->combined,
                   nic->max_combined) < 0)
                return -ENOMEM;

        /* the recommendation: the NIC's channels when it can (no reconnect, every hctx keeps a
         * queue of its own), else the queue counts */
        if (plan->net_channels) {
                plan->net_action = NET_ACTION_NIC_CHANNELS;
                if (plan->nr_io_queues && asprintf(&alternative, "; the alternative, %s at the next connect, needs a reconnect and "
                                                   "leaves fewer hctx", plan->nr_io_queues) < 0)
                        return -ENOMEM;
                r = free_and_asprintf(&plan->net_recommended, "nic-channels: ethtool -L %s combined %u: no reconnect, and each hctx of "
                                      "the largest map (%zu) gets a NIC queue of its own (%s runs %u of its %u combined channels); "
                                      "make it persistent where %s is configured (%s%s%s CombinedChannels=%u)%s",
                                      nic->ifname, plan->net_channels, largest, nic->ifname, nic->combined, nic->max_combined,
                                      nic->ifname, ch_src ? "it is set now by " : "a systemd.link file's", ch_desc,
                                      ch_src ? ": there" : "", plan->net_channels, strempty(alternative));
                if (r >= 0)
                        r = append(&outcome, " (recommended)");
        } else if (plan->nr_io_queues) {
                plan->net_action = NET_ACTION_RECONNECT;
                _cleanup_free_ char *cli = nbd ? NULL : net_align_cli_options(plan->nr_io_queues);
                if (!nbd && !cli)
                        return -ENOMEM;
                r = nbd ? free_and_asprintf(&plan->net_recommended, "reconnect: %s at the next connect of %s (nbd-client ... -C %s)",
                                            plan->nr_io_queues, strna(n->controller), plan->nr_io_queues + strlen("connections=")) :
                          free_and_asprintf(&plan->net_recommended, "reconnect: %s at the next connect of %s (nvme connect ... %s)",
                                            plan->nr_io_queues, strna(n->controller), cli);
                if (r >= 0 && no_channels)
                        r = append(&plan->net_recommended, "; more channels on %s are not proposed: %s", nic->ifname, no_channels);
        } else
                r = free_and_asprintf(&plan->net_recommended, "none: %s", aligned ? "aligned" :
                                      !plan->manage ? "the disk is not managed" :
                                      !layout.over && !layout.conflicts ? "the NIC placement (nic_irq_affinity, xps) is all it takes" :
                                      nbd ? "no connection count blkmqd may propose (NrIoQueues=keep and NicChannels=keep)" :
                                      "no queue count blkmqd may propose (NrIoQueues=keep and NicChannels=keep, or not nvme-tcp)");
        if (r >= 0 && !plan->net_channels && !plan->nr_io_queues && no_channels && plan->manage)
                r = append(&plan->net_recommended, "; more channels on %s are not proposed: %s", nic->ifname, no_channels);
        if (r < 0)
                return -ENOMEM;

        unsigned planned = (plan->nic_irq_affinity ? KNOB_BIT(KNOB_NIC_IRQ_AFFINITY) : 0) |
                           (plan->xps ? KNOB_BIT(KNOB_XPS) : 0) | (plan->nr_io_queues ? KNOB_BIT(KNOB_NR_IO_QUEUES) : 0);
        r = plan_explain(plan, f->name, planned ?: NET_KNOBS, planned ? PLAN_OUTCOME_PLANNED : PLAN_OUTCOME_LEFT_ALONE,
                         "net-align", "%zu hctx%s over %s%s%s (%s; %s)%s%s -> %s%s",
                         f->n_hctx, strempty(map_counts), nic->ifname, n->lower_chain ? " via " : "", strempty(n->lower_chain),
                         channels, irqs ?: "no queue IRQs", why ? "; " : "", strempty(why),
                         outcome ?: aligned ? "aligned, nothing to do" : "nothing blkmqd may change",
                         strempty(notes));
        if (r < 0 || !planned || planned == NET_KNOBS)
                return r;
        /* the knobs the line above does not plan, each with why */
        _cleanup_free_ char *left = NULL;
        if (!plan->nic_irq_affinity &&
            append(&left, "nic_irq_affinity left alone (%s)", managed && !want_irq ? "every queue vector is kernel-managed" :
                   !want_irq ? "no NIC queue vector to place" : "see the line before") < 0)
                return -ENOMEM;
        if (!plan->xps && append(&left, "%sxps left alone (%s)", left ? ", " : "", !want_xps ? "no XPS to set" : "see the line before") < 0)
                return -ENOMEM;
        if (!plan->nr_io_queues &&
            append(&left, "%snr_io_queues left alone (%s)", left ? ", " : "",
                   !do_nr ? (o_nr ? "policy/nr_io_queues=keep" : "NrIoQueues=keep") :
                   nbd_count ? (layout.over ? "the connection count it would take is the one in use" :
                                "the map has no more hctx than the NIC's queues: the connection count in use fits") :
                   !streq(n->transport, "tcp") || n->unknown[NET_FACT_NR_IO_QUEUES] ? "no I/O queue count to propose for this transport" :
                   layout.over || layout.conflicts ? "the queue counts it would take are the ones in use" :
                   "no queue map has more hctx than the NIC's queues: the counts in use fit") < 0)
                return -ENOMEM;
        return plan_explain(plan, f->name, NET_KNOBS & ~planned, PLAN_OUTCOME_LEFT_ALONE, "net-align", "over %s -> %s",
                            nic->ifname, left);
}

static const NicFacts *nic_of(const DiskFacts *f) {
        return f && f->net ? f->net->nic : NULL;
}

int policy_net_arbitrate(const char *name, const DiskFacts *facts, const PolicyPeer *peers, size_t n_peers, Plan *plan) {
        assert(name);
        const NicFacts *nic = nic_of(facts);
        const PolicyPeer *owner = NULL;

        if (!nic || (!plan->nic_irq_affinity && !plan->xps))
                return 0;
        for (size_t i = 0; i < n_peers && !owner; i++) {
                const PolicyPeer *e = &peers[i];
                const NicFacts *en = nic_of(e->facts);
                if (!en || !e->plan || streq(e->name, name) || !streq(en->ifname, nic->ifname) || strverscmp(e->name, name) >= 0)
                        continue;
                if (!e->plan->nic_irq_affinity && !e->plan->xps)
                        continue;
                if (streq_ptr(e->plan->nic_irq_affinity, plan->nic_irq_affinity) && streq_ptr(e->plan->xps, plan->xps))
                        continue;       /* the same wishes (one controller): no conflict */
                owner = e;
        }
        if (!owner)
                return 0;
        int r = plan_explain(plan, name, KNOB_BIT(KNOB_NIC_IRQ_AFFINITY) | KNOB_BIT(KNOB_XPS), PLAN_OUTCOME_LEFT_ALONE,
                             "net-align-shared",
                             "%s is placed for %s (controller %s), whose hctx layout differs from this disk's "
                             "(controller %s): one disk places a NIC -> nic_irq_affinity and xps left to %s",
                             nic->ifname, owner->name, strna(owner->facts->net->controller), strna(facts->net->controller),
                             owner->name);
        if (r < 0)
                return r;
        plan->nic_irq_affinity = mfree_str(plan->nic_irq_affinity);
        plan->xps = mfree_str(plan->xps);
        return 0;
}
