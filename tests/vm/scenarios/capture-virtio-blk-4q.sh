#!/bin/sh
# Fixture capture: virtio-blk with num-queues=4, 4 vCPUs.  Output: --share DIR/vm-<kernel series>-virtio-blk-4q
# needs: share
# smp: 4
# disk: d0 64M
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device virtio-blk-pci,drive=d0,num-queues=4
# timeout: 180
. /opt/vmtest/guest-lib.sh
assert_ok "vda present" wait_for_file /sys/block/vda 10
reads_per_cpu vda 40
export CAPTURE_NOTE="QEMU -device virtio-blk-pci,num-queues=4, -smp 4; 4x40 direct 4k reads under the default none"
capture_fixture vm-$VMTEST_KERNEL_SERIES-virtio-blk-4q vda
