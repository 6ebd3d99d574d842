#!/bin/sh
# nvme-tcp over a real multi-queue NIC: 4 vCPUs, so nvme-tcp makes 4 I/O queues (hctx 0..3,
# one CPU each), over a virtio-net NIC with MSI-X and 4 queue pairs run at 2 (QEMU -netdev
# tap,queues=4 on a tap in a host network namespace the harness makes and removes, then
# ethtool -L combined 2; the nvmet-tcp target with null_blk sits behind a second NIC in the
# guest namespace "tgt", see nvme_tcp_setup in guest-lib.sh).
#   A  the NIC's 4 active queue vectors and both TX queues' XPS put on CPU 0 (as an IRQ balancer
#      may leave them): blkmqd finds the route, the channels, the vectors and XPS, explains,
#      places each queue's vectors and XPS on the CPUs of the hctx that use it, proposes
#      nr_io_queues=2 for the next connect and ethtool -L combined 4 (recommended: the NIC has 4)
#      without touching the live controller or the NIC's channels, and puts everything back on
#      SIGTERM and on `restore`.
#   B  blkmqd placed the 2 channels; `ethtool -L combined 4` while it runs: the ethtool netlink
#      notification gathers the disk again at once, 4 channels, aligned on virtio-net's own
#      placement, no NIC write after it and none at stop (the driver's values are not blkmqd's).
#   C  connect nr_io_queues=2,nr_write_queues=2 ("mapped 2/2/0": hctx 0-1 default, 2-3 read)
#      with the NIC already on the hctx CPUs (virtio-net's own placement on 6.12; on 6.1, whose
#      blk-mq map deals the CPUs out in turn, placed by hand first): each map aligned on its
#      own, kept, zero NIC writes from start to stop.
#   I  CPU 3 made an isolated cgroup v2 cpuset partition while blkmqd runs (mount cgroup2 if
#      needed, +cpuset, rt/cpuset.cpus=3, partition isolated; no uevent): the SIGHUP reload
#      narrows queue 1's vectors and XPS to CPU 2, facts/explain/applied name CPU 3 and the
#      cgroup (6.12 through cpuset.cpus.isolated, 6.1 by walking the cgroups); with VerifySec=2
#      the partition given back and made again is followed by the periodic verify; each stop
#      puts the vectors and XPS back; the partition is removed after.
#   D  bond0 (active-backup) of the NIC and a third virtio-net NIC, the default connect over
#      it: the active port placed; `ip link set <active> down`: the failover's rtnetlink
#      notification moves the placement to the new active port and puts the old one's back.
# smp: 4
# timeout: 600
# tap: tap0 multi_queue
# tap: tap1
# tap: tap2 multi_queue
# qemu: -netdev tap,id=n0,ifname=tap0,script=no,downscript=no,queues=4,vhost=off
# qemu: -device virtio-net-pci,netdev=n0,mq=on,vectors=10,mac=52:54:00:12:34:01
# qemu: -netdev tap,id=n1,ifname=tap1,script=no,downscript=no,vhost=off
# qemu: -device virtio-net-pci,netdev=n1,mac=52:54:00:12:34:02
# qemu: -netdev tap,id=n2,ifname=tap2,script=no,downscript=no,queues=4,vhost=off
# qemu: -device virtio-net-pci,netdev=n2,mq=on,vectors=10,mac=52:54:00:12:34:03
# binary: /usr/sbin/ip
# binary: /usr/sbin/ethtool
# modules: virtio_net nvme-tcp nvmet nvmet-tcp bonding
. /opt/vmtest/guest-lib.sh

nvme_tcp_setup || exit 1
C=$NVME_CTRL P=$NVME_PATH I=$NVME_INI_IF
Q=/sys/class/net/$I/queues
assert_match "ethtool -l $I: 4 combined channels at most" 'Combined:[[:space:]]+4' "$(ethtool -l $I 2>&1 | sed -n '/maximums/,/Current/p')"
assert_ok "ethtool -L $I combined 2" ethtool -L $I combined 2

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
IN2=$(irq_of input.2) OUT2=$(irq_of output.2) IN3=$(irq_of input.3) OUT3=$(irq_of output.3)
assert_match "8 queue vectors ($VNAME-input/output.0-3)" '^[0-9]+( [0-9]+){7}$' "$IN0 $OUT0 $IN1 $OUT1 $IN2 $OUT2 $IN3 $OUT3"
for q in $IN0 $OUT0 $IN1 $OUT1 $IN2 $OUT2 $IN3 $OUT3; do
    assert_ok "vector $q listed in msi_irqs" test -f "${VDEV%/*}/msi_irqs/$q"
