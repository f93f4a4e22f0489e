"""pmulab-cache: nanoBench's CacheAnalyzer on pmulab (docs/cache.md).

  pmulab-cache seq --sim DUMP [--sim-cache SPEC] --level 1 "A B C D A? B! C?"
      nanoBench's cacheSeq: the hits and misses of the `?` accesses at one level
  pmulab-cache policy --sim DUMP --level 2 [--sequences 100 --length 50]
      nanoBench's replPolicy: the replacement policies consistent with random sequences
  pmulab-cache ways --sim DUMP --level 1
      the associativity measured (the most blocks of one set that all hit), against CPUID's
  pmulab-cache graph --sim DUMP --level 1 "A B C D" --out age.png
      nanoBench's cacheGraph: the hits of each block after n fresh blocks, as a plot
  pmulab-cache evset --sim DUMP --level 3 0x10100
      a minimal eviction set of a line of R14's area, by measurement (group testing)

Where it runs: --sim DUMP / --sim-model NAME (pmulab-sim, with --sim-cache SPEC and
--sim-seed N), --tcp HOST:PORT (an agent: `pmulab serve --tcp PORT`), else a QEMU boot
(--smp, --icount; QEMU has no PMU and no cache model: its runs end with status 3).
Blocks lie in one set of the level by default (the first set the harness's own data page
leaves alone), or in --sets LIST; levels 2 and 3 clear the levels above before every
access (--no-clear-hl: not); a WBINVD before every run (--no-wbinvd: not).
Exit status: 0; 1 the target failed; 2 bad input (nothing runs); 3 unsupported here.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from fractions import Fraction
from typing import Any, List, Optional, Sequence, Tuple

from . import asm as pmulab_asm
from . import client as pmulab_client
from .cache_policies import Element, get_hits, known_policy, policy_fits, policy_names
from .cache_seq import Unsupported, Usage, default_set, parse_code_set, parse_seq, parse_sets
from .cache_evset import cmd_evset
from .cache_slices import SliceTarget
from .cache_target import Target, TargetError

PROG = "pmulab-cache"


def fmt(x: Any) -> str:
    return f"{float(x):.2f}"


def chosen_sets(t: Target, args: Any) -> List[int]:
    return parse_sets(args.sets) if args.sets else [default_set(t.geo, args.level)]


def dry_run(t: Target, args: Any, seqs: List[Tuple[str, List[Element]]], init: List[Element]) -> int:
    """The pmulab command line of each sequence (run-qemu.sh, a campaign), and with -v its
    assembly on stderr."""
    _, _, reqs = t.requests(args.level, chosen_sets(t, args), seqs, init)
    for (text, _), (code, argv, _) in zip(seqs, reqs):
        words = [w for w in argv if w not in ("--code-file", "code", "--init-file", "init")]
        words[1:1] = ["--code", code.body.hex()] + (["--init", code.init.hex()] if code.init else [])
        print(" ".join(pmulab_asm.quote(w) for w in words))
        if args.verbose:
            print(f"# {text}\n# init: " + "; ".join(code.init_asm) + "\n# body: " + "; ".join(code.asm),
                  file=sys.stderr)
    return 0


def per_set_counts(t: Target, args: Any, seqs: List[Tuple[str, List[Element]]],
                   init: List[Element]) -> List[dict]:
    """--per-set: each sequence again once per set it uses (the --sets and the blocks' own
    sets), the same code with only that set's `?` loads counted: {set: Result} per sequence."""
    sets = chosen_sets(t, args)
    used = sorted(set(sets) | {o for _, seq in seqs for _, o, _ in [*seq, *init] if o is not None})
    out: List[dict] = [{} for _ in seqs]
    for s in used:
        for i, r in enumerate(t.run_many(args.level, sets, seqs, init, count_sets=[s])):
            out[i][s] = r
    return out


def cmd_seq(t: Target, args: Any) -> int:
    seqs = [(s, parse_seq(s)) for s in args.seq]
    init = parse_seq(args.seq_init, "--seq-init") if args.seq_init else []
    if args.dry_run:
        return dry_run(t, args, seqs, init)
    per_set = per_set_counts(t, args, seqs, init) if args.per_set and not args.events else None
    for i, r in enumerate(t.run_many(args.level, chosen_sets(t, args), seqs, init)):
        if args.events:
            if args.json:
                print(json.dumps({"seq": r.seq, "level": args.level,
                                  "events": {k: r.number(v) for k, v in r.events.items()}}))
                continue
            if len(seqs) > 1:
                print(f"seq: {r.seq}")
            for k, v in r.events.items():
                print(f"{k}: {fmt(v)}")
            continue
        rec = {"seq": r.seq, "level": args.level, "hits": r.number(r.hits), "misses": r.number(r.misses)}
        if per_set is not None:
            rec["sets"] = {str(s): {"hits": x.number(x.hits), "misses": x.number(x.misses)}
                           for s, x in per_set[i].items()}
        if args.json:
            print(json.dumps(rec))
        else:
            if len(seqs) > 1:
                print(f"seq: {r.seq}")
            print(f"L{args.level}_HIT: {fmt(r.hits)}")
            print(f"L{args.level}_MISS: {fmt(r.misses)}")
            for s, x in (per_set[i] if per_set is not None else {}).items():
                print(f"  set {s}: L{args.level}_HIT {fmt(x.hits)}, L{args.level}_MISS {fmt(x.misses)}")
    return 0


