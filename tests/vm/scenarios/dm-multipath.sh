#!/bin/sh
# dm-multipath (issue 13 item 4) on a real kernel: two virtio-scsi paths to one LU (one image,
# one serial), a dm-multipath map made with dmsetup as multipathd would (uuid "mpath-...").
# Kernel facts: a request-based map (queue_mode mq, the target's default) has mq/ and
# queue/scheduler of its own; each leg lists the map in holders/ and the map its legs in
# slaves/; dm/uuid carries the uuid given; a bio-based map (queue_mode bio) has no mq/.
# blkmqd: legs of the request-based map are class multipath-leg, elevator none (written over
# mq-deadline, put back at SIGTERM); the map is tuned by its own queue (rule multipath-map);
# legs of a bio-based map are tuned as themselves (rule multipath-leg-bio).
# smp: 2
# disk: d0 64M
# binary: /usr/sbin/dmsetup
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# qemu: -drive if=none,id=p0,file={disk:d0},format=raw,cache=none,aio=threads,file.locking=off
# qemu: -device scsi-hd,drive=p0,bus=scsi0.0,rotation_rate=7200,serial=lu0,share-rw=on
# qemu: -drive if=none,id=p1,file={disk:d0},format=raw,cache=none,aio=threads,file.locking=off
# qemu: -device scsi-hd,drive=p1,bus=scsi0.0,rotation_rate=7200,serial=lu0,share-rw=on
# timeout: 150
. /opt/vmtest/guest-lib.sh

export DM_DISABLE_UDEV=1
assert_ok "sda present" wait_for_file /sys/block/sda 10
assert_ok "sdb present" wait_for_file /sys/block/sdb 10
assert_ok "dmsetup packed" command -v dmsetup
assert_ok "dm_multipath loaded" sh -c "modprobe dm-multipath && modprobe dm-round-robin"
SECTORS=$(read_attr /sys/block/sda/size)
assert_int "sda size" "$SECTORS"
SDA=$(read_attr /sys/block/sda/dev)
SDB=$(read_attr /sys/block/sdb/dev)
UUID=mpath-0QEMU_QEMU_HARDDISK_lu0

# mq-deadline on both paths before blkmqd: what a rotational sd disk gets from distribution rules
for d in sda sdb; do echo mq-deadline > /sys/block/$d/queue/scheduler; done

mpath_create() {   # NAME FEATURES...: a 2-path round-robin map over sda and sdb
    n=$1; shift
    dmsetup create "$n" --noudevsync -u "$UUID" \
        --table "0 $SECTORS multipath $* 0 1 1 round-robin 0 2 1 $SDA 1000 $SDB 1000"
}
dm_of() { ls /sys/block/sda/holders 2>/dev/null | head -n1; }

assert_ok "dmsetup create mpatha (request-based)" mpath_create mpatha 0
DM=$(dm_of)
assert_match "sda holders/ names the map" '^dm-[0-9]+$' "$DM"
assert_eq "sdb holders/ names the same map" "$DM" "$(ls /sys/block/sdb/holders 2>/dev/null | head -n1)"
assert_eq "map dm/uuid" "$UUID" "$(read_attr /sys/block/$DM/dm/uuid)"
assert_eq "map slaves/" "sda sdb" "$(ls /sys/block/$DM/slaves | tr '\n' ' ' | sed 's/ $//')"
assert_ok "request-based map has mq/" test -d /sys/block/$DM/mq
assert_eq "map rotational (a leg is)" 1 "$(read_attr /sys/block/$DM/queue/rotational)"
note "map $DM: scheduler $(read_attr /sys/block/$DM/queue/scheduler), hctx $(hctx_count $DM)"

