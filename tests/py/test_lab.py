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
        # Every record names its run folder (not the "results" folder inside it).
        assert {x["lab"]["run"] for x in recs} == {"a-smp1", "a-smp2", "b-smp1", "b-smp2"}
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


# ---------------------------------------------------------------- issue 12: nothing lost, nothing mixed

import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import threading  # noqa: E402


def _load_lab():
    """pmulab.lab (tools/pmulab-lab) as a fresh module object of its own, so that a test
    can replace the QEMU boot without touching the module other tests import."""
    spec = importlib.util.find_spec("pmulab.lab")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_lab_in_process(mod, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = mod.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def _fake_boot(calls, lock):
    """Stands in for boot_one: 'boots' the config by writing one results file whose
    records say which config (by its text) and which image the boot used."""
    def boot_one(job, args):
        cfg, smp, cpu, run_dir = job
        with open(cfg) as f:
            text = f.read().strip()
        img = os.path.join(run_dir, "pmulab.img")
        with lock:
            calls.append((cfg, run_dir, img))
        _write(os.path.join(run_dir, "results", "0001-info.jsonl"), [
            {"type": "meta", "pmulab_version": "t"},
            {"type": "cpu", "index": 0, "core_type": "none"},
            {"type": "result", "cpu": 0, "bench": "nop", "event": "tsc", "per_iteration": len(text),
             "campaign": text},
        ])
        return job, 0, "exit 0, 1 results files"
    return boot_one


def test_lab_run_same_base_name_gets_two_run_folders_labelled_by_run():
    with tempfile.TemporaryDirectory() as td:
        cfgs = []
        for d, text in (("a", "info"), ("b", "run --bench nop")):
            os.makedirs(os.path.join(td, d))
            cfgs.append(os.path.join(td, d, "x.cfg"))
            with open(cfgs[-1], "w") as f:
                f.write(text + "\n")
        efi = os.path.join(td, "pmulab.efi")
        open(efi, "w").close()
        mod = _load_lab()
        calls = []
        mod.boot_one = _fake_boot(calls, threading.Lock())
        out = os.path.join(td, "out")
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", cfgs[0], "--config", cfgs[1], "--smp", "1",
                                               "--jobs", "2", "--efi", efi, "--out", out])
        assert rc == 0, (so, se)
        run_dirs = sorted(c[1] for c in calls)
        assert len(set(run_dirs)) == 2, run_dirs
        assert len({c[2] for c in calls}) == 2, calls  # each boot has its own image
        assert sorted(os.listdir(out)) == ["a_x-smp1", "b_x-smp1", "merged.csv", "merged.jsonl"], os.listdir(out)
        recs = [json.loads(l) for l in open(os.path.join(out, "merged.jsonl"))]
        res = sorted((x["lab"]["run"], x["campaign"], x["lab"]["config"]) for x in recs if x["type"] == "result")
        assert res == [("a_x-smp1", "info", "x.cfg"), ("b_x-smp1", "run --bench nop", "x.cfg")], res
        # Every record names its run folder, never the "results" folder inside it.
        assert {x["lab"]["run"] for x in recs} == {"a_x-smp1", "b_x-smp1"}
        # The same campaign twice: two run folders as well.
        out2 = os.path.join(td, "out2")
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", cfgs[0], "--config", cfgs[0], "--smp", "1",
                                               "--efi", efi, "--out", out2])
        assert rc == 0, (so, se)
        assert sorted(os.listdir(out2)) == ["merged.csv", "merged.jsonl", "x-smp1", "x-smp1-2"], os.listdir(out2)
        # A run folder is never reused: the same --out again is refused before anything boots.
        calls.clear()
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", cfgs[1], "--smp", "2", "--efi", efi,
                                               "--out", out2])
        assert rc == 2 and "exists already" in se and calls == [], (rc, so, se, calls)


