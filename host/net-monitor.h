/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * net-monitor: the kernel's notifications of changes on the network side of a network disk,
 * so that its facts follow the NIC without a reload (the rest is the periodic verify: the
 * kernel sends nothing when a vector's affinity or an XPS mask is written).
 *
 *   rtnetlink   RTNLGRP_LINK: RTM_NEWLINK/RTM_DELLINK for a link up or down, a port joining
 *               or leaving a bond, an active-backup failover (net/core/rtnetlink.c
 *               rtnetlink_event(): NETDEV_BONDING_FAILOVER is sent as IFLA_EVENT_BONDING_FAILOVER);
 *               RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE: a route that may now leave by another link
 *   ethtool     the genl family's "monitor" group: ETHTOOL_MSG_CHANNELS_NTF after a channel
 *               change, also one made through the ioctl (net/ethtool/channels.c
 *               ethnl_set_channels(), net/ethtool/ioctl.c ethtool_set_channels()); kernels
 *               before the family (5.6) have none, the verify sees the count then
 *
 * Notifications are coalesced: the callback runs once, NET_MONITOR_QUIET_USEC after the last
 * of a burst (a failover sends several), with a line saying what came first and how many.
 * Built without libnl, net_monitor_new() answers -EOPNOTSUPP. Logs nothing above debug.
 */

#include <stdbool.h>
#include <systemd/sd-event.h>

#define NET_MONITOR_QUIET_USEC (200 * 1000ULL)

typedef struct NetMonitor NetMonitor;

/* what: "link eth0 (RTM_NEWLINK)", "+2 more" appended for a burst; valid during the call. */
typedef void (*on_net_change_t)(void *userdata, const char *what);

/*
 * Subscribe to the groups above in the caller's network namespace and attach to event.
 * Returns 0, -EOPNOTSUPP (built without libnl), -errno (socket, subscription). Without the
 * ethtool family (kernel < 5.6) the rtnetlink part alone is set up (net_monitor_ethtool()
 * says so).
 */
int net_monitor_new(sd_event *event, on_net_change_t cb, void *userdata, NetMonitor **ret);
NetMonitor *net_monitor_free(NetMonitor *m);
static inline void net_monitor_freep(NetMonitor **m) {
        net_monitor_free(*m);
}

/* True when the ethtool genl monitor group is subscribed too. */
bool net_monitor_ethtool(const NetMonitor *m);
