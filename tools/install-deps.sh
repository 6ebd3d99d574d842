#!/bin/sh
# Install the Debian 12 packages blkmqd needs.
#   tools/install-deps.sh          build and run the daemon (with its man pages: scdoc) and
#                                  build its Debian package (debhelper, dpkg-dev)
#   tools/install-deps.sh --tests  also everything the test suites use
set -eu

RUN="meson ninja-build pkg-config gcc libc6-dev libudev-dev libfuse3-dev fuse3 libsystemd-dev libinih-dev
     clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev kmod util-linux scdoc
     libnl-3-dev libnl-route-3-dev libnl-genl-3-dev debhelper dpkg-dev"
TESTS="dmsetup umockdev libumockdev-dev valgrind libclang-rt-14-dev fio inotify-tools ethtool iproute2
       qemu-system-x86 qemu-utils nbd-client open-iscsi busybox-static cpio udev mmdebstrap e2fsprogs
       prometheus prometheus-node-exporter curl python3
       fakeroot lintian"

pkgs="$RUN"
[ "${1:-}" = "--tests" ] && pkgs="$RUN $TESTS"

if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: run as root (apt-get install)" >&2
        exit 1
fi

missing=""
for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
        echo "install-deps: all packages present"
        exit 0
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# prometheus-node-exporter, prometheus, nbd-client and open-iscsi ship services; never start them on install.
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get install -y -qq --no-install-recommends $missing
