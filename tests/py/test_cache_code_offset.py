"""The generated code placed away from the sets an experiment measures (nanoBench's
codeOffset; docs/cache.md "Where the code lies"): `run --code-offset BYTES` puts each
region's first byte that far past a 4 KiB boundary and says where in the record, on
pmulab-sim and under QEMU (the code runs exactly the same there, -icount 7), and
`pmulab-cache --code-set auto|N` picks the set by nanoBench's findCacheSetForCode."""

import json

import pytest

from pmulab_test import run_qemu, run_tool
from test_cache_tool import FAST, SKYLAKE, cache


def _results(out: str):
    return [r for r in map(json.loads, (l for l in out.splitlines() if l.startswith("{"))) if r["type"] == "result"]


def test_code_offset_on_the_simulator_places_the_code_and_counts_the_same() -> None:
    base = ("--dump", SKYLAKE, "--json", "--", "run", "--code", "4801d8", "--events", "C0.00", "--reps", "3")
    plain = run_tool("pmulab-sim", *base, timeout=120)
    moved = run_tool("pmulab-sim", *base, "--code-offset", "0x940", timeout=120)
    assert plain.rc == 0 and moved.rc == 0, (plain, moved)
    p, m = _results(plain.out), _results(moved.out)
    assert [x["median"] for x in p] == [x["median"] for x in m] == [1.0]
    assert "code_offset" not in p[0] and "code_at" not in p[0]
    assert m[0]["code_offset"] == 0x940 and int(m[0]["code_at"], 16) % 4096 == 0x940, m


def test_code_offset_out_of_range_is_exit_2() -> None:
    r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--", "run", "--code", "90", "--code-offset", "4096", timeout=60)
    assert r.rc == 2 and "--code-offset: 4096 is out of range 0..4095" in r.out + r.err, r


@pytest.mark.parametrize("sets,level,want", [
    ("4", 1, 5),            # one set: the code right after it
    ("4-6,20", 1, 21),      # the widest gap is 20 .. 4 + 64
    ("0,32", 1, 1),         # two equal gaps: the first
    ("100,101", 2, 38),     # L2 sets 100, 101 are lines 36, 37 of a page
])
def test_code_set_follows_nanobenchs_rule(sets: str, level: int, want: int) -> None:
    from pmulab import cache_seq
    from pmulab.cache_target import parse_spec
    geo = parse_spec("L1D:32K:8,L2:256K:4")
    if sets == "0,32":
        lay = cache_seq.Layout(geo, 1, [0, 32], used=[0, 32])
    else:
        lay = cache_seq.make_layout(geo, level, cache_seq.parse_sets(sets), [cache_seq.parse_seq("A B?")])
    assert cache_seq.code_set(lay) == want


def test_code_set_end_to_end() -> None:
    # The command line carries the offset; on the simulator (code fetches touch no cache) the
    # counts are those without it.
    r = cache("seq", "--dry-run", "--geometry", "L1D:32K:8,L2:256K:4", "--sets", "4-6,20", "--code-set", "auto",
              "A B A?")
    assert r.returncode == 0 and r.stdout.rstrip().endswith("--r14-size 1048576 --code-offset 1344"), r
    r = cache("seq", "--dry-run", "--geometry", "L1D:32K:8", "--code-set", "9", "A?")
    assert r.returncode == 0 and r.stdout.rstrip().endswith("--code-offset 576"), r
    seqs = ["A B C D E F G H I A? B?", "A B A? C_20? A_20?"]
    plain = cache("seq", "--sim", SKYLAKE, "--sets", "4-6", *FAST, "--json", *seqs)
    moved = cache("seq", "--sim", SKYLAKE, "--sets", "4-6", "--code-set", "auto", *FAST, "--json", *seqs)
    assert plain.returncode == 0 and moved.returncode == 0, (plain, moved)
    assert plain.stdout == moved.stdout
    bad = cache("seq", "--sim", SKYLAKE, "--code-set", "64", "-v", "A?")
    assert bad.returncode == 2 and "--code-set 64: give auto or a set" in bad.stderr, bad
    assert "pmulab-cache: measuring" not in bad.stderr


def test_qemu_code_offset_runs_the_same_code() -> None:
    # Under -icount 7 the TSC counts 128 per instruction: the region at 0x940 into its page
    # runs exactly the instructions it runs at 0, and the record says where it was.
    r = run_qemu("run", "--code", "4801d8", "--events", "tsc", "--reps", "3", "--code-offset", "2368",
                 smp="1", timeout=120, icount=7, json_mode=True)
    assert r.rc == 0, r
    res = _results(r.out)
    assert res and res[0]["median"] == 128.0 and res[0]["code_offset"] == 2368, res
    assert int(res[0]["code_at"], 16) % 4096 == 2368, res
