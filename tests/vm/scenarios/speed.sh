#!/bin/sh
# speed: slow or fast by what the disk does (policies/speed.h), with blkmqd's shipped defaults
# but the [Speed] bounds of an emulated guest (guest-lib.sh speed_setup: FastMs=8 SlowMs=12)
# (BLKMQD_VIRTUAL=list: no suite opt-ins, so QEMU's flags are untrusted as on any VM).
#   vda  virtio-blk, 4 queues, on a RAM-backed file (tmpfs on the host): rotational=1 as every
#        virtio-blk disk, set to mq-deadline before start (what a many-hctx-slow verdict wrote
#        before): measured fast -> fast-multiqueue, none written
#   sda  scsi-hd rotation_rate=1 (non-rotating) behind virtio-scsi num_queues=4, throttled by
#        QEMU to 200 IOPS: measured slow -> many-hctx-slow, mq-deadline written
# Both start unknown, nothing written, explain waiting for a measurement. fio phase 1 (4 KiB
# random reads on both): each is classed by measurement within the documented time (a window
# of MinIOs=1024 I/Os and WindowSec=10 s, read at the BPF events, at most 1 s apart, or 1.5 s
# after the last one) and switches once (one "Measured" journal line each); phase 2 (64 KiB
# reads, a second fio with another block size): no second switch, the class and the elevator
# stay. Service times from the BPF provider (facts/speed_source), metrics; stop puts both back.
# The checks are guest-lib.sh's speed_* (shared with the systemd flavour, systemd/speed.sh).
# smp: 4
# mem: 1024
# disk: f0 128M ram
# disk: s0 128M
# qemu: -drive if=none,id=f0,file={disk:f0},format=raw,cache=writeback,aio=threads
# qemu: -device virtio-blk-pci,drive=f0,num-queues=4,serial=fast0
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=s0,file={disk:s0},format=raw,cache=none,aio=threads,throttling.iops-total=200
# qemu: -device scsi-hd,drive=s0,bus=scsi0.0,rotation_rate=1,serial=slow0
# needs: fio
# timeout: 300
. /opt/vmtest/guest-lib.sh

BLKMQD_VIRTUAL=list     # blkmqd's shipped defaults (guest-lib: no suite drop-in)
SPEED_FAST=vda
SPEED_SLOW=sda
speed_log() { cat /tmp/blkmqd.log; }
speed_setup 4

checks() {
    start_blkmqd -v --devices "$SPEED_FAST,$SPEED_SLOW" || return 0
    speed_check_unmeasured
    speed_check_classed
    speed_check_kept
    stop_blkmqd
    speed_check_stopped
}
blkmqd_checks checks
