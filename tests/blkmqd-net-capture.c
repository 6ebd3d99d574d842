/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blkmqd-net-capture [DST[%OIF]...]
 *
 * Print the netlink facts of this machine in the capture format of host/hostfs-net.h, for
 * <fixture>/netlink/facts: a route line per destination, every link, every link's channels,
 * asked through the same libnl code the daemon uses. Without arguments the destinations are
 * the target addresses of the nvme-over-fabrics controllers (class/nvme/<ctrl>/address
 * traddr=, with host_iface= as OIF) and iSCSI connections (class/iscsi_connection/<c>/address)
 * found under the root ($BLKMQD_ROOT, else "/"). Exits 77 when built without libnl.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hostfs-net.h"
#include "hostfs.h"
#include "macro.h"
#include "parse.h"
#include "strv.h"

static int discover(HostFs *h, char ***dsts) {
        char path[512];
        _cleanup_strv_free_ char **ctrls = NULL, **conns = NULL;

        if (hostfs_list(h, HOSTFS_SYSFS, "class/nvme", &ctrls) >= 0)
                STRV_FOREACH(c, ctrls) {
                        _cleanup_free_ char *addr = NULL, *traddr = NULL, *iface = NULL, *d = NULL;
                        snprintf(path, sizeof(path), "class/nvme/%s/address", *c);
                        if (hostfs_read(h, HOSTFS_SYSFS, path, &addr) < 0 || !(traddr = keyval_list_get(addr, "traddr")))
                                continue;
                        iface = keyval_list_get(addr, "host_iface");
                        if (asprintf(&d, "%s%s%s", traddr, iface ? "%" : "", iface ?: "") < 0)
                                return -ENOMEM;
                        if (!strv_contains(*dsts, d) && strv_extend(dsts, d) < 0)
                                return -ENOMEM;
                }
        if (hostfs_list(h, HOSTFS_SYSFS, "class/iscsi_connection", &conns) >= 0)
                STRV_FOREACH(c, conns) {
                        _cleanup_free_ char *a = NULL;
                        snprintf(path, sizeof(path), "class/iscsi_connection/%s/address", *c);
                        if (hostfs_read(h, HOSTFS_SYSFS, path, &a) < 0)
                                continue;
                        a[strcspn(a, "\n")] = 0;
                        if (*a && !strv_contains(*dsts, a) && strv_extend(dsts, a) < 0)
                                return -ENOMEM;
                }
        return 0;
}

int main(int argc, char **argv) {
        _cleanup_(hostfs_freep) HostFs *h = NULL;
        _cleanup_strv_free_ char **dsts = NULL;
        int r;

        if (!HAVE_LIBNL) {
                fprintf(stderr, "%s: built without libnl\n", argv[0]);
                return 77;
        }
        r = hostfs_new(NULL, &h);
        if (r < 0) {
                fprintf(stderr, "%s: cannot open the root: %s\n", argv[0], strerror(-r));
                return 1;
        }
        if (!hostfs_is_live(h)) {
                fprintf(stderr, "%s: the root is not \"/\": a capture asks the running kernel\n", argv[0]);
                return 1;
        }
        for (int i = 1; i < argc; i++)
                if (strv_extend(&dsts, argv[i]) < 0)
                        return 1;
        if (argc == 1 && discover(h, &dsts) < 0)
                return 1;
        r = hostfs_net_capture(h, dsts, stdout);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", argv[0], strerror(-r));
                return 1;
        }
        return 0;
}
