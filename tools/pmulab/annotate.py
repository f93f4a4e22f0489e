#!/usr/bin/env python3
"""pmulab-annotate: `perf annotate` for pmulab: the user's code, disassembled, with each
instruction's share of the samples of `pmulab run --sample EVENT[:PERIOD]` (docs/sampling.md).

  tools/pmulab-annotate FILE... --asm TEXT [--asm-init TEXT] [--asm-late-init TEXT] [--att]
  tools/pmulab-annotate FILE... --code HEX [--init HEX] [--late-init HEX]
  tools/pmulab-annotate FILE... --code-file BODY.bin [--init-file F] [--late-init-file F]
        [--cpu N] [--bench NAME] [--event EV]...

FILE: JSON Lines with pmulab's "samples" records: a results file, `run-qemu.sh --json`
or `pmulab-sim --json` output, pmulab-client's output, a pmulab-lab merged.jsonl; `-` is
stdin. The code is what `run` was given, with run's options: --asm TEXT (assembled here,
tools/pmulab/asm.py; --att for AT&T syntax, which the listing then uses too), --code HEX,
or raw bytes from a host file (--code-file), for the body and for each init block. The
records do not carry the code's bytes; where they carry its size and FNV-1a 64 hash (the
"result" records of the same code do), the code given must have them.

For each CPU of the records, each block (one-time-init, init, late-init, body) is
disassembled with llvm-objdump (Debian package llvm) and each instruction printed with
its share of the samples in the user's code (percent and count), one column per event;
above the listing, each event's period and its samples in the harness (pmulab's code
around the user's). Skid: a sample is charged to the next instruction to retire when the
PMI is taken, the instruction after the one that overflowed the counter (after a taken
branch, its target). Offsets are hexadecimal, as llvm-objdump prints them.

Exit status: 0; 1 llvm-objdump failed; 2 bad arguments, an input that cannot be read or is
not pmulab's records, no samples records (for --cpu/--bench/--event), code that does not
assemble or does not match the records (a bucket's offset that is not an instruction start,
a size or hash the records contradict), or no llvm-objdump.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from typing import Optional, Sequence

from . import asm as pmulab_asm
from .plot import InputError, Record, read_records

PROG = "pmulab-annotate"


@dataclass(frozen=True)
class Block:
    key: str        # the block's name in the samples records' buckets
    label: str      # its name in pmulab's text and in the listing
    code: str       # run's options that give it
    asm: str
    file: str
    size_field: str  # its size in a "result" record of user code


# In the order they run (src/measure/codegen.cpp).
BLOCKS = [
    Block("one_time_init", "one-time-init", "--one-time-init", "--asm-one-time-init", "--one-time-init-file",
          "one_time_init_bytes"),
    Block("init", "init", "--init", "--asm-init", "--init-file", "init_bytes"),
    Block("late_init", "late-init", "--late-init", "--asm-late-init", "--late-init-file", "late_init_bytes"),
    Block("body", "body", "--code", "--asm", "--code-file", "code_bytes"),
]
BLOCK_OF = {b.key: b for b in BLOCKS}
# pmulab's pause/resume markers (src/measure/measure.h), 8 bytes each, replaced in the body.
MARKERS = {0xF0B513B1C2813F04: "pause_counting", 0xE0B513B1C2813F04: "resume_counting"}
SKID = ("skid: a sample is charged to the next instruction to retire when the PMI is taken, the one after "
        "the instruction that overflowed the counter (after a taken branch, its target); PEBS would "
        "charge the instruction itself")


class AnnotateError(Exception):
    """A message for the user, with the exit status."""

    def __init__(self, msg: str, status: int = 2) -> None:
        super().__init__(msg)
        self.status = status


@dataclass(frozen=True)
class Insn:
    offset: int
    size: int
    text: str


def where(r: Record) -> str:
    """FILE:LINE of a record read_records read; else the agent's request id, where it has one."""
    lab = r.get("lab")
    if isinstance(lab, dict) and "source" in lab:
        return f"{lab['source']}:{lab.get('line', '?')}"
    return f"the {r.get('type')} record of request {r['id']}" if "id" in r else f"a {r.get('type')} record"


