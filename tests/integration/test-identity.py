#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-identity.py BLKMQD

Issue 13 items 10, 11 and 15, end to end: the built daemon with --root on copies of the
committed fixture trees (tests/fixtures/, capture.sh --restore-tree), each changed into the
set-up the item is about, on a FUSE mount in a temp dir, with its own --state-dir and
--config. Writes land in the copies only.

  (n) identity collisions
      n1 an eMMC card (host-6.18-virtio-blk's vda turned into mmcblk0 + mmcblk0boot0 +
         mmcblk0boot1 of one card, serial 0x1234abcd): policy/rq_affinity 2 on boot0, stop,
         start -> the override comes back on boot0 only and is written there only
      n2 two virtio disks with one serial and an override stored under it: at load neither
         gets it, one warning per disk names the other, a new override is not stored; a third
         disk of the same start with a serial of its own gets no warning, its override is stored
  (o) '!' names: vda renamed cciss!c0d0 -> managed and shown as devices/cciss!c0d0,
      --devices 'cciss/c0d0' and MatchName=cciss/c0d0 (the kernel's form) match it, blkmqctl explain cciss/c0d0 and
      /dev/cciss/c0d0 work; a disk whose name is no file name (40 bytes) logs one line
  (p) modprobe.d ownership across a restart: synthetic-megaraid-64q on 5.10 with
      ModuleParams=write: start, stop, start, `echo 1 > restore` -> "1 original value(s) put
      back", blkmqd.conf removed; a blkmqd.conf an administrator wrote is never touched, and
      its options line against blkmqd's wish is deferred to (modules/ state deferred, naming it);
      (p2) a runtime parameter (virtio_blk.num_request_queues) written by one run is put
      back by its SIGTERM (issue 26 item 8), and after a kill -9 by restore in the next

Root, /dev/fuse (the test is skipped otherwise). No device of this machine is read or written.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, finish, wait_for  # noqa: E402

CTL = None
VIRTIO1 = "sys/devices/pci0000:00/0000:00:02.0/virtio1"


copy_fixture = bt.copy_fixture


put = bt.put_rel


def get(root, rel):
    try:
        with open(os.path.join(root, rel)) as f:
            return f.read()
    except OSError as e:
        return f"<{e.strerror}>"


def move_disk(root, parent, old, new):
    """parent/old renamed parent/new, sys/block/old -> sys/block/new."""
    os.rename(os.path.join(root, parent, "block", old), os.path.join(root, parent, "block", new))
    os.unlink(os.path.join(root, "sys/block", old))
    os.symlink(os.path.relpath(os.path.join(root, parent, "block", new), os.path.join(root, "sys/block")),
               os.path.join(root, "sys/block", new))


def clone_disk(root, parent, src, new, devnum):
    shutil.copytree(os.path.join(root, parent, "block", src), os.path.join(root, parent, "block", new), symlinks=True)
    put(root, f"{parent}/block/{new}/dev", devnum + "\n")
    os.symlink(os.path.relpath(os.path.join(root, parent, "block", new), os.path.join(root, "sys/block")),
               os.path.join(root, "sys/block", new))


class Run:
    """One daemon on one fixture copy (its own mount, state dir, config, logs)."""

    def __init__(self, tmp, tag, config=""):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(os.path.join(self.dir, "mnt"))
        self.conf = os.path.join(self.dir, "blkmqd.conf")
        with open(self.conf, "w") as f:
            f.write(config)
        self.d = bt.Daemon(bt.exe_arg(), os.path.join(self.dir, "mnt"), self.dir, config=self.conf,
                           start_deadline=30.0, stop_deadline=30.0, unmount_on_stop=True)

    def start(self, root, *args):
        self.d.start("--root", root, *args)
        return self.d

    def log(self):
        with open(self.d.log, errors="replace") as f:
            return f.read()

    def stop(self):
        rc = self.d.stop()
        check(rc == 0, f"SIGTERM exit status 0 (got {rc})")


def case_mmc(tmp):
    root = copy_fixture("host-6.18-virtio-blk", os.path.join(tmp, "mmc-root"))
    move_disk(root, VIRTIO1, "vda", "mmcblk0")
    os.unlink(os.path.join(root, VIRTIO1, "block/mmcblk0/serial"))
    put(root, f"{VIRTIO1}/serial", "0x1234abcd\n")
    put(root, f"{VIRTIO1}/cid", "150100414a544434520a1234abcd8d00\n")
    clone_disk(root, VIRTIO1, "mmcblk0", "mmcblk0boot0", "179:8")
    clone_disk(root, VIRTIO1, "mmcblk0", "mmcblk0boot1", "179:16")
    disks = ["mmcblk0", "mmcblk0boot0", "mmcblk0boot1"]

    def rq(disk):
        return get(root, f"sys/block/{disk}/queue/rq_affinity").strip()

    r = Run(tmp, "mmc")
    d = r.start(root, "--devices", "mmcblk*")
    try:
        ids = {x: d.read("devices", x, "facts", "identity").strip() for x in disks}
        check(len(set(ids.values())) == 3, f"(n1) three disks of one card, three identities: {ids}")
        check(bt.write_file(d.path("devices", "mmcblk0boot0", "policy", "rq_affinity"), b"2\n") == 0,
              "(n1) policy/rq_affinity 2 on mmcblk0boot0")
        check(wait_for(lambda: rq("mmcblk0boot0") == "2", 10.0)[0], "(n1) written on boot0")
    finally:
        r.stop()
    check([rq(x) for x in disks] == ["1", "1", "1"], f"(n1) stop restored: {[rq(x) for x in disks]}")

    d = r.start(root, "--devices", "mmcblk*")
    try:
        ok, _ = wait_for(lambda: rq("mmcblk0boot0") == "2", 10.0)
        check(ok, "(n1) after the restart the override is back on boot0")
        got = [d.read("devices", x, "policy", "rq_affinity").strip() for x in disks]
        check(got == ["auto", "2", "auto"], f"(n1) policy/rq_affinity of {disks}: {got}")
        check([rq(x) for x in disks] == ["1", "2", "1"], f"(n1) queue/rq_affinity of {disks}: {[rq(x) for x in disks]}")
    finally:
        r.stop()


def case_collision(tmp):
    root = copy_fixture("host-6.18-virtio-blk", os.path.join(tmp, "twin-root"))
    clone_disk(root, VIRTIO1, "vda", "vdb", "254:16")     # same virtio serial
    clone_disk(root, VIRTIO1, "vda", "vdc", "254:32")
    serial = get(root, f"{VIRTIO1}/block/vda/serial").strip()
    put(root, f"{VIRTIO1}/block/vdc/serial", serial + "-c\n")  # its own
    r = Run(tmp, "twin")
    os.makedirs(os.path.join(r.dir, "state", "overrides"), mode=0o700)
    put(r.dir, f"state/overrides/serial:{serial}", f"# blkmqd overrides for serial:{serial}\nrq_affinity=2\n")
    d = r.start(root, "--devices", "vd*")
    try:
        rqs = [get(root, f"sys/block/{x}/queue/rq_affinity").strip() for x in ("vda", "vdb")]
        check(rqs == ["1", "1"], f"(n2) the stored override applied to neither disk: rq_affinity {rqs}")
        pol = [d.read("devices", x, "policy", "rq_affinity").strip() for x in ("vda", "vdb")]
        check(pol == ["auto", "auto"], f"(n2) policy/rq_affinity {pol}")
        log = r.log()
        lines = [x for x in log.splitlines() if "Identity serial:" in x]
        check(len(lines) == 2 and "vdb" in lines[0] and "vda" in lines[1],
              "(n2) one warning per disk, naming the other:\n      " + "\n      ".join(lines))
        check(bt.write_file(d.path("devices", "vdb", "policy", "nr_requests"), b"64\n") == 0, "(n2) policy on vdb")
        stored = get(r.dir, f"state/overrides/serial:{serial}")
        check("nr_requests" not in stored, f"(n2) not stored under the shared identity: {stored!r}")
        check("not stored" in r.log(), "(n2) the log says the setting is not stored")
        # a third disk of the same batch with a serial of its own shares nothing
        check(not [x for x in log.splitlines() if "Identity" in x and "vdc" in x], "(n2) no warning for vdc")
        check(bt.write_file(d.path("devices", "vdc", "policy", "nr_requests"), b"64\n") == 0, "(n2) policy on vdc")
        ok, _ = wait_for(lambda: "nr_requests=64" in get(r.dir, f"state/overrides/serial:{serial}-c"), 10.0)
        check(ok, f"(n2) vdc's override stored under its own identity: {get(r.dir, f'state/overrides/serial:{serial}-c')!r}")
    finally:
        r.stop()


def case_names(tmp):
    root = copy_fixture("host-6.18-virtio-blk", os.path.join(tmp, "cciss-root"))
    move_disk(root, VIRTIO1, "vda", "cciss!c0d0")
    long = "x" * 40
    shutil.copytree(os.path.join(root, "sys/devices/virtual/block/loop1"),
                    os.path.join(root, "sys/devices/virtual/block", long), symlinks=True)
    os.symlink("../devices/virtual/block/" + long, os.path.join(root, "sys/block", long))
    r = Run(tmp, "cciss", "[Device:array]\nMatchName=cciss/c0d0\nRqAffinity=2\n")
    d = r.start(root, "--devices", f"cciss/c0d0,{long}")
    try:
        shown = sorted(os.listdir(d.path("devices")))
        check(shown == ["cciss!c0d0"], f"(o) --devices cciss/c0d0 shows devices/cciss!c0d0: {shown}")
        check(d.read("devices", "cciss!c0d0", "class").strip() not in ("", "unknown"), "(o) cciss!c0d0 classified")
        for arg in ("cciss/c0d0", "/dev/cciss/c0d0", "cciss!c0d0"):
            p = subprocess.run([CTL, "--mountpoint", d.mnt, "explain", arg], capture_output=True, text=True)
            check(p.returncode == 0 and "cciss!c0d0" in p.stdout + p.stderr,
                  f"(o) blkmqctl explain {arg}: exit {p.returncode} {p.stderr.strip()[:120]}")
        lines = [x for x in r.log().splitlines() if long in x]
        check(len(lines) == 1 and "not managed" in lines[0], f"(o) one line for the refused name: {lines}")
        rq = get(root, f"{VIRTIO1}/block/cciss!c0d0/queue/rq_affinity").strip()
        check(rq == "2", f"(o) MatchName=cciss/c0d0 (the kernel's form) applies: queue/rq_affinity {rq}")
    finally:
        r.stop()


def case_modprobe(tmp):
    root = copy_fixture("synthetic-megaraid-64q", os.path.join(tmp, "mp-root"))
    put(root, "proc/sys/kernel/osrelease", "5.10.0-28-amd64\n")
    os.makedirs(os.path.join(root, "etc/modprobe.d"))
    conf = os.path.join(root, "etc/modprobe.d/zz-blkmqd.conf")
    r = Run(tmp, "modprobe", "[Manager]\nModuleParams=write\n")
    d = r.start(root)
    r.stop()
    check(os.path.exists(conf), "(p) ModuleParams=write: blkmqd.conf written, kept at stop")
    d = r.start(root)
    try:
        check(bt.write_file(d.path("restore"), b"1\n") == 0, "(p) echo 1 > restore")
        lines = [x for x in r.log().splitlines() if "restore:" in x]
        check(lines and "1 original value(s) put back" in lines[-1], f"(p) after a restart: {lines}")
        check(not os.path.exists(conf), "(p) the earlier run's blkmqd.conf removed")
    finally:
        r.stop()

    mine = "options megaraid_sas host_tagset_enable=1\n"
    put(root, "etc/modprobe.d/zz-blkmqd.conf", mine)
    d = r.start(root)
    try:
        # an options line the admin wrote against blkmqd's wish (host_tagset_enable=0) is their
        # choice (issue 28, policies/owners.c): deferred, naming the file, nothing written
        state = d.read("modules", "megaraid_sas", "host_tagset_enable", "state").strip()
        note = d.read("modules", "megaraid_sas", "host_tagset_enable", "note").strip()
        check(state == "deferred" and "/etc/modprobe.d/zz-blkmqd.conf:1" in note and "the admin's choice" in note,
              f"(p) someone else's blkmqd.conf: state {state} ({note})")
        bt.write_file(d.path("restore"), b"1\n")
    finally:
        r.stop()
    check(get(root, "etc/modprobe.d/zz-blkmqd.conf") == mine, "(p) someone else's blkmqd.conf untouched")


def case_module_runtime(tmp):
    """A runtime-writable parameter (0644 virtio_blk.num_request_queues, 5.15+) written by one
    run is put back by its stop (blkmqd(8): stop restores every original value; issue 26 item
    8), and after a kill -9 by `restore` in the next run: its original is kept in the state
    directory."""
    root = copy_fixture("vm-6.1-virtio-blk-4q", os.path.join(tmp, "mr-root"))
    param = "sys/module/virtio_blk/parameters/num_request_queues"
    before = get(root, param).strip()
    r = Run(tmp, "modrt", "[Manager]\nModuleParams=write\n[Module:virtio_blk]\nnum_request_queues=1\n")
    d = r.start(root)
    state = d.read("modules", "virtio_blk", "num_request_queues", "state").strip()
    check(get(root, param).strip() == "1" and state == "pending-reset",
          f"(p2) ModuleParams=write: {param} written 1 (was {before}), {state}")
    r.stop()
    check(get(root, param).strip() == before, f"(p2) SIGTERM put {param} back to {before}: {get(root, param).strip()!r}")
    check("Restored virtio_blk.num_request_queues=" + before in r.log(), "(p2) the stop's restore logged")
    d = r.start(root)
    rc = d.stop(signal.SIGKILL)
    check(rc == -signal.SIGKILL and get(root, param).strip() == "1", f"(p2) kill -9: {param} left at 1 ({rc})")
    d = r.start(root)
    try:
        check(bt.write_file(d.path("restore"), b"1\n") == 0, "(p2) echo 1 > restore after a restart")
        check(get(root, param).strip() == before, f"(p2) the earlier run's original put back: {get(root, param).strip()!r}")
        # the disk's values the killed run left and blkmqd.conf (its options carry the runtime
        # value over a reboot) are put back too: the parameter is one of them
        check("Restored virtio_blk.num_request_queues=" + before in r.log(), "(p2) restore after the restart logged it")
        check(not os.path.exists(os.path.join(root, "etc/modprobe.d/zz-blkmqd.conf")), "(p2) and removed blkmqd.conf")
    finally:
        r.stop()


def main():
    global CTL
    exe = bt.exe_or_exit(why="FUSE mount", tools=())
    CTL = os.path.join(os.path.dirname(os.path.abspath(exe)), "ctl", "blkmqctl")
    tmp = tempfile.mkdtemp(prefix="blkmqd-identity-")
    try:
        for case in (case_mmc, case_collision, case_names, case_modprobe, case_module_runtime):
            print(f"-- {case.__name__}", flush=True)
            try:
                case(tmp)
            except Exception as e:      # a case that raised is a failure, the others still run
                check(False, f"{case.__name__}: {type(e).__name__}: {e}")
    finally:
        subprocess.run(["sh", "-c", f"for m in {tmp}/*/mnt; do umount -l $m 2>/dev/null; done"])
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
