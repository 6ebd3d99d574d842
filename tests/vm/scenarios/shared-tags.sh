#!/bin/sh
# shared-tags: scsi_debug with 4 submit queues sharing one host-wide tagset (host_max_queue).
# Kernel facts: 4 hctx, nr_tags=64, TAG_HCTX_SHARED in debugfs hctx flags, default
# mq-deadline, nr_hw_queues=4/can_queue=64 on the host, no host_tagset sysfs attribute.
# blkmqd: shared_tags=1 (facts, every hctx, hosts/), class shared-tags (non-rotational),
# hosts/<host>/ (can_queue 64, luns, disks, host_busy rising under 8 direct readers,
# occupancy_pct); with queue/rotational=1 set before a restart: class many-hctx-slow.
# smp: 4
# timeout: 90
. /opt/vmtest/guest-lib.sh

scsi_debug_disk submit_queues=4 host_max_queue=64 delay=1 dev_size_mb=64
[ -n "$D" ] || exit 1
H=host$(ls /sys/block/$D/device/scsi_device/ | cut -d: -f1)
note "disk $D on $H"
assert_eq "$D hctx count" 4 "$(hctx_count $D)"
assert_eq "$D hctx0 nr_tags" 64 "$(read_attr /sys/block/$D/mq/0/nr_tags)"
for h in 0 1 2 3; do
    assert_match "hctx$h flags has TAG_HCTX_SHARED" 'TAG_HCTX_SHARED' "$(read_attr /sys/kernel/debug/block/$D/hctx$h/flags)"
done
assert_match "$D default elevator mq-deadline (shared tags)" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"
assert_eq "$H nr_hw_queues" 4 "$(read_attr /sys/class/scsi_host/$H/nr_hw_queues)"
assert_eq "$H can_queue" 64 "$(read_attr /sys/class/scsi_host/$H/can_queue)"
assert_eq "$H proc_name" scsi_debug "$(read_attr /sys/class/scsi_host/$H/proc_name)"
assert_eq "no host_tagset attribute" no "$([ -e /sys/class/scsi_host/$H/host_tagset ] && echo yes || echo no)"
assert_eq "scsi_debug.host_max_queue param" 64 "$(read_attr /sys/module/scsi_debug/parameters/host_max_queue)"
assert_eq "host_max_queue param mode 0444" 444 "$(stat -c %a /sys/module/scsi_debug/parameters/host_max_queue)"
assert_eq "$D rotational (scsi_debug reports a non-rotating medium)" 0 "$(read_attr /sys/block/$D/queue/rotational)"

readers() {     # N: N background direct readers over the whole disk, pids in $RPIDS
    RPIDS=""
    for i in $(seq 1 "$1"); do
        dd if=/dev/$D of=/dev/null bs=4k iflag=direct skip=$((i * 1000)) count=4000 2>/dev/null &
        RPIDS="$RPIDS $!"
    done
}
_busy() { _b=$(cat $M/hosts/$H/host_busy 2>/dev/null); [ -n "$_b" ] && [ "$_b" -gt 0 ] 2>/dev/null; }

blkmqd_shared_tags() {
    M=$BLKMQD_MOUNT
    X=$M/devices/$D
    start_blkmqd -v || return 0
    assert_eq "facts/shared_tags" 1 "$(read_attr $X/facts/shared_tags)"
    for h in 0 1 2 3; do
        assert_eq "hctx/$h/shared_tags" 1 "$(read_attr $X/hctx/$h/shared_tags)"
        assert_eq "hctx/$h/nr_tags" 64 "$(read_attr $X/hctx/$h/nr_tags)"
    done
    assert_eq "facts/host_can_queue" 64 "$(read_attr $X/facts/host_can_queue)"
    assert_eq "facts/driver" scsi_debug "$(read_attr $X/facts/driver)"
    assert_eq "class (non-rotational on a shared tagset)" shared-tags "$(read_attr $X/class)"
    assert_match "explain: class rule" 'class shared-tags \(rule shared-tags\)' "$(read_attr $X/explain)"
    assert_eq "plan/elevator" mq-deadline "$(read_attr $X/plan/elevator)"
    assert_eq "applied/elevator (the kernel's default already)" "kept: mq-deadline" "$(read_attr $X/applied/elevator)"
    assert_match "sysfs scheduler mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"

    HD=$M/hosts/$H
    assert_file "hosts/$H" $HD
    assert_eq "hosts/$H/driver" scsi_debug "$(read_attr $HD/driver)"
    assert_eq "hosts/$H/shared_tags" 1 "$(read_attr $HD/shared_tags)"
    assert_eq "hosts/$H/nr_hw_queues" 4 "$(read_attr $HD/nr_hw_queues)"
    assert_eq "hosts/$H/can_queue" 64 "$(read_attr $HD/can_queue)"
    assert_eq "hosts/$H/luns" 1 "$(read_attr $HD/luns)"
    assert_eq "hosts/$H/disks" "$D" "$(read_attr $HD/disks)"
    assert_int "hosts/$H/host_busy (idle)" "$(read_attr $HD/host_busy)"
    assert_num "hosts/$H/occupancy_pct (idle)" "$(read_attr $HD/occupancy_pct)"
    readers 8
    if wait_for_cmd 10 _busy; then
        pass "hosts/$H/host_busy > 0 under 8 direct readers ($(read_attr $HD/host_busy))"
    else
        fail "hosts/$H/host_busy > 0 under 8 direct readers" "stayed '$(read_attr $HD/host_busy)' (sysfs $(read_attr /sys/class/scsi_host/$H/host_busy))"
    fi
    occ=$(read_attr $HD/occupancy_pct)
    assert_num "hosts/$H/occupancy_pct (busy)" "$occ"
    note "busy: host_busy=$(read_attr $HD/host_busy) occupancy_pct=$occ sysfs host_busy=$(read_attr /sys/class/scsi_host/$H/host_busy)"
    kill $RPIDS 2>/dev/null || true
    wait $RPIDS 2>/dev/null || true
    stop_blkmqd

    # the same disk, declared rotating before the daemon starts: many-hctx-slow (shared tags)
    echo 1 > /sys/block/$D/queue/rotational
    start_blkmqd -v || return 0
    assert_eq "rotational=1: facts/rotational" 1 "$(read_attr $X/facts/rotational)"
    assert_eq "rotational=1: class" many-hctx-slow "$(read_attr $X/class)"
    assert_eq "rotational=1: plan/elevator" mq-deadline "$(read_attr $X/plan/elevator)"
    assert_eq "rotational=1: applied/elevator" "kept: mq-deadline" "$(read_attr $X/applied/elevator)"
    assert_eq "rotational=1: facts/shared_tags" 1 "$(read_attr $X/facts/shared_tags)"
    stop_blkmqd
    assert_match "after stop: mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"
}
blkmqd_checks blkmqd_shared_tags
