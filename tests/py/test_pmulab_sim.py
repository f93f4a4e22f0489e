"""pmulab-sim: pmulab's commands on simulated machines built from every CPUID dump in
tests/data/cpuid and from the synthetic models, and --trace-msr's programming sequence
checked against the SDM/APM order (asserted on the JSON records, not eyeballed)."""

import os
from fractions import Fraction

from pmulab_test import data_path, run_tool

TOOL = "pmulab-sim"
DUMPS = sorted(f for f in os.listdir(data_path("cpuid")) if f.endswith(".txt"))
# Dumps of virtual machines without PMU passthrough: no counters, so PMU events are
# "unsupported here" (exit 3) and the selftest's PMU checks SKIP.
NO_PMU = {"cpuid-r-1_KVM_AMD_EPYC.txt", "cpuid-r_KVM_AMD_EPYC_2cpu.txt", "cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt"}


def _sim(*args, timeout=600):
    return run_tool(TOOL, *args, timeout=timeout)


def test_every_dump_passes_the_selftest_on_every_cpu():
    for name in DUMPS:
        r = _sim("--dump", data_path("cpuid", name), "--", "selftest", "--cpu", "all")
        assert r.rc == 0, (name, r)
        assert r.out.startswith("pmulab-sim: SIMULATED dump "), (name, r)
        assert "\nFAIL" not in r.out, (name, r)
        summary = [l for l in r.out.splitlines() if l.startswith("SUMMARY:")]
        assert len(summary) == 1 and " 0 failures" in summary[0], (name, summary)
        if name not in NO_PMU:
            # The PMU checks ran (PASS lines naming counters), not only the harness's.
            assert "PASS: instructions retired" in r.out or "PASS: each counter" in r.out, (name, r)


def test_add_indep_counts_exactly_8_instructions_on_every_cpu_of_every_dump():
    for name in DUMPS:
        r = _sim("--json", "--dump", data_path("cpuid", name), "--", "run", "--bench", "add_indep", "--events",
                 "instructions,cycles,branches", "--cpu", "all")
        meta = r.records("meta")
        assert len(meta) == 1 and meta[0]["simulated"] is True, (name, r)
        assert meta[0]["simulated_machine"].startswith("dump "), meta
        if name in NO_PMU:
            assert r.rc == 3, (name, r)
            (err,) = r.records("error")
            # AMD guests: no core counters enumerated; Intel guests: CPUID.0AH version 0.
            want = ("CPUID.0AH:EAX[7:0] = 0" if "Intel" in name else "no performance-monitoring counters")
            assert want in err["message"], err
            continue
        assert r.rc == 0, (name, r)
        res = r.records("result")
        cpus = meta[0]["cpus"]
        assert len(res) == 3 * cpus, (name, len(res), cpus)
        for rec in res:
            want = {"instructions": 8, "cycles": 8, "branches": 0}[rec["event"]]
            assert rec["fraction"] == [want, 1], (name, rec)
            assert rec["min"] == rec["max"] == want, (name, rec)
        assert sorted({rec["cpu"] for rec in res}) == list(range(cpus)), name


