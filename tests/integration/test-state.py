#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-state.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

State the user sees (issue 13), through the real FUSE mount on loop devices this test attaches
(passed by exact name in --devices; never any other disk), each daemon with its own
--state-dir and --config in a temp dir:

(n) after blkmqd switches an elevator, facts/elevator, facts/nr_requests, facts/rq_affinity,
    the metrics elevator= label, blkmqctl status and explain show what the kernel has now;
    so do they after an override and after someone else's change noticed by a verify;
(o) "auto" puts a value blkmqd wrote back at once: nr_requests, rq_affinity, and the
    elevator of a class that keeps what it finds; policy/enabled 0 puts everything back;
    policy/enabled takes "auto" like every policy file;
(r) an elevator switch resets nr_requests: applied/nr_requests and explain say so, stop puts
    the admin's value back; an nr_requests override is written again after the switch,
    capped to what the new elevator takes;
(s) live files (metrics, devices/<disk>/stat) have mtime = when read.
(u) a second blkmqd started on the same state directory (a --dry-run preview next to a running
    one) does not load the first one's originals as a crashed run's: before, it put them back
    at its stop (a dry-run writing to the kernel) and removed them under the running one.
(v) --dry-run after a crash (kill -9) neither puts back nor removes the crashed run's
    originals: "write nothing" holds at its stop too; the next blkmqd that writes restores them.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, read_text, set_elevator, wait_for  # noqa: E402


def sysfs(name, attr):
    return read_text(f"/sys/block/{name}/queue/{attr}").strip()


def set_sysfs(name, attr, value):
    with open(f"/sys/block/{name}/queue/{attr}", "w") as f:
        f.write(value)


def start(d, tmp, devices, conf_text=""):
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    d.start("--devices", devices, "-c", conf)


def fact(d, name, f):
    return d.read("devices", name, "facts", f).strip()


def applied(d, name, knob):
    return d.read("devices", name, "applied", knob).strip()


def explain(d, name):
    return d.read("devices", name, "explain")


def blkmqctl():
    exe = os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "ctl", "blkmqctl")
    return exe if os.access(exe, os.X_OK) else None


def status_elevator(d, name):
    exe = blkmqctl()
    if not exe:
        return None
    r = subprocess.run([exe, "--mountpoint", d.mnt, "status", "--json"], capture_output=True, text=True)
    try:
        for dev in json.loads(r.stdout)["devices"]:
            if dev["disk"] == name:
                return dev.get("elevator")
    except (ValueError, KeyError):
        return None
    return None


def metrics_elevator(d, name):
    m = re.search(r'blkmqd_disk_info\{[^}]*device="%s"[^}]*\}' % re.escape(name), d.read("metrics"))
    if not m:
        m = re.search(r'\{[^}]*device="%s"[^}]*elevator="[^"]*"[^}]*\}' % re.escape(name), d.read("metrics"))
    if not m:
        return None
    e = re.search(r'elevator="([^"]*)"', m.group(0))
    return e.group(1) if e else None


def policy(d, name, knob, value):
    return d.write(value, "devices", name, "policy", knob)


