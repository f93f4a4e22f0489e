"""selftest's interrupt checks (kvm-unit-tests x86/pmu.c: PMI per overflow, freeze on PMI,
counter width) on simulated Skylake, Ice Lake, Alder Lake (P and E cores) and Zen 4: they
PASS with exact details, and FAIL on a simulated PMU whose PMI or freeze is broken
(pmulab-sim --break); under QEMU TCG (no PMU) they SKIP with the reason."""

from pmulab_test import data_path, run_qemu, run_tool

SKYLAKE = data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt")
ALDER_LAKE = data_path("cpuid", "GenuineIntel0090672_AlderLake_02_CPUID.txt")
GRANITE_RIDGE = data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")

OVF = "an overflow sets its GLOBAL_STATUS bit and delivers exactly one PMI"
FREEZE = "freeze-on-PMI stops every counter"
WIDTH = "counters wrap at their enumerated width"
LEGACY = f"{WIDTH}: IA32_PMCx legacy writes (32 bits, sign-extended)"
FULL = f"{WIDTH}: IA32_A_PMCx full-width writes"
GP_WRAP = f"{WIDTH}: GP counters count past 2^width - 1 to 0"
FX_WRAP = f"{WIDTH}: fixed counters count past 2^width - 1 to 0"
INTEL = [f"{OVF}: PMC0", f"{OVF}: FIXED_CTR0", FREEZE, LEGACY, FULL, GP_WRAP, FX_WRAP]
AMD = [f"{OVF}: PERF_CTR0", FREEZE, GP_WRAP]


def _pmi_checks(*machine, broken=()):
    args = ["--json", *machine]
    for b in broken:
        args += ["--break", b]
    r = run_tool("pmulab-sim", *args, "--", "selftest", "--cpu", "all", timeout=300)
    checks = [c for c in r.records("check") if c["name"].startswith((OVF, FREEZE, WIDTH))]
    return r, checks


def _by_cpu(checks):
    out = {}
    for c in checks:
        out.setdefault(c["cpu"], {})[c["name"]] = (c["status"], c["detail"])
    return out


def _pmi_detail(counter, bit):
    return ("period 3000 of 4000 instructions: 1 PMI; GLOBAL_STATUS bit %d set at it, clear after the handler; "
            "counter 0 at it; RIP in the body at copy 373 + 20; LVT 0x10400 at it (masked by the delivery), "
            "re-armed 0x400; LVT restored 0x10000 (was 0x10000)" % bit)


def _intel_passes(got, gp, fixed=3, freeze="GLOBAL_STATUS.CTR_FRZ set", wrap=4085, ref="3000"):
    """Every Intel check PASSes, with the exact details of a CPU with `gp` GP counters."""
    assert got[f"{OVF}: PMC0"] == ("PASS", _pmi_detail("PMC0", 0)), got
    assert got[f"{OVF}: FIXED_CTR0"] == ("PASS", _pmi_detail("FIXED_CTR0", 32)), got
    pmcs = ", ".join(f"PMC{i} 3000" for i in range(gp))
    fx = ", ".join(["FIXED_CTR0 0", "FIXED_CTR1 3000", f"FIXED_CTR2 {ref}"][:fixed])
    assert got[FREEZE] == ("PASS", f"1 PMI; {freeze} at the PMI; no counter moved after it: {pmcs}, {fx}; "
                                   "DEBUGCTL restored 0x0, LVT 0x10000"), got
    assert got[LEGACY] == ("PASS", "width 48 (CPUID.0AH:EAX[23:16]): 0xffffff0123456789 reads 0x23456789, "
                                   "0x89abcdef reads 0xffff89abcdef on every PMC"), got
    wraps = ", ".join(f"PMC{i} {wrap}" for i in range(gp))
    assert got[GP_WRAP] == ("PASS", f"from 2^48-16 over 4000 instructions: {wraps}"), got
    assert got[FX_WRAP][0] == "PASS" and got[FX_WRAP][1].startswith(
        f"from 2^48-16 over 4000 instructions: FIXED_CTR0 {wrap}, FIXED_CTR1 {wrap}, FIXED_CTR2 "), got


FULL_WIDTH_PASS = ("PASS", "width 48 (CPUID.0AH:EAX[23:16]): 0xff0123456789 reads back, 0xffffff0123456789 "
                           "(beyond the width) raises #GP on every PMC")


