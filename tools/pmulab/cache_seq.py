"""pmulab.cache_seq: nanoBench's cache access sequences turned into `pmulab run` user code
(tools/pmulab-cache; docs/cache.md "Access sequences").

A sequence is nanoBench cacheSeq's syntax: blocks separated by spaces, `A` an access that
is not counted, `A?` one whose hit or miss is counted, `A!` a CLFLUSH of the block,
`A_5` (with `?` or `!` after it as well) the block in set 5 instead of the chosen sets,
`<wbinvd>` a WBINVD. Every block is a line of its own in each of the chosen sets of the
chosen level (nanoBench's getAddresses: block i at i x way size + set x line size); for
levels 2 and 3 every access that is not a flush is preceded by accesses that clear the
levels above from the block's line (nanoBench's getClearHLAddresses: 2 x the ways of the
levels above, in other sets of the level). Everything but the `?` accesses lies between
pause/resume markers (docs/measure.md "Pausing the count"), and each address list is
preceded by LFENCEs as nanoBench's cacheLib does.

The harness keeps its state in a 4 KiB data page (src/measure/codegen.cpp): lines 0-3
(the start and end reads), 8 (registers around a marker) and 9 (the markers'
accumulators). They are touched while the sequence runs, so the sets whose index bits
below the page size equal those lines are refused (`harness_lines`).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .cache_policies import Element

MAX_BLOCK = 64 << 10  # pmulab takes at most 64 KiB per code block (docs/measure.md)
R14_MAX = 1 << 30     # run --r14-size's limit
R14_MIN = 1 << 20
HARNESS_LINES = (0, 1, 2, 3, 8, 9)  # lines of the harness's data page touched while code runs
PAGE_LINES = 64                     # 4 KiB / 64-byte lines
PAUSE = struct.pack("<Q", 0xF0B513B1C2813F04)
RESUME = struct.pack("<Q", 0xE0B513B1C2813F04)
LFENCE = bytes.fromhex("0faee8")
WBINVD = bytes.fromhex("0f09")
SYNTAX = "NAME, NAME? (counted), NAME! (CLFLUSH), NAME_SET (in that set), <wbinvd>"
_BLOCK = re.compile(r"^([A-Za-z0-9.]+)(?:_(\d+))?([?!]?)$")


class Usage(Exception):
    """Bad input: a message for the user, exit status 2, nothing run."""


class Unsupported(Exception):
    """The target cannot do it (a CPU without the events, no geometry): exit status 3."""


def parse_seq(text: str, what: str = "sequence") -> List[Element]:
    """The elements of a sequence in nanoBench's syntax; Usage on anything else."""
    out: List[Element] = []
    for word in text.split():
        if word == "<wbinvd>":
            out.append(("<wbinvd>", None, "wbinvd"))
            continue
        m = _BLOCK.match(word)
        if not m:
            raise Usage(f"{what}: unknown block syntax '{word[:40]}' (blocks: {SYNTAX}; nanoBench's cacheSeq)")
        kind = {"?": "measure", "!": "flush", "": "access"}[m.group(3)]
        out.append((m.group(1), int(m.group(2)) if m.group(2) is not None else None, kind))
    return out


def measured(seq: Sequence[Element]) -> int:
    return sum(1 for e in seq if e[2] == "measure")


def parse_sets(text: str) -> List[int]:
    """nanoBench's -sets: '0', '3,5', '4-7'; Usage on bad text."""
    sets: List[int] = []
    for part in text.split(","):
        a, dash, b = part.strip().partition("-")
        try:
            lo = int(a, 0)
            hi = int(b, 0) if dash else lo
        except ValueError:
            raise Usage(f"--sets: '{part.strip()}' is not a set number or range (e.g. 4, 4-7, 4,9)") from None
        if lo < 0 or hi < lo:
            raise Usage(f"--sets: '{part.strip()}' is not a set number or range (e.g. 4, 4-7, 4,9)")
        sets += [s for s in range(lo, hi + 1) if s not in sets]
    return sets


@dataclass
class Level:
    """One data or unified cache level: sets, ways, line size (bytes)."""
    level: int
    sets: int
    ways: int
    line: int = 64
    policy: str = ""  # the simulator's configured policy (never used to infer one)

    @property
    def way_size(self) -> int:
        return self.sets * self.line

    def describe(self) -> str:
        size = self.sets * self.ways * self.line
        unit = next((f"{size >> s} {u}" for u, s in (("MiB", 20), ("KiB", 10)) if size >= 1 << s and size % (1 << s) == 0),
                    f"{size} bytes")
        return f"L{self.level}: {unit}, {self.ways} ways, {self.sets} sets, {self.line}-byte lines"


