#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-daemon.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

The built daemon on a real FUSE mount against the real /sys, limited with --devices to
loop devices this test attaches itself (never vda, never a loop it did not create).
Needs root, /dev/fuse and losetup: skipped with the reason otherwise.

Cases: (a) hot-add appears within 1 s, facts; (b) mq-deadline -> none applied, SIGTERM
restores and unmounts; (c) --dry-run writes nothing; (d) losetup -d removes the entry
within 1 s; (e) read semantics of the tree; (f) an open file of a removed device reads
EIO, the daemon survives; (g) kill -9 then restart on the same mount point; (h) splice()
and sendfile() readers read what read() reads; (i) originals recorded at an earlier boot (another
boot id in the file) are dropped, and a stop restores what the disk had at this boot; (k) blkmqd's
shipped default for virtual devices (the other cases opt loop devices in, tests/pylib): a loop
device is listed with its class and explain, nothing is written to it, also not at stop;
policy/enabled 1 opts it in (written), auto leaves it again (put back).

Every wait is a poll with a deadline. Loop devices are detached and mounts removed in
finally blocks whatever happens (tests/pylib/blkmqd_test.py: Daemon, Loops, run_cases).
"""

import errno
import os
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, mounted, read_text, set_elevator, sh, wait_for  # noqa: E402

APPEAR_DEADLINE = 1.0          # the brief: a hot-added disk shows within 1 s (bench/reaction measures it;
                               # here it is printed, and only the 5 s poll decides: a loaded CI machine
                               # is no timing reference)


# ---- cases ---------------------------------------------------------------------------------

def hctx_files_survive_forget(d, name):
    """hctx/<n>/<attr> nodes are made by LOOKUP and freed by FORGET: after the kernel drops
    its inode cache they come back with the same inode numbers and contents, and readdir
    lists each with the number stat reports."""
    h = d.path("devices", name, "hctx", "0")
    listed = {e.name: e.inode() for e in os.scandir(h)}
    stat_ino = {n: os.stat(os.path.join(h, n)).st_ino for n in listed}
    before = d.read("devices", name, "hctx", "0", "cpu_list")
    check(len(listed) > 20 and listed == stat_ino, f"(a) hctx/0: {len(listed)} files, readdir inode = stat inode")
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")                  # dentries and inodes: the kernel FORGETs our nodes
    again = {n: os.stat(os.path.join(h, n)).st_ino for n in listed}
    check(again == stat_ino, "(a) hctx/0 files keep their inode numbers across FORGET")
    check(d.read("devices", name, "hctx", "0", "cpu_list") == before, "(a) hctx/0/cpu_list reads the same after FORGET")
    check(all(open(os.path.join(h, n)).read().endswith("\n") for n in listed), "(a) every hctx/0 file reads after FORGET")


def case_a_hotplug_and_facts(d, loops, tmp):
    """(a) a loop attached while the daemon runs appears within 1 s, with its facts."""
    for attempt in range(3):
        name, do_attach = loops.attach_predicted("a")
        d.start("--devices", name)
        try:
            if os.path.exists(d.path("devices", name)) and os.path.exists(f"/sys/block/{name}/loop/backing_file"):
                # listed because another test (meson runs suites in parallel) attached the
                # predicted name first: not ours to judge, take the next free one
                print(f"   {name} was attached by someone else before this test; retrying")
                continue
            check(not os.path.exists(d.path("devices", name)), f"(a) unattached {name} is not listed (no medium)")
            try:
                do_attach()
            except RuntimeError as e:      # someone else took the predicted name: retry
                print(f"   {e}; retrying")
                continue
            t0 = time.monotonic()
            ok, _ = wait_for(lambda: os.path.isfile(d.path("devices", name, "class")), 5.0)
            latency = time.monotonic() - t0
            print(f"   (a) devices/{name} appeared {latency * 1000:.1f} ms after losetup returned")
            check(ok, f"(a) devices/{name} appears ({latency:.3f} s; the target is {APPEAR_DEADLINE} s, measured by bench/reaction.py, P1)")
            if not ok:
                return
            rot = read_text(f"/sys/block/{name}/queue/rotational").strip()
            check(d.read("devices", name, "facts", "nr_hw_queues") == "1\n", "(a) facts/nr_hw_queues = 1")
            check(d.read("devices", name, "facts", "rotational") == rot + "\n", f"(a) facts/rotational = sysfs value {rot}")
            check(d.read("devices", name, "class") == "stacked\n", "(a) class = stacked")
            check(d.read("devices", name, "facts", "transport") == "loop\n", "(a) facts/transport = loop")
            check(d.read("devices", name, "facts", "stacked") == "1\n", "(a) facts/stacked = 1")
            dev = read_text(f"/sys/block/{name}/dev")
            check(d.read("devices", name, "facts", "devnum") == dev, f"(a) facts/devnum = {dev.strip()}")
            size = int(read_text(f"/sys/block/{name}/size")) * 512
            check(d.read("devices", name, "facts", "size") == f"{size}\n", f"(a) facts/size = {size}")
            check(sorted(os.listdir(d.path("devices"))) == [name], "(a) only the --devices loop is shown")
            check(os.listdir(d.path("devices", name, "hctx")) == ["0"], "(a) hctx/ has exactly 0")
            hctx_files_survive_forget(d, name)
            return
        finally:
            d.stop()
    check(False, "(a) could not attach a predicted loop device in 3 attempts")


def case_b_apply_and_restore(d, loops, tmp):
    """(b) mq-deadline before start -> none applied; SIGTERM restores and unmounts."""
    name = loops.attach("b")
    vda_before = current_elevator("vda") if os.path.exists("/sys/block/vda") else None
    set_elevator(name, "mq-deadline")
    check(current_elevator(name) == "mq-deadline", f"(b) {name} set to mq-deadline before start")
    d.start("--devices", name)
    try:
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "applied", "elevator")), 5.0)
        check(ok, f"(b) devices/{name} shown")
        check(d.read("devices", name, "plan", "elevator") == "none\n", "(b) plan/elevator = none")
        check(d.read("devices", name, "applied", "elevator") == "ok: none (was mq-deadline)\n",
              f"(b) applied/elevator = ok: none (was mq-deadline), got {d.read('devices', name, 'applied', 'elevator')!r}")
        check(current_elevator(name) == "none", f"(b) the kernel shows [none] for {name}")
        explain = d.read("devices", name, "explain")
        # what the kernel has now, and what blkmqd found (issue 13 item 5: not the value before)
        check(f"{name}: class=stacked elevator=none (mq-deadline before blkmqd switched it) wanted=none" in explain
              and "(rule elevator-stacked)" in explain, f"(b) explain has the elevator-stacked decision: {explain!r}")
        if vda_before:
            check(current_elevator("vda") == vda_before, "(b) vda untouched")
    finally:
        rc = d.stop(signal.SIGTERM)
    check(rc == 0, f"(b) SIGTERM exit status 0 (got {rc})")
    check(current_elevator(name) == "mq-deadline", "(b) after SIGTERM the scheduler is [mq-deadline] again")
    check(not mounted(d.mnt), "(b) after SIGTERM the mount is gone")


def case_c_dry_run(d, loops, tmp):
    """(c) --dry-run writes nothing and says what it would do."""
    a = loops.attach("c")
    b = loops.attach("c")
    set_elevator(a, "mq-deadline")
    set_elevator(b, "kyber")
    before = {n: read_text(f"/sys/block/{n}/queue/scheduler") for n in (a, b)}
    d.start("--dry-run", "--devices", f"{a},{b}")
    try:
        wait_for(lambda: all(os.path.exists(d.path("devices", n, "applied", "elevator")) for n in (a, b)), 5.0)
        check(d.read("devices", a, "applied", "elevator") == "dry-run: would write none (now mq-deadline)\n",
              f"(c) {a} applied/elevator = dry-run: would write none (now mq-deadline)")
        check(d.read("devices", b, "applied", "elevator") == "dry-run: would write none (now kyber)\n",
              f"(c) {b} applied/elevator = dry-run: would write none (now kyber)")
        if os.path.exists(d.path("mode")):
            check(d.read("mode") == "dry-run\n", f"(c) mode reads dry-run (got {d.read('mode')!r})")
        for n in (a, b):
            check(read_text(f"/sys/block/{n}/queue/scheduler") == before[n], f"(c) {n} scheduler unchanged while running")
    finally:
        d.stop()
    for n in (a, b):
        check(read_text(f"/sys/block/{n}/queue/scheduler") == before[n], f"(c) {n} scheduler unchanged after stop")


def case_j_empty_devices(d, loops, tmp):
    """(j) --devices with no glob in it ("", ",": --devices "$UNSET" in a script) is refused, not "every disk"."""
    # --help says what the state directory holds (originals too, not only overrides) and that it is one blkmqd's
    r = subprocess.run([bt.exe_arg(), "--help"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0 and "overrides and original values persist, one blkmqd" in r.stdout,
          f"(j) --help: --state-dir holds overrides and originals, one blkmqd at a time ({r.stdout!r})")
    for arg in ("", ",", ",,"):
        # --dry-run: should it start after all (the old behaviour), it writes nothing; stopped below
        p = subprocess.Popen([bt.exe_arg(), "--no-mount", "--dry-run", "--state-dir", os.path.join(tmp, "state-j"), "--devices", arg],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate()
        check(p.returncode == 1 and "names no disk" in err and " started: " not in err,
              f"(j) --devices {arg!r}: exit 1 with why, never started on every disk ({p.returncode}: {err.strip()[-200:]!r})")


def case_d_e_f(d, loops, tmp):
    """(e) read semantics; (f) open file of a removed device; (d) removal within 1 s."""
    keep = loops.attach("e")
    gone = loops.attach("f")
    d.start("--devices", f"{keep},{gone}")
    try:
        wait_for(lambda: all(os.path.exists(d.path("devices", n, "explain")) for n in (keep, gone)), 5.0)
        # (e) byte-wise reads equal cat
        explain = d.path("devices", keep, "explain")
        cat = sh("cat", explain)
        dd = subprocess.run(["dd", f"if={explain}", "bs=1", "status=none"], capture_output=True).stdout.decode()
        check(len(cat) > 20 and dd == cat, f"(e) dd bs=1 of explain is byte-identical to cat ({len(cat)} bytes)")
        check(sh("head", "-c", "3", explain) == cat[:3], "(e) head -c 3")
        check(sh("tail", "-c", "5", explain) == cat[-5:], "(e) tail -c 5")
        check(os.stat(explain).st_size == len(cat.encode()), f"(e) stat st_size {os.stat(explain).st_size} == {len(cat)}")
        fd = os.open(explain, os.O_RDONLY)
        try:
            data = cat.encode()
            ok = all(os.pread(fd, n, off) == data[off:off + n] for off, n in ((1, 7), (3, 1), (5, 11), (len(data) - 1, 9)))
            check(ok, "(e) pread at odd offsets matches")
            check(os.pread(fd, 10, len(data)) == b"" and os.pread(fd, 10, len(data) + 100) == b"", "(e) pread at/after EOF returns 0 bytes")
        finally:
            os.close(fd)
        # every file in the tree: readable, newline-terminated, st_size right
        n_files, bad = 0, []
        for root, dirs, files in os.walk(d.mnt):
            for f in files:
                p = os.path.join(root, f)
                try:
                    c = sh("cat", p)
                except RuntimeError as e:
                    bad.append(f"{p}: {e}")
                    continue
                n_files += 1
                if not c.endswith("\n"):
                    bad.append(f"{p}: no trailing newline: {c!r}")
                elif is_live(p):
                    # live statistics report st_size 0, like /proc files (their content
                    # changes between stat and read)
                    if os.stat(p).st_size != 0:
                        bad.append(f"{p}: live statistics file with st_size {os.stat(p).st_size}, expected 0")
                elif os.stat(p).st_size != len(c.encode()):
                    bad.append(f"{p}: st_size {os.stat(p).st_size} != {len(c.encode())}")
        check(not bad and n_files >= 2 * 25, f"(e) all {n_files} files readable with cat, newline-terminated, right st_size"
              + ("".join("\n      " + b for b in bad[:10])))
        # directories cannot be read; files cannot be opened for writing
        dfd = os.open(d.path("devices", keep), os.O_RDONLY)
        try:
            os.read(dfd, 10)
            check(False, "(e) read() on a directory fails")
        except OSError as e:
            check(e.errno == errno.EISDIR, f"(e) read() on a directory fails with EISDIR ({errno.errorcode.get(e.errno)})")
        finally:
            os.close(dfd)
        for flags, what in ((os.O_WRONLY, "O_WRONLY"), (os.O_RDWR, "O_RDWR")):
            try:
                os.close(os.open(d.path("devices", keep, "class"), flags))
                check(False, f"(e) open({what}) fails")
            except OSError as e:
                check(e.errno == errno.EACCES, f"(e) open({what}) fails with EACCES ({errno.errorcode.get(e.errno)})")
        # the tree's shape is blkmqd's: refused like sysfs, never ENOSYS ("Function not implemented")
        dev = d.path("devices", keep)
        for what, want, fn in (
                ("create", errno.EACCES, lambda: os.close(os.open(os.path.join(dev, "new"), os.O_WRONLY | os.O_CREAT, 0o644))),
                ("mkdir", errno.EPERM, lambda: os.mkdir(os.path.join(dev, "newdir"))),
                ("mknod", errno.EPERM, lambda: os.mknod(os.path.join(dev, "fifo"), 0o600 | stat.S_IFIFO)),
                ("symlink", errno.EPERM, lambda: os.symlink("class", os.path.join(dev, "link"))),
                ("link", errno.EPERM, lambda: os.link(os.path.join(dev, "class"), os.path.join(dev, "hard"))),
                ("unlink", errno.EPERM, lambda: os.unlink(os.path.join(dev, "class"))),
                ("rmdir", errno.EPERM, lambda: os.rmdir(os.path.join(dev, "facts"))),
                ("rename", errno.EPERM, lambda: os.rename(os.path.join(dev, "class"), os.path.join(dev, "class2")))):
            try:
                fn()
                check(False, f"(e) {what} in the tree fails")
            except OSError as e:
                check(e.errno == want, f"(e) {what} in the tree fails with {errno.errorcode[want]} ({errno.errorcode.get(e.errno)})")
        check(os.path.isfile(os.path.join(dev, "class")) and os.path.isdir(os.path.join(dev, "facts")),
              "(e) class and facts/ still there")
        try:
            os.close(os.open(d.path("devices", keep, "nosuchfile"), os.O_RDONLY))
            check(False, "(e) a missing file is ENOENT")
        except FileNotFoundError:
            check(True, "(e) a missing file is ENOENT")

        # (f) + (d): hold a file of `gone` open, detach it
        held = os.open(d.path("devices", gone, "class"), os.O_RDONLY)
        try:
            check(os.pread(held, 100, 0) == b"stacked\n", "(f) held file reads before detach")
            loops.detach(gone)
            t0 = time.monotonic()
            ok, _ = wait_for(lambda: not os.path.exists(d.path("devices", gone)), 5.0)
            latency = time.monotonic() - t0
            print(f"   (d) devices/{gone} disappeared {latency * 1000:.1f} ms after losetup -d returned")
            check(ok, f"(d) devices/{gone} disappears ({latency:.3f} s; the target is {APPEAR_DEADLINE} s, measured by bench/reaction.py, P1)")
            try:
                os.pread(held, 100, 0)
                check(False, "(f) read() on the held fd of a removed device fails")
            except OSError as e:
                check(e.errno == errno.EIO, f"(f) read() on the held fd fails with EIO ({errno.errorcode.get(e.errno)})")
        finally:
            os.close(held)
        check(d.alive(), "(f) the daemon survives")
        try:
            os.close(os.open(d.path("devices", gone, "class"), os.O_RDONLY))
            check(False, "(f) a new open of the removed device fails")
        except FileNotFoundError:
            check(True, "(f) a new open of the removed device is ENOENT")
        check(os.listdir(d.path("devices")) == [keep], f"(d) devices/ lists only {keep}")
        check(d.read("devices", keep, "class") == "stacked\n", "(f) the other device still reads")
    finally:
        rc = d.stop()
    check(rc == 0, f"(d-f) clean exit after SIGTERM (got {rc})")


# fuse-fs/node.h node_is_live(): the files whose content changes between reads
LIVE_NAMES = {"metrics", "blkmqd.prom", "stat", "completions", "block_softirqs", "remote_pct",
              "host_busy", "occupancy_pct", "runs", "dispatched", "dispatch_batches", "queued",
              "completed_local", "completed_remote", "irq_count", "active", "tags_busy",
              "sched_tags_busy", "dispatch_busy", "ctx_dispatched", "ctx_completed", "ctx_merged"}


def is_live(path):
    name = os.path.basename(path)
    return name in LIVE_NAMES or name.endswith("_rate")


def splice_read(path, fstat_first=False):
    """The file as splice()/sendfile() readers see it (busybox cat, uutils cat, cp): through
    the kernel's page cache up to i_size on kernels whose fuse splice_read is
    filemap_splice_read() (6.12, 6.18; not 6.1)."""
    fd = os.open(path, os.O_RDONLY)
    r, w = os.pipe()
    out = b""
    try:
        if fstat_first:
            os.fstat(fd)
        while True:
            k = os.splice(fd, w, 65536)
            if k <= 0:
                break
            out += os.read(r, k)
    finally:
        os.close(fd)
        os.close(r)
        os.close(w)
    return out


def case_h_splice_readers(d, loops, tmp):
    """(h) splice()/sendfile() read what read() reads: every file of the tree (live statistics
    too, whose st_size is 0), a file that got shorter and then longer between opens, and a
    live file fstat()ed before the splice."""
    name = loops.attach("h")
    d.start("--devices", name)
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name, "explain")), 5.0)
        n, bad = 0, []
        for root, dirs, files in os.walk(d.mnt):
            for f in sorted(files):
                p = os.path.join(root, f)
                try:
                    want = bt.read_all(p)
                except OSError:
                    continue
                got = splice_read(p)
                n += 1
                if is_live(p):
                    # values move between two reads: same shape (non-empty, same line count)
                    if not got or got.count(b"\n") != want.count(b"\n"):
                        bad.append(f"{p}: splice read {got[:60]!r}, read() {want[:60]!r}")
                elif got != want:
                    bad.append(f"{p}: splice read {got[:60]!r}, read() {want[:60]!r}")
        check(not bad and n >= 50, f"(h) all {n} files read the same through splice()"
              + "".join("\n      " + b for b in bad[:8]))
        # a static file that shrinks then grows between opens, stat() by path in between
        mode = d.path("mode")
        check(splice_read(mode) == b"auto\n", "(h) mode reads 'auto' through splice()")
        check(d.write("off", "mode") == 0, "(h) echo off > mode")
        check(splice_read(mode) == b"off\n", f"(h) shorter content through splice(): {splice_read(mode)!r}")
        os.stat(mode)
        check(d.write("auto", "mode") == 0, "(h) echo auto > mode")
        got = splice_read(mode)
        check(got == b"auto\n", f"(h) longer content through splice() after a stat(): {got!r}")
        # a live file (st_size 0 by path) fstat()ed before the splice, as uutils cat does
        stat = d.path("devices", name, "stat")
        got = splice_read(stat, fstat_first=True)
        check(got.startswith(b"read_ios ") and got.endswith(b"\n"),
              f"(h) live devices/{name}/stat after fstat(): {got[:40]!r} ({len(got)} bytes)")
        check(os.stat(stat).st_size == 0, "(h) a live file not open reports st_size 0")
    finally:
        d.stop()


def case_g_kill9_restart(d, loops, tmp):
    """(g) kill -9 leaves a dead mount; a restart on the same mount point succeeds."""
    name = loops.attach("g", elevator="mq-deadline")         # so blkmqd changes it (stacked -> none)
    d.start("--devices", name)
    try:
        wait_for(lambda: os.path.exists(d.path("devices", name)), 5.0)
        wait_for(lambda: current_elevator(name) == "none", 5.0)
    finally:
        rc = d.stop(signal.SIGKILL)
    check(current_elevator(name) == "none", "(g) the killed daemon left its change (none) in place")
    check(rc == -signal.SIGKILL, "(g) killed with SIGKILL")
    check(mounted(d.mnt), "(g) the dead mount is still there")
    try:
        os.listdir(d.mnt)
        check(False, "(g) the dead mount is not usable")
    except OSError as e:
        check(e.errno == errno.ENOTCONN, f"(g) the dead mount fails with ENOTCONN ({errno.errorcode.get(e.errno)})")
    d.start("--devices", name)
    try:
        check(d.read("devices", name, "class") == "stacked\n", "(g) restarted daemon serves the tree on the same mount point")
        said = [l for l in d.tail(100000).splitlines() if "held a dead FUSE mount" in l and "lazily unmounted" in l]
        check(len(said) == 1, f"(g) one line says the dead mount was cleared: {said}")
        with open("/proc/self/mountinfo") as f:
            n = sum(1 for line in f if line.split()[4] == d.mnt)
        check(n == 1, f"(g) exactly one mount at {d.mnt} after the restart (found {n})")
        got = d.read("devices", name, "applied", "elevator")
        check(got == "ok: none (was mq-deadline)\n", f"(g) the original recorded before the crash is known again, got {got!r}")
    finally:
        rc = d.stop()
    check(rc == 0 and not mounted(d.mnt), "(g) clean stop after restart")
    check(current_elevator(name) == "mq-deadline", "(g) stop after the restart puts back the original recorded before the crash")


def case_i_originals_of_an_earlier_boot(d, loops, tmp):
    """(i) originals recorded at an earlier boot (another boot_id) are dropped: a reboot put the
    kernel's own values back, and a stop restores what the disk had at this boot."""
    name = loops.attach("i", elevator="mq-deadline")         # blkmqd changes it (stacked -> none)
    d.start("--devices", name)
    try:
        wait_for(lambda: current_elevator(name) == "none", 5.0)
    finally:
        rc = d.stop(signal.SIGKILL)
    check(rc == -signal.SIGKILL and current_elevator(name) == "none", "(i) killed with its change (none) in place")
    odir = os.path.join(d.state, "originals")
    files = [os.path.join(odir, f) for f in os.listdir(odir)] if os.path.isdir(odir) else []
    texts = {f: read_text(f) for f in files}
    mine = [f for f, t in texts.items() if "elevator=mq-deadline\n" in t]
    check(len(mine) == 1, f"(i) one originals file records elevator=mq-deadline: {texts}")
    boot = read_text("/proc/sys/kernel/random/boot_id").strip()
    text = texts.get(mine[0], "") if mine else ""
    check(f"boot={boot}\n" in text, f"(i) it records this boot's id ({boot}): {text!r}")
    # as after a reboot: another boot id in the file, and the disk has what this boot gave it
    if mine:
        with open(mine[0], "w") as f:
            f.write(text.replace(f"boot={boot}", "boot=00000000-0000-4000-8000-000000000000"))
    set_elevator(name, "kyber")
    d.start("--devices", name)
    try:
        ok, _ = wait_for(lambda: d.read("devices", name, "applied", "elevator") == "ok: none (was kyber)\n", 5.0)
        got = d.read("devices", name, "applied", "elevator")
        check(ok, f"(i) the original is this boot's kyber, not the earlier boot's mq-deadline: {got!r}")
        check("recorded at an earlier boot (boot id 00000000-0000-4000-8000-000000000000) dropped" in d.tail(400),
              "(i) the drop is logged with the earlier boot id")
    finally:
        rc = d.stop()
    check(rc == 0 and current_elevator(name) == "kyber", f"(i) stop restores this boot's kyber (kernel: {current_elevator(name)})")
    left = os.listdir(odir) if os.path.isdir(odir) else []
    check(not left, f"(i) no originals file left after the restore: {left}")


