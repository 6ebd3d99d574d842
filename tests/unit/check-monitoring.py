#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
check-monitoring.py SOURCE_ROOT: the monitoring mixin (monitoring/) is valid and speaks of
series blkmqd exports.

  - promtool check rules monitoring/alerts.yml monitoring/rules.yml;
  - promtool test rules monitoring/tests/*.yml (each alert fires on its series, not on the near
    miss; the recording rules' fleet views);
  - every dashboard query (monitoring/dashboard.json, $instance as ".+") parses: each becomes a
    recording rule of a scratch rule file that promtool check rules reads;
  - every blkmqd_* name the rules and the dashboard use is a family of docs/METRICS.md (a
    counter's name as exported, *_total) or a recording rule of rules.yml.
promtool missing: exit 77 (tools/install-deps.sh --tests installs the Debian package prometheus).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check  # noqa: E402


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    mon = os.path.join(root, "monitoring")
    promtool = shutil.which("promtool")
    if not promtool:
        print("SKIP: no promtool (Debian package prometheus)")
        return bt.SKIP
    rules = [os.path.join(mon, "alerts.yml"), os.path.join(mon, "rules.yml")]
    r = subprocess.run([promtool, "check", "rules", *rules], capture_output=True, text=True)
    check(r.returncode == 0, f"promtool check rules alerts.yml rules.yml: {r.stdout.strip()} {r.stderr.strip()}")
    tests = sorted(glob.glob(os.path.join(mon, "tests", "*.yml")))
    r = subprocess.run([promtool, "test", "rules", *map(os.path.basename, tests)], capture_output=True, text=True,
                       cwd=os.path.join(mon, "tests"))
    check(tests and r.returncode == 0, f"promtool test rules {' '.join(map(os.path.basename, tests))}: "
          f"{r.stdout.strip()[-2000:]} {r.stderr.strip()[-500:]}")

    dash = json.load(open(os.path.join(mon, "dashboard.json")))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= 8, f"dashboard.json has its queries: {len(exprs)}")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = os.path.join(tmp, "dashboard-rules.yml")
        with open(scratch, "w") as f:
            f.write("groups:\n  - name: dashboard\n    rules:\n")
            for i, e in enumerate(exprs):
                f.write(f"      - record: dashboard_query_{i}\n        expr: {json.dumps(e.replace('$instance', '.+'))}\n")
        r = subprocess.run([promtool, "check", "rules", scratch], capture_output=True, text=True)
        check(r.returncode == 0, f"every dashboard query parses (promtool check rules): {r.stdout.strip()} {r.stderr.strip()}")

    doc = bt.metrics_doc()
    recorded = set(re.findall(r"record: (\S+)", open(rules[1]).read()))
    text = open(rules[0]).read() + open(rules[1]).read() + "\n".join(exprs)
    used = set(re.findall(r"(?<![\w:])(blkmqd_[a-z_]+)", text)) - {n.split(":")[1] for n in recorded}
    unknown = sorted(n for n in used if n not in doc)
    check(not unknown, f"every blkmqd_* series the rules and the dashboard use is in docs/METRICS.md: unknown {unknown}")

    # The unit tests' input series are blkmqd's series as node_exporter serves them: the
    # family's labels of docs/METRICS.md (which integration/metrics holds against real
    # expositions) plus node_exporter's instance and job, so a rule tested on a label blkmqd
    # does not export (disk= for device=) fails here.
    wrong = []
    for t in tests:
        for name, labels in re.findall(r"series: '(blkmqd_\w+)\{([^}]*)\}'", open(t).read()):
            got = set(re.findall(r"(\w+)=", labels)) - {"instance", "job"}
            if name not in doc or got != doc[name][1]:
                wrong.append(f"{os.path.basename(t)}: {name} {sorted(got)}, docs/METRICS.md "
                             f"{sorted(doc[name][1]) if name in doc else 'no such family'}")
    check(not wrong, f"every blkmqd_* input series of monitoring/tests has its family's labels: {wrong}")
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
