/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "macro.h"
#include "memstream.h"
#include "net-facts.h"
#include "strv.h"

static const char * const net_fact_table[_NET_FACT_MAX] = {
        [NET_FACT_TRANSPORT]    = "transport",
        [NET_FACT_CONTROLLER]   = "controller",
        [NET_FACT_TRADDR]       = "traddr",
        [NET_FACT_TRSVCID]      = "trsvcid",
        [NET_FACT_SRC_ADDR]     = "src_addr",
        [NET_FACT_HOST_IFACE]   = "host_iface",
        [NET_FACT_NR_IO_QUEUES] = "nr_io_queues",
        [NET_FACT_INTERFACE]    = "interface",
        [NET_FACT_LOWER_DEVICE] = "lower_device",
        [NET_FACT_CHANNELS]     = "channels",
        [NET_FACT_IRQS]         = "irqs",
        [NET_FACT_XPS]          = "xps",
        [NET_FACT_BOND]         = "bond",
        [NET_FACT_CONNECTIONS]  = "connections",
};

static const char * const nic_fact_table[_NIC_FACT_MAX] = {
        [NIC_FACT_IFINDEX]         = "ifindex",
        [NIC_FACT_KIND]            = "kind",
        [NIC_FACT_DRIVER]          = "driver",
        [NIC_FACT_VIRTUAL]         = "virtual",
        [NIC_FACT_CHANNELS]        = "channels",
        [NIC_FACT_MAX_CHANNELS]    = "max_channels",
        [NIC_FACT_CHANNELS_SOURCE] = "channels_source",
        [NIC_FACT_TX_QUEUES]       = "tx_queues",
        [NIC_FACT_RX_QUEUES]       = "rx_queues",
        [NIC_FACT_IRQS]            = "irqs",
        [NIC_FACT_XPS]             = "xps",
        [NIC_FACT_RPS]             = "rps",
};

DEFINE_STRING_TABLE_LOOKUP(net_fact, NetFact, net_fact_table, _NET_FACT_MAX, _NET_FACT_INVALID);

DEFINE_STRING_TABLE_LOOKUP(nic_fact, NicFact, nic_fact_table, _NIC_FACT_MAX, _NIC_FACT_INVALID);

NicFacts *nic_facts_new(const char *ifname) {
        NicFacts *n = calloc(1, sizeof(NicFacts));
        if (!n || !(n->ifname = strdup(ifname)))
                return nic_facts_free(n);
        return n;
}

NicFacts *nic_facts_free(NicFacts *n) {
        if (!n)
                return NULL;
        for (size_t i = 0; i < n->n_irqs; i++) {
                free(n->irqs[i].name);
                free(n->irqs[i].affinity_list);
                free(n->irqs[i].managed_source);
                cpuset_done(&n->irqs[i].affinity);
        }
        free(n->irqs);
        for (unsigned i = 0; n->xps && i < n->n_tx_queues; i++)
                free(n->xps[i]);
        free(n->xps);
        for (unsigned i = 0; n->rps && i < n->n_rx_queues; i++)
                free(n->rps[i]);
        free(n->rps);
        free(n->ifname);
        free(n->kind);
        free(n->driver);
        free(n->virtual_reason);
        free(n->channels_source);
        for (size_t i = 0; i < _NIC_FACT_MAX; i++)
                free(n->unknown[i]);
        free(n);
        return NULL;
}

NetFacts *net_facts_new(const char *transport) {
        NetFacts *n = calloc(1, sizeof(NetFacts));
        if (!n || !(n->transport = strdup(transport)))
                return net_facts_free(n);
        n->nr_io_queues = n->connections = -1;
        return n;
}

