"""run --sample EVENT --precise on pmulab-sim (docs/sampling.md "Precise sampling (PEBS)"):
the simulated Skylake (PEBS record format 3) and Ice Lake (format 4, adaptive) write a
record at the eventing instruction itself, with the data address the executor computed
and the load latency of the cache model (sim_pebs.h). With a period of 1 every load of
every copy is one sample: exact buckets, exact data places, exact latencies."""

from pmulab_test import run_tool

# mov rax, [r14] (0, 3 bytes); add rbx, rcx (3); mov rdx, [r14+64] (6, 4 bytes);
# imul rsi, rdi (10); mov r8, [rdi-8] (14); nop (18).
MIXED = "mov rax, [r14]; add rbx, rcx; mov rdx, [r14+64]; imul rsi, rdi; mov r8, [rdi-8]; nop"
# --unroll 10 --reps 2 --warmup 0: 4 runs (2 of 10 copies, 2 of 20), 60 copies in all.
SHAPE = ("--unroll", "10", "--reps", "2", "--warmup", "0")
COPIES, RUNS = 60, 4
HARNESS_LOADS = 4  # per run: the harness's own loads between the start and stop writes
MODELS = ("icelake", "skylake")


def _sim(*args):
    return run_tool("pmulab-sim", *args, timeout=300)


def _samples(model, asm, sample, *extra):
    r = _sim("--json", "--model", model, "--cpus", "0", "--", "run", "--asm", asm, "--sample", sample, *SHAPE, *extra)
    assert r.rc == 0, (model, r)
    (rec,) = r.records("samples")
    return rec


def _buckets(rec):
    assert all(b["block"] == "body" for b in rec["buckets"]), rec
    return {b["offset"]: b for b in rec["buckets"]}


def test_every_precise_sample_is_on_a_load_with_the_address_it_used():
    for model in MODELS:
        rec = _samples(model, MIXED, "D0.81:1", "--precise")  # MEM_INST_RETIRED.ALL_LOADS
        assert rec["precise"] is True and rec["event"] == "D0.81" and rec["period"] == 1, (model, rec)
        b = _buckets(rec)
        assert sorted(b) == [0, 6, 14], (model, rec)
        assert all(x["count"] == COPIES for x in b.values()), (model, rec)
        assert b[0]["data"] == [{"reg": "r14", "offset": 0, "count": COPIES}], (model, rec)
        assert b[6]["data"] == [{"reg": "r14", "offset": 64, "count": COPIES}], (model, rec)
        assert b[14]["data"] == [{"reg": "rdi", "offset": -8, "count": COPIES}], (model, rec)
        assert all("latency" not in x for x in b.values()), "ALL_LOADS records carry no load latency"
        assert rec["harness"] == RUNS * HARNESS_LOADS, (model, rec)
        assert rec["samples"] == 3 * COPIES + rec["harness"], (model, rec)
        # The counter's own interrupt lands one instruction late (skid): the instruction
        # after each load, and the harness's last load skids into the body's first bytes.
        plain = _samples(model, MIXED, "D0.81:1")
        assert "precise" not in plain, plain
        assert {o: x["count"] for o, x in _buckets(plain).items()} == {0: RUNS, 3: COPIES, 10: COPIES, 18: COPIES}


def test_load_latency_separates_an_l1_hit_from_a_miss():
    # [r14] stays in L1D after its first access; [r14+4096] is flushed before every load.
    asm = "mov rax, [r14]; clflush [r14+4096]; mov rcx, [r14+4096]; add rbx, rcx"
    for model in MODELS:
        rec = _samples(model, asm, "CD.01.MSR_3F6H=3:1", "--precise")  # MEM_TRANS_RETIRED.LOAD_LATENCY
        b = _buckets(rec)
        assert sorted(b) == [0, 11], (model, rec)
        # L1D: 4 cycles (the first access of all: memory, 4 + 200); memory: 204.
        assert b[0]["latency"] == {"n": COPIES, "min": 4, "median": 4.0, "max": 204}, (model, rec)
        assert b[11]["latency"] == {"n": COPIES, "min": 204, "median": 204.0, "max": 204}, (model, rec)
        assert b[11]["data"] == [{"reg": "r14", "offset": 4096, "count": COPIES}], (model, rec)
        # A threshold of 10 cycles: the L1D hits are not counted, only the one cold miss.
        rec = _samples(model, asm, "CD.01.MSR_3F6H=10:1", "--precise")
        b = _buckets(rec)
        assert {o: x["count"] for o, x in b.items()} == {0: 1, 11: COPIES}, (model, rec)
        assert rec["harness"] == 0, (model, rec)


