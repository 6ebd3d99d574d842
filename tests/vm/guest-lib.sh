# SPDX-License-Identifier: GPL-2.0-or-later
# guest-lib.sh — helpers for blkmqd VM scenarios (busybox ash; sourced by every scenario).
#
# Output is TAP-like: "ok N - what", "not ok N - what", "ok N - what # SKIP why", comments
# start with "# ".  Assertions never abort the scenario (it runs under `sh -e`): they count
# and return 0.  An EXIT trap prints the summary line
#     # vmtest summary: scenario=NAME pass=P fail=F skip=S rc=RC
# and sets the exit code: 1 if any assertion failed, 77 if skip_all/need_blkmqd asked for a
# skip and nothing failed, otherwise the shell's own status (non-zero if `sh -e` aborted).
# A skip_all is a TAP point of its own ("ok N - SCENARIO: the rest # SKIP why"), or the plan
# "1..0 # SKIP why" when nothing was checked before it: the harness prints the TAP for meson
# (protocol 'tap'), which counts it as a skip, and .ci/run names it.
#
# API
#   assert_eq WHAT EXPECTED ACTUAL        string equality
#   assert_ne WHAT UNEXPECTED ACTUAL
#   assert_match WHAT REGEX ACTUAL        grep -E
#   assert_file WHAT PATH                 PATH exists
#   assert_ok WHAT CMD...                 CMD exits 0
#   assert_fail WHAT CMD...               CMD exits non-zero
#   pass WHAT / fail WHAT / skip WHAT WHY / note TEXT
#   wait_for_file PATH TIMEOUT_S          poll every 50 ms; 0 when it exists, 1 on timeout
#   wait_for_gone PATH TIMEOUT_S          poll until PATH no longer exists
#   wait_for_cmd TIMEOUT_S CMD...         poll until CMD succeeds
#   hmp CMD...                            ask the host to run a QEMU monitor command; 0 if it
#                                         reported success; output lines in $HMP_OUT
#   start_blkmqd ARGS...                  start $BLKMQD in the background, wait for
#                                         $BLKMQD_MOUNT/version (30 s); the suites' opt-ins
#                                         in the drop-in <config>.d/00-vmtest-suite.conf (the
#                                         --config given, else /etc/blkmqd/blkmqd.conf):
#                                         virtual devices (scsi_debug, null_blk, loop) managed,
#                                         QEMU's disks' rotational flags trusted; unless
#                                         BLKMQD_VIRTUAL=list (blkmqd's shipped defaults)
#   stop_blkmqd                           SIGTERM, wait for exit and unmount (10 s); prints the
#                                         log (all of it when a check failed while it ran)
#   have_blkmqd                           0 when the blkmqd binary was packed
#   blkmqd_checks FUNC                    run FUNC if blkmqd is present; otherwise remember
#                                         a skip (exit 77 at the end, or only a SKIP line
#                                         with --kernel-only)
#   skip_all REASON                       exit 77 now
#   read_attr PATH                        cat PATH, or "<missing>"
#   kernel_at_least MAJOR MINOR           0 when uname -r is MAJOR.MINOR or newer
#   hctx_count DISK                       number of /sys/block/DISK/mq/* directories
#   disk_by_model MODEL                   first /sys/block/sd* whose device/model matches
#   capture_fixture NAME DISK...          run tests/fixture/capture.sh in the guest and put
#                                         the tree as /mnt/host/NAME.tar on the 9p share
#                                         (harness --share HOSTDIR; capture-fixtures.sh unpacks)
#   wait_for_match TIMEOUT_S FILE ERE     poll until FILE's content matches ERE (grep -E)
#   sum_ints FILE...                      sum of the integers in FILEs; prints "NaN <file>: <v>"
#                                         and returns 1 when one is not a plain integer
#   sum_floats FILE...                    sum of the decimal numbers in FILEs (awk), same NaN rule
#   assert_int WHAT VALUE / assert_num    VALUE is a non-negative integer / decimal number
#   check_metrics WHAT FILE               `promtool check metrics` (header `# binary:
#                                         /usr/bin/promtool`), SKIP when promtool is not packed
#   nvme_tcp_setup                        network + nvmet-tcp target + nvme-tcp connect for
#                                         the scenarios with the NET_HEADER below; sets
#                                         NVME_INI_IF NVME_TGT_IF NVME_CTRL NVME_DISK NVME_PATH
#   nvme_tcp_connect [OPTS] / nvme_tcp_disconnect   again, e.g. with nr_io_queues=2
#   nbd_setup [OPTS]                      the same network, qemu-nbd in "tgt" and nbd-client
#                                         OPTS (e.g. -C 2) connecting /dev/nbd0; sets NBD_DISK
#   nvme_tcp_bond [OPTS]                  the initiator NIC and a third one (MAC ...:03) under an
#                                         active-backup bond0 with 10.77.0.1; connect again
#   netlink_facts                         print the netlink facts (route, links, channels) in
#                                         the <root>/netlink/facts format (iproute2 + ethtool)
#   speed_setup HCTX / speed_fio BS SECONDS / speed_check_unmeasured / speed_check_classed /
#   speed_check_kept / speed_check_stopped
#                                         the measured-speed checks of scenarios/speed.sh and
#                                         systemd/speed.sh on $SPEED_FAST and $SPEED_SLOW
#                                         (below); blkmqd's log from the scenario's speed_log
#   finish                                explicit end (optional; the EXIT trap does the same)
#   reboot_guest                          (full-distro flavour, header "# boots: N") end this
#                                         boot: the counts are kept in /var/lib/vmtest, no plan
#                                         is printed, run-scenario reboots the guest in order
#                                         (systemctl reboot) and the harness boots the same
#                                         root again; the scenario runs again from the top with
#                                         VMTEST_BOOT one higher (1 on the first boot), the
#                                         numbering and the counts going on

