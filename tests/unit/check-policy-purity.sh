#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-policy-purity.sh POLICY_LIB.a CONTROL_LIB.a
#
# policies/ is pure (STYLE.md, policies/meson.build): its static library must not
# reference any I/O entry point nor libudev/libfuse/libsystemd. Fails listing every
# forbidden undefined symbol. CONTROL_LIB (libblkmqd-host.a, which does I/O) must be
# flagged by the same filter, proving the check can fail.
set -eu

policy=$1
control=$2
NM=${NM:-nm}

forbidden() {
        # nm -u prints "                 U openat" (maybe "openat@GLIBC_2.4" in objects)
        "$NM" -u "$1" 2>/dev/null | awk '{ print $NF }' | sed 's/@.*//' | sort -u | grep -E \
                '^(open|open64|openat|openat64|__open_2|__openat_2|__open64_2|read|pread|pread64|__read_chk|write|pwrite|pwrite64|fopen|fopen64|freopen|opendir|fdopendir|readdir|readdir64|scandir|syscall|ioctl|socket|connect|mount|umount2|stat|lstat|fstatat|statx|readlink|readlinkat|access|faccessat|unlink|unlinkat|creat|udev_.*|fuse_.*|sd_.*|nl_.*|nla_.*|nlmsg_.*|rtnl_.*|genl_.*|genlmsg_.*)$' || true
}

[ -f "$policy" ] || { echo "missing $policy" >&2; exit 1; }
[ -f "$control" ] || { echo "missing $control" >&2; exit 1; }

bad=$(forbidden "$policy")
if [ -n "$bad" ]; then
        echo "FAIL: $policy references forbidden symbols (policies/ must be pure):" >&2
        echo "$bad" | sed 's/^/  /' >&2
        exit 1
fi

ctl=$(forbidden "$control")
if [ -z "$ctl" ]; then
        echo "FAIL: control $control shows no I/O symbols: the nm filter is broken" >&2
        exit 1
fi
echo "ok: $(basename "$policy") references no I/O, udev_, fuse_ or sd_ symbol (control flagged: $(echo $ctl | tr '\n' ' '))"
