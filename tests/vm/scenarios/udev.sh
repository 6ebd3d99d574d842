#!/bin/sh
# udev: systemd-udevd runs in the guest (/init starts it, `needs: udev`), so blkmqd's monitor
# uses the udev source, not raw kernel uevents.  blkmqd: version says "source udev"; a
# null_blk disk created through configfs and a hot-plugged scsi-hd appear and disappear.
# smp: 2
# needs: udev
# disk: d1 32M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# timeout: 120
. /opt/vmtest/guest-lib.sh

assert_ok "systemd-udevd running" pidof systemd-udevd
assert_ok "udev control socket" test -S /run/udev/control

blkmqd_udev() {
    M=$BLKMQD_MOUNT
    start_blkmqd -v || return 0
    assert_match "version: source udev" ' source udev ' "$(read_attr $M/version)"
    # null_blk through configfs
    modprobe null_blk nr_devices=0
    N=/sys/kernel/config/nullb/udev0
    mkdir $N
    echo 2 > $N/submit_queues; echo 0 > $N/memory_backed; echo 1 > $N/irqmode; echo 256 > $N/size
    echo 1 > $N/power
    assert_ok "/sys/block/udev0 appears" wait_for_file /sys/block/udev0 10
    assert_ok "devices/udev0 appears (udev source)" wait_for_file $M/devices/udev0/class 10
    assert_eq "devices/udev0/class" fast-multiqueue "$(read_attr $M/devices/udev0/class)"
    assert_match "udev database knows udev0" 'DEVNAME=/dev/udev0' "$(udevadm info -q property -n /dev/udev0 2>&1)"
    echo 0 > $N/power
    rmdir $N
    assert_ok "devices/udev0 disappears" wait_for_gone $M/devices/udev0 10
    # hot-plugged SCSI disk
    assert_ok "hmp drive_add" hmp drive_add 0 if=none,id=d1,file={disk:d1},format=raw,cache=none,aio=threads
    assert_ok "hmp device_add" hmp device_add scsi-hd,drive=d1,bus=scsi0.0,id=h1,rotation_rate=7200,serial=udev1
    assert_ok "/sys/block/sda appears" wait_for_file /sys/block/sda 20
    assert_ok "devices/sda appears (udev source)" wait_for_file $M/devices/sda/class 20
    assert_eq "devices/sda/class" many-hctx-slow "$(read_attr $M/devices/sda/class)"
    assert_ok "udev by-id link for the hot-plugged disk" wait_for_cmd 10 sh -c 'ls /dev/disk/by-id/ | grep -q udev1'
    assert_ok "hmp device_del" hmp device_del h1
    assert_ok "devices/sda disappears" wait_for_gone $M/devices/sda 20
    assert_eq "no stale devices/ entries" "" "$(ls $M/devices)"
    stop_blkmqd
}
blkmqd_checks blkmqd_udev
