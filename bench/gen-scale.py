#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
gen-scale.py OUTDIR [--disks 4096] [--hosts 64] [--hctx 64] [--cpus 64] [--ssd-every 8] [--paths P]

P3's synthetic machine: a root-relative sysfs/procfs/debugfs tree (for blkmqd --root) of N
SCSI disks spread over H megaraid_sas-like RAID HBAs with host-wide shared tagsets, the shape of
tests/fixture/gen-synthetic.py (one HBA, at most 702 disks, every file of a fixture) scaled out:

  - H PCI functions 0000:BB:00.0 (driver megaraid_sas), each with M+1 MSI-X vectors (M hctx
    vectors, managed, affinity = the hctx's CPUs, + 1 non-queue vector): H*(M+1) lines in
    /proc/interrupts, each with C per-CPU columns, and /proc/irq/N/{smp_affinity,
    smp_affinity_list, effective_affinity_list, node}
  - SCSI hosts host0..host(H-1): proc_name megaraid_sas, nr_hw_queues M, can_queue Q
  - N disks sda.. (names and dev_t as sd assigns them: majors 8, 65-71, 128-135, extended minors
    past 256 disks), N/H per host, every --ssd-every'th non-rotational; each with M hctx
    (mq/N/{cpu_list, nr_tags, nr_reserved_tags, cpuK/}), scheduler "[mq-deadline] kyber bfq none"
  - debugfs: block/<d>/state and block/<d>/hctxN/flags (the files blkmqd reads; a real kernel
    has ~20 more per hctx, which nothing here reads), irq/irqs/N
  - /sys/module/megaraid_sas/parameters (host_tagset_enable=1 ...)

--paths P (P > 1): dm-multipath. --disks counts LUNs; each LUN is reached over P legs, sd disks on
P different hosts (leg p of LUN l on host (l * P + p) % H, so --hosts should be a multiple of P),
each leg with the LUN's WWID and a SAS address of its own (device/sas_address: the path key of
facts/device.c path_key()), and one request-based map dm-<l> over them (devices/virtual/block:
dev 253:<l>, dm/uuid "mpath-3<wwid>", dm/name mpath<l>, slaves/<leg>, each leg's holders/dm-<l>;
one hctx, all CPUs: dm_mod.dm_mq_nr_hw_queues=1, the default, drivers/md/dm-rq.c), as
multipath-tools sets it up. N LUNs x P legs + N maps block devices.

