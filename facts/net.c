/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "hostfs-net.h"
#include "macro.h"
#include "net.h"
#include "parse.h"
#include "strv.h"

/* Link chains longer than this (VLAN on bond on ...) are not followed further. */
#define NET_LOWER_MAX 8

static const char *errno_what(int r) {
        switch (-r) {
        case ENOENT:
                return "not present";
        case EOPNOTSUPP:
                return "not supported by the driver (EOPNOTSUPP)";
        case ENODEV:
                return "no such interface (ENODEV)";
        case ENETUNREACH:
                return "network unreachable (ENETUNREACH)";
        case EHOSTUNREACH:
                return "host unreachable (EHOSTUNREACH)";
        case EACCES:
        case EPERM:
                return "permission denied";
        default:
                return strerrorname_np(-r) ?: "error";
        }
}

static const char *basename_of(const char *p) {
        const char *s = strrchr(p, '/');
        return s ? s + 1 : p;
}

static char *read_line(HostFs *h, const char *path, int *ret_error) {
        char *s = NULL;
        int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
        if (ret_error)
                *ret_error = r < 0 ? r : 0;
        if (r < 0)
                return NULL;
        strip_newline_inplace(s);
        return s;
}

/* The nvme controller directory (sysfs path) of a namespace disk; NULL when not nvme-of. */
static int nvme_controller(HostFs *h, const char *devpath, char **ret_ctrl, char **ret_transport) {
        char path[PATH_MAX];
        _cleanup_strv_free_ char **entries = NULL;

        if (!devpath)
                return 0;
        const char *b = basename_of(devpath);
        if (startswith(b, "nvme-subsys")) {
                /* a multipath head: the subsystem lists its controllers (drivers/nvme/host/core.c
                 * nvme_init_subsystem(): sysfs links named after the controller) */
                if (hostfs_list(h, HOSTFS_SYSFS, devpath, &entries) < 0)
                        return 0;
        } else if (startswith(b, "nvme")) {
                if (strv_extend(&entries, "") < 0)
                        return -ENOMEM;
        } else
                return 0;
        STRV_FOREACH(e, entries) {
                if (**e) {
                        const char *q = startswith(*e, "nvme");
                        if (!q || !*q || q[strspn(q, "0123456789")] != 0)
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", devpath, *e);
                } else
                        snprintf(path, sizeof(path), "%s", devpath);
                char tp[PATH_MAX];
                if (snprintf(tp, sizeof(tp), "%s/transport", path) >= (int) sizeof(tp))
                        continue;
                _cleanup_free_ char *t = read_line(h, tp, NULL);
                if (t && (streq(t, "tcp") || streq(t, "rdma"))) {
                        if (!(*ret_ctrl = strdup(path)))
                                return -ENOMEM;
                        *ret_transport = TAKE_PTR(t);
                        return 1;
                }
        }
        return 0;
}

static int gather_nvme(HostFs *h, NetFacts *n, const char *ctrl) {
        char path[PATH_MAX];
        int r;

        if (!(n->controller = strdup(basename_of(ctrl))))
                return -ENOMEM;
        snprintf(path, sizeof(path), "%s/address", ctrl);
        _cleanup_free_ char *addr = read_line(h, path, &r);
        if (!addr) {
                if (r == -ENOMEM)
                        return r;
                for (NetFact f = NET_FACT_TRADDR; f <= NET_FACT_HOST_IFACE; f++)
                        if (net_facts_set_unknown(n, f, "%s: %s", path, errno_what(r)) < 0)
                                return -ENOMEM;
        } else {
                n->traddr = keyval_list_get(addr, "traddr");
                n->trsvcid = keyval_list_get(addr, "trsvcid");
                /* src_addr: the local address of the connected socket (nvme-tcp); host_traddr: the one asked for */
                n->src_addr = keyval_list_get(addr, "src_addr") ?: keyval_list_get(addr, "host_traddr");
                n->host_iface = keyval_list_get(addr, "host_iface");
                if ((!n->traddr && net_facts_set_unknown(n, NET_FACT_TRADDR, "no traddr= in %s", path) < 0) ||
                    (!n->trsvcid && net_facts_set_unknown(n, NET_FACT_TRSVCID, "no trsvcid= in %s", path) < 0) ||
                    (!n->src_addr && net_facts_set_unknown(n, NET_FACT_SRC_ADDR, "no src_addr= or host_traddr= in %s", path) < 0) ||
                    (!n->host_iface && net_facts_set_unknown(n, NET_FACT_HOST_IFACE, "none: not bound to an interface (no host_iface= in %s)", path) < 0))
                        return -ENOMEM;
        }
        uint64_t qc;
        snprintf(path, sizeof(path), "%s/queue_count", ctrl);
        r = hostfs_read_u64(h, HOSTFS_SYSFS, path, &qc);
        if (r >= 0 && qc >= 1)
                /* the admin queue is one of them; each I/O queue is a connection of its own
                 * (drivers/nvme/host/tcp.c nvme_tcp_alloc_queue(): a socket per queue) */
                n->nr_io_queues = n->connections = (int64_t) qc - 1;
        else if (net_facts_set_unknown(n, NET_FACT_NR_IO_QUEUES, "%s: %s", path, r < 0 ? errno_what(r) : "0") < 0 ||
                 net_facts_set_unknown(n, NET_FACT_CONNECTIONS, "%s: %s", path, r < 0 ? errno_what(r) : "0") < 0)
                return -ENOMEM;
        return 0;
}

