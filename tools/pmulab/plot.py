#!/usr/bin/env python3
"""pmulab-plot: plots from pmulab results files (JSONL from the boot volume,
`run-qemu.sh --json` or `pmulab-sim --json` output, pmulab-client's output, `pmulab-lab`
merged.jsonl; `-` is stdin). PNG or SVG by the file name.

  pmulab-plot staircase FILE... --out stair.png [--event tsc] [--bench pointer_chase]
      per-iteration value vs working-set size (log2 x axis): the cache/TLB staircase
      (pointer_chase: load-to-use latency; load_stream/store_stream: one access per line).
  pmulab-plot cpus FILE... --bench NAME --out bars.svg [--event tsc]
      one bar per CPU (P and E cores coloured by core type when `info` records are there);
      several runs: one group per CPU, one bar per run, E-cores hatched.
  pmulab-plot compare FILE... --x EVENT --y EVENT --out cmp.png
      event vs event, one point per benchmark (and size), e.g. instructions vs cycles.
  pmulab-plot cycle-by-cycle FILE... --out heat.svg [--cpu N] [--bench NAME] [--event EV]...
                             [--remove-empty-events]
      `run --cycle-by-cycle` records as a heat map: one row per event, one column per cycle,
      the shade the event's increment in that cycle (tools/pmulab/heatmap.py).

Series are per run: pmulab-lab's "lab" run folder, else the input file (plus the results
file or the CPU when a run has several), with a legend. Value axes start at 0 unless
--y-from-data; their labels carry the unit (TSC ticks or counts per iteration).

Uses matplotlib (Debian: python3-matplotlib). Exit status 0; 1 when nothing matched
the selection or the output cannot be written; 2 on bad arguments, an input that cannot
be read, or bad input (not UTF-8, not JSON, a field of the wrong type: FILE:LINE).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, NoReturn, Sequence

Record = Dict[str, Any]  # one JSON record of a results file


def _need_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    # Debian's python3-matplotlib belongs to /usr/bin/python3; another python3 on PATH
    # (pyenv, venv) does not see it. Re-run under the system interpreter once.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath(
            "/usr/bin/python3") and not os.environ.get("PMULAB_PLOT_REEXEC"):
        os.environ["PMULAB_PLOT_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(sys.argv[0]), *sys.argv[1:]])
    print("pmulab-plot: error: matplotlib is missing (apt-get install python3-matplotlib)", file=sys.stderr)
    sys.exit(2)


def die(msg: str, status: int = 2) -> NoReturn:
    print(f"pmulab-plot: error: {msg}", file=sys.stderr)
    sys.exit(status)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class InputError(Exception):
    """Bad input (a file that cannot be read, not JSON, a field of the wrong type): the
    message names FILE[:LINE]; the tools exit with status 2."""


def _shown(v: Any) -> str:
    return json.dumps(v)[:40].strip(chr(34))


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check_samples(obj: Record, where: str) -> None:
    """A samples record's fields (annotate reads them)."""
    for key in ("period", "samples", "harness"):
        if key in obj and not _is_count(obj[key]):
            raise InputError(f"{where}: {key} {_shown(obj[key])!r} is not a count")
    buckets = obj.get("buckets", [])
    if not isinstance(buckets, list):
        raise InputError(f"{where}: buckets is not a list")
    for i, b in enumerate(buckets):
        if not isinstance(b, dict):
            raise InputError(f"{where}: bucket {i} is not an object")
        if not isinstance(b.get("block"), str):
            raise InputError(f"{where}: bucket {i}: block {_shown(b.get('block'))!r} is not a block name")
        for key in ("offset", "count"):
            if not _is_count(b.get(key)):
                raise InputError(f"{where}: bucket {i}: {key} {_shown(b.get(key))!r} is not a count")


def _check_cycles(obj: Record, where: str) -> None:
    """A cycle_by_cycle record's fields (the heat map reads them)."""
    events = obj.get("events", [])
    if not (isinstance(events, list) and all(isinstance(e, str) for e in events)):
        raise InputError(f"{where}: events is not a list of event names")
    cycles = obj.get("cycles", [])
    if not isinstance(cycles, list):
        raise InputError(f"{where}: cycles is not a list")
    for c in cycles:
        if not (isinstance(c, dict) and isinstance(c.get("cycle"), int) and not isinstance(c["cycle"], bool)
                and isinstance(c.get("values"), dict)
                and all(_is_number(v) or v is None for v in c["values"].values())):
            raise InputError(f"{where}: cycle {_shown(c)!r} is not "
                             '{"cycle": N, "values": {EVENT: NUMBER, ...}}')