done
NICPATHS="irq/($(echo $IN0 $OUT0 $IN1 $OUT1 $IN2 $OUT2 $IN3 $OUT3 | tr ' ' '|'))/smp_affinity_list|class/net/$I/queues/tx-[0-9]+/xps_cpus"
# nic_writes: how many NIC writes (queue vector affinity, XPS) blkmqd's last run made (its -v log)
nic_writes() { grep -cE "Writing \".*\" to \"($NICPATHS)\"" /tmp/blkmqd.log; }
# nic_state: every queue vector's affinity and both TX queues' XPS, one line
nic_state() { for q in $IN0 $OUT0 $IN1 $OUT1 $IN2 $OUT2 $IN3 $OUT3; do printf '%s ' "$(cat /proc/irq/$q/smp_affinity_list)"; done
              for t in $Q/tx-*; do printf '%s ' "$(cat $t/xps_cpus)"; done; echo; }
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
    assert_eq "nics/$I/max_channels" "combined=4 rx=0 tx=0 other=0" "$(read_attr $M/nics/$I/max_channels)"
    assert_eq "network/irqs: the 8 queue vectors" "$(printf '%s\n' $IN0 $IN1 $OUT0 $OUT1 $IN2 $OUT2 $IN3 $OUT3 | sort -n | tr '\n' ' ' | sed 's/ $//')" \
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
    assert_eq "plan/nr_io_queues" nr_io_queues=2 "$(read_attr $X/plan/nr_io_queues)"
    assert_eq "network/maps" "default 4 hctx (0-3) -> $I queues 0-1 (more hctx than NIC queues)" "$(read_attr $X/network/maps)"
    assert_match "network/recommended: the NIC's spare channels" "^nic-channels: ethtool -L $I combined 4: no reconnect" "$(read_attr $X/network/recommended)"
    assert_match "network/recommended: the reconnect as the alternative" "the alternative, nr_io_queues=2 at the next connect" "$(read_attr $X/network/recommended)"
    assert_eq "hctx/0/type" default "$(read_attr $X/hctx/0/type)"
    assert_match "explain: the numbers (rule net-align)" "^$P: 4 hctx over $I \\(2 combined channels; IRQ .*4 I/O queues over 2 NIC queues -> nic_irq_affinity=$EXP xps=.* or ethtool -L $I combined 4 .*\\(recommended\\).* \\(rule net-align\\)" "$(grep 'rule net-align' $X/explain)"
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
    assert_eq "metrics: blkmqd_net_recommended_action" "blkmqd_net_recommended_action{device=\"$P\",action=\"nic-channels\"} 1" \
        "$(grep "^blkmqd_net_recommended_action{device=\"$P\"" $M/metrics)"
    assert_eq "metrics: blkmqd_net_queue_map_hctx default" "blkmqd_net_queue_map_hctx{device=\"$P\",map=\"default\"} 4" \
        "$(grep "^blkmqd_net_queue_map_hctx{device=\"$P\",map=\"default\"" $M/metrics)"
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
    assert_eq "$I still at 2 combined channels (blkmqd never changes them)" 2 "$(ethtool -l $I | sed -n '/Current/,$s/^Combined:[[:space:]]*//p')"
}

