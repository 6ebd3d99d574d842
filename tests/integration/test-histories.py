#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-histories.py BLKMQD [BLKMQD_EMU]

State that stays true across the things users do to a running blkmqd: a config (re)load, a
reload that changes what is managed, a restart, another tool's change, the stop. The built
daemon runs with --root on copies of the committed fixture trees (tests/fixtures/, capture.sh
--restore-tree), on a FUSE mount in a temp dir, with its own --state-dir and --config; writes
land in the copies only. BLKMQD_EMU (tests/integration/blkmqd-emu.c, default next to BLKMQD) is
the same daemon with the kernel's write semantics emulated on the copy: queue/scheduler brackets,
nr_requests and queue/iosched/ reset by an elevator switch, write errors injected through
<root>/emu-fail.

  (e) Elevator= names: a name no kernel has ("mq_deadline", "nosuchelevator") fails the
      start and a reload with its file:line (and the name meant, when it looks like one); a
      name another kernel has that this one cannot give (kyber on vm-6.1-scsi-debug-shared,
      which lists only mq-deadline and none and has no module tree) loads, with one warning
      naming the line and the disk
  (c) issue 26 item 4: counts and states as the journal says them. policy/irq_affinity=0 moves
      3 of 4 vectors (vm-6.1-virtio-scsi-4q): the journal says "3 placed, 1 already placed" and
      so does applied/irq_affinity at every later read (a read's verify, a reload); another
      tool moves one: applied/ starts with "changed externally" (blkmqctl status shows it), as
      the metric does
  (u) item 5: an EINVAL on the elevator write ("unsupported"), then someone else sets the
      elevator blkmqd wanted: a reload says kept in applied/, the metric and explain
  (l) an elevator whose module has not loaded yet (vm-6.1-virtio-scsi-4q, Elevator=bfq, bfq
      in modules.dep but not installed where modprobe looks: <root>/emu-modules absent): the
      switch fails with EINVAL, is an error retried with backoff, not "unsupported" (applied/,
      metric, explain, the bfq tunable waits, one warning); a reload within the backoff does
      not try again; the retry 10 s later fails again (attempt 2, next in 20 s); bfq installed
      (emu-modules), the next retry switches and the tunable follows; the stop puts none back.
      A name no kernel has (bfqq) still fails the start
  (m) item 5: the queue vectors blkmqd moved stay matched to their hctx (mapping=affinity,
      hctx/N/irq the vector) after a reload and after kill -9 and a start again
  (n) item 6: a reload whose Devices= no longer names sdb (synthetic-megaraid-64q, sdb written
      to by blkmqd) puts sdb's originals back at the reload; sdb leaves devices/, blkmqctl
      status and the metrics, gets its not_listed line; its policy/ write is refused; and in
      dry-run (nothing written) it leaves the tree too
  (s) sequences, one per knob kind, each on its fixture copy with blkmqd-emu: start, a
      policy/ write, a reload with a changed config, kill -9 and a start again, another tool's
      change, stop. After every step every applied/ file agrees with its metric, the kernel
      files with applied/ and facts/, the counts of applied/irq_affinity with the vectors'
      files; after the stop the copy is back at its first state except the files another tool
      changed (theirs, blkmqd(8)) and etc/modprobe.d/zz-blkmqd.conf (a boot-time setting):
        queue knobs + tunables  vm-6.1-scsi-debug-shared (elevator, rq_affinity, nr_requests,
                                mq-deadline tunables through a switch to none and back)
        IRQ vectors             vm-6.1-virtio-scsi-4q
        NIC IRQs and XPS        vm-6.12-nvme-tcp-2q (libnl builds)
        module parameters       vm-6.12-nvme-4q ([Module:nvme], ModuleParams=write): every
                                modules/<m>/<p>/current is the kernel's, the runtime parameter
                                pending-reset at every step
  (r) a runtime module parameter (vm-6.12-nvme-4q, [Module:nvme] poll_queues=1) through restore
      (the kernel's value back in current; proposed, "mode off" in its note; blkmqd.conf gone),
      a reload, mode auto, kill -9 and the reboot after it (effective from blkmqd.conf; the
      earlier boot's original dropped, the stop leaves the module's 1), a restore at that boot
  (x) issue 28, a runtime module parameter changed by another tool (vm-6.12-nvme-4q,
      [Module:nvme] poll_queues=1, the fixture's 0): 3 written to sys/module after blkmqd's 1.
      Reassert=no: changed-externally in modules/ (naming 3) and the metric, one external-change
      record and blkmqd_external_changes_total 1 through two reloads and a kill -9 restart,
      nothing rewritten; the stop leaves 3 and says why. Reassert=yes: rewritten once (one
      record), a second reload writes nothing; 4 written at once: the backoff leaves it (write
      war, "rewrites it in N s"); the stop leaves 4
  (o) issue 28, whose modprobe.d option: "options nvme poll_queues=2" (line 4 of a file with a
      comment, a blacklist and another module's options) in etc/modprobe.d: deferred (modules/
      state and note naming file:line, explain, one warning), nothing written, still after a
      reload, the stop leaves the copy as it was; in usr/lib/modprobe.d: corrected (1 in the
      kernel and zz-blkmqd.conf, explain naming the distribution's file, one warning), and whether
      the name sorts after zz-blkmqd.conf (zzz-nvme.conf does, nvme.conf and 00-nvme.conf not) is said
  (b) issue 26 item 1 through the daemon: gen-synthetic.py --disks 1 --kernel 5.10.0-30-amd64,
      config only ModuleParams=write: blkmqd.conf written (pending-reboot); the reboot it asked
      for; a start, a reload and a further boot keep the class, read effective and neither
      remove nor rewrite the file; restore removes it and the disk is what it now is
  (t) a failed write's retry at its backoff time (vm-6.1-virtio-scsi-4q, Elevator=bfq not
      installed yet, VerifySec=0: no periodic verify): attempt 2 10 s after the failure,
      attempt 3 20 s after that switches once bfq can load

Root, /dev/fuse (exit 77 otherwise). No device of this machine is read or written.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, finish  # noqa: E402


def emu_arg():
    if len(sys.argv) > 2:
        return sys.argv[2]
    return os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "tests", "integration", "blkmqd-emu")


def ctl_arg():
    return os.path.join(os.path.dirname(os.path.abspath(bt.exe_arg())), "ctl", "blkmqctl")


class Run:
    """One daemon on one fixture copy (its own mount, state dir, config, logs)."""

    def __init__(self, tmp, tag, config="", exe=None):
        self.dir = os.path.join(tmp, tag)
        os.makedirs(os.path.join(self.dir, "mnt"))
        self.conf = os.path.join(self.dir, "blkmqd.conf")
        self.set_config(config)
        self.d = bt.Daemon(exe or bt.exe_arg(), os.path.join(self.dir, "mnt"), self.dir, config=self.conf,
                           start_deadline=30.0, stop_deadline=30.0, unmount_on_stop=True)
        self.args = ()

    def set_config(self, text):
        with open(self.conf, "w") as f:
            f.write(text)

    def start(self, root, *args):
        self.args = ("--root", root, *args)
        self.d.start(*self.args)
        return self.d

    def log(self):
        with open(self.d.log, errors="replace") as f:
            return f.read()

    def logs(self):
        """Every start's log, in order."""
        out = ""
        for p in sorted(glob.glob(os.path.join(self.dir, "blkmqd-*.log")), key=lambda p: int(re.findall(r"\d+", p)[-1])):
            with open(p, errors="replace") as f:
                out += f.read()
        return out

    def reload(self):
        """echo 1 > reload: 0 or the errno."""
        return bt.write_file(self.d.path("reload"), b"1\n")

    def kill9_restart(self):
        self.d.stop(sig=signal.SIGKILL)
        self.d.start(*self.args)

    def stop(self):
        rc = self.d.stop()
        check(rc == 0, f"SIGTERM exit status 0 (got {rc})")


# ---- what the tree, the metrics and the kernel files say --------------------------------------

def rd(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def put(root, rel, text):
    with open(os.path.join(root, rel), "w") as f:
        f.write(text)


def state_word(text):
    """The state of an applied/ file as blkmqctl status reads it (ctl/tree.c state_word())."""
    if text.startswith("changed externally"):
        return "changed externally"
    return re.split(r"[:\n]", text, 1)[0]


def applied_value(text):
    """The value of an "ok: V (was W)..." / "kept: V (...)" file."""
    m = re.match(r"(ok|kept): (\S+)", text)
    return m.group(2) if m else None


def metrics(d):
    """{(device, knob): state} of blkmqd_applied, {(device, elevator.tunable): state} of blkmqd_applied_iosched."""
    text = d.read("metrics")
    knobs, tun = {}, {}
    for m in re.finditer(r'^blkmqd_applied\{device="([^"]+)",knob="([^"]+)",state="([^"]+)"\} 1$', text, re.M):
        knobs[(m.group(1), m.group(2))] = m.group(3)
    for m in re.finditer(r'^blkmqd_applied_iosched\{device="([^"]+)",elevator="([^"]+)",tunable="([^"]+)",state="([^"]+)"\} 1$',
                         text, re.M):
        tun[(m.group(1), f"{m.group(2)}.{m.group(3)}")] = m.group(4)
    return knobs, tun, text


def kernel_elevator(root, disk):
    s = rd(os.path.join(root, "sys/block", disk, "queue/scheduler")) or ""
    m = re.search(r"\[([^\]]+)\]", s)
    return m.group(1) if m else s.strip()


def cpulist_set(s):
    out = set()
    for part in s.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out


def settle(d, disks, deadline=15.0):
    """Until no applied/ file of disks says pending (a write in flight)."""
    def quiet():
        for disk in disks:
            for p in glob.glob(d.path("devices", disk, "applied", "*")):
                if (rd(p) or "").startswith(("pending", "timeout")):
                    return False
        return True
    ok, _ = bt.wait_for(quiet, deadline, 0.05)
    return ok


def agree(tag, d, root, disks, modules=None):
    """Every applied/ file of disks against its metric, the kernel files, facts/ and explain;
    every modules/ parameter's current against the kernel's, and its state against modules
    ({"<m>/<p>": state}, None: any). Returns {disk: {knob: applied text}}."""
    settle(d, disks)
    knobs, tuns, _ = metrics(d)
    seen = {}
    for disk in disks:
        base = d.path("devices", disk)
        applied = {os.path.basename(p): rd(p) or "" for p in glob.glob(os.path.join(base, "applied", "*"))
                   if os.path.basename(p) != "iosched"}
        seen[disk] = applied
        bad = [f"{k}: file {state_word(v)!r}, metric {knobs.get((disk, k))!r}" for k, v in sorted(applied.items())
               if state_word(v) != knobs.get((disk, k))]
        check(not bad, f"({tag}) {disk}: every applied/ state is its metric's {bad}")

        # the queue knobs: what blkmqd wrote or kept is what the kernel file and facts/ have
        kern = {"elevator": kernel_elevator(root, disk)}
        for k in ("rq_affinity", "nr_requests"):
            kern[k] = (rd(os.path.join(root, "sys/block", disk, "queue", k)) or "").strip()
        for k, now in kern.items():
            if not os.path.exists(os.path.join(root, "sys/block", disk, "queue", "scheduler" if k == "elevator" else k)):
                continue                # (a multipath head has no queue knobs)
            v = applied_value(applied.get(k, ""))
            if v is not None:
                check(v == now, f"({tag}) {disk}: applied/{k} {applied[k].strip()!r} is the kernel's {now!r}")
            fact = (rd(os.path.join(base, "facts", k)) or "").strip()
            check(fact == now, f"({tag}) {disk}: facts/{k} {fact!r} is the kernel's {now!r}")
        explain = rd(os.path.join(base, "explain")) or ""
        if state_word(applied.get("elevator", "")) in ("kept", "ok"):
            check("unsupported" not in explain and "EINVAL" not in explain,
                  f"({tag}) {disk}: explain says no refusal of an elevator in place")

        # the tunables: per line "<elevator>.<tunable> <state>: ..."
        for line in (rd(os.path.join(base, "applied", "iosched")) or "").splitlines():
            name, _, rest = line.partition(" ")
            if "." not in name:
                continue                # "unmanaged": no tunable wanted or recorded
            st = state_word(rest)
            check(tuns.get((disk, name)) == st, f"({tag}) {disk}: applied/iosched {name} {st!r} is its metric's "
                  f"{tuns.get((disk, name))!r}")
            v = applied_value(rest)
            if v is not None and name.split(".", 1)[0] == kern["elevator"]:
                now = (rd(os.path.join(root, "sys/block", disk, "queue/iosched", name.split(".", 1)[1])) or "").strip()
                check(v == now, f"({tag}) {disk}: applied/iosched {name} {v!r} is the kernel's {now!r}")

        # the queue vectors: the counts add up, and those said placed are where blkmqd wants them
        ia = applied.get("irq_affinity", "")
        m = re.search(r"(\d+) vector\(s\): (\d+) placed, (\d+) already placed, (\d+) managed by kernel, "
                      r"(\d+) changed externally.*?, (\d+) failed", ia)
        if m:
            total, placed, already, managed, ext, failed = map(int, m.groups())
            check(placed + already + managed + ext + failed == total, f"({tag}) {disk}: irq_affinity counts add up: {ia.strip()!r}")
            target = (rd(os.path.join(base, "plan", "irq_affinity")) or "").strip()
            at = 0
            for h in glob.glob(os.path.join(base, "hctx", "*")):
                irq = (rd(os.path.join(h, "irq")) or "").strip()
                cpus = (rd(os.path.join(h, "cpu_list")) or "").strip()
                if not irq.isdigit():
                    continue
                want = cpus if target == "hctx" else target
                now = rd(os.path.join(root, "proc/irq", irq, "smp_affinity_list")) or ""
                at += cpulist_set(now) == cpulist_set(want)
            check(at == placed + already, f"({tag}) {disk}: the {placed + already} vector(s) said placed are where the plan "
                  f"wants them in the kernel files ({at})")

        # NIC vectors and XPS: "<id>:<cpulist> ..." against smp_affinity_list and xps_cpus
        for k in ("nic_irq_affinity", "xps"):
            v = applied_value(applied.get(k, ""))
            if v is None:
                continue
            for item in (rd(os.path.join(base, "plan", k)) or "").split():
                ident, _, cpus = item.rpartition(":")
                if k == "nic_irq_affinity":
                    now = cpulist_set(rd(os.path.join(root, "proc/irq", ident, "smp_affinity_list")) or "")
                else:
                    ifname, _, q = ident.partition("/")
                    mask = (rd(os.path.join(root, "sys/class/net", ifname, "queues", q, "xps_cpus")) or "0").strip()
                    n = int(mask.replace(",", "") or "0", 16)
                    now = {i for i in range(n.bit_length()) if n >> i & 1}
                check(now == cpulist_set(cpus), f"({tag}) {disk}: {k} {ident} is {cpus} in the kernel file ({sorted(now)})")

    # module parameters: modules/<m>/<p>/current is the kernel's, and the state agrees with it
    for p in glob.glob(d.path("modules", "*", "*")):
        mod, param = p.split(os.sep)[-2:]
        m = module_files(d, mod, param)
        now = rd(os.path.join(root, "sys/module", mod, "parameters", param))
        if now is not None:
            check(m["current"] == now.strip(), f"({tag}) modules/{mod}/{param}/current {m['current']!r} is the kernel's {now.strip()!r}")
        if m["state"] in ("effective", "pending-reset"):
            check(m["current"] == m["wanted"], f"({tag}) modules/{mod}/{param} {m['state']}: current {m['current']!r} is the "
                  f"wanted {m['wanted']!r}")
        if f"{mod}/{param}" in (modules or {}):
            want = modules[f"{mod}/{param}"]
            check(m["state"] == want, f"({tag}) modules/{mod}/{param}/state {m['state']!r} is {want!r} ({m['note']!r})")
    for key in (modules or {}):
        check(os.path.isdir(d.path("modules", *key.split("/"))), f"({tag}) modules/{key} exists")
    return seen


def module_files(d, mod, param):
    """modules/<mod>/<param>/{current,wanted,state,note}, stripped."""
    return {k: (rd(d.path("modules", mod, param, k)) or "").strip() for k in ("current", "wanted", "state", "note", "wanted_by")}


def snapshot(root):
    """The files blkmqd may write, as they are now."""
    pats = ["sys/block/*/queue/scheduler", "sys/block/*/queue/nr_requests", "sys/block/*/queue/rq_affinity",
            "sys/block/*/queue/iosched/*", "proc/irq/*/smp_affinity_list", "sys/class/net/*/queues/tx-*/xps_cpus",
            "sys/module/*/parameters/*", "etc/modprobe.d/*"]
    out = {}
    for pat in pats:
        for p in glob.glob(os.path.join(root, pat)):
            if os.path.isfile(p):    # as a reader compares them: the kernel's newline, the emulation's none
                out[os.path.relpath(p, root)] = " ".join((rd(p) or "").split())
    return out


def same_as_first(tag, first, root, theirs=()):
    """After the stop: every file as at the start, except theirs (another tool's) and
    etc/modprobe.d/zz-blkmqd.conf (kept at stop, blkmqd(8))."""
    now = snapshot(root)
    diff = sorted(k for k in set(first) | set(now) if first.get(k) != now.get(k) and k not in theirs and
                  k != "etc/modprobe.d/zz-blkmqd.conf")
    block = [k for k in diff if not k.startswith("sys/module/")]
    check(not block, f"({tag}) after the stop the copy is as it was at the start: {[(k, first.get(k), now.get(k)) for k in block][:6]}")
    mods = [k for k in diff if k.startswith("sys/module/")]
    if any(k.startswith("sys/module/") for k in first):
        check(not mods, f"({tag}) after the stop every module parameter is as at the start: "
              f"{[(k, first.get(k), now.get(k)) for k in mods][:6]}")


# ---- the cases -----------------------------------------------------------------------------------

def case_elevator_names(tmp):
    root = bt.copy_fixture("vm-6.1-scsi-debug-shared", os.path.join(tmp, "e-root"))
    r = Run(tmp, "e", "[Class:shared-tags]\nElevator=mq_deadline\n")
    started = True
    try:
        r.start(root, "--devices", "sda")
    except RuntimeError:
        started = False
    if started:
        r.stop()
    log = r.log()
    check(not started, "(e) Elevator=mq_deadline: blkmqd does not start")
    check(f"{r.conf}:2: [Class:shared-tags] Elevator=: no kernel has an elevator \"mq_deadline\"" in log and
          "did you mean \"mq-deadline\"?" in log, f"(e) the line and the name meant are said: {log.strip()[-300:]!r}")

    r.set_config("[Class:shared-tags]\nElevator=mq-deadline\n")
    d = r.start(root, "--devices", "sda")
    try:
        before = d.read("devices", "sda", "explain")
        r.set_config("[Manager]\nVerifySec=0\n\n[Class:shared-tags]\nElevator=nosuchelevator mq-deadline\n")
        err = r.reload()
        check(err == 22, f"(e) a reload to Elevator=nosuchelevator is refused with EINVAL (got {err})")
        log = r.log()
        check(f"Reload failed, keeping the last good configuration: {r.conf}:5: [Class:shared-tags] Elevator=: no kernel "
              "has an elevator \"nosuchelevator\"" in log, "(e) the reload's line names file:line")
        check(d.read("devices", "sda", "explain") == before, "(e) the last good configuration stays in force")
        check(d.read("reload").strip() == "1", "(e) no load counted")

        r.set_config("[Class:shared-tags]\nElevator=kyber mq-deadline\n")
        err = r.reload()
        check(err == 0, f"(e) Elevator=kyber mq-deadline (kyber: in tree, not on this kernel) reloads (got {err})")
        warn = [x for x in r.log().splitlines() if "Elevator=kyber: this kernel cannot give kyber" in x]
        check(len(warn) == 1 and f"{r.conf}:2: [Class:shared-tags] Elevator=kyber: this kernel cannot give kyber to sda" in warn[0],
              f"(e) one warning with the line and the disk: {warn}")
        check(d.read("devices", "sda", "plan", "elevator").strip() == "mq-deadline", "(e) the next name of the list applies")
    finally:
        r.stop()


QUIET = "[Manager]\nVerifySec=0\n"


def case_irq_counts(tmp):
    root = bt.copy_fixture("vm-6.1-virtio-scsi-4q", os.path.join(tmp, "c-root"))
    r = Run(tmp, "c", QUIET, exe=emu_arg())
    d = r.start(root, "--devices", "sda")
    try:
        check(d.write("0", "devices", "sda", "policy", "irq_affinity") == 0, "(c) policy/irq_affinity 0 taken")
        settle(d, ["sda"])
        line = [x for x in r.log().splitlines() if "irq_affinity=0: 4 vector(s)" in x]
        check(len(line) == 1 and "3 placed, 1 already placed" in line[0], f"(c) the journal: 3 placed, 1 already placed {line}")
        for when in ("after the write", "at a read again", "after a reload"):
            if when == "after a reload":
                check(r.reload() == 0, "(c) reload")
            a = d.read("devices", "sda", "applied", "irq_affinity")
            check(a.startswith("ok: 0") and "4 vector(s): 3 placed, 1 already placed, 0 managed by kernel, 0 changed externally" in a,
                  f"(c) applied/irq_affinity {when} counts as the journal did: {a.strip()!r}")
        agree("c", d, root, ["sda"])

        put(root, "proc/irq/28/smp_affinity_list", "2\n")      # another tool moves one blkmqd placed
        a = d.read("devices", "sda", "applied", "irq_affinity")  # (the read's verify sees it)
        check(a.startswith("changed externally: 4 vector(s): 2 placed, 1 already placed, 0 managed by kernel, 1 changed externally"),
              f"(c) another tool's change: the state word first, the counts by state: {a.strip()!r}")
        knobs, _, _ = metrics(d)
        check(knobs.get(("sda", "irq_affinity")) == "changed externally", f"(c) the metric says so: {knobs.get(('sda', 'irq_affinity'))}")
        ctl = ctl_arg()
        if os.path.exists(ctl):
            p = subprocess.run([ctl, "--mountpoint", d.mnt, "status", "sda"], capture_output=True, text=True)
            row = [x for x in p.stdout.splitlines() if x.startswith("sda")]
            check(row and "changed externally" in row[0] and " kept" not in row[0],
                  f"(c) blkmqctl status sda shows changed externally: {p.stdout.strip()!r}")
        else:
            bt.skip("(c) blkmqctl status", "blkmqctl not built")
        agree("c", d, root, ["sda"])
    finally:
        r.stop()


def case_stale_unsupported(tmp):
    root = bt.copy_fixture("vm-6.1-virtio-scsi-4q", os.path.join(tmp, "u-root"))
    put(root, "emu-fail", "sysfs:block/sda/queue/scheduler EINVAL\n")
    r = Run(tmp, "u", QUIET, exe=emu_arg())
    d = r.start(root, "--devices", "sda")
    try:
        settle(d, ["sda"])
        a = d.read("devices", "sda", "applied", "elevator")
        check(a.startswith("unsupported: EINVAL writing mq-deadline"), f"(u) the refused write: {a.strip()!r}")
        put(root, "sys/block/sda/queue/scheduler", "none [mq-deadline]\n")   # someone else sets it
        check(r.reload() == 0, "(u) reload")
        settle(d, ["sda"])
        a = d.read("devices", "sda", "applied", "elevator")
        check(a.startswith("kept: mq-deadline"), f"(u) after someone set mq-deadline and a reload: kept, not the old EINVAL: {a.strip()!r}")
        knobs, _, _ = metrics(d)
        check(knobs.get(("sda", "elevator")) == "kept", f"(u) the metric: {knobs.get(('sda', 'elevator'))}")
        agree("u", d, root, ["sda"])
    finally:
        r.stop()


def case_elevator_not_loaded(tmp):
    root = bt.copy_fixture("vm-6.1-virtio-scsi-4q", os.path.join(tmp, "l-root"))
    # bfq is a module of the running release (modules.dep) but not installed where modprobe
    # looks yet: no <root>/emu-modules, so the emulated request_module() registers nothing
    os.makedirs(os.path.join(root, "lib/modules/6.1.0-57-amd64"))
    put(root, "lib/modules/6.1.0-57-amd64/modules.dep", "kernel/block/bfq.ko:\nkernel/block/kyber-iosched.ko:\n")
    first = snapshot(root)
    conf = "[Manager]\nVerifySec=1\n\n[Class:many-hctx-slow]\nElevator=bfq\nIoSched.bfq.slice_idle=0\n"
    r = Run(tmp, "l", "[Class:many-hctx-slow]\nElevator=bfqq\n", exe=emu_arg())
    try:
        r.start(root, "--devices", "sda")
        r.stop()
        check(False, "(l) Elevator=bfqq (no kernel has it) fails the start")
    except RuntimeError:
        check("no kernel has an elevator \"bfqq\"" in r.log(), "(l) Elevator=bfqq (no kernel has it) fails the start, said")
    r.set_config(conf)
    d = r.start(root, "--devices", "sda")
    stopped = False
    try:
        settle(d, ["sda"])
        a = d.read("devices", "sda", "applied", "elevator")
        check(a.startswith("error: EINVAL writing bfq to queue/scheduler: no elevator bfq registered (queue/scheduler lists none "
                           "mq-deadline)") and "attempt 1, retried with backoff, next try in 10 s" in a,
              f"(l) at start: the switch to bfq failed, why, and when the next try is: {a.strip()!r}")
        knobs, tuns, _ = metrics(d)
        check(knobs.get(("sda", "elevator")) == "error", f"(l) the metric says error, not unsupported: {knobs.get(('sda', 'elevator'))}")
        ex = d.read("devices", "sda", "explain")
        line = [x for x in ex.splitlines() if "(rule elevator-not-loaded)" in x]
        check(len(line) == 1 and "not registered at blkmqd's switch (EINVAL at 1 attempt(s)" in line[0] and
              "retried with backoff, next try 10 s after the last" in line[0], f"(l) explain says so: {line}")
        tun = [x for x in (d.read("devices", "sda", "applied", "iosched") or "").splitlines() if x.startswith("bfq.slice_idle ")]
        check(tun and "waits: the disk runs none; written when bfq runs (not registered yet" in tun[0],
              f"(l) bfq's tunable waits for bfq: {tun}")
        check(kernel_elevator(root, "sda") == "none", "(l) the kernel still runs none")
        warn = [x for x in r.log().splitlines() if "Failed to set elevator bfq" in x]
        check(len(warn) == 1 and "will retry with backoff, next try in 10 s" in warn[0], f"(l) one warning: {warn}")

        # within the backoff an evaluation (a reload) does not write again
        check(r.reload() == 0, "(l) reload within the backoff")
        settle(d, ["sda"])
        a = d.read("devices", "sda", "applied", "elevator")
        check("attempt 1," in a, f"(l) the reload did not try again: {a.strip()!r}")

        # the retry after 10 s (the periodic verify after the delay): bfq still not installed
        ok, _ = bt.wait_for(lambda: "attempt 2," in (d.read("devices", "sda", "applied", "elevator") or ""), 20.0, 0.2)
        a = d.read("devices", "sda", "applied", "elevator")
        check(ok and "next try in 20 s" in a, f"(l) retried after the backoff, failed again, the next delay doubles: {a.strip()!r}")
        warn = [x for x in r.log().splitlines() if "Failed to set elevator bfq" in x]
        check(len(warn) == 1, f"(l) the retry is not a second warning: {len(warn)}")
        agree("l retry", d, root, ["sda"])

        # the module is installed now: the next try switches
        put(root, "emu-modules", "bfq\n")
        ok, _ = bt.wait_for(lambda: (d.read("devices", "sda", "applied", "elevator") or "").startswith("ok:"), 30.0, 0.2)
        settle(d, ["sda"])
        a = d.read("devices", "sda", "applied", "elevator")
        check(ok and a.startswith("ok: bfq (was none)"), f"(l) once bfq loads the retry switches: {a.strip()!r}")
        check(kernel_elevator(root, "sda") == "bfq", f"(l) the kernel runs bfq ({kernel_elevator(root, 'sda')})")
        ex = d.read("devices", "sda", "explain")
        check("elevator-not-loaded" not in ex, "(l) explain no longer says it is not loaded")
        tun = [x for x in (d.read("devices", "sda", "applied", "iosched") or "").splitlines() if x.startswith("bfq.slice_idle ")]
        check(tun and tun[0].startswith("bfq.slice_idle ok: 0"), f"(l) bfq's tunable is written after the switch: {tun}")
        check((rd(os.path.join(root, "sys/block/sda/queue/iosched/slice_idle")) or "").strip() == "0",
              "(l) the kernel's slice_idle is 0")
        ok_line = [x for x in r.log().splitlines() if "bfq is registered now (not at 2 earlier attempt(s)" in x]
        check(len(ok_line) == 1, f"(l) the journal says the switch came after 2 failed attempts: {ok_line}")
        agree("l ok", d, root, ["sda"])
        r.stop()
        stopped = True
        check(kernel_elevator(root, "sda") == "none", f"(l) the stop puts none back ({kernel_elevator(root, 'sda')})")
        # bfq stays registered once loaded: the file lists it (as the kernel's would)
        check(" ".join((rd(os.path.join(root, "sys/block/sda/queue/scheduler")) or "").split()) == "[none] mq-deadline bfq",
              "(l) queue/scheduler lists bfq, registered now, with none in force")
        same_as_first("l", first, root, theirs={"sys/block/sda/queue/scheduler"})
    finally:
        if not stopped:
            r.stop()


def case_retry_timer(tmp):
    """A failed switch that may pass is tried again at its backoff time, not at the periodic
    verify: with VerifySec=0 there is none, and the retries still come (10 s, then 20 s)."""
    root = bt.copy_fixture("vm-6.1-virtio-scsi-4q", os.path.join(tmp, "t-root"))
    os.makedirs(os.path.join(root, "lib/modules/6.1.0-57-amd64"))
    put(root, "lib/modules/6.1.0-57-amd64/modules.dep", "kernel/block/bfq.ko:\nkernel/block/kyber-iosched.ko:\n")
    r = Run(tmp, "t", "[Manager]\nVerifySec=0\n\n[Class:many-hctx-slow]\nElevator=bfq\n", exe=emu_arg())
    t_start = time.monotonic()
    d = r.start(root, "--devices", "sda")
    try:
        settle(d, ["sda"])
        t_settled = time.monotonic()
        a = d.read("devices", "sda", "applied", "elevator")
        check(a.startswith("error: EINVAL writing bfq") and "attempt 1, retried with backoff, next try in 10 s" in a,
              f"(t) at start the switch failed, next try in 10 s: {a.strip()!r}")
        ok, _ = bt.wait_for(lambda: "attempt 2," in (d.read("devices", "sda", "applied", "elevator") or ""), 25.0, 0.1)
        t2 = time.monotonic()
        check(ok and t2 - t_start >= 9.5 and t2 - t_settled <= 13.0,
              f"(t) the second attempt came at its backoff time with VerifySec=0: {ok}, {t2 - t_start:.1f} s after the "
              f"start, {t2 - t_settled:.1f} s after the failure was read")
        a = d.read("devices", "sda", "applied", "elevator")
        check("next try in 20 s" in a, f"(t) the failed retry doubles the delay: {a.strip()!r}")
        put(root, "emu-modules", "bfq\n")
        ok, _ = bt.wait_for(lambda: (d.read("devices", "sda", "applied", "elevator") or "").startswith("ok:"), 35.0, 0.1)
        t3 = time.monotonic()
        check(ok and t3 - t2 >= 19.0 and t3 - t2 <= 24.0,
              f"(t) once bfq can load, the third attempt at its time switches: {ok}, {t3 - t2:.1f} s after the second")
        check(kernel_elevator(root, "sda") == "bfq", f"(t) the kernel runs bfq ({kernel_elevator(root, 'sda')})")
        agree("t", d, root, ["sda"])
    finally:
        r.stop()


def explain_mapping(d, disk):
    m = re.search(r"mapping=(\S+)", d.read("devices", disk, "explain"))
    return m.group(1) if m else None


def hctx_irqs(d, disk):
    return {os.path.basename(h): (rd(os.path.join(h, "irq")) or "").strip() for h in glob.glob(d.path("devices", disk, "hctx", "*"))}


def case_mapping(tmp):
    root = bt.copy_fixture("vm-6.1-virtio-scsi-4q", os.path.join(tmp, "m-root"))
    r = Run(tmp, "m", QUIET, exe=emu_arg())
    d = r.start(root, "--devices", "sda")
    try:
        first = hctx_irqs(d, "sda")
        check(explain_mapping(d, "sda") == "affinity" and all(v.isdigit() for v in first.values()),
              f"(m) at start: mapping=affinity, every hctx its vector {first}")
        check(d.write("0", "devices", "sda", "policy", "irq_affinity") == 0, "(m) policy/irq_affinity 0")
        settle(d, ["sda"])
        for step in ("reload", "kill -9 and a start again"):
            if step == "reload":
                check(r.reload() == 0, "(m) reload")
            else:
                r.kill9_restart()
            settle(d, ["sda"])
            now = hctx_irqs(d, "sda")
            check(explain_mapping(d, "sda") == "affinity", f"(m) after a {step}: explain says mapping=affinity "
                  f"({explain_mapping(d, 'sda')})")
            check(now == first, f"(m) after a {step}: hctx/N/irq as before {now}")
        agree("m", d, root, ["sda"])
    finally:
        r.stop()


def case_narrow(tmp):
    for mode in ("auto", "dry-run"):
        tag = "n" if mode == "auto" else "nd"
        root = bt.copy_fixture("synthetic-megaraid-64q", os.path.join(tmp, tag + "-root"))
        put(root, "sys/block/sdb/queue/scheduler", "mq-deadline kyber [bfq] none\n")    # blkmqd switches it
        first = snapshot(root)
        r = Run(tmp, tag, QUIET, exe=emu_arg())
        d = r.start(root, *(("--dry-run",) if mode == "dry-run" else ()))
        try:
            settle(d, ["sda", "sdb"])
            check(os.path.isdir(d.path("devices", "sdb")), f"({tag}) sdb listed at start")
            wrote = snapshot(root) != first
            if mode == "auto":
                check(wrote, f"({tag}) blkmqd wrote to the copy at start (something to put back)")
            r.set_config(QUIET + "Devices=sda\n")
            check(r.reload() == 0, f"({tag}) reload with Devices=sda")
            ok, _ = bt.wait_for(lambda: not os.path.exists(d.path("devices", "sdb")), 10.0, 0.05)
            check(ok, f"({tag}) sdb left devices/ at the reload")
            knobs, _, text = metrics(d)
            check('device="sdb"' not in text, f"({tag}) sdb left the metrics")
            check(os.path.isdir(d.path("devices", "sda")), f"({tag}) sda stays")
            nl = d.read("not_listed")
            check("sdb: not matched by Devices= sda" in nl, f"({tag}) not_listed says why: {nl.strip()!r}")
            sdb_now = {k: v for k, v in snapshot(root).items() if "/sdb/" in k or k.startswith("proc/irq")}
            sdb_first = {k: v for k, v in first.items() if "/sdb/" in k or k.startswith("proc/irq")}
            check(sdb_now == sdb_first, f"({tag}) sdb's originals are back at the reload "
                  f"{[(k, sdb_first.get(k), sdb_now.get(k)) for k in set(sdb_first) | set(sdb_now) if sdb_first.get(k) != sdb_now.get(k)][:4]}")
            err = bt.write_file(d.path("devices", "sdb", "policy", "elevator"), b"none\n")
            check(err != 0, f"({tag}) a write to sdb's policy/elevator is refused (errno {err})")
            ctl = ctl_arg()
            if os.path.exists(ctl):
                p = subprocess.run([ctl, "--mountpoint", d.mnt, "status"], capture_output=True, text=True)
                check(not any(x.startswith("sdb") for x in p.stdout.splitlines()), f"({tag}) blkmqctl status lists no sdb")
                p = subprocess.run([ctl, "--mountpoint", d.mnt, "set", "sdb", "elevator", "none"], capture_output=True, text=True)
                check(p.returncode != 0, f"({tag}) blkmqctl set sdb elevator none fails ({p.returncode}: {p.stderr.strip()[:100]!r})")
            check(kernel_elevator(root, "sdb") == kernel_elevator(first and root, "sdb"), f"({tag}) sdb untouched after")
            agree(tag, d, root, ["sda"])
            log = r.log()
            if mode == "auto":
                check("sdb: Not matched by the globs any more: putting its original values back" in log and
                      "sdb: No longer managed (not matched by the globs): original values put back" in log,
                      f"({tag}) the journal says what happened to sdb")
        finally:
            r.stop()
        same_as_first(tag, first, root)


# ---- sequences ----------------------------------------------------------------------------------

def sequence(tmp, tag, fixture, disks, conf_a, write, conf_b, external, prepare=None, args=(), modules=None):
    """start (conf_a), write (path, value) pairs under devices/, reload (conf_b), kill -9 and a
    start again, external: {rel path: text} another tool writes (then a reload looks), stop.
    modules: {step: {"<m>/<p>": state}} (steps start, write, reload, kill9, external)."""
    modules = modules or {}
    root = bt.copy_fixture(fixture, os.path.join(tmp, tag + "-root"))
    if prepare:
        prepare(root)
    first = snapshot(root)
    r = Run(tmp, tag, conf_a, exe=emu_arg())
    d = r.start(root, "--devices", ",".join(disks), *args)
    stopped = False
    try:
        agree(f"{tag} start", d, root, disks, modules.get("start"))
        for path, value in write:
            err = d.write(value, "devices", *path.split("/"))
            check(err == 0, f"({tag}) devices/{path} = {value} taken ({err})")
        agree(f"{tag} write", d, root, disks, modules.get("write"))
        r.set_config(conf_b)
        check(r.reload() == 0, f"({tag}) reload with the changed config")
        agree(f"{tag} reload", d, root, disks, modules.get("reload"))
        r.kill9_restart()
        agree(f"{tag} kill -9, start", d, root, disks, modules.get("kill9"))
        for rel, text in external.items():
            put(root, rel, text)
        check(r.reload() == 0, f"({tag}) reload after another tool's change")
        seen = agree(f"{tag} external", d, root, disks, modules.get("external"))
        r.stop()
        stopped = True
        same_as_first(tag, first, root, theirs=set(external))
        return seen
    finally:
        if not stopped:
            r.stop()


def case_sequences(tmp):
    # queue knobs and tunables: the elevator through none and back, tunables reset by the switch
    sequence(tmp, "sq", "vm-6.1-scsi-debug-shared", ["sda"],
             QUIET + "\n[Class:shared-tags]\nIoSched.mq-deadline.fifo_batch=32\n",
             [("sda/policy/rq_affinity", "2"), ("sda/policy/nr_requests", "64"), ("sda/policy/elevator", "none")],
             QUIET + "\n[Class:shared-tags]\nIoSched.mq-deadline.fifo_batch=8\nIoSched.mq-deadline.read_expire=250\n",
             {"sys/block/sda/queue/rq_affinity": "1\n"})
    # IRQ vectors
    sequence(tmp, "si", "vm-6.1-virtio-scsi-4q", ["sda"], QUIET,
             [("sda/policy/irq_affinity", "0")],
             QUIET + "\n[Class:many-hctx-slow]\nRqAffinity=2\n",
             {"proc/irq/29/smp_affinity_list": "3\n"})
    # NIC vectors and XPS: the NIC's vectors misplaced first, blkmqd aligns them
    def misplace(root):
        for irq in glob.glob(os.path.join(root, "proc/irq/*/smp_affinity_list")):
            name = " ".join(os.listdir(os.path.dirname(irq)))
            if "virtio1-input" in name or "virtio1-output" in name:
                put(root, os.path.relpath(irq, root), "0\n")
    if not os.path.exists(os.path.join(bt.FIXTURES, "vm-6.12-nvme-tcp-2q")):
        bt.skip("(sn) NIC sequence", "no fixture")
    else:
        seen = sequence(tmp, "sn", "vm-6.12-nvme-tcp-2q", ["nvme0c0n1"], QUIET, [],
                        QUIET + "\n[Class:fast-multiqueue]\nRqAffinity=2\n", {"proc/irq/27/smp_affinity_list": "0-1\n"},
                        prepare=misplace)
        nic = (seen or {}).get("nvme0c0n1", {}).get("nic_irq_affinity", "")
        if nic.startswith("unmanaged") and "libnl" in (rd(os.path.join(tmp, "sn", "blkmqd-1.log")) or ""):
            bt.skip("(sn) NIC IRQs placed", "built without libnl")
        else:
            check(nic.startswith("changed externally to "), f"(sn) the NIC vector another tool moved is said: {nic.strip()!r}")
    # module parameters written at run time
    # module parameters written at run time: in the module at once, in its devices at their next
    # reset (pending-reset) through a reload, a new value and a restart (the original recorded)
    reset = {"nvme/poll_queues": "pending-reset"}
    sequence(tmp, "sm", "vm-6.12-nvme-4q", ["nvme0n1"],
             QUIET + "ModuleParams=write\n\n[Module:nvme]\npoll_queues=1\n", [],
             QUIET + "ModuleParams=write\n\n[Module:nvme]\npoll_queues=2\n", {},
             modules={"start": reset, "write": reset, "reload": reset, "kill9": reset, "external": reset})


# ---- module parameters across restore and reboots -----------------------------------------------

MODCONF = "etc/modprobe.d/zz-blkmqd.conf"


def first_boot(root):
    """This boot's id and proc/stat btime an hour ago (the copy has none)."""
    os.makedirs(os.path.join(root, "proc/sys/kernel/random"), exist_ok=True)
    put(root, "proc/sys/kernel/random/boot_id", str(uuid.uuid4()) + "\n")
    put(root, "proc/stat", f"cpu  1 2 3 4\nbtime {int(time.time()) - 3600}\n")


def simulate_boot(root, params=(), one_hctx=()):
    """The reboot blkmqd.conf asked for, into the copy while blkmqd is stopped: each (module,
    param, value) of params in sys/module (as modprobe.d loaded the module), each (disk, scsi
    host) of one_hctx with one hctx (host_tagset_enable=0: mq/0 with every CPU, no debugfs hctx
    but hctx0, without TAG_HCTX_SHARED, the host's nr_hw_queues 1; tests/lib/test-kernel.h
    test_one_hctx()), a new boot id, proc/stat btime after blkmqd.conf's mtime."""
    for mod, param, value in params:
        put(root, f"sys/module/{mod}/parameters/{param}", value + "\n")
    for disk, host in one_hctx:
        mq = os.path.join(root, "sys/block", disk, "mq")
        cpus = set()
        for c in glob.glob(os.path.join(mq, "*", "cpu_list")):
            cpus |= cpulist_set((rd(c) or "").replace(" ", ""))
        for h in os.listdir(mq):
            if h != "0":
                shutil.rmtree(os.path.join(mq, h))
        put(root, f"sys/block/{disk}/mq/0/cpu_list", ", ".join(map(str, sorted(cpus))) + "\n")
        dbg = os.path.join(root, "sys/kernel/debug/block", disk)
        for h in glob.glob(os.path.join(dbg, "hctx*")):
            if os.path.basename(h) != "hctx0":
                shutil.rmtree(h)
        flags = rd(os.path.join(dbg, "hctx0/flags")) or ""
        put(root, f"sys/kernel/debug/block/{disk}/hctx0/flags",
            flags.replace("|TAG_HCTX_SHARED", "").replace("TAG_HCTX_SHARED|", ""))
        put(root, f"sys/class/scsi_host/{host}/nr_hw_queues", "1\n")
    try:
        after = int(os.stat(os.path.join(root, MODCONF)).st_mtime) + 1
    except OSError:
        after = 0
    put(root, "proc/sys/kernel/random/boot_id", str(uuid.uuid4()) + "\n")
    put(root, "proc/stat", f"cpu  1 2 3 4\nbtime {max(after, int(time.time()))}\n")


def module_settled(d, mod, param, deadline=15.0):
    """modules/<mod>/<param> once its write returned (not pending): its files."""
    bt.wait_for(lambda: module_files(d, mod, param)["state"] not in ("pending", "timeout", ""), deadline, 0.05)
    return module_files(d, mod, param)


def modconf(root):
    """blkmqd.conf's (text, mtime), or (None, None)."""
    p = os.path.join(root, MODCONF)
    return (rd(p), os.stat(p).st_mtime_ns) if os.path.exists(p) else (None, None)


def case_module_reboot(tmp):
    """Issue 26 item 1 through the daemon: 5.10 synthetic tree, only ModuleParams=write; the
    wish whose own effect (one hctx) removed its cause stays effective across boots."""
    root = os.path.join(tmp, "b-root")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "fixture", "gen-synthetic.py"), root, "--disks", "1",
                    "--kernel", "5.10.0-30-amd64"], check=True, capture_output=True)
    first_boot(root)
    r = Run(tmp, "b", "[Manager]\nModuleParams=write\n", exe=emu_arg())
    d = r.start(root, "--devices", "sda")
    try:
        m = module_settled(d, "megaraid_sas", "host_tagset_enable")
        check(m["state"] == "pending-reboot" and m["wanted"] == "0" and m["current"] == "1",
              f"(b) boot 1: host_tagset_enable wanted 0, pending-reboot ({m})")
        text, mtime = modconf(root)
        check(text is not None and "options megaraid_sas host_tagset_enable=0\n" in text,
              f"(b) boot 1: {MODCONF} written ({text!r})")
        check(d.read("devices", "sda", "class").strip() == "many-hctx-slow", "(b) boot 1: sda many-hctx-slow")
    finally:
        r.stop()
    for boot in (2, 3):
        # boot 2: the reboot the file asked for; boot 3: a further boot, nothing new
        simulate_boot(root, [("megaraid_sas", "host_tagset_enable", "0")] if boot == 2 else [],
                      [("sda", "host0")] if boot == 2 else [])
        old = os.path.join(root, "etc/modprobe.d/blkmqd.conf")
        if boot == 2:
            # the upgrade: the file as a blkmqd before the rename left it (blkmqd.conf sorted
            # before the distributions' nvme.conf and friends, whose options then won)
            os.rename(os.path.join(root, MODCONF), old)
        else:
            put(root, "etc/modprobe.d/blkmqd.conf", "options foo bar=1\n")     # the admin's own, of that name
        d = r.start(root, "--devices", "sda")
        try:
            log = r.log()
            renamed = [x for x in log.splitlines() if "Renamed /etc/modprobe.d/blkmqd.conf to zz-blkmqd.conf" in x]
            if boot == 2:
                check(len(renamed) == 1 and not os.path.exists(old),
                      f"(b) boot 2 after an upgrade: the earlier blkmqd's blkmqd.conf renamed to {MODCONF}, one line ({renamed})")
            else:
                check(not renamed and rd(old) == "options foo bar=1\n",
                      f"(b) boot 3: an admin's blkmqd.conf is not blkmqd's: left as it is ({renamed}, {rd(old)!r})")
            m = module_settled(d, "megaraid_sas", "host_tagset_enable")
            hctx = d.read("devices", "sda", "facts", "nr_hw_queues").strip()
            shared = d.read("devices", "sda", "facts", "shared_tags").strip()
            check(hctx == "1" and shared == "0", f"(b) boot {boot}: sda has 1 hctx, no shared tags ({hctx}, {shared})")
            cls = d.read("devices", "sda", "class").strip()
            check(cls == "many-hctx-slow", f"(b) boot {boot}: sda keeps its class many-hctx-slow ({cls})")
            check(m["state"] == "effective" and m["current"] == "0" and "at this boot" in m["note"],
                  f"(b) boot {boot}: host_tagset_enable effective, from the file at this boot ({m})")
            check(r.reload() == 0, f"(b) boot {boot}: reload")
            m = module_settled(d, "megaraid_sas", "host_tagset_enable")
            check(m["state"] == "effective", f"(b) boot {boot}: still effective after a reload ({m['state']})")
            log = r.log()
            check("Removed /etc/modprobe.d" not in log and "Wrote /etc/modprobe.d" not in log,
                  f"(b) boot {boot}: {MODCONF} neither removed nor written again "
                  f"({[x for x in log.splitlines() if 'modprobe.d' in x][:3]})")
            check(modconf(root) == (text, mtime), f"(b) boot {boot}: {MODCONF} the same file, its mtime kept (also through the rename)")
            agree(f"b boot {boot}", d, root, ["sda"], {"megaraid_sas/host_tagset_enable": "effective"})
            if boot == 3:
                # the admin's put back: the file goes, and the disk is what it now is
                check(bt.write_file(d.path("restore"), b"1\n") == 0, "(b) restore taken")
                m = module_settled(d, "megaraid_sas", "host_tagset_enable")
                check(modconf(root) == (None, None), f"(b) restore removed {MODCONF}")
                cls = d.read("devices", "sda", "class").strip()
                check(cls != "many-hctx-slow" and m["state"] == "proposed" and m["wanted"] == "none",
                      f"(b) after restore sda is what it now is ({cls}), nothing wanted ({m})")
        finally:
            r.stop()