def test_lab_merge_of_a_lab_folder_labels_runs_and_skips_merged_files():
    with tempfile.TemporaryDirectory() as td:
        lab = os.path.join(td, "lab")
        for run in ("a-smp1", "b-smp1"):
            _write(os.path.join(lab, run, "results", "0001-run.jsonl"), [
                {"type": "meta", "pmulab_version": "v"},
                {"type": "result", "cpu": 0, "bench": "nop", "event": "tsc", "per_iteration": 1.0},
            ])
        prefix = os.path.join(lab, "merged")
        r = _lab("merge", lab, "--out", prefix)
        assert r.returncode == 0 and r.stdout.strip() == f"merged 4 records into {prefix}.jsonl and {prefix}.csv", r
        recs = [json.loads(l) for l in open(prefix + ".jsonl")]
        assert [x["lab"]["run"] for x in recs] == ["lab/a-smp1"] * 2 + ["lab/b-smp1"] * 2, recs
        first = open(prefix + ".jsonl").read()
        # Merging again (same prefix, or another one in the same folder) never sweeps the
        # earlier merged files in: same records, same labels.
        for again in (prefix, os.path.join(lab, "merged2")):
            r = _lab("merge", lab, "--out", again)
            assert r.returncode == 0 and r.stdout.strip().startswith("merged 4 records"), r
            assert "skipped" in r.stderr and "merged.jsonl" in r.stderr, r.stderr
            assert open(again + ".jsonl").read() == first
        rows = list(csv.reader(open(prefix + ".csv")))
        assert len(rows) == 3, rows


def _image_with_results(td, name, files):
    """A pmulab disk image (tools/mkimage.sh) whose \\pmulab\\results holds `files`."""
    efi = os.path.join(td, "pmulab.efi")
    if not os.path.exists(efi):
        with open(efi, "w") as f:
            f.write("not really an EFI binary")
    extra = []
    for fname, text in files.items():
        src = os.path.join(td, f"{name}-{fname}")
        with open(src, "w") as f:
            f.write(text)
        extra.append(f"{src}=::/pmulab/results/{fname}")
    img = os.path.join(td, name)
    subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, efi, "-", *extra], input="info\n",
                   check=True, stdout=subprocess.DEVNULL, text=True)
    return img


def test_lab_pull_twice_never_overwrites():
    with tempfile.TemporaryDirectory() as td:
        one = _image_with_results(td, "one.img", {"0001-info.jsonl": '{"type":"meta","stick":1}\n'})
        two = _image_with_results(td, "two.img", {"0001-info.jsonl": '{"type":"meta","stick":2}\n',
                                                  "0002-run.jsonl": '{"type":"meta","stick":2}\n'})
        out = os.path.join(td, "out")
        r = _lab("pull", one, "--out", out)
        assert r.returncode == 0 and r.stdout.strip() == f"copied 1 files to {out}", r
        for img in (one, two):
            r = _lab("pull", img, "--out", out)
            assert r.returncode == 2, r
            assert r.stderr.strip() == (f"pmulab-lab: error: pull: {out} already holds 0001-info.jsonl; "
                                        "nothing copied (results are never overwritten: pull into a new folder)"), r
        assert os.listdir(out) == ["0001-info.jsonl"]
        assert open(os.path.join(out, "0001-info.jsonl")).read() == '{"type":"meta","stick":1}\n'
        r = _lab("pull", two, "--out", os.path.join(td, "out2"))
        assert r.returncode == 0 and sorted(os.listdir(os.path.join(td, "out2"))) == [
            "0001-info.jsonl", "0002-run.jsonl"], r


def _one_error_line(r, status, text):
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], r.stderr


