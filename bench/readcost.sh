#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# P2 read cost: open+read+close of blkmqd FUSE files vs sysfs attributes, side by side in one
# run (bench/readcost.c interleaves blocks of every path).
#
# usage: bench/readcost.sh [BLKMQD] [READCOST]
#   BLKMQD    built daemon (default build/blkmqd)
#   READCOST  built bench/readcost (default build/bench/readcost; compiled into a temp dir with
#             cc when missing)
# env:      N (iterations per path, default 100000), BLOCKS (default 20)
#           FLOOR=FUSE_FLOOR: bench/fuse-floor (default: fuse-floor next to READCOST when built),
#           a do-nothing FUSE pass-through over a temp directory holding a 2-byte file, mounted
#           twice (page cache, as blkmqd's static files; --direct-io, as its live files) and read
#           in the same run: the FUSE floor of one `cat` on this machine (FLOOR/..., FLOOR-DIO/...)
#           SPIN=1: diagnostic, one nice-19 busy loop per CPU during the run (no idle vCPU: in a
#           VM without guest halt-polling each FUSE round trip's wake-ups are VM exits otherwise)
#           ROUNDTRIPS=N: after the timing, FUSE round trips per `cat` of every FUSE path by
#           opcode, N cats each (default 100; 0: not counted; needs perf and the fuse
#           tracepoints), next to the protocol's minimum (below)
#           COMPARE=OLD_BLKMQD: a second daemon (another build) on a loop of its own, mounted on
#           OLD/, its static and live files read in the same interleaved run (before/after
#           figures side by side, never from two runs)
#
# One loop device on a temp file (attached with losetup -f, detached at exit), blkmqd limited
# to it with --devices, mounted on a temp directory (unmounted at exit). The first path is the
# baseline (sysfs queue/rotational); every ratio is relative to it. Stats files (hctx/0/
# dispatched, stat, metrics) are included when the daemon has them.
# The peer: when lxcfs is installed (Debian package lxcfs), it is mounted on a temp directory
# of its own (lxcfs -f, unmounted and stopped at exit) and its proc/uptime and
# sys/devices/system/cpu/online are read in the same run; without it those rows are left out
# and the script says so.
set -euo pipefail

BLKMQD=${1:-build/blkmqd}
READCOST=${2:-build/bench/readcost}
N=${N:-100000}
BLOCKS=${BLOCKS:-20}

