"""run --sample on pmulab-sim (docs/sampling.md "Sampling"): the simulated PMU raises the
PMI right after the instruction whose retirement overflowed the counter, so the sample's
RIP is the next instruction. With a period of 1 every counted instruction is one sample
and each bucket of the body holds exactly its instruction's executions; with a prime
period the buckets hold their share within one sample. Exact values throughout: the
simulator is deterministic."""

from pmulab_test import data_path, run_tool

# add rax, rbx; add rcx, rdx; add rsi, rdi; nop: offsets 0, 3, 6, 9.
STRAIGHT = "add rax, rbx; add rcx, rdx; add rsi, rdi; nop"
STRAIGHT_AT = (0, 3, 6, 9)
# mov ecx, 5; L: add rax, rbx; dec ecx; jnz L: mov once, the loop's 3 instructions 5 times
# per copy (offsets 0, 5, 8, 10).
LOOP = "mov ecx, 5; 1: add rax, rbx; dec ecx; jnz 1b"
LOOP_FREQ = {0: 1, 5: 5, 8: 5, 10: 5}
# --unroll 10 --reps 2 --warmup 0: 4 runs (2 of 10 copies, 2 of 20), 60 copies in all.
SHAPE = ("--unroll", "10", "--reps", "2", "--warmup", "0")
RUNS, COPIES = 4, 60
# The harness from the start WRMSR to the stop WRMSR with one counter read: the
# serialisations, the reads and the jump to the end sequence (21 instructions per run).
HARNESS_PER_RUN = 21