/* class/iscsi_host/<host>/<attr> with libiscsi's "(null)" for a parameter never set
 * (drivers/scsi/libiscsi.c iscsi_host_get_param(): "%s" of NULL) read as absent. */
static char *iscsi_host_attr(HostFs *h, const char *host, const char *attr, int *ret_error) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "class/iscsi_host/%s/%s", host, attr);
        _cleanup_free_ char *s = read_line(h, path, ret_error);
        if (!s || !*s || streq(s, "(null)"))
                return NULL;
        return TAKE_PTR(s);
}

/*
 * session: the iSCSI session device above the disk ("devices/platform/host3/session1"), the child
 * of its SCSI host; driver: the host's proc_name. iscsi_tcp makes one host per session
 * (drivers/scsi/iscsi_tcp.c iscsi_sw_tcp_session_create()), so the host's attributes are the
 * session's: ipaddress the local address of its socket (iscsi_sw_tcp_host_get_param()), netdev the
 * device iscsid bound the socket to (SO_BINDTODEVICE for an iface with iface.net_ifacename or
 * iface.hwaddress: open-iscsi usr/io.c bind_conn_to_iface()), "(null)" for none. Any other driver
 * (bnx2i, qedi, cxgb4i, be2iscsi, qla4xxx offload the session; ib_iser runs it over RDMA) carries
 * the connection on its own hardware.
 */
static int gather_iscsi(HostFs *h, NetFacts *n, const char *session, const char *driver) {
        char path[PATH_MAX];
        unsigned sid;
        int r;

        if (sscanf(basename_of(session), "session%u", &sid) != 1)
                return -EINVAL;
        if (asprintf(&n->controller, "session%u", sid) < 0)
                return -ENOMEM;
        snprintf(path, sizeof(path), "class/iscsi_connection/connection%u:0/address", sid);
        n->traddr = read_line(h, path, &r);
        if (!n->traddr && net_facts_set_unknown(n, NET_FACT_TRADDR, "%s: %s", path, errno_what(r)) < 0)
                return -ENOMEM;
        snprintf(path, sizeof(path), "class/iscsi_connection/connection%u:0/port", sid);
        n->trsvcid = read_line(h, path, &r);
        if (!n->trsvcid && net_facts_set_unknown(n, NET_FACT_TRSVCID, "%s: %s", path, errno_what(r)) < 0)
                return -ENOMEM;
        if (net_facts_set_unknown(n, NET_FACT_NR_IO_QUEUES, "not applicable: an iSCSI session sends every command on its "
                                  "leading connection (drivers/scsi/libiscsi.c iscsi_queuecommand())") < 0)
                return -ENOMEM;

        if (!streq_ptr(driver, "iscsi_tcp")) {
                if (asprintf(&n->offload, "%s carries session%u on its own hardware (an offload HBA, or iSER over RDMA), not "
                             "the host's TCP/IP stack: no host NIC queue carries its I/O", driver ?: "an unknown driver", sid) < 0)
                        return -ENOMEM;
                return net_facts_set_all_unknown(n, n->offload);
        }

        /* the session's SCSI host: the parent of the session device */
        size_t l = basename_of(session) - session;
        while (l > 0 && session[l - 1] == '/')
                l--;
        _cleanup_free_ char *parent = strndup(session, l);
        if (!parent)
                return -ENOMEM;
        const char *host = basename_of(parent);
        n->src_addr = iscsi_host_attr(h, host, "ipaddress", &r);
        if (!n->src_addr && net_facts_set_unknown(n, NET_FACT_SRC_ADDR, "class/iscsi_host/%s/ipaddress: %s", host,
                                                  r < 0 ? errno_what(r) : "not set") < 0)
                return -ENOMEM;
        n->host_iface = iscsi_host_attr(h, host, "netdev", &r);
        if (!n->host_iface) {
                snprintf(path, sizeof(path), "class/iscsi_session/session%u/ifacename", sid);
                _cleanup_free_ char *iface = read_line(h, path, NULL);
                if (net_facts_set_unknown(n, NET_FACT_HOST_IFACE, r < 0 ? "class/iscsi_host/%s/netdev: %s" :
                                          "none: %s's iface %s binds it to no device (class/iscsi_host/%s/netdev unset): "
                                          "the route decides", r < 0 ? host : n->controller,
                                          r < 0 ? errno_what(r) : strna(iface), host) < 0)
                        return -ENOMEM;
        }

        /* the session's connections: class/iscsi_connection/connection<sid>:<cid> */
        _cleanup_strv_free_ char **conns = NULL;
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "connection%u:", sid);
        r = hostfs_list(h, HOSTFS_SYSFS, "class/iscsi_connection", &conns);
        if (r == -ENOMEM)
                return r;
        n->connections = 0;
        STRV_FOREACH(c, conns)
                n->connections += !!startswith(*c, prefix);
        if (r < 0 || n->connections == 0) {
                n->connections = -1;
                return net_facts_set_unknown(n, NET_FACT_CONNECTIONS, "class/iscsi_connection lists no %s*", prefix);
        }
        return 0;
}

/* A TCP socket of /proc/<pid>/net/tcp or tcp6: its inode and both ends. */
typedef struct TcpSock {
        uint64_t inode;
        char local[INET6_ADDRSTRLEN], remote[INET6_ADDRSTRLEN];
        unsigned local_port, remote_port;
} TcpSock;

