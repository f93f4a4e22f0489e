#!/usr/bin/env python3
"""pmulab's test command (`make test`, `make check`): pytest, then one summary line.

  tests/run_tests.py                    every tier: unit, host, qemu (QEMU tests on -n 2)
  tests/run_tests.py --only host        one tier: unit | host | qemu | py (host + qemu)
  tests/run_tests.py -m "not qemu"      what `make check` runs (unit + host)
  tests/run_tests.py -k topdown         tests whose name matches (pytest -k)
  tests/run_tests.py --jobs 1           no xdist (PMULAB_TEST_JOBS; default 2)
Any other argument goes to pytest as it is (a node id, -x, -vv, --lf, ...).

The tests are collected by pytest from tests/ (pytest.ini, tests/conftest.py): the
GoogleTest cases of build/test/unit-tests, tests/py/test_*.py, and the mypy check of
tools/. The interpreter is this one when it has pytest, pytest-xdist and mypy, else
/usr/bin/python3 (Debian's python3-pytest, python3-pytest-xdist and mypy serve that one;
a python3 earlier on PATH, e.g. pyenv's, may lack them): it says so on stderr.

After pytest's own summary the last line is "N passed, N failed" (", N skipped" when
any); a collection error counts as failed. Exit status 0 when nothing failed and some
test ran; 1 a failure; 5 no test was collected (pytest's own status, never a pass);
2 pytest cannot be found or bad arguments.
"""

import importlib.util
import os
import sys
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEM_PYTHON = "/usr/bin/python3"
NEEDED = ("pytest", "xdist", "mypy")
TIERS = {"unit": "unit", "host": "host", "qemu": "qemu", "py": "host or qemu"}


def missing_modules() -> List[str]:
    return [m for m in NEEDED if importlib.util.find_spec(m) is None]


def pick_interpreter(argv: List[str]) -> None:
    """Re-runs this script under /usr/bin/python3 when this interpreter lacks pytest,
    xdist or mypy and that one is another interpreter; returns when this one will do."""
    missing = missing_modules()
    if not missing:
        return
    here = os.path.realpath(sys.executable)
    if os.path.exists(SYSTEM_PYTHON) and os.path.realpath(SYSTEM_PYTHON) != here \
            and not os.environ.get("PMULAB_TEST_REEXEC"):
        print(f"pmulab: {sys.executable} has no {', '.join(missing)}; the tests run with {SYSTEM_PYTHON}",
              file=sys.stderr)
        os.environ["PMULAB_TEST_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__), *argv])
    if "pytest" in missing:
        print(f"pmulab: pytest is missing for {sys.executable}: run `make deps` (Debian: apt-get install "
              "python3-pytest python3-pytest-xdist mypy)", file=sys.stderr)
        sys.exit(2)


class Counter:
    """Counts every test once: failed if any phase failed, else skipped, else passed."""

    def __init__(self) -> None:
        self.outcome: Dict[str, str] = {}
        self.collect_errors = 0

    def pytest_runtest_logreport(self, report) -> None:
        old = self.outcome.get(report.nodeid)
        if report.failed:
            self.outcome[report.nodeid] = "failed"
        elif report.skipped and old != "failed":
            self.outcome[report.nodeid] = "skipped"
        elif report.when == "call" and old is None:
            self.outcome[report.nodeid] = "passed"

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collect_errors += 1

    def summary(self) -> str:
        n = {k: list(self.outcome.values()).count(k) for k in ("passed", "failed", "skipped")}
        line = f"{n['passed']} passed, {n['failed'] + self.collect_errors} failed"
        return line + (f", {n['skipped']} skipped" if n["skipped"] else "")

    def failed(self) -> int:
        return list(self.outcome.values()).count("failed") + self.collect_errors


def pytest_args(argv: List[str]) -> List[str]:
    """This script's own options (--only, --jobs) as pytest options; the rest as they are."""
    out: List[str] = []
    jobs = int(os.environ.get("PMULAB_TEST_JOBS", "2"))
    i = 0
    while i < len(argv):
        a = argv[i]
        value: Optional[str] = None
        for opt in ("--only", "--jobs"):
            if a == opt and i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            elif a.startswith(opt + "="):
                value = a.split("=", 1)[1]
            if value is not None:
                break
        if value is None:
            out.append(a)
        elif a.startswith("--only"):
            if value not in TIERS:
                sys.exit(f"run_tests: --only {value!r}: one of {', '.join(TIERS)}")
            out += ["-m", TIERS[value]]
        else:
            jobs = int(value)
        i += 1
    if jobs > 1 and not any(a.startswith(("-n", "--numprocesses")) for a in out):
        if importlib.util.find_spec("xdist") is None:
            print("pmulab: pytest-xdist is missing (apt-get install python3-pytest-xdist); one test at a time",
                  file=sys.stderr)
        else:
            out = ["-n", str(jobs), "--dist", "loadgroup", *out]
    return out


def main(argv: List[str]) -> int:
    pick_interpreter(argv)
    import pytest

    os.chdir(ROOT)
    counter = Counter()
    args = pytest_args(argv)
    rc = int(pytest.main(args, plugins=[counter]))
    print(counter.summary(), flush=True)
    if rc == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("run_tests: no test was collected or selected: nothing ran", file=sys.stderr)
        return rc
    if counter.failed():
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
