/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostfs_udevd_running() on the live root decides the udev monitor's source (udevd's
 * broadcasts, or raw kernel uevents). systemd-udevd listens on /run/udev/control with a
 * backlog of 0: one connection it has not accepted yet (a udevadm client, a probe) fills it,
 * and then a non-blocking connect() fails with EAGAIN. blkmqd took that for "no udevd" and
 * chose the kernel source, racing udev's rules (seen in bench/reaction.py's blkmqd+udevd
 * phase: "blkmqd did not report the udev source"). Here, in a mount namespace of this test
 * with a tmpfs over /run (nothing of the machine's /run is touched):
 *   (u1) no control socket: not running;
 *   (u2) a listening socket (backlog 0): running;
 *   (u3) the same with its backlog full (the connection of (u2), never accepted): running;
 *   (u4) the socket file left by a udevd that exited (nothing listens): not running.
 * No timing: the listener never accepts. Needs root (skipped otherwise).
 */
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hostfs.h"
#include "macro.h"
#include "tap.h"

static int unix_socket(bool nonblock) {
        return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
}

int main(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/run/udev/control" };

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", "/run", "tmpfs", 0, "mode=0755,size=1M") < 0) {
                char why[256];
                snprintf(why, sizeof(why), "needs root and a mount namespace of its own (%m)");
                return tap_skip_all(why);
        }
        CHECK_INT(mkdir("/run/udev", 0755), 0);

        HostFs *h = NULL;
        if (hostfs_new("/", &h) < 0 || !hostfs_is_live(h)) {
                TAP_FAIL("hostfs_new(\"/\") is no live root");
                return tap_finish("udevd-detect");
        }

        /* (u1) */
        CHECK(!hostfs_udevd_running(h));

        /* (u2) */
        int l = unix_socket(false);
        CHECK(l >= 0);
        CHECK_INT(bind(l, (struct sockaddr *) &sa, sizeof(sa)), 0);
        CHECK_INT(listen(l, 0), 0);
        CHECK(hostfs_udevd_running(h));

        /* (u3): the connection (u2) made is not accepted: it fills the backlog of 0, a second
         * one gets EAGAIN; udevd still listens */
        int probe = unix_socket(true);
        CHECK(probe >= 0);
        int k = connect(probe, (struct sockaddr *) &sa, sizeof(sa));
        CHECK(k < 0 && errno == EAGAIN);
        close(probe);
        CHECK(hostfs_udevd_running(h));

        /* (u4) */
        close(l);
        CHECK(access("/run/udev/control", F_OK) == 0);
        CHECK(!hostfs_udevd_running(h));

        hostfs_free(h);
        return tap_finish("udevd-detect");
}
