/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#ifndef HAVE_LIBNL
#error "HAVE_LIBNL undefined: \"config.h\" did not resolve to meson's generated config.h"
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostfs-net.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

void net_route_done(NetRoute *r) {
        free(r->ifname);
        free(r->src);
        *r = (NetRoute) {};
}

void net_links_free(NetLink *l, size_t n) {
        for (size_t i = 0; l && i < n; i++) {
                free(l[i].ifname);
                free(l[i].kind);
        }
        free(l);
}

#define NO_LIBNL_REASON "built without libnl"
#define NO_CAPTURE_REASON "the fixture has no netlink/facts capture"

/* ---- the capture file of fixture roots --------------------------------------------------------- */

/* The value of key in a record line ("dev=eth1" -> "eth1"), newly allocated; NULL when absent. */
static char *record_get(const char *line, const char *key) {
        size_t kl = strlen(key);
        for (const char *p = line; *p;) {
                p += strspn(p, " \t");
                size_t l = strcspn(p, " \t\n");
                if (l > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
                        return strndup(p + kl + 1, l - kl - 1);
                p += l;
        }
        return NULL;
}

static int record_get_i64(const char *line, const char *key, int64_t *ret) {
        _cleanup_free_ char *v = record_get(line, key);
        uint64_t u;
        if (!v)
                return -ENOENT;
        int r = parse_u64(v, &u);
        if (r < 0)
                return r;
        if (u > INT32_MAX)
                return -ERANGE;
        *ret = (int64_t) u;
        return 0;
}

static int record_get_u32(const char *line, const char *key, uint32_t *ret) {
        int64_t v;
        int r = record_get_i64(line, key, &v);
        if (r >= 0)
                *ret = (uint32_t) v;
        return r;
}

/* error=<ERRNO NAME> of a record: -errno, 0 when the record has none, -EIO for an unknown name. */
static int record_error(const char *line) {
        static const struct { const char *name; int e; } names[] = {
                { "EOPNOTSUPP", EOPNOTSUPP }, { "ENODEV", ENODEV }, { "ENETUNREACH", ENETUNREACH },
                { "EHOSTUNREACH", EHOSTUNREACH }, { "ENOENT", ENOENT }, { "EINVAL", EINVAL },
                { "EPERM", EPERM }, { "EACCES", EACCES }, { "ENOTSUP", EOPNOTSUPP }, { "EIO", EIO },
        };
        _cleanup_free_ char *v = record_get(line, "error");
        if (!v)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(v, names[i].name))
                        return -names[i].e;
        return -EIO;
}