NetFacts *net_facts_free(NetFacts *n) {
        if (!n)
                return NULL;
        free(n->transport);
        free(n->controller);
        free(n->traddr);
        free(n->trsvcid);
        free(n->src_addr);
        free(n->host_iface);
        free(n->interface);
        free(n->lower_chain);
        free(n->bond);
        free(n->bond_mode);
        free(n->bond_active);
        free(n->bond_hash);
        free(n->bond_ports);
        free(n->unavailable);
        free(n->offload);
        nic_facts_free(n->nic);
        for (size_t i = 0; i < _NET_FACT_MAX; i++)
                free(n->unknown[i]);
        free(n);
        return NULL;
}

DEFINE_FACTS_SET_UNKNOWN(net_facts_set_unknown, NetFacts, NetFact, _NET_FACT_MAX);
DEFINE_FACTS_SET_UNKNOWN(nic_facts_set_unknown, NicFacts, NicFact, _NIC_FACT_MAX);

/* Does fact f of n have a value (set by gathering)? */
static bool net_fact_has_value(const NetFacts *n, NetFact f) {
        switch (f) {
        case NET_FACT_TRANSPORT:    return n->transport;
        case NET_FACT_CONTROLLER:   return n->controller;
        case NET_FACT_TRADDR:       return n->traddr;
        case NET_FACT_TRSVCID:      return n->trsvcid;
        case NET_FACT_SRC_ADDR:     return n->src_addr;
        case NET_FACT_HOST_IFACE:   return n->host_iface;
        case NET_FACT_NR_IO_QUEUES: return n->nr_io_queues >= 0;
        case NET_FACT_INTERFACE:    return n->interface;
        case NET_FACT_LOWER_DEVICE:
        case NET_FACT_CHANNELS:
        case NET_FACT_IRQS:
        case NET_FACT_XPS:          return n->nic;
        case NET_FACT_BOND:         return n->bond;
        case NET_FACT_CONNECTIONS:  return n->connections >= 0;
        default:                    return false;
        }
}

int net_facts_set_all_unknown(NetFacts *n, const char *reason) {
        for (NetFact f = 0; f < _NET_FACT_MAX; f++)
                if (!n->unknown[f] && !net_fact_has_value(n, f) && net_facts_set_unknown(n, f, "%s", reason) < 0)
                        return -ENOMEM;
        return 0;
}

bool net_fact_needs_netlink(NetFact f) {
        return f >= NET_FACT_INTERFACE && f < _NET_FACT_MAX;
}

unsigned nic_facts_channels(const NicFacts *n) {
        if (!n || n->unknown[NIC_FACT_CHANNELS])
                return 0;
        return n->combined + MAX(n->rx, n->tx);
}

static void render_channels(FILE *out, uint32_t combined, uint32_t rx, uint32_t tx, uint32_t other) {
        fprintf(out, "combined=%u rx=%u tx=%u other=%u", combined, rx, tx, other);
}

static void render_irqs(FILE *out, const NicFacts *n) {
        for (size_t i = 0; i < n->n_irqs; i++) {
                const NicIrq *q = &n->irqs[i];
                fprintf(out, "%s%u %s queue ", i ? "\n" : "", q->irq, *q->name ? q->name : "-");
                if (q->queue >= 0)
                        fprintf(out, "%d%s", q->queue, q->dir == NIC_QUEUE_RX ? "/rx" : q->dir == NIC_QUEUE_TX ? "/tx" : "");
                else
                        fputs("-", out);
                fprintf(out, " cpu %s %s", q->affinity_list ?: "unknown",
                        q->managed == TRISTATE_YES ? "managed" : q->managed == TRISTATE_NO ? "unmanaged" : "managed-unknown");
        }
}

static void render_queue_masks(FILE *out, char * const *masks, unsigned n, const char *prefix) {
        for (unsigned i = 0; i < n; i++)
                fprintf(out, "%s%s-%u %s", i ? "\n" : "", prefix, i, masks[i] ? (*masks[i] ? masks[i] : "none") : "unknown");
}

