"""pmulab on LAVA (issue #16, docs/lava.md): the --lava test-case lines, the monitors
pattern under LAVA's own matching rules, the job templates against LAVA's schema and
`lava-run --validate`, the results converter (round trip through a recorded lava-run
job, into pmulab-lab merge and pmulab-plot), and a real lava-run of a rendered QEMU
job (test_qemu_*: LAVA's standalone dispatcher boots pmulab under OVMF).

lava-run comes from tools/lava/get-lava-run.sh (Debian's lava-dispatcher unpacked into
build/lava/, not installed; `make deps` fetches it)."""

import json
import os
import re
import subprocess
import sys
import tempfile

from pmulab_test import ROOT

LAVA = os.path.join(ROOT, "tools", "lava", "pmulab-lava")
DATA = os.path.join(ROOT, "tests", "data", "lava")
LAVA_ROOT = os.path.join(ROOT, "build", "lava")
LAVA_RUN = os.path.join(LAVA_ROOT, "lava-run")
LAB = os.path.join(ROOT, "tools", "pmulab-lab")
PLOT = os.path.join(ROOT, "tools", "pmulab-plot")


def _tool(*args, cwd=None):
    return subprocess.run([LAVA, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                          timeout=120)


def _lava_run_available():
    if not os.path.exists(LAVA_RUN):
        subprocess.run([os.path.join(ROOT, "tools", "lava", "get-lava-run.sh")], timeout=300)
    assert os.path.exists(LAVA_RUN), "tools/lava/get-lava-run.sh could not fetch lava-run (apt-get download)"


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _yaml():
    import yaml
    return yaml


def _monitor(console, monitors):
    """LAVA's TestMonitorAction on a console text (lava_dispatcher/actions/test/
    monitor.py, 2023.01): for each monitor, wait for `start`, then pexpect.expect([EOF,
    TIMEOUT, end, pattern]) until `end`: pexpect compiles str patterns with re.DOTALL,
    searches the buffer and takes the match that starts first (the earlier pattern on a
    tie). A test case is recorded with case = test_case_id lowered, \\W+ -> '_'."""
    results = []
    pos = 0
    for m in monitors:
        s = re.compile(m["start"], re.DOTALL).search(console, pos)
        assert s, f"start {m['start']!r} not found"
        pos = s.end()
        end, pat = re.compile(m["end"], re.DOTALL), re.compile(m["pattern"], re.DOTALL)
        while True:
            e, t = end.search(console, pos), pat.search(console, pos)
            assert e or t, f"monitor {m['name']}: end of file before its end string"
            if e and (not t or e.start() <= t.start()):
                pos = e.end()
                break
            g = t.groupdict()
            tcid = g["test_case_id"].strip()
            r = {"definition": m["name"].replace(" ", "-").lower(),
                 "case": re.sub(r"\W+", "_", tcid.lower()), "result": g["result"], "extra": {"test_case_id": tcid}}
            if "measurement" in g:
                r["measurement"] = g["measurement"]
            if "units" in g:
                r["units"] = g["units"]
            results.append(r)
            pos = t.end()
    return results


def _render(td, template, campaign, *extra):
    out = os.path.join(td, f"job-{template}.yaml")
    p = _tool("render", "--template", template, "--campaign", campaign, "--out", out, *extra)
    assert p.returncode == 0, p.stderr
    return _yaml().safe_load(_read(out)), out


def _log_entries(path):
    yaml = _yaml()
    out = []
    for line in _read(path).splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                out.append(yaml.safe_load(line))
    return out


def _log_results(entries):
    return [e["msg"] for e in entries if e["lvl"] == "results" and e["msg"].get("definition") != "lava"]


def test_lava_pattern_matches_the_recorded_console_as_lava_does():
    # A recorded console (./run-qemu.sh --icount 7 --smp 2 -- --lava selftest --cpu all)
    # through the monitors of a rendered job, with LAVA's matching rules.
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "s.cfg")
        with open(cfg, "w") as f:
            f.write("selftest --cpu all\n")
        job, _ = _render(td, "qemu", cfg, "--image-url", "file:///nonexistent.img")
    (test,) = [a["test"] for a in job["actions"] if "test" in a]
    (mon,) = test["monitors"]
    assert (mon["name"], mon["start"], mon["end"]) == ("pmulab-1-selftest", "pmulab-lava: begin selftest",
                                                     "pmulab-lava: end selftest status")
    p = _tool("pattern")
    assert p.returncode == 0 and p.stdout.strip() == mon["pattern"], p
    console = _read(os.path.join(DATA, "console-selftest.txt"))
    got = _monitor(console, [mon])
    checks = [l for l in console.splitlines() if l.startswith(("PASS: ", "FAIL: ", "SKIP: ", "NOT VERIFIED: "))]
    # One test case per check, plus the command's exit status.
    assert len(got) == len(checks) + 1 > 20, got
    assert got[0] == {"definition": "pmulab-1-selftest", "case": "selftest_tsc_advances_cpu0", "result": "pass",
                      "measurement": None, "units": None,
                      "extra": {"test_case_id": "selftest/TSC_advances/cpu0"}}
    lin = [r for r in got if r["case"].startswith("selftest_u_vs_2u_linearity")]
    assert [r["extra"]["test_case_id"] for r in lin] == [
        "selftest/U_vs_2U_linearity_for_nop_(U_1000_and_2000)/cpu0",
        "selftest/U_vs_2U_linearity_for_nop_(U_1000_and_2000)/cpu1"]
    assert {r["result"] for r in got[:-1]} == {"pass", "skip"}
    skips = [r for r in got if r["result"] == "skip"]
    assert len(skips) == sum(1 for c in checks if c.startswith("SKIP: ")) >= 6
    assert got[-1]["extra"]["test_case_id"] == "selftest/exit-status"
    assert (got[-1]["result"], got[-1]["measurement"], got[-1]["units"]) == ("pass", "0", "status")