def case_n_facts_now(d, loops, tmp):
    """(n) after apply, override and a noticed external change, facts/explain/metrics/status say what the kernel has"""
    name = loops.attach("n", elevator="mq-deadline")
    start(d, tmp, name)
    try:
        ok, _ = wait_for(lambda: current_elevator(name) == "none", 5.0)
        check(ok, f"(n) blkmqd switched {name} mq-deadline -> none (stacked)")
        check(fact(d, name, "elevator") == "none", f"(n) facts/elevator is none ({fact(d, name, 'elevator')!r})")
        check(fact(d, name, "nr_requests") == sysfs(name, "nr_requests"),
              f"(n) facts/nr_requests is the kernel's after the switch ({fact(d, name, 'nr_requests')} vs {sysfs(name, 'nr_requests')})")
        ex = explain(d, name)
        check("elevator=none (mq-deadline before blkmqd switched it)" in ex,
              f"(n) explain shows the elevator the disk has and the one before: {ex!r}")
        me = metrics_elevator(d, name)
        check(me == "none", f"(n) metrics elevator= label is none ({me!r})")
        se = status_elevator(d, name)
        if se is not None or blkmqctl():
            check(se == "none", f"(n) blkmqctl status --json elevator is none ({se!r})")

        # an override of rq_affinity: facts and explain show 2 after the write
        check(policy(d, name, "rq_affinity", "2") == 0, "(n) policy/rq_affinity 2")
        check(sysfs(name, "rq_affinity") == "2", "(n) queue/rq_affinity is 2")
        check(fact(d, name, "rq_affinity") == "2", f"(n) facts/rq_affinity is 2 ({fact(d, name, 'rq_affinity')!r})")
        ex = explain(d, name)
        line = [l for l in ex.splitlines() if "-> rq_affinity=" in l]
        check(line and "rq_affinity=2 (1 before blkmqd wrote it) ->" in line[0] and "rq_affinity=1 ->" not in line[0],
              f"(n) the explain line shows rq_affinity=2 as the disk's value, and 1 before blkmqd wrote it: {line!r}")

        # someone else switches to kyber; a read of applied/ notices it: facts follow
        set_elevator(name, "kyber")
        v = applied(d, name, "elevator")
        check("changed externally to kyber" in v, f"(n) applied/elevator notices kyber ({v!r})")
        check(fact(d, name, "elevator") == "kyber", f"(n) facts/elevator is kyber after the verify ({fact(d, name, 'elevator')!r})")
        check(fact(d, name, "nr_requests") == sysfs(name, "nr_requests"), "(n) facts/nr_requests follows the external switch")
        check(metrics_elevator(d, name) == "kyber", f"(n) metrics elevator= kyber ({metrics_elevator(d, name)!r})")

        # a value blkmqd never wrote, changed by someone else (no uevent comes for it): a
        # verify (a read of applied/) is a look at the kernel, facts follow
        check(policy(d, name, "rq_affinity", "auto") == 0, "(n) rq_affinity back to auto")
        set_sysfs(name, "rq_affinity", "0")
        applied(d, name, "rq_affinity")
        check(fact(d, name, "rq_affinity") == "0", f"(n) facts/rq_affinity 0 after someone else's write ({fact(d, name, 'rq_affinity')!r})")
        check("rq_affinity=0 ->" in explain(d, name), "(n) explain shows rq_affinity=0")
        set_sysfs(name, "rq_affinity", "1")
    finally:
        d.stop()
    set_elevator(name, "none")


def case_o_auto_restores(d, loops, tmp):
    """(o) "auto" and policy/enabled 0 put back what blkmqd wrote, at once"""
    name = loops.attach("o")
    nr0, rq0 = sysfs(name, "nr_requests"), sysfs(name, "rq_affinity")
    # a class that keeps whatever elevator it finds: the override's elevator must go when it does
    start(d, tmp, name, "[Class:stacked]\nElevator=keep\n")
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "enabled")), 5.0)
        el0 = current_elevator(name)
        other = "mq-deadline" if el0 != "mq-deadline" else "kyber"
        check(policy(d, name, "nr_requests", "64") == 0 and sysfs(name, "nr_requests") == "64", "(o) nr_requests 64 written")
        check(policy(d, name, "nr_requests", "auto") == 0, "(o) policy/nr_requests auto")
        check(sysfs(name, "nr_requests") == nr0, f"(o) queue/nr_requests back to {nr0} ({sysfs(name, 'nr_requests')})")
        v = applied(d, name, "nr_requests")
        check(not v.startswith("ok: 64"), f"(o) applied/nr_requests no longer says ok: 64 ({v!r})")
        check(fact(d, name, "nr_requests") == nr0, "(o) facts/nr_requests follows")

        check(policy(d, name, "rq_affinity", "2") == 0 and sysfs(name, "rq_affinity") == "2", "(o) rq_affinity 2 written")
        check(policy(d, name, "rq_affinity", "auto") == 0 and sysfs(name, "rq_affinity") == rq0,
              f"(o) auto: queue/rq_affinity back to {rq0} ({sysfs(name, 'rq_affinity')})")
        v = applied(d, name, "rq_affinity")
        check(v.startswith("unmanaged"), f"(o) applied/rq_affinity unmanaged ({v!r})")

        check(policy(d, name, "elevator", other) == 0 and current_elevator(name) == other, f"(o) elevator {other} written")
        check(policy(d, name, "elevator", "auto") == 0, "(o) policy/elevator auto")
        check(current_elevator(name) == el0, f"(o) class keeps: elevator back to {el0} ({current_elevator(name)})")
        v = applied(d, name, "elevator")
        check(v.startswith("kept: " + el0), f"(o) applied/elevator kept: {el0} ({v!r})")
        check(fact(d, name, "elevator") == el0, "(o) facts/elevator follows")

        # policy/enabled 0: everything blkmqd wrote goes back; "auto" is accepted like elsewhere
        policy(d, name, "nr_requests", "64")
        policy(d, name, "rq_affinity", "0")
        policy(d, name, "elevator", other)
        check(sysfs(name, "rq_affinity") == "0" and current_elevator(name) == other, "(o) overrides written again")
        check(policy(d, name, "enabled", "0") == 0, "(o) policy/enabled 0")
        check(sysfs(name, "nr_requests") == nr0 and sysfs(name, "rq_affinity") == rq0 and current_elevator(name) == el0,
              f"(o) enabled=0: every value back ({sysfs(name, 'nr_requests')} {sysfs(name, 'rq_affinity')} {current_elevator(name)})")
        check(d.read("devices", name, "policy", "enabled").strip() == "0", "(o) policy/enabled reads 0")
        check(policy(d, name, "enabled", "auto") == 0, "(o) policy/enabled takes auto")
        check(d.read("devices", name, "policy", "enabled").strip() == "auto", "(o) policy/enabled reads auto")
        ok, _ = wait_for(lambda: current_elevator(name) == other, 2.0)
        check(ok and sysfs(name, "rq_affinity") == "0", "(o) enabled auto: the overrides apply again")
    finally:
        d.stop()
    check(current_elevator(name) == el0 and sysfs(name, "rq_affinity") == rq0 and sysfs(name, "nr_requests") == nr0,
          "(o) stop restores everything")