def test_prec_dist_samples_each_instruction_itself_on_skylake():
    rec = _samples("skylake", "add rax, rbx; mov rcx, [r14]; nop", "C0.01:1", "--precise")  # INST_RETIRED.PREC_DIST
    assert {o: x["count"] for o, x in _buckets(rec).items()} == {0: COPIES, 3: COPIES, 6: COPIES}, rec
    assert all("data" not in x for x in rec["buckets"]), "PREC_DIST is not a memory event"


ALU = "add rbx, rcx; imul rsi, rdi; nop"  # offsets 0, 3, 7


def test_fixed_counter_0_pebs_samples_the_instruction_that_retired_the_pth_on_icelake():
    # Ice Lake's INST_RETIRED.PREC_DIST is fixed counter 0 (adaptive PEBS, PEBS_ENABLE bit 32):
    # `instructions` and C0.01 both go there. Period 1: each instruction exactly its executions.
    for sample in ("instructions:1", "C0.01:1"):
        rec = _samples("icelake", ALU, sample, "--precise")
        assert rec["precise"] is True and rec["period"] == 1, rec
        assert {o: x["count"] for o, x in _buckets(rec).items()} == {0: COPIES, 3: COPIES, 7: COPIES}, rec
        assert all("data" not in x for x in rec["buckets"]), "PREC_DIST is not a memory event"
    # Period 3, three instructions a copy: every record on the instruction that retired the
    # third, the first of the copy; the counter's own interrupt skids to the next one.
    rec = _samples("icelake", ALU, "instructions:3", "--precise")
    assert {o: x["count"] for o, x in _buckets(rec).items()} == {0: COPIES}, rec
    plain = _samples("icelake", ALU, "instructions:3")
    assert {o: x["count"] for o, x in _buckets(plain).items()} == {3: COPIES}, plain
    assert rec["harness"] == plain["harness"] == 28, (rec, plain)


def _trace(model, sample):
    r = _sim("--json", "--trace-msr", "--model", model, "--cpus", "0", "--", "run", "--asm", "mov rax, [r14]",
             "--sample", sample, "--precise", "--unroll", "1", "--reps", "1", "--warmup", "0")
    assert r.rc == 0, (model, r)
    return [e for e in r.records("msr_trace") if not e["generated_code"] and "msr" in e]


def test_pebs_msrs_are_programmed_and_restored_exactly():
    cases = (
        ("icelake", "D0.81:1", {0x3F1: 0x1, 0x3F2: 0x1}),
        ("icelake", "CD.01.MSR_3F6H=5:1", {0x3F1: 0x1, 0x3F2: 0x1, 0x3F6: 0x5}),
        ("skylake", "CD.01.MSR_3F6H=5:1", {0x3F1: 0x100000001, 0x3F6: 0x5}),  # LL_EN_PMC0 before v5
        ("icelake", "instructions:1", {0x3F1: 0x100000000, 0x3F2: 0x0}),  # fixed counter 0
    )
    for model, sample, programmed in cases:
        t = _trace(model, sample)
        first, writes = {}, {}
        for e in t:
            msr = int(e["msr"], 16)
            if msr not in (0x600, 0x3F1, 0x3F2, 0x3F6) or e["result"] != "ok":
                continue
            if e["op"] == "rdmsr":
                first.setdefault(msr, int(e["value"], 16))
            else:
                writes.setdefault(msr, []).append(int(e["value"], 16))
        for msr, val in programmed.items():
            assert writes[msr][0] == val, (model, sample, hex(msr), writes)
        assert writes[0x600][0] != 0, "IA32_DS_AREA: pmulab's DS area"
        assert set(writes) == set(programmed) | {0x600}, (model, sample, writes)
        for msr, vals in writes.items():
            assert vals[-1] == first[msr], (model, sample, hex(msr), first, vals)
        names = {int(e["msr"], 16): e["register"] for e in t if int(e["msr"], 16) in writes}
        assert names == {k: v for k, v in {0x600: "IA32_DS_AREA", 0x3F1: "IA32_PEBS_ENABLE", 0x3F2: "MSR_PEBS_DATA_CFG",
                                           0x3F6: "MSR_PEBS_LD_LAT_THRESHOLD"}.items() if k in writes}, names
        # PEBS off before the DS area goes back.
        order = [int(e["msr"], 16) for e in t if e["op"] == "wrmsr" and int(e["msr"], 16) in (0x600, 0x3F1)]
        assert order == [0x600, 0x3F1, 0x3F1, 0x600], (model, order)
    # Fixed counter 0 with PEBS counts with its FIXED_CTR_CTRL PMI bit (3) clear, then
    # FIXED_CTR_CTRL goes back to what it was.
    t = _trace("icelake", "instructions:1")
    ctrl = [int(e["value"], 16) for e in t if int(e["msr"], 16) == 0x38D and e["result"] == "ok"]
    assert ctrl == [0x0, 0x3, 0x0], ctrl


