#!/bin/sh
# shared-tags: scsi_debug with 4 submit queues sharing one host-wide tagset (host_max_queue).
# Kernel facts: 4 hctx, nr_tags=64, TAG_HCTX_SHARED in debugfs hctx flags, default
# mq-deadline, nr_hw_queues=4/can_queue=64 on the host, no host_tagset sysfs attribute.
# smp: 4
# timeout: 90
. /opt/vmtest/guest-lib.sh

assert_ok "modprobe scsi_debug" modprobe scsi_debug submit_queues=4 host_max_queue=64 delay=1 dev_size_mb=64
D=$(disk_by_model scsi_debug || true)
if [ -z "$D" ] && wait_for_cmd 10 disk_by_model scsi_debug >/dev/null; then D=$(disk_by_model scsi_debug); fi
assert_match "scsi_debug disk found" '^sd[a-z]+$' "$D"
[ -n "$D" ] || exit 1
H=host$(ls /sys/block/$D/device/scsi_device/ | cut -d: -f1)
note "disk $D on $H"
assert_eq "$D hctx count" 4 "$(hctx_count $D)"
assert_eq "$D hctx0 nr_tags" 64 "$(read_attr /sys/block/$D/mq/0/nr_tags)"
for h in 0 1 2 3; do
    assert_match "hctx$h flags has TAG_HCTX_SHARED" 'TAG_HCTX_SHARED' "$(read_attr /sys/kernel/debug/block/$D/hctx$h/flags)"
done
assert_match "$D default elevator mq-deadline (shared tags)" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"
assert_eq "$H nr_hw_queues" 4 "$(read_attr /sys/class/scsi_host/$H/nr_hw_queues)"
assert_eq "$H can_queue" 64 "$(read_attr /sys/class/scsi_host/$H/can_queue)"
assert_eq "$H proc_name" scsi_debug "$(read_attr /sys/class/scsi_host/$H/proc_name)"
assert_eq "no host_tagset attribute" no "$([ -e /sys/class/scsi_host/$H/host_tagset ] && echo yes || echo no)"
assert_eq "scsi_debug.host_max_queue param" 64 "$(read_attr /sys/module/scsi_debug/parameters/host_max_queue)"
assert_eq "host_max_queue param mode 0444" 444 "$(stat -c %a /sys/module/scsi_debug/parameters/host_max_queue)"

blkmqd_shared_tags() {
    start_blkmqd -v
    assert_eq "blkmqd facts/shared_tags" 1 "$(read_attr $BLKMQD_MOUNT/devices/$D/facts/shared_tags)"
    if [ -d $BLKMQD_MOUNT/hosts ]; then
        assert_eq "blkmqd hosts/$H/shared_tags" 1 "$(read_attr $BLKMQD_MOUNT/hosts/$H/shared_tags)"
        assert_eq "blkmqd hosts/$H/driver" scsi_debug "$(read_attr $BLKMQD_MOUNT/hosts/$H/driver)"
    else
        skip "blkmqd hosts/$H/{shared_tags,driver}" "no hosts/ subtree in this blkmqd (DESIGN.md lists it)"
    fi
    assert_match "blkmqd class" '.' "$(read_attr $BLKMQD_MOUNT/devices/$D/class)"
    note "class $(read_attr $BLKMQD_MOUNT/devices/$D/class); explain: $(read_attr $BLKMQD_MOUNT/devices/$D/explain | head -n 3 | tr '\n' '|')"
    stop_blkmqd
}
blkmqd_checks blkmqd_shared_tags
