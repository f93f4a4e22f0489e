"""tools/pmulab-cache seq on pmulab-sim: several sets in one code with the counts of each
set (--per-set), and the clearing of the levels above before every access that must reach
the level studied (docs/cache.md "Several sets, counted per set", "Clearing the levels
above"), each exact against an independent reference: tests/py/cache_ref.py's sets and
hierarchy, fed with the addresses nanoBench's layout gives."""

import json
import random
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

import cache_ref
from test_cache_tool import FAST, SKYLAKE, cache, elements, random_sequence, reference_hits


def only_set(seq: str, s: int, main: Sequence[int]) -> Tuple[str, List[int]]:
    """The part of `seq` that set `s` sees (its accesses and every <wbinvd>), and the sets to
    simulate it in: the reference's sets are independent of each other."""
    words = []
    for (name, override, kind), w in zip(elements(seq), seq.split()):
        if kind == "wbinvd":
            words.append(w)
        elif (override == s) or (override is None and s in main):
            words.append(name + {"measure": "?", "flush": "!", "access": ""}[kind])
    return " ".join(words), [s]


def per_set_reference(seq: str, policy: str, ways: int, main: List[int]) -> Dict[str, Dict[str, int]]:
    used = sorted(set(main) | {o for _, o, _ in elements(seq) if o is not None})
    out = {}
    for s in used:
        part, sets = only_set(seq, s, main)
        hits, misses = reference_hits(part, policy, ways, sets) if "?" in part else (0, 0)
        out[str(s)] = {"hits": hits, "misses": misses}
    return out


# (--sim-cache, level, policy, ways, --sets, the blocks' own sets)
PER_SET = [
    ("L1D:32K:8:LRU", 1, "LRU", 8, "4-6", (20,)),
    ("L1D:16K:4:SRRIP", 1, "SRRIP", 4, "12,40", ()),
    ("L1D:32K:8:LRU,L2:256K:4:QLRU_H00_M1_R2_U1", 2, "QLRU_H00_M1_R2_U1", 4, "100,101", (140,)),
]


@pytest.mark.parametrize("spec,level,policy,ways,sets,overrides", PER_SET)
def test_per_set_counts_equal_the_reference_and_add_up(spec: str, level: int, policy: str, ways: int, sets: str,
                                                       overrides: Tuple[int, ...]) -> None:
    rng = random.Random(zlib.crc32(f"per-set {spec}".encode()))
    seqs = [random_sequence(rng, rng.randrange(8, 30), ways + 3, overrides) for _ in range(10)]
    seqs = [s if "?" in s else s + " B0?" for s in seqs]
    r = cache("seq", "--sim", SKYLAKE, "--sim-cache", spec, "--level", str(level), "--sets", sets, "--per-set",
              *FAST, "--json", *seqs)
    assert r.returncode == 0 and r.stderr == "", r
    got = [json.loads(line) for line in r.stdout.splitlines()]
    lo, dash, hi = sets.partition("-")
    main = list(range(int(lo), int(hi) + 1)) if dash else [int(x) for x in sets.split(",")]
    for seq, rec in zip(seqs, got):
        want = per_set_reference(seq, policy, ways, main)
        hits, misses = reference_hits(seq, policy, ways, main)
        assert rec["seq"] == seq and (rec["hits"], rec["misses"]) == (hits, misses), rec
        # every set the sequences use appears; those this one leaves alone count nothing
        assert {k: v for k, v in rec["sets"].items() if k in want} == want, (seq, rec)
        assert all(v == {"hits": 0, "misses": 0} for k, v in rec["sets"].items() if k not in want), rec
        assert sum(v["hits"] for v in rec["sets"].values()) == hits
        assert sum(v["misses"] for v in rec["sets"].values()) == misses
    assert any(any(v["hits"] for v in g["sets"].values()) for g in got)


