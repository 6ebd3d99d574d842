#!/bin/sh
# hotplug: a scsi-hd is added and removed through the QEMU monitor (HMP, requested by the
# guest over the serial console).  Kernel facts: /sys/block entry appears and disappears.
# blkmqd: devices/<disk> follows 20 add/remove cycles, a file of the removed disk held open
# reads EIO, a new open is ENOENT, the daemon stays up, no stale devices/ entry at the end.
# Every cycle uses fresh QEMU ids (the previous drive may still be finalising) and
# file.locking=off (the same image file is reopened).
# smp: 2
# disk: d1 32M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# timeout: 150
. /opt/vmtest/guest-lib.sh

CYCLES=${HOTPLUG_CYCLES:-20}
assert_eq "no disk before hot-plug" "" "$(ls /sys/block | grep '^sd' || true)"

sd_disk() { ls /sys/block | grep '^sd' | head -n 1; }
_have_sd() { [ -n "$(sd_disk)" ]; }
_no_sd() { [ -z "$(sd_disk)" ]; }
plug() {    # N -> 0 when the disk appeared; its name in $DISK
    hmp drive_add 0 if=none,id=dr$1,file={disk:d1},format=raw,cache=none,aio=threads,file.locking=off || return 1
    hmp device_add scsi-hd,drive=dr$1,bus=scsi0.0,id=hd$1,rotation_rate=7200,serial=hot$1 || return 2
    wait_for_cmd 20 _have_sd || return 3
    DISK=$(sd_disk)
}
unplug() {  # N
    hmp device_del hd$1 || return 1
    wait_for_cmd 20 _no_sd || return 2
}

assert_ok "plug (kernel only)" plug 0
assert_eq "hot-plugged $DISK rotational" 1 "$(read_attr /sys/block/$DISK/queue/rotational)"
assert_eq "hot-plugged $DISK hctx" 2 "$(hctx_count $DISK)"
assert_fail "hmp reports errors (unknown device)" hmp device_del no-such-device
assert_ok "unplug (kernel only)" unplug 0

blkmqd_hotplug() {
    M=$BLKMQD_MOUNT
    start_blkmqd -v || return 0
    assert_eq "devices/ empty before hot-plug" "" "$(ls $M/devices)"
    t0=$(cut -d' ' -f1 /proc/uptime)
    bad=0; names=""
    i=1
    while [ $i -le "$CYCLES" ]; do
        why=""
        if ! plug $i; then why="plug step $?"
        elif ! wait_for_file $M/devices/$DISK/class 20; then why="devices/$DISK did not appear"
        elif [ "$(read_attr $M/devices/$DISK/class)" != many-hctx-slow ]; then
            why="class '$(read_attr $M/devices/$DISK/class)'"
        fi
        case " $names " in *" $DISK "*) ;; *) names="$names $DISK" ;; esac
        if [ $i -eq 1 ] && [ -z "$why" ]; then
            # hold files of the disk that is about to go away
            exec 3<"$M/devices/$DISK/class" 4<"$M/devices/$DISK/hctx/0/nr_tags"
            HELD=$DISK
        fi
        if [ -z "$why" ]; then
            if ! unplug $i; then why="unplug step $?"
            elif ! wait_for_gone $M/devices/$DISK 20; then why="devices/$DISK still there after removal"
            fi
        fi
        if [ $i -eq 1 ] && [ -n "$HELD" ]; then
            if dd bs=64 count=1 <&3 >/tmp/held.out 2>/tmp/held.err; then
                fail "held devices/$HELD/class reads an error after removal" "read succeeded: '$(cat /tmp/held.out)'"
            else
                assert_match "held devices/$HELD/class: read fails with EIO" 'Input/output error' "$(cat /tmp/held.err)"
            fi
            if dd bs=64 count=1 <&4 >/tmp/held.out 2>/tmp/held.err; then
                fail "held devices/$HELD/hctx/0/nr_tags reads an error after removal" "read succeeded: '$(cat /tmp/held.out)'"
            else
                assert_match "held devices/$HELD/hctx/0/nr_tags: read fails with EIO" 'Input/output error' "$(cat /tmp/held.err)"
            fi
            exec 3<&- 4<&-
            assert_match "a new open of devices/$HELD/class is ENOENT" 'No such file' "$(cat $M/devices/$HELD/class 2>&1)"
            assert_ok "daemon alive after the held read" kill -0 "$BLKMQD_PID"
        fi
        if [ -n "$why" ]; then
            bad=$((bad + 1))
            fail "hot-plug cycle $i" "$why"
            [ $bad -ge 3 ] && break
            # leave a clean state for the next cycle
            hmp device_del hd$i >/dev/null 2>&1 || true
            wait_for_cmd 20 _no_sd || true
        fi
        i=$((i + 1))
    done
    t1=$(cut -d' ' -f1 /proc/uptime)
    note "$((i - 1)) cycles in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b - a}') s; disk names:$names"
    assert_eq "hot-plug cycles without a failure" "$CYCLES" "$((i - 1 - bad))"
    assert_ok "daemon still running after $CYCLES cycles" kill -0 "$BLKMQD_PID"
    assert_match "version still readable" '^blkmqd ' "$(read_attr $M/version)"
    assert_eq "no stale devices/ entries" "" "$(ls $M/devices)"
    # hosts/ has one directory per SCSI host a listed disk names (fuse-fs.c
    # sync_disk_named_children()): host0 goes with its last disk
    assert_ok "hosts/host0 gone after the last removal (no disk left on it)" wait_for_gone $M/hosts/host0 10
    assert_eq "hosts/ empty after the last removal" "" "$(ls $M/hosts)"
    # and it still reacts
    assert_ok "final plug" plug 99
    assert_ok "devices/$DISK after the cycles" wait_for_file $M/devices/$DISK/class 20
    assert_ok "final unplug" unplug 99
    assert_ok "devices/$DISK gone" wait_for_gone $M/devices/$DISK 20
    stop_blkmqd
}
blkmqd_checks blkmqd_hotplug
