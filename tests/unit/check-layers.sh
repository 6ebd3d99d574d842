#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-layers.sh LAYER... (lowest layer first)
#
# Each LAYER is a static library, or several joined by commas: peers, side by side, that may not
# reference each other (facts/ and apply/). The folders form layers that point one way
# (HACKING.md "Layers"): a library may reference symbols defined in the layers before it, never
# in its own peers or in a layer after it. Meson links static libraries inside
# --start-group/--end-group, so the linker resolves an upward reference silently; this check
# reads the symbol tables instead. Fails listing every upward or sideways reference.
#
# Then it checks itself, once for every library but the top one: the library with one
# object added that calls a function of the next layer up (or of a peer) must be flagged. A
# filter that never fires proves nothing. CC (default cc) compiles that object.
set -eu
NM=${NM:-nm}
CC=${CC:-cc}

defined() { "$NM" --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u; }
funcs() { "$NM" --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 && $2 == "T" { print $3 }' | sort -u; }
undefined() { "$NM" -u "$1" 2>/dev/null | awk '{ print $NF }' | sed 's/@.*//' | sort -u; }
name() { basename "$1"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# layer of each library (1 = lowest) and the libraries in order
n=0
libs=""
for layer in "$@"; do
        n=$((n + 1))
        for lib in $(echo "$layer" | tr ',' ' '); do
                [ -f "$lib" ] || { echo "missing $lib" >&2; exit 1; }
                echo "$n" >"$tmp/layer.$(name "$lib")"
                libs="$libs $lib"
        done
done
top=$n

# bad LOWER_UNDEF_FILE LOWER_NAME: every reference LOWER makes to a peer or a layer above it,
# one line "UPPER: symbol"
bad() {
        lo=$(cat "$tmp/layer.$2")
        for upper in $libs; do
                [ "$(name "$upper")" != "$2" ] || continue
                [ "$(cat "$tmp/layer.$(name "$upper")")" -ge "$lo" ] || continue
                comm -12 "$1" "$tmp/d.$(name "$upper")" | sed "s/^/$(name "$upper"): /"
        done
}

for lib in $libs; do
        defined "$lib" >"$tmp/d.$(name "$lib")"
        undefined "$lib" >"$tmp/u.$(name "$lib")"
done

fail=0
for lib in $libs; do
        found=$(bad "$tmp/u.$(name "$lib")" "$(name "$lib")")
        if [ -n "$found" ]; then
                echo "FAIL: $(name "$lib") references a peer or a layer above it:" >&2
                echo "$found" | sed 's/^/  /' >&2
                fail=1
        fi
done
[ "$fail" -eq 0 ] || exit 1

# Negative controls: every library but the top layer gets a deliberate call upward (to the
# lowest layer above it that defines a function; peers also to each other), through a real
# object added to its members, and the same comparison must flag exactly that call.
controls=0
for lib in $libs; do
        lo=$(cat "$tmp/layer.$(name "$lib")")
        [ "$lo" -lt "$top" ] || continue
        # its peers, and every library of the lowest layer above it that defines a function
        targets=""
        for upper in $libs; do
                [ "$(name "$upper")" != "$(name "$lib")" ] || continue
                if [ "$(cat "$tmp/layer.$(name "$upper")")" -eq "$lo" ]; then
                        targets="$targets $upper"
                fi
        done
        l=$((lo + 1))
        above=""
        while [ -z "$above" ] && [ "$l" -le "$top" ]; do
                for upper in $libs; do
                        [ "$(cat "$tmp/layer.$(name "$upper")")" -eq "$l" ] || continue
                        if [ -n "$(funcs "$upper" | head -n 1)" ]; then
                                above="$above $upper"
                        fi
                done
                l=$((l + 1))
        done
        targets="$targets $above"
        for upper in $targets; do
                sym=$(funcs "$upper" | head -n 1)
                [ -n "$sym" ] || continue
                printf 'extern void %s(void);\nvoid blkmqd_layer_probe(void);\nvoid blkmqd_layer_probe(void) { %s(); }\n' \
                        "$sym" "$sym" >"$tmp/probe.c"
                "$CC" -c -o "$tmp/probe.o" "$tmp/probe.c"
                # the library as if the object were one of its members (meson's archives are thin)
                { undefined "$lib"; undefined "$tmp/probe.o"; } | sort -u >"$tmp/u.copy"
                got=$(bad "$tmp/u.copy" "$(name "$lib")")
                if [ "$got" != "$(name "$upper"): $sym" ]; then
                        echo "FAIL: control: a call from $(name "$lib") to $sym ($(name "$upper")) was not flagged alone (got: ${got:-nothing}): the check is broken" >&2
                        exit 1
                fi
                controls=$((controls + 1))
        done
done
[ "$controls" -gt 0 ] || { echo "FAIL: no negative control ran" >&2; exit 1; }
echo "ok: $top layers, every reference points down ($(for l in "$@"; do printf '%s ' "$(echo "$l" | tr ',' '\n' | while read -r x; do basename "$x"; done | paste -sd+)"; done)); $controls deliberate upward or sideways calls flagged"