MACHINES = {
    "skylake dump": ("--dump", data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt")),
    # An i5-12400: Alder Lake P cores only (no E cores on that part).
    "alder lake dump": ("--dump", data_path("cpuid", "GenuineIntel0090672_AlderLake_02_CPUID.txt")),
    # Hybrid: 6 P cores and 10 E cores (Arrow Lake H), and the Alder Lake-like model.
    "arrow lake h dump (P and E cores)": ("--dump", data_path("cpuid", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt")),
    "alder lake model (P and E cores)": ("--model", "alder_lake"),
    "ice lake": ("--model", "icelake"),
    "zen 4": ("--model", "zen4"),
    "granite ridge (zen 5) dump": ("--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")),
}


def _sim(*args, timeout=300):
    return run_tool("pmulab-sim", *args, timeout=timeout)


def _sample(machine, asm, sample, *extra, shape=SHAPE):
    r = _sim("--json", *MACHINES[machine], "--", "run", "--asm", asm, "--sample", sample, "--cpu", "all", *shape,
             *extra)
    assert r.rc == 0, (machine, r)
    recs = r.records("samples")
    cpus = r.records("meta")[0]["cpus"]
    assert sorted(x["cpu"] for x in recs) == list(range(cpus)), (machine, recs)
    return recs


def _buckets(rec):
    assert all(b["block"] == "body" for b in rec["buckets"]), rec
    offs = [b["offset"] for b in rec["buckets"]]
    assert offs == sorted(offs), rec
    return {b["offset"]: b["count"] for b in rec["buckets"]}


def test_the_hybrid_machines_have_both_core_types():
    for machine in ("arrow lake h dump (P and E cores)", "alder lake model (P and E cores)"):
        r = _sim("--json", *MACHINES[machine], "--", "info")
        assert r.rc == 0, r
        kinds = {c.get("core_type") for c in r.records("cpu")}
        assert kinds == {"core", "atom"}, (machine, kinds)


def test_period_one_buckets_are_the_instructions_executions():
    for machine in MACHINES:
        for rec in _sample(machine, STRAIGHT, "instructions:1"):
            assert rec["event"] == "instructions" and rec["period"] == 1 and rec["bench"] == STRAIGHT, rec
            assert _buckets(rec) == {o: COPIES for o in STRAIGHT_AT}, (machine, rec)
            assert rec["harness"] == RUNS * HARNESS_PER_RUN, (machine, rec)
            assert rec["samples"] == 4 * COPIES + rec["harness"], (machine, rec)
        for rec in _sample(machine, LOOP, "instructions:1"):
            assert _buckets(rec) == {o: COPIES * f for o, f in LOOP_FREQ.items()}, (machine, rec)
            assert rec["harness"] == RUNS * HARNESS_PER_RUN, (machine, rec)
        # --loop 3: every copy 3 times; R15 := 3 (two loads) and dec r15 / jnz per iteration
        # are the harness's.
        for rec in _sample(machine, STRAIGHT, "instructions:1", "--loop", "3"):
            assert _buckets(rec) == {o: 3 * COPIES for o in STRAIGHT_AT}, (machine, rec)
            assert rec["harness"] == RUNS * (HARNESS_PER_RUN + 2 + 2 * 3), (machine, rec)


def _shares(machine, asm, freq, period, *extra):
    """With U a multiple of the period P, each run's copies (U x n instructions, n per
    copy) hold U/P x n samples whose positions step by P, which is prime to n: every
    instruction position gets exactly U/P of them, whatever the harness before shifted.
    So each bucket is exactly its count with a period of 1, divided by P: the instruction's
    execution frequency. The total is floor(N / P) of the N counted instructions."""
    shape = ("--unroll", str(period), "--reps", "2", "--warmup", "0")
    every = {x["cpu"]: x for x in _sample(machine, asm, "instructions:1", *extra, shape=shape)}
    for rec in _sample(machine, asm, f"instructions:{period}", *extra, shape=shape):
        one = every[rec["cpu"]]
        assert rec["period"] == period and rec["samples"] == one["samples"] // period, (machine, rec, one)
        full = _buckets(one)
        assert set(full) == set(freq) and all(n % period == 0 for n in full.values()), (machine, one)
        assert _buckets(rec) == {off: n // period for off, n in full.items()}, (machine, period, rec, one)
        assert rec["harness"] == rec["samples"] - sum(full.values()) // period, (machine, rec)


def test_prime_periods_give_each_instruction_exactly_its_share():
    for machine in MACHINES:
        for period in (7, 13):
            _shares(machine, STRAIGHT, dict.fromkeys(STRAIGHT_AT, 1), period)
        _shares(machine, STRAIGHT, dict.fromkeys(STRAIGHT_AT, 1), 7, "--loop", "3")
        _shares(machine, LOOP, LOOP_FREQ, 7)
        _shares(machine, LOOP, LOOP_FREQ, 17)


def test_default_periods_and_several_events_and_the_text_table():
    r = _sim("--json", "--model", "skylake", "--cpus", "0", "--", "run", "--asm", STRAIGHT, "--sample",
             "instructions", "--sample", "cycles:u:7", "--unroll", "1000", "--reps", "20", "--warmup", "0")
    assert r.rc == 0, r
    recs = {x["event"]: x for x in r.records("samples")}
    assert set(recs) == {"instructions", "cycles:u"}, recs
    # 20 x (1000 + 2000) x 4 body instructions + 40 x 21: one sample per 100003.
    assert recs["instructions"]["period"] == 100003, recs
    assert recs["instructions"]["samples"] == (20 * 3000 * 4 + 40 * HARNESS_PER_RUN) // 100003 == 2, recs
    assert recs["cycles:u"]["period"] == 7, recs
    assert recs["cycles:u"]["samples"] == 0, "user-mode cycles: pmulab runs the code at CPL 0"
    assert r.records("result") == [], "sampled events are not counted results"
    t = _sim("--model", "skylake", "--cpus", "0", "--", "run", "--asm", STRAIGHT, "--sample", "instructions:1",
             *SHAPE)
    assert t.rc == 0, t
    assert (f"samples of instructions every 1 on CPU 0, {STRAIGHT}: 324 samples, 84 in the harness\n"
            "  block        offset    samples    share\n"
            "  body              0         60   18.52%\n"
            "  body              3         60   18.52%\n"
            "  body              6         60   18.52%\n"
            "  body              9         60   18.52%\n"
            "  harness           -         84   25.93%\n") in t.out, t.out


def test_debugctl_and_the_pmu_are_restored_and_the_handler_is_traced():
    r = _sim("--json", "--trace-msr", "--model", "icelake", "--cpus", "0", "--", "run", "--asm", STRAIGHT,
             "--sample", "instructions:100", *SHAPE)
    assert r.rc == 0, r
    t = [(e["op"], e["register"], e.get("value"), e["runs"]) for e in r.records("msr_trace")]
    dbg = [v for op, reg, v, _ in t if op == "wrmsr" and reg == "IA32_DEBUGCTL"]
    # FREEZE_WHILE_SMM by the noise guard, FREEZE_PERFMON_ON_PMI added by sampling, then
    # each put back as it was.
    assert dbg == ["0x4000", "0x5000", "0x4000", "0x0"], dbg
    # 4 runs of 4 x 10 or 4 x 20 body instructions and 21 of the harness: 324, one PMI
    # per 100, in 3 runs alike (shown once, with their count). The handler reads the
    # status (FIXED_CTR0's overflow, CTR_FRZ: the counters froze), reloads 2^48 - 100 and
    # acknowledges both, which unfreezes them.
    pmi = [("rdmsr", "IA32_PERF_GLOBAL_STATUS", "0x800000100000000", 3),
           ("wrmsr", "IA32_FIXED_CTR0", "0xffffffffff9c", 3),
           ("wrmsr", "IA32_PERF_GLOBAL_STATUS_RESET", "0x800000100000000", 3)]
    at = t.index(pmi[0])
    assert t[at:at + 3] == pmi, t
    (rec,) = r.records("samples")
    assert rec["samples"] == 324 // 100 == 3, rec
    # The PMU as it was: counters and controls written back last.
    last = {}
    for op, reg, v, _ in t:
        if op == "wrmsr":
            last[reg] = v
    assert (last["IA32_FIXED_CTR0"], last["IA32_FIXED_CTR_CTRL"], last["IA32_PERF_GLOBAL_CTRL"]) == \
        ("0x0", "0x0", "0xff"), last


def test_bad_input_is_refused_before_anything_runs():
    cases = [
        (("--model", "skylake"), "instructions:0", 2,
         "--sample 'instructions:0': a period of 0; the period counts events between samples, at least 1"),
        (("--model", "skylake"), "instructions:281474976710656", 2,
         "CPU 0: cannot sample: period 281474976710656 does not fit the 48-bit counter (at most 281474976710655)"),
        # Without full-width writes a GP counter takes 32 bits sign-extended.
        (("--model", "intel_v3"), "branches:2147483649", 2,
         "CPU 0: cannot sample: period 2147483649 cannot be written to a general-purpose counter of this CPU: "
         "without full-width writes (IA32_PERF_CAPABILITIES.FW_WRITE[13]) a counter write is 32 bits "
         "sign-extended, so a period must be at most 2147483648"),
        (("--model", "qemu_tcg"), "instructions", 3,
         "CPU 0: cannot sample 'instructions': no performance-monitoring counters: no AMD core counters "
         "enumerated (CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor "
         "without PMU passthrough)"),
        (("--model", "prescott"), "instructions", 3,
         "CPU 0: cannot sample 'instructions': the NetBurst ESCR/CCCR PMU's overflow interrupt (CCCR.OVF_PMI) is "
         "not implemented in pmulab"),
        (("--model", "zen4"), "aperf", 3,
         "CPU 0: cannot sample: AMD's fixed-like counters (IRPerfCount, APERF, MPERF) cannot interrupt: sample on "
         "a PERF_CTR counter (e.g. PMCx0C0 for retired instructions)"),
    ]
    for machine, spec, rc, msg in cases:
        r = _sim("--json", *machine, "--cpus", "0", "--", "run", "--asm", "nop", "--sample", spec)
        assert r.rc == rc, (spec, r)
        (err,) = r.records("error")
        assert err["message"] == msg, (spec, err)
        assert r.records("samples") == [] and r.records("result") == [], r
