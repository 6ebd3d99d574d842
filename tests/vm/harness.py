#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""blkmqd VM test harness: boot Debian's 6.1 or 6.12 kernel under QEMU/TCG, run one scenario.

    harness.py prepare --cache DIR [--kernel 6.1|6.12|6.1-rt|6.12-rt]
    harness.py run --cache DIR --scenario tests/vm/scenarios/NAME.sh [--kernel SERIES] [options]

Reusable from other flavours (import harness): kernel_series(), resolve_kernel_package(),
fetch_kernel() (.deb download + vmlinux), stage_modules() (module subset, decompressed,
depmod'ed), prepare() (the busybox flavour's cached parts).

Python 3 standard library only.  See docs/VM-HARNESS.md for the scenario header format,
the serial-console protocol (end marker, @@HMP requests) and measured wall times.

Output of `run` on stdout: TAP (meson's `protocol : 'tap'`), the scenario's own test points
and plan as guest-lib.sh printed them on the console, every other console line of the
scenario's run as a TAP comment; a missing host prerequisite is the plan "1..0 # SKIP why".
Exit codes: 0 when the scenario passed or skipped (the skip is told by TAP), 1 when a check
failed, the scenario's own status when it aborted, 99 when the VM never reported an end
marker (two timeouts, QEMU crash, kernel panic; "Bail out!" on stdout).
"""

import argparse
import gzip
import hashlib
import io
import json
import lzma
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.environ.get("BLKMQD_VM_CACHE", "/var/tmp/blkmqd-vm-cache")
PREPARE_VERSION = 4          # bump when the layout of the cached parts changes

EXIT_SKIP = 77
EXIT_HARD = 99

END_RE = re.compile(r"^@@BLKMQD-VMTEST-END rc=(\d+)@@\s*$")
# The full-distro flavour's scenario asked for a reboot (guest-lib.sh reboot_guest): the guest
# shuts down in order and QEMU (-no-reboot) exits at the reset; tests/vm/distro.py boots the
# same root again.
REBOOT_RE = re.compile(r"^@@BLKMQD-VMTEST-REBOOT rc=(\d+)@@\s*$")
REBOOTED = "rebooted"       # run_once()'s reason when the guest rebooted after REBOOT_RE
HMP_RE = re.compile(r"^@@HMP (\d+) (.+?)\s*$")
# A 6.x guest under multi-threaded TCG dies now and then of "Oops: int3" at a jump-label site:
# the kernel patches its text (arch/x86/kernel/alternative.c text_poke_bp_batch(): int3 first,
# then the new bytes, then a sync IPI) and a vCPU still runs the translated block holding the
# int3 after the handler's patch list is gone.  Seen 3 times in a few hundred boots (6.12:
# sched_clock_tick at 6 s, sched_clock_cpu in the initcalls, __alloc_pages_noprof during an
# `ethtool -L` of the nvme-tcp scenario).  No user-space action makes an int3 trap in kernel
# text; it is the emulator's, and the boot is retried wherever it happened.
TEXT_POKE_RE = re.compile(r"\bOops: int3\b")
TEXT_POKE_RACE = "kernel text-patch race under TCG (Oops: int3 in kernel text)"


def retry_boot(reason, start):
    """Whether a boot that ended without an end marker for REASON (run_once()'s), its scenario
    started at START (None: never), is tried again: a hang, a death before the scenario started,
    and the emulator's text-patch race anywhere.  Any other crash after the START marker is the
    scenario's and is reported."""
    return reason.startswith("timeout") or start is None or reason == TEXT_POKE_RACE

# Modules packed into the base initramfs (their dependencies are added automatically).
MODULES = [
    "null_blk", "scsi_debug", "virtio_scsi", "virtio_blk", "virtio_pci", "sd_mod", "sg",
    "bfq", "kyber-iosched", "nvme", "nvme-core", "fuse", "configfs", "loop",
    "9p", "9pnet_virtio", "crct10dif_generic",
]
# Network block devices (issue 15): virtio-net NICs, the nvme-tcp initiator and the nvmet-tcp
# target (both in the guest: the nvme-tcp scenario puts the target behind a second NIC in a
# guest network namespace), nbd (the nbd scenario's disk; its server is qemu-nbd, packed), the
# iSCSI initiator (iscsi_tcp; iscsid and iscsiadm are packed) and the LIO target (iscsi_target_mod
# with the iblock backstore, and crc32c_generic: its login allocates a crc32c hash whether or not
# digests are negotiated, iscsi_login_setup_crypto()) for the iscsi scenario.  Kept apart from MODULES because distro.py
# hashes MODULES into its cache key; the busybox base's cache key hashes both.
NET_MODULES = ["virtio_net", "nvme-tcp", "nvme-fabrics", "nvmet", "nvmet-tcp", "8021q", "bonding", "nbd",
               "iscsi_tcp", "iscsi_target_mod", "target_core_iblock", "crc32c_generic"]
# Request-based and bio-based dm-multipath maps built with dmsetup (the dm-multipath scenario;
# dm-mod comes as their dependency).  Apart from MODULES for the same reason as NET_MODULES.
DM_MODULES = ["dm-multipath", "dm-round-robin"]
# USB storage behind QEMU's xHCI controller (the usb scenario): the controller's PCI driver and
# both storage drivers, BOT (usb-storage) and UAS (usbcore, usb-common and xhci-hcd come as their
# dependencies).  Apart from MODULES for the same reason as NET_MODULES.
USB_MODULES = ["xhci-pci", "usb-storage", "uas"]
# Loaded by /init on every boot (null_blk and scsi_debug are left to scenarios: they take
# load-time parameters).
BOOT_MODULES = ["configfs", "fuse", "virtio_pci", "virtio_scsi", "virtio_blk", "sd_mod",
                "nvme", "loop"]

QEMU = "qemu-system-x86_64"
BUSYBOX_CANDIDATES = ["/bin/busybox", "/usr/bin/busybox"]
FUSERMOUNT = "/usr/bin/fusermount3"


class Missing(Exception):
    """A host prerequisite is missing: report it and exit 77."""


def log(msg):
    print("harness: " + msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- cpio (newc)

class Cpio:
    """Minimal writer for the kernel's initramfs format (newc, no CRC)."""

    def __init__(self):
        self.entries = {}        # guest path (no leading /) -> (mode, data, rdev)

    def _parents(self, path):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.entries:
                self.entries[d] = (stat.S_IFDIR | 0o755, b"", (0, 0))

    def add_dir(self, path, mode=0o755):
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = (stat.S_IFDIR | mode, b"", (0, 0))

    def add_file(self, path, data, mode=0o644):
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = (stat.S_IFREG | mode, data, (0, 0))

    def add_symlink(self, path, target):
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = (stat.S_IFLNK | 0o777, target.encode(), (0, 0))

    def add_chardev(self, path, major, minor, mode=0o600):
        path = path.strip("/")
        self._parents(path)
        self.entries[path] = (stat.S_IFCHR | mode, b"", (major, minor))

    def add_host_file(self, host, guest=None):
        guest = guest or host
        st = os.stat(host)
        with open(host, "rb") as f:
            self.add_file(guest, f.read(), stat.S_IMODE(st.st_mode))

    def has(self, path):
        return path.strip("/") in self.entries

    def write(self, fileobj):
        out = fileobj
        ino = 1

        def pad(n):
            return b"\0" * ((4 - n % 4) % 4)

        def entry(name, mode, data, rdev, nlink):
            nonlocal ino
            nb = name.encode() + b"\0"
            hdr = "070701" + "".join("%08X" % v for v in (
                ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(nb), 0))
            ino += 1
            out.write(hdr.encode() + nb + pad(110 + len(nb)))
            out.write(data + pad(len(data)))

        # parents first (sorted order guarantees that for path prefixes)
        for name in sorted(self.entries):
            mode, data, rdev = self.entries[name]
            entry(name, mode, data, rdev, 2 if stat.S_ISDIR(mode) else 1)
        entry("TRAILER!!!", 0, b"", (0, 0), 1)

    def write_gz(self, path, level=6):
        tmp = path + ".tmp"
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=level, mtime=0) as gz:
                self.write(gz)
        os.replace(tmp, path)


def guest_path(host_path):
    """Where a host file lands in the guest: its directory with symlinks resolved (the guest
    has the same merged-/usr layout: /lib -> usr/lib, /bin -> usr/bin, /sbin -> usr/sbin)."""
    d, b = os.path.split(os.path.abspath(host_path))
    return os.path.join(os.path.realpath(d), b)


def ldd_closure(binary):
    """Shared libraries a dynamically linked host binary needs (absolute host paths)."""
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise Missing("ldd (package libc-bin)")
    libs = []
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"\S+ => (/\S+) \(", line) or re.match(r"(/\S+) \(", line)
        if m:
            libs.append(m.group(1))
    return libs


def add_binary(cpio, host, guest=None):
    """Pack a host binary (at `guest`, default the same path) and its ldd closure."""
    if not os.path.exists(host):
        raise Missing(host)
    cpio.add_host_file(host, guest or guest_path(host))
    for lib in ldd_closure(host):
        g = guest_path(lib)
        if not cpio.has(g):
            cpio.add_host_file(os.path.realpath(lib), g)
            # also register the name as the loader looks it up via /lib -> usr/lib
    return cpio


# --------------------------------------------------------------------------- prepare

def sh(cmd, **kw):
    """Run cmd (check=True); its output goes to stderr unless the caller takes it: stdout
    is the TAP stream of the test that called us (mke2fs says "Creating regular file")."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    if "stdout" not in kw and "capture_output" not in kw:
        kw["stdout"] = sys.stderr
    return subprocess.run(cmd, check=True, **kw)


# Kernel series the harness can boot: Debian 12's own kernel and the 6.12 backport that
# bookworm-security carries (linux-image-6.12.*+deb12-amd64), each also in its PREEMPT_RT
# flavour ("6.1-rt": linux-image-6.1.0-*-rt-amd64, "6.12-rt": linux-image-6.12.*+deb12-rt-amd64;
# same sources, CONFIG_PREEMPT_RT=y, /sys/kernel/realtime reads 1).  The package is resolved
# with apt-cache (newest with an install candidate) and fetched with `apt-get download`; it is
# never installed on the host.
KERNELS = ("6.1", "6.12", "6.1-rt", "6.12-rt")
DEFAULT_KERNEL = os.environ.get("BLKMQD_VM_KERNEL", "6.1")


def kernel_series(value):
    """Validate a --kernel / `# kernel:` / $BLKMQD_VM_KERNEL value (one of KERNELS)."""
    v = (value or DEFAULT_KERNEL).strip()
    if v not in KERNELS:
        raise ValueError("unknown kernel series %r (known: %s)" % (v, ", ".join(KERNELS)))
    return v


def _apt_candidates(names):
    """{package: candidate version} for the names that have an install candidate."""
    out = subprocess.run(["apt-cache", "policy"] + names, capture_output=True,
                         text=True).stdout
    cand, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^(\S+):$", line)
        if m:
            cur = m.group(1)
            continue
        m = re.match(r"^\s+Candidate:\s*(\S+)", line)
        if m and cur and m.group(1) != "(none)":
            cand[cur] = m.group(1)
    return cand


def resolve_kernel_package(series=None):
    """Debian package name of the kernel to boot for `series`.  Overrides: $BLKMQD_VM_KERNEL_PKG
    for 6.1 (as before), else $BLKMQD_VM_KERNEL_PKG_<series, . and - as _> (6_12, 6_1_RT,
    6_12_RT).  Raises Missing when apt knows no such package (no apt lists: run apt-get update)."""
    series = kernel_series(series)
    base, rt = series[:-3] if series.endswith("-rt") else series, series.endswith("-rt")
    flavour = "rt-amd64" if rt else "amd64"
    override = os.environ.get("BLKMQD_VM_KERNEL_PKG" if series == "6.1" else
                              "BLKMQD_VM_KERNEL_PKG_" +
                              series.replace(".", "_").replace("-", "_").upper())
    if override:
        return override
    try:
        if base == "6.1":
            meta = "linux-image-" + flavour
            out = subprocess.run(["apt-cache", "depends", meta],
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                m = re.match(r"\s*Depends:\s*(linux-image-6\.1\.0-[0-9]+-%s)\s*$"
                             % re.escape(flavour), line)
                if m:
                    return m.group(1)
            raise Missing("a linux-image-6.1.0-*-%s package (apt-cache depends "
                          "%s names none; run apt-get update?)" % (flavour, meta))
        # 6.12: bookworm-security, one package per upload: take the newest installable one
        out = subprocess.run(["apt-cache", "pkgnames", "linux-image-%s." % base],
                             capture_output=True, text=True).stdout
        rx = re.compile(r"^linux-image-%s\.([0-9]+)\+deb12-%s$"
                        % (re.escape(base), re.escape(flavour)))
        names = sorted((n for n in out.split() if rx.match(n)),
                       key=lambda n: int(rx.match(n).group(1)))
        cand = _apt_candidates(names) if names else {}
        for n in reversed(names):
            if n in cand:
                return n
    except FileNotFoundError:
        raise Missing("apt-cache (cannot resolve the %s kernel package)" % series)
    raise Missing("a linux-image-%s.*+deb12-%s package (bookworm-security; "
                  "apt-cache policy 'linux-image-%s*' lists none installable: add "
                  "bookworm-security to the apt sources and run apt-get update)"
                  % (base, flavour, base))


def extract_vmlinux(vmlinuz, out):
    """Find the compressed payload in a bzImage and decompress it to an ELF vmlinux."""
    data = open(vmlinuz, "rb").read()
    tried = []
    for name, magic in (("xz", b"\xfd7zXZ\x00"), ("zstd", b"\x28\xb5\x2f\xfd"),
                        ("gzip", b"\x1f\x8b\x08")):
        pos = data.find(magic)
        while pos >= 0:
            try:
                if name == "xz":
                    d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
                    elf = d.decompress(data[pos:])
                elif name == "gzip":
                    d = __import__("zlib").decompressobj(31)
                    elf = d.decompress(data[pos:])
                else:
                    if not shutil.which("zstd"):
                        tried.append("zstd payload but no zstd binary")
                        break
                    elf = subprocess.run(["zstd", "-dc"], input=data[pos:],
                                         capture_output=True).stdout
                if elf[:4] == b"\x7fELF":
                    with open(out + ".tmp", "wb") as f:
                        f.write(elf)
                    os.replace(out + ".tmp", out)
                    return name
            except Exception as e:  # not a real stream at this offset; keep looking
                tried.append("%s@%d: %s" % (name, pos, e))
            pos = data.find(magic, pos + 1)
    raise RuntimeError("no ELF payload found in %s (%s)" % (vmlinuz, "; ".join(tried[:5])))


MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")   # 6.1: plain; 6.12: .ko.xz


def _module_name(fname):
    for suf in MODULE_SUFFIXES[::-1]:
        if fname.endswith(suf):
            return fname[:-len(suf)].replace("-", "_")
    return None


def module_closure(kroot, kver, names):
    """Map module names to module files (relative to lib/modules/KVER, .ko or compressed)
    with their dependencies; built-in ones (modules.builtin) are dropped."""
    mdir = os.path.join(kroot, "lib/modules", kver)
    builtin = set()
    bfile = os.path.join(mdir, "modules.builtin")
    if os.path.exists(bfile):
        for line in open(bfile):
            builtin.add(_module_name(os.path.basename(line.strip())))
    index = {}
    for dp, _, files in os.walk(os.path.join(mdir, "kernel")):
        for f in files:
            n = _module_name(f)
            if n:
                index[n] = os.path.relpath(os.path.join(dp, f), mdir)
    todo = [n.replace("-", "_") for n in names]
    seen = {}
    while todo:
        n = todo.pop()
        if n in seen or n in builtin:
            continue
        if n not in index:
            log("module %s: not found (built in or absent), skipped" % n)
            seen[n] = None
            continue
        seen[n] = index[n]
        deps = subprocess.run(["modinfo", "-F", "depends", os.path.join(mdir, index[n])],
                              capture_output=True, text=True).stdout.strip()
        todo += [d.replace("-", "_") for d in deps.split(",") if d]
    return mdir, sorted(v for v in seen.values() if v)


def decompress_module(src, dst):
    """Copy one module file to dst (a path ending in .ko), decompressing .xz/.gz/.zst: busybox
    modprobe/insmod need not understand compressed modules, and the kernel's own
    decompression (CONFIG_MODULE_DECOMPRESS) is not in every config."""
    if src.endswith(".xz"):
        data = lzma.decompress(open(src, "rb").read())
    elif src.endswith(".gz"):
        data = gzip.decompress(open(src, "rb").read())
    elif src.endswith(".zst"):
        if not shutil.which("zstd"):
            raise Missing("zstd (zstd-compressed kernel modules)")
        data = subprocess.run(["zstd", "-dc", src], capture_output=True, check=True).stdout
    else:
        shutil.copy2(src, dst)
        return
    with open(dst, "wb") as f:
        f.write(data)


def stage_modules(kroot, kver, names, dest):
    """Put `names` and their dependencies, decompressed, under DEST/lib/modules/KVER/ with
    modules.builtin*/modules.order and a fresh `depmod -b DEST` index.  Returns the list of
    staged paths relative to that directory.  (Also for other harness flavours.)"""
    mdir, kos = module_closure(kroot, kver, names)
    sdir = os.path.join(dest, "lib/modules", kver)
    staged = []
    for ko in kos:
        rel = ko
        for suf in (".xz", ".gz", ".zst"):
            if rel.endswith(".ko" + suf):
                rel = rel[:-len(suf)]
        os.makedirs(os.path.dirname(os.path.join(sdir, rel)), exist_ok=True)
        decompress_module(os.path.join(mdir, ko), os.path.join(sdir, rel))
        staged.append(rel)
    for f in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        if os.path.exists(os.path.join(mdir, f)):
            shutil.copy2(os.path.join(mdir, f), os.path.join(sdir, f))
    sh(["depmod", "-b", dest, kver])
    return staged


def fetch_kernel(cache, series=None):
    """Download (once) the Debian kernel package of `series` into CACHE/debs, unpack it into a
    temporary tree and extract the ELF vmlinux into CACHE/kernel-SERIES/.  Returns
    (info, kroot): info = {"series", "package", "deb", "kver", "vmlinux"} (absolute paths),
    kroot = the unpacked package (lib/modules/KVER, boot/config-KVER); the caller removes
    kroot when done (shutil.rmtree).  Never installs anything on the host."""
    series = kernel_series(series)
    pkg = resolve_kernel_package(series)
    debdir = os.path.join(cache, "debs")
    os.makedirs(debdir, exist_ok=True)
    debs = [f for f in os.listdir(debdir) if f.startswith(pkg + "_") and f.endswith(".deb")]
    if not debs:
        r = subprocess.run(["apt-get", "download", pkg], cwd=debdir, capture_output=True,
                           text=True)
        debs = [f for f in os.listdir(debdir) if f.startswith(pkg + "_") and f.endswith(".deb")]
        if r.returncode != 0 or not debs:
            raise Missing("kernel package %s could not be downloaded: %s"
                          % (pkg, (r.stderr or r.stdout).strip().splitlines()[-1:]))
    deb = os.path.join(debdir, sorted(debs)[-1])
    kdir = os.path.join(cache, "kernel-" + series)
    os.makedirs(kdir, exist_ok=True)
    kroot = tempfile.mkdtemp(prefix="kernel-root-", dir=cache)
    sh(["dpkg", "-x", deb, kroot])
    kvers = os.listdir(os.path.join(kroot, "lib/modules"))
    if len(kvers) != 1:
        raise RuntimeError("expected one kernel in %s, found %s" % (deb, kvers))
    kver = kvers[0]
    vmlinux = os.path.join(kdir, "vmlinux-" + kver)
    if not os.path.exists(vmlinux):
        codec = extract_vmlinux(os.path.join(kroot, "boot", "vmlinuz-" + kver), vmlinux)
        log("vmlinux extracted (%s payload), %d MB" % (codec, os.path.getsize(vmlinux) >> 20))
    cfg = os.path.join(kroot, "boot", "config-" + kver)
    if os.path.exists(cfg):
        shutil.copy2(cfg, os.path.join(kdir, "config-" + kver))
    return ({"series": series, "package": pkg, "deb": deb, "kver": kver,
             "vmlinux": vmlinux}, kroot)


# The scenario's run between the markers run_once() reads, the same in the busybox /init below
# and in the full-distro flavour's run-scenario (distro.py); each powers off after it its way.
RUN_MARKED = r"""echo "@@BLKMQD-VMTEST-START uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r) cpus=$(nproc)@@"
cd /tmp
sh -e /opt/vmtest/scenario.sh </dev/null
rc=$?
echo "@@BLKMQD-VMTEST-END rc=$rc@@"
sync
"""

INIT = r"""#!/bin/sh
# /init of the blkmqd VM test initramfs (generated by tests/vm/harness.py)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm /run /tmp /mnt/host /root
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
. /opt/vmtest/env
for m in $VMTEST_BOOT_MODULES; do
    [ -d "/sys/module/$(echo "$m" | tr - _)" ] || modprobe "$m" || echo "init: modprobe $m failed"
done
mount -t configfs configfs /sys/kernel/config
[ -c /dev/fuse ] || mknod -m 0666 /dev/fuse c 10 229
echo /sbin/modprobe > /proc/sys/kernel/modprobe 2>/dev/null
stty -F /dev/ttyS0 -echo -icrnl 2>/dev/null
if [ -n "$VMTEST_SHARE" ]; then
    modprobe 9pnet_virtio && modprobe 9p &&
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /mnt/host ||
    echo "init: 9p share mount failed"
fi
if [ -n "$VMTEST_UDEV" ]; then
    /lib/systemd/systemd-udevd --daemon --resolve-names=never 2>/dev/null
    udevadm trigger --action=add --type=subsystems
    udevadm trigger --action=add --type=devices
    udevadm settle --timeout=30
fi
""" + RUN_MARKED + r"""poweroff -f
sleep 5
"""


def base_key():
    """Cache key of the busybox base part: layout version and module list."""
    return hashlib.sha256(json.dumps([PREPARE_VERSION, MODULES, NET_MODULES, DM_MODULES, USB_MODULES])
                          .encode()).hexdigest()[:12]


def prepare(cache, force=False, kernel=None):
    """Download, unpack and build the cached pieces for one kernel series (default
    $BLKMQD_VM_KERNEL or 6.1); idempotent and serialised by a lock (parallel test runs share
    one cache).  Returns the state dict: {"series", "package", "kver", "vmlinux", "parts":
    {"base", "fio"?, "udev"?}} with paths relative to CACHE.  Layout:
    CACHE/debs/*.deb, CACHE/kernel-SERIES/{state-KEY.json,vmlinux-KVER,config-KVER,base-KEY.cpio.gz},
    CACHE/common/{fio,udev}.cpio.gz (kernel-independent)."""
    series = kernel_series(kernel)
    os.makedirs(cache, exist_ok=True)
    import fcntl
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _prepare(cache, force, series)


def _prepare(cache, force, series):
    kdir = os.path.join(cache, "kernel-" + series)
    # The state and the base part are named after what goes into them, so worktrees with a
    # different module list or layout share one cache without rebuilding each other's parts.
    state_file = os.path.join(kdir, "state-%s.json" % base_key())
    st = json.load(open(state_file)) if os.path.exists(state_file) else {}
    try:
        pkg = resolve_kernel_package(series)
    except Missing:
        if not st.get("package"):
            raise
        pkg = st["package"]          # offline / no apt lists: keep using the cached kernel
    if not force and st:
        if (st.get("version") == PREPARE_VERSION and st.get("package") == pkg
                and all(os.path.exists(os.path.join(cache, p))
                        for p in [st["vmlinux"]] + list(st["parts"].values()))):
            return st

    missing = []
    if not shutil.which(QEMU):
        missing.append("%s (apt-get install qemu-system-x86)" % QEMU)
    busybox = next((b for b in BUSYBOX_CANDIDATES if os.path.exists(b)), None)
    if busybox is None or b"ld-linux" in open(busybox, "rb").read(4096):
        missing.append("a static busybox (apt-get install busybox-static)")
    for tool, pkgname in (("depmod", "kmod"), ("modinfo", "kmod"), ("dpkg", "dpkg"),
                          ("apt-get", "apt")):
        if not shutil.which(tool):
            missing.append("%s (package %s)" % (tool, pkgname))
    if missing:
        raise Missing(", ".join(missing))

    t0 = time.time()
    info, kroot = fetch_kernel(cache, series)
    try:
        st = _prepare_parts(cache, force, info, kroot, busybox)
    finally:
        shutil.rmtree(kroot)        # the modules and vmlinux we need are cached; save 400 MB
    os.makedirs(kdir, exist_ok=True)
    with open(state_file + ".tmp", "w") as f:
        json.dump(st, f, indent=1)
    os.replace(state_file + ".tmp", state_file)
    log("prepare done in %.1f s: kernel %s" % (time.time() - t0, st["kver"]))
    return st


def _prepare_parts(cache, force, info, kroot, busybox):
    kver, series = info["kver"], info["series"]
    # ---- base: busybox + modules + /dev/console
    base = Cpio()
    for d, t in (("lib", "usr/lib"), ("lib64", "usr/lib64"), ("bin", "usr/bin"),
                 ("sbin", "usr/sbin")):
        base.add_dir("usr/" + d.replace("lib64", "lib64"))
        base.add_symlink(d, t)
    for d in ("proc", "sys", "dev", "run", "tmp", "mnt/host", "root", "etc", "opt", "var/tmp"):
        base.add_dir(d)
    base.add_chardev("dev/console", 5, 1)
    base.add_chardev("dev/null", 1, 3, 0o666)
    base.add_chardev("dev/ttyS0", 4, 64)
    base.add_host_file(busybox, "usr/bin/busybox")
    applets = subprocess.run([busybox, "--list-full"], capture_output=True,
                             text=True).stdout.split()
    for a in applets:
        g = guest_path("/" + a)
        if g != "/usr/bin/busybox" and not base.has(g):
            base.add_symlink(g, "/usr/bin/busybox")
    base.add_file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    base.add_file("etc/group", b"root:x:0:\ndisk:x:6:\n")
    base.add_file("etc/mtab", b"")
    base.entries["etc/mtab"] = (stat.S_IFLNK | 0o777, b"/proc/self/mounts", (0, 0))

    stage = tempfile.mkdtemp(prefix="depmod-", dir=cache)
    try:
        kos = stage_modules(kroot, kver, MODULES + NET_MODULES + DM_MODULES + USB_MODULES, stage)
        sdir = os.path.join(stage, "lib/modules", kver)
        for dp, _, files in os.walk(sdir):
            for f in files:
                p = os.path.join(dp, f)
                base.add_host_file(p, "usr/lib/modules/%s/%s" % (kver, os.path.relpath(p, sdir)))
    finally:
        shutil.rmtree(stage)
    log("base: busybox (%d applets), %d modules" % (len(applets), len(kos)))
    parts = {"base": os.path.join("kernel-" + series, "base-%s.cpio.gz" % base_key())}
    base.write_gz(os.path.join(cache, parts["base"]))
    parts.update(_prepare_common(cache, force))
    return {"version": PREPARE_VERSION, "series": series, "package": info["package"],
            "deb": os.path.basename(info["deb"]), "kver": kver,
            "vmlinux": os.path.relpath(info["vmlinux"], cache), "parts": parts}


def _prepare_common(cache, force):
    """The kernel-independent parts (fio, udev), built once for all kernels."""
    cdir = os.path.join(cache, "common")
    os.makedirs(cdir, exist_ok=True)
    parts = {}

    # ---- fio (optional)
    fio = shutil.which("fio")
    if fio:
        c = Cpio()
        parts["fio"] = os.path.join("common", "fio.cpio.gz")
        if force or not os.path.exists(os.path.join(cache, parts["fio"])):
            add_binary(c, fio)
            c.write_gz(os.path.join(cache, parts["fio"]))
    else:
        log("fio not on the host: --fio will be unavailable (apt-get install fio)")

    # ---- udev (optional): udevadm doubles as systemd-udevd (argv[0])
    udevadm = shutil.which("udevadm")
    if udevadm and os.path.isdir("/lib/udev"):
        parts["udev"] = os.path.join("common", "udev.cpio.gz")
        if force or not os.path.exists(os.path.join(cache, parts["udev"])):
            c = Cpio()
            add_binary(c, udevadm)
            c.add_symlink(guest_path("/lib/systemd/systemd-udevd"), guest_path(udevadm))
            for top in ("/lib/udev", "/etc/udev"):
                for dp, dns, files in os.walk(top):
                    for f in files:
                        p = os.path.join(dp, f)
                        g = guest_path(p)
                        if os.path.islink(p):
                            c.add_symlink(g, os.readlink(p))
                            continue
                        c.add_host_file(p, g)
                        if os.access(p, os.X_OK) and open(p, "rb").read(4) == b"\x7fELF":
                            for lib in ldd_closure(p):
                                if not c.has(guest_path(lib)):
                                    c.add_host_file(os.path.realpath(lib), guest_path(lib))
            c.write_gz(os.path.join(cache, parts["udev"]))
    else:
        log("udevadm not on the host: --udev will be unavailable (apt-get install udev)")
    return parts


# --------------------------------------------------------------------------- scenarios

def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMGT]?)i?B?", s.strip(), re.I)
    if not m:
        raise ValueError("bad size %r" % s)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2).upper()]


def parse_header(path):
    """Leading comment block of a scenario: `# key: value` lines.
    Keys: qemu (repeatable, appended), smp, mem, timeout, disk (repeatable: NAME SIZE [ram]),
    needs (fio, udev, share), cmdline (extra kernel args), modules (extra boot modules),
    kernel (one of KERNELS: the series booted unless --kernel says otherwise),
    tap (repeatable: NAME [multi_queue]; a tap device in a network namespace the harness
    creates on the host for this run, all taps of a run on one bridge, QEMU started in it),
    binary (repeatable: HOST[:GUEST] packed with its ldd closure when HOST exists on the host;
    a missing one is only logged, the scenario checks for it and skips what needs it),
    file (repeatable: HOST:GUEST, HOST relative to tests/vm; the full-distro flavour copies it
    into the root before systemd starts, e.g. a udev rule; as [(HOST, GUEST)]),
    boots (the full-distro flavour: boots of one root, default 1; the scenario ends each boot
    but the last with guest-lib.sh's reboot_guest)."""
    h = {"qemu": [], "disk": [], "needs": [], "cmdline": [], "modules": [], "binary": [],
         "tap": [], "file": []}
    with open(path) as f:
        for line in f:
            if line.startswith("#!"):
                continue
            if not line.startswith("#"):
                break
            m = re.match(r"#\s*([a-z-]+):\s*(.*?)\s*$", line)
            if not m:
                continue
            k, v = m.group(1), m.group(2)
            if k in ("qemu", "cmdline"):
                h[k] += shlex.split(v)
            elif k in ("needs", "modules", "binary"):
                h[k] += v.replace(",", " ").split()
            elif k == "disk":
                h["disk"].append(v.split())
            elif k == "tap":
                t = v.split()
                if (not t or not re.fullmatch(r"[a-z][a-z0-9]{0,11}", t[0])
                        or any(o != "multi_queue" for o in t[1:])):
                    raise ValueError("bad '# tap: %s' (NAME [multi_queue])" % v)
                h["tap"].append(t)
            elif k in ("smp", "mem", "timeout", "boots"):
                h[k] = int(v)
            elif k == "kernel":
                h[k] = kernel_series(v)
            elif k == "file":
                m = re.fullmatch(r"(\S+):(\S+)", v)
                if not m:
                    raise ValueError("bad '# file: %s' (HOST:GUEST)" % v)
                h["file"].append((m.group(1), m.group(2)))
    return h


def disk_images(header, tmp):
    """({name: image path}, {name: size}) of the header's disks: sparse files in tmp, or with
    the option `ram` (`# disk: NAME SIZE ram`) in tmp/ram, a tmpfs the harness mounts (the
    disk's data lives in the host's memory: a fast device behind any guest driver). The mount
    goes when remove_disk_images(tmp) runs."""
    disks, sizes = {}, {}
    for d in header["disk"]:
        where = tmp
        if "ram" in d[2:]:
            where = os.path.join(tmp, "ram")
            if not os.path.ismount(where):
                os.makedirs(where, exist_ok=True)
                subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700", "blkmqd-vm-ram", where], check=True)
        disks[d[0]] = os.path.join(where, d[0] + ".img")
        sizes[d[0]] = parse_size(d[1])
    return disks, sizes


def remove_disk_images(tmp):
    """Unmount disk_images()' tmpfs (the caller removes tmp)."""
    ram = os.path.join(tmp, "ram")
    if os.path.ismount(ram):
        subprocess.run(["umount", "-l", ram], capture_output=True)


def substitute(s, disks, tmp):
    def rep(m):
        kind, name = m.group(1), m.group(2)
        if kind == "disk":
            if name not in disks:
                raise KeyError("undeclared disk %r (add '# disk: %s SIZE')" % (name, name))
            return disks[name]
        return tmp
    return re.sub(r"\{(disk|tmp):?([A-Za-z0-9_.-]*)\}", rep, s)


class Monitor:
    """HMP over a unix socket (-monitor unix:SOCK,server,nowait)."""

    PROMPT = b"(qemu) "

    def __init__(self, path, timeout=10):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.time() + timeout
        while True:
            try:
                self.sock.connect(path)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(30)
        self._read_until_prompt()

    def _read_until_prompt(self):
        buf = b""
        while not buf.endswith(self.PROMPT):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("monitor closed")
            buf += chunk
        return buf[:-len(self.PROMPT)]

    def command(self, cmd):
        self.sock.sendall(cmd.encode() + b"\n")
        raw = self._read_until_prompt().decode(errors="replace")
        # The monitor's readline echoes the typed line (with redraw escapes) up to the
        # newline that ends it; the command's output follows.
        _, _, raw = raw.partition("\n")
        raw = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw).replace("\r", "")
        return [l for l in raw.split("\n") if l.strip()]

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def hmp_failed(lines):
    return any(re.search(r"\b(Error|error|Could not|not found|unknown command)\b", l)
               for l in lines)


NETNS_PREFIX = "blkmqd-vm-"


class HostNetns:
    """A private network namespace on the host for one run (`# tap:` lines): the taps, all on
    one bridge `br0`, exist only inside it, QEMU is started in it (`ip netns exec`), and it is
    deleted on every exit path (run()'s finally; SIGTERM/SIGHUP, e.g. meson's timeout, become
    SystemExit in main()).  A namespace left by a harness killed with SIGKILL is removed by the
    next run (name blkmqd-vm-<pid>-<hex>, the pid no longer alive).  Nothing outside the
    namespace is touched: the host's own interfaces never see the guest's traffic."""

    def __init__(self, taps):
        if os.geteuid() != 0:
            raise Missing("root (a host network namespace with tap devices)")
        if not shutil.which("ip"):
            raise Missing("ip (package iproute2)")
        if not os.path.exists("/dev/net/tun"):
            raise Missing("/dev/net/tun (tun driver)")
        self.sweep_stale()
        self.name = "%s%d-%s" % (NETNS_PREFIX, os.getpid(), os.urandom(3).hex())
        r = subprocess.run(["ip", "netns", "add", self.name], capture_output=True, text=True)
        if r.returncode != 0:
            raise Missing("a network namespace (ip netns add: %s)" % r.stderr.strip())
        try:
            self.ip("link", "add", "br0", "type", "bridge")
            for t in taps:
                self.ip("tuntap", "add", "dev", t[0], "mode", "tap", *t[1:])
                self.ip("link", "set", t[0], "master", "br0", "up")
            self.ip("link", "set", "br0", "up")
        except Missing:
            self.delete()
            raise
        log("host netns %s: bridge br0, taps %s" % (self.name, " ".join(t[0] for t in taps)))

    def ip(self, *a):
        r = subprocess.run(["ip", "-n", self.name] + list(a), capture_output=True, text=True)
        if r.returncode != 0:
            raise Missing("ip -n %s %s: %s" % (self.name, " ".join(a), r.stderr.strip()))

    def wrap(self, cmd):
        return ["ip", "netns", "exec", self.name] + cmd

    def delete(self):
        # the taps and the bridge go with the namespace once QEMU (their last user) is gone
        r = subprocess.run(["ip", "netns", "del", self.name], capture_output=True, text=True)
        if r.returncode != 0:
            log("ip netns del %s: %s" % (self.name, r.stderr.strip()))
        else:
            log("host netns %s deleted" % self.name)

    @staticmethod
    def sweep_stale():
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"^(%s(\d+)-[0-9a-f]+)\b" % re.escape(NETNS_PREFIX), line)
            if m and not os.path.exists("/proc/%s" % m.group(2)):
                subprocess.run(["ip", "netns", "del", m.group(1)], capture_output=True)
                log("stale host netns %s (pid %s gone) deleted" % (m.group(1), m.group(2)))


def build_run_cpio(args, header, st):
    c = Cpio()
    env = {
        "VMTEST_SCENARIO": os.path.basename(args.scenario)[:-3] if args.scenario.endswith(".sh")
        else os.path.basename(args.scenario),
        "VMTEST_BOOT_MODULES": " ".join(BOOT_MODULES + header["modules"]),
        "VMTEST_SHARE": "1" if args.share else "",
        "VMTEST_UDEV": "1" if args.udev else "",
        "VMTEST_FIO": "1" if args.fio else "",
        "VMTEST_KERNEL_ONLY": "1" if args.kernel_only else "",
        "VMTEST_KERNEL_SERIES": args.kernel,
        "BLKMQD": "/opt/blkmqd/blkmqd",
        "BLKMQD_MOUNT": "/run/blkmqd",
    }
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v
    c.add_file("opt/vmtest/env", "".join("export %s=%s\n" % (k, shlex.quote(v))
                                         for k, v in sorted(env.items())).encode())
    c.add_file("init", INIT.encode(), 0o755)
    c.add_host_file(os.path.join(HERE, "guest-lib.sh"), "opt/vmtest/guest-lib.sh")
    c.add_host_file(args.scenario, "opt/vmtest/scenario.sh")
    capture = os.path.join(HERE, "..", "fixture", "capture.sh")
    if os.path.exists(capture):
        c.add_host_file(capture, "opt/vmtest/capture.sh")
    if os.path.exists(FUSERMOUNT):
        add_binary(c, FUSERMOUNT)
    for spec in args.binary:
        host, _, guest = spec.partition(":")
        if not os.path.exists(host):
            raise Missing("--binary %s does not exist" % host)
        add_binary(c, os.path.abspath(host), guest or None)
    for spec in header["binary"]:          # optional: the scenario skips what needs them
        host, _, guest = spec.partition(":")
        if os.path.exists(host):
            add_binary(c, os.path.abspath(host), guest or None)
        else:
            log("header binary %s not on the host: not packed" % host)
    return c


def run_once(args, cmd, mon_path, log_f, timeout, disks, tmp, attempt, tap=None, reboot=False,
             label=""):
    """Boot once.  Returns (rc or None if no end marker, reason, wall, scenario start).  The
    scenario's console lines (between the start and end markers) are appended to tap, a list,
    when one is given.  With reboot, a REBOOT_RE line ends the scenario's part of this boot:
    what follows is the guest's shutdown, and QEMU's exit (-no-reboot) within the timeout
    returns (None, REBOOTED, ...)."""
    what = "attempt %d%s" % (attempt, label)
    log("%s: %s" % (what, " ".join(shlex.quote(c) for c in cmd)))
    log_f.write(("\n==== %s: %s\n" % (what, " ".join(cmd))).encode())
    log_f.flush()
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    events = queue.Queue()

    def reader():
        buf = b""
        while True:
            chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else \
                proc.stdout.read(1)
            if not chunk:
                break
            log_f.write(chunk)
            log_f.flush()
            if args.verbose:
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                events.put(("line", line.decode(errors="replace").strip("\r\x00 ")))
        events.put(("eof", None))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    mon = None
    rc, reason, start_seen, rebooting = None, "", None, None
    text_poke = False
    deadline = t0 + timeout
    try:
        while True:
            left = deadline - time.time()
            if left <= 0:
                reason = "timeout after %d s%s" % (timeout, "" if rebooting is None else
                                                   " (shutting down for the reboot since %.1f s)" % rebooting)
                break
            try:
                kind, line = events.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if kind == "eof":
                reason = REBOOTED if rebooting is not None else \
                    TEXT_POKE_RACE if text_poke else "QEMU exited without an end marker"
                break
            if TEXT_POKE_RE.search(line):
                text_poke = True
            if rebooting is not None:
                continue        # the shutdown's console lines (an END from a killed shell too)
            m = REBOOT_RE.match(line) if reboot and start_seen is not None else None
            if m:
                rebooting = time.time() - t0
                log("%s: the guest reboots (its part rc=%s) at %.1f s" % (what, m.group(1), rebooting))
                continue
            if line.startswith("@@BLKMQD-VMTEST-START"):
                start_seen = time.time() - t0
                continue
            m = END_RE.match(line)
            if m:
                rc = int(m.group(1))
                break
            if start_seen is not None and tap is not None and not line.startswith("@@"):
                tap.append(line)
            m = HMP_RE.match(line)
            if m:
                seq, hcmd = m.group(1), substitute(m.group(2), disks, tmp)
                try:
                    if mon is None:
                        mon = Monitor(mon_path)
                    out = mon.command(hcmd)
                    status = 1 if hmp_failed(out) else 0
                except Exception as e:  # report to the guest, do not hang it
                    out, status = ["harness: %s" % e], 2
                log("HMP %s: %s -> %s %s" % (seq, hcmd, status, out))
                reply = "".join("@@HMP-OUT %s %s\n" % (seq, l) for l in out)
                reply += "@@HMP-DONE %s %d\n" % (seq, status)
                log_f.write(("[harness] HMP %s %r -> %d %r\n" % (seq, hcmd, status, out))
                            .encode())
                try:
                    proc.stdin.write(reply.encode())
                    proc.stdin.flush()
                except OSError:
                    pass
    finally:
        if mon:
            mon.close()
        if rc is not None:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()
        th.join(timeout=5)
    wall = time.time() - t0
    log_f.write(("\n==== %s: rc=%s %s wall=%.1fs scenario-start=%.1fs\n"
                 % (what, rc, reason, wall, start_seen or -1)).encode())
    log_f.flush()
    return rc, reason, wall, start_seen


TAP_LINE_RE = re.compile(r"^(ok|not ok)\b|^1\.\.\d+|^#|^Bail out!")


def report_tap(lines, rc):
    """The scenario's TAP on stdout (other console lines as comments); returns the exit status
    for meson: 0 for a pass and for the scenario's own skip (guest-lib.sh's skip_all() made it
    a SKIP point or the plan "1..0 # SKIP"), else rc."""
    for line in lines:
        print(line if TAP_LINE_RE.match(line) else "# console: " + line)
    sys.stdout.flush()
    return 0 if rc in (0, EXIT_SKIP) else rc


def report_hard(reason):
    print("Bail out! %s: no end marker from the VM (console log above, on stderr)" % reason)
    sys.stdout.flush()
    return EXIT_HARD


def run(args):
    if not shutil.which(QEMU):
        raise Missing("%s (apt-get install qemu-system-x86)" % QEMU)
    header = parse_header(args.scenario)
    args.kernel = kernel_series(args.kernel or header.get("kernel"))
    st = prepare(args.cache, kernel=args.kernel)
    for n in header["needs"]:
        if n == "fio":
            args.fio = True
        elif n == "udev":
            args.udev = True
        elif n == "share" and not args.share:
            raise Missing("scenario needs --share HOSTDIR")
    if args.fio and "fio" not in st["parts"]:
        raise Missing("fio (apt-get install fio, then harness.py prepare)")
    if args.udev and "udev" not in st["parts"]:
        raise Missing("udevadm (apt-get install udev, then harness.py prepare)")
    smp = args.smp or header.get("smp") or 2
    mem = args.mem or header.get("mem") or 1024
    timeout = args.timeout or header.get("timeout") or 120

    tmp = tempfile.mkdtemp(prefix="blkmqd-vm-")
    netns = None
    try:
        if header["tap"]:
            netns = HostNetns(header["tap"])
        disks, sizes = disk_images(header, tmp)
        initrd = os.path.join(tmp, "initrd.cpio.gz")
        with open(initrd, "wb") as out:
            names = ["base"] + (["fio"] if args.fio else []) + (["udev"] if args.udev else [])
            for n in names:
                with open(os.path.join(args.cache, st["parts"][n]), "rb") as f:
                    shutil.copyfileobj(f, out)
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1, mtime=0) as gz:
                build_run_cpio(args, header, st).write(gz)
            out.write(buf.getvalue())
        mon_path = os.path.join(tmp, "monitor.sock")
        append = ["console=ttyS0", "panic=-1", "scsi_mod.scan=sync", "quiet",
                  "rdinit=/init"] + header["cmdline"] + shlex.split(args.append or "")
        cmd = [QEMU, "-accel", "tcg,thread=multi", "-cpu", "max", "-M", "q35",
               "-smp", str(smp), "-m", str(mem),
               "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
               "-no-reboot", "-monitor", "unix:%s,server,nowait" % mon_path,
               "-kernel", os.path.join(args.cache, st["vmlinux"]), "-initrd", initrd,
               "-append", " ".join(append)]
        if args.share:
            os.makedirs(args.share, exist_ok=True)
            cmd += ["-virtfs", "local,path=%s,mount_tag=host,security_model=none,id=host"
                    % os.path.abspath(args.share)]
        cmd += [substitute(a, disks, tmp) for a in header["qemu"]]
        cmd += [substitute(a, disks, tmp) for a in shlex.split(args.qemu_extra or "")]
        if netns:
            cmd = netns.wrap(cmd)         # `ip netns exec` execs QEMU: same pid, same group

        log_path = args.log or os.path.join(tmp, "console.log")
        with open(log_path, "wb") as log_f:
            for attempt in (1, 2):
                if os.path.exists(mon_path):
                    os.unlink(mon_path)
                for name, p in disks.items():     # fresh sparse disks for every attempt
                    with open(p, "wb") as f:
                        f.truncate(sizes[name])
                tap = []
                rc, reason, wall, start = run_once(args, cmd, mon_path, log_f, timeout,
                                                   disks, tmp, attempt, tap)
                if rc is not None:
                    log("%s: rc=%d wall=%.1fs (scenario started at %.1fs)"
                        % (os.path.basename(args.scenario), rc, wall, start or -1))
                    return report_tap(tap, rc)
                log("%s: %s (wall %.1fs)" % (os.path.basename(args.scenario), reason, wall))
                if not retry_boot(reason, start):
                    break
        if not args.log:
            # no --log given: keep the console for the post-mortem anyway
            keep = os.path.join(tempfile.gettempdir(),
                                "blkmqd-vm-%s-%d.log" % (os.path.basename(args.scenario),
                                                         os.getpid()))
            shutil.copy(log_path, keep)
            log("console log kept at %s" % keep)
        else:
            log("console log: %s" % log_path)
        with open(log_path, "rb") as f:
            tail = f.read()[-3000:].decode(errors="replace")
        sys.stderr.write("---- console tail ----\n" + tail + "\n----\n")
        return report_hard(reason)
    finally:
        if netns:
            netns.delete()
        remove_disk_images(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="download the kernel, build the cached initramfs parts")
    p.add_argument("--cache", default=DEFAULT_CACHE)
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    p.add_argument("--kernel", choices=KERNELS, default=None,
                   help="kernel series (default $BLKMQD_VM_KERNEL or 6.1)")
    r = sub.add_parser("run", help="boot the VM and run one scenario")
    r.add_argument("--cache", default=DEFAULT_CACHE)
    r.add_argument("--scenario", required=True)
    r.add_argument("--binary", action="append", default=[], metavar="HOST[:GUEST]",
                   help="pack a host binary with its ldd closure (default: same path)")
    r.add_argument("--blkmqd", metavar="PATH",
                   help="shorthand for --binary PATH:/opt/blkmqd/blkmqd")
    r.add_argument("--kernel", choices=KERNELS, default=None,
                   help="kernel series to boot: Debian 12's 6.1 or bookworm-security's 6.12, "
                   "-rt: their PREEMPT_RT flavour (default: the scenario's '# kernel:' line, else $BLKMQD_VM_KERNEL, else 6.1)")
    r.add_argument("--smp", type=int)
    r.add_argument("--mem", type=int)
    r.add_argument("--qemu-extra", help="extra QEMU arguments (shell-quoted string)")
    r.add_argument("--append", help="extra kernel command line")
    r.add_argument("--timeout", type=int, help="wall timeout per boot, seconds")
    r.add_argument("--log", help="keep the full console log here")
    r.add_argument("--udev", action="store_true", help="start systemd-udevd in the guest")
    r.add_argument("--fio", action="store_true", help="pack fio")
    r.add_argument("--share", metavar="HOSTDIR", help="9p share mounted at /mnt/host")
    r.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="export K=V to the scenario")
    r.add_argument("--kernel-only", action="store_true",
                   help="no blkmqd binary is expected: its checks count as skipped, not "
                   "as a reason to exit 77")
    r.add_argument("-v", "--verbose", action="store_true", help="echo the console")
    args = ap.parse_args()

    def terminated(signum, frame):     # meson's timeout: unwind so every finally runs
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    try:
        if args.cmd == "prepare":
            st = prepare(args.cache, args.force, args.kernel)
            print(json.dumps(st, indent=1))
            return 0
        if args.blkmqd:
            args.binary.append(args.blkmqd + ":/opt/blkmqd/blkmqd")
        return run(args)
    except Missing as e:
        if args.cmd == "prepare":
            print("SKIP: missing host prerequisite: %s" % e, file=sys.stderr)
            return EXIT_SKIP
        print("1..0 # SKIP missing host prerequisite: %s" % e)
        return 0


if __name__ == "__main__":
    sys.exit(main())
