# SPDX-License-Identifier: GPL-2.0-or-later
"""
Helpers shared by the Python tests that run the built blkmqd (tests/integration/,
tests/reliability/ through rel.py, tests/ops/) and by the bench/ scripts. Import it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
    import blkmqd_test as bt

(from bench/: "..", "tests", "pylib").

- Checks, reported as TAP (meson's `protocol : 'tap'`, docs/TESTING.md): check() is one test
  point ("ok N - what" / "not ok N - what"), skip() a point that could not be checked here
  ("ok N - what # SKIP why"), skip_all() a test that cannot run here ("1..0 # SKIP why");
  finish() prints the plan and returns the exit code: 1 when a check failed or none ran. Once
  a test has started (preflight(), skip_reason() or its first check), everything else it
  prints is a TAP comment ("# ..."), and its child processes' stdout goes to stderr.
- wait_for(): every wait is a poll with a deadline; stop_process(): signal, wait, SIGKILL after
  the deadline.
- Loops: loop devices attached with `losetup -f` by this test only (the integration suite);
  PrivateLoops: loop devices created in a private number range (loop700 and up, LOOP_CTL_ADD,
  the reliability suite). Both are detached in cleanup whatever happened (call it in finally).
- Daemon: the built blkmqd on a temp mount point, always with a state directory of the
  test's own (never the machine's /var/lib/blkmqd); ready when the version file of a live
  mount reads. The suites' opt-ins are on by default (virtual_args(): a drop-in of the run's
  config): virtual devices (loop, zram, null_blk, ...) are managed ([Manager]
  VirtualDevices=manage), since the suites use loop devices as the disks blkmqd manages, and
  the rotational flag of QEMU's disks in the fixture trees is trusted ([Speed]
  TrustRotational=virtio_blk virtio_scsi device-mapper); Daemon(manage_virtual=False) runs
  blkmqd's shipped defaults.
- run_cases(): the integration suite's loop over cases, each cleaned up after.
"""

import argparse
import errno
import fcntl
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77           # the exit status of a skip for meson's exitcode protocol; under TAP use skip_all()
START_DEADLINE = 10.0
LOOP_CTL_ADD = 0x4C80
LOOP_CTL_REMOVE = 0x4C81

failures = []
checks = 0
points = 0          # TAP test points printed: checks and skips
skips = []          # (what, why) of every skip() point


# ---- checks (TAP) ---------------------------------------------------------------------------

class _TapComments:
    """sys.stdout of a running test: each line written becomes a TAP comment on out."""

    def __init__(self, out):
        self.out, self.buf = out, ""

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.out.write("# " + line + "\n")
        return len(s)

    def flush(self):
        self.out.flush()

    def pending(self):
        """A partial line (print(..., end="")) as a comment of its own, before a TAP point."""
        if self.buf:
            self.out.write("# " + self.buf + "\n")
            self.buf = ""

    def isatty(self):
        return False

    def fileno(self):
        return 2            # a child process handed sys.stdout writes to stderr, as fd 1 does


_tap_out = None


def tap_begin():
    """From here on the TAP stream is this process's original stdout, anything printed becomes
    a comment on it, and child processes write their stdout to stderr. Idempotent; called by
    preflight(), skip_reason() and the first check."""
    global _tap_out
    if _tap_out is not None:
        return
    sys.stdout.flush()
    _tap_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = _TapComments(_tap_out)


def _tap_line(line):
    tap_begin()
    sys.stdout.pending()
    sys.stderr.flush()
    _tap_out.write(line + "\n")
    _tap_out.flush()


def _tap_text(what):
    # one line; a '#' would start a TAP directive ("# SKIP" would turn a check into a skip)
    return " ".join(str(what).split()).replace("#", "\\#")


def check(cond, what):
    """One TAP test point: "ok N - what", or "not ok N - what" (recorded as a failure)."""
    global checks, points
    checks += 1
    points += 1
    _tap_line(("ok" if cond else "not ok") + f" {points} - {_tap_text(what)}")
    if not cond:
        failures.append(what)
    return cond


def skip(what, why):
    """A TAP point for a check that cannot be made here: "ok N - what # SKIP why". meson and
    .ci/run count and name it; .ci/run fails on a skip the CI machine does not allow
    (.ci/allowed-skips)."""
    global points
    points += 1
    skips.append((what, why))
    _tap_line(f"ok {points} - {_tap_text(what)} # SKIP {_tap_text(why)}")


