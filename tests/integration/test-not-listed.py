#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-not-listed.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

The block devices blkmqd saw and does not list under devices/, and why: the root file
not_listed ("<name>: <reason>" per device, sorted), and blkmqctl explain / status DISK printing
that reason. Before it, only the daemon's debug log knew why, and blkmqctl said the same
generic text for every such disk.

(f) a copy of host-6.18-virtio-blk (--root) with a disk of size 0 (zram0), a partition
    (loop1p1), a disk without a dev attribute (bad0), a name no file can have (40 bytes) and
    --devices leaving vda out: not_listed has exactly one line for each with its reason,
    devices/ lists loop1 only; blkmqctl explain zram0 / /dev/zram0 / vda and status zram0
    print the reason and exit 2; a name blkmqd never saw says so.
(l) loop devices this test attaches, the daemon on --devices naming one of them: a loop
    attached after the start (not matched) gets its line at its uevent; a partition added
    and deleted (addpart/delpart) on the listed loop gets and loses its line; the listed
    loop detached (size 0) leaves devices/ and gets the "no medium" line. After every change
    a stat() of not_listed (whose attributes and pages the kernel caches) gives the size of
    what a read gives: the file is invalidated when it changes.
(r) Devices= in the configuration, then a reload that names a second loop: it is listed at
    the reload (it was listed only at its next uevent before) and its line is gone.
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, sh, wait_for  # noqa: E402

LOOP1 = "sys/devices/virtual/block/loop1"


def ctl(d, *args):
    exe = os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "ctl", "blkmqctl")
    return subprocess.run([exe, "--mountpoint", d.mnt, *args], capture_output=True, text=True)


def not_listed(d):
    """{name: reason} of d's not_listed file."""
    out = {}
    for line in d.read("not_listed").splitlines():
        name, _, reason = line.partition(": ")
        out[name] = reason
    return out


def consistent(d):
    """A stat() of not_listed agrees with what a read gives (no stale cached size)."""
    size = os.stat(d.path("not_listed")).st_size
    text = d.read("not_listed")
    return size == len(text.encode()), size, len(text.encode())


put = bt.put_rel


def add_disk(root, name, devnum, size):
    """sys/devices/virtual/block/NAME, a copy of loop1 with dev DEVNUM (None: no dev file) and
    size SIZE, and sys/block/NAME -> it."""
    dst = os.path.join(root, "sys/devices/virtual/block", name)
    shutil.copytree(os.path.join(root, LOOP1), dst, symlinks=True)
    if devnum:
        put(root, f"sys/devices/virtual/block/{name}/dev", devnum + "\n")
    else:
        os.unlink(os.path.join(dst, "dev"))
    put(root, f"sys/devices/virtual/block/{name}/size", f"{size}\n")
    os.symlink("../devices/virtual/block/" + name, os.path.join(root, "sys/block", name))


def case_f_fixture(tmp):
    """(f) a fixture copy: size 0, a partition, no dev, an unusable name, --devices: one reason each"""
    root = bt.copy_fixture("host-6.18-virtio-blk", os.path.join(tmp, "root"))
    add_disk(root, "zram0", "252:0", 0)
    add_disk(root, "bad0", None, 2048)
    long = "x" * 40
    add_disk(root, long, "7:9", 2048)
    put(root, LOOP1 + "/loop1p1/partition", "1\n")
    put(root, LOOP1 + "/loop1p1/dev", "259:0\n")
    d = bt.config_daemon(tmp, "f", "")
    globs = f"loop1,zram0,bad0,{long}"
    d.start("--root", root, "--devices", globs)
    try:
        shown = sorted(os.listdir(d.path("devices")))
        check(shown == ["loop1"], f"(f) devices/ lists loop1 only: {shown}")
        got = not_listed(d)
        want = {
            "bad0": "its sysfs entry block/bad0 has no readable device number (dev) or size: nothing blkmqd can gather; "
                    "gathered again at its next uevent",
            "loop1p1": "a partition of loop1: blkmqd tunes whole disks (the request queue, elevator and hctx are loop1's: "
                       "blkmqctl explain loop1)",
            "vda": f"not matched by --devices {globs}: blkmqd lists only the disks its globs name",
            "zram0": "no medium (size 0): an unused loop or zram device, a drive without a medium; listed once it has one "
                     "(its change uevent)",
            long: "its name is no usable file name (empty, \".\", \"..\", longer than 31 bytes or containing \"/\")",
        }
        for name in sorted(set(want) | set(got)):
            check(got.get(name) == want.get(name), f"(f) not_listed {name}: {got.get(name)!r}, want {want.get(name)!r}")
        text = d.read("not_listed")
        names = [line.split(": ", 1)[0] for line in text.splitlines()]
        check(names == sorted(names) and text.endswith("\n"), f"(f) one line per device, sorted by name: {names}")
        st = os.stat(d.path("not_listed"))
        check(st.st_mode & 0o777 == 0o444 and st.st_size == len(text), f"(f) read-only (0{st.st_mode & 0o777:o}), st_size "
              f"{st.st_size} is the content's {len(text)}")
        for arg in ("zram0", "/dev/zram0"):
            r = ctl(d, "explain", arg)
            check(r.returncode == 2 and r.stderr.strip() == f"blkmqctl: blkmqd does not list zram0: {want['zram0']}",
                  f"(f) blkmqctl explain {arg}: exit {r.returncode}, {r.stderr.strip()!r}")
        r = ctl(d, "explain", "vda")
        check(r.returncode == 2 and want["vda"] in r.stderr, f"(f) blkmqctl explain vda: {r.returncode} {r.stderr.strip()!r}")
        r = ctl(d, "status", "loop1", "zram0")
        rows = [line.split()[0] for line in r.stdout.splitlines()[2:] if line.split()]
        check(r.returncode == 2 and rows == ["loop1"] and f"blkmqd does not list zram0: {want['zram0']}" in r.stderr,
              f"(f) blkmqctl status loop1 zram0: loop1's row, zram0's reason, exit 2 ({r.returncode}, {rows}, {r.stderr.strip()!r})")
        r = ctl(d, "status", "loop1")
        check(r.returncode == 0 and [line.split()[0] for line in r.stdout.splitlines()[2:]] == ["loop1"],
              f"(f) blkmqctl status loop1: its row only, exit 0 ({r.returncode}, {r.stdout!r})")
        r = ctl(d, "explain", "nosuchdisk0")
        check(r.returncode == 2 and "blkmqd saw no block device of that name" in r.stderr,
              f"(f) blkmqctl explain nosuchdisk0: says blkmqd saw none ({r.returncode}, {r.stderr.strip()!r})")
    finally:
        check(d.stop() == 0, "(f) clean stop")