# I: CPU 3 made an isolated cgroup v2 cpuset partition at run time (no uevent comes for it): a
# reload (SIGHUP) and the periodic verify see it; queue 1 (hctx 2-3) loses CPU 3, stop puts all back
blkmqd_isolated_partition() {
    M=$BLKMQD_MOUNT
    X=$M/devices/$P
    CG=/sys/fs/cgroup
    aff() { for q in $IN0 $OUT0 $IN1 $OUT1; do read_attr /proc/irq/$q/smp_affinity_list; done | tr '\n' ' ' | sed 's/ $//'; }
    xps() { echo "$(read_attr $Q/tx-0/xps_cpus | sed 's/^0*//') $(read_attr $Q/tx-1/xps_cpus | sed 's/^0*//')"; }
    # the CPUs of a cpulist ("0-1,3" -> "0 1 3")
    cpus_of() { echo "$1" | tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done | tr '\n' ' '; }
    no_cpu3() {    # WHEN: no queue vector in use and no XPS mask has CPU 3
        for q in $IN0 $OUT0 $IN1 $OUT1; do
            assert_fail "$1: IRQ $q ($(read_attr /proc/irq/$q/smp_affinity_list)) has no CPU 3" \
                sh -c "echo ' $(cpus_of "$(read_attr /proc/irq/$q/smp_affinity_list)")' | grep -q ' 3 '"
        done
        for t in tx-0 tx-1; do
            assert_eq "$1: $t xps_cpus ($(read_attr $Q/$t/xps_cpus)) has no CPU 3" 0 "$(( 0x$(read_attr $Q/$t/xps_cpus | tr -d ',') & 8 ))"
        done
    }
    MOUNTED=
    if [ ! -f $CG/cgroup.controllers ]; then
        mkdir -p $CG && mount -t cgroup2 none $CG && MOUNTED=1 || { fail "mount -t cgroup2 none $CG"; return 0; }
    fi
    assert_match "cgroup v2 offers cpuset" '(^| )cpuset( |$)' "$(read_attr $CG/cgroup.controllers)"
    start_blkmqd -v --devices 'nvme*' || return 0
    check_placed "before the partition"
    assert_match "facts/isolated_cpus before the partition" '^none ' "$(read_attr $X/facts/isolated_cpus)"
    assert_ok "echo +cpuset > $CG/cgroup.subtree_control" sh -c "echo +cpuset > $CG/cgroup.subtree_control"
    assert_ok "mkdir $CG/rt" mkdir $CG/rt
    assert_ok "rt: cpuset.cpus=3" sh -c "echo 3 > $CG/rt/cpuset.cpus"
    assert_ok "rt: cpuset.cpus.partition=isolated" sh -c "echo isolated > $CG/rt/cpuset.cpus.partition"
    assert_eq "rt is an isolated partition (f28e22441f35, 6.1)" isolated "$(read_attr $CG/rt/cpuset.cpus.partition)"
    assert_eq "rt: cpuset.cpus.effective" 3 "$(read_attr $CG/rt/cpuset.cpus.effective)"
    if [ -f $CG/cpuset.cpus.isolated ]; then
        assert_eq "cpuset.cpus.isolated (877c737db935, 6.8)" 3 "$(read_attr $CG/cpuset.cpus.isolated)"
        SRC="cgroup v2 isolated partitions (/sys/fs/cgroup/cpuset.cpus.isolated): 3 (cgroup /sys/fs/cgroup/rt: isolated partition, cpuset.cpus.effective 3)"
    else
        note "no $CG/cpuset.cpus.isolated (before 6.8): blkmqd walks the cgroups"
        SRC="cgroup /sys/fs/cgroup/rt: isolated partition, cpuset.cpus.effective 3"
    fi
    WHY="CPU 3 isolated (cgroup /sys/fs/cgroup/rt: isolated partition): queue 1 on 2 (not 2-3)"
    sleep 2
    assert_match "no uevent: facts/isolated_cpus unchanged before the reload" '^none ' "$(read_attr $X/facts/isolated_cpus)"
    assert_eq "no uevent: the vectors unchanged before the reload" "0-1 0-1 2-3 2-3" "$(aff)"
    assert_ok "SIGHUP (reload)" kill -HUP $BLKMQD_PID
    wait_for_cmd 30 sh -c "[ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 2 ] && [ \"\$(cat /proc/irq/$OUT1/smp_affinity_list)\" = 2 ] &&
        grep -Eqx '0*4' $Q/tx-1/xps_cpus && grep -qF '$WHY' $X/applied/xps" || true
    assert_eq "reload: facts/isolated_cpus" "3 ($SRC)" "$(read_attr $X/facts/isolated_cpus)"
    assert_eq "reload: queue 1's vectors on CPU 2 (not 2-3)" "0-1 0-1 2 2" "$(aff)"
    assert_eq "reload: XPS tx-0 (CPUs 0-1), tx-1 (CPU 2)" "3 4" "$(xps)"
    no_cpu3 "reload"
    assert_match "reload: explain names CPU 3 and its cgroup" \
        "; isolated CPUs 3 \\($(echo "$SRC" | sed 's/[][().*]/\\&/g')\\) get no NIC IRQ and no XPS: queue 1 on 2 \\(not 2-3\\)" \
        "$(grep 'rule net-align' $X/explain)"
    assert_match "reload: applied/nic_irq_affinity" "^ok: .* \\(was .*\\): $(echo "$WHY" | sed 's/[][().*]/\\&/g')\$" "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "reload: applied/xps" "^ok: $I/tx-0:0-1 $I/tx-1:2 \\(was .*\\): $(echo "$WHY" | sed 's/[][().*]/\\&/g')\$" "$(read_attr $X/applied/xps)"
    stop_blkmqd
    check_originals "SIGTERM with CPU 3 isolated"

    # the periodic verify (VerifySec=2): the partition given back and made again while blkmqd runs
    printf '[Manager]\nVerifySec=2\n' > /tmp/isolated.conf
    start_blkmqd -v --config /tmp/isolated.conf --devices 'nvme*' || return 0
    wait_for_cmd 30 sh -c "[ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 2 ] && grep -Eqx '0*4' $Q/tx-1/xps_cpus" || true
    assert_eq "start with CPU 3 isolated: vectors" "0-1 0-1 2 2" "$(aff)"
    assert_eq "start with CPU 3 isolated: XPS" "3 4" "$(xps)"
    no_cpu3 "start"
    # blkmqd's own placement (written for the path device) is no network change for the head
    # over the same NIC: two periodic verifies after it gather nothing again
    wait_for_cmd 20 sh -c "[ \$(grep -c 'Periodic verify: ' /tmp/blkmqd.log) -ge 2 ]" || true
    assert_match "verify: two periodic verifies since the start" "Periodic verify: .*Periodic verify: " "$(tr '\n' ' ' < /tmp/blkmqd.log)"
    assert_fail "verify: blkmqd's own placement is not taken for a network change" grep -q 'Network facts changed' /tmp/blkmqd.log
    L=$(wc -l < /tmp/blkmqd.log)
    assert_ok "rt: cpuset.cpus.partition=member (given back)" sh -c "echo member > $CG/rt/cpuset.cpus.partition"
    wait_for_cmd 20 sh -c "[ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 2-3 ] && grep -Eqx '0*c' $Q/tx-1/xps_cpus" || true
    assert_eq "verify: queue 1's vectors back on 2-3" "0-1 0-1 2-3 2-3" "$(aff)"
    assert_eq "verify: XPS back on 2-3" "3 c" "$(xps)"
    assert_match "verify: facts/isolated_cpus" '^none ' "$(read_attr $X/facts/isolated_cpus)"
    assert_match "verify: gathered again at the periodic verify" "The kernel's configuration changed \\(isolated CPUs now none\\): gathering again" \
        "$(sed -n "$((L + 1)),\$p" /tmp/blkmqd.log)"
    assert_ok "rt: cpuset.cpus.partition=isolated (again)" sh -c "echo isolated > $CG/rt/cpuset.cpus.partition"
    wait_for_cmd 20 sh -c "[ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 2 ] && grep -Eqx '0*4' $Q/tx-1/xps_cpus" || true
    assert_eq "verify: queue 1's vectors on CPU 2 again" "0-1 0-1 2 2" "$(aff)"
    no_cpu3 "verify"
    assert_match "verify: applied/xps" "^ok: $I/tx-0:0-1 $I/tx-1:2 \\(was .*\\): $(echo "$WHY" | sed 's/[][().*]/\\&/g')\$" "$(read_attr $X/applied/xps)"
    stop_blkmqd
    check_originals "SIGTERM after the verify"

    echo member > $CG/rt/cpuset.cpus.partition; rmdir $CG/rt; echo -cpuset > $CG/cgroup.subtree_control
    [ -n "$MOUNTED" ] && umount $CG
    assert_fail "the partition removed" test -d $CG/rt
}

