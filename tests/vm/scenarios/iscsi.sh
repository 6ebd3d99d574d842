#!/bin/sh
# iscsi: two iSCSI sessions to one LIO target over one virtio-net NIC (issue 30 item 5): iscsid
# logs in through open-iscsi's iface "default" (socket bound to no device) and through iface
# "ini" bound to the NIC (iface.net_ifacename); the target (iscsi_target_mod, a null_blk LUN
# through iblock) listens in the guest network namespace "tgt" behind a second NIC
# (iscsi_setup in guest-lib.sh).  iscsi_tcp makes one SCSI host per session
# (drivers/scsi/iscsi_tcp.c iscsi_sw_tcp_session_create()), so each session is a disk of its own
# with one hctx, and every command of a session goes out on its leading connection
# (drivers/scsi/libiscsi.c iscsi_queuecommand()).
# Kernel facts: two sessions, two disks of 1 hctx, the connections' addresses and ports in
# class/iscsi_connection, the local address in class/iscsi_host/<host>/ipaddress.
# blkmqd: network/ of each disk names the session, the target and the route's NIC; the
# alignment is not applicable (one connection per disk); not one NIC write from start to stop.
# smp: 4
# timeout: 380
# tap: tap0 multi_queue
# tap: tap1
# qemu: -netdev tap,id=n0,ifname=tap0,script=no,downscript=no,queues=2,vhost=off
# qemu: -device virtio-net-pci,netdev=n0,mq=on,vectors=6,mac=52:54:00:12:34:01
# qemu: -netdev tap,id=n1,ifname=tap1,script=no,downscript=no,vhost=off
# qemu: -device virtio-net-pci,netdev=n1,mac=52:54:00:12:34:02
# binary: /usr/sbin/ip
# binary: /usr/sbin/ethtool
# binary: /usr/sbin/iscsid
# binary: /usr/sbin/iscsiadm
# modules: virtio_net
. /opt/vmtest/guest-lib.sh

iscsi_setup || exit 1
I=$NVME_INI_IF
for s in $ISCSI_SIDS; do
    note "session$s: $(for f in /sys/class/iscsi_session/session$s/*; do [ -f $f ] && printf '%s=%s; ' ${f##*/} "$(head -c 80 $f 2>/dev/null | tr '\n' ' ')"; done)"
    for c in /sys/class/iscsi_connection/connection$s:*; do
        note "${c##*/}: $(for f in $c/*; do [ -f $f ] && printf '%s=%s; ' ${f##*/} "$(head -c 80 $f 2>/dev/null | tr '\n' ' ')"; done)"
    done
    h=$(basename $(readlink -f /sys/class/iscsi_session/session$s/device/..))
    note "$h: $(for f in /sys/class/iscsi_host/$h/*; do [ -f $f ] && printf '%s=%s; ' ${f##*/} "$(head -c 80 $f 2>/dev/null | tr '\n' ' ')"; done)"
    note "$h proc_name=$(cat /sys/class/scsi_host/$h/proc_name) can_queue=$(cat /sys/class/scsi_host/$h/can_queue) nr_hw_queues=$(cat /sys/class/scsi_host/$h/nr_hw_queues 2>&1)"
done
note "tcp: $(cat /proc/net/tcp | tr '\n' '|')"
for d in $ISCSI_DISKS; do
    assert_eq "$d: 1 hctx (one SCSI host per iSCSI session)" 1 "$(hctx_count $d)"
    note "$d: $(readlink -f /sys/block/$d)"
done

nic_watch $I
assert_match "$I: MSI-X vectors" '^[0-9]+( [0-9]+)+ $' "$NIC_VEC"
NIC0=$(nic_state)

