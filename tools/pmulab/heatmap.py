"""pmulab-plot cycle-by-cycle: a heat map of `run --cycle-by-cycle` records, the events by
cycle as nanoBench's cycleByCycle.py shows them (rows: the events as the user wrote them;
columns: the cycles; the shade of a cell: the event's increment in that cycle).

Reads {"type":"cycle_by_cycle","cpu":C,"bench":"NAME","events":[..],
"cycles":[{"cycle":c,"values":{EVENT: increment, ...}}, ...]} (extra fields are ignored),
one panel per (CPU, bench) record. A cell's shade is its increment relative to the largest
increment of its row (blue; red for a negative one), so that an event that counts in
hundreds and one that counts in ones read alike; the cells carry their values when there are
at most MAX_LABELLED cycles, and the right margin each row's largest. A cycle without a value
for an event is a grey cell.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from .plot import Record, die

MAX_LABELLED = 48  # cycles up to which every cell carries its value
NOTE = "shade: each event's increment in the cycle, relative to its row's largest (red: negative)"


def select(recs: list[Record], args: argparse.Namespace) -> list[Record]:
    """The cycle_by_cycle records of --cpu and --bench, in input order."""
    sel = [r for r in recs if r.get("type") == "cycle_by_cycle"
           and (args.cpu is None or r.get("cpu") == args.cpu)
           and (args.bench is None or r.get("bench") == args.bench)]
    if not sel:
        which = "".join([f" for CPU {args.cpu}" if args.cpu is not None else "",
                         f" of bench '{args.bench}'" if args.bench is not None else ""])
        die(f"no cycle_by_cycle records{which} (pmulab run --cycle-by-cycle --json writes them)", 1)
    return sel


def events_of(rec: Record) -> list[str]:
    """The record's events: its "events" list, then any other event its cycles have."""
    names = list(rec.get("events") or [])
    for c in rec.get("cycles", []):
        names += [e for e in c["values"] if e not in names]
    return names


def table(rec: Record, args: argparse.Namespace) -> tuple[list[str], list[int], dict[tuple[str, int], float]]:
    """(rows, cycles, {(event, cycle): increment}) of one record, after --event and
    --remove-empty-events."""
    cycles = sorted({int(c["cycle"]) for c in rec.get("cycles", [])})
    values: dict[tuple[str, int], float] = {}
    for c in rec.get("cycles", []):
        for e, v in c["values"].items():
            if v is not None:
                values[(e, int(c["cycle"]))] = float(v)
    rows = events_of(rec)
    if args.event:
        missing = [e for e in args.event if e not in rows]
        if missing:
            die(f"CPU {rec.get('cpu', 0)}, bench '{rec.get('bench', '?')}': no event '{missing[0]}' "
                f"(it has {', '.join(rows) or 'none'})", 1)
        rows = list(args.event)
    if args.remove_empty_events:
        rows = [e for e in rows if any(values.get((e, c)) for c in cycles)]
    return rows, cycles, values


def fmt(v: float) -> str:
    return str(int(v)) if v.is_integer() else f"{v:.2f}"


def shade(plt: Any, v: float, top: float) -> tuple[Any, bool]:
    """The fill colour of increment V in a row whose largest |increment| is TOP, and
    whether text on it is to be white."""
    frac = abs(v) / top if top else 0.0
    return plt.get_cmap("Reds" if v < 0 else "Blues")(frac), frac > 0.6


def draw(ax: Any, plt: Any, panel: int, rec: Record, args: argparse.Namespace) -> int:
    """One record's heat map on AX; the number of cells with a value. Every cell is a
    rectangle with the SVG id cell-PANEL-ROW-COLUMN (missing-... where it has no value)."""
    rows, cycles, values = table(rec, args)
    labelled = len(cycles) <= MAX_LABELLED
    n = 0
    for i, e in enumerate(rows):
        top = max((abs(values[(e, c)]) for c in cycles if (e, c) in values), default=0.0)
        for j, c in enumerate(cycles):
            v: Optional[float] = values.get((e, c))
            colour, white = shade(plt, v, top) if v is not None else ("lightgray", False)
            cell = plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", linewidth=0.5)
            cell.set_gid(f"{'cell' if v is not None else 'missing'}-{panel}-{i}-{j}")
            ax.add_patch(cell)
            if v is None:
                continue
            n += 1
            if labelled:
                ax.text(j + 0.5, i + 0.5, fmt(v), ha="center", va="center", fontsize="x-small",
                        color="white" if white else "black")
        ax.text(len(cycles) + 0.2, i + 0.5, f"max {fmt(top)}", va="center", fontsize="x-small", color="dimgray")
    ax.set_xlim(0, max(1, len(cycles)))
    ax.set_ylim(max(1, len(rows)), 0)
    step = max(1, -(-len(cycles) // MAX_LABELLED))
    ax.set_xticks([j + 0.5 for j in range(0, len(cycles), step)])
    ax.set_xticklabels([str(cycles[j]) for j in range(0, len(cycles), step)], fontsize="x-small")
    ax.set_yticks([i + 0.5 for i in range(len(rows))])
    ax.set_yticklabels(rows, fontsize="small")
    ax.set_xlabel("cycle")
    ax.set_title(f"{rec.get('bench', '?')}: increment per cycle, CPU {rec.get('cpu', 0)}")
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    return n


def plot_cycles(recs: list[Record], args: argparse.Namespace, plt: Any) -> tuple[Any, int]:
    """The heat maps of the selected records, one panel each, stacked."""
    sel = select(recs, args)
    shapes = [table(r, args)[:2] for r in sel]
    width = min(30.0, max(6.0, 0.32 * max(len(c) for _, c in shapes) + 3.5))
    heights = [0.35 * max(1, len(rows)) + 1.3 for rows, _ in shapes]
    fig, axes = plt.subplots(len(sel), 1, figsize=(width, sum(heights) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    n = sum(draw(axes[k][0], plt, k, r, args) for k, r in enumerate(sel))
    return fig, n


def add_parser(sub: Any) -> Any:
    """The cycle-by-cycle subcommand of pmulab-plot."""
    p = sub.add_parser("cycle-by-cycle", help="heat map of cycle_by_cycle records: events by cycle")
    p.add_argument("files", nargs="+")
    p.add_argument("--cpu", type=int, metavar="N", help="only this CPU's records")
    p.add_argument("--bench", metavar="NAME", help="only this benchmark's (code's) records")
    p.add_argument("--event", action="append", metavar="EV", help="only this event (repeatable; rows in this order)")
    p.add_argument("--remove-empty-events", action="store_true",
                   help="leave out events that are 0 in every cycle (nanoBench's -remove_empty_events)")
    return p
