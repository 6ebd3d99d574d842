#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Operations suite: install tree, unit file, blkmqctl against a running blkmqd, watchdog.

Usage: test-ops.py install|verify|sandbox|ctl|watch|watchdog   (TAP on stdout; exit 0 pass or
skip, 1 fail)
Configuration comes from the environment set by tests/ops/meson.build.
"""
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402

ENV = os.environ
FUSE_SUPER_MAGIC = 0x65735546
failures = bt.failures
check = bt.check


class Skip(Exception):
    """The test cannot run here: main() turns it into bt.skip_all(reason)."""


def skip(reason):
    raise Skip(reason)


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 30)
    return subprocess.run(cmd, **kw)


def destdir_install(dest):
    r = run(["meson", "install", "-C", ENV["BUILD_ROOT"], "--destdir", dest, "--no-rebuild", "--quiet"],
            timeout=120)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit("meson install failed")


def under(dest, *parts):
    path = ENV["PREFIX"]
    for p in parts:
        path = os.path.join(path, p)        # an absolute part (unit dir, /etc) wins
    return os.path.normpath(dest + "/" + path)


# ---------------------------------------------------------------- install

def expected_files(dest):
    files = {
        under(dest, ENV["SBINDIR"], "blkmqd"),
        under(dest, ENV["BINDIR"], "blkmqctl"),
        under(dest, ENV["UNITDIR"], "blkmqd.service"),
        under(dest, ENV["TMPFILESDIR"], "blkmqd.conf"),
        under(dest, ENV["CATALOGDIR"], "blkmqd.catalog"),
        under(dest, ENV["SYSCONFDIR"], "blkmqd", "blkmqd.conf"),
        under(dest, ENV["BASHCOMPLETIONDIR"], "blkmqctl"),
    }
    if ENV.get("HAVE_MAN_PAGES") == "1":
        files |= {under(dest, ENV["MANDIR"], "man8", "blkmqd.8"),
                  under(dest, ENV["MANDIR"], "man8", "blkmqctl.8"),
                  under(dest, ENV["MANDIR"], "man5", "blkmqd.conf.5")}
    return files


def test_install():
    with tempfile.TemporaryDirectory(prefix="blkmqd-destdir-") as dest:
        destdir_install(dest)
        found = set()
        for root, _, names in os.walk(dest):
            for n in names:
                found.add(os.path.join(root, n))
        want = expected_files(dest)
        for f in sorted(want - found):
            check(False, "installed: " + os.path.relpath(f, dest))
        for f in sorted(found - want):
            check(False, "nothing unexpected installed, but found " + os.path.relpath(f, dest))
        check(found == want, "DESTDIR tree is exactly the %d expected files" % len(want))

        sbin = under(dest, ENV["SBINDIR"], "blkmqd")
        check(os.access(sbin, os.X_OK), "blkmqd is executable")
        check(os.access(under(dest, ENV["BINDIR"], "blkmqctl"), os.X_OK), "blkmqctl is executable")
        unit = open(under(dest, ENV["UNITDIR"], "blkmqd.service")).read()
        check(re.search(r"@[a-z_]+@", unit) is None, "unit has no unsubstituted @variables@")
        want_exec = "ExecStart=" + os.path.normpath(os.path.join(ENV["PREFIX"], ENV["SBINDIR"], "blkmqd"))
        check(want_exec in unit, "unit runs the installed binary (%s)" % want_exec)
        for key in ("Type=notify", "WatchdogSec=", "ExecReload=/bin/sh -c 'echo 1 > %s/reload'" % ENV["MOUNTPOINT"],
                    "StateDirectory=blkmqd", "CapabilityBoundingSet=CAP_SYS_ADMIN", "DeviceAllow=/dev/fuse rw"):
            check(key in unit, "unit has " + key)
        tmpf = open(under(dest, ENV["TMPFILESDIR"], "blkmqd.conf")).read()
        check(re.search(r"^d %s 0755 root root" % re.escape(ENV["MOUNTPOINT"]), tmpf, re.M) is not None,
              "tmpfiles.d creates the mount point " + ENV["MOUNTPOINT"])
        conf = open(under(dest, ENV["SYSCONFDIR"], "blkmqd", "blkmqd.conf")).read()
        check(all(not l.strip() or l.lstrip().startswith("#") for l in conf.splitlines()),
              "example configuration is entirely commented out")
        bc = under(dest, ENV["BASHCOMPLETIONDIR"], "blkmqctl")
        r = run(["bash", "-n", bc])
        check(r.returncode == 0, "bash completion parses (bash -n)")
        if ENV.get("HAVE_MAN_PAGES") == "1" and shutil.which("man"):
            r = run(["man", "-l", under(dest, ENV["MANDIR"], "man8", "blkmqctl.8")],
                    env=dict(ENV, MANWIDTH="100"))
            text = re.sub(r".\x08", "", r.stdout)
            if "EXIT STATUS" not in text:
                print(r.stdout[:500], r.stderr[:500])
            check(r.returncode == 0 and "EXIT STATUS" in text and "0x65735546" in text,
                  "blkmqctl(8) renders and documents the exit codes")


# ---------------------------------------------------------------- verify

def test_verify():
    sa = shutil.which("systemd-analyze")
    if not sa:
        skip("systemd-analyze is not installed (apt-get install systemd)")
    with tempfile.TemporaryDirectory(prefix="blkmqd-verify-") as tmp:
        dest = tmp + "/dest"
        destdir_install(dest)
        unit = open(under(dest, ENV["UNITDIR"], "blkmqd.service")).read()
        # The unit names the installed paths (/usr/sbin/blkmqd); point the Exec lines that
        # refer to installed files at the DESTDIR copy so that verify checks them for real.
        def redirect(m):
            path = m.group(2)
            return m.group(1) + (dest + path if os.path.exists(dest + path) else path)
        unit = re.sub(r"^(Exec\w+=[-@:+!]*)(/\S+)", redirect, unit, flags=re.M)
        os.makedirs(tmp + "/units")
        path = tmp + "/units/blkmqd.service"
        open(path, "w").write(unit)
        env = dict(ENV, MANPATH=under(dest, ENV["MANDIR"]) if ENV.get("HAVE_MAN_PAGES") == "1" else "")
        args = [sa, "verify"] + ([] if ENV.get("HAVE_MAN_PAGES") == "1" else ["--man=no"]) + [path]
        r = run(args, env=env, timeout=60)
        out = (r.stdout + r.stderr).strip()
        if out:
            print(out)
        check(r.returncode == 0 and out == "", "systemd-analyze verify: clean (documentation man pages found)")

        r = run([sa, "security", "--offline=true", path], timeout=60)
        m = re.search(r"Overall exposure level for blkmqd.service: ([0-9.]+)", r.stdout + r.stderr)
        if not m and "offline" in (r.stderr or ""):
            print("systemd-analyze security --offline is not supported here: " + r.stderr.strip())
        elif check(m is not None, "systemd-analyze security --offline=true reports an exposure level"):
            score = float(m.group(1))
            print("exposure level: %.1f (docs/OPERATIONS.md records 3.9)" % score)
            check(score <= 4.0, "exposure level %.1f <= 4.0 (hardening not lost)" % score)


# ---------------------------------------------------------------- sandbox

def unit_settings(text):
    """[Service] settings of a unit file: name -> list of values in order (comments dropped)."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            k, _, v = line.partition("=")
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def syscall_set(sa, names, cache):
    """Expand syscall names and @groups with `systemd-analyze syscall-filter`."""
    out = set()
    for n in names:
        if not n.startswith("@"):
            out.add(n.split(":")[0])
            continue
        if n not in cache:
            r = run([sa, "syscall-filter", n], timeout=30)
            members = [l.strip() for l in r.stdout.splitlines()[1:]
                       if l.strip() and not l.strip().startswith("#")]
            cache[n] = syscall_set(sa, members, cache)
        out |= cache[n]
    return out