def test_interrupt_checks_pass_on_simulated_skylake():
    r, checks = _pmi_checks("--dump", SKYLAKE, "--cpus", "0")
    assert r.rc == 0, r
    assert [c["name"] for c in checks] == INTEL, checks
    got = _by_cpu(checks)[0]
    _intel_passes(got, gp=8)
    # The dump cannot carry IA32_PERF_CAPABILITIES: without FW_WRITE the full-width line SKIPs, with it PASSes.
    assert got[FULL] == ("SKIP", "no full-width writes (IA32_PERF_CAPABILITIES.FW_WRITE[13] = 0)"), got
    r, checks = _pmi_checks("--dump", SKYLAKE, "--cpus", "0", "--perf-capabilities", "0x33c5")
    assert r.rc == 0, r
    assert _by_cpu(checks)[0][FULL] == FULL_WIDTH_PASS, checks


def test_interrupt_checks_pass_on_simulated_ice_lake():
    r, checks = _pmi_checks("--model", "icelake", "--cpus", "0")
    assert r.rc == 0, r
    assert [c["name"] for c in checks] == INTEL, checks
    got = _by_cpu(checks)[0]
    _intel_passes(got, gp=8, ref="3042")  # the reference clock: the TSC at 1497.6 MHz (CPUID.15H)
    assert got[FULL] == FULL_WIDTH_PASS, got


def test_interrupt_checks_pass_on_alder_lake_p_and_e_cores():
    r, checks = _pmi_checks("--dump", ALDER_LAKE, "--cpus", "0")
    assert r.rc == 0, r
    _intel_passes(_by_cpu(checks)[0], gp=8)
    # The dump is a P-core-only i5-12400: the hybrid model gives a P core (CPU 0: 8 GP) and an E core (6 GP).
    r, checks = _pmi_checks("--model", "alder_lake", "--cpus", "0,4")
    assert r.rc == 0, r
    got = _by_cpu(checks)
    assert sorted(got) == [0, 1], got
    assert [c["name"] for c in checks] == INTEL + INTEL, checks
    _intel_passes(got[0], gp=8)
    _intel_passes(got[1], gp=6, wrap=4069)
    assert got[0][FULL] == got[1][FULL] == FULL_WIDTH_PASS, got


def _amd_passes(got):
    assert got[f"{OVF}: PERF_CTR0"] == ("PASS", _pmi_detail("PERF_CTR0", 0)), got
    ctrs = ", ".join(f"PERF_CTR{i} 3000" for i in range(1, 6))
    assert got[FREEZE] == ("PASS", f"1 PMI; GLOBAL_STATUS.CTR_FRZ set at the PMI; no counter moved after it: "
                                   f"PERF_CTR0 0, {ctrs}; DEBUGCTL restored 0x0, LVT 0x10000"), got
    wraps = ", ".join(f"PERF_CTR{i} 4045" for i in range(6))
    assert got[GP_WRAP] == ("PASS", f"from 2^48-16 over 4000 instructions: {wraps}"), got


def test_interrupt_checks_pass_on_zen_4():
    for machine in (("--model", "zen4"), ("--dump", GRANITE_RIDGE)):
        r, checks = _pmi_checks(*machine, "--cpus", "0")
        assert r.rc == 0, (machine, r)
        assert [c["name"] for c in checks] == AMD, (machine, checks)
        _amd_passes(_by_cpu(checks)[0])


def test_without_a_global_status_the_pmi_is_told_by_the_sign():
    # Zen 3 (no PerfMonV2) and Intel v1: EN is the only enable, set by the region's own start write.
    for model, counter in (("zen3", "PERF_CTR0"), ("intel_v1", "PMC0")):
        r, checks = _pmi_checks("--model", model, "--cpus", "0")
        assert r.rc == 0, (model, r)
        got = _by_cpu(checks)[0]
        assert got[f"{OVF}: {counter}"] == ("PASS", "period 3000 of 4000 instructions: 1 PMI; counter wrapped past 0 "
                                            "at it (no global status: its sign); counter 0 at it; RIP in the body at "
                                            "copy 373 + 20; LVT 0x10400 at it (masked by the delivery), re-armed "
                                            "0x400; LVT restored 0x10000 (was 0x10000)"), got
        assert got[FREEZE][0] == "SKIP", got


def test_broken_pmi_fails_the_pmi_check_with_the_numbers():
    for machine, counters in ((("--dump", SKYLAKE), [("PMC0", 0), ("FIXED_CTR0", 32)]),
                              (("--model", "zen4"), [("PERF_CTR0", 0)])):
        r, checks = _pmi_checks(*machine, "--cpus", "0", broken=["pmi"])
        assert r.rc == 1, (machine, r)
        got = _by_cpu(checks)[0]
        for counter, bit in counters:
            assert got[f"{OVF}: {counter}"] == (
                "FAIL", "period 3000 of 4000 instructions: 0 PMIs (expected 1); GLOBAL_STATUS bit %d set after the "
                "run (the counter overflowed); counter 1021 after the run: no NMI came through the LVT entry (0x400 "
                "after the run); LVT restored 0x10000 (was 0x10000)" % bit), (machine, got)
        assert got[FREEZE] == ("FAIL", "0 PMIs (expected 1); no PMI came, so nothing could freeze"), got
        assert [n for n, (s, _) in got.items() if s == "FAIL"] == [f"{OVF}: {c}" for c, _ in counters] + [FREEZE]
        summary = r.records("summary")[0]
        assert summary["failed"] == len(counters) + 1, summary


