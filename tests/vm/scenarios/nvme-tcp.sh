#!/bin/sh
# nvme-tcp over a real multi-queue NIC (issue 15): 4 vCPUs, so nvme-tcp makes 4 I/O queues
# (hctx 0..3, one CPU each), over a virtio-net NIC with MSI-X and 2 queue pairs (QEMU
# -netdev tap,queues=2 on a tap in a host network namespace the harness makes and removes;
# the nvmet-tcp target with null_blk sits behind a second NIC in the guest namespace "tgt",
# see nvme_tcp_setup in guest-lib.sh).  Before blkmqd starts, the NIC's 4 queue vectors and
# both TX queues' XPS are put on CPU 0 (as an IRQ balancer may leave them).  blkmqd finds the
# route, the channels, the vectors and XPS, explains, places each queue's vectors and XPS on
# the CPUs of the hctx that use it, proposes nr_io_queues=2 for the next connect without
# touching the live controller, and puts everything back on SIGTERM and on `restore`.
# smp: 4
# timeout: 200
# tap: tap0 multi_queue
# tap: tap1
# qemu: -netdev tap,id=n0,ifname=tap0,script=no,downscript=no,queues=2,vhost=off
# qemu: -device virtio-net-pci,netdev=n0,mq=on,vectors=6,mac=52:54:00:12:34:01
# qemu: -netdev tap,id=n1,ifname=tap1,script=no,downscript=no,vhost=off
# qemu: -device virtio-net-pci,netdev=n1,mac=52:54:00:12:34:02
# binary: /usr/sbin/ip
# binary: /usr/sbin/ethtool
# modules: virtio_net nvme-tcp nvmet nvmet-tcp
. /opt/vmtest/guest-lib.sh

nvme_tcp_setup || exit 1
C=$NVME_CTRL P=$NVME_PATH I=$NVME_INI_IF
Q=/sys/class/net/$I/queues

# ---- kernel facts ------------------------------------------------------------------------------
assert_eq "$C transport" tcp "$(read_attr /sys/class/nvme/$C/transport)"
assert_eq "$C queue_count (admin + 4 I/O queues)" 5 "$(read_attr /sys/class/nvme/$C/queue_count)"
assert_eq "$P hctx (one per vCPU)" 4 "$(hctx_count $P)"
if [ "$NVME_DISK" != "$P" ]; then
    assert_eq "$P hidden (NVMe multipath path device)" 1 "$(read_attr /sys/block/$P/hidden)"
    assert_fail "$NVME_DISK (multipath head) has no mq/" test -d /sys/block/$NVME_DISK/mq
