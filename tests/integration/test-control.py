#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-control.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

Policy control through the real FUSE mount (issue 3), on loop devices this test attaches
(passed by exact name in --devices; never any other disk). Uses the Daemon/Loops helpers of
tests/pylib/blkmqd_test.py; every daemon gets its own --state-dir and --config in a temp dir.

Cases: (h) a table of bad writes: documented errno, every policy/* file and every sysfs value
of the loop unchanged, exactly one new log line (none when the kernel or the FUSE open refuses
before blkmqd sees the bytes); (i) override persistence across a restart and across loop
detach/re-attach of the same backing file (identity "loop:<path>"); (j) restore puts back a
snapshot of every touched sysfs file, and its mode off survives a reload until Mode= changes; (k) mode off / dry-run; (l) reload with a bad config
keeps the last good one (EINVAL, the log names file:line); (m) external change: not fought,
rewritten with Reassert=yes; (n) "keep" in policy/elevator, rq_affinity, nr_requests and
irq_affinity: left to the disk whatever the class wants, blkmqd's writes put back.

Log lines: the daemon runs with -v; "log line" means a line with priority <0>..<6> (debug
lines, <7>, are not counted).
"""

import errno
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, read_text, set_elevator, wait_for, write_file  # noqa: E402

SYSFS_KNOBS = ("scheduler", "rq_affinity", "nr_requests")
POLICY_FILES = ("elevator", "rq_affinity", "nr_requests", "irq_affinity", "enabled")

def sysfs_snapshot(name):
    return {k: read_text(f"/sys/block/{name}/queue/{k}") for k in SYSFS_KNOBS}


def snapshot_diff(before, now):
    return {k: (before.get(k), now.get(k)) for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)}


def log_lines(d):
    """Non-debug lines of the current daemon log."""
    d.logf.flush()
    with open(d.log, errors="replace") as f:
        return [l for l in f.read().splitlines() if l[:3] in ("<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>")]


def write_as_nobody(path, data):
    code = ("import os,sys\n"
            "try:\n"
            f"    fd=os.open({path!r}, os.O_WRONLY|os.O_TRUNC); os.write(fd, {data!r}); print(0)\n"
            "except OSError as e: print(e.errno)\n")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
                       capture_output=True, text=True)
    return int(r.stdout.strip() or "-1")


def read_as_nobody(path):
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", path],
                       capture_output=True, text=True)
    return r.returncode, r.stdout


start = bt.start_with_config


def policy_snapshot(d, name):
    return {p: d.read("devices", name, "policy", p) for p in POLICY_FILES}


def wait_applied(d, name, knob, pred, deadline=5.0):
    def get():
        try:
            v = d.read("devices", name, "applied", knob)
        except OSError:
            return None
        return v if pred(v) else None
    v, _ = wait_for(get, deadline, 0.02)
    return v


# ---- cases ----------------------------------------------------------------------------------

def case_h_bad_writes(d, loops, tmp):
    """(h) bad writes: documented errno, nothing changed, one log line each."""
    name = loops.attach("h")
    pre_start = sysfs_snapshot(name)
    start(d, tmp, name)
    wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
    P = lambda f: d.path("devices", name, "policy", f)      # noqa: E731
    EINVAL, ERANGE, EACCES = errno.EINVAL, errno.ERANGE, errno.EACCES
    # (file, bytes, errno, log lines, how)
    table = [
        (P("elevator"), b"cfq", EINVAL, 1, "write"),
        (P("elevator"), b"bfq\0junk", EINVAL, 1, "write"),
        (P("elevator"), b"b" * 4097, EINVAL, 1, "write"),
        (P("elevator"), b"\n", EINVAL, 1, "write"),
        (P("elevator"), b" none", EINVAL, 1, "write"),
        (P("elevator"), b"none \n", EINVAL, 1, "write"),
        (P("elevator"), b"\tnone", EINVAL, 1, "write"),
        (P("elevator"), b"auto\nauto", EINVAL, 1, "write"),
        (P("elevator"), b"[none]", EINVAL, 1, "write"),
        (P("elevator"), b"none\n\n", EINVAL, 1, "write"),
        (P("elevator"), b"NONE", EINVAL, 1, "write"),
        (P("rq_affinity"), b"3", ERANGE, 1, "write"),
        (P("rq_affinity"), b"-1", ERANGE, 1, "write"),
        (P("rq_affinity"), b"0x2", EINVAL, 1, "write"),
        (P("rq_affinity"), b"1.0", EINVAL, 1, "write"),
        (P("rq_affinity"), b"2147483648", ERANGE, 1, "write"),
        (P("rq_affinity"), b"", None, None, "write"),            # see below
        (P("nr_requests"), b"0", ERANGE, 1, "write"),
        (P("nr_requests"), b"1", ERANGE, 1, "write"),
        (P("nr_requests"), b"3\n", ERANGE, 1, "write"),
        (P("nr_requests"), b"100000", ERANGE, 1, "write"),       # > nr_tags without an elevator
        (P("nr_requests"), b"18446744073709551616", ERANGE, 1, "write"),
        (P("nr_requests"), b"-5", ERANGE, 1, "write"),          # a number out of range, like rq_affinity -1
        (P("nr_requests"), b"-", EINVAL, 1, "write"),
        (P("irq_affinity"), b"4095", ERANGE, 1, "write"),        # absent CPU: out of range
        (P("irq_affinity"), b"1-0", EINVAL, 1, "write"),
        (P("irq_affinity"), b"0, 1", EINVAL, 1, "write"),
        (P("irq_affinity"), b"8192", ERANGE, 1, "write"),
        (P("enabled"), b"2", ERANGE, 1, "write"),
        (P("enabled"), b"-1", ERANGE, 1, "write"),
        (P("enabled"), b"AUTO", EINVAL, 1, "write"),
        (d.path("mode"), b"fast", EINVAL, 1, "write"),
        (d.path("mode"), b"auto\0", EINVAL, 1, "write"),
        (d.path("reload"), b"2", EINVAL, 1, "write"),
        (d.path("restore"), b"0", EINVAL, 1, "write"),
        (d.path("restore"), b"1 ", EINVAL, 1, "write"),
        (d.path("devices", name, "class"), b"stacked", EACCES, 0, "write"),
        (d.path("devices", name, "facts", "elevator"), b"none", EACCES, 0, "write"),
        (d.path("devices", name, "applied", "elevator"), b"none", EACCES, 0, "write"),
        (d.path("devices", name, "hctx", "0", "cpu_list"), b"0", EACCES, 0, "write"),
        (d.path("version"), b"x", EACCES, 0, "write"),
        (d.path("metrics"), b"x", EACCES, 0, "write"),
        (P("elevator"), b"none", EINVAL, 1, "offset"),
        (P("elevator"), b"none", EACCES, 0, "nobody"),
        (d.path("mode"), b"off", EACCES, 0, "nobody"),
    ]
    os.chmod(tmp, 0o755)        # nobody must reach the mount point: EACCES must come from the file
    rc, out = read_as_nobody(P("elevator"))
    check(rc == 0 and out == "auto\n", f"(h) nobody can read policy/elevator (rc {rc}, {out!r})")

    sys_before = sysfs_snapshot(name)
    pol_before = policy_snapshot(d, name)
    mode_before = d.read("mode")
    n_bad = 0
    for path, data, want, want_lines, how in table:
        rel = os.path.relpath(path, d.mnt)
        shown = data if len(data) <= 24 else data[:12] + b"..." + str(len(data)).encode() + b" bytes"
        lines0 = len(log_lines(d))
        if how == "write":
            got = write_file(path, data)
        elif how == "offset":
            got = write_file(path, data, offset=1)
        else:
            got = write_as_nobody(path, data)
        if want is None:
            # an empty write(): the kernel does not send 0 bytes to FUSE; success, and nothing may change
            check(got == 0, f"(h) {rel} <- {shown!r}: the kernel completes an empty write() (got {errno.errorcode.get(got, got)})")
        else:
            n_bad += 1
            check(got == want, f"(h) {rel} <- {shown!r} ({how}): {errno.errorcode.get(want)} (got {errno.errorcode.get(got, got)})")
        ok, _ = wait_for(lambda: len(log_lines(d)) - lines0 >= (want_lines or 0), 5.0, 0.02)
        time.sleep(0.05)        # a second line would come right after the first
        new = log_lines(d)[lines0:]
        if want_lines is not None:
            line_ok = len(new) == want_lines
            msg = f"(h) {rel} <- {shown!r} ({how}): {want_lines} new log line(s), got {len(new)}: {new}"
            check(line_ok, msg)
            if want_lines == 1 and new and rel.startswith("devices/"):
                check(rel.split("/")[-1] in new[0] and "rejected" in new[0], f"(h) the log line names the file and says rejected: {new[0]}")
        check(sysfs_snapshot(name) == sys_before, f"(h) {rel} <- {shown!r}: sysfs of {name} unchanged")
        check(policy_snapshot(d, name) == pol_before and d.read("mode") == mode_before,
              f"(h) {rel} <- {shown!r}: policy/* and mode unchanged")
    check(n_bad >= 30, f"(h) {n_bad} bad writes in the table (>= 30)")
    # a legacy or upper-case elevator name: the refusal says what to write instead (as the config load does)
    for data, hint in ((b"NOOP\n", 'use "none"'), (b"deadline", 'use "mq-deadline"'), (b"BFQ", 'use "bfq"')):
        lines0 = len(log_lines(d))
        check(write_file(P("elevator"), data) == EINVAL, f"(h) policy/elevator <- {data!r}: EINVAL")
        wait_for(lambda: len(log_lines(d)) > lines0, 5.0, 0.02)
        new = log_lines(d)[lines0:]
        check(len(new) == 1 and hint in new[0], f"(h) policy/elevator <- {data!r}: one line saying {hint}: {new}")
    check(d.alive(), "(h) the daemon survives every bad write")
    # a good write, for contrast: one line, and the override shows
    lines0 = len(log_lines(d))
    check(write_file(P("rq_affinity"), b"02\n") == 0, "(h) policy/rq_affinity <- 02 accepted")
    check(d.read("devices", name, "policy", "rq_affinity") == "2\n", f"(h) policy/rq_affinity normalised to 2 (got {d.read('devices', name, 'policy', 'rq_affinity')!r})")
    v = wait_applied(d, name, "rq_affinity", lambda v: v.startswith("ok"))
    check(read_text(f"/sys/block/{name}/queue/rq_affinity") == "2\n", f"(h) queue/rq_affinity is 2 ({v!r})")
    check(write_file(P("rq_affinity"), b"auto") == 0 and d.read("devices", name, "policy", "rq_affinity") == "auto\n",
          "(h) policy/rq_affinity <- auto")
    d.stop()
    check(sysfs_snapshot(name) == pre_start, "(h) after stop every sysfs value is as before start")


def case_i_persistence(d, loops, tmp):
    """(i) overrides persist across a restart and a loop detach/re-attach (same backing file)."""
    name = loops.attach("i")
    backing = read_text(f"/sys/block/{name}/loop/backing_file").strip()
    orig = current_elevator(name)
    start(d, tmp, name)
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
        check(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline\n") == 0, "(i) policy/elevator <- mq-deadline")
        check(write_file(d.path("devices", name, "policy", "nr_requests"), b"64") == 0, "(i) policy/nr_requests <- 64")
        v = wait_applied(d, name, "elevator", lambda v: v.startswith("ok: mq-deadline"))
        check(v == f"ok: mq-deadline (was {orig})\n", f"(i) applied/elevator ok: mq-deadline (was {orig}) (got {v!r})")
        files = os.listdir(os.path.join(tmp, "state", "overrides"))
        want = "loop:" + backing.replace("/", "%2f")
        check(files == [want], f"(i) state file named by identity loop:<backing file>: {files} == [{want}]")
        with open(os.path.join(tmp, "state", "overrides", files[0])) as f:
            content = f.read()
        check("elevator=mq-deadline\n" in content and "nr_requests=64\n" in content, f"(i) state file content {content!r}")
    finally:
        d.stop()
    check(current_elevator(name) == orig, f"(i) SIGTERM restored {orig}")

    start(d, tmp, name)
    try:
        check(d.read("devices", name, "policy", "elevator") == "mq-deadline\n", "(i) after restart policy/elevator = mq-deadline")
        check(d.read("devices", name, "policy", "nr_requests") == "64\n", "(i) after restart policy/nr_requests = 64")
        wait_for(lambda: current_elevator(name) == "mq-deadline", 5.0)
        check(current_elevator(name) == "mq-deadline", "(i) after restart the kernel shows [mq-deadline]")
        # detach and re-attach the same backing file while the daemon runs
        loops.detach(name)
        wait_for(lambda: not os.path.exists(d.path("devices", name)), 5.0)
        dev = bt.sh("losetup", "-f", "--show", backing).strip()
        again = os.path.basename(dev)
        loops.attached.append(again)
        loops.originals[again] = orig
        if again != name:           # another test took the name: restart on the new one
            print(f"   re-attached as {again} (was {name}); restarting on it")
            d.stop()
            start(d, tmp, again)
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", again, "policy", "elevator")), 5.0)
        check(ok and d.read("devices", again, "policy", "elevator") == "mq-deadline\n",
              f"(i) re-attached {again}: policy/elevator = mq-deadline (same identity)")
        ok, _ = wait_for(lambda: current_elevator(again) == "mq-deadline", 5.0)
        check(ok, f"(i) re-attached {again}: the kernel shows [mq-deadline]")
        # another backing file is another identity: no override
        other = loops.attach("i-other")
        d.stop()
        start(d, tmp, f"{again},{other}")
        check(d.read("devices", other, "policy", "elevator") == "auto\n", "(i) another backing file has no override")
        # auto removes the state file
        check(write_file(d.path("devices", again, "policy", "elevator"), b"auto") == 0 and
              write_file(d.path("devices", again, "policy", "nr_requests"), b"auto") == 0, "(i) both back to auto")
        check(os.listdir(os.path.join(tmp, "state", "overrides")) == [], "(i) no overrides left: no state file")
    finally:
        d.stop()


def case_j_restore(d, loops, tmp):
    """(j) echo 1 > restore puts back every sysfs value (snapshot before start), then mode off."""
    a = loops.attach("j")
    b = loops.attach("j", elevator="kyber")
    before = {n: sysfs_snapshot(n) for n in (a, b)}
    start(d, tmp, f"{a},{b}")
    try:
        wait_for(lambda: all(os.path.exists(d.path("devices", n, "policy")) for n in (a, b)), 5.0)
        for n in (a, b):
            for f, v in (("elevator", b"mq-deadline"), ("rq_affinity", b"2"), ("nr_requests", b"64")):
                check(write_file(d.path("devices", n, "policy", f), v) == 0, f"(j) {n} policy/{f} <- {v.decode()}")
        ok, _ = wait_for(lambda: all(sysfs_snapshot(n)["rq_affinity"] == "2\n" and current_elevator(n) == "mq-deadline"
                                     and sysfs_snapshot(n)["nr_requests"] == "64\n" for n in (a, b)), 5.0)
        check(ok, f"(j) overrides applied: {[sysfs_snapshot(n) for n in (a, b)]}")
        check(write_file(d.path("restore"), b"1\n") == 0, "(j) echo 1 > restore")
        for n in (a, b):
            check(sysfs_snapshot(n) == before[n], f"(j) {n} every touched sysfs file as before start: {sysfs_snapshot(n)} == {before[n]}")
        check(d.read("mode") == "off\n", f"(j) mode is off after restore (got {d.read('mode')!r})")
        r = int(d.read("restore"))
        check(r >= 4, f"(j) restore reads the number of values put back ({r}, >= 4: elevator and rq_affinity of two loops; the elevator switch resets nr_requests)")
        # off: a new override is remembered, nothing written
        check(write_file(d.path("devices", a, "policy", "elevator"), b"bfq") == 0, "(j) an override while off is accepted")
        time.sleep(0.3)
        check(sysfs_snapshot(a) == before[a], "(j) ... and nothing is written while off")
        # a reload (for another key; Mode= unchanged) keeps the restore's off
        check(write_file(d.path("reload"), b"1\n") == 0 and d.read("mode") == "off\n",
              f"(j) reload with Mode= unchanged keeps mode off (got {d.read('mode')!r})")
        time.sleep(0.3)
        check(sysfs_snapshot(a) == before[a], "(j) ... and still nothing is written")
        # Mode= changed in the file: the reload follows the file
        with open(os.path.join(tmp, "blkmqd.conf"), "a") as f:
            f.write("\n[Manager]\nMode=dry-run\n")
        check(write_file(d.path("reload"), b"1\n") == 0 and d.read("mode") == "dry-run\n",
              f"(j) reload after Mode=dry-run was written to the file: mode dry-run (got {d.read('mode')!r})")
    finally:
        d.stop()
    for n in (a, b):
        check(sysfs_snapshot(n) == before[n], f"(j) {n} unchanged after stop")


def case_k_modes(d, loops, tmp):
    """(k) mode off and dry-run write nothing; auto applies."""
    name = loops.attach("k", elevator="mq-deadline")       # the stacked policy wants none
    before = sysfs_snapshot(name)
    start(d, tmp, name, "[Manager]\nMode=off\n")
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "applied", "elevator")), 5.0)
        check(d.read("mode") == "off\n", "(k) Mode=off from the config")
        time.sleep(0.2)
        now = sysfs_snapshot(name)
        check(now == before, "(k) off: nothing written" + ("" if now == before else f": {snapshot_diff(before, now)}"))
        check(write_file(d.path("mode"), b"dry-run\n") == 0 and d.read("mode") == "dry-run\n", "(k) mode <- dry-run")
        v = wait_applied(d, name, "elevator", lambda v: v.startswith("dry-run"))
        check(v == "dry-run: would write none (now mq-deadline)\n", f"(k) dry-run: applied/elevator {v!r}")
        check(sysfs_snapshot(name) == before, "(k) dry-run: nothing written")
        check(write_file(d.path("mode"), b"auto") == 0, "(k) mode <- auto")
        ok, _ = wait_for(lambda: current_elevator(name) == "none", 5.0)
        check(ok, "(k) auto: none applied")
        check(write_file(d.path("mode"), b"off") == 0, "(k) mode <- off")
        check(write_file(d.path("devices", name, "policy", "elevator"), b"kyber") == 0, "(k) override while off")
        time.sleep(0.3)
        check(current_elevator(name) == "none", "(k) off after auto: the override is not written")
    finally:
        d.stop()
    check(sysfs_snapshot(name) == before, "(k) after stop: the original mq-deadline")


def case_l_reload(d, loops, tmp):
    """(l) reload with a bad config keeps the last good one; the log names file:line."""
    name = loops.attach("l")
    conf = os.path.join(tmp, "blkmqd.conf")
    start(d, tmp, name, "[Manager]\nMode=dry-run\n")
    try:
        r0 = int(d.read("reload"))
        check(d.read("mode") == "dry-run\n", f"(l) started in dry-run from the config (reload reads {r0})")
        with open(conf, "w") as f:
            f.write("# bad\n[Manager]\nMode=auto\nReassert=perhaps\n")
        lines0 = len(log_lines(d))
        got = write_file(d.path("reload"), b"1")
        check(got == errno.EINVAL, f"(l) reload of a bad config: EINVAL (got {errno.errorcode.get(got, got)})")
        new = log_lines(d)[lines0:]
        check(any(f"{conf}:4:" in l and "Reassert" in l for l in new), f"(l) the log names {conf}:4: {new}")
        check(d.read("mode") == "dry-run\n" and int(d.read("reload")) == r0, f"(l) the last good config stays (dry-run, reload still {r0})")
        # a bad drop-in is just as bad
        os.makedirs(conf + ".d", exist_ok=True)
        with open(conf, "w") as f:
            f.write("[Manager]\nMode=off\n")
        with open(os.path.join(conf + ".d", "50-x.conf"), "w") as f:
            f.write("[Class:stacked]\nElevator=\n")
        got = write_file(d.path("reload"), b"1")
        check(got == errno.EINVAL and d.read("mode") == "dry-run\n", "(l) a bad drop-in: EINVAL, config kept")
        check(any("50-x.conf:2:" in l for l in log_lines(d)), "(l) the log names 50-x.conf:2")
        os.unlink(os.path.join(conf + ".d", "50-x.conf"))
        check(write_file(d.path("reload"), b"1\n") == 0, "(l) reload of a good config")
        check(d.read("mode") == "off\n" and int(d.read("reload")) == r0 + 1, f"(l) now off, one more reload ({d.read('mode')!r}, {d.read('reload')!r})")
        # SIGHUP does the same
        with open(conf, "w") as f:
            f.write("[Manager]\nMode=dry-run\n")
        d.proc.send_signal(signal.SIGHUP)
        ok, _ = wait_for(lambda: int(d.read("reload")) == r0 + 2, 5.0)
        check(ok and d.read("mode") == "dry-run\n", "(l) SIGHUP reloads")
    finally:
        d.stop()


def case_m_external(d, loops, tmp):
    """(m) a value changed behind blkmqd's back is reported, not fought; Reassert=yes rewrites it."""
    name = loops.attach("m")
    orig = current_elevator(name)
    start(d, tmp, name)
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
        check(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline") == 0, "(m) override mq-deadline")
        wait_for(lambda: current_elevator(name) == "mq-deadline", 5.0)
        lines0 = len(log_lines(d))
        set_elevator(name, "kyber")
        with open(f"/sys/block/{name}/uevent", "w") as f:
            f.write("change")
        v = wait_applied(d, name, "elevator", lambda v: "changed externally" in v)
        check(v is not None and "changed externally to kyber" in v, f"(m) applied/elevator says changed externally to kyber ({v!r})")
        time.sleep(0.5)
        check(current_elevator(name) == "kyber", "(m) not rewritten (not fought)")
        with open(f"/sys/block/{name}/uevent", "w") as f:
            f.write("change")
        time.sleep(0.3)
        n = sum(1 for l in log_lines(d)[lines0:] if "kyber" in l and "extern" in l)
        check(n == 1, f"(m) logged once, not at every pass ({n})")
        check(current_elevator(name) == "kyber", "(m) still kyber after a second uevent")
    finally:
        d.stop()
    check(current_elevator(name) == "kyber", "(m) stop does not restore over someone else's value")
    set_elevator(name, orig)

    start(d, tmp, name, "[Manager]\nReassert=yes\n")
    try:
        wait_for(lambda: current_elevator(name) == "mq-deadline", 5.0)      # the persisted override
        check(current_elevator(name) == "mq-deadline", "(m) Reassert=yes: override applied after restart")
        set_elevator(name, "kyber")
        with open(f"/sys/block/{name}/uevent", "w") as f:
            f.write("change")
        ok, _ = wait_for(lambda: current_elevator(name) == "mq-deadline", 5.0)
        check(ok, f"(m) Reassert=yes: rewritten to mq-deadline (now {current_elevator(name)})")
    finally:
        d.stop()


def case_n_keep(d, loops, tmp):
    """(n) "keep" in a knob's policy file: left to the disk whatever the class wants, blkmqd's write put back, other knobs managed"""
    name = loops.attach("n", elevator="none")
    before = sysfs_snapshot(name)
    # the class wants mq-deadline and rq_affinity 2
    start(d, tmp, name, "[Class:stacked]\nElevator=mq-deadline\nRqAffinity=2\n")
    try:
        ok, _ = wait_for(lambda: current_elevator(name) == "mq-deadline" and read_text(f"/sys/block/{name}/queue/rq_affinity").strip() == "2", 5.0)
        check(ok, f"(n) the class's mq-deadline and rq_affinity 2 are written ({sysfs_snapshot(name)})")
        lines0 = len(log_lines(d))
        for knob in ("elevator", "rq_affinity", "nr_requests", "irq_affinity"):
            rc = write_file(d.path("devices", name, "policy", knob), b"keep\n")
            check(rc == 0 and d.read("devices", name, "policy", knob) == "keep\n",
                  f"(n) policy/{knob} takes keep (got {errno.errorcode.get(rc, rc)}) and reads it")
        ok, _ = wait_for(lambda: sysfs_snapshot(name) == before, 5.0)
        check(ok, f"(n) keep: blkmqd's mq-deadline and rq_affinity 2 are put back ({snapshot_diff(before, sysfs_snapshot(name))})")
        ex = d.read("devices", name, "explain")
        check("policy/elevator=keep elevator=none -> elevator=none" in ex and "policy/rq_affinity=keep rq_affinity=1 -> rq_affinity left alone" in ex
              and "policy/nr_requests=keep" in ex, f"(n) explain names the keep overrides: {ex!r}")
        said = [l for l in log_lines(d)[lines0:] if "elevator restored to none" in l or "rq_affinity restored to 1" in l]
        check(len(said) == 2, f"(n) the put-backs are logged once each: {said}")
        check(d.read("devices", name, "plan", "rq_affinity") == "keep\n" and d.read("devices", name, "plan", "elevator") == "none\n",
              "(n) plan/: rq_affinity keep, elevator none")
        check(not [l for l in log_lines(d)[lines0:] if "rejected" in l], "(n) nothing rejected")
        check(write_file(d.path("devices", name, "policy", "enabled"), b"keep") == errno.EINVAL, "(n) enabled has no knob: keep is EINVAL")
    finally:
        d.stop()
    check(sysfs_snapshot(name) == before, f"(n) stop: as before ({snapshot_diff(before, sysfs_snapshot(name))})")


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-ctl-", (case_h_bad_writes, case_i_persistence, case_j_restore, case_k_modes,
                                          case_l_reload, case_m_external, case_n_keep),
                          why="loop devices, FUSE mount, sysfs writes", tools=("losetup", "setpriv"),
                          before_case=lambda tmp: bt.forget_state(tmp, "overrides")))
