#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-stress.py BLKMQD [--cycles N] [--readers R] [--loops K]

Loop attach/detach cycles while R reader threads `cat` random files of the tree.

One loop device (the keeper) stays attached all along; the other K-1 are attached and detached
in turn, N cycles in all (attach, wait until devices/<loop> shows, detach: the next cycle does
not wait for the removal, so adds and removes overlap). The readers open/read/close random
files from a list taken while every loop was attached (global files, the keeper's, the
cycling loops') as fast as they can.

Asserts: the daemon never dies; its fd count (ls /proc/PID/fd) is the same before and after,
statistics files it keeps open aside (none of a removed loop may be among them);
every attached loop is listed (none lost; one listed only after 5 s is counted and printed);
no stale devices/ entries at the end (exactly the keeper); VmRSS after <= 2 x before (both
reported; "before" is taken after a warm-up of a few cycles); every failed open/read is ENOENT
or EIO, never another errno; every successful read ends with "\\n" and holds no NUL byte.
Prints a figures line (cycles, readers, reads, errors by errno, fd and RSS before/after,
duration) for docs/RELIABILITY.md.

CI (meson suite reliability): 200 cycles, 16 readers. By hand: --cycles 1000 --readers 64.
"""

import collections
import errno
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rel  # noqa: E402
from rel import check, wait_for  # noqa: E402

ALLOWED = {errno.ENOENT, errno.EIO}
# An attached loop not listed after this long is lost (its add uevent was not acted upon): the
# readers load the machine, so a listing after 5 s is counted and printed, not failed.
LOST_AFTER = 30.0


def opt(argv, name, default):
    return int(argv[argv.index(name) + 1]) if name in argv else default


class Readers:
    def __init__(self, n, paths):
        self.paths = paths
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.reads = 0
        self.errors = collections.Counter()     # errno name -> count
        self.bad = []                           # unexpected results (first few kept)
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(n)]

    def run(self, seed):
        rnd = random.Random(seed)
        reads, errs, bad = 0, collections.Counter(), []
        while not self.stop.is_set():
            p = rnd.choice(self.paths)
            try:
                data = rel.read_all(p)
            except OSError as e:
                errs[errno.errorcode.get(e.errno, str(e.errno))] += 1
                if e.errno not in ALLOWED:
                    bad.append(f"{p}: {e}")
                continue
            except Exception as e:      # noqa: BLE001 - anything else is a finding
                bad.append(f"{p}: {type(e).__name__}: {e}")
                continue
            reads += 1
            if not data.endswith(b"\n") or b"\0" in data:
                bad.append(f"{p}: garbage {data[:80]!r}{'...' if len(data) > 80 else ''} ({len(data)} bytes)")
            if len(bad) > 50:
                break
        with self.lock:
            self.reads += reads
            self.errors.update(errs)
            self.bad.extend(bad[:20])

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)
        return not any(t.is_alive() for t in self.threads)


def body(exe, tmp, argv):
    cycles = opt(argv, "--cycles", 200)
    n_readers = opt(argv, "--readers", 16)
    n_loops = max(2, opt(argv, "--loops", 4))
    rel.preflight_uevents()

    loops = rel.PrivateLoops(tmp, n_loops)
    keeper = loops.names[0]
    cycling = list(range(1, n_loops))
    d = rel.Daemon(exe, tmp)
    readers = None
    t0 = time.monotonic()
    try:
        for i in range(n_loops):
            loops.attach(i)
        d.start("--devices", loops.globs())
        pid = d.pid
        ok, _ = wait_for(lambda: all(os.path.exists(d.path("devices", n, "hctx", "0")) for n in loops.names), 10.0)
        check(ok, f"all {n_loops} loops shown at start")
        paths = rel.tree_files(d.mnt)
        n_dev = sum(1 for p in paths if any(f"/devices/{loops.names[i]}/" in p for i in cycling))
        check(n_dev > 30, f"reader path list: {len(paths)} files, {n_dev} of them of the cycling loops")
        for i in cycling:
            loops.detach(i)
        ok, _ = wait_for(lambda: os.listdir(d.path("devices")) == [keeper], 10.0)
        check(ok, f"after detaching the cycling loops devices/ lists only {keeper}")

        late = []           # (cycle, seconds) of the adds shown after 5 s: latency, reported
        lost = []           # cycles whose attached loop was never shown: a lost event, a failure

        def cycle(c):
            i = cycling[c % len(cycling)]
            name = loops.names[i]
            # the previous cycle may still be removing this one: its detach returned, the
            # daemon may not have seen the remove yet; attach regardless (that is the race)
            loops.attach(i)
            ok, t = wait_for(lambda: os.path.exists(d.path("devices", name, "class")), LOST_AFTER, 0.002)
            if not ok:
                lost.append(c)
            elif t > 5.0:
                late.append((c, round(t, 1)))
            loops.detach(i)

        # warm-up: the first cycles grow the heap (arenas, node tables); measure after them
        warm = min(10, cycles)
        for c in range(warm):
            cycle(c)
        wait_for(lambda: os.listdir(d.path("devices")) == [keeper], 10.0)
        fd_before, rss_before, kept_at_start = rel.fd_count(pid), rel.vm_rss_kb(pid), len(rel.kept_fds(pid))
        print(f"   before: {fd_before} fds, VmRSS {rss_before} kB", flush=True)

        readers = Readers(n_readers, paths)
        readers.start()
        t_cycles = time.monotonic()
        died_at = None
        hang = {}

        def on_hang():
            # record where the daemon sits in the kernel, then abort our FUSE connection so
            # the readers and this loop come back
            hang["stack"] = rel.kernel_stack(pid)
            hang["aborted"] = rel.abort_fuse(d.mnt, tmp)
        watch = rel.HangWatch(30.0, on_hang)
        for c in range(warm, cycles):
            cycle(c)
            watch.progress()
            if watch.hung or not d.alive():
                died_at = c
                break
            if (c + 1) % 100 == 0:
                print(f"   {c + 1} cycles, {readers.reads} reads so far, VmRSS {rel.vm_rss_kb(pid)} kB", flush=True)
        watch.stop()
        check(not watch.hung, "the daemon never hangs (no cycle took 30 s)" +
              (f"; hung in cycle {died_at}, kernel stack:\n{hang.get('stack')}FUSE connection aborted: {hang.get('aborted')}"
               if watch.hung else ""))
        if watch.hung:
            readers.join()
            return
        cycles_s = time.monotonic() - t_cycles
        joined = readers.join()
        check(joined, f"all {n_readers} readers finished")
        check(d.alive(), f"daemon alive after {cycles} cycles" +
              (f" (died in cycle {died_at}, status {d.proc.returncode})" if died_at is not None else ""))
        if not d.alive():
            print(d.tail())
            return
        # every hot-add is shown: an attach blkmqd never lists is a lost uevent, whatever the load
        check(not lost, f"every attached loop was listed under devices/ ({len(lost)} of {cycles} never within "
              f"{LOST_AFTER:.0f} s: cycles {lost[:10]})")
        print(f"   {len(late)} of {cycles} adds were listed only after 5 s (load, not loss): {late[:10]}")

        ok, t = wait_for(lambda: os.listdir(d.path("devices")) == [keeper], 10.0)
        check(ok, f"no stale entries: devices/ lists only {keeper} at the end (got {os.listdir(d.path('devices'))})")
        check(d.read("devices", keeper, "class") == "stacked\n", f"devices/{keeper}/class still reads stacked")
        # fds may settle a moment after the last event; poll briefly for equality
        # statistics files stay open between reads (hostfs_read_kept()): the keeper's and the
        # machine-wide ones may be open now; none of a removed loop may be
        kept_before = kept_at_start
        ok, _ = wait_for(lambda: rel.fd_count(pid) - len(rel.kept_fds(pid)) == fd_before - kept_before, 5.0, 0.05)
        fd_after, rss_after, kept = rel.fd_count(pid), rel.vm_rss_kb(pid), rel.kept_fds(pid)
        check(fd_after - len(kept) == fd_before - kept_before,
              f"daemon fd count before/after, kept statistics files aside: {fd_before - kept_before}/{fd_after - len(kept)}")
        stale = [t for t in kept if "/block/loop" in t and f"/block/{keeper}/" not in t]
        check(not stale, f"no statistics file of a removed loop is kept open ({len(kept)} kept: {stale[:3]})")
        check(rss_after <= 2 * rss_before, f"VmRSS before/after: {rss_before}/{rss_after} kB (fail above 2x)")
        errs = dict(readers.errors)
        check(not readers.bad, f"{readers.reads} successful reads all newline-terminated without NUL; "
              f"failed opens/reads only ENOENT/EIO ({errs})" + "".join("\n      " + b for b in readers.bad[:10]))
        check(readers.reads > cycles, f"readers really read ({readers.reads} reads)")
        print(f"FIGURES: cycles={cycles} readers={n_readers} loops={n_loops} reads={readers.reads} "
              f"errors={errs} fd_before={fd_before} fd_after={fd_after} rss_before_kb={rss_before} "
              f"rss_after_kb={rss_after} cycles_s={cycles_s:.1f} total_s={time.monotonic() - t0:.1f}", flush=True)
    finally:
        if readers:
            readers.join()
        rc = d.stop(signal.SIGTERM)
        loops.cleanup()
    check(rc == 0, f"clean exit after SIGTERM (got {rc})")


if __name__ == "__main__":
    sys.exit(rel.main_wrapper(body))