def test_lab_bad_input_never_shows_a_traceback():
    with tempfile.TemporaryDirectory() as td:
        bad = os.path.join(td, "r", "0001-x.jsonl")
        os.makedirs(os.path.dirname(bad))
        with open(bad, "wb") as f:
            f.write(b'{"type":"meta"}\n{"type":"result","bench":"\xff\xfe"}\n')
        m = os.path.join(td, "m")
        _one_error_line(_lab("merge", os.path.join(td, "r"), "--out", m), 2,
                        f"pmulab-lab: error: {bad}: not UTF-8 text")
        os.remove(bad)
        _write(os.path.join(td, "d", "0001-x.jsonl"), [{"type": "meta"}])
        os.symlink(os.path.join(td, "gone"), os.path.join(td, "d", "0002-y.jsonl"))  # cannot be read
        _one_error_line(_lab("merge", os.path.join(td, "d"), "--out", m), 2,
                        f"pmulab-lab: error: {td}/d/0002-y.jsonl: cannot read")
        deep = os.path.join(td, "deep", "0001-x.jsonl")
        os.makedirs(os.path.dirname(deep))
        with open(deep, "w") as f:
            f.write("[" * 100000 + "]" * 100000 + "\n")
        _one_error_line(_lab("merge", os.path.join(td, "deep"), "--out", m), 2, f"{deep}:1: not JSON")
        _write(os.path.join(td, "ok", "0001-x.jsonl"), [{"type": "meta"}])
        afile = os.path.join(td, "afile")
        open(afile, "w").close()
        _one_error_line(_lab("merge", os.path.join(td, "ok"), "--out", os.path.join(afile, "m")), 1,
                        f"pmulab-lab: error: cannot write {afile}/m.jsonl")
        _one_error_line(_lab("pull", afile, "--out", td), 2, "pmulab-lab: error: pull:")
        cfg = os.path.join(td, "a.cfg")
        with open(cfg, "w") as f:
            f.write("info\n")
        for args, text in [
            (["--timeout", "nan"], "--timeout: 'nan' is not a positive number of seconds"),
            (["--timeout", "-1"], "--timeout: '-1' is not a positive number of seconds"),
            (["--jobs", "0"], "--jobs: '0' is not a positive count"),
            (["--icount", "11"], "--icount: SHIFT must be 0..10"),
            (["--smp", ","], "--smp: give at least one processor count"),
            (["--out", afile], f"--out {afile} is not a folder"),
        ]:
            argv = ["run", "--config", cfg, "--out", os.path.join(td, "lab")]
            argv = argv[:3] + args + argv[3:] if args[0] != "--out" else argv[:3] + args
            _one_error_line(_lab(*argv), 2, "pmulab-lab: error: run: " + text)
        latin = os.path.join(td, "latin.cfg")
        with open(latin, "wb") as f:
            f.write(b"# caf\xe9\ninfo\n")
        _one_error_line(_lab("run", "--config", latin, "--out", os.path.join(td, "lab")), 2,
                        f"pmulab-lab: error: run: config {latin}: not UTF-8 text")
        assert not os.path.exists(os.path.join(td, "lab")), "nothing is created on bad input"


