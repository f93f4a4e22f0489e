"""tools/pmulab-cache's sequence code on the target, instruction-exact (issue #24,
docs/cache.md "Access sequences").

QEMU has no PMU and no cache model, but under -icount shift=7 the TSC advances exactly
128 per guest instruction with interrupts masked (test_qemu_usercode.py), so `--events
tsc` counts the instructions of the measured parts of the generated code exactly.

What is expected, and why: the tool runs each sequence's body with `--basic --unroll 1
--loop 1` (0 and 1 copies, one iteration), so a result is the count of one copy of the
body. Everything the sequence does not measure (plain accesses, CLFLUSHes, WBINVDs, the
levels above cleared, each list's LFENCEs) lies between a pause and a resume marker.
pmulab replaces each marker by a sequence that saves registers, serialises, reads the
counter and subtracts it from (pause) or adds it to (resume) an accumulator; the part of
a pair's two sequences that is counted is the same for every pair, and the short
version (0 copies) runs as many empty pairs as the long one has pairs (docs/measure.md
"Pausing the count"), so the markers cost exactly 0 per iteration. Expected per
iteration: 128 x the instructions of the body outside every pause..resume window, the
markers' own 8 bytes not counted, whatever the number of pairs.

The expected count is computed here from the bytes the tool sent to the target, decoded
with llvm-objdump (the markers found at instruction boundaries by their bytes), and the
decoded instructions, counted and paused, must be exactly what nanoBench's rule (written
here) asks for: each `?` access its LFENCEs and one load per chosen set (one for a block
in its own set), everything else paused. One QEMU boot: the tool itself
(pmulab.cache.main, its QEMU path with `--icount 7`) runs every case against one agent;
only the boot and the agent's stop are shared between the cases. `--dry-run` prints the
same code and init for each case as the tool sent.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from typing import Dict, List, Optional, Tuple

from pmulab_test import ROOT

from pmulab import cache as pmulab_cache
from pmulab import cache_target
from pmulab import client as pmulab_client

QEMU = True
TICK = 128
TOOL = os.path.join(ROOT, "tools", "pmulab-cache")
PAUSE = bytes.fromhex("043f81c2b113b5f0")   # .quad 0xF0B513B1C2813F04 (docs/measure.md)
RESUME = bytes.fromhex("043f81c2b113b5e0")  # .quad 0xE0B513B1C2813F04
GEO = "L1D:32K:8,L2:256K:4,L3:2M:16"
LINE, SETS = 64, {1: 64, 2: 1024, 3: 2048}  # GEO's sets per level

# (label, level, options, chosen sets, LFENCEs per list, loads that clear the levels
# above per set of the level above, sequences): every level, with and without the levels
# above cleared (nanoBench's getClearHLAddresses: 2 x the ways above, 2 x 8 for L2,
# 2 x (8 + 4) for L3, for each set of the level above that a used set falls in), several
# sets, blocks in their own sets, CLFLUSH, WBINVD, an init sequence, the defaults (one
# set, 25 LFENCEs, the median of 10) and the other aggregates.
SEQS = ["A B C? D? A?", "A! B? <wbinvd> A? B!"]
CASES = [
    ("l1", 1, ["--sets", "4,5", "--reps", "3"], [4, 5], 25, 0,
     ["A B C? D? A?", "A! B C? <wbinvd> A?", "A_7? B? A! A?", "A B? C?"]),
    ("l1-default", 1, [], [4], 25, 0, ["A B? C?", "A! B C? <wbinvd> A?"]),
    ("l2", 2, ["--lfences", "3", "--seq-init", "E F", "--reps", "3", "--agg", "min"], [4], 3, 16, SEQS),
    ("l2-noclear", 2, ["--no-clear-hl", "--no-wbinvd", "--lfences", "3", "--reps", "3", "--agg", "max"], [4], 3,
     0, SEQS),
    ("l3", 3, ["--lfences", "1", "--reps", "3", "--agg", "avg"], [4], 1, 24, ["A B C? D? A?", "<wbinvd> A? A! A_12?"]),
]


# ---------------------------------------------------------------- decoding
Insn = Tuple[int, int, str]  # offset, length, the instruction (Intel syntax)
_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*)$")


def decode(code: bytes) -> List[Insn]:
    """The instructions of `code` as llvm-objdump decodes them (the bytes wrapped in an
    ELF object by llvm-objcopy): contiguous, covering every byte."""
    with tempfile.TemporaryDirectory() as td:
        raw, obj = os.path.join(td, "code.bin"), os.path.join(td, "code.o")
        open(raw, "wb").write(code)
        subprocess.run(["llvm-objcopy", "-I", "binary", "-O", "elf64-x86-64", "--rename-section",
                        ".data=.text,alloc,load,readonly,code,contents", raw, obj], check=True)
        out = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", "-M", "intel", "--print-imm-hex", obj],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
    matches = [m for m in map(_LINE.match, out.splitlines()) if m]
    rows = [(int(m.group(1), 16), " ".join(m.group(2).split("#")[0].split())) for m in matches]
    insns = [(off, (rows[i + 1][0] if i + 1 < len(rows) else len(code)) - off, text)
             for i, (off, text) in enumerate(rows)]
    assert insns and insns[0][0] == 0 and sum(n for _, n, _ in insns) == len(code), out
    assert not any("unknown" in t or "(bad)" in t for _, _, t in insns), out
    return insns


def counted(code: bytes) -> Tuple[List[str], List[str], int]:
    """(the instructions outside every pause..resume window, those inside, the pairs): a
    marker is its 8 bytes at an instruction boundary (they decode as `add al, 0x3f; add
    edx, imm32`), pause and resume alternating from a pause, the body ending resumed."""
    insns = decode(code)
    starts = {off for off, _, _ in insns}
    out: List[str] = []
    inside: List[str] = []
    counting, skip_to, pairs = True, 0, 0
    for off, _, text in insns:
        if off < skip_to:
            continue
        mark = code[off:off + 8]
        if mark in (PAUSE, RESUME):
            assert (mark == PAUSE) == counting, f"marker out of order at offset {off}"
            assert off + 8 in starts or off + 8 == len(code), f"marker at {off} splits an instruction"
            counting, skip_to = mark == RESUME, off + 8
            pairs += mark == PAUSE
            continue
        (out if counting else inside).append(text)
    assert counting, "the body ends paused"
    return out, inside, pairs


_LOAD = re.compile(r"mov rcx, qword ptr \[r13 \+ 0x([0-9a-f]+)\]")
_FLUSH = re.compile(r"clflush byte ptr \[r13 \+ 0x([0-9a-f]+)\]")


def kinds(insns: List[str]) -> Counter:
    """How many LFENCEs, loads, CLFLUSHes and WBINVDs; nothing else may be there."""
    def kind(t: str) -> str:
        if t in ("lfence", "wbinvd"):
            return t
        for name, rx in (("load", _LOAD), ("clflush", _FLUSH)):
            if rx.fullmatch(t):
                return name
        raise AssertionError(f"unexpected instruction in the body: {t}")
    return Counter(kind(t) for t in insns)


def own_sets(seqs: List[str]) -> List[int]:
    return [int(m) for seq in seqs for m in re.findall(r"_(\d+)[?!]?(?:\s|$)", seq)]


def nanobench(seq: str, sets: List[int], lfences: int, clear: int, above: Optional[int],
              used: List[int]) -> Tuple[Counter, Counter]:
    """nanoBench's getCodeForAddressLists for a sequence (its rule, written here): per
    element, a list of the clearing loads (not for a flush; `clear` for each set of the
    level above, `above` sets, that a used set falls in), then the block's list (one
    address per chosen set, one for NAME_SET), each list after its LFENCEs; only the `?`
    blocks' lists counted. (counted, paused) as kinds() counts them."""
    clear *= len({s % above for s in used}) if above else 0
    cnt, paused = Counter(), Counter()
    for w in seq.split():
        if w == "<wbinvd>":
            paused["wbinvd"] += 1
            continue
        n = 1 if re.fullmatch(r"[A-Za-z0-9.]+_\d+[?!]?", w) else len(sets)
        if clear and not w.endswith("!"):
            paused["lfence"] += lfences
            paused["load"] += clear
        part = cnt if w.endswith("?") else paused
        part["lfence"] += lfences
        part["clflush" if w.endswith("!") else "load"] += n
    return +cnt, +paused


