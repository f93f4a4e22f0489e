"""The report kit (docs/report.md) on pmulab-sim: census, selftest and the exact-count
checks on several simulated CPUs (Intel, AMD, NetBurst), every exact check PASSing or
SKIPping with its reason; a --break of the simulated PMU FAILs the matching check; the
results folder holds the records and the summary a person sends. And finding 19's meta
record: the first line of --json output (issue #26)."""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT, run_tool

EXACT = ["exact count: instructions retired on the fixed counter",
         "exact count: instructions retired on a GP counter",
         "exact count: branches retired on a GP counter",
         "exact count: instructions scale with the unroll (U = 10, 100, 1000)",
         "bound: core cycles >= instructions / 16"]


def _sim(*args):
    return run_tool("pmulab-sim", *args, timeout=300)


def _lines(out, tag):
    return [l for l in out.splitlines() if l.startswith(tag + ": ")]


def test_report_passes_every_exact_check_on_simulated_intel_amd_and_netburst():
    # model -> the exact checks that SKIP (with the reason) on it
    cases = {"skylake": {}, "zen4": {}, "intel_v2": {},
             "zen1": {EXACT[0]: "IRPerfCount is not used: erratum 1054 (family 17h models 00h-2Fh)"},
             "k10": {EXACT[0]: "no IRPerfCount (CPUID 8000_0008H:EBX[1] = 0)"},
             "intel_v1": {EXACT[0]: "fixed counter 0 is not enumerated (CPUID.0AH:EDX[4:0], ECX)"},
             "prescott": {EXACT[0]: "NetBurst has no fixed counters"}}
    for model, skips in cases.items():
        r = _sim("--model", model, "--cpus", "0", "--", "report")
        assert r.rc == 0, (model, r)
        assert _lines(r.out, "FAIL") == [], (model, r)
        passed = [l for l in _lines(r.out, "PASS") if l[6:].startswith(("exact count:", "bound:"))]
        # Every exact check once on CPU 0, the branch check twice (jmp_next, and add_indep's none).
        want = [n for n in EXACT if n not in skips]
        assert sorted({l[6:].split(" [CPU 0]")[0] for l in passed}) == sorted(want), (model, passed)
        assert len(passed) == len(want) + 1, (model, passed)
        for name, why in skips.items():
            assert f"SKIP: {name} [CPU 0] ({why})" in r.out, (model, r.out)
        tail = [l for l in r.out.splitlines() if l.startswith("REPORT: ")]
        assert len(tail) == 1 and tail[0].startswith("REPORT: PASS (census 1 CPU; selftest "), (model, tail)
        assert ", 0 failures, " in tail[0].split("selftest ")[1], (model, tail)
        assert f"exact counts 6 tests, 0 failures, {len(skips)} skipped)" in tail[0], (model, tail)
    # The exact values, as the simulator counts them (Skylake): 8 per add_indep, 1 per JMP.
    r = _sim("--model", "skylake", "--cpus", "0", "--", "report")
    assert ("PASS: exact count: branches retired on a GP counter [CPU 0]: BR_INST_RETIRED.ALL_BRANCHES 1.00 per "
            "iteration of jmp_next (expected 1; est(min) 1.00, est(max) 1.00); INST_RETIRED.ANY_P 1.00 per iteration "
            "of jmp_next (expected 1; est(min) 1.00, est(max) 1.00)") in r.out, r.out
    assert ("PASS: exact count: instructions scale with the unroll (U = 10, 100, 1000) [CPU 0]: INST_RETIRED.ANY_P "
            "on add_indep (8 per copy): U=10: 171 - 91 = 80; U=100: 1611 - 811 = 800; U=1000: 16011 - 8011 = 8000;"
            ) in r.out, r.out


def test_report_runs_every_check_on_every_cpu():
    r = _sim("--model", "hybrid", "--", "report")
    assert r.rc == 0, r
    for cpu in range(8):  # 4 P-core threads and 4 E cores
        for name in EXACT:
            assert f"PASS: {name} [CPU {cpu}]: " in r.out, (cpu, name)
    assert "REPORT: PASS (census 8 CPUs; " in r.out and "exact counts 48 tests, 0 failures, 0 skipped)" in r.out


