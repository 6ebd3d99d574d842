#!/bin/sh
# Fixture capture: null_blk created through configfs (nullb0) with submit_queues=4
# poll_queues=0 memory_backed=0 irqmode=1, 4 vCPUs.  Output: --share DIR/vm-<kernel series>-null-blk-4q
# needs: share
# smp: 4
# timeout: 180
. /opt/vmtest/guest-lib.sh
assert_ok "modprobe null_blk nr_devices=0" modprobe null_blk nr_devices=0
N=/sys/kernel/config/nullb/nullb0
mkdir $N
echo 4 > $N/submit_queues
echo 0 > $N/poll_queues
echo 0 > $N/memory_backed
echo 1 > $N/irqmode
echo 1024 > $N/size
echo 1 > $N/power
assert_ok "nullb0 present" wait_for_file /sys/block/nullb0 10
reads_per_cpu nullb0 100
export CAPTURE_NOTE="modprobe null_blk nr_devices=0; configfs nullb0 submit_queues=4 poll_queues=0 memory_backed=0 irqmode=1 size=1024 power=1, -smp 4; 4x100 direct 4k reads"
capture_fixture vm-$VMTEST_KERNEL_SERIES-null-blk-4q nullb0