/* The NIC fact of a disk's network fact when one is about the NIC. */
static int nic_fact_of(NetFact f) {
        switch (f) {
        case NET_FACT_CHANNELS: return NIC_FACT_CHANNELS;
        case NET_FACT_IRQS:     return NIC_FACT_IRQS;
        case NET_FACT_XPS:      return NIC_FACT_XPS;
        default:                return -1;
        }
}

int nic_facts_render(const NicFacts *n, NicFact f, char **ret) {
        assert(n);
        _cleanup_(memstream_done) MemStream m = {};

        if (f < 0 || f >= _NIC_FACT_MAX)
                return -EINVAL;
        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        bool channels_fact = f == NIC_FACT_CHANNELS || f == NIC_FACT_MAX_CHANNELS || f == NIC_FACT_CHANNELS_SOURCE;
        if (channels_fact && n->unknown[NIC_FACT_CHANNELS])
                fprintf(out, "unknown: %s", n->unknown[NIC_FACT_CHANNELS]);
        else if (n->unknown[f])
                fprintf(out, "unknown: %s", n->unknown[f]);
        else
                switch (f) {
                case NIC_FACT_IFINDEX:
                        fprintf(out, "%d", n->ifindex);
                        break;
                case NIC_FACT_KIND:
                        fputs(n->kind ?: "device", out);
                        break;
                case NIC_FACT_DRIVER:
                        fputs(strna(n->driver), out);
                        break;
                case NIC_FACT_VIRTUAL:
                        if (n->virtual_reason)
                                fprintf(out, "1: %s", n->virtual_reason);
                        else
                                fputs("0", out);
                        break;
                case NIC_FACT_CHANNELS:
                        render_channels(out, n->combined, n->rx, n->tx, n->other);
                        break;
                case NIC_FACT_MAX_CHANNELS:
                        render_channels(out, n->max_combined, n->max_rx, n->max_tx, n->max_other);
                        break;
                case NIC_FACT_CHANNELS_SOURCE:
                        fputs(strna(n->channels_source), out);
                        break;
                case NIC_FACT_TX_QUEUES:
                        fprintf(out, "%u", n->n_tx_queues);
                        break;
                case NIC_FACT_RX_QUEUES:
                        fprintf(out, "%u", n->n_rx_queues);
                        break;
                case NIC_FACT_IRQS:
                        render_irqs(out, n);
                        break;
                case NIC_FACT_XPS:
                        render_queue_masks(out, n->xps, n->xps ? n->n_tx_queues : 0, "tx");
                        break;
                case NIC_FACT_RPS:
                        render_queue_masks(out, n->rps, n->rps ? n->n_rx_queues : 0, "rx");
                        break;
                default:
                        break;
                }
        fputc('\n', out);
        return memstream_close(&m, ret);
}