def case_r_nr_requests_reset(d, loops, tmp):
    """(r) an elevator switch resets nr_requests: said in applied/ and explain; overrides written after it"""
    name = loops.attach("r", elevator="mq-deadline")
    set_sysfs(name, "nr_requests", "512")        # an admin's value, set before blkmqd
    start(d, tmp, name)
    try:
        ok, _ = wait_for(lambda: current_elevator(name) == "none", 5.0)
        check(ok, "(r) blkmqd switched mq-deadline -> none")
        now = sysfs(name, "nr_requests")
        check(now != "512", f"(r) the kernel reset nr_requests ({now})")
        v = applied(d, name, "nr_requests")
        check(f"reset by the kernel from 512 to {now}" in v, f"(r) applied/nr_requests says the kernel reset it ({v!r})")
        ex = explain(d, name)
        check("nr-requests-elevator-switch" in ex and "reset by the kernel" in ex,
              f"(r) explain says the switch reset nr_requests: {ex!r}")
        check(fact(d, name, "nr_requests") == now, "(r) facts/nr_requests is the kernel's")
    finally:
        d.stop()
    check(current_elevator(name) == "mq-deadline" and sysfs(name, "nr_requests") == "512",
          f"(r) stop: mq-deadline and the admin's 512 back ({current_elevator(name)}, {sysfs(name, 'nr_requests')})")

    # an override above what none takes: written after the switch, capped, and said
    os.makedirs(os.path.join(tmp, "state"), exist_ok=True)
    start(d, tmp, name, "[Class:stacked]\nElevator=keep\n")
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "nr_requests")), 5.0)
        check(policy(d, name, "nr_requests", "1024") == 0 and sysfs(name, "nr_requests") == "1024", "(r) nr_requests 1024 under mq-deadline")
        check(policy(d, name, "elevator", "none") == 0 and current_elevator(name) == "none", "(r) elevator none override")
        tags = read_text(f"/sys/block/{name}/mq/0/nr_tags").strip()
        check(sysfs(name, "nr_requests") == tags, f"(r) nr_requests capped to the tag depth {tags} ({sysfs(name, 'nr_requests')})")
        v = applied(d, name, "nr_requests")
        check(v.startswith(f"ok: {tags}"), f"(r) applied/nr_requests ok: {tags} ({v!r})")
        ex = explain(d, name)
        check("capped" in ex and "elevator none" in ex, f"(r) explain says it is capped under none: {ex!r}")
    finally:
        d.stop()
    check(current_elevator(name) == "mq-deadline" and sysfs(name, "nr_requests") == "512",
          f"(r) stop: mq-deadline and 512 back ({current_elevator(name)}, {sysfs(name, 'nr_requests')})")
    set_elevator(name, "none")


def case_s_live_mtime(d, loops, tmp):
    """(s) live files report when they were read as mtime, not the daemon's start"""
    name = loops.attach("s")
    start(d, tmp, name)
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "stat")), 5.0)
        time.sleep(3.0)         # well past the start time and the kernel's 1 s attribute cache
        for rel in (("metrics",), ("devices", name, "stat"),
                    ("devices", name, "applied", "elevator")):
            p = d.path(*rel)
            st = os.stat(p)
            now = time.time()
            check(abs(st.st_mtime - now) < 1.5 and abs(st.st_ctime - now) < 1.5,
                  f"(s) {'/'.join(rel)}: mtime {st.st_mtime:.1f} is now ({now:.1f})")
        p = d.path("metrics")
        m1 = os.stat(p).st_mtime
        time.sleep(1.2)
        check(os.stat(p).st_mtime > m1, "(s) metrics mtime moves")
        st = os.stat(d.path("devices", name, "class"))
        check(time.time() - st.st_mtime > 1.0, "(s) a file that does not change keeps the mount time")
    finally:
        d.stop()