def test_multiplexing_when_events_exceed_the_counters():
    # Conroe: 2 GP + 3 fixed; K8: 4 legacy counters; Prescott: 18 ESCR/CCCR counters
    # (not exceeded). The events that do not fit go to a second run, with the same counts.
    cases = {
        "GenuineIntel00006F4_Conroe_CPUID.txt": "instructions,cycles,branches,branch-misses,C0.00,3C.00",
        "AuthenticAMD0020FF0_K8_Venice_CPUID.txt": "instructions,cycles,branches,branch-misses,C0.00,76.00",
    }
    for name, events in cases.items():
        r = _sim("--json", "--dump", data_path("cpuid", name), "--", "run", "--bench", "add_indep,branch_pred",
                 "--events", events)
        assert r.rc == 0, (name, r)
        res = r.records("result")
        assert len(res) == 12, (name, res)
        runs = {(x["bench"], x["event"]): (x["run"], x["runs"], x["fraction"]) for x in res}
        # branch_pred (src/measure/kernel_bodies.S) runs its `js` taken every other
        # iteration (bit 63 of R8 alternates): taken, imul/add/test/js/nop/nop; not taken,
        # imul/add/test/js/nop/jmp. 6 instructions either way; 1 or 2 branches: 3/2 per
        # iteration (the old executor, which ran no kernel, counted the taken path only: 1).
        for bench, instr, branches in (("add_indep", 8, 0), ("branch_pred", 6, Fraction(3, 2))):
            want = {"instructions": instr, "cycles": instr, "branches": branches, "branch-misses": 0}
            want[events.split(",")[4]] = instr  # C0.00: instructions again
            want[events.split(",")[5]] = instr  # core cycles again
            for ev, n in want.items():
                run, nruns, frac = runs[(bench, ev)]
                n = Fraction(n)
                assert nruns == 2 and frac == [n.numerator, n.denominator], (name, bench, ev, runs[(bench, ev)])
            assert runs[(bench, events.split(",")[4])][0] == 1, (name, runs)


def test_user_code_runs_on_the_executor_with_branches_and_faults_as_its_cpuid_says():
    # The old executor scanned bytes: it counted a VEX instruction it never ran and refused
    # every conditional branch. The executor now runs the code (issue #22).
    base = ("--json", "--model", "skylake", "--cpus", "0", "--", "run", "--events", "instructions,branches")
    # add rax, rax; add rbx, rax: 2 instructions, no branch.
    r = _sim(*base, "--code", "4801c04801c3")
    assert r.rc == 0, r
    got = {x["event"]: x["fraction"] for x in r.records("result")}
    assert got == {"instructions": [2, 1], "branches": [0, 1]}, got
    # vpaddb ymm0, ymm0, ymm1 after them: #UD, as on the hardware this model describes: its
    # CPUID.1:ECX is E3BDH (src/sim/sim_builders.cpp), bit 28 (AVX) clear, so a VEX prefix
    # is an invalid opcode there (SDM Vol. 2A §2.3.12). Nothing is measured.
    r = _sim(*base, "--code", "4801c04801c3c5fdfcc1")
    assert r.rc == 2 and r.records("result") == [], r
    (err,) = r.records("error")
    assert err["vector"] == 6, err
    assert "code raised #UD (invalid opcode) (vector 6) at offset 6 of the body (copy 1 of 100)" in err["message"], err
    # jmp +1 over a nop, then a nop: the jump is taken (2 instructions, 1 branch).
    r = _sim(*base, "--code", "eb019090")
    assert r.rc == 0, r
    got = {x["event"]: x["fraction"] for x in r.records("result")}
    assert got == {"instructions": [2, 1], "branches": [1, 1]}, got
    # A conditional branch runs and counts. xor eax, eax; je +1; nop; nop: ZF = 1, taken
    # over one nop (xor, je, nop: 3 instructions, 1 branch). or eax, 1; je +1; nop; nop:
    # ZF = 0, not taken (or, je, nop, nop: 4 instructions, 1 branch).
    r = _sim(*base, "--code", "31c074019090")
    assert r.rc == 0, r
    got = {x["event"]: x["fraction"] for x in r.records("result")}
    assert got == {"instructions": [3, 1], "branches": [1, 1]}, got
    r = _sim(*base, "--code", "83c80174019090")
    assert r.rc == 0, r
    got = {x["event"]: x["fraction"] for x in r.records("result")}
    assert got == {"instructions": [4, 1], "branches": [1, 1]}, got


