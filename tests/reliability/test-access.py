#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-access.py BLKMQD

The tree as a non-root user (nobody, via setpriv): every file readable, none writable
(open for writing fails with EACCES on policy/*, mode, reload, restore and everything else;
nothing changes). As root: files are root-owned, read-only files 0444, control files
(policy/*, mode, reload, restore) 0644, directories 0555; the mount has allow_other and
default_permissions.
"""

import json
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rel  # noqa: E402
from rel import check, wait_for  # noqa: E402

PROBE = r'''
import errno, json, os, sys
out = {"uid": os.getuid(), "read_ok": 0, "read_fail": [], "write": {}}
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(d, f)
        try:
            fd = os.open(p, os.O_RDONLY); os.read(fd, 65536); os.close(fd)
            out["read_ok"] += 1
        except OSError as e:
            out["read_fail"].append(f"{p}: {e}")
        for flags in (os.O_WRONLY, os.O_WRONLY | os.O_TRUNC, os.O_RDWR):
            try:
                fd = os.open(p, flags)
                try:
                    os.write(fd, b"1\n")
                    out["write"][p] = "WRITTEN"
                except OSError as e:
                    out["write"][p] = "write:" + errno.errorcode.get(e.errno, str(e.errno))
                os.close(fd)
            except OSError as e:
                out["write"].setdefault(p, errno.errorcode.get(e.errno, str(e.errno)))
print(json.dumps(out))
'''

CONTROL = {"mode", "reload", "restore"}


def is_control(rel_path):
    parts = rel_path.split("/")
    # devices/<disk>/policy/<knob>, and devices/<disk>/policy/iosched/<elevator>/<tunable> (issue 18)
    return rel_path in CONTROL or (len(parts) >= 4 and parts[0] == "devices" and parts[2] == "policy" and
                                   (len(parts) == 4 or (len(parts) == 6 and parts[3] == "iosched")))


def body(exe, tmp, argv):
    if subprocess.run(["setpriv", "--version"], capture_output=True).returncode != 0:
        return rel.bt.skip_all("no setpriv")
    os.chmod(tmp, 0o755)        # nobody must reach the mount point
    loops = rel.PrivateLoops(tmp, 1)
    name = loops.names[0]
    d = rel.Daemon(exe, tmp)
    try:
        loops.attach(0)
        d.start("--devices", name)
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "rq_affinity")), 10.0)
        check(ok, f"devices/{name} shown")
        with open("/proc/self/mountinfo") as f:
            opts = [l for l in f if l.split()[4] == d.mnt][0]
        check("allow_other" in opts and "default_permissions" in opts, "mounted with allow_other,default_permissions")

        before = {p: rel.read_all(p) for p in rel.tree_files(d.mnt) if is_control(os.path.relpath(p, d.mnt))}
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                            sys.executable, "-c", PROBE, d.mnt], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"probe as nobody ran (rc {r.returncode}: {r.stderr.strip()[-300:]})")
        if r.returncode != 0:
            return
        out = json.loads(r.stdout)
        check(out["uid"] == 65534, "probe ran as uid 65534")
        n = len(rel.tree_files(d.mnt))
        check(not out["read_fail"] and out["read_ok"] == n,
              f"nobody reads all {n} files (read {out['read_ok']})" + "".join("\n      " + x for x in out["read_fail"][:5]))
        not_eacces = {p: e for p, e in out["write"].items() if e != "EACCES"}
        check(len(out["write"]) == n and not not_eacces, f"nobody: open for writing is EACCES on all {n} files"
              + "".join(f"\n      {os.path.relpath(p, d.mnt)}: {e}" for p, e in list(not_eacces.items())[:8]))
        ctl = [p for p in out["write"] if is_control(os.path.relpath(p, d.mnt))]
        check(len(ctl) >= 8, f"the probe covered {len(ctl)} control files (policy/*, mode, reload, restore)")
        after = {p: rel.read_all(p) for p in before}
        check(after == before, "control files read the same after nobody's attempts")

        bad = []
        for dirpath, dirs, files in os.walk(d.mnt):
            for x in dirs:
                st = os.stat(os.path.join(dirpath, x))
                if stat.S_IMODE(st.st_mode) != 0o555 or st.st_uid != 0:
                    bad.append(f"{os.path.relpath(os.path.join(dirpath, x), d.mnt)}/: {oct(st.st_mode)} uid {st.st_uid}")
            for x in files:
                p = os.path.join(dirpath, x)
                rp = os.path.relpath(p, d.mnt)
                st = os.stat(p)
                want = 0o644 if is_control(rp) else 0o444
                if stat.S_IMODE(st.st_mode) != want or st.st_uid != 0 or st.st_gid != 0 or not stat.S_ISREG(st.st_mode):
                    bad.append(f"{rp}: {oct(st.st_mode)} uid {st.st_uid} gid {st.st_gid} (want {oct(want)} root)")
        check(not bad, "modes: read-only files 0444, control files 0644, directories 0555, all root-owned"
              + "".join("\n      " + b for b in bad[:10]))
    finally:
        d.stop()
        loops.cleanup()


if __name__ == "__main__":
    sys.exit(rel.main_wrapper(body))