def case_u_second_daemon(d, loops, tmp):
    """(u) a second blkmqd on the same state directory (a --dry-run preview beside the service) neither loads nor removes the first one's originals"""
    name = loops.attach("u", elevator="none")
    start(d, tmp, name, "[Class:stacked]\nElevator=keep\n")
    proc = None
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
        check(policy(d, name, "elevator", "kyber") == 0 and current_elevator(name) == "kyber", "(u) the first blkmqd switches to kyber")
        originals = os.path.join(d.state, "originals")
        files = os.listdir(originals)
        check(len(files) == 1, f"(u) its original is stored ({files})")
        log = os.path.join(tmp, "second.log")
        with open(log, "w") as f:
            proc = subprocess.Popen([bt.exe_arg(), "--no-mount", "--dry-run", "--state-dir", d.state, "--devices", name,
                                     "-c", os.path.join(tmp, "blkmqd.conf")], stdout=f, stderr=subprocess.STDOUT)
        ok, _ = wait_for(lambda: proc.poll() is not None or " started: " in read_text(log), 30.0, 0.02)
        check(ok and proc.poll() is None, f"(u) the second one starts: {read_text(log)[-400:]!r}")
        check("is in use by another blkmqd" in read_text(log), "(u) ... and says the state directory is the other one's")
        check("recorded by an earlier run" not in read_text(log), "(u) it does not take the first one's originals for a crashed run's")
        rc = bt.stop_process(proc)
        proc = None
        check(rc == 0, f"(u) the second one stops ({rc})")
        check(current_elevator(name) == "kyber", f"(u) its stop (dry-run) wrote nothing: kyber stays ({current_elevator(name)})")
        check(os.listdir(originals) == files, f"(u) the first one's originals are still stored ({os.listdir(originals)})")
    finally:
        if proc:
            bt.stop_process(proc)
        d.stop()
    check(current_elevator(name) == "none", f"(u) the first one's stop puts none back ({current_elevator(name)})")


def case_v_dry_run_after_crash(d, loops, tmp):
    """(v) --dry-run after a crash writes nothing, at its stop neither: the crashed run's originals stay for a blkmqd that writes"""
    name = loops.attach("v", elevator="none")
    start(d, tmp, name, "[Class:stacked]\nElevator=keep\n")
    wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), 5.0)
    check(policy(d, name, "elevator", "kyber") == 0 and current_elevator(name) == "kyber", "(v) blkmqd switches to kyber")
    originals = os.path.join(d.state, "originals")
    files = os.listdir(originals)
    check(d.stop(signal.SIGKILL) == -signal.SIGKILL and current_elevator(name) == "kyber", "(v) kill -9 leaves kyber")
    bt.sh("umount", "-l", d.mnt, check_rc=False)
    # the crashed run's override would switch it again: preview without it
    shutil.rmtree(os.path.join(d.state, "overrides"), ignore_errors=True)
    os.makedirs(os.path.join(d.state, "overrides"), mode=0o700)
    log = os.path.join(tmp, "dry.log")
    with open(log, "w") as f:
        proc = subprocess.Popen([bt.exe_arg(), "--no-mount", "--dry-run", "--state-dir", d.state, "--devices", name,
                                 "-c", os.path.join(tmp, "blkmqd.conf")], stdout=f, stderr=subprocess.STDOUT)
    try:
        ok, _ = wait_for(lambda: proc.poll() is not None or " started: " in read_text(log), 30.0, 0.02)
        check(ok and proc.poll() is None, "(v) --dry-run starts")
        check("kept in the state directory for a blkmqd that writes" in read_text(log), "(v) ... and says the originals are kept")
    finally:
        rc = bt.stop_process(proc)
    check(rc == 0, f"(v) --dry-run stops ({rc})")
    check(current_elevator(name) == "kyber", f"(v) its stop wrote nothing: kyber stays ({current_elevator(name)})")
    check(os.listdir(originals) == files, f"(v) the crashed run's originals are still stored ({os.listdir(originals)})")
    start(d, tmp, name, "[Class:stacked]\nElevator=keep\n")
    d.stop()
    check(current_elevator(name) == "none", f"(v) the next blkmqd that writes puts none back at its stop ({current_elevator(name)})")


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-state-", (case_n_facts_now, case_o_auto_restores, case_r_nr_requests_reset,
                                            case_s_live_mtime, case_u_second_daemon, case_v_dry_run_after_crash),
                          why="loop devices, FUSE mount, sysfs writes", before_case=bt.forget_state))