def test_options_as_data_repeated_codes_optional_topdown_and_repeats():
    base = ("--json", "--model", "skylake", "--cpus", "0", "--", "run", "--events", "instructions")
    # Issue 26 item 8: each --code is measured with the --name after it (before: only the
    # last one, exit 0). add rax, rax (1 instruction); 2 x add (2 instructions).
    r = _sim(*base, "--code", "4801c0", "--name", "one", "--code", "4801c04801c3", "--name", "two")
    assert r.rc == 0, r
    got = {x["bench"]: x["fraction"] for x in r.records("result")}
    assert got == {"one": [1, 1], "two": [2, 1]}, got
    # Issue 26 item 13: --topdown's level is optional (default 1), also before --metrics.
    r = _sim("--json", "--model", "skylake", "--cpus", "0", "--", "run", "--bench", "add_indep", "--topdown",
             "--metrics", "IPC", "--reps", "3", "--warmup", "0")
    assert r.rc == 0, r
    metrics = {x["metric"] for x in r.records("metric")}
    assert "IPC" in metrics and "tma_retiring" in metrics and "tma_fetch_latency" not in metrics, metrics
    # A repeated option that takes one value: exit 2 with its name, nothing measured.
    r = _sim(*base, "--bench", "nop", "--unroll", "5", "--unroll", "6")
    assert r.rc == 2 and r.records("result") == [], r
    assert "run: --unroll is given more than once (it is not repeatable)" in r.err + r.out, r
    # The options as data, without booting: the same records as pmulab-check --help-json.
    r = _sim("--json", "--model", "skylake", "--", "help")
    assert r.rc == 0, r
    check = run_tool("pmulab-check", "--help-json")
    assert check.rc == 0 and [l for l in r.out.splitlines() if '"type":"command"' in l] == check.out.splitlines(), r
    run = [x for x in r.records("command") if x["command"] == "run"][0]["options"]
    unroll = [o for o in run if o["name"] == "--unroll"][0]
    assert unroll == {"name": "--unroll", "value": "count", "metavar": "U", "min": 1, "max": 1000000,
                      "repeatable": False, "help": "copies of the body (default 100, 1..1000000)"}, unroll
    topdown = [o for o in run if o["name"] == "--topdown"][0]
    assert topdown["optional"] is True and topdown["default"] == "1", topdown


def _trace(model, *run_args):
    r = _sim("--json", "--trace-msr", "--model", model, "--", "run", *run_args)
    assert r.rc == 0, (model, r)
    t = r.records("msr_trace")
    assert t, (model, r)
    return r, t


_AROUND_SESSION = {0x1D9, 0xC0011029}  # IA32_DEBUGCTL, AMD DE_CFG


def _order_checks(model, trace, counter_of, enable_of, global_ctl, clear_only):
    """Per CPU, outside generated code: counter_of(msr) -> its select MSR (or None),
    enable_of(select value) -> whether that select enables the counter."""
    for cpu in sorted({e["cpu"] for e in trace}):
        mine = [e for e in trace if e["cpu"] == cpu]
        cur, first_read, last_write = {}, {}, {}
        for i, e in enumerate(mine):
            if e["generated_code"] or e["op"] == "rdpmc" or e["result"] != "ok":
                continue
            msr, val = int(e["msr"], 16), int(e["value"], 16)
            if 0x4C1 <= msr < 0x4C1 + 16:
                msr = 0xC1 + msr - 0x4C1  # IA32_A_PMCx is IA32_PMCx written full-width
            if e["op"] == "rdmsr":
                first_read.setdefault(msr, val)
                cur.setdefault(msr, val)
                continue
            # Every MSR pmulab writes was saved (read) first.
            assert msr in first_read or msr in clear_only, (model, cpu, i, e)
            s = counter_of(msr)
            if s is not None:
                # SDM §20.2.1.1 / APM §13.2.1 / SDM §20.15.3: the counter's enable is clear
                # when the counter is written.
                assert not enable_of(cur.get(s, 0)), (model, cpu, i, e, hex(cur.get(s, 0)))
            if global_ctl is not None and msr != global_ctl and msr not in clear_only and msr not in _AROUND_SESSION:
                # Global control last: selects and counters change only while it is 0.
                assert cur.get(global_ctl, 0) == 0, (model, cpu, i, e, hex(cur.get(global_ctl, 0)))
            cur[msr] = val
            last_write[msr] = val
        # Generated code: the global enable is the first write of each run, the disable the last.
        block = [e for e in mine if e["runs"]]
        assert block, (model, cpu)
        if global_ctl is not None:
            writes = [e for e in block if e["op"] == "wrmsr"]
            assert int(writes[0]["msr"], 16) == global_ctl and int(writes[0]["value"], 16), (model, writes)
            assert int(writes[-1]["msr"], 16) == global_ctl and int(writes[-1]["value"], 16) == 0, (model, writes)
        # DEBUGCTL (FREEZE_WHILE_SMM) and DE_CFG (LFENCE serialising) are not PMU registers:
        # they are set before the PMU session first writes the global control and restored
        # after it last does (nested around the session, never inside it).
        host = [i for i, e in enumerate(mine) if e["op"] == "wrmsr" and not e["generated_code"]]
        if global_ctl is not None:
            glob = [i for i in host if int(mine[i]["msr"], 16) == global_ctl]
            for msr in _AROUND_SESSION:
                mine_w = [i for i in host if int(mine[i]["msr"], 16) == msr]
                if mine_w and glob:
                    assert mine_w[0] < glob[0] and mine_w[-1] > glob[-1], (model, cpu, hex(msr), mine_w, glob)
        # Exact restore: the last value written to every saved MSR is the value first read.
        for msr, val in last_write.items():
            if msr in clear_only:
                continue
            assert first_read[msr] == val, (model, cpu, hex(msr), hex(first_read[msr]), hex(val))