def test_sandbox():
    """The kinds of unit fault issue 12 found, checked on the installed unit: a deny line that
    takes back what an allow line grants, and a capability set the daemon cannot use after
    execve(); the latter by running blkmqd with the unit's credentials (setpriv) on a fixture."""
    with tempfile.TemporaryDirectory(prefix="blkmqd-sandbox-") as tmp:
        dest = tmp + "/dest"
        destdir_install(dest)
        st = unit_settings(open(under(dest, ENV["UNITDIR"], "blkmqd.service")).read())

        sa = shutil.which("systemd-analyze")
        if sa:
            cache, allowed, denied_later = {}, set(), {}
            for v in st.get("SystemCallFilter", []):
                neg = v.startswith("~")
                items = v.lstrip("~").split()
                if neg:
                    for name in items:
                        hit = syscall_set(sa, [name], cache) & allowed
                        if hit:
                            denied_later[name] = sorted(hit)
                else:
                    allowed |= syscall_set(sa, items, cache)
            check(not denied_later, "no SystemCallFilter=~ line takes back a system call an earlier "
                  "line allows (%s)" % ", ".join("%s: %s" % kv for kv in denied_later.items()))
        else:
            print("systemd-analyze missing: SystemCallFilter= overlap not checked")

        securebits = " ".join(st.get("SecureBits", [])).split()
        bset = " ".join(st.get("CapabilityBoundingSet", [])).split()
        ambient = " ".join(st.get("AmbientCapabilities", [])).split()
        if "noroot" in securebits:       # not "noroot-locked" alone: that locks noroot off
            check(set(bset) <= set(ambient),
                  "SecureBits=noroot: AmbientCapabilities= (%s) carries the bounding set (%s) "
                  "across execve()" % (" ".join(ambient) or "none", " ".join(bset)))

        if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/dev/fuse"):
            print("not root, no setpriv or no /dev/fuse: the run under the unit's credentials is skipped")
            return
        caps = lambda l: ",".join("+" + c.lower().replace("cap_", "") for c in l)
        cmd = ["setpriv"]
        bits = [b.replace("-", "_") for b in securebits]
        if bits:
            cmd += ["--securebits", ",".join("+" + b for b in bits)]
        if bset:
            cmd += ["--bounding-set", "-all," + caps(bset)]
        if ambient:
            cmd += ["--inh-caps", caps(ambient), "--ambient-caps", caps(ambient)]
        if st.get("NoNewPrivileges", ["no"])[-1] in ("yes", "true", "1"):
            cmd += ["--no-new-privs"]
        fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                               "vm-6.1-nvme-4q")
        mp = tmp + "/mp"
        os.makedirs(mp)
        daemon = bt.Daemon(ENV["BLKMQD"], mp, tmp, wrapper=cmd)
        try:
            try:
                daemon.start("--root", fixture)
                ok = True
            except RuntimeError as e:
                print(str(e))
                ok = False
            check(ok, "blkmqd under the unit's credentials (%s) mounts its tree" % " ".join(cmd[1:]))
            if ok:
                status = open("/proc/%d/status" % daemon.pid).read()
                eff = re.search(r"^CapEff:\s*(\S+)", status, re.M).group(1)
                check(int(eff, 16) != 0, "CapEff under the unit's credentials is not empty (%s)" % eff)
                check(daemon.stop(signal.SIGTERM) == 0, "blkmqd exits 0 on SIGTERM")
        finally:
            if daemon.alive():
                daemon.stop(signal.SIGKILL)
            if fs_magic(mp) == FUSE_SUPER_MAGIC or run(["mountpoint", "-q", mp]).returncode == 0:
                run(["umount", "-l", mp])


