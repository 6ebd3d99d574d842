# SPDX-License-Identifier: GPL-2.0-or-later
"""
Shared helpers of the reliability suite (tests/reliability/, docs/RELIABILITY.md).

- Checks: check() records a failure, finish() prints the tally and returns the exit code.
- PrivateLoops: loop devices this test creates itself in a private number range (LOOP_CTL_ADD
  on /dev/loop-control, far above what `losetup -f` hands out), attached to temp files,
  detached and removed (LOOP_CTL_REMOVE) in cleanup() whatever happened. The daemon is always
  started with --devices naming exactly these, so no other disk is ever touched.
- Daemon: the built blkmqd (optionally under a wrapper such as valgrind) on a temp mount
  point, temp state dir and empty config; stop() SIGTERMs by pid and waits.
- tree_files()/read_file(): every regular file under the mount.

Every wait is a poll with a deadline.
"""

import errno
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
LOOP_CTL_ADD = 0x4C80
LOOP_CTL_REMOVE = 0x4C81

failures = []
n_checks = 0


def check(cond, what):
    global n_checks
    n_checks += 1
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def finish():
    print(f"{n_checks - len(failures)} of {n_checks} checks passed")
    for f in failures:
        print(f"   failed: {f}")
    return 1 if failures else 0


def wait_for(pred, deadline, interval=0.005):
    """Poll pred() until true or deadline seconds passed. Returns (result, elapsed)."""
    t0 = time.monotonic()
    while True:
        r = pred()
        if r or time.monotonic() - t0 > deadline:
            return r, time.monotonic() - t0
        time.sleep(interval)


