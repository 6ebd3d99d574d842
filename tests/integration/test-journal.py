#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-journal.py [BLKMQD]   (default: $BLKMQD, else ./build/blkmqd)

The journal fields of a decision come from the plan entry's fields, not from its text (issue
17 item 3). blkmqd runs in a mount namespace of its own (unshare -m) where a tmpfs over
/run/systemd holds this test's socket as /run/systemd/journal/socket, with JOURNAL_STREAM naming
its stderr, so sd_journal_sendv() sends its records here (the machine's journal, if any, is
never touched). One loop device and a config section whose name quotes a rule:

    [Device:x (rule spoof)]  MatchName=<loop>  Elevator=mq-deadline

  (j) every decision record (MESSAGE_ID=4857cd2c...) has DEVICE=<loop>, BLKMQD_CLASS=stacked,
      and a MESSAGE "<loop>: <line>" that ends with " (rule <BLKMQD_RULE=>)"; the config-match
      and the elevator lines quote "(rule spoof)" and carry BLKMQD_RULE=config-match and
      BLKMQD_RULE=config. Before issue 17 BLKMQD_RULE= was strstr(line, "(rule "): "spoof".
  (w) the elevator write is one record of MESSAGE_ID=fc294015... (write) at notice (PRIORITY=5)
      with DEVICE=<loop>, BLKMQD_KNOB=elevator, BLKMQD_OLD_VALUE=none, BLKMQD_NEW_VALUE=mq-deadline
      and BLKMQD_RULE=config; the stop's restore one record of MESSAGE_ID=53fd543c... (restore) at
      notice with BLKMQD_OLD_VALUE=mq-deadline, BLKMQD_NEW_VALUE=none; every MESSAGE_ID blkmqd
      sends is explained by units/blkmqd.catalog.

Root, losetup, unshare, /dev/fuse, /run/systemd (the test is skipped otherwise).
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check  # noqa: E402

DECISION = "4857cd2c47454447b8702c80b5468310"
WRITE = "fc294015e7e541848f4f80885a4f974e"
RESTORE = "53fd543c75c74a848bae6888d5d6b7c9"
CATALOG = os.path.join(HERE, "..", "..", "units", "blkmqd.catalog")


