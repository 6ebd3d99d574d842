#!/bin/sh
# nbd: a network disk whose sockets the kernel names only through its client (issue 30 item 5).  nbd-client -C 2
# connects /dev/nbd0 with two connections (nr_hw_queues 2; hctx i sends on connection i,
# drivers/block/nbd.c nbd_queue_rq()) over a 2-queue-pair virtio-net NIC to qemu-nbd in the
# guest network namespace "tgt" (nbd_setup in guest-lib.sh).
#   A  the netlink interface (nbd-client's default): the client hands its connected sockets to
#      the kernel and exits, so /sys/block/nbd0/pid names a process that is gone and nothing
#      in sysfs, debugfs or /proc ties the sockets to nbd0.
#   B  the ioctl interface (nbd-client -L): the client stays in NBD_DO_IT holding /dev/nbd0 and
#      its sockets, whose rows in /proc/<pid>/net/tcp give both ends.
# Kernel facts: 2 hctx, 2 established TCP connections to the server's port, the NIC's queue
# vectors and XPS.  blkmqd: network/transport nbd, connections 2; A: for each fact it cannot
# read (server address, route, NIC) the reason (the pid file's process is gone), alignment
# unknown, not one NIC write; B (NBD trusted as fast, so managed): traddr, trsvcid, src_addr,
# interface eth0, the per-map alignment, and exactly the NIC writes the hctx placement needs
# (none where virtio-net's placement is already the hctx's), restored at stop.
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
nic_watch $I
assert_match "$I: MSI-X vectors" '^[0-9]+( [0-9]+)+ $' "$NIC_VEC"
reads_per_cpu $D 20
NIC0=$(nic_state)

check_unknown() {      # PHASE
    X=$BLKMQD_MOUNT/devices/$D
    wait_for_file $X/network/alignment 30 || true
    assert_eq "$1: network/transport" nbd "$(read_attr $X/network/transport)"
    assert_eq "$1: network/connections (one per hctx)" 2 "$(read_attr $X/network/connections)"
    assert_match "$1: network/traddr says why: the pid file's process is gone" \
        "^unknown: the process of /sys/block/$D/pid \\($PID\\) is gone: the netlink interface hands the sockets to the kernel, which exports no socket address for NBD" \
        "$(read_attr $X/network/traddr)"
    assert_match "$1: network/interface names the connections" \
        '^unknown: which NIC its 2 connection\(s\) leave by is unknown .*is gone' \
        "$(read_attr $X/network/interface)"
    assert_match "$1: network/alignment unknown" '^unknown: which NIC its 2 connection\(s\) leave by is unknown' \
        "$(read_attr $X/network/alignment)"
    assert_match "$1: applied/nic_irq_affinity: nothing placed" '^unmanaged' "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "$1: applied/xps: nothing placed" '^unmanaged' "$(read_attr $X/applied/xps)"
    assert_eq "$1: not one NIC write" 0 "$(nic_writes)"
    assert_eq "$1: the NIC's vectors and XPS as the driver left them" "$NIC0" "$(nic_state)"
    assert_match "$1: metrics: blkmqd_net_alignment unknown" \
        "^blkmqd_net_alignment\\{device=\"$D\",transport=\"nbd\",interface=\"\",nic=\"\",state=\"unknown\"\\} 1" \
        "$(grep "^blkmqd_net_alignment{device=\"$D\"" $BLKMQD_MOUNT/metrics)"
}

