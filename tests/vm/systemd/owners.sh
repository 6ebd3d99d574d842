#!/bin/sh
# blkmqd next to the admin's other tools, as a user runs it (systemd as PID 1, systemd-udevd,
# journald; docs/OPERATIONS.md "Next to tuned, irqbalance and udev rules"): a Fedora-style
# 60-block-scheduler.rules in /usr/lib/udev/rules.d (a distribution default) and tuned 2.20
# from Debian 12 with a profile the admin picked (`tuned-adm profile`) that sets bfq on every
# disk. One boot: with DeferTo=admin (the default) blkmqd leaves the profile's elevators
# (tuned-adm verify passes), `tuned-adm off` and a stop end at the boot values; with
# DeferTo=none it writes over the profile, and `tuned-adm off` + a stop end at the boot
# values too, never at tuned's bfq.
# smp: 2
# mem: 1024
# timeout: 420
# file: systemd/files/60-block-scheduler.rules:/usr/lib/udev/rules.d/60-block-scheduler.rules
# disk: d0 64M
# disk: n0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=rot0
# qemu: -drive if=none,id=n0,file={disk:n0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=nv0,drive=n0,max_ioqpairs=2
. /opt/vmtest/guest-lib.sh

M=$BLKMQD_MOUNT
UNIT=blkmqd.service
# QEMU's disks stand in for the media their flags say (rotation_rate=7200, the root disk's
# rotational=1): trusted, as the suites do (docs/TESTING.md "Speed in the suites"); the shipped
# defaults leave a virtio_blk or virtio_scsi disk's flag untrusted (policies/defaults.c)
mkdir -p /etc/blkmqd/blkmqd.conf.d
printf '[Speed]\nTrustRotational=virtio_blk virtio_scsi\n' >/etc/blkmqd/blkmqd.conf.d/00-vmtest-trust.conf
DECISION=4857cd2c47454447b8702c80b5468310
note "kernel $(uname -r), $(nproc) CPUs, systemd $(systemctl --version | head -n1 | cut -d' ' -f2), tuned $(dpkg-query -W -f '${Version}' tuned 2>/dev/null)"