# ---------------------------------------------------------------- ctl

def is_fuse(path):
    try:
        return os.statvfs(path) and fs_magic(path) == FUSE_SUPER_MAGIC
    except OSError:
        return False


def fs_magic(path):
    r = run(["stat", "-f", "-c", "%t", path])
    return int(r.stdout.strip(), 16) if r.returncode == 0 else -1


def ctl(mp, *args, **kw):
    return run([ENV["BLKMQCTL"], "--mountpoint", mp] + list(args), **kw)


def wait_for_disk(mp, name):
    return bt.wait_for(lambda: os.path.exists("%s/devices/%s/class" % (mp, name)), 5.0, 0.05)[0]


def watch_in_pty(mp, disk, stop, size=None, env=None):
    """blkmqctl watch DISK in a pseudo terminal (of size (rows, cols) when given), stopped by
    stop(pid, fd). Returns (output, raw mode seen, exit status, canonical after, seconds to exit)."""
    pid, fd = pty.fork()
    if pid == 0:
        if size:
            fcntl.ioctl(sys.stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
        os.execve(ENV["BLKMQCTL"], ["blkmqctl", "--mountpoint", mp, "watch", disk], env or dict(os.environ))
    out = b""
    deadline = time.monotonic() + 5
    while b"HCTX" not in out and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    raw = not (termios.tcgetattr(fd)[3] & termios.ICANON)
    t0 = time.monotonic()
    stop(pid, fd)
    status = None
    while time.monotonic() < t0 + 3:
        wpid, st = os.waitpid(pid, os.WNOHANG)
        if wpid:
            status = st
            break
        if select.select([fd], [], [], 0.05)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:
                pass
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    while select.select([fd], [], [], 0.1)[0]:     # what it wrote just before exiting
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    canon = bool(termios.tcgetattr(fd)[3] & termios.ICANON)
    os.close(fd)
    return out.decode(errors="replace"), raw, status, canon, time.monotonic() - t0


def ctl_in_pty(mp, cols, *args):
    """blkmqctl ARGS in a pseudo terminal of 24 rows and cols columns: its output (CRLF as LF)."""
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(sys.stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        os.execv(ENV["BLKMQCTL"], ["blkmqctl", "--mountpoint", mp, *args])
    out = b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 0.1)[0]:
            if os.waitpid(pid, os.WNOHANG)[0]:
                pid = None
                break
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if pid:
        os.waitpid(pid, 0)
    os.close(fd)
    return out.decode(errors="replace").replace("\r\n", "\n")


def test_ctl():
    if os.geteuid() != 0:
        skip("needs root (loop device, FUSE mount)")
    if not os.path.exists("/dev/fuse"):
        skip("/dev/fuse does not exist")
    if not shutil.which("losetup"):
        skip("losetup is not installed")
    with tempfile.TemporaryDirectory(prefix="blkmqd-ops-") as tmp:
        mp = tmp + "/mp"
        os.makedirs(mp)
        loops = bt.Loops(tmp)
        # a state directory of the test's own (tmp/state, beside the mount point): never /var/lib/blkmqd
        daemon = bt.Daemon(ENV["BLKMQD"], mp, tmp)
        try:
            try:
                name = loops.attach("ops")
                outside = loops.attach("ops-other")     # not in --devices: blkmqd says why it is not listed
            except RuntimeError as e:
                skip("cannot attach a loop device: %s" % e)
            try:
                daemon.start("--devices", name)
            except RuntimeError as e:
                raise SystemExit(str(e))
            try:
                ctl_checks(mp, name, daemon.log, outside)
            finally:
                rc = daemon.stop(signal.SIGTERM)
                check(rc == 0, "blkmqd exits 0 on SIGTERM (got %d)" % rc)
            r = ctl(mp, "status")
            check(r.returncode == 3 and "not running" in r.stderr,
                  "status after blkmqd stopped: exit 3, says not running (got %d)" % r.returncode)
            r = ctl(tmp + "/no-such-dir", "status")
            check(r.returncode == 3, "status on a missing mount point: exit 3")
        finally:
            if daemon.alive():
                daemon.stop(signal.SIGKILL)
            if fs_magic(mp) == FUSE_SUPER_MAGIC or run(["mountpoint", "-q", mp]).returncode == 0:
                run(["umount", "-l", mp])
            loops.detach_all()
            print(daemon.tail(100000) if failures else "", end="")


def ctl_checks(mp, disk, log, outside=None):
    check(wait_for_disk(mp, disk), "blkmqd lists %s" % disk)

    r = ctl(mp, "status")
    check(r.returncode == 0, "status: exit 0")
    lines = r.stdout.splitlines()
    # the daemon's mode first (a new user saw "kept" after restore without knowing mode was off)
    mode = open(mp + "/mode").read().strip() if os.path.exists(mp + "/mode") else "-"
    check(lines and lines[0] == "mode: %s" % mode, "status: first line is the mode (%s): %r" % (mode, lines[:1]))
    lines = lines[1:]
    check(lines and lines[0].split()[:2] == ["DISK", "CLASS"], "status: header line")
    row = [l.split() for l in lines[1:] if l.split() and l.split()[0] == disk]
    check(len(row) == 1 and row[0][1] == "stacked", "status: %s has class stacked: %r" % (disk, row))
    nr = open("%s/devices/%s/facts/nr_hw_queues" % (mp, disk)).read().strip()
    check(row and row[0][2] == nr, "status: HCTX column is facts/nr_hw_queues (%s)" % nr)

    r = ctl(mp, "status", "--json")
    try:
        j = json.loads(r.stdout)
        dev = [d for d in j["devices"] if d["disk"] == disk]
        check(r.returncode == 0 and len(dev) == 1, "status --json: parses, lists %s" % disk)
        check(dev[0]["class"] == "stacked" and dev[0]["nr_hw_queues"] == int(nr)
              and dev[0]["rotational"] in (0, 1),
              "status --json: class, nr_hw_queues as a number, rotational")
        check(j["mountpoint"] == mp and j["version"].startswith("blkmqd "), "status --json: mountpoint, version")
        check(j["mode"] == (None if mode == "-" else mode), "status --json: mode %s (%r)" % (mode, j.get("mode")))
    except (ValueError, KeyError, IndexError) as e:
        check(False, "status --json parses: %s: %r" % (e, r.stdout[:200]))

    # verify: nothing differs yet
    r = ctl(mp, "verify")
    check(r.returncode == 0 and r.stdout == "1 disk(s) as planned\n",
          "verify: exit 0, '1 disk(s) as planned' (%d, %r)" % (r.returncode, r.stdout))

    # another tool's scheduler over the one blkmqd's plan kept: STATE says so, above ok and kept
    # (a new user never saw "changed externally" when it ranked below unmanaged)
    sched = "/sys/block/%s/queue/scheduler" % disk
    applied = "%s/devices/%s/applied/elevator" % (mp, disk)
    cur = open(sched).read().split("[")[1].split("]")[0]
    other = "mq-deadline" if cur != "mq-deadline" else "none"
    with open(sched, "w") as f:
        f.write(other)
    ok = bt.wait_for(lambda: open(applied).read().startswith("changed externally"), 5.0, 0.1)[0]  # a read verifies
    r = ctl(mp, "status", "--json")
    st = [d.get("state") for d in json.loads(r.stdout)["devices"] if d["disk"] == disk] if r.returncode == 0 else []
    check(ok and st == ["changed externally"], "status: STATE 'changed externally' after %s -> %s behind blkmqd (%r, %r)"
          % (cur, other, st, open(applied).read().strip()))
    r = ctl(mp, "status")
    check(any(l.split()[:1] == [disk] and "changed externally" in l for l in r.stdout.splitlines()),
          "status: the row of %s says changed externally" % disk)
    check(max(map(len, r.stdout.splitlines())) <= 80,
          "status in a pipe fits 80 columns: %r" % max(r.stdout.splitlines(), key=len))
    out = ctl_in_pty(mp, 60, "status")
    check(out.count("\n") >= 3 and max(map(len, out.splitlines())) <= 60 and "PLANNED" not in out and "STATE" in out,
          "status in a 60-column terminal fits it, PLANNED left out first: %r" % out.splitlines()[:3])
    out = ctl_in_pty(mp, 60, "status", "--wide")
    check("PLANNED" in out and " ROT " in out and max(map(len, out.splitlines())) > 60,
          "status --wide in a 60-column terminal has every column: %r" % out.splitlines()[1:2])
    out = ctl_in_pty(mp, 200, "status")
    check("PLANNED" in out, "status in a 200-column terminal has every column")
    r = ctl(mp, "verify")
    diff = [l for l in r.stdout.splitlines()]
    check(r.returncode == 1 and len(diff) == 1 and diff[0].startswith("%s elevator: changed externally to %s" % (disk, other)),
          "verify: exit 1 and one line saying what differs (%d, %r)" % (r.returncode, r.stdout))
    r = ctl(mp, "verify", disk)
    check(r.returncode == 1 and r.stdout == "\n".join(diff) + "\n", "verify %s: the same line" % disk)
    with open(sched, "w") as f:
        f.write(cur)
    check(bt.wait_for(lambda: not open(applied).read().startswith("changed externally"), 5.0, 0.1)[0],
          "applied/elevator: no longer changed externally once %s is back" % cur)

    explain = open("%s/devices/%s/explain" % (mp, disk)).read().splitlines()
    r = ctl(mp, "explain", disk)
    check(r.returncode == 0 and r.stdout.splitlines()[:len(explain)] == explain and explain,
          "explain: prints the %d explain lines" % len(explain))
    check(any("(rule " in l and l.startswith(disk + ":") for l in r.stdout.splitlines()),
          "explain: lines name their rule")
    r = ctl(mp, "explain", disk, "--json")
    try:
        j = json.loads(r.stdout)
        check(j["explain"] == explain and j["class"] == "stacked" and j["facts"]["nr_hw_queues"] == nr,
              "explain --json: explain lines, class, facts")
    except (ValueError, KeyError) as e:
        check(False, "explain --json parses: %s" % e)

    r = ctl(mp, "explain", "nosuchdisk0")
    check(r.returncode == 2 and "No such disk" in r.stderr, "explain of an unknown disk: exit 2")
    check("saw no block device of that name" in r.stderr and "not_listed" in r.stderr,
          "explain of a name blkmqd never saw says so, and where the others are: %r" % r.stderr.strip())
    # a new user's "explain zram0" (size 0, not listed) said no why: blkmqd's own reason now
    if outside:
        want = "blkmqctl: blkmqd does not list %s: not matched by --devices %s: " % (outside, disk)
        for cmd in ("explain", "status"):
            r = ctl(mp, cmd, outside)
            check(r.returncode == 2 and r.stderr.startswith(want),
                  "%s %s (outside --devices): exit 2 with blkmqd's reason (%d, %r)" % (cmd, outside, r.returncode, r.stderr.strip()))
    for args in (["explain"], ["frobnicate"], ["set", disk, "elevator"], ["--bogus", "status"], []):
        r = ctl(mp, *args)
        check(r.returncode == 1, "usage error %r: exit 1 (got %d)" % (args, r.returncode))

    # the built blkmqd serves devices/<disk>/policy/ and restore: set, reset and restore are
    # tested against them, never skipped for their absence
    policy = "%s/devices/%s/policy" % (mp, disk)
    rq_orig = None
    if check(os.path.isdir(policy) and os.path.exists(policy + "/elevator"),
             "the tree serves devices/%s/policy/elevator (set, reset)" % disk):
        r = ctl(mp, "set", disk, "elevator", "mq-deadline")
        check(r.returncode == 0, "set elevator mq-deadline: exit 0 (%s)" % r.stderr.strip())
        check(open(policy + "/elevator").read().strip() == "mq-deadline", "set: policy/elevator reads back")
        r = ctl(mp, "set", disk, "elevator", "no-such-elevator")
        check(r.returncode == 2 and "Invalid argument" in r.stderr,
              "set a bad value: exit 2 with the errno text (%s)" % r.stderr.strip())
        r = ctl(mp, "reset", disk, "elevator")
        check(r.returncode == 0 and open(policy + "/elevator").read().strip() == "auto",
              "reset: policy/elevator reads auto")
        r = ctl(mp, "set", disk, "no_such_knob", "1")
        check(r.returncode == 2 and "Unknown knob" in r.stderr, "set an unknown knob: exit 2")
        # reset DISK writes auto to every policy file, enabled included (issue 13 item 7:
        # policy/enabled refused auto and reset always exited 2)
        for knob, value in (("elevator", "mq-deadline"), ("rq_affinity", "2"), ("enabled", "0")):
            r = ctl(mp, "set", disk, knob, value)
            check(r.returncode == 0, "set %s %s: exit 0 (%s)" % (knob, value, r.stderr.strip()))
        # an elevator tunable (policy/iosched/<elevator>/<tunable>, issue 18) takes part too
        tun = "iosched/mq-deadline/fifo_batch"
        r = ctl(mp, "set", disk, tun, "8")
        check(r.returncode == 0 and open(policy + "/" + tun).read().strip() == "8",
              "set %s 8: exit 0, reads 8 (%s)" % (tun, r.stderr.strip()))
        r = ctl(mp, "set", disk, "iosched/mq-deadline/fifo_batch", "2147483648")
        check(r.returncode == 2 and "Numerical result out of range" in r.stderr, "set a tunable out of range: exit 2 (ERANGE)")
        r = ctl(mp, "reset", disk)
        check(r.returncode == 0, "reset DISK: exit 0 (%s)" % r.stderr.strip())
        said = r.stdout.splitlines()
        check(sorted(said) == sorted("%s: policy/%s -> auto" % (disk, k) for k in
                                     ("elevator", "rq_affinity", "enabled", "iosched/mq-deadline/fifo_batch")),
              "reset DISK: one line per override it gave back: %r" % said)
        r = ctl(mp, "reset", disk)
        check(r.returncode == 0 and r.stdout == "%s: no override to reset: every policy file reads auto\n" % disk,
              "reset DISK again: says there was nothing to reset (%r)" % r.stdout)
        files = sorted(os.path.relpath(os.path.join(root, f), policy)
                       for root, _, names in os.walk(policy) for f in names)
        values = {f: open(policy + "/" + f).read().strip() for f in files}
        check("enabled" in files and all(v == "auto" for v in values.values()),
              "reset DISK: every policy file reads auto, the tunables' too: %r" % values)
        r = ctl(mp, "set", disk, "enabled", "1")
        check(r.returncode == 0 and open(policy + "/enabled").read().strip() == "1", "set enabled 1: reads 1")
        r = ctl(mp, "reset", disk, "enabled")
        check(r.returncode == 0 and open(policy + "/enabled").read().strip() == "auto"
              and r.stdout == "%s: policy/enabled -> auto\n" % disk, "reset DISK enabled: reads auto, says so (%r)" % r.stdout)
        # again: nothing to give back, and nothing written (a first-time user saw "-> auto" and
        # blkmqd log "set to auto by the administrator" for a knob that read auto already)
        def log_lines():
            with open(log, errors="replace") as f:
                return f.readlines()
        n0 = len(log_lines())
        r = ctl(mp, "reset", disk, "enabled")
        check(r.returncode == 0 and r.stdout == "%s: no override to reset: policy/enabled reads auto\n" % disk,
              "reset DISK enabled again: says there was nothing to reset (%r)" % r.stdout)
        r = ctl(mp, "reset", disk, "iosched/mq-deadline/fifo_batch")
        check(r.returncode == 0 and r.stdout == "%s: no override to reset: policy/iosched/mq-deadline/fifo_batch reads auto\n" % disk,
              "reset DISK TUNABLE that reads auto: says so (%r)" % r.stdout)
        said = [l for l in log_lines()[n0:] if "set to auto" in l]
        check(not said, "reset of a knob reading auto writes nothing: %r" % said)
        for knob, value in (("elevator", "mq-deadline"), ("iosched/mq-deadline/fifo_batch", "8"),
                             ("iosched/kyber/read_lat_nsec", "1000000")):
            r = ctl(mp, "set", disk, knob, value)
            check(r.returncode == 0, "set %s %s: exit 0 (%s)" % (knob, value, r.stderr.strip()))
        # explain's knob table: a multi-line applied/iosched goes under its label, the column fits
        # nic_irq_affinity (a trial user saw the second tunable line run into the row)
        r = ctl(mp, "explain", disk)
        tail = r.stdout.split("\n\n", 1)[-1].splitlines()
        w = max(len(l.split()[0]) for l in tail if l and not l.startswith(" "))
        blk = [l for l in tail if l.startswith("iosched ") or (l.startswith(" ") and l.split()[0] in ("applied", "policy"))]
        check(r.returncode == 0 and len(blk) >= 3 and blk[0].startswith("iosched".ljust(w) + " planned ")
              and blk[1].startswith(" " * (w + 1) + "applied ") and blk[-1].startswith(" " * (w + 1) + "policy "),
              "explain: iosched as a block, applied and policy under planned: %r" % blk)
        check(all(l.startswith(" ") or l[w] == " " for l in tail if l), "explain: one knob column wide enough for every name")
        r = ctl(mp, "reset", disk)
        check(r.returncode == 0 and len(r.stdout.splitlines()) == 3, "reset DISK: the three overrides (%r)" % r.stdout)
        # something for restore to put back: an rq_affinity the disk does not have (set answers
        # once the write is done)
        rq = "/sys/block/%s/queue/rq_affinity" % disk
        rq_orig = open(rq).read().strip()
        want = "2" if rq_orig != "2" else "1"
        r = ctl(mp, "set", disk, "rq_affinity", want)
        check(r.returncode == 0 and open(rq).read().strip() == want,
              "set rq_affinity %s: written (%s)" % (want, r.stderr.strip()))

    r = ctl(mp, "restore")
    if check(os.path.exists(mp + "/restore"), "the tree serves restore"):
        check(r.returncode == 0, "restore: exit 0")
        # it says what it did: the count the tree's restore file holds, and the mode now
        n = open(mp + "/restore").read().strip()
        said = (f"Restored {n} original value(s)." if n != "0" else "Nothing to restore: blkmqd had changed no value.")
        check(r.stdout.startswith(said + "\nmode: off: blkmqd writes nothing until 'echo auto > "),
              "restore: says how many values it put back (%s) and that mode is off (%r)" % (n, r.stdout))
        if rq_orig is not None:
            check(n != "0" and open(rq).read().strip() == rq_orig,
                  "restore: rq_affinity %s is back, and counted (%s)" % (rq_orig, n))
        r = ctl(mp, "status")
        check(r.stdout.startswith("mode: off (nothing is written"), "status after restore: mode off (%r)" % r.stdout[:80])
        r = ctl(mp, "status", "--json")
        try:
            check(json.loads(r.stdout)["mode"] == "off", "status --json after restore: mode off")
        except (ValueError, KeyError) as e:
            check(False, "status --json after restore parses: %s" % e)

    # every subcommand (and option) against the live tree exits 0: none may depend on a
    # file this blkmqd does not serve or refuse a value the grammar documents
    for args in (["status"], ["status", "--json"], ["--json", "status"], ["explain", disk], ["explain", disk, "--json"],
                 ["watch", "-n", "1", disk], ["set", disk, "nr_requests", "auto"], ["set", disk, "enabled", "auto"],
                 ["reset", disk, "irq_affinity"], ["reset", disk], ["restore"], ["--version"], ["--help"]):
        r = ctl(mp, *args, timeout=10)
        check(r.returncode == 0 and "Traceback" not in r.stderr,
              "blkmqctl %s: exit 0 (got %d: %s)" % (" ".join(args), r.returncode, r.stderr.strip()[:200]))

    r = ctl(mp, "watch", "--iterations", "2", disk, timeout=10)
    check(r.returncode == 0 and r.stdout.count("HCTX") == 2, "watch -n 2: two frames, exit 0")
    nh = len(os.listdir("%s/devices/%s/hctx" % (mp, disk)))
    frame = r.stdout.split("HCTX")[-1].splitlines()[1:1 + nh]
    check(len(frame) == nh and all(l.split()[0] == str(i) for i, l in enumerate(frame)),
          "watch: one row per hctx (%d)" % nh)

    watch_size_checks(mp, disk, nh)

    out, raw, st, canon, dt = watch_in_pty(mp, disk, lambda pid, fd: os.write(fd, b"q"))
    check(raw, "watch in a terminal: raw mode while running")
    check(st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 and dt < 2,
          "watch: q quits with exit 0 within 2 s (%.2fs)" % dt)
    check(canon and "\x1b[?25h" in out, "watch: terminal restored (canonical mode, cursor shown)")
    out, raw, st, canon, dt = watch_in_pty(mp, disk, lambda pid, fd: os.kill(pid, signal.SIGINT))
    check(st is not None and os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 and canon and dt < 2,
          "watch: Ctrl-C (SIGINT) exits 0 and restores the terminal")


def watch_frames(out):
    """The frames of blkmqctl watch output: lists of lines, each frame from its first line
    ("<disk>  HH:MM:SS  class ...") on; the terminal's clear-screen sequence dropped."""
    frames = []
    for line in out.replace("\x1b[H\x1b[2J", "").replace("\x1b[?25l", "").replace("\x1b[?25h", "").replace("\r", "").split("\n"):
        if re.match(r"^(blkmqctl watch )?\S+  \d\d:\d\d:\d\d  ", line):     # (the first form: before 80x24)
            frames.append([])
        if frames:
            frames[-1].append(line)
    for f in frames:            # the newline after a frame's last line
        while f and f[-1] == "":
            f.pop()
    return frames


def watch_fits(what, out, rows, cols, want_frames=2):
    """Every frame of out has at most rows - 1 lines (the cursor's line does not scroll the
    first away) of at most cols columns. Returns the frames."""
    frames = watch_frames(out)
    check(len(frames) >= want_frames, "%s: %d frame(s) of blkmqctl watch" % (what, len(frames)))
    worst = max((len(f) for f in frames), default=0), max((len(l) for f in frames for l in f), default=0)
    check(frames and worst[0] <= rows - 1 and worst[1] <= cols,
          "%s: every frame fits %dx%d (%d lines of up to %d columns)" % (what, rows, cols, worst[0], worst[1]))
    return frames


def watch_size_checks(mp, disk, nh):
    """blkmqctl watch fits the terminal: 80x24 when not a tty (and no $COLUMNS/$LINES), the
    size $COLUMNS/$LINES give, the pseudo terminal's own size (TIOCGWINSZ, $COLUMNS ignored);
    a disk with more hctx than rows says how many are not shown, columns that do not fit are
    named. nh: the disk's hctx."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    r = run([ENV["BLKMQCTL"], "--mountpoint", mp, "watch", "-n", "2", disk], env=env, timeout=20)
    frames = watch_fits("watch %s, not a tty" % disk, r.stdout, 24, 80)
    rows_shown = [l for l in frames[-1] if re.match(r"^ *\d+  ", l)] if frames else []
    more = [l for l in frames[-1] if l.startswith("+")] if frames else []
    if nh > 18:
        check(len(rows_shown) < nh and more and ("+%d more hctx (%d in all)" % (nh - len(rows_shown), nh)) in more[0],
              "watch %s at 80x24: %d of %d hctx rows, the footer says how many more: %r" % (disk, len(rows_shown), nh, more))
    else:
        check(len(rows_shown) == nh, "watch %s at 80x24: all %d hctx rows" % (disk, nh))
    tall = dict(env, COLUMNS="160", LINES=str(nh + 12))
    r = run([ENV["BLKMQCTL"], "--mountpoint", mp, "watch", "-n", "2", disk], env=tall, timeout=20)
    frames = watch_fits("watch %s, COLUMNS=160 LINES=%d" % (disk, nh + 12), r.stdout, nh + 12, 160)
    rows_shown = [l for l in frames[-1] if re.match(r"^ *\d+  ", l)] if frames else []
    check(len(rows_shown) == nh and not any(l.startswith("+") for l in frames[-1]),
          "watch %s with %d lines: every hctx row, no footer" % (disk, nh + 12))
    narrow = dict(env, COLUMNS="40", LINES="12")
    r = run([ENV["BLKMQCTL"], "--mountpoint", mp, "watch", "-n", "1", disk], env=narrow, timeout=20)
    watch_fits("watch %s, COLUMNS=40 LINES=12" % disk, r.stdout, 12, 40, want_frames=1)
    out, raw, st, canon, dt = watch_in_pty(mp, disk, lambda pid, fd: (time.sleep(1.5), os.write(fd, b"q")), size=(24, 80),
                                           env=dict(env, COLUMNS="200", LINES="60"))
    watch_fits("watch %s in a 24x80 terminal ($COLUMNS=200 ignored)" % disk, out, 24, 80, want_frames=1)
    out, raw, st, canon, dt = watch_in_pty(mp, disk, lambda pid, fd: (time.sleep(1.5), os.write(fd, b"q")), size=(nh + 12, 132),
                                           env=env)
    frames = watch_fits("watch %s in a %dx132 terminal" % (disk, nh + 12), out, nh + 12, 132, want_frames=1)
    rows_shown = [l for l in frames[-1] if re.match(r"^ *\d+  ", l)] if frames else []
    check(len(rows_shown) == nh, "watch %s in a %dx132 terminal: every hctx row (%d)" % (disk, nh + 12, len(rows_shown)))


def test_watch():
    """blkmqctl watch on a 64-hctx disk (the synthetic-megaraid-64q fixture, --root) and on a loop device."""
    if os.geteuid() != 0:
        skip("needs root (FUSE mount)")
    if not os.path.exists("/dev/fuse"):
        skip("/dev/fuse does not exist")
    with tempfile.TemporaryDirectory(prefix="blkmqd-watch-") as tmp:
        mp = tmp + "/mp"
        os.makedirs(mp)
        root = bt.copy_fixture("synthetic-megaraid-64q", tmp + "/root")
        daemon = bt.Daemon(ENV["BLKMQD"], mp, tmp, unmount_on_stop=True)
        try:
            daemon.start("--root", root)
            nh = len(os.listdir("%s/devices/sda/hctx" % mp))
            check(nh == 64, "synthetic-megaraid-64q: sda has 64 hctx (%d)" % nh)
            watch_size_checks(mp, "sda", nh)
        finally:
            rc = daemon.stop(signal.SIGTERM)
            check(rc == 0, "blkmqd exits 0 on SIGTERM (got %s)" % rc)
            print(daemon.tail(100000) if failures else "", end="")


# ---------------------------------------------------------------- watchdog

def test_watchdog():
    with tempfile.TemporaryDirectory(prefix="blkmqd-notify-") as tmp:
        path = tmp + "/notify"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        # 1 s: blkmqd pings every usec/2; a tighter period makes the gap check below a
        # measure of this machine's load rather than of the daemon's loop
        usec = 1000000
        env = dict(ENV, NOTIFY_SOCKET=path, WATCHDOG_USEC=str(usec))
        # WATCHDOG_PID must be the daemon's own PID: let the shell exec into it.
        p = subprocess.Popen(["sh", "-c", 'WATCHDOG_PID=$$ exec "$0" "$@"', ENV["BLKMQD"],
                              "--no-mount", "--devices", "blkmqd-test-matches-nothing"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        msgs = []
        try:
            def collect(seconds):
                t0 = time.monotonic()
                while time.monotonic() < t0 + seconds:
                    if select.select([sock], [], [], 0.05)[0]:
                        msgs.append((time.monotonic(), sock.recv(4096).decode()))
            collect(4.0)
            # A stuck event loop sends nothing: freeze the process (as a hang would) and check
            # that the pings stop, so systemd's WatchdogSec= would fire; then let it go on.
            p.send_signal(signal.SIGSTOP)
            while select.select([sock], [], [], 0.05)[0]:       # drain what was already sent
                sock.recv(4096)
            stopped_at = time.monotonic()
            collect(3 * usec / 1e6)
            resumed_at = time.monotonic()
            p.send_signal(signal.SIGCONT)
            collect(1.0)
            p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=10)
            while select.select([sock], [], [], 0.2)[0]:
                msgs.append((time.monotonic(), sock.recv(4096).decode()))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        ready = [t for t, m in msgs if "READY=1" in m.split("\n")]
        pings = [t for t, m in msgs if "WATCHDOG=1" in m.split("\n")]
        check(len(ready) >= 1, "READY=1 arrives")
        check(any(m.startswith("STATUS=") or "\nSTATUS=" in m for _, m in msgs), "STATUS= arrives")
        frozen = [t for t in pings if stopped_at <= t < resumed_at]
        check(not frozen, "no WATCHDOG=1 while the loop is frozen (%d pings in %.1f s)" % (len(frozen), resumed_at - stopped_at))
        check(any(t >= resumed_at for t in pings), "WATCHDOG=1 resumes after SIGCONT")
        after = [t for t in pings if ready and ready[0] <= t < stopped_at]
        check(len(after) >= 5, "WATCHDOG=1 keeps arriving after READY=1 (%d in ~4 s, WATCHDOG_USEC=%d)"
              % (len(after), usec))
        gaps = [b - a for a, b in zip(after, after[1:])]
        if gaps:
            check(max(gaps) < usec / 1e6, "no gap between pings reaches WATCHDOG_USEC (max %.3f s)" % max(gaps))
        check(any("STOPPING=1" in m for _, m in msgs), "STOPPING=1 on SIGTERM")
        check(rc == 0, "blkmqd exits 0 on SIGTERM (got %d)" % rc)
        if failures:
            print(p.stdout.read())


def main():
    tests = {"install": test_install, "verify": test_verify, "sandbox": test_sandbox, "ctl": test_ctl,
             "watch": test_watch, "watchdog": test_watchdog}
    if len(sys.argv) != 2 or sys.argv[1] not in tests:
        print(__doc__)
        return 2
    bt.tap_begin()
    try:
        tests[sys.argv[1]]()
    except Skip as e:
        return bt.skip_all(str(e))
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
