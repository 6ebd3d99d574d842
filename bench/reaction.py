#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/reaction.py [--blkmqd PATH] [-n N] [--no-udevd] [--quick]

P1 reaction time: kernel uevent of a loop device attach -> elevator write done.

One loop device (made for the run with LOOP_CTL_ADD from loop240 up, pick_loop(); attached on
a temp file, detached after every round and at exit) and, in one run, up to three phases of N attaches each:

  blkmqd      blkmqd -v (raw kernel uevents, no udevd), config [Class:stacked]
              Elevator=mq-deadline, so every attach needs a write (loops come up "none" on
              6.x; the bench writes "none" back after each detach).
  udev-rule   systemd-udevd (started here, stopped at the end) with one rule in
              /run/udev/rules.d doing the same write: ATTR{queue/scheduler}="mq-deadline".
  blkmqd+udevd blkmqd while udevd runs (udev source: blkmqd sees the event only after udevd
              processed it) - the production path on a host with udevd.

Time base: CLOCK_MONOTONIC in this process, taken when poll() returns a readable fd.

  t0  the kernel uevent (ACTION=change for loopN, the one loop_configure() sends) read from a
      NETLINK_KOBJECT_UEVENT socket bound to group 1 (kernel) - the same multicast skb blkmqd's
      socket receives in the same netlink_broadcast() call.
  t1  blkmqd: its stderr line "<6>loopN: elevator none -> mq-deadline", which apply.c logs after
      the write() and the read-back returned, read through a pipe. udev-rule: udevd's own
      broadcast of that event (group 2, "libudev" header, same SEQNUM), which udevd sends after
      the rules ran (so after the ATTR write).
  Both ends are late by this process's wake-up latency; the difference is unbiased to first
  order. The error is the spread of that latency: measured here ("timestamp probe": a child
  writes its CLOCK_MONOTONIC into a pipe every 2 ms; arrival - stamp) and printed.
  A log timestamp in blkmqd itself would remove the pipe leg (see docs/BENCHMARKS.md).

Pacing (--gap, default 0.25 s): each attach waits until nothing about the loop device came for
that long. Back to back (--gap 0), an attach follows the previous round's detach within a few ms
and blkmqd merges it into that detach's burst (one trailing evaluation 100 ms after the last
uevent, lib/debounce.h): that measures the coalescing window, not the reaction to a hot-add.

Also printed for blkmqd: t0 -> "uevent change" debug line (event received by blkmqd),
t0 -> "Writing" debug line (write started).

Needs root and losetup; udevd phases need /lib/systemd/systemd-udevd and no udevd already
running (skipped otherwise). --quick: 5 attaches per phase (CI smoke, no time assertion).
"""

import argparse
import fcntl
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

NETLINK_KOBJECT_UEVENT = 15
UDEVD = "/lib/systemd/systemd-udevd"
RULES_DIR = "/run/udev/rules.d"
RULE_FILE = RULES_DIR + "/99-blkmqd-bench-reaction.rules"
ROUND_DEADLINE = 5.0
LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81
LOOP_FIRST = 240
NS_ENV = "BLKMQD_BENCH_PRIVATE_NS"


def now():
    return time.monotonic_ns()


def pct(vals, p):
    v = sorted(vals)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def summary(name, ns):
    ms = [x / 1e6 for x in ns]
    if not ms:
        return f"{name:34s} n=0"
    return (f"{name:34s} n={len(ms):4d}  p50 {pct(ms, 50):7.3f} ms  p90 {pct(ms, 90):7.3f}  "
            f"p99 {pct(ms, 99):7.3f}  max {max(ms):7.3f}  min {min(ms):6.3f}")


def normal_sched():
    """preexec_fn: children (blkmqd, udevd, ...) run SCHED_OTHER on every CPU whatever this
    process runs."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        os.sched_setaffinity(0, range(os.cpu_count()))
    except OSError:
        pass


def losetup_sched():
    """losetup (the uevent sender) on CPU 0, away from the timestamping process: with
    PREEMPT_NONE a SCHED_FIFO task woken on the CPU that is inside loop_configure() would wait for
    it to leave the kernel, and the uevent would be stamped late."""
    normal_sched()
    if os.cpu_count() > 1:
        os.sched_setaffinity(0, {0})


def sh(*args, check=True, pin=False):
    r = subprocess.run(args, capture_output=True, text=True,
                       preexec_fn=losetup_sched if pin else normal_sched)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: rc {r.returncode}: {r.stderr.strip()}")
    return r.stdout.strip()


