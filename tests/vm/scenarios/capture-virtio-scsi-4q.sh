#!/bin/sh
# Fixture capture: a rotating, throttled disk behind a 4-queue virtio-scsi HBA, 4 vCPUs.
# After some direct reads under mq-deadline (so debugfs hctxN/run is non-zero) the elevator is
# set back to the default none.  Output: --share DIR/vm-<kernel series>-virtio-scsi-4q
# needs: share
# smp: 4
# disk: d0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads,throttling.iops-total=150
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=slow0
# timeout: 180
. /opt/vmtest/guest-lib.sh
assert_ok "sda present" wait_for_file /sys/block/sda 10
echo mq-deadline > /sys/block/sda/queue/scheduler
reads_per_cpu sda 40
echo none > /sys/block/sda/queue/scheduler
note "hctx run: $(cat /sys/kernel/debug/block/sda/hctx*/run | tr '\n' ' ')"
export CAPTURE_NOTE="QEMU virtio-scsi-pci num_queues=4, scsi-hd rotation_rate=7200, throttling.iops-total=150, -smp 4; 4x40 direct 4k reads (one per CPU) under mq-deadline, then elevator none"
capture_fixture vm-$VMTEST_KERNEL_SERIES-virtio-scsi-4q sda
