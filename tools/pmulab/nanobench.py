#!/usr/bin/env python3
"""pmulab-nanobench: nanoBench.sh's command line, measured by pmulab (docs/nanobench.md).

  tools/pmulab-nanobench -asm "imul rax, rbx" -asm_init "mov rax, 1" -config cfg.txt -range
  tools/pmulab-nanobench --icount 7 -asm "add rax, rbx" -unroll 100      (exact under QEMU)
  tools/pmulab-nanobench --campaign stick.cfg -asm "imul rax, rbx"       (a line for a stick)
  tools/pmulab-nanobench --parse results.jsonl -range                    (print a stick's results)
  tools/pmulab-nanobench --sim DUMP -asm "add rax, rbx" -config cfg.txt  (on the simulator)

nanoBench's options (one or two dashes, '-opt value' or '-opt=value', any unique prefix:
-l is -loop_count, -a is ambiguous) become a `pmulab run` command line; by default it
boots in QEMU (tools/qemu_run.py, on an image made by tools/mkimage.sh with the event
files and the -config file on it) and prints nanoBench's output: one 'NAME: 2.00' line
per event ('NAME: 2.00 [1.98;2.03]' with -range: the min and max of the per-run values,
from each run's counts, which -range asks pmulab for with --raw); lines of several
benches, sizes, CPUs or runs start with what tells them apart ('size=4096 TSC: 2.00').

Options of this tool (two dashes, never abbreviated):
  --icount SHIFT  --smp N  --cpu-model MODEL  --kvm  --timeout S  --no-build   QEMU boot
  --sim DUMP        measure on the simulator instead of booting QEMU: pmulab-sim --dump
                    DUMP -- serve (docs/sim.md), driven as an agent; --sim-model NAME
                    (a named model instead of a dump), --sim-cache SPEC, --sim-seed N
  --events SPECS    pmulab events to measure as well (e.g. tsc); without -config,
                    -fixed_counters and --events: tsc
  --campaign FILE   append the pmulab command line to FILE (a campaign for a stick)
                    instead of booting
  --parse FILE      print nanoBench's output for the result records of a pmulab JSONL
                    file (e.g. pulled from a stick) instead of booting; a file without
                    result records, or a record without a field it needs, is an error (1)
  --dry-run         print the pmulab command line and stop; --cycle-by-cycle: take
                    cycleByCycle.py's command line instead (`--cycle-by-cycle --help`)
Exit status: pmulab's own (0 ok, 1 failed, 2 usage: also bad options or code that does
not assemble, 3 unsupported), or run-qemu.sh's (124 timeout, 125 QEMU failure, ...);
with --sim: 2 also for a dump or --sim-* option pmulab-sim refuses, 1 without build/host/pmulab-sim.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from fractions import Fraction
from typing import Any, Callable, Dict, Sequence

from . import ROOT
from . import asm as pmulab_asm
from . import client as pmulab_client
from .options import OptionsError, asm_options

PROG = "pmulab-nanobench"
Options = Dict[str, Any]  # parsed options: name -> value (True for a flag)
Record = Dict[str, Any]  # one JSON record of pmulab's output
# nanoBench.sh's options: name -> kind (text, file, int, flag).
NB_OPTIONS = {
    "asm": "text", "asm_init": "text", "asm_late_init": "text", "asm_one_time_init": "text",
    "code": "file", "code_init": "file", "code_late_init": "file", "code_one_time_init": "file",
    "config": "file", "fixed_counters": "flag",
    "n_measurements": "int", "unroll_count": "int", "loop_count": "int", "warm_up_count": "int",
    "initial_warm_up_count": "int", "alignment_offset": "int",
    "avg": "flag", "median": "flag", "min": "flag", "max": "flag", "range": "flag",
    "basic_mode": "flag", "no_mem": "flag", "no_normalization": "flag", "df": "flag",
    "cpu": "int", "verbose": "flag", "usr": "int", "os": "int", "debug": "flag",
}
# nanoBench's defaults (nanoBench README).
NB_DEFAULTS = {"n_measurements": 10, "unroll_count": 1000, "loop_count": 0, "warm_up_count": 5,
               "initial_warm_up_count": 0, "alignment_offset": 0, "usr": 1, "os": 0}
OWN_OPTIONS = {"--icount": True, "--smp": True, "--cpu-model": True, "--kvm": False, "--timeout": True,
               "--no-build": False, "--events": True, "--campaign": True, "--parse": True,
               "--dry-run": False, "--sim": True, "--sim-model": True, "--sim-cache": True, "--sim-seed": True}
QEMU_OPTIONS = ("--icount", "--smp", "--cpu-model", "--kvm", "--timeout", "--no-build")


NB_ASM_OPTIONS = ("asm", "asm_init", "asm_late_init", "asm_one_time_init")

# nanoBench's options (kernel-nanoBench.sh, cycleByCycle.py) that pmulab does not take:
# name -> what to do instead. docs/nanobench.md "Options pmulab does not take" has the same table.
NB_REFUSED = {
    "msr_config": "pmulab run counts core events only; read an uncore counter with 'pmulab msr read ADDR'",
    "remove_empty_events": "every event is printed; filter the 0.00 lines yourself",
    "cycle_by_cycle": "cycle by cycle is cycleByCycle.py's command line: pmulab-nanobench --cycle-by-cycle",
    "end_to_end": "cycleByCycle.py's option: pmulab-nanobench --cycle-by-cycle ... -end_to_end",
    "html": "cycleByCycle.py's option; plot pmulab's JSONL with tools/pmulab-plot",
    "csv": "cycleByCycle.py's option: pmulab-nanobench --cycle-by-cycle ... -csv FILE",
}
NB_REFUSED_DOC = 'docs/nanobench.md "Options pmulab does not take"'


def blocks() -> list[tuple[str, str, str, str]]:
    """Blocks: nanoBench's asm option, its code option, pmulab's asm and hex options (these
    from run's declaration: pmulab.options.asm_options)."""
    try:
        asm = asm_options()
    except OptionsError as e:
        raise pmulab_asm.AsmError(str(e)) from e
    return [(a, c, "--" + a.replace("_", "-"), asm["--" + a.replace("_", "-")])
            for a, c in ((a, a.replace("asm", "code")) for a in NB_ASM_OPTIONS)]


AGGS = {"avg": "trimmed", "median": "median", "min": "min", "max": "max"}
# -fixed_counters: pmulab's vendor-neutral names of the three fixed-function events
# (FIXED_CTR0-2 on Intel), printed under nanoBench's names; the record's event may be
# any of the aliases.
FIXED = [("instructions", "Instructions retired", ("FIXED_CTR0", "INST_RETIRED.ANY")),
         ("cycles", "Core cycles", ("FIXED_CTR1", "CPU_CLK_UNHALTED.THREAD")),
         ("ref-cycles", "Reference cycles", ("FIXED_CTR2", "CPU_CLK_UNHALTED.REF_TSC"))]
CONFIG_DEST = "\\pmulab\\nanobench\\"


class Usage(Exception):
    """Bad command line: message, exit status 2."""


def parse_int(opt: str, text: str) -> int:
    try:
        v = int(text, 0)
    except (ValueError, TypeError):
        raise Usage(f"-{opt}: '{text}' is not a number")
    if v < 0:
        raise Usage(f"-{opt}: '{text}' must not be negative")
    return v


def match_option(word: str) -> tuple[str, str | None]:
    """(name, inline value or None) of a nanoBench option word, as getopt_long_only
    matches it: an exact name, else a unique prefix."""
    body = word.lstrip("-")
    name, eq, val = body.partition("=")
    if name in NB_OPTIONS:
        return name, (val if eq else None)
    cands = sorted(n for n in NB_OPTIONS if n.startswith(name)) if name else []
    if not cands:
        refused = [n for n in NB_REFUSED if n == name] or [n for n in NB_REFUSED if name and n.startswith(name)]
        if len(refused) == 1:
            raise Usage(f"-{refused[0]}: pmulab does not take this nanoBench option: {NB_REFUSED[refused[0]]} "
                        f"({NB_REFUSED_DOC})")
        raise Usage(f"unrecognized option '{word}' (nanoBench options: see --help)")
    if len(cands) > 1:
        raise Usage(f"option '{word}' is ambiguous; possibilities: " + " ".join("-" + c for c in cands))
    return cands[0], (val if eq else None)


def parse_args(argv: Sequence[str], table: Dict[str, str] | None = None,
               match: Callable[[str], tuple[str, str | None]] = match_option) -> tuple[Options, Options]:
    """(nanoBench options dict, own options dict). Usage on bad input. `table` and `match`:
    another tool's options (cycleByCycle.py's: nanobench_cbc.py); an "optional" kind takes
    the next word as its value unless it starts with '-' ("" then)."""
    table = table or NB_OPTIONS
    nb: Options = {}
    own: Options = {}
    i = 0
    while i < len(argv):
        w = argv[i]
        i += 1
        key, eq, val = w.partition("=")
        if key in OWN_OPTIONS:
            if OWN_OPTIONS[key]:
                if not eq:
                    if i >= len(argv):
                        raise Usage(f"{key} needs a value")
                    val = argv[i]
                    i += 1
                own[key] = val
            else:
                if eq:
                    raise Usage(f"{key} takes no value")
                own[key] = True
            continue
        if w in ("-h", "--help", "-help"):
            own["--help"] = True
            continue
        if not w.startswith("-") or w in ("-", "--"):
            raise Usage(f"unexpected argument '{w}' (nanoBench options start with '-')")
        name, inline = match(w)
        kind = table[name]
        if kind == "flag":
            if inline is not None:
                raise Usage(f"-{name} takes no value")
            nb[name] = True
            continue
        if kind == "optional" and inline is None and (i >= len(argv) or argv[i].startswith("-")):
            nb[name] = ""
            continue
        if inline is None:
            if i >= len(argv):
                raise Usage(f"-{name} needs a value")
            inline = argv[i]
            i += 1
        nb[name] = parse_int(name, inline) if kind == "int" else inline
    return nb, own


def read_code_file(opt: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Usage(f"-{opt} {path}: cannot read: {e.strerror}")
    if not data:
        raise Usage(f"-{opt} {path}: the file is empty")
    return data


def config_names(path: str) -> dict[str, str]:
    """{spec or name: display name} of a nanoBench config file; Usage on a bad file."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("ascii")
    except OSError as e:
        raise Usage(f"-config {path}: cannot read: {e.strerror}")
    except UnicodeDecodeError as e:
        raise Usage(f"-config {path}: not ASCII text (byte at {e.start}); pmulab reads ASCII event files")
    names = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        name = parts[1].strip() if len(parts) > 1 else parts[0]
        names[parts[0]] = name
        names[name] = name
    return names


def pmulab_command(nb: Options, own: Options) -> tuple[list[str], str | None]:
    """The `pmulab run` words for nanoBench options (with --asm* still as text: the caller
    assembles them), plus the config file to put on the volume (or None)."""
    cmd = ["run"]
    for asm_opt, code_opt, p_asm, p_code in blocks():
        if asm_opt in nb and code_opt in nb:
            raise Usage(f"-{asm_opt} and -{code_opt} give the same code twice; use one of them")
        if asm_opt in nb:
            cmd += [p_asm, nb[asm_opt]]
        elif code_opt in nb:
            cmd += [p_code, read_code_file(code_opt, nb[code_opt]).hex()]
    if "asm" not in nb and "code" not in nb:
        raise Usage("give the code to measure: -asm \"TEXT\" or -code FILE")
    if "code" in nb and "asm" not in nb:
        cmd += ["--name", os.path.basename(nb["code"])[:pmulab_asm.NAME_MAX]]
    events = []
    if own.get("--events"):
        events += [own["--events"]]
    if nb.get("fixed_counters"):
        events += [f for f, _, _ in FIXED]
    if events:
        cmd += ["--events", ",".join(events)]
    config = nb.get("config")
    if config is not None:
        config_names(config)  # readable, ASCII
        cmd += ["--events-file", CONFIG_DEST + os.path.basename(config)]
    elif not events:
        cmd += ["--events", "tsc"]
    if "cpu" in nb:
        cmd += ["--cpu", str(nb["cpu"])]
    v = {k: nb.get(k, d) for k, d in NB_DEFAULTS.items()}
    cmd += ["--unroll", str(v["unroll_count"]), "--loop", str(max(1, v["loop_count"])),
            "--reps", str(v["n_measurements"]), "--warmup", str(v["warm_up_count"])]
    aggs = [a for a in AGGS if nb.get(a)]
    if len(aggs) > 1:
        raise Usage("give at most one of -avg, -median, -min, -max")
    cmd += ["--agg", AGGS[aggs[0] if aggs else "avg"]]
    if v["initial_warm_up_count"]:
        cmd += ["--initial-warmup", str(v["initial_warm_up_count"])]
    if v["alignment_offset"]:
        cmd += ["--align-offset", str(v["alignment_offset"])]
    if nb.get("basic_mode"):
        cmd.append("--basic")
    if nb.get("no_mem"):
        cmd.append("--no-mem")
    if nb.get("df"):
        cmd.append("--drain-frontend")
    if nb.get("range"):
        cmd.append("--raw")  # -range prints the min and max of the per-run values: needs each run's counts
    for k in ("usr", "os"):
        if v[k] not in (0, 1):
            raise Usage(f"-{k}: '{v[k]}' must be 0 or 1")
    return cmd, config


def display_name(rec: Record, names: dict[str, str]) -> str:
    ev = str(rec.get("event", "?"))
    for spec, nice, aliases in FIXED:
        if ev.lower() == spec or ev.upper() in aliases:
            return nice
    if ev == "tsc":
        return "TSC"
    return names.get(ev, ev)


def fmt(x: float | Fraction) -> str:
    return f"{float(x):.2f}"


class DataError(Exception):
    """Result records that cannot be printed (none, or a field missing): exit status 2 for a
    --parse file (bad input content), 1 when pmulab's own output lacks them."""


# Fields that tell result records of one command line apart; the ones that differ between
# the records are printed before each line (nanoBench prints one block per run).
BLOCK_KEYS = ("bench", "code", "size", "cpu", "run")


def field(r: Record, n: int, key: str) -> Any:
    if key not in r:
        raise DataError(f"result record {n} has no '{key}' field")
    return r[key]


def record_value(r: Record, n: int) -> Fraction:
    """The record's per-iteration estimate (its aggregate): 'fraction' [num, den], exact."""
    frac = field(r, n, "fraction")
    if not (isinstance(frac, list) and len(frac) == 2 and all(isinstance(x, int) for x in frac) and frac[1]):
        raise DataError(f"result record {n}: 'fraction' is not [numerator, denominator]: {json.dumps(frac)}")
    return Fraction(frac[0], frac[1])


def run_range(r: Record, n: int, value: Fraction) -> tuple[Fraction, Fraction]:
    """nanoBench's -range: the min and max of the measured per-run values, (long_i - short_i) /
    iterations from the record's 'long'/'short' 'counts' (run --raw), widened to the printed
    estimate where an aggregate of each version lies outside them (median, min, max), so
    min <= value <= max always."""
    iters = field(r, n, "iterations")
    runs = []
    for key in ("long", "short"):
        raw = field(r, n, key)
        counts = raw.get("counts") if isinstance(raw, dict) else None
        if not isinstance(counts, list) or not counts or not all(isinstance(c, int) for c in counts):
            raise DataError(f"result record {n}: '{key}' has no 'counts' list (record with run --raw)")
        runs.append(counts)
    if len(runs[0]) != len(runs[1]) or not isinstance(iters, int) or iters <= 0:
        raise DataError(f"result record {n}: 'long'/'short' counts or 'iterations' do not match")
    diffs = [Fraction(lo - sh, iters) for lo, sh in zip(*runs)]
    return min(min(diffs), value), max(max(diffs), value)


def block_prefix(r: Record, varying: Sequence[str]) -> str:
    return "".join(f"{k}={r.get(k, '-')} " for k in varying)


def format_results(records: list[Record], nb: Options, names: dict[str, str] | None = None) -> list[str]:
    """nanoBench's output lines for pmulab result records; DataError when there are none or
    one lacks a field. Lines of different benches, sizes, CPUs or runs start with those."""
    names = names or {}
    results = [r for r in records if r.get("type") == "result"]
    if not results:
        raise DataError("no result records (JSON lines with \"type\":\"result\", from pmulab run --json)")
    varying = [k for k in BLOCK_KEYS if len({json.dumps(r.get(k)) for r in results}) > 1]
    lines = []
    for n, r in enumerate(results, 1):
        field(r, n, "event")
        value = record_value(r, n)
        scale = field(r, n, "iterations") if nb.get("no_normalization") else 1
        line = f"{block_prefix(r, varying)}{display_name(r, names)}: {fmt(value * scale)}"
        if nb.get("range"):
            lo, hi = run_range(r, n, value)
            line += f" [{fmt(lo * scale)};{fmt(hi * scale)}]"
        lines.append(line)
    return lines


CFG_LINE = "\\pmulab\\pmulab.cfg:1: "  # the boot volume's command line, written by boot()
FIXED_SPEC = re.compile(r"^(?:run )?--events: (?:event list item \d+: )?(?=.*'(?:instructions|cycles|ref-cycles)')")


def user_terms(msg: str, nb: Options | None = None) -> str:
    """pmulab's message in the terms of this tool's command line: without the place in the
    pmulab.cfg it wrote (the user never wrote one), and an error about a -fixed_counters
    event under that option's name, not pmulab's --events."""
    msg = msg[len(CFG_LINE):] if msg.startswith(CFG_LINE) else msg
    if (nb or {}).get("fixed_counters"):
        m = FIXED_SPEC.match(msg)
        if m:
            return "-fixed_counters: " + msg[m.end():]
        if msg.startswith("CPU ") and any(f"'{f}'" in msg for f, _, _ in FIXED):
            return "-fixed_counters: " + msg
    return msg[len("run "):] if msg.startswith("run --events: ") else msg  # this tool's --events


def diagnostics(records: list[Record], nb: Options | None = None) -> list[str]:
    """stderr lines for pmulab's error and warning records."""
    out = []
    for r in records:
        if r.get("type") in ("error", "warning"):
            out.append(f"{PROG}: pmulab {r['type']}: {user_terms(str(r.get('message', json.dumps(r))), nb)}")
    return out


def split_output(text: str) -> tuple[list[Record], list[str]]:
    """(JSON records, other lines) of pmulab's console output."""
    recs, other = [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("{"):
            try:
                obj = json.loads(s)
                if isinstance(obj, dict):
                    recs.append(obj)
                    continue
            except json.JSONDecodeError:
                pass
        if s:
            other.append(line)
    return recs, other


def boot(words: list[str], config: str | None, own: Options, verbose: bool) -> tuple[int, str]:
    """Boots pmulab with one campaign line; returns (status, stdout text)."""
    if not own.get("--no-build"):
        made = subprocess.run(["make", "-s", "-C", ROOT, "build/pmulab.efi"], stdout=sys.stderr)
        if made.returncode != 0:
            print(f"{PROG}: error: the build failed", file=sys.stderr)
            return 127, ""
    efi = os.path.join(ROOT, "build", "pmulab.efi")
    with tempfile.TemporaryDirectory(prefix="pmulab-nanobench-") as td:
        cfg = os.path.join(td, "pmulab.cfg")
        with open(cfg, "w") as f:
            f.write(" ".join(pmulab_asm.quote(w) for w in words) + " --json\n--shutdown\n")
        img = os.path.join(td, "pmulab.img")
        events = os.path.join(ROOT, "tests", "data", "events")
        pairs = [f"{os.path.join(events, n)}=::/pmulab/events/{n}"
                 for n in sorted(os.listdir(events)) if n.endswith(".evt")] if os.path.isdir(events) else []
        if config:
            pairs.append(f"{config}=::" + (CONFIG_DEST + os.path.basename(config)).replace("\\", "/"))
        r = subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, efi, cfg, *pairs],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            print(f"{PROG}: error: could not build the disk image", file=sys.stderr)
            return 125, ""
        cmd = [sys.executable, os.path.join(ROOT, "tools", "qemu_run.py"), "--no-build", "--image", img,
               "--smp", own.get("--smp", "4"), "--timeout", own.get("--timeout", "600")]
        if own.get("--icount") is not None:
            cmd += ["--icount", own["--icount"]]
        if own.get("--cpu-model"):
            cmd += ["--cpu", own["--cpu-model"]]
        if own.get("--kvm"):
            cmd.append("--kvm")
        if verbose:
            print(f"{PROG}: " + " ".join(cmd), file=sys.stderr)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, errors="replace")
        return p.returncode, p.stdout


def simulated(words: list[str], config: str | None, own: Options) -> tuple[int, list[Record]]:
    """Runs the command line on the simulator (pmulab-sim ... -- serve, through the agent
    client); the -config file goes along as a blob that --events-file names. Returns
    (status, records). SimError when the simulator does not start."""
    words = list(words)
    blobs: dict[str, bytes] = {}
    if config:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(config))[:32].lstrip(".") or "config"
        with open(config, "rb") as f:
            blobs[name] = f.read()
        words[words.index("--events-file") + 1] = name
    argv, code = pmulab_client.asm_to_blobs(words)
    blobs.update(code)
    agent = pmulab_client.Agent.sim(own.get("--sim"), own.get("--sim-model"), own.get("--sim-cache"),
                                    own.get("--sim-seed"), log=sys.stderr if own.get("verbose") else None)
    try:
        ans = agent.request(argv, blobs)
    finally:
        agent.close()
    return ans.status if ans.status is not None else 1, ans.records