# B: ethtool -L while blkmqd runs: the facts follow the NIC (ethtool netlink notification)
blkmqd_channels_change() {
    M=$BLKMQD_MOUNT
    X=$M/devices/$P
    start_blkmqd -v --devices 'nvme*' || return 0
    wait_for_file $X/applied/nic_irq_affinity 30 || true
    check_placed "before ethtool -L"
    L=$(wc -l < /tmp/blkmqd.log)
    assert_ok "ethtool -L $I combined 4 (blkmqd running)" ethtool -L $I combined 4
    # no periodic verify comes within this wait (VerifySec= 60 s): the notification does it
    wait_for_cmd 15 grep -qx 'combined=4 rx=0 tx=0 other=0' $X/network/channels || true
    assert_eq "network/channels follows the NIC" "combined=4 rx=0 tx=0 other=0" "$(read_attr $X/network/channels)"
    assert_match "gathered again at the notification" "Network facts changed \\(ethtool channels of $I \\(ETHTOOL_MSG_CHANNELS_NTF\\)" \
        "$(sed -n "$((L + 1)),\$p" /tmp/blkmqd.log | grep 'Network facts changed' | head -n 1)"
    wait_for_cmd 15 grep -q '^aligned' $X/network/alignment || true
    assert_eq "network/alignment on 4 channels" "aligned: 4 hctx over 4 NIC queue(s) of $I" "$(read_attr $X/network/alignment)"
    assert_eq "network/maps" "default 4 hctx (0-3) -> $I queues 0-3" "$(read_attr $X/network/maps)"
    assert_eq "network/recommended" "none: aligned" "$(read_attr $X/network/recommended)"
    assert_eq "plan/nr_io_queues: no proposal any more" keep "$(read_attr $X/plan/nr_io_queues)"
    assert_eq "nics/$I/tx_queues" 4 "$(read_attr $M/nics/$I/tx_queues)"
    wait_for_cmd 15 grep -q '^kept: ' $X/applied/nic_irq_affinity || true
    assert_match "applied/nic_irq_affinity: virtio-net's placement kept" '^kept: ' "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "applied/xps kept" '^kept: ' "$(read_attr $X/applied/xps)"
    assert_eq "metrics: blkmqd_net_recommended_action" "blkmqd_net_recommended_action{device=\"$P\",action=\"none\"} 1" \
        "$(grep "^blkmqd_net_recommended_action{device=\"$P\"" $M/metrics)"
    AFTER=$(nic_state)
    reads_per_cpu $NVME_DISK 50 900
    stop_blkmqd
    assert_eq "no NIC write after the change, nor at stop" 0 "$(sed -n "$((L + 1)),\$p" /tmp/blkmqd.log | grep -cE "Writing \".*\" to \"($NICPATHS)\"")"
    assert_eq "the driver's placement stays at stop" "$AFTER" "$(nic_state)"
    assert_eq "virtio-net's placement: queue q on CPU q" "0 0 1 1 2 2 3 3" \
        "$(for q in $IN0 $OUT0 $IN1 $OUT1 $IN2 $OUT2 $IN3 $OUT3; do read_attr /proc/irq/$q/smp_affinity_list; done | tr '\n' ' ' | sed 's/ $//')"
    ethtool -L $I combined 2
}