def case_module_restore(tmp):
    """Issue 26 items 1, 8 and the restore of a runtime parameter (vm-6.12-nvme-4q, [Module:nvme]
    poll_queues=1): restore puts the kernel's value back and the wish reads proposed (mode off:
    nothing written, its note says so) with the kernel's current; mode auto writes it again; a
    kill -9 leaves its original in the state directory, the reboot after it loads the module with
    1 from blkmqd.conf: effective, and that earlier boot's original is dropped (a stop leaves 1);
    a restore at that boot removes the file, and the running module keeps 1 (effective, until the
    next boot)."""
    root = bt.copy_fixture("vm-6.12-nvme-4q", os.path.join(tmp, "r-root"))
    first_boot(root)
    kern = os.path.join(root, "sys/module/nvme/parameters/poll_queues")
    r = Run(tmp, "r", QUIET + "ModuleParams=write\n\n[Module:nvme]\npoll_queues=1\n", exe=emu_arg())
    d = r.start(root, "--devices", "nvme0n1")
    killed = False
    try:
        m = module_settled(d, "nvme", "poll_queues")
        check(m["state"] == "pending-reset" and m["current"] == "1" and (rd(kern) or "").strip() == "1",
              f"(r) start: poll_queues 1 in the module, pending-reset ({m})")
        check(bt.write_file(d.path("restore"), b"1\n") == 0, "(r) restore taken")
        for step in ("restore", "reload"):
            if step == "reload":
                check(r.reload() == 0, "(r) reload after the restore")
            m = module_settled(d, "nvme", "poll_queues")
            check((rd(kern) or "").strip() == "0" and m["current"] == "0",
                  f"(r) {step}: the original 0 back in the kernel and in current ({m['current']!r})")
            check(m["state"] == "proposed" and m["wanted"] == "1" and "mode off" in m["note"],
                  f"(r) {step}: the wish proposed, not written because of mode off ({m})")
            check(modconf(root) == (None, None), f"(r) {step}: {MODCONF} removed")
            agree(f"r {step}", d, root, ["nvme0n1"], {"nvme/poll_queues": "proposed"})
        check(d.write("auto", "mode") == 0, "(r) mode auto")
        m = module_settled(d, "nvme", "poll_queues")
        check(m["state"] == "pending-reset" and (rd(kern) or "").strip() == "1", f"(r) mode auto: written again ({m})")
        text, mtime = modconf(root)
        check(text is not None and "options nvme poll_queues=1\n" in text, f"(r) mode auto: {MODCONF} written again")
        d.stop(sig=signal.SIGKILL)
        killed = True
    finally:
        if not killed:
            r.stop()
    simulate_boot(root, [("nvme", "poll_queues", "1")])
    d = r.start(root, "--devices", "nvme0n1")
    try:
        m = module_settled(d, "nvme", "poll_queues")
        check(m["state"] == "effective" and m["current"] == "1" and "at this boot" in m["note"],
              f"(r) after the reboot: effective, from {MODCONF} at this boot ({m})")
        check("recorded at an earlier boot" in r.log(), "(r) after the reboot: the earlier boot's original dropped")
        check(modconf(root) == (text, mtime), f"(r) after the reboot: {MODCONF} untouched")
        agree("r reboot", d, root, ["nvme0n1"], {"nvme/poll_queues": "effective"})
    finally:
        r.stop()
    check((rd(kern) or "").strip() == "1" and "Restored nvme.poll_queues" not in r.log(),
          "(r) the stop after the reboot writes no earlier boot's value over the module's 1")
    d = r.start(root, "--devices", "nvme0n1")
    try:
        check(bt.write_file(d.path("restore"), b"1\n") == 0, "(r) restore at the second boot")
        m = module_settled(d, "nvme", "poll_queues")
        check(modconf(root) == (None, None), f"(r) restore removed {MODCONF}")
        check((rd(kern) or "").strip() == "1" and m["current"] == "1", "(r) the running module keeps 1 (this boot's own)")
        check(m["state"] == "effective" and "next boot" in m["note"],
              f"(r) effective until the next boot, which has the module's own value ({m})")
    finally:
        r.stop()