Geometry = Dict[int, Level]


def harness_conflict(geo: Geometry, level: int, s: int) -> Optional[str]:
    """Why set `s` of `level` would share lines with the harness's data page (None: it
    does not): at every level the accesses pass through, the set's index bits below 4 KiB."""
    for x in range(1, level + 1):
        lv = geo[x]
        m = min(lv.sets, PAGE_LINES)
        if lv.sets % m == 0 and (s if x == level else s % lv.sets) % m in {k % m for k in HARNESS_LINES}:
            return (f"set {s} of L{level} shares L{x} set {s % lv.sets} with the harness's data page "
                    f"(its lines {', '.join(map(str, HARNESS_LINES))} of a 4 KiB page are touched while the code runs)")
    return None


def default_set(geo: Geometry, level: int) -> int:
    for s in range(geo[level].sets):
        if harness_conflict(geo, level, s) is None:
            return s
    raise Unsupported(f"L{level} has no set that the harness's data page leaves alone ({geo[level].sets} sets)")


@dataclass
class Layout:
    """Where the blocks of some sequences lie, relative to an area aligned to `align`."""
    geo: Geometry
    level: int
    sets: List[int]
    ids: Dict[str, int] = field(default_factory=dict)
    clear: List[int] = field(default_factory=list)
    align: int = 1
    used: List[int] = field(default_factory=list)

    def addresses(self, name: str, override: Optional[int]) -> List[int]:
        return [a for _, a in self.set_addresses(name, override)]

    def set_addresses(self, name: str, override: Optional[int]) -> List[Tuple[int, int]]:
        """(set, address) of the block in each of its sets, in the order they are accessed."""
        g = self.geo[self.level]
        way = self.ids.setdefault(name, len(self.ids))
        return [(s, (way * g.sets + s) * g.line) for s in ([override] if override is not None else self.sets)]

    @property
    def size(self) -> int:
        """Bytes of area the blocks and the clearing lines need past the alignment."""
        g = self.geo[self.level]
        top = max([(len(self.ids) * g.sets) * g.line, *(a + g.line for a in self.clear)])
        return top


def make_layout(geo: Geometry, level: int, sets: List[int], seqs: Sequence[Sequence[Element]],
                clear_hl: bool = True) -> Layout:
    """The blocks of `seqs` (block i of the first sequence that names it: way i) and the
    clearing lines; Usage where a set or a block does not fit the level."""
    if level not in geo:
        have = ", ".join(f"L{x}" for x in sorted(geo))
        raise Usage(f"--level {level}: the CPU has no level-{level} data cache (it has {have})")
    g = geo[level]
    overrides = sorted({s for seq in seqs for _, s, _ in seq if s is not None})
    for s in sets + overrides:
        if s >= g.sets:
            raise Usage(f"set {s}: L{level} has sets 0-{g.sets - 1}")
        why = harness_conflict(geo, level, s)
        if why:
            raise Usage(f"{why}; choose another set (--sets)")
    if set(overrides) & set(sets):
        raise Usage(f"a block's own set (_{overrides[0]}) must not also be in --sets (nanoBench's rule)")
    lay = Layout(geo, level, list(sets), used=sorted(set(sets) | set(overrides)))
    for seq in seqs:
        for name, _, kind in seq:
            if kind != "wbinvd":
                lay.ids.setdefault(name, len(lay.ids))
    if level > 1 and clear_hl:
        lay.clear = clear_addresses(geo, level, lay.used)
    lay.align = math.lcm(*(geo[x].way_size for x in range(1, level + 1)))
    return lay


def clear_addresses(geo: Geometry, level: int, used: List[int]) -> List[int]:
    """nanoBench's getClearHLAddresses (no slices): 2 x the ways of the levels above, per
    set of the level above that the used sets fall in, in sets of `level` not used."""
    g, hl = geo[level], geo[level - 1]
    n = 2 * sum(geo[x].ways for x in range(1, level))
    if any(g.sets <= geo[x].sets for x in range(1, level)):
        raise Usage(f"--level {level}: clearing the levels above needs more L{level} sets than they have "
                    "(give --no-clear-hl)")
    out: List[int] = []
    for hl_set in sorted({s % hl.sets for s in used}):
        free = {cs for cs in range(hl_set, g.sets, hl.sets) if cs not in used}
        if not free:
            raise Usage(f"no L{level} set is left to clear L{level - 1} set {hl_set} with (fewer --sets)")
        got = 0
        k = hl_set
        while got < n:
            if k % g.sets in free:
                out.append(k * g.line)
                got += 1
            k += hl.sets
    return out


