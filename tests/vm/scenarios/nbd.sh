#!/bin/sh
# nbd: a network disk whose sockets the kernel does not name (issue 30 item 5).  nbd-client -C 2
# connects /dev/nbd0 with two connections (nr_hw_queues 2; hctx i sends on connection i,
# drivers/block/nbd.c nbd_queue_rq()) over a 2-queue-pair virtio-net NIC to qemu-nbd in the
# guest network namespace "tgt" (nbd_setup in guest-lib.sh).
#   A  the netlink interface (nbd-client's default): the client hands its connected sockets to
#      the kernel and exits, so /sys/block/nbd0/pid names a process that is gone and nothing
#      in sysfs, debugfs or /proc ties the sockets to nbd0.
#   B  the ioctl interface (nbd-client -L): the client stays in NBD_DO_IT.
# Kernel facts: 2 hctx, 2 established TCP connections to the server's port, the NIC's queue
# vectors and XPS.  blkmqd: network/transport nbd, connections 2, and for each fact it cannot
# read (server address, route, NIC) a reason that says what the kernel does not export; the
# alignment unknown; not one NIC write from start to stop; the disk's other knobs as for any.
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
# binary: /usr/bin/qemu-nbd
# binary: /usr/sbin/nbd-client
# modules: virtio_net
. /opt/vmtest/guest-lib.sh

nbd_setup -C 2 || exit 1
D=$NBD_DISK
I=$NVME_INI_IF
Q=/sys/class/net/$I/queues
# ---- kernel facts ----------------------------------------------------------------------------
assert_eq "$D: 2 hctx (nbd-client -C 2)" 2 "$(hctx_count $D)"
PID=$(read_attr /sys/block/$D/pid)
assert_int "$D: pid" "$PID"
assert_fail "A: nbd-client (pid $PID) has exited: the kernel holds the sockets" test -d /proc/$PID
# connections to the server's port 10809 (0x2A39), state 01 ESTABLISHED
conns() { grep -c ':2A39 01 ' /proc/net/tcp; }
assert_eq "A: 2 established connections to :10809" 2 "$(conns)"
VDEV=$(readlink -f /sys/class/net/$I/device)          # the virtio device; MSI-X sits on its PCI function
VEC=$(ls "${VDEV%/*}/msi_irqs" 2>/dev/null | sort -n | tr '\n' ' ')
assert_match "$I: MSI-X vectors" '^[0-9]+( [0-9]+)+ $' "$VEC"
# nic_state: every MSI vector's affinity and every TX queue's XPS, one line
nic_state() { for q in $VEC; do printf '%s ' "$(cat /proc/irq/$q/smp_affinity_list 2>/dev/null)"; done
              for t in $Q/tx-*; do printf '%s ' "$(cat $t/xps_cpus)"; done; echo; }
NICPATHS="irq/[0-9]+/smp_affinity_list|class/net/$I/queues/tx-[0-9]+/xps_cpus"
nic_writes() { grep -cE "Writing \".*\" to \"/(proc|sys)/($NICPATHS)\"" /tmp/blkmqd.log; }
reads_per_cpu $D 20
NIC0=$(nic_state)

check_unknown() {      # PHASE
    X=$BLKMQD_MOUNT/devices/$D
    wait_for_file $X/network/alignment 30 || true
    assert_eq "$1: network/transport" nbd "$(read_attr $X/network/transport)"
    assert_eq "$1: network/connections (one per hctx)" 2 "$(read_attr $X/network/connections)"
    assert_match "$1: network/traddr says what is missing" '^unknown: the kernel exports no socket address for NBD' \
        "$(read_attr $X/network/traddr)"
    assert_match "$1: network/interface names the connections" \
        '^unknown: the kernel exports no socket address for NBD, so which NIC its 2 connection\(s\) leave by is unknown' \
        "$(read_attr $X/network/interface)"
    assert_match "$1: network/alignment unknown" '^unknown: the kernel exports no socket address for NBD' \
        "$(read_attr $X/network/alignment)"
    assert_match "$1: applied/nic_irq_affinity: nothing placed" '^unmanaged' "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "$1: applied/xps: nothing placed" '^unmanaged' "$(read_attr $X/applied/xps)"
    assert_eq "$1: not one NIC write" 0 "$(nic_writes)"
    assert_eq "$1: the NIC's vectors and XPS as the driver left them" "$NIC0" "$(nic_state)"
    assert_match "$1: metrics: blkmqd_net_alignment unknown" \
        "^blkmqd_net_alignment\\{device=\"$D\",transport=\"nbd\",interface=\"\",nic=\"\",state=\"unknown\"\\} 1" \
        "$(grep "^blkmqd_net_alignment{device=\"$D\"" $BLKMQD_MOUNT/metrics)"
}

blkmqd_nbd() {
    start_blkmqd -v --devices 'nbd*' || return 0
    check_unknown A
    note "network/: $(for f in $BLKMQD_MOUNT/devices/$D/network/*; do printf '%s=%s; ' "${f##*/}" "$(head -c 200 $f)"; done)"
    stop_blkmqd
    assert_eq "A stop: not one NIC write" 0 "$(nic_writes)"
    assert_eq "A stop: the NIC as before" "$NIC0" "$(nic_state)"

    # B: the ioctl interface, the client stays in NBD_DO_IT with its sockets open
    /usr/sbin/nbd-client -d /dev/$D >/dev/null 2>&1
    wait_for_cmd 20 sh -c "[ ! -e /sys/block/$D/pid ]" || true
    assert_eq "B: disconnected: no connection to :10809" 0 "$(conns)"
    /usr/sbin/nbd-client "$NVME_TCP_ADDR" 10809 /dev/$D -N d0 -C 2 -L >/dev/null 2>&1 ||
        { fail "B: nbd-client -L -C 2"; return 0; }
    wait_for_file /sys/block/$D/pid 20 || true
    PID=$(read_attr /sys/block/$D/pid)
    assert_ok "B: nbd-client (pid $PID) stays in NBD_DO_IT" test -d /proc/$PID
    assert_eq "B: 2 hctx" 2 "$(hctx_count $D)"
    assert_eq "B: 2 established connections to :10809" 2 "$(conns)"
    note "B: /proc/$PID/fd: $(ls -l /proc/$PID/fd 2>&1 | sed 's/.* //' | tr '\n' ' ')"
    start_blkmqd -v --devices 'nbd*' || return 0
    check_unknown B
    stop_blkmqd
    assert_eq "B stop: not one NIC write" 0 "$(nic_writes)"
    assert_eq "B stop: the NIC as before" "$NIC0" "$(nic_state)"
    /usr/sbin/nbd-client -d /dev/$D >/dev/null 2>&1
}
blkmqd_checks blkmqd_nbd
finish