_finished = False


def skip_all(why):
    """The test cannot run here: "1..0 # SKIP why" (meson: SKIP). Returns the exit status
    (0: under TAP a skip is told by the plan). After checks already made, the rest is one
    skip() point and finish() ends the test."""
    global _finished
    if points:
        skip("the rest of the test", why)
        return finish()
    _finished = True
    _tap_line(f"1..0 # SKIP {_tap_text(why)}")
    return 0


def finish(extra=""):
    """Print the tally (and every failure) as comments and the TAP plan; 1 when something
    failed or no check ran at all (a test that checked nothing proves nothing), else 0."""
    global _finished
    if _finished:
        return 1 if failures else 0
    if checks == 0 and not skips:
        check(False, "no check ran")
    print(f"{checks - len(failures)} of {checks} checks passed{extra}"
          + (f", {len(skips)} skipped" if skips else ""))
    for f in failures:
        print(f"   failed: {f}")
    for what, why in skips:
        print(f"   skipped: {what}: {why}")
    _finished = True
    _tap_line(f"1..{points}")
    return 1 if failures else 0


def wait_for(pred, deadline, interval=0.005):
    """Poll pred() until true or deadline seconds passed. Returns (result, elapsed)."""
    t0 = time.monotonic()
    while True:
        r = pred()
        if r or time.monotonic() - t0 > deadline:
            return r, time.monotonic() - t0
        time.sleep(interval)