/*
 * One end of a /proc/net/tcp{,6} row, "<address>:<port>" in hex, printed as inet_ntop() does:
 * tcp's address is the __be32 printed as a u32 in host byte order (%08X, net/ipv4/tcp_ipv4.c
 * get_tcp4_sock()), tcp6's the four 32-bit words s6_addr32[0..3] each in host byte order
 * (net/ipv6/tcp_ipv6.c get_tcp6_sock()); the port is in host order (ntohs()). An IPv4-mapped
 * IPv6 address (a dual-stack socket connected to IPv4) is given as its IPv4 address, the one
 * routed. Returns 0 or -EINVAL.
 */
static int tcp_endpoint_parse(const char *s, char ret[static INET6_ADDRSTRLEN], unsigned *ret_port) {
        const char *colon = strchr(s, ':');
        size_t l = colon ? (size_t) (colon - s) : 0;
        uint32_t w[4];

        if ((l != 8 && l != 32) || strspn(s, "0123456789abcdefABCDEF") != l ||
            strlen(colon + 1) != 4 || strspn(colon + 1, "0123456789abcdefABCDEF") != 4)
                return -EINVAL;
        for (size_t i = 0; i < l / 8; i++) {
                char word[9];
                memcpy(word, s + 8 * i, 8);
                word[8] = 0;
                w[i] = (uint32_t) strtoul(word, NULL, 16);
        }
        *ret_port = (unsigned) strtoul(colon + 1, NULL, 16);
        if (l == 8)
                return inet_ntop(AF_INET, &(struct in_addr) { .s_addr = w[0] }, ret, INET6_ADDRSTRLEN) ? 0 : -EINVAL;
        struct in6_addr a;
        memcpy(&a, w, sizeof(a));
        if (IN6_IS_ADDR_V4MAPPED(&a))
                return inet_ntop(AF_INET, &a.s6_addr[12], ret, INET6_ADDRSTRLEN) ? 0 : -EINVAL;
        return inet_ntop(AF_INET6, &a, ret, INET6_ADDRSTRLEN) ? 0 : -EINVAL;
}

/* The rows of procfs file path (/proc/<pid>/net/tcp or tcp6: "sl local rem st tx:rx tr:when
 * retrnsmt uid timeout inode ...") whose inode is one of inodes, appended to *socks. A file
 * that cannot be read (no IPv6) adds none. Returns 0 or -ENOMEM. */
static int tcp_socks_find(HostFs *h, const char *path, const uint64_t *inodes, size_t n_inodes, TcpSock **socks, size_t *n_socks) {
        _cleanup_free_ char *s = NULL;
        if (hostfs_read(h, HOSTFS_PROCFS, path, &s) < 0)
                return 0;
        for (char *line = s, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char local[64], remote[64];
                uint64_t inode;
                if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %" SCNu64, local, remote, &inode) != 3)
                        continue;       /* the header */
                bool ours = false;
                for (size_t i = 0; i < n_inodes && !ours; i++)
                        ours = inodes[i] == inode;
                TcpSock t = { .inode = inode };
                if (!ours || tcp_endpoint_parse(local, t.local, &t.local_port) < 0 ||
                    tcp_endpoint_parse(remote, t.remote, &t.remote_port) < 0)
                        continue;
                TcpSock *a = reallocarray(*socks, *n_socks + 1, sizeof(TcpSock));
                if (!a)
                        return -ENOMEM;
                *socks = a;
                a[(*n_socks)++] = t;
        }
        return 0;
}

#define NBD_NETLINK_WHY "the netlink interface hands the sockets to the kernel, which exports no socket address for NBD " \
                        "(drivers/block/nbd.c)"

/*
 * The TCP sockets of an NBD disk's client, when it still holds them: nbd-client's ioctl
 * interface (-L) stays in NBD_DO_IT on /dev/<disk> with its connected sockets open, and
 * /sys/block/<disk>/pid is that process (drivers/block/nbd.c nbd_start_device():
 * task_pid_nr(current)); its fds "socket:[<inode>]" are rows of the process's own network
 * namespace, /proc/<pid>/net/tcp and tcp6. Returns 0 with *ret_socks (possibly none: then
 * *ret_why says why, naming the pid file and the process), -ENOMEM.
 */