def measure(words: list[str], config: str | None, own: Options,
            verbose: bool) -> tuple[int, list[Record], list[str]] | int:
    """(status, records, other console lines) on the simulator or in QEMU, or a failure's status."""
    if own.get("--sim") is None and own.get("--sim-model") is None:
        status, out = boot(words, config, own, verbose)
        return (status, *split_output(out))
    try:
        status, recs = simulated(words, config, dict(own, verbose=verbose))
        return status, recs, list[str]()
    except pmulab_client.SimError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.status
    except (pmulab_client.AgentError, TimeoutError, OSError) as e:
        print(f"{PROG}: error: lost the simulator: {e}", file=sys.stderr)
        return 1


def sim_problem(own: Options) -> str | None:
    """Why the --sim options do not go together (None: they do)."""
    sim = own.get("--sim") is not None or own.get("--sim-model") is not None
    if own.get("--sim") is not None and own.get("--sim-model") is not None:
        return "give --sim DUMP or --sim-model NAME, not both"
    if not sim and (own.get("--sim-cache") is not None or own.get("--sim-seed") is not None):
        return "--sim-cache and --sim-seed go with --sim DUMP (or --sim-model NAME)"
    qemu = [o for o in QEMU_OPTIONS if o in own]
    if sim and qemu:
        return f"{qemu[0]} is an option of the QEMU boot; it does not go with --sim"
    if sim and (own.get("--campaign") or own.get("--parse")):
        return "--sim measures on the simulator; it does not go with --campaign or --parse"
    return None


