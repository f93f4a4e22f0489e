"""tools/pmulab-lab: merging results (host) and a campaign matrix in QEMU."""

import csv
import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT

LAB = os.path.join(ROOT, "tools", "pmulab-lab")


def _lab(*args):
    return subprocess.run([LAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)


def _write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))


def test_lab_merge_adds_lab_fields_and_flattens():
    with tempfile.TemporaryDirectory() as td:
        _write(os.path.join(td, "r1", "0001-run.jsonl"), [
            {"type": "meta", "pmulab_version": "v"},
            {"type": "result", "bench": "nop", "event": "tsc", "median": 128, "x": {"y": [1, 2]}},
        ])
        _write(os.path.join(td, "r2", "0001-run.jsonl"), [
            {"type": "result", "bench": "add", "event": "tsc", "median": 256, "flag": True},
        ])
        r = _lab("merge", os.path.join(td, "r1"), os.path.join(td, "r2"), "--out", os.path.join(td, "m"))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f"merged 3 records into {td}/m.jsonl and {td}/m.csv"
        recs = [json.loads(l) for l in open(os.path.join(td, "m.jsonl"))]
        assert [x["lab"] for x in recs] == [{"run": "r1", "file": "0001-run.jsonl"}] * 2 + [
            {"run": "r2", "file": "0001-run.jsonl"}]
        rows = list(csv.reader(open(os.path.join(td, "m.csv"))))
        assert rows[0] == ["type", "bench", "event", "median", "x.y", "lab.run", "lab.file", "flag"], rows
        assert rows[1] == ["result", "nop", "tsc", "128", "1;2", "r1", "0001-run.jsonl", ""], rows
        assert rows[2] == ["result", "add", "tsc", "256", "", "r2", "0001-run.jsonl", "true"], rows


def test_lab_bad_input_is_a_clear_error():
    with tempfile.TemporaryDirectory() as td:
        bad = os.path.join(td, "r", "0001-x.jsonl")
        os.makedirs(os.path.dirname(bad))
        with open(bad, "w") as f:
            f.write('{"type":"meta"}\nnot json\n')
        r = _lab("merge", os.path.join(td, "r"), "--out", os.path.join(td, "m"))
        assert r.returncode == 2 and f"{bad}:2: not JSON" in r.stderr, r.stderr
        r = _lab("merge", os.path.join(td, "missing"), "--out", os.path.join(td, "m"))
        assert r.returncode == 2 and "no such folder" in r.stderr, r.stderr
        r = _lab("pull", os.path.join(td, "nope.img"), "--out", td)
        assert r.returncode == 2 and "no such image" in r.stderr, r.stderr
        r = _lab("run", "--config", os.path.join(td, "nope.cfg"), "--out", td)
        assert r.returncode == 2 and "no such file" in r.stderr, r.stderr
        cfg = os.path.join(td, "a.cfg")
        open(cfg, "w").write("info\n")
        r = _lab("run", "--config", cfg, "--smp", "1,x", "--out", td)
        assert r.returncode == 2 and "'x' is not a processor count" in r.stderr, r.stderr


def test_qemu_lab_two_configs_two_smp_values_merged():
    with tempfile.TemporaryDirectory() as td:
        a, b = os.path.join(td, "a.cfg"), os.path.join(td, "b.cfg")
        open(a, "w").write("info\n")
        open(b, "w").write("msr read 0x1b --cpu all\nrun --bench pointer_chase --size 4K,64K,1M --events tsc "
                           "--reps 3 --unroll 20\n")
        out = os.path.join(td, "out")
        r = _lab("run", "--config", a, "--config", b, "--smp", "1,2", "--out", out)
        assert r.returncode == 0, r.stdout + r.stderr
        assert sorted(os.listdir(out)) == ["a-smp1", "a-smp2", "b-smp1", "b-smp2", "merged.csv", "merged.jsonl"]
        recs = [json.loads(l) for l in open(os.path.join(out, "merged.jsonl"))]
        cpus = [(x["lab"]["config"], x["lab"]["smp"], x["index"]) for x in recs if x["type"] == "cpu"]
        assert sorted(cpus) == [("a.cfg", 1, 0), ("a.cfg", 2, 0), ("a.cfg", 2, 1)], cpus
        msrs = [(x["lab"]["smp"], x["cpu"], x["value"]) for x in recs if x["type"] == "msr"]
        assert sorted(msrs) == [(1, 0, "0xfee00900"), (2, 0, "0xfee00900"), (2, 1, "0xfee00800")], msrs
        assert sum(1 for x in recs if x["type"] == "meta") == 6
        chase = sorted((x["lab"]["smp"], x["size"]) for x in recs if x["type"] == "result")
        assert chase == [(1, 4096), (1, 65536), (1, 1 << 20), (2, 4096), (2, 65536), (2, 1 << 20)], chase
        rows = list(csv.DictReader(open(os.path.join(out, "merged.csv"))))
        assert len(rows) == 12 and {r["lab.cpu_model"] for r in rows} == {"max"}, rows[0]
        # The staircase plot straight from the merged campaign.
        png = os.path.join(td, "stair.png")
        p = subprocess.run([os.path.join(ROOT, "tools", "pmulab-plot"), "staircase", os.path.join(out, "merged.jsonl"),
                            "--out", png], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 0 and p.stdout.strip() == f"wrote {png} (6 points)", p.stderr
        assert open(png, "rb").read(4) == b"\x89PNG"
        # Results are never overwritten: the same --out again is refused.
        r = _lab("run", "--config", a, "--smp", "1", "--out", out)
        assert r.returncode == 2 and "exists already" in r.stderr, r.stderr
