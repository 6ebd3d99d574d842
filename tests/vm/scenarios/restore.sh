#!/bin/sh
# restore (issue 5 §2f) where IRQ affinity is writable: virtio-scsi with vectors=2 has one
# config vector and one shared "virtio0-virtqueues" vector, allocated without affinity
# management, so its smp_affinity_list is writable (unlike the per-queue vectors of
# many-hctx-slow, which 6.1 refuses with EIO).  blkmqd applies mq-deadline, an rq_affinity=2
# override and an irq_affinity=1 override; SIGTERM puts all three back.  Restarted, blkmqd
# re-applies the persisted overrides; `echo 1 > restore` puts them back again and mode reads off.
# smp: 4
# disk: d0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4,vectors=2
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=rest0
# timeout: 120
. /opt/vmtest/guest-lib.sh

D=sda
assert_ok "$D present" wait_for_file /sys/block/$D 10
Q=$(grep -E 'virtio[0-9]+-virtqueues' /proc/interrupts | cut -d: -f1 | tr -d ' ')
assert_match "one shared virtqueues vector" '^[0-9]+$' "$Q"
AFF0=$(read_attr /proc/irq/$Q/smp_affinity_list)
assert_eq "vector $Q affinity (all CPUs, not managed)" 0-3 "$AFF0"
SCHED0=$(read_attr /sys/block/$D/queue/scheduler)
assert_match "$D default elevator none" '^\[none\] mq-deadline' "$SCHED0"
assert_eq "$D rq_affinity" 1 "$(read_attr /sys/block/$D/queue/rq_affinity)"

check_applied() {   # WHEN
    X=$BLKMQD_MOUNT/devices/$D
    assert_ok "$1: echo 2 > policy/rq_affinity" sh -c "echo 2 > $X/policy/rq_affinity"
    assert_ok "$1: echo 1 > policy/irq_affinity" sh -c "echo 1 > $X/policy/irq_affinity"
    wait_for_cmd 10 sh -c "grep -qx 1 /proc/irq/$Q/smp_affinity_list && grep -qx 2 /sys/block/$D/queue/rq_affinity" || true
    assert_match "$1: elevator mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"
    assert_eq "$1: rq_affinity 2" 2 "$(read_attr /sys/block/$D/queue/rq_affinity)"
    assert_eq "$1: IRQ $Q affinity 1" 1 "$(read_attr /proc/irq/$Q/smp_affinity_list)"
    assert_eq "$1: applied/rq_affinity" "ok: 2 (was 1)" "$(read_attr $X/applied/rq_affinity)"
    # first run: "1 placed"; after a restart the persisted override was placed at start-up,
    # the echo then finds it "already placed" and the state stays ok
    assert_match "$1: applied/irq_affinity" '^ok: 1: 1 vector\(s\): (1 placed|0 placed, 1 already placed)' "$(read_attr $X/applied/irq_affinity)"
}
check_restored() {  # WHEN
    assert_eq "$1: scheduler back" "$SCHED0" "$(read_attr /sys/block/$D/queue/scheduler)"
    assert_eq "$1: rq_affinity back to 1" 1 "$(read_attr /sys/block/$D/queue/rq_affinity)"
    assert_eq "$1: IRQ $Q affinity back to $AFF0" "$AFF0" "$(read_attr /proc/irq/$Q/smp_affinity_list)"
}

blkmqd_restore() {
    M=$BLKMQD_MOUNT
    start_blkmqd -v || return 0
    assert_eq "class" many-hctx-slow "$(read_attr $M/devices/$D/class)"
    assert_eq "applied/elevator" "ok: mq-deadline (was none)" "$(read_attr $M/devices/$D/applied/elevator)"
    check_applied "first run"
    stop_blkmqd
    check_restored "SIGTERM"

    start_blkmqd -v || return 0
    assert_eq "restart: policy/rq_affinity persisted" 2 "$(read_attr $M/devices/$D/policy/rq_affinity)"
    assert_eq "restart: policy/irq_affinity persisted" 1 "$(read_attr $M/devices/$D/policy/irq_affinity)"
    check_applied "restart"
    assert_ok "echo 1 > restore" sh -c "echo 1 > $M/restore"
    wait_for_cmd 10 sh -c "grep -qx '$AFF0' /proc/irq/$Q/smp_affinity_list && grep -qx 1 /sys/block/$D/queue/rq_affinity" || true
    assert_eq "restore: mode" off "$(read_attr $M/mode)"
    check_restored "restore file"
    stop_blkmqd
    check_restored "SIGTERM after restore (nothing re-applied)"
}
blkmqd_checks blkmqd_restore
