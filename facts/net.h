/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Network facts of one disk (policies/net-facts.h), through hostfs (sysfs, procfs) and
 * hostfs-net (netlink). Sources, relative to sysfs unless noted:
 *
 *   nvme-tcp / nvme-rdma   block/<d>/device is the controller (class/nvme/<ctrl>), or for a
 *                          multipath head the subsystem (nvme-subsysN/<ctrl>, the first
 *                          controller of transport tcp/rdma is used). <ctrl>/transport
 *                          (drivers/nvme/host/sysfs.c nvme_sysfs_show_transport(): ops->name),
 *                          <ctrl>/address ("traddr=…,trsvcid=…[,host_traddr=…][,host_iface=…]",
 *                          drivers/nvme/host/fabrics.c nvmf_get_address(); nvme-tcp adds
 *                          ",src_addr=…" of the connected admin socket, drivers/nvme/host/tcp.c
 *                          nvme_tcp_get_address()), <ctrl>/queue_count (I/O queues + the admin
 *                          queue, drivers/nvme/host/sysfs.c).
 *   iSCSI                  the session device above the disk (holding iscsi_session/);
 *                          class/iscsi_connection/connectionN:0/{address,port}
 *                          (drivers/scsi/scsi_transport_iscsi.c); the session's SCSI host (its
 *                          parent: one per session, drivers/scsi/iscsi_tcp.c)
 *                          class/iscsi_host/<host>/{ipaddress,netdev} for src_addr and the
 *                          device iscsid bound it to; a driver other than iscsi_tcp offloads
 *                          the session (NetFacts.offload).
 *   NBD                    nbd<N> disks: the kernel exports no socket address (drivers/block/nbd.c
 *                          takes the socket from user space); the route stays unknown.
 *   route, links, channels hostfs-net (RTM_GETROUTE, RTM_GETLINK, ETHTOOL_MSG_CHANNELS_GET).
 *   NIC                    class/net/<if>/{device,device/driver}, class/net/<if>/queues/{tx-N,rx-N}
 *                          with tx-N/xps_cpus and rx-N/rps_cpus (net/core/net-sysfs.c); the queue
 *                          vectors of the PCI function above class/net/<if>/device (msi_irqs/,
 *                          /proc/interrupts names, /proc/irq/N/smp_affinity_list, managed state
 *                          as for block vectors: facts/device.c).
 */

#include <stdbool.h>

#include "device.h"
#include "facts.h"
#include "hostfs.h"
#include "registry.h"

/*
 * Gather f->net when f is a disk reached over the network (leaves it NULL otherwise).
 * devpath: the resolved block/<d>/device path (NULL when none). Missing facts are reasons,
 * never errors. Returns 0 or -ENOMEM.
 */
int net_gather(HostFs *h, DiskFacts *f, const char *devpath, bool debugfs, GatherCache *cache);


/*
 * Has the network side of f changed since its facts were gathered? The route, the links below
 * it (a bond's active port, a link gone), the NIC's channels, queues, vectors and their
 * affinity, XPS are read again (as net_gather() does) and compared with f->net
 * (net_facts_signature()). Returns 1 changed, 0 the same (also for a disk without a route to
 * follow), or -ENOMEM.
 */
int net_recheck(HostFs *h, const DiskFacts *f, GatherCache *cache);

/*
 * Read again what a blkmqd write can change: the NIC vectors' smp_affinity_list and the
 * XPS masks of f->net->nic. Returns 1 when something changed, 0, or -ENOMEM.
 */
int net_refresh(HostFs *h, DiskFacts *f);
