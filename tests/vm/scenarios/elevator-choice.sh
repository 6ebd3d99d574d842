#!/bin/sh
# elevator-choice: issue 13 items 1-3 on a real kernel.
# Kernel facts: queue/scheduler lists only loaded elevators and "echo kyber > scheduler"
# loads kyber-iosched.ko; a null_blk zoned=1 disk reads queue/zoned host-managed, and before
# zone write plugging (6.10) lists only mq-deadline besides none.
# blkmqd: sda (4-queue virtio-scsi HDD) under bfq -> mq-deadline, explain names the evidence
# against bfq; sdb gets kyber from a config [Device:] Elevator=kyber although kyber is not
# loaded (facts/elevators_loadable, rule elevator-available), the kernel loads it on the
# write; nullb0 (zoned) keeps mq-deadline on 6.1 and policy/elevator=none is refused,
# on 6.12 it is tuned like any fast multi-queue disk.
# smp: 4
# disk: d0 64M
# disk: d1 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=hdd0
# qemu: -drive if=none,id=d1,file={disk:d1},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d1,bus=scsi0.0,rotation_rate=7200,serial=hdd1
# timeout: 150
. /opt/vmtest/guest-lib.sh

assert_ok "sda present" wait_for_file /sys/block/sda 10
assert_ok "sdb present" wait_for_file /sys/block/sdb 10
assert_eq "sda hctx count" 4 "$(hctx_count sda)"
assert_eq "sda rotational" 1 "$(read_attr /sys/block/sda/queue/rotational)"
assert_eq "kyber not loaded yet" no "$([ -e /sys/module/kyber_iosched ] && echo yes || echo no)"
assert_eq "sdb does not list kyber" no "$(grep -q kyber /sys/block/sdb/queue/scheduler && echo yes || echo no)"
assert_ok "modules.dep lists kyber-iosched" grep -q 'kyber-iosched.ko' /lib/modules/$(uname -r)/modules.dep
# Fedora's 60-block-scheduler.rules leaves bfq on every sd* disk
assert_ok "echo bfq > sda scheduler (auto-loads bfq)" sh -c "echo bfq > /sys/block/sda/queue/scheduler"
assert_match "sda elevator bfq" '\[bfq\]' "$(read_attr /sys/block/sda/queue/scheduler)"

assert_ok "modprobe null_blk zoned=1" modprobe null_blk nr_devices=1 zoned=1 submit_queues=4 gb=1 zone_size=64
assert_ok "nullb0 present" wait_for_file /sys/block/nullb0 10
assert_eq "nullb0 queue/zoned" host-managed "$(read_attr /sys/block/nullb0/queue/zoned)"
Z_SCHED=$(read_attr /sys/block/nullb0/queue/scheduler)
note "nullb0 scheduler on $(uname -r): $Z_SCHED"
case "$VMTEST_KERNEL_SERIES" in
6.1) assert_match "6.1: zoned nullb0 offers only mq-deadline (ELEVATOR_F_ZBD_SEQ_WRITE)" '^\[mq-deadline\] none *$' "$Z_SCHED" ;;
esac

blkmqd_elevator_choice() {
    M=$BLKMQD_MOUNT
    printf '[Device:hdd1]\nMatchName=sdb\nElevator=kyber\n' > /tmp/blkmqd.conf
    start_blkmqd -v --config /tmp/blkmqd.conf --devices 'sd*,nullb*' || return 0

    X=$M/devices/sda
    assert_eq "sda class" many-hctx-slow "$(read_attr $X/class)"
    assert_eq "sda plan/elevator" mq-deadline "$(read_attr $X/plan/elevator)"
    wait_for_match 10 /sys/block/sda/queue/scheduler '\[mq-deadline\]' || true
    assert_match "sda: bfq replaced by mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/sda/queue/scheduler)"
    assert_match "sda explain: evidence against bfq" 'elevator=(bfq|mq-deadline \(bfq before blkmqd switched it\)) -> (bfq )?not wanted here: BFQ on a many-hctx host tagset' "$(read_attr $X/explain)"

    X=$M/devices/sdb
    assert_eq "sdb plan/elevator (config, loadable)" kyber "$(read_attr $X/plan/elevator)"
    wait_for_match 10 /sys/block/sdb/queue/scheduler '\[kyber\]' || true
    assert_match "sdb: kyber written, the kernel loaded it" '\[kyber\]' "$(read_attr /sys/block/sdb/queue/scheduler)"
    assert_eq "kyber_iosched loaded" yes "$([ -e /sys/module/kyber_iosched ] && echo yes || echo no)"
    assert_eq "sdb applied/elevator" "ok: kyber (was none)" "$(read_attr $X/applied/elevator)"
    # after the write the facts are re-read: kyber is listed now, no longer "loadable"
    assert_eq "sdb facts/elevators_loadable no longer names kyber" no \
        "$(grep -q kyber $X/facts/elevators_loadable && echo yes || echo no)"

    X=$M/devices/nullb0
    assert_eq "nullb0 facts/zoned" host-managed "$(read_attr $X/facts/zoned)"
    assert_eq "nullb0 class" fast-multiqueue "$(read_attr $X/class)"
    case "$VMTEST_KERNEL_SERIES" in
    6.1)
        assert_eq "6.1: nullb0 plan/elevator (zoned before 6.10)" mq-deadline "$(read_attr $X/plan/elevator)"
        assert_match "6.1: explain names the zoned rule" '\(rule elevator-zoned\)' "$(read_attr $X/explain)"
        assert_fail "6.1: policy/elevator=none refused on a zoned disk" sh -c "echo none > $X/policy/elevator"
        sleep 1
        assert_match "6.1: nullb0 still mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/nullb0/queue/scheduler)"
        ;;
    *)
        assert_match "6.10+: explain says zone write plugging" 'zone write plugging \(6.10, dd291d77cc90\) orders zoned writes' "$(read_attr $X/explain)"
        assert_eq "6.10+: nullb0 plan/elevator like any fast multi-queue disk" none "$(read_attr $X/plan/elevator)"
        ;;
    esac
    stop_blkmqd
}
blkmqd_checks blkmqd_elevator_choice