: "${BLKMQD:=/opt/blkmqd/blkmqd}"
: "${BLKMQD_MOUNT:=/run/blkmqd}"
: "${VMTEST_SCENARIO:=scenario}"
_vt_n=0
_vt_pass=0
_vt_fail=0
_vt_skip=0
_vt_skip_all=""
_vt_hmp_seq=0
_vt_rebooting=""
HMP_OUT=""
BLKMQD_PID=""
# which boot of this root (the full-distro harness's vmtest.boot=N; 1 when there is none)
VMTEST_BOOT=1
for _a in $(cat /proc/cmdline 2>/dev/null); do
    case $_a in vmtest.boot=[0-9]*) VMTEST_BOOT=${_a#vmtest.boot=} ;; esac
done
_VT_STATE=/var/lib/vmtest/tap-state
if [ "$VMTEST_BOOT" -gt 1 ]; then
    if [ -r "$_VT_STATE" ]; then . "$_VT_STATE"
    else printf '%s\n' "not ok 1 - boot $VMTEST_BOOT: the counts of the boot before ($_VT_STATE) are missing"; _vt_n=1; _vt_fail=1
    fi
fi

_vt_emit() { printf '%s\n' "$*"; }

pass() { _vt_n=$((_vt_n + 1)); _vt_pass=$((_vt_pass + 1)); _vt_emit "ok $_vt_n - $1"; return 0; }
fail() {
    _vt_n=$((_vt_n + 1)); _vt_fail=$((_vt_fail + 1)); _vt_emit "not ok $_vt_n - $1"
    shift
    [ $# -gt 0 ] && _vt_emit "#   $*"
    return 0
}
skip() { _vt_n=$((_vt_n + 1)); _vt_skip=$((_vt_skip + 1)); _vt_emit "ok $_vt_n - $1 # SKIP $2"; return 0; }
note() { _vt_emit "# $*"; }

assert_eq() {
    if [ "$2" = "$3" ]; then pass "$1 = '$3'"; else fail "$1" "expected '$2', got '$3'"; fi
}
assert_ne() {
    if [ "$2" != "$3" ]; then pass "$1 != '$2' ('$3')"; else fail "$1" "unexpected '$3'"; fi
}
assert_match() {
    if printf '%s\n' "$3" | grep -Eq -- "$2"; then pass "$1 =~ /$2/"
    else fail "$1" "'$3' does not match /$2/"; fi
}
assert_file() {
    if [ -e "$2" ] || [ -L "$2" ]; then pass "$1 ($2 exists)"; else fail "$1" "$2 missing"; fi
}
assert_ok() {
    _w=$1; shift
    if "$@"; then pass "$_w"; else fail "$_w" "command failed ($?): $*"; fi
}
assert_fail() {
    _w=$1; shift
    if "$@"; then fail "$_w" "command succeeded: $*"; else pass "$_w"; fi
}

read_attr() { if [ -r "$1" ]; then cat "$1" 2>/dev/null || echo "<unreadable>"; else echo "<missing>"; fi; }

# kernel_at_least MAJOR MINOR: the running kernel is MAJOR.MINOR or newer (uname -r)
kernel_at_least() {
    _kv=$(uname -r); _kmaj=${_kv%%.*}; _kr=${_kv#*.}; _kmin=${_kr%%[!0-9]*}
    [ "$_kmaj" -gt "$1" ] || { [ "$_kmaj" -eq "$1" ] && [ "$_kmin" -ge "$2" ]; }
}

# deterministic polling: the number of 50 ms steps is fixed by the timeout
_vt_poll() {    # TIMEOUT_S CMD...
    _steps=$(($1 * 20)); shift
    while [ "$_steps" -gt 0 ]; do
        "$@" && return 0
        usleep 50000
        _steps=$((_steps - 1))
    done
    "$@"
}
_vt_exists() { [ -e "$1" ] || [ -L "$1" ]; }
_vt_gone() { ! _vt_exists "$1"; }
wait_for_file() { _vt_poll "$2" _vt_exists "$1"; }
wait_for_gone() { _vt_poll "$2" _vt_gone "$1"; }
wait_for_cmd() { _t=$1; shift; _vt_poll "$_t" "$@"; }
_vt_matches() { grep -Eq -- "$2" "$1" 2>/dev/null; }
wait_for_match() { _vt_poll "$1" _vt_matches "$2" "$3"; }

sum_ints() {
    _s=0
    for _f in "$@"; do
        _v=$(cat "$_f" 2>/dev/null) || _v="<unreadable>"
        case "$_v" in ''|*[!0-9]*) echo "NaN $_f: $_v"; return 1 ;; esac
        _s=$((_s + _v))
    done
    echo "$_s"
}
sum_floats() {
    _s=0
    for _f in "$@"; do
        _v=$(cat "$_f" 2>/dev/null) || _v="<unreadable>"
        printf '%s\n' "$_v" | grep -Eq '^[0-9]+(\.[0-9]+)?$' || { echo "NaN $_f: $_v"; return 1; }
        _s=$(awk -v a="$_s" -v b="$_v" 'BEGIN{print a + b}')
    done
    echo "$_s"
}
assert_int() { assert_match "$1 is an integer" '^[0-9]+$' "$2"; }
assert_num() { assert_match "$1 is a number" '^[0-9]+(\.[0-9]+)?$' "$2"; }

check_metrics() {
    if ! command -v promtool >/dev/null 2>&1; then
        skip "$1: promtool check metrics" "promtool not packed (no /usr/bin/promtool on the host: apt-get install prometheus)"
        return 0
    fi
    if _out=$(promtool check metrics <"$2" 2>&1); then
        pass "$1: promtool check metrics clean"
    else
        fail "$1: promtool check metrics" "$(printf '%s' "$_out" | head -n 5 | tr '\n' '|')"
    fi
}

hctx_count() { ls -d /sys/block/"$1"/mq/[0-9]* 2>/dev/null | wc -l; }

disk_by_model() {
    for _d in /sys/block/sd*; do
        [ -e "$_d/device/model" ] || continue
        if grep -q -- "$1" "$_d/device/model"; then basename "$_d"; return 0; fi
    done
    return 1
}

# scsi_debug_disk PARAM...: modprobe scsi_debug PARAM... (asserted); its disk's name in D,
# waited for up to 10 s (asserted: sdX).
scsi_debug_disk() {
    assert_ok "modprobe scsi_debug $*" modprobe scsi_debug "$@"
    D=$(disk_by_model scsi_debug || true)
    if [ -z "$D" ] && wait_for_cmd 10 disk_by_model scsi_debug >/dev/null; then D=$(disk_by_model scsi_debug); fi
    assert_match "scsi_debug disk" '^sd[a-z]+$' "$D"
}

# reads_per_cpu DISK COUNT [FIRST]: COUNT direct 4k reads of /dev/DISK from each of CPUs 0-3,
# CPU n's from block n * 1000 + FIRST (default 0) on, so that every hctx of a 4-queue disk
# has requests in its counters.
reads_per_cpu() {
    for _cpu in 0 1 2 3; do
        taskset -c $_cpu dd if="/dev/$1" of=/dev/null bs=4k count="$2" skip=$((_cpu * 1000 + ${3:-0})) iflag=direct 2>/dev/null
    done
}

# ---- host monitor requests -------------------------------------------------------------
# Guest prints "@@HMP <seq> <command>" on the console (a line of its own); the harness runs
# <command> on the QEMU monitor (placeholders {disk:NAME} and {tmp} are expanded on the host)
# and answers on the serial input with zero or more "@@HMP-OUT <seq> <line>" lines and one
# "@@HMP-DONE <seq> <status>" (0 ok, 1 HMP printed an error, 2 harness error).
HMP_TIMEOUT=${HMP_TIMEOUT:-60}
hmp() {
    _vt_hmp_seq=$((_vt_hmp_seq + 1))
    HMP_OUT=""
    # the console is the serial port; echo is off (stty -echo in /init)
    printf '@@HMP %s %s\n' "$_vt_hmp_seq" "$*" >/dev/ttyS0
    _deadline=$(($(cut -d. -f1 /proc/uptime) + HMP_TIMEOUT))
    while [ "$(cut -d. -f1 /proc/uptime)" -lt "$_deadline" ]; do
        _line=""
        IFS= read -r -t 5 _line </dev/ttyS0 || true
        _line=$(printf '%s' "$_line" | tr -d '\r')
        case "$_line" in
            "@@HMP-OUT $_vt_hmp_seq "*)
                HMP_OUT="$HMP_OUT${HMP_OUT:+
}${_line#@@HMP-OUT $_vt_hmp_seq }" ;;
            "@@HMP-DONE $_vt_hmp_seq "*)
                _st=${_line#@@HMP-DONE $_vt_hmp_seq }
                [ -n "$HMP_OUT" ] && [ "$HMP_OUT" != OK ] && note "hmp $*: $HMP_OUT"
                return "$_st" ;;
        esac
    done
    note "hmp $*: no answer from the host within ${HMP_TIMEOUT}s"
    return 2
}

# ---- blkmqd ------------------------------------------------------------------------------
have_blkmqd() { [ -x "$BLKMQD" ]; }

# The drop-in with the suites' opt-ins, next to the config blkmqd ARGS... reads: the
# scenarios stand in for hardware with scsi_debug and null_blk, and QEMU's disks for the media
# their rotational flags say (rotation_rate=); removed with BLKMQD_VIRTUAL=list.
vt_virtual_dropin() {
    _vd_conf=/etc/blkmqd/blkmqd.conf
    while [ $# -gt 0 ]; do
        case "$1" in
            -c|--config) [ $# -gt 1 ] && _vd_conf=$2 ;;
            --config=*) _vd_conf=${1#--config=} ;;
        esac
        shift
    done
    if [ "${BLKMQD_VIRTUAL:-manage}" = list ]; then
        rm -f "$_vd_conf.d/00-vmtest-suite.conf"
    else
        mkdir -p "$_vd_conf.d"
        printf '%s\n' '# tests/vm/guest-lib.sh: scsi_debug and null_blk stand in for hardware, QEMU disks' \
            '# for the media their rotational flags say' '[Manager]' 'VirtualDevices=manage' \
            '[Speed]' 'TrustRotational=virtio_blk virtio_scsi device-mapper' >"$_vd_conf.d/00-vmtest-suite.conf"
    fi
}

start_blkmqd() {
    have_blkmqd || { fail "start_blkmqd" "$BLKMQD not packed"; return 1; }
    mkdir -p "$BLKMQD_MOUNT"
    vt_virtual_dropin "$@"
    "$BLKMQD" "$@" >/tmp/blkmqd.log 2>&1 &
    BLKMQD_PID=$!
    _vt_fail_at_start=$_vt_fail
    if wait_for_file "$BLKMQD_MOUNT/version" 30; then
        note "blkmqd pid $BLKMQD_PID: $(head -n1 "$BLKMQD_MOUNT/version")"
        return 0
    fi
    fail "start_blkmqd: $BLKMQD_MOUNT/version did not appear within 30 s"
    sed 's/^/# blkmqd: /' /tmp/blkmqd.log
    return 1
}

stop_blkmqd() {
    [ -n "$BLKMQD_PID" ] || return 0
    kill -TERM "$BLKMQD_PID" 2>/dev/null
    if ! wait_for_gone "/proc/$BLKMQD_PID" 10; then
        fail "stop_blkmqd: pid $BLKMQD_PID still running after 10 s"
        kill -KILL "$BLKMQD_PID" 2>/dev/null
    fi
    wait "$BLKMQD_PID" 2>/dev/null || true
    BLKMQD_PID=""
    if grep -q " $BLKMQD_MOUNT " /proc/mounts; then
        fail "stop_blkmqd: $BLKMQD_MOUNT still mounted"
        umount -l "$BLKMQD_MOUNT" 2>/dev/null || true
    fi
    # the whole log when a check failed while this blkmqd ran (what it saw, in order), else its end
    if [ "$_vt_fail" -gt "${_vt_fail_at_start:-0}" ]; then
        sed 's/^/# blkmqd: /' /tmp/blkmqd.log 2>/dev/null
    else
        sed 's/^/# blkmqd: /' /tmp/blkmqd.log 2>/dev/null | tail -n 20
    fi
    return 0
}

blkmqd_checks() {
    if have_blkmqd; then
        note "---- blkmqd checks: $1"
        "$1"
    elif [ -n "$VMTEST_KERNEL_ONLY" ]; then
        skip "blkmqd checks: $1" "kernel-only run"
    else
        skip "blkmqd checks: $1" "$BLKMQD not packed"
        _vt_skip_all="blkmqd binary not packed (harness --blkmqd PATH); kernel checks ran"
    fi
}

capture_fixture() {
    _name=$1; shift
    if ! grep -q ' /mnt/host 9p ' /proc/mounts; then
        fail "capture_fixture $_name" "no 9p share at /mnt/host (harness --share HOSTDIR)"
        return 1
    fi
    # capture into tmpfs, then hand the tree over as one tar file: creating hundreds of
    # small files on 9p under TCG takes ~100 s, one tar file 0.1 s.  The host side
    # (tests/vm/capture-fixtures.sh) unpacks NAME.tar.
    rm -rf "/tmp/capture/$_name" "/mnt/host/$_name.tar"
    mkdir -p /tmp/capture
    _t0=$(cut -d' ' -f1 /proc/uptime)
    if sh /opt/vmtest/capture.sh "/tmp/capture/$_name" "$@" &&
        tar -C /tmp/capture -cf "/tmp/capture/$_name.tar" "$_name" &&
        cp "/tmp/capture/$_name.tar" "/mnt/host/$_name.tar"; then
        pass "captured $_name ($*): $(grep -c '^f' "/tmp/capture/$_name/TREE") files, $(cut -d' ' -f1 /proc/uptime | awk -v t="$_t0" '{printf "%.1f", $1 - t}') s"
    else
        fail "capture_fixture $_name" "capture.sh or the copy to /mnt/host failed"
    fi
}

skip_all() { _vt_skip_all="$*"; exit 77; }

# ---- benchmarks (scenarios/bench-*.sh, docs/BENCHMARKS.md) --------------------------------------

# bench_pairs N CMD ARG...: N pairs of "CMD ARG... PAIR kernel" and "CMD ARG... PAIR blkmqd",
# the kernel's side first in odd pairs and second in even ones, so that a drift over the run
# (host load, caches) does not favour one side.
bench_pairs() {
    _bp_n=$1; shift
    _bp_i=1
    while [ $_bp_i -le "$_bp_n" ]; do
        if [ $((_bp_i % 2)) -eq 1 ]; then "$@" $_bp_i kernel; "$@" $_bp_i blkmqd
        else "$@" $_bp_i blkmqd; "$@" $_bp_i kernel; fi
        _bp_i=$((_bp_i + 1))
    done
}

# fio_read_figures FIO_OPTION...: one fio job (FIO_OPTION..., its processes reported as a
# group) for $RT s after 1 s of ramp, as "iops=I lat_us=L p99_us=P" of its reads (from the
# terse v3 output: IOPS, mean and 99th percentile completion latency); fio's stderr in
# /tmp/fio.err.
fio_read_figures() {
    fio "$@" --group_reporting --time_based --runtime="$RT" --ramp_time=1 \
        --output-format=terse --terse-version=3 2>/tmp/fio.err |
        awk -F';' '{ split($30, p, "="); printf "iops=%s lat_us=%.1f p99_us=%s\n", $8, $40, p[2] }'
}

# bench_elevator_side LABEL SIDE [FIO_RUN_ARG...]: one run of the scenario's fio_run on $DEV,
# SIDE kernel: as the kernel has the disk; blkmqd: blkmqd running on $DEV alone, its elevator
# applied. Prints "# BENCH LABEL setup=SIDE elevator=E <fio_run's figures>", with blkmqd
# " class=C applied="..."" after it.
bench_elevator_side() {
    _be_label=$1 _be_side=$2; shift 2
    _be_more=
    if [ "$_be_side" = blkmqd ]; then
        start_blkmqd --devices $DEV -v || return 1
        wait_for_cmd 20 grep -qv '^$' $BLKMQD_MOUNT/devices/$DEV/applied/elevator
        _be_more=" class=$(cat $BLKMQD_MOUNT/devices/$DEV/class) applied=\"$(cat $BLKMQD_MOUNT/devices/$DEV/applied/elevator)\""
    fi
    _be_r=$(fio_run "$@")
    note "BENCH $_be_label setup=$_be_side elevator=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/$DEV/queue/scheduler) $_be_r$_be_more"
    if [ "$_be_side" = blkmqd ]; then stop_blkmqd >/dev/null; fi
    return 0
}

# ---- network block devices (issue 15) ------------------------------------------------------
# Scenario header for an nvme-tcp disk reached through a real multi-queue virtio-net NIC:
#   # smp: 4
#   # tap: tap0 multi_queue
#   # tap: tap1
#   # qemu: -netdev tap,id=n0,ifname=tap0,script=no,downscript=no,queues=2,vhost=off
#   # qemu: -device virtio-net-pci,netdev=n0,mq=on,vectors=6,mac=52:54:00:12:34:01
#   # qemu: -netdev tap,id=n1,ifname=tap1,script=no,downscript=no,vhost=off
#   # qemu: -device virtio-net-pci,netdev=n1,mac=52:54:00:12:34:02
#   # binary: /usr/sbin/ip
#   # binary: /usr/sbin/ethtool
#   # modules: virtio_net nvme-tcp nvmet nvmet-tcp
# The harness puts both taps on one bridge in a host network namespace of its own.  In the
# guest the second NIC (MAC ...:02) moves into the network namespace "tgt" and serves an
# nvmet-tcp port on 10.77.0.2:4420 with null_blk behind it; the initiator (10.77.0.1 on the
# 2-queue NIC, MAC ...:01) connects to it, so every I/O crosses the multi-queue virtio-net NIC,
# the host bridge and the second NIC.  busybox runs its own `ip` applet for a bare `ip`
# (standalone shell), so iproute2's is called by path.
IP=/usr/sbin/ip
NVME_TCP_ADDR=10.77.0.2
NVME_TCP_NQN=blkmqd-test

_vt_if_by_mac() {
    for _i in /sys/class/net/*; do
        [ "$(cat "$_i/address" 2>/dev/null)" = "$1" ] && { echo "${_i##*/}"; return 0; }
    done
    return 1
}

# _vt_net_pair: the initiator NIC (MAC ...:01, 10.77.0.1) and the target NIC (MAC ...:02,
# $NVME_TCP_ADDR) moved into the network namespace "tgt"; sets NVME_INI_IF NVME_TGT_IF NVME_INI2_IF.
_vt_net_pair() {
    [ -x "$IP" ] || skip_all "iproute2's ip not packed (# binary: /usr/sbin/ip)"
    NVME_INI_IF=$(_vt_if_by_mac 52:54:00:12:34:01) || skip_all "no NIC with MAC 52:54:00:12:34:01"
    NVME_TGT_IF=$(_vt_if_by_mac 52:54:00:12:34:02) || skip_all "no NIC with MAC 52:54:00:12:34:02"
    NVME_INI2_IF=$(_vt_if_by_mac 52:54:00:12:34:03) || NVME_INI2_IF=""   # a bond's second port (optional)
    $IP netns add tgt
    $IP link set "$NVME_TGT_IF" netns tgt
    $IP link set lo up
    $IP addr add 10.77.0.1/24 dev "$NVME_INI_IF"
    $IP link set "$NVME_INI_IF" up
    $IP -n tgt link set lo up
    $IP -n tgt addr add "$NVME_TCP_ADDR/24" dev "$NVME_TGT_IF"
    $IP -n tgt link set "$NVME_TGT_IF" up
}

nvme_tcp_setup() {
    _vt_net_pair
    modprobe null_blk nr_devices=1 submit_queues=1 memory_backed=0 gb=1
    wait_for_file /sys/block/nullb0 10
    # nvmet-tcp opens its listening socket in the network namespace of the process that
    # enables the port (the configfs link), so the link is made from inside "tgt"
    nsenter --net=/run/netns/tgt sh -ec "
        cd /sys/kernel/config/nvmet
        mkdir subsystems/$NVME_TCP_NQN
        echo 1 > subsystems/$NVME_TCP_NQN/attr_allow_any_host
        mkdir subsystems/$NVME_TCP_NQN/namespaces/1
        echo /dev/nullb0 > subsystems/$NVME_TCP_NQN/namespaces/1/device_path
        echo 1 > subsystems/$NVME_TCP_NQN/namespaces/1/enable
        mkdir ports/1
        echo tcp > ports/1/addr_trtype
        echo ipv4 > ports/1/addr_adrfam
        echo $NVME_TCP_ADDR > ports/1/addr_traddr
        echo 4420 > ports/1/addr_trsvcid
        ln -s /sys/kernel/config/nvmet/subsystems/$NVME_TCP_NQN ports/1/subsystems/$NVME_TCP_NQN"
    # the bridge forwards once both taps carry: poll the path
    _vt_reach_target "$NVME_INI_IF" || return 1
    nvme_tcp_connect
}

# nbd_setup [NBD-CLIENT OPTION...]: _vt_net_pair, then qemu-nbd in "tgt" serving a sparse
# 256 MiB file on the guest's tmpfs at $NVME_TCP_ADDR:10809 (export d0, up to 8 clients), the nbd
# module with one device, and nbd-client connecting /dev/nbd0 to it over the initiator NIC with
# OPTIONs (e.g. -C 2: two connections, one hctx each; -L: the ioctl interface, the client stays);
# sets NBD_DISK.
nbd_setup() {
    [ -x /usr/bin/qemu-nbd ] || skip_all "qemu-nbd not packed (# binary: /usr/bin/qemu-nbd)"
    [ -x /usr/sbin/nbd-client ] || skip_all "nbd-client not packed (# binary: /usr/sbin/nbd-client)"
    _vt_net_pair
    dd if=/dev/zero of=/tmp/nbd0.img bs=1M count=0 seek=256 2>/dev/null
    nsenter --net=/run/netns/tgt /usr/bin/qemu-nbd --fork --persistent --shared=8 --export-name=d0 \
        --bind="$NVME_TCP_ADDR" --port=10809 --format=raw /tmp/nbd0.img ||
        { fail "qemu-nbd serving /tmp/nbd0.img in netns tgt"; return 1; }
    modprobe nbd nbds_max=1
    wait_for_file /sys/block/nbd0 10 || { fail "nbd0 after modprobe nbd nbds_max=1"; return 1; }
    _vt_reach_target "$NVME_INI_IF" || return 1
    /usr/sbin/nbd-client "$NVME_TCP_ADDR" 10809 /dev/nbd0 -N d0 "$@" ||
        { fail "nbd-client $NVME_TCP_ADDR 10809 /dev/nbd0 -N d0 $*"; return 1; }
    wait_for_file /sys/block/nbd0/pid 20 || { fail "nbd0 connected (/sys/block/nbd0/pid)"; return 1; }
    NBD_DISK=nbd0
    note "nbd: $NBD_DISK ($(ls /sys/block/nbd0/mq | wc -l) hctx, pid $(cat /sys/block/nbd0/pid)) to $NVME_TCP_ADDR:10809 over $NVME_INI_IF"
    return 0
}

# _vt_reach_target VIA: ping $NVME_TCP_ADDR until it answers (30 tries, 1 s each at most)
_vt_reach_target() {
    _p=0
    until ping -c 1 -W 1 "$NVME_TCP_ADDR" >/dev/null 2>&1; do
        _p=$((_p + 1))
        [ $_p -lt 30 ] || { fail "$NVME_TCP_ADDR reachable through $1"; return 1; }
        usleep 200000
    done
}

# nvme_tcp_connect [OPTIONS]: connect to the target nvme_tcp_setup made (OPTIONS appended to the
# fabrics string, e.g. nr_io_queues=2); sets NVME_CTRL NVME_DISK NVME_PATH.
# nvme_tcp_disconnect: delete the controller $NVME_CTRL and wait until it is gone.
nvme_tcp_connect() {
    echo "nqn=$NVME_TCP_NQN,transport=tcp,traddr=$NVME_TCP_ADDR,trsvcid=4420${1:+,$1}" > /dev/nvme-fabrics
    NVME_CTRL=""
    for _c in /sys/class/nvme/nvme*; do
        [ "$(cat "$_c/transport" 2>/dev/null)" = tcp ] && NVME_CTRL=${_c##*/}
    done
    [ -n "$NVME_CTRL" ] || { fail "nvme-tcp controller after connect"; return 1; }
    wait_for_match 20 "/sys/class/nvme/$NVME_CTRL/state" '^live$' ||
        { fail "$NVME_CTRL live" "state $(cat "/sys/class/nvme/$NVME_CTRL/state")"; return 1; }
    # the namespace: nvmeXnY (multipath head, bio-based) with the blk-mq path disk nvmeXcZnY
    # under the controller, or nvmeXnY itself (nvme_core.multipath=N)
    NVME_DISK="" NVME_PATH=""
    _vt_poll 20 sh -c "ls -d /sys/class/nvme/$NVME_CTRL/${NVME_CTRL}*n* >/dev/null 2>&1" || true
    for _n in /sys/class/nvme/$NVME_CTRL/${NVME_CTRL}*n*; do
        [ -d "$_n/mq" ] || continue
        NVME_PATH=${_n##*/}
    done
    case "$NVME_PATH" in
        *c*n*) NVME_DISK=$(echo "$NVME_PATH" | sed 's/^nvme[0-9]*c[0-9]*n/n/')
               NVME_DISK=$(ls /sys/class/nvme-subsystem/*/ 2>/dev/null | grep -E "^nvme[0-9]+${NVME_DISK}\$" | head -n 1) ;;
        *) NVME_DISK=$NVME_PATH ;;
    esac
    [ -n "$NVME_DISK" ] && wait_for_file "/sys/block/$NVME_DISK" 20 ||
        { fail "nvme-tcp namespace block device" "path '$NVME_PATH' disk '$NVME_DISK'"; return 1; }
    note "nvme-tcp: $NVME_CTRL $(cat /sys/class/nvme/$NVME_CTRL/address) disk $NVME_DISK path $NVME_PATH over $NVME_INI_IF"
    return 0
}

nvme_tcp_disconnect() {
    echo 1 > /sys/class/nvme/$NVME_CTRL/delete_controller
    wait_for_gone /sys/class/nvme/$NVME_CTRL 30 && wait_for_gone /sys/block/$NVME_DISK 30
}

# nvme_tcp_bond [OPTIONS]: disconnect, make bond0 (active-backup, miimon 100) of $NVME_INI_IF
# (the active port: enslaved first) and $NVME_INI2_IF (a third NIC, MAC 52:54:00:12:34:03, on the
# same host bridge), move 10.77.0.1 to bond0 and connect again (OPTIONS as nvme_tcp_connect).
# Loading bonding made a bond0 (max_bonds=1, balance-rr): it is made again in the mode wanted.
nvme_tcp_bond() {
    [ -n "$NVME_INI2_IF" ] || { fail "a second initiator NIC (MAC 52:54:00:12:34:03) for bond0"; return 1; }
    nvme_tcp_disconnect || { fail "$NVME_CTRL disconnected before the bond"; return 1; }
    $IP link del bond0 2>/dev/null
    $IP addr flush dev "$NVME_INI_IF"
    $IP link add bond0 type bond mode active-backup miimon 100 || { fail "ip link add bond0 type bond"; return 1; }
    for _p in "$NVME_INI_IF" "$NVME_INI2_IF"; do
        $IP link set "$_p" down
        $IP link set "$_p" master bond0 || { fail "$_p enslaved to bond0"; return 1; }
    done
    $IP link set bond0 up
    $IP addr add 10.77.0.1/24 dev bond0
    _vt_reach_target bond0 || return 1
    nvme_tcp_connect "$@"
}

# nic_watch IF: the NIC whose writes a scenario counts; sets NIC_DEV (its device, virtio0),
# NIC_VEC (the MSI vectors of its PCI function, ascending) and NIC_PATHS (its vectors' affinity and TX queues' XPS as blkmqd's log
# names them: relative to /proc and /sys).
# nic_state: every vector's affinity and every TX queue's XPS of that NIC, one line.
# nic_writes: blkmqd's writes to them in its -v log (/tmp/blkmqd.log); each is logged twice, as
# the item (apply/apply-net.c) and as the job's op (apply/apply.c, "to procfs" for /proc).
nic_watch() {
    NIC_IF=$1
    NIC_DEV=$(readlink -f /sys/class/net/$1/device)     # the virtio device; MSI-X sits on its PCI function
    NIC_VEC=$(ls "${NIC_DEV%/*}/msi_irqs" 2>/dev/null | sort -n | tr '\n' ' ')
    NIC_PATHS="irq/[0-9]+/smp_affinity_list|class/net/$1/queues/tx-[0-9]+/xps_cpus"
}
nic_state() {
    for _q in $NIC_VEC; do printf '%s ' "$(cat /proc/irq/$_q/smp_affinity_list 2>/dev/null)"; done
    for _t in /sys/class/net/$NIC_IF/queues/tx-*; do printf '%s ' "$(cat $_t/xps_cpus)"; done
    echo
}
nic_writes() { echo $(( $(grep -cE "Writing \".*\" to (procfs )?\"($NIC_PATHS)\"" /tmp/blkmqd.log) / 2 )); }

# iscsi_setup: _vt_net_pair, then an LIO iSCSI target in "tgt" ($ISCSI_IQN, portal
# $NVME_TCP_ADDR:3260, LUN 0 a 1 GiB null_blk disk through the iblock backstore, no
# authentication, node ACLs made for any initiator), iscsid, and two sessions to it over the
# initiator NIC: one through open-iscsi's iface "default" (the socket bound to no device), one
# through iface "ini" bound to $NVME_INI_IF (iface.net_ifacename: iscsid binds the socket,
# SO_BINDTODEVICE).  Sets ISCSI_DISKS ("sdX sdY", in session order) and ISCSI_SIDS ("1 2").
ISCSI_IQN=iqn.2026-12.org.blkmqd:target
iscsi_setup() {
    [ -x /usr/sbin/iscsid ] && [ -x /usr/sbin/iscsiadm ] ||
        skip_all "open-iscsi not packed (# binary: /usr/sbin/iscsid, /usr/sbin/iscsiadm)"
    _vt_net_pair
    modprobe null_blk nr_devices=1 submit_queues=1 memory_backed=0 gb=1
    wait_for_file /sys/block/nullb0 10
    # crc32c: the target's login allocates the hash whether or not digests are negotiated
    # (drivers/target/iscsi/iscsi_target_login.c iscsi_login_setup_crypto())
    modprobe crc32c_generic && modprobe iscsi_target_mod && modprobe target_core_iblock && modprobe iscsi_tcp ||
        { fail "modprobe crc32c_generic iscsi_target_mod target_core_iblock iscsi_tcp"; return 1; }
    _t=/sys/kernel/config/target
    _g=$_t/iscsi/$ISCSI_IQN/tpgt_1
    # the network portal's listening socket is made in the network namespace of the process
    # that creates the np directory (drivers/target/iscsi/iscsi_target_login.c
    # iscsit_setup_np(): sock_create()), so that mkdir runs inside "tgt"
    if ! sh -ec "
        mkdir -p $_t/core/iblock_0/d0
        echo udev_path=/dev/nullb0 > $_t/core/iblock_0/d0/control
        echo 1 > $_t/core/iblock_0/d0/enable
        mkdir -p $_g/lun/lun_0
        ln -s $_t/core/iblock_0/d0 $_g/lun/lun_0/d0
        echo 0 > $_g/attrib/authentication
        echo 1 > $_g/attrib/generate_node_acls
        echo 1 > $_g/attrib/cache_dynamic_acls
        echo 0 > $_g/attrib/demo_mode_write_protect
        nsenter --net=/run/netns/tgt mkdir $_g/np/$NVME_TCP_ADDR:3260
        echo 1 > $_g/enable"; then
        fail "LIO target $ISCSI_IQN on $NVME_TCP_ADDR:3260 (configfs)"; return 1
    fi
    _vt_reach_target "$NVME_INI_IF" || return 1
    mkdir -p /etc/iscsi /var/lib/iscsi /run/lock/iscsi
    echo "InitiatorName=iqn.2026-12.org.blkmqd:initiator" > /etc/iscsi/initiatorname.iscsi
    printf 'node.startup = manual\nnode.session.scan = auto\n' > /etc/iscsi/iscsid.conf
    /usr/sbin/iscsid || { fail "iscsid"; return 1; }
    _vt_poll 10 sh -c '/usr/sbin/iscsiadm -m iface >/dev/null 2>&1' || true
    /usr/sbin/iscsiadm -m iface -I ini -o new >/dev/null &&
        /usr/sbin/iscsiadm -m iface -I ini -o update -n iface.net_ifacename -v "$NVME_INI_IF" >/dev/null ||
        { fail "iscsiadm: iface ini bound to $NVME_INI_IF"; return 1; }
    /usr/sbin/iscsiadm -m discovery -t sendtargets -p "$NVME_TCP_ADDR:3260" -I default -I ini >/dev/null ||
        { fail "iscsiadm: discovery at $NVME_TCP_ADDR:3260"; return 1; }
    /usr/sbin/iscsiadm -m node -T "$ISCSI_IQN" -p "$NVME_TCP_ADDR:3260" -I default --login >/dev/null &&
        /usr/sbin/iscsiadm -m node -T "$ISCSI_IQN" -p "$NVME_TCP_ADDR:3260" -I ini --login >/dev/null ||
        { fail "iscsiadm: login to $ISCSI_IQN through ifaces default and ini"; return 1; }
    ISCSI_SIDS="" ISCSI_DISKS=""
    for _s in /sys/class/iscsi_session/session*; do
        _sid=${_s##*session}
        _d=""
        _vt_poll 20 sh -c "ls -d /sys/class/iscsi_session/session$_sid/device/target*/*/block/* >/dev/null 2>&1" || true
        for _b in /sys/class/iscsi_session/session$_sid/device/target*/*/block/*; do
            [ -d "$_b" ] && _d=${_b##*/}
        done
        [ -n "$_d" ] || { fail "iSCSI session $_sid: no disk"; return 1; }
        ISCSI_SIDS="${ISCSI_SIDS:+$ISCSI_SIDS }$_sid"
        ISCSI_DISKS="${ISCSI_DISKS:+$ISCSI_DISKS }$_d"
    done
    note "iscsi: sessions $ISCSI_SIDS, disks $ISCSI_DISKS to $ISCSI_IQN at $NVME_TCP_ADDR:3260 over $NVME_INI_IF"
    [ "$(echo $ISCSI_DISKS | wc -w)" -eq 2 ] || { fail "two iSCSI sessions with a disk each" "disks: $ISCSI_DISKS"; return 1; }
    return 0
}

# _vt_route_record DST [OIF]: the "route" record of DST (the lookup through OIF when given), once
_vt_route_record() {
    _k="$1${2:+%$2}"
    case " $_vt_routes " in *" $_k "*) return 0 ;; esac
    _vt_routes="$_vt_routes $_k"
    $IP -o route get "$1" ${2:+oif "$2"} | awk -v dst="$1" -v oif="${2:-}" '{
        dev = ""; src = ""
        for (i = 1; i < NF; i++) { if ($i == "dev") dev = $(i + 1); if ($i == "src") src = $(i + 1) }
        printf "route dst=%s", dst
        if (oif != "") printf " oif=%s", oif
        printf " dev=%s", dev
        if (src != "") printf " src=%s", src
        printf "\n" }' | while read -r _l; do
            _d=$(echo "$_l" | sed -n 's/.* dev=\([^ ]*\).*/\1/p')
            echo "$_l" | sed "s/ dev=$_d/ dev=$_d ifindex=$(cat /sys/class/net/$_d/ifindex)/"
        done
}

