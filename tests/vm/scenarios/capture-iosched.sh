#!/bin/sh
# Fixture capture: one scsi_debug disk (one submit queue, marked rotational) under bfq and
# under kyber, for the elevator tunables in queue/iosched/ (issue 18; mq-deadline's are in
# vm-<series>-scsi-debug-shared). bfq is written once with slice_idle=0 by hand, so the capture
# also shows that a switch away and back resets it (the kyber capture is taken in between).
# Output: --share DIR/vm-<kernel series>-iosched-bfq, vm-<kernel series>-iosched-kyber
# needs: share
# smp: 2
# timeout: 180
. /opt/vmtest/guest-lib.sh
scsi_debug_disk submit_queues=1 delay=1 dev_size_mb=16
Q=/sys/block/$D/queue
echo 1 > $Q/rotational
assert_ok "switch to bfq" sh -c "echo bfq > $Q/scheduler"
assert_match "bfq running" '\[bfq\]' "$(cat $Q/scheduler)"
assert_ok "bfq slice_idle=0" sh -c "echo 0 > $Q/iosched/slice_idle"
assert_match "slice_idle reads 0" '^0$' "$(cat $Q/iosched/slice_idle)"
export CAPTURE_NOTE="modprobe scsi_debug submit_queues=1 delay=1 dev_size_mb=16, -smp 2; queue/rotational 1; echo bfq > scheduler; echo 0 > iosched/slice_idle"
capture_fixture vm-$VMTEST_KERNEL_SERIES-iosched-bfq "$D"
assert_ok "switch to kyber" sh -c "echo kyber > $Q/scheduler"
assert_match "kyber running" '\[kyber\]' "$(cat $Q/scheduler)"
export CAPTURE_NOTE="modprobe scsi_debug submit_queues=1 delay=1 dev_size_mb=16, -smp 2; queue/rotational 1; bfq (slice_idle 0), then echo kyber > scheduler"
capture_fixture vm-$VMTEST_KERNEL_SERIES-iosched-kyber "$D"
# a switch back starts bfq from its defaults (block/elevator.c elevator_switch())
assert_ok "switch back to bfq" sh -c "echo bfq > $Q/scheduler"
assert_match "slice_idle back at its default 8 after the switch" '^8$' "$(cat $Q/iosched/slice_idle)"
