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
(i2) policy/iosched/bfq/slice_idle 0 is written to the kernel, plan/ and applied/ say so;
     bad values (out of the kernel's range, not decimal, a tunable this elevator lacks) are
     refused with ERANGE/EINVAL, change nothing and log one line; "auto" puts 8 back at once;
     the override persists across a restart.
(i3) someone switches the elevator away and back (no verify in between: the tunable reads
     the elevator's default again): the periodic verify writes it again; switched away, it
     waits ("waits: the disk runs kyber"), and is written when bfq runs again; a value someone
     else writes on the same elevator is theirs (Reassert=no); stop puts 8 back.
(i4) blkmqd switches the elevator (config: stacked -> mq-deadline, IoSched.mq-deadline.fifo_batch=32)
     away from bfq whose slice_idle an admin set to 0: fifo_batch is written after the switch,
     and stop brings back bfq, then slice_idle 0 (the switch had reset it).
(i5) nr_requests blkmqd wrote, reset by someone's elevator switch away and back: written again
     by the periodic verify (one log line for the reset and the write).
(i6) policy/nr_requests 64, then policy/elevator bfq (mq-deadline's async_depth had followed the
     64), then blkmqctl reset: the reset on the switch is one log line; set prints an elevator
     tunable's applied state; reset writes only the files not "auto" already, nr_requests 64 is
     not written again before 256 comes back, async_depth (never blkmqd's) is not "put back";
     applied/iosched under bfq shows bfq's lines and mq-deadline's only as values to put back.
(i7) policy/iosched/mq-deadline/async_depth 32 and policy/nr_requests 64: nr_requests is written
     before the tunables (the kernel derives async_depth from it), so 32 stays, and is written
     again when nr_requests goes back; stop puts both back.
(i5r) (i5) with a restart (kill -9) after the write: the new daemon finds 64 in place and
     takes the elevator instance it finds as the one 64 was written under, so someone's switch
     away and back is a reset it writes 64 again over, as without the restart (it was "changed
     externally" and left at the elevator's default).
(i8) policy/nr_requests 64 written under elevator none (no queue/iosched), then policy/elevator
     mq-deadline, kyber, none: each switch resets nr_requests and blkmqd writes 64 again; never
     "changed externally".
(i9) policy/elevator mq-deadline (blkmqd's switch from none), then policy/nr_requests 64, then
     policy/nr_requests auto while the switch stands: the kernel's value for mq-deadline comes
     back (it stayed at 64 before: a first-time user found it), one log line says so; then
     policy/elevator auto: none and its nr_requests come back.
(i11) (i9) with a restart (kill -9) between the override and its "auto": the value before the
     override is stored with the originals (nr_requests.before_override=), so after the restart
     "auto" puts it back with the same applied/ state, log line and explain as without one (it
     stayed at 64, "64 stays: ...", before); an originals file without the key (an older blkmqd)
     leaves it unknown, as before: 64 stays; either way elevator auto brings none and its value back.
(im) /metrics' blkmqd_applied_iosched follows applied/iosched: no line before any override;
     policy/iosched/bfq/slice_idle 0 written: state="ok"; someone else writes 4 (a read of
     applied/iosched verifies): state="changed externally"; a kyber override while bfq runs:
     state="unmanaged" (it waits); promtool check metrics accepts the scrape.
(i10) policy/elevator bfq (blkmqd's switch from none) and policy/nr_requests 64, then someone
     switches to kyber (noticed by the verify: kyber is theirs): blkmqd writes its 64 again over
     the reset, writes an admin's kyber tunable override now that kyber runs, explain says kyber
     is theirs and plans no switch back; stop leaves kyber and puts back kyber's own
     nr_requests (not none's 128: a first-time user saw it written under kyber) and the tunable.
(i12) as (i10), then more verifies: the nr_requests recorded under their kyber stays blkmqd's to
     put back (a first-time user saw a later look drop it, and stop leave blkmqd's value); they
     switch again, to none: blkmqd writes 64 again and records none's value, which stop puts
     back (not kyber's, which none refuses).
(i13) policy/iosched/bfq/slice_idle 0, then slice_idle_us 0 (one kernel variable; the latter
     wins, rule iosched-conflict): slice_idle is not put back to 8 over it (a first-time user
     saw the variable go back to 8 ms and blkmqd then report its own put-back as "changed
     externally"); slice_idle_us carries the variable's original, and stop puts 8 ms back.
"""

import errno
import re
import os
import shutil
import signal
import subprocess
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


start = bt.start_with_config


def verify(d, name):
    """A read of applied/ is a verify: blkmqd looks at the kernel again."""
    return d.read("devices", name, "applied", "elevator")


def case_i1_view(d, loops, tmp):
    """(i1) iosched/ shows the running elevator's tunables as the kernel has them"""
    name = loops.attach("i1", elevator="bfq")
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


def policy_write(d, name, elev, tunable, value):
    return d.write(value, "devices", name, "policy", "iosched", elev, tunable)


def applied_iosched(d, name):
    return d.read("devices", name, "applied", "iosched")


def log_lines(d, needle, start=0):
    with open(d.log, errors="replace") as f:
        lines = f.readlines()[start:]
    return [l for l in lines if needle in l and not l.startswith("<7>")]


def log_len(d):
    with open(d.log, errors="replace") as f:
        return len(f.readlines())


def tunable(name, t):
    return read_text(f"/sys/block/{name}/queue/iosched/{t}").strip()


VERIFY = "[Manager]\nVerifySec=1\n" + KEEP


def case_i2_policy(d, loops, tmp):
    """(i2) policy/iosched/<elevator>/<tunable>: written, validated, auto puts back, persisted"""
    name = loops.attach("i2", elevator="bfq")
    default = tunable(name, "slice_idle")
    start(d, tmp, name, KEEP)
    try:
        check(d.read("devices", name, "policy", "iosched", "bfq", "slice_idle") == "auto\n", "(i2) policy file reads auto")
        check(d.read("devices", name, "plan", "iosched") == "keep\n", "(i2) plan/iosched keep")
        check(policy_write(d, name, "bfq", "slice_idle", "0") == 0, "(i2) policy/iosched/bfq/slice_idle 0 accepted")
        check(tunable(name, "slice_idle") == "0", f"(i2) the kernel has slice_idle 0 ({tunable(name, 'slice_idle')})")
        check(d.read("devices", name, "plan", "iosched") == "bfq.slice_idle 0\n", "(i2) plan/iosched names it")
        a = applied_iosched(d, name)
        check(a == f"bfq.slice_idle ok: 0 (was {default})\n", f"(i2) applied/iosched: {a!r}")
        check(d.read("devices", name, "iosched", "slice_idle") == "0\n", "(i2) iosched/slice_idle reads 0")
        check("bfq.slice_idle=0 (rule iosched)" in d.read("devices", name, "explain"), "(i2) explain has the decision")

        low = tunable(name, "low_latency")
        for tun, value, err in (("low_latency", "2", errno.ERANGE), ("low_latency", "x", errno.EINVAL),
                                ("slice_idle", "0x1", errno.EINVAL), ("slice_idle", "-1", errno.ERANGE),
                                ("slice_idle", "2147483648", errno.ERANGE), ("fifo_expire_sync", "0", errno.ERANGE)):
            n0 = log_len(d)
            e = policy_write(d, name, "bfq", tun, value)
            check(e == err, f"(i2) {tun} {value!r} refused with {errno.errorcode[err]} ({errno.errorcode.get(e, e)})")
            lines = log_lines(d, f"policy/iosched/bfq/{tun}", n0)
            check(len(lines) == 1, f"(i2) ... one log line: {lines}")
        check(tunable(name, "low_latency") == low and tunable(name, "slice_idle") == "0", "(i2) nothing changed in the kernel")
        check(d.read("devices", name, "policy", "iosched", "bfq", "low_latency") == "auto\n", "(i2) nor in policy/")

        # the running bfq has no such file: mq-deadline's fifo_batch is fine (waits), a write under none too
        check(policy_write(d, name, "mq-deadline", "fifo_batch", "8") == 0, "(i2) mq-deadline/fifo_batch accepted (waits for mq-deadline)")
        check("waits" in d.read("devices", name, "explain"), "(i2) explain says it waits")
        check(policy_write(d, name, "mq-deadline", "fifo_batch", "auto") == 0, "(i2) back to auto")

        # persisted: a restart brings it back
        d.stop()
        check(tunable(name, "slice_idle") == default, f"(i2) stop put slice_idle back to {default}")
        start(d, tmp, name, KEEP)
        ok, _ = wait_for(lambda: tunable(name, "slice_idle") == "0", 5.0)
        check(ok, "(i2) the stored override is applied again after a restart")

        check(policy_write(d, name, "bfq", "slice_idle", "auto") == 0, "(i2) auto accepted")
        check(tunable(name, "slice_idle") == default, f"(i2) auto put {default} back at once ({tunable(name, 'slice_idle')})")
        a = applied_iosched(d, name)
        check(a.startswith("bfq.slice_idle unmanaged: put back to"), f"(i2) applied/iosched says it was put back: {a!r}")
    finally:
        d.stop()


def case_i3_reapply(d, loops, tmp):
    """(i3) a tunable reset by someone's elevator switch away and back is written again; restored at stop"""
    name = loops.attach("i3", elevator="bfq")
    default = tunable(name, "slice_idle")
    start(d, tmp, name, VERIFY)
    try:
        check(policy_write(d, name, "bfq", "slice_idle", "0") == 0, "(i3) slice_idle 0")
        check(tunable(name, "slice_idle") == "0", "(i3) the kernel has 0")
        n0 = log_len(d)
        # away and back at once: the verify sees bfq, and slice_idle at bfq's default
        set_elevator(name, "kyber")
        set_elevator(name, "bfq")
        # (the switch resets slice_idle to bfq's default; the verify may already have written 0
        # again by the time this reads it, so the proof is its log line: "8 -> 0: written again,
        # an elevator switch ... reset it", or, when a verify ran while kyber was in, "8 -> 0"
        # after "waits")
        wrote = lambda: [l for l in log_lines(d, "bfq.slice_idle", n0) if re.search(r"bfq\.slice_idle \d+ -> 0", l)]  # noqa: E731
        ok, t = wait_for(lambda: tunable(name, "slice_idle") == "0" and wrote(), 10.0, 0.05)
        check(ok, f"(i3) the periodic verify wrote slice_idle 0 again after the switch reset it ({t:.1f} s): {wrote()}")
        lines = log_lines(d, "bfq.slice_idle", n0)
        check(not any("changed externally" in l for l in lines), f"(i3) not reported as someone else's change: {lines}")

        # away for longer: it waits, and comes back with bfq
        set_elevator(name, "kyber")
        ok, _ = wait_for(lambda: "waits: the disk runs kyber" in applied_iosched(d, name), 10.0, 0.05)
        check(ok, f"(i3) applied/iosched: waits for bfq ({applied_iosched(d, name)!r})")
        set_elevator(name, "bfq")
        ok, _ = wait_for(lambda: tunable(name, "slice_idle") == "0", 10.0, 0.05)
        check(ok, "(i3) written when bfq runs again")

        # someone else writes it on the same bfq: theirs
        n0 = log_len(d)
        set_tunable(name, "slice_idle", "3")
        ok, _ = wait_for(lambda: "changed externally to 3" in applied_iosched(d, name), 10.0, 0.05)
        check(ok, f"(i3) someone else's 3 is reported ({applied_iosched(d, name)!r})")
        check(tunable(name, "slice_idle") == "3", "(i3) ... and left (Reassert=no)")
        check(len(log_lines(d, "bfq.slice_idle changed externally", n0)) == 1, "(i3) ... with one log line")
        set_tunable(name, "slice_idle", "0")
        ok, _ = wait_for(lambda: "bfq.slice_idle ok: 0" in applied_iosched(d, name) or "kept: 0" in applied_iosched(d, name), 10.0, 0.05)
        check(ok, f"(i3) 0 again is blkmqd's value again ({applied_iosched(d, name)!r})")
    finally:
        d.stop()
    v = tunable(name, "slice_idle")
    check(v in (default, "0"), f"(i3) after stop slice_idle is {v}")


def case_i4_switch_order(d, loops, tmp):
    """(i4) blkmqd's elevator switch: tunables written after it; stop restores the elevator, then its tunables"""
    name = loops.attach("i4", elevator="bfq")
    set_tunable(name, "slice_idle", "0")          # an admin's value, which a switch resets
    start(d, tmp, name, "[Class:stacked]\nElevator=mq-deadline\nIoSched.mq-deadline.fifo_batch=32\n")
    try:
        ok, _ = wait_for(lambda: current_elevator(name) == "mq-deadline" and tunable(name, "fifo_batch") == "32", 5.0)
        check(ok, f"(i4) blkmqd switched to mq-deadline and wrote fifo_batch 32 after it ({current_elevator(name)}, "
                  f"{kernel_iosched(name).get('fifo_batch')})")
        a = applied_iosched(d, name)
        check("mq-deadline.fifo_batch ok: 32 (was 16)" in a, f"(i4) applied/iosched: {a!r}")
        check("IoSched.mq-deadline.fifo_batch=32 -> mq-deadline.fifo_batch=32" in d.read("devices", name, "explain"),
              "(i4) explain names the config key")
    finally:
        d.stop()
    check(current_elevator(name) == "bfq", f"(i4) stop brought bfq back ({current_elevator(name)})")
    check(tunable(name, "slice_idle") == "0", f"(i4) ... and the admin's slice_idle 0 the switch had reset ({tunable(name, 'slice_idle')})")


def nr_requests(name):
    """The loop's queue/nr_requests as the kernel has it now."""
    return read_text(f"/sys/block/{name}/queue/nr_requests").strip()


def case_i5_nr_requests(d, loops, tmp):
    """(i5) nr_requests blkmqd wrote and an elevator switch away and back reset: written again"""
    name = loops.attach("i5", elevator="bfq")
    start(d, tmp, name, VERIFY)
    try:
        check(d.write("64", "devices", name, "policy", "nr_requests") == 0, "(i5) policy/nr_requests 64")
        check(nr_requests(name) == "64", f"(i5) the kernel has 64 ({nr_requests(name)})")
        n0 = log_len(d)
        set_elevator(name, "kyber")
        set_elevator(name, "bfq")
        # the switch resets nr_requests; the verify writes 64 again and says why (its log line is
        # the proof: by the time this reads nr_requests it may be 64 again already)
        ok, t = wait_for(lambda: nr_requests(name) == "64" and log_lines(d, "-> 64: written again, an elevator switch since blkmqd wrote it reset it", n0),
                         10.0, 0.05)
        check(ok, f"(i5) the periodic verify wrote 64 again after the reset, and logged why ({t:.1f} s)")
        check("changed externally" not in d.read("devices", name, "applied", "nr_requests"), "(i5) not someone else's change")
    finally:
        d.stop()


def case_i5r_nr_requests_after_restart(d, loops, tmp):
    """(i5r) (i5) across a kill -9 and a restart: the reset is still a reset, written again"""
    name = loops.attach("i5r", elevator="bfq")
    start(d, tmp, name, VERIFY)
    try:
        check(d.write("64", "devices", name, "policy", "nr_requests") == 0 and nr_requests(name) == "64",
              f"(i5r) policy/nr_requests 64 ({nr_requests(name)})")
    finally:
        rc = d.stop(signal.SIGKILL)
    check(rc == -signal.SIGKILL and nr_requests(name) == "64", f"(i5r) killed with 64 in place ({nr_requests(name)})")
    start(d, tmp, name, VERIFY)
    try:
        ok, _ = wait_for(lambda: d.read("devices", name, "applied", "nr_requests").startswith("ok: 64"), 5.0)
        check(ok, f"(i5r) after the restart: {d.read('devices', name, 'applied', 'nr_requests').strip()!r}")
        n0 = log_len(d)
        set_elevator(name, "kyber")
        set_elevator(name, "bfq")
        ok, t = wait_for(lambda: nr_requests(name) == "64" and log_lines(d, "-> 64: written again, an elevator switch since blkmqd wrote it reset it", n0),
                         10.0, 0.05)
        check(ok, f"(i5r) the periodic verify wrote 64 again after the reset, and logged why ({t:.1f} s; kernel "
              f"{nr_requests(name)}, applied/nr_requests {d.read('devices', name, 'applied', 'nr_requests').strip()!r})")
        check(not log_lines(d, "changed externally", n0), f"(i5r) not someone else's change: {log_lines(d, 'changed externally', n0)}")
    finally:
        d.stop()


def case_i8_from_none(d, loops, tmp):
    """(i8) policy/nr_requests written under elevator none, then a switch to mq-deadline and to
    kyber (none has no queue/iosched: the switch still resets nr_requests): written again, never
    "changed externally"; a switch back to none resets it too"""
    name = loops.attach("i8", elevator="none")
    start(d, tmp, name, KEEP)
    try:
        check(d.write("64", "devices", name, "policy", "nr_requests") == 0 and nr_requests(name) == "64",
              f"(i8) policy/nr_requests 64 under none ({nr_requests(name)})")
        for elevator in ("mq-deadline", "kyber", "none"):
            rc = d.write(elevator, "devices", name, "policy", "elevator")
            check(rc == 0 and current_elevator(name) == elevator, f"(i8) policy/elevator {elevator} ({rc})")
            ok, _ = wait_for(lambda: nr_requests(name) == "64", 5.0)
            a = d.read("devices", name, "applied", "nr_requests")
            check(ok and a.startswith("ok: 64"), f"(i8) after the switch to {elevator}: nr_requests 64 again "
                  f"(kernel {nr_requests(name)}), applied/nr_requests {a.strip()!r}")
    finally:
        d.stop()


def case_i9_override_back(d, loops, tmp):
    """(i9) nr_requests override taken back while blkmqd's elevator switch stands: the elevator's value comes back"""
    name = loops.attach("i9", elevator="none")
    nr0 = nr_requests(name)
    start(d, tmp, name, KEEP)
    try:
        rc = d.write("mq-deadline", "devices", name, "policy", "elevator")
        check(rc == 0 and current_elevator(name) == "mq-deadline", f"(i9) policy/elevator mq-deadline ({rc})")
        nr_switch = nr_requests(name)           # what the kernel gave mq-deadline at the switch
        rc = d.write("64", "devices", name, "policy", "nr_requests")
        check(rc == 0 and nr_requests(name) == "64", f"(i9) policy/nr_requests 64 ({rc}, {nr_requests(name)})")
        n0 = log_len(d)
        rc = d.write("auto", "devices", name, "policy", "nr_requests")
        ok, _ = wait_for(lambda: nr_requests(name) == nr_switch, 5.0)
        a = d.read("devices", name, "applied", "nr_requests").strip()
        check(rc == 0 and ok and a.startswith(f"unmanaged: put back to {nr_switch}, mq-deadline's value before the override"),
              f"(i9) auto: {nr_switch} is back (kernel {nr_requests(name)}), applied/nr_requests {a!r}")
        said = log_lines(d, f"nr_requests 64 -> {nr_switch}: put back", n0)
        check(len(said) == 1, f"(i9) one line says so: {said}")
        rc = d.write("auto", "devices", name, "policy", "elevator")
        ok, _ = wait_for(lambda: current_elevator(name) == "none" and nr_requests(name) == nr0, 5.0)
        check(rc == 0 and ok, f"(i9) elevator auto: none and nr_requests {nr0} back ({current_elevator(name)}, {nr_requests(name)})")
    finally:
        d.stop()


def originals_text(d):
    """{file: text} of the daemon's originals/ files."""
    odir = os.path.join(d.state, "originals")
    return {f: read_text(os.path.join(odir, f)) for f in os.listdir(odir)} if os.path.isdir(odir) else {}


def case_i11_override_back_after_restart(d, loops, tmp):
    """(i11) (i9) across a kill -9 and a restart, with the stored value and without (older state file)"""
    for stored in (True, False):
        tag = "i11" if stored else "i11-old"
        name = loops.attach(tag, elevator="none")
        nr0 = nr_requests(name)
        start(d, tmp, name, KEEP)
        try:
            rc = d.write("mq-deadline", "devices", name, "policy", "elevator")
            check(rc == 0 and current_elevator(name) == "mq-deadline", f"({tag}) policy/elevator mq-deadline ({rc})")
            nr_switch = nr_requests(name)
            rc = d.write("64", "devices", name, "policy", "nr_requests")
            check(rc == 0 and nr_requests(name) == "64", f"({tag}) policy/nr_requests 64 ({rc}, {nr_requests(name)})")
            # saved in the disk's lane before the write, so on disk once the write returned
            mine = {f: t for f, t in originals_text(d).items() if "elevator=none\n" in t}
            check(len(mine) == 1 and all(f"nr_requests.before_override={nr_switch}\n" in t for t in mine.values()),
                  f"({tag}) the originals file stores nr_requests.before_override={nr_switch}: {mine}")
        finally:
            rc = d.stop(signal.SIGKILL)
        check(rc == -signal.SIGKILL and current_elevator(name) == "mq-deadline" and nr_requests(name) == "64",
              f"({tag}) killed with mq-deadline and 64 in place ({current_elevator(name)}, {nr_requests(name)})")
        if not stored:
            for f, t in mine.items():       # as an older blkmqd wrote it
                with open(os.path.join(d.state, "originals", f), "w") as fh:
                    fh.write("".join(l for l in t.splitlines(True) if not l.startswith("nr_requests.before_override=")))
        start(d, tmp, name, KEEP)
        try:
            ok, _ = wait_for(lambda: d.read("devices", name, "applied", "nr_requests").startswith("ok: 64"), 5.0)
            check(ok, f"({tag}) after the restart applied/nr_requests: {d.read('devices', name, 'applied', 'nr_requests').strip()!r}")
            n0 = log_len(d)
            rc = d.write("auto", "devices", name, "policy", "nr_requests")
            a = d.read("devices", name, "applied", "nr_requests").strip()
            ex = d.read("devices", name, "explain")
            if stored:
                ok, _ = wait_for(lambda: nr_requests(name) == nr_switch, 5.0)
                a = d.read("devices", name, "applied", "nr_requests").strip()
                check(rc == 0 and ok and a.startswith(f"unmanaged: put back to {nr_switch}, mq-deadline's value before the override"),
                      f"({tag}) auto after the restart: {nr_switch} is back (kernel {nr_requests(name)}), applied/nr_requests {a!r}")
                said = log_lines(d, f"nr_requests 64 -> {nr_switch}: put back", n0)
                check(len(said) == 1, f"({tag}) one line says so: {said}")
                ex = d.read("devices", name, "explain")
                check(f"nr_requests={nr_switch}: reset by the kernel when blkmqd switched the elevator none -> mq-deadline" in ex,
                      f"({tag}) explain: {ex!r}")
                ok, _ = wait_for(lambda: not any("nr_requests.before_override=" in t for t in originals_text(d).values()), 5.0)
                check(ok, f"({tag}) the stored value is gone once put back: {originals_text(d)}")
            else:
                check(rc == 0 and nr_requests(name) == "64" and a.startswith("unmanaged: 64 stays:"),
                      f"({tag}) an older state file: the value before the override is unknown, 64 stays ({nr_requests(name)}, {a!r})")
            rc = d.write("auto", "devices", name, "policy", "elevator")
            ok, _ = wait_for(lambda: current_elevator(name) == "none" and nr_requests(name) == nr0, 5.0)
            check(rc == 0 and ok, f"({tag}) elevator auto: none and nr_requests {nr0} back ({current_elevator(name)}, {nr_requests(name)})")
        finally:
            d.stop()


def case_i10_their_switch(d, loops, tmp):
    """(i10) someone else's switch over blkmqd's: stop puts back their elevator's nr_requests, not the old one's"""
    name = loops.attach("i10", elevator="none")
    start(d, tmp, name, VERIFY)
    try:
        rc = d.write("bfq", "devices", name, "policy", "elevator")
        check(rc == 0 and current_elevator(name) == "bfq", f"(i10) policy/elevator bfq ({rc})")
        rc = d.write("64", "devices", name, "policy", "nr_requests")
        check(rc == 0 and nr_requests(name) == "64", f"(i10) policy/nr_requests 64 ({rc}, {nr_requests(name)})")
        rc = policy_write(d, name, "kyber", "read_lat_nsec", "1000000")
        check(rc == 0 and "waits" in applied_iosched(d, name), f"(i10) policy/iosched/kyber/read_lat_nsec waits under bfq ({rc})")
        set_elevator(name, "kyber")
        theirs, lat = nr_requests(name), tunable(name, "read_lat_nsec")     # what the kernel gave kyber
        ok, _ = wait_for(lambda: "changed externally to kyber" in d.read("devices", name, "applied", "elevator"), 5.0)
        check(ok, "(i10) kyber noticed as someone else's")
        ok, _ = wait_for(lambda: nr_requests(name) == "64", 5.0)
        check(ok, f"(i10) blkmqd's 64 written again over their switch's reset to {theirs} ({nr_requests(name)})")
        # kyber runs, if not by blkmqd's hand: the admin's kyber override is written, explain says why
        ok, _ = wait_for(lambda: tunable(name, "read_lat_nsec") == "1000000", 5.0)
        check(ok, f"(i10) the kyber override is written while their kyber runs (was {lat}, now {tunable(name, 'read_lat_nsec')})")
        ex = d.read("devices", name, "explain")
        check("switched by someone else over blkmqd's bfq, left as theirs (Reassert=no)" in ex and
              "(rule elevator-external)" in ex and not re.search(r"nr_requests.*elevator switch kyber -> bfq", ex),
              f"(i10) explain: kyber is theirs and nothing plans a switch back: {ex!r}")
    finally:
        d.stop()
    check(current_elevator(name) == "kyber" and nr_requests(name) == theirs,
          f"(i10) stop: kyber stays, nr_requests {theirs} (kyber's) back, not none's ({current_elevator(name)}, {nr_requests(name)})")
    check(tunable(name, "read_lat_nsec") == lat, f"(i10) stop: read_lat_nsec {lat} back ({tunable(name, 'read_lat_nsec')})")
    set_elevator(name, "none")


def case_i12_their_switch_kept(d, loops, tmp):
    """(i12) someone else's elevator: the nr_requests recorded under it survives later looks, and their next switch records anew"""
    name = loops.attach("i12", elevator="none")
    start(d, tmp, name, VERIFY)
    try:
        rc = d.write("bfq", "devices", name, "policy", "elevator")
        check(rc == 0 and current_elevator(name) == "bfq", f"(i12) policy/elevator bfq ({rc})")
        rc = d.write("64", "devices", name, "policy", "nr_requests")
        check(rc == 0 and nr_requests(name) == "64", f"(i12) policy/nr_requests 64 ({rc}, {nr_requests(name)})")
        set_elevator(name, "kyber")
        theirs = nr_requests(name)
        ok, _ = wait_for(lambda: "changed externally to kyber" in verify(d, name) and nr_requests(name) == "64", 10.0)
        check(ok, f"(i12) kyber noticed as someone else's, blkmqd's 64 written again over the reset to {theirs} ({nr_requests(name)})")
        # every later look (a read of applied/ is a verify; the periodic one runs each second)
        # still finds their kyber: the value recorded under it stays blkmqd's to put back
        for _ in range(3):
            verify(d, name)
        ok, _ = wait_for(lambda: d.read("devices", name, "applied", "nr_requests").strip() == f"ok: 64 (was {theirs})", 5.0)
        a = d.read("devices", name, "applied", "nr_requests").strip()
        check(ok, f"(i12) after more verifies applied/nr_requests still reads 'ok: 64 (was {theirs})': {a!r}")
        # they switch again, to none (its nr_requests is the tag depth): what that reset left is
        # the original now, not kyber's value (which none would refuse)
        set_elevator(name, "none")
        depth = nr_requests(name)
        check(depth != theirs, f"(i12) none's nr_requests {depth} differs from kyber's {theirs}")
        ok, _ = wait_for(lambda: nr_requests(name) == "64" and
                         d.read("devices", name, "applied", "nr_requests").strip() == f"ok: 64 (was {depth})", 10.0)
        a = d.read("devices", name, "applied", "nr_requests").strip()
        check(ok, f"(i12) 64 written again under their none, its {depth} recorded: {a!r}")
    finally:
        d.stop()
    check(current_elevator(name) == "none" and nr_requests(name) == depth,
          f"(i12) stop: their none stays, nr_requests {depth} back ({current_elevator(name)}, {nr_requests(name)})")
    fails = log_lines(d, "Failed to")
    check(not fails, f"(i12) no failed write: {fails}")


def case_i13_slice_idle_alias(d, loops, tmp):
    """(i13) bfq's slice_idle and slice_idle_us are one variable: the one left out by the conflict is not put back over the other"""
    name = loops.attach("i13", elevator="bfq")
    ms0, us0 = tunable(name, "slice_idle"), tunable(name, "slice_idle_us")
    start(d, tmp, name, KEEP)
    try:
        check(policy_write(d, name, "bfq", "slice_idle", "0") == 0 and tunable(name, "slice_idle_us") == "0",
              f"(i13) slice_idle 0 (slice_idle_us reads {tunable(name, 'slice_idle_us')})")
        n0 = log_len(d)
        check(policy_write(d, name, "bfq", "slice_idle_us", "0") == 0, "(i13) slice_idle_us 0 too: slice_idle_us wins")
        ok, _ = wait_for(lambda: "bfq.slice_idle_us ok: 0 (was " in applied_iosched(d, name), 5.0)
        check(tunable(name, "slice_idle_us") == "0" and tunable(name, "slice_idle") == "0",
              f"(i13) the variable stays 0: slice_idle was not put back to {ms0} over it "
              f"({tunable(name, 'slice_idle')}, {tunable(name, 'slice_idle_us')})")
        a = applied_iosched(d, name)
        check(ok and f"bfq.slice_idle_us ok: 0 (was {us0})" in a and "externally" not in a,
              f"(i13) applied/iosched: slice_idle_us is blkmqd's, with the variable's value before blkmqd: {a!r}")
        check(not log_lines(d, "externally", n0), f"(i13) blkmqd does not take its own put-back for someone else's: {log_lines(d, 'externally', n0)}")
        check(policy_write(d, name, "bfq", "slice_idle_us", "4000") == 0 and tunable(name, "slice_idle") == "4",
              f"(i13) slice_idle_us 4000 ({tunable(name, 'slice_idle_us')}, slice_idle {tunable(name, 'slice_idle')})")
    finally:
        d.stop()
    check(tunable(name, "slice_idle") == ms0 and tunable(name, "slice_idle_us") == us0,
          f"(i13) stop: {ms0} ms back ({tunable(name, 'slice_idle')}, {tunable(name, 'slice_idle_us')})")
    check(not log_lines(d, "Failed to"), f"(i13) no failed write: {log_lines(d, 'Failed to')}")


def blkmqctl(d, *args):
    exe = os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "ctl", "blkmqctl")
    r = subprocess.run([exe, "--mountpoint", d.mnt, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def iosched_series(d, name):
    """{(elevator, tunable): state} of name's blkmqd_applied_iosched lines in /metrics, and the scrape."""
    text = d.read("metrics")
    out = {}
    for m in re.finditer(r'^blkmqd_applied_iosched\{device="' + re.escape(name) +
                         r'",elevator="([^"]*)",tunable="([^"]*)",state="([^"]*)"\} 1$', text, re.M):
        out[(m.group(1), m.group(2))] = m.group(3)
    return out, text


def case_im_metrics(d, loops, tmp):
    """(im) blkmqd_applied_iosched in /metrics: written, changed externally, waiting"""
    name = loops.attach("im", elevator="bfq")
    start(d, tmp, name, KEEP)
    try:
        got, _ = iosched_series(d, name)
        check(got == {}, f"(im) no blkmqd_applied_iosched line before any override: {got}")
        rc = policy_write(d, name, "bfq", "slice_idle", "0")
        got, _ = iosched_series(d, name)
        check(rc == 0 and got == {("bfq", "slice_idle"): "ok"}, f"(im) slice_idle 0 written: {got}")
        set_tunable(name, "slice_idle", "4")
        applied_iosched(d, name)        # a read verifies
        got, _ = iosched_series(d, name)
        check(got.get(("bfq", "slice_idle")) == "changed externally", f"(im) someone else's 4: {got}")
        rc = policy_write(d, name, "kyber", "read_lat_nsec", "1000000")
        got, text = iosched_series(d, name)
        check(rc == 0 and got.get(("kyber", "read_lat_nsec")) == "unmanaged" and "waits" in applied_iosched(d, name),
              f"(im) a kyber override while bfq runs waits: {got}")
        check(text.count("# TYPE blkmqd_applied_iosched gauge\n") == 1, "(im) one HELP/TYPE for the family")
        promtool = shutil.which("promtool")
        if promtool:
            r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
            check(r.returncode == 0, f"(im) promtool check metrics: rc {r.returncode} {r.stdout.strip()} {r.stderr.strip()}")
    finally:
        d.stop()


def case_i6_reset(d, loops, tmp):
    """(i6) nr_requests and elevator set, then reset: no wasted writes, one log line per event, no noise"""
    name = loops.attach("i6", elevator="mq-deadline")
    nr0, depth0 = nr_requests(name), tunable(name, "async_depth")
    start(d, tmp, name, KEEP)
    try:
        rc, out = blkmqctl(d, "set", name, "nr_requests", "64")
        check(rc == 0 and nr_requests(name) == "64", f"(i6) nr_requests 64 ({rc}, {out.strip()!r})")
        n0 = log_len(d)
        rc, out = blkmqctl(d, "set", name, "elevator", "bfq")
        check(rc == 0 and current_elevator(name) == "bfq", f"(i6) elevator bfq ({out.strip()!r})")
        ok, _ = wait_for(lambda: nr_requests(name) == "64", 5.0)
        check(ok, f"(i6) the override's 64 is written again after the switch reset it ({nr_requests(name)})")
        said = [l for l in log_lines(d, "nr_requests", n0) if "reset" in l and "(rule " not in l]
        check(len(said) == 1, f"(i6) the switch's reset of nr_requests is one log line: {said}")

        # applied/iosched under bfq: mq-deadline's tunables only as values to put back, labelled so
        # (the kernel's async_depth followed blkmqd's nr_requests: not one of them)
        def other_lines():
            return [l for l in applied_iosched(d, name).splitlines() if not l.startswith("bfq.") and l != "unmanaged"]
        bad = [l for l in other_lines() if not re.match(r"mq-deadline\.\w+ unmanaged: to put back when mq-deadline runs again: \d+", l)]
        check(other_lines() and not bad, f"(i6) under bfq, applied/iosched names mq-deadline's only as values to put back: {other_lines()}")
        check(not any(l.startswith("mq-deadline.async_depth") for l in other_lines()), "(i6) ... async_depth not among them")
        rc, out = blkmqctl(d, "set", name, "iosched/bfq/slice_idle", "0")
        check(rc == 0 and "applied: ok: 0 (was " in out, f"(i6) set iosched/bfq/slice_idle prints its applied state: {out.strip()!r}")
        a = applied_iosched(d, name)
        check(a.startswith("bfq.slice_idle ok: 0 (was ") and all(l.startswith("bfq.") or "to put back when" in l for l in a.splitlines()),
              f"(i6) applied/iosched: bfq's line first, no bare line of another elevator: {a!r}")

        n0 = log_len(d)
        rc, out = blkmqctl(d, "reset", name)
        check(rc == 0, f"(i6) reset ({out.strip()!r})")
        auto = [l.split(": ", 1)[1].split(" set to")[0] for l in log_lines(d, "set to auto by the administrator", n0)]
        check(sorted(auto) == ["policy/elevator", "policy/iosched/bfq/slice_idle", "policy/nr_requests"],
              f"(i6) reset writes only the overrides that were set: {auto}")
        check(current_elevator(name) == "mq-deadline" and nr_requests(name) == nr0 and tunable(name, "async_depth") == depth0,
              f"(i6) mq-deadline, nr_requests {nr0} and async_depth {depth0} are back ({current_elevator(name)}, {nr_requests(name)}, "
              f"{tunable(name, 'async_depth')})")
        wasted = [l for l in log_lines(d, "nr_requests", n0) if re.search(r"nr_requests \d+ -> 64", l) or "writing 64" in l
                  or "writing it again" in l]
        check(not wasted, f"(i6) no write of the old 64 while the override is reset: {wasted}")
        a = applied_iosched(d, name)
        bogus = [l for l in log_lines(d, "put back", n0) if "async_depth" in l]
        check("async_depth" not in a and not bogus,
              f"(i6) async_depth, which blkmqd never wrote (the kernel derives it from nr_requests), is not put back: {a!r} {bogus}")
    finally:
        d.stop()


def case_i7_depth(d, loops, tmp):
    """(i7) mq-deadline's async_depth and nr_requests both overridden: the tunable is written after nr_requests"""
    name = loops.attach("i7", elevator="mq-deadline")
    nr0, depth0 = nr_requests(name), tunable(name, "async_depth")
    start(d, tmp, name, VERIFY)
    try:
        check(policy_write(d, name, "mq-deadline", "async_depth", "32") == 0 and tunable(name, "async_depth") == "32",
              f"(i7) async_depth 32 ({tunable(name, 'async_depth')})")
        n0 = log_len(d)
        check(d.write("64", "devices", name, "policy", "nr_requests") == 0 and nr_requests(name) == "64", f"(i7) nr_requests 64 ({nr_requests(name)})")
        ok, _ = wait_for(lambda: tunable(name, "async_depth") == "32", 5.0, 0.05)
        check(ok, f"(i7) async_depth is 32 again after blkmqd's nr_requests write made the kernel derive it ({tunable(name, 'async_depth')})")
        a = applied_iosched(d, name)
        check(a.startswith("mq-deadline.async_depth ok: 32") and "externally" not in a, f"(i7) applied/iosched: {a!r}")
        ext = log_lines(d, "externally", n0)
        check(not ext, f"(i7) not reported as someone else's change: {ext}")
        # the override's nr_requests back to auto: 256 again, and with it the kernel's async_depth; 32 written again
        check(d.write("auto", "devices", name, "policy", "nr_requests") == 0, "(i7) nr_requests auto")
        ok, _ = wait_for(lambda: nr_requests(name) == nr0 and tunable(name, "async_depth") == "32", 5.0, 0.05)
        check(ok, f"(i7) nr_requests {nr0} back, async_depth 32 kept ({nr_requests(name)}, {tunable(name, 'async_depth')})")
    finally:
        d.stop()
    check(nr_requests(name) == nr0 and tunable(name, "async_depth") == depth0,
          f"(i7) stop put back nr_requests {nr0} and async_depth {depth0} ({nr_requests(name)}, {tunable(name, 'async_depth')})")


def load_elevators(tmp):
    """The elevators are modules on distribution kernels (built in here)."""
    for m in ("bfq", "kyber-iosched"):
        bt.sh("modprobe", "-q", m, check_rc=False)


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-iosched-", (case_i1_view, case_i2_policy, case_i3_reapply, case_i4_switch_order,
                                              case_i5_nr_requests, case_i5r_nr_requests_after_restart, case_i6_reset, case_i7_depth, case_i8_from_none,
                                              case_i9_override_back, case_i10_their_switch,
                                              case_i11_override_back_after_restart, case_im_metrics, case_i12_their_switch_kept,
                                              case_i13_slice_idle_alias),
                          why="loop devices, FUSE mount, sysfs writes", before_case=load_elevators))
