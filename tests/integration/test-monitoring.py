#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-monitoring.py [BLKMQD]: the monitoring mixin (monitoring/) against a real Prometheus.

A fleet of two on this machine, every server on 127.0.0.1 ports of its own:
  - node A: blkmqd --root on a copy of the fixture vm-6.1-scsi-debug-shared (--dry-run),
    writing its metrics file into a textfile directory of A's; node_exporter A reads it
    (textfile collector);
  - node B: blkmqd on a loop device this test attaches (VerifySec=1), its file in B's
    directory; node_exporter B reads it, with the diskstats collector (the dashboard joins
    node_disk_* with blkmqd_disk_info on device=; loop devices let in, node_exporter leaves them out by default);
  - Prometheus 2.42 scraping both every second, evaluating monitoring/alerts.yml and
    monitoring/rules.yml every second.
(m) both targets up, blkmqd_build_info from each; every query of monitoring/dashboard.json
    ($instance as ".+") evaluated through the HTTP API returns data; BlkmqdKnobChangedExternally
    is not firing, then someone else switches the loop's elevator away from the one blkmqd
    wrote (policy/elevator mq-deadline) and the alert fires for that device within 30 s.
Needs root, /dev/fuse, losetup, prometheus and prometheus-node-exporter (tools/install-deps.sh
--tests): without them a TAP skip (skip_all(), exit 0) naming what is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check  # noqa: E402

MON = os.path.normpath(os.path.join(HERE, "..", "..", "monitoring"))


def get(url, timeout=3):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read().decode())
    except (OSError, ValueError):
        return None


def main():
    exe = bt.exe_or_exit("loop devices, FUSE mount", tools=("losetup", "prometheus", "prometheus-node-exporter"))
    tmp = tempfile.mkdtemp(prefix="blkmqd-monitoring-")
    loops = bt.Loops(tmp)
    procs = []
    da = db = None
    try:
        # ---- node A: a fixture copy
        root = bt.copy_fixture("vm-6.1-scsi-debug-shared", os.path.join(tmp, "root"))
        tfa, tfb = os.path.join(tmp, "textfile-a"), os.path.join(tmp, "textfile-b")
        os.mkdir(tfa)
        os.mkdir(tfb)
        da = bt.config_daemon(tmp, "a", f"[Manager]\nTextfileDirectory={tfa}\nMetricsIntervalSec=1\n")
        da.start("--root", root, "--dry-run")
        # ---- node B: a loop device
        name = loops.attach("m")
        db = bt.config_daemon(tmp, "b", f"[Manager]\nTextfileDirectory={tfb}\nMetricsIntervalSec=1\nVerifySec=1\n")
        db.start("--devices", name)
        check(db.write("mq-deadline", "devices", name, "policy", "elevator") == 0, f"(m) {name}: policy/elevator mq-deadline")
        bt.sh("dd", f"if=/dev/{name}", "of=/dev/null", "bs=4k", "count=2000", "iflag=direct")

        ports = {k: bt.free_port() for k in ("a", "b", "prom")}
        log = open(os.path.join(tmp, "servers.log"), "w")
        # B's diskstats: node_exporter leaves loop devices out by default; this node's disk is one
        for node, tf, extra in (("a", tfa, []), ("b", tfb, ["--collector.diskstats",
                                                            "--collector.diskstats.device-exclude=^(ram|fd)[0-9]+$"])):
            procs.append(subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{ports[node]}",
                                           "--collector.disable-defaults", "--collector.textfile",
                                           f"--collector.textfile.directory={tf}", *extra],
                                          stdout=log, stderr=subprocess.STDOUT))
        conf = os.path.join(tmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files:\n  - {MON}/alerts.yml\n  - {MON}/rules.yml\n"
                    "scrape_configs:\n  - job_name: node\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{ports['a']}', '127.0.0.1:{ports['b']}']\n")
        procs.append(subprocess.Popen(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={tmp}/tsdb",
                                       f"--web.listen-address=127.0.0.1:{ports['prom']}"],
                                      stdout=log, stderr=subprocess.STDOUT))
        api = f"http://127.0.0.1:{ports['prom']}/api/v1/"

        def query(expr):
            r = get(api + "query?" + urllib.parse.urlencode({"query": expr}))
            return r["data"]["result"] if r and r.get("status") == "success" else None

        ok, t = bt.wait_for(lambda: len(query("blkmqd_build_info") or []) == 2, 60.0, 0.5)
        check(ok, f"(m) Prometheus scrapes blkmqd_build_info from both nodes ({t:.1f} s)")
        targets = (get(api + "targets") or {}).get("data", {}).get("activeTargets", [])
        check(len(targets) == 2 and all(x.get("health") == "up" for x in targets),
              f"(m) both node_exporter targets are up: {[x.get('health') for x in targets]}")

        dash = json.load(open(os.path.join(MON, "dashboard.json")))
        for p in dash["panels"]:
            for tgt in p["targets"]:
                expr = tgt["expr"].replace("$instance", ".+")
                res, t = bt.wait_for(lambda: query(expr) or None, 30.0, 0.5)
                check(res is not None, f"(m) dashboard \"{p['title']}\" {tgt['refId']}: {expr} returns data "
                      f"({len(res or [])} series, {t:.1f} s)")

        def firing():
            r = get(api + "alerts") or {}
            return [a for a in r.get("data", {}).get("alerts", [])
                    if a["labels"].get("alertname") == "BlkmqdKnobChangedExternally" and a.get("state") == "firing"]
        check(not firing(), f"(m) BlkmqdKnobChangedExternally is not firing before the change: {firing()}")
        bt.set_elevator(name, "none")           # someone else
        got, t = bt.wait_for(lambda: [a for a in firing() if a["labels"].get("device") == name] or None, 30.0, 0.5)
        check(got is not None and got[0]["labels"].get("knob") == "elevator",
              f"(m) after someone else's elevator switch BlkmqdKnobChangedExternally fires for {name} "
              f"knob elevator ({t:.1f} s): {got and got[0]['labels']}")
    finally:
        for p in procs:
            bt.stop_process(p, 10)
        for d in (da, db):
            if d and d.alive():
                d.stop()
        loops.detach_all()
        if bt.failures and os.path.exists(os.path.join(tmp, "servers.log")):
            print("   servers' log (tail):\n" + "".join("      " + line for line in
                                                       open(os.path.join(tmp, "servers.log")).readlines()[-15:]))
        shutil.rmtree(tmp, ignore_errors=True)
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