# ----- the code ---------------------------------------------------------------------

def parse_hex(opt: str, text: str) -> bytes:
    """Hex bytes as run's --code takes them (0x prefix, ' ', '_', ':' ignored)."""
    start = 2 if text[:2].lower() == "0x" else 0
    digits = []
    for i, c in enumerate(text[start:], start):
        if c in " _:":
            continue
        if c not in "0123456789abcdefABCDEF":
            raise AnnotateError(f"{opt}: '{c}' at position {i + 1} is not a hex digit "
                                "(machine code as hex bytes, e.g. 4801d8 for add rax, rbx)")
        digits.append(c)
    if len(digits) % 2:
        raise AnnotateError(f"{opt}: an odd number of hex digits (two per byte, e.g. 4801d8)")
    if not digits:
        raise AnnotateError(f"{opt}: empty code (give at least one byte, e.g. 90)")
    return bytes.fromhex("".join(digits))


def read_code_file(opt: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise AnnotateError(f"{opt} {path}: no such file")
    except OSError as e:
        raise AnnotateError(f"{opt} {path}: cannot read: {e.strerror}")
    if not data:
        raise AnnotateError(f"{opt} {path}: the file is empty")
    return data


def dest(opt: str) -> str:
    return opt[2:].replace("-", "_")


def code_of(args: argparse.Namespace) -> dict[str, bytes]:
    """The blocks given on the command line: {block key: bytes}, the body always."""
    code: dict[str, bytes] = {}
    for b in BLOCKS:
        given = [(o, getattr(args, dest(o))) for o in (b.asm, b.code, b.file) if getattr(args, dest(o)) is not None]
        if len(given) > 1:
            raise AnnotateError(f"{given[0][0]} and {given[1][0]}: give the {b.label} once")
        if not given:
            continue
        opt, value = given[0]
        if opt == b.asm:
            try:
                code[b.key] = pmulab_asm.assemble(value, args.att, opt)
            except pmulab_asm.AsmError as e:
                raise AnnotateError(str(e))
        elif opt == b.code:
            code[b.key] = parse_hex(opt, value)
        else:
            code[b.key] = read_code_file(opt, value)
    if "body" not in code:
        raise AnnotateError("the code the records were sampled from: give its body with --asm TEXT, --code HEX "
                            "or --code-file FILE (and its init blocks as run had them)")
    return code


def fnv1a64(data: bytes) -> int:
    """pmulab's hash of a code's body (src/measure/event_groups.cpp)."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def check_code(recs: list[Record], bench: str, code: dict[str, bytes]) -> None:
    """The code given against what the records of BENCH say of theirs (size, hash)."""
    for r in recs:
        if r.get("bench") != bench or "code_bytes" not in r:
            continue
        h = r.get("code_fnv1a64")
        if isinstance(h, str) and h.lower() != f"{fnv1a64(code['body']):016x}":
            raise AnnotateError(f"the code given is not the code of the records: {where(r)} says code '{bench}' "
                                f"has FNV-1a 64 {h}, the body given has {fnv1a64(code['body']):016x}")
        for b in BLOCKS:  # a block not given is not listed (and its samples are refused)
            want = r.get(b.size_field, 0)
            if b.key in code and isinstance(want, int) and want != len(code[b.key]):
                raise AnnotateError(f"the code given is not the code of the records: {where(r)} says code '{bench}' "
                                    f"has {want} bytes of {b.label}, the {b.label} given has "
                                    f"{len(code[b.key])} ({b.asm}, {b.code}, {b.file})")


# ----- disassembly ------------------------------------------------------------------

def find_objdump() -> str:
    """llvm-objdump ($PMULAB_OBJDUMP names another), or AnnotateError."""
    name = os.environ.get("PMULAB_OBJDUMP", "llvm-objdump")
    path = shutil.which(name)
    if not path:
        raise AnnotateError(f"{name} not found: install llvm-objdump (Debian package llvm; tools/install-deps.sh "
                            "does)")
    return path


def elf_object(code: bytes) -> bytes:
    """A minimal ELF64 x86-64 relocatable object whose .text is CODE (llvm-objdump reads no
    raw binaries): the header, .text, .shstrtab, and the section headers."""
    names = b"\0.text\0.shstrtab\0"
    names_at = 64 + len(code)
    headers_at = (names_at + len(names) + 7) & ~7
    ehdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack(
        "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, headers_at, 0, 64, 0, 0, 64, 3, 2)  # ET_REL, EM_X86_64
    text = struct.pack("<IIQQQQIIQQ", 1, 1, 6, 0, 64, len(code), 0, 0, 1, 0)  # PROGBITS, ALLOC|EXEC
    strtab = struct.pack("<IIQQQQIIQQ", 7, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)  # STRTAB
    data = ehdr + code + names
    return data + bytes(headers_at - len(data)) + bytes(64) + text + strtab


def segments(code: bytes) -> list[tuple[int, int, Optional[str]]]:
    """(start, end, marker name or None) covering CODE: the pause/resume markers, found as
    pmulab finds them (src/measure/codegen.cpp scan_markers), and the code between them."""
    out: list[tuple[int, int, Optional[str]]] = []
    start = i = 0
    while i + 8 <= len(code):
        name = MARKERS.get(int.from_bytes(code[i:i + 8], "little"))
        if name is None:
            i += 1
            continue
        if i > start:
            out.append((start, i, None))
        out.append((i, i + 8, name))
        start = i = i + 8
    if start < len(code):
        out.append((start, len(code), None))
    return out


LINE = re.compile(r"^\s*([0-9a-f]+):\s((?:[0-9a-f]{2} )+)\s*(.*)$")


def parse_objdump(text: str, label: str) -> list[Insn]:
    """The instructions of llvm-objdump -d's output, branch targets named after the block."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        insn = " ".join(p for p in m.group(3).split("\t") if p).strip()
        insn = re.sub(r"<\.text(\+0x[0-9a-f]+)?>", lambda t: f"<{label}{t.group(1) or ''}>", insn)
        out.append(Insn(int(m.group(1), 16), len(m.group(2).split()), insn))
    return out


def disassemble(code: bytes, label: str, att: bool, objdump: str) -> list[Insn]:
    """The instructions of one block, in order, each marker one pseudo-instruction."""
    insns: list[Insn] = []
    with tempfile.TemporaryDirectory(prefix="pmulab-annotate-") as td:
        obj = os.path.join(td, label + ".o")
        with open(obj, "wb") as f:
            f.write(elf_object(code))
        for start, end, marker in segments(code):
            if marker:
                insns.append(Insn(start, end - start, marker))
                continue
            cmd = [objdump, "-d", f"--x86-asm-syntax={'att' if att else 'intel'}",
                   f"--start-address={start}", f"--stop-address={end}", obj]
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
            got = parse_objdump(p.stdout, label)
            if p.returncode != 0 or sum(i.size for i in got) != end - start:
                why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[0]
                raise AnnotateError(f"llvm-objdump could not disassemble the {label} ({objdump}: {why})", 1)
            insns += got
    return insns


# ----- records ----------------------------------------------------------------------

Group = dict[str, Record]  # event -> its samples record, for one (CPU, bench)


@dataclass(frozen=True)
class Selection:
    """What to annotate of the records: --cpu, --bench, --event (None: all)."""
    cpu: Optional[int] = None
    bench: Optional[str] = None
    events: Optional[Sequence[str]] = None


def select(recs: list[Record], sel: Selection, source: str) -> tuple[str, dict[int, Group]]:
    """(bench, {cpu: {event: samples record}}) of the records SEL selects."""
    samples = [r for r in recs if r.get("type") == "samples"]
    if not samples:
        raise AnnotateError(f"no samples records in {source} (pmulab run --sample EVENT --json writes them)")
    for opt, key, want in (("--cpu", "cpu", sel.cpu), ("--bench", "bench", sel.bench)):
        if want is not None:
            have = sorted({str(r.get(key, 0 if key == "cpu" else "?")) for r in samples})
            samples = [r for r in samples if r.get(key, 0 if key == "cpu" else None) == want]
            if not samples:
                raise AnnotateError(f"{opt} {want}: no samples records (they have {key} {', '.join(have)})")
    if sel.events:
        have = sorted({str(r.get("event")) for r in samples})
        samples = [r for r in samples if r.get("event") in sel.events]
        if not samples:
            raise AnnotateError(f"--event {', '.join(sel.events)}: no samples records (they have events "
                                f"{', '.join(have)})")
    benches = sorted({str(r.get("bench", "?")) for r in samples})
    if len(benches) > 1:
        raise AnnotateError(f"the records are of several codes ({', '.join(benches)}): choose the one given "
                            "with --bench NAME")
    groups: dict[int, Group] = {}
    for r in samples:
        g = groups.setdefault(int(r.get("cpu", 0)), {})
        ev = str(r.get("event", "?"))
        if ev in g:
            raise AnnotateError(f"two samples records for CPU {r.get('cpu', 0)}, event '{ev}' ({where(g[ev])} and "
                                f"{where(r)}): give one run's records")
        g[ev] = r
    if sel.events:
        groups = {c: {e: g[e] for e in sel.events if e in g} for c, g in groups.items()}
    return benches[0], dict(sorted(groups.items()))


def counts_of(r: Record, code: dict[str, bytes], insns: dict[str, list[Insn]]) -> dict[tuple[str, int], int]:
    """{(block, offset): samples} of one record, every bucket checked against the code."""
    out: dict[tuple[str, int], int] = {}
    what = f"{where(r)} (CPU {r.get('cpu', 0)}, event '{r.get('event')}')"
    for bucket in r.get("buckets", []):
        key, off = bucket["block"].replace("-", "_"), bucket["offset"]
        b = BLOCK_OF.get(key)
        if b is None:
            raise AnnotateError(f"{what}: a bucket in block '{bucket['block']}', which is none of "
                                f"{', '.join(x.key for x in BLOCKS)}")
        if key not in code:
            raise AnnotateError(f"{what}: samples in the {b.label}, but no {b.label} was given ({b.asm}, {b.code} "
                                f"or {b.file}, as run had it)")
        starts = [i.offset for i in insns[key]]
        if off >= len(code[key]) or off not in starts:
            near = [s for s in starts if s < off][-1:] + [s for s in starts if s > off][:1]
            place = (f"past its end ({len(code[key])} bytes)" if off >= len(code[key]) else
                     "not an instruction start (the instructions around it start at "
                     f"{' and '.join(f'{s} (0x{s:x})' for s in near)})")
            raise AnnotateError(f"{what}: the code does not match the records: {b.label} offset {off} (0x{off:x}) "
                                f"is {place}")
        out[(key, off)] = out.get((key, off), 0) + bucket["count"]
    return out


# ----- the listing ------------------------------------------------------------------

def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "-"


def header(cpu: int, bench: str, group: Group, code: dict[str, bytes],
           counts: dict[str, dict[tuple[str, int], int]]) -> list[str]:
    sizes = ", ".join(f"{b.label} {len(code[b.key])} bytes" for b in BLOCKS if b.key in code)
    lines = [f"CPU {cpu}, code '{bench}' ({sizes})"]
    for ev, r in group.items():
        in_code, harness = sum(counts[ev].values()), int(r.get("harness", 0))
        total = int(r.get("samples", in_code + harness))
        lines.append(f"  {ev}: period {r.get('period', '?')}, {total} samples: {in_code} in the code, "
                     f"{harness} in the harness ({percent(harness, in_code + harness)})")
        if total != in_code + harness:
            lines.append(f"    (the record's samples {total} are not its buckets' {in_code} plus its harness {harness})")
    return lines


def listing(cpu: int, bench: str, group: Group, code: dict[str, bytes], insns: dict[str, list[Insn]]) -> list[str]:
    """One CPU's annotated listing, as perf annotate prints one: percent and samples per
    event, of the samples in the user's code."""
    counts = {ev: counts_of(r, code, insns) for ev, r in group.items()}
    widths = {ev: max(18, len(ev) + 2) for ev in group}
    lines = header(cpu, bench, group, code, counts) + [""]
    lines.append("".join(f"{ev:>{widths[ev]}}" for ev in group))
    lines.append("".join(f"{'percent  samples':>{widths[ev]}}" for ev in group) + "  offset  instruction")
    for b in BLOCKS:
        if b.key not in code:
            continue
        lines.append(f"{b.label}:")
        for i in insns[b.key]:
            cols = ""
            for ev in group:
                c, whole = counts[ev].get((b.key, i.offset), 0), sum(counts[ev].values())
                cols += f"{100.0 * c / whole:>{widths[ev] - 9}.2f}{c:>9}" if c else " " * widths[ev]
            lines.append(f"{cols}  {i.offset:>6x}  {i.text}")
    return lines


def annotate(recs: list[Record], code: dict[str, bytes], sel: Selection = Selection(), att: bool = False,
             source: str = "the records") -> list[str]:
    """The listing's lines: the samples records among RECS (from read_records, or the
    records of a pmulab.client Answer) on CODE ({"body": bytes, "init": ..., ...}).
    AnnotateError with the message and exit status."""
    if "body" not in code:
        raise AnnotateError("the code has no body (give {'body': bytes, ...})")
    bench, groups = select(recs, sel, source)
    check_code(recs, bench, code)
    objdump = find_objdump()
    insns = {k: disassemble(v, BLOCK_OF[k].label, att, objdump) for k, v in code.items()}
    out: list[str] = []
    for cpu, group in groups.items():
        out += listing(cpu, bench, group, code, insns) + [""]
    return out + textwrap.wrap(SKID, 92)


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("files", nargs="+", metavar="FILE", help="pmulab's records (JSON Lines; - is stdin)")
    for b in [BLOCK_OF[k] for k in ("body", "init", "late_init", "one_time_init")]:
        ap.add_argument(b.asm, metavar="TEXT", help=f"the {b.label} as assembly text (run {b.asm})")
        ap.add_argument(b.code, metavar="HEX", help=f"the {b.label} as hex bytes (run {b.code})")
        ap.add_argument(b.file, metavar="FILE", help=f"the {b.label}: raw bytes from a file on this host")
    ap.add_argument("--att", action="store_true", help="AT&T syntax, for --asm* and for the listing")
    ap.add_argument("--cpu", type=int, metavar="N", help="only this CPU's samples")
    ap.add_argument("--bench", metavar="NAME", help="only this code's samples (its --name; default 'code')")
    ap.add_argument("--event", action="append", metavar="EV",
                    help="only this event's samples (repeatable: columns in this order)")
    args = ap.parse_args(argv)
    try:
        try:
            recs = read_records(args.files)
        except InputError as e:
            raise AnnotateError(str(e))
        lines = annotate(recs, code_of(args), Selection(args.cpu, args.bench, args.event), args.att,
                         ", ".join(args.files))
    except AnnotateError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.status
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def cli() -> None:
    """The command line entry point (tools/pmulab-annotate)."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