def code_set(lay: Layout) -> int:
    """nanoBench's findCacheSetForCode, over what a 4 KiB-aligned code page controls: the
    sets' residues modulo the lines of a page. The code starts one past the used residue
    that the largest gap follows (0 when no gap is wider than 1)."""
    m = PAGE_LINES * 64 // lay.geo[lay.level].line
    used = sorted({s % m for s in lay.used})
    best, widest = 0, 1
    for a, b in zip(used, used[1:] + [used[0] + m]):
        if b - a > widest:
            best, widest = (a + 1) % m, b - a
    return best


def parse_code_set(text: str) -> Optional[int]:
    """--code-set: 'auto' (None: code_set decides) or a line of the page, 0-63."""
    if text == "auto":
        return None
    if not text.isdigit() or int(text) >= PAGE_LINES:
        raise Usage(f"--code-set {text}: give auto or a set (a line of the code's 4 KiB page) from 0 to "
                    f"{PAGE_LINES - 1}")
    return int(text)


def area_size(lay: Layout) -> int:
    """run --r14-size for a layout: the blocks plus the worst alignment, a power of two
    from 1 MiB; Usage beyond 1 GiB."""
    need = lay.size + lay.align
    if need > R14_MAX:
        raise Usage(f"{len(lay.ids)} blocks of L{lay.level} (way size {lay.geo[lay.level].way_size} bytes) need "
                    f"{need >> 20} MiB of memory; pmulab's R14 area holds at most 1 GiB (fewer blocks or a lower level)")
    size = R14_MIN
    while size < need:
        size *= 2
    return size


@dataclass
class Code:
    body: bytes
    init: bytes
    asm: List[str]       # the body as assembly text, one statement per entry
    init_asm: List[str]
    pairs: int           # pause/resume pairs in the body
    wbinvd: bool = False  # the body has a WBINVD


class _Emitter:
    def __init__(self, disp0: int, lfences: int) -> None:
        self.disp0, self.lfences = disp0, lfences
        self.code = bytearray()
        self.asm: List[str] = []

    def lfence(self) -> None:
        self.code += LFENCE * self.lfences
        if self.lfences:
            self.asm.append(f"{self.lfences}*|lfence|")

    def _mem(self, prefix: bytes, modrm: int, mnemonic: str, addr: int) -> None:
        """[r13 + disp]: disp8 (ModRM.mod 01) where it fits, as assemblers choose (mod 00
        with R13 would be RIP-relative), else disp32 (mod 10)."""
        if addr < 0x80:
            self.code += prefix + bytes([0x40 | modrm]) + struct.pack("<b", addr)
        else:
            self.code += prefix + bytes([0x80 | modrm]) + struct.pack("<i", addr)
        self.asm.append(f"{mnemonic} [r13 + {addr:#x}]")

    def load(self, addr: int) -> None:
        self._mem(bytes.fromhex("498b"), 0x0D, "mov rcx, qword ptr", addr)  # mov rcx, [r13 + disp]

    def flush(self, addr: int) -> None:
        self._mem(bytes.fromhex("410fae"), 0x3D, "clflush byte ptr", addr)  # clflush [r13 + disp] (0F AE /7)

    def base(self, size: int, align: int) -> None:
        """R13 := the first address of R14's area (R14 = its start + size / 2) that is a
        multiple of `align`: the blocks' addresses are R13-relative."""
        disp = align - 1 - size // 2
        self.raw(bytes.fromhex("4d8dae") + struct.pack("<i", disp), f"lea r13, [r14 - {-disp:#x}]")
        self.raw(bytes.fromhex("4c89e8"), "mov rax, r13")
        self.raw(bytes.fromhex("31d2"), "xor edx, edx")
        self.raw(bytes.fromhex("48c7c1") + struct.pack("<i", align), f"mov rcx, {align:#x}")
        self.raw(bytes.fromhex("48f7f1"), "div rcx")
        self.raw(bytes.fromhex("4929d5"), "sub r13, rdx")

    def raw(self, data: bytes, text: str) -> None:
        self.code += data
        self.asm.append(text)