def random_seq(rng: random.Random, n: int) -> str:
    """nanoBench's getRandomSeq: block 0, then n times either a new block or a counted
    access to a block seen before (each with probability 1/2)."""
    seq, acts = [0], [""]
    for _ in range(n):
        if rng.choice([True, False]):
            seq.append(max(seq) + 1)
            acts.append("")
        else:
            seq.append(rng.choice(seq))
            acts.append("?")
    return " ".join(f"{s}{a}" for s, a in zip(seq, acts))


def candidates(args: Any, assoc: int) -> List[str]:
    if args.policies:
        names = [p.strip() for p in args.policies.split(",") if p.strip()]
        bad = [p for p in names if not known_policy(p)]
        if bad:
            raise Usage(f"--policies: unknown policy '{bad[0]}'; known: {', '.join(policy_names())} "
                        "and the QLRU_Hxx_Mx_Rx_Ux[_UMO] variants")
    else:
        names = policy_names(args.all_qlru)
    return [p for p in names if policy_fits(p, assoc)]


def cmd_policy(t: Target, args: Any) -> int:
    assoc = args.assoc or t.geo[args.level].ways
    sets = chosen_sets(t, args)
    names = candidates(args, assoc)
    rng = random.Random(args.seed)
    init = (args.init_seq + " ") if args.init_seq else ""
    texts = [init + random_seq(rng, args.length) for _ in range(args.sequences)]
    seqs = [(s, parse_seq(s)) for s in texts]
    possible = list(names)
    n = 0
    for r, (_, seq) in zip(t.run_many(args.level, sets, seqs, reps=args.reps), seqs):
        n += 1
        actual = int(r.hits + Fraction(1, 2))
        possible = [p for p in possible if get_hits(seq, p, assoc, sets) == actual]
        if args.verbose:
            print(f"{r.seq}: {actual} hits; possible: {', '.join(possible) or 'none'}", file=sys.stderr)
    if args.json:
        print(json.dumps({"level": args.level, "policies": possible, "sequences": n}))
    else:
        print(f"L{args.level}: {assoc} ways, {n} random sequences of length {args.length} in set(s) "
              f"{','.join(map(str, sets))}, {len(names)} candidate policies")
        print("Possible policies: " + (", ".join(possible) if possible else
                                       "none (a randomized or adaptive policy? try --all-qlru)"))
    return 0


def ways_seqs(k: int) -> str:
    blocks = [f"B{i}" for i in range(k)]
    return " ".join(blocks) + " " + " ".join(b + "?" for b in blocks)


def cmd_ways(t: Target, args: Any) -> int:
    cpuid = t.geo[args.level].ways
    top = args.max or 2 * cpuid + 2
    sets = chosen_sets(t, args)
    seqs = [(ways_seqs(k), parse_seq(ways_seqs(k))) for k in range(1, top + 1)]
    found: Optional[int] = None
    rows = []
    for k, r in enumerate(t.run_many(args.level, sets, seqs), 1):
        rows.append((k, r.hits))
        if found is None and r.hits < k * len(sets):
            found = k - 1
    ways = found if found is not None else top
    if args.json:
        print(json.dumps({"level": args.level, "ways": ways, "cpuid_ways": cpuid,
                          "hits": [[k, float(h)] for k, h in rows]}))
    else:
        for k, h in rows:
            print(f"{k:3d} blocks, then each again: {fmt(h)} hits")
        agree = "agrees with" if ways == cpuid else "differs from"
        print(f"L{args.level}: {ways} ways measured ({'at least ' if found is None else ''}the most blocks of one set "
              f"that all hit again); CPUID says {cpuid}: the measurement {agree} CPUID")
    return 0


def graph_blocks(seq: Sequence[Element]) -> List[str]:
    out: List[str] = []
    for name, _, kind in seq:
        if kind != "wbinvd" and name not in out:
            out.append(name)
    return out


