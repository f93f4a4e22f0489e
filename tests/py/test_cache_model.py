"""The simulator's memory hierarchy (src/sim/sim_cache.h) through pmulab-cachesim, against an
independent reference written from nanoBench's cacheSim.py (tests/py/cache_ref.py): random
access sequences with fixed seeds, several geometries, every deterministic policy; the level
that served each access must agree exactly. Then the tool's usage errors."""

import random
from typing import List, Tuple

import pytest

import cache_ref
from pmulab_test import data_path, run_tool

TOOL = "pmulab-cachesim"

# (size, ways, policy placeholder) per level; ways 1-12, power-of-two and not, sets 1-16
# (12: not a power of two).
GEOMETRIES: List[List[Tuple[int, int]]] = [
    [(512, 2), (2048, 4), (8192, 8)],      # 4, 8, 16 sets
    [(768, 3), (3072, 6), (12288, 12)],    # 4, 8, 16 sets; ways not powers of two
    [(256, 4), (3072, 4), (6144, 8)],      # 1, 12, 12 sets
    [(256, 1), (1280, 5), (4096, 16)],     # direct-mapped L1, 4 sets, 4 sets
]
GEOMETRIES_BY_4 = [[(1024, 4), (4096, 8), (12288, 12)], [(2048, 8), (4096, 4), (16384, 16)]]

COMMON = ["LRU", "FIFO", "PLRU", "PLRUl", "MRU", "MRU_N", "NRU", "SRRIP",
          "QLRU_H11_M1_R0_U0", "QLRU_H00_M1_R2_U1", "QLRU_H11_M1_R1_U2", "QLRU_H00_M1_R0_U1",
          "QLRU_H21_M2_R0_U0_UMO"]


