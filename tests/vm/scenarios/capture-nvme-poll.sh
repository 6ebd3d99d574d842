#!/bin/sh
# Fixture capture: QEMU nvme with max_ioqpairs=4, 4 vCPUs, nvme reloaded with poll_queues=1:
# hctx of type default and poll (debugfs hctxN/type); a poll hctx has no vector
# (drivers/nvme/host/pci.c nvme_setup_irqs(): poll queues get no interrupt).
# Output: --share DIR/vm-<kernel series>-nvme-poll
# needs: share
# smp: 4
# disk: d0 64M
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=nv1,drive=d0,max_ioqpairs=4
# timeout: 180
. /opt/vmtest/guest-lib.sh
assert_ok "nvme0n1 present" wait_for_file /sys/block/nvme0n1 15
assert_ok "rmmod nvme" rmmod nvme
assert_ok "modprobe nvme poll_queues=1" modprobe nvme poll_queues=1
assert_ok "nvme0n1 present again" wait_for_file /sys/block/nvme0n1 15
assert_eq "nvme.poll_queues" 1 "$(cat /sys/module/nvme/parameters/poll_queues)"
types=$(cat /sys/kernel/debug/block/nvme0n1/hctx*/type 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ',')
note "hctx types: $types"
assert_match "a poll hctx" 'poll' "$types"
reads_per_cpu nvme0n1 40
export CAPTURE_NOTE="QEMU -device nvme,max_ioqpairs=4, -smp 4, nvme reloaded with poll_queues=1; 4x40 direct 4k reads under the default none"
capture_fixture vm-$VMTEST_KERNEL_SERIES-nvme-poll nvme0n1
