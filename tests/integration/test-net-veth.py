#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-net-veth.py BLKMQD CAPTURE

Issue 15 on this machine's real kernel, without a VM: network facts through libnl from a
network namespace the test creates (veth pair, 10.77.0.1/24 on vbA), then the built daemon on
a fixture whose netlink answers are that live capture.

  (n) blkmqd-net-capture in the namespace: RTM_GETROUTE 10.77.0.2 -> vbA with its source
      address; vbA and vbB are links of kind veth, each other's IFLA_LINK; loopback has
      IFF_LOOPBACK; ethtool channels of vbA through the genl family, and the same numbers through
      the SIOCETHTOOL ioctl when the family is hidden (BLKMQD_TEST_NO_ETHTOOL_NETLINK=1, as on a
      kernel before 5.6); lo answers EOPNOTSUPP.
  (v) the daemon (--root) on a copy of tests/fixtures/vm-6.12-nvme-tcp-2q whose netlink/facts is
      the live capture and whose sys/class/net/vbA is the live one's attributes (no parent
      device): devices/nvme0c0n1/network/interface vbA, alignment "not applicable: vbA is
      virtual", nics/vbA/virtual "1: ...", explain (rule net-align-virtual), nothing of the NIC
      written, the metrics family with state="not-applicable".

The namespace is removed whatever happens. Root, ip (iproute2), /dev/fuse; skipped otherwise,
and when blkmqd was built without libnl.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, wait_for  # noqa: E402

NS = f"blkmqd-net-{os.getpid()}"


def ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True)


def in_ns(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["ip", "netns", "exec", NS, *args], capture_output=True, text=True, env=e)


def record(lines, kind, **match):
    """The first '<kind> k=v ...' line whose keys match, as a dict; None when none."""
    for line in lines:
        words = line.split()
        if not words or words[0] != kind:
            continue
        kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if all(kv.get(k) == v for k, v in match.items()):
            return kv
    return None


def case_n_capture(capture):
    """(n) live netlink facts of a veth pair in a namespace"""
    r = in_ns(capture, "10.77.0.2")
    check(r.returncode == 0, f"(n) capture runs: rc {r.returncode} {r.stderr.strip()}")
    lines = r.stdout.splitlines()
    route = record(lines, "route", dst="10.77.0.2")
    check(route is not None and route.get("dev") == "vbA" and route.get("src") == "10.77.0.1",
          f"(n) route to 10.77.0.2 via vbA from 10.77.0.1: {route}")
    a, b, lo = record(lines, "link", ifname="vbA"), record(lines, "link", ifname="vbB"), record(lines, "link", ifname="lo")
    check(a is not None and a.get("kind") == "veth" and b is not None and b.get("kind") == "veth",
          f"(n) vbA and vbB are veth: {a} {b}")
    check(a is not None and b is not None and a.get("link") == b.get("ifindex") and b.get("link") == a.get("ifindex"),
          "(n) each veth's IFLA_LINK is its peer")
    check(route is not None and a is not None and route.get("ifindex") == a.get("ifindex"), "(n) the route's ifindex is vbA's")
    check(lo is not None and int(lo.get("flags", "0"), 16) & 0x8 != 0, f"(n) lo has IFF_LOOPBACK: {lo}")
    nl = record(lines, "channels", ifname="vbA")
    check(nl is not None and nl.get("source") == "ethtool-netlink", f"(n) vbA channels through ethtool netlink: {nl}")
    check(record(lines, "channels", ifname="lo", error="EOPNOTSUPP") is not None, "(n) lo has no channels: EOPNOTSUPP")
    r2 = in_ns(capture, "10.77.0.2", env={"BLKMQD_TEST_NO_ETHTOOL_NETLINK": "1"})
    io = record(r2.stdout.splitlines(), "channels", ifname="vbA")
    check(io is not None and io.get("source") == "ioctl", f"(n) without the genl family: the ioctl: {io}")
    same = nl is not None and io is not None and all(nl[k] == io[k] for k in nl if k != "source")
    check(same, "(n) ioctl and netlink give the same channel counts")
    return r.stdout


copy_fixture = bt.copy_fixture


