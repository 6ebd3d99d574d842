#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""lane.py LOCKFILE COMMAND [ARG...]: run COMMAND holding an exclusive flock(2) on LOCKFILE.

A lane is a set of tests that must not run at the same time as each other but may run next to
any other test (docs/TESTING.md "Order and lanes"): the host lane (the tests that share this
machine's loop devices, uevents and FUSE mounts: integration, umockdev, reliability, package,
part of ops, bench) and the distro lane (the full-distro VM boots, which starve each other).
meson's `is_parallel : false` would instead drain every running test first and run the test
alone, so a long VM boot in one slot would idle the other slot for its whole length.

The lock is taken before COMMAND starts and held by the inherited descriptor until COMMAND
exits (exec, no child of ours in between: its exit status, signals and stdout are meson's).
The wait is said on stderr only (stdout is the test's TAP). meson's timeout counts the wait
too; the lanes' tests add the lane's longest test to their timeouts (meson.build).
"""
import fcntl
import os
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: lane.py LOCKFILE COMMAND [ARG...]\n")
        return 2
    path, cmd = sys.argv[1], sys.argv[2:]
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    t0 = time.monotonic()
    fcntl.flock(fd, fcntl.LOCK_EX)
    waited = time.monotonic() - t0
    if waited >= 1:
        sys.stderr.write("lane %s: waited %.1f s for the test before it\n"
                         % (os.path.basename(path), waited))
        sys.stderr.flush()
    os.set_inheritable(fd, True)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        sys.stderr.write("lane.py: cannot run %s: %s\n" % (cmd[0], e.strerror))
        return 127


if __name__ == "__main__":
    sys.exit(main())
