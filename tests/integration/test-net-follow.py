#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-net-follow.py BLKMQD

Network facts follow the NIC while blkmqd runs, the way the periodic verify (VerifySec=1) sees a
change no notification reports: the daemon (--root) on copies of VM captures whose netlink
answers and sysfs are changed behind its back, as the kernel changes them.

  (f) tests/fixtures/vm-6.12-nvme-tcp-spare (4 I/O queues over 2 of the NIC's 4 channels), the
      NIC's vectors first on CPU 0: blkmqd places them and recommends ethtool -L eth0 combined 4;
      then the NIC runs 4 channels (netlink/facts, queues tx-2/tx-3, virtio-net's placement:
      queue i on CPU i): the disk is gathered again ("Network facts changed (periodic verify)"),
      network/channels says 4, alignment aligned, recommended none, no NIC write after the
      change and none at stop (the driver's placement is not blkmqd's to put back).
  (b) tests/fixtures/vm-6.12-nvme-tcp-bond (bond0 active-backup over eth0, active, and eth2),
      both ports' vectors on CPU 0: eth0 placed; a failover (bonding/active_slave eth2): eth2
      placed, eth0 put back; mode 802.3ad (xmit_hash_policy layer3+4): alignment unknown with the
      mode and the policy, eth2 put back; stop writes nothing more.

Root, /dev/fuse; exit 77 otherwise, and when blkmqd was built without libnl.
"""

import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check, wait_for  # noqa: E402

DISK = "nvme0c0n1"
CONF = "[Manager]\nVerifySec=1\n"
ETH0 = "sys/devices/pci0000:00/0000:00:02.0/virtio1/net/eth0"


put = bt.put_rel


def get(root, rel):
    with open(os.path.join(root, rel)) as f:
        return f.read().strip()


def nic_writes(d, since=0):
    """The NIC writes (vector affinity, XPS) blkmqd logged after line since, as (path, value)."""
    with open(d.log, errors="replace") as f:
        lines = f.readlines()[since:]
    return [(m.group(2), m.group(1)) for m in (re.search(r'Writing "([^"]*)" to "((?:irq/\d+/smp_affinity_list|class/net/\S+/xps_cpus))"', l)
                                              for l in lines) if m]


def log_len(d):
    with open(d.log, errors="replace") as f:
        return len(f.readlines())


def start(tmp, tag, fixture):
    root = bt.copy_fixture(fixture, os.path.join(tmp, tag + "-root"))
    d = bt.config_daemon(tmp, tag, CONF)
    return root, d


def net(d, f):
    return d.read("devices", DISK, "network", f).strip()


def case_f_follow(tmp):
    """(f) the NIC raised from 2 to 4 channels while blkmqd runs: gathered again, aligned, nothing written"""
    root, d = start(tmp, "f", "vm-6.12-nvme-tcp-spare")
    for irq in (25, 26, 27, 28):
        put(root, f"proc/irq/{irq}/smp_affinity_list", "0\n")
    d.start("--root", root, "--devices", DISK)
    try:
        if net(d, "interface").startswith("unavailable: built without libnl"):
            return "blkmqd built without libnl"
        ok, _ = wait_for(lambda: d.read("devices", DISK, "applied", "nic_irq_affinity").startswith("ok: "), 10.0, 0.05)
        check(ok, f"(f) placed on 2 channels: {d.read('devices', DISK, 'applied', 'nic_irq_affinity')!r}")
        check([get(root, f"proc/irq/{i}/smp_affinity_list") for i in (25, 26, 27, 28)] == ["0-1", "0-1", "2-3", "2-3"],
              "(f) the kernel has the placement")
        rec = net(d, "recommended")
        check(rec.startswith("nic-channels: ethtool -L eth0 combined 4: no reconnect"), f"(f) recommended: {rec!r}")
        check('blkmqd_net_recommended_action{device="nvme0c0n1",action="nic-channels"} 1' in d.read("metrics"),
              "(f) metrics: recommended action nic-channels")

        # ethtool -L eth0 combined 4, as the kernel shows it: the channel count, two more queue
        # pairs, virtio-net's placement of each queue on CPU q (virtnet_set_affinity())
        n0 = log_len(d)
        facts = get(root, "netlink/facts") + "\n"
        put(root, "netlink/facts", re.sub(r"(channels ifname=eth0 .* combined=)2\b", r"\g<1>4", facts))
        for q in range(4):
            put(root, f"{ETH0}/queues/tx-{q}/xps_cpus", "%x\n" % (1 << q))
            put(root, f"{ETH0}/queues/rx-{q}/rps_cpus", "0\n")
        for irq in range(25, 33):
            put(root, f"proc/irq/{irq}/smp_affinity_list", f"{(irq - 25) // 2}\n")
        ok, _ = wait_for(lambda: net(d, "channels") == "combined=4 rx=0 tx=0 other=0", 8.0, 0.1)
        check(ok, f"(f) network/channels follows the NIC: {net(d, 'channels')!r}")
        ok, _ = wait_for(lambda: net(d, "alignment").startswith("aligned"), 5.0, 0.1)
        check(ok, f"(f) alignment: {net(d, 'alignment')!r}")
        check(net(d, "recommended") == "none: aligned", f"(f) recommended: {net(d, 'recommended')!r}")
        check(d.read("devices", DISK, "plan", "nr_io_queues") == "keep\n", "(f) no queue count proposed any more")
        with open(d.log, errors="replace") as f:
            said = [l for l in f.readlines()[n0:] if "Network facts changed (periodic verify): gathering again" in l]
        check(len(said) >= 1, "(f) the log says the disk was gathered again, and why")
        ok, _ = wait_for(lambda: d.read("devices", DISK, "applied", "nic_irq_affinity").startswith("kept: "), 5.0, 0.1)
        check(ok, f"(f) applied/nic_irq_affinity: {d.read('devices', DISK, 'applied', 'nic_irq_affinity')!r}")
        check(nic_writes(d, n0) == [], f"(f) no NIC write after the change: {nic_writes(d, n0)}")
    finally:
        n1 = log_len(d) if d.log else 0
        d.stop()
    check(nic_writes(d, n1) == [], f"(f) stop puts nothing back over the driver's placement: {nic_writes(d, n1)}")
    check([get(root, f"proc/irq/{i}/smp_affinity_list") for i in range(25, 33)] == ["0", "0", "1", "1", "2", "2", "3", "3"],
          "(f) the driver's placement stays")
    return None


def case_b_bond(tmp):
    """(b) active-backup bond: the active port placed, a failover moves the placement, a hash mode is unknown"""
    root, d = start(tmp, "b", "vm-6.12-nvme-tcp-bond")
    bonding = "sys/devices/virtual/net/bond0/bonding"
    eth0, eth2 = (25, 26, 27, 28), (37, 38, 39, 40)
    for irq in eth0 + eth2:
        put(root, f"proc/irq/{irq}/smp_affinity_list", "0\n")
    aff = lambda irqs: [get(root, f"proc/irq/{i}/smp_affinity_list") for i in irqs]     # noqa: E731
    d.start("--root", root, "--devices", DISK)
    try:
        check(net(d, "bond") == "bond0 mode=active-backup active=eth0 ports=eth0 eth2", f"(b) network/bond: {net(d, 'bond')!r}")
        check(net(d, "lower_device") == "eth0 (bond0 -> eth0)", f"(b) lower_device {net(d, 'lower_device')!r}")
        ok, _ = wait_for(lambda: aff(eth0) == ["0-1", "0-1", "2-3", "2-3"], 10.0, 0.05)
        check(ok, f"(b) eth0 placed: {aff(eth0)}")
        check(aff(eth2) == ["0"] * 4, "(b) the backup port left alone")

        n0 = log_len(d)
        put(root, f"{bonding}/active_slave", "eth2\n")         # ip link set eth0 down: failover
        ok, _ = wait_for(lambda: net(d, "lower_device") == "eth2 (bond0 -> eth2)", 8.0, 0.1)
        check(ok, f"(b) after the failover: lower_device {net(d, 'lower_device')!r}")
        ok, _ = wait_for(lambda: aff(eth2) == ["0-1", "0-1", "2-3", "2-3"] and aff(eth0) == ["0"] * 4, 5.0, 0.05)
        check(ok, f"(b) eth2 placed {aff(eth2)}, eth0 put back {aff(eth0)}")
        a = d.read("devices", DISK, "applied", "nic_irq_affinity")
        check(a.startswith("ok: 37:0-1 38:0-1 39:2-3 40:2-3 (was 37:0 38:0 39:0 40:0)"), f"(b) applied: {a!r}")
        check(d.read("nics", "eth2", "disks") == f"{DISK}\n", "(b) nics/eth2/disks names the disk")
        w = nic_writes(d, n0)
        check(sorted(p for p, _ in w) == sorted(f"irq/{i}/smp_affinity_list" for i in eth0 + eth2),
              f"(b) the failover's NIC writes: eth2's 4 vectors placed, eth0's 4 put back, no XPS (both ports' is 3, c): {w}")

        put(root, f"{bonding}/mode", "802.3ad 4\n")
        put(root, f"{bonding}/xmit_hash_policy", "layer3+4 1\n")
        ok, _ = wait_for(lambda: net(d, "alignment").startswith("unknown: bond0 is a bond in mode 802.3ad (xmit_hash_policy "
                                                               "layer3+4) with 2 ports (eth0 eth2)"), 8.0, 0.1)
        check(ok, f"(b) a hash mode: {net(d, 'alignment')!r}")
        ok, _ = wait_for(lambda: aff(eth2) == ["0"] * 4, 5.0, 0.05)
        check(ok, f"(b) no port known: eth2 put back {aff(eth2)}")
    finally:
        n1 = log_len(d) if d.log else 0
        d.stop()
    check(nic_writes(d, n1) == [], f"(b) stop: nothing left to put back: {nic_writes(d, n1)}")
    check(aff(eth0) == ["0"] * 4 and aff(eth2) == ["0"] * 4, "(b) both ports as they were")
    return None


def main():
    why = bt.skip_reason("FUSE mount")
    if why:
        print(f"SKIP: {why}")
        return bt.SKIP
    tmp = tempfile.mkdtemp(prefix="blkmqd-net-follow-")
    skipped = None
    try:
        for case in (case_f_follow, case_b_bond):
            print("== " + case.__doc__.strip())
            try:
                skipped = case(tmp) or skipped
            except Exception as e:
                check(False, f"{case.__name__} raised {type(e).__name__}: {e}")
            if skipped:
                break
    finally:
        for tag in ("f", "b"):
            bt.cleanup_mount(os.path.join(tmp, tag, "mnt"))
        shutil.rmtree(tmp, ignore_errors=True)
    if skipped:
        print(f"SKIP: {skipped}")
        return bt.SKIP
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
