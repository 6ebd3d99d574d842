#!/bin/sh
# bench-slow-disk: P7 (docs/BENCHMARKS.md) - the gain on a many-hctx slow rotational disk, and
# what changes with scsi_debug submit_queues=1 vs 4.  Each pair runs the "kernel" set-up (no
# daemon) and blkmqd's (blkmqd running, its elevator applied) back to back, alternating order.
#   S  sda: scsi-hd rotation_rate=7200 behind virtio-scsi num_queues=4, QEMU throttle 150 IOPS
#      (kernel default none; blkmqd: many-hctx-slow)
#   Q1 scsi_debug submit_queues=1, ndelay 200 us (one hctx)
#   Q4 scsi_debug submit_queues=4 host_max_queue=64, ndelay 200 us (host-wide tagset)
# Workloads (fio, libaio, direct):
#   mixed  randrw 70/30 4k, 4 jobs, iodepth 4: latency (mean, p99 of reads) and IOPS
#   seq    4 sequential 4k readers at different offsets, iodepth 8: throughput (merging)
# Results: "# BENCH case=X wl=W pair=N setup=kernel|blkmqd elevator=E riops= wiops= rlat_us=
# rp99_us= wlat_us=".  BENCH_RUNTIME (s, default 5), BENCH_PAIRS (default 2) via --env.
# smp: 4
# mem: 1024
# disk: d0 256M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads,throttling.iops-total=150
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=slow0
# needs: fio
# timeout: 1500
. /opt/vmtest/guest-lib.sh

RT=${BENCH_RUNTIME:-5}
PAIRS=${BENCH_PAIRS:-2}

fio_run() {   # $1 workload
    case $1 in
    mixed) set -- --rw=randrw --rwmixread=70 --bs=4k --numjobs=4 --iodepth=4 --size=200M ;;
    seq)   set -- --rw=read --bs=4k --numjobs=4 --iodepth=8 --size=48M --offset_increment=48M ;;
    esac
    fio --name=bench --filename=/dev/$DEV --direct=1 --ioengine=libaio --group_reporting \
        --time_based --runtime="$RT" --ramp_time=1 --output-format=terse --terse-version=3 "$@" \
        2>/tmp/fio.err |
        awk -F';' '{ split($30, p, "="); printf "riops=%s wiops=%s rlat_us=%.1f rp99_us=%s wlat_us=%.1f rkbs=%s\n", $8, $49, $40, p[2], $81, $7 }'
}

side() {   # CASE WORKLOAD PAIR SIDE
    bench_elevator_side "case=$1 wl=$2 pair=$3" "$4" "$2"
}

bench_case() {   # $1 case
    note "case $1: $DEV hctx=$(hctx_count $DEV) rotational=$(cat /sys/block/$DEV/queue/rotational) scheduler: $(cat /sys/block/$DEV/queue/scheduler) nr_requests=$(cat /sys/block/$DEV/queue/nr_requests)"
    [ -e /sys/kernel/debug/block/$DEV/hctx0/flags ] && note "case $1: hctx0 flags: $(cat /sys/kernel/debug/block/$DEV/hctx0/flags)"
    for wl in mixed seq; do
        bench_pairs "$PAIRS" side "$1" $wl
    done
}

bench_all() {
    note "fio: $(fio --version); runtime ${RT}s + 1s ramp, $PAIRS pairs per workload"
    DEV=sda
    wait_for_file /sys/block/$DEV 10
    bench_case S

    scsi_debug_disk dev_size_mb=256 ndelay=200000 submit_queues=1
    DEV=$D
    bench_case Q1
    rmmod scsi_debug || { fail "rmmod scsi_debug"; return 0; }

    scsi_debug_disk dev_size_mb=256 ndelay=200000 submit_queues=4 host_max_queue=64
    DEV=$D
    bench_case Q4
    rmmod scsi_debug || fail "rmmod scsi_debug"
}
blkmqd_checks bench_all
