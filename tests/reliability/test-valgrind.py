#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-valgrind.py BLKMQD [--cycles N]

valgrind memcheck of a full daemon lifecycle: start (coldplug of one loop device attached
before), N (default 100) hot-plug cycles of a second loop device (attach, wait for the entry,
read its files, detach, wait for it to go), reads of every file of the tree, a few override
writes (policy/*, mode, reload), SIGTERM. Passes only with exit status 0 (not valgrind's
--error-exitcode), "ERROR SUMMARY: 0 errors", "definitely lost: 0 bytes" and "indirectly
lost: 0 bytes" (or "All heap blocks were freed").

valgrind.supp next to this file suppresses only libbpf's bpf() syscall argument checks
(valgrind 3.19 does not know the newer bpf_attr fields libbpf leaves unset; see
docs/RELIABILITY.md). Skipped without root, /dev/fuse, losetup or valgrind.
"""

import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rel  # noqa: E402
from rel import check, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_valgrind(log):
    with open(log, errors="replace") as f:
        text = f.read()
    errs = re.findall(r"ERROR SUMMARY: ([\d,]+) errors", text)
    definite = re.findall(r"definitely lost: ([\d,]+) bytes", text)
    indirect = re.findall(r"indirectly lost: ([\d,]+) bytes", text)
    all_freed = "All heap blocks were freed -- no leaks are possible" in text
    num = (lambda l: int(l[-1].replace(",", "")) if l else None)
    in_use = re.findall(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", text)
    total = re.findall(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated", text)
    return {
        "errors": num(errs),
        "definitely": 0 if all_freed and not definite else num(definite),
        "indirectly": 0 if all_freed and not indirect else num(indirect),
        "in_use": in_use[-1] if in_use else None,
        "total": total[-1] if total else None,
        "text": text,
    }


def body(exe, tmp, argv):
    cycles = 100
    if "--cycles" in argv:
        cycles = int(argv[argv.index("--cycles") + 1])
    vg = shutil.which("valgrind")
    if not vg:
        return rel.bt.skip_all("no valgrind (tools/install-deps.sh --tests)")
    rel.preflight_uevents()

    vglog = os.path.join(tmp, "valgrind.log")
    wrapper = [vg, "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect",
               "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
               "--track-fds=no", "--num-callers=30",
               f"--suppressions={os.path.join(HERE, 'valgrind.supp')}", f"--log-file={vglog}"]
    loops = rel.PrivateLoops(tmp, 2)
    d = rel.Daemon(exe, tmp, wrapper=wrapper)
    cold, hot = loops.names
    t_start = time.monotonic()
    try:
        loops.attach(0)
        t = d.start("--devices", loops.globs(), deadline=120.0)
        print(f"   started under valgrind in {t:.1f} s", flush=True)
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", cold, "class")), 30.0)
        check(ok, f"coldplug: devices/{cold} shown")

        def read_tree(what):
            bad, n = [], 0
            for p in rel.tree_files(d.mnt):
                try:
                    c = rel.read_all(p)
                except OSError as e:
                    bad.append(f"{p}: {e}")
                    continue
                n += 1
                if not c.endswith(b"\n") and not p.endswith(".prom") and os.path.basename(p) != "metrics":
                    bad.append(f"{p}: no trailing newline")
            check(not bad and n > 20, f"{what}: read all {n} files of the tree" + "".join("\n      " + b for b in bad[:5]))

        read_tree("after start")

        # a few override writes: valid, invalid, reset; mode and reload
        for value, knob, want in (("2", "rq_affinity", 0), ("mq-deadline", "elevator", 0),
                                  ("64", "nr_requests", 0), ("bogus", "rq_affinity", 22),
                                  ("0", "enabled", 0), ("1", "enabled", 0),
                                  ("auto", "rq_affinity", 0), ("auto", "elevator", 0), ("auto", "nr_requests", 0)):
            got = d.write(value, "devices", cold, "policy", knob)
            check(got == want, f"echo {value} > policy/{knob}: errno {got} (want {want})")
        check(d.write("dry-run", "mode") == 0 and d.read("mode") == "dry-run\n", "mode <- dry-run")
        check(d.write("auto", "mode") == 0, "mode <- auto")
        check(d.write("1", "reload") == 0, "reload <- 1")
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", cold, "class")), 30.0)
        check(ok, f"devices/{cold} still shown after reload")

        missed_add = missed_remove = 0
        slow = 0.0
        for i in range(cycles):
            loops.attach(1)
            ok, t_add = wait_for(lambda: os.path.exists(d.path("devices", hot, "class")), 20.0, 0.01)
            if ok:
                for f in ("class", "explain", "facts/size", "applied/elevator", "hctx/0/cpu_list"):
                    try:
                        rel.read_all(d.path("devices", hot, f))
                    except OSError:
                        pass        # it may race with nothing here: we detach only below
            else:
                missed_add += 1
            loops.detach(1)
            ok2, t_rm = wait_for(lambda: not os.path.exists(d.path("devices", hot)), 20.0, 0.01)
            if not ok2:
                missed_remove += 1
            slow = max(slow, t_add, t_rm)
            if not d.alive():
                break
            if (i + 1) % 25 == 0:
                print(f"   {i + 1} cycles, slowest event {slow * 1000:.0f} ms", flush=True)
        check(d.alive(), f"daemon alive after {cycles} hot-plug cycles")
        check(missed_add == 0 and missed_remove == 0,
              f"{cycles} cycles: every add and remove shown (missed {missed_add} adds, {missed_remove} removes)")
        read_tree("after the cycles")
    finally:
        rc = d.stop(signal.SIGTERM, deadline=120.0)
        loops.cleanup()
    duration = time.monotonic() - t_start
    check(rc == 0, f"exit status after SIGTERM is 0 (got {rc}; 99 = valgrind found errors)")
    if not os.path.exists(vglog):
        check(False, "valgrind wrote its log")
        return
    v = parse_valgrind(vglog)
    print(f"   valgrind: ERROR SUMMARY {v['errors']} errors, definitely lost {v['definitely']} bytes, "
          f"indirectly lost {v['indirectly']} bytes, in use at exit {v['in_use']}, "
          f"heap usage {v['total']}; {cycles} cycles, {duration:.0f} s")
    check(v["errors"] == 0, f"valgrind ERROR SUMMARY: 0 errors (got {v['errors']})")
    check(v["definitely"] == 0, f"definitely lost: 0 bytes (got {v['definitely']})")
    check(v["indirectly"] == 0, f"indirectly lost: 0 bytes (got {v['indirectly']})")
    if rel.failures:
        # the interesting part of valgrind's report: the error and leak records
        recs = [b for b in re.split(r"==\d+== \n", v["text"]) if re.search(r"lost in loss record|Invalid|uninitialised|Syscall param|Mismatched", b)]
        for b in recs[:10]:
            print(b)
        print("   daemon log tail:\n" + d.tail(20))


if __name__ == "__main__":
    sys.exit(rel.main_wrapper(body))
