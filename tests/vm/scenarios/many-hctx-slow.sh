#!/bin/sh
# many-hctx-slow: a rotating, throttled (150 IOPS) disk behind a 4-queue virtio-scsi HBA.
# Kernel facts: 4 hctx (num_queues=4, 4 vCPUs), rotational=1, debugfs hctxN/run exists and
# counts dispatches through an elevator.  blkmqd: classifies it many-hctx-slow.
# smp: 4
# disk: d0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads,throttling.iops-total=150
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=slow0
# timeout: 120
. /opt/vmtest/guest-lib.sh

D=sda
assert_ok "$D present" wait_for_file /sys/block/$D 10
assert_eq "$D hctx count" 4 "$(hctx_count $D)"
assert_eq "$D rotational" 1 "$(read_attr /sys/block/$D/queue/rotational)"
assert_match "$D default elevator none" '^\[none\] mq-deadline' "$(read_attr /sys/block/$D/queue/scheduler)"
assert_eq "host nr_hw_queues" 4 "$(read_attr /sys/class/scsi_host/host0/nr_hw_queues)"
assert_eq "host proc_name" virtio_scsi "$(read_attr /sys/class/scsi_host/host0/proc_name)"
for h in 0 1 2 3; do
    assert_file "debugfs hctx$h/run" /sys/kernel/debug/block/$D/hctx$h/run
    assert_eq "hctx$h cpu_list" "$h" "$(read_attr /sys/block/$D/mq/$h/cpu_list)"
done
assert_eq "virtio request vectors in /proc/interrupts" 4 "$(grep -c 'virtio[0-9]*-request' /proc/interrupts)"

# bfq is a module: writing its name auto-loads it through /sbin/modprobe
assert_ok "echo bfq > scheduler (auto-loads bfq)" sh -c "echo bfq > /sys/block/$D/queue/scheduler"
assert_match "$D elevator bfq" '\[bfq\]' "$(read_attr /sys/block/$D/queue/scheduler)"
# run counters rise when dispatch goes through an elevator (VM.md: not under none)
before=0; for h in 0 1 2 3; do before=$((before + $(cat /sys/kernel/debug/block/$D/hctx$h/run))); done
t0=$(cut -d' ' -f1 /proc/uptime)
dd if=/dev/$D of=/dev/null bs=4k count=300 iflag=direct 2>/dev/null
t1=$(cut -d' ' -f1 /proc/uptime)
after=0; for h in 0 1 2 3; do after=$((after + $(cat /sys/kernel/debug/block/$D/hctx$h/run))); done
note "300 direct 4k reads: ${t0}s -> ${t1}s; hctx run sum $before -> $after"
assert_ok "hctx run counters rose under mq-deadline" test "$after" -gt "$before"
assert_ok "throttled (150 IOPS): 300 reads took >= 1 s" awk "BEGIN{exit !($t1 - $t0 >= 1)}"
echo none > /sys/block/$D/queue/scheduler

blkmqd_many_hctx_slow() {
    start_blkmqd -v
    assert_eq "blkmqd class" many-hctx-slow "$(read_attr $BLKMQD_MOUNT/devices/$D/class)"
    assert_eq "blkmqd facts/nr_hw_queues" 4 "$(read_attr $BLKMQD_MOUNT/devices/$D/facts/nr_hw_queues)"
    assert_eq "blkmqd facts/rotational" 1 "$(read_attr $BLKMQD_MOUNT/devices/$D/facts/rotational)"
    assert_match "blkmqd explain names the rule" 'many-hctx-slow' "$(read_attr $BLKMQD_MOUNT/devices/$D/explain)"
    assert_file "blkmqd hctx/3" $BLKMQD_MOUNT/devices/$D/hctx/3
    stop_blkmqd
}
blkmqd_checks blkmqd_many_hctx_slow
