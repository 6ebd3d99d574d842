#!/bin/sh
# speed, full-distro flavour: slow or fast by what the disk does (policies/speed.h), measured by
# the installed service (systemd as PID 1, systemd-udevd, journald; the `meson install` tree,
# started with systemctl under the shipped unit's sandbox) with blkmqd's shipped defaults (no
# TrustRotational= drop-in: QEMU's flags are untrusted as on any VM) but the [Speed] bounds of an
# emulated guest (guest-lib.sh speed_setup: FastMs=8 SlowMs=12). The disks and the checks
# are scenarios/speed.sh's (guest-lib.sh speed_*), on 2 queues each (-smp 2, as the other
# full-distro scenarios: 4 vCPUs under TCG starve a loaded 2-core host):
#   vdb  virtio-blk on a RAM-backed file (tmpfs on the host), rotational=1, set to mq-deadline
#        before the start: measured fast -> fast-multiqueue, none written
#   sda  scsi-hd rotation_rate=1 behind virtio-scsi, throttled by QEMU to 200 IOPS: measured
#        slow -> many-hctx-slow, mq-deadline written
# (vda is the root disk, left out with [Manager] Devices=.) What the service adds: the BPF
# provider measures under the unit's sandbox (CAP_SYS_ADMIN only, the seccomp filter; if it
# did not, facts/speed_source would name the stat signal and the check fails); the class
# change is one journal record each with MESSAGE_ID=, DEVICE=, BLKMQD_SPEED=, at info;
# `blkmqctl status` and `explain`, node_exporter's scrape of the metrics file. The history:
# start -> unknown; fio 4 KiB -> classed, switched once; `systemctl reload` -> kept, no new
# line; fio 64 KiB -> kept; `systemctl restart` (what a package upgrade does) -> the stop put
# both elevators back, the new invocation takes each disk's class from the state directory
# (/var/lib/blkmqd/measured/, docs/DESIGN-NOTES.md "Measured speed") at once: no unknown in
# between, none and mq-deadline written by the start, facts/speed "measured before the
# restart at ...", no class-change record in the new invocation; fio 64 KiB -> still kept,
# the stored change count; `systemctl stop` -> both back, the measurement files kept.
# smp: 2
# mem: 1024
# timeout: 600
# disk: f0 128M ram
# disk: s0 128M
# qemu: -drive if=none,id=f0,file={disk:f0},format=raw,cache=writeback,aio=threads
# qemu: -device virtio-blk-pci,drive=f0,num-queues=2,serial=fast0
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# qemu: -drive if=none,id=s0,file={disk:s0},format=raw,cache=none,aio=threads,throttling.iops-total=200
# qemu: -device scsi-hd,drive=s0,bus=scsi0.0,rotation_rate=1,serial=slow0
. /opt/vmtest/guest-lib.sh

M=$BLKMQD_MOUNT
UNIT=blkmqd.service
SPEED_ID=b6d0a1fe3c1f4a0e9c1d5e2f7a8b9c01      # manager/speed.c BLKMQD_MESSAGE_SPEED
PROM=/var/lib/prometheus/node-exporter/blkmqd.prom
note "kernel $(uname -r), $(nproc) CPUs, systemd $(systemctl --version | head -n1 | cut -d' ' -f2), uptime $(cut -d' ' -f1 /proc/uptime)s"

