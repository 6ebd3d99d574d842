#!/bin/sh
# Issue 12 item 4: the udev path measured in the full-distro VM (tests/vm/distro.py):
# bench/reaction.py (uevent of a loop attach -> elevator write done; blkmqd alone, the same
# write by a udev rule, blkmqd behind udevd) on a Debian 12 userspace booted with systemd.
# reaction.py starts its own systemd-udevd (the image's, systemd 252) in a private mount
# namespace, so the system's udevd is stopped for the run. Each attach follows 0.25 s of quiet on
# the device (reaction.py --gap; back to back it would fall into blkmqd's coalescing window of the
# previous detach, lib/debounce.h). Timings, not assertions:
#   tests/vm/distro.py run --kernel 6.12 --scenario bench/vm-udev-path.sh --build build -v
# smp: 2
# mem: 1024
# timeout: 900
# file: ../../bench/reaction.py:/opt/bench/reaction.py
# file: ../../tests/pylib/blkmqd_test.py:/opt/tests/pylib/blkmqd_test.py
. /opt/vmtest/guest-lib.sh
note "kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime)s, date $(date -u +%FT%TZ)"
udevadm settle --timeout=60 || true
systemctl stop systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-udevd.service
modprobe loop
python3 /opt/bench/reaction.py --blkmqd /usr/sbin/blkmqd -n "${BENCH_N:-200}" 2>&1 | sed 's/^/# /'
pass "reaction.py ran"