def age_sequences(text: str, blocks: List[str], max_age: int) -> List[Tuple[str, str, int]]:
    """cacheGraph's sequences: SEQ (no ?) + n fresh blocks + BLOCK? for n = 0..max_age."""
    base = text.replace("?", "").strip()
    used = set(graph_blocks(parse_seq(text)))
    fresh = [f"N{i}" for i in range(10 * max_age + 10) if f"N{i}" not in used][:max_age]
    return [(f"{base} {' '.join(fresh[:n])} {b}?".replace("  ", " "), b, n)
            for b in blocks for n in range(max_age + 1)]


def cmd_graph(t: Target, args: Any) -> int:
    seq = parse_seq(args.seq)
    if args.out:
        from . import cache_plot
        cache_plot.need_matplotlib()
    blocks = [b for b in (args.blocks.split(",") if args.blocks else graph_blocks(seq))]
    max_age = args.max_age or 2 * t.geo[args.level].ways
    items = age_sequences(args.seq, blocks, max_age)
    seqs = [(s, parse_seq(s)) for s, _, _ in items]
    traces: dict[str, List[float]] = {b: [] for b in blocks}
    for (_, b, _), r in zip(items, t.run_many(args.level, chosen_sets(t, args), seqs)):
        traces[b].append(float(r.hits))
    if args.json:
        print(json.dumps({"seq": args.seq, "level": args.level, "ages": traces}))
    if args.out:
        from . import cache_plot
        cache_plot.age_graph(args, traces, t.meta())
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    cmds = {}
    for name, what in (("seq", "the hits and misses of a sequence"), ("policy", "infer the replacement policy"),
                       ("ways", "measure the associativity"), ("graph", "the age graph of a sequence"),
                       ("evset", "a minimal eviction set of a line (L3)")):
        s = sub.add_parser(name, help=what)
        cmds[name] = s
        pmulab_client.add_sim_options(s)
        s.add_argument("--tcp", metavar="HOST:PORT", help="an agent on TCP (pmulab serve --tcp PORT)")
        s.add_argument("--smp", type=int, default=2, help="QEMU boot: CPUs")
        s.add_argument("--icount", help="QEMU boot: -icount SHIFT")
        s.add_argument("--no-build", action="store_true", help="QEMU boot: do not run make first")
        s.add_argument("--level", type=int, default=1, choices=(1, 2, 3), help="the cache level (default 1)")
        s.add_argument("--sets", help="cache sets of the level, e.g. 4 or 4-7 (default: one set)")
        s.add_argument("--slice", type=int, help="level 3: blocks in this L3 slice (nanoBench -slice; default 0 "
                       "where the target's C-Boxes tell slices apart; docs/cache.md)")
        s.add_argument("--cpu", default="bsp", help="the CPU to measure on (default: the BSP)")
        s.add_argument("--geometry", metavar="SPEC", help="the caches, where the target's records do not say: "
                       "L1D:32K:8,L2:256K:4,L3:8M:16 (SIZE:WAYS[:LINE])")
        s.add_argument("--no-clear-hl", action="store_true", help="do not clear the levels above (nanoBench -noClearHL)")
        s.add_argument("--no-wbinvd", action="store_true", help="no WBINVD before each run (nanoBench -noWbinvd)")
        s.add_argument("--reps", type=int, default=10 if name != "policy" else 3, help="measured runs per sequence")
        s.add_argument("--warmup", type=int, default=1, help="discarded runs per sequence")
        s.add_argument("--agg", default="median", choices=("min", "median", "avg", "trimmed", "max"))
        s.add_argument("--prefetchers", choices=("off", "on"), help="run --prefetchers: off switches the hardware "
                       "prefetchers off for each run where the target can (docs/cache.md; not passed by default)")
        s.add_argument("--lfences", type=int, default=25, help="LFENCEs before each access (nanoBench: 25)")
        s.add_argument("--code-set", metavar="auto|N", help="place the generated code so that its first line "
                       "falls in set N of its 4 KiB page (auto: nanoBench's codeOffset rule, the largest gap "
                       "between the sets used); run --code-offset")
        s.add_argument("--json", action="store_true", help="JSON lines")
        s.add_argument("-v", "--verbose", action="store_true")
    cmds["seq"].add_argument("seq", nargs="+", help="an access sequence, e.g. 'A B C A? B!'")
    cmds["seq"].add_argument("--seq-init", help="a sequence in the init block (not measured)")
    cmds["seq"].add_argument("--per-set", action="store_true", help="also the hits and misses of each set (the "
                             "same code once more per set, only that set's ? loads counted)")
    cmds["seq"].add_argument("--events", metavar="SPECS", help="measure these events instead of the level's "
                             "hits and misses (e.g. tsc under QEMU -icount; pmulab run --events)")
    cmds["seq"].add_argument("--dry-run", action="store_true", help="print each sequence's pmulab command line "
                             "(-v: its assembly) and stop; without --sim it needs --geometry, and the events are "
                             "--events or Intel's")
    pol = cmds["policy"]
    pol.add_argument("--sequences", type=int, default=100, help="random sequences (default 100)")
    pol.add_argument("--length", type=int, default=50, help="their length (default 50)")
    pol.add_argument("--seed", type=int, default=1, help="the random sequences' seed (default 1)")
    pol.add_argument("--policies", help="candidate policies, comma-separated (default: cacheSim.py's common ones)")
    pol.add_argument("--all-qlru", action="store_true", help="also every deterministic QLRU variant")
    pol.add_argument("--assoc", type=int, help="the associativity to simulate (default: the level's)")
    pol.add_argument("--init-seq", help="a sequence before each random one")
    cmds["ways"].add_argument("--max", type=int, help="the most blocks to try (default 2 x CPUID's ways + 2)")
    g = cmds["graph"]
    g.add_argument("seq", help="the sequence before the fresh blocks")
    g.add_argument("--blocks", help="blocks to follow, comma-separated (default: every block of the sequence)")
    g.add_argument("--max-age", type=int, help="fresh blocks, at most (default 2 x the ways)")
    g.add_argument("--out", help="the plot: .png or .svg")
    ev = cmds["evset"]
    ev.add_argument("line", help="the line: an offset in R14's area, or a physical address in its first L3 way")
    ev.add_argument("--candidates", type=int, help="candidate lines to start from (default 8 x the ways; doubled "
                    "until they evict the line)")
    ev.add_argument("--assoc", type=int, help="the ways to reduce to (default: CPUID's)")
    ev.set_defaults(level=3)
    return p


