#!/bin/sh
# blkmqd as a user runs it: its Debian package installed with `apt install ./blkmqd.deb`
# (built by tests/package/build-deb.sh with dpkg-buildpackage), which enables and starts it;
# run by systemd (PID 1) next to systemd-udevd and journald, under the shipped unit's sandbox
# (units/blkmqd.service.in); at the end a reinstall (the upgrade path) and `apt purge`,
# with a Fedora-style 60-block-scheduler.rules (bfq for sd*) where a distribution ships it,
# /usr/lib/udev/rules.d (a distribution default: blkmqd corrects it, with one warning; tuned,
# the admin's choice, is tests/vm/systemd/owners.sh).
# One boot for every service and package check (docs/VM-HARNESS.md, "Full-distro flavour").
# 59-vmtest-slow-sd.rules holds a scsi_debug disk's "add" in udev for 20 s before the
# scheduler rule writes bfq, so that the last part (a disk appears while blkmqd is stopped,
# blkmqd starts) has blkmqd's coldplug meet a disk udev has not finished.
# smp: 2
# mem: 1024
# timeout: 600
# file: systemd/files/60-block-scheduler.rules:/usr/lib/udev/rules.d/60-block-scheduler.rules
# file: systemd/files/59-vmtest-slow-sd.rules:/etc/udev/rules.d/59-vmtest-slow-sd.rules
# disk: d0 64M
# disk: d1 64M
# disk: n0 64M
# qemu: -device virtio-scsi-pci,id=scsi0,num_queues=2
# qemu: -drive if=none,id=d0,file={disk:d0},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d0,bus=scsi0.0,rotation_rate=7200,serial=rot0
# qemu: -drive if=none,id=d1,file={disk:d1},format=raw,cache=none,aio=threads
# qemu: -device scsi-hd,drive=d1,bus=scsi0.0,rotation_rate=1,serial=ssd0
# qemu: -drive if=none,id=n0,file={disk:n0},format=raw,cache=none,aio=threads
# qemu: -device nvme,serial=nv0,drive=n0,max_ioqpairs=2
. /opt/vmtest/guest-lib.sh

M=$BLKMQD_MOUNT
UNIT=blkmqd.service
DECISION=4857cd2c47454447b8702c80b5468310
WRITE=fc294015e7e541848f4f80885a4f974e
PROM=/var/lib/prometheus/node-exporter/blkmqd.prom
note "kernel $(uname -r), $(nproc) CPUs, systemd $(systemctl --version | head -n1 | cut -d' ' -f2), uptime $(cut -d' ' -f1 /proc/uptime)s"

