#!/bin/sh
# Fixture capture: scsi_debug with 4 submit queues and a host-wide shared tagset
# (host_max_queue=64 -> TAG_HCTX_SHARED), 4 vCPUs.  Output: --share DIR/vm-<kernel series>-scsi-debug-shared
# needs: share
# smp: 4
# timeout: 180
. /opt/vmtest/guest-lib.sh
scsi_debug_disk submit_queues=4 host_max_queue=64 delay=1 dev_size_mb=64
reads_per_cpu $D 40
export CAPTURE_NOTE="modprobe scsi_debug submit_queues=4 host_max_queue=64 delay=1 dev_size_mb=64, -smp 4; 4x40 direct 4k reads under the default mq-deadline"
capture_fixture vm-$VMTEST_KERNEL_SERIES-scsi-debug-shared "$D"