def main(argv: Sequence[str]) -> int:
    if "--cycle-by-cycle" in argv:
        from . import nanobench_cbc
        return nanobench_cbc.main([a for a in argv if a != "--cycle-by-cycle"])
    try:
        nb, own = parse_args(argv)
        if own.get("--help"):
            print(__doc__.strip())
            print("\nnanoBench options: " + " ".join("-" + n for n in NB_OPTIONS))
            return 0
        if own.get("--parse"):
            try:
                with open(own["--parse"], encoding="utf-8", errors="replace") as f:
                    recs, _ = split_output(f.read())
            except OSError as e:
                raise Usage(f"--parse {own['--parse']}: cannot read: {e.strerror}")
            names = config_names(nb["config"]) if "config" in nb else {}
            try:
                lines = format_results(recs, nb, names)
            except DataError as e:
                print(f"{PROG}: error: --parse {own['--parse']}: {e}", file=sys.stderr)
                return 2  # bad input content (README "Exit status of the tools")
            print("\n".join(lines))
            return 0
        if sim_problem(own):
            raise Usage(sim_problem(own))
        words, config = pmulab_command(nb, own)
        words = pmulab_asm.rewrite_argv(words)
    except Usage as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except pmulab_asm.AsmError as e:
        msg = str(e)
        for asm_opt in NB_ASM_OPTIONS:  # in nanoBench's spelling
            p_asm = "--" + asm_opt.replace("_", "-")
            if msg.startswith(p_asm + ":"):
                msg = "-" + asm_opt + msg[len(p_asm):]
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 2
    line = " ".join(pmulab_asm.quote(w) for w in words)
    verbose = bool(nb.get("verbose"))
    if own.get("--dry-run"):
        print(line)
        return 0
    if own.get("--campaign"):
        path = own["--campaign"]
        try:
            with open(path, "a") as f:
                shown = [a for k, a in enumerate(argv) if not a.startswith("--campaign")
                         and not (k and argv[k - 1] == "--campaign")]
                f.write(f"# {PROG} " + " ".join(pmulab_asm.quote(a) for a in shown)[:2000] + "\n")
                f.write(line + "\n")
        except OSError as e:
            print(f"{PROG}: error: --campaign {path}: cannot write: {e.strerror}", file=sys.stderr)
            return 1
        print(f"{PROG}: appended to {path}: {line}", file=sys.stderr)
        if config:
            print(f"{PROG}: put {config} on the stick as {CONFIG_DEST}{os.path.basename(config)} "
                  f"(tools/mkimage.sh IMG EFI {path} {config}=::/pmulab/nanobench/{os.path.basename(config)})",
                  file=sys.stderr)
        return 0
    if verbose:
        print(f"{PROG}: pmulab {line}", file=sys.stderr)
    if isinstance(got := measure(words, config, own, verbose), int):
        return got
    status, recs, other = got
    for l in other:
        head, sep, msg = l.partition(": error: ")
        print(head + sep + user_terms(msg, nb) if sep else l, file=sys.stderr)
    for l in diagnostics(recs, nb):
        print(l, file=sys.stderr)
    names = config_names(config) if config else {}
    try:
        for l in format_results(recs, nb, names):
            print(l)
    except DataError as e:
        print(f"{PROG}: error: pmulab's output: {e}", file=sys.stderr)
        return status or 1
    if verbose:
        for r in recs:
            if r.get("type") == "result":
                print(f"{PROG}: {display_name(r, names)}: " + ", ".join(
                    f"{k} {r[k]}" for k in ("min", "median", "avg", "trimmed", "max", "iterations") if k in r),
                    file=sys.stderr)
    return status


def cli() -> None:
    """The command line entry point (tools/pmulab-nanobench)."""
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # QEMU got the same SIGINT; run-qemu.sh cleans up after itself
        print(f"{PROG}: stopped by SIGINT", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    cli()
