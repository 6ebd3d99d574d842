#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""tree-dump.py BLKMQD FIXTURE_DIR [--config FILE]: every file of blkmqd's tree on a fixture.

Copies the fixture tree (tests/fixtures/<name>) to a temporary directory, starts BLKMQD on it
with --root, --dry-run and a private mount point and state directory, waits until the tree is
mounted, and prints each regular file below the mount point, sorted, as '== path' followed by
its content. On a fixture nothing moves (the counters are the captured files, the rates 0), so
two runs of the same binary print the same bytes.

Compare two builds of blkmqd on every fixture, e.g. before and after a refactoring:
  for f in tests/fixtures/*/; do
      cmp <(tools/tree-dump.py OLD/blkmqd "$f") <(tools/tree-dump.py NEW/blkmqd "$f") || echo "$f differs"
  done
Run as root (FUSE mount).
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blkmqd")
    ap.add_argument("fixture")
    ap.add_argument("--config", default=None)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="blkmqd-tree-dump-")
    root = os.path.join(tmp, "root")
    mnt = os.path.join(tmp, "mnt")
    state = os.path.join(tmp, "state")
    os.makedirs(mnt)
    os.makedirs(state)
    proc = None
    try:
        shutil.copytree(a.fixture, root, symlinks=True)
        subprocess.run(["sh", bt.CAPTURE, "--restore-tree", root], capture_output=True, check=True)
        cfg = a.config or os.path.join(tmp, "empty.conf")
        if not a.config:
            open(cfg, "w").close()
        log = open(os.path.join(tmp, "log"), "w")
        proc = subprocess.Popen([a.blkmqd, "--root", root, "--dry-run", "--mountpoint", mnt,
                                 "--state-dir", state, "--config", cfg], stdout=log, stderr=log)
        if not bt.wait_for(lambda: bt.mount_ready(mnt) or proc.poll() is not None, 30):
            raise SystemExit("tree-dump: the tree was not mounted within 30 s")
        if proc.poll() is not None:
            raise SystemExit("tree-dump: blkmqd exited with %d:\n%s" % (proc.returncode,
                             open(os.path.join(tmp, "log")).read()))
        out = sys.stdout
        for rel, p in sorted(bt.walk_rel(mnt)):
            if not os.path.isfile(p):
                continue
            try:
                data = open(p, "rb").read().decode("utf-8", "replace")
            except OSError as e:
                data = "(read: %s)\n" % os.strerror(e.errno)
            out.write("== %s\n%s" % (rel, data))
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        bt.cleanup_mount(mnt)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