def test_qemu_lab_same_base_name_merge_pull_twice_and_plot_per_run():
    """The lab flow end to end: two configs with the same base name (one with CRLF
    lines), the lab folder merged twice, an image pulled twice, a plot per run."""
    with tempfile.TemporaryDirectory() as td:
        cmd = b"run --bench pointer_chase --size 4K,64K --events tsc --reps 3 --unroll 20"
        cfgs = []
        for d, nl in (("a", b"\r\n"), ("b", b"\n")):
            os.makedirs(os.path.join(td, d))
            cfgs.append(os.path.join(td, d, "x.cfg"))
            with open(cfgs[-1], "wb") as f:
                f.write(b"# " + d.encode() + nl + cmd + nl)
        out = os.path.join(td, "lab")
        r = _lab("run", "--config", cfgs[0], "--config", cfgs[1], "--smp", "1", "--jobs", "2", "--keep-images",
                 "--out", out)
        assert r.returncode == 0, r.stdout + r.stderr
        assert sorted(os.listdir(out)) == ["a_x-smp1", "b_x-smp1", "merged.csv", "merged.jsonl"], os.listdir(out)
        # The campaign reached the image as written (CRLF kept), --shutdown appended.
        with open(os.path.join(out, "a_x-smp1", "pmulab.cfg"), "rb") as f:
            assert f.read() == b"# a\r\n" + cmd + b"\r\n# added by pmulab-lab\r\n--shutdown\r\n"
        recs = [json.loads(l) for l in open(os.path.join(out, "merged.jsonl"))]
        res = sorted((x["lab"]["run"], x["size"]) for x in recs if x["type"] == "result")
        assert res == [("a_x-smp1", 4096), ("a_x-smp1", 65536), ("b_x-smp1", 4096), ("b_x-smp1", 65536)], res
        # Merging the lab folder (twice): each results file once, labelled by its run.
        for _ in range(2):
            r = _lab("merge", out, "--out", os.path.join(out, "all"))
            assert r.returncode == 0 and r.stdout.startswith(f"merged {len(recs)} records"), r
            again = [json.loads(l) for l in open(os.path.join(out, "all.jsonl"))]
            assert sorted({x["lab"]["run"] for x in again}) == ["lab/a_x-smp1", "lab/b_x-smp1"]
        # Pulling an image twice into one folder: the second pull is refused, nothing lost.
        img = os.path.join(out, "a_x-smp1", "pmulab.img")
        stick = os.path.join(td, "stick")
        r = _lab("pull", img, "--out", stick)
        assert r.returncode == 0, r
        assert sorted(os.listdir(stick)) == sorted(os.listdir(os.path.join(out, "a_x-smp1", "results")))
        r = _lab("pull", img, "--out", stick)
        assert r.returncode == 2 and "already holds" in r.stderr, r
        # One staircase series per run.
        svg = os.path.join(td, "stair.svg")
        p = subprocess.run([os.path.join(ROOT, "tools", "pmulab-plot"), "staircase", os.path.join(out, "merged.jsonl"),
                            "--out", svg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 0 and p.stdout.strip() == f"wrote {svg} (4 points)", p.stderr
        svg_text = open(svg).read()
        assert "<!-- a_x-smp1 -->" in svg_text and "<!-- b_x-smp1 -->" in svg_text


# ---------------------------------------------------------------- issue 13: agent mode

import re  # noqa: E402
import types  # noqa: E402


class _FakeAgentError(Exception):
    pass


def _fake_client(script, seen):
    """Stands in for tools/pmulab_client: an agent whose answers come from `script`
    (command text -> status, or "die" to lose the link when that request is collected)."""
    class Ans:
        def __init__(self, status, msg):
            self.status = status
            self.errors = [{"type": "error", "message": msg}] if msg else []

    class FakeAgent:
        WINDOW = 3

        def __init__(self):
            self.sent = {}

        @classmethod
        def qemu(cls, qargs, timeout=600, no_build=False, log=None, serve_args=()):
            seen.append(("qemu", list(qargs), list(serve_args)))
            log.write("pmulab serve: serving on serial port 1 of 2\n")
            return cls()

        def submit(self, cmd, blobs=None):
            rid = len(self.sent) + 1
            self.sent[rid] = cmd
            seen.append(("submit", cmd, blobs))
            return rid

        def collect(self, rid):
            what = script.get(self.sent[rid], 0)
            if what == "die":
                raise _FakeAgentError("the agent closed the link")
            return Ans(what, f"it failed with {what}" if what else None)

        def close(self, timeout=60):
            seen.append(("close",))
            return 125 if any(v == "die" for v in script.values()) else 0

    return types.SimpleNamespace(Agent=FakeAgent, AgentError=_FakeAgentError,
                                 asm_to_blobs=lambda words: (words, {"code": b"\x90"}))


def test_lab_agent_mode_statuses_failed_lost_not_run():
    """A failed request is a failed command; an agent lost mid-campaign fails the
    command it ran and marks the rest 'not run' with the reason; exit status 1."""
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("# comment\ninfo\n\nmsr read 0x1b  # why\nrun --bench nop --events tsc\n--shutdown\n"
                    "msr read 0x10\nversion\n")
        mod = _load_lab()
        seen = []
        mod.pmulab_client = _fake_client({"msr read 0x1b": 1, "msr read 0x10": "die"}, seen)
        out = os.path.join(td, "out")
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", cfg, "--smp", "2", "--icount", "7", "--out", out])
        assert rc == 1, (so, se)
        qemu = [s for s in seen if s[0] == "qemu"]
        assert len(qemu) == 1 and qemu[0][2] == ["--results"], qemu
        assert qemu[0][1][:2] == ["--smp", "2"] and qemu[0][1][-2:] == ["--icount", "7"], qemu
        # The lines as written (comments, blank lines and --shutdown are not commands).
        assert [s[1] for s in seen if s[0] == "submit"] == [
            "info", "msr read 0x1b", "run --bench nop --events tsc", "msr read 0x10", "version"], seen
        with open(os.path.join(out, "c-smp2", "commands.json")) as f:
            states = json.load(f)
        assert [(s["line"], s["state"], s["status"]) for s in states] == [
            (2, "ok", 0), (4, "failed", 1), (5, "ok", 0), (7, "failed", None), (8, "not run", None)], states
        assert states[1]["reason"] == "it failed with 1", states[1]
        assert [s["results"] for s in states] == [None] * 5  # the fake boot's image holds no results
        assert states[3]["reason"].startswith("the agent was lost: the agent closed the link (QEMU status 125"), states
        assert states[3]["reason"].endswith(", while it ran this command"), states[3]
        assert states[4]["reason"].endswith(", at line 7"), states[4]
        line = so.splitlines()[0]
        assert line.startswith("FAIL c-smp2: agent, 5 commands: 2 ok, 2 failed, 1 not run; line 4: it failed with 1; "
                               "line 7: the agent was lost"), so
        assert line.endswith("; not run: line 8; 0 results files"), so
        assert os.listdir(os.path.join(out, "c-smp2")) and not any(
            n.startswith(".agent-") for n in os.listdir(os.path.join(out, "c-smp2"))), "the keep folder is removed"
        with open(os.path.join(out, "c-smp2", "table.txt")) as f:
            assert f.read() == "# c-smp2: 0 results files (pmulab-lab; values per iteration)\n"


def test_lab_agent_mode_is_chosen_per_campaign():
    """Auto: the agent for campaigns of more than one command, images for one command;
    --no-agent forces images; --agent is refused (before any boot) where the agent
    cannot run the campaign."""
    with tempfile.TemporaryDirectory() as td:
        one, two = os.path.join(td, "one.cfg"), os.path.join(td, "two.cfg")
        with open(one, "w") as f:
            f.write("info\n--shutdown\n")
        with open(two, "w") as f:
            f.write("info\nversion\n")
        mod = _load_lab()
        seen, calls = [], []
        mod.pmulab_client = _fake_client({}, seen)
        mod.boot_one = _fake_boot(calls, threading.Lock())
        out = os.path.join(td, "out")
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", one, "--config", two, "--smp", "1", "--out", out])
        assert rc == 0, (so, se)
        assert [os.path.basename(c[1]) for c in calls] == ["one-smp1"], calls
        assert [s[1] for s in seen if s[0] == "submit"] == ["info", "version"], seen
        recs = [json.loads(l) for l in open(os.path.join(out, "merged.jsonl"))]
        assert {(x["lab"]["run"], x["lab"]["mode"]) for x in recs} == {("one-smp1", "image")}, recs
        seen.clear(), calls.clear()
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", two, "--smp", "1", "--no-agent",
                                               "--out", os.path.join(td, "o2")])
        assert rc == 0 and len(calls) == 1 and not seen, (so, se, seen)
        seen.clear(), calls.clear()
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", one, "--smp", "1", "--agent",
                                               "--out", os.path.join(td, "o3")])
        assert rc == 0 and not calls and [s[1] for s in seen if s[0] == "submit"] == ["info"], (so, se)
        efi = os.path.join(td, "other.efi")
        open(efi, "w").close()
        serve = os.path.join(td, "serve.cfg")
        with open(serve, "w") as f:
            f.write("info\n--json serve --idle 5\n")
        for argv, text in [
            (["--config", two, "--efi", efi], f"--efi {efi}: the agent boots"),
            (["--config", serve], "line 2 runs 'serve' itself"),
        ]:
            seen.clear(), calls.clear()
            rc, so, se = _run_lab_in_process(mod, ["run", *argv, "--agent", "--out", os.path.join(td, "o4")])
            assert rc == 2 and text in se and "use --no-agent" in se and not seen and not calls, (rc, so, se)
            assert not os.path.exists(os.path.join(td, "o4"))
        rc, so, se = _run_lab_in_process(mod, ["run", "--config", two, "--agent", "--no-agent", "--out", td])
        assert rc == 2 and "not allowed with argument" in se, (rc, se)


