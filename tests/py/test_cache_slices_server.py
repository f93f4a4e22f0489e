"""L3 slices of a server part on pmulab-sim (docs/cache.md "Server parts: CHAs"): the
simulated Skylake-SP (model skylake_server: 18 CHAs, the simulator's stand-in slice hash)
counts every L3 lookup in its CHAs; `run --cbox-lookups` names the CHA that the
simulator's own hash gives (pmulab-cachesim `S ADDR`) with unit "cha", traced by the
uncore guides' names and restored exactly; `pmulab-cache seq --slice N` puts every block
in CHA N and equals the reference; `evset` finds the slice's 11 ways there; a guest or an
unknown server part is exit 3 with the reason."""

import json
import random
import zlib
from typing import List

import pytest

from pmulab_test import data_path, run_tool
from test_cache_slices import sim_slices as cache_slices_sim
from test_cache_tool import FAST, cache, random_sequence, reference_hits

MODEL = "skylake_server"
WAY = 2048 * 64  # one slice's way: 2048 sets of 64-byte lines


def sim_slices(addrs: List[int]) -> List[int]:
    return cache_slices_sim("", "", addrs, model=MODEL)


def lookup_code(off: int) -> str:
    """clflush [r14+off]; mfence; mov rcx, [r14+off]: one L3 lookup (a miss) per copy."""
    d = off.to_bytes(4, "little").hex()
    return f"410fae be{d}0faef0498b8e{d}".replace(" ", "")


def test_run_cbox_lookups_names_the_simulators_cha() -> None:
    offs = [0x40, 0x1000040, 0x1345680]
    argv = ["--model", MODEL, "--json", "--", "run", "--cpu", "0", "--events", "tsc", "--cbox-lookups", "--basic",
            "--unroll", "4", "--reps", "2", "--warmup", "1", "--r14-size", "64M"]
    for o in offs:
        argv += ["--code", lookup_code(o), "--name", f"{o:#x}"]
    r = run_tool("pmulab-sim", *argv, timeout=120)
    assert r.rc == 0, r.out + r.err
    recs = [json.loads(x) for x in r.out.splitlines() if x.startswith("{")]
    res = {x["bench"]: x for x in recs if x["type"] == "result"}
    cb = [x for x in recs if x["type"] == "cbox_lookups"]
    assert len(cb) == 3
    for rec in cb:
        addr = res[rec["bench"]]["r14"] + (32 << 20) + int(rec["bench"], 16)
        want = sim_slices([addr])[0]
        assert rec["unit"] == "cha" and rec["event"] == "UNC_CHA_LLC_LOOKUP.ALL" and rec["boxes"] == 18, rec
        assert rec["slice"] == want, (hex(addr), rec)
        # 3 runs per version, each's first left out: 2 of the 4 copies' version (4 lookups
        # each) and 2 of the version without copies (basic mode).
        assert rec["runs"] == 4 and rec["lookups"] == [8 if b == want else 0 for b in range(18)], rec


def test_cha_msrs_traced_by_name_and_restored() -> None:
    r = run_tool("pmulab-sim", "--model", MODEL, "--trace-msr", "--json", "--", "run", "--cpu", "0", "--events",
                 "tsc", "--cbox-lookups", "--code", lookup_code(0x40), "--reps", "1", "--warmup", "0", timeout=120)
    assert r.rc == 0, r.out + r.err
    tr = [json.loads(x) for x in r.out.splitlines() if x.startswith("{") and '"msr_trace"' in x]
    names = {x["register"] for x in tr}
    for n in ("C0_MSR_PMON_BOX_CTL", "C0_MSR_PMON_CTL0", "C0_MSR_PMON_BOX_FILTER0", "C17_MSR_PMON_CTR0"):
        assert n in names, sorted(str(x) for x in names)[:40]
    # The last write of every CHA register puts back what it read first (0 on a fresh model).
    last = {}
    for x in tr:
        if x["op"] == "wrmsr" and x["register"].startswith("C") and "_MSR_PMON_" in x["register"]:
            last[x["register"]] = x["value"]
    assert len(last) == 18 * 4 and all(v == "0x0" for v in last.values()), last


@pytest.mark.parametrize("slice_no", [0, 13])
def test_seq_slice_puts_every_block_in_the_cha_and_equals_the_reference(slice_no: int) -> None:
    spec = "L1D:32K:8:LRU,L2:1M:16:LRU,L3:::FIFO"
    rng = random.Random(zlib.crc32(f"server slice {slice_no}".encode()))
    seqs = [random_sequence(rng, rng.randrange(5, 30), 13) for _ in range(8)]
    seqs = [s if "?" in s else s + " B0?" for s in seqs]
    seqs += [" ".join(f"B{i}" for i in range(11)) + " B0?", " ".join(f"B{i}" for i in range(12)) + " B0? B1?"]
    r = cache("seq", "--sim-model", MODEL, "--sim-cache", spec, "--level", "3", "--slice", str(slice_no), "--sets",
              "100", *FAST, "--json", "-v", *seqs)
    assert r.returncode == 0, r
    got = [json.loads(line) for line in r.stdout.splitlines()]
    for seq, rec in zip(seqs, got):
        hits, misses = reference_hits(seq, "FIFO", 11, [100])
        assert rec == {"seq": seq, "level": 3, "hits": hits, "misses": misses}, seq
    assert [g["hits"] for g in got[-2:]] == [1, 0]
    # The blocks the tool chose (-v): each in CHA slice_no by the simulator's hash, set 100.
    line = next(x for x in r.stderr.splitlines() if x.startswith(f"pmulab-cache: L3 slice {slice_no} of 18: "))
    offs = [int(w, 16) for w in line.split("set 100: ", 1)[1].split()]
    assert len(offs) == 13 and all((o // 64) % 2048 == 100 for o in offs), line


def test_evset_on_the_server_finds_the_slices_ways() -> None:
    r = cache("evset", "--sim-model", MODEL, "--level", "3", "--lfences", "1", *FAST, "--json", "0x10100")
    assert r.returncode == 0 and r.stderr == "", r
    rec = json.loads(r.stdout)
    members = [m["physical"] for m in rec["evset"]]
    assert rec["ways"] == 11 and len(members) == 11, rec
    x = rec["target"]["physical"]
    slices = sim_slices([x, *members])
    assert slices[1:] == [slices[0]] * 11, (hex(x), slices)
    assert {(p // 64) % 2048 for p in members} == {(x // 64) % 2048}


@pytest.mark.parametrize("machine,msg", [
    (["--dump", data_path("cpuid", "cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt")],
     "a hypervisor's guest: the uncore's C-Box MSRs are not virtualized"),
    (["--model", "icelake"], "and the CHAs of Skylake-SP .. Emerald Rapids only"),
])
def test_refusals_are_exit_3(machine: List[str], msg: str) -> None:
    r = run_tool("pmulab-sim", *machine, "--json", "--", "run", "--cpu", "0", "--events", "tsc", "--cbox-lookups",
                 "--code", "90", timeout=120)
    assert r.rc == 3, r.out + r.err
    assert msg in r.out + r.err and '"type":"result"' not in r.out.replace(" ", ""), r.out
