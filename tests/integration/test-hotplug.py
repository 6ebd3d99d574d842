#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-hotplug.py BLKMQD

Issue 13 item 17 on a real kernel: the built daemon on a private loop device (loop700 and up,
tests/pylib PrivateLoops) with mq-deadline set, so blkmqd switches it to none and records
mq-deadline as the original; --devices names only that loop.

  (q1) 20 "change" uevents written to /sys/block/<loop>/uevent in a row -> the first acted
       upon at once, the other 19 merged into one trailing action ("19 uevent(s) merged ...
       -> one trailing change"): two evaluations for the burst, not 20
  (q2) 10 plug cycles (losetup -d, losetup) as fast as they go -> fewer evaluations than
       cycles (each cycle is 2 uevents), the end state right (devices/<loop> shown,
       applied/elevator ok: none), no "Original ... recorded by an earlier run" line: the
       originals were recorded by this run
  (q5) (right after q0) policy/elevator kyber, then auto: both written, and the originals file
       (mq-deadline stored at q0) is not saved before the write (the save and its fsync()s ran
       before every kernel write); what blkmqd wrote (written.elevator=) is saved once, after
       the write returned (the daemon's debug log, in order)
  (q3) 10 hot-remove/re-add cycles (losetup -d, LOOP_CTL_REMOVE, LOOP_CTL_ADD, losetup): no
       "Failed to set/restore ... No such file or directory / No such device" warning (a write
       that loses the race says "Device vanished" once, or "Queue not registered" when it
       lands after del_gendisk() began and before sysfs shows it: 3 in 260 writes forced
       into a removal on 6.18), the daemon alive, the end state right, and SIGTERM restores
       mq-deadline

  (q6) a write decided for a disk, held (BLKMQD_TEST_HOLD_WRITE, a second daemon) while the
       loop device is removed and added again under its name with another backing file (another
       identity, mq-deadline set): the held write is not done on the new disk (it lands there
       on c0691ad: the new disk then reads "kept: none", and SIGTERM leaves none on it); the
       new disk is evaluated afresh, "ok: none", and SIGTERM puts its mq-deadline back

The deterministic checks of the vanished rule (a write failing with ENOENT/ENODEV while the
disk's directory goes, or comes back as a new one) are in tests/fixture/test-fixture-hooks.c
(vanish-*); (q3) is the same race on a real kernel, with whatever timing it has.
Root, /dev/fuse, /dev/loop-control, losetup (the test is skipped otherwise).
"""

import fcntl
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, finish, wait_for  # noqa: E402


def lines(d, pattern):
    with open(d.log, errors="replace") as f:
        return [x for x in f.read().splitlines() if re.search(pattern, x)]


def merged_settled(d, name, since):
    """Every uevent logged as merged since line `since` of the log has had its trailing action
    (the trailing lines say how many they took)."""
    with open(d.log, errors="replace") as f:
        log = f.read().splitlines()[since:]
    merged = sum(1 for x in log if re.search(rf"{name}: uevent \w+ \(\w+ source\), merged into", x))
    taken = sum(int(m.group(1)) for x in log
                for m in [re.search(rf"{name}: (\d+) uevent\(s\) merged in .* -> one trailing ", x)] if m)
    return merged == taken


def log_since(d, n0):
    with open(d.log, errors="replace") as f:
        return f.read().splitlines()[n0:]


def log_len(d):
    with open(d.log, errors="replace") as f:
        return len(f.read().splitlines())


def attach(loops):
    """losetup, retried while the kernel still holds the device after the detach (EBUSY)."""
    def once():
        try:
            loops.attach(0)
            return True
        except RuntimeError:
            return False
    ok, _ = wait_for(once, 5.0, 0.01)
    if not ok:
        raise RuntimeError(f"losetup {loops.names[0]} kept failing")


def shown_ok(d, name):
    try:
        return d.read("devices", name, "applied", "elevator").startswith("ok: none")
    except OSError:
        return False


def main():
    exe = bt.exe_or_exit(files=("/dev/loop-control",))
    tmp = tempfile.mkdtemp(prefix="blkmqd-hotplug-")
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    loops = bt.PrivateLoops(tmp, 3)
    name = loops.names[0]
    d = bt.Daemon(exe, mnt, tmp, start_deadline=20.0, stop_deadline=30.0, unmount_on_stop=True)
    try:
        loops.attach(0)
        bt.set_elevator(name, "mq-deadline")
        d.start("--devices", loops.globs())
        check(wait_for(lambda: shown_ok(d, name), 10.0)[0], f"(q0) {name}: applied/elevator ok: none")

        # (q5) a write whose originals are stored already does not save them before it: that
        # save (write, fsync, rename, fsync of the directory) ran before every kernel write,
        # between a uevent and its write (issue 12 item 4). What blkmqd wrote is stored with the
        # originals (written.elevator=): saved once, after the write returned (the log's order:
        # both are done on the disk's lane, one after the other)
        for value, want in (("kyber", "kyber"), ("auto", "none")):
            n0 = log_len(d)
            check(d.write(value, "devices", name, "policy", "elevator") == 0, f"(q5) policy/elevator {value}")
            check(bt.current_elevator(name) == want, f"(q5) {name} switched to {want}: {bt.current_elevator(name)}")
            ok, _ = wait_for(lambda: any(f"{name}: Original values saved in the state directory" in x for x in log_since(d, n0)),
                             5.0, 0.05)
            log = log_since(d, n0)
            order = [("write" if f'Write of "{want}" to ' in x else "save") for x in log
                     if f'Write of "{want}" to ' in x or f"{name}: Original values saved in the state directory" in x]
            check(ok and order == ["write", "save"], f"(q5) originals unchanged (mq-deadline): saved once, after the write of {want}: {order}")
            with open(os.path.join(d.state, "originals", [n for n in os.listdir(os.path.join(d.state, "originals"))
                                                          if not n.startswith(".")][0])) as f:
                text = f.read()
            check(f"written.elevator={want}\n" in text and "elevator=mq-deadline\n" in text,
                  f"(q5) the file holds the original and what blkmqd wrote: {text!r}")

        # (q1) a burst of uevents: the first at once, the rest one trailing action
        before = len(lines(d, rf"{name}: Evaluating"))
        now = len(lines(d, rf"{name}: uevent change \(\w+ source\)$"))
        with open(f"/sys/block/{name}/uevent", "w") as f:
            for _ in range(20):
                f.write("change\n")
                f.flush()
        ok, _ = wait_for(lambda: lines(d, rf"{name}: \d+ uevent\(s\) merged in .* -> one trailing "), 5.0)
        merged = lines(d, rf"{name}: \d+ uevent\(s\) merged in .* -> one trailing ")
        check(ok and len(merged) == 1 and re.search(r": 19 uevent\(s\)", merged[0]) is not None,
              f"(q1) 20 uevents -> 19 merged into one trailing action: {merged}")
        check(len(lines(d, rf"{name}: uevent change \(\w+ source\)$")) - now == 1,
              "(q1) the first uevent of the burst acted upon at once")
        ok, _ = wait_for(lambda: len(lines(d, rf"{name}: Evaluating")) - before >= 2, 5.0)
        check(len(lines(d, rf"{name}: Evaluating")) - before == 2,
              f"(q1) two evaluations for the burst (at once + trailing): {len(lines(d, rf'{name}: Evaluating')) - before}")

        # (q2) plug cycles
        before = len(lines(d, rf"{name}: Evaluating"))
        acted = len(lines(d, rf"{name}: \d+ uevent\(s\) merged in "))
        mark = log_len(d)
        for _ in range(10):
            loops.detach(0)
            attach(loops)
        check(wait_for(lambda: shown_ok(d, name), 10.0)[0], f"(q2) after 10 plug cycles {name} is back, ok: none")
        check(wait_for(lambda: merged_settled(d, name, mark), 5.0)[0],
              "(q2) every merged uevent of the plug cycles got its trailing action")
        print("   (q2) " + "; ".join(x.split(": ", 1)[1] for x in lines(d, rf"{name}: \d+ uevent\(s\) merged in ")[acted:]))
        n = len(lines(d, rf"{name}: Evaluating")) - before
        check(n < 10, f"(q2) 10 plug cycles (20 uevents) -> {n} evaluation(s), fewer than the cycles")
        again = lines(d, r"recorded by an earlier run")
        check(not again, f"(q2) no 'recorded by an earlier run' line in a run that recorded them itself: {again[:3]}")

        # (q3) hot-remove and re-add racing blkmqd's writes
        nr = int(name[4:])
        acted = len(lines(d, rf"{name}: \d+ uevent\(s\) merged in "))
        mark = log_len(d)
        for _ in range(10):
            loops.detach(0)
            ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
            try:
                ok, _ = wait_for(lambda: _remove(ctl, nr), 5.0, 0.01)
                fcntl.ioctl(ctl, bt.LOOP_CTL_ADD, nr)
            finally:
                os.close(ctl)
            wait_for(lambda: os.path.exists(f"/dev/{name}"), 5.0)
            # on the unbound device, before the attach: blkmqd looks at a disk once it has a
            # medium, and may do so at once (leading edge); set after the attach, the
            # elevator could come after blkmqd's look and be someone else's change
            bt.set_elevator(name, "mq-deadline")
            attach(loops)
        check(wait_for(lambda: shown_ok(d, name), 10.0)[0], f"(q3) after 10 remove/add cycles {name} is back, ok: none")
        check(wait_for(lambda: merged_settled(d, name, mark), 5.0)[0],
              "(q3) every merged uevent of the cycles got its trailing action")
        print("   (q3) " + "; ".join(x.split(": ", 1)[1] for x in lines(d, rf"{name}: \d+ uevent\(s\) merged in ")[acted:]))
        again = lines(d, r"recorded by an earlier run")
        check(not again, f"(q3) no 'recorded by an earlier run' line after re-adds either: {again[:3]}")
        bad = lines(d, r"Failed to (set|restore).*(No such file|No such device|ENOENT|ENODEV)")
        check(not bad, f"(q3) no generic write failure for a vanished disk: {bad[:3]}")
        check(d.alive(), "(q3) daemon alive")
        print(f"   (q3) {len(lines(d, name + ': Device vanished'))} 'Device vanished' line(s), "
              f"{len(lines(d, name + ': Queue not registered'))} 'Queue not registered' line(s), "
              f"{len(lines(d, name + ': Disk removed'))} removal(s)")

        # (q4) a disk moving to another name inside the debounce window is no identity collision
        a, b = loops.names[1], loops.names[2]
        loops.attach(1)
        check(wait_for(lambda: os.path.isdir(d.path("devices", a)), 5.0)[0], f"(q4) {a} shown")
        check(d.write("2", "devices", a, "policy", "rq_affinity") == 0, f"(q4) policy/rq_affinity 2 on {a}")
        with open(f"/sys/block/{a}/uevent", "w") as f:
            f.write("change\n")                               # a's window open: its detach is merged
        loops.detach(1)
        bt.sh("losetup", f"/dev/{b}", loops.backing[1])       # the same file: the same identity
        loops.attached.add(b)
        with open(f"/sys/block/{a}/uevent", "w") as f:
            f.write("change\n")                               # a's window now ends after b's
        ok, _ = wait_for(lambda: bt.read_text(f"/sys/block/{b}/queue/rq_affinity").strip() == "2", 5.0)
        check(ok, f"(q4) {b} (same backing file) gets the stored override: rq_affinity "
                  f"{bt.read_text(f'/sys/block/{b}/queue/rq_affinity').strip()}")
        shared = lines(d, r"Identity loop:.* is also")
        check(not shared, f"(q4) no collision with {a}, whose detach was still debounced: {shared[:2]}")
    except RuntimeError as e:
        check(False, str(e))
    finally:
        stop_and_check(d, name, loops, tmp, "", "stop put back mq-deadline")
    case_q6(exe)
    return finish()


def case_q6(exe):
    """(q6) a held write of a removed disk is not done on the disk added again under its name."""
    tmp = tempfile.mkdtemp(prefix="blkmqd-hotplug-q6-")
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    loops = bt.PrivateLoops(tmp, 1)
    name = loops.names[0]
    nr = int(name[4:])
    other = bt.make_backing(os.path.join(tmp, "other-backing"), 1 << 20)
    d = bt.Daemon(exe, mnt, tmp, start_deadline=20.0, stop_deadline=30.0, unmount_on_stop=True)
    hold = "BLKMQD_TEST_HOLD_WRITE"
    saved = os.environ.get(hold)
    os.environ[hold] = f"sysfs:block/{name}/queue/scheduler=3"
    try:
        # attached after the start: a write at run time (the start waits for coldplug's writes)
        bt.set_elevator(name, "mq-deadline")
        d.start("--devices", name)
        loops.attach(0)
        ok, _ = wait_for(lambda: lines(d, rf'{name}: Writing "none"'), 10.0)
        check(ok, f"(q6) the write of none to {name} handed over (held 3 s)")
        # the same name, a new disk: detach, remove, add, mq-deadline, another file
        loops.detach(0)
        ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            ok, _ = wait_for(lambda: _remove(ctl, nr), 5.0, 0.01)
            check(ok, f"(q6) {name} removed")
            fcntl.ioctl(ctl, bt.LOOP_CTL_ADD, nr)
        finally:
            os.close(ctl)
        wait_for(lambda: os.path.exists(f"/dev/{name}"), 5.0)
        bt.set_elevator(name, "mq-deadline")
        ok, _ = wait_for(lambda: _attach_file(name, other), 5.0, 0.01)
        check(ok, f"(q6) {name} attached to another file")
        loops.attached.add(name)
        ok, _ = wait_for(lambda: shown_ok(d, name), 30.0)
        check(ok, f"(q6) the new {name} evaluated afresh: {_applied(d, name)}")
        check(not lines(d, r"Failed to (set|restore)"), f"(q6) no write failure: {lines(d, r'Failed to (set|restore)')[:3]}")
    except RuntimeError as e:
        check(False, f"(q6) {e}")
    finally:
        if saved is None:
            os.environ.pop(hold, None)
        else:
            os.environ[hold] = saved
        stop_and_check(d, name, loops, tmp, "(q6) ", "stop put the new disk's mq-deadline back")


def stop_and_check(d, name, loops, tmp, case, what):
    """Stop d (exit status 0), check name runs mq-deadline again (what says why), show the log's
    tail after a failure, detach the loops and remove tmp. case: the check prefix ("(q6) ")."""
    rc = d.stop()
    check(rc == 0, f"{case}SIGTERM exit status 0 (got {rc})")
    try:
        check(bt.current_elevator(name) == "mq-deadline", f"{case}{what}: {bt.current_elevator(name)}")
    except OSError as e:
        check(False, f"{case}{name}: {e}")
    if bt.failures:
        print(d.tail(60))
    loops.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)


def _attach_file(name, path):
    try:
        bt.sh("losetup", f"/dev/{name}", path)
        return True
    except RuntimeError:
        return False


def _applied(d, name):
    try:
        return d.read("devices", name, "applied", "elevator").strip()
    except OSError as e:
        return str(e)


def _remove(ctl, nr):
    try:
        fcntl.ioctl(ctl, bt.LOOP_CTL_REMOVE, nr)
        return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
