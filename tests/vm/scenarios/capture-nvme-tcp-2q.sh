#!/bin/sh
# Fixture capture: an nvme-tcp disk over a 2-queue-pair virtio-net NIC (MSI-X, vectors=6),
# 4 vCPUs, so nvme-tcp makes 4 I/O queues over 2 NIC queues (nvme_tcp_setup in guest-lib.sh:
# the nvmet-tcp target sits behind a second NIC in the guest network namespace "tgt", the two
# taps are bridged in a host network namespace the harness makes and removes).
# Output: --share DIR/vm-<kernel series>-nvme-tcp-2q, with netlink/facts (route, links,
# channels as blkmqd reads them in --root mode) and NOTES (ethtool, ip, dmesg as seen).
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
# modules: virtio_net nvme-tcp nvmet nvmet-tcp
. /opt/vmtest/guest-lib.sh
nvme_tcp_setup || exit 1
reads_per_cpu $NVME_DISK 40
netlink_facts > /tmp/netlink-facts
{
    echo "# what the guest's tools said when vm-$VMTEST_KERNEL_SERIES-nvme-tcp-2q was captured"
    for c in "ethtool -l $NVME_INI_IF" "ethtool -i $NVME_INI_IF" "ethtool -l lo" "$IP -d link show" \
             "$IP addr show" "$IP route show" "$IP route get $NVME_TCP_ADDR" \
             "$IP -n tgt -d link show" "cat /sys/class/nvme/$NVME_CTRL/address"; do
        echo "\$ ${c#/usr/sbin/}"
        $c 2>&1 || echo "(exit status $?)"
        echo
    done
    echo "\$ dmesg | grep -E 'nvme|nvmet|virtio'"
    dmesg | grep -E 'nvme|nvmet|virtio' | sed 's/^\[[ 0-9.]*\] //'
} > /tmp/notes 2>&1
cat /tmp/netlink-facts
export CAPTURE_MODULES="nvme_core nvme_fabrics nvme_tcp virtio_net"
export CAPTURE_NETDEVS="$NVME_INI_IF"
export CAPTURE_FILES="/tmp/netlink-facts:netlink/facts /tmp/notes:NOTES"
export CAPTURE_NOTE="nvme-tcp $NVME_CTRL ($(cat /sys/class/nvme/$NVME_CTRL/address)) to nvmet-tcp (null_blk) in guest netns tgt behind a 2nd virtio-net NIC; $NVME_DISK = multipath head, $NVME_PATH = its blk-mq path; initiator NIC $NVME_INI_IF = QEMU -netdev tap,queues=2,vhost=off -device virtio-net-pci,mq=on,vectors=6; -smp 4; 4x40 direct 4k reads of $NVME_DISK"
capture_fixture vm-$VMTEST_KERNEL_SERIES-nvme-tcp-2q $NVME_DISK $NVME_PATH
