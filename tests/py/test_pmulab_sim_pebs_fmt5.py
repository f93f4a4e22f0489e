"""PEBS record format 5 and SLOTS on pmulab-sim (docs/sampling.md "Format 5 and SLOTS"):
the simulated Sapphire Rapids and Alder Lake (P cores Golden Cove, E cores Gracemont) have
format 5, whose DS area keeps the fixed counters' reset values at 140H; each core type
gets its own PEBS event table; SLOTS (fixed counter 3) takes PEBS where the table lists it.
Exact counts per offset, as test_pmulab_sim_pebs.py checks Ice Lake and Skylake."""

from pmulab_test import run_tool
from test_pmulab_sim_pebs import ALU, COPIES, MIXED, RUNS, SHAPE, _buckets

FORMAT5 = (("sapphire_rapids", "0"), ("alder_lake", "0"))  # Golden Cove cores
E_CORE = ("alder_lake", "4")  # Gracemont


def _sim(*args):
    return run_tool("pmulab-sim", *args, timeout=300)


def _samples(model, cpu, asm, sample, *extra):
    r = _sim("--json", "--model", model, "--cpus", cpu, "--", "run", "--asm", asm, "--sample", sample, *SHAPE, *extra)
    assert r.rc == 0, (model, cpu, r)
    (rec,) = r.records("samples")
    return rec


def _counts(rec):
    return {o: x["count"] for o, x in _buckets(rec).items()}


def test_format5_puts_every_sample_on_a_load_with_the_address_it_used():
    for model, cpu in FORMAT5:
        rec = _samples(model, cpu, MIXED, "D0.81:1", "--precise")  # MEM_INST_RETIRED.ALL_LOADS
        assert rec["precise"] is True and rec["event"] == "D0.81", (model, rec)
        b = _buckets(rec)
        assert _counts(rec) == {0: COPIES, 6: COPIES, 14: COPIES}, (model, rec)
        assert b[0]["data"] == [{"reg": "r14", "offset": 0, "count": COPIES}], (model, rec)
        assert b[6]["data"] == [{"reg": "r14", "offset": 64, "count": COPIES}], (model, rec)
        assert b[14]["data"] == [{"reg": "rdi", "offset": -8, "count": COPIES}], (model, rec)
        assert rec["harness"] == 16 and rec["samples"] == 3 * COPIES + 16, (model, rec)
        plain = _samples(model, cpu, MIXED, "D0.81:1")
        assert _counts(plain) == {0: RUNS, 3: COPIES, 10: COPIES, 18: COPIES}, (model, plain)


def test_format5_load_latency_on_pmc1():
    # Golden Cove takes MEM_TRANS_RETIRED.LOAD_LATENCY on PMC1-7 (0xFE), PMC0 being PDist's.
    asm = "mov rax, [r14]; clflush [r14+4096]; mov rcx, [r14+4096]; add rbx, rcx"
    rec = _samples("sapphire_rapids", "0", asm, "CD.01.MSR_3F6H=3:1", "--precise")
    b = _buckets(rec)
    assert b[0]["latency"] == {"n": COPIES, "min": 4, "median": 4.0, "max": 204}, rec
    assert b[11]["latency"] == {"n": COPIES, "min": 204, "median": 204.0, "max": 204}, rec


def test_the_fixed_reset_at_140h_gives_the_period():
    # Period 3, three instructions a copy: one record a copy, on the same instruction, only
    # when fixed counter 0 reloads from 140H (the 80H slot is PMC8's in format 5: 0 there).
    for model, cpu in FORMAT5 + (E_CORE,):
        rec = _samples(model, cpu, ALU, "instructions:3", "--precise")
        assert _counts(rec) == {0: COPIES}, (model, cpu, rec)
        assert rec["harness"] == 28, (model, cpu, rec)
    rec = _samples(*E_CORE, ALU, "C0.00:1", "--precise")  # INST_RETIRED.ANY_P on a GP counter
    assert _counts(rec) == {0: COPIES, 3: COPIES, 7: COPIES}, rec


