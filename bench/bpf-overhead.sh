#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Overhead of the BPF per-hctx stats provider (stats/bpf/hctx-stats.bpf.c) on 4 KiB random
# reads: fio on a loop device over a tmpfs file, alternating runs without and with the provider
# attached. Prints every run and the mean IOPS ratio (with/without). Results: docs/BPF.md.
#
# usage: bench/bpf-overhead.sh [HOLDER]
#   HOLDER   the built tests/integration/test-stats-bpf (its --hold mode attaches the provider
#            and prints the loop device's counters when stopped); default: first of
#            build/tests/integration/test-stats-bpf, build/test-stats-bpf
# env:     RUNS (pairs, default 3), RUNTIME (s, default 10), SIZE (backing file, default 512M),
#          FIO_EXTRA (appended to the fio command line)
# Needs root, fio, bpftool, python3. Creates one loop device and one tmpfs mount, both removed
# on exit.
#
# Pairs alternate their order (off,on / on,off / ...) to cancel drift; the summary gives mean
# IOPS, the ratio of means and the median of per-pair ratios (robust on a noisy shared VM).
# A last run with kernel.bpf_stats_enabled=1 (not part of the IOPS comparison: the stats add
# their own cost) gives the programs' own CPU time per event from bpftool.

set -euo pipefail

RUNS=${RUNS:-3}
RUNTIME=${RUNTIME:-10}
SIZE=${SIZE:-512M}
FIO_EXTRA=${FIO_EXTRA:-}

HOLDER=${1:-}
if [[ -z $HOLDER ]]; then
        for c in build/tests/integration/test-stats-bpf build/test-stats-bpf; do
                [[ -x $c ]] && HOLDER=$c && break
        done
fi
[[ -n $HOLDER && -x $HOLDER ]] || { echo "holder binary (test-stats-bpf) not found; pass its path" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 2; }
command -v fio >/dev/null || { echo "needs fio (apt-get install fio)" >&2; exit 2; }

DIR=$(mktemp -d /tmp/bpf-overhead.XXXXXX)
LOOP=
HOLDER_PID=
STATS_OLD=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() {
        echo "$STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled || true
        [[ -n $HOLDER_PID ]] && kill -TERM "$HOLDER_PID" 2>/dev/null && wait "$HOLDER_PID" 2>/dev/null || true
        [[ -n $LOOP ]] && losetup -d "$LOOP" || true
        mountpoint -q "$DIR" && umount "$DIR" || true
        rmdir "$DIR" || true
}
trap cleanup EXIT

mount -t tmpfs -o "size=$((${SIZE%M} + 64))M,mode=0700" tmpfs "$DIR"
# Real pages, not holes: reads hit tmpfs memory like a filled device would.
dd if=/dev/zero of="$DIR/backing" bs=1M count="${SIZE%M}" status=none
LOOP=$(losetup -f --show "$DIR/backing")

FIO=(fio --name=bpf-overhead --filename="$LOOP" --rw=randread --bs=4k --direct=1
     --ioengine=psync --time_based --runtime="$RUNTIME" --output-format=terse --terse-version=3)
# shellcheck disable=SC2206
FIO+=($FIO_EXTRA)

# terse v3: field 8 is read IOPS
run_fio() { "${FIO[@]}" | awk -F';' '{ print $8 }'; }

echo "kernel:  $(uname -sr) ($(uname -v))"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
     "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "fio:     $(fio --version)"
echo "device:  $LOOP over a $SIZE tmpfs file, scheduler $(cat /sys/block/"${LOOP#/dev/}"/queue/scheduler)"
echo "command: ${FIO[*]}"
echo

"${FIO[@]}" --runtime=2 >/dev/null   # warm-up, not counted

off=()
on=()
ratios=()

# run_with [bpftool-stats]: one fio run with the provider attached; sets $iops and $counters
run_with() {
        coproc HOLD { exec "$HOLDER" --hold "$LOOP"; }
        HOLDER_PID=$HOLD_PID
        read -r line <&"${HOLD[0]}" || line=
        if [[ $line != attached ]]; then
                echo "provider did not attach: $line" >&2
                exit 1
        fi
        iops=$(run_fio)
        if [[ ${1:-} == bpftool-stats ]]; then
                bpftool prog show --json | python3 -c '
import json, sys
progs = [p for p in json.load(sys.stdin) if p.get("name", "").startswith(("on_block_rq", "on_svc_"))]
tot_ns = tot_cnt = 0
for p in progs:
    ns, cnt = p.get("run_time_ns", 0), p.get("run_cnt", 0)
    tot_ns += ns; tot_cnt += cnt
    print("  %-16s run_cnt %9d  run_time %6.1f ms  %5.0f ns/run" % (p["name"], cnt, ns / 1e6, ns / cnt if cnt else 0))
'
        fi
        kill -TERM "$HOLDER_PID"
        read -r counters <&"${HOLD[0]}" || counters="(no counters)"
        wait "$HOLDER_PID" || true
        HOLDER_PID=
}

for i in $(seq 1 "$RUNS"); do
        if (( i % 2 )); then
                a=$(run_fio); echo "pair $i without provider: $a IOPS"
                run_with; b=$iops; echo "pair $i with provider:    $b IOPS   [$counters]"
        else
                run_with; b=$iops; echo "pair $i with provider:    $b IOPS   [$counters]"
                a=$(run_fio); echo "pair $i without provider: $a IOPS"
        fi
        off+=("$a"); on+=("$b")
        ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')")
done

echo
printf '%s\n' "${off[@]}" | awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; printf "without: mean %.0f IOPS, sd %.0f (n=%d)\n", m, sqrt(q / n - m * m), n }'
printf '%s\n' "${on[@]}"  | awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; printf "with:    mean %.0f IOPS, sd %.0f (n=%d)\n", m, sqrt(q / n - m * m), n }'
awk -v a="${off[*]}" -v b="${on[*]}" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) { sx += x[i]; sy += y[i] }
        printf "ratio of means with/without: %.4f\n", sy / sx
}'
echo "per-pair ratios: ${ratios[*]}"
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END {
        m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf "median per-pair ratio with/without: %.4f\n", m
}'

echo
echo "BPF program cost (kernel.bpf_stats_enabled=1, one extra run, not in the ratios above):"
echo 1 > /proc/sys/kernel/bpf_stats_enabled
run_with bpftool-stats
echo "$STATS_OLD" > /proc/sys/kernel/bpf_stats_enabled
echo "  that run: $iops IOPS [$counters]"
