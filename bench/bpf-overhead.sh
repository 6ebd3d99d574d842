#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Overhead of the BPF per-hctx stats provider (daemon/bpf/hctx-stats.bpf.c) on 4 KiB random
# reads: fio on a loop device over a tmpfs file, alternating runs without and with the provider
# attached. Prints every run and the mean IOPS ratio (with/without). Results: docs/BPF.md.
#
# usage: bench/bpf-overhead.sh [HOLDER]
#   HOLDER   the built tests/integration/test-stats-bpf (its --hold mode attaches the provider
#            and prints the loop device's counters when stopped); default: first of
#            build/tests/integration/test-stats-bpf, build/test-stats-bpf
# env:     RUNS (pairs, default 3), RUNTIME (s, default 10), SIZE (backing file, default 512M),
#          FIO_EXTRA (appended to the fio command line)
# Needs root and fio. Creates one loop device and one tmpfs mount, both removed on exit.

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
cleanup() {
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
for i in $(seq 1 "$RUNS"); do
        iops=$(run_fio)
        off+=("$iops")
        echo "run $i without provider: $iops IOPS"

        coproc HOLD { exec "$HOLDER" --hold "$LOOP"; }
        HOLDER_PID=$HOLD_PID
        read -r line <&"${HOLD[0]}" || line=
        if [[ $line != attached ]]; then
                echo "provider did not attach: $line" >&2
                exit 1
        fi
        iops=$(run_fio)
        on+=("$iops")
        kill -TERM "$HOLDER_PID"
        read -r counters <&"${HOLD[0]}" || counters="(no counters)"
        wait "$HOLDER_PID" || true
        HOLDER_PID=
        echo "run $i with provider:    $iops IOPS   [$counters]"
done

echo
printf '%s\n' "${off[@]}" | awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; printf "without: mean %.0f IOPS, sd %.0f (n=%d)\n", m, sqrt(q / n - m * m), n }'
printf '%s\n' "${on[@]}"  | awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; printf "with:    mean %.0f IOPS, sd %.0f (n=%d)\n", m, sqrt(q / n - m * m), n }'
awk -v a="${off[*]}" -v b="${on[*]}" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) { sx += x[i]; sy += y[i] }
        printf "ratio with/without: %.4f (%.2f%% overhead)\n", sy / sx, (1 - sy / sx) * 100
}'
