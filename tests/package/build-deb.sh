#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-deb.sh SOURCE_ROOT OUTPUT_DEB [LOG]   (one at a time per OUTPUT_DEB: flock on OUTPUT_DEB.lock)
#
# The Debian package as a user builds it: `dpkg-buildpackage -us -uc -b` in a clean copy of
# the source (the files git tracks, as they are in the work tree: a clone of what would be
# committed; every file when SOURCE_ROOT is no git checkout), then the .deb copied to
# OUTPUT_DEB and the build's lintian run next to it (OUTPUT_DEB.lintian). The package builds
# without the test programs (debian/rules: -Dtests=false); a second run on the same sources
# (their content hashed, OUTPUT_DEB.key) keeps the .deb. Exit status: dpkg-buildpackage's.
set -eu

src=$1
out=$2
log=${3:-$out.log}
mkdir -p "$(dirname "$out")"
# one build at a time for this output (the package test and the VM tests share it)
exec 9>"$out.lock"
flock 9
tmp=$(mktemp -d /tmp/blkmqd-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/blkmqd"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # tracked files only: no build directory, nothing untracked or ignored
        (cd "$src" && git ls-files -z --cached | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
                tar --null -T - -cf -) | tar -C "$tmp/blkmqd" -xf -
else
        (cd "$src" && tar --exclude=./build --exclude='./build-*' -cf - .) | tar -C "$tmp/blkmqd" -xf -
fi
# The same sources as the last build (their content hashed): the .deb stands.
key=$(cd "$tmp/blkmqd" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
        echo "$out: built from these sources already"
        exit 0
fi
rm -f "$out.key"
cd "$tmp/blkmqd"
# parallel=2: the README's machine has two CPUs
if ! DEB_BUILD_OPTIONS="parallel=${BLKMQD_DEB_JOBS:-2}" dpkg-buildpackage -us -uc -b >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        exit 1
fi
deb=$(ls "$tmp"/blkmqd_*.deb)
lintian --info --display-info --pedantic "$tmp"/blkmqd_*.changes >"$out.lintian" 2>&1 || true
cp "$deb" "$out"
echo "$key" >"$out.key"
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes); lintian: $out.lintian"