def _refused(model, *run_args, rc=3):
    r = _sim("--json", "--model", model, "--cpus", "0", "--", "run", "--asm", "mov rax, [r14]", *run_args)
    assert r.rc == rc, (model, run_args, r)
    (err,) = r.records("error")
    assert r.records("samples") == [] and r.records("result") == [], r
    return err["message"]


def test_bad_input_is_refused_with_the_reason_and_nothing_runs():
    assert _refused("icelake", "--precise", rc=2).startswith("--precise samples the --sample events precisely")
    m = _refused("icelake", "--sample", "C4.00", "--precise")
    assert m.startswith("CPU 0 (06_7EH): PEBS cannot take 'C4.00' (event 0xC4, umask 0x00) on this model; its PEBS "
                        "events: INST_RETIRED.PREC_DIST (fixed counter 0), TOPDOWN.SLOTS (fixed counter 3), "
                        "MEM_TRANS_RETIRED.LOAD_LATENCY, "), m
    assert m.endswith(", MEM_LOAD_MISC_RETIRED.*, MEM_INST_RETIRED.*"), m
    m = _refused("skylake", "--sample", "instructions", "--precise")
    assert m.startswith("CPU 0 (06_5EH): PEBS cannot take 'instructions' (event 0xC0, umask 0x00, a fixed "
                        "counter's) on this model; its PEBS events: INST_RETIRED.PREC_DIST, "), m
    m = _refused("icelake", "--sample", "CD.01", "--precise", rc=2)
    assert m == ("'CD.01' (MEM_TRANS_RETIRED.LOAD_LATENCY) counts the loads slower than MSR_PEBS_LD_LAT_THRESHOLD: "
                 "give the threshold in core cycles with the event, e.g. CD.01.MSR_3F6H=3"), m
    m = _refused("skylake", "--sample", "C0.01.CTR=0", "--precise")
    assert m == "CPU 0 (06_5EH): INST_RETIRED.PREC_DIST takes PEBS only on counters 0x2 (bit i = PMCi)", m
    m = _refused("zen4", "--sample", "ex_ret_instr", "--precise")
    assert m == ("CPU 0: no PEBS: --precise is Intel's PEBS; AMD's precise samples are IBS: use --sample ibs_op "
                 "(or ibs_fetch) where CPUID 8000_0001H:ECX[10] enumerates it"), m
    m = _refused("qemu_tcg_intel", "--sample", "D0.81", "--precise")
    assert m == ("CPU 0: no PEBS: no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor "
                 "without PMU passthrough)"), m
    m = _refused("intel_v3", "--sample", "D0.81", "--precise")
    assert m.startswith("CPU 0 (06_2AH): PEBS record format 0 has no eventing IP"), m
    m = _refused("intel_v4", "--sample", "D0.81", "--precise")
    assert m.startswith("CPU 0 (06_7AH): pmulab has no PEBS event table for this model"), m


def test_ice_lake_fixed_counters_other_than_0_and_3_are_refused():
    # SLOTS (fixed counter 3) takes PEBS (test_pmulab_sim_pebs_fmt5.py); C0.01 with a modifier
    # fixed counter 0 lacks is not moved there (nothing dropped): refused.
    expected = {
        "cycles": "CPU 0 (06_7EH): PEBS takes fixed counters 0 and 3 only (instructions, INST_RETIRED.PREC_DIST; "
                  "slots, TOPDOWN.SLOTS); 'cycles' is fixed counter 1",
        "C0.01.CMSK=2": "CPU 0 (06_7EH): PEBS cannot take 'C0.01.CMSK=2' (event 0xC0, umask 0x01) on this model; "
                        "its PEBS events: INST_RETIRED.PREC_DIST (fixed counter 0), ",
    }
    for sample, want in expected.items():
        m = _refused("icelake", "--sample", sample, "--precise")
        assert m == want or (want.endswith(", ") and m.startswith(want)), (sample, m)
