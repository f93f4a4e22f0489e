"""build/host/pmulab-check: the campaign check pmulab runs on boot, on the host."""

import os
import tempfile

from pmulab_test import ROOT, run_tool


def _check(text):
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "lab.cfg")
        with open(path, "wb") as f:
            f.write(text.encode("latin-1"))
        r = run_tool("pmulab-check", path)
        return r, path


def test_pmulab_check_reports_every_problem_with_its_line():
    r, path = _check("info\nrun --bench nop --events 0E.1G --reps 5\nfrobnicate\n"
                     "msr read 0x1b --cpu all --verbose\n--shutdown\n")
    assert r.rc == 2, r
    assert r.out == "", r
    assert r.err.splitlines() == [
        f"{path}:2: run --events: event list item 1: event spec '0E.1G': UMASK '1G' is not hex "
        "(at offset 3)",
        f"{path}:3: unknown command 'frobnicate' (try 'pmulab help')",
        f"{path}:4: msr: unknown option '--verbose' (see 'pmulab help msr')",
    ], r


def test_pmulab_check_accepts_the_shipped_campaign_and_refuses_an_empty_one():
    r = run_tool("pmulab-check", os.path.join(ROOT, "tools", "pmulab.cfg"))
    assert r.rc == 0 and r.out == "" and r.err == "", r
    r, path = _check("# nothing yet\n--shutdown\n")
    assert r.rc == 2, r
    assert r.err.startswith(f"{path}: no commands: a campaign holds one pmulab command per line"), r


def test_pmulab_check_bad_usage_and_missing_file():
    r = run_tool("pmulab-check")
    assert r.rc == 2 and "expected one campaign file" in r.err, r
    r = run_tool("pmulab-check", "/nonexistent/x.cfg")
    assert r.rc == 2 and "cannot open '/nonexistent/x.cfg'" in r.err, r
    r = run_tool("pmulab-check", "--help")
    assert r.rc == 0 and r.out.startswith("usage: pmulab-check CONFIG"), r


def test_pmulab_lab_run_refuses_a_campaign_pmulab_would_refuse_before_any_boot():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "typo.cfg")
        with open(cfg, "w") as f:
            f.write("info\nrun --bench nop --evnets tsc\n")
        out = os.path.join(td, "lab")
        r = run_tool("tools/pmulab-lab", "run", "--config", cfg, "--out", out)
        assert r.rc == 2, r
        assert r.err.splitlines() == [
            f"{cfg}:2: run: unknown option '--evnets' (see 'pmulab help run')",
            f"pmulab-lab: error: run: config {cfg} has errors; nothing was run (pmulab would refuse it)",
        ], r
        assert not os.path.exists(out), "no boot, no run folder"
