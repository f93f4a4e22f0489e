"""The data source per bucket and the IBS controls on pmulab-sim (docs/sampling.md "Data
source per bucket", "IBS controls"): the simulated PEBS assist (Ice Lake format 4, Skylake
format 3) and IBS unit (Zen 4) report where each sampled load was served from, from the
cache model (sim/sim_memsrc.h); pmulab decodes it (pmu/mem_source.h) and counts it per
bucket. --ibs-l3-miss-only keeps only the ops whose load missed L3; --ibs-rand moves the
samples with the seed (pmulab-sim --seed) and keeps their number. Exact values: the
simulator is deterministic."""

from pmulab_test import data_path, run_tool

# An L1D hit ([r14] stays in L1D after its first access), a flush, a load from memory.
PEBS_ASM = "mov rax, [r14]; clflush [r14+4096]; mov rcx, [r14+4096]; add rbx, rcx"
PEBS_SHAPE = ("--unroll", "10", "--reps", "2", "--warmup", "0")  # 60 copies in all
# The same for IBS, with two ALU ops (offsets 0, 3, 7, 12, 16).
IBS_ASM = "mov rax, [r14]; add rbx, 1; clflush [r14+64]; mov rcx, [r14+64]; add rdx, 1"
IBS_SHAPE = ("--unroll", "16", "--reps", "2", "--warmup", "0")  # 96 copies in all


def _sim(*args):
    return run_tool("pmulab-sim", *args, timeout=300)


def _record(*args):
    r = _sim("--json", *args)
    assert r.rc == 0, r
    (rec,) = r.records("samples")
    return rec


def _buckets(rec):
    assert all(b["block"] == "body" for b in rec["buckets"]), rec
    return {b["offset"]: b for b in rec["buckets"]}


def test_pebs_load_latency_says_l1_for_the_hit_and_dram_for_the_flushed_line():
    for model in ("icelake", "skylake"):
        rec = _record("--model", model, "--cpus", "0", "--", "run", "--asm", PEBS_ASM, "--sample",
                      "CD.01.MSR_3F6H=3:1", "--precise", *PEBS_SHAPE)  # MEM_TRANS_RETIRED.LOAD_LATENCY
        b = _buckets(rec)
        assert sorted(b) == [0, 11], (model, rec)
        # The cache model: [r14] comes from memory once (its first access of all), then from
        # L1D; [r14+4096] is flushed before each of its 60 loads. The latencies agree.
        assert b[0]["data_source"] == {"L1": 59, "DRAM": 1}, (model, b[0])
        assert b[0]["latency"] == {"n": 60, "min": 4, "median": 4.0, "max": 204}, (model, b[0])
        assert b[11]["data_source"] == {"DRAM": 60}, (model, b[11])
        assert "stlb_miss" not in b[11] and "locked" not in b[11], b[11]
        # Events that are not load latency carry no data source.
        rec = _record("--model", model, "--cpus", "0", "--", "run", "--asm", PEBS_ASM, "--sample", "D0.81:1",
                      "--precise", *PEBS_SHAPE)
        assert all("data_source" not in x for x in rec["buckets"]), rec


def test_pebs_text_table_has_one_line_per_bucket_with_its_sources():
    r = _sim("--model", "icelake", "--cpus", "0", "--", "run", "--asm", PEBS_ASM, "--sample", "CD.01.MSR_3F6H=3:1",
             "--precise", *PEBS_SHAPE)
    assert r.rc == 0, r
    assert ("  body              0         60   44.12% r14+0 (60)  latency 4/4.0/204  source L1 59, DRAM 1\n"
            "  body             11         60   44.12% r14+4096 (60)  latency 204/204.0/204  source DRAM 60\n") in r.out, r.out


