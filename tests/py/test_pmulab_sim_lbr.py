"""pmulab-sim: `run --lbr` on the dumps (docs/sampling.md "Last branch records").

A loop and a call/ret in --asm user code: the records' from/to offsets are the code's taken
branches and their cycles the simulator's cost model (one per instruction, the branch's
own included), on the Skylake dump (legacy LBR, format 5 with MSR_LBR_INFO), the Alder
Lake dump (architectural LBR, leaf 1CH) and the Granite Ridge dump (AMD LbrExtV2: no
cycles).
"""

from pmulab_test import data_path, run_tool

ASM = "mov ecx, 3; 1: add rax, rax; dec ecx; jnz 1b; call 2f; jmp 3f; 2: ret; 3:"
# (from, to, cycles) per copy: jnz taken twice, call, ret, jmp to the next copy (offset 0).
COPY = [(0xA, 0x5, 4), (0xA, 0x5, 3), (0xC, 0x13, 4), (0x13, 0x11, 1), (0x11, 0, 1)]


def _lbr(dump, *extra):
    r = run_tool("pmulab-sim", "--dump", data_path("cpuid", dump), "--cpus", "0", *extra, "--json", "--",
                 "run", "--asm", ASM, "--name", "loop_call", "--lbr", "--unroll", "2", "--reps", "2",
                 "--warmup", "1", timeout=120)
    assert r.rc == 0, r
    (rec,) = r.records("lbr")
    return rec


def _expected(copies):
    want = COPY * copies
    want[-1] = (0x11, None, 1)  # the last copy's jmp leaves the body
    return want + [(None, None, None), (None, None, None)]  # the harness's jmp to its tail, its ret


def _check(rec, want, cycles):
    got = [(e["from"], e["to"], e["cycles"]) for e in rec["entries"]]
    assert [g[:2] for g in got] == [w[:2] for w in want], got
    if cycles:  # the first record's cycles reach back into the harness; the harness's own vary
        assert [g[2] for g in got[1:-2]] == [w[2] for w in want[1:-2]], got
    else:
        assert all(g[2] is None for g in got), got
    for e in rec["entries"]:
        assert e["mispredicted"] is False


def test_skylake_dump_legacy_lbr_with_lbr_info():
    rec = _lbr("GenuineIntel00506E3_Skylake_CPUID.txt", "--perf-capabilities", "0x33c5")
    assert (rec["lbr"], rec["depth"], rec["format"]) == ("legacy", 32, 5), rec
    _check(rec, _expected(4), True)


def test_alder_lake_dump_architectural_lbr():
    rec = _lbr("GenuineIntel0090672_AlderLake_02_CPUID.txt")
    assert (rec["lbr"], rec["depth"]) == ("architectural", 32), rec
    _check(rec, _expected(4), True)


def test_granite_ridge_dump_lbr_v2_keeps_the_last_16():
    rec = _lbr("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")
    assert (rec["lbr"], rec["depth"]) == ("amd_lbr_v2", 16), rec
    _check(rec, _expected(4)[-16:], False)


def test_skylake_dump_without_perf_capabilities_is_refused():
    r = run_tool("pmulab-sim", "--dump", data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt"), "--cpus", "0",
                 "--", "run", "--asm", "jmp 1f; nop; 1:", "--lbr", timeout=60)
    assert r.rc == 3, r
    assert ("run --lbr: CPU 0 has no LBR: Skylake reports LBR format 0 (IA32_PERF_CAPABILITIES[5:0]): 32-bit "
            "records, no 64-bit addresses") in r.err, r
    assert "TSC ticks" not in r.out, r
