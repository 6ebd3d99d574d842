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
import signal
import stat
import subprocess
import sys
import time
import urllib.request

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


def series(text):
    return {l.rsplit(" ", 1)[0] for l in text.splitlines() if l and not l.startswith("#")}


def value(text, name):
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def case_b_textfile(tmp):
    """(b) the metrics file: atomic, mtime = write time, never blocks node_exporter, stays at stop"""
    root = bt.copy_fixture("vm-6.1-scsi-debug-shared", os.path.join(tmp, "root"))
    tf = os.path.join(tmp, "textfile")
    os.mkdir(tf)
    d = bt.config_daemon(tmp, "b", f"[Manager]\nTextfileDirectory={tf}\nMetricsIntervalSec=0\n")
    prom = os.path.join(tf, "blkmqd.prom")
    exporter = None
    try:
        d.start("--root", root, "--dry-run")
        ok, _ = bt.wait_for(lambda: os.path.exists(prom), 5.0, 0.05)
        check(ok, f"(b) {prom} written after the start")
        if not ok:
            return
        st = os.lstat(prom)
        check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644,
              f"(b) a regular file of mode 0644: {oct(st.st_mode)}")
        check(os.listdir(tf) == ["blkmqd.prom"], f"(b) nothing else in the directory: {os.listdir(tf)}")
        text, live = bt.read_text(prom), d.read("metrics")
        check(len(series(text)) > 10 and series(text) == series(live),
              f"(b) the file has the {len(series(live))} series of /metrics (differ: {sorted(series(text) ^ series(live))[:4]})")
        check(not bt.metrics_doc_problems(text), f"(b) docs/METRICS.md lists the file's families: {bt.metrics_doc_problems(text)}")
        check(value(text, 'blkmqd_reloads_total{result="success"}') == 0 and value(text, "blkmqd_last_reload_success") == 1,
              "(b) blkmqd_reloads_total{result=\"success\"} 0, blkmqd_last_reload_success 1 at the start")
        time.sleep(2.5)
        check(os.stat(prom).st_mtime_ns == st.st_mtime_ns,
              "(b) MetricsIntervalSec=0 and nothing changed: the file is not written again (its mtime stays)")
        check(d.write("1", "reload") == 0, "(b) echo 1 > reload")
        ok, _ = bt.wait_for(lambda: value(bt.read_text(prom), 'blkmqd_reloads_total{result="success"}') == 1, 3.0, 0.05)
        check(ok and os.stat(prom).st_mtime_ns > st.st_mtime_ns,
              "(b) after a reload the file is written again within 3 s, with blkmqd_reloads_total{result=\"success\"} 1")
        with open(d.config, "a") as f:
            f.write("[Manager]\nNoSuchKey=1\n")
        check(d.write("1", "reload") == 22, "(b) a bad configuration's reload: EINVAL")
        ok, _ = bt.wait_for(lambda: value(bt.read_text(prom), "blkmqd_last_reload_success") == 0, 3.0, 0.05)
        text = bt.read_text(prom)
        check(ok and value(text, 'blkmqd_reloads_total{result="failure"}') == 1,
              "(b) the file then says blkmqd_last_reload_success 0 and blkmqd_reloads_total{result=\"failure\"} 1")

        ne = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
        check(ne is not None, "(b) prometheus-node-exporter is installed (tools/install-deps.sh --tests)")
        if not ne:
            return
        port = bt.free_port()
        log = open(os.path.join(tmp, "node-exporter.log"), "w")
        # the filesystem collector's default exclusions with fuse.blkmqd added (README, OPERATIONS)
        exclude = ("^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|devtmpfs|fusectl|hugetlbfs|iso9660|mqueue|"
                   "nsfs|overlay|proc|procfs|pstore|rpc_pipefs|securityfs|selinuxfs|squashfs|sysfs|tracefs|fuse\\.blkmqd)$")
        exporter = subprocess.Popen([ne, f"--collector.textfile.directory={tf}", f"--web.listen-address=127.0.0.1:{port}",
                                     "--collector.disable-defaults", "--collector.textfile", "--collector.filesystem",
                                     "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys)($|/)",
                                     f"--collector.filesystem.fs-types-exclude={exclude}"],
                                    stdout=log, stderr=subprocess.STDOUT)

        def scrape():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3) as r:
                    return r.read().decode()
            except OSError:
                return None
        body, _ = bt.wait_for(lambda: (scrape() or "") if "blkmqd_build_info" in (scrape() or "") else None, 10.0, 0.1)
        check(body is not None, f"(b) node_exporter on 127.0.0.1:{port} serves blkmqd_* from the file")
        os.kill(d.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            body = scrape()
            t = time.monotonic() - t0
            check(body is not None and t < 3.0 and "blkmqd_build_info{" in body and "node_textfile_scrape_error 0" in body,
                  f"(b) blkmqd stopped by SIGSTOP: the scrape answers in {t:.2f} s with blkmqd_build_info and "
                  f"node_textfile_scrape_error 0")
            check(body is not None and d.mnt not in body, f"(b) ... and no node_filesystem_* series of the fuse.blkmqd mount {d.mnt}")
            m = re.search(r'^node_textfile_mtime_seconds\{file="[^"]*blkmqd\.prom"\} (\S+)$', body or "", re.M)
            check(m is not None and abs(float(m.group(1)) - os.stat(prom).st_mtime) < 1.0,
                  f"(b) node_textfile_mtime_seconds is the file's mtime (the last write), not the scrape: {m and m.group(1)}")
        finally:
            os.kill(d.pid, signal.SIGCONT)
        last = bt.read_text(prom)
        d.stop()
        check(os.path.exists(prom) and bt.read_text(prom) == last and os.listdir(tf) == ["blkmqd.prom"],
              "(b) after SIGTERM the file stays with its last content (its age then tells a stopped blkmqd)")
    finally:
        bt.stop_process(exporter, 5)
        if d.alive():
            d.stop()


def case_c_counters(tmp):
    """(c) writes, external changes and restores are counted, in /metrics and in the file"""
    loops = bt.Loops(tmp)
    tf = os.path.join(tmp, "textfile")
    os.mkdir(tf)
    prom = os.path.join(tf, "blkmqd.prom")
    d = bt.config_daemon(tmp, "c", f"[Manager]\nTextfileDirectory={tf}\nMetricsIntervalSec=0\nVerifySec=0\n")
    try:
        name = loops.attach("c")
        d.start("--devices", name)
        m = d.read("metrics")
        for fam in ("blkmqd_writes_total", "blkmqd_restores_total", "blkmqd_external_changes_total", "blkmqd_write_failures_total"):
            check(value(m, fam) == 0, f"(c) {fam} 0 at the start: {value(m, fam)}")
        check(d.write("mq-deadline", "devices", name, "policy", "elevator") == 0, "(c) policy/elevator mq-deadline")
        m = d.read("metrics")
        check(value(m, "blkmqd_writes_total") == 1, f"(c) blkmqd_writes_total 1 after the override's write: {value(m, 'blkmqd_writes_total')}")
        ok, _ = bt.wait_for(lambda: value(bt.read_text(prom), "blkmqd_writes_total") == 1, 3.0, 0.05)
        check(ok, "(c) the file says blkmqd_writes_total 1 within 3 s")
        bt.set_elevator(name, "none")           # someone else
        d.read("devices", name, "applied", "elevator")         # a read verifies the disk
        m = d.read("metrics")
        check(value(m, "blkmqd_external_changes_total") == 1,
              f"(c) blkmqd_external_changes_total 1 after someone else's switch: {value(m, 'blkmqd_external_changes_total')}")
        check(d.write("2", "devices", name, "policy", "rq_affinity") == 0, "(c) policy/rq_affinity 2")
        check(d.write("1", "restore") == 0, "(c) echo 1 > restore")
        m = d.read("metrics")
        check(value(m, "blkmqd_restores_total") == 1, f"(c) blkmqd_restores_total 1 after the restore: {value(m, 'blkmqd_restores_total')}")
        check(value(m, "blkmqd_writes_total") == 2, f"(c) blkmqd_writes_total 2: {value(m, 'blkmqd_writes_total')}")
    finally:
        if d.alive():
            d.stop()
        loops.detach_all()


def main():
    exe = bt.exe_or_exit("FUSE mount", tools=("losetup",))
    del exe
    bt.run_tmp_cases("blkmqd-metrics-", [("a", case_a_families), ("b", case_b_textfile), ("c", case_c_counters)],
                     bt.only_cases())
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