# check_disk PHASE DISK SID HOST_IFACE_RE: network/ of one session's disk
check_disk() {
    X=$BLKMQD_MOUNT/devices/$2
    wait_for_file $X/network/alignment 30 || true
    assert_eq "$1: $2 network/transport" iscsi "$(read_attr $X/network/transport)"
    assert_eq "$1: $2 network/controller" "session$3" "$(read_attr $X/network/controller)"
    assert_eq "$1: $2 network/traddr" "$NVME_TCP_ADDR" "$(read_attr $X/network/traddr)"
    assert_eq "$1: $2 network/trsvcid" 3260 "$(read_attr $X/network/trsvcid)"
    assert_eq "$1: $2 network/src_addr (class/iscsi_host ipaddress)" 10.77.0.1 "$(read_attr $X/network/src_addr)"
    assert_match "$1: $2 network/host_iface" "$4" "$(read_attr $X/network/host_iface)"
    assert_eq "$1: $2 network/interface" "$I" "$(read_attr $X/network/interface)"
    assert_eq "$1: $2 network/connections" 1 "$(read_attr $X/network/connections)"
    assert_match "$1: $2 network/nr_io_queues not applicable" '^unknown: not applicable: an iSCSI session sends every command' \
        "$(read_attr $X/network/nr_io_queues)"
    assert_match "$1: $2 network/alignment not applicable" \
        '^not applicable: one TCP connection carries every hctx \(an iSCSI session sends every command on its leading connection\)' \
        "$(read_attr $X/network/alignment)"
    assert_match "$1: $2 applied/nic_irq_affinity: nothing placed" '^unmanaged' "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "$1: $2 applied/xps: nothing placed" '^unmanaged' "$(read_attr $X/applied/xps)"
    assert_match "$1: $2 metrics: blkmqd_net_alignment not-applicable" \
        "^blkmqd_net_alignment\\{device=\"$2\",transport=\"iscsi\",interface=\"$I\",nic=\"$I\",state=\"not-applicable\"\\} 1" \
        "$(grep "^blkmqd_net_alignment{device=\"$2\"" $BLKMQD_MOUNT/metrics)"
}

set -- $ISCSI_DISKS
D1=$1 D2=$2
UNBOUND="^unknown: none: session1's iface default binds it to no device \\(class/iscsi_host/[a-z0-9]+/netdev unset\\): the route decides"
blkmqd_iscsi() {
    start_blkmqd -v --devices 'sd*' || return 0
    check_disk A $D1 1 "$UNBOUND"
    check_disk A $D2 2 "^$I\$"
    note "A: $D1 network/: $(for f in $BLKMQD_MOUNT/devices/$D1/network/*; do printf '%s=%s; ' "${f##*/}" "$(head -c 200 $f)"; done)"
    assert_eq "A: not one NIC write" 0 "$(nic_writes)"

    # B: session 2 logged out and in again while blkmqd runs: its disk goes, a new session's
    # disk comes with the same facts
    /usr/sbin/iscsiadm -m node -T "$ISCSI_IQN" -p "$NVME_TCP_ADDR:3260" -I ini --logout >/dev/null ||
        fail "B: iscsiadm logout (iface ini)"
    wait_for_gone $BLKMQD_MOUNT/devices/$D2 30 || true
    assert_fail "B: $D2 left the tree with its session" test -e $BLKMQD_MOUNT/devices/$D2
    /usr/sbin/iscsiadm -m node -T "$ISCSI_IQN" -p "$NVME_TCP_ADDR:3260" -I ini --login >/dev/null ||
        fail "B: iscsiadm login again (iface ini)"
    S3="" D3=""
    for s in /sys/class/iscsi_session/session*; do
        [ "$(cat $s/ifacename 2>/dev/null)" = ini ] && S3=${s##*session}
    done
    _vt_poll 20 sh -c "ls -d /sys/class/iscsi_session/session$S3/device/target*/*/block/* >/dev/null 2>&1" || true
    for b in /sys/class/iscsi_session/session$S3/device/target*/*/block/*; do [ -d "$b" ] && D3=${b##*/}; done
    assert_match "B: a new session through iface ini" '^[0-9]+$' "$S3"
    assert_match "B: its disk" '^sd[a-z]+$' "$D3"
    check_disk B "$D3" "$S3" "^$I\$"
    check_disk B $D1 1 "$UNBOUND"
    assert_eq "B: not one NIC write" 0 "$(nic_writes)"
    stop_blkmqd
    assert_eq "stop: not one NIC write" 0 "$(nic_writes)"
    assert_eq "stop: the NIC as before" "$NIC0" "$(nic_state)"
}
blkmqd_checks blkmqd_iscsi
finish
