#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-liveness-files.py BLKMQD

No reader waits for blkmqd's other disk writes (issue 14's kind, beyond the queue attributes):
module parameters under /sys/module, /etc/modprobe.d/zz-blkmqd.conf (a temp file, fsync, rename)
and the state directory's files (overrides/, originals/: temp file, fsync, rename). Each is made
to hang as a slow disk or kernel would, while blkmqd runs on a copy of a committed fixture tree
(--root) on a FUSE mount in a temp dir:

  - /sys/module: blkmqd's fault injection, BLKMQD_TEST_HOLD_WRITE
    ("sysfs:module/virtio_blk/parameters/num_request_queues=<s>"), as in test-liveness.py;
  - modprobe.d and the state directory: a real file system frozen with fsfreeze (ext4 on a loop
    device this test attaches; every write, create, rename and fsync on it blocks until it is
    thawed), the fixture's etc/modprobe.d and the daemon's --state-dir being links into it.

(f1) a runtime module parameter (virtio_blk.num_request_queues, 0644) whose /sys/module write
     is held: after `echo 1 > reload` asked for it, version, a disk's class and the parameter's
     own state are read at once ("pending", then "timeout" past the writer's deadline), the
     reload is answered; when the write returns: "pending-reset", the fixture file has 1;
(f2) /etc/modprobe.d frozen (synthetic-megaraid-64q on 5.10, ModuleParams=write asked by a
     reload): the tree answers meanwhile, host_tagset_enable reads "pending"/"timeout"; after the
     thaw "pending-reboot" and blkmqd.conf holds the option;
(f3) the state directory frozen: `policy/rq_affinity` 2 on vda is answered (by the writer's
     deadline) and the tree answers while neither the override nor the original can be saved;
     applied/rq_affinity says the write waits for its original to be saved (crash safety: not
     written before); after the thaw it is written, both files hold it, SIGTERM restores 1.

"At once" is a generous deadline (20 s) against a hold of 40 s and a freeze that lasts until
the check is done: on the old code (those writes on the event loop) each read waits for them.
Root, /dev/fuse, losetup, mkfs.ext4, fsfreeze (the test is skipped otherwise). No device of this machine is
read or written but the loop device this test attaches.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, wait_for  # noqa: E402

HOLD_S = 40             # the /sys/module write held (f1)
PROMPT_S = 20.0         # "at once": far below HOLD_S, far above any read on a loaded machine
DEADLINE_S = 5.0        # the writer's deadline (WRITER_TIMEOUT_USEC_DEFAULT)


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def get(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return f"<{e.strerror}>"


def cat(path, timeout=PROMPT_S):
    """cat path in a child process: (returncode or None when it did not return in time, output).
    A read waiting for a FUSE answer is killable, so a hung cat is killed at the timeout."""
    try:
        p = subprocess.run(["cat", path], capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return None, ""


def tree(d, rel):
    """A file of the tree through cat (never a read of this process: on a blkmqd that waits for
    the frozen file system, that would wait too, and nobody would thaw it); "" when no answer."""
    rc, out = cat(d.path(rel))
    return out if rc == 0 else ""


def tree_answers(d, files, what):
    """Every file of files (relative to the mount) is read at once."""
    for f in files:
        rc, out = cat(d.path(f))
        check(rc == 0 and out, f"{what}: cat {f} returned ({'rc ' + str(rc) if rc is not None else 'no answer'}"
                               f" within {PROMPT_S:.0f} s): {out.strip()[:80]!r}")


def wait_log(d, text, deadline=20.0):
    ok, _ = wait_for(lambda: text in d.tail(400), deadline, 0.02)
    return ok


class Frozen:
    """An ext4 file system on a loop device this test attaches, mounted at dir; freeze()/thaw()."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "frozen")
        self.backing = bt.make_backing(os.path.join(tmp, "frozen.img"), 32 << 20)
        self.dev = None
        self.frozen = False
        os.makedirs(self.dir)
        bt.sh("mkfs.ext4", "-q", "-F", self.backing)
        self.dev = bt.sh("losetup", "-f", "--show", self.backing).strip()
        bt.sh("mount", "-t", "ext4", self.dev, self.dir)

    def freeze(self):
        bt.sh("fsfreeze", "-f", self.dir)
        self.frozen = True

    def thaw(self):
        if self.frozen:
            bt.sh("fsfreeze", "-u", self.dir, check_rc=False)
            self.frozen = False

    def cleanup(self):
        self.thaw()
        if self.dev:
            subprocess.run(["umount", self.dir], capture_output=True)
            bt.loop_detach(os.path.basename(self.dev))


class Run:
    """One daemon on a fixture copy (its own mount, config, logs; state dir at state or its own)."""

    def __init__(self, tmp, tag, config, state=None):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(os.path.join(self.dir, "mnt"))
        self.conf = os.path.join(self.dir, "blkmqd.conf")
        put(self.conf, config)
        if state:
            os.symlink(state, os.path.join(self.dir, "state"))
        self.d = bt.Daemon(bt.exe_arg(), os.path.join(self.dir, "mnt"), self.dir, config=self.conf,
                           start_deadline=30.0, stop_deadline=30.0, unmount_on_stop=True)

    def reload_with(self, config):
        """The config replaced and `echo 1 > reload` written in a thread; returns (thread, result)."""
        put(self.conf, config)
        result = {}

        def write():
            result["rc"] = bt.write_file(self.d.path("reload"), b"1\n")
        th = threading.Thread(target=write, daemon=True)
        th.start()
        return th, result


def case_f1_module_param_held(tmp, frozen):
    """(f1) a /sys/module write held: the tree answers, the parameter says pending"""
    root = bt.copy_fixture("vm-6.1-virtio-blk-4q", os.path.join(tmp, "f1-root"))
    param = os.path.join(root, "sys/module/virtio_blk/parameters/num_request_queues")
    before = get(param).strip()
    base = "[Manager]\nModuleParams=write\n"
    r = Run(tmp, "f1", base)
    os.environ["BLKMQD_TEST_HOLD_WRITE"] = f"sysfs:module/virtio_blk/parameters/num_request_queues={HOLD_S}"
    try:
        d = r.d
        d.start("--root", root)
    finally:
        del os.environ["BLKMQD_TEST_HOLD_WRITE"]
    try:
        th, res = r.reload_with(base + "[Module:virtio_blk]\nnum_request_queues=1\n")
        t_reload = time.monotonic()
        check(wait_log(d, "Configuration reloaded"), "(f1) the reload was taken up")
        tree_answers(d, ["version", "devices/vda/class", "modules/virtio_blk/num_request_queues/state"],
                     "(f1) while the /sys/module write is held")
        state = lambda: tree(d, "modules/virtio_blk/num_request_queues/state").strip()  # noqa: E731
        check(state() in ("pending", "timeout"), f"(f1) state while held: {state()!r}")
        th.join(DEADLINE_S + PROMPT_S)
        check(not th.is_alive() and res.get("rc") == 0,
              f"(f1) the reload is answered while the write is held ({res}, after {time.monotonic() - t_reload:.1f} s)")
        ok, _ = wait_for(lambda: state() == "timeout", DEADLINE_S + PROMPT_S, 0.05)
        note = tree(d, "modules/virtio_blk/num_request_queues/note").strip()
        check(ok and "no answer after" in note, f"(f1) past the writer's deadline: {state()!r}, note {note!r}")
        check(get(param).strip() == before, f"(f1) the held write has not reached the file: {get(param).strip()!r}")
        ok, _ = wait_for(lambda: state() == "pending-reset", HOLD_S + PROMPT_S, 0.1)
        note = tree(d, "modules/virtio_blk/num_request_queues/note").strip()
        check(ok and note.startswith(f"the running module has num_request_queues=1, written by blkmqd over {before}; "
                                     "the devices take it at"), f"(f1) when it returned: {state()!r}, note {note!r}")
        check(get(param).strip() == "1", f"(f1) {param} holds 1 (was {before})")
        cur = tree(d, "modules/virtio_blk/num_request_queues/current").strip()
        check(cur == "1", f"(f1) current is the kernel's 1 once the write returned ({cur!r})")
    finally:
        rc = d.stop()
        check(rc == 0, f"(f1) SIGTERM: exit status {rc}")


def case_f2_modprobe_frozen(tmp, frozen):
    """(f2) /etc/modprobe.d frozen: the tree answers, the parameter says pending"""
    root = bt.copy_fixture("synthetic-megaraid-64q", os.path.join(tmp, "f2-root"))
    put(os.path.join(root, "proc/sys/kernel/osrelease"), "5.10.0-28-amd64\n")
    mp = os.path.join(frozen.dir, "modprobe.d")
    os.makedirs(mp)
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    os.symlink(mp, os.path.join(root, "etc/modprobe.d"))
    conf = os.path.join(mp, "zz-blkmqd.conf")
    r = Run(tmp, "f2", "[Manager]\nModuleParams=propose\n")
    d = r.d
    d.start("--root", root)
    state = lambda: tree(d, "modules/megaraid_sas/host_tagset_enable/state").strip()  # noqa: E731
    try:
        check(state() == "proposed", f"(f2) ModuleParams=propose: {state()!r}")
        frozen.freeze()
        th, res = r.reload_with("[Manager]\nModuleParams=write\n")
        check(wait_log(d, "Configuration reloaded"), "(f2) the reload was taken up")
        tree_answers(d, ["version", "devices/sda/class", "modules/megaraid_sas/host_tagset_enable/state"],
                     "(f2) while /etc/modprobe.d is frozen")
        check(state() in ("pending", "timeout"), f"(f2) state while frozen: {state()!r}")
        th.join(DEADLINE_S + PROMPT_S)
        check(not th.is_alive() and res.get("rc") == 0, f"(f2) the reload is answered while frozen ({res})")
        check(not os.path.exists(conf), "(f2) no blkmqd.conf yet")
        frozen.thaw()
        ok, _ = wait_for(lambda: state() == "pending-reboot", PROMPT_S, 0.05)
        check(ok, f"(f2) after the thaw: {state()!r}")
        check("options megaraid_sas host_tagset_enable=0\n" in get(conf), f"(f2) blkmqd.conf: {get(conf)!r}")
    finally:
        frozen.thaw()
        rc = d.stop()
        check(rc == 0, f"(f2) SIGTERM: exit status {rc}")


def case_f3_state_frozen(tmp, frozen):
    """(f3) the state directory frozen: a policy write is answered, the tree answers"""
    root = bt.copy_fixture("host-6.18-virtio-blk", os.path.join(tmp, "f3-root"))
    rq = os.path.join(root, "sys/block/vda/queue/rq_affinity")
    before = get(rq).strip()
    state = os.path.join(frozen.dir, "state")
    os.makedirs(state)
    r = Run(tmp, "f3", "", state=state)
    d = r.d
    d.start("--root", root, "--devices", "vda")
    applied = lambda: tree(d, "devices/vda/applied/rq_affinity")  # noqa: E731
    try:
        frozen.freeze()
        res = {}

        def write():
            res["rc"] = bt.write_file(d.path("devices/vda/policy/rq_affinity"), b"2\n")
        th = threading.Thread(target=write, daemon=True)
        th.start()
        check(wait_log(d, "policy/rq_affinity set to 2"), "(f3) the policy write was taken up")
        tree_answers(d, ["version", "devices/vda/class", "devices/vda/policy/rq_affinity", "devices/vda/applied/rq_affinity"],
                     "(f3) while the state directory is frozen")
        th.join(DEADLINE_S + PROMPT_S)
        check(not th.is_alive() and res.get("rc") == 0, f"(f3) the policy write is answered while frozen ({res})")
        ok, _ = wait_for(lambda: applied().startswith("timeout (still pending)"), DEADLINE_S + PROMPT_S, 0.05)
        check(ok and "waiting for the originals to be saved" in applied(), f"(f3) applied/rq_affinity: {applied()!r}")
        check(get(rq).strip() == before, f"(f3) not written before its original is saved: {get(rq).strip()!r}")
        frozen.thaw()
        ok, _ = wait_for(lambda: applied().startswith("ok: 2"), PROMPT_S, 0.05)
        check(ok and get(rq).strip() == "2", f"(f3) after the thaw: {applied()!r}, kernel {get(rq).strip()!r}")
        names = os.listdir(os.path.join(state, "overrides"))
        stored = get(os.path.join(state, "overrides", names[0])) if len(names) == 1 else ""
        check("rq_affinity=2\n" in stored, f"(f3) overrides/: {names} {stored!r}")
        names = os.listdir(os.path.join(state, "originals"))
        stored = get(os.path.join(state, "originals", names[0])) if len(names) == 1 else ""
        check(f"rq_affinity={before}\n" in stored, f"(f3) originals/: {names} {stored!r}")
    finally:
        frozen.thaw()
        rc = d.stop()
        check(rc == 0, f"(f3) SIGTERM: exit status {rc}")
    check(get(rq).strip() == before, f"(f3) stop restored rq_affinity {before}: {get(rq).strip()!r}")


def main():
    exe = bt.exe_arg()
    rc = bt.preflight(exe, why="FUSE mount, a loop device, fsfreeze", tools=("losetup", "mkfs.ext4", "fsfreeze"))
    if rc is not None:
        return rc
    tmp = tempfile.mkdtemp(prefix="blkmqd-livefiles-")
    frozen = None
    try:
        frozen = Frozen(tmp)
        for case in bt.selected((case_f1_module_param_held, case_f2_modprobe_frozen, case_f3_state_frozen)):
            print(f"== {case.__doc__.strip()}", flush=True)
            try:
                case(tmp, frozen)
            except Exception as e:      # a case that raised is a failure, the others still run
                check(False, f"{case.__name__}: {type(e).__name__}: {e}")
            finally:
                if frozen:
                    frozen.thaw()
    finally:
        if frozen:
            frozen.thaw()
        subprocess.run(["sh", "-c", f"for m in {tmp}/*/mnt; do umount -l $m 2>/dev/null; done"])
        if frozen:
            frozen.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
