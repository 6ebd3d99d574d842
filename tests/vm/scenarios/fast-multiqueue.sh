#!/bin/sh
# fast-multiqueue: null_blk created through configfs with one submit queue per CPU.
# Kernel facts: nr hctx = CPUs (+ poll queues when requested), rotational=0, default none,
# submit_queues writable while powered.  blkmqd: classifies it fast-multiqueue, keeps none
# ("kept: none"); with mq-deadline set before start it switches to none and SIGTERM puts
# mq-deadline back.  fio randread IOPS under mq-deadline and under none (printed, not asserted).
# smp: 4
# needs: fio
# timeout: 120
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

fio_iops() {     # DEV -> IOPS of a 2 s 4k randread, 4 jobs, libaio depth 16
    fio --name=r --filename=/dev/$1 --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=16 \
        --numjobs=4 --runtime=2 --time_based --group_reporting --output-format=terse 2>/dev/null |
        cut -d';' -f8
}

blkmqd_fast_multiqueue() {
    M=$BLKMQD_MOUNT
    X=$M/devices/fast0
    # sub-case 1: the kernel default (none) is what blkmqd wants
    start_blkmqd -v || return 0
    assert_eq "class" fast-multiqueue "$(read_attr $X/class)"
    assert_eq "facts/nr_hw_queues" "$CPUS" "$(read_attr $X/facts/nr_hw_queues)"
    assert_eq "facts/rotational" 0 "$(read_attr $X/facts/rotational)"
    assert_eq "plan/elevator" none "$(read_attr $X/plan/elevator)"
    assert_eq "applied/elevator" "kept: none" "$(read_attr $X/applied/elevator)"
    assert_match "explain: elevator rule" 'elevator=none.*\(rule elevator-fast-multiqueue\)' "$(read_attr $X/explain)"
    assert_match "elevator stays none" '^\[none\]' "$(read_attr /sys/block/fast0/queue/scheduler)"
    assert_eq "hctx dirs = CPUs" "$CPUS" "$(ls $X/hctx | wc -l)"
    assert_eq "hctx/0/nr_tags" 64 "$(read_attr $X/hctx/0/nr_tags)"
    assert_match "hctx/0/irq: null_blk has no IRQ vector" '^unknown: ' "$(read_attr $X/hctx/0/irq)"
    stop_blkmqd
    assert_match "after stop: still none" '^\[none\]' "$(read_attr /sys/block/fast0/queue/scheduler)"

    # sub-case 2: mq-deadline as the starting elevator -> blkmqd switches to none, restores on stop
    echo mq-deadline > /sys/block/fast0/queue/scheduler
    assert_match "mq-deadline set before start" '\[mq-deadline\]' "$(read_attr /sys/block/fast0/queue/scheduler)"
    iops_dl=$(fio_iops fast0)
    start_blkmqd -v || return 0
    assert_eq "applied/elevator" "ok: none (was mq-deadline)" "$(read_attr $X/applied/elevator)"
    assert_match "sysfs scheduler switched to none" '^\[none\]' "$(read_attr /sys/block/fast0/queue/scheduler)"
    iops_none=$(fio_iops fast0)
    note "fio randread 4k, 4 jobs x QD16, 2 s, same boot: mq-deadline ${iops_dl} IOPS, none (blkmqd) ${iops_none} IOPS"
    assert_int "fio IOPS under mq-deadline" "$iops_dl"
    assert_int "fio IOPS under none" "$iops_none"
    stop_blkmqd
    assert_match "SIGTERM: mq-deadline restored" '\[mq-deadline\]' "$(read_attr /sys/block/fast0/queue/scheduler)"
    echo none > /sys/block/fast0/queue/scheduler
}
blkmqd_checks blkmqd_fast_multiqueue
