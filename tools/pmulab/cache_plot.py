"""pmulab.cache_plot: cacheGraph's age graph (tools/pmulab-cache graph --out) in
tools/pmulab-plot's style: its matplotlib set-up, its provenance line and its errors."""

from __future__ import annotations

from typing import Any, Dict, List

from . import plot


def need_matplotlib() -> None:
    """Before anything is measured: matplotlib, or the system interpreter that has it."""
    plot._need_matplotlib()


def age_graph(args: Any, traces: Dict[str, List[float]], meta: Dict[str, Any]) -> None:
    """One line per block: its hits at the level after n fresh blocks (n = 0 ..)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for block, hits in traces.items():
        ax.plot(range(len(hits)), hits, marker="o", label=block)
    ax.set_xlabel("fresh blocks accessed after the sequence")
    ax.set_ylabel(f"L{args.level} hits of the block's access")
    ax.set_title(f"age graph, L{args.level}: {args.seq.replace('?', '')} <n fresh blocks> <block>?")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    if len(traces) > 1:
        ax.legend(fontsize="small")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.text(0.01, 0.005, plot.provenance([meta]), fontsize="x-small", color="dimgray", ha="left", va="bottom")
    try:
        fig.savefig(args.out, dpi=120)
    except OSError as e:
        plot.die(f"cannot write {args.out}: {e.strerror}", 1)
    print(f"wrote {args.out} ({sum(len(h) for h in traces.values())} points)")
