#!/bin/sh
# bench-null-blk: P6 (docs/BENCHMARKS.md) - the gain on a fast many-queue device.  null_blk via
# configfs, submit_queues = CPUs, irqmode=1 (softirq), memory_backed=0, hw_queue_depth 64; fio
# 4k randread, libaio iodepth 16, numjobs = CPUs.  Each pair runs the "kernel" set-up (no daemon)
# and blkmqd's set-up (blkmqd running, its elevator applied) back to back, alternating the order.
# Cases:
#   A  kernel default (none); blkmqd keeps none: the same set-up twice, i.e. the noise floor
#   B  mq-deadline preset before blkmqd starts (what a udev rule / distro default leaves)
#   C  module shared_tag_bitmap=1 (a host-wide tagset like megaraid_sas/hisi_sas): the kernel
#      picks mq-deadline itself; blkmqd decides from facts (class shared-tags)
# Results: "# BENCH case=X pair=N setup=kernel|blkmqd elevator=E iops=I lat_us=L p99_us=P".
# BENCH_RUNTIME (s, default 5), BENCH_PAIRS (default 3) via harness --env.
# smp: 4
# mem: 1024
# needs: fio
# timeout: 900
. /opt/vmtest/guest-lib.sh

RT=${BENCH_RUNTIME:-5}
PAIRS=${BENCH_PAIRS:-3}
CPUS=$(nproc)
DEV=nullb0

fio_run() {
    fio_read_figures --name=bench --filename=/dev/$DEV --rw=randread --bs=4k --direct=1 --ioengine=libaio \
        --iodepth=16 --numjobs="$CPUS"
}

make_nullb() {
    mkdir /sys/kernel/config/nullb/$DEV
    N=/sys/kernel/config/nullb/$DEV
    echo "$CPUS" > $N/submit_queues
    echo 0 > $N/poll_queues
    echo 0 > $N/memory_backed
    echo 1 > $N/irqmode
    echo 64 > $N/hw_queue_depth
    echo 1024 > $N/size
    echo 1 > $N/power
    wait_for_file /sys/block/$DEV 10
}

drop_nullb() {
    echo 0 > /sys/kernel/config/nullb/$DEV/power || note "power=0 failed"
    rmdir /sys/kernel/config/nullb/$DEV || note "rmdir nullb failed"
    wait_for_gone /sys/block/$DEV 10 || note "$DEV still present"
}

side() {   # CASE PAIR SIDE
    bench_elevator_side "case=$1 pair=$2" "$3"
}

bench_case() {   # $1 case; the kernel set-up must be in place
    note "case $1: hctx=$(hctx_count $DEV) scheduler: $(cat /sys/block/$DEV/queue/scheduler)"
    bench_pairs "$PAIRS" side "$1"
}

bench_all() {
    note "fio: $(fio --version); runtime ${RT}s + 1s ramp, $PAIRS pairs, numjobs=$CPUS iodepth=16 libaio randread 4k"
    modprobe null_blk nr_devices=0
    make_nullb
    assert_match "A: kernel default none" '^\[none\]' "$(cat /sys/block/$DEV/queue/scheduler)"
    bench_case A

    echo mq-deadline > /sys/block/$DEV/queue/scheduler
    bench_case B
    echo none > /sys/block/$DEV/queue/scheduler

    drop_nullb
    if ! rmmod null_blk 2>/tmp/rmmod.err; then
        fail "rmmod null_blk" "$(cat /tmp/rmmod.err)"
        return 0
    fi
    if ! modprobe null_blk nr_devices=0 shared_tag_bitmap=1 2>/tmp/modprobe.err; then
        fail "modprobe null_blk shared_tag_bitmap=1" "$(cat /tmp/modprobe.err)"
        return 0
    fi
    make_nullb
    note "C: debugfs hctx0 flags: $(cat /sys/kernel/debug/block/$DEV/hctx0/flags)"
    bench_case C
    drop_nullb
}
blkmqd_checks bench_all
