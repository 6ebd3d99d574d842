#!/bin/sh
# kconfig: a kernel booted with forced IRQ threading and an isolated CPU
# (`threadirqs isolcpus=managed_irq,domain,1`), -smp 2, an NVMe disk with 2 I/O queues and a
# null_blk disk. Kernel facts: the command line, /sys/devices/system/cpu/isolated = 1, interrupt
# threads (irq/N-name) exist. blkmqd: facts/irq_threads_forced 1 with threadirqs as its source,
# facts/isolated_cpus 1, facts/preempt_rt 0; a class asking rq_affinity=2 gets it not written
# (rule rq-affinity-forced-threading, the commit named), queue/rq_affinity stays 1 on both disks;
# no queue vector is moved by blkmqd (the NVMe vectors are the kernel's: managed); under fio the
# completion counters still add up to what the disk completed, and completions / stats_source end
# with a "not redirected" line naming the forced threading; SIGTERM leaves rq_affinity at 1.
# On a PREEMPT_RT kernel the same checks expect facts/preempt_rt 1 and forced threading from it.
# smp: 2
# needs: fio
# timeout: 200
# cmdline: threadirqs isolcpus=managed_irq,domain,1
# disk: n0 64M
# qemu: -drive if=none,id=n0,file={disk:n0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=kconfignvme,drive=n0,max_ioqpairs=2
. /opt/vmtest/guest-lib.sh

assert_match "kernel command line has threadirqs" '(^| )threadirqs( |$)' "$(cat /proc/cmdline)"
assert_eq "sysfs isolated CPUs" 1 "$(read_attr /sys/devices/system/cpu/isolated)"
assert_ok "interrupt threads exist (irq/N-name)" sh -c "grep -q '^irq/' /proc/[0-9]*/comm"
assert_ok "modprobe null_blk (2 submit queues)" modprobe null_blk submit_queues=2 poll_queues=0 irqmode=1
assert_ok "nvme0n1" wait_for_file /sys/block/nvme0n1 10
assert_ok "nullb0" wait_for_file /sys/block/nullb0 10
for d in nvme0n1 nullb0; do
    assert_eq "$d rq_affinity before blkmqd" 1 "$(read_attr /sys/block/$d/queue/rq_affinity)"
done
irqs_before=$(for i in $(ls /sys/block/nvme0n1/device/device/msi_irqs 2>/dev/null); do
    printf '%s:%s ' "$i" "$(cat /proc/irq/$i/smp_affinity_list 2>/dev/null)"; done)
note "nvme vectors before blkmqd: $irqs_before"

# a PREEMPT_RT kernel (Debian's linux-image-*-rt-amd64, booted with $BLKMQD_VM_KERNEL_PKG) forces
# threading by itself: the facts name it instead of threadirqs
if [ "$(cat /sys/kernel/realtime 2>/dev/null)" = 1 ]; then
    RT_FACT='^1 \(read from /sys/kernel/realtime\)'
    THREADS_SOURCE='^1 \(PREEMPT_RT kernel \(read from /sys/kernel/realtime\)'
    NOT_REDIRECTED='forced IRQ threading: PREEMPT_RT kernel'
else
    RT_FACT='^0 \('
    THREADS_SOURCE='^1 \(threadirqs on the kernel command line'
    NOT_REDIRECTED='forced IRQ threading: threadirqs on the kernel command line'
fi
note "kernel $(uname -v)"

blkmqd_kconfig() {
    M=$BLKMQD_MOUNT
    mkdir -p /etc/blkmqd
    printf '[Class:fast-multiqueue]\nRqAffinity=2\n' >/etc/blkmqd/blkmqd.conf
    start_blkmqd -v -c /etc/blkmqd/blkmqd.conf || return 0
    for d in nvme0n1 nullb0; do
        X=$M/devices/$d
        assert_match "$d facts/irq_threads_forced" "$THREADS_SOURCE" "$(read_attr $X/facts/irq_threads_forced)"
        assert_match "$d facts/isolated_cpus" '^1 \(isolcpus=managed_irq,domain,1 \(/proc/cmdline\)' \
            "$(read_attr $X/facts/isolated_cpus)"
        assert_match "$d facts/preempt_rt" "$RT_FACT" "$(read_attr $X/facts/preempt_rt)"
        assert_match "$d explain: the class's rq_affinity=2 not written" \
            "the class's 2 not written.*force threaded mode.*\\(rule rq-affinity-forced-threading\\)" "$(read_attr $X/explain)"
        assert_eq "$d queue/rq_affinity stays 1" 1 "$(read_attr /sys/block/$d/queue/rq_affinity)"
    done
    note "nvme0n1 facts/driver_module: $(read_attr $M/devices/nvme0n1/facts/driver_module)"
    irqs_after=$(for i in $(ls /sys/block/nvme0n1/device/device/msi_irqs 2>/dev/null); do
        printf '%s:%s ' "$i" "$(cat /proc/irq/$i/smp_affinity_list 2>/dev/null)"; done)
    assert_eq "no nvme vector moved by blkmqd" "$irqs_before" "$irqs_after"

    # completions still add up: what the hctx counters saw under fio is what the disk completed
    X=$M/devices/nullb0
    src=$(cat $X/stats_source 2>/dev/null | tr '\n' '|')
    note "nullb0 stats_source: $src"
    r0=$(awk '{print $1}' /sys/block/nullb0/stat)
    c0=$(sum_ints $X/hctx/*/completed_local $X/hctx/*/completed_remote) || true
    fio --name=r --filename=/dev/nullb0 --rw=randread --bs=4k --direct=1 --ioengine=psync --numjobs=2 \
        --runtime=3 --time_based --group_reporting --output-format=terse >/tmp/fio.out 2>&1
    r1=$(awk '{print $1}' /sys/block/nullb0/stat)
    c1=$(sum_ints $X/hctx/*/completed_local $X/hctx/*/completed_remote) || true
    note "fio randread 2 jobs 3 s: $(cut -d';' -f8 /tmp/fio.out) IOPS; reads completed $r0 -> $r1; hctx completed_local+remote $c0 -> $c1"
    assert_ok "reads completed under fio" test "$r1" -gt "$r0"
    if [ -n "$c0" ] && [ -n "$c1" ]; then
        assert_eq "hctx completions under fio = the disk's reads" "$((r1 - r0))" "$((c1 - c0))"
    else
        skip "hctx completions under fio = the disk's reads" "no completion counters ($src)"
    fi
    # the completion-locality files say the kernel does not send completions back
    for f in completions stats_source; do
        assert_match "nullb0 $f: last line says completions are not redirected" \
            "not redirected: .*\\($NOT_REDIRECTED.*blk_mq_complete_need_ipi\\(\\) in block/blk-mq.c returns false" \
            "$(tail -n 1 $X/$f)"
    done
    stop_blkmqd
    for d in nvme0n1 nullb0; do
        assert_eq "$d rq_affinity after stop" 1 "$(read_attr /sys/block/$d/queue/rq_affinity)"
    done
}
blkmqd_checks blkmqd_kconfig
