#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-bad-env.py BLKMQD

The daemon with --root on copies of tests/fixtures/host-6.18-virtio-blk (capture.sh
--restore-tree), each broken one way, --mountpoint on a temp dir, every file of the tree read:
debugfs absent, BTF absent, /proc/irq read-only (read-only bind mount: EROFS even for root),
queue/rotational deleted, a scheduler list with unknown names ("[foo] bar"), a disk named
"cciss!c0d0". Each must give a reported state (an "unknown: ..." fact, a class, an applied/...
state), never a crash: the daemon stays up, every file reads, SIGTERM exits 0.
"""

import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rel  # noqa: E402
from rel import check, wait_for  # noqa: E402

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "host-6.18-virtio-blk"))
CAPTURE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixture", "capture.sh"))


def rename_disk(root, old, new):
    link = os.path.join(root, "sys", "block", old)
    target = os.readlink(link)
    real = os.path.normpath(os.path.join(os.path.dirname(link), target))
    os.rename(real, os.path.join(os.path.dirname(real), new))
    os.unlink(link)
    os.symlink(os.path.join(os.path.dirname(target), new), os.path.join(root, "sys", "block", new))


def body(exe, tmp, argv):
    mounts = []

    def ro_bind(path):
        subprocess.run(["mount", "--bind", path, path], check=True)
        mounts.append(path)
        subprocess.run(["mount", "-o", "remount,bind,ro", path], check=True)

    variants = {
        "no-debugfs": (lambda r: shutil.rmtree(os.path.join(r, "sys/kernel/debug")), "vda",
                       [("facts/sq_sched", lambda v: v.startswith("unknown:"))]),
        "no-btf": (lambda r: shutil.rmtree(os.path.join(r, "sys/kernel/btf"), ignore_errors=True), "vda",
                   [("class", lambda v: v.strip() != "")]),
        "proc-irq-ro": (lambda r: ro_bind(os.path.join(r, "proc/irq")), "vda",
                        [("applied/irq_affinity", lambda v: v.strip() != "")]),
        "no-rotational": (lambda r: os.unlink(os.path.join(r, "sys/block/vda/queue/rotational")), "vda",
                          [("class", lambda v: v == "unknown\n"), ("facts/rotational", lambda v: v.startswith("unknown:"))]),
        "unknown-schedulers": (lambda r: open(os.path.join(r, "sys/block/vda/queue/scheduler"), "w").write("[foo] bar\n"), "vda",
                               [("facts/elevator", lambda v: v == "foo\n"),
                                ("applied/elevator", lambda v: not v.startswith("ok:") and v.strip() != ""),
                                ("plan/elevator", lambda v: v.strip() in ("keep", "foo", "bar") or v.startswith("unknown"))]),
        "cciss-name": (lambda r: rename_disk(r, "vda", "cciss!c0d0"), "cciss!c0d0",
                       [("class", lambda v: v.strip() != ""), ("facts/size", lambda v: v.strip() != "")]),
    }
    try:
        for name, (mutate, disk, expects) in variants.items():
            root = os.path.join(tmp, name)
            shutil.copytree(SRC, root, symlinks=True)
            subprocess.run(["sh", CAPTURE, "--restore-tree", root], capture_output=True)
            mutate(root)
            dtmp = os.path.join(tmp, name + "-run")
            os.makedirs(dtmp)
            d = rel.Daemon(exe, dtmp)
            try:
                try:
                    d.start("--root", root)
                except RuntimeError as e:
                    check(False, f"{name}: daemon starts ({e})")
                    continue
                ok, _ = wait_for(lambda: os.path.exists(d.path("devices", disk, "class")), 10.0)
                check(ok, f"{name}: devices/{disk} shown ({os.listdir(d.path('devices'))})")
                bad, n = [], 0
                for p in rel.tree_files(d.mnt):
                    try:
                        c = rel.read_all(p)
                        n += 1
                        if b"\0" in c:
                            bad.append(f"{p}: NUL")
                    except OSError as e:
                        bad.append(f"{p}: {e}")
                check(not bad and n > 20, f"{name}: all {n} files read" + "".join("\n      " + b for b in bad[:5]))
                for f, pred in expects:
                    try:
                        v = d.read("devices", disk, f)
                    except OSError as e:
                        v = f"<{e}>"
                    check(pred(v), f"{name}: devices/{disk}/{f} = {v.strip()!r}")
                check(d.alive(), f"{name}: daemon alive")
            finally:
                rc = d.stop(signal.SIGTERM)
                check(rc == 0, f"{name}: SIGTERM exit status 0 (got {rc})" + ("" if rc == 0 else "\n" + d.tail(15)))
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", "-l", m], capture_output=True)


if __name__ == "__main__":
    sys.exit(rel.main_wrapper(body, need_loops=False))
