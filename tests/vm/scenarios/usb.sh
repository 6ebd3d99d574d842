#!/bin/sh
# usb: USB disks behind QEMU's xHCI controller (issue 25 item 4), and a virtio-scsi disk to
# compare.  Three USB storage paths: a usb-storage stick (BOT, driver usb-storage, QEMU's own
# scsi-disk), a usb-uas bridge with a scsi-hd that reports a non-rotating medium
# (rotation_rate=1, driver uas), and a usb-bot reader with two LUNs (a card reader: one SCSI
# host, LUN 0 and 1, driver usb-storage).
# Kernel facts: each SCSI host sits on a USB interface (.../usbN/N-P/N-P:1.0/hostH, the
# interface directory has bInterfaceClass 08, mass storage), proc_name uas or usb-storage, one
# hctx each; usb-storage skips the VPD pages (sd keeps rotational=1 whatever the disk says),
# uas reads them (rotation_rate=1 -> rotational 0).
# blkmqd: transport usb with the USB interface in facts/transport_device on every USB disk,
# scsi on the virtio-scsi disk; rotational untrusted (row usb): class unknown, nothing
# written; a [Device:] MatchTransport=usb section matches every USB disk and writes its
# elevator, a MatchTransport=scsi one only the virtio-scsi disk; a stop puts every elevator back.
# Then an elevator whose module has not loaded yet: bfq's module file moved away, the switch
# EINVAL, retried with backoff; the file back, the retry switches (blkmqd_unloaded).
# smp: 2
# disk: u0 32M
# disk: u1 32M
# disk: u2 32M
# disk: u3 32M
# disk: s0 32M
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
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# qemu: -drive if=none,id=s0,file={disk:s0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=s0,bus=scsi0.0,rotation_rate=7200,serial=vscsi0
# timeout: 210
. /opt/vmtest/guest-lib.sh