def _placeless(text):
    """Text without the addresses of the code (RIP) and the campaign location prefix."""
    return re.sub(r"RIP 0x[0-9a-f]+", "RIP <address>", re.sub(r"\\pmulab\\pmulab\.cfg:\d+: ", "", text))


def _records_without_timing(path):
    """A results file's records, without the fields that measure time or place: when
    (time), the TSC's measured frequency (tsc_hz, tsc_detail), the TSC ticks around the
    runs (noise.tsc_delta), the scratch area's address (r14), the firmware's free memory at
    the time (the meta record's memory map summary: a boot with an agent session has
    allocated differently from one that runs a campaign file); and in error messages the
    code's address (RIP) and the campaign location prefix, which only image mode has (the
    line comes from \\pmulab\\pmulab.cfg); and in results the aggregates a single
    repetition moves (min, avg, trimmed, max): under round-robin TCG with two vCPUs, a
    repetition on the AP now and then meets the BSP's time slice (seen once in ~20 CI runs:
    avg 125.013 against 128). The median and quartiles, which one repetition cannot move,
    are compared here and asserted exact by the caller."""
    out = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            for k in ("time", "tsc_hz", "tsc_detail", "r14", "memory"):
                rec.pop(k, None)
            if isinstance(rec.get("noise"), dict):
                rec["noise"].pop("tsc_delta", None)
            if rec.get("type") == "result":
                for k in ("min", "avg", "trimmed", "max"):
                    rec.pop(k, None)
            if rec.get("type") == "error":
                rec["message"] = _placeless(rec["message"])
            out.append(rec)
    return out


