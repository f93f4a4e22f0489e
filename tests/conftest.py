"""pmulab's tests under pytest: the three tiers and the GoogleTest cases.

Tiers (markers, `pytest -m TIER`):
  unit  every GoogleTest case of build/test/unit-tests, one pytest item per case, found
        under the .cpp file that defines it (tests/unit/LAYER/test_X.cpp::Suite.Name);
  host  the Python tests in tests/py that boot nothing;
  qemu  the Python tests that boot pmulab in QEMU: a module that sets QEMU = True, or a
        function named test_qemu_*. They run in parallel under pytest-xdist (-n 2).
Under xdist (`--dist loadgroup`) the unit cases stay together on one worker (the binary
runs once); the host and QEMU tests are spread over the workers. Every test uses its own
temporary folders, so two at a time do not meet (the QEMU tests always ran two at a time).

The binary runs once per session (per worker), for exactly the cases selected (-k, -m,
node ids), with --gtest_output=json; each item then reports its own case, a failure
with GoogleTest's message. A non-zero exit with no failed case (a sanitizer report at
exit, a crash) fails the case that was running, or every case when none can be told.
"""

import json
import os
import subprocess
import tempfile
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# PMULAB_UNIT_TESTS: another GoogleTest binary (a build elsewhere, the conftest's own test).
UNIT_BINARY = os.environ.get("PMULAB_UNIT_TESTS") or os.path.join(ROOT, "build", "test", "unit-tests")
UNIT_DIR = os.path.join(ROOT, "tests", "unit")


# ------------------------------------------------------------------ the GoogleTest cases

class GtestRun:
    """One run of the binary over the selected cases: case name -> (status, message)."""

    def __init__(self) -> None:
        self.results: Optional[Dict[str, Tuple[str, str]]] = None

    def result(self, case: str, selected: List[str]) -> Tuple[str, str]:
        if self.results is None:
            self.results = self._run(selected)
        return self.results.get(case, ("FAIL", f"{case}: the binary reported nothing for this case"))

    @staticmethod
    def _run(selected: List[str]) -> Dict[str, Tuple[str, str]]:
        with tempfile.TemporaryDirectory() as td:
            report = os.path.join(td, "gtest.json")
            cmd = [UNIT_BINARY, f"--gtest_output=json:{report}", "--gtest_brief=1"]
            if len(selected) < len(_gtest_listing()[0]):
                cmd.append("--gtest_filter=" + ":".join(selected))
            # From the root: the fuzz replays find tests/fuzz from the working directory.
            r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            data = None
            if os.path.exists(report):
                with open(report) as f:
                    data = json.load(f)
        tail = r.stdout[-4000:]
        if data is None:
            why = f"the binary crashed (exit {r.returncode}) before writing its report:\n{tail}"
            return {c: ("FAIL", why) for c in selected}
        out: Dict[str, Tuple[str, str]] = {}
        for suite in data.get("testsuites", []):
            for t in suite.get("testsuite", []):
                name = f"{suite['name']}.{t['name']}"
                if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                    out[name] = ("SKIP", t.get("skipped", {}).get("message", "") if isinstance(
                        t.get("skipped"), dict) else "skipped by GoogleTest")
                elif t.get("failures"):
                    out[name] = ("FAIL", "\n".join(f.get("failure", "").strip() for f in t["failures"]))
                else:
                    out[name] = ("PASS", "")
        if r.returncode != 0 and not any(s == "FAIL" for s, _ in out.values()):
            # A report at exit (LeakSanitizer) or a crash inside a case: the JSON lacks the
            # case that was running, or every case passed. Fail the missing ones, else all.
            why = f"exit status {r.returncode} with no failed case (sanitizer report?):\n{tail}"
            missing = [c for c in selected if c not in out]
            for c in missing or selected:
                out[c] = ("FAIL", why)
        return out


_GTEST_RUN = GtestRun()
_listing: Optional[Tuple[List[str], Dict[str, List[str]], str]] = None


