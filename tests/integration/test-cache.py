#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-cache.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

Issue 16 item 1: files whose content changes only on events (class, explain, facts/*, plan/*,
applied/*, policy/*, hctx/<n>/ cpu_list, nr_tags ...) are served from the kernel's page cache
and invalidated whenever blkmqd changes what they show. Never a stale read or size after an
event: each case first reads and stat()s every file of the disk (the kernel then caches
contents and attributes), makes the event, waits (poll with a deadline) until it is visible
through one file, and then at once, for every file of the disk:
  - stat() by path (the attributes the kernel caches), read() like cat, sendfile() (splice:
    stops at the kernel's i_size) and an O_DIRECT read (a READ from blkmqd's fresh rendering,
    past the page cache) agree: same bytes, st_size exact;
  - the files the event changes show the new value.
Cases (a loop device of the test's own, --devices naming it):
  (o) an override write: echo mq-deadline > policy/elevator returns -> plan/, policy/,
      applied/, facts/elevator and the rest;
  (x) an external elevator change (sysfs, no uevent) seen by a read of applied/elevator (its
      verify) -> facts/elevator, applied/elevator ("changed externally") and the rest;
  (w) a write's outcome arriving from the writer thread: an override write held 3 s in the
      writer (BLKMQD_TEST_HOLD_WRITE), every file read while applied/elevator is pending, then
      the write returns -> applied/ ok, facts/elevator and the rest;
  (h) a file held open across an override write, its pages dropped (POSIX_FADV_DONTNEED) and
      read again through the held fd (the page cache then holds that open's older content):
      later opens still read the new content;
  (r) hot-remove: once devices/ no longer lists the disk, no file of it opens or stats.
  (m) /metrics keeps each disk's event-driven lines (disk_info, applied, fact gauges) between
      scrapes: after scrapes that fill that cache, an override write, an external elevator
      change (seen by a read of applied/elevator) and a hot-remove each show in the next
      scrape, which agrees with class, facts/elevator and every applied/<knob> read just before;
      a second disk with no event keeps its lines.
  (s) stat() only, then an override write, then every file read at once: the first open of
      an inode whose attributes the kernel holds (from a LOOKUP, no page yet) is answered
      without an invalidation; its content and size must still be the new ones.
  (n) round trips, counted by blkmqd (its "FUSE: N request(s) answered" line at stop): a
      `cat` (open, fstat, read to EOF, close) of every cached file right after its stat()
      costs no GETATTR and no READ (the OPEN stores the content; no invalidation drops the
      attributes the LOOKUP gave), and 50 more `cat`s of one file cost an OPEN and a RELEASE
      each, nothing else.
  (l) hctx/0/'s statistics files, listed (READDIRPLUS) and then each read through a
      descriptor of the directory right after a listing: no LOOKUP each (the listing gave their
      attributes), st_size 0 before the open, content after it; then (a second daemon) a
      hot-remove right after a listing and a few reads: once devices/ no longer lists the disk,
      none of them stats by path (their cached attributes, from the listing, are invalidated
      with the disk).
Root, losetup, /dev/fuse (the test is skipped otherwise).
"""

import mmap
import os
import re
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, current_elevator, set_elevator, wait_for, write_file  # noqa: E402

DEADLINE = 20.0
STATIC_HCTX = ("cpu_list", "nr_tags", "nr_reserved_tags", "shared_tags", "type", "irq", "irq_affinity", "irq_managed")
LIVE_NAMES = {"stat", "completions", "stats_source", "remote_pct", "host_busy", "occupancy_pct"}


def disk_files(d, name):
    """Every cacheable file of devices/<name>/ (hctx/<n>/ only its static attributes)."""
    root = d.path("devices", name)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for f in filenames:
            if f in LIVE_NAMES or rel == "iosched" or rel.startswith("iosched/"):
                continue        # live, or the running elevator's tunables (read from the kernel at open)
            if rel.startswith("hctx/") and f not in STATIC_HCTX:
                continue
            out.append(os.path.join(dirpath, f))
    return sorted(out)


def read_plain(path):
    return bt.read_all(path)


def read_sendfile(path):
    """Through sendfile() into a temp file: splice, which reads the page cache up to i_size."""
    with tempfile.TemporaryFile() as out:
        fd = os.open(path, os.O_RDONLY)
        try:
            off = 0
            while True:
                n = os.sendfile(out.fileno(), fd, off, 65536)
                if n <= 0:
                    break
                off += n
        finally:
            os.close(fd)
        out.seek(0)
        return out.read()


def read_direct(path):
    """O_DIRECT: READ requests answered from the open's rendering, never from the page cache."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 1 << 16)
    try:
        n = os.readv(fd, [buf])
        return bytes(buf[:n])
    finally:
        os.close(fd)
        buf.close()


def warm(files):
    """Read and stat every file: the kernel now holds pages and attributes of each."""
    for p in files:
        os.stat(p)
        read_plain(p)


def check_all(files, what, expect=None):
    """stat(), read(), sendfile() and O_DIRECT agree for every file; expect: {suffix: predicate}."""
    bad = []
    for p in files:
        size = os.stat(p).st_size
        plain = read_plain(p)
        spliced = read_sendfile(p)
        direct = read_direct(p)
        if not (size == len(plain) and plain == spliced == direct):
            bad.append(f"{p}: st_size {size}, read {plain!r}, sendfile {spliced!r}, O_DIRECT {direct!r}")
    check(not bad, f"{what}: stat, read, sendfile and O_DIRECT agree for all {len(files)} files" +
          "".join("\n      " + b for b in bad[:8]))
    for suffix, pred in (expect or {}).items():
        p = next((f for f in files if f.endswith(suffix)), None)
        v = read_plain(p).decode() if p else None
        check(p is not None and pred(v), f"{what}: {suffix} reads {v!r}")


def start(d, tmp, name):
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write("[Manager]\nVerifySec=0\n")
    d.start("--devices", name, "-c", conf)
    ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "elevator")), DEADLINE)
    check(ok, f"{name} is shown")


def case_override(d, loops, tmp):
    """(o) an override write: every file of the disk right after the write returns"""
    name = loops.attach("o")
    start(d, tmp, name)
    files = disk_files(d, name)
    check(len(files) > 40, f"(o) {len(files)} cacheable files under devices/{name}")
    warm(files)
    check(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline\n") == 0, "(o) override written")
    check(current_elevator(name) == "mq-deadline", "(o) the kernel runs mq-deadline when the write returned")
    check_all(files, "(o) after the override", {
        "/policy/elevator": lambda v: v == "mq-deadline\n",
        "/plan/elevator": lambda v: v == "mq-deadline\n",
        "/facts/elevator": lambda v: v == "mq-deadline\n",
        "/applied/elevator": lambda v: v.startswith("ok: mq-deadline"),
    })
    # and back: every size changes again
    warm(files)
    check(write_file(d.path("devices", name, "policy", "elevator"), b"auto\n") == 0, "(o) auto written")
    check_all(files, "(o) after auto", {
        "/policy/elevator": lambda v: v == "auto\n",
        "/facts/elevator": lambda v: v == "none\n",
    })


def case_external(d, loops, tmp):
    """(x) an external elevator change, seen by a read of applied/elevator"""
    name = loops.attach("x")
    start(d, tmp, name)
    check(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline\n") == 0, "(x) override written")
    files = disk_files(d, name)
    warm(files)
    set_elevator(name, "kyber")             # no uevent; the read of applied/ verifies
    applied = d.path("devices", name, "applied", "elevator")
    ok, _ = wait_for(lambda: "kyber" in bt.read_all(applied).decode(), DEADLINE, 0.02)
    check(ok, f"(x) applied/elevator notices kyber: {bt.read_all(applied)!r}")
    check_all(files, "(x) after the external change", {
        "/facts/elevator": lambda v: v == "kyber\n",
        "/applied/elevator": lambda v: "kyber" in v,
    })


def case_write_result(d, loops, tmp):
    """(w) a write's outcome from the writer thread: applied/ cached while pending, then ok"""
    name = loops.attach("w")
    # the writer worker sleeps 3 s before this disk's scheduler write (blkmqd's fault injection)
    os.environ["BLKMQD_TEST_HOLD_WRITE"] = f"sysfs:block/{name}/queue/scheduler=3"
    try:
        start(d, tmp, name)
    finally:
        del os.environ["BLKMQD_TEST_HOLD_WRITE"]
    files = disk_files(d, name)
    applied = d.path("devices", name, "applied", "elevator")
    result = []
    t = threading.Thread(target=lambda: result.append(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline\n")))
    t.start()
    try:
        ok, _ = wait_for(lambda: bt.read_all(applied).startswith(b"pending"), DEADLINE, 0.01)
        check(ok, f"(w) applied/elevator pending while the write is held: {bt.read_all(applied)!r}")
        warm(files)                         # the pending state in the kernel's caches
    finally:
        t.join()
    check(result == [0], f"(w) the override write returned {result}")
    check(current_elevator(name) == "mq-deadline", "(w) the kernel runs mq-deadline when the write returned")
    check_all(files, "(w) after the writer's outcome", {
        "/applied/elevator": lambda v: v.startswith("ok: mq-deadline"),
        "/facts/elevator": lambda v: v == "mq-deadline\n",
        "/plan/elevator": lambda v: v == "mq-deadline\n",
    })


def case_held(d, loops, tmp):
    """(h) a file held open across a change: its reads keep its content, new opens get the new one"""
    name = loops.attach("h")
    start(d, tmp, name)
    plan = d.path("devices", name, "plan", "elevator")
    old = bt.read_all(plan)
    fd1 = os.open(plan, os.O_RDONLY)
    try:
        check(os.pread(fd1, 4096, 0) == old, f"(h) held open: {old!r}")
        check(write_file(d.path("devices", name, "policy", "elevator"), b"kyber\n") == 0, "(h) override written")
        check(bt.read_all(plan) == b"kyber\n", f"(h) a new open reads kyber: {bt.read_all(plan)!r}")
        # the held fd's next read comes from blkmqd (its pages dropped) and refills the page cache
        # with that open's content; no later open may be served from it
        os.posix_fadvise(fd1, 0, 0, os.POSIX_FADV_DONTNEED)
        os.pread(fd1, 4096, 0)
        for i in range(3):
            v = bt.read_all(plan)
            check(v == b"kyber\n", f"(h) open {i + 1} after the held fd read again: {v!r}")
            s = os.stat(plan).st_size
            check(s == len(b"kyber\n"), f"(h) st_size {s}")
    finally:
        os.close(fd1)
    check_all(disk_files(d, name), "(h) after the held fd is closed")


def case_remove(d, loops, tmp):
    """(r) hot-remove: no file of the disk opens or stats once devices/ no longer lists it"""
    name = loops.attach("r")
    start(d, tmp, name)
    files = disk_files(d, name)
    warm(files)
    loops.detach(name)
    ok, _ = wait_for(lambda: name not in os.listdir(d.path("devices")), DEADLINE, 0.02)
    check(ok, f"(r) devices/ no longer lists {name}")
    left = []
    for p in files:
        for what, f in (("stat", os.stat), ("open", read_plain)):
            try:
                f(p)
                left.append(f"{what} {p}")
            except FileNotFoundError:
                pass
    check(not left, f"(r) none of the {len(files)} files stats or opens" + "".join("\n      " + x for x in left[:8]))


def metrics_disk(d, name):
    """(class, elevator, {knob: state}) of name in one /metrics scrape; None when it has no lines."""
    text = d.read("metrics")
    info = re.search(r'^blkmqd_disk_info\{device="' + re.escape(name) + r'",class="([^"]*)",elevator="([^"]*)"', text, re.M)
    applied = dict(re.findall(r'^blkmqd_applied\{device="' + re.escape(name) + r'",knob="([^"]*)",state="([^"]*)"\} 1$',
                              text, re.M))
    if f'device="{name}"' not in text:
        return None
    return (info.group(1) if info else None, info.group(2) if info else None, applied)


def metrics_agree(d, name, what, elevator):
    """The next scrape shows what the disk's files say now (applied/ read first: its verify)."""
    knobs = {}                              # applied/<knob> text; it starts with the state's name
    for k in sorted(os.listdir(d.path("devices", name, "applied"))):
        p = d.path("devices", name, "applied", k)
        if os.path.isfile(p):
            knobs[k] = bt.read_all(p).decode()
    cls = bt.read_all(d.path("devices", name, "class")).decode().strip()
    facts_elv = bt.read_all(d.path("devices", name, "facts", "elevator")).decode().strip()
    m = metrics_disk(d, name)
    check(m is not None and m[0] == cls and m[1] == facts_elv == elevator,
          f"{what}: metrics disk_info of {name} class={m and m[0]!r} elevator={m and m[1]!r}; "
          f"class file {cls!r}, facts/elevator {facts_elv!r}, want {elevator!r}")
    diff = {k: (v, m[2].get(k)) for k, v in knobs.items()
            if m and k in m[2] and not re.match(re.escape(m[2][k]) + r"(:| |\n|$)", v)}
    check(m is not None and m[2] and set(m[2]) <= set(knobs) and not diff,
          f"{what}: metrics blkmqd_applied of {name} agrees with applied/<knob> for {len(m[2]) if m else 0} knobs "
          f"(differ: {diff}; metrics knobs {sorted(m[2]) if m else None}, files {sorted(knobs)})")
    return m


def case_metrics(d, loops, tmp):
    """(m) /metrics' cached per-disk blocks: the next scrape after each event shows it"""
    name, other = loops.attach("m"), loops.attach("n")
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write("[Manager]\nVerifySec=0\n")
    d.start("--devices", f"{name},{other}", "-c", conf)
    ok, _ = wait_for(lambda: all(os.path.exists(d.path("devices", n, "policy", "elevator")) for n in (name, other)), DEADLINE)
    check(ok, f"(m) {name} and {other} are shown")
    first = current_elevator(name)
    before_other = metrics_disk(d, other)
    metrics_agree(d, name, "(m) at start", first)
    metrics_agree(d, name, "(m) again, from the cache", first)

    check(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline\n") == 0, "(m) override written")
    m = metrics_agree(d, name, "(m) after the override", "mq-deadline")
    check(m is not None and m[2].get("elevator") == "ok", f"(m) applied elevator state ok: {m and m[2].get('elevator')!r}")

    set_elevator(name, "kyber")             # no uevent; the read of applied/ verifies
    applied = d.path("devices", name, "applied", "elevator")
    ok, _ = wait_for(lambda: "kyber" in bt.read_all(applied).decode(), DEADLINE, 0.02)
    check(ok, f"(m) applied/elevator notices kyber: {bt.read_all(applied)!r}")
    metrics_agree(d, name, "(m) after the external change", "kyber")

    check(metrics_disk(d, other) == before_other, f"(m) {other}, without an event, keeps its lines: {metrics_disk(d, other)}")
    loops.detach(name)
    ok, _ = wait_for(lambda: name not in os.listdir(d.path("devices")), DEADLINE, 0.02)
    check(ok, f"(m) devices/ no longer lists {name}")
    check(metrics_disk(d, name) is None, f"(m) the next scrape has no line of {name}")
    check(metrics_disk(d, other) == before_other, f"(m) {other} still has its lines")


def case_stat_only(d, loops, tmp):
    """(s) stat() only before an event: first opens after it read the new content and size"""
    name = loops.attach("s")
    start(d, tmp, name)
    files = disk_files(d, name)
    for p in files:
        os.stat(p)                      # LOOKUP: attributes, no page
    check(write_file(d.path("devices", name, "policy", "elevator"), b"mq-deadline\n") == 0, "(s) override written")
    check_all(files, "(s) after the override", {
        "/policy/elevator": lambda v: v == "mq-deadline\n",
        "/plan/elevator": lambda v: v == "mq-deadline\n",
        "/facts/elevator": lambda v: v == "mq-deadline\n",
        "/applied/elevator": lambda v: v.startswith("ok: mq-deadline"),
    })


def cat(path):
    """open, fstat, read to EOF, close: what coreutils cat asks of the kernel"""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fstat(fd)
        out = b""
        while True:
            b = os.read(fd, 131072)
            if not b:
                return out
            out += b
    finally:
        os.close(fd)


def fuse_requests(log):
    """{kind: count} from blkmqd's "FUSE: N request(s) answered since the mount: ..." line"""
    with open(log, errors="replace") as f:
        lines = [ln for ln in f.read().splitlines() if "request(s) answered since the mount" in ln]
    if len(lines) != 1:
        return None
    tail = lines[0].partition("since the mount")[2].lstrip(": ")
    return {k: int(v) for k, v in (item.rsplit(" ", 1) for item in tail.split(", ") if item)}


def case_round_trips(d, loops, tmp):
    """(n) round trips: a first cat after stat() costs no GETATTR, a repeated cat OPEN + RELEASE"""
    name = loops.attach("n")
    start(d, tmp, name)
    files = disk_files(d, name)
    bad = []
    for p in files:
        size = os.stat(p).st_size
        v = cat(p)
        if len(v) != size:
            bad.append(f"{p}: st_size {size}, read {v!r}")
    check(not bad, f"(n) {len(files)} files: st_size and content agree" + "".join("\n      " + b for b in bad[:8]))
    cls = d.path("devices", name, "class")
    first = cat(cls)
    again = [cat(cls) for _ in range(50)]
    check(all(v == first for v in again), f"(n) 50 more cats of class read {first!r}")
    # RELEASE is sent without waiting for it: a LOOKUP (answered ENOENT) queued behind the last
    # one is answered only after it, so every RELEASE is counted before the stop
    check(not os.path.exists(d.path("devices", name, "no-such-file")), "(n) a LOOKUP behind the last RELEASE")
    log = d.log
    check(d.stop() == 0, "(n) blkmqd stopped")
    req = fuse_requests(log)
    check(req is not None, f"(n) the FUSE request line is logged at stop: {req}")
    req = req or {}
    check(req.get("getattr", 0) == 0, f"(n) no GETATTR of a file: {req}")
    # the only READs: the harness's read of version at start (mount_ready(); version is direct_io:
    # its data, then EOF); every cached file's content came with its OPEN
    check(req.get("read", 0) <= 2, f"(n) no READ of a cached file: {req}")
    # one OPEN and one RELEASE per cat (and the mount's probe and mount_ready() open version)
    check(req.get("open", 0) >= len(files) + 51 and req.get("open") == req.get("release"),
          f"(n) an OPEN and a RELEASE per cat: {req}")




def case_listed_stats(d, loops, tmp):
    """(l) hctx statistics files listed with attributes: no LOOKUP each, gone at once with the disk"""
    name = loops.attach("l")
    start(d, tmp, name)
    hctx0 = d.path("devices", name, "hctx", "0")
    live = [f for f in sorted(os.listdir(hctx0)) if f not in STATIC_HCTX]
    check(len(live) >= 20, f"(l) {len(live)} statistics files in hctx/0")
    bad = []
    dfd = os.open(hctx0, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for f in live:
            os.listdir(dfd)             # a listing right before: its entries are fresh (1 s)
            size = os.stat(f, dir_fd=dfd).st_size
            fd = os.open(f, os.O_RDONLY, dir_fd=dfd)
            try:
                v = os.read(fd, 65536)
            finally:
                os.close(fd)
            if size != 0 or not v.endswith(b"\n"):
                bad.append(f"{f}: st_size {size}, read {v!r}")
    finally:
        os.close(dfd)
    check(not bad, f"(l) statistics files: st_size 0 and content" + "".join("\n      " + b for b in bad[:8]))
    log = d.log
    check(d.stop() == 0, "(l) blkmqd stopped")
    req = fuse_requests(log) or {}
    # LOOKUPs: the path to hctx/0 (and its components again when an entry expired), not one per file
    check(req.get("lookup", 0) < len(live) // 2, f"(l) fewer LOOKUPs than half the {len(live)} files: {req}")

    # again, and the kernel holds their attributes from a listing when the disk goes
    start(d, tmp, name)
    os.listdir(hctx0)
    for f in live[:3]:
        bt.read_all(os.path.join(hctx0, f))
    loops.detach(name)
    ok, _ = wait_for(lambda: name not in os.listdir(d.path("devices")), DEADLINE, 0.02)
    check(ok, f"(l) devices/ no longer lists {name}")
    left = []
    for f in live:
        try:
            os.stat(os.path.join(hctx0, f))
            left.append(f)
        except FileNotFoundError:
            pass
    check(not left, f"(l) none of the {len(live)} statistics files stats after the removal: {left[:8]}")


def main():
    exe = bt.exe_or_exit()
    cases = [case_override, case_external, case_write_result, case_held, case_remove, case_metrics, case_stat_only,
             case_round_trips, case_listed_stats]
    if os.environ.get("CASES"):
        cases = [c for c in cases if c.__doc__.strip()[1] in os.environ["CASES"]]
    bt.run_cases(exe, "blkmqd-cache-", cases)
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
