"""pmulab.cache_slices: L3 slices for tools/pmulab-cache (docs/cache.md "L3 slices and
eviction sets").

On a sliced L3 (Intel's client parts: one slice per core, the slice a hash of the physical
address) the sets of level 3 are those of one slice: `seq --level 3 --slice N` (default
slice 0, as nanoBench's -slice) puts every block in a line of the chosen set *and* slice.
Which slice a line is in comes from the target: `pmulab run --cbox-lookups` (the C-Box
lookup counters of the client uncore; src/pmu/cbox.h) tells it per line, for candidate
lines (set + k x the slice's way size, k = 0, 1, ...) in R14's area, whose R13-based
offsets the sequence then uses. The lookups and the sequence run in one agent session
with the same R14 area (its physical address is checked to be the same), so that the
slices found hold for the sequence.

Where the target has no C-Boxes, `--slice N` groups the candidate lines of the set by
eviction sets (cache_evset.py: lines that evict each other share a slice) and takes the
N-th group in the order found (group 0 holds the set's first line): the hash's slice
numbers are not known then. A target whose L3 is not sliced at all has one group.

On AMD the same record comes from the L3 PMU (src/pmu/amd_l3.h, `"unit":"l3"`): the slices
of the measuring CPU's L3 complex, counted in rounds where they outnumber its 6 counters
(8 slices per CCD from family 19h on); the lookups then repeat once per round (--reps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import client as pmulab_client
from .cache_policies import Element
from .cache_seq import (R14_MAX, Layout, Level, Unsupported, Usage, _Emitter, area_size, make_layout)
from .cache_target import Record, Target, TargetError

LOOKUP_COPIES = 4   # CLFLUSH + load pairs per run of a lookup
LOOKUP_CHUNK = 48   # candidate lines per run request (one --code each)
MFENCE = bytes.fromhex("0faef0")


@dataclass
class SliceLayout(Layout):
    """A layout whose blocks are candidate lines of one slice: offsets[set][block id]."""
    offsets: Dict[int, List[int]] = field(default_factory=dict)
    top: int = 0  # the end of the candidate lines looked up (the area they need)

    def set_addresses(self, name: str, override: Optional[int]) -> List[Tuple[int, int]]:
        way = self.ids.setdefault(name, len(self.ids))
        return [(s, self.offsets[s][way]) for s in ([override] if override is not None else self.sets)]

    @property
    def size(self) -> int:
        return max([self.top, *(a + self.geo[self.level].line for a in self.clear)])


def lookup_code(offset: int, size: int, align: int) -> Tuple[bytes, bytes]:
    """(body, init): R13 as the sequences set it; the body flushes the line at R13 +
    offset and loads it (the load misses every level: one L3 lookup in its slice)."""
    init = _Emitter(0, 0)
    init.base(size, align)
    body = _Emitter(0, 0)
    body.flush(offset)
    body.raw(MFENCE, "mfence")
    body.load(offset)
    return bytes(body.code), bytes(init.code)


class Slices:
    """The slice of lines of R14's area, looked up on a target with C-Boxes."""

    def __init__(self, target: Target) -> None:
        self.t = target
        self.boxes: Optional[int] = None  # None: not probed; 0: no C-Box lookups
        self.rounds = 1                    # the target's rounds over the slices (AMD's L3 PMU)
        self.unit = "cbox"                 # "l3": AMD's L3 PMU
        self.why = ""
        self.r14: Optional[int] = None     # the area's start when the lookups ran
        self.size = 0

    def _argv(self, codes: Sequence[Tuple[int, bytes]], init: bytes, size: int
              ) -> Tuple[List[str], Dict[str, bytes]]:
        argv = ["run", "--events", "tsc", "--cbox-lookups", "--basic", "--unroll", str(LOOKUP_COPIES),
                "--loop", "1", "--reps", str(self.rounds), "--warmup", "1", "--r14-size", str(size), "--init", init.hex(),
                *self.t._cpu()]
        for off, body in codes:
            argv += ["--code", body.hex(), "--name", f"{off:#x}"]
        return argv, {}

    def probe(self) -> int:
        """The C-Boxes of the target (0 where it has none; self.why says why)."""
        if self.boxes is None:
            body, init = lookup_code(0, 1 << 20, 64)
            argv, blobs = self._argv([(0, body)], init, 1 << 20)
            assert self.t.agent is not None
            try:
                ans = self.t.agent.request(argv, blobs)
            except (pmulab_client.AgentError, TimeoutError, OSError) as e:
                raise TargetError(f"lost the target: {e}") from None
            recs = ans.of_type("cbox_lookups")
            if ans.status == 0 and recs:
                self.boxes = int(recs[0]["boxes"])
                self.rounds = int(recs[0].get("rounds", 1))
                self.unit = str(recs[0].get("unit", "cbox"))
            else:
                self.boxes = 0
                self.why = "; ".join(str(r.get("message")) for r in ans.errors) or f"status {ans.status}"
        return self.boxes

    def lookup(self, offsets: List[int], size: int, align: int) -> Dict[int, int]:
        """{offset: slice} for lines of the area of `size` bytes (R13-relative offsets)."""
        out: Dict[int, int] = {}
        lines = []
        self.r14 = None
        for at in range(0, len(offsets), LOOKUP_CHUNK):
            chunk = offsets[at:at + LOOKUP_CHUNK]
            codes = [(o, lookup_code(o, size, align)[0]) for o in chunk]
            lines.append(self._argv(codes, lookup_code(0, size, align)[1], size))
        assert self.t.agent is not None
        try:
            for _, ans in self.t.agent.batch(lines):
                if ans.status != 0:
                    msgs = "; ".join(str(r.get("message")) for r in ans.errors) or f"status {ans.status}"
                    raise TargetError(f"pmulab: {msgs}", ans.status if ans.status in (2, 3) else 1)
                self._note_r14(ans.results)
                for r in ans.of_type("cbox_lookups"):
                    if r.get("slice") is None:
                        raise TargetError(f"no C-Box counted the lookups of line {r.get('bench')} "
                                          f"({r.get('lookups')})")
                    out[int(str(r["bench"]), 16)] = int(r["slice"])
        except (pmulab_client.AgentError, TimeoutError, OSError) as e:
            raise TargetError(f"lost the target: {e}") from None
        self.size = size
        return out

    def _note_r14(self, results: List[Record]) -> None:
        for r in results:
            if self.r14 is None:
                self.r14 = int(r["r14"])
            self.check_r14(int(r["r14"]))

    def check_r14(self, r14: int) -> None:
        if self.r14 is not None and r14 != self.r14:
            raise TargetError(f"R14's area moved between the slice lookups (at {self.r14:#x}) and this run (at "
                              f"{r14:#x}): the slices found do not hold for it; run again")


