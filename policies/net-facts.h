/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Network facts of a disk reached over the network (nvme-tcp, nvme-rdma, iSCSI, NBD): the
 * controller's address and I/O queues, the route to the target, the NIC below it with its
 * channels, queue IRQ vectors, XPS and RPS. Gathered by facts/net.c through hostfs and
 * hostfs-net (libnl), consumed by the pure alignment rule (policies/net-align.c) and rendered
 * under devices/<disk>/network/ and nics/<if>/. Plain data.
 *
 * A fact is known (field valid, unknown[] NULL) or unknown with a reason; a NIC that is
 * virtual (loopback, veth, a software device, virtio-net without MSI-X) carries the reason
 * alignment does not apply in virtual_reason. Never a made-up 0.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"

/* Files under devices/<disk>/network/ (besides alignment, which the policy writes). */
typedef enum NetFact {
        NET_FACT_TRANSPORT,     /* tcp | rdma (class/nvme/<ctrl>/transport), iscsi, nbd */
        NET_FACT_CONTROLLER,    /* nvme1; iSCSI: session3 */
        NET_FACT_TRADDR,        /* target address (nvme address traddr=; iSCSI connection address; NBD: the remote
                                 * end of the client's sockets, /proc/<pid>/net/tcp{,6}) */
        NET_FACT_TRSVCID,       /* target port */
        NET_FACT_SRC_ADDR,      /* local address in use (nvme-tcp src_addr=, else host_traddr=; iSCSI
                                 * class/iscsi_host/<host>/ipaddress; NBD: the sockets' local end) */
        NET_FACT_HOST_IFACE,    /* interface the controller is bound to (nvme-tcp host_iface=; iSCSI
                                 * class/iscsi_host/<host>/netdev) */
        NET_FACT_NR_IO_QUEUES,  /* I/O queues of the controller (queue_count - 1) */
        NET_FACT_INTERFACE,     /* egress interface of the route to traddr */
        NET_FACT_LOWER_DEVICE,  /* the NIC below VLAN/bond/bridge ("eth1"); chain in lower_chain */
        NET_FACT_CHANNELS,      /* "combined=2 rx=0 tx=0 other=1" of the lower device */
        NET_FACT_IRQS,          /* NIC queue vectors, one line each */
        NET_FACT_XPS,           /* tx-N cpulist, one line each */
        NET_FACT_BOND,          /* "bond0 mode=active-backup active=eth0 ports=eth0 eth2" (class/net/<bond>/bonding/) */
        NET_FACT_CONNECTIONS,   /* TCP connections carrying the disk's I/O: nvme-tcp one per I/O queue, an iSCSI
                                 * session's connections, NBD one per hctx */
        _NET_FACT_MAX,
        _NET_FACT_INVALID = -EINVAL,
} NetFact;

const char *net_fact_to_string(NetFact f);
NetFact net_fact_from_string(const char *s);

/* Files under nics/<if>/. */
typedef enum NicFact {
        NIC_FACT_IFINDEX,
        NIC_FACT_KIND,          /* rtnl link kind ("veth", "vlan") or "device" */
        NIC_FACT_DRIVER,        /* device/driver of the parent device */
        NIC_FACT_VIRTUAL,       /* "0", or "1: <reason alignment does not apply>" */
        NIC_FACT_CHANNELS,
        NIC_FACT_MAX_CHANNELS,  /* "combined=2 rx=0 tx=0 other=1" maxima */
        NIC_FACT_CHANNELS_SOURCE, /* ethtool-netlink | ioctl */
        NIC_FACT_TX_QUEUES,     /* queues/tx-* count */
        NIC_FACT_RX_QUEUES,     /* queues/rx-* count */
        NIC_FACT_IRQS,
        NIC_FACT_XPS,
        NIC_FACT_RPS,
        _NIC_FACT_MAX,
        _NIC_FACT_INVALID = -EINVAL,
} NicFact;

const char *nic_fact_to_string(NicFact f);
NicFact nic_fact_from_string(const char *s);

/* What a NIC vector serves, from its name. */
typedef enum NicQueueDir {
        NIC_QUEUE_BOTH,         /* a queue pair ("eth1-TxRx-0", "mlx5_comp0") */
        NIC_QUEUE_RX,           /* "virtio0-input.0", "eth1-rx-0" */
        NIC_QUEUE_TX,           /* "virtio0-output.0", "eth1-tx-0" */
} NicQueueDir;

typedef struct NicIrq {
        unsigned irq;
        char *name;             /* /proc/interrupts action name, "" unknown */
        CpuSet affinity;
        char *affinity_list;    /* normalised smp_affinity_list, NULL unreadable */
        int managed;            /* Tristate: kernel-managed (writes fail) */
        char *managed_source;
        int queue;              /* channel index from the name; -1: not a queue vector (config, misc) */
        NicQueueDir dir;
} NicIrq;