def udevd_listening():
    """True when udevd accepts connections on its control socket (what blkmqd checks)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect("/run/udev/control")
        return True
    except OSError:
        return False
    finally:
        s.close()


class Uevents:
    """Kernel (group 1) and, optionally, udevd (group 2) uevents with arrival times."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK,
                                  NETLINK_KOBJECT_UEVENT)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind((0, 1 | 2))

    def fileno(self):
        return self.sock.fileno()

    def drain(self, t):
        out = []
        while True:
            try:
                d = self.sock.recv(1 << 16)
            except BlockingIOError:
                return out
            if d.startswith(b"libudev\0"):
                # struct monitor_netlink_header: prefix[8], magic, header_size, properties_off,
                # properties_len, ... (native endian)
                _, _, off, ln = struct.unpack_from("=IIII", d, 8)
                props = d[off:off + ln].split(b"\0")
                src = "udev"
            else:
                props = d.split(b"\0")[1:]
                src = "kernel"
            kv = {}
            for p in props:
                if b"=" in p:
                    k, v = p.split(b"=", 1)
                    kv[k.decode()] = v.decode(errors="replace")
            out.append((t, src, kv))


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="blkmqd-reaction.")
        self.backing = os.path.join(self.tmp, "backing.img")
        with open(self.backing, "wb") as f:
            f.truncate(1 << 20)
        self.loop = None        # "loopN"
        self.loop_nr = None
        self.attached = False
        self.daemon = None      # bt.PipedDaemon
        self.udevd = None
        self.held_ev = []
        self.rule_written = False
        self.rules_dir_created = False
        self.ue = Uevents()
        self.log = []            # every daemon line, for --keep-log

    # ---- loop device -------------------------------------------------------------------
    def pick_loop(self):
        """A loop device of our own: LOOP_CTL_ADD of an unused high number (losetup -f hands
        out the lowest free one, so other users of loop devices do not race us for it)."""
        fd = os.open("/dev/loop-control", os.O_RDWR)
        try:
            for n in range(LOOP_FIRST, LOOP_FIRST + 200):
                if os.path.exists(f"/sys/block/loop{n}"):
                    continue
                try:
                    fcntl.ioctl(fd, LOOP_CTL_ADD, n)
                except OSError:
                    continue
                self.loop, self.loop_nr = f"loop{n}", n
                break
            else:
                raise RuntimeError("no loop number free for LOOP_CTL_ADD")
        finally:
            os.close(fd)
        t = time.monotonic()
        while not os.path.exists(f"/dev/{self.loop}"):
            if time.monotonic() - t > 5:
                raise RuntimeError(f"/dev/{self.loop} did not appear")
            time.sleep(0.01)

    def remove_loop(self):
        if self.loop_nr is None:
            return
        fd = os.open("/dev/loop-control", os.O_RDWR)
        try:
            fcntl.ioctl(fd, LOOP_CTL_REMOVE, self.loop_nr)
        except OSError as e:
            print(f"warning: LOOP_CTL_REMOVE {self.loop}: {e}", file=sys.stderr)
        finally:
            os.close(fd)
        self.loop_nr = None

    def sched(self):
        with open(f"/sys/block/{self.loop}/queue/scheduler") as f:
            s = f.read()
        m = re.search(r"\[(\S+)\]", s)
        return m.group(1) if m else None

    def set_sched(self, v):
        with open(f"/sys/block/{self.loop}/queue/scheduler", "w") as f:
            f.write(v)

    def attach(self, wait=True):
        """losetup in the background when wait=False: the uevent is sent from inside its
        LOOP_CONFIGURE ioctl, while this process must already be waiting in poll()."""
        p = subprocess.Popen(["losetup", f"/dev/{self.loop}", self.backing], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=losetup_sched)
        self.attached = True
        if wait:
            self.reap(p)
        return p

    def reap(self, p):
        err = p.stderr.read().decode(errors="replace").strip()
        p.stderr.close()
        if p.wait() != 0:
            self.attached = False
            raise RuntimeError(f"losetup /dev/{self.loop}: rc {p.returncode}: {err}")

    def detach(self):
        if self.attached:
            sh("losetup", "-d", f"/dev/{self.loop}", check=False, pin=True)
            self.attached = False

    # ---- processes ---------------------------------------------------------------------
    def start_blkmqd(self):
        conf = os.path.join(self.tmp, "blkmqd.conf")
        with open(conf, "w") as f:
            # a loop device is a virtual device: opted in to be written
            f.write("[Manager]\nVirtualDevices=manage\n[Class:stacked]\nElevator=mq-deadline\n")
        state = os.path.join(self.tmp, "state")
        mnt = os.path.join(self.tmp, "mnt")
        os.makedirs(state, exist_ok=True)
        os.makedirs(mnt, exist_ok=True)
        self.daemon = bt.PipedDaemon([self.args.blkmqd, "-m", mnt, "--devices", self.loop,
                                      "-s", state, "-c", conf, "-v"], preexec_fn=normal_sched)
        self.wait_line(lambda ln: "started:" in ln, 10.0, "blkmqd start")

    def stop_blkmqd(self):
        if self.daemon:
            self.daemon.stop(10)
        self.daemon = None
        mnt = os.path.join(self.tmp, "mnt")
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", mnt])

    def start_udevd(self, with_rule):
        if with_rule:
            if not os.path.isdir(RULES_DIR):
                os.makedirs(RULES_DIR)
                self.rules_dir_created = True
            with open(RULE_FILE, "w") as f:
                f.write(f'ACTION=="change", SUBSYSTEM=="block", KERNEL=="{self.loop}", '
                        'ATTR{size}!="0", ATTR{queue/scheduler}="mq-deadline"\n')
            self.rule_written = True
        # The previous phase's udevd leaves its control socket file behind: waiting for the file
        # then returned at once and blkmqd, started before the new udevd listened, took the
        # kernel source (the 6.12 VM run of 2026-11-30 22:57: "blkmqd did not report the udev
        # source"). So: no stale file, and wait until the socket accepts a connection.
        try:
            os.unlink("/run/udev/control")
        except FileNotFoundError:
            pass
        self.udevd_log = open(os.path.join(self.tmp, "udevd.log"), "w")
        self.udevd = subprocess.Popen([UDEVD], stdin=subprocess.DEVNULL, stdout=self.udevd_log,
                                      stderr=subprocess.STDOUT, preexec_fn=normal_sched)
        t = time.monotonic()
        while not udevd_listening():
            if time.monotonic() - t > 10 or self.udevd.poll() is not None:
                raise RuntimeError("systemd-udevd did not start (see udevd.log)")
            time.sleep(0.01)

    def stop_udevd(self):
        if self.udevd and self.udevd.poll() is None:
            self.udevd.send_signal(signal.SIGTERM)
            try:
                self.udevd.wait(10)
            except subprocess.TimeoutExpired:
                self.udevd.kill()
                self.udevd.wait()
        self.udevd = None
        if self.rule_written:
            os.unlink(RULE_FILE)
            self.rule_written = False
        if self.rules_dir_created:
            os.rmdir(RULES_DIR)
            self.rules_dir_created = False

    # ---- event loop --------------------------------------------------------------------
    def pump(self, timeout):
        """poll once; returns lists of (t, src, kv) uevents and (t, line) daemon lines."""
        fds = [self.ue] + ([self.daemon] if self.daemon else [])
        r, _, _ = select.select(fds, [], [], timeout)
        t = now()
        ev, lines = [], []
        for f in r:
            if f is self.ue:
                ev += self.ue.drain(t)
            else:
                lines += [(t, ln) for ln in self.daemon.drain()]
        if os.environ.get("REACTION_DEBUG"):
            for tt, src, kv in ev:
                print("DBG", tt, len(r), src, kv.get("ACTION"), kv.get("DEVNAME"), kv.get("SEQNUM"))
            for tt, ln in lines:
                print("DBG", tt, len(r), ln[:90])
        self.log += lines
        return ev, lines

    def wait_line(self, pred, deadline, what):
        """Wait for a daemon line; the uevents that arrive meanwhile are kept in self.held_ev
        (dropping them made the detach wait below miss udevd's broadcasts and sit out its whole
        5 s deadline: the "stall" of the first 200-attach blkmqd+udevd run)."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            ev, lines = self.pump(0.2)
            self.held_ev += ev
            for t, ln in lines:
                if pred(ln):
                    return t
            if self.daemon and self.daemon.exited() is not None:
                raise RuntimeError(f"blkmqd exited ({self.daemon.exited()}) waiting for {what}")
        raise RuntimeError(f"timeout waiting for {what}")

    def is_ours(self, kv, action=None):
        # the kernel says DEVNAME=loopN, udevd DEVNAME=/dev/loopN
        return os.path.basename(kv.get("DEVNAME", "")) == self.loop and (action is None or kv.get("ACTION") == action)

    def quiet(self, gap):
        """Wait until nothing about our loop device (uevent or daemon line) came for gap seconds
        (at most ROUND_DEADLINE), dropping what comes: the next attach is then a hot-add of a
        disk that has been still, not part of the previous round's detach burst, which blkmqd
        merges into one trailing evaluation by design (100 ms of quiet, lib/debounce.h)."""
        end = time.monotonic() + ROUND_DEADLINE
        last = time.monotonic()
        while time.monotonic() < end:
            left = gap - (time.monotonic() - last)
            if left <= 0:
                return
            ev, lines = self.pump(left)
            if any(self.is_ours(kv) for _, _, kv in ev) or any(self.loop in ln for _, ln in lines):
                last = time.monotonic()

    def round(self, mode):
        """One attach. Returns dict of times (ns, relative to the kernel uevent) or None."""
        if self.sched() != "none":
            self.set_sched("none")
        if self.args.gap > 0:
            self.quiet(self.args.gap)
        self.pump(0)  # drop stale events
        proc = self.attach(wait=False)
        t_kernel = seq = None
        marks = {}
        done = f"{self.loop}: elevator none -> mq-deadline"
        end = time.monotonic() + ROUND_DEADLINE
        while time.monotonic() < end:
            ev, lines = self.pump(0.5)
            for t, src, kv in ev:
                if not self.is_ours(kv, "change"):
                    continue
                if src == "kernel" and t_kernel is None:
                    t_kernel, seq = t, kv.get("SEQNUM")
                elif src == "udev" and seq is not None and kv.get("SEQNUM") == seq and "udev" not in marks:
                    marks["udev"] = t
            for t, ln in lines:
                if f"{self.loop}: uevent change" in ln and "recv" not in marks:
                    marks["recv"] = t
                elif f'Writing "mq-deadline" to "block/{self.loop}/queue/scheduler"' in ln and "write" not in marks:
                    marks["write"] = t
                elif done in ln and "done" not in marks:
                    marks["done"] = t
            if t_kernel is not None:
                if mode == "udev-rule" and "udev" in marks:
                    break
                if mode != "udev-rule" and "done" in marks:
                    break
        self.reap(proc)
        self.detach()
        ok = self.sched() == "mq-deadline"
        # let the consumer see the detach before resetting the elevator
        end2 = time.monotonic() + ROUND_DEADLINE
        self.held_ev = []
        if mode == "udev-rule":
            pass
        else:
            try:
                self.wait_line(lambda ln: f"{self.loop}: Disk removed" in ln, ROUND_DEADLINE, "removal")
            except RuntimeError:
                pass
        if mode != "blkmqd":
            # wait for udevd to have processed the detach events (counting those that came
            # while waiting for the removal line)
            got = sum(1 for _, src, kv in self.held_ev if src == "udev" and self.is_ours(kv))
            while time.monotonic() < end2 and got < 2:
                ev, _ = self.pump(0.2)
                got += sum(1 for _, src, kv in ev if src == "udev" and self.is_ours(kv))
        if t_kernel is None:
            return None
        key = "udev" if mode == "udev-rule" else "done"
        if key not in marks or not ok:
            return None
        return {k: v - t_kernel for k, v in marks.items()}

    def floor(self, n):
        """The kernel's own cost: write() of the elevator name to queue/scheduler on the attached
        loop (none -> mq-deadline timed, mq-deadline -> none untimed), n times, nobody else
        listening. Any consumer of the uevent pays at least this."""
        self.attach()
        out = []
        try:
            path = f"/sys/block/{self.loop}/queue/scheduler"
            for _ in range(n):
                fd = os.open(path, os.O_WRONLY)
                t = now()
                os.write(fd, b"mq-deadline")
                out.append(now() - t)
                os.close(fd)
                self.set_sched("none")
        finally:
            self.detach()
        return out

    def run_phase(self, mode, n):
        res, fails, streak = [], 0, 0
        for i in range(n):
            r = self.round(mode)
            if r is None:
                fails += 1
                streak += 1
                if streak >= 5:
                    print(f"note: {mode}: 5 rounds in a row timed out after {i + 1} rounds, phase aborted",
                          flush=True)
                    break
            else:
                streak = 0
                res.append(r)
        return res, fails


def probe_latency(n=500):
    """Pipe wake-up latency of this process: child stamps CLOCK_MONOTONIC, we timestamp arrival."""
    code = ("import os,time,sys\n"
            f"for i in range({n}):\n"
            "    os.write(1, b'%d\\n' % time.monotonic_ns()); time.sleep(0.002)\n")
    p = bt.PipedDaemon([sys.executable, "-c", code], preexec_fn=normal_sched)
    out = []
    while len(out) < n:
        r, _, _ = select.select([p], [], [], 5)
        if not r:
            break
        t = now()
        for ln in p.drain():
            out.append(t - int(ln))
    p.stop()
    return out


def probe_sysfs_read(path, n=2000):
    """open+read+close of one sysfs attribute, n times, from Python: what one of blkmqd's ~30
    sysfs accesses per uevent costs on this kernel (an upper bound: the interpreter's own time
    is in it; the same loop without the system calls is printed beside it)."""
    out, base = [], []
    for _ in range(n):
        t = now()
        fd = os.open(path, os.O_RDONLY)
        os.read(fd, 4096)
        os.close(fd)
        out.append(now() - t)
        t = now()
        base.append(now() - t)
    return out, base


def print_phase(ph, res, fails):
    print(f"== {ph}: {len(res)} rounds ok, {fails} failed/timed out", flush=True)
    if ph == "udev-rule":
        print(summary("uevent -> udevd event processed", [r["udev"] for r in res]))
    else:
        print(summary("uevent -> blkmqd received", [r["recv"] for r in res if "recv" in r]))
        print(summary("uevent -> write started", [r["write"] for r in res if "write" in r]))
        print(summary("uevent -> write done (REACTION)", [r["done"] for r in res]))
        print(summary("  of which: received -> write started", [r["write"] - r["recv"] for r in res
                                                          if "write" in r and "recv" in r]))
        if ph == "blkmqd+udevd":
            # the definition of blkmqd's share, both ends on this process's clock: udevd's
            # broadcast (group 2) as this process read it -> blkmqd's "Writing" line; includes
            # blkmqd's own wake-up, which "received -> write started" leaves out
            print(summary("  udevd broadcast -> write started", [r["write"] - r["udev"] for r in res
                                                               if "write" in r and "udev" in r]))
        print(summary("  of which: write started -> done", [r["done"] - r["write"] for r in res if "write" in r]))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blkmqd", default=os.environ.get("BLKMQD", "build/blkmqd"))
    ap.add_argument("-n", type=int, default=200, help="attaches per phase (default 200)")
    ap.add_argument("--no-udevd", action="store_true", help="skip the udevd phases")
    ap.add_argument("--phases", help="comma-separated subset of blkmqd,udev-rule,blkmqd+udevd")
    ap.add_argument("--quick", action="store_true", help="5 attaches per phase, for CI")
    ap.add_argument("--no-rt", action="store_true", help="do not run the timestamping process SCHED_FIFO")
    ap.add_argument("--keep-log", metavar="FILE", help="write blkmqd's stderr there")
    ap.add_argument("--gap", type=float, default=0.25,
                    help="seconds of quiet on the loop device before each attach (default 0.25; "
                         "0: back to back, the attach then often falls into the window of the "
                         "previous detach's uevents and waits for its trailing evaluation)")
    args = ap.parse_args()
    if args.quick:
        args.n = 5
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    if not shutil.which("losetup") or not os.path.exists(args.blkmqd):
        print(f"SKIP: needs losetup and {args.blkmqd}")
        return 77

    # A private mount namespace with an empty tmpfs on /run/udev: blkmqd decides "udevd runs" from
    # /run/udev/control (a stale socket would make it wait for udevd events that never come), and
    # the udevd started here keeps its control socket, database and rule file there, invisible to
    # every other process on the host. Uevents are not namespaced: the measurement is unchanged.
    if os.environ.get(NS_ENV) != "1":
        os.environ[NS_ENV] = "1"
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable] + sys.argv)
    # udevd's symlinks (/dev/block/M:m, /dev/disk/by-*) go to private tmpfs too; a directory that
    # did not exist is created for the mount and removed at exit.
    created = []
    for d in ("/run/udev", "/dev/block", "/dev/disk"):
        if not os.path.isdir(d):
            os.makedirs(d)
            created.append(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=16M", "bench-udev", d], check=True)
    try:
        return run(args)
    finally:
        for d in ("/run/udev", "/dev/block", "/dev/disk"):
            subprocess.run(["umount", "-l", d])
        for d in created:
            try:
                os.rmdir(d)
            except OSError:
                pass


def run(args):
    if not args.no_rt:
        # SCHED_FIFO for this process only (not blkmqd, not udevd): the uevent and the log line are
        # timestamped when this process wakes, which must not wait behind the daemon it measures.
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            if os.cpu_count() > 1:
                os.sched_setaffinity(0, {os.cpu_count() - 1})
        except OSError as e:
            print(f"note: SCHED_FIFO refused ({e}), timestamps may be late", file=sys.stderr)

    b = Bench(args)
    results = {}
    notes = []
    try:
        b.pick_loop()
        print(f"kernel:  {os.uname().release} ({os.uname().version})")
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
        print(f"machine: {os.cpu_count()} CPUs, {model}")
        print(f"device:  /dev/{b.loop} on a 1 MiB file in {b.tmp}; {args.n} attaches per phase")
        print(f"blkmqd:  {args.blkmqd} -m MNT --devices {b.loop} -s STATE -c CONF -v  "
              "(CONF: [Class:stacked] Elevator=mq-deadline)")
        print(f"pacing:  {args.gap:.2f} s of quiet on the device before each attach")

        phases = ["blkmqd"]
        udevd_ok = os.access(UDEVD, os.X_OK)
        if args.no_udevd:
            notes.append("udevd phases skipped (--no-udevd)")
        elif not udevd_ok:
            notes.append(f"udevd phases skipped: {UDEVD} missing")
        else:
            phases += ["udev-rule", "blkmqd+udevd"]
        if args.phases:
            phases = [p for p in phases if p in args.phases.split(",")]

        print(f"load:    {open('/proc/loadavg').read().strip()}")
        print()
        floor = b.floor(args.n)
        print("== kernel floor (this process writes the scheduler file, no daemon)")
        print(summary("write(\"mq-deadline\") syscall", floor), flush=True)
        for ph in phases:
            if ph == "blkmqd":
                b.start_blkmqd()
                res, fails = b.run_phase(ph, args.n)
                b.stop_blkmqd()
            elif ph == "udev-rule":
                b.start_udevd(with_rule=True)
                res, fails = b.run_phase(ph, args.n)
                b.stop_udevd()
            else:
                b.start_udevd(with_rule=False)
                b.start_blkmqd()
                if "udev source" not in "\n".join(ln for _, ln in b.log):
                    # it would measure the kernel source again, under another name
                    print("== blkmqd+udevd: blkmqd did not report the udev source, phase skipped", flush=True)
                    notes.append("blkmqd+udevd: blkmqd did not report the udev source, phase skipped")
                    b.stop_blkmqd()
                    b.stop_udevd()
                    continue
                res, fails = b.run_phase(ph, args.n)
                b.stop_blkmqd()
                b.stop_udevd()
            results[ph] = (res, fails)
            print_phase(ph, res, fails)

        probe = probe_latency()
        b.attach()
        sysfs_probe = probe_sysfs_read(f"/sys/block/{b.loop}/queue/scheduler")
        b.detach()
    finally:
        b.stop_blkmqd()
        b.stop_udevd()
        b.detach()
        b.remove_loop()
        if args.keep_log:
            with open(args.keep_log, "w") as f:
                f.writelines(f"{t} {ln}\n" for t, ln in b.log)
        shutil.rmtree(b.tmp, ignore_errors=True)

    print()
    print(summary("timestamp probe (pipe wake-up)", probe))
    print(summary("sysfs open+read+close (Python)", sysfs_probe[0]))
    print(summary("  the same loop, no system calls", sysfs_probe[1]))
    if "blkmqd" in results and "udev-rule" in results:
        a = pct([r["done"] for r in results["blkmqd"][0]], 50)
        u = pct([r["udev"] for r in results["udev-rule"][0]], 50)
        a99 = pct([r["done"] for r in results["blkmqd"][0]], 99)
        u99 = pct([r["udev"] for r in results["udev-rule"][0]], 99)
        print(f"ratio blkmqd / udev rule: p50 {a / u:.3f}  p99 {a99 / u99:.3f}")
    for n in notes:
        print("note:", n)
    bad = sum(f for _, f in results.values())
    return 1 if bad and args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