def test_broken_freeze_fails_the_freeze_check_only():
    r, checks = _pmi_checks("--dump", SKYLAKE, "--cpus", "0", broken=["freeze"])
    assert r.rc == 1, r
    got = _by_cpu(checks)[0]
    pmcs = ", ".join(f"PMC{i} 3000 -> 4101" for i in range(8))
    assert got[FREEZE] == ("FAIL", "1 PMI; GLOBAL_STATUS.CTR_FRZ NOT set at the PMI; counters moved after it (at the "
                                   f"PMI -> at the end): {pmcs}, FIXED_CTR0 0 -> 2^48-1899, FIXED_CTR1 3000 -> 4101, "
                                   "FIXED_CTR2 3000 -> 4101; DEBUGCTL restored 0x0, LVT 0x10000"), got
    assert [n for n, (s, _) in got.items() if s == "FAIL"] == [FREEZE], got
    assert r.records("summary")[0]["failed"] == 1
    # v3 (the legacy freeze clears GLOBAL_CTRL) and Zen 4 (LbrAndPmcFreeze): the same verdict.
    for model, why in (("intel_v3", "GLOBAL_CTRL 0x70000000f at the PMI (not cleared)"),
                       ("zen4", "GLOBAL_STATUS.CTR_FRZ NOT set at the PMI")):
        r, checks = _pmi_checks("--model", model, "--cpus", "0", broken=["freeze"])
        assert r.rc == 1, (model, r)
        got = _by_cpu(checks)[0]
        assert got[FREEZE][0] == "FAIL" and got[FREEZE][1].startswith(f"1 PMI; {why}; counters moved"), got
        assert [n for n, (s, _) in got.items() if s == "FAIL"] == [FREEZE], got


def test_break_names_are_checked():
    r = run_tool("pmulab-sim", "--model", "skylake", "--break", "lbrs", "--", "selftest")
    assert r.rc == 2, r
    assert r.err.strip() == ("pmulab-sim: error: --break: unknown behaviour 'lbrs' (expected pmi, freeze, lbr, "
                             "instructions, branches) "
                             "(see pmulab-sim --help)"), r
    assert r.out == "", r
    r = run_tool("pmulab-sim", "--model", "skylake", "--cpus", "0", "--break", "pmi", "--", "info")
    assert r.out.startswith("pmulab-sim: SIMULATED model skylake, CPUs 0, PMU broken: pmi (1 CPU)"), r


def test_qemu_tcg_skips_the_interrupt_checks_with_the_reason():
    r = run_qemu("selftest", json_mode=True, icount=7, smp=1, timeout=120)
    assert r.rc == 0, r
    checks = [c for c in r.records("check") if c["name"].startswith((OVF, FREEZE, WIDTH))]
    assert [(c["name"], c["status"]) for c in checks] == [(OVF, "SKIP"), (FREEZE, "SKIP"), (WIDTH, "SKIP")], checks
    for c in checks:
        # TCG has no PMU: that comes before whether the platform can take the PMI.
        assert c["detail"].startswith("CPU 0: no performance-monitoring counters: no AMD core counters"), c
        assert "CPUID.0AH:EAX[7:0] = 0" in c["detail"], c


LBR = "lbr: an LBR records a known taken jump"


def test_broken_lbr_fails_the_lbr_check_only():
    # Architectural LBR (Alder Lake P core) and AMD LbrExtV2 (Zen 4): the stack stays empty.
    for machine, what in ((["--dump", ALDER_LAKE], "architectural LBR (architectural, 32 entries)"),
                          (["--model", "zen4"], "amd_lbr_v2 LBR (LbrExtV2, 16 entries)")):
        r = run_tool("pmulab-sim", "--json", *machine, "--cpus", "0", "--break", "lbr", "--", "selftest", timeout=300)
        assert r.rc == 1, (machine, r)
        failed = [(c["name"], c["detail"]) for c in r.records("check") if c["status"] == "FAIL"]
        assert failed == [(LBR, f"{what}: 0 records, none from the JMP (EB 01) to its target")], (machine, failed)
        r = run_tool("pmulab-sim", "--json", *machine, "--cpus", "0", "--", "selftest", timeout=300)
        assert r.rc == 0, (machine, r)
        lbr = [c for c in r.records("check") if c["name"] == LBR]
        assert [c["status"] for c in lbr] == ["PASS"], lbr
