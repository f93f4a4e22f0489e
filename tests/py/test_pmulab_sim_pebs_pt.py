"""run --sample EVENT --precise --pebs-output pt on pmulab-sim (docs/sampling.md "PEBS output to
Intel PT"): the simulated icelake_pt writes each PEBS record into the Intel PT trace pmulab
programs, as Block packets; pmulab decodes them back into the records the DS area would have
held. The same code and event sampled both ways give the same samples record, but for
"pebs_output": "pt"; every MSR goes back to what it was; CPUs without it are refused."""

from pmulab_test import run_tool

MIXED = "mov rax, [r14]; add rbx, rcx; mov rdx, [r14+64]; imul rsi, rdi; mov r8, [rdi-8]; nop"
LATENCY = "mov rax, [r14]; clflush [r14+4096]; mov rcx, [r14+4096]; add rbx, rcx"
SHAPE = ("--unroll", "10", "--reps", "2", "--warmup", "0")
COPIES = 60


def _sim(*args):
    return run_tool("pmulab-sim", *args, timeout=300)


def _samples(asm, sample, output, model="icelake_pt"):
    r = _sim("--json", "--model", model, "--cpus", "0", "--", "run", "--asm", asm, "--sample", sample, *SHAPE,
             "--precise", "--pebs-output", output)
    assert r.rc == 0, (sample, output, r)
    (rec,) = r.records("samples")
    return rec


def test_ds_and_pt_output_give_the_same_samples():
    cases = (
        (MIXED, "D0.81:1"),                # MEM_INST_RETIRED.ALL_LOADS: every load, its data place
        (MIXED, "D0.81:7"),                # a period: the counter reloads from MSR_RELOAD_PMC0
        (LATENCY, "CD.01.MSR_3F6H=3:1"),   # load latency: L1 hits and misses
        ("add rax, rbx; mov rcx, [r14]; nop", "instructions:3"),  # fixed counter 0 (RELOAD_FIXED_CTR0)
    )
    for asm, sample in cases:
        ds, pt = _samples(asm, sample, "ds"), _samples(asm, sample, "pt")
        assert "pebs_output" not in ds, ds
        assert pt.pop("pebs_output") == "pt", pt
        assert pt == ds, (sample, ds, pt)
    # The exact content, as the DS path's tests pin it (test_pmulab_sim_pebs.py).
    b = {x["offset"]: x for x in _samples(MIXED, "D0.81:1", "pt")["buckets"]}
    assert sorted(b) == [0, 6, 14] and all(x["count"] == COPIES for x in b.values()), b
    assert b[6]["data"] == [{"reg": "r14", "offset": 64, "count": COPIES}], b
    b = {x["offset"]: x for x in _samples(LATENCY, "CD.01.MSR_3F6H=3:1", "pt")["buckets"]}
    assert b[11]["latency"] == {"n": COPIES, "min": 204, "median": 204.0, "max": 204}, b


def _trace(sample):
    r = _sim("--json", "--trace-msr", "--model", "icelake_pt", "--cpus", "0", "--", "run", "--asm", "mov rax, [r14]",
             "--sample", sample, "--precise", "--pebs-output", "pt", "--unroll", "2", "--reps", "1", "--warmup", "0")
    assert r.rc == 0, r
    (rec,) = r.records("samples")
    return rec, [e for e in r.records("msr_trace") if not e["generated_code"] and "msr" in e and e["result"] == "ok"]


def test_the_trace_is_programmed_per_record_and_restored_exactly():
    rec, t = _trace("D0.81:1")
    first, writes, names = {}, {}, {}
    for e in t:
        msr = int(e["msr"], 16)
        names[msr] = e["register"]
        if e["op"] == "rdmsr":
            first.setdefault(msr, int(e["value"], 16))
        else:
            writes.setdefault(msr, []).append(int(e["value"], 16))
    assert writes[0x3F1][0] == 0x3000000000000001, "PMC0, output = Intel PT, a PMI after each record"
    assert writes[0x14C1][0] == (1 << 48) - 1, "MSR_RELOAD_PMC0: the reload of period 1"
    assert writes[0x570][0] == 0xD, "TraceEn, OS, User: single-range output, no branch packets"
    assert writes[0x561][0] == 0xFFF, "a 4 KiB range, offset 0"
    # Per PMI (one per record): TraceEn off, the offset read, rewound, TraceEn on.
    reads = [int(e["value"], 16) for e in t if e["op"] == "rdmsr" and int(e["msr"], 16) == 0x561][1:]
    # The 2 + 4 copies of the load and the harness's 4 loads in each of the 2 runs.
    assert len(reads) == rec["samples"] == 6 + 2 * 4, (reads, rec)
    assert set(r >> 32 for r in reads) == {24 + 71}, "PSB+ (24 bytes) and one record (71 bytes) per PMI"
    for msr in (0x570, 0x571, 0x560, 0x561, 0x14C1, 0x3F1, 0x3F2, 0x600):
        assert writes[msr][-1] == first[msr], (hex(msr), first, writes[msr])
    assert {k: names[k] for k in (0x570, 0x571, 0x560, 0x561, 0x14C1)} == {
        0x570: "IA32_RTIT_CTL", 0x571: "IA32_RTIT_STATUS", 0x560: "IA32_RTIT_OUTPUT_BASE",
        0x561: "IA32_RTIT_OUTPUT_MASK_PTRS", 0x14C1: "MSR_RELOAD_PMC0"}, names
    # PEBS off before the trace stops; RTIT_CTL (TraceEn clear) before the MSRs it guards.
    order = [int(e["msr"], 16) for e in t if e["op"] == "wrmsr" and int(e["msr"], 16) in (0x3F1, 0x570, 0x560)]
    assert order[-4:] == [0x3F1, 0x570, 0x560, 0x570], order


def _refused(model, *run_args, rc=3, sim_args=()):
    r = _sim("--json", *sim_args, "--model", model, "--cpus", "0", "--", "run", "--asm", "mov rax, [r14]",
             *run_args)
    assert r.rc == rc, (model, run_args, r)
    (err,) = r.records("error")
    assert r.records("samples") == [] and r.records("result") == [], r
    return err["message"]


def test_cpus_without_pebs_output_to_pt_are_refused_with_the_reason():
    pt = ("--sample", "D0.81:1", "--precise", "--pebs-output", "pt")
    assert _refused("icelake", *pt) == ("CPU 0 (06_7EH): --pebs-output pt: no Intel PT (CPUID.(07H,0):EBX[25] is "
                                        "0); use --pebs-output ds (the default)")
    assert _refused("skylake", *pt).startswith("CPU 0 (06_5EH): --pebs-output pt: no Intel PT")
    assert _refused("icelake_pt", *pt, sim_args=("--perf-capabilities", "0xF4C5")) == (
        "CPU 0 (06_7EH): --pebs-output pt: PEBS cannot write to Intel PT here (IA32_PERF_CAPABILITIES[16] "
        "PEBS_OUTPUT_PT_AVAIL is 0); use --pebs-output ds")
    assert _refused("qemu_tcg_intel", *pt) == ("CPU 0: no PEBS: no architectural performance monitoring: "
                                               "CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)")
    assert _refused("icelake_pt", "--sample", "D0.81:1", "--pebs-output", "pt", rc=2) == (
        "--pebs-output pt says where --precise's PEBS records go: give --precise with it")
    assert _refused("icelake_pt", "--sample", "D0.81:1", "--precise", "--pebs-output", "dram", rc=2) == (
        "--pebs-output: 'dram' is not 'ds' or 'pt'")
