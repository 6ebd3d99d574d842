# SPDX-License-Identifier: GPL-2.0-or-later
# guest-lib.sh — helpers for blkmqd VM scenarios (busybox ash; sourced by every scenario).
#
# Output is TAP-like: "ok N - what", "not ok N - what", "ok N - what # SKIP why", comments
# start with "# ".  Assertions never abort the scenario (it runs under `sh -e`): they count
# and return 0.  An EXIT trap prints the summary line
#     # vmtest summary: scenario=NAME pass=P fail=F skip=S rc=RC
# and sets the exit code: 1 if any assertion failed, 77 if skip_all/need_blkmqd asked for a
# skip and nothing failed, otherwise the shell's own status (non-zero if `sh -e` aborted).
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
#                                         $BLKMQD_MOUNT/version (30 s)
#   stop_blkmqd                           SIGTERM, wait for exit and unmount (10 s)
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
#   finish                                explicit end (optional; the EXIT trap does the same)

: "${BLKMQD:=/opt/blkmqd/blkmqd}"
: "${BLKMQD_MOUNT:=/run/blkmqd}"
: "${VMTEST_SCENARIO:=scenario}"
_vt_n=0
_vt_pass=0
_vt_fail=0
_vt_skip=0
_vt_skip_all=""
_vt_hmp_seq=0
HMP_OUT=""
BLKMQD_PID=""

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

start_blkmqd() {
    have_blkmqd || { fail "start_blkmqd" "$BLKMQD not packed"; return 1; }
    mkdir -p "$BLKMQD_MOUNT"
    "$BLKMQD" "$@" >/tmp/blkmqd.log 2>&1 &
    BLKMQD_PID=$!
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
    sed 's/^/# blkmqd: /' /tmp/blkmqd.log 2>/dev/null | tail -n 20
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

finish() { exit 0; }

_vt_exit() {
    _rc=$?
    [ -n "$BLKMQD_PID" ] && stop_blkmqd
    if [ "$_vt_fail" -gt 0 ]; then _rc=1
    elif [ "$_rc" -eq 0 ] && [ -n "$_vt_skip_all" ]; then _rc=77
    fi
    [ "$_rc" -ne 0 ] && [ "$_rc" -ne 77 ] && [ "$_vt_fail" -eq 0 ] &&
        _vt_emit "not ok - scenario aborted with status $_rc (sh -e: a command failed)"
    [ -n "$_vt_skip_all" ] && _vt_emit "# SKIP $_vt_skip_all"
    _vt_emit "1..$_vt_n"
    _vt_emit "# vmtest summary: scenario=$VMTEST_SCENARIO pass=$_vt_pass fail=$_vt_fail skip=$_vt_skip rc=$_rc"
    exit "$_rc"
}
trap _vt_exit EXIT