def slice_geometry(geo: Dict[int, Level], boxes: int) -> Dict[int, Level]:
    """The geometry with level 3 as one slice: sets / boxes sets."""
    g = dict(geo)
    l3 = geo[3]
    if l3.sets % boxes:
        raise Unsupported(f"L3's {l3.sets} sets do not split into the target's {boxes} C-Boxes")
    g[3] = Level(3, l3.sets // boxes, l3.ways, l3.line, l3.policy)
    return g


class SliceTarget(Target):
    """A Target whose level-3 blocks lie in one slice where the target has C-Boxes (and
    --slice N, default 0); elsewhere as Target does, and --slice is refused."""

    def __init__(self, args: Any, log: Any = None) -> None:
        super().__init__(args, log)
        self.slices = Slices(self)

    def sliced(self, level: int) -> bool:
        want = getattr(self.args, "slice", None)
        if want is not None and level != 3:
            raise Usage(f"--slice {want}: slices are those of the L3 (--level 3)")
        if want is not None and self.agent is None:
            raise Usage(f"--slice {want}: the slices are looked up on the target (not with --dry-run alone)")
        if level != 3 or self.agent is None or 3 not in self.geo:
            return False
        boxes = self.slices.probe()
        if want is not None and boxes >= 2 and not 0 <= want < boxes:
            per = "of the L3 complex, AMD's L3 PMU" if self.slices.unit == "l3" else "one per C-Box"
            raise Usage(f"--slice {want}: the L3 has slices 0-{boxes - 1} ({per})")
        return boxes >= 2 or want is not None  # without C-Boxes: by eviction sets

    def prepare(self, level: int, sets: List[int], seqs: Sequence[Sequence[Element]],
                init: Sequence[Element]) -> Tuple[Layout, int]:
        if not self.sliced(level):
            return super().prepare(level, sets, seqs, init)
        boxes = self.slices.boxes or 1
        if boxes < 2:
            return self.prepare_by_evsets(level, sets, seqs, init)
        want = getattr(self.args, "slice", None) or 0
        geo = slice_geometry(self.geo, boxes)
        base = make_layout(geo, level, sets, [init, *seqs], clear_hl=not self.args.no_clear_hl)
        lay = SliceLayout(geo, level, base.sets, dict(base.ids), base.clear, base.align, base.used)
        line, way = geo[3].line, geo[3].sets * geo[3].line
        need = max(len(base.ids), 1)
        k = 2 * boxes * need
        while True:
            lay.top = k * way
            if lay.top + lay.align > R14_MAX:
                raise Usage(f"{need} blocks in slice {want} of L3 need {k} candidate lines {way} bytes apart (one "
                            f"in {boxes} is in the slice): {(lay.top + lay.align) >> 20} MiB, more than pmulab's "
                            "1 GiB R14 area (fewer blocks)")
            size = area_size(lay)
            cands = {s: [i * way + s * line for i in range(k)] for s in lay.used}
            found = self.slices.lookup(sorted(o for c in cands.values() for o in c), size, lay.align)
            lay.offsets = {s: [o for o in c if found[o] == want] for s, c in cands.items()}
            if all(len(v) >= need for v in lay.offsets.values()):
                break
            k *= 2
        if self.log:
            print(f"pmulab-cache: L3 slice {want} of {boxes}: {geo[3].sets} sets per slice; blocks at "
                  + ", ".join(f"set {s}: " + " ".join(f"{o:#x}" for o in v[:need]) for s, v in lay.offsets.items()),
                  file=self.log, flush=True)
        return lay, size

    def prepare_by_evsets(self, level: int, sets: List[int], seqs: Sequence[Sequence[Element]],
                          init: Sequence[Element]) -> Tuple[Layout, int]:
        """--slice N without C-Boxes: the N-th class of mutually evicting lines of the set."""
        from .cache_evset import GROWTH_LIMIT, Evset
        want = int(self.args.slice)
        e = Evset(self, self.args)
        e.track_r14 = True
        self.slices.r14 = None
        base = make_layout(e.geo, level, sets, [init, *seqs], clear_hl=not self.args.no_clear_hl)
        if len(base.used) != 1:
            raise Usage(f"--slice {want} without C-Boxes (eviction sets): one set at a time (one --sets, no _SET "
                        "blocks)")
        s, need = base.used[0], max(len(base.ids), 1)
        n = min(GROWTH_LIMIT, max(getattr(self.args, "candidates", None) or 8 * e.ways, 4 * need * (want + 1)))
        found, lx, size = e.classes(s * e.l3.line, n, want)
        if len(found) <= want:
            raise Usage(f"--slice {want}: the lines of L3 set {s} tried fall into {len(found)} group(s) of lines "
                        "that evict each other (slices)")
        cls = [lx.at["X" if c == 0 else f"C{c}"] for c in found[want]]
        if len(cls) < need:
            raise Usage(f"--slice {want}: {len(cls)} lines of set {s} found in it, the sequences need {need} "
                        "(more --candidates)")
        lay = SliceLayout(e.geo, level, base.sets, dict(base.ids), base.clear, e.stride, base.used,
                          offsets={s: cls}, top=lx.size)
        self.slices.size = size
        if self.log:
            print(f"pmulab-cache: L3 slice group {want} of set {s} (by eviction sets, {e.tests} tests): "
                  + " ".join(f"{o:#x}" for o in cls[:need]), file=self.log, flush=True)
        return lay, size

    def _result(self, ans: pmulab_client.Answer, seq: Tuple[str, List[Element]], level: int, sets: List[int],
                size: int, count_sets: Optional[List[int]] = None) -> Any:
        if level == 3 and self.slices.r14 is not None and size == self.slices.size:
            for r in ans.results:
                self.slices.check_r14(int(r["r14"]))
        return super()._result(ans, seq, level, sets, size, count_sets)