def _gtest_listing() -> Tuple[List[str], Dict[str, List[str]], str]:
    """(every case, cases by the source file that defines them, an error or "")."""
    global _listing
    if _listing is not None:
        return _listing
    cases: List[str] = []
    by_file: Dict[str, List[str]] = {}
    error = ""
    if not os.path.exists(UNIT_BINARY):
        error = f"{UNIT_BINARY} is missing (make build/test/unit-tests)"
    else:
        with tempfile.TemporaryDirectory() as td:
            report = os.path.join(td, "list.json")
            r = subprocess.run([UNIT_BINARY, "--gtest_list_tests", f"--gtest_output=json:{report}"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0 or not os.path.exists(report):
                error = f"{UNIT_BINARY} --gtest_list_tests failed (exit {r.returncode}):\n{r.stdout[-2000:]}"
            else:
                with open(report) as f:
                    data = json.load(f)
                for suite in data.get("testsuites", []):
                    for t in suite.get("testsuite", []):
                        name = f"{suite['name']}.{t['name']}"
                        cases.append(name)
                        src = os.path.realpath(os.path.join(ROOT, t.get("file", "")))
                        by_file.setdefault(src, []).append(name)
    _listing = (cases, by_file, error)
    return _listing


class GtestCase(pytest.Item):
    """One GoogleTest case; runs (with the others) when the first of them is run."""

    def __init__(self, *, case: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker(pytest.mark.unit)
        self.add_marker(pytest.mark.xdist_group("unit"))

    def runtest(self) -> None:
        if _listing is not None and _listing[2]:
            raise GtestFailure(_listing[2])
        selected = [i.case for i in self.session.items if isinstance(i, GtestCase) and i.case]
        status, msg = _GTEST_RUN.result(self.case, selected)
        if status == "SKIP":
            pytest.skip(msg or "skipped by GoogleTest")
        if status != "PASS":
            raise GtestFailure(msg)

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if isinstance(excinfo.value, GtestFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):  # type: ignore[override]
        return self.path, None, f"unit-tests {self.case}"


class GtestFailure(Exception):
    """A GoogleTest case failed; the message is GoogleTest's own."""


class GtestFile(pytest.File):
    """A tests/unit/**/*.cpp file: the cases it defines. The first file (in sorted order)
    also holds the cases whose source file is none of them, and the listing's error."""

    def collect(self) -> Iterator[pytest.Item]:
        cases, by_file, error = _gtest_listing()
        here = os.path.realpath(str(self.path))
        mine = list(by_file.get(here, []))
        files = _unit_files()
        if files and here == files[0]:
            mine += [c for f, cs in by_file.items() if f not in files for c in cs]
            if error:
                yield GtestCase.from_parent(self, name="unit-tests", case="")
        for case in mine:
            yield GtestCase.from_parent(self, name=case, case=case)


def _unit_files() -> List[str]:
    """The .cpp files below tests/unit (real paths, sorted)."""
    return sorted(os.path.realpath(os.path.join(d, f)) for d, _, fs in os.walk(UNIT_DIR) for f in fs
                  if f.endswith(".cpp"))


def pytest_collect_file(file_path, parent):
    p = str(file_path)
    if p.endswith(".cpp") and os.path.realpath(p).startswith(os.path.realpath(UNIT_DIR) + os.sep):
        return GtestFile.from_parent(parent, path=file_path)
    return None


# ------------------------------------------------------------------ host and QEMU tiers

def _boots_qemu(item: pytest.Item) -> bool:
    mod = getattr(item, "module", None)
    return bool(getattr(mod, "QEMU", False)) or item.name.startswith("test_qemu_")


TIER_ORDER = {"unit": 0, "host": 1, "qemu": 2}


@pytest.hookimpl(tryfirst=True)  # before -m deselects and xdist reads the groups
def pytest_collection_modifyitems(config, items):
    tier = {}
    for item in items:
        if isinstance(item, GtestCase):
            tier[item.nodeid] = "unit"
            continue
        tier[item.nodeid] = "qemu" if _boots_qemu(item) else "host"
        item.add_marker(getattr(pytest.mark, tier[item.nodeid]))
    # The unit cases first (one binary run, on one worker), then the quick host tests,
    # then the boots: fast failures come first, and the workers stay busy to the end.
    items.sort(key=lambda i: TIER_ORDER[tier[i.nodeid]])