fi
assert_match "route to $NVME_TCP_ADDR leaves through $I" "dev $I " "$($IP -o route get $NVME_TCP_ADDR)"
assert_eq "$I queues" "rx-0 rx-1 tx-0 tx-1" "$(ls $Q | tr '\n' ' ' | sed 's/ $//')"
assert_match "ethtool -l $I: 2 combined channels" 'Combined:[[:space:]]+2' "$(ethtool -l $I 2>&1 | sed -n '/Current/,$p')"
VDEV=$(readlink -f /sys/class/net/$I/device)          # the virtio device; MSI-X sits on its PCI function
VNAME=${VDEV##*/}
assert_ok "$I: msi_irqs on the PCI function above $VNAME" test -d "${VDEV%/*}/msi_irqs"
irq_of() { grep -E " $VNAME-$1\$" /proc/interrupts | cut -d: -f1 | tr -d ' '; }
IN0=$(irq_of input.0) OUT0=$(irq_of output.0) IN1=$(irq_of input.1) OUT1=$(irq_of output.1)
assert_match "4 queue vectors ($VNAME-input/output.0/1)" '^[0-9]+ [0-9]+ [0-9]+ [0-9]+$' "$IN0 $OUT0 $IN1 $OUT1"
for q in $IN0 $OUT0 $IN1 $OUT1; do
    assert_ok "vector $q listed in msi_irqs" test -f "${VDEV%/*}/msi_irqs/$q"
done
TX0=$(read_attr /sys/class/net/$I/statistics/tx_packets)
reads_per_cpu $NVME_DISK 50
TX1=$(read_attr /sys/class/net/$I/statistics/tx_packets)
assert_ok "reads of $NVME_DISK cross $I (tx_packets $TX0 -> $TX1)" test "$TX1" -gt "$TX0"

# what an IRQ balancer may leave: every queue vector and both TX queues' XPS on CPU 0
for q in $IN0 $OUT0 $IN1 $OUT1; do echo 0 > /proc/irq/$q/smp_affinity_list; done
echo 1 > $Q/tx-0/xps_cpus
echo 1 > $Q/tx-1/xps_cpus
XPS0=$(read_attr $Q/tx-0/xps_cpus)

# plan, sorted by IRQ number as blkmqd lists it: queue 0's vectors on hctx 0-1's CPUs, queue 1's on 2-3
EXP=$(printf '%s:0-1\n%s:0-1\n%s:2-3\n%s:2-3\n' $IN0 $OUT0 $IN1 $OUT1 | sort -n | tr '\n' ' ' | sed 's/ $//')
WAS=$(printf '%s:0\n%s:0\n%s:0\n%s:0\n' $IN0 $OUT0 $IN1 $OUT1 | sort -n | tr '\n' ' ' | sed 's/ $//')

check_originals() {    # WHEN
    assert_eq "$1: vectors back on CPU 0" "0 0 0 0" "$(for q in $IN0 $OUT0 $IN1 $OUT1; do read_attr /proc/irq/$q/smp_affinity_list; done | tr '\n' ' ' | sed 's/ $//')"
    assert_eq "$1: XPS back" "$XPS0 $XPS0" "$(read_attr $Q/tx-0/xps_cpus) $(read_attr $Q/tx-1/xps_cpus)"
    assert_eq "$1: $C still live" live "$(read_attr /sys/class/nvme/$C/state)"
}
check_placed() {       # WHEN
    X=$BLKMQD_MOUNT/devices/$P
    # the apply runs on writer workers after start-up: wait until both knobs report and the
    # kernel shows the last values written
    wait_for_cmd 30 sh -c "grep -q '^ok: ' $X/applied/nic_irq_affinity && grep -q '^ok: ' $X/applied/xps &&
        [ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 2-3 ] && grep -Eqx '0*c' $Q/tx-1/xps_cpus" || true
    assert_eq "$1: vectors on their hctx CPUs" "0-1 0-1 2-3 2-3" "$(for q in $IN0 $OUT0 $IN1 $OUT1; do read_attr /proc/irq/$q/smp_affinity_list; done | tr '\n' ' ' | sed 's/ $//')"
    assert_eq "$1: XPS tx-0 (CPUs 0-1), tx-1 (CPUs 2-3)" "3 c" "$(read_attr $Q/tx-0/xps_cpus | sed 's/^0*//') $(read_attr $Q/tx-1/xps_cpus | sed 's/^0*//')"
    assert_eq "$1: applied/nic_irq_affinity" "ok: $EXP (was $WAS)" "$(read_attr $X/applied/nic_irq_affinity)"
    assert_eq "$1: applied/xps" "ok: $I/tx-0:0-1 $I/tx-1:2-3 (was $I/tx-0:0 $I/tx-1:0)" "$(read_attr $X/applied/xps)"
    assert_match "$1: applied/nr_io_queues" "^pending-reconnect: nr_io_queues=2 at the next connect of $C \\(now 4 I/O queues\\)" "$(read_attr $X/applied/nr_io_queues)"
    assert_eq "$1: $C not reconnected (queue_count)" 5 "$(read_attr /sys/class/nvme/$C/queue_count)"
    assert_eq "$1: $C still live" live "$(read_attr /sys/class/nvme/$C/state)"
}

blkmqd_nvme_tcp() {
    M=$BLKMQD_MOUNT
    X=$M/devices/$P
    start_blkmqd -v --devices 'nvme*' || return 0
    wait_for_file $X/network/alignment 30 || true
    assert_eq "network/transport" tcp "$(read_attr $X/network/transport)"
    assert_eq "network/controller" "$C" "$(read_attr $X/network/controller)"
    assert_eq "network/traddr" "$NVME_TCP_ADDR" "$(read_attr $X/network/traddr)"
    assert_eq "network/trsvcid" 4420 "$(read_attr $X/network/trsvcid)"
    assert_eq "network/src_addr" 10.77.0.1 "$(read_attr $X/network/src_addr)"
    assert_eq "network/nr_io_queues" 4 "$(read_attr $X/network/nr_io_queues)"
    assert_eq "network/interface (route)" "$I" "$(read_attr $X/network/interface)"
    assert_eq "network/lower_device" "$I" "$(read_attr $X/network/lower_device)"
    assert_eq "network/channels (ethtool netlink)" "combined=2 rx=0 tx=0 other=0" "$(read_attr $X/network/channels)"
    assert_eq "network/irqs: the 4 queue vectors" "$(printf '%s\n' $IN0 $IN1 $OUT0 $OUT1 | sort -n | tr '\n' ' ' | sed 's/ $//')" \
        "$(cut -d' ' -f1 $X/network/irqs | sort -n | tr '\n' ' ' | sed 's/ $//')"
    assert_match "network/irqs names queue 1's input vector" "^$IN1 $VNAME-input.1 queue 1" "$(grep "^$IN1 " $X/network/irqs)"
    assert_match "network/alignment" '^misaligned: 4 I/O queues over 2 NIC queues' "$(read_attr $X/network/alignment)"
    assert_eq "nics/$I/driver" virtio_net "$(read_attr $M/nics/$I/driver)"
    assert_eq "nics/$I/tx_queues rx_queues" "2 2" "$(read_attr $M/nics/$I/tx_queues) $(read_attr $M/nics/$I/rx_queues)"
    assert_eq "nics/$I/virtual" 0 "$(read_attr $M/nics/$I/virtual)"
    assert_eq "nics/$I/channels_source" ethtool-netlink "$(read_attr $M/nics/$I/channels_source)"
    assert_match "nics/$I/disks" "(^| )$P( |\$)" "$(read_attr $M/nics/$I/disks)"
    assert_eq "plan/nic_irq_affinity" "$EXP" "$(read_attr $X/plan/nic_irq_affinity)"
    assert_eq "plan/xps" "$I/tx-0:0-1 $I/tx-1:2-3" "$(read_attr $X/plan/xps)"
    assert_eq "plan/nr_io_queues" 2 "$(read_attr $X/plan/nr_io_queues)"
    assert_match "explain: the numbers (rule net-align)" "^$P: 4 hctx over $I \\(2 combined channels; IRQ .*4 I/O queues over 2 NIC queues -> nic_irq_affinity=$EXP xps=.* \\(rule net-align\\)" "$(grep 'rule net-align' $X/explain)"
    assert_match "first evaluation saw the vectors on CPU 0" "$P: 4 hctx over $I .*hctx 1-3 have no NIC queue on their CPUs" "$(cat /tmp/blkmqd.log)"
    # the hidden path device has no dev attribute: BPF counters (keyed by dev_t) say so
    if grep -q "BPF provider loaded" /tmp/blkmqd.log; then
        assert_match "hctx/0/dispatched of the hidden $P" '^unavailable: no device number to match BPF events' "$(read_attr $X/hctx/0/dispatched)"
    else
        skip "hctx/0/dispatched of the hidden $P" "BPF provider not loaded"
    fi
    check_placed "apply"
    # metrics (the tree's metrics file, as in the Prometheus textfile)
    grep -E '^blkmqd_(net|nic)_' $M/metrics | sed 's/^/# metrics: /'
    assert_match "metrics: blkmqd_net_alignment" "^blkmqd_net_alignment\\{device=\"$P\",transport=\"tcp\",interface=\"$I\",nic=\"$I\",state=\"misaligned\"\\} 1\$" \
        "$(grep "^blkmqd_net_alignment{device=\"$P\"" $M/metrics)"
    assert_eq "metrics: blkmqd_net_io_queues" "blkmqd_net_io_queues{device=\"$P\",controller=\"$C\"} 4" \
        "$(grep "^blkmqd_net_io_queues{device=\"$P\"" $M/metrics)"
    assert_eq "metrics: blkmqd_nic_channels combined" "blkmqd_nic_channels{device=\"$I\",type=\"combined\"} 2" \
        "$(grep "^blkmqd_nic_channels{device=\"$I\",type=\"combined\"" $M/metrics)"
    # the daemon's libnl answers (blkmqd-net-capture links the same code) against iproute2 + ethtool
    if [ -x /opt/blkmqd/blkmqd-net-capture ]; then
        netlink_facts | grep -v '^#' | sort > /tmp/facts.tools
        /opt/blkmqd/blkmqd-net-capture | grep -v '^#' | sed 's/ flags=[0-9a-fx]*//' | sort > /tmp/facts.libnl
        assert_eq "blkmqd-net-capture (libnl: route, links, ethtool-netlink channels) = iproute2 + ethtool" \
            "$(cat /tmp/facts.tools)" "$(cat /tmp/facts.libnl)"
    else
        skip "blkmqd-net-capture agrees with iproute2 + ethtool" "not packed (meson passes --binary build/tests/blkmqd-net-capture)"
    fi
    reads_per_cpu $NVME_DISK 50 500
    assert_eq "reads after the apply: $C live" live "$(read_attr /sys/class/nvme/$C/state)"
    stop_blkmqd
    check_originals "SIGTERM"

    start_blkmqd -v --devices 'nvme*' || return 0
    wait_for_file $X/applied/nic_irq_affinity 30 || true
    check_placed "restart"
    assert_ok "echo 1 > restore" sh -c "echo 1 > $M/restore"
    wait_for_cmd 30 sh -c "grep -qx off $M/mode && [ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 0 ] &&
        grep -qx '$XPS0' $Q/tx-1/xps_cpus" || true
    assert_eq "restore: mode" off "$(read_attr $M/mode)"
    check_originals "restore file"
    stop_blkmqd
    check_originals "SIGTERM after restore (nothing re-applied)"
}
blkmqd_checks blkmqd_nvme_tcp
