#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-liveness.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

No reader ever waits for a kernel write (issue 14), on loop devices this test attaches. A write
that blocks in the kernel is made with blkmqd's fault injection, BLKMQD_TEST_HOLD_WRITE
("sysfs:block/<loop>/queue/scheduler=<s>": the writer worker sleeps that long before the
write, as an elevator switch on a frozen queue would). Config: every loop (class stacked)
wants mq-deadline, so every attach needs a scheduler write.

(p) held at coldplug: the mount appears after the write deadline (not after the held write),
    with applied/elevator "timeout (still pending)" for the held disk and "ok" for the other;
(q) while it is held: every file of the tree answers (no read waits anywhere near the 5 s write
    deadline: none takes DEADLINE/2 or more over >= 1,000 reads; p50/p99 printed, not asserted); a loop attached meanwhile is evaluated and applied; a policy write
    on the other disk is applied and answered;
(r) when the held write returns: applied/elevator says ok with the original, the kernel agrees;
(s) SIGTERM while a write is held: the other disks are restored, the daemon exits within
    TimeoutStopSec (30 s; the daemon's own budget is 15 s), the held disk's original stays recorded;
(w) a disk removed (LOOP_CTL_REMOVE: a "remove" uevent) while its write is held: a policy write
    waiting for that disk is answered at once, not at the deadline nor never.
"""

import fcntl
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, read_text, wait_for, write_file  # noqa: E402

CONF = "[Class:stacked]\nElevator=mq-deadline\n"
DEADLINE = 5.0          # the writer's deadline (WRITER_TIMEOUT_USEC_DEFAULT)


def start(d, tmp, devices, hold, hold_s, conf_text=CONF):
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    os.environ["BLKMQD_TEST_HOLD_WRITE"] = f"sysfs:block/{hold}/queue/scheduler={hold_s}"
    try:
        t0 = time.monotonic()
        d.start("--devices", devices, "-c", conf, deadline=hold_s + 10)
        return time.monotonic() - t0
    finally:
        del os.environ["BLKMQD_TEST_HOLD_WRITE"]


def tree_files(mnt, disks):
    files = [os.path.join(mnt, f) for f in ("version", "mode", "reload", "restore", "metrics")]
    for disk in disks:
        base = os.path.join(mnt, "devices", disk)
        for root, dirs, names in os.walk(base):
            # iosched/ lists the running elevator's tunables: they come and go with an elevator
            # switch (this test makes some), like sysfs's queue/iosched/ (test-iosched.py reads them)
            dirs[:] = [x for x in dirs if not (root.endswith("/hctx") and x != "0") and not (root == base and x == "iosched")]
            files += [os.path.join(root, n) for n in names]
    return files


def sorted_timed_reads(files, n):
    """Read files round robin until n reads; returns the sorted latencies (s) and errors."""
    lat, errors = bt.timed_reads(files, n)
    return sorted(lat), errors


def case_pqr_held_write(d, loops, tmp):
    """(p)-(r) a held elevator write: mount after the deadline, the tree answers, others applied."""
    hold_s = 14
    a = loops.attach(0)
    b = loops.attach(1)
    c = loops.names[2]
    for n in (a, b):
        bt.set_elevator(n, "none")
    t_start = start(d, tmp, f"{a},{b},{c}", a, hold_s)
    t_mounted = time.monotonic()
    A = lambda *p: d.read("devices", a, *p)      # noqa: E731
    check(DEADLINE - 0.5 <= t_start < hold_s, f"(p) mounted after the write deadline, not after the held write: {t_start:.1f} s "
          f"(deadline {DEADLINE:.0f} s, hold {hold_s} s)")
    v = A("applied", "elevator")
    check(v.startswith("timeout (still pending)") and "mq-deadline" in v, f"(p) {a} applied/elevator: {v!r}")
    v = d.read("devices", b, "applied", "elevator")
    check(v == "ok: mq-deadline (was none)\n", f"(p) {b} applied/elevator: {v!r}")
    check(current_elevator(a) == "none", f"(p) {a}: the held write has not reached the kernel ({current_elevator(a)})")

    # (q) every file answers while the write is held
    files = tree_files(d.mnt, [a, b])
    lat, errors = sorted_timed_reads(files, 1000)
    check(not errors, f"(q) {len(files)} files, 1,000 reads, no error: {errors[:3]}")
    print(f"   read latency while the write is held: p50 {bt.percentile(lat, 0.5) * 1e3:.2f} ms, p99 {bt.percentile(lat, 0.99) * 1e3:.2f} ms, "
          f"max {lat[-1] * 1e3:.2f} ms over {len(lat)} reads of {len(files)} files")
    check(lat[-1] < DEADLINE / 2, f"(q) no read took {DEADLINE / 2:.1f} s or more (max {lat[-1] * 1e3:.1f} ms)")

    # another disk's uevent: a loop attached now is evaluated and applied while a's write is held
    loops.attach(2)
    ok, t = wait_for(lambda: os.path.exists(d.path("devices", c, "applied", "elevator")) and
                     d.read("devices", c, "applied", "elevator") == "ok: mq-deadline (was none)\n", 5.0, 0.02)
    check(ok, f"(q) {c} attached meanwhile: applied/elevator ok: mq-deadline (was none) after {t:.2f} s")
    check(current_elevator(c) == "mq-deadline", f"(q) {c}: the kernel shows [mq-deadline]")
    check(A("applied", "elevator").startswith("timeout (still pending)"), f"(q) {a} still pending meanwhile")

    # a policy write on b is applied and answered while a's write is held
    t = time.monotonic()
    rc = write_file(d.path("devices", b, "policy", "elevator"), b"kyber\n")
    took = time.monotonic() - t
    check(rc == 0 and took < DEADLINE / 2, f"(q) {b} policy/elevator <- kyber answered (rc {rc}) in {took:.2f} s")
    v = d.read("devices", b, "applied", "elevator")
    check(v == "ok: kyber (was none)\n" and current_elevator(b) == "kyber", f"(q) {b} applied/elevator {v!r}, kernel {current_elevator(b)}")

    # a policy write on a (whose write is still held) is answered at the latest at the deadline
    result = {}

    def writer():
        t = time.monotonic()
        result["rc"] = write_file(d.path("devices", a, "policy", "nr_requests"), b"64\n")
        result["t"] = time.monotonic() - t
    # list again: b's elevator is kyber now, so devices/<b>/iosched/ holds kyber's tunables, not mq-deadline's
    files = tree_files(d.mnt, [a, b])
    th = threading.Thread(target=writer)
    th.start()
    lat2, errors = sorted_timed_reads(files, 300)
    th.join(DEADLINE + 5)
    check(not th.is_alive() and result.get("rc") == 0, f"(q) {a} policy/nr_requests <- 64 while held: answered ({result})")
    check(lat2[-1] < DEADLINE / 2 and not errors, f"(q) reads during that write: max {lat2[-1] * 1e3:.1f} ms, errors {errors[:2]}")

    # (r) the held write returns: the real outcome is recorded
    left = hold_s - (time.monotonic() - t_mounted) + DEADLINE
    ok, t = wait_for(lambda: A("applied", "elevator") == "ok: mq-deadline (was none)\n", max(left, 1) + 5, 0.05)
    check(ok, f"(r) {a} applied/elevator after the held write returned: {A('applied', 'elevator')!r}")
    check(current_elevator(a) == "mq-deadline", f"(r) {a}: the kernel shows [mq-deadline]")
    ok, _ = wait_for(lambda: A("applied", "nr_requests").startswith("ok: 64"), 5.0, 0.05)
    check(ok and read_text(f"/sys/block/{a}/queue/nr_requests") == "64\n",
          f"(r) {a} the nr_requests override asked for meanwhile is applied after it: {A('applied', 'nr_requests')!r}")
    rc = d.stop(deadline=30)
    check(rc == 0, f"(r) SIGTERM: exit status {rc}")
    for n in (a, b, c):
        check(current_elevator(n) == "none", f"(r) {n} restored to none ({current_elevator(n)})")


def case_s_stop_while_held(d, loops, tmp):
    """(s) SIGTERM while a write is held: the others restored, exit within TimeoutStopSec."""
    a = loops.attach(0)
    b = loops.attach(1)
    for n in (a, b):
        bt.set_elevator(n, "none")
    start(d, tmp, f"{a},{b}", b, 120)       # b's write held for 2 minutes
    check(current_elevator(a) == "mq-deadline", f"(s) {a} applied ({current_elevator(a)})")
    check(d.read("devices", b, "applied", "elevator").startswith("timeout (still pending)"), f"(s) {b} held")
    pid = d.pid
    t = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    try:
        d.proc.wait(30)
    except Exception:
        pass
    took = time.monotonic() - t
    exited = d.proc.poll() is not None
    check(exited and took < 30, f"(s) exited {took:.1f} s after SIGTERM (TimeoutStopSec=30)")
    check(not exited or d.proc.returncode == 0, f"(s) exit status {d.proc.returncode}")
    check(current_elevator(a) == "none", f"(s) {a} restored ({current_elevator(a)})")
    log = read_text(d.log)
    check("did not return in time" in log or "has not returned after" in log, "(s) the log says which write did not return")
    orig = os.path.join(tmp, "state", "originals")
    kept = {f: read_text(os.path.join(orig, f)) for f in os.listdir(orig)} if os.path.isdir(orig) else {}
    ident = "loop:" + loops.backing[1].replace("/", "%2f")
    other = "loop:" + loops.backing[0].replace("/", "%2f")
    check("elevator=none" in kept.get(ident, ""), f"(s) the held disk's original stays recorded for the next start: {kept}")
    check("elevator=" not in kept.get(other, ""), f"(s) the restored disk's original is forgotten: {kept.get(other)!r}")
    if not exited:
        os.kill(pid, signal.SIGKILL)
    d.stop()


def case_w_removed_while_held(d, loops, tmp):
    """(w) a disk removed while its write is held: a policy write waiting for it is answered at once."""
    a = loops.attach(0)
    bt.set_elevator(a, "none")
    start(d, tmp, a, a, 12, "")     # nothing to write at start (empty config: none is kept)
    result = {}

    def writer():
        t = time.monotonic()
        result["rc"] = write_file(d.path("devices", a, "policy", "elevator"), b"mq-deadline\n")
        result["t"] = time.monotonic()
    th = threading.Thread(target=writer)
    th.start()
    ok, _ = wait_for(lambda: d.read("devices", a, "applied", "elevator").startswith("pending"), 3.0, 0.02)
    check(ok, f"(w) {a}: the scheduler write is held ({d.read('devices', a, 'applied', 'elevator')!r})")
    bt.loop_detach(a)
    loops.attached.discard(a)
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    try:
        fcntl.ioctl(ctl, bt.LOOP_CTL_REMOVE, int(a[4:]))    # a "remove" uevent
        t_removed = time.monotonic()
        loops._created.remove(int(a[4:]))
    finally:
        os.close(ctl)
    th.join(DEADLINE + 10)
    took = result.get("t", time.monotonic()) - t_removed
    check(not th.is_alive() and took < DEADLINE / 2, f"(w) the waiting policy write was answered {took:.2f} s after the removal "
          f"(before the {DEADLINE:.0f} s deadline): {result}")
    ok, _ = wait_for(lambda: not os.path.exists(d.path("devices", a)), 3.0, 0.05)
    check(ok, f"(w) devices/{a} is gone")
    v = d.read("version")
    check(v.startswith("blkmqd "), "(w) the tree answers")
    rc = d.stop(deadline=30)
    check(rc == 0, f"(w) SIGTERM: exit status {rc}")


def main():
    exe = bt.exe_or_exit()
    for case in (case_pqr_held_write, case_s_stop_while_held, case_w_removed_while_held):
        print(f"== {case.__doc__.strip().splitlines()[0]}")
        tmp = tempfile.mkdtemp(prefix="blkmqd-live-")
        mnt = os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        d = bt.Daemon(exe, mnt, tmp, announce=True)
        loops = bt.PrivateLoops(tmp, 3, size=32 << 20)
        try:
            case(d, loops, tmp)
        except Exception as e:
            check(False, f"{case.__name__} raised {type(e).__name__}: {e}")
        finally:
            if d.alive():
                d.stop(signal.SIGKILL)
            bt.cleanup_mount(mnt)
            for n in loops.names:
                try:
                    if os.path.exists(f"/sys/block/{n}/queue/scheduler") and current_elevator(n) not in (None, "none"):
                        bt.set_elevator(n, "none")
                except OSError:
                    pass
            loops.cleanup()
            if bt.failures and d.n:
                print("   last daemon log:\n" + "".join("      " + line + "\n" for line in d.tail().splitlines()))
            shutil.rmtree(tmp, ignore_errors=True)
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