def test_a_broken_simulated_pmu_fails_the_matching_exact_check():
    # Every 256th instruction counted twice: inside selftest's 1% tolerance (its checks
    # PASS), outside the exact counts.
    for model in ("skylake", "zen4", "prescott"):
        r = _sim("--model", model, "--cpus", "0", "--break", "instructions", "--", "report")
        assert r.rc == 1, (model, r)
        failed = sorted({l[6:].split(" [CPU 0]")[0] for l in _lines(r.out, "FAIL")})
        want = [EXACT[1], EXACT[2], EXACT[3]] + ([EXACT[0]] if model != "prescott" else [])
        assert failed == sorted(want), (model, failed)
        assert "REPORT: FAIL" in r.out and "selftest " in r.out and ", 0 failures," in r.out.split("selftest ")[-1]
        r = _sim("--model", model, "--cpus", "0", "--break", "branches", "--", "report")
        assert r.rc == 1, (model, r)
        fails = _lines(r.out, "FAIL")
        assert len(fails) == 1 and fails[0].startswith(f"FAIL: {EXACT[2]} [CPU 0]: "), (model, fails)
        assert "1.01 per iteration of jmp_next (expected 1;" in fails[0], fails


def test_report_without_a_pmu_skips_every_exact_check_with_the_reason_and_exits_3():
    r = _sim("--model", "qemu_tcg", "--cpus", "0", "--", "report")
    assert r.rc == 3, r
    why = ("(CPU 0: no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
           "no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough))")
    for name in EXACT:
        assert f"SKIP: {name} {why}" in r.out, name
    assert "REPORT: SKIP (census 1 CPU; " in r.out, r
    assert "No exact count could be checked here: the reasons are on the SKIP lines above." in r.out, r


def test_report_writes_the_results_folder_with_the_summary_a_person_sends():
    with tempfile.TemporaryDirectory() as td:
        res = os.path.join(td, "results")
        r = _sim("--model", "zen4", "--results", res, "--", "report")
        assert r.rc == 0, r
        assert sorted(os.listdir(res)) == ["0001-report.csv", "0001-report.jsonl", "0001-report.summary.txt"]
        with open(os.path.join(res, "0001-report.summary.txt")) as f:
            summary = f.read()
        # The summary is what the console showed (the sim's banner line aside).
        assert r.out.split("\n", 1)[1] == summary, (r.out[:300], summary[:300])
        assert summary.startswith("pmulab report (pmulab "), summary[:200]
        assert "\nnumbers from: simulated: model zen4 (2 CPUs) (the simulator's model, not hardware)\n" in summary
        assert "\n== census (pmulab info) ==\n" in summary and "\n== selftest (pmulab selftest --cpu all) ==\n" in summary
        assert f"This summary is {res}/0001-report.summary.txt, the records {res}/0001-report.jsonl" in summary
        with open(os.path.join(res, "0001-report.jsonl")) as f:
            recs = [json.loads(l) for l in f]
        assert recs[0]["type"] == "meta" and recs[0]["source"] == "simulated", recs[0]
        assert recs[0]["command_line"] == "report", recs[0]
        assert [x["type"] for x in recs[1:3]] == ["cpu", "cpu"], recs[1:3]
        rep = recs[-1]
        assert rep == {"type": "report", "verdict": "PASS", "cpus": 2,
                       "selftest": {"tests": 47, "passed": 47, "failed": 0, "skipped": 0, "not_verified": 0},
                       "exact": {"tests": 12, "passed": 12, "failed": 0, "skipped": 0, "not_verified": 0},
                       "summary_file": f"{res}/0001-report.summary.txt"}, rep
        checks = [x for x in recs if x["type"] == "check" and x["name"].startswith(("exact", "bound"))]
        assert len(checks) == 12 and all(x["status"] == "PASS" for x in checks), checks
        with open(os.path.join(res, "0001-report.csv")) as f:
            assert f.readline().startswith("type,index,apic_id,bsp,"), "the CSV summarises the census rows"
        # A second report never overwrites the first.
        r = _sim("--model", "zen4", "--results", res, "--", "report", "--cpu", "0")
        assert r.rc == 0 and "0002-report.summary.txt" in os.listdir(res), r


def test_report_json_is_records_only_and_ends_with_the_verdict():
    r = _sim("--json", "--model", "prescott", "--", "report")
    assert r.rc == 0, r
    recs = r.records()
    assert recs[0]["type"] == "meta" and recs[0]["command_line"] == "report", recs[0]
    assert recs[-1]["type"] == "report" and recs[-1]["verdict"] == "PASS", recs[-1]
    assert recs[-1]["exact"] == {"tests": 6, "passed": 5, "failed": 0, "skipped": 1, "not_verified": 0}, recs[-1]
    assert recs[-1]["summary_file"] is None, recs[-1]


def test_report_cfg_is_a_valid_campaign_and_runs_on_the_sim():
    cfg = os.path.join(ROOT, "tools", "report.cfg")
    assert run_tool("pmulab-check", cfg).rc == 0
    r = _sim("--model", "skylake", "--cpus", "0", "--config", cfg)
    assert r.rc == 0 and "REPORT: PASS" in r.out, r


