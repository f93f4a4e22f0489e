"""L3 slices and eviction sets in tools/pmulab-cache on pmulab-sim (docs/cache.md "L3
slices and eviction sets"): `seq --level 3 --slice N` equals the independent reference in
every slice (the blocks share one set and slice; by the C-Boxes, or by eviction sets where
there are none), `evset` finds as many lines as the L3 has ways, each in the target's
slice and set by the simulator's own hash (pmulab-cachesim `S ADDR`), with and without
C-Boxes; bad input (a slice that does not exist, ...) is exit 2, nothing measured."""

import json
import random
import subprocess
import zlib
from typing import List

import pytest

from pmulab_test import ROOT
from test_cache_tool import FAST, SKYLAKE, ZEN4, cache, random_sequence, reference_hits

CACHESIM = f"{ROOT}/build/host/pmulab-cachesim"


def sim_slices(dump: str, spec: str, addrs: List[int], model: str = "") -> List[int]:
    """The simulator's own slice of each address (pmulab-cachesim's `S ADDR`), of a dump or a model."""
    args = [CACHESIM, *(["--model", model] if model else ["--dump", dump])] + (["--cache", spec] if spec else [])
    out = subprocess.run(args, input="".join(f"S {a:#x}\n" for a in addrs), stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return [int(x) for x in out.split()]


def check_seq_in_slice(target: List[str], spec: str, slice_no: int, seed: str, count: int = 12) -> str:
    """`seq --level 3 --slice N --sets 1000` of random sequences (and 8 / 9 blocks) on an
    8-way FIFO L3 equals the reference in one set: every block in the set and slice.
    Returns pmulab-cache's log (-v)."""
    rng = random.Random(zlib.crc32(seed.encode()))
    seqs = [random_sequence(rng, rng.randrange(5, 40), 11) for _ in range(count)]
    seqs = [s if "?" in s else s + " B0?" for s in seqs]
    seqs += [" ".join(f"B{i}" for i in range(8)) + " B0?", " ".join(f"B{i}" for i in range(9)) + " B0? B1?"]
    r = cache("seq", *target, "--sim-cache", spec, "--level", "3", "--slice", str(slice_no), "--sets", "1000",
              *FAST, "--json", "-v", *seqs)
    assert r.returncode == 0, r
    got = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(got) == len(seqs)
    for seq, rec in zip(seqs, got):
        hits, misses = reference_hits(seq, "FIFO", 8, [1000])
        assert rec == {"seq": seq, "level": 3, "hits": hits, "misses": misses}, seq
    assert got[-2]["hits"] == 1 and got[-1] == {"seq": seqs[-1], "level": 3, "hits": 0, "misses": 2}
    return r.stderr


@pytest.mark.parametrize("slice_no", [0, 3])
def test_seq_slice_equals_the_reference_in_one_set_of_one_slice(slice_no: int) -> None:
    # 4 MiB 8-way FIFO L3 in 4 slices of 2048 sets; set 1000 of slice 0 or 3.
    log = check_seq_in_slice(["--sim", SKYLAKE], "L1D:32K:8:LRU,L2:256K:4:LRU,L3:4M:8:FIFO", slice_no,
                             f"slice {slice_no}")
    assert f"pmulab-cache: L3 slice {slice_no} of 4: 2048 sets per slice; " in log, log


def test_seq_slice_without_cboxes_by_eviction_sets_equals_the_reference() -> None:
    # Zen 5 (no C-Box model) with a 4-way LRU L3 of 2 slices: the second group of lines
    # that evict each other is one slice; every result equals the reference.
    rng = random.Random(zlib.crc32(b"evset slice"))
    seqs = [random_sequence(rng, rng.randrange(5, 30), 6) for _ in range(8)]
    seqs = [s if "?" in s else s + " B0?" for s in seqs] + ["B0 B1 B2 B3 B0?", "B0 B1 B2 B3 B4 B0?"]
    r = cache("seq", "--sim", ZEN4, "--sim-cache", "L3:1M:4:LRU:2", "--level", "3", "--slice", "1", "--lfences",
              "1", *FAST, "--json", "-v", *seqs)
    assert r.returncode == 0, r
    assert "pmulab-cache: L3 slice group 1 of set 4 (by eviction sets, " in r.stderr, r
    got = [json.loads(line) for line in r.stdout.splitlines()]
    for seq, rec in zip(seqs, got):
        hits, misses = reference_hits(seq, "LRU", 4, [4])
        assert rec == {"seq": seq, "level": 3, "hits": hits, "misses": misses}, seq
    assert [g["hits"] for g in got[-2:]] == [1, 0]


def test_seq_level3_defaults_to_slice_0_on_a_sliced_l3() -> None:
    # Skylake's own L3: 12 ways, QLRU_H11_M1_R0_U0, 4 slices: 12 blocks stay, 13 evict the first.
    r = cache("seq", "--sim", SKYLAKE, "--level", "3", *FAST, "--json", "-v",
              " ".join(f"B{i}" for i in range(12)) + " B0?", " ".join(f"B{i}" for i in range(13)) + " B0?")
    assert r.returncode == 0, r
    assert [json.loads(x)["hits"] for x in r.stdout.splitlines()] == [1, 0]
    assert "pmulab-cache: L3 slice 0 of 4: 2048 sets per slice; blocks at set 4: " in r.stderr, r


@pytest.mark.parametrize("args,status,msg", [
    (["--sim", SKYLAKE, "--level", "3", "--slice", "4"], 2, "--slice 4: the L3 has slices 0-3 (one per C-Box)"),
    (["--sim", SKYLAKE, "--level", "3", "--slice", "-1"], 2, "--slice -1: a slice is a number from 0"),
    (["--sim", SKYLAKE, "--level", "2", "--slice", "1"], 2, "--slice 1: slices are those of the L3 (--level 3)"),
    (["--sim", SKYLAKE, "--sim-cache", "L3:2M:4:LRU:1", "--level", "3", "--slice", "2", "--lfences", "1", *FAST], 2,
     "--slice 2: the lines of L3 set 4 tried fall into 1 group(s) of lines that evict each other (slices)"),
    (["--sim", ZEN4, "--sim-cache", "L3:1M:4:LRU:2", "--level", "3", "--slice", "0", "--sets", "4,5"], 2,
     "--slice 0 without C-Boxes (eviction sets): one set at a time (one --sets, no _SET blocks)"),
    (["--sim", SKYLAKE, "--sim-cache", "L3:1G:16:LRU", "--level", "3", "--slice", "2", "B2 B3 B4 B5 B6 B7"], 2,
     "8 blocks in slice 2 of L3 need 64 candidate lines 16777216 bytes apart (one in 4 is in the slice): 1040 MiB, "
     "more than pmulab's 1 GiB R14 area (fewer blocks)"),
    (["--dry-run", "--geometry", "L1D:32K:8,L2:256K:4,L3:8M:16", "--level", "3", "--slice", "1"], 2,
     "--slice 1: the slices are looked up on the target (not with --dry-run alone)"),
])
def test_seq_slice_bad_input(args: List[str], status: int, msg: str) -> None:
    r = cache("seq", *args, "A B A?")
    assert r.returncode == status, r
    assert r.stderr.strip().splitlines()[-1] == f"pmulab-cache: error: {msg}", r
    assert r.stdout == ""


def check_evset(rec: dict, dump: str, spec: str, ways: int, sets_per_slice: int) -> None:
    members = [m["physical"] for m in rec["evset"]]
    assert rec["ways"] == ways and len(members) == ways, rec
    x = rec["target"]["physical"]
    slices = sim_slices(dump, spec, [x, *members])
    assert slices[1:] == [slices[0]] * ways, (hex(x), slices)
    assert {(p // 64) % sets_per_slice for p in members} == {(x // 64) % sets_per_slice}
    assert len(set(members)) == ways and x not in members
    assert all(m["physical"] - m["offset"] == x - rec["target"]["offset"] for m in rec["evset"])


def test_evset_on_skylake_is_12_lines_of_the_targets_slice_and_set() -> None:
    r = cache("evset", "--sim", SKYLAKE, "--level", "3", "--lfences", "1", *FAST, "--json", "0x10100")
    assert r.returncode == 0 and r.stderr == "", r
    rec = json.loads(r.stdout)
    assert rec["level"] == 3 and rec["target"]["offset"] == 0x10100 and rec["candidates"] == 96
    check_evset(rec, SKYLAKE, "", 12, 2048)


def test_evset_without_cboxes_by_measurement_alone() -> None:
    # Zen 5 (no C-Box model) with its L3 made a 4-way L3 of 2 slices: the eviction set is
    # found all the same, and lies in the target's slice by the simulator's hash.
    spec = "L3:1M:4:LRU:2"
    r = cache("evset", "--sim", ZEN4, "--sim-cache", spec, "--lfences", "1", *FAST, "--json", "0x2100")
    assert r.returncode == 0 and r.stderr == "", r
    check_evset(json.loads(r.stdout), ZEN4, spec, 4, 2048)


def test_evset_text() -> None:
    r = cache("evset", "--sim", SKYLAKE, "--sim-cache", "L3:2M:4:LRU:4", "--lfences", "1", *FAST, "0x4100")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].startswith("eviction set of the line at offset 0x4100 (physical 0x"), r
    assert ": 4 lines (L3: 4 ways), from 32 candidates 0x80000 apart in " in lines[0], r
    assert len(lines) == 5 and all(x.startswith("  offset 0x") and " physical 0x" in x for x in lines[1:])


@pytest.mark.parametrize("args,msg", [
    (["--level", "2", "0x100"], "--level 2: evset builds eviction sets of the L3 (--level 3)"),
    (["zz"], "'zz': give the line as an offset in R14's area or a physical address (0x... or decimal)"),
    (["--candidates", "0", "0x100"], "--candidates and --assoc must be at least 1"),
    (["0x40"], "offset 0x40: set 1 of L3 shares L1 set 1 with the harness's data page (its lines 0, 1, 2, 3, 8, 9 "
               "of a 4 KiB page are touched while the code runs); choose another line"),
])
def test_evset_bad_input(args: List[str], msg: str) -> None:
    r = cache("evset", "--sim", SKYLAKE, *args)
    assert r.returncode == 2, r
    assert r.stderr.strip().splitlines()[-1] == f"pmulab-cache: error: {msg}", r
