#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-iosched.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

Elevator tunables (issue 18) through the real FUSE mount on loop devices this test attaches
(passed by exact name in --devices; never any other disk), each daemon with its own
--state-dir and --config in a temp dir. Loop devices take bfq, mq-deadline and kyber.

(i1) devices/<loop>/iosched/ lists exactly the files of the kernel's queue/iosched/ with the
     kernel's values, follows a value and an elevator someone else changes (noticed by a
     verify, a read of applied/), is empty under none, and is read-only.
"""

import errno
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, read_text, set_elevator, wait_for  # noqa: E402

KEEP = "[Class:stacked]\nElevator=keep\n"


def kernel_iosched(name):
    d = f"/sys/block/{name}/queue/iosched"
    if not os.path.isdir(d):
        return {}
    return {f: read_text(os.path.join(d, f)).strip() for f in sorted(os.listdir(d))}


def tree_iosched(d, name):
    p = d.path("devices", name, "iosched")
    return {f: d.read("devices", name, "iosched", f).strip() for f in sorted(os.listdir(p))}


def set_tunable(name, tunable, value):
    with open(f"/sys/block/{name}/queue/iosched/{tunable}", "w") as f:
        f.write(value)


def start(d, tmp, devices, conf_text):
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    d.start("--devices", devices, "-c", conf)


def verify(d, name):
    """A read of applied/ is a verify: blkmqd looks at the kernel again."""
    return d.read("devices", name, "applied", "elevator")


def case_i1_view(d, loops, tmp):
    """(i1) iosched/ shows the running elevator's tunables as the kernel has them"""
    name = loops.attach("i1")
    set_elevator(name, "bfq")
    start(d, tmp, name, KEEP)
    try:
        k = kernel_iosched(name)
        check("slice_idle" in k and "low_latency" in k, f"(i1) the kernel's bfq has slice_idle, low_latency ({sorted(k)})")
        t = tree_iosched(d, name)
        check(t == k, f"(i1) iosched/ equals queue/iosched/ under bfq: {t} vs {k}")

        # someone else writes a tunable: a verify notices it
        set_tunable(name, "slice_idle", "0")
        verify(d, name)
        v = d.read("devices", name, "iosched", "slice_idle").strip()
        check(v == "0", f"(i1) iosched/slice_idle follows the kernel after a verify ({v!r})")
        check(tree_iosched(d, name) == kernel_iosched(name), "(i1) every file follows (slice_idle_us too)")

        # read-only
        e = bt.write_file(d.path("devices", name, "iosched", "slice_idle"), b"3\n")
        check(e == errno.EACCES, f"(i1) a write to iosched/slice_idle is refused with EACCES ({errno.errorcode.get(e, e)})")
        check(kernel_iosched(name).get("slice_idle") == "0", "(i1) ... and the kernel's value is unchanged")

        # someone else switches the elevator: the files follow it
        set_elevator(name, "kyber")
        verify(d, name)
        ok, _ = wait_for(lambda: sorted(os.listdir(d.path("devices", name, "iosched"))) == ["read_lat_nsec", "write_lat_nsec"], 3.0)
        check(ok, f"(i1) iosched/ lists kyber's files after the switch ({os.listdir(d.path('devices', name, 'iosched'))})")
        check(tree_iosched(d, name) == kernel_iosched(name), "(i1) with kyber's values")
        check(not os.path.exists(d.path("devices", name, "iosched", "slice_idle")), "(i1) bfq's slice_idle is gone")

        set_elevator(name, "mq-deadline")
        verify(d, name)
        ok, _ = wait_for(lambda: tree_iosched(d, name) == kernel_iosched(name), 3.0)
        check(ok and "fifo_batch" in tree_iosched(d, name), "(i1) mq-deadline's files and values")

        set_elevator(name, "none")
        verify(d, name)
        ok, _ = wait_for(lambda: os.listdir(d.path("devices", name, "iosched")) == [], 3.0)
        check(ok, f"(i1) iosched/ is empty under none ({os.listdir(d.path('devices', name, 'iosched'))})")
    finally:
        d.stop()
    set_elevator(name, "none")


def main():
    exe = bt.exe_arg()
    rc = bt.preflight(exe, "loop devices, FUSE mount, sysfs writes")
    if rc is not None:
        return rc
    # the elevators are modules on distribution kernels; built in here
    for m in ("bfq", "kyber-iosched"):
        bt.sh("modprobe", "-q", m, check_rc=False)
    vda_before = current_elevator("vda") if os.path.exists("/sys/block/vda") else None
    cases = (case_i1_view,)
    only = os.environ.get("BLKMQD_CASES")
    if only:
        cases = [c for c in cases if c.__name__.split("_")[1] in only.split(",")]
    bt.run_cases(exe, "blkmqd-iosched-", cases)
    if vda_before:
        check(current_elevator("vda") == vda_before, "vda untouched")
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
