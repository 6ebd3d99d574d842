/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "net-monitor.h"

/* a burst is reported at the latest this long after its first notification */
#define NET_MONITOR_MAX_DELAY_USEC (1000 * 1000ULL)

#if HAVE_LIBNL

#include <linux/ethtool_netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

struct NetMonitor {
        sd_event *event;
        on_net_change_t cb;
        void *userdata;
        struct nl_sock *route, *ethtool;
        int ethtool_family;
        sd_event_source *route_source, *ethtool_source, *timer;
        uint64_t first_usec;            /* CLOCK_MONOTONIC of the burst's first notification, 0 none */
        char first[128];                /* what it was */
        unsigned more;                  /* notifications after it */
};

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        NetMonitor *m = userdata;
        char what[192];

        if (m->more)
                snprintf(what, sizeof(what), "%s, +%u more", m->first, m->more);
        else
                snprintf(what, sizeof(what), "%s", m->first);
        m->first_usec = 0;
        m->more = 0;
        m->cb(m->userdata, what);
        return 0;
}

/* One notification: the burst's first arms the timer; later ones push it back, up to the cap. */
static void noted(NetMonitor *m, const char *fmt, ...) _printf_(2, 3);
static void noted(NetMonitor *m, const char *fmt, ...) {
        uint64_t now = 0;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (m->first_usec == 0) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(m->first, sizeof(m->first), fmt, ap);
                va_end(ap);
                m->first_usec = now;
                log_debug("Network change: %s", m->first);
        } else
                m->more++;
        uint64_t at = MIN(now + NET_MONITOR_QUIET_USEC, m->first_usec + NET_MONITOR_MAX_DELAY_USEC);
        int r = m->timer ? sd_event_source_set_time(m->timer, at) : sd_event_add_time(m->event, &m->timer, CLOCK_MONOTONIC, at, 0,
                                                                                      on_timer, m);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_debug_errno(r, "Cannot arm the network change timer, reporting at once: %m");
        if (r < 0)
                on_timer(NULL, 0, m);
}

static int on_route_msg(struct nl_msg *msg, void *arg) {
        NetMonitor *m = arg;
        struct nlmsghdr *h = nlmsg_hdr(msg);

        switch (h->nlmsg_type) {
        case RTM_NEWLINK:
        case RTM_DELLINK: {
                struct nlattr *name = nlmsg_find_attr(h, sizeof(struct ifinfomsg), IFLA_IFNAME);
                const struct ifinfomsg *ifi = nlmsg_data(h);
                if (name)
                        noted(m, "link %.*s (%s)", (int) nla_len(name), (const char *) nla_data(name),
                              h->nlmsg_type == RTM_NEWLINK ? "RTM_NEWLINK" : "RTM_DELLINK");
                else
                        noted(m, "link ifindex %d (%s)", ifi->ifi_index, h->nlmsg_type == RTM_NEWLINK ? "RTM_NEWLINK" : "RTM_DELLINK");
                break;
        }
        case RTM_NEWROUTE:
        case RTM_DELROUTE:
                noted(m, "a route (%s)", h->nlmsg_type == RTM_NEWROUTE ? "RTM_NEWROUTE" : "RTM_DELROUTE");
                break;
        default:
                break;
        }
        return NL_OK;
}

