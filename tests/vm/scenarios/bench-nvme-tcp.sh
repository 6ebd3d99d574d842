#!/bin/sh
# bench-nvme-tcp: P11 (docs/BENCHMARKS.md) - nvme-tcp over a 2-queue virtio-net NIC (the
# nvme-tcp scenario's set-up: -smp 4, 4 I/O queues over 2 NIC queues, target nvmet-tcp +
# null_blk behind a second NIC).  fio 4k randread, libaio, iodepth 64, numjobs = vCPUs, on the
# nvme-tcp disk.  Each pair runs the "kernel" and the "blkmqd" set-up back to back, alternating
# the order.  Cases:
#   A  the kernel's placement (virtio-net: queue 0's vectors and XPS on CPUs 0-1, queue 1's on
#      2-3) both sides, blkmqd running on one: the noise floor (A/A)
#   B  every NIC queue vector and XPS on CPU 0 (what an IRQ balancer may leave) vs blkmqd's
#      placement (blkmqd running, nic_irq_affinity and xps applied)
#   C  4 I/O queues (nvme-tcp's default: one per CPU) vs the 2 blkmqd proposes
#      (applied/nr_io_queues pending-reconnect, carried out here by reconnecting with
#      nr_io_queues=2), blkmqd's placement on both sides
# Results: "# BENCH case=X pair=N setup=kernel|blkmqd ioq=Q iops=I lat_us=L p99_us=P".
# BENCH_RUNTIME (s, default 5), BENCH_PAIRS (default 3) via harness --env.
# smp: 4
# mem: 1024
# needs: fio
# timeout: 1200
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

RT=${BENCH_RUNTIME:-5}
PAIRS=${BENCH_PAIRS:-3}
CPUS=$(nproc)

nvme_tcp_setup || exit 1
have_blkmqd || skip_all "blkmqd not packed"
I=$NVME_INI_IF
Q=/sys/class/net/$I/queues
VDEV=$(readlink -f /sys/class/net/$I/device)
VNAME=${VDEV##*/}
QIRQS=$(grep -E " $VNAME-(input|output)\.[0-9]+\$" /proc/interrupts | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')
note "queue vectors of $I: $QIRQS"

fio_run() {
    fio_read_figures --name=bench --filename=/dev/$NVME_DISK --rw=randread --bs=4k --direct=1 --ioengine=libaio \
        --iodepth=64 --numjobs="$CPUS"
}
placement() {
    for q in $QIRQS; do printf '%s:%s ' $q "$(cat /proc/irq/$q/smp_affinity_list)"; done
    printf 'xps=%s,%s' "$(cat $Q/tx-0/xps_cpus)" "$(cat $Q/tx-1/xps_cpus)"
}
kernel_placement() {    # virtio-net's own spread (virtnet_set_affinity): queue 0 -> 0-1, queue 1 -> 2-3
    for q in $QIRQS; do
        case "$(grep -E "^ *$q:" /proc/interrupts)" in
            *put.0) echo 0-1 > /proc/irq/$q/smp_affinity_list ;;
            *put.1) echo 2-3 > /proc/irq/$q/smp_affinity_list ;;
        esac
    done
    echo 3 > $Q/tx-0/xps_cpus
    echo c > $Q/tx-1/xps_cpus
}
balancer_placement() {
    for q in $QIRQS; do echo 0 > /proc/irq/$q/smp_affinity_list; done
    echo 1 > $Q/tx-0/xps_cpus
    echo 1 > $Q/tx-1/xps_cpus
}
blkmqd_on() {
    start_blkmqd --devices 'nvme*' || return 1
    X=$BLKMQD_MOUNT/devices/$NVME_PATH
    wait_for_cmd 30 sh -c "grep -Eq '^(ok|kept)' $X/applied/nic_irq_affinity && grep -Eq '^(ok|kept)' $X/applied/xps" ||
        note "blkmqd applied: $(cat $X/applied/nic_irq_affinity) / $(cat $X/applied/xps)"
    APPLIED="$(cut -c1-40 $X/applied/nic_irq_affinity | tr ' ' _)"
}
blkmqd_off() { stop_blkmqd >/dev/null; }
ioq() { echo $(($(cat /sys/class/nvme/$NVME_CTRL/queue_count) - 1)); }
reconnect() {           # N: nvme-tcp I/O queues
    nvme_tcp_disconnect || { fail "disconnect $NVME_CTRL"; return 1; }
    nvme_tcp_connect "nr_io_queues=$1" || return 1
    assert_eq "reconnected with $1 I/O queues" "$1" "$(ioq)"
}

run_side() {            # CASE PAIR SIDE
    case "$1/$3" in
        A/kernel) kernel_placement ;;
        A/blkmqd) kernel_placement; blkmqd_on ;;
        B/kernel) balancer_placement ;;
        B/blkmqd) balancer_placement; blkmqd_on ;;
        C/kernel) [ "$(ioq)" = 4 ] || reconnect 4; kernel_placement; blkmqd_on ;;
        C/blkmqd) [ "$(ioq)" = 2 ] || reconnect 2; kernel_placement; blkmqd_on ;;
    esac
    r=$(fio_run)
    echo "# BENCH case=$1 pair=$2 setup=$3 ioq=$(ioq) placement=\"$(placement)\" $r"
    case "$1/$3" in */blkmqd|C/*) blkmqd_off ;; esac
    [ -n "$r" ] || { fail "fio case $1 pair $2 $3" "$(tail -n 3 /tmp/fio.err)"; }
}

for c in A B C; do
    bench_pairs "$PAIRS" run_side $c
done
pass "P11 done: $PAIRS pairs x 3 cases, ${RT} s each"