static int nbd_sockets(HostFs *h, const char *disk, int *ret_pid, TcpSock **ret_socks, size_t *ret_n, char **ret_why) {
        _cleanup_strv_free_ char **fds = NULL;
        _cleanup_free_ uint64_t *inodes = NULL;
        _cleanup_free_ TcpSock *socks = NULL;
        size_t n_inodes = 0, n_socks = 0;
        bool holds_disk = false;
        char path[PATH_MAX], dev[PATH_MAX];
        int pid, r;

        snprintf(path, sizeof(path), "block/%s/pid", disk);
        r = hostfs_read_int(h, HOSTFS_SYSFS, path, &pid);
        if (r == -ENOMEM)
                return r;
        *ret_pid = r < 0 ? -1 : pid;
        if (r < 0)
                return asprintf(ret_why, "no client process to ask (/sys/%s: %s): " NBD_NETLINK_WHY, path, errno_what(r)) < 0 ?
                       -ENOMEM : 0;
        snprintf(path, sizeof(path), "%d/fd", pid);
        r = hostfs_list(h, HOSTFS_PROCFS, path, &fds);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT)
                return asprintf(ret_why, "the process of /sys/block/%s/pid (%d) is gone: " NBD_NETLINK_WHY, disk, pid) < 0 ?
                       -ENOMEM : 0;
        if (r < 0)
                return asprintf(ret_why, "the fds of the process of /sys/block/%s/pid (%d) are unreadable: /proc/%d/fd: %s",
                                disk, pid, pid, errno_what(r)) < 0 ? -ENOMEM : 0;
        snprintf(dev, sizeof(dev), "/dev/%s", disk);
        STRV_FOREACH(fd, fds) {
                _cleanup_free_ char *target = NULL;
                uint64_t inode;
                char tail;
                snprintf(path, sizeof(path), "%d/fd/%s", pid, *fd);
                r = hostfs_readlink(h, HOSTFS_PROCFS, path, &target);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue;       /* closed since the listing */
                holds_disk = holds_disk || streq(target, dev);
                if (sscanf(target, "socket:[%" SCNu64 "%c", &inode, &tail) != 2 || tail != ']')
                        continue;
                uint64_t *a = reallocarray(inodes, n_inodes + 1, sizeof(uint64_t));
                if (!a)
                        return -ENOMEM;
                inodes = a;
                inodes[n_inodes++] = inode;
        }
        if (!holds_disk)
                /* a pid used again by another process after the client exited */
                return asprintf(ret_why, "the process of /sys/block/%s/pid (%d) does not hold %s (not the client that "
                                "connected it): " NBD_NETLINK_WHY, disk, pid, dev) < 0 ? -ENOMEM : 0;
        const char *const tables[] = { "tcp", "tcp6" };
        for (size_t i = 0; i < ELEMENTSOF(tables) && n_inodes > 0; i++) {
                snprintf(path, sizeof(path), "%d/net/%s", pid, tables[i]);
                r = tcp_socks_find(h, path, inodes, n_inodes, &socks, &n_socks);
                if (r < 0)
                        return r;
        }
        if (n_socks == 0)
                return asprintf(ret_why, "the process of /sys/block/%s/pid (%d) holds %s and no TCP socket (its "
                                "fds in /proc/%d/fd, its network namespace's /proc/%d/net/tcp and tcp6): " NBD_NETLINK_WHY,
                                disk, pid, dev, pid, pid) < 0 ? -ENOMEM : 0;
        *ret_socks = TAKE_PTR(socks);
        *ret_n = n_socks;
        return 0;
}