def test_slots_samples_precisely_on_fixed_counter_3():
    # Four slots a cycle (no CPUID.23H slot count), one cycle an instruction.
    for model in ("icelake", "sapphire_rapids"):
        assert _counts(_samples(model, "0", ALU, "slots:4", "--precise")) == {0: COPIES, 3: COPIES, 7: COPIES}
        # Period 5: the counter overflows at every second instruction (the excess slots of
        # the overflowing instruction are not carried over the reload).
        rec = _samples(model, "0", ALU, "slots:5", "--precise")
        assert _counts(rec) == {0: COPIES // 2, 3: COPIES // 2, 7: COPIES // 2}, (model, rec)
        # Period 12, twelve slots a copy: precise on the instruction that issued the 12th;
        # the counter's own interrupt lands on the next one.
        rec = _samples(model, "0", ALU, "slots:12", "--precise")
        assert rec["precise"] is True and _counts(rec) == {0: COPIES} and rec["harness"] == 28, (model, rec)
        assert _counts(_samples(model, "0", ALU, "slots:12")) == {3: COPIES}, model


def _trace(model, cpu, sample, asm="mov rax, [r14]"):
    r = _sim("--json", "--trace-msr", "--model", model, "--cpus", cpu, "--", "run", "--asm", asm, "--sample", sample,
             "--precise", "--unroll", "1", "--reps", "1", "--warmup", "0")
    assert r.rc == 0, (model, r)
    first, writes = {}, {}
    for e in r.records("msr_trace"):
        if e["generated_code"] or "msr" not in e or e["result"] != "ok":
            continue
        msr = int(e["msr"], 16)
        if msr not in (0x600, 0x3F1, 0x3F2, 0x3F6, 0x38D):
            continue
        if e["op"] == "rdmsr":
            first.setdefault(msr, int(e["value"], 16))
        else:
            writes.setdefault(msr, []).append(int(e["value"], 16))
    return first, writes


def test_format5_msrs_are_programmed_and_restored():
    cases = (
        ("sapphire_rapids", "0", "D0.81:1", {0x3F1: 0x1, 0x3F2: 0x1}),
        ("sapphire_rapids", "0", "CD.01.MSR_3F6H=5:1", {0x3F1: 0x2, 0x3F2: 0x1, 0x3F6: 0x5}),  # PMC1
        ("sapphire_rapids", "0", "slots:4", {0x3F1: 0x800000000, 0x3F2: 0x0}),  # fixed counter 3: bit 35
        ("alder_lake", "0", "instructions:3", {0x3F1: 0x100000000, 0x3F2: 0x0}),
        ("alder_lake", "4", "C0.00:1", {0x3F1: 0x1, 0x3F2: 0x0}),
    )
    for model, cpu, sample, programmed in cases:
        first, writes = _trace(model, cpu, sample)
        for msr, val in programmed.items():
            assert writes[msr][0] == val, (model, sample, hex(msr), writes)
        assert writes[0x600][0] != 0, "IA32_DS_AREA: pmulab's DS area"
        for msr, vals in writes.items():
            assert vals[-1] == first[msr], (model, sample, hex(msr), first, vals)
    # SLOTS counts with FIXED_CTR_CTRL's field 3 at OS|USR and its PMI bit (15) clear.
    _, writes = _trace("sapphire_rapids", "0", "slots:4")
    assert writes[0x38D] == [0x3000, 0x0], writes


def _refused(model, cpu, *run_args, rc=3):
    r = _sim("--json", "--model", model, "--cpus", cpu, "--", "run", "--asm", "mov rax, [r14]", *run_args)
    assert r.rc == rc, (model, run_args, r)
    (err,) = r.records("error")
    assert r.records("samples") == [] and r.records("result") == [], r
    return err["message"]


def test_each_core_type_refuses_what_its_table_lacks():
    m = _refused("sapphire_rapids", "0", "--sample", "C4.00", "--precise")
    assert m == ("CPU 0 (06_8FH): PEBS cannot take 'C4.00' (event 0xC4, umask 0x00) on this model; its PEBS events: "
                 "INST_RETIRED.PREC_DIST (fixed counter 0), TOPDOWN.SLOTS (fixed counter 3), INST_RETIRED.*, "
                 "MEM_TRANS_RETIRED.LOAD_LATENCY, MEM_INST_RETIRED.STLB_MISS_LOADS/STLB_MISS_STORES/LOCK_LOADS/"
                 "SPLIT_LOADS/SPLIT_STORES/ALL_LOADS/ALL_STORES, MEM_LOAD_RETIRED.*, MEM_LOAD_L3_HIT_RETIRED.*, "
                 "MEM_LOAD_L3_MISS_RETIRED.*, MEM_LOAD_MISC_RETIRED.*, MEM_INST_RETIRED.*"), m
    m = _refused("sapphire_rapids", "0", "--sample", "C0.00.CTR=0", "--precise")
    assert m == "CPU 0 (06_8FH): INST_RETIRED.* takes PEBS only on counters 0xfe (bit i = PMCi)", m
    m = _refused("sapphire_rapids", "0", "--sample", "cycles", "--precise")
    assert m == ("CPU 0 (06_8FH): PEBS takes fixed counters 0 and 3 only (instructions, INST_RETIRED.PREC_DIST; "
                 "slots, TOPDOWN.SLOTS); 'cycles' is fixed counter 1"), m
    m = _refused(*E_CORE, "--sample", "slots", "--precise")
    assert m == ("CPU 0 (06_97H E core): PEBS takes fixed counter 0 only (instructions, INST_RETIRED.ANY); 'slots' "
                 "is fixed counter 3"), m
    m = _refused(*E_CORE, "--sample", "CD.01.MSR_3F6H=3", "--precise")
    assert m == ("CPU 0 (06_97H E core): PEBS cannot take 'CD.01.MSR_3F6H=3' (event 0xCD, umask 0x01) on this model; "
                 "its PEBS events: INST_RETIRED.ANY (fixed counter 0), MEM_UOPS_RETIRED.LOAD_LATENCY, "
                 "INST_RETIRED.ANY_P, BR_INST_RETIRED.*, BR_MISP_RETIRED.*, MEM_UOPS_RETIRED.ALL_LOADS/ALL_STORES, "
                 "MEM_LOAD_UOPS_RETIRED.*"), m
    m = _refused(*E_CORE, "--sample", "D0.05", "--precise", rc=2)
    assert m == ("'D0.05' (MEM_UOPS_RETIRED.LOAD_LATENCY) counts the loads slower than MSR_PEBS_LD_LAT_THRESHOLD: "
                 "give the threshold in core cycles with the event, e.g. D0.05.MSR_3F6H=3"), m


def test_the_hybrid_dump_gives_each_core_type_its_table():
    # Arrow Lake-H (CPUID.1AH: CPUs 0-1 P cores, Lion Cove; 2-9 E cores, Skymont) with a
    # format-5 PERF_CAPABILITIES: INST_RETIRED.ANY_P is Gracemont's, not Lion Cove's.
    dump = ("--dump", "tests/data/cpuid/GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt", "--perf-capabilities", "0xF5C5")

    def run(cpu, sample):
        return _sim("--json", *dump, "--", "run", "--cpu", cpu, "--asm", ALU, "--sample", sample, "--precise", *SHAPE)

    r = run("2", "C0.00:1")
    assert r.rc == 0, r
    (rec,) = r.records("samples")
    assert rec["cpu"] == 2 and _counts(rec) == {0: COPIES, 3: COPIES, 7: COPIES}, rec
    r = run("0", "C0.00:1")
    assert r.rc == 3 and r.records("samples") == [], r
    (err,) = r.records("error")
    assert err["message"].startswith("CPU 0 (06_C5H P core): PEBS cannot take 'C0.00' (event 0xC0, umask 0x00) on "
                                     "this model; its PEBS events: INST_RETIRED.PREC_DIST (fixed counter 0), "
                                     "TOPDOWN.SLOTS (fixed counter 3), MEM_INST_RETIRED."), err
    # Every CPU, P and E: fixed counter 0 from each one's 140H slot, one record a copy.
    r = run("all", "instructions:3")
    assert r.rc == 0, r
    recs = r.records("samples")
    assert sorted(x["cpu"] for x in recs) == list(range(16)), recs
    assert all(_counts(x) == {0: COPIES} for x in recs), recs