def case_k_virtual_default(d, loops, tmp):
    """(k) the shipped default: a loop device is listed and explained, not written; policy/enabled 1 opts it in"""
    name = loops.attach("k", elevator="mq-deadline")
    d.manage_virtual = False
    try:
        d.start("--devices", name)
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "explain")), 5.0)
        check(ok, f"(k) devices/{name} is listed")
        check(d.read("devices", name, "class") == "stacked\n", f"(k) class stacked ({d.read('devices', name, 'class')!r})")
        check(d.read("devices", name, "facts", "virtual") == "1\n", "(k) facts/virtual 1")
        explain = d.read("devices", name, "explain")
        check(f"{name}: driver=loop -> a virtual device: a file or another block device behind it (drivers/block/loop.c); "
              "listed, not written" in explain and "(rule virtual-device)" in explain, f"(k) explain says why: {explain!r}")
        check(d.read("devices", name, "plan", "elevator") == "keep\n", "(k) plan/elevator keep")
        check(d.read("devices", name, "applied", "elevator").startswith("unmanaged"),
              f"(k) applied/elevator {d.read('devices', name, 'applied', 'elevator')!r}")
        check(current_elevator(name) == "mq-deadline", f"(k) the kernel still has mq-deadline ({current_elevator(name)})")
        r = subprocess.run([os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "ctl", "blkmqctl"), "--mountpoint", d.mnt,
                            "explain", name], capture_output=True, text=True, timeout=10)
        check(r.returncode == 0 and "listed, not written" in r.stdout, f"(k) blkmqctl explain says it ({r.returncode}: {r.stdout[-300:]!r})")
        # the admin opts this one disk in
        check(d.write("1", "devices", name, "policy", "enabled") == 0, "(k) policy/enabled 1 taken")
        ok, _ = wait_for(lambda: current_elevator(name) == "none", 5.0)
        check(ok, f"(k) opted in: none written ({current_elevator(name)})")
        check("opted in by policy/enabled=1" in d.read("devices", name, "explain"), "(k) explain names the opt-in")
        check(d.write("auto", "devices", name, "policy", "enabled") == 0, "(k) policy/enabled auto taken")
        ok, _ = wait_for(lambda: current_elevator(name) == "mq-deadline", 5.0)
        check(ok, f"(k) back to the default: blkmqd's write put back ({current_elevator(name)})")
    finally:
        rc = d.stop()
        d.manage_virtual = True
    check(rc == 0 and current_elevator(name) == "mq-deadline", f"(k) stop ({rc}) leaves mq-deadline ({current_elevator(name)})")


if __name__ == "__main__":
    sys.exit(bt.run_suite("blkmqd-it-", (case_a_hotplug_and_facts, case_b_apply_and_restore, case_c_dry_run,
                                         case_d_e_f, case_g_kill9_restart, case_h_splice_readers,
                                         case_i_originals_of_an_earlier_boot, case_j_empty_devices,
                                         case_k_virtual_default),
                          why="loop devices, FUSE mount, sysfs writes"))
