#!/bin/sh
# hotplug: a scsi-hd is added and removed through the QEMU monitor (HMP, requested by the
# guest over the serial console).  Kernel facts: /sys/block entry appears and disappears.
# blkmqd: devices/<disk> follows the hot-plug.
# smp: 2
# disk: d1 32M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# timeout: 120
. /opt/vmtest/guest-lib.sh

assert_eq "no disk before hot-plug" "" "$(ls /sys/block | grep '^sd' || true)"

plug() {
    assert_ok "hmp drive_add" hmp drive_add 0 if=none,id=d1,file={disk:d1},format=raw,cache=none,aio=threads
    assert_ok "hmp device_add scsi-hd" hmp device_add scsi-hd,drive=d1,bus=scsi0.0,id=h1,rotation_rate=7200,serial=hot1
    assert_ok "/sys/block/sda appears" wait_for_file /sys/block/sda 20
}
unplug() {
    assert_ok "hmp device_del h1" hmp device_del h1
    assert_ok "/sys/block/sda disappears" wait_for_gone /sys/block/sda 20
}

plug
assert_eq "hot-plugged sda rotational" 1 "$(read_attr /sys/block/sda/queue/rotational)"
assert_eq "hot-plugged sda hctx" 2 "$(hctx_count sda)"
assert_fail "hmp reports errors (unknown device)" hmp device_del no-such-device
unplug

blkmqd_hotplug() {
    start_blkmqd -v
    plug
    assert_ok "blkmqd devices/sda appears" wait_for_file $BLKMQD_MOUNT/devices/sda 20
    unplug
    assert_ok "blkmqd devices/sda disappears" wait_for_gone $BLKMQD_MOUNT/devices/sda 20
    stop_blkmqd
}
blkmqd_checks blkmqd_hotplug
