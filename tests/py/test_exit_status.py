"""One exit-status convention across every tool (README "Exit status of the tools").

A missing input file and a bad option are both usage errors: 2 in every tool (126 in
run-qemu.sh, whose 1-4 are pmulab's own), never 1 (the command ran and failed)."""

import os
import tempfile

import pytest

from pmulab_test import run_tool

MISSING = "/nonexistent/pmulab-input"

# (tool, arguments naming a missing input file); the bad option is the tool with --bogus.
TOOLS = [
    ("pmulab-cpuid", [MISSING]),
    ("pmulab-sim", ["--dump", MISSING, "info"]),
    ("pmulab-sim", ["--model", "skylake", "--config", MISSING]),
    ("pmulab-check", [MISSING]),
    ("pmulab-cachesim", ["--dump", MISSING]),
    ("tools/pmulab-plot", ["staircase", MISSING, "--out", "OUT/p.png"]),
    ("tools/pmulab-plot", ["cycle-by-cycle", MISSING, "--out", "OUT/h.svg"]),
    ("tools/pmulab-annotate", [MISSING, "--code", "90"]),
    ("tools/pmulab-lab", ["merge", MISSING, "--out", "OUT/m"]),
    ("tools/pmulab-client", ["--qemu", "--batch", MISSING]),
    ("tools/pmulab-asm", ["--campaign", MISSING, "OUT/c.cfg"]),
    ("tools/pmulab-nanobench", ["--parse", MISSING]),
    ("tools/pmulab-cache", ["seq", "--sim", MISSING, "A?"]),
    ("tools/pmulab-events", ["--perfmon", MISSING, "--out", "OUT/ev", "--all"]),
    ("tools/lava/pmulab-lava", ["render", "--template", "qemu", "--campaign", MISSING]),
    ("tools/lava/pmulab-lava", ["results", MISSING, "--out", "OUT/r.jsonl"]),
    ("run-qemu.sh", ["--config", MISSING]),
]


def usage_status(tool):
    return 126 if tool == "run-qemu.sh" else 2


@pytest.mark.parametrize("tool,args", TOOLS, ids=[f"{t.split('/')[-1]}-{i}" for i, (t, _) in enumerate(TOOLS)])
def test_missing_input_file_is_a_usage_error(tool, args):
    with tempfile.TemporaryDirectory() as td:
        r = run_tool(tool, *[a.replace("OUT", td) for a in args])
        assert r.rc == usage_status(tool), r
        assert "/nonexistent/pmulab-input" in r.err and "error" in r.err, r
        assert os.listdir(td) == [], r


@pytest.mark.parametrize("tool", sorted({t for t, _ in TOOLS}))
def test_bad_option_is_a_usage_error(tool):
    r = run_tool(tool, "--bogus-option")
    assert r.rc == usage_status(tool), r
    assert "--bogus-option" in r.err or "required" in r.err, r
