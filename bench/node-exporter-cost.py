#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/node-exporter-cost.py [--seconds 60] [--exporter prometheus-node-exporter]

P4's peer: the CPU node_exporter itself spends per scrape of this machine, to compare with
blkmqd's metrics scrape (bench/idle.py, "scrape" window). Starts the exporter with its default
collectors on a free 127.0.0.1 port (no service, no state: a child process stopped at exit),
scrapes /metrics once a second for S seconds after one warm-up scrape, and reports the
exporter's utime+stime over the window (/proc/PID/stat, every thread), per scrape and as a share
of one core, with the bytes per scrape. Exits 77 when the exporter is not installed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--exporter", default="prometheus-node-exporter")
    a = ap.parse_args()
    exe = shutil.which(a.exporter)
    if not exe:
        print(f"SKIP: {a.exporter} not installed (apt-get install prometheus-node-exporter)")
        return 77
    port = bt.free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        body = None
        for _ in range(200):
            try:
                body = urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                time.sleep(0.05)
        if body is None:
            print("node_exporter did not answer")
            return 1
        version = subprocess.run([exe, "--version"], capture_output=True, text=True)
        print(f"date:     {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        print(f"kernel:   {os.uname().sysname} {os.uname().release}")
        print(f"machine:  {os.cpu_count()} CPUs, load {open('/proc/loadavg').read().split()[:3]}")
        print(f"exporter: {(version.stdout or version.stderr).splitlines()[0]} (default collectors)")
        t0, c0, ns0 = time.monotonic(), bt.cpu_ticks(p.pid), bt.cpu_ns(p.pid)
        n = size = 0
        while time.monotonic() - t0 < a.seconds:
            size += len(urllib.request.urlopen(url, timeout=10).read())
            n += 1
            time.sleep(max(0.0, t0 + n - time.monotonic()))
        dt, dc, dns = time.monotonic() - t0, bt.cpu_ticks(p.pid) - c0, bt.cpu_ns(p.pid) - ns0
        cpu = dc / TICK
        print(f"{n} scrapes in {dt:.1f} s, {size // max(n, 1)} bytes each")
        print(f"node_exporter CPU: {cpu:.2f} s = {100 * cpu / dt:.2f} % of a core, {1000 * cpu / max(n, 1):.1f} ms per scrape")
        print(f"node_exporter CPU (schedstat run time): {dns / 1e9:.4f} s = {100 * dns / 1e9 / dt:.3f} % of a core, "
              f"{dns / 1e6 / max(n, 1):.2f} ms per scrape (threads alive at the end)")
        return 0
    finally:
        bt.stop_process(p, 10)


if __name__ == "__main__":
    sys.exit(main())