def _intel(model):
    r, t = _trace(model, "--bench", "add_indep", "--events", "instructions,cycles,branches,C0.00", "--cpu", "all")

    def counter_of(m):
        if 0xC1 <= m < 0xC1 + 16:
            return 0x186 + m - 0xC1
        if 0x4C1 <= m < 0x4C1 + 16:
            return 0x186 + m - 0x4C1
        return None

    _order_checks(model, t, counter_of, lambda v: bool(v & (1 << 22)), 0x38F, {0x390, 0x391})
    names = {e["register"] for e in t}
    assert {"IA32_PERFEVTSEL0", "IA32_PERF_GLOBAL_CTRL", "IA32_FIXED_CTR_CTRL"} <= names, names
    sel = [e for e in t if e["register"] == "IA32_PERFEVTSEL0" and e["op"] == "wrmsr" and "en" in e["fields"]]
    assert sel and sel[0]["fields"].startswith("event=0xc4 umask=0x00 usr os"), sel
    return t


def test_trace_msr_intel_v4_order_and_restore():
    t = _intel("intel_v4")
    assert {e["cpu"] for e in t} == {0, 1, 2, 3}, t[:3]
    runs = [e for e in t if e["runs"]]
    assert all(e["runs"] == 28 for e in runs), {e["runs"] for e in runs}
    # FREEZE_WHILE_SMM (PERF_CAPABILITIES[12] is set on this model) is set and then cleared again.
    dbg = [e for e in t if e["cpu"] == 0 and e["op"] == "wrmsr" and e["register"] == "IA32_DEBUGCTL"]
    assert [(e["value"], e["fields"]) for e in dbg] == [("0x4000", "FREEZE_WHILE_SMM"), ("0x0", "")], dbg


def test_trace_msr_hybrid_order_and_restore_on_both_core_types():
    t = _intel("hybrid")
    # P cores (0-3) and E cores (4-7) are both programmed and restored.
    assert {e["cpu"] for e in t if e["op"] == "wrmsr" and e["register"] == "IA32_PERFEVTSEL0"} == set(range(8))


def test_trace_msr_zen4_order_and_restore():
    r, t = _trace("zen4", "--bench", "add_indep", "--events", "instructions,cycles,branches", "--cpu", "all")

    def counter_of(m):
        if 0xC0010201 <= m < 0xC0010201 + 12 and (m - 0xC0010201) % 2 == 0:
            return m - 1
        return None

    _order_checks("zen4", t, counter_of, lambda v: bool(v & (1 << 22)), 0xC0000301, {0xC0000302, 0xC0000303})
    names = {e["register"] for e in t}
    assert {"PERF_CTL0", "PERF_CTR0", "PerfCntrGlobalCtl"} <= names, names


def test_trace_msr_prescott_order_and_restore():
    r, t = _trace("prescott", "--bench", "add_indep", "--events", "instructions,branches,uops")

    def counter_of(m):
        return 0x360 + m - 0x300 if 0x300 <= m < 0x312 else None

    _order_checks("prescott", t, counter_of, lambda v: bool(v & (1 << 12)), None, set())
    # The ESCR is programmed before the CCCR that enables its counter.
    esc = [i for i, e in enumerate(t) if e["op"] == "wrmsr" and e["register"].endswith("ESCR0") and
           "t0_os" in e["fields"]]
    cccr = [i for i, e in enumerate(t) if e["op"] == "wrmsr" and "_CCCR" in e["register"] and
            "enable" in e["fields"]]
    assert esc and cccr and esc[0] < cccr[0], (esc, cccr)


def test_trace_msr_text_folds_runs_and_decodes_fields():
    r = _sim("--trace-msr", "--model", "skylake", "--cpus", "0", "--", "run", "--bench", "add_indep", "--events",
             "branches")
    assert r.rc == 0, r
    lines = r.out.splitlines()
    assert "msr: CPU 0: each of 28 runs of the region (interrupts masked):" in lines, r
    assert ("msr: CPU 0 WRMSR IA32_PERFEVTSEL0 (0x186) <- 0x4300c4: event=0xc4 umask=0x00 usr os en" in lines), r
    assert "msr: CPU 0   RDPMC PMC0 (0x0) [generated code]" in lines, r
    # Restored at the end: the global control goes back to its reset value.
    assert lines.index("msr: CPU 0 WRMSR IA32_PERF_GLOBAL_CTRL (0x38f) <- 0xf: PMC0-3") > \
        lines.index("msr: CPU 0: each of 28 runs of the region (interrupts masked):"), r


def test_campaign_file_runs_every_line():
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("# three commands\nevents --check instructions,cycles\nrun --bench nop --events instructions\n"
                "--trace-msr msr read 0xC0010200\n")
        path = f.name
    try:
        r = _sim("--model", "zen3", "--config", path)
        assert r.rc == 0, r
        assert "nop " in r.out and "instructions" in r.out, r
        # --trace-msr is a global option on a campaign line too.
        assert "msr: CPU 0 RDMSR PERF_CTL0 (0xc0010200) -> 0x0: clear" in r.out.splitlines(), r
        with open(path, "w") as f:
            f.write("frobnicate\n")
        r = _sim("--model", "zen3", "--config", path)
        assert r.rc == 2 and f"{path}:1: unknown command 'frobnicate'" in r.err, r
    finally:
        os.unlink(path)


def test_bad_dumps_and_options_are_clear_errors():
    r = _sim("--dump", "/nonexistent/dump.txt", "--", "info")
    assert r.rc == 2 and "pmulab-sim: error: cannot open '/nonexistent/dump.txt'" in r.err, r
    with open(data_path("cpuid", DUMPS[0])) as f:
        head = f.read(2000)
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("this is not a cpuid dump\n")
        bad = f.name
    try:
        r = _sim("--dump", bad, "--", "info")
        assert r.rc == 2 and r.err.startswith(f"pmulab-sim: error: {bad}:"), r
    finally:
        os.unlink(bad)
    assert head
    for args, msg in (
        ((), "no machine: give --dump FILE or --model NAME"),
        (("--model", "pentium9", "--", "info"), "unknown model 'pentium9'"),
        (("--model", "zen4", "--cpus", "7", "--", "info"), "--cpus: there is no CPU 7"),
        (("--model", "zen4", "--cpus", "x", "--", "info"), "--cpus: 'x' is not a list"),
        (("--model", "zen4", "--perf-capabilities", "lots", "--", "info"), "is not a number"),
        (("--model", "zen4", "--frobnicate"), "unknown option '--frobnicate'"),
        (("--model", "zen4", "--dump", "x", "--", "info"), "either --dump or --model"),
    ):
        r = _sim(*args)
        assert r.rc == 2, (args, r)
        assert r.err.startswith("pmulab-sim: error: ") and msg in r.err, (args, r)
        assert "Traceback" not in r.err and r.err.count("\n") == 1, (args, r)
    # A bad pmulab command line is pmulab's own usage error.
    r = _sim("--model", "zen4", "--", "frobnicate")
    assert r.rc == 2 and "unknown command 'frobnicate'" in r.err, r


