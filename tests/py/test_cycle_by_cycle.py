"""run --cycle-by-cycle on pmulab-sim: the exact per-cycle increments the simulator's cost
model gives (docs/sim.md "Cost model": one instruction per cycle, a load's stall cycles
before it retires) on Skylake, Ice Lake, hybrid P and E cores and Zen 4; the refusals (exit
2 or 3, nothing run); the results files; pmulab-nanobench --cycle-by-cycle's CSV."""

import csv
import os
import subprocess
import tempfile

from pmulab_test import ROOT, data_path, run_tool

SKYLAKE = ("--dump", data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt"))
MACHINES = {
    "Skylake dump": SKYLAKE,
    "Ice Lake": ("--model", "icelake"),
    "Alder Lake dump": ("--dump", data_path("cpuid", "GenuineIntel0090672_AlderLake_02_CPUID.txt")),
    "Alder Lake (P and E cores)": ("--model", "alder_lake"),
    "Arrow Lake H dump (P and E cores)": ("--dump", data_path("cpuid", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt")),
    "Zen 4": ("--model", "zen4"),
    "Granite Ridge dump (Zen 5)": ("--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")),
}
FAST = ("--reps", "1", "--warmup", "0")
CACHE = ("--cache", "L1D:32K:8:LRU,L2:256K:4:LRU")


def _sim(machine, *run_args, sim_args=()):
    return run_tool("pmulab-sim", *machine, *sim_args, "--json", "--", "run", *run_args, timeout=300)


def _column(rec, event):
    return [c["values"][event] for c in rec["cycles"]]


def test_straight_line_code_retires_one_instruction_per_cycle_everywhere():
    for name, machine in MACHINES.items():
        # Ice Lake, Alder Lake and Arrow Lake: a P core and an E core (CPU 4 / 2 is an E core there).
        cpus = {"Alder Lake (P and E cores)": "0,4", "Arrow Lake H dump (P and E cores)": "0,2"}.get(name, "0")
        r = _sim(machine, "--asm", "add rax, rbx; add rcx, rdx; xor r8, r8", "--unroll", "3", "--events",
                 "instructions,cycles,branches", "--cycle-by-cycle", "--cpu", cpus, *FAST)
        assert r.rc == 0, (name, r)
        recs = r.records("cycle_by_cycle")
        assert len(recs) == len(cpus.split(",")), (name, r)
        for rec in recs:
            assert set(rec) == {"type", "cpu", "bench", "events", "cycles"}, rec
            assert rec["events"] == ["instructions", "cycles", "branches"], rec
            assert [c["cycle"] for c in rec["cycles"]] == list(range(9)), (name, rec)
            assert _column(rec, "instructions") == [1] * 9, (name, rec)
            assert sum(_column(rec, "instructions")) == 9  # 3 copies of 3 instructions
            assert _column(rec, "cycles") == [1] * 9 and _column(rec, "branches") == [0] * 9, (name, rec)


def test_a_load_that_misses_shows_its_stall_cycles():
    r = _sim(SKYLAKE, "--asm", "add rax, rbx; mov rcx, [r14]; add rax, rbx", "--asm-init", "clflush [r14]",
             "--events", "instructions,D1.01,D1.08", "--cycle-by-cycle", *FAST, sim_args=CACHE)
    assert r.rc == 0, r
    (rec,) = r.records("cycle_by_cycle")
    inst = [0] * 203
    inst[0] = inst[201] = inst[202] = 1  # add; 200 cycles waiting for memory; the load; add
    assert _column(rec, "instructions") == inst, rec
    assert _column(rec, "D1.08") == [1 if i == 201 else 0 for i in range(203)], rec
    assert _column(rec, "D1.01") == [0] * 203, rec


def test_text_table_and_the_quirk():
    r = run_tool("pmulab-sim", *SKYLAKE, "--", "run", "--asm", "add rax, rbx", "--unroll", "2", "--events",
                 "instructions,D1.01", "--cycle-by-cycle", *FAST)
    assert r.rc == 0, r
    assert "PMC1 left out: it does not freeze with the others on this model (perfmon v4, 06_5EH)" in r.out, r
    lines = r.out.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("cycle "))
    assert lines[at].split() == ["cycle", "instructions", "D1.01"], r
    assert [l.split() for l in lines[at + 1:at + 3]] == [["0", "1", "0"], ["1", "1", "0"]], r
    assert lines[at - 1].endswith("(2 cycles; the code's window), 2 instructions"), r


def test_refusals_run_nothing():
    cases = [
        (("--model", "zen3"), ("--events", "instructions"), 3, "LbrAndPmcFreeze) is 0"),
        (("--dump", data_path("cpuid", "cpuid-r_KVM_AMD_EPYC_2cpu.txt")), ("--events", "instructions"), 3,
         "no performance-monitoring counters"),
        (("--model", "intel_v1"), ("--events", "instructions"), 3, "version 2 or later"),
        (("--model", "intel_v5"), ("--events", "instructions"), 3, "fixed counter 1"),
        (SKYLAKE, (), 2, "--cycle-by-cycle needs the events"),
        (SKYLAKE, ("--events", ""), 2, "--events needs a value"),
        (SKYLAKE, ("--events", "instructions,tsc"), 2, "'tsc' does not freeze"),
        (SKYLAKE, ("--events", "instructions", "--topdown"), 2, "cannot be combined with --topdown"),
    ]
    for machine, args, rc, why in cases:
        r = _sim(machine, "--asm", "add rax, rbx", "--cycle-by-cycle", *args, *FAST)
        assert r.rc == rc, (machine, args, r)
        errs = r.records("error")
        assert len(errs) == 1 and why in errs[0]["message"], (machine, args, errs)
        assert not r.records("cycle_by_cycle") and not r.records("result"), r
    r = _sim(SKYLAKE, "--asm", "add rax, rbx", "--events", "instructions", "--end-to-end")
    assert r.rc == 2 and "--end-to-end is an option of --cycle-by-cycle" in r.records("error")[0]["message"], r


def test_watchdog_stops_code_that_never_ends():
    r = _sim(SKYLAKE, "--code", "ebfe", "--events", "instructions", "--cycle-by-cycle", "--timeout", "1", *FAST)
    assert r.rc == 2, r
    (err,) = r.records("error")
    assert "did not finish within 1 s (--timeout)" in err["message"], err
    assert not r.records("cycle_by_cycle"), r


def test_results_files_have_a_row_per_cycle():
    with tempfile.TemporaryDirectory() as d:
        r = run_tool("pmulab-sim", "--model", "zen4", "--results", d, "--", "run", "--asm", "add rax, rbx",
                     "--unroll", "2", "--events", "instructions,branches", "--cycle-by-cycle", *FAST)
        assert r.rc == 0, r
        with open(os.path.join(d, "0001-run.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
    assert [(x["cycles.cycle"], x["cycles.values.instructions"], x["cycles.values.branches"]) for x in rows] == \
        [("0", "1", "0"), ("1", "1", "0")], rows
    assert {x["type"] for x in rows} == {"cycle_by_cycle"}, rows


def _nanobench(*args):
    return subprocess.run([os.path.join(ROOT, "tools", "pmulab-nanobench"), "--cycle-by-cycle", *args],
                          capture_output=True, text=True, timeout=300)


def test_nanobench_cycle_by_cycle_command_line_and_csv():
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "cfg.txt")
        with open(cfg, "w") as f:
            f.write("D1.01 L1_HIT\nD1.08 L1_MISS\nC0.00 INST_RETIRED.ANY_P\nC4.00 BR_INST_RETIRED.ALL\n")
        p = _nanobench("--dry-run", "-asm", "add rax, rbx", "-config", cfg)
        assert p.returncode == 0, p
        assert p.stdout.split() == ["run", "--code", "4801d8", "--events-file", "\\pmulab\\nanobench\\cfg.txt",
                                    "--unroll", "1", "--loop", "1", "--reps", "10", "--warmup", "5", "--agg",
                                    "median", "--drain-frontend", "--cycle-by-cycle", "--name", '"add', 'rax,',
                                    'rbx"'], p
        out = os.path.join(d, "out.csv")
        p = _nanobench("--sim-model", "skylake", "--sim-cache", "L1D:32K:8:LRU,L2:256K:4:LRU", "-asm",
                       "add rax, rbx; mov rcx, [r14]", "-asm_init", "clflush [r14]", "-config", cfg,
                       "-n_measurements", "1", "-warm_up_count", "0", "-remove_empty_events", "-csv", out)
        assert p.returncode == 0 and p.stdout == "", p
        with open(out) as f:
            lines = f.read().splitlines()
    # Cumulative counts per cycle (cycleByCycle.py's CSV): add, 200 stall cycles, the load.
    assert [l.split(",")[0] for l in lines] == ["L1_MISS", "INST_RETIRED.ANY_P"], lines
    assert lines[0].split(",")[1:] == ["0"] * 201 + ["1"], lines[0][:200]
    assert lines[1].split(",")[1:] == ["1"] * 201 + ["2"], lines[1][:200]


def test_nanobench_cycle_by_cycle_refusals():
    for args, why in ((("-asm", "nop", "-config", "c.txt", "-html", "g.html"), "-html: pmulab does not take"),
                      (("-asm", "nop", "-config", "c.txt", "-range"), "-range: pmulab does not take"),
                      (("-asm", "nop"), "-config FILE is required"),
                      (("-asm", "nop", "-config", "c.txt", "-bogus"), "unrecognized cycleByCycle.py option")):
        p = _nanobench("--dry-run", *args)
        assert p.returncode == 2 and p.stdout == "" and why in p.stderr, (args, p)