# The <root>/netlink/facts records blkmqd reads in --root mode (docs/DESIGN-NOTES.md "Fixtures and netlink"):
# the route to every nvme-tcp target, every link of the initiator's namespace, every link's
# channels.  Written from iproute2 (ip route get; ifindex/iflink/master from sysfs) and ethtool
# (-l through its netlink interface: "netlink error" when a driver has no channels).
netlink_facts() {
    _vt_routes=""
    echo "# netlink facts of $(uname -r), from iproute2 ($($IP -V 2>&1 | head -n 1)) and ethtool ($(ethtool --version 2>&1 | head -n 1)) in the guest"
    for _c in /sys/class/nvme/nvme*; do
        [ -f "$_c/address" ] || continue
        _a=$(sed -n 's/.*traddr=\([^,]*\).*/\1/p' "$_c/address")
        [ -n "$_a" ] || continue
        _vt_route_record "$_a"
    done
    # iSCSI: each connection's target, through the session's bound device when iscsid bound
    # it (class/iscsi_host/<host>/netdev, "(null)" when not)
    for _c in /sys/class/iscsi_connection/connection*; do
        [ -f "$_c/address" ] || continue
        _h=$(readlink -f "$_c/device/../..")
        _o=$(cat "$_h/iscsi_host/${_h##*/}/netdev" 2>/dev/null)
        case "$_o" in ""|"(null)"|default) _o="" ;; esac
        _vt_route_record "$(cat "$_c/address")" $_o
    done
    for _i in /sys/class/net/*; do
        [ -f "$_i/ifindex" ] || continue        # not an interface: bonding_masters
        _n=${_i##*/}
        _x=$(cat "$_i/ifindex"); _k=$(cat "$_i/iflink")
        [ "$_k" = "$_x" ] && _k=0
        _m=0
        [ -L "$_i/master" ] && _m=$(cat "$_i/master/ifindex")
        _kind=$($IP -o -d link show dev "$_n" | grep -oE '\\ +(vlan|bond|bridge|veth|macvlan|ipvlan|vxlan|team|dummy) ' | head -n 1 | tr -d '\\ ')
        echo "link ifname=$_n ifindex=$_x kind=${_kind:--} link=$_k master=$_m"
    done
    for _i in /sys/class/net/*; do
        [ -f "$_i/ifindex" ] || continue
        _n=${_i##*/}
        if ! _o=$(ethtool -l "$_n" 2>&1); then
            case "$_o" in
                *"not supported"*) echo "channels ifname=$_n error=EOPNOTSUPP" ;;
                *) echo "channels ifname=$_n error=EIO # $(echo "$_o" | tail -n 1)" ;;
            esac
            continue
        fi
        echo "$_o" | awk -v n="$_n" '
            /^Pre-set maximums/ { s = "max" } /^Current hardware settings/ { s = "cur" }
            /^(RX|TX|Other|Combined):/ { k = tolower($1); sub(":", "", k); v = $2; if (v == "n/a") v = 0; val[s, k] = v }
            END { printf "channels ifname=%s source=ethtool-netlink rx_max=%d tx_max=%d other_max=%d combined_max=%d rx=%d tx=%d other=%d combined=%d\n",
                  n, val["max","rx"], val["max","tx"], val["max","other"], val["max","combined"],
                  val["cur","rx"], val["cur","tx"], val["cur","other"], val["cur","combined"] }'
    done
    return 0
}

