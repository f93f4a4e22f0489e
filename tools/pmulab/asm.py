#!/usr/bin/env python3
"""pmulab_asm: assembles user code for `pmulab run --code` on the host.

  tools/pmulab-asm [--att] "add rax, rbx; imul rax, rbx"   -> prints the hex bytes
  tools/pmulab-asm --campaign IN OUT                       -> rewrites --asm in a campaign

Syntax (docs/nanobench.md): Intel syntax without prefixes by default (`--att` for AT&T);
statements are separated by ';' or newlines, as in nanoBench. Labels local to the
snippet work (`1: dec rcx; jnz 1b`, `loop: ...`). Shorthands:
  |n          (1 <= n <= 15) an n-byte NOP, the encodings the Intel SDM recommends
              (n >= 10: data16 prefixes before `cs nopw 0x0(%rax,%rax,1)`), one instruction
  N*|TEXT|    TEXT (statements without '|') repeated N times (1 <= N <= 100000)
  pause_counting, resume_counting
              pmulab's pause/resume markers (docs/measure.md "Pausing the count"):
              nanoBench's magic values, .quad 0xF0B513B1C2813F04 and
              .quad 0xE0B513B1C2813F04; pmulab replaces them in the body
The code must be position-independent straight-line text: anything that needs a
relocation (a symbol outside the snippet, an absolute address, `call foo`), a
section other than .text, or an alignment directive (whose padding would depend on
where pmulab places the code) is rejected, naming the statement.

`$` and `.` alone in an expression are the address of the statement (`jmp $`, `jmp .+2`),
as GNU as reads them (nanoBench assembles with GNU as); for llvm-mc, whose Intel syntax
has neither, they are written as a label at the statement.

Assembler: llvm-mc (Debian package llvm), else GNU as (binutils). Only the standard
library is used. Errors raise AsmError, whose message names the option, the
statement and the assembler's own message; the tools exit with status 2 (usage).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from typing import Any, Callable, Optional, Sequence

from .options import OptionsError, asm_options, group_options

# Recommended multi-byte NOPs (Intel SDM Vol. 2B, NOP: Table 4-12), extended to 15
# bytes with 0x66 prefixes before the 10-byte form, as GNU as and nanoBench do.
_NOP9 = [0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00]
NOPS = {
    1: [0x90],
    2: [0x66, 0x90],
    3: [0x0F, 0x1F, 0x00],
    4: [0x0F, 0x1F, 0x40, 0x00],
    5: [0x0F, 0x1F, 0x44, 0x00, 0x00],
    6: [0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00],
    7: [0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00],
    8: [0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    9: _NOP9,
}
for _n in range(10, 16):
    NOPS[_n] = [0x66] * (_n - 10) + [0x66, 0x2E, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00]

MAX_REPEAT = 100000
MAX_BYTES = 1 << 20  # what one copy may be; pmulab limits the generated code anyway
# Directives that only emit bytes at the current position (position-independent).
DATA_DIRECTIVES = {".byte", ".2byte", ".short", ".word", ".hword", ".value", ".long", ".4byte", ".int",
                   ".quad", ".8byte", ".fill", ".skip", ".space", ".zero", ".nops",
                   ".intel_syntax", ".att_syntax", ".code64"}
NAME_MAX = 63  # pmulab keeps labels of 1..63 characters (measure.h: char name[64])
STMT_SYM = "__pmulab_stmt_"


class AsmError(Exception):
    """A message for the user (the tools print it and exit with status 2)."""


def _expand_repeats(text):
    def rep(m):
        n = int(m.group(1))
        if not 1 <= n <= MAX_REPEAT:
            raise AsmError(f"'{m.group(0)[:40]}': the repetition count must be 1..{MAX_REPEAT}")
        body = m.group(2).strip()
        if not body:
            raise AsmError(f"'{m.group(0)}': nothing to repeat")
        return ";".join([body] * n)
    return re.sub(r"(\d+)\s*\*\s*\|([^|]*)\|", rep, text)


def split_statements(text: str) -> list[str]:
    """The user's statements, in order: ';' and newlines separate, repetitions expanded,
    empty statements dropped. A |n NOP is a statement of its own (it may also be written
    right after an instruction, as nanoBench allows: 'add rax, rbx|5')."""
    if not isinstance(text, str) or not text.strip():
        raise AsmError("no code (the text is empty)")
    if any(ord(c) >= 0x80 or (ord(c) < 0x20 and c not in "\t\n\r") for c in text):
        bad = next(c for c in text if ord(c) >= 0x80 or (ord(c) < 0x20 and c not in "\t\n\r"))
        raise AsmError(f"character {bad!r} (U+{ord(bad):04X}) is not allowed in assembly text (ASCII only)")
    text = _expand_repeats(text)
    text = re.sub(r"\|\s*(\d+)", lambda m: f";|{m.group(1)};", text)
    stmts = []
    for s in re.split(r"[;\n]", text):
        s = s.strip()
        if s:
            stmts.append(s)
    if not stmts:
        raise AsmError("no code (only separators)")
    return stmts


def _nop_statement(s, i):
    m = re.fullmatch(r"\|(\d+)", s)
    if not m:
        if "|" in s:
            raise AsmError(f"statement {i + 1} '{s}': '|' is only allowed as |n (an n-byte NOP, 1..15) or N*|TEXT|")
        return None
    n = int(m.group(1))
    if n not in NOPS:
        raise AsmError(f"statement {i + 1} '{s}': |n NOPs are 1..15 bytes long")
    return ".byte " + ",".join(f"0x{b:02x}" for b in NOPS[n])


# The pause/resume markers (src/measure/measure.h kPauseMarker, kResumeMarker).
MARKERS = {"pause_counting": ".quad 0xF0B513B1C2813F04", "resume_counting": ".quad 0xE0B513B1C2813F04"}


def _marker_statement(s):
    return MARKERS.get(s.strip().lower())


def _check_directive(s, i):
    word = s.split(None, 1)[0].lower()
    if word.startswith(".") and not word.endswith(":") and word not in DATA_DIRECTIVES:
        raise AsmError(f"statement {i + 1} '{s}': directive {word} is not allowed (only data directives such as "
                       ".byte/.long/.quad/.fill: the code must be position-independent straight .text)")


def find_assembler() -> tuple[str, str]:
    """('llvm-mc', path) or ('as', path); AsmError when neither is installed."""
    forced = os.environ.get("PMULAB_ASSEMBLER")  # llvm-mc or as (tests use it)
    for kind in ([forced] if forced else ["llvm-mc", "as"]):
        path = shutil.which(kind)
        if path:
            return kind, path
    raise AsmError("no assembler found: install llvm-mc (Debian package llvm) or GNU as (binutils); "
                   "tools/install-deps.sh does")


# `$` or `.` standing alone in an expression: the address of the current statement, in
# GNU as's Intel syntax (what nanoBench assembles with); llvm-mc's Intel parser knows neither.
_HERE = re.compile(r"(?<![\w.$])[$.](?![\w.$])")


def _here_as_label(stmt, label):
    """STMT with each stand-alone `$`/`.` (outside quotes) written as LABEL, the
    statement's own address, so that llvm-mc reads what GNU as reads: `jmp $`, `jmp .+2`."""
    parts = re.split(r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')", stmt)
    return "".join(p if k % 2 else _HERE.sub(label, p) for k, p in enumerate(parts))


def _run_assembler(source, workdir, found=None):
    kind, path = found or find_assembler()
    src = os.path.join(workdir, "code.s")
    obj = os.path.join(workdir, "code.o")
    with open(src, "w") as f:
        f.write(source)
    if kind == "llvm-mc":
        cmd = [path, "-triple=x86_64-unknown-linux-gnu", "-filetype=obj", "-o", obj, src]
    else:
        cmd = [path, "--64", "-o", obj, src]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    return kind, p.returncode, p.stderr, obj


def _parse_errors(kind, stderr):
    """[(line, message)] from the assembler's diagnostics (errors first, then warnings)."""
    out = []
    if kind == "llvm-mc":
        for m in re.finditer(r"^[^\n]*?:(\d+):\d+: (error|warning): (.*)$", stderr, re.M):
            out.append((int(m.group(1)), m.group(2), m.group(3).strip()))
    else:
        for m in re.finditer(r"^[^\n]*?:(\d+): (Error|Warning): (.*)$", stderr, re.M):
            out.append((int(m.group(1)), m.group(2).lower(), m.group(3).strip()))
    out.sort(key=lambda e: e[1] != "error")
    return out


def _elf(data):
    """Sections {name: (type, offset, size, link)} and local symbols of an ELF64 object."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise AsmError("the assembler did not write a 64-bit little-endian ELF object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append((name, typ, flags, off, size, link))
    strtab_off = secs[shstrndx][3]

    def cstr(base, idx):
        end = data.index(b"\0", base + idx)
        return data[base + idx:end].decode(errors="replace")
    named = []
    for i, (name, typ, flags, off, size, link) in enumerate(secs):
        named.append((cstr(strtab_off, name), typ, flags, off, size, link, i))
    syms = []
    for name, typ, flags, off, size, link, idx in named:
        if typ == 2:  # SHT_SYMTAB
            str_off = secs[link][3]
            for k in range(size // 24):
                n, info, other, shndx, value, ssize = struct.unpack_from("<IBBHQQ", data, off + 24 * k)
                syms.append((cstr(str_off, n), shndx, value))
    return named, syms


def assemble(text: str, att: bool = False, what: str = "--asm") -> bytes:
    """The machine code of TEXT (bytes). AsmError names WHAT, the statement and the reason."""
    try:
        return _assemble(text, att)
    except AsmError as e:
        raise AsmError(f"{what}: {e}")


def _assemble(text, att):
    stmts = split_statements(text)
    found = find_assembler()
    here = found[0] == "llvm-mc" and not att  # GNU as's `$`/`.` for llvm-mc's Intel syntax
    lines = [".att_syntax" if att else ".intel_syntax noprefix", ".text"]
    first_line = len(lines) + 1
    line_of = {}  # source line -> statement index
    for i, s in enumerate(stmts):
        nop = _marker_statement(s) or _nop_statement(s, i)
        if nop is None:
            _check_directive(s, i)
        lines.append(f"{STMT_SYM}{i}:")
        line_of[len(lines) + 1] = i
        lines.append(nop if nop is not None else _here_as_label(s, f"{STMT_SYM}{i}") if here else s)
    lines.append(f"{STMT_SYM}end:")
    with tempfile.TemporaryDirectory(prefix="pmulab-asm-") as td:
        kind, rc, stderr, obj = _run_assembler("\n".join(lines) + "\n", td, found)
        diags = _parse_errors(kind, stderr)
        errors = [d for d in diags if d[1] == "error"]
        if rc != 0 or errors:
            if errors or diags:
                line, _, msg = (errors or diags)[0]
                i = line_of.get(line)
                where = f"statement {i + 1} '{stmts[i]}'" if i is not None else f"line {line - first_line + 1}"
                more = f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else ""
                raise AsmError(f"{where}: {msg} ({kind}){more}")
            msgs = [re.sub(r"^.*?\b(error|Error): ", "", l).strip() for l in stderr.splitlines()
                    if re.search(r"\b(error|Error): ", l)]
            if any("Undefined temporary symbol" in m or "fb label" in m for m in msgs):
                raise AsmError("a local label is used but not defined in the snippet (e.g. 'jmp 1f' "
                               f"without a '1:' after it) ({kind}: {msgs[0]})")
            first = msgs[0] if msgs else (stderr.strip().splitlines() or [f"exit status {rc}"])[0]
            raise AsmError(f"{kind} failed: {first}")
        with open(obj, "rb") as f:
            data = f.read()
    sections, syms = _elf(data)
    starts = sorted((v, int(n[len(STMT_SYM):])) for n, shndx, v in syms
                    if n.startswith(STMT_SYM) and n != STMT_SYM + "end")

    def stmt_at(offset):
        idx = None
        for v, i in starts:
            if v <= offset:
                idx = i
        return f"statement {idx + 1} '{stmts[idx]}'" if idx is not None else f"offset {offset}"
    text_sec = next((s for s in sections if s[0] == ".text"), None)
    if text_sec is None:
        raise AsmError("the assembler wrote no .text section")
    for name, typ, flags, off, size, link, idx in sections:
        if typ in (4, 9) and size:  # SHT_RELA, SHT_REL: something outside the snippet
            is_rela = typ == 4
            first_off, = struct.unpack_from("<Q", data, off)
            target = name[len(".rela"):] if is_rela else name[len(".rel"):]
            if target == ".text":
                raise AsmError(f"{stmt_at(first_off)}: refers to a symbol or address outside the snippet "
                               "(needs a relocation); user code must be position-independent: use labels "
                               "inside the code, registers (R14, RDI, RSI, RBP point to scratch memory) "
                               "or immediates")
            raise AsmError(f"the code needs relocations in {target} (not position-independent)")
        if typ in (1, 8) and size and name != ".text" and flags & 0x2:  # PROGBITS/NOBITS, SHF_ALLOC
            raise AsmError(f"the code puts data into section {name}; only .text is allowed")
    code = data[text_sec[3]:text_sec[3] + text_sec[4]]
    if not code:
        raise AsmError("the text assembles to no bytes")
    if len(code) > MAX_BYTES:
        raise AsmError(f"the code is {len(code)} bytes; at most {MAX_BYTES} per copy")
    return code


# ----- command lines and campaigns -------------------------------------------------

def default_name(text: str) -> str:
    """The record label for asm text: statements joined by '; ', bounded to NAME_MAX
    characters; characters that campaign lines cannot carry become spaces."""
    s = "; ".join(p.strip() for p in re.split(r"[;\n]", text) if p.strip())
    s = re.sub(r'["\\#\t\r]', " ", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s if len(s) <= NAME_MAX else s[:NAME_MAX - 3] + "..."


def _code_options() -> tuple[dict[str, str], set[str], set[str]]:
    """run's assembly options, the options that start a code group and those that belong
    to one (pmulab.options); AsmError when pmulab's declarations cannot be read."""
    try:
        starts, members = group_options()
        return asm_options(), starts, members
    except OptionsError as e:
        raise AsmError(str(e)) from e


def has_asm(argv: Sequence[str]) -> bool:
    asm = _code_options()[0]
    return any(a == "--att" or a.split("=", 1)[0] in asm for a in argv)


def rewrite_argv(argv: Sequence[str], att: bool = False,
                 assembler: Optional[Callable[[str, bool, str], bytes]] = None) -> list[str]:
    """A pmulab command line with --asm* TEXT turned into --code* HEX (--att applies to all
    of them and is dropped). Each --asm without a --name of its own gets one from its text,
    right after its code (before the next --code/--asm). Returns a new list; AsmError on
    bad code or a missing value. `att`: AT&T syntax without --att in argv; `assembler`:
    assemble() or one with the same signature."""
    if not has_asm(argv):
        return list(argv)
    asm, starts, members = _code_options()
    assembler = assembler or assemble
    att = att or "--att" in argv
    out: list[str] = []
    group: Optional[list[Any]] = None  # [its asm text or None, named?]
    pre_named = False

    def close_group() -> None:
        if group and group[0] is not None and not group[1] and default_name(group[0]):
            out.extend(["--name", default_name(group[0])])

    i = 0
    while i < len(argv):
        a = argv[i]
        opt, eq, val = a.partition("=")
        if a == "--att":
            i += 1
            continue
        if opt in starts:
            close_group()
            group = [None, pre_named and group is None]
        if opt in asm:
            if not eq:
                if i + 1 >= len(argv):
                    raise AsmError(f"{opt}: needs the assembly text (e.g. {opt} \"add rax, rbx\")")
                val = argv[i + 1]
                i += 1
            out += [asm[opt], assembler(val, att, opt).hex()]
            if opt in starts and group is not None:  # set just above
                group[0] = val
        else:
            if opt in members:
                if group is None:
                    pre_named = True  # before any code: the first code's
                else:
                    group[1] = True
            out.append(a)
        i += 1
    if "--att" in argv and not any(a.split("=", 1)[0] in asm for a in argv):
        raise AsmError(f"--att: applies to {', '.join(asm)}; none given")
    close_group()
    return out


def split_line(line: str) -> list[str]:
    """Words of a campaign line, as pmulab splits them (src/app/command_line.cpp)."""
    words, i, n = [], 0, len(line)
    while i < n:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n:
            break
        w, quoted = [], False
        while i < n:
            c = line[i]
            if c == '"':
                quoted = not quoted
                i += 1
                continue
            if c == "\\" and i + 1 < n and line[i + 1] in '"\\':
                w.append(line[i + 1])
                i += 2
                continue
            if not quoted and c in " \t":
                break
            w.append(c)
            i += 1
        if quoted:
            raise AsmError("unterminated quote")
        words.append("".join(w))
    return words


def quote(a: str) -> str:
    """A word for a pmulab command line (the inverse of split_line)."""
    # A lone backslash is literal to pmulab; only \\ and \" are escapes.
    if a == "" or any(c in a for c in " \t\"#") or "\\\\" in a or a.endswith("\\"):
        return '"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return a


def _strip_comment(line):
    quoted = False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted:
            return line[:i]
    return line


def rewrite_campaign(data: bytes, name: str = "campaign") -> bytes:
    """A campaign file (bytes) with every line that has --asm* rewritten into --code*;
    other lines stay byte for byte. AsmError names the file and line."""
    text = data.decode("utf-8")
    if "--asm" not in text and "--att" not in text:
        return data
    out = []
    file_nl = "\r\n" if "\r\n" in text else "\n"
    for n, raw in enumerate(text.splitlines(keepends=True), 1):
        body = raw.rstrip("\r\n")
        nl = raw[len(body):]
        try:
            words = split_line(_strip_comment(body).strip())
            if not has_asm(words):
                out.append(raw)
                continue
            new = rewrite_argv(words)
        except AsmError as e:
            raise AsmError(f"{name}:{n}: {e}")
        # One line for one line (errors keep their line numbers), the original as a comment.
        out.append(" ".join(quote(w) for w in new) + f"  # pmulab_asm: {body.strip()}" + nl)
    return "".join(out).encode("utf-8")


def main(argv: Sequence[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="pmulab-asm", description="Assemble code for pmulab run --code.")
    ap.add_argument("--att", action="store_true", help="AT&T syntax (default Intel, no prefixes)")
    ap.add_argument("--campaign", nargs=2, metavar=("IN", "OUT"),
                    help="rewrite the --asm options of a campaign file into --code")
    ap.add_argument("--argv", action="store_true",
                    help="first, then WORD...: rewrite the --asm options of the pmulab command line WORD... "
                    "as run-qemu.sh does and print its words, each ended by a NUL byte (pmulab-sim uses this)")
    ap.add_argument("text", nargs="?", help="the assembly text")
    if argv[:1] == ["--argv"]:  # every word after it is the command line's, options included
        try:
            sys.stdout.write("".join(w + "\0" for w in rewrite_argv(argv[1:])))
            return 0
        except AsmError as e:
            print(f"pmulab_asm: error: {e}", file=sys.stderr)
            return 2
    args = ap.parse_args(argv)
    try:
        if args.campaign:
            src, dst = args.campaign
            try:
                with open(src, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise AsmError(f"{src}: cannot read: {e.strerror}")
            try:
                new = rewrite_campaign(data, src)
            except UnicodeDecodeError as e:
                raise AsmError(f"{src}: not UTF-8 text ({e.reason} at byte {e.start})")
            try:
                with open(dst, "wb") as f:
                    f.write(new)
            except OSError as e:
                raise AsmError(f"{dst}: cannot write: {e.strerror}")
            return 0
        if args.text is None:
            ap.error("give the assembly text or --campaign IN OUT")
        print(assemble(args.text, args.att, "asm").hex())
        return 0
    except AsmError as e:
        print(f"pmulab_asm: error: {e}", file=sys.stderr)
        return 2


def cli() -> None:
    """The command line entry point (tools/pmulab-asm)."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
