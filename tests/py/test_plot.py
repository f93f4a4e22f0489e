"""tools/pmulab-plot on synthetic results files: PNG/SVG output and error paths."""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT

PLOT = os.path.join(ROOT, "tools", "pmulab-plot")


def _plot(*args):
    return subprocess.run([PLOT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def _results(path):
    recs = [{"type": "meta", "pmulab_version": "t"}]
    for i, size in enumerate([4096, 65536, 1 << 20, 16 << 20]):
        recs.append({"type": "result", "cpu": 0, "bench": "pointer_chase", "size": size, "event": "tsc",
                     "per_iteration": 4.0 + 10 * i})
        recs.append({"type": "result", "cpu": 0, "bench": "pointer_chase", "size": size, "event": "cycles",
                     "per_iteration": 5.0 + 12 * i})
    for cpu, t in enumerate(["core", "core", "atom"]):
        recs.append({"type": "cpu", "index": cpu, "core_type": t})
        recs.append({"type": "result", "cpu": cpu, "bench": "nop", "event": "tsc", "per_iteration": 1.0 + cpu})
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))


def test_plot_staircase_cpus_compare_png_and_svg():
    with tempfile.TemporaryDirectory() as td:
        res = os.path.join(td, "r.jsonl")
        _results(res)
        r = _plot("staircase", res, "--out", os.path.join(td, "s.png"))
        assert r.returncode == 0 and r.stdout.strip() == f"wrote {td}/s.png (4 points)", r.stderr
        with open(os.path.join(td, "s.png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        r = _plot("cpus", res, "--bench", "nop", "--out", os.path.join(td, "c.svg"))
        assert r.returncode == 0 and "(3 points)" in r.stdout, r.stderr
        svg = open(os.path.join(td, "c.svg")).read()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "E-core" in svg and "P-core" in svg
        r = _plot("compare", res, "--x", "tsc", "--y", "cycles", "--out", os.path.join(td, "m.png"))
        assert r.returncode == 0 and "(4 points)" in r.stdout, r.stderr


def test_plot_errors():
    with tempfile.TemporaryDirectory() as td:
        res = os.path.join(td, "r.jsonl")
        _results(res)
        r = _plot("staircase", res, "--out", os.path.join(td, "s.jpg"))
        assert r.returncode == 2 and "use a .png or .svg" in r.stderr, r.stderr
        r = _plot("staircase", os.path.join(td, "missing.jsonl"), "--out", os.path.join(td, "s.png"))
        assert r.returncode == 2 and "no such file" in r.stderr, r.stderr
        r = _plot("staircase", res, "--event", "nothing", "--out", os.path.join(td, "s.png"))
        assert r.returncode == 1 and "no 'pointer_chase' results with a size for event 'nothing'" in r.stderr
        bad = os.path.join(td, "bad.jsonl")
        open(bad, "w").write('{"type":"result"}\n{oops\n')
        r = _plot("cpus", bad, "--bench", "nop", "--out", os.path.join(td, "c.png"))
        assert r.returncode == 2 and f"{bad}:2: not JSON" in r.stderr, r.stderr
