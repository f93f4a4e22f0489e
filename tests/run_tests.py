#!/usr/bin/env python3
"""pmulab's test driver (`make test`).

Runs, in order:
  1. the host unit tests (GoogleTest binary build/test/unit-tests), counted per test;
  2. every `test_*` function in tests/py/test_*.py (host tools and QEMU boots).
A test function takes no arguments, raises AssertionError (or any exception) to
fail, and may raise Skip("reason") to skip. Functions whose module sets
QEMU = True, or whose name starts with test_qemu_, boot QEMU; they run in
parallel (--jobs, default 2).

The last line is the summary "N passed, N failed" (", N skipped" when any).
"""

import argparse
import concurrent.futures
import fnmatch
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))

from pmulab_test import Skip  # noqa: E402


def run_unit(pattern):
    binary = os.path.join(ROOT, "build", "test", "unit-tests")
    if not os.path.exists(binary):
        print(f"FAIL unit-tests: {binary} is missing (make build/test/unit-tests)")
        return 0, 1, 0
    with tempfile.TemporaryDirectory() as td:
        report = os.path.join(td, "gtest.json")
        cmd = [binary, f"--gtest_output=json:{report}", "--gtest_brief=1"]
        if pattern:
            cmd.append(f"--gtest_filter={pattern}")
        t0 = time.time()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        dt = time.time() - t0
        if not os.path.exists(report):
            print(r.stdout[-4000:])
            print(f"FAIL unit-tests: the binary crashed (exit {r.returncode}) before writing its report")
            return 0, 1, 0
        with open(report) as f:
            data = json.load(f)
    passed = failed = skipped = 0
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                skipped += 1
            elif t.get("failures"):
                failed += 1
                msg = t["failures"][0].get("failure", "").strip().splitlines()
                print(f"FAIL unit {name}: {' | '.join(msg[:4])}")
            else:
                passed += 1
    if r.returncode != 0 and failed == 0:
        print(r.stdout[-4000:])
        print(f"FAIL unit-tests: exit status {r.returncode} with no failed test (sanitizer report?)")
        failed += 1
    print(f"unit: {passed} passed, {failed} failed ({dt:.1f} s)")
    return passed, failed, skipped


def load_py_tests(pattern, only):
    tests = []
    pydir = os.path.join(ROOT, "tests", "py")
    for fn in sorted(os.listdir(pydir)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fn[:-3], os.path.join(pydir, fn))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(dir(mod)):
            if not name.startswith("test_"):
                continue
            fn_obj = getattr(mod, name)
            if not callable(fn_obj):
                continue
            full = f"{fn[:-3]}.{name}"
            if pattern and not fnmatch.fnmatch(full, pattern) and pattern not in full:
                continue
            qemu = getattr(mod, "QEMU", False) or name.startswith("test_qemu_")
            if only == "qemu" and not qemu:
                continue
            if only == "host" and qemu:
                continue
            tests.append((full, fn_obj, qemu))
    return tests


def run_one(test):
    full, fn, _ = test
    t0 = time.time()
    try:
        fn()
        return full, "PASS", "", time.time() - t0
    except Skip as s:
        return full, "SKIP", str(s), time.time() - t0
    except Exception as e:  # noqa: BLE001 - a failing test is any exception
        tb = traceback.format_exc().strip().splitlines()
        detail = f"{type(e).__name__}: {e}"
        where = [l for l in tb if l.strip().startswith("File") and "tests/py" in l]
        if where:
            detail += f"  [{where[-1].strip()}]"
        return full, "FAIL", detail, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["unit", "host", "qemu", "py"], help="run one group")
    ap.add_argument("-k", dest="pattern", help="run tests whose name contains/matches this")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("PMULAB_TEST_JOBS", "2")))
    args = ap.parse_args()

    passed = failed = skipped = 0
    if args.only in (None, "unit"):
        p, f, s = run_unit(args.pattern if args.only == "unit" else None)
        passed, failed, skipped = passed + p, failed + f, skipped + s
    if args.only != "unit":
        only = None if args.only in (None, "py") else args.only
        tests = load_py_tests(args.pattern, only)
        host = [t for t in tests if not t[2]]
        qemu = [t for t in tests if t[2]]
        results = [run_one(t) for t in host]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for res in ex.map(run_one, qemu):
                results.append(res)
                name, status, detail, dt = res
                print(f"{status} {name} ({dt:.1f} s){': ' + detail if detail else ''}", flush=True)
        for name, status, detail, dt in results[: len(host)]:
            print(f"{status} {name} ({dt:.1f} s){': ' + detail if detail else ''}")
        for _, status, _, _ in results:
            if status == "PASS":
                passed += 1
            elif status == "SKIP":
                skipped += 1
            else:
                failed += 1
    summary = f"{passed} passed, {failed} failed"
    if skipped:
        summary += f", {skipped} skipped"
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