prop() { systemctl show -P "$1" "$UNIT"; }
main_pid() { prop MainPID; }
# Whole disks with a medium, as the tree lists them (README: size 0 is not listed).
disks() {
    for d in /sys/block/*; do
        [ "$(cat "$d/size")" != 0 ] && basename "$d"
    done | sort
}
# Every runtime value blkmqd may change, one "path value" line each.
snapshot_values() {    # [DISK...] (default: every disk now)
    for d in ${*:-$(disks)}; do
        for a in scheduler rq_affinity nr_requests; do
            printf '%s %s\n' "/sys/block/$d/queue/$a" "$(cat "/sys/block/$d/queue/$a")"
        done
    done
    for f in /proc/irq/[0-9]*/smp_affinity_list; do printf '%s %s\n' "$f" "$(cat "$f")"; done
}
is_mounted() { grep -q " $M fuse" /proc/self/mounts; }
wait_active() {     # TIMEOUT_S: the unit is active and has a main PID
    wait_for_cmd "$1" sh -c "[ \"\$(systemctl is-active $UNIT)\" = active ] && [ \"\$(systemctl show -P MainPID $UNIT)\" != 0 ]"
}
tree_complete() {   # every disk has devices/<disk>/class right now
    _missing=""
    for d in $(disks); do
        cat "$M/devices/$d/class" >/dev/null 2>&1 || _missing="$_missing $d"
    done
    [ -z "$_missing" ] || { echo "$_missing"; return 1; }
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

assert_eq "systemd-udevd is running" active "$(systemctl is-active systemd-udevd.service)"
assert_eq "journald is running" active "$(systemctl is-active systemd-journald.service)"
assert_file "the package is in the image" "$VMTEST_DEB"
assert_eq "not installed before apt install" "" "$(dpkg-query -W -f='${Status}' blkmqd 2>/dev/null)"

# multi-user.target does not wait for udev's coldplug (modules load, disks probe meanwhile)
udevadm settle --timeout=60 || note "udevadm settle timed out"
for d in sda sdb nvme0n1; do
    wait_for_file /sys/block/$d 30 || fail "disk $d appeared"
done
DISKS=$(disks)
BEFORE=$(snapshot_values $DISKS)
note "disks: $(echo $DISKS)"
elevator() { sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$1/queue/scheduler"; }
for d in sda sdb; do
    assert_eq "udev's 60-block-scheduler.rules set bfq on $d at boot" bfq "$(elevator $d)"
done

# QEMU's disks stand in for the media their flags say (rotation_rate=, the root disk's
# rotational=1): trusted, as the suites do (docs/TESTING.md "Speed in the suites"); the shipped
# defaults leave a virtio_blk or virtio_scsi disk's flag untrusted (policies/defaults.c)
mkdir -p /etc/blkmqd/blkmqd.conf.d
printf '[Speed]\nTrustRotational=virtio_blk virtio_scsi\n' >/etc/blkmqd/blkmqd.conf.d/00-vmtest-trust.conf

# ---- apt install ./blkmqd.deb: enabled and started, returns when the tree is complete -------
cd /opt/vmtest
# (offline: every dependency is in the image, so apt has nothing to download)
if DEBIAN_FRONTEND=noninteractive apt-get install -y ./blkmqd.deb >/tmp/apt.log 2>&1; then
    pass "apt install ./blkmqd.deb"
else fail "apt install ./blkmqd.deb" "$(tail -n 15 /tmp/apt.log | tr '\n' '|')"; fi
cd /
sed 's/^/# apt: /' /tmp/apt.log | tail -n 8
missing=$(tree_complete) && pass "right after apt install every disk has devices/<disk>/class ($(disks | tr '\n' ' '))" ||
    fail "right after apt install every disk has devices/<disk>/class" "missing:$missing (READY=1 before the tree was complete)"
assert_eq "the package's postinst started the unit" active "$(systemctl is-active "$UNIT")"
assert_eq "... and enabled it, like Debian's own daemons" enabled "$(systemctl is-enabled "$UNIT")"
for f in /usr/sbin/blkmqd /usr/bin/blkmqctl /lib/systemd/system/blkmqd.service /usr/lib/tmpfiles.d/blkmqd.conf \
         /usr/lib/systemd/catalog/blkmqd.catalog /etc/blkmqd/blkmqd.conf; do
    assert_file "package: $f" "$f"
done
# (the image has no man-db: its Documentation= man: links are the one expected complaint)
v=$(systemd-analyze verify "$UNIT" 2>&1 | grep -v "Command 'man .*' failed") || true
assert_eq "systemd-analyze verify $UNIT: no complaints" "" "$v"
PID=$(main_pid)
journalctl -u "$UNIT" --no-pager -o cat | sed 's/^/# journal: /' | head -n 40

# The sandbox as it applies to the running daemon (units/blkmqd.service.in explains each line)
st=/proc/$PID/status
assert_eq "CapEff is CAP_SYS_ADMIN only (AmbientCapabilities= with SecureBits=noroot)" \
    0000000000200000 "$(awk '/^CapEff/ {print $2}' "$st")"
assert_eq "CapBnd is CAP_SYS_ADMIN only (CapabilityBoundingSet=)" \
    0000000000200000 "$(awk '/^CapBnd/ {print $2}' "$st")"
assert_eq "NoNewPrivs (NoNewPrivileges=)" 1 "$(awk '/^NoNewPrivs/ {print $2}' "$st")"
assert_eq "seccomp filter on (SystemCallFilter=)" 2 "$(awk '/^Seccomp:/ {print $2}' "$st")"
assert_eq "the daemon shares PID 1's mount namespace" "$(readlink /proc/1/ns/mnt)" "$(readlink /proc/$PID/ns/mnt)"
assert_eq "the daemon shares PID 1's network namespace (uevents)" "$(readlink /proc/1/ns/net)" "$(readlink /proc/$PID/ns/net)"

# What SecureBits= does to uid 0 across execve() without AmbientCapabilities= (the unit's
# comment cites this): noroot-locked alone keeps CapEff, noroot empties it.
capeff_under() {
    systemd-run --wait --pipe --quiet -p "SecureBits=$1" -p CapabilityBoundingSet=CAP_SYS_ADMIN \
        grep CapEff /proc/self/status 2>&1 | awk '{print $2}'
}
note "systemd-run -p SecureBits=noroot-locked (no ambient): CapEff $(capeff_under noroot-locked)"
assert_eq "SecureBits=noroot noroot-locked without AmbientCapabilities= leaves CapEff 0 (why the unit has it)" \
    0000000000000000 "$(capeff_under 'noroot noroot-locked')"

# ---- the tree outside the service -----------------------------------------------------
assert_ok "PID 1's mount table has the FUSE tree" grep -q " $M fuse" /proc/1/mounts
for d in $(disks); do
    c=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$M/devices/$d/class" 2>&1) || true
    assert_match "user nobody reads devices/$d/class" '^[a-z-]+$' "$c"
done
rc=0; out=$(blkmqctl status 2>&1) || rc=$?
assert_eq "blkmqctl status exits 0" 0 "$rc"
note "blkmqctl status: $(printf '%s' "$out" | tr '\n' '|')"
if systemctl is-active -q prometheus-node-exporter.service ||
    systemctl restart prometheus-node-exporter.service; then
    wait_for_cmd 20 sh -c 'curl -sf http://127.0.0.1:9100/metrics >/tmp/ne.txt'
    assert_match "node_exporter's textfile collector serves blkmqd_* from /var/lib/prometheus/node-exporter/blkmqd.prom" \
        '^blkmqd_' "$(grep '^blkmqd_' /tmp/ne.txt | head -n 1)"
    assert_eq "node_exporter: no filesystem series of the fuse.blkmqd tree (excluded)" "" \
        "$(grep '^node_filesystem_[a-z_]*{.*mountpoint="'"$M"'"' /tmp/ne.txt)"
    assert_eq "node_exporter: no textfile scrape error" "node_textfile_scrape_error 0" \
        "$(grep '^node_textfile_scrape_error' /tmp/ne.txt)"
    # node_exporter's scrape while blkmqd is frozen (SIGSTOP, the unit's WatchdogSec=30s far
    # off): the metrics file is a regular file, so the scrape neither waits on blkmqd nor loses
    # its series (through the FUSE tree it waited until the watchdog's kill, then failed:
    # node_textfile_scrape_error 1, no blkmqd_*)
    PID=$(main_pid)
    kill -STOP "$PID"
    t0=$(date +%s.%N)
    rc=0; curl -sf --max-time 20 http://127.0.0.1:9100/metrics >/tmp/ne-stop.txt || rc=$?
    t1=$(date +%s.%N)
    st=$(awk '{ print $3 }' /proc/"$PID"/stat)
    kill -CONT "$PID"
    note "SIGSTOP: node_exporter answered in $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s (curl rc $rc)"
    assert_eq "SIGSTOP: node_exporter's scrape answers (curl --max-time 20)" 0 "$rc"
    assert_eq "SIGSTOP: ... while blkmqd is still stopped (state T, the same PID)" "T $PID" "$st $(main_pid)"
    assert_match "SIGSTOP: ... with blkmqd's series from the metrics file" '^blkmqd_build_info' \
        "$(grep '^blkmqd_build_info' /tmp/ne-stop.txt)"
    assert_eq "SIGSTOP: ... and no textfile scrape error" "node_textfile_scrape_error 0" \
        "$(grep '^node_textfile_scrape_error' /tmp/ne-stop.txt)"
else
    fail "prometheus-node-exporter.service runs"
fi

# ---- the journal ------------------------------------------------------------------------
journalctl -o json -u "$UNIT" --no-pager MESSAGE_ID=$DECISION | head -n 1 >/tmp/j1.json
assert_match "journal: CODE_FILE is the caller's, once (not an array)" '"CODE_FILE":"[^"]*pipeline.c"' "$(cat /tmp/j1.json)"
for d in $(disks); do
    if journal_has $DECISION "DEVICE=$d" 'BLKMQD_CLASS=[a-z-]+' 'BLKMQD_RULE=[a-z0-9_-]+'; then
        pass "journal: a decision record (MESSAGE_ID=$DECISION) for $d carries DEVICE=, BLKMQD_CLASS=, BLKMQD_RULE="
    else
        fail "journal: a decision record for $d with DEVICE=$d, BLKMQD_CLASS=, BLKMQD_RULE=, MESSAGE_ID=$DECISION" \
            "$(journalctl -o json -u "$UNIT" --no-pager MESSAGE_ID=$DECISION | head -n 2 | cut -c1-600)"
    fi
    # at the default level a disk costs one line unless blkmqd writes to it
    n_info=$(journalctl -u "$UNIT" --no-pager -o cat -p info DEVICE="$d" | wc -l)
    n_notice=$(journalctl -u "$UNIT" --no-pager -o cat -p notice DEVICE="$d" | wc -l)
    note "journal: $d: $n_info line(s) at info and above, $n_notice at notice and above"
    if [ "$n_notice" = 0 ]; then assert_eq "journal: $d, where nothing was written, costs one line" 1 "$n_info"; fi
done
# every write is one notice record saying what and from what to what; journalctl -x explains it
if journal_has $WRITE 'PRIORITY=5' 'DEVICE=[a-z0-9]+' 'BLKMQD_KNOB=[a-z_.-]+' 'BLKMQD_OLD_VALUE=[^"]+' 'BLKMQD_NEW_VALUE=[^"]+'; then
    pass "journal: a write record (MESSAGE_ID=$WRITE, notice) with DEVICE=, BLKMQD_KNOB=, BLKMQD_OLD_VALUE=, BLKMQD_NEW_VALUE="
else fail "journal: a write record with DEVICE=, BLKMQD_KNOB=, old and new values at notice" \
    "$(journalctl -o json -u "$UNIT" --no-pager MESSAGE_ID=$WRITE | head -n 2 | cut -c1-600)"; fi
assert_match "journalctl -x explains the write record (the package's catalog)" 'Subject: blkmqd wrote [a-z_.-]+ of [a-z0-9]+' \
    "$(journalctl -x -u "$UNIT" --no-pager MESSAGE_ID=$WRITE | head -n 20)"
assert_match "journalctl -u blkmqd -p notice lists the writes" ': elevator [a-z-]+ -> [a-z-]+' \
    "$(journalctl -u "$UNIT" --no-pager -o cat -p notice)"

# ---- udev rules that also set the scheduler (item 5) -----------------------------------
ROT=$(for d in sda sdb; do [ "$(cat /sys/block/$d/queue/rotational)" = 1 ] && echo $d; done | head -n 1)
SSD=$(for d in sda sdb; do [ "$(cat /sys/block/$d/queue/rotational)" = 0 ] && echo $d; done | head -n 1)
note "rotating: $ROT, non-rotating: $SSD (SCSI scan order varies)"
# scheduler writes blkmqd logged for DISK (one record each, apply.c: "<disk>: elevator X -> Y (rule R)")
writes() { journalctl -u "$UNIT" --no-pager -o cat DEVICE="$1" MESSAGE_ID=$WRITE BLKMQD_KNOB=elevator | grep -cE ': elevator [^ ]+ -> ' || true; }
check_udev_disk() {     # DISK WHEN: blkmqd saw udev's bfq, says so, wrote at most once
    d=$1; w=$2
    expl=$(grep -E 'elevator=' "$M/devices/$d/explain" | grep -v 'rule config' | head -n 1)
    note "$w: $d class $(read_attr "$M/devices/$d/class"), scheduler $(cat /sys/block/$d/queue/scheduler), applied $(read_attr "$M/devices/$d/applied/elevator")"
    note "$w: $d explain: $expl"
    # what udev set is bfq: either the elevator blkmqd found, or named as the one before its switch
    assert_match "$w: $d explain names the elevator udev set (bfq) and what the class wants" \
        '(elevator=bfq|\(bfq before blkmqd switched it\)).*(wanted=[a-z,-]+|any elevator is fine)' "$expl"
    # blkmqd's very first write to the disk's elevator, if any, was over the rule's result
    # (not a state udev was about to change: that would have been followed by a fight)
    first=$(journalctl -u "$UNIT" --no-pager -o json MESSAGE_ID=$WRITE DEVICE="$d" BLKMQD_KNOB=elevator | head -n 1)
    [ -z "$first" ] || assert_match "$w: $d blkmqd's first elevator write was over udev's bfq (BLKMQD_OLD_VALUE=bfq)" \
        '"BLKMQD_OLD_VALUE":"bfq"' "$first"
    assert_fail "$w: $d applied/elevator: no 'changed externally' (blkmqd did not race the rule)" \
        grep -q 'changed externally' "$M/devices/$d/applied/elevator"
    n=$(writes "$d")
    if [ "$(elevator "$d")" = bfq ]; then
        assert_eq "$w: $d keeps udev's bfq: blkmqd wrote nothing" 0 "$n"
    else
        assert_eq "$w: $d the class's choice replaced bfq, written once" 1 "$n"
        assert_match "$w: $d owner/elevator: corrected, naming the distribution's rule" \
            '^corrected: udev rule /usr/lib/udev/rules\.d/60-block-scheduler\.rules:[0-9]+ ATTR\{queue/scheduler\}="bfq" \(a distribution default\)$' \
            "$(cat "$M/devices/$d/owner/elevator")"
    fi
}
# blkmqd names the rule at start (facts/agents.c), so the admin knows who else writes it, and
# that it is a distribution's default it corrects: one warning (not one per disk)
assert_match "start: the journal names 60-block-scheduler.rules as a distribution default blkmqd corrects" \
    '/usr/lib/udev/rules\.d/60-block-scheduler\.rules:[0-9]+: .*the queue scheduler \(elevator\), which blkmqd manages too; this is a distribution default \(DeferTo=admin\): blkmqd writes its own value over it' \
    "$(journalctl -u "$UNIT" --no-pager -o cat -p warning | grep 'block-scheduler' | head -n 1)"
assert_eq "start: one warning names 60-block-scheduler.rules" 1 \
    "$(journalctl -u "$UNIT" --no-pager -o cat -p warning | grep -c '60-block-scheduler\.rules')"
check_udev_disk "$ROT" start
check_udev_disk "$SSD" start
assert_ne "$SSD (fast-multiqueue) does not keep bfq" bfq "$(elevator "$SSD")"

# ---- systemctl reload: synchronous, re-reads the configuration ----------------------------
note "rotating disk: $ROT ($(cat "$M/devices/$ROT/class"), scheduler $(cat /sys/block/$ROT/queue/scheduler))"
r0=$(read_attr "$M/reload")
case $r0 in ""|*[!0-9]*) fail "reload reads a count" "$r0"; r0=0 ;; esac
mkdir -p /etc/blkmqd/blkmqd.conf.d
printf '[Device:test]\nMatchName=%s\nElevator=none\n' "$ROT" >/etc/blkmqd/blkmqd.conf.d/50-vmtest.conf
assert_ok "systemctl reload ([Device:test] Elevator=none for $ROT)" systemctl reload "$UNIT"
assert_eq "reload count +1 when systemctl reload returned" $((r0 + 1)) "$(cat "$M/reload")"
assert_match "$ROT runs none when systemctl reload returned" '\[none\]' "$(cat /sys/block/$ROT/queue/scheduler)"
note "$ROT explain: $(tr '\n' '|' <"$M/devices/$ROT/explain")"
printf '[Device:test]\nMatchName=%s\nElevator=none\nNoSuchKey=1\n[Manager\n' "$ROT" >/etc/blkmqd/blkmqd.conf.d/50-vmtest.conf
assert_fail "systemctl reload fails on a bad configuration" systemctl reload "$UNIT"
assert_eq "still active after a rejected reload" active "$(systemctl is-active "$UNIT")"
assert_eq "reload count unchanged by the rejected reload" $((r0 + 1)) "$(cat "$M/reload")"
rm -f /etc/blkmqd/blkmqd.conf.d/50-vmtest.conf
assert_ok "systemctl reload (configuration removed again)" systemctl reload "$UNIT"
assert_fail "$ROT: [Device:test] no longer applies when systemctl reload returned" grep -q 'rule config' "$M/devices/$ROT/explain"
assert_ne "$ROT: none (the removed section's) no longer runs" none "$(elevator $ROT)"

# ---- not_listed under systemd-udevd ------------------------------------------------------
# A partition added with addpart (BLKPG) reaches blkmqd as udev's partition "add" event and
# gets its line in not_listed; delpart's "remove" takes the line away (the udev monitor takes
# partition events for these lines only: no gather, no evaluation).
P="${SSD}1"
addpart "/dev/$SSD" 1 2048 8192
wait_for_match 30 "$M/not_listed" "^$P: a partition of $SSD" || true
assert_match "not_listed names the partition udev announced" "^$P: a partition of $SSD" "$(cat "$M/not_listed")"
delpart "/dev/$SSD" 1
wait_for_cmd 30 sh -c "! grep -q '^$P:' '$M/not_listed'" || true
assert_eq "not_listed drops the partition udev removed" "" "$(grep "^$P:" "$M/not_listed")"

# ---- BPF statistics under the sandbox, on fio load -------------------------------------
# dispatched/completions: BPF on both kernels (debugfs lost them in 5.16); runs: debugfs `run`
# up to 6.7, BPF fentry/kprobe after (docs/BPF.md). runs only counts dispatches through an
# elevator, so they are read on the rotating disk (mq-deadline), dispatches on the NVMe one.
NV=$(for d in $(disks); do case $d in nvme*) echo "$d";; esac; done | head -n 1)
note "version: $(tr '\n' '|' <"$M/version")"
note "$NV stats_source: $(tr '\n' '|' <"$M/devices/$NV/stats_source")"
assert_match "statistics providers include bpf (loaded under the unit's sandbox)" 'bpf' "$(cat "$M/version")"
assert_match "$NV dispatched from bpf" '^dispatched bpf' "$(grep '^dispatched' "$M/devices/$NV/stats_source")"
case $(uname -r) in
    6.1.*) assert_match "$ROT runs from debugfs (6.1 has hctx run)" '^runs debugfs' "$(grep '^runs' "$M/devices/$ROT/stats_source")" ;;
    *) assert_match "$ROT runs from bpf (no debugfs run since 6.8)" '^runs bpf' "$(grep '^runs' "$M/devices/$ROT/stats_source")" ;;