# ---------------------------------------------------------------- the tool
def dry_run(opts: List[str], seqs: List[str]) -> List[Dict[str, Optional[str]]]:
    """`pmulab-cache seq --dry-run` for a case: per sequence, its --code and --init hex and
    the rest of the line."""
    p = subprocess.run([sys.executable, TOOL, "seq", "--dry-run", "--geometry", GEO, "--events", "tsc",
                        "--smp", "1", "--icount", "7", *opts, *seqs], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p
    out = []
    for line in p.stdout.splitlines():
        words = shlex.split(line)
        got: Dict[str, Optional[str]] = {"code": None, "init": None}
        for opt in ("code", "init"):
            if f"--{opt}" in words:
                i = words.index(f"--{opt}")
                got[opt] = words[i + 1]
                del words[i:i + 2]
        got["rest"] = " ".join(words)
        out.append(got)
    assert len(out) == len(seqs), p.stdout
    return out


def test_qemu_sequence_code_counts_exactly_the_measured_instructions(monkeypatch, capsys) -> None:
    agent = pmulab_client.Agent.qemu(["--smp", "1", "--icount", "7"], no_build=True, timeout=400)
    boots: List[List[str]] = []
    sent: List[Tuple[List[str], Dict[str, bytes]]] = []
    real_batch = agent.batch

    def batch(lines, *a, **kw):
        lines = list(lines)
        sent.extend(lines)
        return real_batch(lines, *a, **kw)

    agent.batch = batch  # what the tool sends, recorded
    monkeypatch.setattr(pmulab_client.Agent, "qemu",
                        classmethod(lambda cls, args, **kw: boots.append(list(args)) or agent))
    monkeypatch.setattr(cache_target.Target, "close", lambda self: setattr(self, "agent", None))
    tsc: Dict[str, List[int]] = {}
    bodies: Dict[str, List[bytes]] = {}
    try:
        for label, level, opts, sets, lfences, clear, seqs in CASES:
            del sent[:]
            rc = pmulab_cache.main(["seq", "--smp", "1", "--icount", "7", "--no-build", "--geometry", GEO,
                                    "--level", str(level), "--events", "tsc", "--json", *opts, *seqs])
            out, err = capsys.readouterr()
            assert rc == 0, (label, out, err)
            assert boots[-1] == ["--smp", "1", "--icount", "7"], boots  # the tool's QEMU boot, -icount 7
            recs = [json.loads(x) for x in out.splitlines()]
            assert len(recs) == len(seqs) == len(sent), (label, out)
            dry = dry_run(["--level", str(level), *opts], seqs)
            for seq, rec, (argv, blobs), d in zip(seqs, recs, sent, dry):
                body = blobs["code"]
                cnt, paused, pairs = counted(body)
                # The used sets are those of the whole invocation: pmulab lays its sequences
                # out together (nanoBench's getAllUsedCacheSets, per sequence there).
                want_cnt, want_paused = nanobench(seq, sets, lfences, clear, SETS.get(level - 1),
                                                  sets + own_sets(seqs))
                assert kinds(cnt) == want_cnt and kinds(paused) == want_paused, (label, seq, cnt, paused)
                for t in cnt:  # the counted loads: lines of the level's chosen sets, or a block's own set
                    m = _LOAD.fullmatch(t)
                    s = m and (int(m.group(1), 16) // LINE) % SETS[level]
                    assert not m or s in sets or f"_{s}?" in seq, (label, seq, t)
                # Exact: 128 per counted instruction, the markers' cost 0 (see the docstring).
                assert rec == {"seq": seq, "level": level, "events": {"tsc": TICK * len(cnt)}}, (label, rec, pairs)
                # --dry-run prints the code and init the tool sent, and the rest of its line.
                assert d["code"] == body.hex(), (label, seq, d)
                assert d["init"] == (blobs["init"].hex() if "init" in blobs else None), (label, seq, d)
                assert d["rest"] == " ".join(w for w in argv if w not in ("--code-file", "code", "--init-file",
                                                                          "init")), (label, d, argv)
            tsc[label] = [r["events"]["tsc"] for r in recs]
            bodies[label] = [b["code"] for _, b in sent]
            # The init block (never counted): R13's base (6 instructions, docs/cache.md), the
            # WBINVD (not with --no-wbinvd), the init sequence as nanoBench's rule has it.
            init_seq = opts[opts.index("--seq-init") + 1] if "--seq-init" in opts else ""
            want_init = nanobench(init_seq, sets, lfences, clear, SETS.get(level - 1), sets)[1]
            want_init["wbinvd"] += "--no-wbinvd" not in opts
            for _, b in sent:
                init = [t for _, _, t in decode(b["init"])]
                assert init[0].startswith("lea r13, [r14 - ") and init[4] == "div rcx", (label, init)
                assert kinds(init[6:]) == +want_init, (label, init)
            if label == "l1":
                # One window or two around the same two counted accesses: the same count.
                assert [counted(b["code"])[2] for _, b in sent] == [1, 2, 1, 1], label
                assert recs[1]["events"] == recs[3]["events"] == {"tsc": TICK * 2 * (25 + 2)}, recs
        # With and without the levels above cleared: other code, the same count.
        assert tsc["l2"] == tsc["l2-noclear"] == [TICK * 3 * (3 + 1), TICK * 2 * (3 + 1)], tsc
        assert all(len(a) > len(b) + 16 * 7 for a, b in zip(bodies["l2"], bodies["l2-noclear"])), bodies
        # Without --events the tool needs the level's load events, which QEMU's CPU lacks.
        rc = pmulab_cache.main(["seq", "--smp", "1", "--icount", "7", "--no-build", "--geometry", GEO, "A?"])
        out, err = capsys.readouterr()
        assert rc == 3 and "knows the per-level load events of Intel family 6" in err, (out, err)
    finally:
        monkeypatch.undo()
        status = agent.close()
    assert status == 0, agent.console[-20:]
    assert len(boots) == len(CASES) + 1
