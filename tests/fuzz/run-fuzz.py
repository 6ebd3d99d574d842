#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
run-fuzz.py FUZZER CORPUS_DIR [RUNS] [MAX_SECONDS]

CI smoke run of one libFuzzer target: the seed corpus (tests/fuzz/corpus/<target>/, read
only) plus a throw-away dir for new inputs, -runs=RUNS (default 20000) or MAX_SECONDS
(default 15), whichever ends first. A crash, leak or sanitizer report fails the test;
libFuzzer writes the reproducer (crash-<sha1>) into a temp dir and this script prints it:
add it to the corpus as a regression seed once fixed.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    fuzzer, corpus = sys.argv[1], sys.argv[2]
    runs = sys.argv[3] if len(sys.argv) > 3 else "20000"
    secs = sys.argv[4] if len(sys.argv) > 4 else "15"
    with tempfile.TemporaryDirectory(prefix="blkmqd-fuzz-") as tmp:
        new = os.path.join(tmp, "new")
        os.mkdir(new)
        cmd = [fuzzer, f"-runs={runs}", f"-max_total_time={secs}", "-seed=1", "-max_len=4096",
               "-timeout=10", "-rss_limit_mb=1024", f"-artifact_prefix={tmp}/", "-print_final_stats=1", new, corpus]
        print(" ".join(cmd), flush=True)
        r = subprocess.run(cmd)
        if r.returncode != 0:
            for f in os.listdir(tmp):
                if f != "new":
                    p = os.path.join(tmp, f)
                    keep = os.path.join(os.environ.get("MESON_BUILD_ROOT", "/tmp"), f"{os.path.basename(fuzzer)}-{f}")
                    shutil.copy(p, keep)
                    with open(p, "rb") as fh:
                        print(f"reproducer {keep}: {fh.read()[:200]!r}")
        # libFuzzer exits 77 on a crash by default (-error_exitcode), which meson reads as
        # SKIP: any failure is a failure here.
        return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