def test_ibs_op_says_l1_for_the_hit_and_dram_for_the_flushed_line():
    for machine in (("--model", "zen4"),
                    ("--dump", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"))):
        b = _buckets(_record(*machine, "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample", "ibs_op:16",
                             *IBS_SHAPE))
        assert {o: x["count"] for o, x in b.items()} == {0: 6, 3: 6, 7: 6, 12: 6, 16: 6}, b
        assert b[0]["data_source"] == {"L1": 6} and "latency" not in b[0], b[0]
        assert b[12]["data_source"] == {"DRAM": 6}, b[12]
        assert b[12]["latency"] == {"n": 6, "min": 200, "median": 200.0, "max": 200}, b[12]
        for other in (3, 7, 16):  # ALU ops and CLFLUSH: no load or store, no source
            assert "data_source" not in b[other], b[other]
    # Text: the sources at the end of each bucket's line.
    r = _sim("--model", "zen4", "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample", "ibs_op:16", *IBS_SHAPE)
    assert r.rc == 0, r
    assert "  body              0          6   13.04% r14+0 (6)  source L1 6\n" in r.out, r.out
    assert "  body             12          6   13.04% r14+64 (6)  latency 200/200.0/200  source DRAM 6\n" in r.out


def test_l2_and_l3_sources_follow_the_cache_models_conflicts():
    # A direct-mapped 4 KiB L1D: [r14] and [r14+4096] evict each other there and are both
    # served by L2 (4 + 12 cycles), after their first, cold accesses from memory.
    rec = _record("--model", "icelake", "--cpus", "0", "--cache", "L1D:4K:1:LRU", "--", "run", "--asm",
                  "mov rax, [r14]; mov rcx, [r14+4096]", "--sample", "CD.01.MSR_3F6H=3:1", "--precise", *PEBS_SHAPE)
    for b in _buckets(rec).values():
        assert b["data_source"] == {"L2": 59, "DRAM": 1}, b
        assert b["latency"] == {"n": 60, "min": 16, "median": 16.0, "max": 204}, b
    # Zen 4 with a direct-mapped L2 of 8 KiB as well: [r14] and [r14+8192] also evict each
    # other from L2 and meet in L3; [r14+4096] has an L2 set to itself.
    b = _buckets(_record("--model", "zen4", "--cpus", "0", "--cache", "L1D:4K:1:LRU,L2:8K:1:LRU", "--", "run",
                         "--asm", "mov rax, [r14]; mov rcx, [r14+4096]; mov rdx, [r14+8192]", "--sample", "ibs_op:16",
                         *IBS_SHAPE))
    assert {o: x["data_source"] for o, x in b.items()} == {0: {"L3": 6}, 3: {"L2": 6}, 10: {"L3": 6}}, b


def test_ibs_l3_miss_only_keeps_only_the_missing_loads_samples():
    full = _buckets(_record("--model", "zen4", "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample", "ibs_op:16",
                            *IBS_SHAPE))
    rec = _record("--model", "zen4", "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample", "ibs_op:16",
                  "--ibs-l3-miss-only", *IBS_SHAPE)
    # A tagged op that did not miss L3 is discarded and the count restarts: the periods
    # stay where they were, so exactly the unfiltered run's DRAM-load samples remain.
    assert rec["samples"] == 6 and rec["harness"] == 0, rec
    assert rec["buckets"] == [dict(full[12], offset=12)], rec
    # Fetches never miss L3 in the model (an instruction-cache miss is served by L2).
    rec = _record("--model", "zen4", "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample", "ibs_fetch:16",
                  "--ibs-l3-miss-only", *IBS_SHAPE)
    assert (rec["samples"], rec["buckets"], rec["harness"]) == (0, [], 0), rec
    # The bits on the wire: IbsOpCtl with L3MissOnly (bit 16), IbsFetchCtl with bit 59.
    t = _sim("--json", "--trace-msr", "--model", "zen4", "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample",
             "ibs_op:16", "--sample", "ibs_fetch:16", "--ibs-l3-miss-only", *IBS_SHAPE)
    assert t.rc == 0, t
    writes = {(e["register"], e["value"]) for e in t.records("msr_trace") if e["op"] == "wrmsr"}
    assert ("IbsOpCtl", "0xb0001") in writes and ("IbsFetchCtl", "0x800000000000001") in writes, writes


def _positions(*args):
    rec = _record(*args)
    return rec["samples"], {b["offset"]: b["count"] for b in rec["buckets"]}


def test_ibs_rand_moves_the_samples_with_the_seed_and_keeps_their_number():
    # --basic: runs of 0 and U copies. Fetch, period 256: a U-copy run is 600 body fetches
    # plus the harness's, so 2 periods fit in it and 3 do not whether or not IbsRandEn
    # shortens each by up to 15 (3 x 241 > the run): 2 samples per run, 4 in all.
    fetch = ("--model", "zen4", "--cpus", "0")
    run = ("--", "run", "--asm", IBS_ASM, "--unroll", "120", "--basic", "--reps", "2", "--warmup", "0")
    plain = _positions(*fetch, *run, "--sample", "ibs_fetch:256")
    s1 = _positions(*fetch, "--seed", "1", *run, "--sample", "ibs_fetch:256", "--ibs-rand")
    s2 = _positions(*fetch, "--seed", "2", *run, "--sample", "ibs_fetch:256", "--ibs-rand")
    assert plain == (4, {3: 2, 7: 2}), plain
    assert s1 == (4, {3: 1, 7: 3}) and s2 == (4, {3: 1, 12: 3}), (s1, s2)
    assert _positions(*fetch, "--seed", "1", *run, "--sample", "ibs_fetch:256", "--ibs-rand") == s1
    # Ops, period 1024: a run of 450 copies is 2250 body ops; each run's first period is
    # whole (the unit is started with IbsOpCurCnt 0), the second starts at the random
    # IbsOpCurCnt[6:0] of the first rollover: 2 samples per run either way.
    run = ("--", "run", "--asm", IBS_ASM, "--unroll", "450", "--basic", "--reps", "2", "--warmup", "0")
    plain = _positions(*fetch, *run, "--sample", "ibs_op:1024")
    s1 = _positions(*fetch, "--seed", "1", *run, "--sample", "ibs_op:1024", "--ibs-rand")
    s2 = _positions(*fetch, "--seed", "2", *run, "--sample", "ibs_op:1024", "--ibs-rand")
    assert plain == (4, {12: 2, 16: 2}), plain
    assert s1 == (4, {12: 1, 16: 3}) and s2 == (4, {0: 1, 3: 1, 16: 2}), (s1, s2)
    assert _positions(*fetch, "--seed", "1", *run, "--sample", "ibs_op:1024", "--ibs-rand") == s1


def _refused(machine, *run_args):
    r = _sim("--json", *machine, "--cpus", "0", "--", "run", "--asm", IBS_ASM, *run_args)
    assert not r.records("samples") and not r.records("result"), r
    return r.rc, [e["message"] for e in r.records("error")]


def test_refusals_say_why_and_run_nothing(tmp_path):
    # A Zen 3-like IBS: Fn8000_001B_EAX = 0x3F7 (no RdWrOpCnt, no Zen 4 extensions).
    with open(data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"), encoding="utf-8") as f:
        dump = f.read().replace("CPUID 8000001B: 00081BFF-", "CPUID 8000001B: 000003F7-")
    zen3 = tmp_path / "zen3_ibs.txt"
    zen3.write_text(dump, encoding="utf-8")
    old = ("--dump", str(zen3))
    assert _refused(old, "--sample", "ibs_op:16", "--ibs-l3-miss-only") == (3, [
        "CPU 0: --ibs-l3-miss-only (--sample ibs_op): this CPU's IBS has no L3 miss filtering: CPUID "
        "Fn8000_001B_EAX[11] (the Zen 4 IBS extensions: L3MissOnly in IbsOpCtl[16] and IbsFetchCtl[59]) is 0 "
        "(EAX = 0x3f7)"])
    assert _refused(old, "--sample", "ibs_op:16", "--ibs-rand") == (3, [
        "CPU 0: --ibs-rand (--sample ibs_op): this CPU's IbsOpCurCnt is not writable (CPUID Fn8000_001B_EAX[3] "
        "RdWrOpCnt = 0), so the random start cannot be kept"])
    r = _sim("--json", *old, "--cpus", "0", "--", "run", "--asm", IBS_ASM, "--sample", "ibs_fetch:16", "--ibs-rand",
             *IBS_SHAPE)
    assert r.rc == 0 and len(r.records("samples")) == 1, r  # IbsRandEn needs nothing more
    zen4 = ("--model", "zen4")
    assert _refused(zen4, "--sample", "ibs_op_cycles:1024", "--ibs-rand") == (2, [
        "CPU 0: --ibs-rand (--sample ibs_op_cycles): op randomisation keeps the hardware's random IbsOpCurCnt[6:0] "
        "as the next period's start, which Linux does only when counting ops: use ibs_op, or ibs_fetch (IbsRandEn)"])
    for opt in ("--ibs-rand", "--ibs-l3-miss-only"):
        assert _refused(zen4, opt) == (2, [f"{opt} is an IBS control: it needs --sample ibs_op, ibs_op_cycles or "
                                           "ibs_fetch (AMD)"])
    assert _refused(("--model", "skylake"), "--sample", "D0.81", "--precise", "--ibs-rand") == (2, [
        "--ibs-rand is an IBS control: it needs --sample ibs_op, ibs_op_cycles or ibs_fetch (AMD)"])
    assert _refused(("--model", "skylake"), "--sample", "ibs_op", "--ibs-l3-miss-only")[0] == 3


def test_help_run_lists_the_ibs_options():
    r = _sim("--model", "zen4", "--", "help", "run")
    assert r.rc == 0, r
    assert "[--precise] [--ibs-rand] [--ibs-l3-miss-only]\n" in r.out, r.out
    assert "  --ibs-rand        with --sample ibs_fetch: IbsRandEn (random low 4 bits of each fetch\n" in r.out
    assert "  --ibs-l3-miss-only  with --sample ibs_op/ibs_fetch: only ops (fetches) that missed L3\n" in r.out
