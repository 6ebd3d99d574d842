#!/bin/sh
# many-hctx-slow: a rotating, throttled (150 IOPS) disk behind a 4-queue virtio-scsi HBA.
# Kernel facts: 4 hctx (num_queues=4, 4 vCPUs), rotational=1; debugfs hctxN/run exists and
# counts dispatches through an elevator before 6.8 and is gone from 6.8 on (49e60333d743);
# a write to a request vector's smp_affinity fails with EIO before 6.12 and EPERM from 6.12
# on (eb29369fa543), where the file is also mode 0444 (c7718e5c76d4).  Runs on 6.1 and 6.12.
# blkmqd: classifies it many-hctx-slow, applies mq-deadline, knows the 4 request vectors are
# kernel-managed (from the mode on >= 6.12, from the EIO at the first write before), shows
# `runs` rising under fio (debugfs before 6.8, BPF fentry after) and runs_rate, BPF
# dispatched/completions rising, hosts/host0, a promtool-clean metrics file; restore
# (issue 5 §2f): `echo 1 > restore` and SIGTERM put back the elevator and a
# policy/rq_affinity override (1 -> 2 -> 1).
# smp: 4
# needs: fio
# binary: /usr/bin/promtool
# disk: d0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=4
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads,throttling.iops-total=150
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=slow0
# timeout: 150
. /opt/vmtest/guest-lib.sh

D=sda
assert_ok "$D present" wait_for_file /sys/block/$D 10
assert_eq "$D hctx count" 4 "$(hctx_count $D)"
assert_eq "$D rotational" 1 "$(read_attr /sys/block/$D/queue/rotational)"
assert_match "$D default elevator none" '^\[none\] mq-deadline' "$(read_attr /sys/block/$D/queue/scheduler)"
assert_eq "host nr_hw_queues" 4 "$(read_attr /sys/class/scsi_host/host0/nr_hw_queues)"
assert_eq "host proc_name" virtio_scsi "$(read_attr /sys/class/scsi_host/host0/proc_name)"
if kernel_at_least 6 8; then HAVE_RUN=0; else HAVE_RUN=1; fi
for h in 0 1 2 3; do
    if [ $HAVE_RUN = 1 ]; then
        assert_file "debugfs hctx$h/run (kernel < 6.8)" /sys/kernel/debug/block/$D/hctx$h/run
    else
        assert_eq "no debugfs hctx$h/run (kernel >= 6.8, 49e60333d743)" no \
            "$([ -e /sys/kernel/debug/block/$D/hctx$h/run ] && echo yes || echo no)"
    fi
    assert_eq "hctx$h cpu_list" "$h" "$(read_attr /sys/block/$D/mq/$h/cpu_list)"
done
assert_eq "virtio request vectors in /proc/interrupts" 4 "$(grep -c 'virtio[0-9]*-request' /proc/interrupts)"
note "debugfs hctx0: $(ls /sys/kernel/debug/block/$D/hctx0 | tr '\n' ' ')"

# managed request vectors: the kernel's refusal (EIO < 6.12, EPERM >= 6.12) and file mode
# (0444 >= 6.12: c7718e5c76d4); config/control/event vectors stay writable
rirq=$(grep -E 'virtio[0-9]+-request' /proc/interrupts | head -n 1 | cut -d: -f1 | tr -d ' ')
werr=$(sh -c "echo 0-3 > /proc/irq/$rirq/smp_affinity_list" 2>&1 || true)
if kernel_at_least 6 12; then
    assert_match "write to managed IRQ $rirq refused with EPERM (>= 6.12)" 'Operation not permitted' "$werr"
    assert_eq "managed IRQ $rirq smp_affinity mode (>= 6.12)" 444 "$(stat -c %a /proc/irq/$rirq/smp_affinity)"
else
    assert_match "write to managed IRQ $rirq refused with EIO (< 6.12)" 'Input/output error' "$werr"
    assert_eq "managed IRQ $rirq smp_affinity mode (< 6.12)" 644 "$(stat -c %a /proc/irq/$rirq/smp_affinity)"
fi
cirq=$(grep -E 'virtio[0-9]+-config' /proc/interrupts | tail -n 1 | cut -d: -f1 | tr -d ' ')
assert_eq "unmanaged config IRQ $cirq smp_affinity mode" 644 "$(stat -c %a /proc/irq/$cirq/smp_affinity)"
note "request IRQ $rirq write: $werr; modes: request $(stat -c %a /proc/irq/$rirq/smp_affinity), config $(stat -c %a /proc/irq/$cirq/smp_affinity)"

