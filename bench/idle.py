#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/idle.py [--blkmqd PATH] [--disks 64] [--seconds 60] [--quick] [--no-idle] [--debugfs | --no-debugfs] [--burst N]
              [--kread-floor PATH]

P4 idle cost of blkmqd on the live machine, managing D loop devices of its own (loop300.. made
with LOOP_CTL_ADD, attached to 1 MiB temp files, detached and removed at exit; blkmqd is limited
to them with --devices).

  idle      no reader for S seconds: wake-ups of every blkmqd thread = delta of
            voluntary_ctxt_switches + nonvoluntary_ctxt_switches (/proc/PID/task/*/status) and of
            the run count (3rd field of /proc/PID/task/*/schedstat); CPU from /proc/PID/stat.
            Uevents for other block devices on the host during the window are counted with our
            own NETLINK_KOBJECT_UEVENT socket: blkmqd's raw uevent socket wakes for them too (its
            filter is by subsystem), so those wake-ups are not idle cost of blkmqd's own making.
  scrape    a node_exporter-style scraper reads MNT/metrics once a second for S seconds (when the
            tree has no metrics file: every MNT/devices/*/explain, noted); blkmqd's CPU over the
            window as % of one core, and the part of it spent while a scrape was being read (the
            window's CPU also holds blkmqd's work for other devices' block uevents, which its
            raw uevent socket receives too; on a shared machine that can be most of it).

CPU is given twice: clock ticks of /proc/PID/stat (10 ms) and the scheduler's run time of every
thread (1st field of /proc/PID/task/*/schedstat, ns). --debugfs: mount debugfs in the bench's own
mount namespace when the host has none mounted (a scrape then also reads the per-hctx debugfs
values, as on a machine with debugfs); --no-debugfs: unmount it there when the host has it mounted
(a machine without debugfs; the host's mounts are not touched). --no-idle: the scrape window only.
--burst N: then N scrapes back to back, blkmqd CPU per scrape (the work without the wake-ups).
--kread-floor PATH (build/bench/kread-floor): then the kernel's share alone: that program reads
every sysfs, debugfs and /proc file blkmqd holds open after its scrapes (/proc/PID/fd) once a
second for the same window, and --burst times back to back, with no FUSE and no rendering; its CPU
per cycle is the least any scraper of these values pays on this machine.

--quick: 4 disks, 5 s each (CI smoke, no assertion). Needs root, losetup, /dev/fuse.
"""

import glob
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

LOOP_FIRST = 300


def thread_counters(pid):
    vol = nonvol = runs = 0
    for t in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{t}/status") as f:
                for ln in f:
                    if ln.startswith("voluntary_ctxt_switches:"):
                        vol += int(ln.split()[1])
                    elif ln.startswith("nonvoluntary_ctxt_switches:"):
                        nonvol += int(ln.split()[1])
            with open(f"{t}/schedstat") as f:
                runs += int(f.read().split()[2])
        except FileNotFoundError:
            pass
    return vol, nonvol, runs


def main():
    ap = bt.bench_parser(__doc__, "4 disks, 5 s each")
    ap.add_argument("--disks", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--no-idle", action="store_true", help="skip the idle window (scrape only)")
    ap.add_argument("--no-scrape", action="store_true", help="skip the scrape window (idle only)")
    ap.add_argument("--textfile", type=float, default=None, metavar="SECONDS",
                    help="write the metrics file (TextfileDirectory= a temp dir, MetricsIntervalSec=SECONDS; "
                         "60 is the default a service has); the idle window then counts its writes")
    ap.add_argument("--debugfs", action="store_true",
                    help="mount debugfs at /sys/kernel/debug in the bench's private mount namespace when it is not "
                         "mounted (the per-hctx debugfs values of a scrape; the host's mounts are not touched)")
    ap.add_argument("--burst", type=int, default=0, metavar="N",
                    help="after the scrape window, read the metrics N times back to back: blkmqd CPU per scrape "
                         "without the wake-ups of a scrape a second (on this VM a wake-up from idle costs more "
                         "than on a busy CPU), so old and new builds compare on the work itself")
    ap.add_argument("--no-debugfs", action="store_true",
                    help="unmount debugfs from /sys/kernel/debug in the bench's private mount namespace when it is "
                         "mounted (a machine without debugfs; the host's mounts are not touched)")
    ap.add_argument("--kread-floor", metavar="PATH",
                    help="then run PATH (build/bench/kread-floor) on the files blkmqd holds open: the kernel's "
                         "share of a scrape alone, once a second and back to back")
    a = ap.parse_args()
    if a.quick:
        a.disks, a.seconds = 4, 5
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    if not os.path.exists(a.blkmqd) or not shutil.which("losetup") or not os.path.exists("/dev/fuse"):
        print(f"SKIP: needs {a.blkmqd}, losetup, /dev/fuse")
        return 77

    # Private mount namespace with an empty /run/udev: a stale /run/udev/control (udevd stopped
    # without removing it) would make blkmqd wait for udevd's events and never wake for uevents,
    # which would flatter the idle figure. No udevd runs here (the README's set-up has none).
    if os.environ.get("BLKMQD_BENCH_PRIVATE_NS") != "1":
        os.environ["BLKMQD_BENCH_PRIVATE_NS"] = "1"
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable] + sys.argv)
    if os.path.isdir("/run/udev"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=1M", "bench-udev", "/run/udev"], check=True)
    if a.debugfs and not os.path.isdir("/sys/kernel/debug/block"):
        subprocess.run(["mount", "-t", "debugfs", "debugfs", "/sys/kernel/debug"], check=True)
    while a.no_debugfs and os.path.isdir("/sys/kernel/debug/block"):
        subprocess.run(["umount", "-l", "/sys/kernel/debug"], check=True)

    tmp = tempfile.mkdtemp(prefix="blkmqd-idle.")
    mnt, state = os.path.join(tmp, "mnt"), os.path.join(tmp, "state")
    os.makedirs(mnt)
    os.makedirs(state)
    loops = None
    proc = None
    tck = os.sysconf("SC_CLK_TCK")
    try:
        loops = bt.PrivateLoops(tmp, a.disks, base_min=LOOP_FIRST)
        attached = [loops.attach(i) for i in range(a.disks)]
        names = loops.globs()

        env = dict(os.environ)
        for k in ("NOTIFY_SOCKET", "JOURNAL_STREAM"):
            env.pop(k, None)
        log = open(os.path.join(tmp, "blkmqd.log"), "w")
        conf = os.path.join(tmp, "none.conf")
        textfile = os.path.join(tmp, "textfile", "blkmqd.prom")
        if a.textfile is not None:      # the service's default is this file every 60 s; -s STATE turns it off otherwise
            os.makedirs(os.path.dirname(textfile))
            with open(conf, "w") as f:
                f.write(f"[Manager]\nTextfileDirectory={os.path.dirname(textfile)}\nMetricsIntervalSec={a.textfile:g}\n")
        cmd = [a.blkmqd, "-m", mnt, "-s", state, *bt.virtual_args(["--devices", names, "-c", conf], tmp)]
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        t = time.monotonic()
        while len(glob.glob(f"{mnt}/devices/*")) < len(attached):
            if time.monotonic() - t > 60 or proc.poll() is not None:
                raise RuntimeError("blkmqd did not list every disk")
            time.sleep(0.1)
        time.sleep(1)  # let coldplug's last writes settle

        print(f"date:    {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        print(f"kernel:  {os.uname().release} ({os.uname().version})")
        print(f"machine: {os.cpu_count()} CPUs, load {' '.join(open('/proc/loadavg').read().split()[:3])}")
        print(f"blkmqd:  {a.blkmqd} -m MNT --devices {attached[0]}..{attached[-1]} ({len(attached)} loop "
              f"disks) -s STATE -c " + (f"CONF (TextfileDirectory=TMP, MetricsIntervalSec={a.textfile:g})"
                                        if a.textfile is not None else "/nonexistent (no metrics file)"))
        src = [ln for ln in open(os.path.join(tmp, "blkmqd.log")) if "Watching block devices" in ln]
        print(f"source:  {src[0].strip() if src else '?'}")
        print(f"threads: {len(os.listdir(f'/proc/{proc.pid}/task'))}")
        print(f"debugfs: {'mounted' if os.path.isdir('/sys/kernel/debug/block') else 'not mounted'}")

        ue = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK, 15)
        ue.bind((0, 1))

        def drain():
            k = 0
            while True:
                try:
                    d = ue.recv(1 << 16)
                except BlockingIOError:
                    return k
                if b"SUBSYSTEM=block" in d:
                    k += 1

        # ---- idle -----------------------------------------------------------------------
        drain()
        if a.no_idle:
            print("\nidle: skipped (--no-idle)")
        else:
            c0, k0, t0 = thread_counters(proc.pid), bt.cpu_ticks(proc.pid), time.monotonic()
            ns_idle0 = bt.cpu_ns(proc.pid)
            mtimes = set()
            block_events = 0
            while time.monotonic() - t0 < a.seconds:
                select.select([ue], [], [], max(0.0, min(0.5, a.seconds - (time.monotonic() - t0))))
                block_events += drain()
                if a.textfile is not None and os.path.exists(textfile):
                    mtimes.add(os.stat(textfile).st_mtime_ns)      # a stat from here wakes nobody in blkmqd
            c1, k1, el = thread_counters(proc.pid), bt.cpu_ticks(proc.pid), time.monotonic() - t0
            ns_idle = bt.cpu_ns(proc.pid) - ns_idle0
            vol, nonvol, runs = (c1[i] - c0[i] for i in range(3))
            print()
            print(f"idle, no readers, {el:.1f} s:")
            print(f"  context switches: {vol} voluntary + {nonvol} involuntary = {(vol + nonvol) / el:.3f}/s")
            print(f"  schedstat run count delta: {runs} = {runs / el:.3f} wake-ups/s")
            print(f"  CPU: {(k1 - k0) / tck:.2f} s = {100 * (k1 - k0) / tck / el:.3f} % of a core")
            print(f"  CPU (schedstat run time, all threads): {ns_idle / 1e6:.2f} ms")
            print(f"  block uevents on the host meanwhile (other devices): {block_events}")
            if a.textfile is not None:
                writes = max(0, len(mtimes) - 1)
                size = os.path.getsize(textfile) if os.path.exists(textfile) else 0
                print(f"  metrics file writes in the window: {writes} (file {size} bytes)"
                      + (f", {ns_idle / 1e6 / writes:.2f} ms of CPU and {(vol + nonvol) / writes:.1f} context switches each"
                         if writes else ""))

        # ---- scrape -----------------------------------------------------------------------
        if a.no_scrape:
            print("\nscrape: skipped (--no-scrape)")
            return 0
        metrics = os.path.join(mnt, "metrics")
        if os.path.exists(metrics):
            targets, what = [metrics], "metrics"
        else:
            targets = sorted(glob.glob(f"{mnt}/devices/*/explain"))
            what = f"devices/*/explain ({len(targets)} files; no metrics file in this tree yet)"
        drain()
        c0, k0, t0 = thread_counters(proc.pid), bt.cpu_ticks(proc.pid), time.monotonic()
        ns0 = bt.cpu_ns(proc.pid)
        scrapes = nbytes = in_scrape_ns = 0
        block_events = 0
        rd_cpu0 = os.times()
        while time.monotonic() - t0 < a.seconds:
            s0 = bt.cpu_ns(proc.pid)
            for p in targets:
                with open(p, "rb") as f:
                    nbytes += len(f.read())
            in_scrape_ns += bt.cpu_ns(proc.pid) - s0
            scrapes += 1
            nxt = t0 + scrapes
            while time.monotonic() < nxt and time.monotonic() - t0 < a.seconds:
                select.select([ue], [], [], max(0.0, min(nxt, t0 + a.seconds) - time.monotonic()))
                block_events += drain()
        c1, k1, el = thread_counters(proc.pid), bt.cpu_ticks(proc.pid), time.monotonic() - t0
        ns1 = bt.cpu_ns(proc.pid)
        rd_cpu1 = os.times()
        vol, nonvol, runs = (c1[i] - c0[i] for i in range(3))
        print()
        print(f"scrape: read {what} once a second, {scrapes} scrapes, {nbytes / max(scrapes, 1):.0f} bytes each, {el:.1f} s:")
        print(f"  blkmqd CPU: {(k1 - k0) / tck:.2f} s = {100 * (k1 - k0) / tck / el:.3f} % of a core "
              f"(clock ticks of {1000 / tck:.0f} ms: resolution {100 / tck / el:.3f} %)")
        print(f"  blkmqd CPU (schedstat run time): {(ns1 - ns0) / 1e9:.4f} s = {100 * (ns1 - ns0) / 1e9 / el:.3f} % "
              f"of a core, {(ns1 - ns0) / 1e6 / max(scrapes, 1):.2f} ms per scrape")
        print(f"  blkmqd CPU while a scrape was read (open to close; leaves out the uevents between scrapes): "
              f"{in_scrape_ns / 1e6 / max(scrapes, 1):.2f} ms per scrape = {100 * in_scrape_ns / 1e9 / el:.3f} % of a core")
        print(f"  blkmqd wake-ups: {runs / el:.2f}/s ({vol + nonvol} context switches)")
        print(f"  scraper CPU: {(rd_cpu1.user + rd_cpu1.system - rd_cpu0.user - rd_cpu0.system):.2f} s")
        print(f"  block uevents on the host meanwhile: {block_events}")

        # ---- burst: the work of a scrape without the wake-up around it -----------------------
        if a.burst > 0:
            ns0, t0 = bt.cpu_ns(proc.pid), time.monotonic()
            for _ in range(a.burst):
                for p in targets:
                    with open(p, "rb") as f:
                        f.read()
            ns1, el = bt.cpu_ns(proc.pid), time.monotonic() - t0
            print()
            print(f"burst: read {what} {a.burst} times back to back, {el:.1f} s:")
            print(f"  blkmqd CPU (schedstat run time): {(ns1 - ns0) / 1e6 / a.burst:.3f} ms per scrape")

        # ---- the kernel's share alone: the same files read without FUSE or rendering -----------
        if a.kread_floor:
            held = []
            for fd in sorted(os.listdir(f"/proc/{proc.pid}/fd"), key=int):
                try:
                    t = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
                except OSError:
                    continue
                if t.startswith(("/sys/", "/proc/")) and not t.startswith(f"/proc/{proc.pid}/") \
                        and os.path.isfile(t):
                    held.append(t)
            kinds = {}
            for t in held:
                k = ("debugfs " + os.path.basename(t)) if t.startswith("/sys/kernel/debug/") else \
                    ("sysfs " + os.path.basename(t)) if t.startswith("/sys/") else t
                kinds[k] = kinds.get(k, 0) + 1
            print()
            print(f"kread-floor: the {len(held)} files blkmqd holds open, read by {a.kread_floor} "
                  f"(no FUSE, no rendering): " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())))
            out = subprocess.run([a.kread_floor, "--seconds", str(a.seconds), "--burst", str(a.burst)] + held,
                                 capture_output=True, text=True)
            for ln in (out.stdout + out.stderr).splitlines():
                print(f"  {ln}")
            if out.returncode != 0:
                raise RuntimeError(f"{a.kread_floor} exited with {out.returncode}")
    finally:
        bt.stop_process(proc, 30)
        bt.cleanup_mount(mnt)
        if loops:
            loops.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
