#!/bin/sh
# blkmqd's decisions across a reboot and a reload that narrows its disks (issue 26), as the
# installed service (systemd as PID 1; the `meson install` tree, the unit enabled), on a real
# module parameter: nvme's write_queues (runtime-writable, 0644; the driver samples it at probe
# and at a controller reset, nvme_probe()/nvme_setup_io_queues()).
# Boot 1: `[Module:nvme] write_queues=1` with ModuleParams=write: blkmqd writes it under
# /sys/module (pending-reset) and to /etc/modprobe.d/zz-blkmqd.conf; `systemctl reload` with
# `[Manager] Devices=` narrowed to leave out the non-rotating disk: that disk is put back to
# its original elevator and leaves devices/, `blkmqctl status` and the metrics; widened again
# it comes back; `systemctl stop` puts write_queues back at runtime and keeps the modprobe.d
# file (a boot-time setting, blkmqd(8)); then an orderly reboot (systemctl reboot).
# Boot 2 (the same root): nvme loaded with write_queues=1 from blkmqd's file, 3 hctx instead
# of 2; blkmqd, started at boot by systemd, calls the wish effective and neither rewrites nor
# removes the file; `systemctl stop` keeps it; `blkmqctl restore` removes it.
# A distribution's /usr/lib/modprobe.d/nvme.conf sets write_queues=0 (issue 28): a distribution
# default, corrected with the file:line named; modprobe passes blkmqd's option after it (name
# order), and blkmqd never touches the distribution's file (content and mtime kept to the end).
# The journal is kept on disk (journald-persistent.conf): boot 2 reads boot 1's too.
# smp: 2
# mem: 1024
# timeout: 420
# boots: 2
# file: systemd/files/60-block-scheduler.rules:/usr/lib/udev/rules.d/60-block-scheduler.rules
# file: systemd/files/nvme-distribution.conf:/usr/lib/modprobe.d/nvme.conf
# file: systemd/files/journald-persistent.conf:/etc/systemd/journald.conf.d/zz-vmtest-persistent.conf
# disk: d0 64M
# disk: d1 64M
# disk: n0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=rot0
# qemu: -drive if=none,id=d1,file={disk:d1},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d1,bus=scsi0.0,rotation_rate=1,serial=ssd0
# qemu: -drive if=none,id=n0,file={disk:n0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=nv0,drive=n0,max_ioqpairs=4
. /opt/vmtest/guest-lib.sh

M=$BLKMQD_MOUNT
UNIT=blkmqd.service
NV=nvme0n1
PARAM=/sys/module/nvme/parameters/write_queues
MODPROBE=/etc/modprobe.d/zz-blkmqd.conf
DIST=/usr/lib/modprobe.d/nvme.conf   # the distribution's (systemd/files/nvme-distribution.conf)
KEEP=/var/lib/vmtest         # what boot 1 saw, for boot 2 (the root disk is kept)
note "boot $VMTEST_BOOT: kernel $(uname -r), $(nproc) CPUs, systemd $(systemctl --version | head -n1 | cut -d' ' -f2), uptime $(cut -d' ' -f1 /proc/uptime)s"

