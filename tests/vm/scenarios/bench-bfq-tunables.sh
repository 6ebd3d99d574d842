#!/bin/sh
# bench-bfq-tunables: P10 (docs/BENCHMARKS.md, issue 18) - a slow rotational disk under BFQ with
# a dbench-like many-client workload (many processes each doing small synchronous writes):
# BFQ's own defaults against the tunables blkmqd writes for it. One hctx (virtio-scsi
# num_queues=1: class single-queue-rotational, which keeps bfq), QEMU throttle 150 IOPS.
#   A   bfq with its defaults (no daemon)                 run twice: A1, A2 (the A/A pair)
#   B   blkmqd running with IoSched.bfq.slice_idle=0 (BENCH_TUNABLES to change), bfq kept
# Order A1 B A2. Workload (fio psync, O_DIRECT|O_SYNC): BENCH_JOBS (16) writers of 4 KiB at random
# offsets in their own 8 MiB region, BENCH_RUNTIME (10) s + 1 s ramp. Results:
# "# BENCH run=A1|B|A2 tunables=... wiops= wlat_us= wp99_us=".
# smp: 2
# mem: 1024
# disk: d0 256M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=1
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads,throttling.iops-total=150
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=bfq0
# needs: fio
# timeout: 600
. /opt/vmtest/guest-lib.sh

RT=${BENCH_RUNTIME:-10}
JOBS=${BENCH_JOBS:-16}
TUN=${BENCH_TUNABLES:-IoSched.bfq.slice_idle=0}
DEV=sda
Q=/sys/block/$DEV/queue

fio_run() {
    fio --name=clients --filename=/dev/$DEV --direct=1 --sync=1 --ioengine=psync --rw=randwrite --bs=4k \
        --numjobs="$JOBS" --size=8M --offset_increment=8M --group_reporting --time_based --runtime="$RT" \
        --ramp_time=1 --output-format=terse --terse-version=3 2>/tmp/fio.err |
        awk -F';' '{ split($71, p, "="); printf "wiops=%s wlat_us=%.1f wp99_us=%s\n", $49, $81, p[2] }'
}

tunables() { for f in slice_idle low_latency; do printf '%s=%s ' $f "$(cat $Q/iosched/$f)"; done; }

run_a() {   # $1 name
    r=$(fio_run)
    note "BENCH run=$1 elevator=bfq tunables=\"$(tunables)\" $r"
}

run_b() {
    printf '[Class:single-queue-rotational]\nElevator=bfq\n' > /tmp/bench.conf
    printf '%s\n' $TUN >> /tmp/bench.conf
    start_blkmqd --devices $DEV --config /tmp/bench.conf --state-dir /tmp/bench-state || return 1
    wait_for_cmd 20 sh -c "grep -q ' ok: ' $BLKMQD_MOUNT/devices/$DEV/applied/iosched" || true
    applied=$(tr '\n' ';' < $BLKMQD_MOUNT/devices/$DEV/applied/iosched)
    r=$(fio_run)
    note "BENCH run=B elevator=bfq tunables=\"$(tunables)\" $r applied=\"$applied\""
    stop_blkmqd >/dev/null
}

bench() {
    wait_for_file /sys/block/$DEV 10
    echo bfq > $Q/scheduler
    note "fio: $(fio --version); $DEV hctx=$(hctx_count $DEV) rotational=$(cat $Q/rotational) scheduler: $(cat $Q/scheduler); $JOBS writers, ${RT}s + 1s ramp; B: $TUN"
    run_a A1
    run_b
    echo bfq > $Q/scheduler       # bfq again from its defaults (blkmqd put its values back anyway)
    run_a A2
}
blkmqd_checks bench