/* The distinct values of one end of socks ("10.77.0.2" or, ports, "10809"), in the order found. */
static int tcp_socks_distinct(const TcpSock *socks, size_t n, bool remote, bool port, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        for (size_t i = 0; i < n; i++) {
                char s[INET6_ADDRSTRLEN];
                if (port)
                        snprintf(s, sizeof(s), "%u", remote ? socks[i].remote_port : socks[i].local_port);
                else
                        snprintf(s, sizeof(s), "%s", remote ? socks[i].remote : socks[i].local);
                if (!strv_contains(l, s) && strv_extend(&l, s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Set fact x (traddr, trsvcid, src_addr) of n to the one value of socks' end, or unknown with
 * "N connections to M addresses (...)" when they differ. */
static int nbd_set_end(NetFacts *n, NetFact x, char **field, const TcpSock *socks, size_t n_socks, int pid, bool remote, bool port) {
        _cleanup_strv_free_ char **l = NULL;
        if (tcp_socks_distinct(socks, n_socks, remote, port, &l) < 0)
                return -ENOMEM;
        size_t m = strv_length(l);
        if (m == 1)
                return (*field = strdup(l[0])) ? 0 : -ENOMEM;
        _cleanup_free_ char *list = strv_join(l, " ");
        if (!list)
                return -ENOMEM;
        return net_facts_set_unknown(n, x, "%zu connections %s %zu %s (%s) in /proc/%d/net/tcp{,6}: not one answer", n_socks,
                                     remote ? "to" : "from", m, port ? "ports" : remote ? "addresses" : "local addresses", list, pid);
}

/* NBD: one connection per hctx, hctx i sends on connection i (drivers/block/nbd.c:
 * nbd_start_device() sets nr_hw_queues to num_connections, nbd_queue_rq() sends on
 * socks[hctx->queue_num]). The sockets' addresses are the client's, while it holds them
 * (nbd_sockets()). */
static int gather_nbd(HostFs *h, NetFacts *n, const DiskFacts *f) {
        _cleanup_free_ TcpSock *socks = NULL;
        _cleanup_free_ char *why = NULL;
        size_t n_socks = 0;
        int pid, r;

        if (!(n->controller = strdup(f->name)))
                return -ENOMEM;
        r = nbd_sockets(h, f->name, &pid, &socks, &n_socks, &why);
        if (r < 0)
                return r;
        if (n_socks == 0) {
                for (NetFact x = NET_FACT_TRADDR; x <= NET_FACT_NR_IO_QUEUES; x++)
                        if (net_facts_set_unknown(n, x, "%s", why) < 0)
                                return -ENOMEM;
        } else if (nbd_set_end(n, NET_FACT_TRADDR, &n->traddr, socks, n_socks, pid, true, false) < 0 ||
                   nbd_set_end(n, NET_FACT_TRSVCID, &n->trsvcid, socks, n_socks, pid, true, true) < 0 ||
                   nbd_set_end(n, NET_FACT_SRC_ADDR, &n->src_addr, socks, n_socks, pid, false, false) < 0 ||
                   net_facts_set_unknown(n, NET_FACT_HOST_IFACE, "none known: /proc/%d/net/tcp{,6} name no bound interface", pid) < 0 ||
                   net_facts_set_unknown(n, NET_FACT_NR_IO_QUEUES, "not applicable: NBD has one hctx per connection "
                                         "(network/connections, nbd-client -C)") < 0)
                return -ENOMEM;
        if (!f->has_mq || f->n_hctx == 0)
                return net_facts_set_unknown(n, NET_FACT_CONNECTIONS, "no blk-mq queue: not connected");
        if (n_socks > 0 && n_socks != f->n_hctx)
                return net_facts_set_unknown(n, NET_FACT_CONNECTIONS, "process %d (/sys/block/%s/pid) holds %zu TCP socket(s) for "
                                             "%zu hctx (drivers/block/nbd.c: one connection per hctx): which one each hctx "
                                             "sends on is unknown", pid, f->name, n_socks, f->n_hctx);
        n->connections = (int64_t) f->n_hctx;
        return 0;
}

static const NetLink *link_by_index(const NetLink *l, size_t n, int ifindex) {
        for (size_t i = 0; i < n; i++)
                if (l[i].ifindex == ifindex)
                        return &l[i];
        return NULL;
}

/* The first word of class/net/<bond>/bonding/<attr> ("active-backup 1" -> "active-backup"),
 * NULL when unreadable or empty. */
static char *bond_attr(HostFs *h, const char *bond, const char *attr) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "class/net/%s/bonding/%s", bond, attr);
        _cleanup_free_ char *s = read_line(h, path, NULL);
        if (!s || !*s)
                return NULL;
        return strndup(s, strcspn(s, " "));
}

/*
 * The port of bond link b (with ports, "eth0 eth2") that carries the disk's flow: the active
 * port in active-backup mode (drivers/net/bonding: only the active slave transmits and
 * receives, bond_sysfs.c active_slave); NULL with *ret_why in every other mode, where each
 * flow's port is the transmit hash's (xmit_hash_policy: balance-xor, 802.3ad, balance-tlb)
 * or no single one (balance-rr, broadcast, balance-alb's receive balancing). Records the mode,
 * hash policy and active port in n.
 */
static const NetLink *bond_port(HostFs *h, const NetLink *l, size_t nl, const NetLink *b, const char *ports, size_t n_ports,
                                NetFacts *n, char **ret_why) {
        free(n->bond);
        free(n->bond_ports);
        n->bond = strdup(b->ifname);
        n->bond_ports = strdup(strempty(ports));
        free(n->bond_mode);
        n->bond_mode = bond_attr(h, b->ifname, "mode");
        if (!n->bond || !n->bond_ports)
                return NULL;
        if (!n->bond_mode) {
                (void) asprintf(ret_why, "%s is a bond with %zu ports (%s) whose mode is unreadable (class/net/%s/bonding/mode)",
                                b->ifname, n_ports, ports, b->ifname);
                return NULL;
        }
        if (streq(n->bond_mode, "active-backup")) {
                free(n->bond_active);
                n->bond_active = bond_attr(h, b->ifname, "active_slave");
                for (size_t i = 0; n->bond_active && i < nl; i++)
                        if (l[i].master == b->ifindex && streq(l[i].ifname, n->bond_active))
                                return &l[i];
                (void) asprintf(ret_why, "%s is an active-backup bond with %zu ports (%s) and %s", b->ifname, n_ports, ports,
                                n->bond_active ? "an active port that is none of them" : "no active port (bonding/active_slave empty)");
                return NULL;
        }
        bool hashed = streq(n->bond_mode, "balance-xor") || streq(n->bond_mode, "802.3ad") || streq(n->bond_mode, "balance-tlb");
        if (hashed) {
                free(n->bond_hash);
                n->bond_hash = bond_attr(h, b->ifname, "xmit_hash_policy");
        }
        (void) asprintf(ret_why, "%s is a bond in mode %s%s%s%s with %zu ports (%s): %s", b->ifname, n->bond_mode,
                        hashed ? " (xmit_hash_policy " : "", hashed ? strna(n->bond_hash) : "", hashed ? ")" : "", n_ports, ports,
                        hashed ? "each flow leaves by the port its hash picks, which blkmqd does not compute" :
                        streq(n->bond_mode, "balance-rr") ? "the packets of a flow take the ports in turn" :
                        streq(n->bond_mode, "broadcast") ? "every packet leaves by every port" :
                        "which port carries a flow is the bond's choice");
        return NULL;
}

/*
 * Walk from the egress interface down to the device that has the queues: a VLAN/macvlan/ipvlan
 * to its IFLA_LINK, a bond to its only port or its active port (active-backup), a team or
 * bridge to its only port (IFLA_MASTER pointing at it). Returns the lower link (into l) and
 * the chain "eth1.100 -> eth1", or NULL with *ret_why. A bond on the way is recorded in n.
 */
static const NetLink *lower_of(HostFs *h, const NetLink *l, size_t n, const NetLink *top, NetFacts *nf, char **ret_chain,
                               char **ret_why) {
        const NetLink *cur = top;
        _cleanup_free_ char *chain = strdup(top->ifname);

        if (!chain)
                return NULL;
        for (unsigned depth = 0; depth < NET_LOWER_MAX; depth++) {
                const NetLink *next = NULL;
                if (cur->kind && (streq(cur->kind, "vlan") || streq(cur->kind, "macvlan") || streq(cur->kind, "ipvlan") ||
                                  streq(cur->kind, "macvtap")) && cur->link > 0) {
                        next = link_by_index(l, n, cur->link);
                        if (!next) {
                                (void) asprintf(ret_why, "%s (%s) sits on ifindex %d, which is in another network namespace or gone",
                                                cur->ifname, cur->kind, cur->link);
                                return NULL;
                        }
                } else if (cur->kind && (streq(cur->kind, "bond") || streq(cur->kind, "team") || streq(cur->kind, "bridge"))) {
                        _cleanup_free_ char *ports = NULL;
                        size_t n_ports = 0;
                        for (size_t i = 0; i < n; i++)
                                if (l[i].master == cur->ifindex) {
                                        next = &l[i];
                                        char *p;
                                        if (asprintf(&p, "%s%s%s", strempty(ports), ports ? " " : "", l[i].ifname) < 0)
                                                return NULL;
                                        free(ports);
                                        ports = p;
                                        n_ports++;
                                }
                        if (streq(cur->kind, "bond") && n_ports > 0) {
                                /* a one-port bond has that port whatever its mode; the mode is recorded */
                                _cleanup_free_ char *bond_why = NULL;
                                const NetLink *p = bond_port(h, l, n, cur, ports, n_ports, nf, &bond_why);
                                if (n_ports > 1 && !p) {
                                        *ret_why = TAKE_PTR(bond_why);
                                        return NULL;
                                }
                                if (n_ports > 1)
                                        next = p;
                        }
                        if (!next || n_ports == 0 || (n_ports > 1 && !streq(cur->kind, "bond"))) {
                                (void) asprintf(ret_why, "%s is a %s with %zu ports (%s): which one carries the flow depends "
                                                "on %s", cur->ifname, cur->kind, n_ports, strna(ports),
                                                streq(cur->kind, "team") ? "its runner (teamd)" :
                                                streq(cur->kind, "bridge") ? "its forwarding database" : "its mode");
                                return NULL;
                        }
                } else
                        break;
                char *c;
                if (asprintf(&c, "%s -> %s", chain, next->ifname) < 0)
                        return NULL;
                free(chain);
                chain = c;
                cur = next;
        }
        *ret_chain = cur == top ? NULL : TAKE_PTR(chain);
        return cur;
}

static int read_queue_masks(HostFs *h, NicFacts *nic, const char *prefix, const char *attr, unsigned count,
                            char ***ret, NicFact fact) {
        char path[PATH_MAX];
        char **masks = calloc(count + 1, sizeof(char *));
        int first_error = 0;
        unsigned first_q = 0;

        if (!masks)
                return -ENOMEM;
        *ret = masks;
        for (unsigned q = 0; q < count; q++) {
                _cleanup_free_ char *s = NULL;
                _cleanup_(cpuset_done) CpuSet set = {};
                snprintf(path, sizeof(path), "class/net/%s/queues/%s-%u/%s", nic->ifname, prefix, q, attr);
                int r = hostfs_read(h, HOSTFS_SYSFS, path, &s);
                if (r >= 0)
                        r = cpuset_parse_mask(s, &set);
                if (r >= 0 && !(masks[q] = cpuset_format(&set)))
                        return -ENOMEM;
                if (r < 0 && !first_error) {
                        first_error = r;
                        first_q = q;
                }
        }
        if (first_error && nic_facts_set_unknown(nic, fact, "queues/%s-%u/%s: %s", prefix, first_q, attr, errno_what(first_error)) < 0)
                return -ENOMEM;
        return 0;
}

static int gather_nic_irqs(HostFs *h, NicFacts *nic, const char *devpath, const char *release, bool debugfs,
                           GatherCache *cache) {
        const IrqFacts *irqs = NULL;
        size_t n = 0;
        _cleanup_free_ char *pci = NULL;

        int r = device_function_irqs(h, devpath, release, debugfs, cache, &irqs, &n, &pci);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT) {
                if (!nic->virtual_reason &&
                    asprintf(&nic->virtual_reason, "no MSI/MSI-X vectors above %s (%s): its queues share one interrupt",
                             basename_of(devpath), strna(nic->driver)) < 0)
                        return -ENOMEM;
                return nic_facts_set_unknown(nic, NIC_FACT_IRQS, "no PCI function with MSI vectors above %s", devpath);
        }
        if (r < 0)
                return nic_facts_set_unknown(nic, NIC_FACT_IRQS, "msi_irqs of %s: %s", devpath, errno_what(r));

        /* the function's queue vectors that name this interface (or its virtio/PCI device);
         * when none does, every queue vector of the function */
        const char *dev = basename_of(devpath), *fn = basename_of(pci);
        for (int pass = 0; pass < 2 && nic->n_irqs == 0; pass++) {
                for (size_t i = 0; i < n; i++) {
                        NicQueueDir dir = NIC_QUEUE_BOTH;
                        int q = nic_irq_queue_from_name(irqs[i].name, &dir);
                        bool named = strstr(irqs[i].name, nic->ifname) || strstr(irqs[i].name, dev) || strstr(irqs[i].name, fn);
                        if (q < 0 || (pass == 0 && !named))
                                continue;
                        if (!nic->irqs && !(nic->irqs = calloc(n, sizeof(NicIrq))))
                                return -ENOMEM;
                        NicIrq *d = &nic->irqs[nic->n_irqs++];
                        *d = (NicIrq) { .irq = irqs[i].irq, .managed = irqs[i].managed, .queue = q, .dir = dir };
                        if (!(d->name = strdup(irqs[i].name)) || cpuset_copy(&irqs[i].affinity, &d->affinity) < 0 ||
                            (irqs[i].affinity_list && !(d->affinity_list = strdup(irqs[i].affinity_list))) ||
                            (irqs[i].managed_source && !(d->managed_source = strdup(irqs[i].managed_source))))
                                return -ENOMEM;
                }
        }
        if (nic->n_irqs == 0)
                return nic_facts_set_unknown(nic, NIC_FACT_IRQS, "none of the %zu vectors of %s is named like a queue "
                                             "(\"<if>-TxRx-N\", \"virtioN-input.N\", \"mlx5_compN\")", n, fn);
        return 0;
}

static int gather_nic(HostFs *h, const NetLink *link, const char *release, bool debugfs, GatherCache *cache, NicFacts **ret) {
        char path[PATH_MAX];
        _cleanup_free_ char *devpath = NULL;
        _cleanup_strv_free_ char **queues = NULL;
        NicFacts *nic = nic_facts_new(link->ifname);
        int r;

        if (!nic)
                return -ENOMEM;
        *ret = nic;
        nic->ifindex = link->ifindex;
        if (link->kind && !(nic->kind = strdup(link->kind)))
                return -ENOMEM;

        snprintf(path, sizeof(path), "class/net/%s/device", link->ifname);
        r = hostfs_resolve(h, HOSTFS_SYSFS, path, &devpath);
        if (r < 0 || !hostfs_exists(h, HOSTFS_SYSFS, path))
                devpath = mfree_str(devpath);
        if (devpath) {
                snprintf(path, sizeof(path), "class/net/%s/device/driver", link->ifname);
                _cleanup_free_ char *drv = NULL;
                if (hostfs_readlink(h, HOSTFS_SYSFS, path, &drv) >= 0 && !(nic->driver = strdup(basename_of(drv))))
                        return -ENOMEM;
        }
        if (!nic->driver && nic_facts_set_unknown(nic, NIC_FACT_DRIVER, devpath ? "%s has no driver link" : "no parent device%s",
                                                  devpath ? devpath : "") < 0)
                return -ENOMEM;

        if (link->flags & IFF_LOOPBACK)
                r = asprintf(&nic->virtual_reason, "loopback: traffic never leaves the host, no NIC queue or interrupt");
        else if (!devpath)
                r = asprintf(&nic->virtual_reason, "a software interface (%s) without a parent device: no hardware queue or "
                             "interrupt to align", link->kind ?: "no link kind");
        else
                r = 0;
        if (r < 0)
                return -ENOMEM;

        /* channels */
        NetChannels ch;
        r = hostfs_net_channels(h, link->ifname, &ch);
        if (r >= 0) {
                nic->max_rx = ch.max_rx, nic->max_tx = ch.max_tx, nic->max_other = ch.max_other, nic->max_combined = ch.max_combined;
                nic->rx = ch.rx, nic->tx = ch.tx, nic->other = ch.other, nic->combined = ch.combined;
                if (!(nic->channels_source = strdup(ch.source)))
                        return -ENOMEM;
        } else if (nic_facts_set_unknown(nic, NIC_FACT_CHANNELS, "ethtool channels: %s", errno_what(r)) < 0)
                return -ENOMEM;

        /* queues */
        snprintf(path, sizeof(path), "class/net/%s/queues", link->ifname);
        r = hostfs_list(h, HOSTFS_SYSFS, path, &queues);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (nic_facts_set_unknown(nic, NIC_FACT_TX_QUEUES, "%s: %s", path, errno_what(r)) < 0 ||
                    nic_facts_set_unknown(nic, NIC_FACT_RX_QUEUES, "%s: %s", path, errno_what(r)) < 0 ||
                    nic_facts_set_unknown(nic, NIC_FACT_XPS, "%s: %s", path, errno_what(r)) < 0 ||
                    nic_facts_set_unknown(nic, NIC_FACT_RPS, "%s: %s", path, errno_what(r)) < 0)
                        return -ENOMEM;
        } else {
                STRV_FOREACH(q, queues) {
                        nic->n_tx_queues += !!startswith(*q, "tx-");
                        nic->n_rx_queues += !!startswith(*q, "rx-");
                }
                r = read_queue_masks(h, nic, "tx", "xps_cpus", nic->n_tx_queues, &nic->xps, NIC_FACT_XPS);
                if (r < 0)
                        return r;
                r = read_queue_masks(h, nic, "rx", "rps_cpus", nic->n_rx_queues, &nic->rps, NIC_FACT_RPS);
                if (r < 0)
                        return r;
        }

        if (devpath)
                return gather_nic_irqs(h, nic, devpath, release, debugfs, cache);
        return nic_facts_set_unknown(nic, NIC_FACT_IRQS, "no parent device: no interrupt of its own");
}