def _check(obj, where):
    """The fields the plots and annotate read, checked once so that a bad file is a message."""
    kind = obj.get("type")
    if kind in ("result", "samples", "cycle_by_cycle", "lbr") and "cpu" in obj and not _is_count(obj["cpu"]):
        raise InputError(f"{where}: cpu {_shown(obj['cpu'])!r} is not a CPU number")
    if kind == "samples":
        _check_samples(obj, where)
    if kind == "cycle_by_cycle":
        _check_cycles(obj, where)
    if kind != "result":
        return
    v = obj.get("per_iteration")
    if v is not None and not _is_number(v):
        raise InputError(f"{where}: per_iteration {_shown(v)!r} is not a number")
    if "size" in obj and not (isinstance(obj["size"], int) and not isinstance(obj["size"], bool)
                              and obj["size"] > 0):
        raise InputError(f"{where}: size {_shown(obj['size'])!r} is not a positive integer")


def _read(p: str) -> bytes:
    if p == "-":  # pmulab's output piped in (run-qemu.sh --json, pmulab-sim --json, pmulab-client)
        return sys.stdin.buffer.read()
    if not os.path.lexists(p):
        raise InputError(f"{p}: no such file")
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e.strerror}")


def read_records(paths: Sequence[str]) -> list[Record]:
    """The JSON records of results files, `run-qemu.sh --json` or `pmulab-sim --json` output
    or pmulab-client's output (JSON Lines; `-` is stdin), each with "lab": {"source": FILE}
    added where it has no "lab" object. InputError on a file that cannot be read or bad input."""
    recs = []
    for p in paths:
        data = _read(p)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})")
        for n, line in enumerate(text.split("\n"), 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{p}:{n}: not JSON ({e.msg})")
            except RecursionError:
                raise InputError(f"{p}:{n}: not JSON (nested too deeply)")
            if isinstance(obj, dict):
                _check(obj, f"{p}:{n}")
                if not isinstance(obj.get("lab"), dict):
                    obj["lab"] = {}
                obj["lab"].setdefault("source", p)
                obj["lab"].setdefault("line", n)
                recs.append(obj)
    return recs


def load(paths: Sequence[str]) -> list[Record]:
    try:
        return read_records(paths)
    except InputError as e:
        die(str(e))


def value(r: Record) -> float | None:
    v = r.get("per_iteration")
    if v is None:
        return None
    return float(v)


def spread(r: Record) -> tuple[float, float] | None:
    """The run's interquartile range (q1, q3) per iteration, where the record has it."""
    q1, q3 = r.get("q1"), r.get("q3")
    if isinstance(q1, (int, float)) and isinstance(q3, (int, float)) and _is_number(q1) and _is_number(q3):
        return float(q1), float(q3)
    return None


def provenance(recs: list[Record]) -> str:
    """Where the data came from, from the meta records (one phrase per kind of source):
    simulated (pmulab-sim), a virtual machine (the hypervisor's name, QEMU's -icount where
    pmulab-lab recorded it), or hardware (the CPU's brand)."""
    seen: list[str] = []
    for r in recs:
        if r.get("type") != "meta":
            continue
        lab_field = r.get("lab")
        lab: dict[str, Any] = lab_field if isinstance(lab_field, dict) else {}
        if r.get("simulated"):
            what = f"simulated: {r.get('simulated_machine', 'pmulab-sim')}"
        elif r.get("hypervisor"):
            what = f"virtual machine ({r.get('hypervisor_vendor') or 'hypervisor'}"
            # -icount as pmulab-lab booted it, else as pmulab measured it (the meta record's
            # icount_shift under TCG).
            icount = lab.get("icount") if lab.get("icount") is not None else r.get("icount_shift")
            what += f", -icount {icount})" if isinstance(icount, int) and not isinstance(icount, bool) else ")"
        else:
            what = f"hardware: {r.get('brand') or r.get('cpu_vendor') or 'unknown CPU'}"
        if what not in seen:
            seen.append(what)
    return "data: " + ("; ".join(seen) if seen else "no meta record (provenance unknown)")


def finish(fig: Any, recs: list[Record], note: str = "bars and bands: q1..q3 of the runs") -> None:
    """Every plot says where its data came from and what its marks mean (NOTE)."""
    fig.text(0.01, 0.005, provenance(recs) + "; " + note, fontsize="x-small",
             color="dimgray", ha="left", va="bottom")


def fmt_size(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def unit(event: object) -> str:
    """What one per-iteration value of the event counts."""
    return "TSC ticks per iteration" if str(event).lower() == "tsc" else "counts per iteration"


# What the memory kernels' per-iteration value is (src/measure/kernels.cpp); only
# pointer_chase's dependent loads measure load-to-use latency.
STAIRCASE_TITLES = {
    "pointer_chase": "load-to-use latency vs working set",
    "load_stream": "one 8-byte load per 64-byte line, streaming, vs working set",
    "store_stream": "one 8-byte store per 64-byte line, streaming, vs working set",
}


def run_of(r: Record) -> str:
    """The run a record belongs to: pmulab-lab's run folder, else the file it came from."""
    lab = r.get("lab", {})
    return str(lab.get("run") or os.path.basename(lab.get("source", "")))


def series_keys(sel: list[Record]) -> list[str]:
    """A series name per record: its run, plus the results file when one run has several
    files in the selection, plus the CPU when the selection has several."""
    files: dict[str, set[Any]] = {}
    for r in sel:
        files.setdefault(run_of(r), set()).add(r.get("lab", {}).get("file"))
    many_cpus = len({r.get("cpu", 0) for r in sel}) > 1
    keys = []
    for r in sel:
        parts = [run_of(r)]
        if len(files[run_of(r)]) > 1:
            parts.append(str(r["lab"].get("file")))
        if many_cpus:
            parts.append(f"cpu{r.get('cpu', 0)}")
        keys.append(" ".join(p for p in parts if p))
    return keys


def y_from_zero(ax: Any, values: Sequence[float | None], args: argparse.Namespace) -> None:
    """Bars and counts read against 0; --y-from-data zooms to the data instead."""
    if not args.y_from_data:
        ax.set_ylim(bottom=min([0.0, *(v for v in values if v is not None)]))


def plot_staircase(recs: list[Record], args: argparse.Namespace, plt: Any) -> tuple[Any, int]:
    sel = [r for r in recs if r.get("type") == "result" and r.get("event") == args.event
           and r.get("bench") == args.bench and "size" in r and value(r) is not None]
    if not sel:
        die(f"no '{args.bench}' results with a size for event '{args.event}'", 1)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    groups: dict[str, list[tuple[int, float | None, tuple[float, float] | None]]] = {}
    for key, r in zip(series_keys(sel), sel):
        groups.setdefault(key, []).append((int(r["size"]), value(r), spread(r)))
    for name, pts in sorted(groups.items(), key=lambda kv: kv[0]):
        pts.sort(key=lambda p: p[0])
        line = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        band = [p for p in pts if p[2] is not None]
        if band:
            ax.fill_between([p[0] for p in band], [p[2][0] for p in band if p[2]], [p[2][1] for p in band if p[2]],
                            color=line[0].get_color(), alpha=0.2, linewidth=0)
    sizes = sorted({int(r["size"]) for r in sel})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([fmt_size(s) for s in sizes], rotation=45)
    ax.set_xlabel("working set (bytes, log scale)")
    ax.set_ylabel(unit(args.event))
    what = STAIRCASE_TITLES.get(args.bench, f"{args.event} per iteration vs working set")
    ax.set_title(f"{args.bench}: {what}")
    ax.grid(True, alpha=0.3)
    y_from_zero(ax, [value(r) for r in sel], args)
    if len(groups) > 1:
        ax.legend(fontsize="small")
    return fig, len(sel)


def _yerr(vals: Sequence[float | None], spreads: Sequence[tuple[float, float] | None]) -> Any:
    """Asymmetric error bars from q1..q3 (None where no value has a spread)."""
    if not any(spreads):
        return None
    lo = [max(0.0, (v or 0.0) - q[0]) if q else 0.0 for v, q in zip(vals, spreads)]
    hi = [max(0.0, q[1] - (v or 0.0)) if q else 0.0 for v, q in zip(vals, spreads)]
    return [lo, hi]


def plot_cpus(recs: list[Record], args: argparse.Namespace, plt: Any) -> tuple[Any, int]:
    sel = [r for r in recs if r.get("type") == "result" and r.get("event") == args.event
           and r.get("bench") == args.bench and value(r) is not None]
    if not sel:
        die(f"no '{args.bench}' results for event '{args.event}'", 1)
    core_type = {}  # (run, cpu index) -> core type, from the `info` records of that run
    for r in recs:
        if r.get("type") == "cpu":
            core_type[(run_of(r), r.get("index"))] = r.get("core_type", "none")
    # One bar per (series, CPU): CPU 0 of one run never replaces CPU 0 of another.
    bars = {}
    spreads: dict[tuple[str, int], tuple[float, float] | None] = {}
    # The series without the CPU (the CPU is the x axis here).
    keys = series_keys([{k: v for k, v in r.items() if k != "cpu"} for r in sel])
    for key, r in zip(keys, sel):
        bars[(key, int(r.get("cpu", 0)))] = (value(r), core_type.get((run_of(r), r.get("cpu", 0)), "none"))
        spreads[(key, int(r.get("cpu", 0)))] = spread(r)
    series = sorted({k for k, _ in bars})
    cpus = sorted({c for _, c in bars})
    colours = {"core": "tab:blue", "atom": "tab:orange"}
    fig, ax = plt.subplots(figsize=(max(6, 0.4 * len(cpus) * len(series) + 2), 4.5))
    if len(series) == 1:
        ax.bar([str(c) for c in cpus], [bars[(series[0], c)][0] for c in cpus],
               color=[colours.get(bars[(series[0], c)][1], "tab:gray") for c in cpus],
               yerr=_yerr([bars[(series[0], c)][0] for c in cpus], [spreads.get((series[0], c)) for c in cpus]),
               capsize=3)
        types = [t for t in colours if any(bars[(series[0], c)][1] == t for c in cpus)]
        if types:
            ax.legend([plt.Rectangle((0, 0), 1, 1, color=colours[t]) for t in types],
                      [("P-core" if t == "core" else "E-core") for t in types])
    else:
        # One group per CPU, one bar (colour) per run; E-cores hatched.
        width = 0.8 / len(series)
        handles = []
        for i, name in enumerate(series):
            xs = [j + (i - (len(series) - 1) / 2) * width for j, c in enumerate(cpus) if (name, c) in bars]
            cs = [c for c in cpus if (name, c) in bars]
            h = ax.bar(xs, [bars[(name, c)][0] for c in cs], width=width, label=name, color=f"C{i % 10}",
                       yerr=_yerr([bars[(name, c)][0] for c in cs], [spreads.get((name, c)) for c in cs]),
                       capsize=2)
            for patch, c in zip(h, cs):
                if bars[(name, c)][1] == "atom":
                    patch.set_hatch("//")
            handles.append(h)
        labels = list(series)
        if any(t == "atom" for _, t in bars.values()):
            handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="//"))
            labels.append("E-core (hatched)")
        ax.set_xticks(range(len(cpus)))
        ax.set_xticklabels([str(c) for c in cpus])
        ax.legend(handles, labels, fontsize="small")
    ax.set_xlabel("CPU")
    ax.set_ylabel(unit(args.event))
    ax.set_title(f"{args.bench}: {args.event} per iteration, per CPU")
    ax.grid(True, axis="y", alpha=0.3)
    y_from_zero(ax, [v for v, _ in bars.values()], args)
    return fig, len(bars)