esac
completed() { awk '{s += $3} END {print s + 0}' "$M/devices/$1/completions"; }
d0=$(sum_ints "$M"/devices/$NV/hctx/*/dispatched) || true
c0=$(completed "$NV")
r0=$(sum_ints "$M"/devices/$ROT/hctx/*/runs) || true
for d in $NV $ROT; do
    fio --name=r --filename=/dev/$d --direct=1 --rw=randread --bs=4k --iodepth=8 --ioengine=libaio \
        --time_based --runtime=3 --numjobs=2 --group_reporting >/tmp/fio-$d.txt 2>&1 &
done
wait
note "fio $NV: $(grep -E 'IOPS=' /tmp/fio-$NV.txt | head -n1); $ROT: $(grep -E 'IOPS=' /tmp/fio-$ROT.txt | head -n1)"
d1=$(sum_ints "$M"/devices/$NV/hctx/*/dispatched) || true
c1=$(completed "$NV")
r1=$(sum_ints "$M"/devices/$ROT/hctx/*/runs) || true
assert_int "$NV Σ dispatched after fio" "$d1"
[ "$d1" -gt "${d0:-0}" ] 2>/dev/null && pass "$NV Σ hctx/*/dispatched rose under fio ($d0 -> $d1)" ||
    fail "$NV Σ hctx/*/dispatched rose under fio" "$d0 -> $d1"