def test_qemu_lab_agent_and_image_modes_give_the_same_results():
    """The same campaign in image mode and agent mode under -icount 7: the same results
    files with the same records (exact values: 128 TSC ticks per instruction), apart from
    timing fields; the same table.txt; statuses per command from the agent."""
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write('run --asm "add rax, rbx; add rcx, rbx" --events tsc --reps 3\n'
                    "run --bench nop,add_chain --events tsc --cpu all --reps 3\n"
                    "run --bench pointer_chase --size 4K --events tsc --reps 3 --unroll 20 --cpu 1\n"
                    "msr read 0x1b --cpu all\n"
                    'run --asm "ud2" --events tsc --reps 3\n'
                    "info\n")
        runs = {}
        for mode in ("--no-agent", "--agent"):
            out = os.path.join(td, mode.strip("-"))
            r = _lab("run", "--config", cfg, "--smp", "2", "--icount", "7", mode, "--keep-images", "--out", out)
            assert r.returncode == 1, r.stdout + r.stderr  # the ud2 line fails in both modes
            runs[mode] = (os.path.join(out, "c-smp2"), r.stdout)
        img_dir, img_out = runs["--no-agent"]
        agt_dir, agt_out = runs["--agent"]
        assert img_out.startswith("FAIL c-smp2: image, exit 2, 12 results files"), img_out
        assert agt_out.startswith("FAIL c-smp2: agent, 6 commands: 5 ok, 1 failed; line 5: ud2 on CPU 0 (run 0): "
                                  "code raised #UD"), agt_out
        names = sorted(os.listdir(os.path.join(img_dir, "results")))
        assert names == sorted(os.listdir(os.path.join(agt_dir, "results"))), names
        assert names == [f"000{i}-{c}.{e}" for i, c in enumerate(["run", "run", "run", "msr", "run", "info"], 1)
                         for e in ("csv", "jsonl")], names
        for name in names:
            if name.endswith(".jsonl"):
                a = _records_without_timing(os.path.join(img_dir, "results", name))
                b = _records_without_timing(os.path.join(agt_dir, "results", name))
                assert a == b, (name, a, b)
            else:  # the same columns
                heads = [open(os.path.join(d, "results", name)).readline() for d in (img_dir, agt_dir)]
                assert heads[0] == heads[1] and (heads[0].count(",") > 3) == (name != "0005-run.csv"), (name, heads)
        # Exact values, in both.
        for d in (img_dir, agt_dir):
            recs = [json.loads(l) for n in names if n.endswith(".jsonl")
                    for l in open(os.path.join(d, "results", n))]
            res = [(x["bench"], x["cpu"], x["per_iteration"], x["q1"], x["q3"]) for x in recs if x["type"] == "result"]
            assert res == [("add rax, rbx; add rcx, rbx", 0, 256, 256, 256),
                           ("nop", 0, 128, 128, 128), ("nop", 1, 128, 128, 128),
                           ("add_chain", 0, 128, 128, 128), ("add_chain", 1, 128, 128, 128),
                           ("pointer_chase", 1, 128, 128, 128)], res
            metas = [x for x in recs if x["type"] == "meta"]
            assert metas[0]["command_line"] == ("run --code 4801d84801d9 --events tsc --reps 3 --name add rax, rbx; "
                                                "add rcx, rbx"), metas[0]
            assert [m["tsc_source"] for m in metas] == ["efi_stall"] * 6, metas
            assert [x["tsc_source"] for x in recs if x["type"] == "cpu"] == ["efi_stall"] * 2
            assert [x["value"] for x in recs if x["type"] == "msr"] == ["0xfee00900", "0xfee00800"]
        # The same table (the error's campaign-line prefix apart).
        tables = [_placeless(open(os.path.join(d, "table.txt")).read()) for d in (img_dir, agt_dir)]
        assert tables[0] == tables[1], tables
        assert ("add rax, rbx; add rcx, rbx      - tsc   TSC        0     0    0       256.00       256.00       "
                "256.00       256.00       256.00  TSC ticks / iteration") in tables[0], tables[0]
        with open(os.path.join(agt_dir, "commands.json")) as f:
            states = json.load(f)
        assert [(s["line"], s["state"], s["status"]) for s in states] == [
            (1, "ok", 0), (2, "ok", 0), (3, "ok", 0), (4, "ok", 0), (5, "failed", 2), (6, "ok", 0)], states
        # Each command names the results file it wrote.
        assert [s["results"] for s in states] == [n[:-6] for n in names if n.endswith(".jsonl")], states
        assert not os.path.exists(os.path.join(img_dir, "commands.json"))
        # --keep-images keeps the agent's disk image too: the same files pulled again.
        assert sorted(os.listdir(agt_dir)) == ["commands.json", "console.txt", "pmulab.cfg", "pmulab.img", "results",
                                               "serial.log", "table.txt"], os.listdir(agt_dir)
        r = _lab("pull", os.path.join(agt_dir, "pmulab.img"), "--out", os.path.join(td, "again"))
        assert r.returncode == 0 and sorted(os.listdir(os.path.join(td, "again"))) == names, r
        # Merged records say which mode ran them.
        for d, mode in ((img_dir, "image"), (agt_dir, "agent")):
            merged = [json.loads(l) for l in open(os.path.join(os.path.dirname(d), "merged.jsonl"))]
            assert {x["lab"]["mode"] for x in merged} == {mode}


