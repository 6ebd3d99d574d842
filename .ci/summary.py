#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""summary.py ALLOWED BUILDDIR...: what the meson runs of .ci/run ran, skipped and failed.

Reads BUILDDIR/meson-logs/testlog.json and the protocol of each test (meson introspect). A
TAP test counts its test points ("ok", "not ok", "ok ... # SKIP why"), any other test counts
once. A "not ok ... # TODO why" point is a known failure: neither passed nor failed, printed
by name with its reason and counted as "todo"; like a skip it must be named in ALLOWED. Prints
every skip and TODO with its reason, those the CI machine does not allow (the file ALLOWED,
format below), and the closing line "N passed, N failed, N skipped, N todo". Exit status 1
when something failed, a build directory has no log, or a skip or TODO is not allowed; else 0.

ALLOWED: one skip the CI machine (Debian 12, root, QEMU under TCG) has a reason for per line,
"BUILD TEST[ :: SUBTEST] -- why" (a skip or a TODO), BUILD, TEST and SUBTEST shell patterns (fnmatch) against
the build directory's name, the meson test name and a TAP point's description; '#' starts a
comment. A whole test skipped matches an entry without SUBTEST only.
"""

import fnmatch
import json
import os
import re
import subprocess
import sys

POINT_RE = re.compile(r"^(ok|not ok)\b\s*(\d+)?\s*(?:-\s*)?([^#]*?)\s*(?:(?<!\\)#\s*(SKIP|TODO)\S*\s*(.*))?$",
                      re.I)
PLAN_SKIP_RE = re.compile(r"^1\.\.0\s*#\s*SKIP\S*\s*(.*)$", re.I)
EXIT_SKIP_RE = re.compile(r"^SKIP:?\s*(.*)$")


def load_allowed(path):
    rules = []
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, _, why = line.partition(" -- ")
        parts = pattern.split(None, 1)
        if len(parts) != 2 or not why.strip():
            sys.exit(f"{path}:{n}: expected 'BUILD TEST[ :: SUBTEST] -- why'")
        build, rest = parts
        test, _, sub = rest.partition("::")
        rules.append((build.strip(), test.strip(), sub.strip() or None, why.strip()))
    return rules


def allowed(rules, build, test, sub):
    for b, t, s, why in rules:
        if fnmatch.fnmatchcase(build, b) and fnmatch.fnmatchcase(test, t) and \
                ((s is None and sub is None) or (s is not None and sub is not None and fnmatch.fnmatchcase(sub, s))):
            return why
    return None


def protocols(builddir):
    try:
        out = subprocess.run(["meson", "introspect", "--tests", builddir], capture_output=True, text=True,
                             check=True).stdout
        # testlog.json names a test "<project>:<suite> / <name>" (the first suite)
        return {t["name"]: t.get("protocol", "exitcode") for t in json.loads(out)}
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}


def main():
    rules = load_allowed(sys.argv[1])
    passed = failed = skipped = todo = 0
    skips, todos, not_allowed, bad = [], [], [], []
    for builddir in sys.argv[2:]:
        build = os.path.basename(os.path.normpath(builddir))
        log = os.path.join(builddir, "meson-logs", "testlog.json")
        if not os.path.exists(log):
            failed += 1
            bad.append(f"{build}: no test log (the build or its setup failed)")
            continue
        proto = protocols(builddir)
        for line in open(log):
            if not line.strip():
                continue
            t = json.loads(line)
            name, res, out = t["name"], t["result"], t.get("stdout") or ""
            name = name.split(" / ", 1)[-1]
            points = []
            if proto.get(name) == "tap":
                for l in out.splitlines():
                    m = POINT_RE.match(l)
                    if m:
                        points.append((m.group(1).lower() == "ok", m.group(3).strip(), (m.group(4) or "").upper(),
                                       m.group(5) or ""))
            whole_skip = None
            if res == "SKIP" and not any(d != "SKIP" for _, _, d, _ in points):
                for l in out.splitlines():
                    m = PLAN_SKIP_RE.match(l) or EXIT_SKIP_RE.match(l)
                    if m:
                        whole_skip = m.group(1).strip()
                        break
                whole_skip = whole_skip or "(no reason printed)"
            if whole_skip is not None and not points:
                skipped += 1
                skips.append((build, name, None, whole_skip))
                continue
            if not points:
                if res in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                else:
                    failed += 1
                    bad.append(f"{build}: {name}: {res}")
                continue
            for ok, desc, directive, why in points:
                if directive == "SKIP" and ok:
                    skipped += 1
                    skips.append((build, name, desc, why.strip() or "(no reason printed)"))
                elif ok:
                    passed += 1
                elif directive == "TODO":
                    todo += 1
                    todos.append((build, name, desc, why.strip() or "(no reason printed)"))
                else:
                    failed += 1
                    bad.append(f"{build}: {name}: not ok - {desc}")
            if res not in ("OK", "SKIP", "EXPECTEDFAIL") and all(ok for ok, _, _, _ in points):
                failed += 1                 # a crash, a bad plan or a timeout after passing points
                bad.append(f"{build}: {name}: {res} (every TAP point it printed passed)")
    for build, name, sub, why in skips:
        what = f"{name} :: {sub}" if sub else f"{name} (the whole test)"
        ok_why = allowed(rules, build, name, sub)
        print(f".ci/run: skipped in {build}: {what}: {why}" + (f" [allowed: {ok_why}]" if ok_why else ""))
        if not ok_why:
            not_allowed.append(f"{build}: {what}: {why}")
    for build, name, sub, why in todos:
        ok_why = allowed(rules, build, name, sub)
        print(f".ci/run: known failing (TODO) in {build}: {name} :: {sub}: {why}" +
              (f" [allowed: {ok_why}]" if ok_why else ""))
        if not ok_why:
            not_allowed.append(f"{build}: {name} :: {sub}: TODO {why}")
    for b in bad:
        print(f".ci/run: FAILED in {b}")
    if not_allowed:
        print(f".ci/run: {len(not_allowed)} skip(s) or TODO(s) the CI machine (Debian 12, root, QEMU) does not allow "
              f"(.ci/allowed-skips): every suite of the README's test command must run here:")
        for s in not_allowed:
            print(f".ci/run:    {s}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped, {todo} todo")
    return 1 if failed or not_allowed else 0


if __name__ == "__main__":
    sys.exit(main())
