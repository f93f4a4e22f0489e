#!/usr/bin/env python3
"""Checks pmulab's layering: includes flow down the stack, never up or sideways.

    base -> x86 -> events -> pmu -> {measure, census} -> {app, sim} -> commands -> {efi, host}

sim (the simulated CPUs, host-only) sits beside app: it may use census and the
layers below, and host tools and tests use it.

A file in src/LAYER/ may include headers of its own folder and of the layers below
it; measure and census are peers (neither includes the other), and so are efi and
host. Also checked: no header include cycle, and no source file in src/ longer than
MAX_LINES (a file that grows past it should be split along its seams).

Usage: tools/check-layers.py [--root DIR]. Prints one line per violation and exits 1
when there are any, else prints a one-line summary and exits 0.
"""

from __future__ import annotations
import argparse
import os
import re
import sys

from . import ROOT

# Rank of each folder under src/; equal ranks are peers that may not include each other.
LAYERS = {
    "base": 0,
    "x86": 1,
    "events": 2,
    "pmu": 3,
    "measure": 4,
    "census": 4,
    "app": 5,
    "sim": 5,
    "commands": 6,
    "efi": 7,
    "host": 7,
}
MAX_LINES = 600
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".h", ".cpp", ".S")


def layer_of(rel: str) -> str | None:
    """The layer folder of a path relative to src/ ('x86/cpuid.h' -> 'x86')."""
    top = rel.split("/", 1)[0]
    return top if top in LAYERS else None


def resolve(src_root: str, including: str, target: str) -> str | None:
    """Path (relative to src/) of an include: the including file's folder first, then src/."""
    here = os.path.dirname(including)
    for cand in (os.path.normpath(os.path.join(here, target)), os.path.normpath(target)):
        if os.path.isfile(os.path.join(src_root, cand)):
            return cand
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description="check pmulab's include layering")
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args()
    src_root = os.path.join(args.root, "src")
    files = []
    for dirpath, _, names in os.walk(src_root):
        for n in sorted(names):
            if n.endswith(SOURCE_EXT):
                files.append(os.path.relpath(os.path.join(dirpath, n), src_root).replace(os.sep, "/"))
    files.sort()
    problems = []
    graph = {}
    for rel in files:
        text = open(os.path.join(src_root, rel), encoding="utf-8").read()
        lines = text.count("\n")
        if lines > MAX_LINES and not rel.endswith(".S"):
            problems.append(f"src/{rel}: {lines} lines (more than {MAX_LINES}): split it along its seams")
        mine = layer_of(rel)
        if mine is None:
            problems.append(f"src/{rel}: not in a layer folder ({', '.join(LAYERS)})")
            continue
        deps = []
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            dep = resolve(src_root, rel, target)
            if dep is None:
                continue  # generated (pmulab_version.h) or a system header in quotes
            deps.append(dep)
            theirs = layer_of(dep)
            if theirs is None or theirs == mine:
                continue
            if LAYERS[theirs] > LAYERS[mine]:
                problems.append(f"src/{rel}: includes {target}: {theirs} is above {mine}")
            elif LAYERS[theirs] == LAYERS[mine]:
                problems.append(f"src/{rel}: includes {target}: {theirs} and {mine} are peers")
        graph[rel] = deps
    # Header cycles (depth-first search; a grey node reached again closes a cycle).
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for d in graph.get(node, []):
            if state.get(d) == 1:
                cyc = stack[stack.index(d):] + [d]
                problems.append("include cycle: " + " -> ".join(cyc))
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[node] = 2

    for f in files:
        if f not in state:
            visit(f, [])
    if problems:
        for p in problems:
            print(p)
        print(f"check-layers: {len(problems)} problem(s) in {len(files)} files")
        return 1
    print(f"check-layers: {len(files)} files, includes flow down, no cycles, none over {MAX_LINES} lines")
    return 0


def cli() -> None:
    """The command line entry point (tools/check-layers.py)."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
