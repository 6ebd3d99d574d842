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
LOOP=
PID=
LXCFS_PID=
OLD_LOOP=
OLD_PID=
cleanup() {
        [[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
        [[ -n $OLD_PID ]] && kill -TERM "$OLD_PID" 2>/dev/null && wait "$OLD_PID" 2>/dev/null || true
        mountpoint -q "$DIR/mnt" 2>/dev/null && umount -l "$DIR/mnt" || true
        mountpoint -q "$DIR/old" 2>/dev/null && umount -l "$DIR/old" || true
        mountpoint -q "$DIR/lxcfs" 2>/dev/null && umount -l "$DIR/lxcfs" || true
        [[ -n $LXCFS_PID ]] && kill -TERM "$LXCFS_PID" 2>/dev/null && wait "$LXCFS_PID" 2>/dev/null || true
        [[ -n $LOOP ]] && losetup -d "$LOOP" || true
        [[ -n $OLD_LOOP ]] && losetup -d "$OLD_LOOP" || true
        rm -rf "$DIR"
}
trap cleanup EXIT

if [[ ! -x $READCOST ]]; then
        src=$(dirname "$0")/readcost.c
        READCOST=$DIR/readcost
        cc -O2 -Wall -o "$READCOST" "$src"
fi

truncate -s 64M "$DIR/backing"
LOOP=$(losetup -f --show "$DIR/backing")
D=${LOOP#/dev/}
mkdir -p "$DIR/mnt" "$DIR/state"
env -u NOTIFY_SOCKET -u JOURNAL_STREAM "$BLKMQD" -m "$DIR/mnt" --devices "$D" -s "$DIR/state" \
        -c "$DIR/none.conf" 2>"$DIR/blkmqd.log" &
PID=$!
for _ in $(seq 1 200); do
        [[ -e $DIR/mnt/devices/$D/class ]] && break
        sleep 0.05
done
[[ -e $DIR/mnt/devices/$D/class ]] || { echo "blkmqd did not show $D"; cat "$DIR/blkmqd.log"; exit 1; }

M=$DIR/mnt/devices/$D
paths=(/sys/block/"$D"/queue/rotational "$M"/facts/rotational "$M"/class "$M"/explain
       /sys/block/"$D"/mq/0/cpu_list "$M"/hctx/0/cpu_list)
for extra in "$M"/hctx/0/dispatched "$M"/stat "$DIR"/mnt/metrics; do
        [[ -f $extra ]] && paths+=("$extra")
done

OLD_NOTE=
if [[ -n $COMPARE ]]; then
        truncate -s 64M "$DIR/old-backing"
        OLD_LOOP=$(losetup -f --show "$DIR/old-backing")
        OD=${OLD_LOOP#/dev/}
        mkdir -p "$DIR/old" "$DIR/old-state"
        env -u NOTIFY_SOCKET -u JOURNAL_STREAM "$COMPARE" -m "$DIR/old" --devices "$OD" -s "$DIR/old-state" \
                -c "$DIR/none.conf" 2>"$DIR/old.log" &
        OLD_PID=$!
        for _ in $(seq 1 200); do
                [[ -e $DIR/old/devices/$OD/class ]] && break
                sleep 0.05
        done
        [[ -e $DIR/old/devices/$OD/class ]] || { echo "$COMPARE did not show $OD"; cat "$DIR/old.log"; exit 1; }
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

echo "date:    $(date -u +%FT%TZ)"
echo "kernel:  $(uname -sr) ($(uname -v))"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "blkmqd:  $BLKMQD -m MNT --devices $D (loop on a 64 MiB temp file)"
[[ -n $OLD_NOTE ]] && echo "$OLD_NOTE"
echo "$LXCFS_NOTE"
echo "command: $READCOST -n $N -b $BLOCKS ${paths[*]}" | sed -e "s|$DIR/mnt|MNT|g" -e "s|$DIR/old|OLD|g" -e "s|$DIR/lxcfs|LXCFS|g"
echo
"$READCOST" -n "$N" -b "$BLOCKS" "${paths[@]}" | sed -e "s|$DIR/mnt|MNT|" -e "s|$DIR/old|OLD|" -e "s|$DIR/lxcfs|LXCFS|"
echo
cpu() { awk '{ printf "%.2f s user, %.2f s system", $14 / 100, $15 / 100 }' /proc/"$1"/stat; }
echo "blkmqd CPU for the whole run: $(cpu "$PID")"
[[ -n $OLD_PID ]] && echo "compared blkmqd CPU for the whole run: $(cpu "$OLD_PID")"
exit 0
