#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/event-cost.py [--blkmqd PATH] [-n N] [--phases strace,callgrind] [--quick]

What one uevent costs blkmqd, in counts (issue 32 item 3, "Events at the floor"): system calls
by kind, the sysfs/procfs/debugfs files opened and read, and instructions. Counts do not depend
on the machine's load, so figures from a loaded machine are comparable with any other run.

One loop device of its own (tests/pylib PrivateLoops: LOOP_CTL_ADD, loop220 and up) on a 1 MiB temp file, blkmqd on it
alone (`-m MNT --devices loopN -s STATE -c CONF`, no NOTIFY_SOCKET, CONF `[Manager]
VirtualDevices=manage`, `[Class:stacked] Elevator=mq-deadline`, so every attach needs a write:
loops come up "none" on 6.x and the bench writes "none" back after each detach). N rounds of an
attach (losetup: the kernel's change uevent with a medium: gathered, evaluated, the elevator
written) and a detach (change, size 0: the disk is removed), each followed by --gap seconds of
quiet (0.3 s; under valgrind 2 s) so that no uevent falls into the previous one's coalescing
window (lib/debounce.h). Two phases, each with a daemon of its own:

  strace     `strace -f -yy -s 96 -o FILE -p PID` over the rounds. The main thread's trace is
             cut at each epoll_wait(): a segment is what one wake-up did. A segment that read a
             uevent (recvmsg on the NETLINK KOBJECT_UEVENT socket) is the event's handling from
             its arrival; it is an attach when it opened queue/scheduler, a detach when it
             logged "Disk removed". Printed per attach and per detach: system calls by kind,
             the sysfs/procfs/debugfs files opened (by path, the disk's name as <disk>) with
             their reads, and every file opened more than once in one event. The other
             segments (the write's return: a run's end, timers) and the other threads (the
             writer's worker doing the kernel write, the FUSE notifier) are printed per attach.
  callgrind  `valgrind --tool=callgrind --toggle-collect=on_device_event
             --dump-after=on_device_event`: only the uevent callback (manager/manager.c
             on_device_event(), which the uevent monitor calls for each event it does not
             merge; what follows the write's return is not in it) is counted, one dump per
             event. Dumps of the coldplug (before the start line) are left out. An attach is a
             dump that called manager_evaluate(), a detach one that called
             manager_remove_device(). Printed: Ir per attach and per detach (mean, min, max),
             and the functions with the highest inclusive Ir per attach
             (callgrind_annotate --inclusive=yes of each attach dump, averaged).

Needs root, losetup, strace (phase strace), valgrind (phase callgrind). --quick: 3 rounds
(CI smoke: no figure is asserted). --keep DIR keeps the traces and dumps there.
"""

import argparse
import collections
import glob
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

NETLINK_KOBJECT_UEVENT = 15
LOOP_FIRST = 220
NS_ENV = "BLKMQD_BENCH_PRIVATE_NS"
DEADLINE = 10.0


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="blkmqd-event-cost.")
        self.conf = os.path.join(self.tmp, "blkmqd.conf")
        with open(self.conf, "w") as f:
            f.write("[Manager]\nVirtualDevices=manage\n[Class:stacked]\nElevator=mq-deadline\n")
        # a loop device of our own, far above what losetup -f hands out (tests/pylib)
        self.loops = bt.PrivateLoops(self.tmp, 1, base_min=LOOP_FIRST)
        self.loop = self.loops.names[0]
        self.daemon = None
        self.uevents = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK,
                                     NETLINK_KOBJECT_UEVENT)
        self.uevents.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.uevents.bind((0, 1))
        self.seen = 0           # kernel uevents of our disk

    def count_uevents(self):
        while True:
            try:
                d = self.uevents.recv(1 << 16)
            except BlockingIOError:
                return
            if d.split(b"\0")[0].endswith(b"/" + self.loop.encode()):
                self.seen += 1

    def scheduler(self):
        with open(f"/sys/block/{self.loop}/queue/scheduler") as f:
            m = re.search(r"\[(\S+)\]", f.read())
        return m.group(1) if m else None

    def start(self, wrap=()):
        state = tempfile.mkdtemp(dir=self.tmp, prefix="state.")
        mnt = tempfile.mkdtemp(dir=self.tmp, prefix="mnt.")
        self.mnt = mnt
        self.daemon = bt.PipedDaemon([*wrap, self.args.blkmqd, "-m", mnt, "--devices", self.loop, "-s", state,
                                      "-c", self.conf])
        self.pid_main = self.daemon.pid
        self.wait(lambda ln: "started:" in ln, 120.0, "the start line")

    def stop(self):
        if self.daemon:
            self.daemon.stop(60)
        self.daemon = None
        if getattr(self, "mnt", None) and os.path.ismount(self.mnt):
            subprocess.run(["umount", "-l", self.mnt])

    def wait(self, pred, deadline, what):
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            select.select([self.daemon], [], [], 0.2)
            for ln in self.daemon.drain():
                if pred(ln):
                    return
            if self.daemon.exited() is not None:
                raise RuntimeError(f"blkmqd exited ({self.daemon.exited()}) waiting for {what}")
        raise RuntimeError(f"timeout waiting for {what}")

    def rounds(self, n, gap):
        """n attach + detach pairs; returns the number of each the daemon reported."""
        attaches = detaches = 0
        for _ in range(n):
            if self.scheduler() != "none":
                with open(f"/sys/block/{self.loop}/queue/scheduler", "w") as f:
                    f.write("none")
            self.loops.attach(0)
            self.wait(lambda ln: f"{self.loop}: elevator none -> mq-deadline" in ln, DEADLINE * (1 + gap), "the write")
            attaches += 1
            time.sleep(gap)
            self.loops.detach(0)
            self.wait(lambda ln: f"{self.loop}: Disk removed" in ln, DEADLINE * (1 + gap), "the removal")
            detaches += 1
            time.sleep(gap)
        self.count_uevents()
        return attaches, detaches


# ---- the strace phase ------------------------------------------------------------------------

SYSCALL = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$")
FD_PATH = re.compile(r"^(\d+)<([^>]*)>")


def kernel_file(path, loop):
    """The path as a pattern when it is sysfs/procfs/debugfs, else None."""
    if not path.startswith(("/sys/", "/proc/")):
        return None
    p = re.sub(r"/devices/virtual/block/" + loop + r"\b", "/block/<disk>", path)
    p = re.sub(r"\b" + loop + r"\b", "<disk>", p)
    p = re.sub(r"/proc/\d+/", "/proc/<pid>/", p)
    return p


class Segment:
    def __init__(self):
        self.calls = collections.Counter()
        self.opens = collections.Counter()
        self.reads = collections.Counter()
        self.absent = collections.Counter()    # opens that failed (ENOENT: a fact that is absent)
        self.text = []
        self.uevent = False


def parse_trace(path, main_pid, loop):
    """Main-thread segments (one per wake-up) and the other threads' system calls."""
    segs, cur = [], Segment()
    others = collections.Counter()
    pending = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = SYSCALL.match(line)
            if not m:
                continue
            pid, resumed, name, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            if resumed:
                name = resumed
                rest = pending.pop(pid, "") + rest
            elif rest.endswith("<unfinished ...>"):
                pending[pid] = rest[:-len("<unfinished ...>")]
                if pid == main_pid and name == "epoll_wait":
                    # the wait that ends a segment; the next one starts when it returns
                    segs.append(cur)
                    cur = Segment()
                continue
            if pid != main_pid:
                others[name] += 1
                continue
            if name == "epoll_wait" and not resumed:
                segs.append(cur)
                cur = Segment()
                continue
            if name == "epoll_wait":
                continue            # returned: the new segment has begun
            cur.calls[name] += 1
            cur.text.append(rest)
            if name in ("recvmsg", "recvfrom") and "KOBJECT_UEVENT" in rest and " = -1 " not in rest:
                cur.uevent = True
            if name == "openat":
                r = re.search(r"= (\d+)<([^>]*)>\s*$", rest)
                a = re.match(r"\d+<([^>]*)>, \"([^\"]*)\"", rest)
                if r:
                    k = kernel_file(r.group(2), loop)
                    if k:
                        cur.opens[k] += 1
                elif a and " = -1 " in rest:
                    k = kernel_file(a.group(1).rstrip("/") + "/" + a.group(2), loop)
                    if k:
                        cur.absent[k] += 1
            elif name in ("read", "pread64"):
                r = FD_PATH.match(rest)
                if r:
                    k = kernel_file(r.group(2), loop)
                    if k:
                        cur.reads[k] += 1
    segs.append(cur)
    return [s for s in segs if s.calls], others


def classify(seg, loop):
    text = "\n".join(seg.text)
    if seg.uevent and "Disk removed" in text:
        return "detach"
    if seg.uevent and any(k.endswith("/queue/scheduler") for k in seg.opens):
        return "attach"
    if seg.uevent:
        return "uevent (other)"
    return "other wake-up"


def per(counter, n):
    return {k: v / n for k, v in counter.items()}


def print_counts(title, counter, n, limit=None):
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(counter.values())
    print(f"  {title}: {total / n:.1f} per event")
    for k, v in items[:limit]:
        print(f"    {v / n:7.2f}  {k}")


def phase_strace(b, n, gap):
    b.start()
    trace = os.path.join(b.tmp, "strace.out")
    st = subprocess.Popen(["strace", "-f", "-yy", "-s", "96", "-o", trace, "-p", str(b.daemon.pid)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)             # strace attached to every thread
    b.count_uevents()
    seen0 = b.seen
    attaches, detaches = b.rounds(n, gap)
    st.send_signal(signal.SIGINT)
    st.wait(30)
    b.stop()
    segs, others = parse_trace(trace, b.pid_main, b.loop)
    kinds = collections.defaultdict(list)
    for s in segs:
        kinds[classify(s, b.loop)].append(s)
    print(f"== strace: {attaches} attaches, {detaches} detaches reported by blkmqd; "
          f"{b.seen - seen0} kernel uevents of {b.loop}")
    for kind in ("attach", "detach"):
        ss = kinds.get(kind, [])
        if not ss:
            print(f"-- {kind}: no segment found")
            continue
        calls, opens, reads = collections.Counter(), collections.Counter(), collections.Counter()
        dup, absent = collections.Counter(), collections.Counter()
        for s in ss:
            calls.update(s.calls)
            opens.update(s.opens)
            reads.update(s.reads)
            absent.update(s.absent)
            for k, v in s.opens.items():
                if v > 1:
                    dup[k] += v - 1
        print(f"-- {kind}: {len(ss)} events, from the uevent's arrival to the next epoll_wait (main thread)")
        print_counts("system calls", calls, len(ss))
        print_counts("sysfs/procfs/debugfs files opened", opens, len(ss))
        print_counts("  their read()s", reads, len(ss), limit=0)
        print_counts("sysfs/procfs/debugfs opens that failed (absent)", absent, len(ss))
        if dup:
            print_counts("  opened again in the same event (extra opens)", dup, len(ss))
        else:
            print("  no file opened twice in one event")
    rest = collections.Counter()
    rest_opens = collections.Counter()
    for kind, ss in kinds.items():
        if kind in ("attach", "detach"):
            continue
        for s in ss:
            rest.update(s.calls)
            rest_opens.update(s.opens)
    if attaches:
        print(f"-- the other main-thread wake-ups ({', '.join(f'{k} {len(v)}' for k, v in kinds.items() if k not in ('attach', 'detach'))}), per attach")
        print_counts("system calls", rest, attaches)
        print_counts("sysfs/procfs/debugfs files opened", rest_opens, attaches)
        print(f"-- the other threads (writer workers, FUSE notifier), per attach")
        print_counts("system calls", others, attaches)
    if b.args.keep:
        shutil.copy(trace, b.args.keep)


# ---- the callgrind phase ---------------------------------------------------------------------

# "  451,969 (100.0%)  /path/file.c:function [/path/object]"
ANNOT = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)\s+\[[^\]]*\]\s*$")


def phase_callgrind(b, n, gap):
    out = os.path.join(b.tmp, "cg")
    os.makedirs(out)
    b.start(["valgrind", "--tool=callgrind", "--toggle-collect=on_device_event", "--dump-after=on_device_event",
             f"--callgrind-out-file={out}/cg.out", "--log-file=" + os.path.join(b.tmp, "valgrind.log")])
    time.sleep(0.5)
    coldplug = set(glob.glob(f"{out}/cg.out.*"))
    attaches, detaches = b.rounds(n, gap)
    b.stop()
    dumps = sorted(set(glob.glob(f"{out}/cg.out.*")) - coldplug, key=lambda p: int(p.rsplit(".", 1)[1]))
    kinds = collections.defaultdict(list)
    for d in dumps:
        with open(d, errors="replace") as f:
            text = f.read()
        m = re.search(r"^summary:\s+(\d+)", text, re.M)
        ir = int(m.group(1)) if m else 0
        if re.search(r"^c?fn=\(\d+\) manager_evaluate$", text, re.M):
            kinds["attach"].append((d, ir))
        elif re.search(r"^c?fn=\(\d+\) manager_remove_device$", text, re.M):
            kinds["detach"].append((d, ir))
        else:
            kinds["other"].append((d, ir))
    print(f"== callgrind: {attaches} attaches, {detaches} detaches reported by blkmqd; "
          f"{len(dumps)} on_device_event() dumps: " + ", ".join(f"{k} {len(v)}" for k, v in kinds.items()))
    for kind in ("attach", "detach", "other"):
        v = [ir for _, ir in kinds.get(kind, [])]
        if v:
            print(f"  Ir per {kind:6s}  mean {sum(v) / len(v):12,.0f}  min {min(v):12,}  max {max(v):12,}  (n={len(v)})")
    att = kinds.get("attach", [])
    if att and shutil.which("callgrind_annotate"):
        incl = collections.Counter()
        for d, _ in att:
            r = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", d],
                               capture_output=True, text=True)
            for ln in r.stdout.splitlines():
                m = ANNOT.match(ln)
                if m:
                    incl[m.group(2).rsplit(":", 1)[-1]] += int(m.group(1).replace(",", ""))
        print(f"  top functions by inclusive Ir per attach (mean of {len(att)})")
        for fn, v in sorted(incl.items(), key=lambda kv: -kv[1])[:b.args.top]:
            print(f"    {v / len(att):12,.0f}  {fn}")
    if b.args.keep:
        for d in dumps:
            shutil.copy(d, b.args.keep)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blkmqd", default=os.environ.get("BLKMQD", "build/blkmqd"))
    ap.add_argument("-n", type=int, default=20, help="attach + detach rounds per phase (default 20)")
    ap.add_argument("--phases", default="strace,callgrind")
    ap.add_argument("--gap", type=float, default=0.3, help="seconds of quiet after each event (valgrind: 2 s at least)")
    ap.add_argument("--top", type=int, default=40, help="functions listed by inclusive Ir")
    ap.add_argument("--quick", action="store_true", help="3 rounds, for CI")
    ap.add_argument("--keep", metavar="DIR", help="copy the trace and the dumps there")
    args = ap.parse_args()
    if args.quick:
        args.n = 3
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    if not shutil.which("losetup") or not os.path.exists(args.blkmqd):
        print(f"SKIP: needs losetup and {args.blkmqd}")
        return 77
    # as bench/reaction.py: an empty /run/udev, so that a stale /run/udev/control cannot make
    # blkmqd wait for udevd events (uevents are not namespaced)
    if os.environ.get(NS_ENV) != "1":
        os.environ[NS_ENV] = "1"
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable] + sys.argv)
    created = not os.path.isdir("/run/udev")
    if created:
        os.makedirs("/run/udev")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=1M", "bench-udev", "/run/udev"], check=True)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    b = None
    try:
        b = Bench(args)
        print(f"kernel:  {os.uname().release} ({os.uname().version})")
        print(f"date:    {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
        print(f"load:    {open('/proc/loadavg').read().strip()}")
        print(f"blkmqd:  {args.blkmqd} -m MNT --devices {b.loop} -s STATE -c CONF "
              "(CONF: VirtualDevices=manage, [Class:stacked] Elevator=mq-deadline)")
        print(f"device:  /dev/{b.loop} on a 1 MiB file; {args.n} attach + detach rounds per phase")
        for ph in args.phases.split(","):
            if ph == "strace":
                if not shutil.which("strace"):
                    print("== strace: not installed, phase skipped")
                    continue
                phase_strace(b, args.n, args.gap)
            elif ph == "callgrind":
                if not shutil.which("valgrind"):
                    print("== callgrind: valgrind not installed, phase skipped")
                    continue
                phase_callgrind(b, args.n, max(args.gap, 2.0))
            sys.stdout.flush()
        print(f"load:    {open('/proc/loadavg').read().strip()} (at the end)")
    finally:
        if b:
            b.stop()
            b.loops.cleanup()
            shutil.rmtree(b.tmp, ignore_errors=True)
        subprocess.run(["umount", "-l", "/run/udev"])
        if created:
            os.rmdir("/run/udev")
    return 0


if __name__ == "__main__":
    sys.exit(main())
