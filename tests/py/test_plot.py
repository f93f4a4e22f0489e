"""tools/pmulab-plot on synthetic results files: PNG/SVG output and error paths."""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT

PLOT = os.path.join(ROOT, "tools", "pmulab-plot")


def _plot(*args):
    return subprocess.run([PLOT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def _write_records(path, recs):
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))


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
    _write_records(path, recs)


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


# ---------------------------------------------------------------- issue 12: runs, axes, titles, errors

import re  # noqa: E402


def _texts(svg_path):
    """The text of an SVG matplotlib wrote (each label is kept as a comment)."""
    with open(svg_path) as f:
        return re.findall(r"<!-- (.*?) -->", f.read(), re.S)


def _two_runs(path, bench="pointer_chase", base=100.0):
    recs = []
    for run, offset in (("lab/a-smp1", 0.0), ("lab/b-smp1", 5.0)):
        lab = {"run": run, "file": "0001-run.jsonl"}
        recs.append({"type": "cpu", "index": 0, "core_type": "core", "lab": lab})
        recs.append({"type": "cpu", "index": 1, "core_type": "atom", "lab": lab})
        for i, size in enumerate([4096, 65536, 1 << 20]):
            recs.append({"type": "result", "cpu": 0, "bench": bench, "size": size, "event": "tsc",
                         "per_iteration": base + offset + 10 * i, "lab": lab})
        for cpu in (0, 1):
            recs.append({"type": "result", "cpu": cpu, "bench": "nop", "event": "tsc",
                         "per_iteration": 1.0 + offset + cpu, "lab": lab})
    _write_records(path, recs)


def test_plot_one_series_per_run_and_cpus_of_two_runs_both_drawn():
    with tempfile.TemporaryDirectory() as td:
        res = os.path.join(td, "merged.jsonl")
        _two_runs(res)
        svg = os.path.join(td, "s.svg")
        r = _plot("staircase", res, "--out", svg)
        assert r.returncode == 0 and "(6 points)" in r.stdout, r.stderr
        texts = _texts(svg)
        assert "lab/a-smp1" in texts and "lab/b-smp1" in texts, texts  # the legend: one series per run
        svg = os.path.join(td, "c.svg")
        r = _plot("cpus", res, "--bench", "nop", "--out", svg)
        assert r.returncode == 0 and r.stdout.strip() == f"wrote {svg} (4 points)", (r.stdout, r.stderr)
        texts = _texts(svg)
        # Both runs' CPU 0 and 1 are drawn (one group per CPU, one bar per run), not one
        # run's CPU 0 over the other's.
        assert "lab/a-smp1" in texts and "lab/b-smp1" in texts and "E-core (hatched)" in texts, texts


def test_plot_axes_from_zero_with_units_and_true_titles():
    with tempfile.TemporaryDirectory() as td:
        res = os.path.join(td, "r.jsonl")
        _two_runs(res, base=100.0)
        svg = os.path.join(td, "s.svg")
        r = _plot("staircase", res, "--out", svg)
        assert r.returncode == 0, r.stderr
        texts = _texts(svg)
        assert "0" in texts, texts  # the y axis starts at 0
        assert "TSC ticks per iteration" in texts and "working set (bytes, log scale)" in texts, texts
        assert "pointer_chase: load-to-use latency vs working set" in texts, texts
        r = _plot("staircase", res, "--y-from-data", "--out", svg)
        assert r.returncode == 0, r.stderr
        assert "0" not in _texts(svg), _texts(svg)
        _two_runs(res, bench="load_stream")
        r = _plot("staircase", res, "--bench", "load_stream", "--out", svg)
        assert r.returncode == 0, r.stderr
        texts = _texts(svg)
        assert not [t for t in texts if "latency" in t], texts
        assert "load_stream: one 8-byte load per 64-byte line, streaming, vs working set" in texts, texts
        r = _plot("cpus", res, "--bench", "nop", "--event", "tsc", "--out", svg)
        assert r.returncode == 0 and "TSC ticks per iteration" in _texts(svg), r.stderr
        _results(res)
        r = _plot("compare", res, "--x", "tsc", "--y", "cycles", "--out", svg)
        assert r.returncode == 0, r.stderr
        texts = _texts(svg)
        assert "tsc (TSC ticks per iteration)" in texts and "cycles (counts per iteration)" in texts, texts
        assert "0" in texts, texts