[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
[[ -x $BLKMQD ]] || { echo "SKIP: $BLKMQD not built"; exit 77; }
[[ -e /dev/fuse ]] && command -v losetup >/dev/null || { echo "SKIP: needs /dev/fuse and losetup"; exit 77; }

COMPARE=${COMPARE:-}
[[ -z $COMPARE || -x $COMPARE ]] || { echo "COMPARE=$COMPARE: not an executable"; exit 2; }

DIR=$(mktemp -d /tmp/blkmqd-readcost.XXXXXX)
LOOPS=()
PIDS=()
LXCFS_PID=
OLD_PID=
cleanup() {
        for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
        for m in mnt old lxcfs floor floor-dio; do mountpoint -q "$DIR/$m" 2>/dev/null && umount -l "$DIR/$m" || true; done
        [[ -n $LXCFS_PID ]] && kill -TERM "$LXCFS_PID" 2>/dev/null && wait "$LXCFS_PID" 2>/dev/null || true
        for l in "${LOOPS[@]}"; do losetup -d "$l" || true; done
        rm -rf "$DIR"
}
trap cleanup EXIT

# start_on_loop EXE NAME: a loop device of its own (a 64 MiB temp file) and EXE on it alone
# (--devices), mounted on $DIR/NAME (state $DIR/NAME-state, log $DIR/NAME.log), until its tree
# lists the disk. Sets DISK; the loop and the pid go to LOOPS and PIDS (cleanup).
start_on_loop() {
        local loop
        truncate -s 64M "$DIR/$2-backing"
        loop=$(losetup -f --show "$DIR/$2-backing")
        LOOPS+=("$loop")
        DISK=${loop#/dev/}
        mkdir -p "$DIR/$2" "$DIR/$2-state"
        env -u NOTIFY_SOCKET -u JOURNAL_STREAM "$1" -m "$DIR/$2" --devices "$DISK" -s "$DIR/$2-state" \
                -c "$DIR/none.conf" 2>"$DIR/$2.log" &
        PIDS+=("$!")
        for _ in $(seq 1 200); do
                [[ -e $DIR/$2/devices/$DISK/class ]] && return 0
                sleep 0.05
        done
        echo "$1 did not show $DISK"
        cat "$DIR/$2.log"
        exit 1
}

if [[ ! -x $READCOST ]]; then
        src=$(dirname "$0")/readcost.c
        READCOST=$DIR/readcost
        cc -O2 -Wall -o "$READCOST" "$src"
fi

start_on_loop "$BLKMQD" mnt
D=$DISK PID=${PIDS[-1]}

M=$DIR/mnt/devices/$D
paths=(/sys/block/"$D"/queue/rotational "$M"/facts/rotational "$M"/class "$M"/explain
       /sys/block/"$D"/mq/0/cpu_list "$M"/hctx/0/cpu_list)
for extra in "$M"/hctx/0/dispatched "$M"/stat "$DIR"/mnt/metrics; do
        [[ -f $extra ]] && paths+=("$extra")
done

OLD_NOTE=
if [[ -n $COMPARE ]]; then
        start_on_loop "$COMPARE" old
        OD=$DISK OLD_PID=${PIDS[-1]}
        O=$DIR/old/devices/$OD
        paths+=("$O"/facts/rotational "$O"/class "$O"/explain "$O"/hctx/0/cpu_list)
        for extra in "$O"/hctx/0/dispatched "$O"/stat; do
                [[ -f $extra ]] && paths+=("$extra")
        done
        OLD_NOTE="compare: $COMPARE -m OLD --devices $OD"
fi

LXCFS_NOTE="lxcfs:   not installed (apt-get install lxcfs): its rows are left out"
if command -v lxcfs >/dev/null; then
        mkdir -p "$DIR/lxcfs"
        lxcfs -f -p "$DIR/lxcfs.pid" "$DIR/lxcfs" >"$DIR/lxcfs.log" 2>&1 &
        LXCFS_PID=$!
        for _ in $(seq 1 200); do
                [[ -s $DIR/lxcfs/proc/uptime ]] 2>/dev/null && break
                sleep 0.05
        done
        if [[ -s $DIR/lxcfs/proc/uptime ]]; then
                paths+=("$DIR/lxcfs/proc/uptime" "$DIR/lxcfs/sys/devices/system/cpu/online")
                LXCFS_NOTE="lxcfs:   $(lxcfs --version 2>&1 | head -1) mounted on LXCFS (lxcfs -f)"
        else
                LXCFS_NOTE="lxcfs:   installed but did not mount: $(tail -1 "$DIR/lxcfs.log"); its rows are left out"
        fi
fi

FLOOR=${FLOOR:-$(dirname "$READCOST")/fuse-floor}
FLOOR_NOTE="floor:   $FLOOR not built: its rows are left out"
if [[ -x $FLOOR ]]; then
        mkdir -p "$DIR/floor-src" "$DIR/floor" "$DIR/floor-dio"
        printf '1\n' > "$DIR/floor-src/rotational"
        "$FLOOR" "$DIR/floor-src" "$DIR/floor" & PIDS+=($!)
        "$FLOOR" --direct-io "$DIR/floor-src" "$DIR/floor-dio" & PIDS+=($!)
        for _ in $(seq 1 200); do
                [[ -s $DIR/floor/rotational && -s $DIR/floor-dio/rotational ]] 2>/dev/null && break
                sleep 0.05
        done
        paths+=("$DIR/floor/rotational" "$DIR/floor-dio/rotational")
        FLOOR_NOTE="floor:   $FLOOR on FLOOR, $FLOOR --direct-io on FLOOR-DIO (a do-nothing FUSE pass-through)"
fi
if [[ ${SPIN:-0} = 1 ]]; then
        for _ in $(seq "$(nproc)"); do nice -n 19 sh -c 'while :; do :; done' & PIDS+=($!); done
        FLOOR_NOTE="$FLOOR_NOTE
spin:    $(nproc) nice-19 busy loops during the run (diagnostic, SPIN=1)"
fi

echo "date:    $(date -u +%FT%TZ)"
echo "kernel:  $(uname -sr) ($(uname -v))"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "blkmqd:  $BLKMQD -m MNT --devices $D (loop on a 64 MiB temp file)"
[[ -n $OLD_NOTE ]] && echo "$OLD_NOTE"
echo "$LXCFS_NOTE"
echo "$FLOOR_NOTE"
echo "command: $READCOST -n $N -b $BLOCKS ${paths[*]}" | sed -e "s|$DIR/mnt|MNT|g" -e "s|$DIR/old|OLD|g" -e "s|$DIR/lxcfs|LXCFS|g" -e "s|$DIR/floor-dio|FLOOR-DIO|g" -e "s|$DIR/floor|FLOOR|g"
echo
"$READCOST" -n "$N" -b "$BLOCKS" "${paths[@]}" | sed -e "s|$DIR/mnt|MNT|" -e "s|$DIR/old|OLD|" -e "s|$DIR/lxcfs|LXCFS|" -e "s|$DIR/floor-dio|FLOOR-DIO|" -e "s|$DIR/floor|FLOOR|"
echo
cpu() { awk '{ printf "%.2f s user, %.2f s system", $14 / 100, $15 / 100 }' /proc/"$1"/stat; }
echo "blkmqd CPU for the whole run: $(cpu "$PID")"
[[ -n $OLD_PID ]] && echo "compared blkmqd CPU for the whole run: $(cpu "$OLD_PID")"

# Round trips per `cat` of each FUSE path (ROUNDTRIPS cats each, default 100; 0 skips): the
# kernel's fuse:fuse_request_send tracepoint (perf record, filtered on the mount's connection,
# its st_dev), after one warming cat, by opcode. The least the protocol allows on a connection
# that answers OPEN (blkmqd must: its live files are direct_io): a page-cached file OPEN +
# RELEASE (no FLUSH with FOPEN_NOFLUSH, READ from the page cache, no LOOKUP/GETATTR while the
# entry and attributes are valid); a direct_io file OPEN + READ + READ + RELEASE (cat reads until
# a read returns 0, and direct_io sends every read). The floor's rows show it measured.
RT=${ROUNDTRIPS:-100}
if (( RT > 0 )) && command -v perf >/dev/null && perf list 2>/dev/null | grep -c 'fuse:fuse_request_send' >/dev/null; then
        echo
        echo "FUSE round trips per cat ($RT cats each after one warming cat; perf record -e fuse:fuse_request_send)"
        printf '%-8s %-44s %s\n' total path "per opcode"
        for p in "${paths[@]}"; do
                [[ $(stat -f -c %T "$p" 2>/dev/null) == fuseblk || $(stat -f -c %T "$p" 2>/dev/null) == fuse ]] || continue
                conn=$(stat -c %d "$(dirname "$p")")
                cat "$p" >/dev/null
                perf record -q -e fuse:fuse_request_send --filter "connection == $conn" -a -o "$DIR/rt.data" -- \
                        sh -c "i=0; while [ \$i -lt $RT ]; do cat '$p' >/dev/null; i=\$((i + 1)); done" >/dev/null 2>&1
                perf script -i "$DIR/rt.data" -F trace 2>/dev/null |
                        awk -v n="$RT" -v path="$p" '{ for (i = 1; i < NF; i++) if ($i ~ /^\(FUSE_/) { op = $i; gsub(/[()]|FUSE_/, "", op); c[op]++; t++ } }
                             END { s = ""; for (o in c) s = s sprintf("%s %.2f  ", o, c[o] / n); printf "%-8.2f %-44s %s\n", t / n, path, s }' |
                        sed -e "s|$DIR/mnt|MNT|" -e "s|$DIR/old|OLD|" -e "s|$DIR/lxcfs|LXCFS|" -e "s|$DIR/floor-dio|FLOOR-DIO|" -e "s|$DIR/floor|FLOOR|"
        done
        rm -f "$DIR/rt.data"
fi
exit 0
