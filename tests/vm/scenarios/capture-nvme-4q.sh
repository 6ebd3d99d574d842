#!/bin/sh
# Fixture capture: QEMU nvme with max_ioqpairs=4, 4 vCPUs (managed MSI-X vectors nvme0q0..4).
# Output: --share DIR/vm-<kernel series>-nvme-4q
# needs: share
# smp: 4
# disk: d0 64M
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=nv1,drive=d0,max_ioqpairs=4
# timeout: 180
. /opt/vmtest/guest-lib.sh
assert_ok "nvme0n1 present" wait_for_file /sys/block/nvme0n1 15
reads_per_cpu nvme0n1 40
export CAPTURE_NOTE="QEMU -device nvme,max_ioqpairs=4, -smp 4; 4x40 direct 4k reads under the default none"
capture_fixture vm-$VMTEST_KERNEL_SERIES-nvme-4q nvme0n1
