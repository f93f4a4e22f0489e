"""tools/pmulab-cache on pmulab-sim (docs/cache.md): every `seq` result equals an
independent reference (cacheSim.py's getHits, written here over tests/py/cache_ref.py's
policy sets), `policy` names the configured policy on L1 and L2, `ways` finds CPUID's
associativity, and bad input is exit 2 with nothing measured."""

import json
import os
import random
import subprocess
import sys
import time
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

import cache_ref
from pmulab_test import ROOT, data_path

TOOL = os.path.join(ROOT, "tools", "pmulab-cache")
SKYLAKE = data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt")
ZEN4 = data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")
FAST = ["--reps", "1", "--warmup", "0"]  # the simulator repeats itself exactly


def cache(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, TOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------ the reference
Elem = Tuple[str, Optional[int], str]


def elements(seq: str) -> List[Elem]:
    out: List[Elem] = []
    for w in seq.split():
        if w == "<wbinvd>":
            out.append(("", None, "wbinvd"))
            continue
        kind = "measure" if w.endswith("?") else "flush" if w.endswith("!") else "access"
        name = w.rstrip("?!")
        base, _, s = name.partition("_")
        out.append((base, int(s) if s else None, kind))
    return out


def reference_hits(seq: str, policy: str, ways: int, sets: Sequence[int]) -> Tuple[int, int]:
    """cacheSim.getHits: one policy set per cache set, the measured accesses' (hits, misses)."""
    elems = elements(seq)
    used = sorted(set(sets) | {s for _, s, _ in elems if s is not None})

    def fresh() -> Dict[int, cache_ref.SetSim]:
        return {s: cache_ref.make_set(policy, ways) for s in used}

    sims = fresh()
    ids: Dict[str, int] = {}
    hits = misses = 0
    for name, override, kind in elems:
        if kind == "wbinvd":
            sims = fresh()
            continue
        block = ids.setdefault(name, len(ids))
        for s in ([override] if override is not None else sets):
            if kind == "flush":
                sims[s].flush(block)
                continue
            hit = sims[s].access(block)
            if kind == "measure":
                hits += hit
                misses += not hit
    return hits, misses


def random_sequence(rng: random.Random, n: int, blocks: int, overrides: Sequence[int] = ()) -> str:
    words = []
    for _ in range(n):
        x = rng.random()
        if x < 0.03:
            words.append("<wbinvd>")
            continue
        name = f"B{rng.randrange(blocks)}"
        if overrides and rng.random() < 0.15:
            name += f"_{rng.choice(overrides)}"
        words.append(name + ("!" if x < 0.1 else "?" if x < 0.55 else ""))
    return " ".join(words)


# (dump, --sim-cache, level, policy of that level, ways, sets, set overrides): L1 under
# several policies and geometries; L2 and L3 under an LRU L1 (and L2), so that clearing the
# levels above always takes the block out of them and the level sees every access.
CONFIGS = [
    (SKYLAKE, "L1D:32K:8:LRU", 1, "LRU", 8, None, ()),
    (SKYLAKE, "L1D:32K:8:PLRU", 1, "PLRU", 8, "4,5", (20,)),
    (SKYLAKE, "L1D:16K:4:SRRIP", 1, "SRRIP", 4, "12-13", ()),
    (SKYLAKE, "L1D:24K:6:QLRU_H11_M1_R0_U0", 1, "QLRU_H11_M1_R0_U0", 6, "33", ()),
    (ZEN4, "L1D:48K:12:MRU_N", 1, "MRU_N", 12, None, ()),
    (SKYLAKE, "L1D:32K:8:LRU,L2:256K:4:QLRU_H00_M1_R2_U1", 2, "QLRU_H00_M1_R2_U1", 4, "100", (140,)),
    (ZEN4, "L1D:48K:12:LRU,L2:1M:16:NRU", 2, "NRU", 16, None, ()),
    (SKYLAKE, "L1D:32K:8:LRU,L2:256K:4:LRU,L3:2M:8:FIFO:1", 3, "FIFO", 8, "1030", ()),  # one slice
    (ZEN4, "L1D:48K:12:LRU,L2:1M:16:LRU,L3:8M:16:QLRU_H11_M1_R1_U2", 3, "QLRU_H11_M1_R1_U2", 16, None, ()),
]


@pytest.mark.parametrize("dump,spec,level,policy,ways,sets,overrides", CONFIGS)
def test_every_seq_result_equals_the_reference(dump: str, spec: str, level: int, policy: str, ways: int,
                                               sets: Optional[str], overrides: Tuple[int, ...]) -> None:
    rng = random.Random(zlib.crc32(f"{spec} {level}".encode()))  # fixed: str hash() varies per process
    seqs = [random_sequence(rng, rng.randrange(5, 40), ways + 3, overrides) for _ in range(24)]
    seqs = [s if "?" in s else s + " B0?" for s in seqs]
    seqs += [" ".join(f"B{i}" for i in range(ways)) + " B0?",             # K = ways blocks: B0 stays
             " ".join(f"B{i}" for i in range(ways + 1)) + " B0? B1? B0!"]  # one more
    r = cache("seq", "--sim", dump, "--sim-cache", spec, "--level", str(level), *(["--sets", sets] if sets else []),
              *FAST, "--json", *seqs)
    assert r.returncode == 0 and r.stderr == "", r
    got = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(got) == len(seqs)
    set_list = [4]  # the default: the first set the harness's data page leaves alone
    if sets:
        lo, _, hi = sets.partition("-")
        set_list = list(range(int(lo), int(hi) + 1)) if hi else [int(x) for x in sets.split(",")]
    for seq, rec in zip(seqs, got):
        hits, misses = reference_hits(seq, policy, ways, set_list)
        assert rec == {"seq": seq, "level": level, "hits": hits, "misses": misses}, (spec, seq)
    assert any(g["hits"] for g in got) and any(g["misses"] for g in got)


def test_seq_prints_nanobenchs_form() -> None:
    r = cache("seq", "--sim", SKYLAKE, "--sim-cache", "L1D:32K:8:LRU", "A B C D A? B! B? C?")
    assert r.returncode == 0, r
    assert r.stdout == "L1_HIT: 2.00\nL1_MISS: 1.00\n"
    r = cache("seq", "--sim", SKYLAKE, "--sim-cache", "L1D:32K:8:LRU", "--seq-init", "A B", "A? C? B?", "A?")
    assert r.returncode == 0, r
    assert r.stdout == ("seq: A? C? B?\nL1_HIT: 2.00\nL1_MISS: 1.00\n"
                        "seq: A?\nL1_HIT: 1.00\nL1_MISS: 0.00\n")


# (dump, --sim-cache, level, policy, --sequences, --length, the policies it prints)
POLICIES = [
    (SKYLAKE, "L1D:32K:8:PLRU", 1, "PLRU", 40, 40, ["PLRU"]),
    (SKYLAKE, "L1D:32K:8:QLRU_H11_M1_R0_U0", 1, "QLRU_H11_M1_R0_U0", 40, 40, ["QLRU_H11_M1_R0_U0"]),
    (SKYLAKE, "L1D:32K:8:FIFO", 1, "FIFO", 40, 40, ["FIFO"]),
    (SKYLAKE, "L1D:32K:8:LRU,L2:256K:4:QLRU_H00_M1_R2_U1", 2, "QLRU_H00_M1_R2_U1", 30, 40, ["QLRU_H00_M1_R2_U1"]),
    # 16 ways: 30 sequences of 40 rarely fill the set before a measured access, where MRU_N
    # (no update while the set is not full) would differ.
    (ZEN4, "L1D:48K:12:LRU,L2:1M:16:MRU", 2, "MRU", 30, 40, ["MRU", "MRU_N"]),
    (SKYLAKE, "L1D:32K:8:LRU,L2:256K:4:SRRIP", 2, "SRRIP", 30, 40, ["SRRIP"]),
]


@pytest.mark.parametrize("dump,spec,level,policy,n,length,want", POLICIES)
def test_policy_names_the_configured_policy(dump: str, spec: str, level: int, policy: str, n: int, length: int,
                                            want: List[str]) -> None:
    r = cache("policy", "--sim", dump, "--sim-cache", spec, "--level", str(level), "--sequences", str(n),
              "--length", str(length), *FAST, "--json")
    assert r.returncode == 0 and r.stderr == "", r
    assert json.loads(r.stdout) == {"level": level, "policies": want, "sequences": n}
    assert policy in want


def test_policy_with_nanobenchs_defaults_on_l1_in_under_a_minute() -> None:
    start = time.monotonic()
    r = cache("policy", "--sim", SKYLAKE, "--sim-cache", "L1D:32K:8:LRU")
    took = time.monotonic() - start
    assert r.returncode == 0 and r.stderr == "", r
    assert r.stdout == ("L1: 8 ways, 100 random sequences of length 50 in set(s) 4, 14 candidate policies\n"
                        "Possible policies: LRU\n")
    assert took < 60, took


def test_ways_agrees_with_cpuid() -> None:
    r = cache("ways", "--sim", SKYLAKE, "--sim-cache", "L1D:24K:6:LRU", *FAST, "--json")
    assert r.returncode == 0, r
    rec = json.loads(r.stdout)
    assert (rec["level"], rec["ways"], rec["cpuid_ways"]) == (1, 6, 6)
    assert rec["hits"] == [[k, float(k if k <= 6 else 0)] for k in range(1, 15)]
    r = cache("ways", "--sim", ZEN4, "--level", "2", *FAST)
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[-1] == ("L2: 16 ways measured (the most blocks of one set that all hit again); "
                                         "CPUID says 16: the measurement agrees with CPUID")


def test_graph_ages_equal_the_reference(tmp_path) -> None:
    r = cache("graph", "--sim", SKYLAKE, "--sim-cache", "L1D:16K:4:SRRIP", "A B C A? B?", *FAST, "--json")
    assert r.returncode == 0, r
    rec = json.loads(r.stdout)
    assert list(rec["ages"]) == ["A", "B", "C"]
    for block, hits in rec["ages"].items():
        want = []
        for n in range(9):
            seq = "A B C A B " + " ".join(f"N{i}" for i in range(n)) + f" {block}?"
            want.append(float(reference_hits(seq, "SRRIP", 4, [4])[0]))
        assert hits == want, block
    assert rec["ages"]["A"] != rec["ages"]["C"]  # SRRIP: a hit protects A


@pytest.mark.parametrize("args,msg", [
    (["seq", "A B# C?"], "unknown block syntax 'B#'"),
    (["seq", "A ?B"], "unknown block syntax '?B'"),
    (["seq", "--sim-cache", "L3:off", "--level", "3", "A?"], "--level 3: the CPU has no level-3 data cache (it has L1, L2)"),
    (["seq", "--sim-cache", "L3:1G:16:LRU:1", "--level", "3", " ".join(f"B{i}" for i in range(20)) + " B0?"],
     "20 blocks of L3 (way size 67108864 bytes) need 1344 MiB of memory; pmulab's R14 area holds at most 1 GiB"),
    (["seq", "--sets", "8", "A?"], "set 8 of L1 shares L1 set 8 with the harness's data page"),
    (["seq", "--sets", "64", "A?"], "set 64: L1 has sets 0-63"),
    (["seq", "--sets", "x", "A?"], "--sets: 'x' is not a set number or range"),
    (["policy", "--policies", "LRU,NOPE"], "--policies: unknown policy 'NOPE'"),
    (["graph", "A B", "--out", "age.pdf"], "--out age.pdf: use a .png or .svg file name"),
])
def test_bad_input_is_exit_2_and_runs_nothing(args: List[str], msg: str) -> None:
    r = cache(args[0], "--sim", SKYLAKE, "-v", *args[1:])
    assert r.returncode == 2, r
    assert msg in r.stderr, r
    assert "Traceback" not in r.stderr
    assert "pmulab-cache: measuring" not in r.stderr, r  # -v says so before it sends a sequence


def test_a_slice_that_an_unsliced_l3_lacks_is_exit_2_and_runs_nothing() -> None:
    # (tests/py/test_cache_slices.py has --slice on sliced L3s, with and without C-Boxes.)
    r = cache("seq", "--sim", ZEN4, "--sim-cache", "L3:1M:4:LRU", "--level", "3", "--slice", "1", "--lfences", "1",
              *FAST, "-v", "A?")
    assert r.returncode == 2, r
    assert ("--slice 1: the lines of L3 set 4 tried fall into 1 group(s) of lines that evict each other (slices)"
            in r.stderr), r
    assert "pmulab-cache: measuring" not in r.stderr, r  # no sequence ran


def test_a_cpu_without_per_level_load_events_is_exit_3() -> None:
    r = cache("seq", "--sim", data_path("cpuid", "GenuineIntel0000F41_P4_Prescott_CPUID.txt"), "A?")
    assert r.returncode == 3, r
    assert "knows the per-level load events of Intel family 6 and AMD family 17h and later; this CPU is " \
           "GenuineIntel family 0xf" in r.stderr, r


def test_the_listing_assembles_to_the_generated_code() -> None:
    from pmulab import asm, cache_seq
    from pmulab.cache_target import parse_spec
    geo = parse_spec("L1D:32K:8,L2:256K:4")
    seq = cache_seq.parse_seq("A B! <wbinvd> C? A_7? D")
    init = cache_seq.parse_seq("E")
    lay = cache_seq.make_layout(geo, 2, [4], [init, seq])
    code = cache_seq.gen_code(lay, seq, init, cache_seq.area_size(lay), lfences=3)
    assert asm.assemble("; ".join(code.asm)) == code.body
    assert asm.assemble("; ".join(code.init_asm)) == code.init
    assert code.pairs == 3  # A B! <wbinvd> | C? A_7? | D


def test_dry_run_prints_the_pmulab_command_line() -> None:
    r = cache("seq", "--dry-run", "--geometry", "L1D:4K:2", "--lfences", "1", "A B?")
    assert r.returncode == 0, r
    # init: lea r13, [r14 - 0x7f801]; mov rax, r13; xor edx, edx; mov rcx, 0x800; div rcx;
    # sub r13, rdx; wbinvd. Body: pause; lfence; A (set 4: 0x100); resume; lfence; B (0x900).
    assert r.stdout == ("run --code 043f81c2b113b5f00faee8498b8d00010000043f81c2b113b5e00faee8498b8d00090000 "
                        "--init 4d8daeff07f8ff4c89e831d248c7c10008000048f7f14929d50f09 --name cacheseq "
                        "--events \"D1.01 L1_HIT,D1.08 L1_MISS\" --basic --unroll 1 --loop 1 --reps 10 "
                        "--warmup 1 --agg median --r14-size 1048576\n")


def test_qemu_sequence_code_counts_exactly_under_icount() -> None:
    # QEMU has no PMU and no cache model: the TSC under -icount 7 counts 128 per instruction,
    # so only the two counted accesses (25 LFENCEs and a load each) remain, whatever the
    # flushes and WBINVDs around them. The tool's own boot and stop, as docs/cache.md shows
    # it; every level, the clearing, the bytes decoded and the exit 3 without --events:
    # test_qemu_cache_seq.py (one boot for all).
    geo = ["--geometry", "L1D:32K:8,L2:256K:4"]
    r = cache("seq", "--icount", "7", "--no-build", "--events", "tsc", *geo, "--json", "A B? C?",
              "A! B C? <wbinvd> A?")
    assert r.returncode == 0, r
    assert [json.loads(x)["events"] for x in r.stdout.splitlines()] == [{"tsc": 52 * 128}] * 2


def test_geometry_from_info_records_and_from_geometry() -> None:
    from pmulab.cache_target import parse_spec, record_geometry
    cpu = {"caches": {"L1d": {"level": 1, "type": "data", "sets": 64, "ways": 12, "line_size": 64},
                      "L1i": {"level": 1, "type": "instruction", "sets": 64, "ways": 8, "line_size": 64},
                      "L2": {"level": 2, "type": "unified", "sets": 2048, "ways": 16, "line_size": 64}}}
    geo = record_geometry(cpu)
    assert geo is not None and sorted(geo) == [1, 2]
    assert (geo[1].sets, geo[1].ways, geo[2].sets, geo[2].ways) == (64, 12, 2048, 16)
    listed = record_geometry({"caches": list(cpu["caches"].values())})
    assert listed is not None and (listed[1].ways, listed[2].sets) == (12, 2048)
    assert record_geometry({"brand": "x"}) is None
    spec = parse_spec("L1D:48K:12,L2:1M:16,L3:32M:16")
    assert [(g.sets, g.ways, g.line) for g in spec.values()] == [(64, 12, 64), (1024, 16, 64), (32768, 16, 64)]
