#!/bin/sh
# kernel-facts: one VM with every device kind the harness knows (virtio-scsi 4 queues, virtio-blk
# 4 queues, NVMe 4 I/O queues, scsi_debug with a host-wide shared tagset, null_blk 4 queues),
# printing the facts that differ between kernels as "# fact <device> <key> <value>" lines and
# asserting the ones blkmqd depends on per kernel:
#   debugfs hctx `run` (gone in 6.8, 49e60333d743), managed-IRQ refusal (EIO before 6.12,
#   EPERM from 6.12, eb29369fa543) and smp_affinity mode (0444 from 6.12, c7718e5c76d4),
#   default elevators, BPF attach points (kernel BTF, kprobe PMU, the traced function in
#   kallsyms, and what blkmqd's BPF provider attached).
# Source of the kernel x device x feature table in docs/VM-HARNESS.md:
#   harness.py run --kernel 6.1|6.12 --scenario tests/vm/scenarios/kernel-facts.sh --blkmqd build/blkmqd
# smp: 4
# timeout: 200
# disk: s0 64M
# disk: b0 64M
# disk: n0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=s0,file={disk:s0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=s0,bus=scsi0.0,rotation_rate=7200,serial=facts-vscsi
# qemu: -drive if=none,id=b0,file={disk:b0},format=raw,cache=none,aio=threads
# qemu: -device virtio-blk-pci,drive=b0,num-queues=4,serial=facts-vblk
# qemu: -drive if=none,id=n0,file={disk:n0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=factsnvme,drive=n0,max_ioqpairs=4
. /opt/vmtest/guest-lib.sh

K=$(uname -r)
note "kernel $K"
assert_ok "modprobe scsi_debug (shared host tagset)" modprobe scsi_debug submit_queues=4 host_max_queue=64 delay=0 dev_size_mb=16
assert_ok "modprobe null_blk (4 submit queues)" modprobe null_blk submit_queues=4 poll_queues=0 irqmode=1
wait_for_cmd 10 disk_by_model scsi_debug >/dev/null || true
VSCSI=$(disk_by_model QEMU || true)
SDEBUG=$(disk_by_model scsi_debug || true)
assert_ok "virtio-blk vda" wait_for_file /sys/block/vda 10
assert_ok "nvme0n1" wait_for_file /sys/block/nvme0n1 10
assert_ok "nullb0" wait_for_file /sys/block/nullb0 10
assert_match "virtio-scsi disk" '^sd[a-z]+$' "$VSCSI"
assert_match "scsi_debug disk" '^sd[a-z]+$' "$SDEBUG"

if kernel_at_least 6 8; then RUN_EXPECTED=no; else RUN_EXPECTED=yes; fi
if kernel_at_least 6 12; then MANAGED_ERR='Operation not permitted'; MANAGED_MODE=444
else MANAGED_ERR='Input/output error'; MANAGED_MODE=644; fi

fact() { note "fact $1 $2 $3"; }