disks() {
    for d in /sys/block/*; do
        [ "$(cat "$d/size")" != 0 ] && basename "$d"
    done | sort
}
snapshot_values() {    # DISK...: every runtime value blkmqd may change, one "path value" line each
    for d in "$@"; do
        for a in scheduler rq_affinity nr_requests; do
            printf '%s %s\n' "/sys/block/$d/queue/$a" "$(cat "/sys/block/$d/queue/$a")"
        done
    done
    for f in /proc/irq/[0-9]*/smp_affinity_list; do printf '%s %s\n' "$f" "$(cat "$f")"; done
}
tree_complete() {
    for d in $(disks); do cat "$M/devices/$d/class" >/dev/null 2>&1 || return 1; done
}
journal_has() {     # MESSAGE_ID FIELD=VALUE-REGEX...: one JSON record of the unit carries all
    _id=$1; shift
    journalctl -o json -u "$UNIT" --no-pager MESSAGE_ID="$_id" >/tmp/j.json 2>/dev/null
    for _kv in "$@"; do
        grep -E "\"${_kv%%=*}\":\"${_kv#*=}\"" /tmp/j.json >/tmp/j2.json || return 1
        mv /tmp/j2.json /tmp/j.json
    done
    [ -s /tmp/j.json ]
}
elevator() { sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$1/queue/scheduler"; }

udevadm settle --timeout=60 || note "udevadm settle timed out"
for d in sda nvme0n1; do
    wait_for_file /sys/block/$d 30 || fail "disk $d appeared"
done
NV=nvme0n1
assert_eq "udev's distribution rule set bfq on sda at boot" bfq "$(elevator sda)"

# ---- next to tuned: the admin's profile wins, and a stop ends at the boot values -----------
# tuned 2.20 saves each disk's elevator when its profile is applied and writes it back at
# `tuned-adm off` (plugins/base.py _check_and_save_value(), _cleanup_device_command()).
ALL=$(disks)
BOOT=$(snapshot_values $ALL)
mkdir -p /etc/tuned/vmtest
printf '[main]\nsummary=blkmqd VM test: bfq on every disk\n\n[disk]\nelevator=bfq\n' >/etc/tuned/vmtest/tuned.conf
all_bfq() { for _d in $ALL; do [ "$(elevator "$_d")" = bfq ] || return 1; done; }
# tuned's python start takes long under TCG on a loaded host: more than its unit allows
mkdir -p /run/systemd/system/tuned.service.d
printf '[Service]\nTimeoutStartSec=300\n' >/run/systemd/system/tuned.service.d/vmtest-timeout.conf
systemctl daemon-reload
tuned_on() {   # WHEN: tuned running with the vmtest profile, every disk on bfq
    if systemctl start tuned.service; then pass "$1: systemctl start tuned"
    else
        fail "$1: systemctl start tuned" "$(systemctl status tuned.service --no-pager 2>&1 | tail -n 5 | tr '\n' '|')"
        journalctl -u tuned.service --no-pager -o short-monotonic | tail -n 15 | sed 's/^/# tuned journal: /'
    fi
    assert_ok "$1: tuned-adm profile vmtest" tuned-adm profile vmtest
    wait_for_cmd 60 all_bfq || true
    assert_ok "$1: tuned set bfq on every disk ($(echo $ALL))" all_bfq
    note "$1: tuned-adm active: $(tuned-adm active 2>&1 | tr '\n' ' '), profile_mode $(cat /etc/tuned/profile_mode 2>/dev/null)"
}
tuned_off() {  # WHEN: tuned-adm off, and tuned done putting back what it saw (its rollback runs in its daemon)
    assert_ok "$1: tuned-adm off" tuned-adm off
    wait_for_cmd 60 sh -c '! tuned-adm active 2>/dev/null | grep -q "Current active profile"' || true
    sleep 2
    note "$1: after tuned-adm off: $(for _d in $ALL; do printf '%s=%s ' $_d "$(elevator $_d)"; done)"
}
tuned_on "tuned, DeferTo=admin"
assert_ok "tuned: systemctl start blkmqd" systemctl start "$UNIT"
wait_for_cmd 10 tree_complete >/dev/null || true
for d in $ALL; do
    assert_eq "tuned: $d keeps the profile's bfq" bfq "$(elevator "$d")"
    # deferred where the class wants another elevator; agrees where it wants bfq too (vda,
    # single-queue-rotational, keeps a bfq it finds): kept, nothing written either way
    own=$(cat "$M/devices/$d/owner/elevator")
    assert_match "tuned: $d owner/elevator names the profile, the admin's choice" \
        '^(deferred|agrees): tuned profile "vmtest" /etc/tuned/vmtest/tuned\.conf:5 \[disk\] elevator=bfq \(the admin.s choice\)$' "$own"
    case $own in
        agrees*) assert_eq "tuned: $d applied/elevator kept (the class wants bfq too)" "kept: bfq" "$(cat "$M/devices/$d/applied/elevator")" ;;
        *) assert_match "tuned: $d applied/elevator is deferred" '^deferred: left to tuned profile "vmtest"' \
               "$(cat "$M/devices/$d/applied/elevator")" ;;
    esac
done
assert_match "tuned: $NV and sda are deferred (their classes want none, mq-deadline)" '^deferred:.*\|deferred:' \
    "$(cat "$M/devices/$NV/owner/elevator")|$(cat "$M/devices/sda/owner/elevator")"
