"""run --sample ibs_op / ibs_op_cycles / ibs_fetch on pmulab-sim (docs/sampling.md
"Precise sampling (IBS)"): the simulated IBS unit (sim/sim_ibs.h) tags every PERIODth op
and hands pmulab its RIP, the data address the executor computed and the cache model's
miss latency. Exact values throughout: the simulator is deterministic."""

from pmulab_test import data_path, run_tool

# mov rax, [r14]; add rbx, 1; clflush [r14+64]; mov rcx, [r14+64]; add rdx, 1: an L1D
# hit, an ALU op, the flush, a load from memory, an ALU op (offsets 0, 3, 7, 12, 16).
MIX = "mov rax, [r14]; add rbx, 1; clflush [r14+64]; mov rcx, [r14+64]; add rdx, 1"
MIX_AT = (0, 3, 7, 12, 16)
# --unroll 16 --reps 2 --warmup 0: 2 runs of 16 copies and 2 of 32, 96 copies in all.
SHAPE = ("--unroll", "16", "--reps", "2", "--warmup", "0")
COPIES = 96
MACHINES = {
    "zen 4": ("--model", "zen4"),
    "granite ridge (zen 5) dump": ("--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")),
}


def _sim(*args, timeout=300):
    return run_tool("pmulab-sim", *args, timeout=timeout)


def _samples(machine, *sample, asm=MIX, extra=()):
    args = []
    for s in sample:
        args += ["--sample", s]
    r = _sim("--json", *MACHINES[machine], "--cpus", "0", "--", "run", "--asm", asm, *args, *SHAPE, *extra)
    assert r.rc == 0, (machine, r)
    return r


def _buckets(rec):
    assert all(b["block"] == "body" for b in rec["buckets"]), rec
    return {b["offset"]: b for b in rec["buckets"]}


def test_ibs_op_samples_every_op_kind_with_exact_data_places_and_latencies():
    for machine in MACHINES:
        (rec,) = _samples(machine, "ibs_op:16").records("samples")
        assert (rec["event"], rec["source"], rec["precise"], rec["period"]) == ("ibs_op", "ibs_op", True, 16), rec
        b = _buckets(rec)
        # 80 ops per 16 copies, one sample per 16: each of the 5 ops once per 16 copies.
        assert {o: x["count"] for o, x in b.items()} == dict.fromkeys(MIX_AT, COPIES // 16), (machine, rec)
        assert b[0]["data"] == [{"reg": "r14", "offset": 0, "count": 6}] and "latency" not in b[0], b[0]
        assert b[12]["data"] == [{"reg": "r14", "offset": 64, "count": 6}], b[12]
        assert b[12]["latency"] == {"n": 6, "min": 200, "median": 200.0, "max": 200}, b[12]
        for alu in (3, 16):
            assert "data" not in b[alu] and "latency" not in b[alu], b[alu]
        assert rec["samples"] == 30 + rec["harness"], rec


def test_ibs_op_cycles_tags_the_long_op_every_time_and_fetch_gives_latencies():
    for machine in MACHINES:
        (rec,) = _samples(machine, "ibs_op_cycles:16").records("samples")
        assert rec["source"] == "ibs_op" and _buckets(rec)[12]["count"] == COPIES, rec
        (rec,) = _samples(machine, "ibs_fetch:16").records("samples")
        assert rec["source"] == "ibs_fetch", rec
        for off, x in _buckets(rec).items():
            assert x["count"] == COPIES // 16 and x["latency"] == {"n": 6, "min": 4, "median": 4.0, "max": 4}, x


def test_default_period_text_table_and_the_trace_shows_ibs_restored():
    r = _sim(*MACHINES["zen 4"], "--cpus", "0", "--", "run", "--asm", MIX, "--sample", "ibs_op:16", *SHAPE)
    assert r.rc == 0, r
    assert ("  block        offset    samples    share\n"
            "  body              0          6   13.04% r14+0 (6)  source L1 6\n"
            "  body              3          6   13.04%\n"
            "  body              7          6   13.04%\n"
            "  body             12          6   13.04% r14+64 (6)  latency 200/200.0/200  source DRAM 6\n"
            "  body             16          6   13.04%\n"
            "  harness           -         16   34.78%\n") in r.out, r.out
    (rec,) = _samples("zen 4", "ibs_op").records("samples")
    assert rec["period"] == 65536, rec
    t = _sim("--json", "--trace-msr", *MACHINES["zen 4"], "--cpus", "0", "--", "run", "--asm", MIX, "--sample",
             "ibs_op:16", *SHAPE)
    assert t.rc == 0, t
    ops = [(e["op"], e["register"], e.get("value")) for e in t.records("msr_trace")
           if e.get("register", "").upper().startswith("IBS")]
    # IBS_CTL names extended LVT entry 1; IbsOpCtl saved (0), armed each run (every 16
    # dispatched ops: MaxCnt 1, En, CntCtl = 0xa0001), drained and re-armed in the NMI,
    # and put back as it was last.
    assert ops[0] == ("rdmsr", "IBS_CTL", "0x101"), ops
    assert ops[1] == ("rdmsr", "IbsOpCtl", "0x0"), ops
    assert ("wrmsr", "IbsOpCtl", "0xa0001") in ops and any(o[:2] == ("rdmsr", "IbsDcLinAd") for o in ops), ops
    assert ops[-1] == ("wrmsr", "IbsOpCtl", "0x0"), ops


def test_bad_input_is_refused_before_anything_runs():
    refused = {
        "skylake ibs_op": (3, "CPU 0: --sample ibs_op: IBS (Instruction-Based Sampling) is AMD's; this CPU is "
                              "GenuineIntel: on Intel, precise samples come from PEBS (--sample EVENT --precise)"),
        "zen3 ibs_op": (3, "CPU 0: --sample ibs_op: this AMD CPU has no usable IBS: CPUID Fn8000_001B_EAX[0] (IBSFFV, "
                           "the feature flags are valid) is 0 (EAX = 0x0)"),
        "qemu_tcg ibs_fetch": (3, "CPU 0: --sample ibs_fetch: this AMD CPU has no IBS: CPUID Fn8000_0001_ECX[10] (IBS) "
                                  "is 0"),
        "zen4 ibs_op:100": (2, "--sample ibs_op:100: IBS periods are multiples of 16 (IbsOpMaxCnt ignores the low 4 "
                               "bits); pmulab does not round: write 96 or 112"),
        "zen4 ibs_fetch:1048576": (2, "CPU 0: --sample ibs_fetch: the period 1048576 exceeds this CPU's IBS maximum "
                                      "1048560"),
    }
    for what, (rc, msg) in refused.items():
        model, spec = what.split()
        r = _sim("--json", "--model", model, "--cpus", "0", "--", "run", "--asm", "nop", "--sample", spec)
        assert (r.rc, [e["message"] for e in r.records("error")]) == (rc, [msg]), (what, r)
        assert not r.records("samples") and not r.records("result"), (what, r)