def test_lava_pattern_simulation_agrees_with_the_real_dispatcher():
    # The recorded lava-run job: its console lines through our model of the monitors
    # give exactly the test cases the real dispatcher recorded.
    entries = _log_entries(os.path.join(DATA, "lava-run-job.log"))
    console = "\n".join(e["msg"].replace('\\"', '"') for e in entries if e["lvl"] == "target") + "\n"
    with tempfile.TemporaryDirectory() as td:
        job, _ = _render(td, "qemu", os.path.join(DATA, "campaign.cfg"), "--image-url", "file:///x.img")
    (test,) = [a["test"] for a in job["actions"] if "test" in a]
    assert [m["name"] for m in test["monitors"]] == ["pmulab-1-selftest", "pmulab-2-run"]
    ours = _monitor(console, test["monitors"])
    real = [{k: v for k, v in r.items() if k != "level"} for r in _log_results(entries)]
    for r in real:  # LAVA logs a missing group as the string "null" (a YAML tag)
        for k in ("measurement", "units"):
            if r.get(k) == "null":
                r[k] = None
    assert ours == real
    runs = [r for r in real if r["definition"] == "pmulab-2-run"]
    assert [(r["extra"]["test_case_id"], r["measurement"], r["units"]) for r in runs] == [
        ("run/nop/-/tsc/cpu0", "128.00", "ticks/iteration"),
        ("run/pointer_chase/4096/tsc/cpu0", "128.00", "ticks/iteration"),
        ("run/pointer_chase/65536/tsc/cpu0", "128.00", "ticks/iteration"),
        ("run/exit-status", "0", "status")]