/* The lines of the capture whose type is type, as a strv (possibly empty). */
static int capture_records(HostFs *h, const char *type, char ***ret) {
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        size_t tl = strlen(type);

        int r = hostfs_read(h, HOSTFS_NETLINK, "facts", &text);
        if (r < 0)
                return r;
        for (char *p = text, *e; p && *p; p = e ? e + 1 : NULL) {
                e = strchr(p, '\n');
                if (e)
                        *e = 0;
                p += strspn(p, " \t");
                if (strncmp(p, type, tl) == 0 && (p[tl] == ' ' || p[tl] == '\t') && strv_extend(&lines, p) < 0)
                        return -ENOMEM;
        }
        if (!lines && !(lines = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(lines);
        return 0;
}

static int capture_route(HostFs *h, const char *dst, const char *oif, NetRoute *ret) {
        _cleanup_strv_free_ char **lines = NULL;
        int r = capture_records(h, "route", &lines);
        if (r < 0)
                return r;
        STRV_FOREACH(l, lines) {
                _cleanup_free_ char *d = record_get(*l, "dst"), *o = record_get(*l, "oif");
                if (!d || !streq(d, dst) || !streq_ptr(o, oif))
                        continue;
                r = record_error(*l);
                if (r < 0)
                        return r;
                int64_t ifindex;
                if (record_get_i64(*l, "ifindex", &ifindex) < 0)
                        return -EIO;
                *ret = (NetRoute) { .ifindex = (int) ifindex, .ifname = record_get(*l, "dev"), .src = record_get(*l, "src") };
                return 0;
        }
        return -ENOENT;
}

static int capture_links(HostFs *h, NetLink **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **lines = NULL;
        int r = capture_records(h, "link", &lines);
        if (r < 0)
                return r;
        size_t n = 0;
        NetLink *l = calloc(strv_length(lines) + 1, sizeof(NetLink));
        if (!l)
                return -ENOMEM;
        STRV_FOREACH(s, lines) {
                NetLink *x = &l[n];
                int64_t ifindex = 0, link = 0, master = 0;
                _cleanup_free_ char *flags = record_get(*s, "flags");
                x->ifname = record_get(*s, "ifname");
                x->kind = record_get(*s, "kind");
                if (x->kind && streq(x->kind, "-"))
                        x->kind = mfree_str(x->kind);
                if (!x->ifname || record_get_i64(*s, "ifindex", &ifindex) < 0) {
                        free(x->ifname);
                        free(x->kind);
                        *x = (NetLink) {};
                        continue;       /* a broken line is skipped, like a link that vanished mid-dump */
                }
                (void) record_get_i64(*s, "link", &link);
                (void) record_get_i64(*s, "master", &master);
                x->ifindex = (int) ifindex;
                x->link = (int) link;
                x->master = (int) master;
                x->flags = flags ? (unsigned) strtoul(flags, NULL, 16) : 0;
                n++;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

static int capture_channels(HostFs *h, const char *ifname, NetChannels *ret) {
        _cleanup_strv_free_ char **lines = NULL;
        int r = capture_records(h, "channels", &lines);
        if (r < 0)
                return r;
        STRV_FOREACH(l, lines) {
                _cleanup_free_ char *n = record_get(*l, "ifname"), *src = record_get(*l, "source");
                if (!n || !streq(n, ifname))
                        continue;
                r = record_error(*l);
                if (r < 0)
                        return r;
                NetChannels c = { .source = src && streq(src, "ioctl") ? "ioctl" : "ethtool-netlink" };
                if (record_get_u32(*l, "rx_max", &c.max_rx) < 0 || record_get_u32(*l, "tx_max", &c.max_tx) < 0 ||
                    record_get_u32(*l, "other_max", &c.max_other) < 0 || record_get_u32(*l, "combined_max", &c.max_combined) < 0 ||
                    record_get_u32(*l, "rx", &c.rx) < 0 || record_get_u32(*l, "tx", &c.tx) < 0 ||
                    record_get_u32(*l, "other", &c.other) < 0 || record_get_u32(*l, "combined", &c.combined) < 0)
                        return -EIO;
                *ret = c;
                return 0;
        }
        return -ENODEV;
}

#if HAVE_LIBNL

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static void nl_socket_freep(struct nl_sock **s) {
        if (*s)
                nl_socket_free(*s);
}
static void nlmsg_freep(struct nl_msg **m) {
        if (*m)
                nlmsg_free(*m);
}
static void nl_cache_freep(struct nl_cache **c) {
        if (*c)
                nl_cache_free(*c);
}

/* The kernel's NLMSG_ERROR for our request: its -errno (libnl would turn it into an NLE_ code). */
static int on_nl_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg) {
        int *error = arg;
        *error = err->error < 0 ? err->error : -EIO;
        return NL_STOP;
}

/* Send msg on sk and receive the answer into valid (NL_CB_VALID); the kernel's error as -errno. */
static int nl_transact(struct nl_sock *sk, struct nl_msg *msg, nl_recvmsg_msg_cb_t valid, void *userdata) {
        int error = 0;
        /* nl_socket_get_cb() takes a reference (nl_cb_get()): put it, or the socket's callbacks
         * outlive nl_socket_free() */
        struct nl_cb *sk_cb = nl_socket_get_cb(sk);
        struct nl_cb *cb = sk_cb ? nl_cb_clone(sk_cb) : NULL;
        if (sk_cb)
                nl_cb_put(sk_cb);
        if (!cb)
                return -ENOMEM;
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid, userdata);
        nl_cb_err(cb, NL_CB_CUSTOM, on_nl_error, &error);
        int r = nl_send_auto(sk, msg);
        if (r >= 0)
                r = nl_recvmsgs(sk, cb);
        nl_cb_put(cb);
        if (error < 0)
                return error;
        return r < 0 ? -EIO : 0;
}

static int nl_open(int protocol, struct nl_sock **ret) {
        _cleanup_(nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
        if (!sk)
                return -ENOMEM;
        if (nl_connect(sk, protocol) < 0)
                return -EIO;
        *ret = TAKE_PTR(sk);
        return 0;
}

typedef struct RouteAnswer {
        int ifindex;
        char src[INET6_ADDRSTRLEN + 8];
        bool found;
} RouteAnswer;

static int on_route(struct nl_msg *msg, void *arg) {
        RouteAnswer *a = arg;
        struct rtnl_route *route = NULL;

        if (rtnl_route_parse(nlmsg_hdr(msg), &route) < 0 || !route)
                return NL_SKIP;
        struct rtnl_nexthop *nh = rtnl_route_get_nnexthops(route) > 0 ? rtnl_route_nexthop_n(route, 0) : NULL;
        if (nh) {
                a->ifindex = rtnl_route_nh_get_ifindex(nh);
                a->found = a->ifindex > 0;
        }
        struct nl_addr *src = rtnl_route_get_pref_src(route);
        if (src)
                nl_addr2str(src, a->src, sizeof(a->src));
        rtnl_route_put(route);
        return NL_OK;
}

static int live_route(const char *dst, const char *oif, NetRoute *ret) {
        _cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
        _cleanup_(nlmsg_freep) struct nl_msg *msg = NULL;
        unsigned char addr[sizeof(struct in6_addr)];
        struct rtmsg rtm = {};
        size_t alen;

        if (inet_pton(AF_INET, dst, addr) == 1) {
                rtm.rtm_family = AF_INET;
                alen = 4;
        } else if (inet_pton(AF_INET6, dst, addr) == 1) {
                rtm.rtm_family = AF_INET6;
                alen = 16;
        } else
                return -EINVAL;
        rtm.rtm_dst_len = alen * 8;

        unsigned oif_index = 0;
        if (oif && !(oif_index = if_nametoindex(oif)))
                return -ENODEV;

        int r = nl_open(NETLINK_ROUTE, &sk);
        if (r < 0)
                return r;
        msg = nlmsg_alloc_simple(RTM_GETROUTE, 0);
        if (!msg || nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 || nla_put(msg, RTA_DST, alen, addr) < 0 ||
            (oif_index && nla_put_u32(msg, RTA_OIF, oif_index) < 0))
                return -ENOMEM;
        RouteAnswer a = {};
        r = nl_transact(sk, msg, on_route, &a);
        if (r < 0)
                return r;
        if (!a.found)
                return -ENETUNREACH;
        char name[IF_NAMESIZE] = "";
        *ret = (NetRoute) { .ifindex = a.ifindex };
        if (if_indextoname(a.ifindex, name) && !(ret->ifname = strdup(name)))
                return -ENOMEM;
        if (a.src[0] && !(ret->src = strdup(a.src))) {
                net_route_done(ret);
                return -ENOMEM;
        }
        return 0;
}

static int live_links(NetLink **ret, size_t *ret_n) {
        _cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
        _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;

        int r = nl_open(NETLINK_ROUTE, &sk);
        if (r < 0)
                return r;
        if (rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache) < 0)
                return -EIO;
        size_t n = 0, cap = nl_cache_nitems(cache) + 1;
        NetLink *l = calloc(cap, sizeof(NetLink));
        if (!l)
                return -ENOMEM;
        for (struct nl_object *o = nl_cache_get_first(cache); o && n < cap; o = nl_cache_get_next(o)) {
                struct rtnl_link *link = (struct rtnl_link *) o;
                const char *name = rtnl_link_get_name(link), *kind = rtnl_link_get_type(link);
                l[n] = (NetLink) {
                        .ifindex = rtnl_link_get_ifindex(link),
                        .link = rtnl_link_get_link(link),
                        .master = rtnl_link_get_master(link),
                        .flags = rtnl_link_get_flags(link),
                };
                if (!(l[n].ifname = strdup(name ?: "")) || (kind && !(l[n].kind = strdup(kind)))) {
                        net_links_free(l, n + 1);
                        return -ENOMEM;
                }
                /* IFLA_LINK of a plain device is its own index (or another namespace's): not a lower device */
                if (l[n].link == l[n].ifindex)
                        l[n].link = 0;
                n++;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

typedef struct ChannelsAnswer {
        NetChannels c;
        bool found;
} ChannelsAnswer;

static int on_channels(struct nl_msg *msg, void *arg) {
        ChannelsAnswer *a = arg;
        struct nlattr *tb[ETHTOOL_A_CHANNELS_MAX + 1];

        if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, ETHTOOL_A_CHANNELS_MAX, NULL) < 0)
                return NL_SKIP;
        /* net/ethtool/channels.c channels_fill_reply(): a kind's pair only when its max is non-zero */
#define GET(attr) (tb[attr] ? nla_get_u32(tb[attr]) : 0)
        a->c = (NetChannels) {
                .max_rx = GET(ETHTOOL_A_CHANNELS_RX_MAX), .max_tx = GET(ETHTOOL_A_CHANNELS_TX_MAX),
                .max_other = GET(ETHTOOL_A_CHANNELS_OTHER_MAX), .max_combined = GET(ETHTOOL_A_CHANNELS_COMBINED_MAX),
                .rx = GET(ETHTOOL_A_CHANNELS_RX_COUNT), .tx = GET(ETHTOOL_A_CHANNELS_TX_COUNT),
                .other = GET(ETHTOOL_A_CHANNELS_OTHER_COUNT), .combined = GET(ETHTOOL_A_CHANNELS_COMBINED_COUNT),
                .source = "ethtool-netlink",
        };
#undef GET
        a->found = true;
        return NL_OK;
}

static int ioctl_channels(const char *ifname, NetChannels *ret) {
        struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
        struct ifreq ifr = {};

        if (strlen(ifname) >= sizeof(ifr.ifr_name))
                return -EINVAL;
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        strcpy(ifr.ifr_name, ifname);
        ifr.ifr_data = (void *) &ch;
        if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
                return negative_errno();
        *ret = (NetChannels) {
                .max_rx = ch.max_rx, .max_tx = ch.max_tx, .max_other = ch.max_other, .max_combined = ch.max_combined,
                .rx = ch.rx_count, .tx = ch.tx_count, .other = ch.other_count, .combined = ch.combined_count,
                .source = "ioctl",
        };
        return 0;
}

static int live_channels(const char *ifname, NetChannels *ret) {
        _cleanup_(nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
        _cleanup_(nlmsg_freep) struct nl_msg *msg = NULL;

        if (!sk)
                return -ENOMEM;
        if (genl_connect(sk) < 0)
                return -EIO;
        /* test seam: behave as a kernel without the family (< 5.6), to exercise the ioctl */
        const char *no_nl = secure_getenv("BLKMQD_TEST_NO_ETHTOOL_NETLINK");
        int family = no_nl && streq(no_nl, "1") ? -1 : genl_ctrl_resolve(sk, ETHTOOL_GENL_NAME);
        if (family < 0)
                return ioctl_channels(ifname, ret);     /* kernel < 5.6: no ethtool netlink family */

        msg = nlmsg_alloc();
        if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, ETHTOOL_MSG_CHANNELS_GET, ETHTOOL_GENL_VERSION))
                return -ENOMEM;
        struct nlattr *hdr = nla_nest_start(msg, ETHTOOL_A_CHANNELS_HEADER);
        if (!hdr || nla_put_string(msg, ETHTOOL_A_HEADER_DEV_NAME, ifname) < 0)
                return -ENOMEM;
        nla_nest_end(msg, hdr);
        ChannelsAnswer a = {};
        int r = nl_transact(sk, msg, on_channels, &a);
        if (r < 0)
                return r;
        if (!a.found)
                return -EIO;
        *ret = a.c;
        return 0;
}

#else /* built without libnl: never called, the callers answer -EOPNOTSUPP first */

static int live_route(_unused_ const char *dst, _unused_ const char *oif, _unused_ NetRoute *ret) {
        return -EOPNOTSUPP;
}

static int live_links(_unused_ NetLink **ret, _unused_ size_t *ret_n) {
        return -EOPNOTSUPP;
}

static int live_channels(_unused_ const char *ifname, _unused_ NetChannels *ret) {
        return -EOPNOTSUPP;
}

#endif /* HAVE_LIBNL */

bool hostfs_net_available(HostFs *h, const char **ret_reason) {
        const char *why = NULL;
        if (!HAVE_LIBNL)
                why = NO_LIBNL_REASON;
        else if (!hostfs_is_live(h) && !hostfs_exists(h, HOSTFS_NETLINK, "facts"))
                why = NO_CAPTURE_REASON;
        if (ret_reason)
                *ret_reason = why;
        return !why;
}

int hostfs_net_route_get(HostFs *h, const char *dst, const char *oif, NetRoute *ret) {
        if (!dst || isempty(dst))
                return -EINVAL;
        if (!HAVE_LIBNL)
                return -EOPNOTSUPP;
        return hostfs_is_live(h) ? live_route(dst, oif, ret) : capture_route(h, dst, oif, ret);
}

int hostfs_net_links(HostFs *h, NetLink **ret, size_t *ret_n) {
        if (!HAVE_LIBNL)
                return -EOPNOTSUPP;
        return hostfs_is_live(h) ? live_links(ret, ret_n) : capture_links(h, ret, ret_n);
}

int hostfs_net_channels(HostFs *h, const char *ifname, NetChannels *ret) {
        if (!ifname || isempty(ifname))
                return -EINVAL;
        if (!HAVE_LIBNL)
                return -EOPNOTSUPP;
        return hostfs_is_live(h) ? live_channels(ifname, ret) : capture_channels(h, ifname, ret);
}

int hostfs_net_capture(HostFs *h, char * const *dsts, FILE *out) {
        NetLink *links = NULL;
        size_t n = 0;

        if (!HAVE_LIBNL)
                return -EOPNOTSUPP;
        fprintf(out, "# blkmqd netlink facts capture (host/hostfs-net.h), kernel answers as of capture time\n");
        STRV_FOREACH(d, dsts) {
                _cleanup_free_ char *dst = strdup(*d);
                if (!dst)
                        return -ENOMEM;
                char *oif = strchr(dst, '%');
                if (oif)
                        *oif++ = 0;
                NetRoute rt = {};
                int r = hostfs_net_route_get(h, dst, oif, &rt);
                fprintf(out, "route dst=%s", dst);
                if (oif)
                        fprintf(out, " oif=%s", oif);
                if (r < 0)
                        fprintf(out, " error=%s\n", strerrorname_np(-r) ?: "EIO");
                else
                        fprintf(out, " dev=%s ifindex=%d%s%s\n", strna(rt.ifname), rt.ifindex, rt.src ? " src=" : "", strempty(rt.src));
                net_route_done(&rt);
        }
        int r = hostfs_net_links(h, &links, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                fprintf(out, "link ifname=%s ifindex=%d kind=%s link=%d master=%d flags=%x\n", links[i].ifname,
                        links[i].ifindex, links[i].kind ?: "-", links[i].link, links[i].master, links[i].flags);
        for (size_t i = 0; i < n; i++) {
                NetChannels c;
                r = hostfs_net_channels(h, links[i].ifname, &c);
                if (r < 0)
                        fprintf(out, "channels ifname=%s error=%s\n", links[i].ifname, strerrorname_np(-r) ?: "EIO");
                else
                        fprintf(out, "channels ifname=%s source=%s rx_max=%" PRIu32 " tx_max=%" PRIu32 " other_max=%" PRIu32
                                " combined_max=%" PRIu32 " rx=%" PRIu32 " tx=%" PRIu32 " other=%" PRIu32 " combined=%" PRIu32 "\n",
                                links[i].ifname, c.source, c.max_rx, c.max_tx, c.max_other, c.max_combined, c.rx, c.tx,
                                c.other, c.combined);
        }
        net_links_free(links, n);
        return fflush(out) == 0 ? 0 : -EIO;
}