# cpus LIST: "0, 2" / "0-1" / "0,2-3" as sorted CPU numbers, one line
cpus() { echo "$1" | tr ',' '\n' | tr -d ' ' | while IFS=- read a b; do [ -n "$a" ] && seq "$a" "${b:-$a}"; done | sort -n | tr '\n' ' '; }
# mask LIST: the hex mask of a CPU list, as xps_cpus reads
mask() { _m=0; for c in $(cpus "$1"); do _m=$((_m | (1 << c))); done; printf '%x' $_m; }
# writes_needed: per hctx i, queue i's vectors (input.i, output.i) not on its cpu_list and TX
# queue i's XPS not its mask (2 hctx over 2 queues: hctx i -> queue i)
writes_needed() {
    _n=0; _vname=${NIC_DEV##*/}
    for i in 0 1; do
        _want=$(cpus "$(cat /sys/block/$D/mq/$i/cpu_list)")
        for v in input output; do
            _irq=$(grep -E " $_vname-$v\.$i\$" /proc/interrupts | cut -d: -f1 | tr -d ' ')
            [ "$(cpus "$(cat /proc/irq/$_irq/smp_affinity_list)")" = "$_want" ] || _n=$((_n + 1))
        done
        [ "$((0x$(cat $Q/tx-$i/xps_cpus | tr -d ',')))" = "$((0x$(mask "$(cat /sys/block/$D/mq/$i/cpu_list)")))" ] || _n=$((_n + 1))
    done
    echo $_n
}

check_known() {      # PHASE
    X=$BLKMQD_MOUNT/devices/$D
    wait_for_file $X/network/alignment 30 || true
    assert_eq "$1: network/transport" nbd "$(read_attr $X/network/transport)"
    assert_eq "$1: network/traddr (the client's sockets)" "$NVME_TCP_ADDR" "$(read_attr $X/network/traddr)"
    assert_eq "$1: network/trsvcid" 10809 "$(read_attr $X/network/trsvcid)"
    assert_eq "$1: network/src_addr" 10.77.0.1 "$(read_attr $X/network/src_addr)"
    assert_eq "$1: network/connections (one per hctx)" 2 "$(read_attr $X/network/connections)"
    assert_eq "$1: network/interface" "$I" "$(read_attr $X/network/interface)"
    assert_eq "$1: network/maps" "default 2 hctx (0-1) -> $I queues 0-1" "$(read_attr $X/network/maps)"
    # the facts are read again after the run: aligned, by virtio-net's placement or by blkmqd's writes
    assert_eq "$1: network/alignment after the run" "aligned: 2 hctx over 2 NIC queue(s) of $I" "$(read_attr $X/network/alignment)"
    if [ "$WANT" != 0 ]; then
        assert_match "$1: the log: the vectors placed on the hctx CPUs" "$D: nic_irq_affinity -> .* \\(was .*\\) \\(rule net-align\\)" \
            "$(grep "$D: nic_irq_affinity -> " /tmp/blkmqd.log)"
        assert_match "$1: the log: XPS placed" "$D: xps -> $I/tx-0:.* \\(rule net-align\\)" "$(grep "$D: xps -> " /tmp/blkmqd.log)"
    fi
    assert_match "$1: applied/nic_irq_affinity placed" '^(ok|kept)' "$(read_attr $X/applied/nic_irq_affinity)"
    assert_match "$1: applied/xps placed" '^(ok|kept)' "$(read_attr $X/applied/xps)"
    assert_match "$1: applied/nr_io_queues: nothing proposed (2 connections fit 2 queues)" '^unmanaged' \
        "$(read_attr $X/applied/nr_io_queues)"
    assert_eq "$1: the NIC writes the placement needs" "$WANT" "$(nic_writes)"
    assert_eq "$1: no hctx without a NIC queue after the run" 0 "$(writes_needed)"
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
    # NBD's rotational flag trusted (the suites' list and nbd), so the disk is managed without a measurement
    printf '%s\n' '[Speed]' 'TrustRotational=virtio_blk virtio_scsi device-mapper nbd' \
        >/etc/blkmqd/blkmqd.conf.d/50-vmtest-nbd.conf
    WANT=$(writes_needed)
    note "B: hctx cpu_lists $(cat /sys/block/$D/mq/*/cpu_list | tr '\n' '/'); NIC $NIC0; writes needed: $WANT"
    start_blkmqd -v --devices 'nbd*' || return 0
    check_known B
    note "network/: $(for f in $BLKMQD_MOUNT/devices/$D/network/*; do printf '%s=%s; ' "${f##*/}" "$(head -c 300 $f)"; done)"
    stop_blkmqd
    rm -f /etc/blkmqd/blkmqd.conf.d/50-vmtest-nbd.conf
    assert_eq "B stop: the writes needed, then each put back" "$((2 * WANT))" "$(nic_writes)"
    assert_eq "B stop: the NIC as before" "$NIC0" "$(nic_state)"
    /usr/sbin/nbd-client -d /dev/$D >/dev/null 2>&1
}
blkmqd_checks blkmqd_nbd
finish
