#!/bin/sh
# Fixture capture: scsi_debug with 4 submit queues and a host-wide shared tagset
# (host_max_queue=64 -> TAG_HCTX_SHARED), 4 vCPUs.  Output: --share DIR/vm-<kernel series>-scsi-debug-shared
# needs: share
# smp: 4
# timeout: 180
. /opt/vmtest/guest-lib.sh
assert_ok "modprobe scsi_debug" modprobe scsi_debug submit_queues=4 host_max_queue=64 delay=1 dev_size_mb=64
D=$(disk_by_model scsi_debug || true)
[ -n "$D" ] || { wait_for_cmd 10 disk_by_model scsi_debug >/dev/null; D=$(disk_by_model scsi_debug); }
assert_match "scsi_debug disk" '^sd[a-z]+$' "$D"
for cpu in 0 1 2 3; do
    taskset -c $cpu dd if=/dev/$D of=/dev/null bs=4k count=40 skip=$((cpu * 1000)) iflag=direct 2>/dev/null
done
export CAPTURE_NOTE="modprobe scsi_debug submit_queues=4 host_max_queue=64 delay=1 dev_size_mb=64, -smp 4; 4x40 direct 4k reads under the default mq-deadline"
capture_fixture vm-$VMTEST_KERNEL_SERIES-scsi-debug-shared "$D"