MODPARAM = "sys/module/nvme/parameters/poll_queues"
NVME_POLL = QUIET + "ModuleParams=write\n\n[Module:nvme]\npoll_queues=1\n"


def count(text, needle):
    return sum(needle in line for line in text.splitlines())


def case_module_external(tmp):
    """Issue 28: a runtime module parameter another tool changes after blkmqd wrote it is no
    longer blkmqd's, as a disk's knob (vm-6.12-nvme-4q, [Module:nvme] poll_queues=1, the kernel's
    0). Reassert=no: one external-change record, changed-externally in modules/ naming the value,
    nothing rewritten through reloads, a kill -9 and a start again; the stop says it and leaves
    the value. Reassert=yes: rewritten once; changed again at once, the backoff holds the next
    rewrite (write war); the stop leaves that value too."""
    for reassert in ("no", "yes"):
        tag = f"x-{reassert}"
        root = bt.copy_fixture("vm-6.12-nvme-4q", os.path.join(tmp, tag + "-root"))
        first_boot(root)
        kern = os.path.join(root, MODPARAM)
        r = Run(tmp, tag, NVME_POLL.replace("[Manager]\n", f"[Manager]\nReassert={reassert}\n"), exe=emu_arg())
        d = r.start(root, "--devices", "nvme0n1")
        stopped = False
        try:
            m = module_settled(d, "nvme", "poll_queues")
            check(m["state"] == "pending-reset" and (rd(kern) or "").strip() == "1",
                  f"({tag}) start: blkmqd wrote poll_queues 1 ({m})")
            put(root, MODPARAM, "3\n")         # echo 3 > /sys/module/nvme/parameters/poll_queues
            check(r.reload() == 0, f"({tag}) reload after another tool's write")
            m = module_settled(d, "nvme", "poll_queues")
            log = r.log()
            if reassert == "no":
                for step in ("reload", "reload again", "kill -9, start"):
                    if step == "reload again":
                        check(r.reload() == 0, f"({tag}) a second reload")
                    elif step.startswith("kill"):
                        r.kill9_restart()
                    m = module_settled(d, "nvme", "poll_queues")
                    check((rd(kern) or "").strip() == "3", f"({tag}) {step}: the other tool's 3 stays in the kernel")
                    check(m["state"] == "changed-externally" and m["current"] == "3" and "changed externally to 3" in m["note"]
                          and "blkmqd wrote 1" in m["note"], f"({tag}) {step}: modules/nvme/poll_queues changed-externally, "
                          f"naming 3 ({m})")
                    agree(f"{tag} {step}", d, root, ["nvme0n1"], {"nvme/poll_queues": "changed-externally"})
                    mt = d.read("metrics")
                    check(re.search(r'^blkmqd_module_param\{module="nvme",param="poll_queues",current="3",wanted="1",'
                                    r'state="changed-externally"\} 1$', mt, re.M) is not None,
                          f"({tag}) {step}: the metric says changed-externally")
                    if step == "reload":
                        ext = re.search(r"^blkmqd_external_changes_total (\d+)$", mt, re.M)
                        check(ext is not None and ext.group(1) == "1", f"({tag}) blkmqd_external_changes_total counts the "
                              f"record ({ext and ext.group(1)})")
                logs = r.logs()
                check(count(logs, "Module parameter nvme.poll_queues changed externally to 3 (blkmqd wrote 1); leaving it "
                                  "(Reassert=no)") == 1,
                      f"({tag}) one external-change record through two reloads and a restart "
                      f"({[x for x in logs.splitlines() if 'changed externally' in x]})")
                check(count(logs, "Writing \"1\" to module parameter") <= 1 and "rewritten" not in logs,
                      f"({tag}) nothing rewritten")
            else:
                check((rd(kern) or "").strip() == "1" and m["state"] == "pending-reset",
                      f"({tag}) reload: rewritten to 1 (Reassert=yes), pending-reset ({m})")
                check(count(log, "changed externally to 3 (blkmqd wrote 1); rewritten (Reassert=yes)") == 1,
                      f"({tag}) one record of the rewrite")
                check(r.reload() == 0, f"({tag}) a second reload")
                m = module_settled(d, "nvme", "poll_queues")
                check(count(r.log(), "rewritten (Reassert=yes)") == 1 and m["state"] == "pending-reset",
                      f"({tag}) the second reload rewrites nothing: in place ({m['state']})")
                put(root, MODPARAM, "4\n")     # changed again at once: a write war
                check(r.reload() == 0, f"({tag}) reload after the second change")
                m = module_settled(d, "nvme", "poll_queues")
                check((rd(kern) or "").strip() == "4" and m["state"] == "changed-externally" and "write war" in m["note"]
                      and "rewrites it in" in m["note"], f"({tag}) changed again within the backoff: left until it passes ({m})")
                agree(f"{tag} war", d, root, ["nvme0n1"], {"nvme/poll_queues": "changed-externally"})
            r.stop()
            stopped = True
            want = "3" if reassert == "no" else "4"
            logs = r.logs()
            check((rd(kern) or "").strip() == want, f"({tag}) after the stop the other tool's {want} stays "
                  f"({(rd(kern) or '').strip()!r})")
            check("Restored nvme.poll_queues" not in logs and
                  f"Module parameter nvme.poll_queues changed externally to {want} (blkmqd wrote 1); not restoring 0 over it" in logs,
                  f"({tag}) the stop says why it puts nothing back")
        finally:
            if not stopped:
                r.stop()