def _one_error_line(r, status, text):
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], r.stderr


def test_plot_bad_input_and_unwritable_out_are_messages():
    with tempfile.TemporaryDirectory() as td:
        res = os.path.join(td, "r.jsonl")
        _results(res)
        out = os.path.join(td, "no", "such", "dir", "s.png")
        _one_error_line(_plot("staircase", res, "--out", out), 1, f"pmulab-plot: error: cannot write {out}: ")
        bad = os.path.join(td, "bad.jsonl")
        for line, msg in [
            (b'{"type":"result","bench":"nop","event":"tsc","per_iteration":"abc"}', "per_iteration 'abc' is not a number"),
            (b'{"type":"result","bench":"nop","event":"tsc","per_iteration":1,"size":"x"}', "size 'x' is not a positive integer"),
            (b'{"type":"result","bench":"nop","event":"tsc","per_iteration":1,"cpu":"x"}', "cpu 'x' is not a CPU number"),
            (b"[" * 100000 + b"]" * 100000, "not JSON"),
        ]:
            with open(bad, "wb") as f:
                f.write(b'{"type":"meta"}\n' + line + b"\n")
            _one_error_line(_plot("cpus", bad, "--bench", "nop", "--out", os.path.join(td, "c.png")), 2,
                            f"pmulab-plot: error: {bad}:2: {msg}")
        with open(bad, "wb") as f:
            f.write(b'{"type":"meta","x":"caf\xe9"}\n')
        _one_error_line(_plot("cpus", bad, "--bench", "nop", "--out", os.path.join(td, "c.png")), 2,
                        f"pmulab-plot: error: {bad}: not UTF-8 text")
        link = os.path.join(td, "link.jsonl")
        os.symlink(td, link)  # a folder: cannot be read as a file
        _one_error_line(_plot("cpus", link, "--bench", "nop", "--out", os.path.join(td, "c.png")), 2,
                        f"pmulab-plot: error: {link}: cannot read")
        # A result without a bench name still plots.
        with open(bad, "w") as f:
            f.write('{"type":"result","event":"tsc","per_iteration":2}\n'
                    '{"type":"result","event":"cycles","per_iteration":3}\n')
        r = _plot("compare", bad, "--x", "tsc", "--y", "cycles", "--out", os.path.join(td, "m.png"))
        assert r.returncode == 0 and "(1 points)" in r.stdout and "Traceback" not in r.stderr, r.stderr


def test_plots_say_where_the_data_came_from_and_draw_the_spread():
    # Issue 26 item 19: the provenance from the meta records on every plot, and q1..q3.
    with tempfile.TemporaryDirectory() as td:
        for name, meta, want in (
                ("sim", {"simulated": True, "simulated_machine": "dump x.txt (4 CPUs)"},
                 "data: simulated: dump x.txt (4 CPUs)"),
                ("vm", {"hypervisor": True, "hypervisor_vendor": "TCGTCGTCGTCG", "lab": {"icount": 7}},
                 "data: virtual machine (TCGTCGTCGTCG, -icount 7)"),
                # Without pmulab-lab: the shift pmulab measured (the meta record's icount_shift).
                ("vm_measured", {"hypervisor": True, "hypervisor_vendor": "TCGTCGTCGTCG", "icount_shift": 5},
                 "data: virtual machine (TCGTCGTCGTCG, -icount 5)"),
                ("vm_no_icount", {"hypervisor": True, "hypervisor_vendor": "TCGTCGTCGTCG", "icount_shift": None},
                 "data: virtual machine (TCGTCGTCGTCG); "),
                ("hw", {"hypervisor": False, "brand": "Intel(R) Core(TM) i5-6400T"},
                 "data: hardware: Intel(R) Core(TM) i5-6400T")):
            res = os.path.join(td, name + ".jsonl")
            recs = [{"type": "meta", **meta}]
            for i, size in enumerate([4096, 65536]):
                recs.append({"type": "result", "cpu": 0, "bench": "pointer_chase", "size": size, "event": "tsc",
                             "per_iteration": 4.0 + i, "q1": 3.5 + i, "q3": 4.5 + i})
            with open(res, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in recs))
            svg = os.path.join(td, name + ".svg")
            r = _plot("staircase", res, "--out", svg)
            assert r.returncode == 0, r.stderr
            texts = _texts(svg)
            assert any(t.startswith(want) and "q1..q3" in t for t in texts), texts
            with open(svg) as f:
                body = f.read()
            assert "opacity: 0.2" in body, name  # the q1..q3 band (alpha 0.2)


