#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# check-layers.sh LIB1.a LIB2.a ... (lowest layer first)
#
# The static libraries form layers that point one way (HACKING.md "Layers"): a library may
# reference symbols defined in the libraries before it, never in one after it. Meson links static
# libraries inside --start-group/--end-group, so the linker resolves an upward reference silently;
# this check reads the symbol tables instead. Fails listing every upward reference.
# Then it checks itself: the same comparison with the first two layers swapped must flag the
# lower one's symbols that the upper one uses (a filter that never fires proves nothing).
set -eu
NM=${NM:-nm}

defined() { "$NM" --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u; }
undefined() { "$NM" -u "$1" 2>/dev/null | awk '{ print $NF }' | sed 's/@.*//' | sort -u; }

# upward LOWER UPPER: symbols LOWER uses that UPPER defines
upward() { comm -12 "$tmp/u.$(basename "$1")" "$tmp/d.$(basename "$2")"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for lib in "$@"; do
        [ -f "$lib" ] || { echo "missing $lib" >&2; exit 1; }
        defined "$lib" >"$tmp/d.$(basename "$lib")"
        undefined "$lib" >"$tmp/u.$(basename "$lib")"
done

fail=0
i=0
for lower in "$@"; do
        i=$((i + 1))
        j=0
        for upper in "$@"; do
                j=$((j + 1))
                [ "$j" -gt "$i" ] || continue
                bad=$(upward "$lower" "$upper")
                if [ -n "$bad" ]; then
                        echo "FAIL: $(basename "$lower") references $(basename "$upper"), a layer above it:" >&2
                        echo "$bad" | sed 's/^/  /' >&2
                        fail=1
                fi
        done
done
[ "$fail" -eq 0 ] || exit 1

# control: the second layer uses the first, so asking the reverse question must find symbols
ctl=$(upward "$2" "$1")
if [ -z "$ctl" ]; then
        echo "FAIL: control: $(basename "$2") shows no reference to $(basename "$1"): the check is broken" >&2
        exit 1
fi
echo "ok: $# layers, every reference points down ($(for l in "$@"; do printf '%s ' "$(basename "$l")"; done)); control: $(basename "$2") uses $(echo "$ctl" | wc -l) symbol(s) of $(basename "$1")"
