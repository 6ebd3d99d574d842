#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-no-sys-literals.sh SOURCE_ROOT
#
# hostfs is the only code that touches /sys and /proc (STYLE.md "hostfs"): no C string
# literal may start with /sys or /proc in *.c / *.h outside host/hostfs*, tests/ and
# bench/. Uses `git grep` in a git checkout (tracked files), grep -r otherwise.
# An escaped quote (\"/proc/..\" inside a log message) does not start a literal.
set -eu

root=$1
cd "$root"

# a '"' not preceded by a backslash, then /sys or /proc and a non-name character
pattern='(^|[^\\])"/(sys|proc)([/"]|$)'

self_test() {
        tmp=$(mktemp -d)
        printf 'static const char *p = "/sys/block";\n' > "$tmp/a.c"
        printf 'log("Writing \\"%%s\\" to \\"/proc/%%s\\"");\nconst char *s = "sysfs/proc";\n' > "$tmp/b.c"
        a=$(grep -E -c "$pattern" "$tmp/a.c" || true)
        b=$(grep -E -c "$pattern" "$tmp/b.c" || true)
        rm -rf "$tmp"
        if [ "$a" != 1 ] || [ "$b" != 0 ]; then
                echo "FAIL: pattern self-test (a=$a, expected 1; b=$b, expected 0)" >&2
                exit 1
        fi
}
self_test

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        hits=$(git grep -n -E "$pattern" -- '*.c' '*.h' ':!host/hostfs*' ':!tests/' ':!bench/' || true)
else
        hits=$(grep -r -n -E "$pattern" --include='*.c' --include='*.h' . \
                | grep -v -E '^\./(host/hostfs|tests/|bench/|build[^/]*/)' || true)
fi

if [ -n "$hits" ]; then
        echo "FAIL: \"/sys or \"/proc literals outside host/hostfs* (go through hostfs):" >&2
        echo "$hits" | sed 's/^/  /' >&2
        exit 1
fi
echo "ok: no \"/sys or \"/proc literal outside host/hostfs*, tests/, bench/"