# bfq is a module: writing its name auto-loads it through /sbin/modprobe
assert_ok "echo bfq > scheduler (auto-loads bfq)" sh -c "echo bfq > /sys/block/$D/queue/scheduler"
assert_match "$D elevator bfq" '\[bfq\]' "$(read_attr /sys/block/$D/queue/scheduler)"
# run counters rise when dispatch goes through an elevator (VM.md: not under none)
runsum() { if [ $HAVE_RUN = 1 ]; then sum_ints /sys/kernel/debug/block/$D/hctx[0-3]/run; else echo 0; fi; }
before=$(runsum)
t0=$(cut -d' ' -f1 /proc/uptime)
dd if=/dev/$D of=/dev/null bs=4k count=300 iflag=direct 2>/dev/null
t1=$(cut -d' ' -f1 /proc/uptime)
after=$(runsum)
note "300 direct 4k reads: ${t0}s -> ${t1}s; hctx run sum $before -> $after"
if [ $HAVE_RUN = 1 ]; then
    assert_ok "hctx run counters rose under bfq" test "$after" -gt "$before"
else
    note "no hctx run counters to compare on $(uname -r): their absence is asserted above"
fi
assert_ok "throttled (150 IOPS): 300 reads took >= 1 s" awk "BEGIN{exit !($t1 - $t0 >= 1)}"
echo none > /sys/block/$D/queue/scheduler

