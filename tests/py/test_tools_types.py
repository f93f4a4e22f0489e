"""The Python tools (the package tools/pmulab) are clean under mypy, with the settings of
tools/pyproject.toml; mypy is Debian's package for the interpreter running the tests."""

import importlib.util
import os
import subprocess
import sys

from pmulab_test import BUILD, ROOT


def test_tools_package_is_mypy_clean():
    assert importlib.util.find_spec("mypy") is not None, (
        f"mypy is missing for {sys.executable}: run `make deps` (Debian: apt-get install mypy)")
    p = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
                        "--cache-dir", os.path.join(BUILD, "mypy-cache")],
                       cwd=os.path.join(ROOT, "tools"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout
