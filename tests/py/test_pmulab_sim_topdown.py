"""pmulab-sim: `run --topdown` and `--metrics` end to end on simulated machines built from
the CPUID dumps in tests/data/cpuid and from models, with pmulab-sim's documented default
slot budget (src/sim/sim_topdown.h: W slots per cycle, W/2 retiring, 1 bad speculation,
1 frontend bound, the rest backend bound). GP and fixed-counter inputs are exact; the
PERF_METRICS categories are 1/255 steps of each read (docs/metrics.md), so P-core values
are checked against the budget within the validation tolerance."""

from fractions import Fraction

from pmulab_test import data_path, run_tool

TOOL = "pmulab-sim"
L1 = ("tma_retiring", "tma_bad_speculation", "tma_frontend_bound", "tma_backend_bound")
ICE_LAKE_CAPS = "0xb3c5"  # full-width writes ... and PERF_CAPABILITIES[15] (PERF_METRICS)


def _sim(*args):
    return run_tool(TOOL, *args, timeout=600)


def _metrics(r):
    """{(cpu, metric): record}"""
    return {(m["cpu"], m["metric"]): m for m in r.records("metric")}


def _frac(rec):
    return Fraction(rec["fraction"][0], rec["fraction"][1])


def _budget(w):
    ret = w // 2
    return [Fraction(ret, w), Fraction(1, w), Fraction(1, w), Fraction(w - ret - 2, w)]


def test_ice_lake_class_dump_perf_metrics_level1():
    # Raptor Lake-P (Golden Cove P cores, fixed counter 3): PERF_METRICS once the
    # capabilities a dump cannot carry say so. No leaf 23H: 4 slots per cycle, 2/1/1/0.
    r = _sim("--json", "--dump", data_path("cpuid", "GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt"),
             "--perf-capabilities", ICE_LAKE_CAPS, "--",
             "run", "--bench", "add_indep", "--topdown", "1", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    met = _metrics(r)
    assert len(met) == 4, met
    for name, want in zip(L1, _budget(4)):
        m = met[(0, name)]
        assert m["method"] == "perf_metrics" and m["level"] == 1 and m["groups"] == "TopdownL1", m
        assert m["valid"] is True and "violation" not in m, m
        assert abs(_frac(m) - want) <= Fraction(1, 100), (name, m)
        assert m["inputs"]["TOPDOWN.SLOTS"] == 32.0, m  # 8 cycles x 4 slots, exact
    assert met[(0, "tma_retiring")]["formula"] == "PERF_METRICS.RETIRING / TOPDOWN.SLOTS"
    slots = [x for x in r.records("result") if x["event"] == "TOPDOWN.SLOTS"]
    assert slots and slots[0]["counter"] == "FIXED_CTR3" and slots[0]["fraction"] == [32, 1], slots


def test_hybrid_dump_all_cpus_every_core_type_with_its_method():
    r = _sim("--json", "--dump", data_path("cpuid", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt"),
             "--perf-capabilities", ICE_LAKE_CAPS, "--",
             "run", "--bench", "add_indep", "--topdown", "1", "--cpu", "all", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    met = _metrics(r)
    assert len(met) == 16 * 4, sorted(met)
    methods = {}
    for cpu in range(16):
        methods[cpu] = {met[(cpu, n)]["method"] for n in L1}
        for n in L1:
            assert met[(cpu, n)]["valid"] is True, met[(cpu, n)]
    assert {c for c, m in methods.items() if m == {"perf_metrics"}} == {0, 1, 10, 11, 12, 13}, methods
    assert {c for c, m in methods.items() if m == {"atom_fixed"}} == set(range(2, 10)), methods
    assert {c for c, m in methods.items() if m == {"crestmont_events"}} == {14, 15}, methods
    # E cores: exact fractions (GP and fixed-counter counts), 8 and 6 slots per cycle.
    for cpu, w in [(c, 8) for c in range(2, 10)] + [(14, 6), (15, 6)]:
        assert [_frac(met[(cpu, n)]) for n in L1] == _budget(w), (cpu, [met[(cpu, n)] for n in L1])
    counters = {(x["cpu"], x["event"]): x["counter"] for x in r.records("result")}
    assert counters[(2, "TOPDOWN_BAD_SPECULATION.ALL")] == "FIXED_CTR4"
    assert counters[(2, "TOPDOWN_FE_BOUND.ALL")] == "FIXED_CTR5"
    assert counters[(2, "TOPDOWN_RETIRING.ALL")] == "FIXED_CTR6"
    assert met[(14, "tma_retiring")]["formula"] == "[72.00] / (6 * CPU_CLK_UNHALTED.CORE)"
    assert met[(14, "tma_retiring")]["inputs"] == {"72.00": 24.0, "CPU_CLK_UNHALTED.CORE": 8.0}


def test_hybrid_dump_without_perf_metrics_warns_for_the_p_cores_and_measures_the_e_cores():
    r = _sim("--dump", data_path("cpuid", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt"), "--",
             "run", "--bench", "add_indep", "--topdown", "1", "--cpu", "all", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    assert "pmulab: warning: --topdown: CPUs 0-1,10-13: TopDown is unavailable: no TopDown on this core" in r.err, r
    assert " 2 tma_retiring                 0.5000  TOPDOWN_RETIRING.ALL / (8 * CPU_CLK_UNHALTED.CORE)" in r.out, r


def test_zen5_dump_pipeline_utilisation_exact():
    r = _sim("--json", "--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"),
             "--cpus", "0", "--", "run", "--bench", "add_indep", "--topdown", "1", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    met = _metrics(r)
    assert [_frac(met[(0, n)]) for n in L1] == _budget(8), met
    assert met[(0, "tma_smt_contention")]["fraction"] == [0, 1]
    assert {m["method"] for m in met.values()} == {"zen5_pipeline"}
    assert all(m["valid"] for m in met.values()), met


def test_frequency_in_hz_and_undefined_without_the_tsc_frequency():
    r = _sim("--json", "--model", "icelake", "--cpus", "0", "--",
             "run", "--bench", "add_indep", "--metrics", "frequency,IPC", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    (meta,) = r.records("meta")
    assert meta["tsc_hz"] == 1497600000, meta  # CPUID.15H: 19.2 MHz x 156 / 2
    met = _metrics(r)
    f = met[(0, "frequency")]
    # REF_TSC steps by CPUID.15H's 156/2 = 78 TSC ticks, as on the hardware: over the default
    # window (800 TSC ticks of difference: 100 copies x 8 cycles; REF_TSC crosses 10 steps of
    # 78 in it, 780 ticks) that is up to 2 x 78 / 780 = 20% off, and flagged, not exact.
    # (The old executor retired a modelled harness, so the steps fell at another phase: 858.)
    assert f["unit"] == "Hz" and f["ref_tsc_step"] == 78 and f["quantisation"] == 0.2, f
    assert f["valid"] is False and f["violation"] == (
        "REF_TSC advances in steps of 78 TSC ticks (CPUID.15H): over 780 ticks it is uncertain by up to 20.00%; "
        "measure longer (--loop, --unroll)"), f
    assert f["inputs"]["TSC_FREQUENCY"] == 1497600000, f
    # --loop 1000: some 780 000 ticks of difference: valid, and within its bound of the core's
    # simulated clock (the TSC rate).
    r = _sim("--json", "--model", "icelake", "--cpus", "0", "--",
             "run", "--bench", "add_indep", "--metrics", "frequency", "--reps", "3", "--warmup", "1", "--loop", "1000")
    assert r.rc == 0, r
    (f,) = r.records("metric")
    assert f["valid"] is True and f["quantisation"] == 0.0002, f
    assert abs(Fraction(f["fraction"][0], f["fraction"][1]) / 1497600000 - 1) <= Fraction(2, 10000), f
    r = _sim("--json", "--model", "skylake", "--cpus", "0", "--",
             "run", "--bench", "add_indep", "--metrics", "frequency", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    (f,) = r.records("metric")
    assert f["value"] is None and f["valid"] is False, f
    assert f["undefined"].startswith("the TSC frequency is unknown (CPUID.15H/16H"), f


def test_topdown_under_tcg_says_why():
    r = _sim("--model", "qemu_tcg_intel", "--", "run", "--bench", "add_indep", "--topdown", "1")
    assert r.rc == 3, r
    assert ("pmulab: error: --topdown: CPU 0: TopDown is unavailable: no performance counters: no architectural "
            "performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)") in r.err, r


def test_zen5_dump_level2_exact():
    # The default AMD budget (8 slots): 1 microcode op of 4 retiring, bad speculation all
    # pipeline restarts, 1 of 2 backend slots memory bound.
    r = _sim("--json", "--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"),
             "--cpus", "0", "--", "run", "--bench", "add_indep", "--topdown", "2", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    met = _metrics(r)
    assert len(met) == 13, sorted(met)  # 5 level 1, 8 level 2 with the frontend split
    # 1 of 8 slots empty from the frontend per cycle: never CntMask 8 of them, bandwidth.
    want = {"tma_heavy_operations": Fraction(1, 8), "tma_light_operations": Fraction(3, 8),
            "tma_branch_mispredicts": 0, "tma_machine_clears": Fraction(1, 8),
            "tma_fetch_latency": 0, "tma_fetch_bandwidth": Fraction(1, 8),
            "tma_memory_bound": Fraction(1, 8), "tma_core_bound": Fraction(1, 8)}
    for name, v in want.items():
        m = met[(0, name)]
        assert _frac(m) == v and m["level"] == 2 and m["valid"] is True, m
    assert met[(0, "tma_memory_bound")]["parent"] == "tma_backend_bound"
    # Zen 5's pipeline restarts: bp_redirects.resync (PMCx09F unit mask 01h, Linux
    # amdzen5/pipeline.json), not Zen 4's PMCx096 (1 slot per cycle, 8 cycles per iteration).
    mc = met[(0, "tma_machine_clears")]
    assert "bp_redirects.resync" in mc["formula"] and "resyncs_or_nc_redirects" not in mc["formula"], mc
    assert mc["inputs"]["bp_redirects.resync"] == 8.0 and mc["inputs"]["ex_ret_brn_misp"] == 0, mc
    lat = met[(0, "tma_fetch_latency")]
    assert lat["formula"] == "8 * [1A0.01.CMSK=8] / (8 * ls_not_halted_cyc)", lat
    assert lat["inputs"]["1A0.01.CMSK=8"] == 0 and lat["parent"] == "tma_frontend_bound", lat


def test_zen5_dump_amd_derived_metrics():
    # branch_pred: 6 instructions and 3/2 branches per iteration (its js is taken every
    # other iteration: 1 branch on the taken path, 2 on the other; the old executor, which
    # ran no kernel, counted the taken path only: 1); the Zen 5 budget retires 4 ops per
    # cycle and mispredicts none; the kernel loads nothing, so no request reaches L2
    # (0 / 0: undefined).
    r = _sim("--json", "--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"),
             "--cpus", "0", "--", "run", "--bench", "branch_pred", "--metrics", "Branches,Cache,Pipeline",
             "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    met = _metrics(r)
    b = met[(0, "branch_miss_rate")]
    assert b["formula"] == "ex_ret_brn_misp / ex_ret_brn" and b["fraction"] == [0, 1], b
    assert b["inputs"] == {"ex_ret_brn_misp": 0, "ex_ret_brn": 1.5}, b
    u = met[(0, "uops_per_instruction")]
    assert u["formula"] == "ex_ret_ops / instructions" and u["fraction"] == [4, 1], u
    l2 = met[(0, "l2_miss_ratio")]
    assert l2["value"] is None and l2["undefined"] == "division by zero", l2
    llc = met[(0, "llc_miss_ratio")]
    assert llc["undefined"] == ("no definition over this CPU's events ('LONGEST_LAT_CACHE.MISS' is an event "
                                "of other CPUs)"), llc


def test_skylake_level2_frontend_split():
    # The skylake model's default budget: 1 of 4 slots undelivered per cycle, never all 4:
    # IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE (9C.01, CMASK 4) counts nothing.
    r = _sim("--json", "--model", "skylake", "--cpus", "0", "--",
             "run", "--bench", "add_indep", "--topdown", "2", "--reps", "3", "--warmup", "1")
    assert r.rc == 0, r
    (w,) = r.records("warning")
    assert w["message"] == ("--topdown: CPU 0: --topdown 2: level 2 from GP events on Skylake-class cores is the "
                            "frontend split only (tma_fetch_latency, tma_fetch_bandwidth)"), w
    met = _metrics(r)
    assert len(met) == 6, sorted(met)
    lat, bw = met[(0, "tma_fetch_latency")], met[(0, "tma_fetch_bandwidth")]
    assert lat["formula"] == "4 * [9C.01.CMSK=4] / (4 * CPU_CLK_UNHALTED.THREAD)", lat
    assert lat["fraction"] == [0, 1] and lat["inputs"]["9C.01.CMSK=4"] == 0 and lat["valid"] is True, lat
    assert bw["fraction"] == [1, 4] and bw["valid"] is True, bw
    assert met[(0, "tma_frontend_bound")]["fraction"] == [1, 4]


# Issue #22's two review findings about PERF_METRICS, stated as the hardware behaves. The
# simulator's executor must run the generated code (init, the --no-mem register arithmetic)
# for these to test anything beyond the refusal; they pass on the byte-pattern scanner and
# must keep passing on the executing emulator.
ICE = ("--json", "--model", "icelake", "--cpus", "0", "--")
TD1 = ("--topdown", "1", "--reps", "3", "--warmup", "1")


def _l1(r):
    met = _metrics(r)
    return {n: _frac(met[(0, n)]) for n in L1}


def test_no_mem_gives_the_fractions_of_the_memory_mode():
    # --no-mem differences the counts in registers; the packed PERF_METRICS value is kept
    # as read at the end (not end - start) and scaled by the window's SLOTS.
    base = _sim(*ICE, "run", "--code", "4801c0", *TD1)
    nomem = _sim(*ICE, "run", "--code", "4801c0", *TD1, "--no-mem")
    assert base.rc == 0 and nomem.rc == 0, (base, nomem)
    a, b = _l1(base), _l1(nomem)
    for n in L1:
        assert abs(a[n] - b[n]) <= Fraction(1, 100), (n, a, b)
    for r in (base, nomem):
        assert all(m["valid"] for m in r.records("metric")), r.records("metric")


def test_a_long_init_does_not_swamp_the_fractions():
    # The SLOTS/PERF_METRICS reset comes after --init, right before the start reads: the
    # init's slots are not in the fractions (200 x imul rax, rax in init).
    base = _sim(*ICE, "run", "--code", "4801c0", *TD1)
    init = _sim(*ICE, "run", "--code", "4801c0", "--init", "480fafc0" * 200, *TD1)
    assert base.rc == 0 and init.rc == 0, (base, init)
    a, b = _l1(base), _l1(init)
    for n in L1:
        assert abs(a[n] - b[n]) <= Fraction(1, 100), (n, a, b)


def test_markers_with_perf_metrics_are_refused_with_the_reason():
    marked = "4801c0" + "043f81c2b113b5f0" + "90" + "043f81c2b113b5e0"
    r = _sim("--model", "icelake", "--cpus", "0", "--", "run", "--code", marked, *TD1)
    assert r.rc == 2, r
    assert "cannot pause IA32_PERF_METRICS" in r.err and "drop the markers" in r.err, r
    # Without --topdown the markers work as before.
    ok = _sim("--model", "icelake", "--cpus", "0", "--", "run", "--code", marked, "--reps", "3", "--warmup", "1")
    assert ok.rc == 0, ok


def test_validation_tolerance_comes_from_the_slots_of_the_runs():
    # Issue #26 item 5: PERF_METRICS bytes are 1/255 steps of the slots since the reset, so
    # a category of the U/2U difference is known to ((S_U + S_2U)/255 + 4) slots of the
    # S_2U - S_U the iterations own, a difference of two categories to twice that: at
    # least 2 * 3/255 (S_2U = 2 S_U without harness), far above 0.01. Exact inputs (GP and
    # fixed counters) keep 0.01. The record says which tolerance it was validated with.
    r = _sim(*ICE, "run", "--bench", "add_indep", *TD1)
    assert r.rc == 0, r
    met = r.records("metric")
    assert len(met) == 4, met
    for m in met:
        assert Fraction(6, 255) < Fraction(str(m["tolerance"])) < Fraction(3, 100), m
        assert m["valid"] is True, m
    zen = _sim("--json", "--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"),
               "--cpus", "0", "--", "run", "--bench", "add_indep", *TD1)
    assert zen.rc == 0, zen
    assert {m["tolerance"] for m in zen.records("metric")} == {0.01}, zen.records("metric")


def test_no_mem_on_golden_cove_leaves_uop_dropping_out_and_says_so():
    # --no-mem holds 6 reads in R8-R13: TSC, SLOTS and the 4 level-1 bytes. INT_MISC.
    # UOP_DROPPING (Intel's Golden Cove definitions) does not fit: left out with a warning,
    # the byte-share definitions are used, and the run works as on Ice Lake.
    r = _sim("--json", "--model", "sapphire_rapids", "--cpus", "0", "--",
             "run", "--code", "4801c0", *TD1, "--no-mem")
    assert r.rc == 0, r
    warn = [w["message"] for w in r.records("warning")]
    assert any("--no-mem: INT_MISC.UOP_DROPPING (AD.10) does not fit" in w for w in warn), warn
    assert not [x for x in r.records("result") if x["event"] == "AD.10"]
    met = _metrics(r)
    assert met[(0, "tma_bad_speculation")]["formula"] == "PERF_METRICS.BAD_SPECULATION / TOPDOWN.SLOTS"
    assert all(m["valid"] for m in met.values()), met
    full = _sim("--json", "--model", "sapphire_rapids", "--cpus", "0", "--", "run", "--code", "4801c0", *TD1)
    assert full.rc == 0, full
    assert [x["counter"] for x in full.records("result") if x["event"] == "AD.10"] == ["PMC0"]
    assert "[AD.10]" in _metrics(full)[(0, "tma_bad_speculation")]["formula"]