/* Route, lower device and NIC of n (whose traddr is known). */
static int gather_path(HostFs *h, NetFacts *n, const char *release, bool debugfs, GatherCache *cache) {
        NetRoute rt = {};
        NetLink *links = NULL;
        size_t n_links = 0;
        int r;

        r = hostfs_net_route_get(h, n->traddr, n->host_iface, &rt);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (net_facts_set_unknown(n, NET_FACT_INTERFACE, "RTM_GETROUTE %s: %s", n->traddr,
                                          r == -ENOENT ? "not in the netlink capture" : errno_what(r)) < 0)
                        return -ENOMEM;
                return net_facts_set_all_unknown(n, "no route to the target");
        }
        n->ifindex = rt.ifindex;
        n->interface = TAKE_PTR(rt.ifname);
        net_route_done(&rt);
        if (!n->interface && asprintf(&n->interface, "ifindex %d", n->ifindex) < 0)
                return -ENOMEM;

        r = hostfs_net_links(h, &links, &n_links);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return net_facts_set_all_unknown(n, "link list (RTM_GETLINK) failed") < 0 ? -ENOMEM : 0;
        const NetLink *top = link_by_index(links, n_links, n->ifindex);
        _cleanup_free_ char *why = NULL;
        const NetLink *lower = top ? lower_of(h, links, n_links, top, n, &n->lower_chain, &why) : NULL;
        if (!n->bond && net_facts_set_unknown(n, NET_FACT_BOND, "none: the route's interface is no bond and sits on none") < 0) {
                net_links_free(links, n_links);
                return -ENOMEM;
        }
        if (!lower) {
                r = net_facts_set_all_unknown(n, why ?: "the egress interface is not in the link list");
                net_links_free(links, n_links);
                return r;
        }
        r = gather_nic(h, lower, release, debugfs, cache, &n->nic);
        net_links_free(links, n_links);
        return r;
}