typedef struct NicFacts {
        char *ifname;
        int ifindex;
        char *kind;             /* rtnl kind; NULL = a device */
        char *driver;
        char *virtual_reason;   /* non-NULL: alignment does not apply, and why */
        uint32_t max_rx, max_tx, max_other, max_combined;
        uint32_t rx, tx, other, combined;       /* valid when unknown[NIC_FACT_CHANNELS] is NULL */
        char *channels_source;
        unsigned n_tx_queues, n_rx_queues;
        NicIrq *irqs;           /* ascending IRQ number */
        size_t n_irqs;
        char **xps;             /* n_tx_queues entries: normalised cpulist ("" none), NULL unreadable */
        char **rps;             /* n_rx_queues entries, same */
        char *unknown[_NIC_FACT_MAX];
} NicFacts;

typedef struct NetFacts {
        char *transport;
        char *controller;
        char *traddr, *trsvcid, *src_addr, *host_iface;
        int64_t nr_io_queues;           /* -1 unknown */
        char *interface;
        int ifindex;
        char *lower_chain;              /* "eth1.100 -> eth1"; NULL when lower == interface */
        /* a bond on the way down (class/net/<bond>/bonding/, drivers/net/bonding/bond_sysfs.c):
         * its name, mode ("active-backup"), active port (active-backup; NULL none),
         * xmit_hash_policy ("layer3+4") and ports; bond NULL: none (unknown[NET_FACT_BOND]) */
        char *bond, *bond_mode, *bond_active, *bond_hash, *bond_ports;
        int64_t connections;            /* -1 unknown (unknown[NET_FACT_CONNECTIONS]) */
        NicFacts *nic;                  /* the lower device; NULL unknown (unknown[NET_FACT_LOWER_DEVICE]) */
        /* non-NULL: the route and NIC facts (interface .. xps) cannot be read at all on this
         * build or root ("built without libnl"); they read "unavailable: <why>" */
        char *unavailable;
        /* non-NULL: the transport's own hardware carries the connections (an iSCSI offload HBA,
         * iSER over RDMA), not the host's TCP/IP stack and its NIC queues: the route and NIC facts
         * read "unknown: <why>" and the alignment is not applicable, saying why */
        char *offload;
        char *unknown[_NET_FACT_MAX];
} NetFacts;

NetFacts *net_facts_new(const char *transport);
NetFacts *net_facts_free(NetFacts *n);
NicFacts *nic_facts_new(const char *ifname);
NicFacts *nic_facts_free(NicFacts *n);

/* Set a reason (printf) for an unknown fact. Returns 0, -EINVAL (f out of range), -ENOMEM. */
int net_facts_set_unknown(NetFacts *n, NetFact f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int nic_facts_set_unknown(NicFacts *n, NicFact f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Mark every fact of n that has no value yet unknown with reason. */
int net_facts_set_all_unknown(NetFacts *n, const char *reason);

/* True for the facts that need netlink (interface, lower_device, channels, irqs, xps). */
bool net_fact_needs_netlink(NetFact f);

/*
 * File content of a fact: value and "\n", multi-line for irqs/xps/rps, or "unknown: why\n".
 * Returns 0 with a new string, -EINVAL, -ENOMEM. Pure.
 */
int net_facts_render(const NetFacts *n, NetFact f, char **ret);
int nic_facts_render(const NicFacts *n, NicFact f, char **ret);

/* Number of channels the NIC has in use: combined + max(rx, tx) (0 when unknown). Pure. */
unsigned nic_facts_channels(const NicFacts *n);

/*
 * The channel index and direction of a NIC vector from its /proc/interrupts name:
 * "virtio0-input.3" (drivers/net/virtio_net.c virtnet_find_vqs(): input.N/output.N,
 * drivers/virtio/virtio_pci_common.c names the vector "<dev>-<vq name>"), "eth1-TxRx-3"
 * (Intel and others), "mlx5_comp3@pci:…", "eth1-rx-3", "eth1-tx-3". -1 when the name carries
 * no queue number or names a config/control/misc vector. Pure.
 */
int nic_irq_queue_from_name(const char *name, NicQueueDir *ret_dir);

/*
 * What the alignment depends on of n, as one string: route, lower chain, bond, the NIC's
 * channels, queues, vectors with their affinity, XPS (and the reasons of what is unknown).
 * Two gathers whose signatures are equal give the same alignment. NULL on ENOMEM. Pure.
 */
char *net_facts_signature(const NetFacts *n);

/* Copy of a NicFacts (for nics/<if>/). NULL on ENOMEM. */
NicFacts *nic_facts_copy(const NicFacts *n);