[ "$c1" -gt "$c0" ] 2>/dev/null && pass "$NV completions rose under fio ($c0 -> $c1)" ||
    fail "$NV completions rose under fio" "$c0 -> $c1; $(tr '\n' '|' <"$M/devices/$NV/completions")"
assert_int "$ROT Σ runs after fio" "$r1"
[ "$r1" -gt "${r0:-0}" ] 2>/dev/null && pass "$ROT Σ hctx/*/runs rose under fio ($r0 -> $r1)" ||
    fail "$ROT Σ hctx/*/runs rose under fio" "$r0 -> $r1"

# ---- systemd-analyze security ----------------------------------------------------------
for u in blkmqd.service irqbalance.service tuned.service; do
    s=$(systemd-analyze security "$u" 2>/dev/null | tail -n 1)
    note "systemd-analyze security $u: $s"
done
score=$(systemd-analyze security "$UNIT" 2>/dev/null | sed -n 's/.*exposure level for .*: \([0-9.]*\).*/\1/p')
assert_match "blkmqd.service exposure is a number" '^[0-9]+\.[0-9]+$' "$score"
awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }' && pass "blkmqd.service exposure $score <= 4.0" ||
    fail "blkmqd.service exposure <= 4.0" "$score"

# ---- kill -9: Restart=on-failure, stale mount recovered, originals still restorable -------
CHANGED=$(snapshot_values $DISKS)
[ "$CHANGED" != "$BEFORE" ] && pass "blkmqd changed something (the stop checks below can fail)" ||
    fail "blkmqd changed something" "no value differs from before the start"