blkmqd_dm_multipath() {
    M=$BLKMQD_MOUNT
    start_blkmqd -v --devices "sd*,dm-*" || return 0
    for d in sda sdb; do
        X=$M/devices/$d
        assert_eq "$d class" multipath-leg "$(read_attr $X/class)"
        assert_match "$d facts/multipath" "^leg of $DM" "$(read_attr $X/facts/multipath)"
        assert_eq "$d plan/elevator" none "$(read_attr $X/plan/elevator)"
        wait_for_match 10 /sys/block/$d/queue/scheduler '\[none\]' || true
        assert_match "$d: none written over mq-deadline" '^\[none\]' "$(read_attr /sys/block/$d/queue/scheduler)"
        assert_eq "$d applied/elevator" "ok: none (was mq-deadline)" "$(read_attr $X/applied/elevator)"
        assert_match "$d explain: rule multipath-leg" '\(rule multipath-leg\)' "$(read_attr $X/explain)"
    done
    X=$M/devices/$DM
    assert_eq "$DM facts/multipath" "request-based dm-multipath map" "$(read_attr $X/facts/multipath)"
    assert_match "$DM explain: rule multipath-map" '\(rule multipath-map\)' "$(read_attr $X/explain)"
    assert_ne "$DM class is not stacked" stacked "$(read_attr $X/class)"
    note "$DM class $(read_attr $X/class), plan/elevator $(read_attr $X/plan/elevator)"
    stop_blkmqd
    for d in sda sdb; do
        assert_match "SIGTERM: $d mq-deadline restored" '\[mq-deadline\]' "$(read_attr /sys/block/$d/queue/scheduler)"
    done
    assert_ok "dmsetup remove mpatha" dmsetup remove --noudevsync mpatha

    # bio-based: bios pass the legs' own elevators, so the legs are tuned as disks
    assert_ok "dmsetup create mpathb (queue_mode bio)" mpath_create mpathb 2 queue_mode bio
    DM=$(dm_of)
    assert_fail "bio-based map has no mq/" test -d /sys/block/$DM/mq
    start_blkmqd -v --devices "sd*,dm-*" || return 0
    for d in sda sdb; do
        X=$M/devices/$d
        assert_match "$d facts/multipath (bio)" "^leg of bio-based $DM" "$(read_attr $X/facts/multipath)"
        assert_ne "$d class (bio map's leg)" multipath-leg "$(read_attr $X/class)"
        assert_match "$d explain: rule multipath-leg-bio" '\(rule multipath-leg-bio\)' "$(read_attr $X/explain)"
        assert_ne "$d plan/elevator is not forced to none" none "$(read_attr $X/plan/elevator)"
    done
    stop_blkmqd
    assert_ok "dmsetup remove mpathb" dmsetup remove --noudevsync mpathb

    # the map made while blkmqd runs (multipathd after a path's second link comes up): the
    # kernel sends an add uevent for the map only, none for the legs that gain a holder
    start_blkmqd -v --devices "sd*,dm-*" || return 0
    assert_eq "no map yet: sda class" many-hctx-slow "$(read_attr $M/devices/sda/class)"
    assert_ok "dmsetup create mpathc while blkmqd runs" mpath_create mpathc 0
    DM=$(dm_of)
    for d in sda sdb; do
        X=$M/devices/$d
        wait_for_match 15 $X/class '^multipath-leg$' || true
        assert_eq "$d class after the map appeared" multipath-leg "$(read_attr $X/class)"
        wait_for_match 15 /sys/block/$d/queue/scheduler '^\[none\]' || true
        assert_match "$d: none written after the map appeared" '^\[none\]' "$(read_attr /sys/block/$d/queue/scheduler)"
    done
    assert_ok "dmsetup remove mpathc while blkmqd runs" dmsetup remove --noudevsync mpathc
    for d in sda sdb; do
        X=$M/devices/$d
        wait_for_match 15 $X/class '^many-hctx-slow$' || true
        assert_eq "$d class after the map went" many-hctx-slow "$(read_attr $X/class)"
        wait_for_match 15 /sys/block/$d/queue/scheduler '\[mq-deadline\]' || true
        assert_match "$d: mq-deadline back after the map went" '\[mq-deadline\]' "$(read_attr /sys/block/$d/queue/scheduler)"
    done
    stop_blkmqd
    for d in sda sdb; do
        assert_match "SIGTERM: $d mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$d/queue/scheduler)"
    done
}
blkmqd_checks blkmqd_dm_multipath