int net_gather(HostFs *h, DiskFacts *f, const char *devpath, bool debugfs, GatherCache *cache) {
        _cleanup_free_ char *ctrl = NULL, *transport = NULL, *session = NULL;
        NetFacts *n = NULL;
        const char *why = NULL;
        int r;

        r = nvme_controller(h, devpath, &ctrl, &transport);
        if (r < 0)
                return r;
        if (r > 0) {
                if (!(n = f->net = net_facts_new(transport)))
                        return -ENOMEM;
                r = gather_nvme(h, n, ctrl);
        } else if (devpath && f->scsi_host &&
                   /* the session device ("session<sid>", drivers/scsi/scsi_transport_iscsi.c)
                    * is the ancestor holding its iscsi_session class directory */
                   (session = device_ancestor_with(h, devpath, "iscsi_session"))) {
                if (!(n = f->net = net_facts_new("iscsi")))
                        return -ENOMEM;
                r = gather_iscsi(h, n, session, f->driver);
        } else if (!devpath && streq_ptr(f->driver, "nbd")) {
                if (!(n = f->net = net_facts_new("nbd")))
                        return -ENOMEM;
                r = gather_nbd(h, n, f);
        } else
                return 0;
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        if (n->offload)
                return 0;

        if (!hostfs_net_available(h, &why))
                return (n->unavailable = strdup(why)) ? 0 : -ENOMEM;
        if (!n->traddr && streq(n->transport, "nbd")) {
                _cleanup_free_ char *missing = NULL;
                if (asprintf(&missing, "which NIC its %zu connection(s) leave by is unknown (hctx i sends on connection i, "
                             "drivers/block/nbd.c nbd_queue_rq()): %s", f->n_hctx, n->unknown[NET_FACT_TRADDR]) < 0)
                        return -ENOMEM;
                return net_facts_set_all_unknown(n, missing);
        }
        if (!n->traddr)
                return net_facts_set_all_unknown(n, "the target address is unknown");
        /* the alignment compares every hctx's cpu_list with the NIC's queues */
        r = f->has_mq ? device_gather_hctx_details(h, f, /* history = */ NULL) : 0;
        if (r < 0)
                return r;
        return gather_path(h, n, f->kernel_release, debugfs, cache);
}