n0=$(prop NRestarts)
kill -9 "$PID"
wait_for_cmd 30 sh -c "p=\$(systemctl show -P MainPID $UNIT); [ \"\$p\" != 0 ] && [ \"\$p\" != $PID ] && [ \"\$(systemctl is-active $UNIT)\" = active ]"
assert_eq "kill -9: restarted once (NRestarts)" $((n0 + 1)) "$(prop NRestarts)"
PID2=$(main_pid)
assert_ne "kill -9: a new main PID" "$PID" "$PID2"
missing=$(tree_complete) && pass "kill -9: the tree is back and complete" || fail "kill -9: tree complete again" "missing:$missing"
assert_eq "kill -9: one FUSE mount at $M (the dead one was detached)" 1 "$(grep -c " $M fuse" /proc/self/mounts)"
assert_ok "systemctl stop after the crash" systemctl stop "$UNIT"
AFTER=$(snapshot_values $DISKS)
assert_eq "kill -9 then stop: every original value back" "$BEFORE" "$AFTER"
[ "$BEFORE" != "$AFTER" ] && printf '%s\n' "$BEFORE" >/tmp/b && printf '%s\n' "$AFTER" >/tmp/a &&
    diff /tmp/b /tmp/a | sed 's/^/# /'
assert_fail "stop: $M is not mounted" is_mounted
assert_eq "stop: inactive" inactive "$(systemctl is-active "$UNIT")"

