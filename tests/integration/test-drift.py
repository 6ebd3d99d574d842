#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-drift.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

Issue 13 items 12-14 (other agents, drift, IRQ write errors), end to end with the built daemon.

Loop devices this test attaches (passed by exact name in --devices; never any other disk):
  (v) the kernel sends no uevent for a queue/scheduler write, so only the periodic verify
      (VerifySec=) notices one: v1 VerifySec=1, Reassert=no -> "changed externally" logged once
      with neither a uevent nor a read of applied/, not rewritten, not restored at stop;
      v2 Reassert=yes -> rewritten by the verify alone, the log says so (never "Reassert=no");
      v3 VerifySec=0 -> the start line says the verify is off and nothing is noticed;
      v4 a value blkmqd's plan found in place (kept, nothing written: a loop's none), then
      changed by someone else -> noticed by the verify like a value blkmqd wrote ("blkmqd's
      plan kept none"), logged once, not switched back by a later evaluation (a change uevent),
      not touched at stop.
  (x) a restart over an earlier run's writes (kill -9), what blkmqd wrote stored with the
      originals: x1 rq_affinity, nr_requests and mq-deadline's fifo_batch, x2 the elevator,
      changed by someone else while blkmqd was down -> "changed externally" (one line each),
      left, not put back at stop (x1's read_expire 125, untouched, read back 128 on HZ=250:
      still blkmqd's, ok); x3 rq_affinity put back to its original meanwhile -> applied
      again as at a first start; x4 x2 with an older blkmqd's file (no written.* lines) ->
      written over as before.
Fixture copies (--root, capture.sh --restore-tree), writes land in the copy only:
  (s) the stop summary adds up: nvme0n1 of vm-6.1-nvme-4q with its four queue vectors moved
      by blkmqd; then another tool moves IRQ 26 and IRQ 27 cannot be written back (a directory)
      -> "2 original value(s) restored, 1 failed, 1 left as changed by someone else", IRQ 26
      keeps the other tool's value.
  (r) `echo 1 > reload` after another tool moved a vector blkmqd placed (nvme IRQ 26, placed on
      CPU 1 by IrqAffinity=hctx, then 3): not rewritten, applied/irq_affinity "changed
      externally", one line; a vector whose write fails (IRQ 27's file a directory: EISDIR)
      gives one line, none at the next reloads; stop: 2 restored, nothing failed or left.
  (k) a vector already on its hctx's CPU (nvme IRQ 25 on 0, kept: nothing written), then moved
      by another tool (to 3): a reload does not move it back, applied/irq_affinity says
      "changed externally", one line; stop restores the vectors blkmqd moved and leaves IRQ 25.
  (y) (x) for IRQ vectors: nvme0n1's four vectors placed, kill -9, IRQ 26 moved to CPU 3 and
      IRQ 27 put back to its original meanwhile, a restart: 26 "changed externally", one line,
      left (also at stop); 27 placed again; stop restores 25, 27, 28.
  (w) start-up warnings for other tools that set what blkmqd manages, each naming file:line:
      udev rules in /etc, /run and /usr/lib/udev/rules.d (a name in /etc hides /usr/lib's, an
      empty file masks), tuned's active profile and its include= parent while tuned runs
      (/run/tuned/tuned.pid names a live process); none for tuned when it does not run; a
      running irqbalance (its control socket names a live process; a stale socket is ignored).

Root, losetup, /dev/fuse (the test is skipped otherwise).
"""

import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, set_elevator, wait_for, write_file  # noqa: E402



def log_lines(d):
    """Non-debug lines of the current daemon log."""
    d.logf.flush()
    with open(d.log, errors="replace") as f:
        return [l for l in f.read().splitlines() if l[:3] in ("<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>")]


start = bt.start_with_config


def override_elevator(d, name, value=b"mq-deadline"):
    wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
    check(write_file(d.path("devices", name, "policy", "elevator"), value) == 0, f"override {value.decode()} on {name}")
    ok, _ = wait_for(lambda: current_elevator(name) == value.decode(), 5.0)
    check(ok, f"{name} runs {value.decode()}")


def switched_behind(d, loops, tmp, case, conf_text, start_says):
    """Case (case) on a loop of its own: blkmqd started with conf_text, its start line saying
    start_says (checked), mq-deadline put on the loop through policy/elevator, then kyber
    written to the kernel by someone else (no uevent comes for it; nobody reads applied/).
    Returns (the loop, its elevator before, the number of log lines before the switch)."""
    name = loops.attach(case)
    orig = current_elevator(name)
    start(d, tmp, name, conf_text)
    ok, _ = wait_for(lambda: any(start_says in l for l in log_lines(d)), 5.0, 0.05)
    check(ok, f"({case}) the start line says {start_says!r}")
    override_elevator(d, name)
    n0 = len(log_lines(d))
    set_elevator(name, "kyber")
    return name, orig, n0


def case_v1_noticed(d, loops, tmp):
    """(v1) VerifySec=1, Reassert=no: a scheduler write by someone else is noticed without a uevent or a read."""
    name, orig, n0 = switched_behind(d, loops, tmp, "v1", "[Manager]\nVerifySec=1\n", "verify every 1 s")
    try:
        ok, _ = wait_for(lambda: any("changed externally to kyber" in l for l in log_lines(d)[n0:]), 6.0, 0.05)
        check(ok, "(v1) the periodic verify noticed the change (no uevent, no read of applied/)")
        time.sleep(2.2)                         # two more verifies
        new = [l for l in log_lines(d)[n0:] if "extern" in l]
        check(len(new) == 1 and "Reassert=no" in new[0], f"(v1) logged once, truthfully: {new}")
        check(current_elevator(name) == "kyber", "(v1) not rewritten")
        v = d.read("devices", name, "applied", "elevator")
        check(v.startswith("changed externally") and "kyber" in v, f"(v1) applied/elevator: {v!r}")
    finally:
        d.stop()
    check(current_elevator(name) == "kyber", "(v1) stop does not write over someone else's value")
    set_elevator(name, orig)


def case_v2_reassert(d, loops, tmp):
    """(v2) VerifySec=1, Reassert=yes: the verify alone rewrites it, and the log says so."""
    name, _, n0 = switched_behind(d, loops, tmp, "v2", "[Manager]\nVerifySec=1\nReassert=yes\n", "verify every 1 s")
    try:
        ok, _ = wait_for(lambda: current_elevator(name) == "mq-deadline", 6.0, 0.05)
        check(ok, f"(v2) rewritten by the periodic verify (now {current_elevator(name)})")
        # the line comes when the write's completion is back on the loop, just after the write
        wait_for(lambda: any("extern" in l for l in log_lines(d)[n0:]), 3.0, 0.05)
        time.sleep(1.2)                         # one more verify: nothing more to say
        new = [l for l in log_lines(d)[n0:] if "extern" in l]
        check(len(new) == 1 and "rewritten (Reassert=yes)" in new[0], f"(v2) one line, saying it was rewritten: {new}")
        check(not any("reassert=no" in l.lower() for l in log_lines(d)), "(v2) never says Reassert=no")
    finally:
        d.stop()


def case_v3_off(d, loops, tmp):
    """(v3) VerifySec=0: no periodic verify at all."""
    name, orig, n0 = switched_behind(d, loops, tmp, "v3", "[Manager]\nVerifySec=0\n", "periodic verify off")
    try:
        time.sleep(2.5)
        check(not any("extern" in l for l in log_lines(d)[n0:]), "(v3) nothing noticed without a verify")
    finally:
        d.stop()
    set_elevator(name, orig)


def case_v4_kept(d, loops, tmp):
    """(v4) a value the plan kept (never written), changed by someone else: noticed and left, like one blkmqd wrote."""
    name = loops.attach("v4")
    orig = current_elevator(name)
    start(d, tmp, name, "[Manager]\nVerifySec=1\n")
    try:
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "applied", "elevator")) and
                         d.read("devices", name, "applied", "elevator").startswith("kept"), 5.0, 0.05)
        check(ok and orig == "none", f"(v4) {name}: none kept by the plan, nothing written (was {orig})")
        n0 = len(log_lines(d))
        set_elevator(name, "mq-deadline")
        ok, _ = wait_for(lambda: any("changed externally to mq-deadline" in l for l in log_lines(d)[n0:]), 6.0, 0.05)
        check(ok, "(v4) the periodic verify noticed it")
        # an evaluation of the disk (a change uevent) must not switch it back either
        with open(f"/sys/block/{name}/uevent", "w") as f:
            f.write("change")
        time.sleep(2.2)                         # the evaluation, and two more verifies
        new = [l for l in log_lines(d)[n0:] if "extern" in l]
        check(len(new) == 1 and "blkmqd's plan kept none" in new[0] and "Reassert=no" in new[0],
              f"(v4) logged once, saying the plan kept none: {new}")
        check(current_elevator(name) == "mq-deadline", f"(v4) not switched back (now {current_elevator(name)})")
        v = d.read("devices", name, "applied", "elevator")
        check(v.startswith("changed externally to mq-deadline (blkmqd's plan kept none"), f"(v4) applied/elevator: {v!r}")
    finally:
        d.stop()
    check(current_elevator(name) == "mq-deadline", "(v4) stop leaves someone else's value")
    set_elevator(name, orig)


def sysq(name, attr):
    with open(f"/sys/block/{name}/queue/{attr}") as f:
        return f.read().strip()


def set_sysq(name, attr, value):
    with open(f"/sys/block/{name}/queue/{attr}", "w") as f:
        f.write(value)


def originals_files(d):
    """{file: text} of the daemon's originals/ files."""
    odir = os.path.join(d.state, "originals")
    out = {}
    for f in os.listdir(odir) if os.path.isdir(odir) else ():
        with open(os.path.join(odir, f)) as fh:
            out[f] = fh.read()
    return out


def applied(d, name, knob):
    return d.read("devices", name, "applied", knob).strip()


def case_x_restart(d, loops, tmp):
    """(x) kill -9, a change behind blkmqd's back, a restart: the value is "changed externally" and left."""
    # x1: rq_affinity, nr_requests and mq-deadline's fifo_batch blkmqd wrote (under its
    # mq-deadline), each changed by someone else while blkmqd was down; x2: its elevator
    # switched to kyber meanwhile; x3: rq_affinity put back to its original meanwhile (as if
    # blkmqd never wrote it: applied again, as at a first start); x4: x2 with the state file of
    # an older blkmqd (no written.* lines): unknown, written over again as before.
    conf = "[Manager]\nVerifySec=0\n"
    name = {c: loops.attach(c) for c in ("x1", "x2", "x3", "x4")}
    rq0 = {c: sysq(n, "rq_affinity") for c, n in name.items()}       # a loop's queue outlives a detach: put back below
    want_rq = {c: "2" if v != "2" else "1" for c, v in rq0.items()}
    other_rq = {c: next(v for v in ("0", "1", "2") if v not in (rq0[c], want_rq[c])) for c in name}
    try:
        bt.start_with_config(d, tmp, ",".join(name.values()), conf)
        try:
            for c, n in name.items():
                override_elevator(d, n)
                check(d.write(want_rq[c], "devices", n, "policy", "rq_affinity") == 0 and sysq(n, "rq_affinity") == want_rq[c],
                      f"(x) {c}: policy/rq_affinity {want_rq[c]} ({sysq(n, 'rq_affinity')})")
            n1 = name["x1"]
            check(d.write("64", "devices", n1, "policy", "nr_requests") == 0 and sysq(n1, "nr_requests") == "64",
                  f"(x1) policy/nr_requests 64 ({sysq(n1, 'nr_requests')})")
            check(d.write("8", "devices", n1, "policy", "iosched", "mq-deadline", "fifo_batch") == 0 and
                  sysq(n1, "iosched/fifo_batch") == "8", f"(x1) policy/iosched/mq-deadline/fifo_batch 8 ({sysq(n1, 'iosched/fifo_batch')})")
            # saved in the disk's lane before each write: on disk once the write returned
            # read_expire is kept in jiffies: 125 ms reads back rounded on HZ=250 (128); not
            # changed behind blkmqd's back, it must stay blkmqd's across the restart
            check(d.write("125", "devices", n1, "policy", "iosched", "mq-deadline", "read_expire") == 0,
                  f"(x1) policy/iosched/mq-deadline/read_expire 125 ({sysq(n1, 'iosched/read_expire')})")
            read_expire = sysq(n1, "iosched/read_expire")
            # (a new original before the write, what blkmqd wrote over a recorded one after it)
            x1_saved = ("written.nr_requests=64\n", "instance.nr_requests=", "written.iosched.mq-deadline.fifo_batch=8\n",
                        "written.iosched.mq-deadline.read_expire=125\n")
            ok, _ = wait_for(lambda: sum(1 for t in originals_files(d).values() if "written.elevator=mq-deadline\n" in t) == 4 and
                             sum(1 for t in originals_files(d).values() if all(w in t for w in x1_saved)) == 1, 5.0, 0.05)
            check(ok, f"(x) the originals files store what blkmqd wrote: {originals_files(d)}")
        finally:
            rc = d.stop(signal.SIGKILL)
        check(rc == -signal.SIGKILL, f"(x) killed ({rc})")
        n1, n2, n3, n4 = name["x1"], name["x2"], name["x3"], name["x4"]
        check(current_elevator(n1) == "mq-deadline" and sysq(n1, "nr_requests") == "64", "(x1) blkmqd's values in place after the kill")
        with open(f"/sys/block/{n4}/loop/backing_file") as f:
            x4_backing = os.path.basename(f.read().strip())
        x4_files = [f for f in originals_files(d) if f.endswith(x4_backing)]     # x4: as an older blkmqd wrote it
        # behind blkmqd's back
        set_sysq(n1, "rq_affinity", other_rq["x1"])
        set_sysq(n1, "nr_requests", "32")
        set_sysq(n1, "iosched/fifo_batch", "4")
        set_elevator(n2, "kyber")
        set_sysq(n3, "rq_affinity", rq0["x3"])
        set_elevator(n4, "kyber")
        for f in x4_files:
            path = os.path.join(d.state, "originals", f)
            with open(path) as fh:
                t = fh.read()
            with open(path, "w") as fh:
                fh.write("".join(l for l in t.splitlines(True) if not l.split("=")[0].split(".")[0] in ("written", "instance", "readback")))
        check(len(x4_files) == 1, f"(x4) its originals file found by name: {x4_files} in {list(originals_files(d))}")
        bt.start_with_config(d, tmp, ",".join(name.values()), conf)
        try:
            ok, _ = wait_for(lambda: os.path.exists(d.path("devices", n1, "applied", "rq_affinity")) and
                             applied(d, n1, "rq_affinity").startswith("changed externally"), 5.0, 0.05)
            check(ok, f"(x1) applied/rq_affinity: {applied(d, n1, 'rq_affinity')!r}")
            check(sysq(n1, "rq_affinity") == other_rq["x1"], f"(x1) rq_affinity left at {other_rq['x1']} ({sysq(n1, 'rq_affinity')})")
            a = applied(d, n1, "nr_requests")
            check(a.startswith("changed externally to 32 (blkmqd wrote 64") and sysq(n1, "nr_requests") == "32",
                  f"(x1) nr_requests left at 32 ({sysq(n1, 'nr_requests')}): {a!r}")
            a = applied(d, n1, "iosched")
            check("changed externally to 4" in a and sysq(n1, "iosched/fifo_batch") == "4",
                  f"(x1) fifo_batch left at 4 ({sysq(n1, 'iosched/fifo_batch')}): {a!r}")
            a = applied(d, n1, "elevator")
            check(a.startswith("ok") and current_elevator(n1) == "mq-deadline", f"(x1) its own mq-deadline still blkmqd's: {a!r}")
            a = applied(d, n1, "iosched")
            check("mq-deadline.read_expire ok: 125" in a and sysq(n1, "iosched/read_expire") == read_expire,
                  f"(x1) read_expire, untouched, still blkmqd's (kernel {sysq(n1, 'iosched/read_expire')}, read back {read_expire}): {a!r}")
            ok, _ = wait_for(lambda: applied(d, n2, "elevator").startswith("changed externally to kyber (blkmqd wrote mq-deadline"), 5.0, 0.05)
            check(ok and current_elevator(n2) == "kyber", f"(x2) kyber left ({current_elevator(n2)}): {applied(d, n2, 'elevator')!r}")
            ok, _ = wait_for(lambda: sysq(n3, "rq_affinity") == want_rq["x3"], 5.0, 0.05)
            check(ok and applied(d, n3, "rq_affinity").startswith("ok"),
                  f"(x3) put back to its original meanwhile: written again ({sysq(n3, 'rq_affinity')}, {applied(d, n3, 'rq_affinity')!r})")
            ok, _ = wait_for(lambda: current_elevator(n4) == "mq-deadline", 5.0, 0.05)
            check(ok, f"(x4) an older state file: unknown, mq-deadline written again as before ({current_elevator(n4)})")
            ext = [l for l in log_lines(d) if "changed externally" in l]
            check(sum(1 for l in ext if n1 in l) == 3 and sum(1 for l in ext if n2 in l) == 1 and
                  not any(n3 in l or n4 in l for l in ext), f"(x) one line per value changed behind its back: {ext}")
            check(sysq(n1, "rq_affinity") == other_rq["x1"] and sysq(n1, "nr_requests") == "32" and current_elevator(n2) == "kyber",
                  "(x) still left after the lines")
        finally:
            d.stop()
        # (x1's elevator, blkmqd's, is put back: none resets nr_requests and has no fifo_batch)
        check(sysq(n1, "rq_affinity") == other_rq["x1"], f"(x1) stop leaves someone else's rq_affinity ({sysq(n1, 'rq_affinity')})")
        check(current_elevator(n1) == "none" and current_elevator(n2) == "kyber", f"(x) stop puts back blkmqd's own elevator only "
              f"({current_elevator(n1)}, {current_elevator(n2)})")
    finally:
        d.stop()
        for c, n in name.items():
            set_elevator(n, "none")
            set_sysq(n, "rq_affinity", rq0[c])


# ---- fixture copies ---------------------------------------------------------------------------

copy_fixture = bt.copy_fixture


def get(root, rel):
    try:
        with open(os.path.join(root, rel)) as f:
            return f.read().strip()
    except OSError as e:
        return f"<{e.strerror}>"


def put(root, rel, text):
    with open(os.path.join(root, rel), "w") as f:
        f.write(text)


VECTORS = (25, 26, 27, 28)      # nvme0n1's queue vectors in vm-6.1-nvme-4q


def start_placed(tmp, case):
    """bt.nvme_irq_daemon() started on nvme0n1, its four queue vectors checked placed on CPUs 1-2.
    Returns (root, daemon, each vector's affinity before the start)."""
    root, d = bt.nvme_irq_daemon(tmp, case)
    irq = lambda n: f"proc/irq/{n}/smp_affinity_list"      # noqa: E731
    before = {n: get(root, irq(n)) for n in VECTORS}
    d.start("--root", root, "--devices", "nvme0n1")
    placed = {n: get(root, irq(n)) for n in VECTORS}
    check(placed == {n: "1-2" for n in VECTORS}, f"({case}) four vectors placed: {placed} (were {before})")
    return root, d, before


def case_s_stop_counts(tmp):
    """(s) the stop summary counts restored, failed and left values, and they add up."""
    irq = lambda n: f"proc/irq/{n}/smp_affinity_list"      # noqa: E731
    root, d, before = start_placed(tmp, "s")
    try:
        lines = [l for l in log_lines(d) if "nvme0n1" in l and "IRQ" in l]
        check(len(lines) == 0, f"(s) no line per vector: {lines}")
        put(root, irq(26), "3\n")                       # another tool
        os.unlink(os.path.join(root, irq(27)))          # a write back that fails
        os.mkdir(os.path.join(root, irq(27)))
    finally:
        rc = d.stop()
    check(rc == 0, f"(s) SIGTERM exit status 0 (got {rc})")
    with open(d.log, errors="replace") as f:
        stop = [l for l in f.read().splitlines() if "Stopping:" in l]
    check(len(stop) == 1 and "Stopping: 2 original value(s) restored, 1 failed, 1 left as changed by someone else" in stop[0],
          f"(s) the stop summary adds up: {stop}")
    check(get(root, irq(26)) == "3", f"(s) IRQ 26 keeps the other tool's value ({get(root, irq(26))})")
    check(get(root, irq(25)) == before[25] and get(root, irq(28)) == before[28], "(s) IRQ 25 and 28 restored")


def irq_log_lines(d):
    """The notice/info/warning lines about nvme0n1's IRQ vectors."""
    return [l for l in log_lines(d) if l.startswith(("<4>", "<5>", "<6>")) and "nvme0n1" in l and "IRQ" in l]


def moved_by_another_tool(d, root, n, case, reloads):
    """IRQ n of nvme0n1 moved to CPU 3 by another tool, then `reloads` reloads: not moved back,
    applied/irq_affinity counts it changed externally, one line says so (Reassert=no).
    Returns applied/irq_affinity."""
    rel = f"proc/irq/{n}/smp_affinity_list"
    put(root, rel, "3\n")
    n0 = len(irq_log_lines(d))
    for _ in range(reloads):
        check(bt.write_file(d.path("reload"), b"1\n") == 0, f"({case}) echo 1 > reload")
    check(get(root, rel) == "3", f"({case}) IRQ {n} not moved back ({get(root, rel)})")
    v = d.read("devices", "nvme0n1", "applied", "irq_affinity")
    check("1 changed externally" in v, f"({case}) applied/irq_affinity: {v!r}")
    new = irq_log_lines(d)[n0:]
    check(len(new) == 1 and f"IRQ {n} to 3" in new[0] and "Reassert=no" in new[0], f"({case}) one line for the change: {new}")
    return v


def case_r_reload(tmp):
    """(r) a reload neither rewrites a vector another tool moved nor repeats a failed vector's warning."""
    root = copy_fixture("vm-6.1-nvme-4q", os.path.join(tmp, "reload-root"))
    irq = lambda n: f"proc/irq/{n}/smp_affinity_list"      # noqa: E731
    for n in (25, 26, 27, 28):
        put(root, irq(n), "0-3\n")
    os.unlink(os.path.join(root, irq(27)))
    os.mkdir(os.path.join(root, irq(27)))              # its write fails (EISDIR)
    d = bt.config_daemon(tmp, "r", "[Manager]\nVerifySec=0\n[Device:nvme]\nMatchName=nvme0n1\nIrqAffinity=hctx\n")
    d.start("--root", root, "--devices", "nvme0n1")
    try:
        check(get(root, irq(26)) == "1", f"(r) IRQ 26 placed on its hctx CPU 1 ({get(root, irq(26))})")
        lines = irq_log_lines(d)
        check(len(lines) == 1 and "IRQ 27: cannot read (EISDIR)" in lines[0] and "3 placed" in lines[0],
              f"(r) one line for the disk, naming the failed vector: {lines}")
        v = moved_by_another_tool(d, root, 26, "r", 3)
        check("1 failed" in v, f"(r) applied/irq_affinity still counts the failed vector, said once: {v!r}")
    finally:
        rc = d.stop()
    check(rc == 0, f"(r) SIGTERM exit status 0 (got {rc})")
    with open(d.log, errors="replace") as f:
        stop = [l for l in f.read().splitlines() if "Stopping:" in l]
    check(len(stop) == 1 and stop[0].endswith("Stopping: 2 original value(s) restored"), f"(r) stop: {stop}")
    check(get(root, irq(26)) == "3" and get(root, irq(25)) == "0-3" and get(root, irq(28)) == "0-3",
          "(r) 25 and 28 restored, 26 keeps the other tool's value")


def case_y_irq_restart(tmp):
    """(y) (x) for IRQ vectors: kill -9, a vector moved by another tool, a restart: left."""
    irq = lambda n: f"proc/irq/{n}/smp_affinity_list"      # noqa: E731
    root, d, before = start_placed(tmp, "y")
    try:
        ok, _ = wait_for(lambda: sum("written.irq.2" in t for t in originals_files(d).values()) == 1, 5.0, 0.05)
        check(ok, f"(y) the originals file stores what blkmqd wrote: {originals_files(d)}")
    finally:
        rc = d.stop(signal.SIGKILL)
    check(rc == -signal.SIGKILL, f"(y) killed ({rc})")
    put(root, irq(26), "3\n")                       # another tool, while blkmqd is down
    put(root, irq(27), before[27] + "\n")           # put back to its original: placed again
    d.start("--root", root, "--devices", "nvme0n1")
    try:
        v = d.read("devices", "nvme0n1", "applied", "irq_affinity")
        check("1 changed externally" in v, f"(y) applied/irq_affinity: {v!r}")
        lines = [l for l in irq_log_lines(d) if "changed externally" in l or "Reassert=no" in l]
        check(len(lines) == 1 and "IRQ 26 to 3" in lines[0], f"(y) one line for the change: {lines}")
        check(get(root, irq(26)) == "3", f"(y) IRQ 26 left at 3 ({get(root, irq(26))})")
        check(get(root, irq(27)) == "1-2", f"(y) IRQ 27, back at its original, placed again ({get(root, irq(27))})")
    finally:
        rc = d.stop()
    check(rc == 0, f"(y) SIGTERM exit status 0 (got {rc})")
    check(get(root, irq(26)) == "3" and all(get(root, irq(n)) == before[n] for n in (25, 27, 28)),
          f"(y) stop: 25, 27, 28 restored, 26 keeps the other tool's value ({[get(root, irq(n)) for n in (25, 26, 27, 28)]})")


def case_k_kept_vector(tmp):
    """(k) a vector the plan found in place, moved by another tool: not moved back by a reload."""
    root = copy_fixture("vm-6.1-nvme-4q", os.path.join(tmp, "kept-root"))
    irq = lambda n: f"proc/irq/{n}/smp_affinity_list"      # noqa: E731
    for n in (25, 26, 27, 28):
        put(root, irq(n), "0-3\n")
    d = bt.config_daemon(tmp, "k", "[Manager]\nVerifySec=0\n[Device:nvme]\nMatchName=nvme0n1\nIrqAffinity=hctx\n")
    d.start("--root", root, "--devices", "nvme0n1")
    placed = get(root, irq(25))
    d.stop()
    put(root, irq(25), placed + "\n")                  # already where blkmqd puts it
    for n in (26, 27, 28):
        put(root, irq(n), "0-3\n")
    d = bt.config_daemon(tmp, "k2", "[Manager]\nVerifySec=0\n[Device:nvme]\nMatchName=nvme0n1\nIrqAffinity=hctx\n")
    d.start("--root", root, "--devices", "nvme0n1")
    try:
        check(get(root, irq(25)) == placed and get(root, irq(26)) != "0-3", f"(k) IRQ 25 kept on {placed}, the others placed")
        moved_by_another_tool(d, root, 25, "k", 2)
    finally:
        rc = d.stop()
    check(rc == 0, f"(k) SIGTERM exit status 0 (got {rc})")
    check(get(root, irq(25)) == "3" and all(get(root, irq(n)) == "0-3" for n in (26, 27, 28)),
          "(k) stop: 26-28 restored, 25 keeps the other tool's value")


def mkput(root, rel, text):
    os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
    put(root, rel, text)


def case_w_agents(tmp):
    """(w) udev rules and a running tuned that set what blkmqd manages: one warning each, with file:line;
    the admin's elevator is deferred to, named in owner/ and applied/."""
    root = copy_fixture("vm-6.1-nvme-4q", os.path.join(tmp, "agents-root"))
    mkput(root, "etc/udev/rules.d/60-scheduler.rules",
          "# ours\nACTION==\"add|change\", KERNEL==\"nvme*\", ATTR{queue/scheduler}=\"kyber\"\n")
    mkput(root, "usr/lib/udev/rules.d/60-scheduler.rules", 'KERNEL=="sd*", ATTR{queue/scheduler}="bfq"\n')
    mkput(root, "usr/lib/udev/rules.d/61-irq.rules",
          'SUBSYSTEM=="block", RUN+="/bin/sh -c \'echo 1 > /proc/irq/26/smp_affinity_list\'"\n')
    mkput(root, "usr/lib/udev/rules.d/63-masked.rules", 'KERNEL=="nvme*", ATTR{queue/rq_affinity}="2"\n')
    mkput(root, "etc/udev/rules.d/63-masked.rules", "")
    mkput(root, "run/udev/rules.d/62-nr.rules", 'KERNEL=="nvme*", \\\n  ATTR{queue/nr_requests}:="64"\n')
    mkput(root, "etc/tuned/active_profile", "myprof\n")
    mkput(root, "etc/tuned/myprof/tuned.conf", "[main]\ninclude=base\n\n[scheduler]\nisolated_cores=2-3\n")
    mkput(root, "usr/lib/tuned/base/tuned.conf", "[disk]\nelevator=bfq\n")
    mkput(root, "run/tuned/tuned.pid", "4242\n")
    os.makedirs(os.path.join(root, "proc", "4242"), exist_ok=True)
    mkput(root, "run/irqbalance/irqbalance4243.sock", "")       # a socket in life; its name is what counts
    mkput(root, "run/irqbalance/irqbalance4244.sock", "")       # a stale one: no such process
    os.makedirs(os.path.join(root, "proc", "4243"), exist_ok=True)
    want = ["/etc/udev/rules.d/60-scheduler.rules:2:", "/usr/lib/udev/rules.d/61-irq.rules:1:",
            "/run/udev/rules.d/62-nr.rules:1:", "/etc/tuned/myprof/tuned.conf:5:", "/usr/lib/tuned/base/tuned.conf:2:",
            "irqbalance is running (pid 4243"]
    for running in (True, False):
        if not running:
            os.unlink(os.path.join(root, "run/tuned/tuned.pid"))
        d = bt.config_daemon(tmp, f"w{int(running)}", "[Manager]\nVerifySec=0\n")
        d.start("--root", root, "--devices", "nvme0n1")
        # the admin's rule in /etc (kyber) and tuned's profile (bfq, read after udev): the
        # profile's elevator is the one left in place; the owner and applied files name it
        owner, applied = d.read("devices", "nvme0n1", "owner", "elevator"), d.read("devices", "nvme0n1", "applied", "elevator")
        src = ('tuned profile "base" /usr/lib/tuned/base/tuned.conf:2 [disk] elevator=bfq' if running else
               'udev rule /etc/udev/rules.d/60-scheduler.rules:2 ATTR{queue/scheduler}="kyber"')
        check(owner == f"deferred: {src} (the admin's choice)\n", f"(w) owner/elevator names the source (tuned running: {running}): {owner!r}")
        check(applied.startswith("deferred: left to " + src), f"(w) applied/elevator is deferred: {applied!r}")
        d.stop()
        with open(d.log, errors="replace") as f:
            warn = [l for l in f.read().splitlines() if l.startswith("<4>") and "blkmqd manages too" in l]
        expect = want if running else [w for w in want if "tuned" not in w]
        for w in expect:
            check(sum(1 for l in warn if w in l) == 1, f"(w) one warning names {w} (tuned running: {running})")
        check(len(warn) == len(expect), f"(w) nothing else (the hidden, the masked; tuned only while it runs): {warn}")
        check(any("queue scheduler" in l and "60-scheduler.rules:2" in l for l in warn), "(w) the attribute is named")


def case_w2_source_across_kill(tmp):
    """(w2) a value another tool set, written over (an explicit RqAffinity=), the daemon killed and
    started again, the tool gone (its rule removed): the stop leaves blkmqd's value, as the
    first run would have (the original's source is stored with it: source.<knob>=)."""
    root = copy_fixture("vm-6.1-nvme-4q", os.path.join(tmp, "w2-root"))
    rule = "etc/udev/rules.d/60-rq.rules"
    mkput(root, rule, 'KERNEL=="nvme*", ATTR{queue/rq_affinity}="2"\n')
    put(root, "sys/block/nvme0n1/queue/rq_affinity", "2\n")          # the rule ran at boot
    conf = "[Manager]\nVerifySec=0\n[Device:nv]\nMatchName=nvme0n1\nRqAffinity=1\n"
    d = bt.config_daemon(tmp, "w2", conf)
    d.start("--root", root, "--devices", "nvme0n1")
    owner = d.read("devices", "nvme0n1", "owner", "rq_affinity")
    check(owner.startswith("overridden: udev rule /etc/udev/rules.d/60-rq.rules:1"), f"(w2) owner/rq_affinity: {owner!r}")
    ok, _ = wait_for(lambda: any("source.rq_affinity=udev rule /etc/udev/rules.d/60-rq.rules:1" in t
                                 for t in originals_files(d).values()), 5.0, 0.05)
    check(ok, f"(w2) the originals file stores the original's source: {originals_files(d)}")
    d.stop(signal.SIGKILL)
    with open(os.path.join(root, "sys/block/nvme0n1/queue/rq_affinity")) as f:
        check(f.read().strip() == "1", "(w2) blkmqd's 1 in place after the kill")
    os.unlink(os.path.join(root, rule))
    d.start("--root", root, "--devices", "nvme0n1")
    d.stop()
    with open(os.path.join(root, "sys/block/nvme0n1/queue/rq_affinity")) as f:
        v = f.read()
    check(v.strip() == "1", f"(w2) the rule gone: its 2 is not put back after the restart ({v!r})")
    with open(d.log, errors="replace") as f:
        check(any("not put back" in l and "60-rq.rules" in l for l in f.read().splitlines()), "(w2) the stop says why")


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-drift-", (case_v1_noticed, case_v2_reassert, case_v3_off, case_v4_kept, case_x_restart),
                          (("s", case_s_stop_counts), ("r", case_r_reload), ("k", case_k_kept_vector), ("y", case_y_irq_restart), ("w", case_w_agents),
                           ("w2", case_w2_source_across_kill)),
                          "loop devices, FUSE mount, sysfs writes"))