def test_lava_job_templates_pass_lavas_schema_and_validate():
    _lava_run_available()
    sys.path.insert(0, os.path.join(LAVA_ROOT, "stub"))
    sys.path.insert(0, os.path.join(LAVA_ROOT, "root", "usr", "lib", "python3", "dist-packages"))
    try:
        from lava_common.schemas import validate
    finally:
        del sys.path[:2]
    with tempfile.TemporaryDirectory() as td:
        one = os.path.join(td, "one.cfg")
        with open(one, "w") as f:
            f.write("selftest\n")
        jobs = [
            _render(td, "qemu", os.path.join(DATA, "campaign.cfg"), "--image-url", "https://lab.example/p.img",
                    "--icount", "7"),
            _render(td, "x86-usb", os.path.join(DATA, "campaign.cfg"), "--image-url", "https://lab.example/p.img",
                    "--set", "DEVICE_TYPE=x86-lab", "--set", "DEVICE_TAG=skylake"),
            _render(td, "x86-pxe", one, "--efi-url", "https://lab.example/pmulab.efi"),
        ]
        for job, path in jobs:
            validate(job, strict=True)  # raises on any schema error
        usb = jobs[1][0]
        assert (usb["device_type"], usb["tags"]) == ("x86-lab", ["skylake"])
        assert usb["actions"][0]["deploy"] == {"to": "flasher", "timeout": {"minutes": 10},
                                               "images": {"image": {"url": "https://lab.example/p.img"}}}
        assert usb["actions"][1]["boot"]["method"] == "minimal"
        pxe = jobs[2][0]
        # --json by default (full records come back from the console), --text to keep text.
        assert pxe["actions"][1]["boot"]["commands"] == ["dhcp net0",
                                                         "chain tftp://{SERVER_IP}/{KERNEL} --lava --json selftest"]
        os.makedirs(os.path.join(td, "text"))
        pxe_text, _ = _render(os.path.join(td, "text"), "x86-pxe", one, "--efi-url", "https://lab.example/pmulab.efi",
                              "--text")
        assert pxe_text["actions"][1]["boot"]["commands"] == ["dhcp net0",
                                                              "chain tftp://{SERVER_IP}/{KERNEL} --lava selftest"]
        qemu = jobs[0][0]
        assert "-icount shift=7" in qemu["context"]["extra_options"]
        # lava-run --validate on the QEMU job with the local device.
        img = os.path.join(td, "disk.img")
        open(img, "wb").close()
        dev = os.path.join(td, "device.yaml")
        job_path = os.path.join(td, "local.yaml")
        p = _tool("render", "--template", "qemu", "--campaign", os.path.join(DATA, "campaign.cfg"),
                  "--image-url", "file://" + img, "--device-out", dev, "--out", job_path)
        assert p.returncode == 0, p.stderr
        v = subprocess.run([LAVA_RUN, "--validate", "--job-id", "1", "--output-dir", os.path.join(td, "out"),
                            "--device", dev, job_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
        assert v.returncode == 0 and '"msg": {"case": "validate", "definition": "lava", "result": "pass"}' in v.stdout, \
            v.stdout[-3000:]


def test_lava_results_round_trip_into_lab_merge_and_plot():
    log = os.path.join(DATA, "lava-run-job.log")
    entries = _log_entries(log)
    console = [json.loads(e["msg"].replace('\\"', '"')) for e in entries
               if e["lvl"] == "target" and e["msg"].startswith("{")]
    assert len(console) == 3, console
    with tempfile.TemporaryDirectory() as td:
        job = os.path.join(td, "lava", "job-7")
        os.makedirs(job)
        out = os.path.join(job, "pmulab.jsonl")
        p = _tool("results", log, "--out", out, "--job", "7")
        assert p.returncode == 0, p.stderr
        recs = [json.loads(l) for l in _read(out).splitlines()]
        res = [r for r in recs if r["type"] == "result"]
        # The console's full records come back as pmulab wrote them (with where from).
        assert [{k: v for k, v in r.items() if k != "lava"} for r in res] == console
        assert [r["lava"]["suite"] for r in res] == ["pmulab-2-run"] * 3
        # Checks (text mode in this campaign) are rebuilt from the test cases.
        checks = [r for r in recs if r["type"] == "check"]
        lava_checks = [r for r in _log_results(entries) if r["definition"] == "pmulab-1-selftest"
                       and not r["case"].endswith("exit_status")]
        assert len(checks) == len(lava_checks) > 15
        assert checks[0] == {"type": "check", "name": "TSC_advances", "cpu": 0, "status": "PASS",
                             "lava": {"job": "7", "suite": "pmulab-1-selftest", "case": "selftest_tsc_advances_cpu0"}}
        assert {"type": "check", "name": "basic_mode_(0_and_U_copies)_agrees_with_U/2U_for_nop", "cpu": 0,
                "status": "PASS"} in [{k: v for k, v in c.items() if k != "lava"} for c in checks]
        exits = [r for r in recs if r["type"] == "exit"]
        assert [(r["command"], r["status"]) for r in exits] == [("selftest", 0), ("run", 0)]
        # pmulab-lab merge and pmulab-plot read it like a local campaign.
        m = subprocess.run([LAB, "merge", os.path.join(td, "lava"), "--out", os.path.join(td, "merged")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert m.returncode == 0, m.stderr
        merged = [json.loads(l) for l in _read(os.path.join(td, "merged.jsonl")).splitlines()]
        assert len(merged) == len(recs) and {r["lab"]["run"] for r in merged} == {"lava/job-7"}
        png = os.path.join(td, "s.png")
        pl = subprocess.run([PLOT, "staircase", os.path.join(td, "merged.jsonl"), "--out", png],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert pl.returncode == 0 and os.path.getsize(png) > 1000, pl.stderr
        assert "(2 points)" in pl.stdout + pl.stderr


def test_lava_results_from_test_cases_alone_and_lavacli_yaml():
    # Without --json on the campaign the measurements come back from the test cases:
    # bench, size, event, CPU, value and unit; the same from `lavacli results --yaml`.
    entries = _log_entries(os.path.join(DATA, "lava-run-job.log"))
    results = _log_results(entries)
    with tempfile.TemporaryDirectory() as td:
        log = os.path.join(td, "no-json.log")
        with open(log, "w") as f:
            for e in entries:
                if e["lvl"] == "target" and e["msg"].startswith("{"):
                    continue
                f.write(json.dumps(e) + "\n")
        out = os.path.join(td, "a.jsonl")
        p = _tool("results", log, "--out", out, "--job", "7")
        assert p.returncode == 0, p.stderr
        res = [json.loads(l) for l in _read(out).splitlines() if '"type":"result"' in l]
        want = [{"type": "result", "cpu": 0, "bench": "nop", "event": "tsc", "per_iteration": 128.0,
                 "unit": "TSC ticks / iteration"},
                {"type": "result", "cpu": 0, "bench": "pointer_chase", "size": 4096, "event": "tsc",
                 "per_iteration": 128.0, "unit": "TSC ticks / iteration"},
                {"type": "result", "cpu": 0, "bench": "pointer_chase", "size": 65536, "event": "tsc",
                 "per_iteration": 128.0, "unit": "TSC ticks / iteration"}]
        assert [{k: v for k, v in r.items() if k != "lava"} for r in res] == want
        # lavacli results --yaml: name, suite (the server prefixes its index), result,
        # measurement, unit, metadata (a YAML text holding extra.test_case_id).
        yml = os.path.join(td, "results.yaml")
        cases = [{"job": "7", "suite": f"{1 if r['definition'].endswith('selftest') else 2}_{r['definition']}",
                  "name": r["case"], "result": r["result"],
                  "measurement": r.get("measurement") if r.get("measurement") != "null" else None,
                  "unit": r.get("units") if r.get("units") != "null" else "",
                  "metadata": _yaml().safe_dump(r)} for r in results]
        cases.append({"job": "7", "suite": "lava", "name": "job", "result": "pass", "measurement": None,
                      "unit": "", "metadata": "{case: job, definition: lava, result: pass}"})
        with open(yml, "w") as f:
            f.write(_yaml().safe_dump(cases))
        out2 = os.path.join(td, "b.jsonl")
        p = _tool("results", yml, "--out", out2)
        assert p.returncode == 0, p.stderr
        res2 = [json.loads(l) for l in _read(out2).splitlines() if '"type":"result"' in l]
        assert [{k: v for k, v in r.items() if k != "lava"} for r in res2] == want
        assert res2[0]["lava"] == {"job": "7", "suite": "2_pmulab-2-run", "case": "run_nop_tsc_cpu0"}


def test_lava_tool_bad_input_is_a_clear_error():
    with tempfile.TemporaryDirectory() as td:
        bad = os.path.join(td, "bad.cfg")
        with open(bad, "w") as f:
            f.write("info\nfrobnicate\n")
        empty = os.path.join(td, "empty.cfg")
        with open(empty, "w") as f:
            f.write("# nothing\n--shutdown\n")
        latin = os.path.join(td, "latin.yaml")
        with open(latin, "wb") as f:
            f.write(b"- name: caf\xe9\n")
        exists = os.path.join(td, "exists.jsonl")
        open(exists, "w").close()
        cases = [
            (["render", "--template", "qemu", "--campaign", bad, "--image-out", os.path.join(td, "x.img")], 2,
             f"pmulab-lava: error: {bad} has errors; no image built (pmulab would refuse it)"),
            (["render", "--template", "qemu", "--campaign", empty, "--image-url", "file:///x"], 2,
             f"pmulab-lava: error: {empty}: no commands: a campaign holds one pmulab command per line"),
            (["render", "--template", "qemu", "--campaign", bad], 2,
             "pmulab-lava: error: --template qemu needs --image-url or --image-out"),
            (["render", "--template", "x86-pxe", "--campaign", bad, "--efi-url", "x"], 2,
             f"pmulab-lava: error: {bad}: --template x86-pxe runs one command"),
            (["render", "--template", "vax", "--campaign", bad], 2, "pmulab-lava: error: argument --template"),
            (["render", "--template", "qemu", "--campaign", bad, "--image-url", "u", "--set", "NOPE=1"], 2,
             "pmulab-lava: error: --set NOPE: unknown placeholder"),
            (["results", os.path.join(td, "missing.log"), "--out", os.path.join(td, "o.jsonl")], 2,
             "pmulab-lava: error: " + os.path.join(td, "missing.log") + ": cannot read: No such file or directory"),
            (["results", latin, "--out", os.path.join(td, "o.jsonl")], 2,
             f"pmulab-lava: error: {latin}: not UTF-8 text"),
            (["results", os.path.join(DATA, "lava-run-job.log"), "--out", exists], 2,
             f"pmulab-lava: error: {exists} exists: pmulab-lava never overwrites a file"),
            (["results", os.path.join(DATA, "campaign.cfg"), "--out", os.path.join(td, "o.jsonl")], 2,
             "pmulab-lava: error: " + os.path.join(DATA, "campaign.cfg") + ": not a list of LAVA test cases"),
        ]
        for args, status, msg in cases:
            p = _tool(*args)
            assert p.returncode == status and "Traceback" not in p.stderr, (args, p.returncode, p.stderr)
            assert p.stderr.splitlines()[-1].startswith(msg), (args, p.stderr)
        assert not os.path.exists(os.path.join(td, "x.img"))


def test_qemu_lava_run_boots_pmulab_and_records_the_campaign():
    # LAVA's standalone dispatcher runs a rendered job on a local QEMU device: OVMF boots
    # the image, pmulab runs a selftest and a run under -icount 7 (exact values), and the
    # job's log holds the test cases; the converter brings them back as records.
    _lava_run_available()
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("selftest\nrun --bench nop,add_chain,pointer_chase --size 8K --reps 5\n--shutdown\n")
        img, dev, job = (os.path.join(td, n) for n in ("disk.img", "device.yaml", "job.yaml"))
        p = _tool("render", "--template", "qemu", "--campaign", cfg, "--image-out", img, "--device-out", dev,
                  "--icount", "7", "--set", "SMP=1", "--set", "JOB_MINUTES=5", "--out", job)
        assert p.returncode == 0, p.stderr
        r = subprocess.run([LAVA_RUN, "--job-id", "1", "--output-dir", os.path.join(td, "out"), "--device", dev, job],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400)
        log = os.path.join(td, "job.log")
        with open(log, "w") as f:
            f.write(r.stdout)
        assert r.returncode == 0, r.stdout[-4000:]
        entries = _log_entries(log)
        res = _log_results(entries)
        assert {"case": "job", "definition": "lava", "result": "pass"} in [e["msg"] for e in entries
                                                                           if e["lvl"] == "results"], r.stdout[-3000:]
        runs = [(x["extra"]["test_case_id"], x["result"], x["measurement"], x["units"]) for x in res
                if x["definition"] == "pmulab-2-run"]
        assert runs == [("run/nop/-/tsc/cpu0", "pass", "128.00", "ticks/iteration"),
                        ("run/add_chain/-/tsc/cpu0", "pass", "128.00", "ticks/iteration"),
                        ("run/pointer_chase/8192/tsc/cpu0", "pass", "128.00", "ticks/iteration"),
                        ("run/exit-status", "pass", "0", "status")], runs
        st = [x for x in res if x["definition"] == "pmulab-1-selftest"]
        assert len(st) > 15 and not [x for x in st if x["result"] == "fail"], st
        assert ("selftest/U_vs_2U_linearity_for_nop_(U_1000_and_2000)/cpu0", "pass") in [
            (x["extra"]["test_case_id"], x["result"]) for x in st]
        out = os.path.join(td, "lava.jsonl")
        c = _tool("results", log, "--out", out, "--job", "1")
        assert c.returncode == 0, c.stderr
        recs = [json.loads(l) for l in _read(out).splitlines()]
        assert [(x["bench"], x.get("size"), x["per_iteration"]) for x in recs if x["type"] == "result"] == [
            ("nop", None, 128.0), ("add_chain", None, 128.0), ("pointer_chase", 8192, 128.0)]
        # render put --json on the lines: the records are pmulab's own, as a local campaign
        # writes them (every field, names with spaces), not rebuilt from the test cases.
        res_recs = [x for x in recs if x["type"] == "result"]
        assert all(x["unit"] == "TSC ticks / iteration" and x["fraction"] == [128, 1] and "noise" in x
                   for x in res_recs), res_recs
        names = [x["name"] for x in recs if x["type"] == "check"]
        # the name exactly, "=" and spaces included (the test case id had "_" for both)
        assert "U vs 2U linearity for nop (U = 1000 and 2000)" in names, names
        # Exit statuses are test cases only: rebuilt, one per command.
        assert [(x["command"], x["status"]) for x in recs if x["type"] == "exit"] == [("selftest", 0), ("run", 0)]


def test_lava_results_into_a_new_job_folder_and_an_empty_log():
    """The documented `results job.log --out lava/4711/pmulab.jsonl` makes the job's
    folder (it failed with 'No such file or directory'); an empty log (lava-run's log
    is on its stderr) says so instead of 'not a list of LAVA test cases'."""
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "lava", "4711", "pmulab.jsonl")
        p = _tool("results", os.path.join(DATA, "lava-run-job.log"), "--job", "4711", "--out", out)
        assert p.returncode == 0, p.stderr
        assert sum(1 for l in _read(out).splitlines() if '"type":"result"' in l) == 3
        empty = os.path.join(td, "job.log")
        open(empty, "w").close()
        p = _tool("results", empty, "--out", os.path.join(td, "x.jsonl"))
        assert p.returncode == 2 and "Traceback" not in p.stderr, p
        assert p.stderr == (f"pmulab-lava: error: {empty}: empty (lava-run writes the job log to its stderr: "
                            "`lava-run ... > job.log 2>&1`; or `lavacli jobs logs --raw ID > job.log`)\n"), p.stderr
        assert not os.path.exists(os.path.join(td, "x.jsonl"))