int net_recheck(HostFs *h, const DiskFacts *f, GatherCache *cache) {
        assert(f);
        const NetFacts *old = f->net;
        if (!old || old->unavailable || !old->traddr)
                return 0;       /* nothing the network side can change (no route to follow) */
        NetFacts *fresh = net_facts_new(old->transport);
        if (!fresh || !(fresh->traddr = strdup(old->traddr)) || (old->host_iface && !(fresh->host_iface = strdup(old->host_iface)))) {
                net_facts_free(fresh);
                return -ENOMEM;
        }
        int r = gather_path(h, fresh, f->kernel_release, hostfs_debugfs_available(h, NULL), cache);
        _cleanup_free_ char *a = r >= 0 ? net_facts_signature(old) : NULL, *b = r >= 0 ? net_facts_signature(fresh) : NULL;
        net_facts_free(fresh);
        if (r < 0)
                return r;
        if (!a || !b)
                return -ENOMEM;
        return !streq(a, b);
}

int net_refresh(HostFs *h, DiskFacts *f) {
        assert(f);
        NicFacts *nic = f->net ? f->net->nic : NULL;
        char path[PATH_MAX];
        int changed = 0;

        if (!nic)
                return 0;
        for (size_t i = 0; i < nic->n_irqs; i++) {
                NicIrq *q = &nic->irqs[i];
                _cleanup_free_ char *s = NULL;
                _cleanup_(cpuset_done) CpuSet set = {};
                snprintf(path, sizeof(path), "irq/%u/smp_affinity_list", q->irq);
                if (hostfs_read(h, HOSTFS_PROCFS, path, &s) < 0 || cpuset_parse(s, &set) < 0)
                        continue;
                char *l = cpuset_format(&set);
                if (!l)
                        return -ENOMEM;
                if (streq_ptr(l, q->affinity_list)) {
                        free(l);
                        continue;
                }
                free(q->affinity_list);
                q->affinity_list = l;
                cpuset_done(&q->affinity);
                q->affinity = set;
                set = (CpuSet) {};
                changed = 1;
        }
        for (unsigned t = 0; nic->xps && t < nic->n_tx_queues; t++) {
                _cleanup_free_ char *s = NULL;
                _cleanup_(cpuset_done) CpuSet set = {};
                snprintf(path, sizeof(path), "class/net/%s/queues/tx-%u/xps_cpus", nic->ifname, t);
                if (hostfs_read(h, HOSTFS_SYSFS, path, &s) < 0 || cpuset_parse_mask(s, &set) < 0)
                        continue;
                char *l = cpuset_format(&set);
                if (!l)
                        return -ENOMEM;
                if (streq_ptr(l, nic->xps[t])) {
                        free(l);
                        continue;
                }
                free(nic->xps[t]);
                nic->xps[t] = l;
                changed = 1;
        }
        return changed;
}
