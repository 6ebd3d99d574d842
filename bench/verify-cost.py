#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/verify-cost.py [--blkmqd PATH] --tree DIR [--verify-sec 5] [--seconds 20]

The cost of the periodic verify (VerifySec=, issue 13 item 13): blkmqd --root on a synthetic
tree (bench/gen-scale.py OUTDIR, on a tmpfs) in mode auto, its own --state-dir and config, idle
after the start line: CPU time (utime + stime of /proc/PID/stat) and context switches of every
thread (/proc/PID/task/*/status) over the window, once with VerifySec=0 (no timer: expected
zero) and once with the given interval. Writes land in the generated tree only.
"""

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time


def run(exe, tree, verify, secs):
    tmp = tempfile.mkdtemp(prefix="blkmqd-verify-cost-")
    try:
        conf = os.path.join(tmp, "blkmqd.conf")
        with open(conf, "w") as f:
            f.write(f"[Manager]\nVerifySec={verify}\n")
        logp = os.path.join(tmp, "log")
        with open(logp, "w") as log:
            p = subprocess.Popen([exe, "--root", tree, "--state-dir", os.path.join(tmp, "state"), "-c", conf],
                                 stdout=log, stderr=subprocess.STDOUT)

            def cpu():
                f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
                return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

            def ctx():
                n = 0
                for t in os.listdir(f"/proc/{p.pid}/task"):
                    with open(f"/proc/{p.pid}/task/{t}/status") as s:
                        n += sum(int(line.split()[1]) for line in s if "ctxt_switches" in line)
                return n

            for _ in range(1200):
                time.sleep(0.1)
                with open(logp) as f:
                    if " started: " in f.read():
                        break
            time.sleep(2)
            c0, x0 = cpu(), ctx()
            time.sleep(secs)
            c1, x1 = cpu(), ctx()
            p.send_signal(signal.SIGTERM)
            p.wait()
        print(f"VerifySec={verify}: {secs:.0f} s idle: CPU {c1 - c0:.2f} s ({(c1 - c0) / secs * 100:.1f} % of a core), "
              f"{x1 - x0} context switches")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blkmqd", default=os.environ.get("BLKMQD", "build/blkmqd"))
    ap.add_argument("--tree", required=True)
    ap.add_argument("--verify-sec", type=float, default=5)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    run(a.blkmqd, a.tree, 0, a.seconds)
    run(a.blkmqd, a.tree, a.verify_sec, a.seconds)


if __name__ == "__main__":
    main()