def attach_partscan(loops, tag):
    """A loop device with partition scanning on (losetup -P), so addpart works on it."""
    dev = sh("losetup", "-f", "-P", "--show", loops.backing(tag)).strip()
    name = os.path.basename(dev)
    loops.attached.append(name)
    loops.originals[name] = bt.current_elevator(name)
    return name


def cached_size(d):
    """not_listed's size as the kernel holds it after a read and a stat() (attributes cached 60 s)."""
    d.read("not_listed")
    return os.stat(d.path("not_listed")).st_size


def wait_line(d, name, pred, what):
    ok, _ = wait_for(lambda: pred(not_listed(d).get(name)), 10.0, 0.05)
    check(ok, f"{what}: {name}'s line {not_listed(d).get(name)!r}")
    same, size, length = consistent(d)
    check(same, f"{what}: stat() of not_listed gives {size} bytes, a read {length}")


def case_l_loops(d, loops, tmp):
    """(l) loops: a new unmatched loop, a partition added and deleted, the listed loop detached"""
    a = attach_partscan(loops, "la")
    d.start("--devices", a)
    try:
        check(os.listdir(d.path("devices")) == [a], f"(l) devices/ lists {a}: {os.listdir(d.path('devices'))}")
        check(a not in not_listed(d), f"(l) {a} (listed) has no line")
        # (the free loop device losetup -f takes may exist already, size 0, with the same line)
        b = loops.attach("lb")
        wait_line(d, b, lambda r: r == f"not matched by --devices {a}: blkmqd lists only the disks its globs name",
                  f"(l) {b} attached after the start")
        r = ctl(d, "explain", b)
        check(r.returncode == 2 and f"blkmqd does not list {b}: not matched by --devices {a}" in r.stderr,
              f"(l) blkmqctl explain {b}: {r.returncode} {r.stderr.strip()!r}")

        sh("addpart", f"/dev/{a}", "1", "2048", "8192")
        wait_line(d, f"{a}p1", lambda r: r is not None and r.startswith(f"a partition of {a}: blkmqd tunes whole disks"),
                  f"(l) {a}p1 added")
        sh("delpart", f"/dev/{a}", "1")
        wait_line(d, f"{a}p1", lambda r: r is None, f"(l) {a}p1 deleted")

        # the kernel holds not_listed's size (a read and a stat() just now: its entry is valid
        # for 1 s, its attributes for 60 s); the detach adds a's line in the same event that
        # removes devices/<a>, whose lookup fails only once the invalidations queued before its
        # removal were sent: a stat() right then must see the new size, not the cached one
        before = cached_size(d)
        loops.detach(a)
        ok, _ = wait_for(lambda: not os.path.exists(d.path("devices", a)), 10.0, 0.02)
        after = os.stat(d.path("not_listed")).st_size
        check(ok and after != before, f"(l) {a} detached: gone from devices/ ({ok}), and a stat() of not_listed right "
              f"after sees its new size ({before} before, {after} now: invalidated)")
        wait_line(d, a, lambda r: r is not None and r.startswith("no medium (size 0)"), f"(l) {a} detached")
    finally:
        d.stop()


def case_r_reload(d, loops, tmp):
    """(r) a reload whose Devices= names a disk not listed: listed at once, its line gone"""
    a, b = loops.attach("ra"), loops.attach("rb")
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(f"[Manager]\nDevices={a}\n")
    d.start("-c", conf)
    try:
        check(sorted(os.listdir(d.path("devices"))) == [a], f"(r) devices/ lists {a} only")
        wait_line(d, b, lambda r: r == f"not matched by Devices= {a}: blkmqd lists only the disks its globs name",
                  f"(r) {b} before the reload")
        with open(conf, "w") as f:
            f.write(f"[Manager]\nDevices={a} {b}\n")
        check(d.write("1", "reload") == 0, "(r) echo 1 > reload")
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", b)), 10.0, 0.05)
        check(ok, f"(r) {b} listed at the reload: {sorted(os.listdir(d.path('devices')))}")
        wait_line(d, b, lambda r: r is None, f"(r) {b} after the reload")
    finally:
        d.stop()


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-not-listed-", (case_l_loops, case_r_reload), tmp_cases=(("f", case_f_fixture),),
                          tools=("losetup", "addpart", "delpart")))