def case_v_virtual(exe, tmp, facts):
    """(v) the daemon on a fixture routed over the live veth: not applicable, nothing written"""
    root = copy_fixture("vm-6.12-nvme-tcp-2q", os.path.join(tmp, "root"))
    with open(os.path.join(root, "netlink", "facts"), "w") as f:
        f.write(facts)
    # the live vbA's attributes, as sysfs shows a software interface: no device link
    net = os.path.join(root, "sys", "devices", "virtual", "net", "vbA")
    for rel in ("ifindex", "queues/tx-0/xps_cpus", "queues/rx-0/rps_cpus"):
        r = in_ns("cat", f"/sys/class/net/vbA/{rel}")
        os.makedirs(os.path.dirname(os.path.join(net, rel)), exist_ok=True)
        with open(os.path.join(net, rel), "w") as f:
            f.write(r.stdout)
    os.symlink("../../devices/virtual/net/vbA", os.path.join(root, "sys", "class", "net", "vbA"))
    irq_before = {n: open(os.path.join(root, f"proc/irq/{n}/smp_affinity_list")).read() for n in (25, 26, 27, 28)}

    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    d = bt.Daemon(exe, mnt, tmp, start_deadline=30.0, stop_deadline=30.0, unmount_on_stop=True)
    d.start("--root", root, "--devices", "nvme0c0n1")
    try:
        netf = lambda f: d.read("devices", "nvme0c0n1", "network", f)     # noqa: E731
        ok, _ = wait_for(lambda: os.path.exists(d.path("devices", "nvme0c0n1", "network", "alignment")), 10.0)
        check(ok, "(v) devices/nvme0c0n1/network/ exists")
        check(netf("interface") == "vbA\n", f"(v) interface {netf('interface')!r}")
        check(netf("traddr") == "10.77.0.2\n", f"(v) traddr {netf('traddr')!r}")
        a = netf("alignment")
        check(a.startswith("not applicable: vbA is virtual: a software interface (veth)"), f"(v) alignment {a!r}")
        v = d.read("nics", "vbA", "virtual")
        check(v.startswith("1: a software interface (veth)"), f"(v) nics/vbA/virtual {v!r}")
        check(d.read("nics", "vbA", "disks") == "nvme0c0n1\n", "(v) nics/vbA/disks names the disk")
        ex = d.read("devices", "nvme0c0n1", "explain")
        check("(rule net-align-virtual)" in ex, "(v) explain names rule net-align-virtual")
        check(d.read("devices", "nvme0c0n1", "plan", "nic_irq_affinity") == "keep\n", "(v) plan/nic_irq_affinity keep")
        check(d.read("devices", "nvme0c0n1", "plan", "xps") == "keep\n", "(v) plan/xps keep")
        check(d.read("devices", "nvme0c0n1", "applied", "nr_io_queues").startswith("unmanaged"),
              "(v) no nr_io_queues proposal over a virtual NIC")
        m = d.read("metrics")
        check('blkmqd_net_alignment{device="nvme0c0n1",transport="tcp",interface="vbA",nic="vbA",state="not-applicable"} 1' in m,
              "(v) metrics: blkmqd_net_alignment state not-applicable")
    finally:
        d.stop()
    irq_after = {n: open(os.path.join(root, f"proc/irq/{n}/smp_affinity_list")).read() for n in (25, 26, 27, 28)}
    check(irq_after == irq_before, "(v) the virtio NIC vectors of the fixture untouched")
    xps = open(os.path.join(net, "queues/tx-0/xps_cpus")).read()
    r = in_ns("cat", "/sys/class/net/vbA/queues/tx-0/xps_cpus")
    check(xps == r.stdout, "(v) vbA's XPS untouched")


def main():
    exe = bt.exe_arg()
    capture = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(exe), "tests", "blkmqd-net-capture")
    why = bt.skip_reason("network namespace, FUSE mount", tools=("ip",))
    if why:
        return bt.skip_all(why)
    probe = subprocess.run([capture], capture_output=True, text=True)
    if probe.returncode == bt.SKIP:         # blkmqd-net-capture's own exit status for it
        return bt.skip_all("blkmqd built without libnl")
    tmp = tempfile.mkdtemp(prefix="blkmqd-net-")
    try:
        ip("netns", "add", NS)
        ip("-n", NS, "link", "add", "vbA", "type", "veth", "peer", "name", "vbB")
        ip("-n", NS, "addr", "add", "10.77.0.1/24", "dev", "vbA")
        for dev in ("lo", "vbA", "vbB"):
            ip("-n", NS, "link", "set", dev, "up")
        print("== " + case_n_capture.__doc__.strip())
        facts = case_n_capture(capture)
        print("== " + case_v_virtual.__doc__.strip())
        case_v_virtual(exe, tmp, facts)
    except Exception as e:
        check(False, f"raised {type(e).__name__}: {e}")
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)
        bt.cleanup_mount(os.path.join(tmp, "mnt"))
        shutil.rmtree(tmp, ignore_errors=True)
    check(subprocess.run(["ip", "netns", "pids", NS], capture_output=True).returncode != 0, "namespace removed")
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