def stop_process(proc, deadline=10.0, sig=signal.SIGTERM):
    """Send sig to proc when it still runs, wait up to deadline seconds, SIGKILL after it (and
    reap). Returns the exit status (negative: the signal that ended it), None for no proc."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(deadline)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class PipedDaemon:
    """A command (the built blkmqd, possibly under a wrapper such as strace or valgrind) whose
    stdout and stderr come through one non-blocking pipe, for a bench that acts on a log line
    the moment it is written (Daemon's log file is for tests that read it afterwards). Its
    environment is ours without NOTIFY_SOCKET, JOURNAL_STREAM and LISTEN_FDS, so it logs to the
    pipe, not the journal, and notifies no service manager. preexec_fn as subprocess.Popen's."""

    def __init__(self, argv, preexec_fn=None):
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "JOURNAL_STREAM", "LISTEN_FDS")}
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=w, stderr=w, env=env,
                                         preexec_fn=preexec_fn)
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self.fd, self.buf = r, b""
        os.set_blocking(r, False)

    @property
    def pid(self):
        return self.proc.pid

    def fileno(self):
        """The pipe's read end, for select()."""
        return self.fd

    def drain(self):
        """The complete lines written since the last call (decoded, newline stripped; a partial
        last line waits for its end). Never blocks; [] after stop()."""
        if self.fd is None:
            return []
        while True:
            try:
                d = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not d:
                break
            self.buf += d
        *lines, self.buf = self.buf.split(b"\n")
        return [ln.decode(errors="replace") for ln in lines]

    def exited(self):
        """The exit status once the process has ended, else None."""
        return self.proc.poll()

    def stop(self, deadline=10.0):
        """SIGTERM, SIGKILL after deadline seconds (stop_process()), and close the pipe.
        Returns the exit status."""
        rc = stop_process(self.proc, deadline)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return rc


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on (as the kernel hands it out now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid):
    """utime + stime of every thread of pid, in clock ticks (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_ns(pid):
    """Run time of every thread of pid in ns: the scheduler's own accounting (1st field of
    /proc/PID/task/*/schedstat), finer than the 10 ms clock ticks of cpu_ticks(). Threads that
    exited before the call are not counted."""
    ns = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                ns += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return ns


def percentile(vals, q):
    """The q quantile (0 to 1) of vals, nearest rank; nan when vals is empty."""
    s = sorted(vals)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def sh(*args, check_rc=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: rc {r.returncode}: {r.stderr.strip()}")
    return r.stdout


# ---- files ----------------------------------------------------------------------------------

def read_text(path):
    with open(path) as f:
        return f.read()


def read_all(path):
    """Whole content as bytes (several read() calls, like cat)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def timed_reads(files, n=None, stop=None):
    """Open, read to the end and close files round robin, each timed, until n reads were made
    or the threading.Event stop is set. Returns (the latencies in seconds in reading order,
    the errors as "path: error")."""
    lat, errors = [], []
    i = 0
    while (n is None or len(lat) < n) and not (stop and stop.is_set()):
        p = files[i % len(files)]
        i += 1
        t = time.monotonic()
        try:
            with open(p, "rb") as f:
                f.read()
        except OSError as e:
            errors.append(f"{p}: {e}")
        lat.append(time.monotonic() - t)
    return lat, errors


def write_file(path, data, offset=0):
    """open(O_WRONLY|O_TRUNC) like echo, then one write(); returns 0 or the errno."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except OSError as e:
        return e.errno
    try:
        if offset:
            os.pwrite(fd, data, offset)
        else:
            os.write(fd, data)
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def put_rel(root, rel, text):
    """Write text to root/rel (a tree's file), making its directories first."""
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


def current_elevator(disk):
    for tok in read_text(f"/sys/block/{disk}/queue/scheduler").split():
        if tok.startswith("["):
            return tok.strip("[]")
    return None


def set_elevator(disk, name):
    with open(f"/sys/block/{disk}/queue/scheduler", "w") as f:
        f.write(name)


# ---- mounts ---------------------------------------------------------------------------------

def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def mount_ready(mnt):
    """A mount at mnt whose version file really reads: a dead mount left by kill -9 still
    answers stat() from the kernel's caches but fails reads with ENOTCONN (mount ids are no
    proof: the kernel reuses the id of a detached mount)."""
    if not mounted(mnt):
        return False
    try:
        with open(os.path.join(mnt, "version")) as f:
            return f.read().startswith("blkmqd ")
    except OSError:
        return False


def cleanup_mount(mnt):
    if mounted(mnt):
        subprocess.run(["umount", "-l", mnt], capture_output=True)


# ---- loop devices ---------------------------------------------------------------------------

def make_backing(path, size):
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def loop_attached(name):
    try:
        with open(f"/sys/block/{name}/size") as f:
            return int(f.read()) > 0
    except OSError:
        return False


def loop_detach(name, tries=200):
    """losetup -d; the kernel may still hold the device for a moment (a reader of the block
    device, a partition scan): retried briefly. True when it is detached."""
    for _ in range(tries):
        r = subprocess.run(["losetup", "-d", f"/dev/{name}"], capture_output=True, text=True)
        if r.returncode == 0 or not loop_attached(name):
            return True
        time.sleep(0.01)
    return False


class Loops:
    """Loop devices attached (losetup -f) by this test only; detach_all() in finally."""

    def __init__(self, tmp, size=32 << 20):
        self.tmp, self.size = tmp, size
        self.attached = []      # names ("loop5")
        self.originals = {}     # name -> elevator at attach time, restored before detaching

    def backing(self, tag):
        return make_backing(os.path.join(self.tmp, f"backing-{tag}-{len(self.attached)}"), self.size)

    def attach(self, tag="x", elevator=None):
        """A new loop device, its elevator none (the original detach_all() puts back), then
        elevator when given."""
        dev = sh("losetup", "-f", "--show", self.backing(tag)).strip()
        name = os.path.basename(dev)
        self.attached.append(name)
        # A loop device's queue outlives a detach: an elevator an earlier (crashed) run left
        # on it would change what blkmqd decides. Start from the kernel's default for a new
        # loop device (none: single hctx, no shared tags), as on a fresh machine.
        if current_elevator(name) != "none":
            set_elevator(name, "none")
        self.originals[name] = "none"
        if elevator:
            set_elevator(name, elevator)
        return name

    def attach_predicted(self, tag="x"):
        """The next free name, before attaching (for --devices naming it exactly). Returns (name, attach_fn)."""
        dev = sh("losetup", "-f").strip()
        name = os.path.basename(dev)
        path = self.backing(tag)

        def do_attach():
            sh("losetup", dev, path)
            self.attached.append(name)
            if current_elevator(name) != "none":       # as in attach()
                set_elevator(name, "none")
            self.originals[name] = "none"
            return name
        return name, do_attach

    def detach(self, name):
        loop_detach(name, tries=1)
        if name in self.attached:
            self.attached.remove(name)

    def detach_all(self):
        for name in list(self.attached):
            orig = self.originals.get(name)
            try:
                if orig and current_elevator(name) != orig:
                    set_elevator(name, orig)
            except OSError:
                pass
            if not loop_detach(name):
                print(f"WARNING: losetup -d /dev/{name} failed", flush=True)
            if name in self.attached:
                self.attached.remove(name)


class PrivateLoops:
    """n loop devices /dev/loop<base>..<base+n-1> created by this test (LOOP_CTL_ADD on
    /dev/loop-control, base from base_min up, far above what `losetup -f` hands out),
    attached to temp files (with losetup_args, e.g. --direct-io=on); cleanup() detaches and
    removes them (LOOP_CTL_REMOVE)."""

    def __init__(self, tmp, n, size=1 << 20, base_min=700, losetup_args=()):
        self.tmp = tmp
        self.losetup_args = list(losetup_args)
        self.names = []
        self.attached = set()
        self.backing = []
        self._created = []
        ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        try:
            base = base_min
            while any(os.path.exists(f"/sys/block/loop{base + i}") for i in range(n)):
                base += n
                if base > 1 << 19:
                    raise RuntimeError("no free private loop range")
            for i in range(n):
                fcntl.ioctl(ctl, LOOP_CTL_ADD, base + i)
                self._created.append(base + i)
                self.names.append(f"loop{base + i}")
        finally:
            os.close(ctl)
        for i in range(n):
            self.backing.append(make_backing(os.path.join(tmp, f"backing-{i}"), size))
        wait_for(lambda: all(os.path.exists(f"/dev/{x}") for x in self.names), 5.0)

    def globs(self):
        return ",".join(self.names)

    def attach(self, i):
        name = self.names[i]
        sh("losetup", *self.losetup_args, f"/dev/{name}", self.backing[i])
        self.attached.add(name)
        return name

    def detach(self, i):
        name = self.names[i]
        if not loop_detach(name):
            raise RuntimeError(f"losetup -d /dev/{name} failed")
        self.attached.discard(name)
        return name

    def is_attached(self, i):
        return loop_attached(self.names[i])

    def cleanup(self):
        for i, name in enumerate(self.names):
            if name in self.attached or self.is_attached(i):
                loop_detach(name, tries=1)
        try:
            ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return
        try:
            for nr in self._created:
                for _ in range(100):
                    try:
                        fcntl.ioctl(ctl, LOOP_CTL_REMOVE, nr)
                        break
                    except OSError as e:
                        if e.errno != errno.EBUSY:
                            break
                        time.sleep(0.02)
        finally:
            os.close(ctl)


# ---- the daemon -----------------------------------------------------------------------------

SUITE_DROPIN = "00-blkmqd-test-suite.conf"
SUITE_DROPIN_TEXT = ("# tests/pylib/blkmqd_test.py: the suites manage the loop devices they attach, and QEMU's\n"
                     "# disks in the fixture trees stand in for the media their rotational flags say\n"
                     "[Manager]\nVirtualDevices=manage\n"
                     "[Speed]\nTrustRotational=virtio_blk virtio_scsi device-mapper\n")


def virtual_args(args, workdir, manage=True):
    """args for a blkmqd command line with the suites' opt-ins (manage) or blkmqd's shipped
    defaults (not manage): the drop-in <config>.d/SUITE_DROPIN (SUITE_DROPIN_TEXT) next to the
    config the arguments name (-c/--config), else next to workdir/blkmqd-test.conf, made empty
    and added as --config (a test never reads the machine's /etc/blkmqd). Without manage the
    drop-in is removed. A later drop-in or reload keeps it; the config's own VirtualDevices= or
    TrustRotational= loses to it. Returns the new argument list."""
    args = list(args)
    conf = None
    for i, a in enumerate(args):
        if a in ("-c", "--config") and i + 1 < len(args):
            conf = args[i + 1]
        elif a.startswith("--config="):
            conf = a[len("--config="):]
    if conf is None:
        conf = os.path.join(workdir, "blkmqd-test.conf")
        if not os.path.exists(conf):
            open(conf, "w").close()
        args += ["--config", conf]
    dropin = os.path.join(conf + ".d", SUITE_DROPIN)
    if manage:
        os.makedirs(conf + ".d", exist_ok=True)
        with open(dropin, "w") as f:
            f.write(SUITE_DROPIN_TEXT)
    elif os.path.exists(dropin):
        os.unlink(dropin)
    return args


class Daemon:
    """The built blkmqd (optionally under a wrapper such as valgrind) on mnt; log files
    logdir/blkmqd-<n>.log, state in logdir/state, the config given (else an empty one of its
    own) with virtual devices opted in unless manage_virtual is false (virtual_args())."""

    def __init__(self, exe, mnt, logdir, wrapper=(), config=None, start_deadline=START_DEADLINE,
                 stop_deadline=10.0, interval=0.005, unmount_on_stop=False, announce=False,
                 manage_virtual=True):
        self.exe, self.mnt, self.logdir = exe, mnt, logdir
        self.wrapper = list(wrapper or ())
        self.state = os.path.join(logdir, "state")
        self.config = config
        self.start_deadline, self.stop_deadline, self.interval = start_deadline, stop_deadline, interval
        self.unmount_on_stop, self.announce = unmount_on_stop, announce
        self.manage_virtual = manage_virtual
        self.proc = None
        self.n = 0
        self.log = None

    def start(self, *args, deadline=None):
        """Start with args; returns the seconds until the mount was ready. Raises RuntimeError
        when blkmqd exits or does not mount within the deadline."""
        deadline = deadline or self.start_deadline
        self.n += 1
        self.log = os.path.join(self.logdir, f"blkmqd-{self.n}.log")
        self.logf = open(self.log, "w")
        cmd = [*self.wrapper, self.exe, "--mountpoint", self.mnt, "--state-dir", self.state,
               *virtual_args([*(["--config", self.config] if self.config else []), "-v", *args],
                             self.logdir, self.manage_virtual)]
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        ok, t = wait_for(lambda: self.proc.poll() is not None or mount_ready(self.mnt), deadline, self.interval)
        if self.proc.poll() is not None:
            raise RuntimeError(f"blkmqd exited with {self.proc.returncode} at start:\n{self.tail()}")
        if not ok:
            raise RuntimeError(f"blkmqd did not mount {self.mnt} within {deadline} s:\n{self.tail()}")
        # The "started" line is logged right after the mount (manager_ready_check()): wait for it,
        # so that a test counting log lines from here on never counts it.
        wait_for(lambda: self.proc.poll() is not None or " started: " in self.tail(400), deadline, self.interval)
        if self.announce:
            print(f"   blkmqd {' '.join(args)}: mounted after {t * 1000:.0f} ms")
        return t

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, deadline=None):
        """Signal, wait (SIGKILL after the deadline); returns the exit status."""
        if not self.proc:
            return None
        rc = stop_process(self.proc, deadline or self.stop_deadline, sig)
        self.proc = None
        self.logf.close()
        if self.unmount_on_stop:
            cleanup_mount(self.mnt)
        return rc

    def tail(self, n=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except (OSError, TypeError):
            return ""

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def read(self, *parts):
        with open(self.path(*parts)) as f:
            return f.read()

    def write(self, value, *parts):
        """echo VALUE > file: one write(). Returns 0 or the errno."""
        return write_file(self.path(*parts), (value + "\n").encode())


def forget_state(tmp, kind="*"):
    """Remove the files a Daemon on tmp keeps in its state directory (tmp/state/KIND/*; KIND
    such as "overrides", every kind by default): a run_cases() before_case, so that each case
    starts as on a new machine."""
    for p in glob.glob(os.path.join(tmp, "state", kind, "*")):
        os.unlink(p)


def start_with_config(d, tmp, devices, conf_text="", *extra):
    """d.start() on --devices DEVICES with tmp/blkmqd.conf holding conf_text (and extra arguments)."""
    conf = os.path.join(tmp, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    return d.start("--devices", devices, "-c", conf, *extra)


# ---- fixture copies -------------------------------------------------------------------------

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
CAPTURE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixture", "capture.sh"))


def copy_fixture(name, dst):
    """A copy of tests/fixtures/NAME at dst, its empty directories and modes put back
    (capture.sh --restore-tree): a --root for blkmqd whose writes land in the copy. Returns dst."""
    shutil.copytree(os.path.join(FIXTURES, name), dst, symlinks=True)
    subprocess.run(["sh", CAPTURE, "--restore-tree", dst], capture_output=True, check=True)
    return dst


def config_daemon(tmp, tag, conf_text):
    """A Daemon (not started) in tmp/TAG (mount point tmp/TAG/mnt) with tmp/TAG/blkmqd.conf
    holding conf_text, 30 s to start and to stop, unmounted when stopped: the daemon of a
    case that runs blkmqd on a fixture copy (--root)."""
    rdir = os.path.join(tmp, tag)
    os.makedirs(os.path.join(rdir, "mnt"))
    conf = os.path.join(rdir, "blkmqd.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    return Daemon(exe_arg(), os.path.join(rdir, "mnt"), rdir, config=conf, start_deadline=30.0,
                  stop_deadline=30.0, unmount_on_stop=True)


def nvme_irq_daemon(tmp, tag):
    """The nvme IRQ set-up of the drift and read tests: a copy of vm-6.1-nvme-4q at
    tmp/nvme-root-TAG and a config_daemon() in tmp/TAG whose config places nvme0n1's four
    queue vectors (IRQs 25-28) on CPUs 1-2 with the periodic verify off (VerifySec=0).
    Returns (root, daemon); start it with d.start("--root", root, "--devices", "nvme0n1")."""
    root = copy_fixture("vm-6.1-nvme-4q", os.path.join(tmp, "nvme-root-" + tag))
    return root, config_daemon(tmp, tag, "[Manager]\nVerifySec=0\n[Device:nvme]\nMatchName=nvme0n1\nIrqAffinity=1-2\n")


# ---- metrics --------------------------------------------------------------------------------

METRICS_DOC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                            "docs", "METRICS.md"))


def parse_exposition(text):
    """{family: (type, set of label names)} of a text exposition (format 0.0.4)."""
    import re
    fams = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            fams.setdefault(m.group(1), [m.group(2), set()])[0] = m.group(2)
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$", line)
        if not m:
            fams.setdefault("(unparsed)", ["", set()])[1].add(line)
            continue
        names = set(re.findall(r'(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"', m.group(2) or ""))
        fams.setdefault(m.group(1), ["untyped", set()])[1].update(names)
    return {k: (v[0], v[1]) for k, v in fams.items()}


def metrics_doc():
    """{family: (type, set of label names)} of the table in docs/METRICS.md."""
    import re
    doc = {}
    for line in open(METRICS_DOC):
        m = re.match(r"\| `(blkmqd_\w+)` \| (\w+) \|([^|]*)\|", line)
        if m:
            doc[m.group(1)] = (m.group(2), set(re.findall(r"`(\w+)`", m.group(3))))
    return doc


def metrics_doc_problems(text):
    """What of an exposition docs/METRICS.md does not say: one string per family whose
    name, type or label names are not those of its row. Empty when the exposition agrees."""
    doc = metrics_doc()
    out = []
    for fam, (typ, labels) in sorted(parse_exposition(text).items()):
        if fam not in doc:
            out.append(f"{fam} ({typ}, labels {sorted(labels)}) is not in docs/METRICS.md")
        elif doc[fam][0] != typ or labels != doc[fam][1]:
            out.append(f"{fam}: exported as {typ} with labels {sorted(labels)}, "
                       f"docs/METRICS.md says {doc[fam][0]} with {sorted(doc[fam][1])}")
    return out


# ---- running a suite ------------------------------------------------------------------------

def walk_rel(top):
    """(path relative to top, path) of every directory, file and symlink below top (os.walk)."""
    for root, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(root, n)
            yield os.path.relpath(p, top), p


def bench_parser(doc, quick_help="the smallest settings, for CI"):
    """The argparse parser of a bench/ script: doc as its description, --blkmqd (default
    $BLKMQD, else build/blkmqd) and --quick; the script adds its own options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blkmqd", default=os.environ.get("BLKMQD", "build/blkmqd"))
    ap.add_argument("--quick", action="store_true", help=quick_help)
    return ap


def exe_arg():
    """argv[1], else $BLKMQD, else ./build/blkmqd."""
    return sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BLKMQD", "./build/blkmqd")


def skip_reason(why="loop devices, FUSE mount", tools=("losetup",), files=()):
    """None when the test can run here, else the reason to skip (skip_all())."""
    tap_begin()
    if os.geteuid() != 0:
        return f"needs root ({why})"
    for p in ("/dev/fuse", *files):
        if not os.path.exists(p):
            return f"no {p}"
    for tool in tools:
        if not shutil.which(tool):
            return f"no {tool}"
    return None


def preflight(exe, why="loop devices, FUSE mount", tools=("losetup",), files=()):
    """None when the test can run here, else its exit code: 0 after skip_all() with the reason,
    or 1 when exe is not an executable (a missing build is no skip)."""
    reason = skip_reason(why, tools, files)
    if reason:
        return skip_all(reason)
    if not os.access(exe, os.X_OK):
        check(False, f"{exe} is an executable")
        return finish()
    return None


def exe_or_exit(why="loop devices, FUSE mount", tools=("losetup",), files=()):
    """exe_arg() when the test can run here (preflight()), else sys.exit() with preflight()'s code."""
    exe = exe_arg()
    rc = preflight(exe, why, tools, files)
    if rc is not None:
        sys.exit(rc)
    return exe


def only_cases():
    """The case letters $BLKMQD_CASES names (a comma list, e.g. "h,k"), or None: every case."""
    only = os.environ.get("BLKMQD_CASES")
    return only.split(",") if only else None


def selected(cases):
    """The cases (functions named case_<letter>_...) $BLKMQD_CASES leaves in."""
    only = only_cases()
    return [c for c in cases if not only or c.__name__.split("_")[1] in only]


def run_tmp_cases(prefix, cases, only=None):
    """Each (name, case) of cases, unless only (a list of names) leaves it out: case(tmp) in a
    temp dir of its own (prefix), removed after whatever happened; a case that raises is a failure."""
    for name, case in cases:
        if only and name not in only:
            continue
        tmp = tempfile.mkdtemp(prefix=prefix)
        try:
            print(f"== {case.__doc__.strip().splitlines()[0]}")
            case(tmp)
        except Exception as e:              # a broken case must not stop the cleanup or the others
            check(False, f"{case.__name__} raised {type(e).__name__}: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def run_suite(prefix, cases, tmp_cases=(), why="loop devices, FUSE mount", tools=("losetup",), before_case=None):
    """The main() of a suite of cases (run_cases(), each case(d, loops, tmp), before_case(tmp)
    before each) and of cases on a temp dir (run_tmp_cases(), (letter, case(tmp)) pairs, in a
    dir prefix + "fx-"), both as $BLKMQD_CASES selects; then checks that the machine's own
    disk vda (when there is one) kept its elevator. Exits when the test cannot run here
    (exe_or_exit()), else returns finish()."""
    exe = exe_or_exit(why, tools)
    vda_before = current_elevator("vda") if os.path.exists("/sys/block/vda") else None
    run_cases(exe, prefix, selected(cases), before_case=before_case)
    run_tmp_cases(prefix + "fx-", tmp_cases, only_cases())
    if vda_before:
        check(current_elevator("vda") == vda_before, "vda untouched")
    return finish()


def run_cases(exe, prefix, cases, before_case=None, show_log_line=lambda line: True):
    """Each case(d, loops, tmp) in turn on one Daemon and Loops in a temp dir (prefix); after
    every case, whatever happened: the daemon stopped, the mount removed, the loops detached,
    and the daemon log shown once something has failed. before_case(tmp) runs before each."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    loops = Loops(tmp)
    d = Daemon(exe, mnt, tmp, announce=True)
    try:
        for case in cases:
            print(f"== {case.__doc__.strip().splitlines()[0]}")
            if before_case:
                before_case(tmp)
            try:
                case(d, loops, tmp)
            except Exception as e:          # a broken case must not stop the cleanup or the others
                check(False, f"{case.__name__} raised {type(e).__name__}: {e}")
            finally:
                if d.alive():
                    d.stop()
                cleanup_mount(mnt)
                loops.detach_all()
                if failures and d.n:
                    log = [line for line in d.tail().splitlines() if show_log_line(line)]
                    if log:
                        print("   last daemon log:\n" + "".join("      " + line + "\n" for line in log))
    finally:
        if d.alive():
            d.stop(signal.SIGKILL)
        cleanup_mount(mnt)
        loops.detach_all()
        shutil.rmtree(tmp, ignore_errors=True)
