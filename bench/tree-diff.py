#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/tree-diff.py --base EXE --new EXE [--fixture NAME]... [--config TEXT]... [--base-runs N] [--keep DIR]
                   [-- DAEMON-ARGS...]

Whether two builds of blkmqd show the same FUSE tree: a refactor's check that the output is
byte-identical. For every fixture tree in tests/fixtures/ (or each --fixture) and every config
(--config, blkmqd.conf text; by default two: VerifySec=0 alone, and VerifySec=0 with every
disk given RqAffinity=, NrRequests= and IrqAffinity= so that blkmqd writes, records
originals and decides from them), each build EXE (build/tests/integration/blkmqd-emu: the
daemon with the kernel's write semantics on a --root copy, so that an elevator switch moves
queue/scheduler's brackets) runs on its own copy of the fixture with the suites' opt-ins
(tests/pylib/blkmqd_test.py virtual_args()):

  run 1   start, the tree dumped (every file's content or read error, every symlink's
          target, by path, sorted)
  run 2   SIGKILL, started again on the same copy and state directory (the originals
          persisted by run 1, the knobs as blkmqd left them: the history comes from the state
          directory), the tree dumped again; then SIGTERM (blkmqd puts the originals back)
  root    every file of the copy afterwards (what blkmqd wrote and put back)

The base build runs N times (--base-runs, 2 by default), the new one once: a file whose
content differs between base's own runs (a race, such as which of the disks sharing a vector
places it first) is noise, reported by name, when new's content is one of base's; every
other file whose content new does not share with base is printed as a unified diff against
base's first run. The metrics' wall-clock times are blanked first
(NORMALIZE). Exit status 0 when nothing but noise differs, 1
otherwise, 77 without root or /dev/fuse. --keep DIR keeps the dumps (DIR/<fixture>/<config>/).
Arguments after -- go to both daemons (--devices sda: one disk, no race over shared vectors).
"""

import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

DEFAULT_CONFIGS = {
    "plain": "[Manager]\nVerifySec=0\n",
    "writes": "[Manager]\nVerifySec=0\n[Device:all]\nMatchName=*\nRqAffinity=2\nNrRequests=32\nIrqAffinity=0\n",
}


# Values that are a clock reading, blanked before the comparison: the metrics' wall-clock times.
NORMALIZE = [(re.compile(r"^(blkmqd_\w*_(?:timestamp|time)_seconds(?:\{[^}]*\})?) \S+$", re.M), r"\1 <time>")]


def normalize(text):
    for rx, repl in NORMALIZE:
        text = rx.sub(repl, text)
    return text


def dump_tree(top):
    """{relative path: text} of every file and symlink below top."""
    out = {}
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files + [x for x in dirs if os.path.islink(os.path.join(d, x))]):
            p = os.path.join(d, name)
            rel = os.path.relpath(p, top)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p) + "\n"
                continue
            try:
                with open(p, "rb") as f:
                    out[rel] = normalize(f.read().decode(errors="replace"))
            except OSError as e:
                out[rel] = f"(read error: {os.strerror(e.errno)})\n"
    return out


def run_build(exe, fixture, conf_text, work, extra=()):
    """The three dumps of one build on one fixture: {"run1": {...}, "run2": {...}, "root": {...}}."""
    root = bt.copy_fixture(fixture, os.path.join(work, "root"))
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    conf = os.path.join(work, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    d = bt.Daemon(exe, mnt, work, config=conf, start_deadline=60.0, stop_deadline=30.0, unmount_on_stop=True)
    dumps = {}
    try:
        d.start("--root", root, *extra)
        time.sleep(0.5)                 # runs begun at the start's end come back
        dumps["run1"] = dump_tree(mnt)
        d.stop(sig=signal.SIGKILL)
        d.start("--root", root, *extra)
        time.sleep(0.5)
        dumps["run2"] = dump_tree(mnt)
        d.stop()
    finally:
        d.stop(sig=signal.SIGKILL)
        bt.cleanup_mount(mnt)
    dumps["root"] = dump_tree(root)
    return dumps


def text_of(tree):
    return "".join(f"==> {p}\n{c}" + ("" if c.endswith("\n") or not c else "\n") for p, c in sorted(tree.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--fixture", action="append")
    ap.add_argument("--config", action="append", help="blkmqd.conf text (replaces the two defaults)")
    ap.add_argument("--base-runs", type=int, default=2)
    ap.add_argument("--keep")
    ap.add_argument("extra", nargs="*", help="daemon arguments (after --)")
    a = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("SKIP: needs root and /dev/fuse (FUSE mounts)")
        return 77
    fixtures = a.fixture or sorted(n for n in os.listdir(bt.FIXTURES)
                                   if os.path.isdir(os.path.join(bt.FIXTURES, n, "sys", "block")))
    configs = {f"config{i}": t for i, t in enumerate(a.config)} if a.config else DEFAULT_CONFIGS
    differ = 0
    tmp = tempfile.mkdtemp(prefix="blkmqd-tree-diff-")
    try:
        for fx in fixtures:
            for cname, ctext in configs.items():
                work = os.path.join(tmp, fx, cname)
                try:
                    bases = [run_build(a.base, fx, ctext, os.path.join(work, f"base{i + 1}"), a.extra)
                             for i in range(max(a.base_runs, 1))]
                    new = run_build(a.new, fx, ctext, os.path.join(work, "new"), a.extra)
                except (RuntimeError, subprocess.CalledProcessError) as e:
                    print(f"{fx} {cname}: not run: {e}")
                    differ += 1
                    continue
                files = 0
                diffs, noise = [], []
                for phase in ("run1", "run2", "root"):
                    bs, n = [x[phase] for x in bases], new[phase]
                    b = bs[0]
                    for p in sorted(set(b) | set(n)):
                        files += 1
                        seen = [x.get(p) for x in bs]
                        if len(set(seen)) > 1 and n.get(p) in seen:
                            noise.append(f"{phase}/{p}")
                        if n.get(p) in seen:
                            continue
                        diffs.append("".join(difflib.unified_diff(
                            (b.get(p) or "").splitlines(True), (n.get(p) or "").splitlines(True),
                            f"base/{phase}/{p}", f"new/{phase}/{p}")))
                    if a.keep:
                        for tag, t in [(f"base{i + 1}", x) for i, x in enumerate(bs)] + [("new", n)]:
                            out = os.path.join(a.keep, fx, cname, tag)
                            os.makedirs(out, exist_ok=True)
                            with open(os.path.join(out, phase + ".txt"), "w") as f:
                                f.write(text_of(t))
                print(f"{fx} {cname}: {files} files, {len(diffs)} differ, {len(noise)} noise (base's runs differ, "
                      f"new has one of theirs){': ' + ' '.join(noise) if noise else ''}")
                for x in diffs:
                    sys.stdout.write(x if x.endswith("\n") else x + "\n")
                differ += len(diffs)
                sys.stdout.flush()
    finally:
        for mnt in (os.path.join(dp, "mnt") for dp, _, _ in os.walk(tmp)):
            bt.cleanup_mount(mnt)
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