# C: the write-queue connect over the driver's own placement: each map aligned, zero NIC writes
blkmqd_write_queues() {
    M=$BLKMQD_MOUNT
    nvme_tcp_disconnect || { fail "$C disconnected"; return 0; }
    nvme_tcp_connect nr_io_queues=2,nr_write_queues=2 || return 0
    C=$NVME_CTRL P=$NVME_PATH
    X=$M/devices/$P
    assert_match "nr_io_queues=2,nr_write_queues=2 maps 2/2/0" 'mapped 2/2/0 default/read/poll' "$(dmesg | grep 'default/read/poll' | tail -n 1)"
    assert_eq "$P hctx types (debugfs)" "default default read read" "$(cat /sys/kernel/debug/block/$P/hctx[0-3]/type | tr '\n' ' ' | sed 's/ $//')"
    L0=$(read_attr /sys/block/$P/mq/0/cpu_list | tr -d ' ') L1=$(read_attr /sys/block/$P/mq/1/cpu_list | tr -d ' ')
    assert_eq "$P: each map spreads the CPUs on its own (read hctx 2-3 = default hctx 0-1)" "$L0|$L1" \
        "$(read_attr /sys/block/$P/mq/2/cpu_list | tr -d ' ')|$(read_attr /sys/block/$P/mq/3/cpu_list | tr -d ' ')"
    # virtio-net places its queues again at a channel change (virtnet_set_affinity()): queue 0 on
    # CPUs 0-1, queue 1 on 2-3, XPS 3 and c
    ethtool -L $I combined 4 && ethtool -L $I combined 2
    assert_eq "virtio-net's placement: queue vectors" "0-1 0-1 2-3 2-3" \
        "$(for q in $IN0 $OUT0 $IN1 $OUT1; do read_attr /proc/irq/$q/smp_affinity_list; done | tr '\n' ' ' | sed 's/ $//')"
    assert_eq "virtio-net's XPS" "3 c" "$(read_attr $Q/tx-0/xps_cpus | sed 's/^0*//') $(read_attr $Q/tx-1/xps_cpus | sed 's/^0*//')"
    # 6.12 groups CPUs evenly (hctx 0: 0,1; 1: 2,3), as virtio-net does; 6.1's blk_mq_map_queues()
    # deals them out in turn (0,2 / 1,3): there the admin puts the NIC on the hctx CPUs first, so
    # that the set-up is aligned before blkmqd starts
    if [ "$L0|$L1" = "0,1|2,3" ]; then
        note "blk-mq's map and virtio-net's placement agree ($L0 / $L1)"
    else
        note "blk-mq's map ($L0 / $L1) differs from virtio-net's (0-1 / 2-3): the NIC placed on the hctx CPUs by hand"
        for q in $IN0 $OUT0; do echo "$L0" > /proc/irq/$q/smp_affinity_list; done
        for q in $IN1 $OUT1; do echo "$L1" > /proc/irq/$q/smp_affinity_list; done
        cpumask() { _m=0; for _c in $(echo "$1" | tr ',' ' '); do _m=$((_m | (1 << _c))); done; printf '%x\n' $_m; }
        cpumask "$L0" > $Q/tx-0/xps_cpus
        cpumask "$L1" > $Q/tx-1/xps_cpus
    fi
    BEFORE=$(nic_state)
    start_blkmqd -v --devices 'nvme*' || return 0
    wait_for_file $X/network/alignment 30 || true
    wait_for_cmd 30 grep -q '^kept: ' $X/applied/xps || true
    assert_eq "network/alignment: each map on its own" "aligned: 4 hctx over 2 NIC queue(s) of $I" "$(read_attr $X/network/alignment)"
    assert_eq "network/maps" "default 2 hctx (0-1) -> $I queues 0-1|read 2 hctx (2-3) -> $I queues 0-1" "$(tr '\n' '|' < $X/network/maps | sed 's/|$//')"
    assert_eq "hctx/2/type" read "$(read_attr $X/hctx/2/type)"
    assert_match "applied/nic_irq_affinity kept" '^kept: ' "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "applied/xps kept" '^kept: ' "$(read_attr $X/applied/xps)"
    assert_eq "plan/nr_io_queues: nothing proposed (what is in use)" keep "$(read_attr $X/plan/nr_io_queues)"
    assert_match "applied/nr_io_queues" '^unmanaged' "$(read_attr $X/applied/nr_io_queues)"
    assert_eq "network/recommended" "none: aligned" "$(read_attr $X/network/recommended)"
    assert_match "explain: the maps" "^$P: 4 hctx \\(default 2, read 2\\) over $I .*\\(rule net-align\\)" "$(grep 'rule net-align' $X/explain)"
    assert_eq "metrics: blkmqd_net_queue_map_hctx read" "blkmqd_net_queue_map_hctx{device=\"$P\",map=\"read\"} 2" \
        "$(grep "^blkmqd_net_queue_map_hctx{device=\"$P\",map=\"read\"" $M/metrics)"
    reads_per_cpu $NVME_DISK 50 700
    stop_blkmqd
    assert_eq "blkmqd's NIC writes on the aligned set-up, start to stop" 0 "$(nic_writes)"
    assert_eq "the NIC's vectors and XPS as the driver left them" "$BEFORE" "$(nic_state)"
}
# D: an active-backup bond of two NICs, a failover while blkmqd runs (rtnetlink notification)
blkmqd_bond_failover() {
    M=$BLKMQD_MOUNT
    I2=$NVME_INI2_IF
    [ -n "$I2" ] || { fail "a third NIC for the bond (MAC 52:54:00:12:34:03)"; return 0; }
    V2=$(readlink -f /sys/class/net/$I2/device); V2=${V2##*/}
    irq2_of() { grep -E " $V2-$1\$" /proc/interrupts | cut -d: -f1 | tr -d ' '; }
    J0=$(irq2_of input.0) K0=$(irq2_of output.0) J1=$(irq2_of input.1) K1=$(irq2_of output.1)
    ethtool -L $I combined 2; ethtool -L $I2 combined 2
    nvme_tcp_bond || return 0
    C=$NVME_CTRL P=$NVME_PATH
    X=$M/devices/$P
    assert_eq "bonding/mode" "active-backup 1" "$(read_attr /sys/class/net/bond0/bonding/mode)"
    assert_eq "bonding/active_slave" "$I" "$(read_attr /sys/class/net/bond0/bonding/active_slave)"
    assert_match "route to $NVME_TCP_ADDR leaves through bond0" "dev bond0 " "$($IP -o route get $NVME_TCP_ADDR)"
    for q in $IN0 $OUT0 $IN1 $OUT1 $J0 $K0 $J1 $K1; do echo 0 > /proc/irq/$q/smp_affinity_list; done
    # the bond's IPv6 link-local address finishes DAD about 1 s after bond0 came up, and its
    # host route (RTM_NEWROUTE) would start the burst that also carries the failover: settled first
    assert_ok "bond0's IPv6 addresses past DAD before blkmqd starts" \
        wait_for_cmd 15 sh -c "[ -z \"\$($IP -6 addr show dev bond0 tentative)\" ]"
    aff() { for q in "$@"; do read_attr /proc/irq/$q/smp_affinity_list; done | tr '\n' ' ' | sed 's/ $//'; }
    start_blkmqd -v --devices 'nvme*' || return 0
    wait_for_file $X/network/bond 30 || true
    assert_eq "network/bond" "bond0 mode=active-backup active=$I ports=$I $I2" "$(read_attr $X/network/bond)"
    assert_eq "network/lower_device: the active port" "$I (bond0 -> $I)" "$(read_attr $X/network/lower_device)"
    wait_for_cmd 30 sh -c "[ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 2-3 ]" || true
    assert_eq "the active port's vectors placed" "0-1 0-1 2-3 2-3" "$(aff $IN0 $OUT0 $IN1 $OUT1)"
    assert_eq "the backup port's left alone" "0 0 0 0" "$(aff $J0 $K0 $J1 $K1)"
    L=$(wc -l < /tmp/blkmqd.log)
    assert_ok "ip link set $I down (failover)" $IP link set $I down
    wait_for_cmd 15 grep -qx "$I2 (bond0 -> $I2)" $X/network/lower_device || true
    assert_eq "bonding/active_slave after the failover" "$I2" "$(read_attr /sys/class/net/bond0/bonding/active_slave)"
    assert_eq "network/lower_device follows the failover" "$I2 (bond0 -> $I2)" "$(read_attr $X/network/lower_device)"
    # an rtnetlink burst (the port's and the bond's RTM_NEWLINK first), not the periodic verify
    assert_match "gathered again at the rtnetlink notification" "Network facts changed \\((link|a route) .*\\): gathering again" \
        "$(sed -n "$((L + 1)),\$p" /tmp/blkmqd.log | grep 'Network facts changed' | head -n 1)"
    wait_for_cmd 30 sh -c "[ \"\$(cat /proc/irq/$J1/smp_affinity_list)\" = 2-3 ] && [ \"\$(cat /proc/irq/$IN1/smp_affinity_list)\" = 0 ]" || true
    assert_eq "the new active port's vectors placed" "0-1 0-1 2-3 2-3" "$(aff $J0 $K0 $J1 $K1)"
    assert_eq "the old active port's put back" "0 0 0 0" "$(aff $IN0 $OUT0 $IN1 $OUT1)"
    assert_match "applied/nic_irq_affinity: the new port, its originals" "^ok: .*\\(was $(printf '%s:0\n' $J0 $K0 $J1 $K1 | sort -n | tr '\n' ' ' | sed 's/ $//')\\)" \
        "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "nics/$I2/disks" "(^| )$P( |\$)" "$(read_attr $M/nics/$I2/disks)"
    reads_per_cpu $NVME_DISK 50 1100
    assert_eq "$C live over the new port" live "$(read_attr /sys/class/nvme/$C/state)"
    stop_blkmqd
    assert_eq "SIGTERM: the new port's vectors back" "0 0 0 0" "$(aff $J0 $K0 $J1 $K1)"
    assert_eq "SIGTERM: the old port's untouched" "0 0 0 0" "$(aff $IN0 $OUT0 $IN1 $OUT1)"
}
blkmqd_checks blkmqd_nvme_tcp
blkmqd_checks blkmqd_isolated_partition
blkmqd_checks blkmqd_channels_change
blkmqd_checks blkmqd_write_queues
blkmqd_checks blkmqd_bond_failover