# ---- finding 19: the meta record first on --json stdout ----

def test_sim_json_output_starts_with_the_meta_record_of_each_command():
    for cmd in (["info"], ["msr", "read", "0x38f"], ["run", "--bench", "nop", "--reps", "3"], ["selftest"],
                ["report", "--cpu", "0"]):
        r = _sim("--json", "--model", "skylake", "--cpus", "0", "--", *cmd)
        recs = r.records()
        assert recs[0]["type"] == "meta", (cmd, recs[0])
        assert [x["type"] for x in recs].count("meta") == 1, cmd
        meta = recs[0]
        assert meta["source"] == "simulated" and meta["simulated"] is True and meta["tcg"] is False, meta
        assert meta["icount_shift"] is None and meta["command_line"] == " ".join(cmd), meta
    # With --trace-msr the trace records come after it (pmulab's own reads stay out of it).
    r = _sim("--json", "--trace-msr", "--model", "skylake", "--cpus", "0", "--", "msr", "read", "0x38f")
    types = [x["type"] for x in r.records()]
    assert types[0] == "meta" and "msr_trace" in types and types[-1] == "msr", types
    # Listing commands print no meta record: no number of theirs comes from the hardware.
    r = _sim("--json", "--model", "skylake", "--", "bench", "list")
    assert r.records()[0]["type"] == "kernel", r.out[:200]
    # A campaign: one meta record before each command's records.
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("info\nrun --bench nop --reps 3\n")
        r = _sim("--json", "--model", "zen4", "--config", cfg)
        types = [x["type"] for x in r.records()]
        assert types == ["meta", "cpu", "cpu", "meta", "result"], types


def test_the_agent_hello_says_where_the_numbers_come_from_and_answers_hold_no_meta():
    p = subprocess.run([os.path.join(ROOT, "build", "host", "pmulab-sim"), "--model", "skylake", "--cpus", "0", "--",
                        "serve"], input='{"id":1,"cmd":"info"}\n', capture_output=True, text=True, timeout=60)
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    hello = recs[0]
    assert hello["type"] == "hello" and hello["source"] == "simulated" and hello["tcg"] is False, hello
    assert hello["icount_shift"] is None, hello
    assert [x["type"] for x in recs[1:]] == ["cpu", "done"], recs


def test_the_python_readers_take_the_meta_record():
    # pmulab-plot names a measured -icount shift; the options reader skips the meta record.
    code = ("from pmulab.plot import provenance\n"
            "print(provenance([{'type':'meta','hypervisor':True,'hypervisor_vendor':'TCGTCGTCGTCG','icount_shift':7}]))\n"
            "import os, pmulab.options as o\n"
            "print([x['name'] for x in o.pmulab_options('report')])\n")
    with tempfile.TemporaryDirectory() as td:
        opts = os.path.join(td, "opts.jsonl")
        check = run_tool("pmulab-check", "--help-json")
        with open(opts, "w") as f:
            f.write('{"type":"meta","source":"hardware"}\n' + check.out)
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools"), PMULAB_OPTIONS_JSON=opts)
        p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["data: virtual machine (TCGTCGTCGTCG, -icount 7)", "['--cpu']"], p.stdout


# ---- the silicon kit (docs/silicon.md): what a lent real-CPU machine boots ----

def test_silicon_campaign_is_valid_and_every_command_runs_on_simulated_intel_and_amd():
    cfg = os.path.join(ROOT, "tools", "silicon", "campaign.cfg")
    assert run_tool("pmulab-check", cfg).rc == 0
    for model in ("skylake", "zen4"):
        r = _sim("--json", "--model", model, "--cpus", "0,1", "--config", cfg)
        assert r.rc == 0, (model, r)
        recs = r.records()
        assert not [x for x in recs if x["type"] == "error"], (model, r.out[-2000:])
        cmds = [x["command_line"] for x in recs if x["type"] == "meta"]
        assert cmds[0] == "report" and len(cmds) == 5, cmds
        assert [x for x in recs if x["type"] == "report"][0]["verdict"] == "PASS", model
        # The exact count the campaign exists for: add_indep is 8 instructions per copy.
        exact = [x for x in recs if x["type"] == "result" and x.get("bench") == "add_indep"
                 and x.get("event") == "instructions" and x.get("unroll") == 1000]
        assert exact and all(x["median"] == 8 for x in exact), (model, exact[:1])
        assert [x for x in recs if x["type"] == "samples"], model


def test_silicon_probe_compiles():
    src = os.path.join(ROOT, "tools", "silicon", "probe.c")
    r = subprocess.run(["clang", "-std=gnu11", "-Wall", "-Werror", "-fsyntax-only", src],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