def place_labels(ax: Any, labels: list[tuple[str, float, float]]) -> None:
    """Labels next to their points, moved up in steps of one line where they would overlap
    a label already placed (in display space, estimated from the text length)."""
    ax.figure.canvas.draw()  # the axes' transform is final only once drawn
    placed: list[tuple[float, float, float]] = []  # x, y, width of each label, in pixels
    line = 11.0
    for text, x, y in sorted(labels, key=lambda t: (t[2], t[1])):
        px, py = ax.transData.transform((x, y))
        width = 6.5 * len(text)
        dy = 4.0
        while any(abs(px - qx) < max(width, qw) and abs(py + dy - qy) < line for qx, qy, qw in placed):
            dy += line
        placed.append((px, py + dy, width))
        ax.annotate(text, (x, y), fontsize="small", textcoords="offset points", xytext=(4, dy * 72 / ax.figure.dpi))


def plot_compare(recs: list[Record], args: argparse.Namespace, plt: Any) -> tuple[Any, int]:
    pts: dict[tuple[Any, ...], dict[Any, float]] = {}
    qs: dict[tuple[Any, ...], dict[Any, tuple[float, float] | None]] = {}
    for r in recs:
        v = value(r)
        if r.get("type") != "result" or v is None:
            continue
        key = (run_of(r), r.get("lab", {}).get("file"), r.get("cpu", 0), str(r.get("bench", "?")), r.get("size"))
        pts.setdefault(key, {})[r.get("event")] = v
        qs.setdefault(key, {})[r.get("event")] = spread(r)
    xy = [(k, v[args.x], v[args.y]) for k, v in pts.items() if args.x in v and args.y in v]
    if not xy:
        die(f"no benchmark measured both '{args.x}' and '{args.y}'", 1)
    fig, ax = plt.subplots(figsize=(6, 6))
    for k, x, y in xy:
        qx, qy = qs[k].get(args.x), qs[k].get(args.y)
        ax.errorbar([x], [y], xerr=_yerr([x], [qx]), yerr=_yerr([y], [qy]), fmt="o", capsize=3)
    place_labels(ax, [(k[3] + (f" {fmt_size(int(k[4]))}" if k[4] else ""), x, y) for k, x, y in xy])
    ax.set_xlabel(f"{args.x} ({unit(args.x)})")
    ax.set_ylabel(f"{args.y} ({unit(args.y)})")
    ax.set_title(f"{args.y} vs {args.x}, per iteration")
    ax.grid(True, alpha=0.3)
    if not args.y_from_data:
        ax.set_xlim(left=min(0.0, min(p[1] for p in xy)))
    y_from_zero(ax, [p[2] for p in xy], args)
    return fig, len(xy)


