#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Boot one VM per tests/vm/scenarios/capture-*.sh and unpack the captured trees into
# tests/fixtures/<name>/ (replacing what was there); <name> is vm-<kernel series>-<device>.
#   tests/vm/capture-fixtures.sh [--kernel 6.1|6.12] [SCENARIO...]   (default: 6.1, all capture-*.sh)
# Environment: BLKMQD_VM_CACHE (default /var/tmp/blkmqd-vm-cache), PYTHON (/usr/bin/python3)
set -eu
kernel=${BLKMQD_VM_KERNEL:-6.1}
if [ "${1:-}" = --kernel ]; then kernel=$2; shift 2; fi
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${BLKMQD_VM_CACHE:-/var/tmp/blkmqd-vm-cache}
py=${PYTHON:-/usr/bin/python3}
[ $# -gt 0 ] || set -- "$top"/tests/vm/scenarios/capture-*.sh
share=$(mktemp -d /tmp/blkmqd-capture.XXXXXX)
trap 'rm -rf "$share"' EXIT
rc=0
for s in "$@"; do
    log="$share/$(basename "$s" .sh)-$kernel.log"
    if ! "$py" "$top/tests/vm/harness.py" run --cache "$cache" --kernel "$kernel" --scenario "$s" \
            --share "$share" --log "$log"; then
        echo "capture-fixtures: $s failed (console log follows)" >&2
        tail -n 40 "$log" >&2
        rc=1
        continue
    fi
    for t in "$share"/*.tar; do
        [ -f "$t" ] || continue
        name=$(basename "$t" .tar)
        rm -rf "$top/tests/fixtures/$name"
        mkdir -p "$top/tests/fixtures"
        tar -C "$top/tests/fixtures" -xpf "$t"
        rm -f "$t"
        echo "capture-fixtures: tests/fixtures/$name: $(grep -c '^f' "$top/tests/fixtures/$name/TREE") files, $(du -s --apparent-size -k "$top/tests/fixtures/$name" | cut -f1) KiB"
    done
done
exit $rc
