"""pmulab-nanobench --cycle-by-cycle: nanoBench's cycleByCycle.py command line, measured by
`pmulab run --cycle-by-cycle` (docs/sampling.md "Cycle by cycle").

  tools/pmulab-nanobench --cycle-by-cycle --sim-model skylake -asm "add rax, rbx" -config cfg.txt
  tools/pmulab-nanobench --cycle-by-cycle -asm "mov rcx, [r14]" -config cfg.txt -csv out.csv

cycleByCycle.py's options (one dash, '-opt value' or '-opt=value', a unique prefix as
argparse takes it): -asm, -asm_init, -asm_late_init, -asm_one_time_init, -code, -code_init,
-code_late_init, -code_one_time_init, -cpu, -config (required), -unroll_count (default 1),
-loop_count, -n_measurements, -warm_up_count, -initial_warm_up_count, -alignment_offset,
-avg, -median (default), -min, -max, -no_mem, -end_to_end, -remove_empty_events, -verbose,
-csv [FILE]. The output is cycleByCycle.py's CSV: one line per event, its name, then the
count since the window's first cycle at the end of each cycle (cumulative, as nanoBench's);
to stdout, or to FILE with -csv FILE. -html is refused (tools/pmulab-plot draws pmulab's
records), as is -range (pmulab's record holds the aggregate of each cycle only).
The options of this tool (--sim, --sim-model, QEMU's --smp, ...) are pmulab-nanobench's.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Sequence

from . import asm as pmulab_asm
from . import nanobench as nbm

Options = Dict[str, Any]
Record = Dict[str, Any]
CBC_OPTIONS = {
    "asm": "text", "asm_init": "text", "asm_late_init": "text", "asm_one_time_init": "text",
    "code": "file", "code_init": "file", "code_late_init": "file", "code_one_time_init": "file",
    "cpu": "int", "config": "file", "unroll_count": "int", "loop_count": "int", "n_measurements": "int",
    "warm_up_count": "int", "initial_warm_up_count": "int", "alignment_offset": "int",
    "avg": "flag", "median": "flag", "min": "flag", "max": "flag", "no_mem": "flag", "end_to_end": "flag",
    "remove_empty_events": "flag", "verbose": "flag", "csv": "optional",
}
CBC_REFUSED = {
    "html": "pmulab-nanobench writes cycleByCycle.py's CSV; tools/pmulab-plot draws the heat map of pmulab's "
            "cycle_by_cycle records",
    "range": "pmulab's cycle_by_cycle record holds the aggregate (--agg) of each cycle, not the range of the runs",
}


def match(word: str) -> tuple[str, str | None]:
    body = word.lstrip("-")
    name, eq, val = body.partition("=")
    for table in (CBC_OPTIONS, CBC_REFUSED):
        cands = [name] if name in table else sorted(n for n in table if name and n.startswith(name))
        if len(cands) > 1:
            raise nbm.Usage(f"option '{word}' is ambiguous; possibilities: " + " ".join("-" + c for c in cands))
        if cands and table is CBC_REFUSED:
            raise nbm.Usage(f"-{cands[0]}: pmulab does not take this cycleByCycle.py option: {CBC_REFUSED[cands[0]]}")
        if cands:
            return cands[0], (val if eq else None)
    raise nbm.Usage(f"unrecognized cycleByCycle.py option '{word}' (see --cycle-by-cycle --help)")


def parse_args(argv: Sequence[str]) -> tuple[Options, Options]:
    """(cycleByCycle.py options, this tool's own options). Usage on bad input."""
    return nbm.parse_args(argv, CBC_OPTIONS, match)


def pmulab_command(cbc: Options, own: Options) -> tuple[list[str], str | None]:
    """`pmulab run --cycle-by-cycle` words: cycleByCycle.py sets nanoBench's basic mode and
    drains the front end (-df); unroll 1 and the median by default."""
    if "config" not in cbc:
        raise nbm.Usage("-config FILE is required (cycleByCycle.py: the events to measure)")
    nb = {k: v for k, v in cbc.items() if k in nbm.NB_OPTIONS}
    nb.setdefault("unroll_count", 1)
    if not any(nb.get(a) for a in nbm.AGGS):
        nb["median"] = True
    nb["df"] = True
    words, config = nbm.pmulab_command(nb, own)
    words.append("--cycle-by-cycle")
    if cbc.get("end_to_end"):
        words.append("--end-to-end")
    return words, config


def csv_lines(records: list[Record], remove_empty: bool) -> list[str]:
    """cycleByCycle.py's CSV: per event its name and the cumulative counts of each cycle.
    Several records (CPUs, codes): each block after a '# cpu N bench NAME' line."""
    recs = [r for r in records if r.get("type") == "cycle_by_cycle"]
    if not recs:
        raise nbm.DataError("no cycle_by_cycle records (pmulab run --cycle-by-cycle --json)")
    lines = []
    for r in recs:
        if len(recs) > 1:
            lines.append(f"# cpu {r.get('cpu')} bench {r.get('bench')}")
        for ev in r["events"]:
            total, cols = 0, []
            for c in r["cycles"]:
                v = c["values"].get(ev)
                if v is None:
                    cols.append("")
                    continue
                total += v
                cols.append(str(total))
            if remove_empty and total == 0:
                continue
            lines.append(",".join([ev] + cols))
    return lines


def main(argv: Sequence[str]) -> int:
    try:
        cbc, own = parse_args(argv)
        if own.get("--help"):
            print(__doc__.strip())
            return 0
        if nbm.sim_problem(own):
            raise nbm.Usage(nbm.sim_problem(own))
        words, config = pmulab_command(cbc, own)
        words = pmulab_asm.rewrite_argv(words)
    except (nbm.Usage, pmulab_asm.AsmError) as e:
        print(f"{nbm.PROG}: error: {e}", file=sys.stderr)
        return 2
    line = " ".join(pmulab_asm.quote(w) for w in words)
    verbose = bool(cbc.get("verbose"))
    dry = bool(own.get("--dry-run"))
    if dry or verbose:  # the command line alone (--dry-run), or before the output (-verbose)
        print(line if dry else f"{nbm.PROG}: pmulab {line}", file=sys.stdout if dry else sys.stderr)
        if dry:
            return 0
    if isinstance(got := nbm.measure(words, config, own, verbose), int):
        return got
    status, recs, other = got
    for l in other:
        print(l, file=sys.stderr)
    for l in nbm.diagnostics(recs):
        print(l, file=sys.stderr)
    try:
        text = "\n".join(csv_lines(recs, bool(cbc.get("remove_empty_events")))) + "\n"
    except nbm.DataError as e:
        print(f"{nbm.PROG}: error: pmulab's output: {e}", file=sys.stderr)
        return status or 1
    if cbc.get("csv"):
        try:
            with open(cbc["csv"], "w") as f:
                f.write(text)
        except OSError as e:
            print(f"{nbm.PROG}: error: -csv {cbc['csv']}: cannot write: {e.strerror}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return status
