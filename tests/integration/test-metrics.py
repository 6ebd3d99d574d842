#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
The exposition as a fleet reads it: blkmqd on fixture copies (--root, --dry-run).

(a) Every family of the exposition is listed in docs/METRICS.md with its type and exactly its
    label names (bt.metrics_doc_problems()), disks and NICs are labelled device= (node_exporter's
    name), and `promtool check metrics` has nothing to say, on a SCSI host with shared tags
    (debugfs counters), an nvme-tcp disk with its NIC (the network families) and a virtio-blk
    disk of this machine's kernel.
promtool missing (Debian package prometheus) is a failure: tools/install-deps.sh --tests installs it.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check  # noqa: E402

FIXTURES = ("vm-6.1-scsi-debug-shared", "vm-6.12-nvme-tcp-2q", "host-6.18-virtio-blk")


def case_a_families(tmp):
    """(a) docs/METRICS.md lists every family and label; device= labels; promtool check metrics"""
    promtool = shutil.which("promtool")
    check(promtool is not None, "(a) promtool is installed (tools/install-deps.sh --tests: prometheus)")
    for fx in FIXTURES:
        root = bt.copy_fixture(fx, os.path.join(tmp, "root-" + fx))
        d = bt.config_daemon(tmp, fx, "")
        try:
            d.start("--root", root, "--dry-run")
            text = d.read("metrics")
        finally:
            d.stop()
        problems = bt.metrics_doc_problems(text)
        check(not problems, f"(a) {fx}: docs/METRICS.md lists every family with its labels: {problems}")
        disks = sorted(os.listdir(os.path.join(root, "sys", "block")))
        shown = set(re.findall(r'^blkmqd_disk_info\{device="([^"]*)"', text, re.M))
        check(shown and shown <= set(disks), f"(a) {fx}: blkmqd_disk_info device= names disks of /sys/block: {sorted(shown)}")
        check(re.search(r'\bdisk="', text) is None, f"(a) {fx}: no series has a disk= label")
        if fx.endswith("nvme-tcp-2q"):
            check(re.search(r'^blkmqd_nic_channels\{device="eth\d+",type="combined"\} \d+$', text, re.M) is not None,
                  f"(a) {fx}: the NIC's channels are labelled device= (node_network_*'s name)")
        if promtool:
            r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
            check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
                  f"(a) {fx}: promtool check metrics is clean: rc {r.returncode} {r.stdout.strip()} {r.stderr.strip()}")


def main():
    exe = bt.exe_or_exit("FUSE mount", tools=())
    del exe
    bt.run_tmp_cases("blkmqd-metrics-", [("a", case_a_families)], bt.only_cases())
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
