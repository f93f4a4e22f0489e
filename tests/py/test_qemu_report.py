"""QEMU boots: the report kit end to end (docs/report.md) and finding 19's meta record.

The stick `make image CONFIG=tools/report.cfg` builds boots unattended under QEMU TCG:
the census, selftest and the exact-count checks run, every PMU check SKIPs with the
reason (TCG has no PMU), the results folder holds the records and the summary, and the
exit status is 3 (nothing could be checked here). With --json the first line on stdout
is the meta record, which says TCG and the -icount shift pmulab measured."""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT, run_qemu

QEMU = True

EXACT = ["exact count: instructions retired on the fixed counter",
         "exact count: instructions retired on a GP counter",
         "exact count: branches retired on a GP counter",
         "exact count: instructions scale with the unroll (U = 10, 100, 1000)",
         "bound: core cycles >= instructions / 16"]


def _mtype(img, path):
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    return subprocess.run(["mtype", "-i", f"{img}@@1M", path], stdout=subprocess.PIPE, text=True, env=env,
                          check=True).stdout


def test_qemu_report_stick_runs_unattended_and_leaves_the_results_folder():
    with tempfile.TemporaryDirectory() as td:
        img = os.path.join(td, "report.img")
        # What `make image CONFIG=tools/report.cfg` does (after pmulab-check): mkimage.sh.
        cfg = os.path.join(ROOT, "tools", "report.cfg")
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, os.path.join(ROOT, "build", "pmulab.efi"),
                        cfg], check=True, stdout=subprocess.DEVNULL)
        r = run_qemu(smp=2, image=img, timeout=300)
        assert r.rc == 3, r  # REPORT: SKIP: no exact count could be checked (no PMU under TCG)
        env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
        names = subprocess.run(["mdir", "-b", "-i", f"{img}@@1M", "::/pmulab/results"], stdout=subprocess.PIPE,
                               text=True, env=env, check=True).stdout.split()
        assert sorted(os.path.basename(n) for n in names) == ["0001-report.csv", "0001-report.jsonl",
                                                               "0001-report.summary.txt"], names
        summary = _mtype(img, "::/pmulab/results/0001-report.summary.txt")
        assert summary.startswith("pmulab report (pmulab "), summary[:300]
        assert "\nnumbers from: virtual machine (TCGTCGTCGTCG, QEMU TCG without -icount)\n" in summary, summary[:400]
        assert "\n== census (pmulab info) ==\npmulab census: 2 logical processors\n" in summary, summary[:800]
        assert "\n== selftest (pmulab selftest --cpu all) ==\n" in summary
        why = "no performance-monitoring counters"
        for name in EXACT:
            line = [l for l in summary.splitlines() if l.startswith(f"SKIP: {name} (CPU 0: ")]
            assert len(line) == 1 and why in line[0], (name, line)
        assert "\nFAIL" not in summary, summary
        assert "\nREPORT: SKIP (census 2 CPUs; selftest " in summary and \
            "; exact counts 5 tests, 0 failures, 5 skipped)\n" in summary, summary[-600:]
        assert ("This summary is \\pmulab\\results\\0001-report.summary.txt, the records "
                "\\pmulab\\results\\0001-report.jsonl") in summary, summary[-600:]
        # The console showed the same text (and the diagnostics of the debug port went to stderr).
        assert "REPORT: SKIP (census 2 CPUs;" in r.out, r
        recs = [json.loads(l) for l in _mtype(img, "::/pmulab/results/0001-report.jsonl").splitlines()]
        meta = recs[0]
        assert meta["type"] == "meta" and meta["source"] == "virtual_machine" and meta["tcg"] is True, meta
        assert meta["hypervisor_vendor"] == "TCGTCGTCGTCG" and meta["icount_shift"] is None, meta
        assert meta["command_line"] == "report", meta
        rep = recs[-1]
        assert rep["type"] == "report" and rep["verdict"] == "SKIP" and rep["cpus"] == 2, rep
        assert rep["exact"] == {"tests": 5, "passed": 0, "failed": 0, "skipped": 5, "not_verified": 0}, rep
        assert rep["selftest"]["failed"] == 0 and rep["selftest"]["passed"] > 0, rep
        assert rep["summary_file"] == "\\pmulab\\results\\0001-report.summary.txt", rep


def test_qemu_json_starts_with_the_meta_record_naming_tcg_and_the_icount_shift():
    r = run_qemu("info", smp=1, icount=7, json_mode=True)
    assert r.rc == 0, r
    recs = r.records()
    meta = recs[0]
    assert meta["type"] == "meta" and [x["type"] for x in recs].count("meta") == 1, recs[:2]
    assert meta["source"] == "virtual_machine" and meta["tcg"] is True and meta["icount_shift"] == 7, meta
    assert meta["hypervisor"] is True and meta["hypervisor_vendor"] == "TCGTCGTCGTCG", meta
    assert meta["simulated"] is False and meta["pmulab_version"], meta
    assert [x["type"] for x in recs[1:]] == ["cpu"], recs
    # Without -icount the TSC follows the host's clock: no shift.
    r = run_qemu("msr", "read", "0x10", smp=1, json_mode=True)
    assert r.rc == 0, r
    meta = r.records()[0]
    assert meta["type"] == "meta" and meta["tcg"] is True and meta["icount_shift"] is None, meta
    assert [x["type"] for x in r.records()[1:]] == ["msr"], r.records()