4096 x 64 x 64 CPUs: ~1.1 M files, ~0.5 M directories, ~5 GiB on tmpfs (a page per file),
~1 min to write. Deterministic. No TREE file (modes are not needed for --root reads as root).
"""

import argparse
import importlib.util
import os
import shutil
import sys

# Names and CPU formats as the fixture generator writes them (one definition for both trees).
_spec = importlib.util.spec_from_file_location(
    "gen_synthetic", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixture", "gen-synthetic.py"))
_gs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gs)
disk_name, cpulist, mask = _gs.disk_name, _gs.cpulist, _gs.mask


def sd_devt(index):
    """drivers/scsi/sd.c sd_major() + sd_probe(): 16 disks per major, extended minors."""
    majors = [8, 65, 66, 67, 68, 69, 70, 71, 128, 129, 130, 131, 132, 133, 134, 135]
    major = majors[(index & 0xf0) >> 4]
    minor = ((index & 0xf) << 4) | (index & 0xfff00)
    return major, minor


class Gen:
    def __init__(self, root):
        self.root = root
        self.dirs = set()
        self.files = 0

    def mkdirs(self, rel):
        if rel in self.dirs:
            return
        os.makedirs(os.path.join(self.root, rel), exist_ok=True)
        p = rel
        while p and p not in self.dirs:
            self.dirs.add(p)
            p = os.path.dirname(p)

    def file(self, rel, content):
        self.mkdirs(os.path.dirname(rel))
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(content)
        self.files += 1

    def block(self, name, blk, devt, rot, nr_requests, write_cache, hctx, state, hflags):
        """sysfs block/<name> at blk (its queue/, mq/<i>/ for each (i, cpus, nr_tags) of hctx, the
        sys/block, class/block and dev/block links) and debugfs block/<name>/ (state, hctxN/flags)."""
        self.file(f"{blk}/dev", f"{devt}\n")
        self.file(f"{blk}/size", f"{7814037168 if rot else 1875385008}\n")
        self.file(f"{blk}/removable", "0\n")
        self.file(f"{blk}/ro", "0\n")
        q = f"{blk}/queue"
        self.file(f"{q}/rotational", ("1" if rot else "0") + "\n")
        self.file(f"{q}/scheduler", "[mq-deadline] kyber bfq none\n")
        self.file(f"{q}/rq_affinity", "1\n")
        self.file(f"{q}/nr_requests", f"{nr_requests}\n")
        self.file(f"{q}/nomerges", "0\n")
        self.file(f"{q}/max_sectors_kb", "256\n")
        self.file(f"{q}/logical_block_size", "512\n")
        self.file(f"{q}/io_poll", "0\n")
        self.file(f"{q}/write_cache", f"{write_cache}\n")
        for i, cpus, nr_tags in hctx:
            m = f"{blk}/mq/{i}"
            self.file(f"{m}/cpu_list", ", ".join(str(c) for c in cpus) + "\n")
            self.file(f"{m}/nr_tags", f"{nr_tags}\n")
            self.file(f"{m}/nr_reserved_tags", "0\n")
            for c in cpus:
                self.mkdirs(f"{m}/cpu{c}")
        self.link(f"sys/block/{name}", blk)
        self.link(f"sys/class/block/{name}", blk)
        self.link(f"sys/dev/block/{devt}", blk)
        dbg = f"sys/kernel/debug/block/{name}"
        self.file(f"{dbg}/state", f"{state}\n")
        for i, _, _ in hctx:
            self.file(f"{dbg}/hctx{i}/flags", hflags)

    def link(self, rel, target_rel):
        self.mkdirs(os.path.dirname(rel))
        os.symlink(os.path.relpath(target_rel, os.path.dirname(rel)), os.path.join(self.root, rel))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--disks", type=int, default=4096)
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--hctx", type=int, default=64)
    ap.add_argument("--cpus", type=int, default=64)
    ap.add_argument("--ssd-every", type=int, default=8, help="every K-th disk is non-rotational (0: none)")
    ap.add_argument("--can-queue", type=int, default=4096)
    ap.add_argument("--queue-depth", type=int, default=256)
    ap.add_argument("--kernel", default="6.1.0-28-amd64")
    ap.add_argument("--paths", type=int, default=1, help="legs per LUN; > 1: dm-multipath legs and one map per LUN")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    if a.disks < 1 or a.hosts < 1 or a.hosts > 250 or a.hctx < 1 or a.cpus < 1 or a.paths < 1 or \
            a.disks * a.paths > 1 << 16:
        ap.error("bad sizes")
    if os.path.exists(a.outdir):
        if not a.force:
            ap.error(f"{a.outdir} exists (use --force)")
        shutil.rmtree(a.outdir)
    os.makedirs(a.outdir)
    g = Gen(a.outdir)
    cpus = a.cpus
    online = f"0-{cpus - 1}" if cpus > 1 else "0"
    g.file("sys/devices/system/cpu/online", online + "\n")
    g.file("sys/devices/system/cpu/possible", online + "\n")
    g.file("proc/sys/kernel/osrelease", a.kernel + "\n")

    hctx_cpus = [[] for _ in range(a.hctx)]
    for c in range(cpus):
        hctx_cpus[c * a.hctx // cpus if cpus >= a.hctx else c % a.hctx].append(c)
    live_hctx = [i for i in range(a.hctx) if hctx_cpus[i]]
    n_vec = a.hctx + 1
    irq_base = 40

    params = {"host_tagset_enable": "1", "poll_queues": "0", "msix_vectors": "-1",
              "smp_affinity_enable": "1", "rdpq_enable": "1"}
    for k, v in params.items():
        g.file(f"sys/module/megaraid_sas/parameters/{k}", v + "\n")
    g.file("sys/module/megaraid_sas/version", "07.719.03.00-rc1\n")
    g.mkdirs("sys/bus/pci/drivers/megaraid_sas")
    g.mkdirs("sys/bus/scsi/drivers/sd")

    irq_lines = [" " * 5 + "".join(f"CPU{c:<8d}" for c in range(cpus)).rstrip() + "\n"]
    hflags = "alloc_policy=FIFO SHOULD_MERGE|TAG_QUEUE_SHARED|TAG_HCTX_SHARED\n"
    # legs[h]: (leg index, LUN) of the sd disks behind host h, in the order the host probes them
    n_legs = a.disks * a.paths
    legs = [[] for _ in range(a.hosts)]
    if a.paths == 1:
        per_host = (a.disks + a.hosts - 1) // a.hosts
        for d in range(a.disks):
            legs[d // per_host].append(d)
    else:
        for lun in range(a.disks):
            for p in range(a.paths):
                legs[(lun * a.paths + p) % a.hosts].append(lun * a.paths + p)
    maps = [[] for _ in range(a.disks)] if a.paths > 1 else None
    for h in range(a.hosts):
        addr = f"0000:{h + 2:02x}:00.0"
        pci = f"devices/pci0000:00/0000:00:{(h % 31) + 1:02x}.0/{addr}"
        g.file(f"sys/{pci}/vendor", "0x1000\n")
        g.file(f"sys/{pci}/device", "0x10e2\n")
        g.file(f"sys/{pci}/class", "0x010400\n")
        g.file(f"sys/{pci}/numa_node", "0\n")
        g.file(f"sys/{pci}/local_cpulist", online + "\n")
        g.link(f"sys/{pci}/driver", "sys/bus/pci/drivers/megaraid_sas")
        g.link(f"sys/{pci}/subsystem", "sys/bus/pci")
        for v in range(n_vec):
            irq = irq_base + h * n_vec + v
            g.file(f"sys/{pci}/msi_irqs/{irq}", "msix\n")
            queue = v < a.hctx
            aff = hctx_cpus[v] if queue and hctx_cpus[v] else list(range(cpus))
            counts = "".join(f"{(1000 + 7 * v) if c == aff[0] else 0:>11d}" for c in range(cpus))
            irq_lines.append(f"{irq:>4d}:{counts}  IR-PCI-MSIX-{addr} {v:>4d}-edge      megasas{h}-msix{v}\n")
            g.file(f"proc/irq/{irq}/smp_affinity_list", cpulist(aff) + "\n")
            g.file(f"proc/irq/{irq}/smp_affinity", mask(aff, cpus) + "\n")
            g.file(f"proc/irq/{irq}/effective_affinity_list", str(aff[0]) + "\n")
            g.file(f"proc/irq/{irq}/node", "0\n")
            flags = "            IRQD_ACTIVATED\n            IRQD_IRQ_STARTED\n            IRQD_SINGLE_TARGET\n"
            if queue:
                flags += "            IRQD_AFFINITY_MANAGED\n"
            g.file(f"sys/kernel/debug/irq/irqs/{irq}",
                   f"handler:  handle_edge_irq\ndevice:   {addr}\nstatus:   0x00000000\nistate:   0x00000000\n"
                   f"ddepth:   0\nwdepth:   0\ndstate:   0x{0x3400200 if queue else 0x3400000:08x}\n{flags}node:     0\n")
        host = f"sys/{pci}/host{h}"
        sh = f"{host}/scsi_host/host{h}"
        g.file(f"{sh}/proc_name", "megaraid_sas\n")
        g.file(f"{sh}/nr_hw_queues", f"{a.hctx}\n")
        g.file(f"{sh}/can_queue", f"{a.can_queue}\n")
        g.file(f"{sh}/host_busy", "0\n")
        g.file(f"{sh}/cmd_per_lun", f"{a.queue_depth}\n")
        g.file(f"{sh}/unique_id", f"{h + 1}\n")
        g.link(f"sys/class/scsi_host/host{h}", sh)
        g.link(f"{host}/subsystem", "sys/bus/scsi")

        for t, d in enumerate(legs[h]):
            lun = d // a.paths
            name = disk_name(d)
            rot = not (a.ssd_every and lun % a.ssd_every == a.ssd_every - 1)
            sdev = f"{host}/target{h}:2:{t}/{h}:2:{t}:0"
            g.file(f"{sdev}/queue_depth", f"{a.queue_depth}\n")
            g.file(f"{sdev}/vendor", "AVAGO   \n")
            g.file(f"{sdev}/model", ("MR9560-16i      " if rot else "MR9560-16i SSD  ") + "\n")
            g.file(f"{sdev}/wwid", f"naa.600062b2{lun:024x}\n")
            if maps is not None:
                g.file(f"{sdev}/sas_address", f"0x5000c5{d:010x}\n")
                maps[lun].append((name, f"{sdev}/block/{name}"))
            g.file(f"{sdev}/state", "running\n")
            g.link(f"{sdev}/driver", "sys/bus/scsi/drivers/sd")
            g.link(f"{sdev}/subsystem", "sys/bus/scsi")       # block/<d>/device/subsystem: the transport
            blk = f"{sdev}/block/{name}"
            ma, mi = sd_devt(d)
            g.link(f"{blk}/device", sdev)
            g.block(name, blk, f"{ma}:{mi}", rot, f"{2 * min(a.can_queue, 128)}", "write back",
                    [(i, hctx_cpus[i], a.can_queue) for i in live_hctx],
                    "SAME_COMP|IO_STAT|INIT_DONE|STATS|REGISTERED|NOWAIT|SQ_SCHED", hflags)
            if maps is not None:
                g.link(f"{blk}/holders/dm-{lun}", f"sys/devices/virtual/block/dm-{lun}")
    for lun, members in enumerate(maps or []):
        name, blk = f"dm-{lun}", f"sys/devices/virtual/block/dm-{lun}"
        rot = not (a.ssd_every and lun % a.ssd_every == a.ssd_every - 1)
        g.file(f"{blk}/dm/uuid", f"mpath-3600062b2{lun:024x}\n")
        g.file(f"{blk}/dm/name", f"mpath{lun}\n")
        g.file(f"{blk}/dm/suspended", "0\n")
        for leg, leg_blk in members:
            g.link(f"{blk}/slaves/{leg}", leg_blk)
        g.block(name, blk, f"253:{lun}", rot, "256", "write through", [(0, list(range(cpus)), 2048)],
                "SAME_COMP|NONROT|IO_STAT|INIT_DONE|STATS|REGISTERED|NOWAIT|SQ_SCHED", "alloc_policy=FIFO SHOULD_MERGE\n")
    irq_lines.append(" NMI:" + "".join(f"{0:>11d}" for _ in range(cpus)) + "   Non-maskable interrupts\n")
    g.file("proc/interrupts", "".join(irq_lines))
    g.file("MANIFEST",
           "synthetic: generated by bench/gen-scale.py, not captured\n"
           f"command: gen-scale.py OUT {' '.join(sys.argv[2:])}\n"
           f"disks: {n_legs} over {a.hosts} megaraid_sas hosts (host tagset), every {a.ssd_every}th {'LUN ' if maps else ''}SSD\n"
           + (f"multipath: {a.disks} LUNs x {a.paths} legs, {a.disks} request-based maps dm-0..\n" if maps else "") +
           f"hctx: {a.hctx} per disk, cpus: {cpus}, can_queue: {a.can_queue}, msi vectors per host: {n_vec}\n"
           f"files: {g.files + 1}, directories: {len(g.dirs)}\n")
    print(f"{a.outdir}: {n_legs} disks" + (f" (+ {a.disks} multipath maps)" if maps else "") + f", {a.hosts} hosts, {a.hctx} hctx, {cpus} CPUs, "
          f"{g.files + 1} files, {len(g.dirs)} directories")


if __name__ == "__main__":
    main()