# request-queue vectors of a PCI disk: the MSI IRQs of its PCI function whose
# smp_affinity_list is one of the hctx cpu_lists (block/blk-mq-pci.c blk_mq_pci_map_queues(): hctx N's cpu_list is vector N's mask)
queue_irqs() {
    _dev=$(readlink -f /sys/block/$1/device)
    while [ -n "$_dev" ] && [ "$_dev" != / ] && [ ! -d "$_dev/msi_irqs" ]; do _dev=${_dev%/*}; done
    [ -d "$_dev/msi_irqs" ] || return 0
    for _i in $(ls "$_dev/msi_irqs"); do
        _a=$(cat /proc/irq/$_i/smp_affinity_list 2>/dev/null)
        for _m in /sys/block/$1/mq/*; do
            [ "$(cat $_m/cpu_list)" = "$_a" ] && { echo "$_i"; break; }
        done
    done
}

for d in $VSCSI vda nvme0n1 $SDEBUG nullb0; do
    case $d in
        $VSCSI) dev=virtio-scsi ;; vda) dev=virtio-blk ;; nvme0n1) dev=nvme ;;
        $SDEBUG) dev=scsi_debug-shared ;; nullb0) dev=null_blk ;;
    esac
    fact $dev disk "$d"
    fact $dev nr_hctx "$(hctx_count $d)"
    fact $dev rotational "$(read_attr /sys/block/$d/queue/rotational)"
    fact $dev scheduler "$(read_attr /sys/block/$d/queue/scheduler)"
    fact $dev nr_tags "$(read_attr /sys/block/$d/mq/0/nr_tags)"
    fact $dev hctx_flags "$(read_attr /sys/kernel/debug/block/$d/hctx0/flags)"
    fact $dev queue_state "$(read_attr /sys/kernel/debug/block/$d/state)"
    fact $dev debugfs_hctx0 "$(ls /sys/kernel/debug/block/$d/hctx0 | tr '\n' ' ')"
    assert_eq "$dev: debugfs hctx0/run present" $RUN_EXPECTED \
        "$([ -e /sys/kernel/debug/block/$d/hctx0/run ] && echo yes || echo no)"
    assert_eq "$dev: no debugfs hctx0/dispatched (gone in 5.16)" no \
        "$([ -e /sys/kernel/debug/block/$d/hctx0/dispatched ] && echo yes || echo no)"
    irqs=$(queue_irqs $d | tr '\n' ' ')
    fact $dev queue_irqs "${irqs:-none}"
    if [ -n "$irqs" ]; then
        i=${irqs%% *}
        err=$(sh -c "echo 0-3 > /proc/irq/$i/smp_affinity_list" 2>&1 || true)
        fact $dev managed_irq_write "${err:-accepted}"
        fact $dev managed_irq_mode "$(stat -c %a /proc/irq/$i/smp_affinity)"
        assert_match "$dev: write to queue IRQ $i refused ($MANAGED_ERR)" "$MANAGED_ERR" "$err"
        assert_eq "$dev: queue IRQ $i smp_affinity mode" $MANAGED_MODE "$(stat -c %a /proc/irq/$i/smp_affinity)"
    fi
done
assert_match "virtio-scsi default elevator none (multi-queue)" '^\[none\]' "$(read_attr /sys/block/$VSCSI/queue/scheduler)"
assert_match "scsi_debug shared tags default elevator mq-deadline (580dca8143d2)" '\[mq-deadline\]' "$(read_attr /sys/block/$SDEBUG/queue/scheduler)"

# BPF: what the kernel offers, then what blkmqd's provider attached
fact bpf btf_vmlinux "$([ -r /sys/kernel/btf/vmlinux ] && echo yes || echo no)"
fact bpf kprobe_pmu "$([ -e /sys/bus/event_source/devices/kprobe/type ] && echo yes || echo no)"
fact bpf kallsyms_blk_mq_sched_dispatch_requests "$(grep -c ' blk_mq_sched_dispatch_requests$' /proc/kallsyms)"
assert_file "kernel BTF" /sys/kernel/btf/vmlinux
blkmqd_facts() {
    start_blkmqd -v || return 0
    line=$(grep -m1 'Statistics:' /tmp/blkmqd.log)
    fact bpf blkmqd "$line"
    assert_match "blkmqd BPF provider loaded with queue runs through fentry" 'BPF provider loaded .*queue runs through fentry' "$line"
    fact bpf stats_source_nvme "$(cat $BLKMQD_MOUNT/devices/nvme0n1/stats_source | tr '\n' '|')"
    fact blkmqd irq_managed_nvme_hctx0 "$(read_attr $BLKMQD_MOUNT/devices/nvme0n1/hctx/0/irq_managed)"
    fact blkmqd sq_sched_scsi_debug "$(read_attr $BLKMQD_MOUNT/devices/$SDEBUG/facts/sq_sched)"
    stop_blkmqd
}
blkmqd_checks blkmqd_facts