# ---- SIGSTOP: the watchdog kills and restarts it (short WatchdogSec from a drop-in) -----
mkdir -p /run/systemd/system/$UNIT.d
printf '[Service]\nWatchdogSec=5s\nTimeoutAbortSec=5s\n' >/run/systemd/system/$UNIT.d/vmtest-watchdog.conf
systemctl daemon-reload
assert_ok "start with WatchdogSec=5s" systemctl start "$UNIT"
wait_for_cmd 5 tree_complete >/dev/null
PID=$(main_pid)
n0=$(prop NRestarts)
kill -STOP "$PID"
wait_for_cmd 40 sh -c "p=\$(systemctl show -P MainPID $UNIT); [ \"\$p\" != 0 ] && [ \"\$p\" != $PID ] && [ \"\$(systemctl is-active $UNIT)\" = active ]"
n1=$(prop NRestarts)
[ "$n1" -gt "$n0" ] && pass "SIGSTOP: restarted (NRestarts $n0 -> $n1)" || fail "SIGSTOP: restarted" "NRestarts $n0 -> $n1"
journalctl -u "$UNIT" --no-pager -o short-monotonic -S "-60s" | grep -Ei 'watchdog|main process|restart|started|READY' | sed 's/^/# journal: /'
assert_match "SIGSTOP: systemd logged the watchdog timeout" 'Watchdog timeout' \
    "$(journalctl -u "$UNIT" --no-pager -o cat | grep -i watchdog | tail -n 3)"