def test_qemu_lab_agent_lost_mid_campaign_marks_the_rest_not_run():
    """User code that triple-faults resets the machine (QEMU -no-reboot exits): the
    command that ran fails, the rest are 'not run' with the reason, and the results files
    of the commands before it are still pulled from the disk image."""
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "d.cfg")
        with open(cfg, "w") as f:
            f.write('run --asm "add rax, rbx" --events tsc --reps 3\n'
                    'run --asm "sub rsp, 16; mov qword ptr [rsp], 0; mov qword ptr [rsp+8], 0; lidt [rsp]; ud2" '
                    "--events tsc --reps 3\n"
                    "info\nmsr read 0x1b\n")
        out = os.path.join(td, "out")
        r = _lab("run", "--config", cfg, "--smp", "1", "--icount", "7", "--out", out)
        assert r.returncode == 1, r.stdout + r.stderr
        first = r.stdout.splitlines()[0]
        assert first.startswith("FAIL d-smp1: agent, 4 commands: 1 ok, 1 failed, 2 not run; line 2: the agent was "
                                "lost: the agent closed the link (QEMU status 125: run-qemu: pmulab ended without "
                                "reporting an exit status"), first
        assert first.endswith("; not run: lines 3, 4; 4 results files"), first
        with open(os.path.join(out, "d-smp1", "commands.json")) as f:
            states = json.load(f)
        assert [(s["line"], s["state"], s["status"], s["results"]) for s in states] == [
            (1, "ok", 0, "0001-run"), (2, "failed", None, "0002-run"), (3, "not run", None, None),
            (4, "not run", None, None)], states
        assert states[3]["reason"].startswith("the agent was lost") and states[3]["reason"].endswith(", at line 2")
        recs = [json.loads(l) for l in open(os.path.join(out, "d-smp1", "results", "0001-run.jsonl"))]
        assert [x["per_iteration"] for x in recs if x["type"] == "result"] == [128], recs
        recs = [json.loads(l) for l in open(os.path.join(out, "d-smp1", "results", "0002-run.jsonl"))]
        assert [x["type"] for x in recs] == ["meta"], recs  # flushed before the machine went down


