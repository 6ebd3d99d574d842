#!/bin/sh
# speed: slow or fast by what the disk does (policies/speed.h), with blkmqd's shipped defaults
# (BLKMQD_VIRTUAL=list: no suite opt-ins, so QEMU's flags are untrusted as on any VM).
#   vda  virtio-blk, 4 queues, on a RAM-backed file (tmpfs on the host): rotational=1 as every
#        virtio-blk disk, set to mq-deadline before start (what a many-hctx-slow verdict wrote
#        before): measured fast -> fast-multiqueue, none written
#   sda  scsi-hd rotation_rate=1 (non-rotating) behind virtio-scsi num_queues=4, throttled by
#        QEMU to 200 IOPS: measured slow -> many-hctx-slow, mq-deadline written
# Both start unknown, nothing written, explain waiting for a measurement. fio phase 1 (4 KiB
# random reads on both): each is classed by measurement within the documented time (a window
# of MinIOs=1024 I/Os and WindowSec=10 s, read at the BPF events, at most 1 s apart, or 1.5 s
# after the last one) and switches once (one "Measured" journal line each); phase 2 (64 KiB
# reads, a second fio with another block size): no second switch, the class and the elevator
# stay. Service times from the BPF provider (facts/speed_source), metrics; stop puts both back.
# smp: 4
# mem: 1024
# disk: f0 128M ram
# disk: s0 128M
# qemu: -drive if=none,id=f0,file={disk:f0},format=raw,cache=writeback,aio=threads
# qemu: -device virtio-blk-pci,drive=f0,num-queues=4,serial=fast0
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=s0,file={disk:s0},format=raw,cache=none,aio=threads,throttling.iops-total=200
# qemu: -device scsi-hd,drive=s0,bus=scsi0.0,rotation_rate=1,serial=slow0
# needs: fio
# timeout: 300
. /opt/vmtest/guest-lib.sh

M=$BLKMQD_MOUNT
BLKMQD_VIRTUAL=list     # blkmqd's shipped defaults (guest-lib: no suite drop-in)
F=vda
S=sda
assert_eq "$F rotational (virtio-blk says 1)" 1 "$(read_attr /sys/block/$F/queue/rotational)"
assert_eq "$S rotational (rotation_rate=1)" 0 "$(read_attr /sys/block/$S/queue/rotational)"
assert_eq "$F hctx" 4 "$(hctx_count $F)"
assert_eq "$S hctx" 4 "$(hctx_count $S)"
echo mq-deadline >/sys/block/$F/queue/scheduler
assert_match "$F set to mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$F/queue/scheduler)"
assert_match "$S default none" '^\[none\]' "$(read_attr /sys/block/$S/queue/scheduler)"