def sh(*args, check_rc=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: rc {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def skip_reason(exe, need_loops=True):
    """None when the suite can run here, else the reason to skip (exit 77)."""
    if os.geteuid() != 0:
        return "needs root (loop devices, FUSE mount)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if need_loops and (not shutil.which("losetup") or not os.path.exists("/dev/loop-control")):
        return "no losetup or /dev/loop-control"
    if not os.access(exe, os.X_OK):
        return None     # the caller fails on this: a missing build is not a skip
    return None


def udevd_running():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "systemd-udevd":
                        return True
            except OSError:
                pass
    return False


def preflight_uevents():
    """blkmqd listens to udevd's netlink group when /run/udev/control exists. A socket file left
    behind by a udevd that is gone means no hot-plug event ever arrives: say so up front."""
    if os.path.exists("/run/udev/control") and not udevd_running():
        print("WARNING: /run/udev/control exists but no systemd-udevd runs (stale socket left by "
              "an earlier udevd): blkmqd will wait for udevd events that never come, hot-plug "
              "checks will fail", flush=True)
        return False
    return True


class PrivateLoops:
    """n loop devices /dev/loop<base>..<base+n-1> created by this test (LOOP_CTL_ADD)."""

    def __init__(self, tmp, n, size=1 << 20, base_min=700):
        self.tmp = tmp
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
            p = os.path.join(tmp, f"backing-{i}")
            with open(p, "wb") as f:
                f.truncate(size)
            self.backing.append(p)
        wait_for(lambda: all(os.path.exists(f"/dev/{x}") for x in self.names), 5.0)

    def globs(self):
        return ",".join(self.names)

    def attach(self, i):
        name = self.names[i]
        sh("losetup", f"/dev/{name}", self.backing[i])
        self.attached.add(name)
        return name

    def detach(self, i):
        name = self.names[i]
        # the kernel may still hold the device for a moment (a reader of the block device,
        # a partition scan): retry briefly, then report
        for _ in range(200):
            r = subprocess.run(["losetup", "-d", f"/dev/{name}"], capture_output=True, text=True)
            if r.returncode == 0 or not self.is_attached(i):
                self.attached.discard(name)
                return name
            time.sleep(0.01)
        raise RuntimeError(f"losetup -d /dev/{name}: {r.stderr.strip()}")

    def is_attached(self, i):
        try:
            with open(f"/sys/block/{self.names[i]}/size") as f:
                return int(f.read()) > 0
        except OSError:
            return False

    def cleanup(self):
        for i, name in enumerate(self.names):
            if name in self.attached or self.is_attached(i):
                subprocess.run(["losetup", "-d", f"/dev/{name}"], capture_output=True)
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


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


class Daemon:
    def __init__(self, exe, tmp, wrapper=None):
        self.exe, self.tmp = exe, tmp
        self.wrapper = wrapper or []
        self.mnt = os.path.join(tmp, "mnt")
        self.state = os.path.join(tmp, "state")
        self.conf = os.path.join(tmp, "blkmqd.conf")
        os.makedirs(self.mnt, exist_ok=True)
        if not os.path.exists(self.conf):
            open(self.conf, "w").close()
        self.proc = None
        self.n = 0
        self.log = None

    def start(self, *args, deadline=15.0, extra=()):
        self.n += 1
        self.log = os.path.join(self.tmp, f"blkmqd-{self.n}.log")
        self.logf = open(self.log, "w")
        cmd = [*self.wrapper, self.exe, "--mountpoint", self.mnt, "--state-dir", self.state,
               "--config", self.conf, "-v", *args]
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def ready():
            if self.proc.poll() is not None:
                return True
            if not mounted(self.mnt):
                return False
            try:
                with open(os.path.join(self.mnt, "version")) as f:
                    return f.read().startswith("blkmqd ")
            except OSError:
                return False
        ok, t = wait_for(ready, deadline, 0.02)
        if self.proc.poll() is not None:
            raise RuntimeError(f"blkmqd exited with {self.proc.returncode} at start:\n{self.tail()}")
        if not ok:
            raise RuntimeError(f"blkmqd did not mount {self.mnt} within {deadline} s:\n{self.tail()}")
        return t

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, deadline=30.0):
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(deadline)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        self.logf.close()
        if mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
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
        try:
            fd = os.open(self.path(*parts), os.O_WRONLY | os.O_TRUNC)
        except OSError as e:
            return e.errno
        try:
            os.write(fd, (value + "\n").encode())
            return 0
        except OSError as e:
            return e.errno
        finally:
            os.close(fd)


def fuse_conn_id(mnt):
    """The FUSE connection number of the mount at mnt (its st_dev minor), from mountinfo."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            x = line.split()
            if x[4] == mnt:
                return int(x[2].split(":")[1])
    return None


def abort_fuse(mnt, tmp):
    """Abort the FUSE connection of our own mount (fusectl mounted on a temp dir): the way out
    of a hung daemon, so a hang fails the test instead of blocking it."""
    conn = fuse_conn_id(mnt)
    if conn is None:
        return False
    ctl = os.path.join(tmp, "fusectl")
    os.makedirs(ctl, exist_ok=True)
    if subprocess.run(["mount", "-t", "fusectl", "none", ctl], capture_output=True).returncode != 0:
        return False
    try:
        with open(os.path.join(ctl, str(conn), "abort"), "w") as f:
            f.write("1")
        return True
    except OSError:
        return False
    finally:
        subprocess.run(["umount", "-l", ctl], capture_output=True)


def kernel_stack(pid):
    try:
        with open(f"/proc/{pid}/stack") as f:
            return f.read()
    except OSError:
        return ""


class HangWatch:
    """Calls on_hang() once when progress() has not been called for `limit` seconds."""

    def __init__(self, limit, on_hang):
        import threading
        self.limit, self.on_hang = limit, on_hang
        self.last = time.monotonic()
        self.hung = False
        self.done = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def progress(self):
        self.last = time.monotonic()

    def run(self):
        while not self.done.wait(0.5):
            if time.monotonic() - self.last > self.limit:
                self.hung = True
                self.on_hang()
                return

    def stop(self):
        self.done.set()


def tree_files(root):
    out = []
    for d, _, files in os.walk(root):
        out.extend(os.path.join(d, f) for f in files)
    return sorted(out)


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


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main_wrapper(body, need_loops=True):
    """Common entry: argv[1] = blkmqd; skip/fail rules; temp dir removed at the end."""
    exe = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BLKMQD", "./build/blkmqd")
    why = skip_reason(exe, need_loops)
    if why:
        print(f"SKIP: {why}")
        return SKIP
    if not os.access(exe, os.X_OK):
        print(f"FAIL: {exe} is not an executable")
        return 1
    tmp = tempfile.mkdtemp(prefix="blkmqd-rel-")
    try:
        r = body(os.path.abspath(exe), tmp, sys.argv[2:])
        if r == SKIP:
            return SKIP
    except Exception as e:
        import traceback
        traceback.print_exc()
        check(False, f"raised {type(e).__name__}: {e}")
    finally:
        mnt = os.path.join(tmp, "mnt")
        if os.path.isdir(mnt) and mounted(mnt):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        if os.environ.get("BLKMQD_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish()
