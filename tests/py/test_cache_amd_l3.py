"""AMD's L3 PMU as the slice-lookup unit (docs/cache.md "AMD's L3 PMU") on pmulab-sim's
zen1/zen3/zen4: `run --cbox-lookups` names, for lines the test picks, the slice the
simulator's own stand-in hash gives (pmulab-cachesim `S ADDR`); `seq --level 3 --slice N`
equals the independent reference in one set of one slice; `evset` finds the slice's ways,
each member in the target's slice by the simulator's hash; bad input is exit 2 or 3."""

import json
import os
import subprocess
from typing import List

import pytest

from pmulab_test import BUILD, ROOT
from test_cache_slices import check_seq_in_slice
from test_cache_tool import FAST, cache

CACHESIM = f"{ROOT}/build/host/pmulab-cachesim"
SIM = os.path.join(BUILD, "host", "pmulab-sim")


def model_slices(model: str, spec: str, addrs: List[int]) -> List[int]:
    """The simulator's own slice of each address on a named model."""
    args = [CACHESIM, "--model", model] + (["--cache", spec] if spec else [])
    out = subprocess.run(args, input="".join(f"S {a:#x}\n" for a in addrs), stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return [int(x) for x in out.split()]


def lookup_code(off: int) -> str:
    """clflush [r14+off]; mfence; mov rcx, [r14+off] (a load that misses every level)."""
    d = off.to_bytes(4, "little").hex()
    return f"410faebe{d}0faef0498b8e{d}"


@pytest.mark.parametrize("model,slices,rounds", [("zen1", 4, 1), ("zen3", 8, 2), ("zen4", 8, 2)])
def test_run_cbox_lookups_names_the_slice_of_the_sims_hash(model: str, slices: int, rounds: int) -> None:
    # Eight consecutive lines: the stand-in hash puts them in 8 (zen3/4) or 4 (zen1) slices.
    # Lines 16-23 of a page: not the sets of the harness's data page lines (0-3, 8, 9).
    offs = [0x10400 + 0x40 * k for k in range(8)]
    argv = [SIM, "--model", model, "--json", "run", "--cpu", "0", "--events", "tsc", "--cbox-lookups", "--unroll",
            "4", "--reps", str(rounds), "--warmup", "1", "--r14-size", "64M"]
    for o in offs:
        argv += ["--code", lookup_code(o), "--name", f"{o:#x}"]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(x) for x in p.stdout.splitlines()]
    res = [r for r in recs if r["type"] == "result"]
    cb = [r for r in recs if r["type"] == "cbox_lookups"]
    assert len(cb) == 8 and len(res) == 8
    # R14 is the middle of the 64 MiB area whose start is the record's r14.
    addrs = [r["r14"] + (32 << 20) + o for r, o in zip(res, offs)]
    want = model_slices(model, "", addrs)
    assert sorted(set(want)) == list(range(slices))
    for rec, w in zip(cb, want):
        assert rec["unit"] == "l3" and rec["boxes"] == slices and rec["rounds"] == rounds and rec["complex"] == 0
        assert rec["slice"] == w, rec
        # Two versions (4 and 8 copies), --reps = rounds: each slice counted once in each.
        assert rec["lookups"] == [12 if b == w else 0 for b in range(slices)], rec
        assert rec["slice_runs"] == [2] * slices and rec["runs"] == 2 * rounds, rec


@pytest.mark.parametrize("model,slice_no", [("zen3", 0), ("zen3", 5), ("zen1", 3)])
def test_seq_slice_equals_the_reference_in_one_set_of_one_slice(model: str, slice_no: int) -> None:
    # 8 MiB 8-way FIFO L3 in the model's slices (8: 2048 sets each; 4: 4096); set 1000.
    slices = 4 if model == "zen1" else 8
    log = check_seq_in_slice(["--sim-model", model], "L1D:32K:8:LRU,L2:256K:4:LRU,L3:8M:8:FIFO", slice_no,
                             f"amd slice {model} {slice_no}", count=10)
    assert f"pmulab-cache: L3 slice {slice_no} of {slices}: {16384 // slices} sets per slice; " in log, log


def test_evset_on_zen3_is_16_lines_of_the_targets_slice_and_set() -> None:
    r = cache("evset", "--sim-model", "zen3", "--level", "3", "--lfences", "1", *FAST, "--json", "0x10100")
    assert r.returncode == 0 and r.stderr == "", r
    rec = json.loads(r.stdout)
    members = [m["physical"] for m in rec["evset"]]
    assert rec["ways"] == 16 and len(members) == 16, rec
    x = rec["target"]["physical"]
    slices = model_slices("zen3", "", [x, *members])
    assert slices[1:] == [slices[0]] * 16, (hex(x), slices)
    assert {(p // 64) % 2048 for p in members} == {(x // 64) % 2048}
    assert len(set(members)) == 16 and x not in members


@pytest.mark.parametrize("args,status,msg", [
    (["--sim-model", "zen3", "--level", "3", "--slice", "8"], 2,
     "--slice 8: the L3 has slices 0-7 (of the L3 complex, AMD's L3 PMU)"),
    (["--sim-model", "zen3", "--sim-cache", "L3:1M:4:LRU:2", "--level", "3", "--slice", "1"], 2,
     "pmulab-sim: L3: 2 slices, but this model's L3 PMU counts 8 per complex (family 19h): give "
     "L3:SIZE:WAYS:POLICY:8 (see pmulab-cachesim --help)"),
])
def test_seq_slice_bad_input_on_amd(args: List[str], status: int, msg: str) -> None:
    r = cache("seq", *args, "A B A?")
    assert r.returncode == status, r
    assert r.stderr.strip().splitlines()[-1] == f"pmulab-cache: error: {msg}", r
    assert r.stdout == ""


def test_run_cbox_lookups_without_perfctrextllc_is_exit_3() -> None:
    p = subprocess.run([SIM, "--model", "k10", "--json", "run", "--cpu", "0", "--code", lookup_code(0x400), "--events",
                        "tsc", "--cbox-lookups"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    assert p.returncode == 3, p
    errs = [json.loads(x) for x in p.stdout.splitlines() if '"error"' in x]
    assert errs and "CPUID Fn8000_0001_ECX[28] (PerfCtrExtLLC) is clear: no L3 performance counters" in \
        errs[0]["message"], p.stdout
    assert not [x for x in p.stdout.splitlines() if '"type":"result"' in x]
