#!/bin/sh
# Smoke test: the VM boots, block and debugfs are visible, a virtio-scsi disk shows up.
# smp: 2
# disk: d0 16M
# qemu: -device virtio-scsi-pci,id=scsi0
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,serial=smoke0
# timeout: 90
. /opt/vmtest/guest-lib.sh

note "kernel $(uname -r), $(nproc) CPUs, uptime $(cut -d' ' -f1 /proc/uptime)s"
assert_file "sysfs /sys/block" /sys/block
assert_file "debugfs block/" /sys/kernel/debug/block
assert_file "configfs mounted" /sys/kernel/config
assert_file "/dev/fuse" /dev/fuse
assert_match "kernel release is the $VMTEST_KERNEL_SERIES series asked for" \
    "^$(printf '%s' "$VMTEST_KERNEL_SERIES" | sed 's/\./\\./g')\." "$(uname -r)"
assert_ok "a scsi disk (sda) is present" wait_for_file /sys/block/sda 10
assert_eq "sda is blk-mq (mq/0 exists)" yes "$([ -d /sys/block/sda/mq/0 ] && echo yes || echo no)"
assert_file "debugfs block/sda/hctx0" /sys/kernel/debug/block/sda/hctx0
if [ -n "$VMTEST_SHARE" ]; then
    assert_ok "9p share mounted at /mnt/host" grep -q ' /mnt/host 9p ' /proc/mounts
fi
if [ -x /usr/bin/fusermount3 ]; then pass "fusermount3 packed"; else fail "fusermount3 packed"; fi
