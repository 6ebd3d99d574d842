#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-read.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

A read has no side effect (issue 17 item 4): `cat applied/<knob>` looks at the kernel again so
it shows the truth after someone else's change, but never writes a kernel knob or the state
directory; what the look found is persisted by the periodic verify (or the next apply, or the
stop), not by the read.

  (l) a loop device, VerifySec=0, Reassert=no: policy/elevator mq-deadline is written (its
      original recorded in state/originals/), then another tool switches the scheduler to kyber
      (no uevent comes). Reading every applied/ file (three times) and facts/elevator: applied/
      elevator says "changed externally to kyber", facts/elevator kyber; the state directory
      (every file's content and mtime) and the disk's queue files (scheduler, nr_requests,
      rq_affinity, iosched/*) are as before the reads. Before issue 17 the read's verify dropped
      the original and rewrote originals/<identity>. The stop (nothing to put back) stores what
      the read found: no elevator original is left for a later run to write over kyber.
  (r) the same with Reassert=yes: the read says "rewritten at the next evaluation" and writes
      nothing, kyber stays.
  (i) a fixture copy (--root vm-6.1-nvme-4q, IrqAffinity=1-2, VerifySec=0): blkmqd places the
      four queue vectors, another tool moves IRQ 26 to CPU 3. Reading applied/irq_affinity says
      "1 changed externally"; the root copy's files and the state directory are unchanged.
  (p) VerifySec=1: after another tool's switch and a read of applied/elevator, the periodic
      verify (not the read) drops the elevator's original from state/originals/ (polled).

Root, losetup, /dev/fuse (the test is skipped otherwise).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, set_elevator, wait_for, write_file  # noqa: E402



def tree(top):
    """{relative path: (content, mtime_ns)} of every file under top, directories with their mtime."""
    out = {}
    for rel, p in bt.walk_rel(top):
        st = os.lstat(p)
        if os.path.isdir(p) or os.path.islink(p):
            out[rel] = (None, st.st_mtime_ns)
            continue
        try:
            with open(p, "rb") as f:
                out[rel] = (f.read(), st.st_mtime_ns)
        except OSError as e:
            out[rel] = (f"<{e.strerror}>", st.st_mtime_ns)
    return out


def diff(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def queue_files(name):
    """The loop's knobs as the kernel has them: {file: content}."""
    q = f"/sys/block/{name}/queue"
    files = ["scheduler", "nr_requests", "rq_affinity"]
    if os.path.isdir(os.path.join(q, "iosched")):
        files += ["iosched/" + n for n in sorted(os.listdir(os.path.join(q, "iosched")))]
    out = {}
    for n in files:
        try:
            out[n] = bt.read_text(os.path.join(q, n))
        except OSError as e:
            out[n] = f"<{e.strerror}>"
    return out


def read_every_applied(d, name, rounds=3):
    """Read every file of applied/ (and facts/elevator) rounds times; the last contents."""
    seen = {}
    for _ in range(rounds):
        for n in sorted(os.listdir(d.path("devices", name, "applied"))):
            seen["applied/" + n] = d.read("devices", name, "applied", n)
        seen["facts/elevator"] = d.read("devices", name, "facts", "elevator")
    return seen


start = bt.start_with_config


def stored(d, tag):
    """What state/originals/ holds for the loop of tag (its identity names the backing file)."""
    originals = os.path.join(d.state, "originals")
    out = ""
    for f in os.listdir(originals) if os.path.isdir(originals) else ():
        if f"backing-{tag}-" in f and not f.startswith("."):
            with open(os.path.join(originals, f)) as fh:
                out += fh.read()
    return out


def settle(d, name, tag):
    """policy/elevator mq-deadline, written and shown ok; the original is stored."""
    ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
    check(ok and write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline") == 0,
          f"override mq-deadline on {name}")
    ok, _ = wait_for(lambda: d.read("devices", name, "applied", "elevator").startswith("ok: mq-deadline"), 10.0, 0.02)
    check(ok and current_elevator(name) == "mq-deadline",
          f"{name} runs mq-deadline, applied/elevator {d.read('devices', name, 'applied', 'elevator')!r}")
    ok, _ = wait_for(lambda: "\nelevator=" in stored(d, tag), 5.0, 0.02)
    check(ok, f"the elevator's original is stored in state/originals/: {stored(d, tag)!r}")


def case_l_loop(d, loops, tmp, reassert=False):
    """(l) a read of applied/ after another tool's switch: the truth shown, nothing written"""
    t = "r" if reassert else "l"
    tag = f"({t})"
    name = loops.attach(t)
    orig = current_elevator(name)
    start(d, tmp, name, "[Manager]\nVerifySec=0\n" + ("Reassert=yes\n" if reassert else ""))
    try:
        settle(d, name, t)
        set_elevator(name, "kyber")                     # another tool; no uevent comes
        state0, queue0 = tree(d.state), queue_files(name)
        seen = read_every_applied(d, name)
        v = seen["applied/elevator"]
        want = "rewritten at the next evaluation" if reassert else "it is no longer blkmqd's to restore"
        check(v.startswith("changed externally to kyber") and want in v, f"{tag} applied/elevator shows the change: {v!r}")
        check(seen["facts/elevator"] == "kyber\n", f"{tag} facts/elevator: {seen['facts/elevator']!r}")
        state1, queue1 = tree(d.state), queue_files(name)
        check(state1 == state0, f"{tag} the reads wrote nothing to the state directory (changed: {diff(state0, state1)})")
        check(queue1 == queue0, f"{tag} the reads wrote no kernel knob (changed: {diff(queue0, queue1)})")
        check(current_elevator(name) == "kyber", f"{tag} kyber stays ({current_elevator(name)})")
    finally:
        d.stop()
    check(current_elevator(name) == "kyber", f"{tag} stop does not write over someone else's value")
    # what the read found is stored by the stop: no original left that a later run would put back
    check("\nelevator=" not in stored(d, t), f"{tag} after the stop, state/originals/ keeps no elevator original: {stored(d, t)!r}")
    set_elevator(name, orig)


def case_r_reassert(d, loops, tmp):
    """(r) the same with Reassert=yes: the read says it is rewritten later, and writes nothing"""
    case_l_loop(d, loops, tmp, reassert=True)


def case_p_persisted(d, loops, tmp):
    """(p) VerifySec=1: the periodic verify, not the read, stores that the original is gone"""
    name = loops.attach("p")
    orig = current_elevator(name)
    start(d, tmp, name, "[Manager]\nVerifySec=1\n")
    try:
        settle(d, name, "p")
        set_elevator(name, "kyber")
        v = d.read("devices", name, "applied", "elevator")
        check(v.startswith("changed externally to kyber"), f"(p) applied/elevator: {v!r}")
        ok, _ = wait_for(lambda: "\nelevator=" not in stored(d, "p"), 10.0, 0.05)
        check(ok, f"(p) the elevator's original left state/originals/ at a periodic verify: {stored(d, 'p')!r}")
    finally:
        d.stop()
    set_elevator(name, orig)


def case_i_irqs(tmp):
    """(i) a fixture copy: a read of applied/irq_affinity after another tool moved a vector writes nothing"""
    root, d = bt.nvme_irq_daemon(tmp, "i")
    irq = lambda n: os.path.join(root, f"proc/irq/{n}/smp_affinity_list")      # noqa: E731
    d.start("--root", root, "--devices", "nvme0n1")
    try:
        ok, _ = wait_for(lambda: all(bt.read_text(irq(n)).strip() == "1-2" for n in (25, 26, 27, 28)), 10.0, 0.02)
        check(ok, "(i) four vectors placed on 1-2")
        ok, _ = wait_for(lambda: os.path.isdir(os.path.join(d.state, "originals")) and
                         os.listdir(os.path.join(d.state, "originals")), 5.0, 0.02)
        check(ok, "(i) their originals are stored")
        with open(irq(26), "w") as f:                   # another tool
            f.write("3\n")
        root0, state0 = tree(root), tree(d.state)
        seen = read_every_applied(d, "nvme0n1")
        v = seen["applied/irq_affinity"]
        check("1 changed externally" in v, f"(i) applied/irq_affinity shows the change: {v!r}")
        root1, state1 = tree(root), tree(d.state)
        check(state1 == state0, f"(i) the reads wrote nothing to the state directory (changed: {diff(state0, state1)})")
        check(root1 == root0, f"(i) the reads wrote nothing under the root (changed: {diff(root0, root1)})")
    finally:
        rc = d.stop()
    check(rc == 0, f"(i) SIGTERM exit status 0 (got {rc})")
    check(bt.read_text(irq(26)).strip() == "3", "(i) IRQ 26 keeps the other tool's value")


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-read-", (case_l_loop, case_r_reassert, case_p_persisted), (("i", case_i_irqs),),
                          "loop devices, FUSE mount, sysfs writes"))
