#!/bin/sh
# fast-multiqueue: null_blk created through configfs with one submit queue per CPU.
# Kernel facts: nr hctx = CPUs (+ poll queues when requested), rotational=0, default none,
# submit_queues writable while powered.  blkmqd: classifies it fast-multiqueue, keeps none.
# smp: 4
# timeout: 90
. /opt/vmtest/guest-lib.sh

CPUS=$(nproc)
assert_ok "modprobe null_blk nr_devices=0" modprobe null_blk nr_devices=0
N=/sys/kernel/config/nullb/fast0
assert_ok "configfs nullb/" test -d /sys/kernel/config/nullb
mkdir $N
note "features: $(cat /sys/kernel/config/nullb/features)"
echo "$CPUS" > $N/submit_queues
echo 0 > $N/poll_queues
echo 0 > $N/memory_backed
echo 1 > $N/irqmode
echo 1024 > $N/size
echo 1 > $N/power
assert_ok "/sys/block/fast0 appears" wait_for_file /sys/block/fast0 10
assert_eq "fast0 hctx count = CPUs" "$CPUS" "$(hctx_count fast0)"
assert_eq "fast0 rotational" 0 "$(read_attr /sys/block/fast0/queue/rotational)"
assert_match "fast0 default elevator none" '^\[none\]' "$(read_attr /sys/block/fast0/queue/scheduler)"
assert_eq "fast0 hctx0 nr_tags" 64 "$(read_attr /sys/block/fast0/mq/0/nr_tags)"
assert_eq "fast0 hctx0 type" default "$(read_attr /sys/kernel/debug/block/fast0/hctx0/type)"
# live change of the queue count (VM.md: 8->2->4 works while powered)
echo 2 > $N/submit_queues
assert_eq "fast0 hctx after submit_queues=2" 2 "$(hctx_count fast0)"
echo "$CPUS" > $N/submit_queues
assert_eq "fast0 hctx after submit_queues=$CPUS" "$CPUS" "$(hctx_count fast0)"
assert_fail "submit_queues > CPUs is rejected" sh -c "echo $((CPUS * 4)) > $N/submit_queues"

blkmqd_fast_multiqueue() {
    start_blkmqd -v
    assert_eq "blkmqd class" fast-multiqueue "$(read_attr $BLKMQD_MOUNT/devices/fast0/class)"
    assert_eq "blkmqd facts/nr_hw_queues" "$CPUS" "$(read_attr $BLKMQD_MOUNT/devices/fast0/facts/nr_hw_queues)"
    assert_match "elevator stays none" '^\[none\]' "$(read_attr /sys/block/fast0/queue/scheduler)"
    stop_blkmqd
}
blkmqd_checks blkmqd_fast_multiqueue