disks() {
    for d in /sys/block/*; do
        [ "$(cat "$d/size")" != 0 ] && basename "$d"
    done | sort
}
tree_complete() {   # every listed disk has devices/<disk>/class
    for d in "$@"; do cat "$M/devices/$d/class" >/dev/null 2>&1 || return 1; done
}
elevator() { sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$1/queue/scheduler"; }
active() { [ "$(systemctl is-active "$UNIT")" = active ]; }
mp() { cat "$M/modules/nvme/write_queues/$1" 2>/dev/null || echo "<missing>"; }
# blkmqd's journal lines of this boot (-b 0) or the one before (-b -1) about module parameters
journal_modules() {
    journalctl -b "$1" -u "$UNIT" --no-pager -o short-monotonic 2>/dev/null |
        grep -Ei 'modprobe|module param|write_queues|nvme\.|Original|Restored|Stopping|Started|Stopped' || true
}
stop_unit() {      # WHEN
    assert_ok "$1: systemctl stop blkmqd" systemctl stop "$UNIT"
    assert_fail "$1: the tree is unmounted" grep -q " $M fuse" /proc/self/mounts
}

udevadm settle --timeout=60 || note "udevadm settle timed out"
for d in sda sdb $NV; do
    wait_for_file /sys/block/$d 30 || fail "boot $VMTEST_BOOT: disk $d appeared"
done
# which virtio-scsi disk is the non-rotating one varies with the probe order
SSD=""; ROT=""
for d in sda sdb; do
    if [ "$(cat /sys/block/$d/queue/rotational)" = 0 ]; then SSD=$d; else ROT=$d; fi
done
assert_match "boot $VMTEST_BOOT: one rotating and one non-rotating virtio-scsi disk" '^sd[ab] sd[ab]$' "$ROT $SSD"

if [ "$VMTEST_BOOT" = 1 ]; then
    assert_eq "boot 1: nvme loaded with write_queues=0 (the default)" 0 "$(cat $PARAM)"
    assert_eq "boot 1: $NV has 2 hctx (2 CPUs)" 2 "$(hctx_count $NV)"
    assert_eq "boot 1: the distribution's rule set bfq on $SSD" bfq "$(elevator "$SSD")"
    assert_eq "boot 1: no $MODPROBE before blkmqd" "" "$(ls $MODPROBE 2>/dev/null)"
    # QEMU's disks stand in for the media their flags say (docs/TESTING.md "Speed in the suites")
    mkdir -p /etc/blkmqd/blkmqd.conf.d
    printf '[Speed]\nTrustRotational=virtio_blk virtio_scsi\n' >/etc/blkmqd/blkmqd.conf.d/00-vmtest-trust.conf
    printf '[Manager]\nModuleParams=write\n\n[Module:nvme]\nwrite_queues=1\n' >/etc/blkmqd/blkmqd.conf
    assert_ok "boot 1: systemctl daemon-reload (the installed unit)" systemctl daemon-reload
    assert_ok "boot 1: systemctl enable blkmqd" systemctl enable --quiet "$UNIT"
    assert_ok "boot 1: systemctl start blkmqd" systemctl start "$UNIT"
    wait_for_cmd 30 tree_complete $(disks) || fail "boot 1: devices/*/class for every disk"

    # ---- (b) the module parameter, written at runtime and for the next boot ---------------
    wait_for_match 10 "$M/modules/nvme/write_queues/state" '^pending-reset$' || true
    assert_eq "boot 1: write_queues written at runtime" 1 "$(cat $PARAM)"
    assert_eq "boot 1: modules/nvme/write_queues/state" pending-reset "$(mp state)"
    assert_eq "boot 1: modules/nvme/write_queues/wanted" 1 "$(mp wanted)"
    assert_eq "boot 1: modules/nvme/write_queues/wanted_by" "$NV" "$(mp wanted_by)"
    assert_match "boot 1: $MODPROBE has the option" '^options nvme write_queues=1$' "$(cat $MODPROBE 2>&1)"
    assert_eq "boot 1: /etc/modprobe.d is 0755" 755 "$(stat -c %a /etc/modprobe.d)"
    assert_eq "boot 1: $MODPROBE is 0644" 644 "$(stat -c %a $MODPROBE 2>&1)"
    assert_eq "boot 1: $NV still has 2 hctx (the driver reads write_queues at a reset)" 2 "$(hctx_count $NV)"
    assert_match "boot 1: explain names the config line" 'config \[Module:nvme\] write_queues=1' \
        "$(grep -i 'write_queues' "$M/devices/$NV/explain" | head -n 1)"
    ex=$(grep -F "$DIST" "$M/devices/$NV/explain" 2>&1 | head -n 1)
    note "boot 1: explain on the distribution's file: $ex"
    assert_match "boot 1: explain names $DIST:3 as a distribution default, corrected" \
        "modprobe.d file $DIST:3 options nvme write_queues=0 \\(a distribution default\\) -> corrected to 1" "$ex"
    assert_eq "boot 1: no 'sorts after' warning (nvme.conf sorts before zz-blkmqd.conf)" "" \
        "$(grep -F 'sorts after' "$M/devices/$NV/explain" 2>&1)"
    assert_eq "boot 1: modprobe -c passes blkmqd's option last" "options nvme write_queues=1" \
        "$(modprobe -c 2>/dev/null | grep -E '^options nvme .*write_queues=' | tail -n 1)"
    mkdir -p $KEEP
    stat -c '%Y %s %a' $DIST >$KEEP/dist-nvme.stat 2>&1
    cp -p $DIST $KEEP/dist-nvme.conf 2>/dev/null || true

    # ---- (c) a reload that narrows [Manager] Devices= -----------------------------------
    SSD_OWN=$(elevator "$SSD")
    note "boot 1: $SSD's elevator under blkmqd: $SSD_OWN (was bfq); applied: $(cat "$M/devices/$SSD/applied/elevator" 2>&1)"
    assert_ne "boot 1: blkmqd changed $SSD's elevator (bfq before)" bfq "$SSD_OWN"
    printf '[Manager]\nDevices=%s nvme* vda\n' "$ROT" >/etc/blkmqd/blkmqd.conf.d/50-vmtest-devices.conf
    assert_ok "narrowed: systemctl reload blkmqd" systemctl reload "$UNIT"
    assert_eq "narrowed: $SSD put back to its original elevator" bfq "$(elevator "$SSD")"
    assert_fail "narrowed: $SSD left devices/" test -e "$M/devices/$SSD"
    assert_match "narrowed: not_listed names $SSD" "^$SSD: .*Devices=" "$(grep "^$SSD:" "$M/not_listed" 2>&1)"
    st=$(blkmqctl status 2>&1) || true
    assert_fail "narrowed: blkmqctl status has no $SSD line" sh -c "printf '%s\n' \"\$1\" | grep -Eq '^$SSD( |\$)'" _ "$st"
    assert_fail "narrowed: the metrics have no device=\"$SSD\" series" grep -q "device=\"$SSD\"" "$M/metrics"
    if blkmqctl set "$SSD" elevator mq-deadline >/tmp/set.txt 2>&1; then
        fail "narrowed: blkmqctl set $SSD elevator mq-deadline is refused" "it succeeded: $(tr '\n' '|' </tmp/set.txt)"
        blkmqctl reset "$SSD" >/dev/null 2>&1 || true   # not stored for boot 2 ("Restored override")
    else pass "narrowed: blkmqctl set $SSD elevator mq-deadline is refused ($(head -n 1 /tmp/set.txt))"; fi
    assert_eq "narrowed: $SSD's elevator still bfq" bfq "$(elevator "$SSD")"
    assert_eq "narrowed: $ROT still managed" 0 "$(test -e "$M/devices/$ROT/class"; echo $?)"
    assert_eq "narrowed: write_queues still wanted (nvme* listed)" 1 "$(mp wanted)"
    rm /etc/blkmqd/blkmqd.conf.d/50-vmtest-devices.conf
    assert_ok "widened again: systemctl reload blkmqd" systemctl reload "$UNIT"
    wait_for_cmd 10 tree_complete "$SSD" || true
    assert_eq "widened again: $SSD back in devices/" 0 "$(test -e "$M/devices/$SSD/class"; echo $?)"
    assert_eq "widened again: $SSD has blkmqd's elevator again" "$SSD_OWN" "$(elevator "$SSD")"
    assert_eq "boot 1: one warning for $DIST:3 over the start and two reloads" 1 \
        "$(journalctl -b 0 -u "$UNIT" --no-pager -o cat | grep -c "^$DIST:3: " || true)"

    # ---- stop: runtime values back, the boot-time file kept -----------------------------
    stop_unit "boot 1"
    assert_eq "boot 1, stop: write_queues put back to 0 at runtime" 0 "$(cat $PARAM)"
    assert_match "boot 1, stop: $MODPROBE kept (a boot-time setting)" '^options nvme write_queues=1$' "$(cat $MODPROBE 2>&1)"
    assert_eq "boot 1, stop: $SSD back at bfq" bfq "$(elevator "$SSD")"
    mkdir -p $KEEP
    cp -p $MODPROBE $KEEP/modprobe-boot1.conf 2>/dev/null || true
    stat -c %Y $MODPROBE >$KEEP/modprobe-boot1.mtime 2>/dev/null || true
    note "boot 1: blkmqd's journal (module parameters):"
    journal_modules 0 | sed 's/^/#   /'
    note "boot 1: the service stays enabled: systemd starts it at boot 2"
    reboot_guest
fi

# ---- boot 2: the parameter in effect, the file kept, the wish effective ----------------
assert_eq "boot 2: blkmqd.service enabled" enabled "$(systemctl is-enabled "$UNIT" 2>&1)"
wait_for_cmd 60 active || fail "boot 2: blkmqd active (started at boot)" "$(systemctl status "$UNIT" --no-pager 2>&1 | tail -n 5 | tr '\n' '|')"
wait_for_cmd 30 tree_complete $(disks) || fail "boot 2: devices/*/class for every disk"
note "boot 1's blkmqd journal (module parameters, shutdown included):"
journal_modules -1 | sed 's/^/#   /'
note "boot 2's journal so far: blkmqd's lines and the kernel's nvme lines (the probe), in time order:"
journalctl -b 0 -o short-monotonic --no-pager 2>/dev/null |
    grep -E 'blkmqd\[[0-9]+\]: |kernel: nvme' | head -n 30 | sed 's/^/#   /'
assert_eq "boot 2: nvme loaded with write_queues=1 (blkmqd's modprobe.d option)" 1 "$(cat $PARAM)"
assert_eq "boot 2: $NV has 3 hctx (1 default + 2 read queues)" 3 "$(hctx_count $NV)"
assert_eq "boot 2: modules/nvme/write_queues/state" effective "$(mp state)"
assert_eq "boot 2: modules/nvme/write_queues/current" 1 "$(mp current)"
note "boot 2: modules/nvme/write_queues/note: $(mp note)"
if cmp -s $MODPROBE $KEEP/modprobe-boot1.conf; then pass "boot 2: $MODPROBE as boot 1 left it"
else fail "boot 2: $MODPROBE as boot 1 left it" "$(cat $MODPROBE 2>&1 | tr '\n' '|') vs $(tr '\n' '|' <$KEEP/modprobe-boot1.conf)"; fi
assert_eq "boot 2: $MODPROBE not rewritten (mtime)" "$(cat $KEEP/modprobe-boot1.mtime 2>&1)" "$(stat -c %Y $MODPROBE 2>&1)"
assert_eq "boot 2: no modprobe.d write or removal in blkmqd's journal" "" \
    "$(journalctl -b 0 -u "$UNIT" --no-pager -o cat | grep -E '(Wrote|Removed) /etc/modprobe.d' || true)"
sleep 2
assert_eq "boot 2: write_queues still 1 (nothing wrote it back)" 1 "$(cat $PARAM)"
assert_eq "boot 2: $NV still 3 hctx" 3 "$(hctx_count $NV)"

stop_unit "boot 2"
assert_eq "boot 2, stop: $MODPROBE kept" "" "$(cmp $MODPROBE $KEEP/modprobe-boot1.conf 2>&1)"
note "boot 2, stop: write_queues reads $(cat $PARAM)"
assert_ok "boot 2: systemctl start blkmqd" systemctl start "$UNIT"
wait_for_cmd 30 tree_complete $(disks) || fail "boot 2, again: devices/*/class for every disk"
assert_eq "boot 2, again: modules/nvme/write_queues/state" effective "$(mp state)"
out=$(blkmqctl restore 2>&1); rc=$?
assert_eq "boot 2: blkmqctl restore exits 0" 0 "$rc"
note "boot 2: blkmqctl restore: $out"
assert_eq "boot 2, restore: $MODPROBE removed" "" "$(ls $MODPROBE 2>/dev/null)"
assert_eq "boot 2, restore: the mode is off" off "$(cat "$M/mode")"
note "boot 2, restore: write_queues reads $(cat $PARAM), modules state $(mp state): $(mp note)"
journal_modules 0 | tail -n 8 | sed 's/^/# boot 2 journal: /'
stop_unit "boot 2, after restore"
assert_eq "boot 2, after restore and stop: $MODPROBE still gone" "" "$(ls $MODPROBE 2>/dev/null)"
assert_eq "boot 2, the end: $DIST untouched (mtime, size, mode)" "$(cat $KEEP/dist-nvme.stat 2>&1)" \
    "$(stat -c '%Y %s %a' $DIST 2>&1)"
assert_eq "boot 2, the end: $DIST has its content" "" "$(cmp $DIST $KEEP/dist-nvme.conf 2>&1)"
