#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-crash-safety.py BLKMQD [--rounds N]

(1) kill -9 during a burst of override writes: a writer thread echoes alternating values into
    policy/rq_affinity, policy/nr_requests and policy/elevator of a loop device of ours; the
    daemon is SIGKILLed at a random moment (N rounds, restart in between). After each kill,
    every file under STATEDIR/overrides must be a complete file the daemon could have written:
    header line, only knob=value lines with values from the burst, ending in "\\n" (never empty,
    torn or partial); no leftover that the next start would load as the override (a .tmp is
    allowed to remain, it is not loaded).
(2) a corrupt state file (garbage written into the device's override file) is reported in the
    log, renamed to <name>.corrupt, and the daemon starts and serves the device anyway.
"""

import os
import random
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rel  # noqa: E402
from rel import check, wait_for  # noqa: E402

VALUES = {"rq_affinity": ["1", "2", "auto"], "nr_requests": ["32", "64", "auto"], "elevator": ["mq-deadline", "none", "auto"]}


def valid_override_file(text, identity):
    if not text or not text.endswith("\n"):
        return False, "empty or not newline-terminated"
    lines = text.split("\n")[:-1]
    if lines[0] != f"# blkmqd overrides for {identity}":
        return False, f"first line {lines[0]!r}"
    for line in lines[1:]:
        m = re.fullmatch(r"([a-z_]+)=(.*)", line)
        if not m:
            return False, f"line {line!r}"
        k, v = m.groups()
        if k == "enabled":
            if v not in ("0", "1"):
                return False, f"line {line!r}"
        elif k not in VALUES or v not in VALUES[k] or v == "auto":
            return False, f"line {line!r}"
    return True, ""


def body(exe, tmp, argv):
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 20
    loops = rel.PrivateLoops(tmp, 1)
    name = loops.names[0]
    d = rel.Daemon(exe, tmp)
    odir = os.path.join(d.state, "overrides")
    try:
        loops.attach(0)
        identity = f"loop:{loops.backing[0]}"
        total_writes = 0
        torn = []
        for rnd in range(rounds):
            d.start("--devices", name)
            ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "rq_affinity")), 10.0)
            if not ok:
                check(False, f"round {rnd}: devices/{name}/policy shown")
                break
            stop = threading.Event()
            count = [0]

            def writer():
                r = random.Random(rnd)
                while not stop.is_set():
                    k = r.choice(list(VALUES))
                    if d.write(r.choice(VALUES[k]), "devices", name, "policy", k) == 0:
                        count[0] += 1
            t = threading.Thread(target=writer, daemon=True)
            t.start()
            # let the burst run to a random number of accepted writes (a count, not a time: on a loaded
            # machine a write can take long), then kill at a random point after it
            target = random.randint(3, 12)
            wait_for(lambda: count[0] >= target or not d.alive(), 15.0, 0.005)
            time.sleep(random.uniform(0, 0.05))
            rc = d.stop(signal.SIGKILL)
            stop.set()
            t.join(10)
            total_writes += count[0]
            if rc != -signal.SIGKILL:
                check(False, f"round {rnd}: killed by SIGKILL (status {rc})")
            for f in sorted(os.listdir(odir)) if os.path.isdir(odir) else []:
                p = os.path.join(odir, f)
                if f.startswith(".") and f.endswith(".tmp"):
                    continue            # an unfinished temp file: never loaded
                with open(p, errors="replace") as fh:
                    text = fh.read()
                ok, why = valid_override_file(text, identity)
                if not ok:
                    torn.append(f"round {rnd}: {f}: {why}: {text!r}")
        check(total_writes >= rounds * 3, f"{rounds} kill -9 rounds during {total_writes} accepted override writes")
        check(not torn, "after every kill -9 each overrides/ file is a complete old or new version"
              + "".join("\n      " + x for x in torn[:5]))

        # (2) corrupt state file
        files = [f for f in os.listdir(odir) if not f.startswith(".")] if os.path.isdir(odir) else []
        if not files:
            # the last burst may have reset everything to auto (file removed): make one
            d.start("--devices", name)
            wait_for(lambda: os.path.exists(d.path("devices", name, "policy", "rq_affinity")), 10.0)
            d.write("2", "devices", name, "policy", "rq_affinity")
            d.stop()
            files = [f for f in os.listdir(odir) if not f.startswith(".")]
        check(len(files) == 1, f"one override file for {name} ({files})")
        if not files:
            return
        victim = os.path.join(odir, files[0])
        with open(victim, "wb") as f:
            f.write(b"\x00\xffgarbage without an equals sign\n\x01\x02")
        d.start("--devices", name)
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", name, "class")), 10.0)
        check(ok and d.alive(), "the daemon starts with a corrupt state file and shows the device")
        check(d.read("devices", name, "class") == "stacked\n", "the device's class reads stacked")
        pol = d.read("devices", name, "policy", "rq_affinity")
        check(pol.startswith("auto"), f"the corrupt overrides are not applied: policy/rq_affinity reads {pol.strip()!r}")
        check(os.path.exists(victim + ".corrupt") and not os.path.exists(victim),
              f"{files[0]} renamed to {files[0]}.corrupt ({sorted(os.listdir(odir))})")
        with open(d.log, errors="replace") as f:
            log = f.read()
        check("corrupt" in log.lower() and (files[0] in log or identity in log),
              "the log reports the corrupt file")
        check(any("corrupt" in l.lower() and l.startswith(("<4>", "<3>")) for l in log.splitlines()),
              "reported at warning level or above")
        # a new override after the corrupt one is set aside is persisted again
        check(d.write("2", "devices", name, "policy", "rq_affinity") == 0 and os.path.exists(victim),
              "a new override is persisted again after the corrupt file was set aside")
    finally:
        d.stop()
        loops.cleanup()


if __name__ == "__main__":
    sys.exit(rel.main_wrapper(body))
