#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-histories.py BLKMQD

State that stays true across the things users do to a running blkmqd: a config (re)load, a
reload that changes what is managed, a restart. The built daemon runs with --root on copies
of the committed fixture trees (tests/fixtures/, capture.sh --restore-tree), on a FUSE mount
in a temp dir, with its own --state-dir and --config; writes land in the copies only.

  (e) Elevator= names: a name no kernel has ("mq_deadline", "nosuchelevator") fails the
      start and a reload with its file:line (and the name meant, when it looks like one); a
      name another kernel has that this one cannot give (kyber on vm-6.1-scsi-debug-shared,
      which lists only mq-deadline and none and has no module tree) loads, with one warning
      naming the line and the disk

Root, /dev/fuse (exit 77 otherwise). No device of this machine is read or written.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, finish  # noqa: E402


class Run:
    """One daemon on one fixture copy (its own mount, state dir, config, logs)."""

    def __init__(self, tmp, tag, config=""):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(os.path.join(self.dir, "mnt"))
        self.conf = os.path.join(self.dir, "blkmqd.conf")
        self.set_config(config)
        self.d = bt.Daemon(bt.exe_arg(), os.path.join(self.dir, "mnt"), self.dir, config=self.conf,
                           start_deadline=30.0, stop_deadline=30.0, unmount_on_stop=True)

    def set_config(self, text):
        with open(self.conf, "w") as f:
            f.write(text)

    def start(self, root, *args):
        self.d.start("--root", root, *args)
        return self.d

    def log(self):
        with open(self.d.log, errors="replace") as f:
            return f.read()

    def reload(self):
        """echo 1 > reload: 0 or the errno."""
        return bt.write_file(self.d.path("reload"), b"1\n")

    def stop(self):
        rc = self.d.stop()
        check(rc == 0, f"SIGTERM exit status 0 (got {rc})")


def case_elevator_names(tmp):
    root = bt.copy_fixture("vm-6.1-scsi-debug-shared", os.path.join(tmp, "e-root"))
    r = Run(tmp, "e", "[Class:shared-tags]\nElevator=mq_deadline\n")
    started = True
    try:
        r.start(root, "--devices", "sda")
    except RuntimeError:
        started = False
    if started:
        r.stop()
    log = r.log()
    check(not started, "(e) Elevator=mq_deadline: blkmqd does not start")
    check(f"{r.conf}:2: [Class:shared-tags] Elevator=: no kernel has an elevator \"mq_deadline\"" in log and
          "did you mean \"mq-deadline\"?" in log, f"(e) the line and the name meant are said: {log.strip()[-300:]!r}")

    r.set_config("[Class:shared-tags]\nElevator=mq-deadline\n")
    d = r.start(root, "--devices", "sda")
    try:
        before = d.read("devices", "sda", "explain")
        r.set_config("[Manager]\nVerifySec=0\n\n[Class:shared-tags]\nElevator=nosuchelevator mq-deadline\n")
        err = r.reload()
        check(err == 22, f"(e) a reload to Elevator=nosuchelevator is refused with EINVAL (got {err})")
        log = r.log()
        check(f"Reload failed, keeping the last good configuration: {r.conf}:5: [Class:shared-tags] Elevator=: no kernel "
              "has an elevator \"nosuchelevator\"" in log, "(e) the reload's line names file:line")
        check(d.read("devices", "sda", "explain") == before, "(e) the last good configuration stays in force")
        check(d.read("reload").strip() == "1", "(e) no load counted")

        r.set_config("[Class:shared-tags]\nElevator=kyber mq-deadline\n")
        err = r.reload()
        check(err == 0, f"(e) Elevator=kyber mq-deadline (kyber: in tree, not on this kernel) reloads (got {err})")
        warn = [x for x in r.log().splitlines() if "Elevator=kyber: this kernel cannot give kyber" in x]
        check(len(warn) == 1 and f"{r.conf}:2: [Class:shared-tags] Elevator=kyber: this kernel cannot give kyber to sda" in warn[0],
              f"(e) one warning with the line and the disk: {warn}")
        check(d.read("devices", "sda", "plan", "elevator").strip() == "mq-deadline", "(e) the next name of the list applies")
    finally:
        r.stop()


def main():
    bt.exe_or_exit(why="FUSE mount", tools=())
    tmp = tempfile.mkdtemp(prefix="blkmqd-histories-")
    try:
        for case in (case_elevator_names,):
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