def main(argv: Sequence[str]) -> int:
    from . import heatmap
    ap = argparse.ArgumentParser(prog="pmulab-plot", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("staircase")
    s.add_argument("files", nargs="+")
    s.add_argument("--event", default="tsc")
    s.add_argument("--bench", default="pointer_chase")
    c = sub.add_parser("cpus")
    c.add_argument("files", nargs="+")
    c.add_argument("--bench", required=True)
    c.add_argument("--event", default="tsc")
    m = sub.add_parser("compare")
    m.add_argument("files", nargs="+")
    m.add_argument("--x", required=True)
    m.add_argument("--y", required=True)
    for p in (s, c, m):
        p.add_argument("--y-from-data", action="store_true",
                       help="fit the value axis to the data (default: it starts at 0)")
    h = heatmap.add_parser(sub)
    for p in (s, c, m, h):
        p.add_argument("--out", required=True, help="output file: .png or .svg")
    args = ap.parse_args(argv)
    ext = os.path.splitext(args.out)[1].lower()
    if ext not in (".png", ".svg"):
        die(f"--out {args.out}: use a .png or .svg file name")
    recs = load(args.files)
    _need_matplotlib()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plots = {"staircase": plot_staircase, "cpus": plot_cpus, "compare": plot_compare,
             "cycle-by-cycle": heatmap.plot_cycles}
    fig, n = plots[args.cmd](recs, args, plt)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    if args.cmd == "cycle-by-cycle":
        finish(fig, recs, heatmap.NOTE)
    else:
        finish(fig, recs)
    try:
        fig.savefig(args.out, dpi=120)
    except OSError as e:
        die(f"cannot write {args.out}: {e.strerror}", 1)
    print(f"wrote {args.out} ({n} {'cells' if args.cmd == 'cycle-by-cycle' else 'points'})")
    return 0


def cli() -> None:
    """The command line entry point (tools/pmulab-plot)."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
