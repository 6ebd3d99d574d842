/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * hostfs-net: the netlink side of hostfs. Like hostfs.c it is the host (the kernel's routing
 * table, link list and ethtool), so it lives next to hostfs and nothing else in blkmqd opens a
 * netlink socket. Three questions, each answered through libnl:
 *
 *   route    RTM_GETROUTE for one destination (libnl-route: rtnl_route_parse() of the
 *            kernel's answer, net/ipv4/route.c inet_rtm_getroute(), net/ipv6/route.c
 *            inet6_rtm_getroute()): the egress interface (RTA_OIF) and preferred source.
 *   links    RTM_GETLINK dump (libnl-route link cache): name, ifindex, IFLA_INFO_KIND
 *            (vlan, bond, bridge, veth, ...), IFLA_LINK (a VLAN's lower device) and
 *            IFLA_MASTER (a bond's or bridge's ports point at it), flags.
 *   channels the ethtool generic netlink family's ETHTOOL_MSG_CHANNELS_GET (libnl-genl;
 *            net/ethtool/channels.c, since 5.6: the attributes of a kind are sent only when
 *            its max is non-zero, so an absent one is 0), falling back to the
 *            SIOCETHTOOL ioctl ETHTOOL_GCHANNELS (net/ethtool/ioctl.c
 *            ethtool_get_channels()) when the kernel has no "ethtool" family.
 *
 * Fixture roots (hostfs_is_live() false) have no kernel to ask: the answers come from a
 * captured text file <root>/netlink/facts (tests/blkmqd-net-capture writes it on a live
 * machine, docs/TESTING.md), one record a line, '#' comments:
 *
 *   route dst=<addr> [oif=<ifname>] dev=<ifname> ifindex=<n> [src=<addr>] | error=<ERRNO NAME>
 *   link ifname=<name> ifindex=<n> kind=<kind|-> link=<ifindex|0> master=<ifindex|0> flags=<hex>
 *   channels ifname=<name> source=<ethtool-netlink|ioctl> rx_max=<n> tx_max=<n> other_max=<n>
 *            combined_max=<n> rx=<n> tx=<n> other=<n> combined=<n> | error=<ERRNO NAME>
 *
 * Test seam: BLKMQD_TEST_NO_ETHTOOL_NETLINK=1 makes channels skip the genl family and use the
 * ioctl, as on a kernel before 5.6 (tests/integration/test-net-veth.py). Never set in production.
 *
 * Built without libnl (meson -Dlibnl=disabled, HAVE_LIBNL=0) every call returns -EOPNOTSUPP
 * and hostfs_net_available() says "built without libnl", on the live machine and on fixtures.
 * Logs nothing above debug.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hostfs.h"

/* The route the kernel would use to reach a destination. */
typedef struct NetRoute {
        int ifindex;            /* egress interface (RTA_OIF) */
        char *ifname;           /* its name; NULL when the link is not found */
        char *src;              /* preferred source address (RTA_PREFSRC), NULL when none */
} NetRoute;

void net_route_done(NetRoute *r);

/* One network interface (RTM_GETLINK). */
typedef struct NetLink {
        char *ifname;
        int ifindex;
        char *kind;             /* IFLA_INFO_KIND ("vlan", "bond", "bridge", "veth"); NULL for a plain device */
        int link;               /* IFLA_LINK: the lower device of a VLAN/macvlan; 0 none */
        int master;             /* IFLA_MASTER: the bond/bridge this one is a port of; 0 none */
        unsigned flags;         /* IFF_* */
} NetLink;

void net_links_free(NetLink *l, size_t n);

/* ethtool channels (struct ethtool_channels, include/uapi/linux/ethtool.h). */
typedef struct NetChannels {
        uint32_t max_rx, max_tx, max_other, max_combined;
        uint32_t rx, tx, other, combined;
        const char *source;     /* "ethtool-netlink" or "ioctl" (static) */
} NetChannels;

/*
 * Can network facts be read at all? False when built without libnl (reason "built without
 * libnl"), or on a fixture root without netlink/facts ("the fixture has no netlink/facts
 * capture"). ret_reason (static) may be NULL.
 */
bool hostfs_net_available(HostFs *h, const char **ret_reason);

/*
 * The route to dst (an IPv4 or IPv6 address in text form). oif: the interface the socket is
 * bound to (nvme-tcp host_iface, SO_BINDTODEVICE), NULL for none. Returns 0, -EINVAL (dst is
 * no address), -ENETUNREACH/-EHOSTUNREACH/... (the kernel's answer), -ENOENT (fixture: no
 * such route recorded), -EOPNOTSUPP (built without libnl), -ENOMEM, -EIO (netlink failure).
 */
int hostfs_net_route_get(HostFs *h, const char *dst, const char *oif, NetRoute *ret);

/* Every interface of the network namespace. Returns 0 with *ret (n entries), -errno as above. */
int hostfs_net_links(HostFs *h, NetLink **ret, size_t *ret_n);

/*
 * The channels of interface ifname. Returns 0, -EOPNOTSUPP (the driver has no
 * get_channels, or built without libnl), -ENODEV (no such interface), -errno.
 */
int hostfs_net_channels(HostFs *h, const char *ifname, NetChannels *ret);

/*
 * Write the capture format above for this (live) machine to out: a route line for every
 * destination in dsts (strv, "addr" or "addr%oif"), every link, and the channels of every
 * link. Returns 0 or -errno (-EOPNOTSUPP without libnl).
 */
int hostfs_net_capture(HostFs *h, char * const *dsts, FILE *out);