note "tuned: $NV explain: $(grep 'owner-' "$M/devices/$NV/explain" | head -n 1)"
if tuned-adm verify >/tmp/verify.txt 2>&1; then pass "tuned: tuned-adm verify passes (blkmqd left the profile's elevators)"
else fail "tuned: tuned-adm verify passes" "$(tail -n 5 /tmp/verify.txt | tr '\n' '|'; grep -i elevator /var/log/tuned/tuned.log 2>/dev/null | tail -n 3 | tr '\n' '|')"; fi
if journal_has $DECISION "DEVICE=$NV" 'BLKMQD_KNOB=elevator' 'BLKMQD_SOURCE=tuned profile .*vmtest.* elevator=bfq .*' 'PRIORITY=5'; then
    pass "tuned: the deferring journal line (a notice) carries BLKMQD_KNOB=elevator and BLKMQD_SOURCE="
else
    fail "tuned: a journal notice for $NV with BLKMQD_KNOB=elevator, BLKMQD_SOURCE=" \
        "$(journalctl -o json -u "$UNIT" --no-pager DEVICE=$NV | grep -i owner- | head -n 2 | cut -c1-600)"
fi
assert_match "tuned: metric blkmqd_applied state=deferred for $NV's elevator" 'state="deferred"' \
    "$(grep '^blkmqd_applied{' "$M/metrics" | grep "\"$NV\"" | grep 'knob="elevator"')"
st=$(blkmqctl status 2>&1) || true
note "tuned: blkmqctl status: $(printf '%s' "$st" | tr '\n' '|')"
assert_match "tuned: blkmqctl status has an OWNER column saying deferred" 'OWNER.*\|.*deferred elevator' "$(printf '%s' "$st" | tr '\n' '|')"
tuned_off "tuned"
assert_ok "tuned: systemctl stop blkmqd" systemctl stop "$UNIT"
AFTER=$(snapshot_values $ALL)
assert_eq "tuned, tuned-adm off, stop: every disk at its boot value" "$BOOT" "$AFTER"
[ "$BOOT" != "$AFTER" ] && printf '%s\n' "$BOOT" >/tmp/b && printf '%s\n' "$AFTER" >/tmp/a && diff /tmp/b /tmp/a | sed 's/^/# /'

# The same with DeferTo=none ("override tuned on these disks"): blkmqd writes over the profile;
# tuned-adm off then puts back what tuned saw, over blkmqd's values or onto them (nvme: none);
# the stop puts back nothing tuned left: tuned is no longer active, its bfq no longer right.
tuned_on "tuned, DeferTo=none"
mkdir -p /etc/blkmqd/blkmqd.conf.d
printf '[Manager]\nDeferTo=none\n' >/etc/blkmqd/blkmqd.conf.d/50-vmtest.conf
assert_ok "DeferTo=none: systemctl start blkmqd" systemctl start "$UNIT"
wait_for_cmd 10 tree_complete >/dev/null || true
assert_ne "DeferTo=none: $NV no longer on tuned's bfq" bfq "$(elevator "$NV")"
assert_match "DeferTo=none: $NV owner/elevator: overridden, naming the profile" '^overridden: tuned profile "vmtest"' \
    "$(cat "$M/devices/$NV/owner/elevator")"
assert_fail "DeferTo=none: tuned-adm verify fails (blkmqd wrote over the profile, as configured)" tuned-adm verify
tuned_off "DeferTo=none"
assert_ok "DeferTo=none: systemctl stop blkmqd" systemctl stop "$UNIT"
AFTER=$(snapshot_values $ALL)
assert_eq "DeferTo=none, tuned-adm off, stop: every disk at its boot value (never tuned's bfq put back)" "$BOOT" "$AFTER"
[ "$BOOT" != "$AFTER" ] && printf '%s\n' "$BOOT" >/tmp/b && printf '%s\n' "$AFTER" >/tmp/a && diff /tmp/b /tmp/a | sed 's/^/# /'
assert_match "DeferTo=none: the stop says why tuned's bfq is not put back" 'came from tuned profile "vmtest".*which no longer sets it' \
    "$(journalctl -u "$UNIT" --no-pager -o cat DEVICE="$NV" | grep 'not put back' | tail -n 1)"
rm -f /etc/blkmqd/blkmqd.conf.d/50-vmtest.conf
systemctl stop tuned.service