int net_facts_render(const NetFacts *n, NetFact f, char **ret) {
        _cleanup_(memstream_done) MemStream m = {};

        if (f < 0 || f >= _NET_FACT_MAX)
                return -EINVAL;
        int nf = nic_fact_of(f);
        if (n->unavailable && net_fact_needs_netlink(f)) {
                if (asprintf(ret, "unavailable: %s\n", n->unavailable) < 0)
                        return -ENOMEM;
                return 0;
        }
        if (!n->unknown[f] && n->nic && nf >= 0)
                return nic_facts_render(n->nic, nf, ret);

        FILE *out = memstream_open(&m);
        if (!out)
                return -ENOMEM;
        if (n->unknown[f])
                fprintf(out, "unknown: %s", n->unknown[f]);
        else
                switch (f) {
                case NET_FACT_TRANSPORT:    fputs(strna(n->transport), out); break;
                case NET_FACT_CONTROLLER:   fputs(strna(n->controller), out); break;
                case NET_FACT_TRADDR:       fputs(strna(n->traddr), out); break;
                case NET_FACT_TRSVCID:      fputs(strna(n->trsvcid), out); break;
                case NET_FACT_SRC_ADDR:     fputs(strna(n->src_addr), out); break;
                case NET_FACT_HOST_IFACE:   fputs(strna(n->host_iface), out); break;
                case NET_FACT_NR_IO_QUEUES: fprintf(out, "%lld", (long long) n->nr_io_queues); break;
                case NET_FACT_CONNECTIONS:  fprintf(out, "%lld", (long long) n->connections); break;
                case NET_FACT_BOND:
                        fprintf(out, "%s mode=%s", n->bond, strna(n->bond_mode));
                        if (n->bond_active)
                                fprintf(out, " active=%s", n->bond_active);
                        if (n->bond_hash)
                                fprintf(out, " xmit_hash_policy=%s", n->bond_hash);
                        fprintf(out, " ports=%s", strna(n->bond_ports));
                        break;
                case NET_FACT_INTERFACE:    fputs(strna(n->interface), out); break;
                case NET_FACT_LOWER_DEVICE:
                        if (n->nic)
                                fprintf(out, "%s%s%s%s", n->nic->ifname, n->lower_chain ? " (" : "", strempty(n->lower_chain),
                                        n->lower_chain ? ")" : "");
                        else
                                fputs("unknown: not gathered", out);
                        break;
                default:
                        fputs("unknown: not gathered", out);
                        break;
                }
        fputc('\n', out);
        return memstream_close(&m, ret);
}

char *net_facts_signature(const NetFacts *n) {
        assert(n);
        _cleanup_(memstream_done) MemStream m = {};
        FILE *out = memstream_open(&m);
        if (!out)
                return NULL;
        fprintf(out, "if=%s/%d|lower=%s|bond=%s,%s,%s,%s,%s|", strempty(n->interface), n->ifindex, strempty(n->lower_chain),
                strempty(n->bond), strempty(n->bond_mode), strempty(n->bond_active), strempty(n->bond_hash), strempty(n->bond_ports));
        for (NetFact f = NET_FACT_INTERFACE; f < _NET_FACT_MAX; f++)
                fprintf(out, "%s;", strempty(n->unknown[f]));
        const NicFacts *c = n->nic;
        if (c) {
                fprintf(out, "|nic=%s/%d,%s|ch=%u,%u,%u,%u/%u,%u,%u,%u;%s|q=%u,%u|", c->ifname, c->ifindex, strempty(c->virtual_reason),
                        c->combined, c->rx, c->tx, c->other, c->max_combined, c->max_rx, c->max_tx, c->max_other,
                        strempty(c->unknown[NIC_FACT_CHANNELS]), c->n_tx_queues, c->n_rx_queues);
                for (size_t i = 0; i < c->n_irqs; i++)
                        fprintf(out, "%u:%d:%s,", c->irqs[i].irq, c->irqs[i].queue, strempty(c->irqs[i].affinity_list));
                fputc('|', out);
                for (unsigned t = 0; c->xps && t < c->n_tx_queues; t++)
                        fprintf(out, "%s,", c->xps[t] ?: "?");
        }
        return memstream_close_text(&m);
}