static int on_ethtool_msg(struct nl_msg *msg, void *arg) {
        NetMonitor *m = arg;
        struct nlattr *tb[ETHTOOL_A_CHANNELS_MAX + 1], *hdr[ETHTOOL_A_HEADER_MAX + 1];
        struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));

        if (g->cmd != ETHTOOL_MSG_CHANNELS_NTF)
                return NL_OK;
        if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, ETHTOOL_A_CHANNELS_MAX, NULL) >= 0 && tb[ETHTOOL_A_CHANNELS_HEADER] &&
            nla_parse_nested(hdr, ETHTOOL_A_HEADER_MAX, tb[ETHTOOL_A_CHANNELS_HEADER], NULL) >= 0 && hdr[ETHTOOL_A_HEADER_DEV_NAME])
                noted(m, "ethtool channels of %s (ETHTOOL_MSG_CHANNELS_NTF)", nla_get_string(hdr[ETHTOOL_A_HEADER_DEV_NAME]));
        else
                noted(m, "ethtool channels (ETHTOOL_MSG_CHANNELS_NTF)");
        return NL_OK;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        NetMonitor *m = userdata;
        struct nl_sock *sk = s == m->route_source ? m->route : m->ethtool;
        int r = nl_recvmsgs_default(sk);
        if (r == -NLE_NOMEM)    /* ENOBUFS: the kernel dropped notifications; something changed */
                noted(m, "notifications lost (ENOBUFS)");
        else if (r < 0 && r != -NLE_AGAIN)
                log_debug("Reading network notifications: %s", nl_geterror(r));
        return 0;
}

static int open_socket(struct nl_sock **ret, nl_recvmsg_msg_cb_t cb, void *arg) {
        struct nl_sock *sk = nl_socket_alloc();
        if (!sk)
                return -ENOMEM;
        nl_socket_disable_seq_check(sk);
        nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, cb, arg);
        *ret = sk;
        return 0;
}

int net_monitor_new(sd_event *event, on_net_change_t cb, void *userdata, NetMonitor **ret) {
        assert(ret);
        _cleanup_(net_monitor_freep) NetMonitor *m = calloc(1, sizeof(NetMonitor));
        int r;

        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->cb = cb;
        m->userdata = userdata;
        m->ethtool_family = -1;

        r = open_socket(&m->route, on_route_msg, m);
        if (r < 0)
                return r;
        if (nl_connect(m->route, NETLINK_ROUTE) < 0 ||
            nl_socket_add_memberships(m->route, RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, 0) < 0 ||
            nl_socket_set_nonblocking(m->route) < 0)
                return -EIO;
        r = sd_event_add_io(event, &m->route_source, nl_socket_get_fd(m->route), EPOLLIN, on_readable, m);
        if (r < 0)
                return r;

        /* the ethtool family's monitor group (>= 5.6); without it the rtnetlink part alone */
        r = open_socket(&m->ethtool, on_ethtool_msg, m);
        if (r < 0)
                return r;
        int grp = genl_connect(m->ethtool) < 0 ? -1 : genl_ctrl_resolve_grp(m->ethtool, ETHTOOL_GENL_NAME, ETHTOOL_MCGRP_MONITOR_NAME);
        if (grp < 0 || nl_socket_add_membership(m->ethtool, grp) < 0 || nl_socket_set_nonblocking(m->ethtool) < 0 ||
            sd_event_add_io(event, &m->ethtool_source, nl_socket_get_fd(m->ethtool), EPOLLIN, on_readable, m) < 0) {
                log_debug("No ethtool netlink monitor group (kernel < 5.6?): channel changes are seen by the periodic verify");
                nl_socket_free(m->ethtool);
                m->ethtool = NULL;
        } else
                m->ethtool_family = grp;
        *ret = TAKE_PTR(m);
        return 0;
}

NetMonitor *net_monitor_free(NetMonitor *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->route_source);
        sd_event_source_disable_unref(m->ethtool_source);
        sd_event_source_disable_unref(m->timer);
        if (m->route)
                nl_socket_free(m->route);
        if (m->ethtool)
                nl_socket_free(m->ethtool);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

bool net_monitor_ethtool(const NetMonitor *m) {
        return m && m->ethtool;
}

#else /* built without libnl */

struct NetMonitor {
        int unused;
};

int net_monitor_new(_unused_ sd_event *event, _unused_ on_net_change_t cb, _unused_ void *userdata, _unused_ NetMonitor **ret) {
        return -EOPNOTSUPP;
}

NetMonitor *net_monitor_free(NetMonitor *m) {
        free(m);
        return NULL;
}

bool net_monitor_ethtool(_unused_ const NetMonitor *m) {
        return false;
}

#endif /* HAVE_LIBNL */