def test_lab_table_txt_from_results_files():
    """table.txt: per results file its command line (shortened past 160 characters),
    the median/q1/q3/est table with the values as the records hold them (128.00 stays
    128.00), sizes as pmulab writes them (4K, 1M), other records counted, errors."""
    with tempfile.TemporaryDirectory() as td:
        run = os.path.join(td, "c-smp1")
        res = os.path.join(run, "results")
        os.makedirs(res)
        result = {"type": "result", "cpu": 1, "apic_id": 2, "bench": "pointer_chase", "event": "tsc",
                  "counter": "TSC", "run": 0, "agg": "median", "unit": "TSC ticks / iteration"}
        with open(os.path.join(res, "0001-run.jsonl"), "w") as f:
            f.write('{"type":"meta","command_line":"run --bench pointer_chase --size 4K,1M"}\n')
            for size, v in ((4096, "128.00"), (1 << 20, "0.004")):
                rec = json.dumps(dict(result, size=size))[:-1]
                f.write(rec + f',"per_iteration":{v},"q1":{v},"q3":{v},"min":{v},"max":1.5e3}}\n')
        with open(os.path.join(res, "0002-msr.jsonl"), "w") as f:
            f.write('{"type":"meta","command_line":"msr read 0x1b --cpu all"}\n{"type":"msr"}\n{"type":"msr"}\n')
        with open(os.path.join(res, "0003-run.jsonl"), "w") as f:
            f.write(json.dumps({"type": "meta", "command_line": "run --code " + "90" * 100}) + "\n"
                    + '{"type":"error","message":"code raised #UD"}\n')
        with open(os.path.join(res, "0004-run.jsonl"), "w") as f:
            f.write('{"type":"meta","command_line":"run --bench nop"}\n')
        open(os.path.join(res, "0001-run.csv"), "w").close()
        mod = _load_lab()
        mod.write_table(run)
        with open(os.path.join(run, "table.txt")) as f:
            text = f.read()
        head = ("bench           size event counter  cpu  apic  run       median           q1           q3     est(min)"
                "     est(max)  unit")
        assert text == (
            "# c-smp1: 4 results files (pmulab-lab; values per iteration)\n\n"
            "0001-run: run --bench pointer_chase --size 4K,1M\n" + head + "\n"
            "pointer_chase     4K tsc   TSC        1     2    0       128.00       128.00       128.00       128.00"
            "        1.5e3  TSC ticks / iteration\n"
            "pointer_chase     1M tsc   TSC        1     2    0        0.004        0.004        0.004        0.004"
            "        1.5e3  TSC ticks / iteration\n\n"
            "0002-msr: msr read 0x1b --cpu all\n  2 msr records\n\n"
            "0003-run: " + ("run --code " + "90" * 100)[:150] + "... (211 characters)\n  error: code raised #UD\n\n"
            "0004-run: run --bench nop\n  (no records after the meta record)\n"), text
        assert mod.line_ranges([2, 3, 4, 5, 6]) == "2-6" and mod.line_ranges([3, 4, 8, 10, 11, 12]) == "3, 4, 8, 10-12"
        assert [mod.size_text(n) for n in (4096, 1 << 20, 3 << 30, 100, None)] == ["4K", "1M", "3G", "100", "-"]


def test_qemu_lab_reader_gone_still_boots_and_merges_every_run():
    """`pmulab-lab run ... | head -1`: the reader goes away after the first line; the
    other boots still run and everything is merged, with no traceback (it was a
    BrokenPipeError, and merged.jsonl was never written). QEMU refuses the CPU model at
    once, so the boots are quick; their reason is on the line."""
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("info\nversion\n")
        out = os.path.join(td, "out")
        p = subprocess.Popen([LAB, "run", "--config", cfg, "--smp", "1,2", "--cpu", "nosuchcpu", "--jobs", "1",
                              "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read()
        assert p.wait(timeout=300) == 1, err
        assert first.startswith("FAIL c-smp1-nosuchcpu: agent, 2 commands: 2 not run; not run: lines 1, 2 (the agent "
                                "did not start: "), first
        assert "unable to find CPU model 'nosuchcpu'" in first, first
        assert "Traceback" not in err, err
        assert sorted(os.listdir(out)) == ["c-smp1-nosuchcpu", "c-smp2-nosuchcpu", "merged.csv", "merged.jsonl"]
        for run in ("c-smp1-nosuchcpu", "c-smp2-nosuchcpu"):
            with open(os.path.join(out, run, "commands.json")) as f:
                assert [s["state"] for s in json.load(f)] == ["not run", "not run"]


def test_qemu_lab_agent_with_kvm_falls_back_to_tcg():
    """--kvm in agent mode: where KVM cannot run OVMF (here: 'failed to set MSR 0x10a'),
    run-qemu.sh's fall-back starts a second QEMU that the client's socket never reached,
    and every command was 'not run'. pmulab-lab starts the agent again under TCG."""
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "k.cfg")
        with open(cfg, "w") as f:
            f.write("msr read 0x1b\nrun --bench nop --events tsc --reps 3\n")
        out = os.path.join(td, "out")
        r = _lab("run", "--config", cfg, "--smp", "1", "--kvm", "--out", out)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.startswith("ok   k-smp1: agent, 2 commands: 2 ok; 4 results files"), r.stdout
        with open(os.path.join(out, "k-smp1", "commands.json")) as f:
            assert [(s["state"], s["results"]) for s in json.load(f)] == [("ok", "0001-msr"), ("ok", "0002-run")]
        recs = [json.loads(l) for l in open(os.path.join(out, "merged.jsonl"))]
        assert [x["value"] for x in recs if x["type"] == "msr"] == ["0xfee00900"], recs
