#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/vm-gain.py [--blkmqd build/blkmqd] [--pairs N] [--runtime S] [--quick] [--only p6|p7|p11]
bench/vm-gain.py --summarize LOG...

P6/P7 (the tuning gain) in the VM harness (docs/VM-HARNESS.md): boots
tests/vm/scenarios/bench-null-blk.sh (P6), bench-slow-disk.sh (P7) and bench-nvme-tcp.sh (P11) with the built daemon and
fio, then summarizes the "# BENCH ..." lines of each console log: per case (and workload), the
per-pair ratios blkmqd / kernel of IOPS, mean latency and read p99, their median and the ratio of
means. Pairs ran back to back in one boot with alternating order.

--quick: 1 pair, 2 s runs (CI smoke). --summarize: only parse existing logs.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
SCEN = {"p6": "tests/vm/scenarios/bench-null-blk.sh", "p7": "tests/vm/scenarios/bench-slow-disk.sh",
        "p11": "tests/vm/scenarios/bench-nvme-tcp.sh"}


def parse(log):
    rows = []
    for ln in open(log, errors="replace"):
        ln = ln.strip()
        if not ln.startswith("# BENCH "):
            continue
        kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', ln[8:]))
        rows.append({k: v.strip('"') for k, v in kv.items()})
    return rows


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def summarize(log):
    rows = parse(log)
    print(f"== {log}: {len(rows)} BENCH lines")
    groups = {}
    for r in rows:
        groups.setdefault((r.get("case"), r.get("wl", "-")), {}).setdefault(r.get("pair"), {})[r.get("setup")] = r
    metrics = [("iops", "IOPS"), ("riops", "read IOPS"), ("wiops", "write IOPS"), ("lat_us", "mean lat"),
               ("rlat_us", "read mean lat"), ("p99_us", "p99 lat"), ("rp99_us", "read p99"),
               ("wlat_us", "write mean lat"), ("rkbs", "read KiB/s")]
    for (case, wl), pairs in groups.items():
        full = [p for p in pairs.values() if "kernel" in p and "blkmqd" in p]
        if not full:
            continue
        k0, b0 = full[0]["kernel"], full[0]["blkmqd"]
        print(f"-- case {case} workload {wl}: kernel elevator {k0.get('elevator')} | blkmqd elevator "
              f"{b0.get('elevator')} (class {b0.get('class')}, applied: {b0.get('applied')}), {len(full)} pairs")
        for key, label in metrics:
            if key not in k0:
                continue
            ks = [num(p["kernel"][key]) for p in full]
            bs = [num(p["blkmqd"][key]) for p in full]
            if all(v == 0 for v in ks + bs):
                continue
            ratios = [b / k for k, b in zip(ks, bs) if k]
            print(f"   {label:15s} kernel {' '.join(f'{v:.0f}' for v in ks):28s} blkmqd "
                  f"{' '.join(f'{v:.0f}' for v in bs):28s} ratio/pair {' '.join(f'{r:.2f}' for r in ratios):18s} "
                  f"median {statistics.median(ratios) if ratios else float('nan'):.2f}  of means "
                  f"{(sum(bs) / sum(ks)) if sum(ks) else float('nan'):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blkmqd", default=os.path.join(TOP, "build/blkmqd"))
    ap.add_argument("--pairs", type=int)
    ap.add_argument("--runtime", type=int)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=sorted(SCEN))
    ap.add_argument("--logdir", default="/tmp")
    ap.add_argument("--summarize", nargs="+", metavar="LOG")
    a = ap.parse_args()
    if a.summarize:
        for log in a.summarize:
            summarize(log)
        return 0
    if a.quick:
        a.pairs, a.runtime = a.pairs or 1, a.runtime or 2
    rc = 0
    for name, scen in SCEN.items():
        if a.only and a.only != name:
            continue
        log = os.path.join(a.logdir, f"blkmqd-bench-{name}-{os.getpid()}.log")
        cmd = [sys.executable, os.path.join(TOP, "tests/vm/harness.py"), "run", "--scenario",
               os.path.join(TOP, scen), "--blkmqd", a.blkmqd, "--fio", "--log", log]
        if a.pairs:
            cmd += ["--env", f"BENCH_PAIRS={a.pairs}"]
        if a.runtime:
            cmd += ["--env", f"BENCH_RUNTIME={a.runtime}"]
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {' '.join(cmd)}", flush=True)
        t = time.monotonic()
        r = subprocess.run(cmd)
        print(f"   rc {r.returncode}, {time.monotonic() - t:.0f} s", flush=True)
        if r.returncode == 77:
            print("SKIP: VM harness prerequisites missing")
            return 77
        rc = rc or r.returncode
        if os.path.exists(log):
            summarize(log)
    return rc


if __name__ == "__main__":
    sys.exit(main())