def _sequence(seed: int, lines: int, n: int) -> List[Tuple[str, int]]:
    """R/W of random bytes over `lines` lines (a hot quarter taking half the accesses),
    some CLFLUSHes and a few WBINVDs."""
    rng = random.Random(seed)
    hot = max(1, lines // 4)
    out: List[Tuple[str, int]] = []
    for _ in range(n):
        x = rng.random()
        line = rng.randrange(hot) if rng.random() < 0.5 else rng.randrange(lines)
        addr = line * 64 + rng.randrange(64)
        if x < 0.004:
            out.append(("I", 0))
        elif x < 0.05:
            out.append(("F", addr))
        else:
            out.append(("W" if x < 0.3 else "R", addr))
    return out


def _compare(levels: List[Tuple[int, int, str]], seed: int, n: int = 1500) -> None:
    spec = ",".join(f"{name}:{size}:{ways}:{pol}" for name, (size, ways, pol) in zip(("L1D", "L2", "L3"), levels))
    biggest = max(size for size, _, _ in levels) // 64
    seq = _sequence(seed, biggest * 2, n)
    text = "".join(f"{op}\n" if op == "I" else f"{op} {addr:#x}\n" for op, addr in seq)
    r = run_tool(TOOL, "--cache", spec, stdin=text)
    assert r.rc == 0 and r.err == "", r
    got = r.out.split()
    ref = cache_ref.Hierarchy(levels)
    names = ["L1D", "L2", "L3", "MEM"][:len(levels)] + ["MEM"]
    want: List[str] = []
    for op, addr in seq:
        if op == "I":
            ref.reset()
        elif op == "F":
            ref.flush(addr)
        else:
            want.append(names[ref.access(addr)])
    assert len(got) == len(want), (spec, r)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"{spec} seed {seed}: access {i} served by {g}, reference says {w}"
    # The sequence must exercise every level (else the comparison proves little).
    for name in names:
        assert name in want, (spec, name)


@pytest.mark.parametrize("policy", COMMON + ["LRU_PLRU4"])
def test_every_common_policy_matches_the_reference_on_every_geometry(policy: str) -> None:
    geoms = GEOMETRIES_BY_4 if policy == "LRU_PLRU4" else GEOMETRIES
    for gi, geom in enumerate(geoms):
        _compare([(size, ways, policy) for size, ways in geom], seed=1000 * gi + len(policy))


def test_every_deterministic_qlru_variant_matches_the_reference() -> None:
    names = cache_ref.qlru_names()
    assert len(names) == 320  # cacheSim.py's AllDetQLRUVariants
    for i, name in enumerate(names):
        geom = GEOMETRIES[i % 2]
        _compare([(size, ways, name) for size, ways in geom], seed=i, n=600)


def test_mixed_policies_per_level_match_the_reference() -> None:
    mixes = [("PLRU", "QLRU_H00_M1_R2_U1", "QLRU_H11_M1_R0_U0"), ("LRU", "MRU_N", "SRRIP"),
             ("PLRUl", "NRU", "FIFO"), ("MRU", "LRU", "QLRU_H20_M3_R1_U3_UMO")]
    for i, mix in enumerate(mixes):
        geom = GEOMETRIES[0] if i % 2 == 0 else GEOMETRIES_BY_4[0]
        _compare([(size, ways, pol) for (size, ways), pol in zip(geom, mix)], seed=77 + i, n=3000)


def test_randomized_policies_repeat_for_a_seed() -> None:
    seq = _sequence(9, 64, 800)
    text = "".join(f"{op}\n" if op == "I" else f"{op} {addr:#x}\n" for op, addr in seq)
    for pol in ("RANDOM", "PLRURand", "RandPLRU", "QLRU_H11_MR31_R0_U0"):
        spec = f"L1D:1K:8:{pol},L2:4K:8:{pol},L3:off"
        a, b, c = (run_tool(TOOL, "--cache", spec, "--seed", seed, stdin=text) for seed in ("5", "5", "6"))
        assert a.rc == 0 and a.out.count("\n") > 700, a
        assert a.out == b.out, pol
        assert a.out != c.out, pol


def test_k_lines_of_one_set() -> None:
    # K <= ways lines of one L1 set hit after warm-up; K = ways + 1 under LRU miss L1 and
    # hit L2 on every load (8 ways, 64 sets: lines 4 KiB apart share a set).
    spec = "L1D:32K:8:LRU,L2:256K:4:LRU,L3:8M:16:LRU"
    for k, want in ((8, "L1D"), (9, "L2")):
        text = "".join(f"R {i * 4096:#x}\n" for _ in range(5) for i in range(k))
        r = run_tool(TOOL, "--cache", spec, stdin=text)
        assert r.rc == 0, r
        assert r.out.split()[k:] == [want] * (4 * k), r


def test_describe_and_off() -> None:
    r = run_tool(TOOL, "--describe", "--cache", "L1D:32K:8:PLRU,L2:off", stdin="R 0\nR 0x3f\nR 0x40\n")
    assert r.rc == 0, r
    assert r.out == "# L1D 32 KiB 8-way 64 sets PLRU\nMEM\nL1D\nMEM\n"
    r = run_tool(TOOL, "--cache", "off", "--describe", stdin="R 0\nR 0\n")
    assert r.out == "# off\nMEM\nMEM\n", r


def test_defaults_from_a_dump() -> None:
    # Prescott's leaf 4; Arrow Lake H's CPU 2 is an E-core (leaf 4 of that CPU).
    r = run_tool(TOOL, "--describe", "--dump", data_path("cpuid", "GenuineIntel0000F41_P4_Prescott_CPUID.txt"),
                 stdin="")
    assert r.rc == 0, r
    assert r.out == "# L1D 16 KiB 8-way 32 sets LRU, L2 256 KiB 4-way 1024 sets LRU\n"
    arl = data_path("cpuid", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt")
    r = run_tool(TOOL, "--describe", "--dump", arl, "--cpu", "2", "--cache", "L3:::SRRIP", stdin="R 0\nR 0\n")
    assert r.rc == 0, r
    assert r.out == ("# L1D 32 KiB 8-way 64 sets PLRU, L2 4 MiB 16-way 4096 sets QLRU_H00_M1_R2_U1, "
                     "L3 24 MiB 12-way 32768 sets SRRIP\nMEM\nL1D\n")
    r = run_tool(TOOL, "--dump", arl, "--cpu", "16", stdin="")
    assert r.rc == 2 and "--cpu 16: the machine has CPUs 0-15" in r.err, r
    r = run_tool(TOOL, "--describe", "--model", "prescott", stdin="")
    assert r.rc == 0 and r.out.startswith("# L1D "), r


@pytest.mark.parametrize("args,stdin,rc,msg", [
    (["--cache", "L1D:32K:8:NOPE"], "", 2, "unknown replacement policy 'NOPE'; known: LRU, FIFO"),
    (["--cache", "L1D:33000:8:LRU"], "", 2, "is not a non-zero multiple of ways * line (8 * 64 = 512 bytes)"),
    (["--cpu", "1"], "", 2, "--cpu needs --dump FILE or --model NAME"),
    (["--cache"], "", 2, "--cache needs a value"),
    (["--bogus"], "", 2, "unknown option '--bogus'"),
    (["--seed", "x"], "", 2, "--seed 'x' is not a number"),
    (["--dump", "a", "--model", "b"], "", 2, "give --dump or --model, not both"),
    (["--model", "nosuchcpu"], "", 2, "unknown model 'nosuchcpu'"),
    (["--dump", "/nonexistent/dump.txt"], "", 2, "/nonexistent/dump.txt"),
    ([], "R\n", 2, "stdin:1: 'R' is not 'R ADDR', 'W ADDR', 'F ADDR', 'S ADDR' or 'I'"),
    ([], "R 0\nX 12\n", 2, "stdin:2: 'X 12' is not"),
    ([], "R 0x\n", 2, "stdin:1: 'R 0x' is not"),
    ([], "I 5\n", 2, "stdin:1: 'I 5' is not"),
])
def test_usage_errors(args: List[str], stdin: str, rc: int, msg: str) -> None:
    r = run_tool(TOOL, *args, stdin=stdin)
    assert r.rc == rc, r
    assert msg in r.err, r
    assert "Traceback" not in r.err and "Sanitizer" not in r.err
