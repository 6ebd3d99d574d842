#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/liveness.py [--blkmqd PATH] [--compare OLD_BLKMQD] [-n SWITCHES] [--quick]

Tree read latency while blkmqd switches elevators on a busy disk (issue 14). Not a test: it
prints figures for docs/BENCHMARKS.md.

One loop device of its own (LOOP_CTL_ADD, loop250 and up) on a temp file, fio random 4k
reads+writes with O_DIRECT at iodepth 32 on it for the whole run, blkmqd --devices on it. A
switcher writes policy/elevator of the loop alternately mq-deadline and none, n times (each
write is answered when blkmqd's scheduler write returned, or reached its deadline); meanwhile a
reader opens, reads and closes tree files round robin (version, class, applied/elevator, stat,
hctx/0/cpu_list, metrics) and times each. Printed: the read latency p50/p99/max during the
switches, and the switch time (echo > policy/elevator) p50/p99/max. With --compare, the same
with another blkmqd binary (e.g. one built before the kernel writes moved to worker threads).

Needs root, losetup, fio.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402


def line(name, vals, unit=1e3, u="ms"):
    return (f"{name:<34} n={len(vals):6d}  p50 {bt.percentile(vals, .5) * unit:9.3f} {u}  "
            f"p99 {bt.percentile(vals, .99) * unit:9.3f}  max {max(vals) * unit:9.3f}")


def run(exe, loop, tmp, n, fio_runtime):
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt, exist_ok=True)
    state = tempfile.mkdtemp(dir=tmp)
    conf = os.path.join(tmp, "empty.conf")
    open(conf, "w").close()
    log = open(os.path.join(tmp, "blkmqd.log"), "w")
    d = subprocess.Popen([exe, "-m", mnt, "-s", state, *bt.virtual_args(["--devices", loop, "-c", conf, "-v"], tmp)],
                         stdout=log, stderr=log)
    t = time.monotonic()
    while not bt.mount_ready(mnt):
        if d.poll() is not None or time.monotonic() - t > 20:
            raise RuntimeError("blkmqd did not start")
        time.sleep(0.01)
    fio = subprocess.Popen(["fio", "--name=load", f"--filename=/dev/{loop}", "--rw=randrw", "--bs=4k", "--direct=1",
                            "--ioengine=libaio", "--iodepth=32", "--time_based", f"--runtime={fio_runtime}",
                            "--output=/dev/null"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    files = [os.path.join(mnt, p) for p in ("version", f"devices/{loop}/class", f"devices/{loop}/applied/elevator",
                                            f"devices/{loop}/stat", f"devices/{loop}/hctx/0/cpu_list", "metrics")]
    switches, read_out = [], []
    stop = threading.Event()
    th = threading.Thread(target=lambda: read_out.append(bt.timed_reads(files, stop=stop)))
    th.start()
    pol = os.path.join(mnt, "devices", loop, "policy", "elevator")
    try:
        for i in range(n):
            t0 = time.monotonic()
            fd = os.open(pol, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, b"mq-deadline\n" if i % 2 == 0 else b"none\n")
            finally:
                os.close(fd)
            switches.append(time.monotonic() - t0)
            if fio.poll() is not None:
                raise RuntimeError("fio ended early")
    finally:
        stop.set()
        th.join()
        fio.send_signal(signal.SIGINT)
        fio.wait()
        bt.stop_process(d, 30)
        subprocess.run(["umount", "-l", mnt], capture_output=True)
        log.close()
    reads, errors = read_out[0]
    with open(os.path.join(tmp, "blkmqd.log")) as f:
        changed = sum(1 for ln in f if ln.startswith("<6>") and f"{loop}: elevator " in ln and ("->" in ln or "restored" in ln))
    return reads, switches, errors, changed


def main():
    ap = bt.bench_parser(__doc__, "10 switches, for CI")
    ap.add_argument("--compare", metavar="OLD_BLKMQD")
    ap.add_argument("-n", type=int, default=200, help="elevator switches (default 200)")
    ap.add_argument("--keep-log", metavar="FILE", help="append blkmqd's log there")
    args = ap.parse_args()
    if args.quick:
        args.n = 10
    if os.geteuid() != 0 or not shutil.which("fio") or not shutil.which("losetup"):
        print("SKIP: needs root, fio, losetup")
        return 77
    tmp = tempfile.mkdtemp(prefix="blkmqd-liveness.")
    loops = None
    try:
        loops = bt.PrivateLoops(tmp, 1, size=256 << 20, base_min=250, losetup_args=["--direct-io=on"])
        loop = loops.attach(0)
        with open("/proc/loadavg") as f:
            load = f.read().strip()
        print(f"kernel:  {os.uname().release} ({os.uname().version})")
        print(f"device:  /dev/{loop} on a 256 MiB file (direct I/O), fio randrw 4k iodepth 32 O_DIRECT throughout")
        print(f"load:    {load}")
        runs = [("blkmqd", args.blkmqd)] + ([("compare", args.compare)] if args.compare else [])
        for label, exe in runs:
            reads, switches, errors, changed = run(exe, loop, tmp, args.n, 600)
            if args.keep_log:
                with open(os.path.join(tmp, "blkmqd.log")) as src, open(args.keep_log, "a") as dst:
                    dst.write(src.read())
            print(f"== {label}: {exe}: {args.n} policy/elevator writes, {changed} elevator changes logged, "
                  f"{len(errors)} read errors")
            print(line("tree read (open+read+close)", reads))
            print(line("echo > policy/elevator", switches))
            slow = sum(1 for r in reads if r > 0.1)
            print(f"{'reads > 100 ms':<34} {slow}")
            bt.set_elevator(loop, "none")
    finally:
        if loops:
            loops.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