def case_module_owners(tmp):
    """Issue 28: whose modprobe.d option it is (policies/owners.c, the udev rules' rule: /etc and
    /run are the admin's, /usr/lib and /lib the distribution's). An admin's /etc/modprobe.d file
    setting nvme poll_queues=2 against blkmqd's wish 1: deferred, explained, nothing written (no
    /sys/module write, no zz-blkmqd.conf), the stop leaves all as it was; the same in
    /usr/lib/modprobe.d: corrected (written at runtime and in zz-blkmqd.conf), one warning naming
    the file; a name that sorts after zz-blkmqd.conf ("zzz-nvme.conf": modprobe passes its options
    after blkmqd's, so it wins at the next load) is said in explain, the usual names before it
    ("nvme.conf", "00-nvme.conf") not."""
    for where, name in (("etc", "nvme.conf"), ("usr/lib", "00-nvme.conf"), ("usr/lib", "nvme.conf"), ("usr/lib", "zzz-nvme.conf")):
        tag = f"o-{where.replace('/', '-')}-{name}"
        root = bt.copy_fixture("vm-6.12-nvme-4q", os.path.join(tmp, tag + "-root"))
        first_boot(root)
        os.makedirs(os.path.join(root, "etc/modprobe.d"), exist_ok=True)
        os.makedirs(os.path.join(root, where, "modprobe.d"), exist_ok=True)
        rel = f"{where}/modprobe.d/{name}"
        put(root, rel, "# local\nblacklist foo\noptions nvme-core multipath=N\noptions nvme  poll_queues=2 write_queues=0\n")
        first = snapshot(root)
        kern = os.path.join(root, MODPARAM)
        r = Run(tmp, tag, NVME_POLL, exe=emu_arg())
        d = r.start(root, "--devices", "nvme0n1")
        stopped = False
        try:
            m = module_settled(d, "nvme", "poll_queues")
            explain = d.read("devices", "nvme0n1", "explain")
            log = r.log()
            warned = [x for x in log.splitlines() if f"/{rel}:4" in x and "poll_queues" in x and x.startswith("<4>")]
            if where == "etc":
                check(m["state"] == "deferred" and m["wanted"] == "1" and f"/{rel}:4" in m["note"] and "the admin's choice" in m["note"]
                      and "nothing written" in m["note"], f"({tag}) modules/nvme/poll_queues deferred, naming the file ({m})")
                check((rd(kern) or "").strip() == "0" and modconf(root) == (None, None),
                      f"({tag}) nothing written: the kernel's 0 and no {MODCONF}")
                check(f"module nvme.poll_queues: modprobe.d file /{rel}:4 options nvme poll_queues=2 (the admin's choice) -> "
                      "left to it" in explain and "blkmqd would propose nvme.poll_queues=1" in explain,
                      f"({tag}) explain names the file and what blkmqd would do ({[x for x in explain.splitlines() if 'poll_queues' in x]})")
                check(len(warned) == 1 and "(deferred)" in warned[0], f"({tag}) one warning naming the file ({warned})")
                agree(tag, d, root, ["nvme0n1"], {"nvme/poll_queues": "deferred"})
                check(r.reload() == 0, f"({tag}) reload")
                m = module_settled(d, "nvme", "poll_queues")
                check(m["state"] == "deferred" and (rd(kern) or "").strip() == "0", f"({tag}) reload: still deferred ({m['state']})")
            else:
                check(m["state"] == "pending-reset" and (rd(kern) or "").strip() == "1",
                      f"({tag}) the distribution's default corrected: 1 in the kernel ({m})")
                text, _ = modconf(root)
                check(text is not None and "options nvme poll_queues=1\n" in text, f"({tag}) {MODCONF} written")
                check(f"module nvme.poll_queues: modprobe.d file /{rel}:4 options nvme poll_queues=2 (a distribution default) "
                      "-> corrected to 1" in explain,
                      f"({tag}) explain names the distribution's file ({[x for x in explain.splitlines() if 'poll_queues' in x]})")
                after = "sorts after zz-blkmqd.conf" in explain
                check(after == (name == "zzz-nvme.conf"), f"({tag}) explain says whether the file sorts after zz-blkmqd.conf ({after})")
                check(len(warned) == 1 and "a distribution default" in warned[0] and "writes its own value over it" in warned[0],
                      f"({tag}) one warning naming the file ({warned})")
                agree(tag, d, root, ["nvme0n1"], {"nvme/poll_queues": "pending-reset"})
            r.stop()
            stopped = True
            same_as_first(tag, first, root)
            check((rd(kern) or "").strip() == "0", f"({tag}) after the stop the kernel's 0 is back or was never changed")
        finally:
            if not stopped:
                r.stop()


def main():
    bt.exe_or_exit(why="FUSE mount", tools=())
    tmp = tempfile.mkdtemp(prefix="blkmqd-histories-")
    only = bt.only_cases()
    cases = (("e", case_elevator_names), ("c", case_irq_counts), ("u", case_stale_unsupported),
             ("l", case_elevator_not_loaded), ("m", case_mapping),
             ("n", case_narrow), ("s", case_sequences), ("b", case_module_reboot), ("r", case_module_restore),
             ("x", case_module_external), ("o", case_module_owners), ("t", case_retry_timer))
    try:
        for letter, case in cases:
            if only and letter not in only:
                continue
            print(f"-- ({letter}) {case.__name__}", flush=True)
            try:
                case(tmp)
            except Exception as e:      # a case that raised is a failure, the others still run
                check(False, f"{case.__name__}: {type(e).__name__}: {e}")
    finally:
        subprocess.run(["sh", "-c", f"for m in {tmp}/*/mnt; do umount -l $m 2>/dev/null; done"])
        if not os.environ.get("BLKMQD_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"# kept {tmp}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