# The driver bound to the SCSI host's parent device (the USB interface: uas, usb-storage; the
# virtio device: virtio_scsi); uas's host reads proc_name "(null)" (its template has none).
host_driver() { basename "$(readlink "$(readlink -f /sys/block/$1/device/../..)/../driver")"; }
# The sd disk whose SCSI host's parent has driver DRIVER and whose LUN is LUN (default 0).
usb_disk() {
    for _b in /sys/block/sd*; do
        _d=${_b##*/}
        _h=$(ls /sys/block/$_d/device/scsi_device/ 2>/dev/null)
        [ -n "$_h" ] || continue
        [ "${_h##*:}" = "${2:-0}" ] || continue
        [ "$(host_driver $_d)" = "$1" ] && { echo "$_d"; return 0; }
    done
    return 1
}
# USB enumeration and sd's probe are asynchronous: wait for the five disks (a glob, no fork a
# step: a poll of forks is slow under TCG).
_five_disks() { set -- /sys/block/sd*; [ $# -ge 5 ] && [ -e "$5" ]; }
_n=0
while ! _five_disks && [ $_n -lt 60 ]; do sleep 1; _n=$((_n + 1)); done
assert_ok "five sd disks (4 USB LUNs, 1 virtio-scsi) within 60 s ($_n s)" _five_disks
for _b in /sys/block/sd*; do
    _i=$(readlink -f $_b/device/../../..)
    note "${_b##*/}: $(readlink -f $_b/device) proc_name $(cat $_b/device/../../scsi_host/*/proc_name 2>/dev/null) interface driver $(basename "$(readlink $_i/driver)") class $(cat $_i/bInterfaceClass 2>/dev/null) protocol $(cat $_i/bInterfaceProtocol 2>/dev/null) speed $(cat $_i/../speed 2>/dev/null)"
done
UAS=$(usb_disk uas 0) || true
VS=$(usb_disk virtio_scsi 0) || true
LUN1=$(usb_disk usb-storage 1) || true
# the stick and the reader are both usb-storage LUN 0: the reader's host also has LUN 1
for _b in /sys/block/sd*; do
    _d=${_b##*/}
    [ "$(host_driver $_d)" = usb-storage ] || continue
    _h=$(ls /sys/block/$_d/device/scsi_device/)
    [ "${_h##*:}" = 0 ] || continue
    if [ "${_h%%:*}" = "$(ls /sys/block/$LUN1/device/scsi_device/ | cut -d: -f1)" ]; then CARD=$_d; else BOT=$_d; fi
done
note "stick $BOT, uas $UAS, reader LUN 0 $CARD and LUN 1 $LUN1, virtio-scsi $VS"
for v in BOT UAS CARD LUN1 VS; do assert_ne "$v found" "" "$(eval echo \$$v)"; done
[ -n "$BOT" ] && [ -n "$UAS" ] && [ -n "$CARD" ] && [ -n "$LUN1" ] && [ -n "$VS" ] || exit 1
USB_DISKS="$BOT $UAS $CARD $LUN1"

for d in $USB_DISKS; do
    p=$(readlink -f /sys/block/$d/device)
    intf=${p%/host*}
    assert_match "$d: SCSI host on a USB interface (N-P:C.I)" '/usb[0-9]+/[0-9]+-[0-9.]+/[0-9]+-[0-9.]+:[0-9]+\.[0-9]+$' "$intf"
    assert_eq "$d: interface bInterfaceClass (08 mass storage)" 08 "$(read_attr $intf/bInterfaceClass)"
    assert_eq "$d: hctx count" 1 "$(hctx_count $d)"
    h=host$(ls /sys/block/$d/device/scsi_device/ | cut -d: -f1)
    note "$d: $h nr_hw_queues=$(read_attr /sys/class/scsi_host/$h/nr_hw_queues) can_queue=$(read_attr /sys/class/scsi_host/$h/can_queue) queue_depth=$(read_attr /sys/block/$d/device/queue_depth) scheduler=$(read_attr /sys/block/$d/queue/scheduler) rotational=$(read_attr /sys/block/$d/queue/rotational)"
done
assert_eq "$UAS host proc_name (uas's template has none)" "(null)" "$(cat /sys/block/$UAS/device/../../scsi_host/*/proc_name)"
assert_eq "$BOT host proc_name" usb-storage "$(cat /sys/block/$BOT/device/../../scsi_host/*/proc_name)"
# usb-storage sets skip_vpd_pages (drivers/usb/storage/scsiglue.c): no VPD B1h, rotational stays 1
assert_eq "$BOT rotational (usb-storage: no VPD pages read)" 1 "$(read_attr /sys/block/$BOT/queue/rotational)"
assert_eq "$CARD rotational (usb-storage; the scsi-hd says rotation_rate 0)" 1 "$(read_attr /sys/block/$CARD/queue/rotational)"
assert_eq "$UAS rotational (uas reads VPD B1h: rotation_rate=1)" 0 "$(read_attr /sys/block/$UAS/queue/rotational)"
assert_eq "$VS rotational (rotation_rate=7200)" 1 "$(read_attr /sys/block/$VS/queue/rotational)"
for d in $USB_DISKS; do
    assert_match "$d: single-queue default elevator mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$d/queue/scheduler)"
done

_sched() { sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/$1/queue/scheduler; }
blkmqd_usb() {
    M=$BLKMQD_MOUNT
    for d in $USB_DISKS $VS; do eval "ORIG_$d=\$(_sched $d)"; done
    # the shipped trust table: the suites' drop-in trusts virtio_scsi only, so the USB disks are
    # judged as on a real machine
    printf '[Device:scsi]\nMatchTransport=scsi\nElevator=kyber\n' > /tmp/blkmqd.conf
    start_blkmqd -v --config /tmp/blkmqd.conf --devices 'sd*' || return 0
    for d in $USB_DISKS; do
        X=$M/devices/$d
        intf=$(readlink -f /sys/block/$d/device); intf=${intf%/host*}
        assert_eq "$d facts/transport" usb "$(read_attr $X/facts/transport)"
        assert_eq "$d facts/transport_device (the USB interface)" "${intf#/sys/}" "$(read_attr $X/facts/transport_device)"
        assert_eq "$d facts/nr_hw_queues" 1 "$(read_attr $X/facts/nr_hw_queues)"
        assert_eq "$d facts/rotational" "$(read_attr /sys/block/$d/queue/rotational)" "$(read_attr $X/facts/rotational)"
        assert_match "$d facts/rotational_hint (row usb, untrusted)" '^untrusted: a USB bridge' "$(read_attr $X/facts/rotational_hint)"
        assert_eq "$d class (untrusted flag, not measured)" unknown "$(read_attr $X/class)"
        assert_match "$d explain: waiting for a measurement" 'waiting for a measurement' "$(read_attr $X/explain)"
        assert_eq "$d: MatchTransport=scsi does not match" no "$(grep -q 'Device:scsi' $X/explain && echo yes || echo no)"
        assert_eq "$d elevator untouched" "$(eval echo \$ORIG_$d)" "$(_sched $d)"
        note "$d facts: transport=$(read_attr $X/facts/transport) driver=$(read_attr $X/facts/driver) host=$(read_attr $X/facts/scsi_host) host_nr_hw_queues=$(read_attr $X/facts/host_nr_hw_queues) host_can_queue=$(read_attr $X/facts/host_can_queue) medium_rotation=$(read_attr $X/facts/medium_rotation) identity=$(read_attr $X/facts/identity)"
        note "$d rotational_hint: $(read_attr $X/facts/rotational_hint)"
    done
    assert_eq "$UAS facts/driver" uas "$(read_attr $M/devices/$UAS/facts/driver)"
    for d in $BOT $CARD $LUN1; do
        assert_eq "$d facts/driver" usb-storage "$(read_attr $M/devices/$d/facts/driver)"
    done
    assert_eq "$UAS facts/medium_rotation (VPD B1h)" 1 "$(read_attr $M/devices/$UAS/facts/medium_rotation)"
    X=$M/devices/$VS
    assert_eq "$VS facts/transport" scsi "$(read_attr $X/facts/transport)"
    assert_eq "$VS facts/transport_device (no USB above the host)" none "$(read_attr $X/facts/transport_device)"
    assert_match "$VS explain: [Device:scsi] applies" 'config section \[Device:scsi\] applies' "$(read_attr $X/explain)"
    wait_for_match 10 /sys/block/$VS/queue/scheduler '\[kyber\]' || true
    assert_match "$VS kyber written (MatchTransport=scsi)" '\[kyber\]' "$(read_attr /sys/block/$VS/queue/scheduler)"
    sed -n '1,40p' $M/devices/$UAS/explain | sed 's/^/# explain '"$UAS"': /'
    stop_blkmqd
    for d in $USB_DISKS $VS; do
        assert_eq "$d elevator after stop" "$(eval echo \$ORIG_$d)" "$(_sched $d)"
    done

    # a MatchTransport=usb section: every USB disk, BOT, UAS and both LUNs of the reader
    # kyber is loaded by now (the first run's write to the virtio-scsi disk): four disks
    # switching at once to an elevator still to be loaded can get EINVAL (seen on 6.1 with bfq:
    # the kernel's request_module() returned before bfq had registered, for one of the four)
    printf '[Device:usb]\nMatchTransport=usb\nElevator=kyber\n[Device:scsi]\nMatchTransport=scsi\nElevator=bfq\n' > /tmp/blkmqd.conf
    start_blkmqd -v --config /tmp/blkmqd.conf --devices 'sd*' || return 0
    for d in $USB_DISKS; do
        X=$M/devices/$d
        assert_match "$d explain: [Device:usb] applies" 'config section \[Device:usb\] applies' "$(read_attr $X/explain)"
        assert_eq "$d class (still not measured)" unknown "$(read_attr $X/class)"
        assert_match "$d explain: the section's values apply without a class" 'the class.s settings wait for a measurement; the values set for this disk apply' "$(read_attr $X/explain)"
        assert_eq "$d: [Device:scsi] does not" no "$(grep -q 'Device:scsi' $X/explain && echo yes || echo no)"
        assert_eq "$d plan/elevator" kyber "$(read_attr $X/plan/elevator)"
        wait_for_match 10 /sys/block/$d/queue/scheduler '\[kyber\]' || true
        assert_match "$d kyber written" '\[kyber\]' "$(read_attr /sys/block/$d/queue/scheduler)"
        assert_eq "$d applied/elevator" "ok: kyber (was $(eval echo \$ORIG_$d))" "$(read_attr $X/applied/elevator)"
        note "$d class $(read_attr $X/class), plan: $(cat $X/plan/* 2>/dev/null | tr '\n' ' ')"
    done
    wait_for_match 10 /sys/block/$VS/queue/scheduler '\[bfq\]' || true
    assert_match "$VS bfq (MatchTransport=scsi), not kyber" '\[bfq\]' "$(read_attr /sys/block/$VS/queue/scheduler)"
    stop_blkmqd
    for d in $USB_DISKS $VS; do
        assert_eq "$d elevator put back by the stop" "$(eval echo \$ORIG_$d)" "$(_sched $d)"
    done
}
# An elevator whose module has not loaded yet (blkmqd's apply.c elevator_not_loaded()): bfq is in
# modules.dep but its file is not where modprobe looks (moved away: as modules not installed yet),
# so the kernel's request_module("bfq-iosched") registers nothing and the switch is EINVAL
# (6.1 elevator_change(), 6.12 elevator_change() after elv_iosched_load_module()). blkmqd retries
# it with backoff; the file back in place, the retry 10 s later switches.
blkmqd_unloaded() {
    M=$BLKMQD_MOUNT
    X=$M/devices/$BOT
    rmmod bfq 2>/dev/null || true       # loaded by the runs above; no queue uses it after their stop
    assert_eq "bfq not registered (not in $BOT's queue/scheduler)" no \
        "$(grep -qw bfq /sys/block/$BOT/queue/scheduler && echo yes || echo no)"
    _ko=$(find /lib/modules/"$(uname -r)" -name 'bfq.ko*' | head -n 1)
    assert_ne "bfq's module file" "" "$_ko"
    [ -n "$_ko" ] || return 0
    mv "$_ko" /tmp/bfq-away
    printf '[Manager]\nVerifySec=1\n[Device:usb]\nMatchTransport=usb\nElevator=bfq\n' > /tmp/blkmqd.conf
    if ! start_blkmqd -v --config /tmp/blkmqd.conf --devices "$BOT"; then
        mv /tmp/bfq-away "$_ko"
        return 0
    fi
    wait_for_match 10 $X/applied/elevator '^error' || true
    assert_match "$BOT applied/elevator: EINVAL, bfq not registered, retried" \
        '^error: EINVAL writing bfq to queue/scheduler: no elevator bfq registered .*attempt 1, retried with backoff, next try in 10 s' \
        "$(read_attr $X/applied/elevator)"
    assert_match "$BOT explain: rule elevator-not-loaded" 'not registered at blkmqd.s switch .*\(rule elevator-not-loaded\)' \
        "$(read_attr $X/explain)"
    assert_match "$BOT still under mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$BOT/queue/scheduler)"
    mv /tmp/bfq-away "$_ko"             # the module is installed now
    wait_for_match 40 /sys/block/$BOT/queue/scheduler '\[bfq\]' || true
    assert_match "$BOT switched to bfq by a retry" '\[bfq\]' "$(read_attr /sys/block/$BOT/queue/scheduler)"
    assert_eq "$BOT applied/elevator" "ok: bfq (was mq-deadline)" "$(read_attr $X/applied/elevator)"
    assert_match "the journal: registered now, after the failed attempts" 'bfq is registered now \(not at [0-9]+ earlier attempt' \
        "$(cat /tmp/blkmqd.log)"
    grep -E 'Failed to set elevator bfq|registered now' /tmp/blkmqd.log | sed 's/^/# log: /'
    stop_blkmqd
    assert_eq "$BOT elevator put back by the stop" mq-deadline "$(_sched $BOT)"
}
blkmqd_checks blkmqd_usb
blkmqd_checks blkmqd_unloaded
finish
