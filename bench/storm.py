#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/storm.py [--blkmqd PATH] [-n 1000] [--pool 64] [--base-set 8] [--seed 1] [--wrapper CMD] [--quick]

P3 hot-plug storm (issue 32 item 1): the built blkmqd on the real host, raw kernel uevents (no
udevd), --devices naming only loop devices this bench makes, and -n adds and removes of them as
fast as the kernel takes them, mixed with attaches and detaches:

  add       LOOP_CTL_ADD of a free number of the pool on /dev/loop-control: "add" uevent
  remove    LOOP_CTL_REMOVE of a present, unattached one: "remove" uevent
  attach    LOOP_SET_FD of the number's own backing file (1 MiB, sparse; what losetup does):
            "change" uevent, the disk gets a medium and blkmqd lists and evaluates it
  detach    LOOP_CLR_FD: "change" uevent, size 0 again (blkmqd unlists it: not_listed)

Each step picks at random (random.Random(--seed)) among those the pool's state allows, add or
remove half of the time, until -n adds and removes are done. The pool is --pool numbers from
loop7000 up with no device of that number yet (never the machine's own loop devices), --devices
names exactly those. blkmqd's config is the one of bench/reaction.py: virtual devices managed,
[Class:stacked] Elevator=mq-deadline, so every attach is an elevator write racing the storm.

  before    --base-set numbers added and attached, blkmqd started and settled; VmRSS/VmHWM
  during    VmRSS/VmHWM every 100 steps of the storm
  storm end settled (the tree unchanged over 1 s, 0.5 s after the last event); then checked:
            every attached survivor in MNT/devices/<d>, an unattached survivor only in
            not_listed ("no medium"), no removed number in either; each survivor's class, plan/*
            and applied/* read (D1); VmRSS
  gone      every number not in the base set removed (the base set attached as before), settled:
            VmRSS against before (the margin is printed) and Rss by mapping (/proc/PID/smaps:
            [heap], anon, files), gone - before
  again     the survivors made again (same numbers, same backing files), settled: their
            decisions read again (D1b) through the same daemon
  fresh     blkmqd stopped (SIGTERM restores every elevator: checked), a fresh blkmqd with an
            empty state directory started on the same devices: its decisions (D2) must equal D1
            and D1b ("the decision after a history equals the decision from scratch")

The kernel's uevents for the pool are counted on a NETLINK_KOBJECT_UEVENT socket (group 1).
Every loop device made is detached and removed at the end, also on failure or SIGTERM.
Exit 1 when a check fails. --quick: 100 adds and removes, pool 16 (CI smoke). --wrapper CMD
(diagnostic, e.g. "heaptrack -o OUT"): the storm's daemon under CMD, for the heap in use over time
(heaptrack_print --print-massif); its signals and VmRSS go to blkmqd itself.
Needs root, /dev/loop-control, /dev/fuse.
"""

import errno
import fcntl
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "pylib"))
import blkmqd_test as bt  # noqa: E402

LOOP_SET_FD, LOOP_CLR_FD = 0x4C00, 0x4C01
LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81
NETLINK_KOBJECT_UEVENT = 15
POOL_FIRST = 7000
CONF = "[Manager]\nVirtualDevices=manage\n[Class:stacked]\nElevator=mq-deadline\n"


def vm(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


class Pool:
    """Loop numbers of this bench: which exist, which are attached; cleanup() undoes it all."""

    def __init__(self, tmp, n):
        base = POOL_FIRST
        while any(os.path.exists(f"/sys/block/loop{base + i}") for i in range(n)):
            base += n
        self.nrs = list(range(base, base + n))
        self.backing = {}
        for nr in self.nrs:
            self.backing[nr] = bt.make_backing(os.path.join(tmp, f"backing-{nr}"), 1 << 20)
        self.present, self.attached = set(), set()
        self.made = set()       # every number LOOP_CTL_ADD gave this bench (cleanup's list)
        self.ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)

    def names(self):
        return [f"loop{nr}" for nr in self.nrs]

    def add(self, nr):
        fcntl.ioctl(self.ctl, LOOP_CTL_ADD, nr)
        self.made.add(nr)
        self.present.add(nr)

    def remove(self, nr):
        for _ in range(200):
            try:
                fcntl.ioctl(self.ctl, LOOP_CTL_REMOVE, nr)
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
                time.sleep(0.005)   # an opener (blkmqd never opens it; the kernel briefly may)
        else:
            raise RuntimeError(f"LOOP_CTL_REMOVE loop{nr}: busy")
        self.present.discard(nr)
        self.made.discard(nr)

    def attach(self, nr):
        bfd = os.open(self.backing[nr], os.O_RDWR | os.O_CLOEXEC)
        try:
            for _ in range(200):
                try:
                    lfd = os.open(f"/dev/loop{nr}", os.O_RDWR | os.O_CLOEXEC)
                    break
                except FileNotFoundError:
                    time.sleep(0.001)  # devtmpfs node
            else:
                raise RuntimeError(f"/dev/loop{nr} never appeared")
            try:
                fcntl.ioctl(lfd, LOOP_SET_FD, bfd)
            finally:
                os.close(lfd)
        finally:
            os.close(bfd)
        self.attached.add(nr)

    def detach(self, nr):
        lfd = os.open(f"/dev/loop{nr}", os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(lfd, LOOP_CLR_FD)
        finally:
            os.close(lfd)
        self.attached.discard(nr)
        # LOOP_CLR_FD with another opener only sets autoclear; the detach is done at its close
        bt.wait_for(lambda: not bt.loop_attached(f"loop{nr}"), 5.0, 0.001)

    def cleanup(self):
        for nr in sorted(self.made | self.present):
            if bt.loop_attached(f"loop{nr}"):
                try:
                    self.detach(nr)
                except OSError:
                    bt.loop_detach(f"loop{nr}")
            try:
                self.remove(nr)
            except (OSError, RuntimeError) as e:
                if not (isinstance(e, OSError) and e.errno == errno.ENODEV):
                    print(f"warning: cleanup loop{nr}: {e}", file=sys.stderr)
        os.close(self.ctl)


class Uevents:
    """The kernel's uevents for the pool's block devices, counted by action."""

    def __init__(self, names):
        self.names = set(names)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK,
                                  NETLINK_KOBJECT_UEVENT)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        self.sock.bind((0, 1))
        self.count = {}
        self.last = time.monotonic()

    def drain(self):
        while True:
            try:
                d = self.sock.recv(1 << 16)
            except BlockingIOError:
                return
            except OSError as e:    # ENOBUFS: some were lost
                self.count["lost(ENOBUFS)"] = self.count.get("lost(ENOBUFS)", 0) + 1
                if e.errno != errno.ENOBUFS:
                    raise
                continue
            kv = dict(x.split("=", 1) for x in d.decode(errors="replace").split("\0")[1:] if "=" in x)
            if kv.get("SUBSYSTEM") == "block" and kv.get("DEVNAME", "").rsplit("/", 1)[-1] in self.names:
                a = kv.get("ACTION", "?")
                self.count[a] = self.count.get(a, 0) + 1
                self.last = time.monotonic()


def daemon_pid(d):
    """blkmqd's own pid: d's process, or under a wrapper (--wrapper) its blkmqd descendant."""
    todo = [d.pid]
    while todo:
        pid = todo.pop(0)
        try:
            if os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "blkmqd":
                return pid
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return d.pid


def decisions(mnt, name):
    """class, plan/*, applied/* of devices/<name>, as one dict (None when not listed)."""
    base = os.path.join(mnt, "devices", name)
    if not os.path.isdir(base):
        return None
    out = {}
    try:
        out["class"] = bt.read_text(os.path.join(base, "class")).strip()
        for sub in ("plan", "applied"):
            for f in sorted(os.listdir(os.path.join(base, sub))):
                out[f"{sub}/{f}"] = bt.read_text(os.path.join(base, sub, f)).strip()
    except OSError as e:
        out["error"] = str(e)
    return out


def tree_view(mnt, names):
    """(listed names of the pool, {name: not_listed reason}) as the tree shows them now."""
    listed = set(os.listdir(os.path.join(mnt, "devices"))) & set(names)
    unl = {}
    for ln in bt.read_text(os.path.join(mnt, "not_listed")).splitlines():
        n, _, why = ln.partition(": ")
        if n in names:
            unl[n] = why
    return listed, unl


def settle(mnt, pool, ev, deadline=60.0):
    """Until the tree's pool view and every listed disk's decisions are unchanged for 1 s, 0.5 s
    after the last uevent of the pool. Returns seconds waited."""
    t0 = time.monotonic()
    prev = None
    stable_since = None
    while time.monotonic() - t0 < deadline:
        ev.drain()
        listed, unl = tree_view(mnt, pool.names())
        cur = (sorted(listed), sorted(unl.items()), [(n, decisions(mnt, n)) for n in sorted(listed)])
        now = time.monotonic()
        if cur != prev:
            prev, stable_since = cur, now
        elif now - stable_since >= 1.0 and now - ev.last >= 0.5:
            return now - t0
        time.sleep(0.2)
    return None


def check_view(mnt, pool, what):
    """The tree against the pool: attached in devices/, unattached present only in not_listed,
    absent in neither. Returns a list of problems."""
    listed, unl = tree_view(mnt, pool.names())
    bad = []
    for nr in pool.nrs:
        n = f"loop{nr}"
        if nr in pool.attached:
            if n not in listed:
                bad.append(f"{what}: {n} attached, not in devices/ (not_listed: {unl.get(n)})")
        elif nr in pool.present:
            if n in listed:
                bad.append(f"{what}: {n} has no medium, still in devices/")
            elif not unl.get(n, "").startswith("no medium"):
                bad.append(f"{what}: {n} present without medium, not_listed says {unl.get(n)!r}")
        else:
            if n in listed:
                bad.append(f"{what}: {n} removed, still in devices/ (stale node)")
            if n in unl:
                bad.append(f"{what}: {n} removed, still in not_listed: {unl[n]!r}")
    return bad


def rss_by_mapping(pid):
    """Rss kB by mapping: [heap], [stack], the file's name, "anon" for the rest."""
    out = {}
    key = None
    with open(f"/proc/{pid}/smaps") as f:
        for ln in f:
            parts = ln.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", ln):
                key = parts[5] if len(parts) > 5 else "anon"
                key = os.path.basename(key) if key.startswith("/") else key
            elif parts and parts[0] == "Rss:":
                out[key] = out.get(key, 0) + int(parts[1])
    return out


def fmt_vm(v):
    return f"VmRSS {v['VmRSS']:,} kB, VmHWM {v['VmHWM']:,} kB"


def main():
    ap = bt.bench_parser(__doc__, "100 adds and removes, pool 16")
    ap.add_argument("-n", type=int, default=1000, help="adds and removes (LOOP_CTL_ADD + LOOP_CTL_REMOVE)")
    ap.add_argument("--pool", type=int, default=64, help="loop numbers the storm uses")
    ap.add_argument("--base-set", type=int, default=8, help="numbers attached before the storm and after it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wrapper", help="diagnostic: run the storm's daemon under this command (e.g. \"heaptrack -o "
                    "FILE\"); its VmRSS is then the wrapper's process")
    a = ap.parse_args()
    if a.quick:
        a.n, a.pool, a.base_set = 100, 16, 4
    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control") or not os.path.exists("/dev/fuse"):
        print("SKIP: needs root, /dev/loop-control, /dev/fuse")
        return 77
    if not os.path.exists(a.blkmqd):
        print(f"SKIP: {a.blkmqd} not built")
        return 77

    def on_term(sig, frame):
        raise SystemExit(f"signal {sig}")
    signal.signal(signal.SIGTERM, on_term)

    tmp = tempfile.mkdtemp(prefix="blkmqd-storm.")
    mnt = os.path.join(tmp, "mnt")
    os.makedirs(mnt)
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(CONF)
    pool = None
    daemons = []
    problems = []
    rng = random.Random(a.seed)
    try:
        pool = Pool(tmp, a.pool)
        names = pool.names()
        ev = Uevents(names)
        print(f"date:    {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        print(f"kernel:  {os.uname().release} ({os.uname().version})")
        print(f"machine: {os.cpu_count()} CPUs, load {' '.join(open('/proc/loadavg').read().split()[0:3])}")
        print(f"pool:    {names[0]}..{names[-1]} ({a.pool} numbers, none existed), base set {a.base_set}, "
              f"seed {a.seed}, {a.n} adds and removes")
        base = pool.nrs[:a.base_set]
        for nr in base:
            pool.add(nr)
            pool.attach(nr)

        def start(tag, wrapper=()):
            d = bt.Daemon(a.blkmqd, mnt, os.path.join(tmp, tag), wrapper=wrapper, config=conf, start_deadline=30.0,
                          stop_deadline=60.0, unmount_on_stop=True)
            os.makedirs(d.logdir, exist_ok=True)
            daemons.append(d)
            d.start("--devices", ",".join(names))
            return d

        d1 = start("d1", shlex.split(a.wrapper or ""))
        t_start = time.monotonic()
        pid1 = daemon_pid(d1)
        print(f"blkmqd:  {a.blkmqd} -m MNT -s STATE -c CONF -v --devices loop{pool.nrs[0]},...,loop{pool.nrs[-1]}  "
              f"(CONF: {CONF.strip().replace(chr(10), ' ')})")
        w = settle(mnt, pool, ev)
        problems += check_view(mnt, pool, "before")
        before = vm(pid1)
        maps_before = rss_by_mapping(pid1)
        print(f"before:  {len(base)} attached, settled in {w:.1f} s; {fmt_vm(before)} "
              f"(t+{time.monotonic() - t_start:.1f} s since the daemon's mount)")

        # the storm
        ops = {"add": 0, "remove": 0, "attach": 0, "detach": 0}
        samples = [(0, before)]
        steps = 0
        t0 = time.monotonic()
        while ops["add"] + ops["remove"] < a.n:
            absent = [nr for nr in pool.nrs if nr not in pool.present]
            bare = [nr for nr in pool.present if nr not in pool.attached]
            attached = sorted(pool.attached)
            choices = []
            if rng.random() < 0.5:
                choices += [("add", nr) for nr in absent] + [("remove", nr) for nr in bare]
            if not choices:
                choices += [("attach", nr) for nr in bare] + [("detach", nr) for nr in attached]
            if not choices:
                choices += [("add", nr) for nr in absent]
            op, nr = rng.choice(sorted(choices))
            getattr(pool, op)(nr)
            ops[op] += 1
            steps += 1
            if steps % 100 == 0:
                ev.drain()
                samples.append((steps, vm(pid1)))
        storm_s = time.monotonic() - t0
        t_storm_end = time.monotonic() - t_start
        ev.drain()
        print(f"storm:   {steps} steps in {storm_s:.2f} s ({steps / storm_s:.0f}/s, ending t+{t_storm_end:.1f} s): "
              + ", ".join(f"{k} {v}" for k, v in ops.items()))
        w = settle(mnt, pool, ev)
        if w is None:
            problems.append("storm: the tree did not settle within 60 s")
            w = float("nan")
        print(f"uevents: the kernel sent (pool's block devices, group 1): "
              + ", ".join(f"{k} {v}" for k, v in sorted(ev.count.items())))
        samples.append((steps, vm(pid1)))
        after_storm = samples[-1][1]
        print("during:  " + "; ".join(f"{s}: {v['VmRSS']:,}/{v['VmHWM']:,}" for s, v in samples)
              + "  (step: VmRSS/VmHWM kB)")
        survivors = sorted(pool.present)
        surv_att = sorted(pool.attached)
        problems += check_view(mnt, pool, "storm end")
        d1_dec = {f"loop{nr}": decisions(mnt, f"loop{nr}") for nr in surv_att}
        print(f"end:     settled in {w:.1f} s after the storm; {len(survivors)} survivors ({len(surv_att)} attached, "
              f"{len(survivors) - len(surv_att)} without medium), {a.pool - len(survivors)} numbers removed; "
              f"{fmt_vm(after_storm)}")
        summary = {}
        for n, dd in d1_dec.items():
            k = (dd or {}).get("class"), (dd or {}).get("plan/elevator"), (dd or {}).get("applied/elevator")
            summary[k] = summary.get(k, 0) + 1
        for k, c in sorted(summary.items(), key=str):
            print(f"         {c} x class {k[0]}, plan/elevator {k[1]}, applied/elevator {k[2]!r}")

        # gone: back to the base set
        for nr in sorted(pool.present):
            if nr in base:
                if nr not in pool.attached:
                    pool.attach(nr)
                continue
            if nr in pool.attached:
                pool.detach(nr)
            pool.remove(nr)
        for nr in base:
            if nr not in pool.present:
                pool.add(nr)
                pool.attach(nr)
        w = settle(mnt, pool, ev)
        problems += check_view(mnt, pool, "gone")
        gone = vm(pid1)
        maps_gone = rss_by_mapping(pid1)
        margin = (gone["VmRSS"] - before["VmRSS"]) / before["VmRSS"] * 100
        print(f"gone:    back to the {len(base)} attached of before, settled in {w:.1f} s; {fmt_vm(gone)}; "
              f"VmRSS {gone['VmRSS'] - before['VmRSS']:+,} kB against before ({margin:+.1f} %; t+{time.monotonic() - t_start:.1f} s)")

        grew = sorted(((maps_gone.get(k, 0) - maps_before.get(k, 0), k) for k in set(maps_gone) | set(maps_before)),
                      reverse=True)
        print("         Rss by mapping, gone - before: " +
              ", ".join(f"{k} {d:+,} kB" for d, k in grew if d) if any(d for d, _ in grew) else "")
        # again: the survivors made once more, read through the same daemon
        for nr in survivors:
            if nr not in pool.present:
                pool.add(nr)
        for nr in sorted(pool.present):
            want = nr in surv_att
            if want and nr not in pool.attached:
                pool.attach(nr)
            elif not want and nr in pool.attached:
                pool.detach(nr)
        settle(mnt, pool, ev)
        problems += check_view(mnt, pool, "again")
        d1b_dec = {f"loop{nr}": decisions(mnt, f"loop{nr}") for nr in surv_att}
        again = vm(pid1)
        print(f"again:   the {len(survivors)} survivors made again; {fmt_vm(again)}")

        # fresh: stop (restores), a fresh daemon from scratch on the same devices
        if pid1 != d1.pid:
            os.kill(pid1, signal.SIGTERM)   # a wrapper need not pass the signal on
            bt.wait_for(lambda: not os.path.exists(f"/proc/{pid1}"), 60.0, 0.05)
        rc = d1.stop()
        daemons.remove(d1)
        if rc != 0:
            problems.append(f"d1 exited with {rc}")
        for nr in surv_att:
            el = bt.current_elevator(f"loop{nr}")
            if el != "none":
                problems.append(f"stop: loop{nr} elevator {el} after SIGTERM (its original: none)")
        with open(d1.log, errors="replace") as f:
            log = f.read().splitlines()
        warn = [x for x in log if re.match(r"<[0-4]>", x)]
        print(f"d1 log:  {len(log)} lines, {len(warn)} at warning or above"
              + (f"; first: {warn[0][:160]}" if warn else ""))
        for x in warn[:10]:
            print(f"         {x[:200]}")
        d2 = start("d2")
        settle(mnt, pool, ev)
        problems += check_view(mnt, pool, "fresh")
        d2_dec = {f"loop{nr}": decisions(mnt, f"loop{nr}") for nr in surv_att}
        diff1 = {n for n in d2_dec if d2_dec[n] != d1_dec.get(n)}
        diff1b = {n for n in d2_dec if d2_dec[n] != d1b_dec.get(n)}
        for n in sorted(diff1 | diff1b)[:10]:
            problems.append(f"decision of {n}: after the storm {d1_dec.get(n)}, made again {d1b_dec.get(n)}, "
                            f"from scratch {d2_dec[n]}")
        print(f"fresh:   {len(d2_dec)} attached survivors compared (class, plan/*, applied/*): "
              f"{len(d2_dec) - len(diff1)} equal after the storm, {len(d2_dec) - len(diff1b)} equal made again")
        d2.stop()
        daemons.remove(d2)
    finally:
        for d in daemons:
            if d.alive():
                d.stop()
        bt.cleanup_mount(mnt)
        if pool:
            pool.cleanup()
            left = [n for n in pool.names() if os.path.exists(f"/sys/block/{n}")]
            if left:
                print(f"warning: left behind: {left}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print(f"FAIL: {p}")
    print("result: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