def parse(datagram):
    """A journal native-protocol datagram -> {field: value} (the binary form too)."""
    fields, i, b = {}, 0, datagram
    while i < len(b):
        nl = b.find(b"\n", i)
        if nl < 0:
            break
        line = b[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            fields[k.decode()] = v.decode(errors="replace")
            i = nl + 1
        else:                                   # KEY\n<le64 size><data>\n
            size = int.from_bytes(b[nl + 1:nl + 9], "little")
            fields[line.decode()] = b[nl + 9:nl + 9 + size].decode(errors="replace")
            i = nl + 9 + size + 1
    return fields


def main():
    exe = bt.exe_or_exit("loop devices, FUSE mount, a mount namespace", tools=("losetup", "unshare"),
                         files=("/run/systemd",))
    tmp = tempfile.mkdtemp(prefix="blkmqd-journal-")
    loops = bt.Loops(tmp)
    proc = None
    try:
        jdir = os.path.join(tmp, "journal")
        os.mkdir(jdir)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(os.path.join(jdir, "socket"))
        sock.setblocking(False)
        name = loops.attach("j")
        conf = os.path.join(tmp, "blkmqd.conf")
        with open(conf, "w") as f:
            f.write(f"[Manager]\nVerifySec=0\n[Device:x (rule spoof)]\nMatchName={name}\nElevator=mq-deadline\n")
        mnt, state = os.path.join(tmp, "mnt"), os.path.join(tmp, "state")
        os.mkdir(mnt)
        log = open(os.path.join(tmp, "blkmqd.log"), "w")
        st = os.fstat(log.fileno())
        env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
        setup = ('mount -t tmpfs -o mode=0755 tmpfs /run/systemd && mkdir /run/systemd/journal && '
                 'mount --bind "$0" /run/systemd/journal && exec "$@"')
        proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", setup, jdir,
                                 exe, "--mountpoint", mnt, "--state-dir", state,
                                 *bt.virtual_args(["-c", conf, "-v", "--devices", name], tmp)],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
        records = []

        def drain():
            while True:
                try:
                    records.append(parse(sock.recv(1 << 20)))
                except BlockingIOError:
                    return

        def started():
            drain()
            return proc.poll() is not None or any(" started: " in r.get("MESSAGE", "") for r in records)
        ok, _ = bt.wait_for(started, 30.0, 0.02)
        check(ok and proc.poll() is None, f"(j) blkmqd started and logged to this test's journal socket ({len(records)} records)")
        # the override's elevator decision is logged at the first evaluation; let the write's lines come too
        bt.wait_for(lambda: drain() or any("elevator none -> mq-deadline" in r.get("MESSAGE", "") for r in records), 10.0, 0.02)
        decisions = [r for r in records if r.get("MESSAGE_ID") == DECISION]
        check(len(decisions) >= 3, f"(j) decision records: {len(decisions)}")
        for r in decisions:
            msg, rule = r.get("MESSAGE", ""), r.get("BLKMQD_RULE")
            check(r.get("DEVICE") == name and r.get("BLKMQD_CLASS") == "stacked" and msg.startswith(name + ": "),
                  f"(j) DEVICE={r.get('DEVICE')} BLKMQD_CLASS={r.get('BLKMQD_CLASS')}: {msg!r}")
            check(rule is not None and (msg.endswith(f" (rule {rule})") if rule else "(rule " not in msg),
                  f"(j) BLKMQD_RULE={rule} is the rule the line ends with: {msg!r}")
        quoting = {r.get("BLKMQD_RULE") for r in decisions if "(rule spoof)" in r.get("MESSAGE", "")}
        check(quoting == {"config-match", "config"},
              f"(j) the lines quoting [Device:x (rule spoof)] carry their own rules: {sorted(map(str, quoting))}")
        check(not any(r.get("BLKMQD_RULE") == "spoof" for r in records), "(j) no record says BLKMQD_RULE=spoof")
        writes = [r for r in records if r.get("MESSAGE_ID") == WRITE]
        want = {"PRIORITY": "5", "DEVICE": name, "BLKMQD_KNOB": "elevator", "BLKMQD_OLD_VALUE": "none",
                "BLKMQD_NEW_VALUE": "mq-deadline", "BLKMQD_RULE": "config"}
        check(len(writes) == 1 and all(writes[0].get(k) == v for k, v in want.items()),
              f"(w) one write record with {want}: {writes}")
        bt.stop_process(proc, 30)
        drain()
        restores = [r for r in records if r.get("MESSAGE_ID") == RESTORE]
        want = {"PRIORITY": "5", "DEVICE": name, "BLKMQD_KNOB": "elevator", "BLKMQD_OLD_VALUE": "mq-deadline",
                "BLKMQD_NEW_VALUE": "none"}
        check(len(restores) == 1 and all(restores[0].get(k) == v for k, v in want.items()),
              f"(w) one restore record at the stop with {want}: {restores}")
        catalog = open(CATALOG).read()
        ids = {r["MESSAGE_ID"] for r in records if "MESSAGE_ID" in r}
        check(ids and all(f"-- {i}\n" in catalog for i in ids), f"(w) units/blkmqd.catalog explains every MESSAGE_ID sent: {sorted(ids)}")
    finally:
        bt.stop_process(proc, 30)
        if proc and bt.failures:
            with open(os.path.join(tmp, "blkmqd.log"), errors="replace") as f:
                print("   blkmqd stderr:\n" + "".join("      " + l for l in f.readlines()[-20:]))
        loops.detach_all()
        shutil.rmtree(tmp, ignore_errors=True)
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
