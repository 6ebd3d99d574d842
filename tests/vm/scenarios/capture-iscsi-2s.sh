#!/bin/sh
# Fixture capture: two iSCSI sessions to one LIO target over a 2-queue-pair virtio-net NIC
# (MSI-X, vectors=6), 4 vCPUs: session 1 through open-iscsi's iface "default" (bound to no
# device), session 2 through iface "ini" bound to the NIC (iface.net_ifacename); one disk of
# one hctx each (iscsi_setup in guest-lib.sh: the target listens in the guest network namespace
# "tgt" behind a second NIC).  Output: --share DIR/vm-<kernel series>-iscsi-2s (both disks in
# one tree), with netlink/facts and NOTES.
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
# binary: /usr/sbin/iscsid
# binary: /usr/sbin/iscsiadm
# modules: virtio_net
. /opt/vmtest/guest-lib.sh
iscsi_setup || exit 1
for d in $ISCSI_DISKS; do reads_per_cpu $d 40; done
netlink_facts > /tmp/netlink-facts
{
    echo "# what the guest's tools said when vm-$VMTEST_KERNEL_SERIES-iscsi-2s was captured"
    for c in "/usr/sbin/iscsiadm -m session -P 3" "/usr/sbin/iscsiadm -m iface" "ethtool -l $NVME_INI_IF" \
             "$IP -d link show" "$IP addr show" "$IP route get $NVME_TCP_ADDR" "cat /proc/net/tcp"; do
        echo "\$ ${c#/usr/sbin/}"
        $c 2>&1 || echo "(exit status $?)"
        echo
    done
    echo "\$ dmesg | grep -E 'iscsi|scsi|virtio'"
    dmesg | grep -E 'iscsi|scsi|virtio' | sed 's/^\[[ 0-9.]*\] //'
} > /tmp/notes 2>&1
cat /tmp/notes
export CAPTURE_MODULES="iscsi_tcp libiscsi scsi_transport_iscsi virtio_net"
export CAPTURE_NETDEVS="$NVME_INI_IF"
export CAPTURE_FILES="/tmp/netlink-facts:netlink/facts /tmp/notes:NOTES"
export CAPTURE_NOTE="two iSCSI sessions (open-iscsi ifaces default and ini bound to $NVME_INI_IF) to an LIO target (iblock over null_blk) in guest netns tgt behind a 2nd virtio-net NIC; initiator NIC $NVME_INI_IF = QEMU -netdev tap,queues=2,vhost=off -device virtio-net-pci,mq=on,vectors=6; -smp 4; 4x40 direct 4k reads of each disk ($ISCSI_DISKS)"
capture_fixture vm-$VMTEST_KERNEL_SERIES-iscsi-2s $ISCSI_DISKS
finish