def counted_lists(lay: Layout, name: str, override: Optional[int], kind: str,
                  count_sets: Optional[Sequence[int]]) -> List[Tuple[List[int], bool, str]]:
    """The address lists of one block access: (addresses, excluded, kind). A `?` access
    whose sets are not all in `count_sets` (--per-set: one set counted at a time) is split
    into runs of counted and excluded loads, in the same order, so the caches see the same
    accesses whichever sets are counted."""
    pairs = lay.set_addresses(name, override)
    if kind != "measure" or count_sets is None:
        return [([a for _, a in pairs], kind != "measure", kind)]
    out: List[Tuple[List[int], bool, str]] = []
    for s, a in pairs:
        excluded = s not in count_sets
        if out and out[-1][1] == excluded:
            out[-1][0].append(a)
        else:
            out.append(([a], excluded, "measure"))
    return out


def gen_code(lay: Layout, seq: Sequence[Element], init: Sequence[Element], size: int,
             wbinvd: bool = True, lfences: int = 25, count_sets: Optional[Sequence[int]] = None) -> Code:
    """The body and init block of one sequence (nanoBench's getCodeForAddressLists) in
    R14's area of `size` bytes; init sets R13 to the aligned base first. `count_sets`:
    only the `?` loads in these sets are counted (the others lie between pause/resume
    markers), for the counts per set."""
    parts = []
    pairs = 0
    for elems, is_init in ((init, True), (seq, False)):
        e = _Emitter(0, lfences)
        if is_init:
            e.base(size, lay.align)
        if is_init and wbinvd:
            e.raw(WBINVD, "wbinvd")
        counting = True
        for name, override, kind in elems:
            lists: List[Tuple[List[int], bool, str]] = []
            if kind == "wbinvd":
                lists.append(([], True, "wbinvd"))
            else:
                if lay.clear and kind != "flush":
                    lists.append((lay.clear, True, "load"))
                lists += counted_lists(lay, name, override, kind, None if is_init else count_sets)
            for addrs, exclude, what in lists:
                if not is_init and exclude and counting:
                    e.raw(PAUSE, "pause_counting")
                    counting = False
                    pairs += 1
                elif not is_init and not exclude and not counting:
                    e.raw(RESUME, "resume_counting")
                    counting = True
                if what == "wbinvd":
                    e.raw(WBINVD, "wbinvd")
                    continue
                e.lfence()
                for a in addrs:
                    (e.flush if what == "flush" else e.load)(a)
        if not is_init and not counting:
            e.raw(RESUME, "resume_counting")
        parts.append(e)
    init_e, body_e = parts
    if not body_e.code:
        raise Usage("the sequence is empty")
    for e, what in ((body_e, "the sequence"), (init_e, "the init sequence")):
        if len(e.code) > MAX_BLOCK:
            raise Usage(f"{what} needs {len(e.code)} bytes of code; pmulab takes {MAX_BLOCK} per block "
                        "(fewer sets, a shorter sequence, or fewer --lfences)")
    return Code(bytes(body_e.code), bytes(init_e.code), body_e.asm, init_e.asm, pairs,
                any(k == "wbinvd" for _, _, k in seq))


# The load events of each level: (hit spec, miss spec) per vendor, nanoBench's getEventConfig
# in pmulab's event syntax. AMD's L1 hits are the loads (ls_dispatch.ld_dispatch) less the
# L1 misses (ls_refills_from_sys / ls_dmnd_fills_from_sys: every fill source).
INTEL_EVENTS = {1: ("D1.01 L1_HIT", "D1.08 L1_MISS"), 2: ("D1.02 L2_HIT", "D1.10 L2_MISS"),
                3: ("D1.04 L3_HIT", "D1.20 L3_MISS")}
AMD_EVENTS = {1: ("029.01 L1_LOADS", "043.FF L1_MISS"), 2: ("064.F0 L2_HIT", "064.08 L2_MISS"),
              3: ("043.02 L3_HIT", "043.48 L3_MISS")}
# The first counter read by a resume marker also sees the marker's load of its accumulator
# (docs/cache.md "Access sequences"); after a <wbinvd> that load misses. A first event that
# is not a load event takes it.
PAD_INTEL, PAD_AMD = "C0.00 PAD", "0C0.00 PAD"


def level_events(vendor: str, family: int, level: int) -> List[str]:
    """[pad, hit or loads, miss] event specs for a level; Unsupported for other CPUs."""
    if vendor == "GenuineIntel" and family == 6:
        return [PAD_INTEL, *INTEL_EVENTS[level]]
    if vendor in ("AuthenticAMD", "HygonGenuine") and family >= 0x17:
        return [PAD_AMD, *AMD_EVENTS[level]]
    raise Unsupported(f"pmulab-cache knows the per-level load events of Intel family 6 and AMD family 17h and "
                      f"later; this CPU is {vendor} family {family:#x}")