blkmqd_many_hctx_slow() {
    M=$BLKMQD_MOUNT
    X=$M/devices/$D
    start_blkmqd -v || return 0
    assert_match "version: kernel uevent source, debugfs, stats providers" \
        ' source kernel debugfs yes stats [a-z ]*debugfs' "$(read_attr $M/version)"
    assert_eq "mode" auto "$(read_attr $M/mode)"
    assert_eq "class" many-hctx-slow "$(read_attr $X/class)"
    assert_eq "facts/nr_hw_queues" 4 "$(read_attr $X/facts/nr_hw_queues)"
    assert_eq "facts/rotational" 1 "$(read_attr $X/facts/rotational)"
    assert_eq "facts/driver" virtio_scsi "$(read_attr $X/facts/driver)"
    assert_eq "facts/shared_tags" 0 "$(read_attr $X/facts/shared_tags)"
    assert_match "explain names the class rule" 'class many-hctx-slow \(rule many-hctx-slow\)' "$(read_attr $X/explain)"
    assert_match "explain names the elevator rule" '-> elevator=mq-deadline \(rule elevator-many-hctx-slow\)' "$(read_attr $X/explain)"
    assert_eq "plan/elevator" mq-deadline "$(read_attr $X/plan/elevator)"
    assert_eq "plan/rq_affinity" keep "$(read_attr $X/plan/rq_affinity)"
    # >= 6.12: the vectors are known managed (mode 0444) before anything is written, so the
    # plan leaves IRQ affinity alone; < 6.12: it plans hctx and learns "managed" at the write
    if kernel_at_least 6 12; then
        assert_eq "plan/irq_affinity (vectors known managed, >= 6.12)" keep "$(read_attr $X/plan/irq_affinity)"
    else
        assert_eq "plan/irq_affinity (< 6.12)" hctx "$(read_attr $X/plan/irq_affinity)"
    fi
    assert_eq "applied/elevator" "ok: mq-deadline (was none)" "$(read_attr $X/applied/elevator)"
    assert_match "sysfs scheduler is mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"
    assert_eq "applied/rq_affinity" unmanaged "$(read_attr $X/applied/rq_affinity)"

    # hosts/host0 (virtio_scsi: can_queue from sysfs, one LUN, no shared tagset)
    H=$M/hosts/host0
    assert_eq "hosts/host0/driver" virtio_scsi "$(read_attr $H/driver)"
    assert_eq "hosts/host0/nr_hw_queues" 4 "$(read_attr $H/nr_hw_queues)"
    assert_eq "hosts/host0/can_queue" "$(read_attr /sys/class/scsi_host/host0/can_queue)" "$(read_attr $H/can_queue)"
    assert_eq "hosts/host0/shared_tags" 0 "$(read_attr $H/shared_tags)"
    assert_eq "hosts/host0/luns" 1 "$(read_attr $H/luns)"
    assert_eq "hosts/host0/disks" "$D" "$(read_attr $H/disks)"
    assert_int "hosts/host0/host_busy" "$(read_attr $H/host_busy)"
    assert_num "hosts/host0/occupancy_pct" "$(read_attr $H/occupancy_pct)"

    # per-hctx IRQ: the request vector whose affinity is the hctx's CPU, kernel-managed
    for h in 0 1 2 3; do
        irq=$(read_attr $X/hctx/$h/irq)
        assert_match "hctx/$h/irq is a number" '^[0-9]+$' "$irq"
        assert_match "hctx/$h/irq is a virtio request vector" "^ *$irq: .*virtio[0-9]+-request" "$(grep "^ *$irq:" /proc/interrupts)"
        assert_eq "hctx/$h/irq_affinity" "$h" "$(read_attr $X/hctx/$h/irq_affinity)"
    done
    note "before the first write: hctx/0/irq_managed = $(read_attr $X/hctx/0/irq_managed)"
    if kernel_at_least 6 12; then
        for h in 0 1 2 3; do
            assert_eq "hctx/$h/irq_managed known before any write (mode 0444, >= 6.12)" 1 "$(read_attr $X/hctx/$h/irq_managed)"
        done
    else
        assert_match "hctx/0/irq_managed unknown before the first write (< 6.12)" '^unknown: ' "$(read_attr $X/hctx/0/irq_managed)"
    fi
    if kernel_at_least 6 12; then
        assert_eq "applied/irq_affinity before the override (>= 6.12: known managed, nothing written)" \
            "managed by kernel: 4 queue vector(s) managed by kernel" "$(read_attr $X/applied/irq_affinity)"
    else
        assert_match "applied/irq_affinity before the override (vectors already on their hctx)" \
            '^kept: hctx' "$(read_attr $X/applied/irq_affinity)"
    fi
    # force a write: all request vectors to 0-3. 6.1 answers EIO (managed), blkmqd learns it;
    # on 6.12 blkmqd knows from the mode and does not write
    assert_ok "echo 0-3 > policy/irq_affinity" sh -c "echo 0-3 > $X/policy/irq_affinity"
    wait_for_match 10 $X/applied/irq_affinity '^managed by kernel' || true
    assert_match "applied/irq_affinity after the override (EIO < 6.12, mode 0444 >= 6.12)" \
        '^managed by kernel: .*4 (queue vector\(s\) )?managed by kernel' "$(read_attr $X/applied/irq_affinity)"
    note "IRQ writes tried by blkmqd: $(grep -c 'to procfs "irq/' /tmp/blkmqd.log)"
    if kernel_at_least 6 12; then
        assert_eq "no IRQ write tried on a known-managed vector (>= 6.12)" 0 "$(grep -c 'to procfs "irq/' /tmp/blkmqd.log)"
    else
        assert_ok "the managed vectors were learned by trying a write (< 6.12)" grep -q 'to procfs "irq/' /tmp/blkmqd.log
    fi
    for h in 0 1 2 3; do
        irq=$(read_attr $X/hctx/$h/irq)
        assert_eq "IRQ $irq (hctx $h) affinity unchanged by the refused write" "$h" "$(read_attr /proc/irq/$irq/smp_affinity_list)"
        assert_eq "hctx/$h/irq_managed after the override" 1 "$(read_attr $X/hctx/$h/irq_managed)"
    done
    assert_ok "echo auto > policy/irq_affinity" sh -c "echo auto > $X/policy/irq_affinity"

    # statistics: runs from debugfs (< 6.8) or BPF fentry (>= 6.8), rising under fio; runs_rate
    # over two reads during fio; dispatched/completions from BPF (raw tracepoints) on both
    src=$(cat $X/stats_source)
    note "stats_source: $(printf '%s' "$src" | tr '\n' '|')"
    note "daemon: $(grep -m1 'Statistics:' /tmp/blkmqd.log)"
    assert_match "BPF provider loaded, queue runs through fentry" 'BPF provider loaded .*queue runs through fentry' "$(grep -m1 'Statistics:' /tmp/blkmqd.log)"
    if [ $HAVE_RUN = 1 ]; then
        assert_match "stats_source: runs from debugfs (< 6.8)" '^runs debugfs$' "$src"
    else
        assert_match "stats_source: runs from BPF (>= 6.8)" '^runs bpf$' "$src"
    fi
    assert_match "stats_source: dispatched from BPF" '^dispatched bpf$' "$src"
    assert_match "stats_source: completed_local from BPF" '^completed_local bpf$' "$src"
    assert_match "stats_source: completed_remote from BPF" '^completed_remote bpf$' "$src"
    cbefore=$(sum_ints $X/hctx/*/completed_local $X/hctx/*/completed_remote) || true
    before=$(sum_ints $X/hctx/*/runs)
    assert_int "sum of hctx/*/runs before fio" "$before"
    dbefore=$(sum_ints $X/hctx/*/dispatched) || true
    fio --name=r --filename=/dev/$D --rw=randread --bs=4k --direct=1 --ioengine=psync --numjobs=4 \
        --runtime=4 --time_based --group_reporting --output-format=terse >/tmp/fio.out 2>&1 &
    fio_pid=$!
    # fio itself takes seconds to start under TCG: take the two rate samples once I/O flows
    wait_for_cmd 30 sh -c "[ \"\$(cat $X/hctx/*/dispatched | awk '{s += \$1} END {print s + 0}')\" -gt ${dbefore:-0} ]" ||
        note "no dispatch seen 30 s after fio started"
    r0=$(sum_floats $X/hctx/*/runs_rate) || true
    usleep 1200000
    r1=$(sum_floats $X/hctx/*/runs_rate) || true
    wait $fio_pid || fail "fio randread on $D" "$(tail -n 3 /tmp/fio.out | tr '\n' '|')"
    after=$(sum_ints $X/hctx/*/runs)
    dafter=$(sum_ints $X/hctx/*/dispatched) || true
    cafter=$(sum_ints $X/hctx/*/completed_local $X/hctx/*/completed_remote) || true
    note "fio randread 4 jobs 4 s: $(cut -d';' -f8 /tmp/fio.out) IOPS; runs $before -> $after; dispatched $dbefore -> $dafter; runs_rate $r0 then $r1"
    assert_ok "hctx runs rose under fio (mq-deadline)" test "$after" -gt "$before"
    assert_ok "sum of hctx/*/runs_rate > 0 on the second read during fio ($r1)" \
        awk -v r="$r1" 'BEGIN{exit !(r + 0 > 0)}'
    assert_ok "hctx dispatched rose under fio ($dbefore -> $dafter)" test "${dafter:-0}" -gt "${dbefore:-0}"
    assert_ok "hctx completions rose under fio ($cbefore -> $cafter)" test "${cafter:-0}" -gt "${cbefore:-0}"
    assert_ok "completions rose by at most the dispatches ($((cafter - cbefore)) <= $((dafter - dbefore)))" \
        test "$((cafter - cbefore))" -le "$((dafter - dbefore))"
    c=$(cat $X/completions)
    assert_eq "completions: one line per hctx" 4 "$(printf '%s\n' "$c" | grep -cE '^hctx[0-3] completed [0-9]+ remote [0-9]+ ')"
    assert_ok "completions: some completed" test "$(printf '%s\n' "$c" | awk '{s += $3} END{print s + 0}')" -gt 0
    note "completions: $(printf '%s' "$c" | tr '\n' '|')"

    # metrics (Prometheus text exposition)
    assert_match "metrics: class of $D" "blkmqd_disk_info\{device=\"$D\",class=\"many-hctx-slow\"" "$(cat $M/metrics)"
    check_metrics "metrics" $M/metrics

    # restore (§2f): an rq_affinity override, then `echo 1 > restore`
    assert_ok "echo 2 > policy/rq_affinity" sh -c "echo 2 > $X/policy/rq_affinity"
    wait_for_match 10 $X/applied/rq_affinity '^ok: 2' || true
    assert_eq "applied/rq_affinity" "ok: 2 (was 1)" "$(read_attr $X/applied/rq_affinity)"
    assert_eq "sysfs rq_affinity" 2 "$(read_attr /sys/block/$D/queue/rq_affinity)"
    assert_ok "echo 1 > restore" sh -c "echo 1 > $M/restore"
    wait_for_match 10 /sys/block/$D/queue/scheduler '^\[none\]' || true
    assert_eq "mode after restore" off "$(read_attr $M/mode)"
    assert_match "restore: elevator back to none" '^\[none\] mq-deadline' "$(read_attr /sys/block/$D/queue/scheduler)"
    assert_eq "restore: rq_affinity back to 1" 1 "$(read_attr /sys/block/$D/queue/rq_affinity)"
    note "after restore: applied/elevator=$(read_attr $X/applied/elevator) applied/rq_affinity=$(read_attr $X/applied/rq_affinity)"

    # SIGTERM restore: back to auto, blkmqd re-applies mq-deadline and the persisted rq_affinity=2
    assert_ok "echo auto > mode" sh -c "echo auto > $M/mode"
    wait_for_match 10 /sys/block/$D/queue/rq_affinity '^2$' || true
    assert_match "mode auto: mq-deadline applied again" '\[mq-deadline\]' "$(read_attr /sys/block/$D/queue/scheduler)"
    assert_eq "mode auto: rq_affinity override applied again" 2 "$(read_attr /sys/block/$D/queue/rq_affinity)"
    stop_blkmqd
    assert_match "SIGTERM: elevator back to none" '^\[none\] mq-deadline' "$(read_attr /sys/block/$D/queue/scheduler)"
    assert_eq "SIGTERM: rq_affinity back to 1" 1 "$(read_attr /sys/block/$D/queue/rq_affinity)"
    for h in 0 1 2 3; do
        irq=$(grep -E 'virtio[0-9]+-request' /proc/interrupts | sed -n "$((h + 1))p" | cut -d: -f1 | tr -d ' ')
        assert_eq "SIGTERM: request IRQ $irq affinity untouched" "$h" "$(read_attr /proc/irq/$irq/smp_affinity_list)"
    done
}
blkmqd_checks blkmqd_many_hctx_slow