# this invocation's journal lines of the unit (a restart starts a new one)
invocation() { systemctl show -P InvocationID "$UNIT"; }
speed_log() { journalctl -u "$UNIT" --no-pager -o cat _SYSTEMD_INVOCATION_ID="$(invocation)"; }
# speed_records DISK SPEED: this invocation's class-change records of DISK, matched by field
speed_records() {
    journalctl -u "$UNIT" --no-pager -o cat _SYSTEMD_INVOCATION_ID="$(invocation)" MESSAGE_ID=$SPEED_ID \
        DEVICE="$1" BLKMQD_SPEED="$2" PRIORITY=6 2>/dev/null | grep -c "^$1: Measured $2 " || true
}
start_unit() {  # WHEN: systemctl start (or restart), the tree complete, started by systemd
    assert_ok "$1: systemctl $2 $UNIT" systemctl "$2" "$UNIT"
    wait_for_cmd 20 sh -c "cat $M/devices/$SPEED_FAST/class $M/devices/$SPEED_SLOW/class" >/dev/null 2>&1 || true
    assert_eq "$1: active" active "$(systemctl is-active "$UNIT")"
    pid=$(systemctl show -P MainPID "$UNIT")
    assert_eq "$1: the main PID is blkmqd, a child of PID 1" "blkmqd 1" "$(cat /proc/$pid/comm 2>/dev/null) $(awk '{print $4}' /proc/$pid/stat 2>/dev/null)"
    note "$1: pid $pid, CapEff $(awk '/^CapEff/ {print $2}' /proc/$pid/status), Seccomp $(awk '/^Seccomp:/ {print $2}' /proc/$pid/status), invocation $(invocation)"
}
shown() {       # WHEN FAST_SPEED SLOW_SPEED: blkmqctl status and explain, node_exporter's scrape
    blkmqctl status 2>&1 | sed "s/^/# $1: blkmqctl status (80 columns): /"
    st=$(blkmqctl --wide status 2>&1) || true
    printf '%s\n' "$st" | sed "s/^/# $1: blkmqctl --wide status: /"
    assert_match "$1: blkmqctl --wide status has a SPEED column" '^DISK .*SPEED' "$st"
    for ds in "$SPEED_FAST $2" "$SPEED_SLOW $3"; do
        d=${ds% *}; s=${ds#* }
        assert_match "$1: blkmqctl status: $d $(cat $M/devices/$d/class) ... $s" "^$d +$(cat $M/devices/$d/class) .* $s( |\$)" \
            "$(printf '%s\n' "$st" | grep "^$d ")"
        assert_match "$1: blkmqctl --json status: $d speed $s" "\"disk\":\"$d\"[^}]*\"speed\":\"$s\"" \
            "$(blkmqctl --json status 2>&1)"
    done
    ex=$(blkmqctl explain "$SPEED_FAST" 2>&1) || true
    assert_match "$1: blkmqctl explain $SPEED_FAST names the measurement" "speed: +$2" "$ex"
    assert_match "$1: blkmqctl explain $SPEED_FAST: measured by BPF service times" 'measured by: +service time: BPF' "$ex"
    # the metrics file, as node_exporter's textfile collector serves it (written on the change)
    wait_for_cmd 20 sh -c "curl -sf http://127.0.0.1:9100/metrics >/tmp/ne.txt && grep -q 'blkmqd_disk_speed{device=\"$SPEED_SLOW\",speed=\"$3\"} 1' /tmp/ne.txt" || true
    for ds in "$SPEED_FAST $2" "$SPEED_SLOW $3"; do
        d=${ds% *}; s=${ds#* }
        assert_match "$1: node_exporter serves blkmqd_disk_speed $d $s" "blkmqd_disk_speed\\{device=\"$d\",speed=\"$s\"\\} 1" \
            "$(grep "^blkmqd_disk_speed{device=\"$d\"" /tmp/ne.txt 2>/dev/null)"
    done
}

udevadm settle --timeout=60 || note "udevadm settle timed out"
assert_eq "systemd-udevd is running" active "$(systemctl is-active systemd-udevd.service)"
SPEED_FAST=""
for s in /sys/block/vd*/serial; do [ "$(cat "$s" 2>/dev/null)" = fast0 ] && SPEED_FAST=$(basename "${s%/serial}"); done
wait_for_file /sys/block/sda 30 || true
SPEED_SLOW=sda
assert_match "the RAM-backed virtio-blk disk (serial fast0), after the root vda" '^vd[b-z]$' "$SPEED_FAST"
assert_eq "sda is the throttled scsi-hd (udev: ID_SCSI_SERIAL=slow0)" slow0 \
    "$(udevadm info -q property -n /dev/sda 2>/dev/null | sed -n 's/^ID_SCSI_SERIAL=//p')"
speed_setup 2

# the shipped defaults, but only these two disks (not the root)
mkdir -p /etc/blkmqd/blkmqd.conf.d
printf '[Manager]\nDevices=%s %s\n' "$SPEED_FAST" "$SPEED_SLOW" >/etc/blkmqd/blkmqd.conf.d/50-vmtest-speed.conf
assert_eq "no TrustRotational= anywhere (the shipped trust table)" "" \
    "$(grep -rs '^ *TrustRotational' /etc/blkmqd/ /usr/local/etc/blkmqd/ 2>/dev/null)"
assert_ok "systemctl daemon-reload (the installed unit)" systemctl daemon-reload
start_unit "start" start
assert_match "version lists the bpf provider (loaded under the unit's sandbox)" bpf "$(cat $M/version)"
speed_check_unmeasured
shown "unmeasured" unmeasured unmeasured

# ---- fio 4 KiB: classed by measurement, switched once --------------------------------------
speed_check_classed
assert_eq "journal: one record MESSAGE_ID=speed DEVICE=$SPEED_FAST BLKMQD_SPEED=fast at info" 1 "$(speed_records $SPEED_FAST fast)"
assert_eq "journal: one record MESSAGE_ID=speed DEVICE=$SPEED_SLOW BLKMQD_SPEED=slow at info" 1 "$(speed_records $SPEED_SLOW slow)"
assert_match "journal: $SPEED_FAST's line names the class change" "$SPEED_FAST: Measured fast \\(was unmeasured\\): fast: p50 .* -> class fast-multiqueue, was unknown" \
    "$(speed_log | grep "$SPEED_FAST: Measured")"
shown "classed" fast slow

# ---- systemctl reload: the measurement is kept ----------------------------------------------
inv=$(invocation)
assert_ok "reload: systemctl reload" systemctl reload "$UNIT"
assert_eq "reload: the same invocation" "$inv" "$(invocation)"
assert_eq "reload: $SPEED_FAST still fast-multiqueue" fast-multiqueue "$(read_attr $M/devices/$SPEED_FAST/class)"
assert_eq "reload: $SPEED_SLOW still many-hctx-slow" many-hctx-slow "$(read_attr $M/devices/$SPEED_SLOW/class)"
assert_match "reload: $SPEED_FAST facts/speed still fast" '^fast: ' "$(read_attr $M/devices/$SPEED_FAST/facts/speed)"
assert_eq "reload: no new 'Measured' line" 2 "$(speed_log | grep -c ': Measured ')"

# ---- fio 64 KiB: nothing switches back --------------------------------------------------------
speed_check_kept
assert_eq "journal: still one fast record of $SPEED_FAST" 1 "$(speed_records $SPEED_FAST fast)"
assert_eq "journal: still one slow record of $SPEED_SLOW" 1 "$(speed_records $SPEED_SLOW slow)"
assert_eq "journal: no fast record of $SPEED_SLOW, no slow one of $SPEED_FAST" "0 0" \
    "$(speed_records $SPEED_SLOW fast) $(speed_records $SPEED_FAST slow)"

# ---- systemctl restart: the stop puts both back, the new daemon keeps the stored measurement ----
inv=$(invocation)
note "before the restart: /var/lib/blkmqd/measured/: $(grep -H '^speed=' /var/lib/blkmqd/measured/* 2>/dev/null | tr '\n' ' ')"
assert_eq "restart: two measured/ files in the state directory before it" 2 "$(ls /var/lib/blkmqd/measured/ 2>/dev/null | wc -l)"
start_unit "restart" restart
assert_ne "restart: a new invocation" "$inv" "$(invocation)"
assert_eq "restart: $SPEED_FAST fast-multiqueue at once (stored, not measured anew)" fast-multiqueue "$(read_attr $M/devices/$SPEED_FAST/class)"
assert_eq "restart: $SPEED_SLOW many-hctx-slow at once (stored, not measured anew)" many-hctx-slow "$(read_attr $M/devices/$SPEED_SLOW/class)"
assert_match "restart: $SPEED_FAST facts/speed fast, measured before the restart" \
    '^fast: p50 .*, measured before the restart at [0-9-]+ [0-9:]+ UTC' "$(read_attr $M/devices/$SPEED_FAST/facts/speed)"
assert_match "restart: $SPEED_SLOW facts/speed slow, measured before the restart" \
    '^slow(, held: .*)?: .*measured before the restart at [0-9-]+ [0-9:]+ UTC' "$(read_attr $M/devices/$SPEED_SLOW/facts/speed)"
assert_match "restart: explain of $SPEED_FAST names the stored measurement" 'measured before the restart at .* -> fast, by measurement' \
    "$(cat $M/devices/$SPEED_FAST/explain)"
wait_for_cmd 10 _vt_both_elevators none mq-deadline || true
assert_eq "restart: $SPEED_FAST none written by the start (the stop had put mq-deadline back)" none "$(_vt_elevator $SPEED_FAST)"
assert_eq "restart: $SPEED_SLOW mq-deadline written by the start (the stop had put none back)" mq-deadline "$(_vt_elevator $SPEED_SLOW)"
sleep 2
assert_eq "restart: no class-change record in the new invocation" "0 0" "$(speed_records $SPEED_FAST fast) $(speed_records $SPEED_SLOW slow)"
assert_eq "restart: no 'Measured' line in the new invocation" 0 "$(speed_log | grep -c ': Measured ')"
assert_eq "restart: one 'kept' line a disk" "1 1" \
    "$(speed_log | grep -c "^$SPEED_FAST: Stored speed measurement kept: fast") $(speed_log | grep -c "^$SPEED_SLOW: Stored speed measurement kept: slow")"
shown "restart" fast slow
_met=$(cat $M/metrics)
assert_match "restart: metrics $SPEED_SLOW the stored change count" "blkmqd_disk_speed_changes_total\\{device=\"$SPEED_SLOW\"\\} 1" "$_met"

# ---- fio 64 KiB after the restart: nothing switches, this run's windows replace the stored one ---
speed_fio 64k 12
sleep 2
assert_eq "restart: $SPEED_FAST still fast-multiqueue after fio" fast-multiqueue "$(read_attr $M/devices/$SPEED_FAST/class)"
assert_eq "restart: $SPEED_SLOW still many-hctx-slow after fio" many-hctx-slow "$(read_attr $M/devices/$SPEED_SLOW/class)"
assert_eq "restart: still none and mq-deadline" "none mq-deadline" "$(_vt_elevator $SPEED_FAST) $(_vt_elevator $SPEED_SLOW)"
assert_eq "restart: still no 'Measured' line" 0 "$(speed_log | grep -c ': Measured ')"
assert_match "restart: $SPEED_FAST facts/speed from this run's window now" '^fast: p50 ' "$(read_attr $M/devices/$SPEED_FAST/facts/speed)"
assert_fail "restart: ... not the stored one" grep -q 'measured before the restart' $M/devices/$SPEED_FAST/facts/speed
note "$SPEED_FAST: $(read_attr $M/devices/$SPEED_FAST/facts/speed)"
note "$SPEED_SLOW: $(read_attr $M/devices/$SPEED_SLOW/facts/speed)"

# ---- systemctl stop: both back ------------------------------------------------------------------
assert_ok "stop: systemctl stop" systemctl stop "$UNIT"
speed_check_stopped
assert_fail "stop: $M is not mounted" grep -q " $M fuse" /proc/self/mounts
assert_eq "stop: the measured/ files are kept for the next start of this boot" 2 "$(ls /var/lib/blkmqd/measured/ 2>/dev/null | wc -l)"
rm -f /var/lib/blkmqd/measured/*
journalctl -u "$UNIT" --no-pager -o short-monotonic | grep -E 'Measured|Started|Stopp|Reload|Restor' | sed 's/^/# journal: /'
rm -f /etc/blkmqd/blkmqd.conf.d/50-vmtest-speed.conf
