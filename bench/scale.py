#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
bench/scale.py [--blkmqd PATH] [--tree DIR] [--rounds 2] [--disks 4096] [--hosts 64] [--hctx 64] [--cpus 64]
               [--floor FUSE_FLOOR] [--sample K [--seed S] [--no-full]] [--full-limit SEC] [--full-rounds N] [--quick]

P3 scale: blkmqd --root on a synthetic machine (bench/gen-scale.py: 4,096 disks x 64 hctx on
64 megaraid_sas hosts with 65 MSI-X vectors each, 64 CPUs, /proc/interrupts, scheduler lists,
debugfs hctx flags), generated on a private tmpfs.

  READY     time from fork+exec of blkmqd to READY=1 on a fake NOTIFY_SOCKET (an AF_UNIX datagram
            socket this script binds; blkmqd's sd_notify() sends there), i.e. parse config,
            open root, mount FUSE, coldplug every disk (facts, policy, apply into the tree)
  RSS       VmRSS and VmHWM of blkmqd right after READY and after the full-tree read
  read      `find DIR -type f -print0 | xargs -0 cat > /dev/null` over the blkmqd mount vs the
            same over the generated source tree (tmpfs), run back to back: wall time, files,
            bytes; ratio mnt/src. Run twice (cold then warm) in the order src, mnt, src, mnt.

  --compare OLD_BLKMQD: another build mounted on a copy of the tree and read in the same
            rounds (order alternating), so before/after come from one run; per-file ratios.
  At exit, each build's "FUSE: N request(s) answered since the mount" line (round trips).
  --floor FUSE_FLOOR: bench/fuse-floor (built as build/bench/fuse-floor), a do-nothing FUSE
            pass-through, mounted twice over the source tree (page cache, as blkmqd's static
            files; --direct-io, as its live files) and read in the same rounds: what a FUSE file
            costs on this machine with no daemon work at all, per file against the same files on
            tmpfs (floor/src).
  --sample K: every file of K disks drawn with random.Random(--seed) from devices/, on blkmqd's
            mount and (their sysfs device directory and debugfs block/<d>) on the source and the
            floors: a find | xargs cat walk, then by kind (static: an exact size, page cache;
            live: size 0, direct_io) in interleaved slices, blkmqd/floor per kind; before the
            whole-tree read (--no-full: none). --full-limit SEC stops a whole-tree read there,
            --full-rounds N gives it its own number of rounds.
  --spin:   diagnostic: one nice-19 busy loop per CPU during the reads, so no CPU goes idle. In a
            VM without guest halt-polling an idle vCPU's wake-up is a VM exit, and each FUSE round
            trip wakes two tasks; the figures with and without show how much of a FUSE read is
            that (docs/BENCHMARKS.md P3). Never part of a target figure.

--quick: 64 disks x 8 hctx on 4 hosts (CI smoke, no assertion). Needs root (tmpfs, FUSE).
"""

import os
import random
import select
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


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for ln in f:
            k, _, v = ln.partition(":")
            out[k] = v.strip()
    return out


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tck, int(fields[12]) / tck


def read_tree(d, limit=None):
    """find -type f | xargs cat > /dev/null over d (a directory or a list of them); returns
    (seconds, files, bytes, finished). With limit (seconds) the read is stopped there, bytes are
    not counted (0) and files is what find had handed on by then (ahead of cat by at most a pipe and an xargs batch:
    a few thousand names)."""
    dirs = [d] if isinstance(d, str) else list(d)
    t = time.monotonic()
    find = subprocess.Popen(["find", *dirs, "-type", "f", "-print0"], stdout=subprocess.PIPE)
    if limit is None:
        xargs = subprocess.Popen(["xargs", "-0", "cat"], stdin=find.stdout, stdout=subprocess.PIPE)
        find.stdout.close()
    else:
        # a relay that counts the names: a stopped read still knows how far it got
        xargs = subprocess.Popen(["xargs", "-0", "cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    nbytes = 0
    handed = 0
    finished = True
    try:
        if limit is None:
            while True:
                b = xargs.stdout.read(1 << 20)
                if not b:
                    break
                nbytes += len(b)
        else:
            # cat's output to /dev/null here: a relay that also drained it could block on
            # xargs's stdin while cat blocks on its full stdout
            while True:
                left = limit - (time.monotonic() - t)
                if left <= 0:
                    finished = False
                    break
                if not select.select([find.stdout], [], [], min(left, 1.0))[0]:
                    continue
                b = os.read(find.stdout.fileno(), 1 << 16)
                if not b:
                    xargs.stdin.close()
                    try:
                        xargs.wait(max(limit - (time.monotonic() - t), 0.01))
                    except subprocess.TimeoutExpired:
                        finished = False
                    break
                handed += b.count(b"\0")
                xargs.stdin.write(b)
                xargs.stdin.flush()
    finally:
        # interrupted or stopped: no find/xargs/cat may keep the tmpfs busy (xargs's cat first:
        # once xargs is gone its child is no longer found by its parent's pid)
        if xargs.poll() is None:
            subprocess.run(["pkill", "-KILL", "-P", str(xargs.pid)], stderr=subprocess.DEVNULL)
        for p in (find, xargs):
            if p.poll() is None:
                p.kill()
    xargs.wait()
    find.wait()
    el = time.monotonic() - t
    if limit is not None and not finished:
        return el, handed, nbytes, False
    nfiles = int(subprocess.run(["sh", "-c", 'find "$@" -type f | wc -l', "sh", *dirs], capture_output=True,
                                text=True).stdout)
    return el, nfiles, nbytes, True


def read_list(paths):
    """xargs -0 cat > /dev/null over a list of files; returns seconds."""
    t = time.monotonic()
    p = subprocess.Popen(["xargs", "-0", "cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    p.communicate(b"".join(x.encode() + b"\0" for x in paths))
    return time.monotonic() - t


def list_files(dirs):
    """(static, live) files below dirs: live = st_size 0 (blkmqd's direct_io statistics files
    say 0, like /proc; every page-cache file has its exact size)."""
    static, live = [], []
    for top in dirs:
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.join(d, f)
                try:
                    (live if os.lstat(p).st_size == 0 else static).append(p)
                except OSError:
                    pass
    return static, live


SLICES = 16


def sample_sources(root, disk):
    """A disk's own files in the source tree: its sysfs device directory and debugfs block/<disk>."""
    dirs = [os.path.realpath(os.path.join(root, "sys", "block", disk))]
    dbg = os.path.join(root, "sys", "kernel", "debug", "block", disk)
    if os.path.isdir(dbg):
        dirs.append(dbg)
    return dirs


def read_sample(a, root, mnt, trees, pick, rounds):
    """Every file of the sampled disks, on blkmqd's mount (MNT/devices/<d>) and on the source
    (and through the floors: the same source files), cold then warm: a find | xargs cat walk of
    those directories, then the files read again by kind (static: page cache; live: direct_io)
    from lists made after the walk, every list in SLICES slices taken in turn."""
    src_dirs = [x for d in pick for x in sample_sources(root, d)]
    dirs = {"src": src_dirs}
    for name, d in trees:
        if name.startswith("floor"):
            dirs[name] = [os.path.join(d, os.path.relpath(x, root)) for x in src_dirs]
        else:
            dirs[name] = [os.path.join(d, "devices", x) for x in pick]
    print()
    print(f"sample: every file of {len(pick)} disks drawn with random.Random({a.seed}).sample() from the "
          f"{a.sample_of} names in devices/ ({', '.join(pick[:6])}, ...)")
    for i, rnd in enumerate(("cold", "warm", "warm2", "warm3")[:max(1, min(4, rounds))]):
        per = {}
        for name in ["src"] + [n for n, _ in (trees if i % 2 == 0 else trees[::-1])]:
            el, nf, nb, _ = read_tree(dirs[name])
            per[name] = el / max(nf, 1) * 1e6
            print(f"  sample {rnd} walk {name}: {el:7.2f} s  {nf:7d} files  {nb / 2**20:7.1f} MiB  "
                  f"{per[name]:6.1f} us/file", flush=True)
        # by kind: the lists read in 16 slices, one slice of each list in turn, so a change of
        # the machine's load during the round falls on every list alike
        lists = {}
        for name in ["src"] + [n for n, _ in trees]:
            st, lv = list_files(dirs[name])
            if name.startswith("floor") or name == "src":
                lists[(name, "all")] = st + lv
            else:
                lists[(name, "static")], lists[(name, "live")] = st, lv
        spent = dict.fromkeys(lists, 0.0)
        for j in range(SLICES):
            for key, files in lists.items():
                spent[key] += read_list(files[j * len(files) // SLICES:(j + 1) * len(files) // SLICES])
        kinds = {}
        for (name, kind), files in lists.items():
            kinds[(name, kind)] = spent[(name, kind)] / max(len(files), 1) * 1e6
            print(f"  sample {rnd} {name} {kind}: {spent[(name, kind)]:7.2f} s  {len(files):7d} files  "
                  f"{kinds[(name, kind)]:6.1f} us/file", flush=True)
        for name, _ in trees:
            if name.startswith("floor"):
                continue
            line = f"  sample {rnd} {name}/src per file: walk {per[name] / per['src']:.2f}"
            if ("floor-cache", "all") in kinds:
                line += (f"; {name}/floor static {kinds[(name, 'static')] / kinds[('floor-cache', 'all')]:.2f} "
                         f"(page cache floor), live {kinds[(name, 'live')] / kinds[('floor-dio', 'all')]:.2f} "
                         f"(direct_io floor); walk/floor-cache {per[name] / per['floor-cache']:.2f}, "
                         f"walk/floor-dio {per[name] / per['floor-dio']:.2f}")
            print(line, flush=True)


def reset_schedulers(root, text):
    """Every queue/scheduler under root's sys/devices set to text; returns how many."""
    n = 0
    for d, _, files in os.walk(os.path.join(root, "sys", "devices")):
        if d.endswith("/queue") and "scheduler" in files:
            with open(os.path.join(d, "scheduler"), "w") as f:
                f.write(text + "\n")
            n += 1
    return n


def main():
    ap = bt.bench_parser(__doc__, "64 disks x 8 hctx on 4 hosts")
    ap.add_argument("--disks", type=int, default=4096)
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--hctx", type=int, default=64)
    ap.add_argument("--cpus", type=int, default=64)
    ap.add_argument("--tmpfs-size", default="16G")
    ap.add_argument("--no-read", action="store_true", help="skip the full-tree read")
    ap.add_argument("--rounds", type=int, default=2, help="read rounds: 1 = cold only, 2 = cold then warm, "
                    "up to 4")
    ap.add_argument("--tree", help="use this already generated tree (gen-scale.py output; on tmpfs) "
                    "instead of generating one; it is left in place, every queue/scheduler set to --scheduler "
                    "first (a run's writes and its stop's restore leave plain-file contents no kernel shows)")
    ap.add_argument("--scheduler", default="[mq-deadline] kyber bfq none",
                    help="with --tree: what every queue/scheduler holds before the run (default: as generated); "
                    "\"[none] mq-deadline kyber bfq\" leaves the multipath legs nothing to write")
    ap.add_argument("--compare", metavar="OLD_BLKMQD",
                    help="also mount this build (on a copy of the tree, on a tmpfs of its own) and read it in "
                    "the same rounds, alternating which of the two goes first")
    ap.add_argument("--floor", metavar="FUSE_FLOOR",
                    help="also read the source tree through bench/fuse-floor (page cache and --direct-io) in the same "
                    "rounds")
    ap.add_argument("--sample", type=int, metavar="K",
                    help="also read every file of K disks drawn at random (--seed) from devices/, on every tree "
                    "(blkmqd: MNT/devices/<d>; source and floors: the disk's sysfs device directory and debugfs "
                    "block/<d>), per file and per kind (static, live); before the whole-tree read")
    ap.add_argument("--seed", type=int, default=1, help="with --sample: the random.Random() seed")
    ap.add_argument("--no-full", action="store_true", help="with --sample: skip the whole-tree read")
    ap.add_argument("--full-rounds", type=int, metavar="N", help="rounds of the whole-tree read (default --rounds)")
    ap.add_argument("--full-limit", type=float, metavar="SEC",
                    help="stop each whole-tree read after SEC seconds (reported with the files it reached)")
    ap.add_argument("--spin", action="store_true",
                    help="diagnostic: keep every CPU busy with nice-19 loops during the reads (no idle vCPU)")
    a = ap.parse_args()
    if a.quick:
        a.disks, a.hosts, a.hctx, a.cpus = 64, 4, 8, 8
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    if not os.path.exists(a.blkmqd):
        print(f"SKIP: {a.blkmqd} not built")
        return 77

    tmp = tempfile.mkdtemp(prefix="blkmqd-scale.")
    src, mnt, state = (os.path.join(tmp, x) for x in ("src", "mnt", "state"))
    old_src, old_mnt, old_state = (os.path.join(tmp, x) for x in ("old-src", "old-mnt", "old-state"))
    for d in (src, mnt, state, old_src, old_mnt, old_state):
        os.makedirs(d)
    proc = old = None
    floors, spinners = [], []
    logs = {}
    rc = 0
    try:
        if not a.tree:
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={a.tmpfs_size},mode=0755", "blkmqd-scale", src],
                           check=True)
        print(f"date:    {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        print(f"kernel:  {os.uname().release} ({os.uname().version})")
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
        print(f"machine: {os.cpu_count()} CPUs, {model}, load {open('/proc/loadavg').read().split()[0:3]}")
        gen = [sys.executable, os.path.join(HERE, "gen-scale.py"), os.path.join(src, "root"), "--disks",
               str(a.disks), "--hosts", str(a.hosts), "--hctx", str(a.hctx), "--cpus", str(a.cpus)]
        if a.tree:
            root = os.path.abspath(a.tree)
            n = reset_schedulers(root, a.scheduler)
            print(f"tree:    {root} (given; generated earlier by gen-scale.py; {n} queue/scheduler set to "
                  f"\"{a.scheduler}\")")
        else:
            t = time.monotonic()
            out = subprocess.run(gen, check=True, capture_output=True, text=True).stdout.strip()
            print(f"tree:    {out} ({time.monotonic() - t:.1f} s to generate)")
            print(f"         tmpfs used: {shutil.disk_usage(src).used / 2**30:.2f} GiB")
            root = os.path.join(src, "root")

        nsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        npath = os.path.join(tmp, "notify")
        nsock.bind(npath)
        env = dict(os.environ, NOTIFY_SOCKET=npath)
        env.pop("JOURNAL_STREAM", None)
        cmd = [a.blkmqd, "--root", root, "-m", mnt, "-s", state, "-c", os.path.join(tmp, "none.conf")]
        print(f"blkmqd:  {' '.join(cmd).replace(tmp, 'TMP')}  (NOTIFY_SOCKET=TMP/notify)")
        log = open(os.path.join(tmp, "blkmqd.log"), "w")
        logs["mnt"] = os.path.join(tmp, "blkmqd.log")
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        nsock.settimeout(600)
        ready = None
        msgs = []
        while ready is None:
            m = nsock.recv(4096).decode(errors="replace")
            msgs.append((time.monotonic() - t0, m))
            if "READY=1" in m.split("\n"):
                ready = time.monotonic() - t0
        # nothing reads it from here on: closed, blkmqd's later sd_notify() (a STATUS= per disk
        # while a stop restores) fails at once instead of blocking on a full socket queue
        nsock.close()
        st = status(proc.pid)
        u, s = cpu_s(proc.pid)
        print()
        print(f"READY=1 after {ready:.3f} s (blkmqd CPU {u:.2f} s user + {s:.2f} s system)")
        n_status = sum("STATUS=" in m for _, m in msgs)
        print(f"notify:  {len(msgs)} datagram(s) until READY=1, {n_status} with STATUS=")
        for tt, m in msgs[:3] + ([("...", "")] if len(msgs) > 6 else []) + msgs[max(3, len(msgs) - 3):]:
            if tt == "...":
                print("  ...")
                continue
            print(f"  notify +{tt:.3f}s: {m.strip().replace(chr(10), ' | ')[:160]}")
        print(f"RSS after READY: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}")
        with open(os.path.join(tmp, "blkmqd.log")) as f:
            lines = f.read().splitlines()
        print(f"log: {len(lines)} lines; last: {lines[-1][:150] if lines else ''}")
        ndev = len(os.listdir(os.path.join(mnt, "devices")))
        print(f"devices/ entries: {ndev}")

        if a.compare:
            # the other build on a copy of the tree (both write the tree in mode auto)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={a.tmpfs_size},mode=0755", "blkmqd-scale-old", old_src],
                           check=True)
            subprocess.run(["cp", "-a", root, os.path.join(old_src, "root")], check=True)
            ocmd = [a.compare, "--root", os.path.join(old_src, "root"), "-m", old_mnt, "-s", old_state,
                    "-c", os.path.join(tmp, "none.conf")]
            print(f"compare: {' '.join(ocmd).replace(tmp, 'TMP')}")
            logs["old"] = os.path.join(tmp, "old.log")
            olog = open(logs["old"], "w")
            env.pop("NOTIFY_SOCKET", None)
            old = subprocess.Popen(ocmd, env=env, stdin=subprocess.DEVNULL, stdout=olog, stderr=olog)
            ok, _ = bt.wait_for(lambda: old.poll() is not None or
                                (os.path.isdir(os.path.join(old_mnt, "devices")) and
                                 len(os.listdir(os.path.join(old_mnt, "devices"))) == ndev), 600, 0.1)
            if not ok or old.poll() is not None:
                print(f"compare: {a.compare} did not show {ndev} disks")
                return 1

        trees = [("mnt", mnt)] + ([("old", old_mnt)] if a.compare else [])
        if a.floor and not a.no_read:
            for name, opts in (("floor-cache", []), ("floor-dio", ["--direct-io"])):
                fmnt = os.path.join(tmp, name)
                os.makedirs(fmnt)
                floors.append(subprocess.Popen([a.floor] + opts + [root, fmnt], stdin=subprocess.DEVNULL))
                ok, _ = bt.wait_for(lambda: os.path.ismount(fmnt) or floors[-1].poll() is not None, 30, 0.05)
                if not ok or floors[-1].poll() is not None:
                    print(f"floor: {a.floor} did not mount {fmnt}")
                    return 1
                print(f"floor:   {a.floor} {' '.join(opts)} SRC TMP/{name}")
                trees.append((name, fmnt))
        if a.spin and not a.no_read:
            spinners = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"])
                        for _ in range(os.cpu_count())]
            print(f"spin:    {len(spinners)} nice-19 busy loops during the reads (diagnostic)")

        if not a.no_read and a.sample:
            names = sorted(os.listdir(os.path.join(mnt, "devices")))
            a.sample_of = len(names)
            pick = sorted(random.Random(a.seed).sample(names, min(a.sample, len(names))))
            read_sample(a, root, mnt, trees, pick, a.rounds)
            st = status(proc.pid)
            print(f"RSS after the sample: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']}")
        if not a.no_read and not (a.sample and a.no_full):
            print()
            print("full-tree read (find -type f -print0 | xargs -0 cat > /dev/null):")
            res = {}
            files = {}
            for i, rnd in enumerate(("cold", "warm", "warm2", "warm3")[:max(1, min(4, a.full_rounds or a.rounds))]):
                order = trees if i % 2 == 0 else trees[::-1]
                for name, d in [("src", root)] + order:
                    el, nf, nb, done = read_tree(d, a.full_limit)
                    res[(rnd, name)] = el
                    files[name] = nf
                    print(f"  {rnd} {name}: {el:8.2f} s  {nf:8d} files  {nb / 2**20:8.1f} MiB  "
                          f"{el / max(nf, 1) * 1e6:6.1f} us/file" +
                          ("" if done else f"  (stopped at --full-limit {a.full_limit:g} s: files = names "
                           "handed to cat by then)"), flush=True)
                for name, _ in trees:
                    print(f"  {rnd} ratio {name}/src: {res[(rnd, name)] / res[(rnd, 'src')]:.2f} whole tree, "
                          f"{res[(rnd, name)] / files[name] / (res[(rnd, 'src')] / files['src']):.2f} per file")
            st = status(proc.pid)
            u, s = cpu_s(proc.pid)
            print(f"RSS after reads: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']} "
                  f"(blkmqd CPU so far {u:.2f} s user + {s:.2f} s system)")
            if old:
                st = status(old.pid)
                u, s = cpu_s(old.pid)
                print(f"compare: RSS after reads: VmRSS {st['VmRSS']}, VmHWM {st['VmHWM']} "
                      f"(CPU so far {u:.2f} s user + {s:.2f} s system)")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
        for p in floors:
            if p.poll() is None:
                p.terminate()   # fuse-floor unmounts on SIGTERM
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if old and old.poll() is None:
            bt.stop_process(old, 300)
        if proc and proc.poll() is None:
            t = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(300)
                print(f"stop (SIGTERM -> exit, restores every value): {time.monotonic() - t:.2f} s, rc {proc.returncode}")
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                rc = 1
        for name, path in logs.items():
            # "FUSE: N request(s) answered since the mount: ..." (builds that log it)
            with open(path, errors="replace") as f:
                line = next((ln for ln in f if "answered since the mount" in ln), None)
            if line:
                print(f"FUSE requests ({name}): {line.strip().split('FUSE: ', 1)[1]}")
        for m in [mnt, old_mnt] + [os.path.join(tmp, x) for x in ("floor-cache", "floor-dio")]:
            if os.path.ismount(m):
                subprocess.run(["umount", "-l", m])
        if os.path.ismount(old_src):
            subprocess.run(["umount", "-l", old_src])
        if os.path.ismount(src):
            subprocess.run(["umount", src])
        if os.path.ismount(src):
            subprocess.run(["umount", "-l", src])   # never rmtree a 1 M-file tree file by file
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
