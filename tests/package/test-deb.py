#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
test-deb.py BUILD_DEB_SH SOURCE_ROOT BLKMQD_DEB: the Debian package, built by build-deb.sh
(dpkg-buildpackage -us -uc -b from a clean copy of the source; kept when the sources are those
it was built from) into BLKMQD_DEB.

(p) it holds the daemon, blkmqctl, the unit in /lib/systemd/system, the tmpfiles entry, the
    journal catalog, the configuration (a conffile), man pages and bash completion, and no test
    program; its maintainer scripts enable and start the unit on install (deb-systemd-helper,
    deb-systemd-invoke: dh_installsystemd), restart it after an upgrade, create /run/blkmqd
    (systemd-tmpfiles), restore and stop it on removal, and remove /var/lib/blkmqd and the
    metrics file on purge; lintian (--pedantic, with --info) reports nothing that
    debian/blkmqd.lintian-overrides does not override with a comment saying why.
The VM suite installs the same .deb with apt (tests/vm/systemd/service.sh).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import blkmqd_test as bt  # noqa: E402
from blkmqd_test import check  # noqa: E402

OVERRIDES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "debian", "blkmqd.lintian-overrides")


def main():
    builder, src, deb = sys.argv[1:4]
    for tool in ("dpkg-buildpackage", "dh", "lintian", "fakeroot"):
        check(shutil.which(tool) is not None, f"(p) {tool} is installed (tools/install-deps.sh --tests)")
    r = subprocess.run([builder, src, deb], capture_output=True, text=True)
    print("   " + (r.stdout + r.stderr).strip().replace("\n", "\n   "))
    check(r.returncode == 0 and os.path.exists(deb), f"(p) dpkg-buildpackage -us -uc -b from a clean copy: rc {r.returncode}")
    if not os.path.exists(deb):
        return bt.finish()
    files = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
    paths = {l.split()[-1].lstrip(".") if " -> " not in l else l.split(" -> ")[0].split()[-1].lstrip(".")
             for l in files.splitlines()}
    for p in ("/usr/sbin/blkmqd", "/usr/bin/blkmqctl", "/lib/systemd/system/blkmqd.service",
              "/usr/lib/tmpfiles.d/blkmqd.conf", "/usr/lib/systemd/catalog/blkmqd.catalog", "/etc/blkmqd/blkmqd.conf",
              "/usr/share/man/man8/blkmqd.8.gz", "/usr/share/man/man8/blkmqctl.8.gz", "/usr/share/man/man5/blkmqd.conf.5.gz",
              "/usr/share/bash-completion/completions/blkmqctl", "/usr/share/doc/blkmqd/copyright"):
        check(p in paths, f"(p) the package has {p}")
    check(not any("net-capture" in p or "/test" in p or "fuzz" in p for p in paths),
          f"(p) no test program in the package: {[p for p in paths if 'test' in p or 'fuzz' in p]}")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-e", deb, tmp], check=True)
        conffiles = open(os.path.join(tmp, "conffiles")).read().split() if os.path.exists(os.path.join(tmp, "conffiles")) else []
        check(conffiles == ["/etc/blkmqd/blkmqd.conf"], f"(p) conffiles: /etc/blkmqd/blkmqd.conf: {conffiles}")
        script = lambda n: open(os.path.join(tmp, n)).read() if os.path.exists(os.path.join(tmp, n)) else ""  # noqa: E731
        post, pre, rm = script("postinst"), script("prerm"), script("postrm")
        check("deb-systemd-helper" in post and "enable" in post and re.search(r"deb-systemd-invoke \$_dh_action .*blkmqd.service", post),
              "(p) postinst enables the unit and starts it (restart after an upgrade: $_dh_action)")
        check("systemd-tmpfiles" in post and "blkmqd.conf" in post, "(p) postinst creates /run/blkmqd (systemd-tmpfiles)")
        check(re.search(r'"\$1" = remove \].*\n\s*timeout 30 sh -c .echo 1 > /run/blkmqd/restore', pre) and
              re.search(r"deb-systemd-invoke stop .*blkmqd.service", pre),
              "(p) prerm on removal: restore (modprobe.d too), then stop (every runtime value back)")
        check(re.search(r'"\$1" = purge \].*\n\s*rm -rf /var/lib/blkmqd\n\s*rm -f /var/lib/prometheus/node-exporter/blkmqd.prom', rm),
              "(p) postrm on purge removes /var/lib/blkmqd and the metrics file")
    lint = open(deb + ".lintian").read() if os.path.exists(deb + ".lintian") else None
    check(lint is not None, "(p) lintian ran")
    tags = [l for l in (lint or "").splitlines() if re.match(r"^[EWIPX]: ", l)]
    check(not tags, f"(p) lintian --pedantic --info: nothing left (every tag fixed or overridden with its reason): {tags}")
    if os.path.exists(OVERRIDES):
        text = open(OVERRIDES).read().splitlines()
        bare = [l for i, l in enumerate(text) if l.strip() and not l.startswith("#") and (i == 0 or not text[i - 1].startswith("#"))]
        check(not bare, f"(p) every lintian override has a comment above it saying why: {bare}")
    return bt.finish()


if __name__ == "__main__":
    sys.exit(main())