# ---- measured speed (scenarios/speed.sh, systemd/speed.sh; policies/speed.h) -------------
# Two disks blkmqd's shipped defaults do not trust the rotational flag of: $SPEED_FAST, a
# virtio-blk disk on a RAM-backed file (rotational=1, as every virtio-blk disk), and
# $SPEED_SLOW, a non-rotating scsi-hd behind virtio-scsi that QEMU throttles to a few hundred
# IOPS. The scenario defines speed_log (blkmqd's log so far: its stderr file, or the unit's
# journal) and starts and stops blkmqd itself (by hand, or systemctl).
_vt_elevator() { sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$1/queue/scheduler"; }
_vt_both_elevators() {  # FAST_ELEVATOR SLOW_ELEVATOR
    [ "$(_vt_elevator "$SPEED_FAST")" = "$1" ] && [ "$(_vt_elevator "$SPEED_SLOW")" = "$2" ]
}
_vt_speed_logged() {
    speed_log 2>/dev/null | grep -q "$SPEED_FAST: Measured " &&
        speed_log 2>/dev/null | grep -q "$SPEED_SLOW: Measured "
}
_vt_both_classed() {
    grep -qx fast-multiqueue "$BLKMQD_MOUNT/devices/$SPEED_FAST/class" 2>/dev/null &&
        grep -qx many-hctx-slow "$BLKMQD_MOUNT/devices/$SPEED_SLOW/class" 2>/dev/null
}

# speed_setup HCTX: the flags QEMU gives, HCTX queues each; the fast disk set to mq-deadline
# (what a many-hctx-slow verdict wrote before the measurement), the slow one left at none.
speed_setup() {
    # [Speed] bounds for an emulated guest: under TCG every I/O costs the emulation's time, so
    # the RAM-backed virtio-blk disk's p50 is 0.8-4.5 ms with the host's load (6.1: 2.8 and
    # 4.4 ms in a CI run next to another boot, 3.3-4.5 ms at load 20), above the shipped
    # FastMs=2, while the throttled disk measures 18-37 ms; FastMs=8 SlowMs=12 keep the two apart
    # at the suites' load (two boots at once; with four boots the RAM disk measured 18 ms and
    # nothing separates them). The shipped bounds are unit/speed's and integration/speed's.
    mkdir -p /etc/blkmqd/blkmqd.conf.d
    printf '%s\n' '# tests/vm/guest-lib.sh speed_setup: bounds for a TCG guest' '[Speed]' 'FastMs=8' 'SlowMs=12' \
        >/etc/blkmqd/blkmqd.conf.d/40-vmtest-speed-tcg.conf
    assert_eq "$SPEED_FAST rotational (virtio-blk says 1)" 1 "$(read_attr /sys/block/$SPEED_FAST/queue/rotational)"
    assert_eq "$SPEED_SLOW rotational (rotation_rate=1)" 0 "$(read_attr /sys/block/$SPEED_SLOW/queue/rotational)"
    assert_eq "$SPEED_FAST hctx" "$1" "$(hctx_count $SPEED_FAST)"
    assert_eq "$SPEED_SLOW hctx" "$1" "$(hctx_count $SPEED_SLOW)"
    echo mq-deadline >/sys/block/$SPEED_FAST/queue/scheduler
    assert_match "$SPEED_FAST set to mq-deadline" '\[mq-deadline\]' "$(read_attr /sys/block/$SPEED_FAST/queue/scheduler)"
    assert_match "$SPEED_SLOW default none" '^\[none\]' "$(read_attr /sys/block/$SPEED_SLOW/queue/scheduler)"
}

# speed_fio BS SECONDS: random reads on both disks at once (libaio, iodepth 8, direct); the
# IOPS of each run noted
speed_fio() {
    _sf_pids=""
    for _d in $SPEED_FAST $SPEED_SLOW; do
        fio --name=p --filename=/dev/$_d --rw=randread --bs=$1 --direct=1 --ioengine=libaio --iodepth=8 \
            --size=100M --time_based --runtime=$2 --output-format=terse >/tmp/fio.$_d 2>&1 &
        _sf_pids="$_sf_pids $!"
    done
    wait $_sf_pids  # the two fio runs only: a bare wait would wait for a blkmqd started with &
    for _d in $SPEED_FAST $SPEED_SLOW; do grep ';' /tmp/fio.$_d | cut -d';' -f8 >/tmp/iops.$_d || true; done
    note "fio bs=$1 ${2}s: $SPEED_FAST $(cat /tmp/iops.$SPEED_FAST) IOPS, $SPEED_SLOW $(cat /tmp/iops.$SPEED_SLOW) IOPS"
}

# speed_check_unmeasured: blkmqd started, no I/O yet: the BPF service times measure (the
# provider in SPEED_SOURCE), both unknown, unmeasured, the flag untrusted, nothing written
speed_check_unmeasured() {
    SPEED_SOURCE=$(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/facts/speed_source)
    note "speed source: $SPEED_SOURCE"
    assert_match "speed measured by BPF service times" '^service time: BPF' "$SPEED_SOURCE"
    for _d in $SPEED_FAST $SPEED_SLOW; do
        assert_eq "$_d: unknown before any I/O" unknown "$(read_attr $BLKMQD_MOUNT/devices/$_d/class)"
        assert_match "$_d: facts/speed unmeasured" '^unmeasured \(' "$(read_attr $BLKMQD_MOUNT/devices/$_d/facts/speed)"
        assert_match "$_d: facts/rotational_hint untrusted" '^untrusted: ' "$(read_attr $BLKMQD_MOUNT/devices/$_d/facts/rotational_hint)"
        assert_match "$_d: explain waits for a measurement" 'waiting for a measurement \(rule speed-unknown\)' \
            "$(cat $BLKMQD_MOUNT/devices/$_d/explain)"
    done
    assert_eq "$SPEED_FAST: nothing written while unknown" mq-deadline "$(_vt_elevator $SPEED_FAST)"
    assert_eq "$SPEED_SLOW: nothing written while unknown" none "$(_vt_elevator $SPEED_SLOW)"
}

# speed_check_classed: fio phase 1 (4 KiB): each disk classed by measurement within two
# windows (WindowSec=10 each, + the 1.5 s tail sample + slack: under TCG a first window can
# land between the bounds, 6.1: vda p50 3.4 ms, then 782 µs, and the class then waits for the
# next one, as documented), the switch once, one "Measured" log line each
speed_check_classed() {
    _t0=$(cut -d' ' -f1 /proc/uptime)
    speed_fio 4k 24
    wait_for_cmd 20 _vt_both_classed || true
    _t1=$(cut -d' ' -f1 /proc/uptime)
    note "classed $(awk "BEGIN { print $_t1 - $_t0 }") s after the I/O began"
    note "$SPEED_FAST: $(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/facts/speed)"
    note "$SPEED_SLOW: $(read_attr $BLKMQD_MOUNT/devices/$SPEED_SLOW/facts/speed)"
    assert_eq "$SPEED_FAST: fast-multiqueue by measurement" fast-multiqueue "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/class)"
    assert_eq "$SPEED_SLOW: many-hctx-slow by measurement" many-hctx-slow "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_SLOW/class)"
    assert_match "$SPEED_FAST: facts/speed fast, p50 and p99" '^fast: p50 [0-9.]+ (µs|ms), p99 ' \
        "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/facts/speed)"
    assert_match "$SPEED_SLOW: facts/speed slow" '^slow: p50 [0-9.]+ (ms|s), p99 ' "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_SLOW/facts/speed)"
    wait_for_cmd 10 _vt_both_elevators none mq-deadline || true
    assert_eq "$SPEED_FAST: none written (the switch)" none "$(_vt_elevator $SPEED_FAST)"
    assert_eq "$SPEED_SLOW: mq-deadline written (the switch)" mq-deadline "$(_vt_elevator $SPEED_SLOW)"
    assert_match "$SPEED_FAST: explain by measurement" 'speed=fast: .* -> fast, by measurement \(rule speed-measured\)' \
        "$(cat $BLKMQD_MOUNT/devices/$SPEED_FAST/explain)"
    assert_match "$SPEED_SLOW: explain by measurement" 'speed=slow: .* -> slow, by measurement \(rule speed-measured\)' \
        "$(cat $BLKMQD_MOUNT/devices/$SPEED_SLOW/explain)"
    wait_for_cmd 5 _vt_speed_logged || true     # (journald takes the line a moment later)
    speed_log >/tmp/speed.log 2>&1 || true
    assert_eq "$SPEED_FAST: one 'Measured' log line" 1 "$(grep -c "$SPEED_FAST: Measured fast (was unmeasured)" /tmp/speed.log)"
    assert_eq "$SPEED_SLOW: one 'Measured' log line" 1 "$(grep -c "$SPEED_SLOW: Measured slow (was unmeasured)" /tmp/speed.log)"
    grep 'Measured ' /tmp/speed.log | sed 's/^/# /'
}

# speed_check_kept: fio phase 2 (64 KiB, another block size): the measurement stays on its
# side, nothing switches back, no further "Measured" line; the metrics say so
speed_check_kept() {
    speed_fio 64k 12
    sleep 2
    note "$SPEED_FAST: $(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/facts/speed)"
    note "$SPEED_SLOW: $(read_attr $BLKMQD_MOUNT/devices/$SPEED_SLOW/facts/speed)"
    assert_eq "$SPEED_FAST: still fast-multiqueue after the 64k phase" fast-multiqueue "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/class)"
    assert_eq "$SPEED_SLOW: still many-hctx-slow after the 64k phase" many-hctx-slow "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_SLOW/class)"
    assert_eq "$SPEED_FAST: still none" none "$(_vt_elevator $SPEED_FAST)"
    assert_eq "$SPEED_SLOW: still mq-deadline" mq-deadline "$(_vt_elevator $SPEED_SLOW)"
    speed_log >/tmp/speed.log 2>&1 || true
    assert_eq "no further 'Measured' line" 2 "$(grep -c ': Measured ' /tmp/speed.log)"
    assert_match "$SPEED_FAST: facts/speed still fast" '^fast: ' "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_FAST/facts/speed)"
    assert_match "$SPEED_SLOW: facts/speed still slow" '^slow: ' "$(read_attr $BLKMQD_MOUNT/devices/$SPEED_SLOW/facts/speed)"
    _sk_met=$(cat $BLKMQD_MOUNT/metrics)
    assert_match "metrics: $SPEED_FAST fast" "blkmqd_disk_speed\\{device=\"$SPEED_FAST\",speed=\"fast\"\\} 1" "$_sk_met"
    assert_match "metrics: $SPEED_SLOW slow" "blkmqd_disk_speed\\{device=\"$SPEED_SLOW\",speed=\"slow\"\\} 1" "$_sk_met"
    assert_match "metrics: $SPEED_SLOW one change" "blkmqd_disk_speed_changes_total\\{device=\"$SPEED_SLOW\"\\} 1" "$_sk_met"
    assert_match "metrics: $SPEED_FAST service time p50" "blkmqd_disk_speed_service_seconds\\{device=\"$SPEED_FAST\",quantile=\"0.5\"\\} " "$_sk_met"
}

# speed_check_stopped: after blkmqd's stop, both elevators as before its start
speed_check_stopped() {
    assert_eq "$SPEED_FAST: stop puts mq-deadline back" mq-deadline "$(_vt_elevator $SPEED_FAST)"
    assert_eq "$SPEED_SLOW: stop puts none back" none "$(_vt_elevator $SPEED_SLOW)"
}

finish() { exit 0; }

reboot_guest() {
    mkdir -p "${_VT_STATE%/*}" /run/vmtest
    printf '_vt_n=%s _vt_pass=%s _vt_fail=%s _vt_skip=%s\n' "$_vt_n" "$_vt_pass" "$_vt_fail" "$_vt_skip" >"$_VT_STATE"
    sync
    : >/run/vmtest/reboot
    _vt_rebooting=1
    exit 0
}

_vt_exit() {
    _rc=$?
    [ -n "$BLKMQD_PID" ] && stop_blkmqd
    if [ -n "$_vt_rebooting" ] && [ "$_rc" -eq 0 ]; then
        _vt_emit "# vmtest boot $VMTEST_BOOT done: scenario=$VMTEST_SCENARIO pass=$_vt_pass fail=$_vt_fail skip=$_vt_skip so far; rebooting"
        [ "$_vt_fail" -gt 0 ] && exit 1
        exit 0
    fi
    rm -f /run/vmtest/reboot
    if [ "$_vt_fail" -gt 0 ]; then _rc=1
    elif [ "$_rc" -eq 0 ] && [ -n "$_vt_skip_all" ]; then _rc=77
    fi
    if [ "$_rc" -ne 0 ] && [ "$_rc" -ne 77 ] && [ "$_vt_fail" -eq 0 ]; then
        _vt_n=$((_vt_n + 1))
        _vt_emit "not ok $_vt_n - scenario aborted with status $_rc (sh -e: a command failed)"
    fi
    if [ -n "$_vt_skip_all" ] && [ "$_vt_n" -eq 0 ]; then
        _vt_emit "1..0 # SKIP $_vt_skip_all"
    else
        [ -n "$_vt_skip_all" ] && skip "$VMTEST_SCENARIO: the rest of the scenario" "$_vt_skip_all"
        _vt_emit "1..$_vt_n"
    fi
    _vt_emit "# vmtest summary: scenario=$VMTEST_SCENARIO pass=$_vt_pass fail=$_vt_fail skip=$_vt_skip rc=$_rc"
    exit "$_rc"
}
trap _vt_exit EXIT