def test_list_models_and_perf_capabilities_option():
    r = _sim("--list-models")
    assert r.rc == 0 and "skylake" in r.out and "prescott" in r.out and "zen4" in r.out, r
    r = _sim("--json", "--dump", data_path("cpuid", "GenuineIntel00706A8_GoldmontPlus_CPUID.txt"),
             "--perf-capabilities", "0x33c5", "--", "info")
    assert r.rc == 0, r
    cpu = r.records("cpu")[0]
    assert cpu["pmu"]["perf_capabilities"] == "0x33c5", cpu["pmu"]


ZEN5 = "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"


def test_amd_fixed_like_counters_are_named_as_amd_names_them():
    """IRPerfCount (C000_00E9H), APERF and MPERF, not Intel's FIXED_CTRn, in every output."""
    dump = data_path("cpuid", ZEN5)
    r = _sim("--dump", dump, "--", "events", "--check", "instructions,aperf,mperf")
    assert r.rc == 0, r
    assert ("  group 1/1: IRPerfCount instructions\n  group 1/1: APERF      aperf\n"
            "  group 1/1: MPERF      mperf\n") in r.out, r
    r = _sim("--dump", dump, "--cpus", "0", "--", "run", "--bench", "add_indep", "--events", "instructions",
             "--reps", "3")
    assert r.rc == 0, r
    assert "  group 1/1: IRPerfCount instructions\n" in r.out, r
    assert "add_indep           - instructions IRPerfCount    0" in r.out, r
    r = _sim("--json", "--dump", dump, "--cpus", "0", "--", "run", "--bench", "add_indep", "--events",
             "instructions,aperf", "--reps", "3")
    assert r.rc == 0, r
    assert [x["counter"] for x in r.records("result")] == ["IRPerfCount", "APERF"], r
    for out in (r.out, _sim("--trace-msr", "--dump", dump, "--cpus", "0", "--", "run", "--bench", "add_indep",
                            "--events", "instructions", "--reps", "1").out):
        assert "FIXED_CTR" not in out, out


def test_selftest_skips_speak_of_the_cpus_own_vendor():
    r = _sim("--dump", data_path("cpuid", "cpuid-r-1_KVM_AMD_EPYC.txt"), "--", "selftest")
    skips = [l for l in r.out.splitlines() if l.startswith("SKIP:")]
    assert skips and all("(CPU 0: no performance-monitoring counters: no AMD core counters enumerated" in l
                         for l in skips), skips
    assert "Intel architectural PMU" not in r.out, r


def test_every_block_of_simulated_text_is_marked():
    """The banner, and a SIMULATED line after each run table, TopDown table and SUMMARY."""
    mark = "SIMULATED model skylake, CPUs 1 (1 CPU): counts above come from the simulator's model, not from hardware"
    r = _sim("--model", "skylake", "--cpus", "1", "--", "selftest")
    lines = r.out.splitlines()
    s = [i for i, l in enumerate(lines) if l.startswith("SUMMARY:")]
    assert len(s) == 1 and lines[s[0] + 1] == mark, r
    r = _sim("--model", "skylake", "--cpus", "1", "--", "run", "--bench", "add_indep", "--events", "instructions",
             "--reps", "3", "--topdown")
    assert r.rc == 0, r
    lines = r.out.splitlines()
    marks = [i for i, l in enumerate(lines) if l == mark]
    assert len(marks) == 2, r  # after the run table and after the TopDown table
    assert lines[marks[0] - 1].startswith("add_indep "), r
    assert lines[marks[1] - 1].startswith("add_indep ") and marks[1] == len(lines) - 1, r
    # JSON: the meta record says it; no text lines among the records.
    r = _sim("--json", "--model", "skylake", "--cpus", "1", "--", "selftest")
    assert r.records("meta")[0]["simulated"] is True
    assert "SIMULATED" not in r.out, r