int nic_irq_queue_from_name(const char *name, NicQueueDir *ret_dir) {
        static const char * const not_queue[] = { "config", "control", "ctrl", "misc", "async", "event", "cmd", "ctl", "lsc", "aq" };
        NicQueueDir dir = NIC_QUEUE_BOTH;

        if (!name || !*name)
                return -1;
        /* the part before "@pci:..." (mlx5_comp3@pci:0000:01:00.0) */
        size_t len = strcspn(name, "@");
        /* trailing number */
        size_t e = len;
        while (e > 0 && isdigit((unsigned char) name[e - 1]))
                e--;
        if (e == len || e == 0)
                return -1;
        char sep = name[e - 1];
        if (sep != '-' && sep != '.' && sep != '_' && !isalpha((unsigned char) sep))
                return -1;
        /* the word the number belongs to: "input", "TxRx", "comp", "rx" */
        size_t w = e - (sep == '-' || sep == '.' || sep == '_' ? 1 : 0);
        size_t b = w;
        while (b > 0 && isalpha((unsigned char) name[b - 1]))
                b--;
        char word[32] = "";
        if (w - b < sizeof(word))
                memcpy(word, name + b, w - b), word[w - b] = 0;
        for (size_t i = 0; i < ELEMENTSOF(not_queue); i++)
                if (strcasecmp(word, not_queue[i]) == 0)
                        return -1;
        if (strcasecmp(word, "input") == 0 || strcasecmp(word, "rx") == 0)
                dir = NIC_QUEUE_RX;
        else if (strcasecmp(word, "output") == 0 || strcasecmp(word, "tx") == 0)
                dir = NIC_QUEUE_TX;
        else if (!(strcasecmp(word, "TxRx") == 0 || strcasecmp(word, "comp") == 0 || strcasecmp(word, "queue") == 0 ||
                   strcasecmp(word, "q") == 0 || strcasecmp(word, "combined") == 0 || strcasecmp(word, "rxtx") == 0 ||
                   strcasecmp(word, "TxRxq") == 0))
                return -1;     /* an index of something else ("virtio0" alone, "eth1" without a queue word) */
        unsigned long v = strtoul(name + e, NULL, 10);
        if (v > 65535)
                return -1;
        if (ret_dir)
                *ret_dir = dir;
        return (int) v;
}

NicFacts *nic_facts_copy(const NicFacts *src) {
        assert(src);
        NicFacts *n = nic_facts_new(src->ifname);
        if (!n)
                return NULL;
        n->ifindex = src->ifindex;
        n->max_rx = src->max_rx, n->max_tx = src->max_tx, n->max_other = src->max_other, n->max_combined = src->max_combined;
        n->rx = src->rx, n->tx = src->tx, n->other = src->other, n->combined = src->combined;
        n->n_tx_queues = src->n_tx_queues;
        n->n_rx_queues = src->n_rx_queues;
        if ((src->kind && !(n->kind = strdup(src->kind))) || (src->driver && !(n->driver = strdup(src->driver))) ||
            (src->virtual_reason && !(n->virtual_reason = strdup(src->virtual_reason))) ||
            (src->channels_source && !(n->channels_source = strdup(src->channels_source))))
                return nic_facts_free(n);
        for (size_t i = 0; i < _NIC_FACT_MAX; i++)
                if (src->unknown[i] && !(n->unknown[i] = strdup(src->unknown[i])))
                        return nic_facts_free(n);
        if (src->n_irqs) {
                n->irqs = calloc(src->n_irqs, sizeof(NicIrq));
                if (!n->irqs)
                        return nic_facts_free(n);
                for (size_t i = 0; i < src->n_irqs; i++) {
                        const NicIrq *s = &src->irqs[i];
                        NicIrq *d = &n->irqs[n->n_irqs++];
                        *d = (NicIrq) { .irq = s->irq, .managed = s->managed, .queue = s->queue, .dir = s->dir };
                        if (!(d->name = strdup(s->name)) || cpuset_copy(&s->affinity, &d->affinity) < 0 ||
                            (s->affinity_list && !(d->affinity_list = strdup(s->affinity_list))) ||
                            (s->managed_source && !(d->managed_source = strdup(s->managed_source))))
                                return nic_facts_free(n);
                }
        }
        for (int pass = 0; pass < 2; pass++) {
                char * const *from = pass ? src->rps : src->xps;
                unsigned cnt = pass ? src->n_rx_queues : src->n_tx_queues;
                if (!from)
                        continue;
                char **to = calloc(cnt + 1, sizeof(char *));
                if (!to)
                        return nic_facts_free(n);
                if (pass)
                        n->rps = to;
                else
                        n->xps = to;
                for (unsigned i = 0; i < cnt; i++)
                        if (from[i] && !(to[i] = strdup(from[i])))
                                return nic_facts_free(n);
        }
        return n;
}