def test_compare_labels_of_close_points_do_not_overlap():
    code = (
        "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt\n"
        "from pmulab.plot import place_labels\n"
        "fig, ax = plt.subplots(); ax.scatter([1, 1.001, 5], [1, 1.001, 5])\n"
        "place_labels(ax, [('add_chain', 1, 1), ('add_indep', 1.001, 1.001), ('nop', 5, 5)])\n"
        "print(sorted(round(a.xyann[1], 3) for a in ax.texts))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code], env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "tools")},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    offsets = json.loads(r.stdout)
    # The two labels at (almost) the same point get different heights; the far one keeps its own.
    assert len(offsets) == 3 and len(set(offsets)) >= 2, offsets


# ---------------------------------------------------------------- issue 23: the cycle-by-cycle heat map

def _cells(svg_path):
    """{SVG id: fill colour} of the heat map's cells (cell-PANEL-ROW-COLUMN, missing-...)."""
    with open(svg_path) as f:
        body = f.read()
    return dict(re.findall(r'<g id="((?:cell|missing)-\d+-\d+-\d+)">\s*<path [^>]*?style="fill: (#[0-9a-f]{6})', body))


def _cycle_records(td):
    """A results file in TD with two cycle_by_cycle records (CPU 0: 4 events x 4 cycles, CPU 1:
    one event x 60 cycles); its path."""
    path = os.path.join(td, "cbc.jsonl")
    cycles = [{"cycle": 0, "values": {"instructions": 0, "UOPS_ISSUED.ANY": 4, "cycles": 1, "idq.empty": 0}},
              {"cycle": 1, "values": {"instructions": 2, "UOPS_ISSUED.ANY": 0, "cycles": 1, "idq.empty": 0}},
              {"cycle": 2, "values": {"instructions": -1, "cycles": 1, "idq.empty": 0}},  # no UOPS_ISSUED value
              {"cycle": 3, "values": {"instructions": 3, "UOPS_ISSUED.ANY": 0, "cycles": 1, "idq.empty": 0}}]
    recs = [{"type": "meta", "simulated": True, "simulated_machine": "dump x.txt (2 CPUs)"},
            {"type": "cycle_by_cycle", "cpu": 0, "bench": "chain", "run": 1,
             "events": ["instructions", "UOPS_ISSUED.ANY", "cycles", "idq.empty"], "cycles": cycles},
            {"type": "cycle_by_cycle", "cpu": 1, "bench": "chain",
             "events": ["cycles"], "cycles": [{"cycle": c, "values": {"cycles": 1}} for c in range(60)]}]
    _write_records(path, recs)
    return path


def test_plot_cycle_by_cycle_heat_map_cells_and_labels():
    with tempfile.TemporaryDirectory() as td:
        res = _cycle_records(td)
        svg = os.path.join(td, "h.svg")
        r = _plot("cycle-by-cycle", res, "--cpu", "0", "--out", svg)
        assert r.returncode == 0 and r.stdout.strip() == f"wrote {svg} (15 cells)", (r.stdout, r.stderr)
        cells = _cells(svg)
        # Rows = events, columns = cycles: 4 x 4 cells, the one without a value grey.
        assert sorted(cells) == sorted([f"cell-0-{i}-{j}" for i in range(4) for j in range(4) if (i, j) != (1, 2)]
                                       + ["missing-0-1-2"]), cells
        assert cells["missing-0-1-2"] == "#d3d3d3"  # lightgray
        # The shade: 0 palest, the row's largest darkest (Blues), a negative increment red.
        assert cells["cell-0-0-0"] == "#f7fbff" and cells["cell-0-0-3"] == "#08306b", cells
        assert cells["cell-0-1-0"] == "#08306b" and cells["cell-0-2-1"] == "#08306b", cells
        red = cells["cell-0-0-2"]
        assert int(red[1:3], 16) > int(red[3:5], 16) and int(red[1:3], 16) > int(red[5:7], 16), red
        texts = _texts(svg)
        assert texts[:4] == ["0", "1", "2", "3"] and "cycle" in texts, texts  # the columns
        for label in ("instructions", "UOPS_ISSUED.ANY", "cycles", "idq.empty"):
            assert label in texts, texts  # the rows, as the user wrote the events
        # The cells' values, row by row, and each row's largest.
        rows = texts[texts.index("idq.empty") + 1:]
        assert rows[:20] == ["0", "2", "-1", "3", "max 3", "4", "0", "0", "max 4", "1", "1", "1", "1", "max 1",
                             "0", "0", "0", "0", "max 0", "chain: increment per cycle, CPU 0"], rows
        assert any(t.startswith("data: simulated: dump x.txt (2 CPUs); shade: ") for t in texts), texts
        # --event picks and orders the rows; --remove-empty-events drops an event that never counts.
        r = _plot("cycle-by-cycle", res, "--cpu", "0", "--event", "cycles", "--event", "instructions", "--out", svg)
        assert r.returncode == 0 and "(8 cells)" in r.stdout, r.stderr
        texts = _texts(svg)
        assert texts.index("cycles") < texts.index("instructions") and "idq.empty" not in texts, texts
        r = _plot("cycle-by-cycle", res, "--cpu", "0", "--remove-empty-events", "--out", svg)
        assert r.returncode == 0 and "(11 cells)" in r.stdout and "idq.empty" not in _texts(svg), r.stderr
        # Both records: one panel each; past 48 cycles the cells carry no values, the axis
        # labels every other cycle.
        png = os.path.join(td, "h.png")
        r = _plot("cycle-by-cycle", res, "--bench", "chain", "--out", png)
        assert r.returncode == 0 and "(75 cells)" in r.stdout, r.stderr
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        r = _plot("cycle-by-cycle", res, "--cpu", "1", "--out", svg)
        assert r.returncode == 0 and "(60 cells)" in r.stdout, r.stderr
        texts = _texts(svg)
        assert len(_cells(svg)) == 60 and "1" not in texts and "58" in texts and "max 1" in texts, texts


def test_plot_cycle_by_cycle_errors():
    with tempfile.TemporaryDirectory() as td:
        res = _cycle_records(td)
        out = os.path.join(td, "h.svg")
        _one_error_line(_plot("cycle-by-cycle", res, "--cpu", "7", "--out", out), 1,
                        "pmulab-plot: error: no cycle_by_cycle records for CPU 7 (pmulab run --cycle-by-cycle --json "
                        "writes them)")
        _one_error_line(_plot("cycle-by-cycle", res, "--bench", "x", "--out", out), 1,
                        "pmulab-plot: error: no cycle_by_cycle records of bench 'x'")
        _one_error_line(_plot("cycle-by-cycle", res, "--cpu", "1", "--event", "uops", "--out", out), 1,
                        "pmulab-plot: error: CPU 1, bench 'chain': no event 'uops' (it has cycles)")
        bad = os.path.join(td, "bad.jsonl")
        for line, msg in [
                ('{"type":"cycle_by_cycle","cpu":0,"events":"cycles"}', "events is not a list of event names"),
                ('{"type":"cycle_by_cycle","cpu":0,"cycles":[{"cycle":0,"values":{"cycles":"x"}}]}',
                 'cycle \'{"cycle": 0, "values": {"cycles": "x"}}\' is not {"cycle": N, "values": {EVENT: NUMBER, '
                 '...}}'),
                ('{"type":"cycle_by_cycle","cpu":-1}', "cpu '-1' is not a CPU number")]:
            with open(bad, "w") as f:
                f.write('{"type":"meta"}\n' + line + "\n")
            _one_error_line(_plot("cycle-by-cycle", bad, "--out", out), 2, f"pmulab-plot: error: {bad}:2: {msg}")
        assert not os.path.exists(out)
