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

import argparse
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81


def pct(vals, p):
    s = sorted(vals)
    return s[min(len(s) - 1, int(p * len(s)))] if s else float("nan")


def line(name, vals, unit=1e3, u="ms"):
    return (f"{name:<34} n={len(vals):6d}  p50 {pct(vals, .5) * unit:9.3f} {u}  p99 {pct(vals, .99) * unit:9.3f}  "
            f"max {max(vals) * unit:9.3f}")


def mount_ready(mnt):
    try:
        with open(os.path.join(mnt, "version")) as f:
            return f.read().startswith("blkmqd ")
    except OSError:
        return False


def run(exe, loop, tmp, n, fio_runtime):
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt, exist_ok=True)
    state = tempfile.mkdtemp(dir=tmp)
    conf = os.path.join(tmp, "empty.conf")
    open(conf, "w").close()
    log = open(os.path.join(tmp, "blkmqd.log"), "w")
    d = subprocess.Popen([exe, "-m", mnt, "--devices", loop, "-s", state, "-c", conf, "-v"], stdout=log, stderr=log)
    t = time.monotonic()
    while not mount_ready(mnt):
        if d.poll() is not None or time.monotonic() - t > 20:
            raise RuntimeError("blkmqd did not start")
        time.sleep(0.01)
    fio = subprocess.Popen(["fio", "--name=load", f"--filename=/dev/{loop}", "--rw=randrw", "--bs=4k", "--direct=1",
                            "--ioengine=libaio", "--iodepth=32", "--time_based", f"--runtime={fio_runtime}",
                            "--output=/dev/null"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    files = [os.path.join(mnt, p) for p in ("version", f"devices/{loop}/class", f"devices/{loop}/applied/elevator",
                                            f"devices/{loop}/stat", f"devices/{loop}/hctx/0/cpu_list", "metrics")]
    reads, switches, errors = [], [], []
    stop = threading.Event()

    def reader():
        i = 0
        while not stop.is_set():
            p = files[i % len(files)]
            i += 1
            t0 = time.monotonic()
            try:
                with open(p, "rb") as f:
                    f.read()
            except OSError as e:
                errors.append(str(e))
            reads.append(time.monotonic() - t0)

    th = threading.Thread(target=reader)
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
        d.send_signal(signal.SIGTERM)
        d.wait(30)
        subprocess.run(["umount", "-l", mnt], capture_output=True)
        log.close()
    with open(os.path.join(tmp, "blkmqd.log")) as f:
        changed = sum(1 for ln in f if ln.startswith("<6>") and f"{loop}: elevator " in ln and ("->" in ln or "restored" in ln))
    return reads, switches, errors, changed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blkmqd", default=os.environ.get("BLKMQD", "build/blkmqd"))
    ap.add_argument("--compare", metavar="OLD_BLKMQD")
    ap.add_argument("-n", type=int, default=200, help="elevator switches (default 200)")
    ap.add_argument("--quick", action="store_true", help="10 switches, for CI")
    ap.add_argument("--keep-log", metavar="FILE", help="append blkmqd's log there")
    args = ap.parse_args()
    if args.quick:
        args.n = 10
    if os.geteuid() != 0 or not shutil.which("fio") or not shutil.which("losetup"):
        print("SKIP: needs root, fio, losetup")
        return 77
    tmp = tempfile.mkdtemp(prefix="blkmqd-liveness.")
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    nr = 250
    while os.path.exists(f"/sys/block/loop{nr}"):
        nr += 1
    fcntl.ioctl(ctl, LOOP_CTL_ADD, nr)
    loop = f"loop{nr}"
    backing = os.path.join(tmp, "backing")
    with open(backing, "wb") as f:
        f.truncate(256 << 20)
    try:
        for _ in range(100):
            if os.path.exists(f"/dev/{loop}"):
                break
            time.sleep(0.01)
        subprocess.run(["losetup", "--direct-io=on", f"/dev/{loop}", backing], check=True)
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
            with open(f"/sys/block/{loop}/queue/scheduler", "w") as f:
                f.write("none")
    finally:
        subprocess.run(["losetup", "-d", f"/dev/{loop}"], capture_output=True)
        for _ in range(100):
            try:
                fcntl.ioctl(ctl, LOOP_CTL_REMOVE, nr)
                break
            except OSError:
                time.sleep(0.02)
        os.close(ctl)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
