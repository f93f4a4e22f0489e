"""pmulab.cache_evset: `pmulab-cache evset`, a minimal eviction set for a line of R14's
area found by measurement alone (docs/cache.md "L3 slices and eviction sets").

Candidates are the lines at the target's offset + k x the L3's way size (sets x line, from
CPUID; k = 1 .. n): each of them is in the target's set in every slice, and in the
target's slice or not as the (unknown) slice hash has it. An eviction test is one
sequence on the target, `X C1 .. Cm X?` at level 3 (with the levels above cleared before
every access, as the sequences do): X misses in the L3 when C1 .. Cm evict it. The set of
candidates is then reduced by group testing (Vila, Koepf and Morales, "Theory and Practice
of Finding Eviction Sets", IEEE S&P 2019, Algorithm 2): split it into ways + 1 groups,
drop a group whose removal still evicts X, until ways lines are left (each reduction step
tests its groups in one batch of requests). No slice hash and no uncore counter is used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import client as pmulab_client
from .cache_seq import (R14_MAX, R14_MIN, Layout, Level, Usage, clear_addresses, gen_code, harness_conflict,
                        parse_seq)
from .cache_slices import SliceTarget
from .cache_target import TargetError

GROWTH_LIMIT = 1024  # candidates, at most (the code of one test stays below pmulab's 64 KiB)


@dataclass
class LineLayout(Layout):
    """Blocks at explicit R13-relative offsets (block name -> offset)."""
    at: Dict[str, int] = field(default_factory=dict)

    def set_addresses(self, name: str, override: Optional[int]) -> List[Tuple[int, int]]:
        return [(self.sets[0], self.at[name])]

    @property
    def size(self) -> int:
        line = self.geo[self.level].line
        return max([a + line for a in self.at.values()] + [a + line for a in self.clear])


def parse_target(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise Usage(f"'{text}': give the line as an offset in R14's area or a physical address (0x... or decimal)") \
            from None
    if v < 0:
        raise Usage(f"'{text}': a negative address")
    return v


def clearing_slices(t: SliceTarget) -> int:
    """The slice count the clearing lines must allow for: the C-Boxes where the target
    has them, else the most (a power of two, at most 8) that leaves an L3 slice more sets
    than the L2 has (clearing lines share the L2 set and no L3 set of the target)."""
    boxes = t.slices.probe()
    if boxes >= 2:
        return boxes
    l2, l3 = t.geo[2], t.geo[3]
    p = 8
    while p > 1 and l3.sets // p <= l2.sets:
        p //= 2
    return p


class Evset:
    def __init__(self, t: SliceTarget, args: Any) -> None:
        self.t, self.args = t, args
        g = t.geo
        if 3 not in g or 2 not in g:
            have = ", ".join(f"L{x}" for x in sorted(g))
            raise Usage(f"--level 3: the CPU has no level-3 data cache behind an L2 (it has {have})")
        self.l3 = g[3]
        self.ways = getattr(args, "assoc", None) or self.l3.ways
        self.stride = self.l3.sets * self.l3.line  # same set in every slice
        p = clearing_slices(t)
        self.geo = dict(g)
        self.geo[3] = Level(3, self.l3.sets // p, self.l3.ways, self.l3.line, self.l3.policy)
        self.tests = 0
        self.base: Optional[int] = None  # R13: the physical address of offset 0
        self.track_r14 = False  # every run in the same area (t.slices checks it)

    def layout(self, x: int, n: int) -> LineLayout:
        s = (x // self.l3.line) % self.geo[3].sets
        why = harness_conflict(self.geo, 3, s)
        if why:
            raise Usage(f"offset {x:#x}: {why}; choose another line")
        clear = clear_addresses(self.geo, 3, [s]) if not self.args.no_clear_hl else []
        at = {"X": x, **{f"C{k}": x + k * self.stride for k in range(1, n + 1)}}
        return LineLayout(self.geo, 3, [s], {}, clear, self.stride, [s], at)

    def area(self, lay: LineLayout) -> int:
        need = lay.size + lay.align
        if need > R14_MAX:
            raise Usage(f"{len(lay.at) - 1} candidates {self.stride} bytes apart need {need >> 20} MiB; pmulab's R14 "
                        "area holds at most 1 GiB (fewer --candidates)")
        size = R14_MIN
        while size < need:
            size *= 2
        return size

    def run(self, lay: LineLayout, size: int, groups: List[List[int]], x: str = "X") -> List[bool]:
        """Whether each candidate list evicts x (one request each, several in flight)."""
        return self.run_tests(lay, size, [(x, g) for g in groups])

    def run_tests(self, lay: LineLayout, size: int, tests: List[Tuple[str, List[int]]]) -> List[bool]:
        """Whether each (line, candidate list) evicts the line."""
        seqs, lines = [], []
        for x, g in tests:
            text = f"{x} " + " ".join(f"C{k}" for k in g) + f" {x}?"
            seq = (text, parse_seq(text))
            code = gen_code(lay, seq[1], [], size, wbinvd=True, lfences=self.args.lfences)
            seqs.append(seq)
            lines.append(self.t.argv(code, 3, size, self.args.reps))
        out = []
        assert self.t.agent is not None
        try:
            for i, ans in self.t.agent.batch(lines):
                r = self.t._result(ans, seqs[i], 3, lay.sets[:1], size)  # one line per block
                if self.track_r14:
                    self.t.slices._note_r14(ans.results)
                for rec in ans.results:
                    self.base = -(-int(rec["r14"]) // lay.align) * lay.align
                out.append(r.misses > r.hits)
        except (pmulab_client.AgentError, TimeoutError, OSError) as e:
            raise TargetError(f"lost the target: {e}") from None
        self.tests += len(tests)
        return out

    def find(self, x: int, n: int = 0) -> Tuple[List[int], int, LineLayout]:
        """(the eviction set's candidate numbers, candidates tried, layout)."""
        n = n or getattr(self.args, "candidates", None) or 8 * self.ways
        while True:
            lay = self.layout(x, n)
            size = self.area(lay)
            if self.run(lay, size, [list(range(1, n + 1))])[0]:
                break
            if 2 * n > GROWTH_LIMIT:
                raise TargetError(f"{n} candidates do not evict the line at offset {x:#x} from the L3 (a policy "
                                  "that keeps it, noise, or more ways than --assoc says)")
            n *= 2
            if self.track_r14:  # a larger area: it may lie elsewhere
                self.t.slices.r14 = None
        return self.reduce(lay, self.area(lay), "X", list(range(1, n + 1))), n, lay

    def reduce(self, lay: LineLayout, size: int, x: str, s: List[int]) -> List[int]:
        """Group testing (Vila et al. 2019, Algorithm 2): s, which evicts x, down to the ways."""
        while len(s) > self.ways:
            k = self.ways + 1
            groups = [s[i * len(s) // k:(i + 1) * len(s) // k] for i in range(k)]
            rest = [[c for c in s if c not in set(g)] for g in groups if g]
            evicts = self.run(lay, size, rest, x)
            if not any(evicts):
                raise TargetError(f"no group of {len(s)} evicting lines could be left out (noise? more --reps)")
            s = rest[evicts.index(True)]
        return s

    def classes(self, x: int, n: int, upto: int) -> Tuple[List[List[int]], LineLayout, int]:
        """The lines X, C1 .. Cn in classes of lines that evict each other (one per slice, in
        the order found: class 0 holds X), up to class `upto`; each a list of candidate
        numbers (0: X)."""
        members, n, lay = self.find(x, n)
        size = self.area(lay)
        out: List[List[int]] = []
        left = list(range(n + 1))
        ev = members
        while True:
            head = left[0]
            if out:  # a new class: its own eviction set, from the other lines left
                ev = self.reduce(lay, size, f"C{head}", [c for c in left if c != head])
            rest = [c for c in left if c != head and c not in ev]
            tests = self.run_tests(lay, size, [("X" if c == 0 else f"C{c}", ev) for c in rest])
            cls = sorted({head, *ev, *(c for c, t in zip(rest, tests) if t)})
            out.append(cls)
            left = [c for c in left if c not in cls]
            if len(out) > upto or not left:
                return out, lay, size


def cmd_evset(t: SliceTarget, args: Any) -> int:
    if args.level != 3:
        raise Usage(f"--level {args.level}: evset builds eviction sets of the L3 (--level 3)")
    e = Evset(t, args)
    v = parse_target(args.line)
    x = v
    if v >= R14_MAX:  # a physical address: where offset 0 lies, from a first run
        probe = e.layout(0, 1)
        e.run(probe, e.area(e.layout(0, args.candidates or 8 * e.ways)), [[1]])
        assert e.base is not None
        x = v - e.base
        if not 0 <= x < e.stride:
            raise Usage(f"physical address {v:#x} is not in the first {e.stride} bytes of R14's area (at "
                        f"{e.base:#x}); give an offset there")
    members, n, lay = e.find(x)
    base = e.base or 0
    if v != x and base + x != v:
        raise TargetError(f"R14's area moved (to {base:#x}) while the candidates grew: give the offset {x:#x}")
    rows = [{"offset": lay.at[f"C{k}"], "physical": base + lay.at[f"C{k}"]} for k in members]
    if args.json:
        print(json.dumps({"level": 3, "target": {"offset": x, "physical": base + x}, "ways": e.ways,
                          "evset": rows, "candidates": n, "tests": e.tests}))
        return 0
    print(f"eviction set of the line at offset {x:#x} (physical {base + x:#x}): {len(rows)} lines "
          f"(L3: {e.ways} ways), from {n} candidates {e.stride:#x} apart in {e.tests} tests")
    for r in rows:
        print(f"  offset {r['offset']:#x}  physical {r['physical']:#x}")
    return 0
