#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-speed.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

Slow or fast by what the disk does (policies/speed.h, manager/speed.c), the built daemon with
blkmqd's shipped defaults (Daemon(manage_virtual=False): no suite opt-ins).

(s) stat snapshots: a copy of vm-6.12-virtio-blk-4q (--root: no BPF, so the stat signal, busy
    time per I/O, sampled at the periodic verify, VerifySec=1): the disk's rotational=1 is
    virtio-blk's and untrusted, so it starts unknown, nothing written, explain waiting for a
    measurement, facts/speed "unmeasured (0 I/Os seen, 200 needed)", facts/speed_source the
    stat. The test rewrites block/vda/stat as the kernel would after 5,000 reads in 50 ms of
    busy time (10 us each): measured fast, one journal line "Measured fast (was unmeasured)",
    the class fast-multiqueue, none kept; then 400 reads taking 8 s (20 ms each, a throttled
    volume): within MinChangeSec the class stays and facts/speed says the slow window is held;
    blkmqctl status and explain, the metrics families (docs/METRICS.md), nothing written.
(t) the same copy with MinChangeSec=0 and a slow disk from the start: measured slow, class
    many-hctx-slow, mq-deadline written into the copy's queue/scheduler; stop puts none back.
(c) the same copy with [Speed] TrustRotational=virtio_blk: many-hctx-slow from the flag at once,
    mq-deadline written; facts/rotational_hint and blkmqd_disk_rotational_hint say trusted (by
    the config; they showed the table's untrusted before).
(r) the measurement across restarts and a reboot, as a history on the same copy with a boot id
    (proc/sys/kernel/random/boot_id; MinChangeSec=3600): measured slow -> many-hctx-slow,
    mq-deadline written, measured/<identity> stored with the boot id; kill -9 and start again
    (same boot): many-hctx-slow at the first read, facts/speed "..., measured before the restart
    at <time>", explain "1 change", no "Measured" line, queue/scheduler not written (its mtime);
    a fast window then is held (the stored change counts: a restart is no free class change);
    SIGTERM: the stop puts none back and keeps the file; start again: kept at once, mq-deadline
    written once by the start, no "Measured" line; kill -9, then a reboot (a new boot id, the
    kernel's scheduler and counters): the stored measurement is dropped with a line, its file
    removed, unknown, nothing written.
(b) a live loop device with BPF service times (this machine's kernel; skipped without the BPF
    provider): O_DIRECT 4 KiB reads make facts/speed "fast: p50 ... over N I/Os" with BPF as
    its source, the journal line, the metrics; with no I/O for 4 s the daemon is not woken
    once (its voluntary context switches do not move; VerifySec=0, no other timer).
"""

import glob
import os
import re
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, wait_for  # noqa: E402

STAT = "sys/block/vda/stat"


def ctl(d, *args):
    exe = os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "ctl", "blkmqctl")
    return subprocess.run([exe, "--mountpoint", d.mnt, *args], capture_output=True, text=True)


def write_stat(root, reads, io_ticks_ms):
    """block/vda/stat in the kernel's format (block/genhd.c diskstats_show(): 17 fields) with
    reads completed and io_ticks set, the rest 0."""
    f = [0] * 17
    f[0], f[9] = reads, io_ticks_ms
    with open(os.path.join(root, STAT), "w") as out:
        out.write(" ".join(f"{v:8d}" for v in f) + "\n")


def speed_daemon(tmp, tag, min_change):
    root = bt.copy_fixture("vm-6.12-virtio-blk-4q", os.path.join(tmp, "root-" + tag))
    write_stat(root, 1000, 100)
    d = bt.config_daemon(tmp, tag, f"[Manager]\nVerifySec=1\n[Speed]\nMinIOs=200\nWindowSec=0\nMinChangeSec={min_change}\n")
    d.manage_virtual = False            # blkmqd's shipped defaults: virtio_blk's flag untrusted
    return root, d


def scheduler(root):
    return bt.read_text(os.path.join(root, "sys/block/vda/queue/scheduler")).strip()


def case_s_stat(tmp):
    """(s) stat snapshots: unknown until measured, fast by measurement, a slow window held by MinChangeSec"""
    root, d = speed_daemon(tmp, "s", 3600)
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "unknown\n", f"(s) unknown at start ({d.read('devices', 'vda', 'class')!r})")
        check(d.read("devices", "vda", "facts", "speed") == "unmeasured (0 I/Os seen, 200 needed)\n",
              f"(s) facts/speed {d.read('devices', 'vda', 'facts', 'speed')!r}")
        src = d.read("devices", "vda", "facts", "speed_source")
        check(src.startswith("busy per I/O: block/<disk>/stat io_ticks") and "fixture root" in src,
              f"(s) facts/speed_source: the stat, BPF not loaded ({src!r})")
        hint = d.read("devices", "vda", "facts", "rotational_hint")
        check(hint.startswith("untrusted: virtio_blk cannot report the medium"), f"(s) facts/rotational_hint {hint!r}")
        explain = d.read("devices", "vda", "explain")
        check("-> slow or fast unknown: waiting for a measurement (rule speed-unknown)" in explain,
              f"(s) explain waits for a measurement: {explain!r}")
        before = scheduler(root)
        r = ctl(d, "status", "vda")
        lines = r.stdout.splitlines()
        cols = lines[1].split() if len(lines) > 2 else []
        row = lines[2].split() if len(lines) > 2 else []
        check(r.returncode == 0 and cols[:2] == ["DISK", "CLASS"] and row[:2] == ["vda", "unknown"]
              and row[cols.index("SPEED")] == "unmeasured",
              f"(s) blkmqctl status while unmeasured: CLASS unknown (a class, not n/a), SPEED unmeasured ({r.stdout!r})")

        write_stat(root, 6000, 150)     # 5,000 reads, 50 ms busy: 10 us per I/O
        ok, _ = wait_for(lambda: d.read("devices", "vda", "class") == "fast-multiqueue\n", 10.0, 0.05)
        check(ok, f"(s) fast-multiqueue by measurement ({d.read('devices', 'vda', 'class')!r})")
        speed = d.read("devices", "vda", "facts", "speed")
        check(speed == "fast: 10 µs busy per I/O over 5,000 I/Os in 1 s\n" or
              re.fullmatch(r"fast: 10 µs busy per I/O over 5,000 I/Os in \d+ s\n", speed) is not None,
              f"(s) facts/speed {speed!r}")
        explain = d.read("devices", "vda", "explain")
        check("speed=fast" in explain and "(rule speed-measured)" in explain and "fast <= 2.0 ms, slow >= 5.0 ms" in explain
              and "1 change" in explain, f"(s) explain names the measurement, bounds and change: {explain!r}")
        ok, _ = wait_for(lambda: "Measured fast (was unmeasured)" in d.tail(200), 5.0)
        check(ok, "(s) one journal line says the class changed by measurement")
        line = [x for x in d.tail(200).splitlines() if "Measured fast" in x]
        check(len(line) == 1 and "-> class fast-multiqueue, was unknown" in line[0], f"(s) the line: {line}")

        write_stat(root, 6400, 8150)    # 400 reads, 8 s busy: 20 ms per I/O
        ok, _ = wait_for(lambda: "fast, held: the last window measured slow (20 ms busy per I/O" in d.read("devices", "vda", "facts", "speed"), 10.0, 0.05)
        check(ok, f"(s) the slow window is held ({d.read('devices', 'vda', 'facts', 'speed')!r})")
        check(d.read("devices", "vda", "class") == "fast-multiqueue\n", "(s) ... and the class stays fast-multiqueue")
        check(d.tail(400).count("Measured ") == 1, "(s) no second journal line")
        check(scheduler(root) == before, f"(s) nothing written: {scheduler(root)!r}")

        r = ctl(d, "status", "vda")
        cols = r.stdout.splitlines()[1].split() if len(r.stdout.splitlines()) > 1 else []
        check(r.returncode == 0 and "SPEED" in cols, f"(s) blkmqctl status has SPEED ({r.stdout!r})")
        row = r.stdout.splitlines()[2].split() if len(r.stdout.splitlines()) > 2 else []
        check(len(row) > cols.index("SPEED") and row[cols.index("SPEED")] == "fast" if "SPEED" in cols else False,
              f"(s) blkmqctl status vda: fast ({row})")
        r = ctl(d, "explain", "vda")
        check(r.returncode == 0 and re.search(r"^speed: +fast, held: ", r.stdout, re.M) and "rotational flag: untrusted" in r.stdout,
              f"(s) blkmqctl explain shows the speed ({r.stdout[-500:]!r})")
        r = ctl(d, "--json", "status", "vda")
        check(r.returncode == 0 and '"speed":"fast"' in r.stdout, f"(s) blkmqctl --json status: speed ({r.stdout!r})")
        m = d.read("metrics")
        check('blkmqd_disk_speed{device="vda",speed="fast"} 1' in m and
              'blkmqd_disk_rotational_hint{device="vda",trust="untrusted"} 1' in m and
              'blkmqd_disk_speed_busy_per_io_seconds{device="vda"} 0.020000' in m and
              'blkmqd_disk_speed_changes_total{device="vda"} 1' in m, "(s) metrics: speed, hint, busy per I/O, changes")
        problems = bt.metrics_doc_problems(m)
        check(not problems, f"(s) docs/METRICS.md lists every family and label: {problems}")
    finally:
        check(d.stop() == 0, "(s) clean stop")


def case_t_slow(tmp):
    """(t) a slow disk from the start: many-hctx-slow by measurement, mq-deadline written, put back at stop"""
    root, d = speed_daemon(tmp, "t", 0)
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "unknown\n", "(t) unknown at start")
        write_stat(root, 1400, 8100)    # 400 reads, 8 s busy
        ok, _ = wait_for(lambda: d.read("devices", "vda", "class") == "many-hctx-slow\n", 10.0, 0.05)
        check(ok, f"(t) many-hctx-slow by measurement ({d.read('devices', 'vda', 'class')!r})")
        # (a plain file takes the write as its content: no brackets move)
        ok, _ = wait_for(lambda: scheduler(root) == "mq-deadline", 10.0, 0.05)
        check(ok, f"(t) mq-deadline written into the copy ({scheduler(root)!r})")
        check(d.read("devices", "vda", "facts", "speed").startswith("slow: 20 ms busy per I/O over 400 I/Os"),
              f"(t) facts/speed {d.read('devices', 'vda', 'facts', 'speed')!r}")
    finally:
        check(d.stop() == 0, "(t) clean stop")
    check(scheduler(root) == "none", f"(t) stop puts none back ({scheduler(root)!r})")


def case_c_trust(tmp):
    """(c) [Speed] TrustRotational=virtio_blk: the flag decides at once (many-hctx-slow, mq-deadline
    written), and facts/rotational_hint and the metric say trusted by the config, not the table's untrusted"""
    root = bt.copy_fixture("vm-6.12-virtio-blk-4q", os.path.join(tmp, "root-c"))
    d = bt.config_daemon(tmp, "c", "[Speed]\nTrustRotational=virtio_blk\n")
    d.manage_virtual = False
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "many-hctx-slow\n", f"(c) class by the trusted flag ({d.read('devices', 'vda', 'class')!r})")
        hint = d.read("devices", "vda", "facts", "rotational_hint")
        check(hint.startswith("trusted: [Speed] TrustRotational= names the driver"), f"(c) facts/rotational_hint {hint!r}")
        check('blkmqd_disk_rotational_hint{device="vda",trust="trusted"} 1' in d.read("metrics"), "(c) the metric says trusted")
        ok, _ = wait_for(lambda: scheduler(root) == "mq-deadline", 10.0, 0.05)
        check(ok, f"(c) mq-deadline written ({scheduler(root)!r})")
    finally:
        check(d.stop() == 0, "(c) clean stop")


def measured_file(d):
    """The daemon's measured/<identity> files: {name: text}."""
    out = {}
    for p in glob.glob(os.path.join(d.state, "measured", "*")):
        out[os.path.basename(p)] = bt.read_text(p)
    return out


def case_r_restart(tmp):
    """(r) the measurement kept across restarts of one boot, dropped at a reboot"""
    root, d = speed_daemon(tmp, "r", 3600)
    os.makedirs(os.path.join(root, "proc/sys/kernel/random"), exist_ok=True)
    boot = os.path.join(root, "proc/sys/kernel/random/boot_id")
    with open(boot, "w") as f:
        f.write(str(uuid.uuid4()) + "\n")
    sched = os.path.join(root, "sys/block/vda/queue/scheduler")
    kernel_sched = bt.read_text(sched)
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "unknown\n", "(r) unknown at the first start")
        check(measured_file(d) == {}, f"(r) nothing stored while unmeasured ({measured_file(d)})")
        write_stat(root, 1400, 8100)    # 400 reads, 8 s busy: 20 ms each
        ok, _ = wait_for(lambda: scheduler(root) == "mq-deadline", 10.0, 0.05)
        check(ok and d.read("devices", "vda", "class") == "many-hctx-slow\n", f"(r) measured slow, mq-deadline ({scheduler(root)!r})")
        ok, _ = wait_for(lambda: len(measured_file(d)) == 1, 10.0, 0.05)
        files = measured_file(d)
        text = next(iter(files.values()), "")
        check(ok and "boot=" + bt.read_text(boot).strip() + "\n" in text and "speed=slow\n" in text and "changes=1\n" in text
              and "ios=400\n" in text and "signal=busy-per-io\n" in text,
              f"(r) measured/<identity> with the boot id, the class and its window: {files}")
        ident = d.read("devices", "vda", "facts", "identity").strip()
        check(text.startswith(f"# blkmqd measured for {ident}\n"), f"(r) keyed by the disk's identity {ident!r} ({list(files)})")
    finally:
        d.stop(signal.SIGKILL)

    # kill -9 and start again, same boot: the class at once, nothing written, no class-change line
    # (the copy's plain file took the write as its content: shown as the kernel shows it)
    with open(sched, "w") as f:
        f.write("none [mq-deadline] \n")
    mtime = os.stat(sched).st_mtime_ns
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "many-hctx-slow\n",
              f"(r) restart: many-hctx-slow at the first read ({d.read('devices', 'vda', 'class')!r})")
        speed = d.read("devices", "vda", "facts", "speed")
        check(re.fullmatch(r"slow: 20 ms busy per I/O over 400 I/Os in \d+ s, measured before the restart at "
                           r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\n", speed) is not None, f"(r) restart: facts/speed {speed!r}")
        explain = d.read("devices", "vda", "explain")
        check("measured before the restart at" in explain and "1 change" in explain and "(rule speed-measured)" in explain,
              f"(r) restart: explain names the stored measurement: {explain!r}")
        ok, _ = wait_for(lambda: d.read("devices", "vda", "applied", "elevator").startswith("ok"), 10.0, 0.05)
        time.sleep(1.5)                 # a write the start would do has been done by now
        check(os.stat(sched).st_mtime_ns == mtime and scheduler(root) == "none [mq-deadline]",
              f"(r) restart: queue/scheduler not written ({scheduler(root)!r}, applied/elevator "
              f"{d.read('devices', 'vda', 'applied', 'elevator')!r})")
        log = d.tail(400)
        check("Measured " not in log and log.count("Stored speed measurement kept: slow, stored by an earlier run of this boot") == 1,
              f"(r) restart: no class-change line, one 'kept' line ({[x for x in log.splitlines() if 'easure' in x]})")
        write_stat(root, 6400, 8150)    # 5,000 reads in 50 ms: fast, within MinChangeSec of the stored change
        ok, _ = wait_for(lambda: "slow, held: the last window measured fast" in d.read("devices", "vda", "facts", "speed"), 10.0, 0.05)
        check(ok and d.read("devices", "vda", "class") == "many-hctx-slow\n",
              f"(r) restart: a fast window is held by the stored change ({d.read('devices', 'vda', 'facts', 'speed')!r})")
        check("Measured " not in d.tail(400), "(r) restart: still no class-change line")
    finally:
        check(d.stop() == 0, "(r) restart: clean stop")
    check(scheduler(root) == "none", f"(r) the stop puts none back ({scheduler(root)!r})")
    text = next(iter(measured_file(d).values()), "")
    check("speed=slow\n" in text and "verdict=fast\n" in text and "ios=5000\n" in text,
          f"(r) the stop keeps the file, with the last (held) window: {text!r}")

    # SIGTERM, start again: kept at once; the start writes mq-deadline again (the stop put none back)
    with open(sched, "w") as f:
        f.write(kernel_sched)
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "many-hctx-slow\n", "(r) start after a stop: many-hctx-slow at once")
        speed = d.read("devices", "vda", "facts", "speed")
        check(speed.startswith("slow, held: the last window measured fast (10 µs busy per I/O over 5,000 I/Os in ")
              and ", measured before the restart at " in speed, f"(r) start after a stop: facts/speed {speed!r}")
        ok, _ = wait_for(lambda: scheduler(root) == "mq-deadline", 10.0, 0.05)
        check(ok, f"(r) start after a stop: mq-deadline written by the start, not by the next I/O ({scheduler(root)!r})")
        check("Measured " not in d.tail(400), "(r) start after a stop: no class-change line")
    finally:
        d.stop(signal.SIGKILL)

    # a reboot: a new boot id, the kernel's own scheduler and counters; the stored class is dropped
    with open(boot, "w") as f:
        f.write(str(uuid.uuid4()) + "\n")
    with open(sched, "w") as f:
        f.write(kernel_sched)
    write_stat(root, 50, 10)
    mtime = os.stat(sched).st_mtime_ns
    d.start("--root", root, "--devices", "vda")
    try:
        check(d.read("devices", "vda", "class") == "unknown\n",
              f"(r) reboot: unknown, the earlier boot's measurement dropped ({d.read('devices', 'vda', 'class')!r})")
        check(d.read("devices", "vda", "facts", "speed") == "unmeasured (0 I/Os seen, 200 needed)\n",
              f"(r) reboot: facts/speed {d.read('devices', 'vda', 'facts', 'speed')!r}")
        log = d.tail(400)
        check(log.count("Stored speed measurement of an earlier boot (boot id ") == 1 and "Measured " not in log,
              f"(r) reboot: one line says it was dropped ({[x for x in log.splitlines() if 'earlier boot' in x]})")
        ok, _ = wait_for(lambda: measured_file(d) == {}, 10.0, 0.05)
        check(ok, f"(r) reboot: the file is removed ({measured_file(d)})")
        time.sleep(1.0)
        check(os.stat(sched).st_mtime_ns == mtime, f"(r) reboot: nothing written ({scheduler(root)!r})")
    finally:
        check(d.stop() == 0, "(r) reboot: clean stop")


def voluntary_switches(pid):
    """Voluntary context switches of every thread of pid: a thread that wakes up and sleeps
    again adds one."""
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        n += int(line.split()[1])
        except FileNotFoundError:
            pass
    return n


def case_b_bpf(d, loops, tmp):
    """(b) a live loop device: BPF service times, fast by measurement, no wake-up while idle"""
    name = loops.attach("b")
    d.manage_virtual = False
    try:
        bt.start_with_config(d, tmp, name, "[Manager]\nVerifySec=0\n[Speed]\nMinIOs=512\nWindowSec=0\n")
        src = d.read("devices", name, "facts", "speed_source")
        if not src.startswith("service time: BPF"):
            bt.skip("(b) BPF service times", src.strip())
            return
        check(d.read("devices", name, "facts", "speed").startswith("unmeasured (0 I/Os seen, 512 needed)"),
              f"(b) unmeasured at start: {d.read('devices', name, 'facts', 'speed')!r}")
        subprocess.run(["dd", f"if=/dev/{name}", "of=/dev/null", "iflag=direct", "bs=4k", "count=3000"], check=True,
                       capture_output=True)
        ok, _ = wait_for(lambda: d.read("devices", name, "facts", "speed").startswith("fast: p50 "), 10.0, 0.05)
        speed = d.read("devices", name, "facts", "speed")
        check(ok and re.match(r"fast: p50 \d+ µs, p99 [\d.]+ [µm]s over [\d,]+ I/Os in \d+ s\n", speed),
              f"(b) facts/speed: fast by BPF service times ({speed!r})")
        ok, _ = wait_for(lambda: "Measured fast (was unmeasured)" in d.tail(200), 5.0)
        check(ok, "(b) the journal line")
        m = d.read("metrics")
        check(f'blkmqd_disk_speed_service_seconds{{device="{name}",quantile="0.5"}}' in m, "(b) metrics: the p50")
        problems = bt.metrics_doc_problems(m)
        check(not problems, f"(b) docs/METRICS.md lists every family and label: {problems}")

        # idle: the measurement wakes nothing (BPF events come only with the disk's I/O; VerifySec=0:
        # no timer). The daemon's other inputs (uevents and mount changes of other processes on
        # this shared machine) may wake it: its context switches are printed, not asserted.
        # The dd's last samples first: the tail sample comes 1.5 s after the disk's last BPF event
        # (manager/speed.c SPEED_TAIL_USEC), later on a loaded machine; a sleep of 1 s let it land
        # in the idle window below now and then. Wait until no sample came for 2 s (at most 10 s:
        # a periodic sampler never goes quiet, and the window below still sees it).
        samples = lambda: d.tail(100000).count("Speed sample")
        n, quiet_since, deadline = samples(), time.monotonic(), time.monotonic() + 10.0
        while time.monotonic() < deadline and time.monotonic() - quiet_since < 2.0:
            time.sleep(0.25)
            if samples() != n:
                n, quiet_since = samples(), time.monotonic()
        log_before = samples()
        before = voluntary_switches(d.pid)
        time.sleep(4.0)
        after = voluntary_switches(d.pid)
        check(samples() == log_before, f"(b) no speed sample in 4 s without I/O ({samples() - log_before} came)")
        print(f"# (b) {after - before} voluntary context switches of the daemon in 4 s without I/O on its disk")
    finally:
        d.stop()
        d.manage_virtual = True


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-speed-", (case_b_bpf,), tmp_cases=(("s", case_s_stat), ("t", case_t_slow), ("c", case_c_trust), ("r", case_r_restart)),
                          why="loop devices, FUSE mount, BPF"))