def check(args: Any) -> None:
    """Bad input before anything starts (Usage), then what no target can do (Unsupported)."""
    problem = pmulab_client.sim_options_problem(args)
    if problem:
        raise Usage(problem)
    if args.tcp and (args.sim is not None or args.sim_model is not None):
        raise Usage("give --sim (or --sim-model) or --tcp, not both")
    for name in ("reps", "warmup", "lfences"):
        if getattr(args, name) < (1 if name == "reps" else 0):
            raise Usage(f"--{name}: {getattr(args, name)} is out of range")
    if args.cmd == "seq":
        for s in args.seq:
            parse_seq(s)
        if args.seq_init:
            parse_seq(args.seq_init, "--seq-init")
    if args.cmd == "graph":
        parse_seq(args.seq)
        if args.out and not args.out.lower().endswith((".png", ".svg")):
            raise Usage(f"--out {args.out}: use a .png or .svg file name")
    if args.cmd != "seq" and args.no_wbinvd:
        raise Usage(f"{args.cmd} compares with caches that start empty: it needs the WBINVD before each run "
                    "(drop --no-wbinvd)")
    if args.cmd == "evset":
        if (args.candidates is not None and args.candidates < 1) or (args.assoc is not None and args.assoc < 1):
            raise Usage("--candidates and --assoc must be at least 1")
        from .cache_evset import parse_target
        parse_target(args.line)
    if args.cmd == "policy":
        if args.sequences < 1 or args.length < 1:
            raise Usage("--sequences and --length must be at least 1")
        if args.init_seq:
            parse_seq(args.init_seq, "--init-seq")
        candidates(args, 8)
    if args.sets:
        parse_sets(args.sets)
    if args.code_set is not None:
        parse_code_set(args.code_set)
    if args.tcp and not args.tcp.rpartition(":")[2].isdigit():
        raise Usage(f"--tcp {args.tcp}: give HOST:PORT")
    if args.slice is not None and args.slice < 0:
        raise Usage(f"--slice {args.slice}: a slice is a number from 0")


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    t = SliceTarget(args, log=sys.stderr if args.verbose else None)
    try:
        check(args)
        t.open()
        if args.level not in t.geo:
            have = ", ".join(f"L{x}" for x in sorted(t.geo)) or "none"
            raise Usage(f"--level {args.level}: the CPU has no level-{args.level} data cache (it has {have})")
        t.events(args.level)
        if args.verbose and t.geo_source:
            for lv in sorted(t.geo):
                print(f"{PROG}: {t.geo[lv].describe()} (from {t.geo_source})", file=sys.stderr)
        cmds = {"seq": cmd_seq, "policy": cmd_policy, "ways": cmd_ways, "graph": cmd_graph, "evset": cmd_evset}
        return cmds[args.cmd](t, args)
    except Usage as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except Unsupported as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 3
    except TargetError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.status
    finally:
        t.close()


def cli() -> None:
    """The command line entry point (tools/pmulab-cache)."""
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print(f"{PROG}: stopped by SIGINT", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    cli()
