#!/bin/sh
# Fixture capture: an NBD disk with two connections (nbd-client -C 2: nr_hw_queues 2, hctx i
# sends on connection i) over a 2-queue-pair virtio-net NIC (MSI-X, vectors=6), 4 vCPUs; the
# server is qemu-nbd in the guest network namespace "tgt" behind a second NIC (nbd_setup in
# guest-lib.sh; the two taps are bridged in a host network namespace the harness makes).
# Output: --share DIR/vm-<kernel series>-nbd-2c, with netlink/facts and NOTES.
# needs: share
# smp: 4
# timeout: 240
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
reads_per_cpu $NBD_DISK 40
netlink_facts > /tmp/netlink-facts
{
    echo "# what the guest's tools said when vm-$VMTEST_KERNEL_SERIES-nbd-2c was captured"
    for c in "ethtool -l $NVME_INI_IF" "$IP -d link show" "$IP addr show" "$IP route get $NVME_TCP_ADDR" \
             "cat /sys/block/$NBD_DISK/pid" "ls -l /proc/$(cat /sys/block/$NBD_DISK/pid)/fd" "cat /proc/net/tcp"; do
        echo "\$ ${c#/usr/sbin/}"
        $c 2>&1 || echo "(exit status $?)"
        echo
    done
    echo "\$ ls /sys/kernel/debug/nbd/$NBD_DISK; cat tasks flags"
    ls /sys/kernel/debug/nbd/$NBD_DISK 2>&1
    cat /sys/kernel/debug/nbd/$NBD_DISK/tasks /sys/kernel/debug/nbd/$NBD_DISK/flags 2>&1
    echo "\$ dmesg | grep -E 'nbd|virtio'"
    dmesg | grep -E 'nbd|virtio' | sed 's/^\[[ 0-9.]*\] //'
} > /tmp/notes 2>&1
cat /tmp/notes
export CAPTURE_MODULES="nbd virtio_net"
export CAPTURE_NETDEVS="$NVME_INI_IF"
export CAPTURE_FILES="/tmp/netlink-facts:netlink/facts /tmp/notes:NOTES"
export CAPTURE_NOTE="nbd-client -C 2 (netlink) to qemu-nbd --shared=8 in guest netns tgt behind a 2nd virtio-net NIC; initiator NIC $NVME_INI_IF = QEMU -netdev tap,queues=2,vhost=off -device virtio-net-pci,mq=on,vectors=6; -smp 4; 4x40 direct 4k reads of $NBD_DISK"
capture_fixture vm-$VMTEST_KERNEL_SERIES-nbd-2c $NBD_DISK
