"""Build-system properties: concurrent builds of the same tree do not trip over each other."""

import os
import subprocess
import tempfile

from pmulab_test import ROOT


def test_version_header_written_atomically_by_concurrent_makes():
    # Two makes rewriting build/gen/pmulab_version.h at once used to share one
    # `.tmp` file: one `mv`ed it away under the other, which then failed.
    with tempfile.TemporaryDirectory() as td:
        for _ in range(40):
            # A different VERSION each round forces both makes to rewrite the header.
            env = dict(os.environ)
            procs = [subprocess.Popen(["make", "-s", f"BUILD={td}", f"{td}/gen/pmulab_version.h"],
                                      cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(4)]
            for p in procs:
                out, err = p.communicate(timeout=60)
                assert p.returncode == 0, f"make failed ({p.returncode}): {err}"
            os.remove(f"{td}/gen/pmulab_version.h")
        leftovers = [n for n in os.listdir(f"{td}/gen") if n != "pmulab_version.h"]
        assert leftovers == [], leftovers
