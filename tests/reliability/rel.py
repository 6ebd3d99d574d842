# SPDX-License-Identifier: GPL-2.0-or-later
"""
Helpers of the reliability suite (tests/reliability/, docs/RELIABILITY.md), on top of the
shared tests/pylib/blkmqd_test.py (re-exported here: check, finish, failures, wait_for,
read_all, PrivateLoops, SKIP).

- PrivateLoops: loop devices this test creates itself in a private number range (loop700 and
  up, LOOP_CTL_ADD on /dev/loop-control, far above what `losetup -f` hands out), attached to
  temp files, detached and removed (LOOP_CTL_REMOVE) in cleanup() whatever happened. The daemon
  is always started with --devices naming exactly these, so no other disk is ever touched.
- Daemon: the built blkmqd (optionally under a wrapper such as valgrind) on a temp mount
  point, temp state dir and empty config; stop() SIGTERMs by pid, waits and unmounts.
- tree_files()/read_all(): every regular file under the mount.

Every wait is a poll with a deadline.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import SKIP, PrivateLoops, check, failures, finish, read_all, wait_for  # noqa: E402,F401


def udevd_running():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "systemd-udevd":
                        return True
            except OSError:
                pass
    return False


def preflight_uevents():
    """blkmqd listens to udevd's netlink group when /run/udev/control exists. A socket file left
    behind by a udevd that is gone means no hot-plug event ever arrives: say so up front."""
    if os.path.exists("/run/udev/control") and not udevd_running():
        print("WARNING: /run/udev/control exists but no systemd-udevd runs (stale socket left by "
              "an earlier udevd): blkmqd will wait for udevd events that never come, hot-plug "
              "checks will fail", flush=True)
        return False
    return True


class Daemon(bt.Daemon):
    """blkmqd on tmp/mnt, state tmp/state, the (empty unless written) config tmp/blkmqd.conf;
    stop() also removes a mount left behind."""

    def __init__(self, exe, tmp, wrapper=None):
        conf = os.path.join(tmp, "blkmqd.conf")
        super().__init__(exe, os.path.join(tmp, "mnt"), tmp, wrapper=wrapper, config=conf, start_deadline=15.0,
                         stop_deadline=30.0, interval=0.02, unmount_on_stop=True)
        self.tmp, self.conf = tmp, conf
        os.makedirs(self.mnt, exist_ok=True)
        if not os.path.exists(conf):
            open(conf, "w").close()


def fuse_conn_id(mnt):
    """The FUSE connection number of the mount at mnt (its st_dev minor), from mountinfo."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            x = line.split()
            if x[4] == mnt:
                return int(x[2].split(":")[1])
    return None


def abort_fuse(mnt, tmp):
    """Abort the FUSE connection of our own mount (fusectl mounted on a temp dir): the way out
    of a hung daemon, so a hang fails the test instead of blocking it."""
    conn = fuse_conn_id(mnt)
    if conn is None:
        return False
    ctl = os.path.join(tmp, "fusectl")
    os.makedirs(ctl, exist_ok=True)
    if subprocess.run(["mount", "-t", "fusectl", "none", ctl], capture_output=True).returncode != 0:
        return False
    try:
        with open(os.path.join(ctl, str(conn), "abort"), "w") as f:
            f.write("1")
        return True
    except OSError:
        return False
    finally:
        subprocess.run(["umount", "-l", ctl], capture_output=True)


def kernel_stack(pid):
    try:
        with open(f"/proc/{pid}/stack") as f:
            return f.read()
    except OSError:
        return ""


class HangWatch:
    """Calls on_hang() once when progress() has not been called for `limit` seconds."""

    def __init__(self, limit, on_hang):
        import threading
        self.limit, self.on_hang = limit, on_hang
        self.last = time.monotonic()
        self.hung = False
        self.done = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def progress(self):
        self.last = time.monotonic()

    def run(self):
        while not self.done.wait(0.5):
            if time.monotonic() - self.last > self.limit:
                self.hung = True
                self.on_hang()
                return

    def stop(self):
        self.done.set()


def tree_files(root):
    out = []
    for d, _, files in os.walk(root):
        out.extend(os.path.join(d, f) for f in files)
    return sorted(out)


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


KEPT_RE = re.compile(r"^/sys/(kernel/debug/block/.*|.*/block/[^/]+/(stat|inflight))$|^/proc/(interrupts|softirqs)$")


def kept_fds(pid):
    """Targets of the statistics files the daemon keeps open (hostfs_read_kept())."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if KEPT_RE.match(t):
            out.append(t)
    return sorted(out)


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main_wrapper(body, need_loops=True):
    """Common entry: argv[1] = blkmqd; skip/fail rules; temp dir removed at the end."""
    exe = bt.exe_arg()
    rc = bt.preflight(exe, tools=("losetup",) if need_loops else (), files=("/dev/loop-control",) if need_loops else ())
    if rc is not None:
        return rc
    tmp = tempfile.mkdtemp(prefix="blkmqd-rel-")
    try:
        body(os.path.abspath(exe), tmp, sys.argv[2:])      # a skip: bt.skip_all(), then finish() is a no-op
    except Exception as e:
        import traceback
        traceback.print_exc()
        check(False, f"raised {type(e).__name__}: {e}")
    finally:
        mnt = os.path.join(tmp, "mnt")
        if os.path.isdir(mnt):
            bt.cleanup_mount(mnt)
        if os.environ.get("BLKMQD_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish()
