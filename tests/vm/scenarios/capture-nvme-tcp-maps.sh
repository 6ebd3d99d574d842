#!/bin/sh
# Fixture capture: the shapes of network disk the first nvme-tcp fixtures lack, over a
# virtio-net NIC with 4 queue pairs (MSI-X, vectors=10) run at 2 combined channels
# (ethtool -L), -smp 4 (nvme_tcp_setup in guest-lib.sh: the nvmet-tcp target sits behind a
# second NIC in the guest network namespace "tgt"; the taps are bridged in a host network
# namespace the harness makes and removes).  One boot, up to three trees:
#   vm-<series>-nvme-tcp-rw     nr_io_queues=2,nr_write_queues=2: maps 2/2/0 default/read/poll,
#                               hctx 0-1 default, 2-3 read (debugfs hctxN/type); both kernels
#                               (their blk-mq maps spread the CPUs differently)
#   vm-6.12-nvme-tcp-spare      the default connect (4 I/O queues, one map) over 2 of the
#                               NIC's 4 channels
#   vm-6.12-nvme-tcp-bond       the default connect over bond0 (active-backup, miimon 100) of
#                               the initiator NIC (active) and a third virtio-net NIC
# The last two only on 6.12: what they show is the same on 6.1 (vm/nvme-tcp checks both kernels
# live), and every tree costs the fixture suites a copy per run.
# Each with netlink/facts (route, links, channels as blkmqd reads them in --root mode) and
# NOTES (ethtool, ip, dmesg as seen).
# needs: share
# smp: 4
# timeout: 900
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
for i in $NVME_INI_IF $NVME_INI2_IF; do ethtool -L $i combined 2; done

# capture NAME NOTE NETDEV...: the tree of the current controller's disks as vm-<series>-NAME
capture() {
    _name=vm-$VMTEST_KERNEL_SERIES-nvme-tcp-$1 _note=$2; shift 2
    reads_per_cpu $NVME_DISK 40
    netlink_facts > /tmp/netlink-facts
    {
        echo "# what the guest's tools said when $_name was captured"
        for c in "ethtool -l $NVME_INI_IF" "ethtool -i $NVME_INI_IF" "$IP -d link show" "$IP addr show" \
                 "$IP route get $NVME_TCP_ADDR" "cat /sys/class/nvme/$NVME_CTRL/address" \
                 "cat /sys/class/nvme/$NVME_CTRL/queue_count" "grep . /sys/kernel/debug/block/$NVME_PATH/hctx*/type" \
                 "grep . /sys/block/$NVME_PATH/mq/*/cpu_list" "grep . /sys/class/net/bond0/bonding/mode \
                 /sys/class/net/bond0/bonding/active_slave /sys/class/net/bond0/bonding/slaves"; do
            echo "\$ ${c#/usr/sbin/}"
            $c 2>&1 || echo "(exit status $?)"
            echo
        done
        echo "\$ dmesg | grep -E 'nvme|nvmet|virtio|bond'"
        dmesg | grep -E 'nvme|nvmet|virtio|bond' | sed 's/^\[[ 0-9.]*\] //'
    } > /tmp/notes 2>&1
    cat /tmp/netlink-facts
    export CAPTURE_MODULES="nvme_core nvme_fabrics nvme_tcp virtio_net bonding"
    export CAPTURE_NETDEVS="$*"
    export CAPTURE_FILES="/tmp/netlink-facts:netlink/facts /tmp/notes:NOTES"
    export CAPTURE_NOTE="nvme-tcp $NVME_CTRL ($(cat /sys/class/nvme/$NVME_CTRL/address)) to nvmet-tcp (null_blk) in guest netns tgt behind a 2nd virtio-net NIC; $NVME_DISK = multipath head, $NVME_PATH = its blk-mq path; $_note; initiator NICs = QEMU -netdev tap,queues=4,vhost=off -device virtio-net-pci,mq=on,vectors=10, ethtool -L combined 2; -smp 4; 4x40 direct 4k reads of $NVME_DISK"
    capture_fixture $_name $NVME_DISK $NVME_PATH
}

[ "$VMTEST_KERNEL_SERIES" = 6.12 ] &&
    capture spare "default connect: $(cat /sys/class/nvme/$NVME_CTRL/queue_count) queues with the admin queue, over $NVME_INI_IF" $NVME_INI_IF
nvme_tcp_disconnect && nvme_tcp_connect nr_io_queues=2,nr_write_queues=2 || exit 1
assert_match "nr_io_queues=2,nr_write_queues=2 maps 2/2/0" 'mapped 2/2/0 default/read/poll' "$(dmesg | grep 'default/read/poll' | tail -n 1)"
capture rw "connect nr_io_queues=2,nr_write_queues=2 ($(dmesg | grep -o 'mapped [0-9/]* default/read/poll queues' | tail -n 1)) over $NVME_INI_IF" $NVME_INI_IF
[ "$VMTEST_KERNEL_SERIES" = 6.12 ] || exit 0
nvme_tcp_bond || exit 1
capture bond "default connect over bond0 (active-backup, miimon 100) of $NVME_INI_IF (active) and $NVME_INI2_IF" bond0 $NVME_INI_IF $NVME_INI2_IF