def test_per_set_text_form() -> None:
    r = cache("seq", "--sim", SKYLAKE, "--sim-cache", "L1D:32K:8:LRU", "--sets", "4,5", "--per-set", *FAST,
              "A B A? C_7? A_7?")
    assert r.returncode == 0, r
    assert r.stdout == ("L1_HIT: 2.00\nL1_MISS: 2.00\n"
                        "  set 4: L1_HIT 1.00, L1_MISS 0.00\n"
                        "  set 5: L1_HIT 1.00, L1_MISS 0.00\n"
                        "  set 7: L1_HIT 0.00, L1_MISS 2.00\n")


# ---------------------------------------------------------- clearing the levels above
L2_SPEC = "L1D:32K:8:LRU,L2:256K:4:LRU,L3:8M:16:LRU"
LEVELS = [(32 << 10, 8, "LRU"), (256 << 10, 4, "LRU"), (8 << 20, 16, "LRU")]


def l2_reference(seq: str, clear: bool, s: int = 4) -> Tuple[int, int]:
    """The L2 load events of the `?` accesses on the whole hierarchy: block i of L2 set s at
    (i x 1024 + s) x 64; with clearing, before every load, 16 lines (2 x L1's 8 ways) of L1
    set s % 64 in L2 sets s + 64, s + 128, ..., those that are not set s (nanoBench's
    getClearHLAddresses). An L1 hit is no L2 event."""
    h = cache_ref.Hierarchy(LEVELS)
    clearing = [k * 64 for k in range(s + 64, s + 64 * 18, 64) if k % 1024 != s][:16]
    ids: Dict[str, int] = {}
    hits = misses = 0
    for name, _, kind in elements(seq):
        if kind == "wbinvd":
            h.reset()
            continue
        addr = (ids.setdefault(name, len(ids)) * 1024 + s) * 64
        if kind == "flush":
            h.flush(addr)
            continue
        for a in clearing if clear else []:
            h.access(a)
        served = h.access(addr)
        if kind == "measure" and served > 0:
            hits += served == 1
            misses += served > 1
    return hits, misses


def l2_run(clear: bool, *seqs: str) -> List[Tuple[int, int]]:
    r = cache("seq", "--sim", SKYLAKE, "--sim-cache", L2_SPEC, "--level", "2", *FAST, "--json",
              *([] if clear else ["--no-clear-hl"]), *seqs)
    assert r.returncode == 0, r
    return [(x["hits"], x["misses"]) for x in map(json.loads, r.stdout.splitlines())]


def test_clearing_makes_every_access_reach_the_level_studied() -> None:
    # A..E fill the 4-way L2 set past its ways (A is gone) but not the 8-way L1 set: cleared,
    # A? and B? reach L2 and miss there; not cleared, the L1 serves them and L2 counts nothing.
    seq = "A B C D E A? B?"
    assert l2_reference(seq, True) == (0, 2) and l2_reference(seq, False) == (0, 0)
    assert l2_run(True, seq) == [(0, 2)]
    r = cache("seq", "--sim", SKYLAKE, "--sim-cache", L2_SPEC, "--level", "2", *FAST, "--no-clear-hl", seq)
    assert r.returncode == 0 and r.stdout == "L2_HIT: 0.00\nL2_MISS: 0.00\n", r
    assert ("hits + misses = 0, but the sequence has 2 measured accesses (the others were served by the levels "
            "above: --no-clear-hl)") in r.stderr, r


def test_clearing_equals_the_hierarchy_reference() -> None:
    rng = random.Random(zlib.crc32(b"clear-hl"))
    seqs = [random_sequence(rng, rng.randrange(6, 30), 7) for _ in range(12)]
    seqs = [s if "?" in s else s + " B0?" for s in seqs] + ["A B C A? B? C?", "A B C D E F G H I A? B? C?"]
    with_clear, without = l2_run(True, *seqs), l2_run(False, *seqs)
    for seq, got, got_nc in zip(seqs, with_clear, without):
        assert got == l2_reference(seq, True), seq
        assert got_nc == l2_reference(seq, False), seq
        assert sum(got) == sum(1 for _, _, k in elements(seq) if k == "measure"), seq
    assert with_clear != without