sleep 6
assert_eq "SIGSTOP: no further restart 6 s later (one watchdog timeout, not a loop)" "$n1" "$(prop NRestarts)"
missing=$(tree_complete) && pass "SIGSTOP: the tree is back and complete" || fail "SIGSTOP: tree complete again" "missing:$missing"
rm -f /run/systemd/system/$UNIT.d/vmtest-watchdog.conf
systemctl daemon-reload

# ---- a loop device: a virtual device, listed and explained, not written --------------------
# (VirtualDevices=list, the shipped default: a container host's loop devices are left alone)
truncate -s 16M /tmp/vmtest-loop.img
LOOP=$(losetup -f --show /tmp/vmtest-loop.img 2>/dev/null) || LOOP=""
LOOP=${LOOP#/dev/}
if [ -n "$LOOP" ]; then
    echo mq-deadline >/sys/block/$LOOP/queue/scheduler 2>/dev/null || true
    lbefore=$(cat /sys/block/$LOOP/queue/scheduler)
    assert_ok "loop: devices/$LOOP is listed" wait_for_file "$M/devices/$LOOP/class" 10
    assert_eq "loop: class" stacked "$(read_attr "$M/devices/$LOOP/class")"
    assert_eq "loop: facts/virtual" 1 "$(read_attr "$M/devices/$LOOP/facts/virtual")"
    assert_match "loop: explain says why it is not written" 'driver=loop -> a virtual device: .*listed, not written' \
        "$(cat "$M/devices/$LOOP/explain")"
    assert_eq "loop: queue/scheduler not written" "$lbefore" "$(cat /sys/block/$LOOP/queue/scheduler)"
    losetup -d /dev/$LOOP
    assert_ok "loop: gone from the tree after losetup -d" wait_for_gone "$M/devices/$LOOP" 10
else
    fail "loop: losetup -f" "no loop device"
fi

# ---- systemctl stop: every original back, unmounted ------------------------------------
assert_ok "systemctl stop" systemctl stop "$UNIT"
assert_eq "stop: every original value back (sd*: udev's bfq)" "$BEFORE" "$(snapshot_values $DISKS)"
assert_fail "stop: $M is not mounted" is_mounted

# ---- a disk appears while blkmqd is stopped; blkmqd starts during udev's "add" ------------
# With udevd, coldplug must not take a disk udev has not finished: the rule would overwrite
# blkmqd's choice (or blkmqd the rule's) depending on timing.
# two submit queues, no host_max_queue: fast-multiqueue, which wants none, not bfq. scsi_debug
# stands in for a hardware disk here: opted in (it is a virtual device, left alone by default)
mkdir -p /etc/blkmqd/blkmqd.conf.d
printf '[Manager]\nVirtualDevices=manage\n' >/etc/blkmqd/blkmqd.conf.d/00-vmtest-virtual-devices.conf
modprobe scsi_debug dev_size_mb=16 max_luns=1 num_tgts=1 submit_queues=2 2>&1 | sed 's/^/# /'
NEW=""
for i in $(seq 1 100); do
    NEW=$(for d in /sys/block/sd*; do b=${d##*/}; printf '%s\n' "$DISKS" | grep -qx "$b" || echo "$b"; done | head -n 1)
    [ -n "$NEW" ] && break
    usleep 50000
done
assert_match "scsi_debug added a disk" '^sd[a-z]+$' "$NEW"
init=$(udevadm info -q property -n "/dev/$NEW" 2>/dev/null | grep -c '^ID_SERIAL=' || true)
note "$NEW: udev done with it before the start: $init (59-vmtest-slow-sd.rules holds it 20 s)"
assert_ok "systemctl start while udev still processes $NEW's add" systemctl start "$UNIT"
udevadm settle --timeout=90 || true
assert_ok "run time: devices/$NEW appears" wait_for_file "$M/devices/$NEW/class" 60
assert_match "run time: blkmqd left $NEW to udev's add event at its start" 'Not initialized by udev yet' \
    "$(journalctl -u "$UNIT" --no-pager -o cat DEVICE="$NEW" | head -n 3)"
check_udev_disk "$NEW" "run time"
# The rule again (udev add events, as from `udevadm trigger` or a rebind): it writes bfq over
# blkmqd's choice. No write war: blkmqd reports it once and leaves it (Reassert=no).
for d in $ROT $SSD; do
    n1=$(writes "$d")
    udevadm trigger --action=add --settle "/sys/block/$d" 2>/dev/null || udevadm settle
    sleep 1
    e1=$(elevator "$d")
    sleep 3
    note "after a udev add event: $d $(cat /sys/block/$d/queue/scheduler), applied $(read_attr "$M/devices/$d/applied/elevator")"
    assert_eq "udev add event again: $d scheduler stable over 3 s" "$e1" "$(elevator "$d")"
    assert_eq "udev add event again: $d no further blkmqd write" "$n1" "$(writes "$d")"
done
assert_ok "systemctl stop" systemctl stop "$UNIT"
assert_eq "stop: every original value back, again" "$BEFORE" "$(snapshot_values $DISKS)"
journalctl -u "$UNIT" --no-pager -o short-monotonic | tail -n 25 | sed 's/^/# journal: /'

# ---- the package: an upgrade over a running service, then apt purge ----------------------
BEFORE_ALL=$(snapshot_values $(disks))
assert_ok "systemctl start" systemctl start "$UNIT"
wait_for_file "$PROM" 10 || true
assert_file "the metrics file is in node_exporter's directory" "$PROM"
# a reinstall runs the maintainer scripts of an upgrade: prerm upgrade, postinst configure (restart)
pid0=$(main_pid)
if dpkg -i "$VMTEST_DEB" >/tmp/dpkg.log 2>&1; then pass "dpkg -i over the running service (the upgrade path)"
else fail "dpkg -i over the running service" "$(tail -n 10 /tmp/dpkg.log | tr '\n' '|')"; fi
assert_eq "upgrade: the service runs again" active "$(systemctl is-active "$UNIT")"
assert_ne "upgrade: restarted (a new main PID)" "$pid0" "$(main_pid)"
missing=$(tree_complete) && pass "upgrade: every disk in the tree again" || fail "upgrade: every disk in the tree again" "missing:$missing"
if DEBIAN_FRONTEND=noninteractive apt-get purge -y blkmqd >/tmp/apt.log 2>&1; then pass "apt purge blkmqd"
else fail "apt purge blkmqd" "$(tail -n 10 /tmp/apt.log | tr '\n' '|')"; fi
assert_ne "purge: the service is stopped" active "$(systemctl is-active "$UNIT" 2>/dev/null)"
assert_eq "purge: every value blkmqd changed is back" "$BEFORE_ALL" "$(snapshot_values $(disks))"
assert_fail "purge: $M is not mounted" is_mounted
for f in /var/lib/blkmqd "$PROM" /usr/sbin/blkmqd /etc/blkmqd/blkmqd.conf /lib/systemd/system/blkmqd.service; do
    assert_fail "purge: $f is gone" test -e "$f"
done
assert_eq "purge: dpkg knows no blkmqd" "" "$(dpkg-query -W -f='${Status}' blkmqd 2>/dev/null | grep -v not-installed)"