elevator() { sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$1/queue/scheduler"; }
fio_phase() {   # BS SECONDS: random reads on both disks at once
    _pids=""
    for d in $F $S; do
        fio --name=p --filename=/dev/$d --rw=randread --bs=$1 --direct=1 --ioengine=libaio --iodepth=8 \
            --size=100M --time_based --runtime=$2 --output-format=terse >/tmp/fio.$d 2>&1 &
        _pids="$_pids $!"
    done
    wait $_pids     # the two fio runs only: a bare wait would wait for blkmqd too (start_blkmqd's &)
    for d in $F $S; do grep ';' /tmp/fio.$d | cut -d';' -f8 >/tmp/iops.$d; done
    note "fio bs=$1 ${2}s: $F $(cat /tmp/iops.$F) IOPS, $S $(cat /tmp/iops.$S) IOPS"
}

checks() {
    start_blkmqd -v --devices "$F,$S" || return 0
    src=$(read_attr $M/devices/$F/facts/speed_source)
    note "speed source: $src"
    assert_match "speed measured by BPF service times" '^service time: BPF' "$src"
    for d in $F $S; do
        assert_eq "$d: unknown before any I/O" unknown "$(read_attr $M/devices/$d/class)"
        assert_match "$d: facts/speed unmeasured" '^unmeasured \(' "$(read_attr $M/devices/$d/facts/speed)"
        assert_match "$d: facts/rotational_hint untrusted" '^untrusted: ' "$(read_attr $M/devices/$d/facts/rotational_hint)"
        assert_match "$d: explain waits for a measurement" 'waiting for a measurement \(rule speed-unknown\)' \
            "$(cat $M/devices/$d/explain)"
    done
    assert_eq "$F: nothing written while unknown" mq-deadline "$(elevator $F)"
    assert_eq "$S: nothing written while unknown" none "$(elevator $S)"

    # phase 1: classed by measurement within two windows (WindowSec=10 each, + 1.5 s tail + slack):
    # under TCG a first window can land between the bounds (6.1: vda p50 3.4 ms, then 782 µs), and
    # the class then waits for the next one, as documented
    t0=$(cut -d' ' -f1 /proc/uptime)
    fio_phase 4k 24
    wait_for_cmd 20 sh -c "grep -qx fast-multiqueue $M/devices/$F/class && grep -qx many-hctx-slow $M/devices/$S/class" || true
    t1=$(cut -d' ' -f1 /proc/uptime)
    note "classed $(awk "BEGIN { print $t1 - $t0 }") s after the I/O began"
    note "$F: $(read_attr $M/devices/$F/facts/speed)"
    note "$S: $(read_attr $M/devices/$S/facts/speed)"
    assert_eq "$F: fast-multiqueue by measurement" fast-multiqueue "$(read_attr $M/devices/$F/class)"
    assert_eq "$S: many-hctx-slow by measurement" many-hctx-slow "$(read_attr $M/devices/$S/class)"
    assert_match "$F: facts/speed fast, p50 and p99" '^fast: p50 [0-9.]+ (µs|ms), p99 ' "$(read_attr $M/devices/$F/facts/speed)"
    assert_match "$S: facts/speed slow" '^slow: p50 [0-9.]+ (ms|s), p99 ' "$(read_attr $M/devices/$S/facts/speed)"
    wait_for_cmd 10 sh -c "[ \"\$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/$F/queue/scheduler)\" = none ] &&
        [ \"\$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/$S/queue/scheduler)\" = mq-deadline ]" || true
    assert_eq "$F: none written (the switch)" none "$(elevator $F)"
    assert_eq "$S: mq-deadline written (the switch)" mq-deadline "$(elevator $S)"
    assert_match "$F: explain by measurement" 'speed=fast: .* -> fast, by measurement \(rule speed-measured\)' "$(cat $M/devices/$F/explain)"
    assert_match "$S: explain by measurement" 'speed=slow: .* -> slow, by measurement \(rule speed-measured\)' "$(cat $M/devices/$S/explain)"
    assert_eq "$F: one 'Measured' journal line" 1 "$(grep -c "$F: Measured fast (was unmeasured)" /tmp/blkmqd.log)"
    assert_eq "$S: one 'Measured' journal line" 1 "$(grep -c "$S: Measured slow (was unmeasured)" /tmp/blkmqd.log)"
    grep 'Measured ' /tmp/blkmqd.log | sed 's/^/# /'

    # phase 2: another block size; the measurement stays on its side, nothing switches back
    fio_phase 64k 12
    sleep 2
    note "$F: $(read_attr $M/devices/$F/facts/speed)"
    note "$S: $(read_attr $M/devices/$S/facts/speed)"
    assert_eq "$F: still fast-multiqueue after the 64k phase" fast-multiqueue "$(read_attr $M/devices/$F/class)"
    assert_eq "$S: still many-hctx-slow after the 64k phase" many-hctx-slow "$(read_attr $M/devices/$S/class)"
    assert_eq "$F: still none" none "$(elevator $F)"
    assert_eq "$S: still mq-deadline" mq-deadline "$(elevator $S)"
    assert_eq "no further 'Measured' line" 2 "$(grep -c ': Measured ' /tmp/blkmqd.log)"
    assert_match "$F: facts/speed still fast" '^fast: ' "$(read_attr $M/devices/$F/facts/speed)"
    assert_match "$S: facts/speed still slow" '^slow: ' "$(read_attr $M/devices/$S/facts/speed)"
    met=$(cat $M/metrics)
    assert_match "metrics: $F fast" "blkmqd_disk_speed\\{device=\"$F\",speed=\"fast\"\\} 1" "$met"
    assert_match "metrics: $S slow" "blkmqd_disk_speed\\{device=\"$S\",speed=\"slow\"\\} 1" "$met"
    assert_match "metrics: $S one change" "blkmqd_disk_speed_changes_total\\{device=\"$S\"\\} 1" "$met"
    assert_match "metrics: $F service time p50" "blkmqd_disk_speed_service_seconds\\{device=\"$F\",quantile=\"0.5\"\\} " "$met"
    stop_blkmqd
    assert_eq "$F: stop puts mq-deadline back" mq-deadline "$(elevator $F)"
    assert_eq "$S: stop puts none back" none "$(elevator $S)"
}
blkmqd_checks checks
