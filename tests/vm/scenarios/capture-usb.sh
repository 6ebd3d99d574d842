#!/bin/sh
# Fixture capture: the USB disks of scenarios/usb.sh behind QEMU's xHCI controller (issue 25
# item 4): a usb-storage stick (BOT, QEMU's scsi-disk), a usb-uas bridge with a scsi-hd that
# reports a non-rotating medium (rotation_rate=1, driver uas) and a usb-bot reader with two
# LUNs (one SCSI host, LUN 0 and 1, driver usb-storage); no disk of another transport.
# Output: --share DIR/vm-<kernel series>-usb
# needs: share
# smp: 2
# disk: u0 32M
# disk: u1 32M
# disk: u2 32M
# disk: u3 32M
# modules: xhci_pci usb_storage uas
# qemu: -device qemu-xhci,id=xhci
# qemu: -drive if=none,id=u0,file={disk:u0},format=raw,cache=none,aio=threads
# qemu: -device usb-storage,bus=xhci.0,drive=u0,serial=bot0
# qemu: -device usb-uas,id=uas0,bus=xhci.0
# qemu: -drive if=none,id=u1,file={disk:u1},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,bus=uas0.0,scsi-id=0,lun=0,drive=u1,rotation_rate=1,serial=uas0
# qemu: -device usb-bot,id=bot1,bus=xhci.0
# qemu: -drive if=none,id=u2,file={disk:u2},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,bus=bot1.0,scsi-id=0,lun=0,drive=u2,serial=card0
# qemu: -drive if=none,id=u3,file={disk:u3},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,bus=bot1.0,scsi-id=0,lun=1,drive=u3,serial=card1
# timeout: 240
. /opt/vmtest/guest-lib.sh
# USB enumeration and sd's probe are asynchronous: wait for the four disks (a glob, no fork a
# step: a poll of forks is slow under TCG)
_four_disks() { set -- /sys/block/sd*; [ $# -ge 4 ] && [ -e "$4" ]; }
_n=0
while ! _four_disks && [ $_n -lt 60 ]; do sleep 1; _n=$((_n + 1)); done
assert_ok "four sd disks (4 USB LUNs) within 60 s ($_n s)" _four_disks
_disks=
for _b in /sys/block/sd*; do
    _d=${_b##*/}
    _p=$(readlink -f $_b/device)
    _i=${_p%/host*}
    note "$_d: $_p interface driver $(basename "$(readlink $_i/driver)") serial $(cat $_i/../serial 2>/dev/null) scheduler $(cat $_b/queue/scheduler) rotational $(cat $_b/queue/rotational)"
    _disks="$_disks $_d"
done
export CAPTURE_MODULES="usb_storage uas"
export CAPTURE_NOTE="QEMU -device qemu-xhci; usb-storage serial=bot0; usb-uas + scsi-hd rotation_rate=1 serial=uas0; usb-bot + scsi-hd lun 0 serial=card0 and lun 1 serial=card1; -smp 2; no I/O"
# shellcheck disable=SC2086
capture_fixture vm-$VMTEST_KERNEL_SERIES-usb $_disks
