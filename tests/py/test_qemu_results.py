"""QEMU boots that check results files on the boot volume and config campaigns."""

import json
import os
import signal
import subprocess
import tempfile

from pmulab_test import ROOT, run_qemu

QEMU = True


def _mtools(img, *args):
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    p = subprocess.run([args[0], "-i", f"{img}@@1M", *args[1:]], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _results(img):
    listing = _mtools(img, "mdir", "-b", "::/pmulab/results")
    return sorted(os.path.basename(l.strip()) for l in listing.splitlines() if l.strip())


def _build_image(td, cfg_text):
    cfg = os.path.join(td, "pmulab.cfg")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    img = os.path.join(td, "pmulab.img")
    subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img,
                    os.path.join(ROOT, "build", "pmulab.efi"), cfg], check=True,
                   stdout=subprocess.DEVNULL)
    return img


def test_qemu_results_files_and_second_boot_keeps_old_ones():
    with tempfile.TemporaryDirectory() as td:
        img = _build_image(td, "# campaign\ninfo\nmsr read 0x1b --cpu all\n--shutdown\n")
        r = run_qemu(smp=2, image=img)
        assert r.rc == 0, r
        files = _results(img)
        assert files == ["0001-info.csv", "0001-info.jsonl", "0002-msr.csv", "0002-msr.jsonl"], files
        jl = _mtools(img, "mtype", "::/pmulab/results/0001-info.jsonl").splitlines()
        recs = [json.loads(l) for l in jl]
        meta = recs[0]
        assert meta["type"] == "meta", meta
        assert meta["command_line"] == "info", meta
        assert meta["cpu_vendor"] == "AuthenticAMD" and meta["hypervisor"] is True, meta
        assert meta["firmware_vendor"] == "EDK II", meta
        assert meta["counter_method"] == "rdmsr", meta  # RDPMC raises #UD under TCG
        assert meta["cpus"] == 2 and len(meta["time"]) == 19, meta
        assert [x["type"] for x in recs[1:]] == ["cpu", "cpu"], recs
        csv = _mtools(img, "mtype", "::/pmulab/results/0001-info.csv").splitlines()
        assert csv[0].startswith("type,index,apic_id,bsp,"), csv[0]
        assert len(csv) == 3 and csv[1].startswith("cpu,0,0,true,") and csv[2].startswith("cpu,1,1,false,"), csv
        msr = [json.loads(l) for l in _mtools(img, "mtype", "::/pmulab/results/0002-msr.jsonl").splitlines()]
        assert [(x["cpu"], x["value"]) for x in msr[1:]] == [(0, "0xfee00900"), (1, "0xfee00800")], msr
        first = _mtools(img, "mtype", "::/pmulab/results/0001-info.jsonl")

        # Second boot of the same stick: new numbers, old files untouched.
        r = run_qemu(smp=2, image=img)
        assert r.rc == 0, r
        assert _results(img) == files + ["0003-info.csv", "0003-info.jsonl", "0004-msr.csv",
                                         "0004-msr.jsonl"], _results(img)
        assert _mtools(img, "mtype", "::/pmulab/results/0001-info.jsonl") == first


def test_qemu_results_read_only_volume_is_reported_and_run_goes_on():
    with tempfile.TemporaryDirectory() as td:
        img = _build_image(td, "info --json\n--shutdown\n")
        r = run_qemu(smp=1, image=img, extra=("--readonly-disk",))
        assert r.rc == 0, r
        recs = r.records()
        warn = [x for x in recs if x["type"] == "warning"]
        assert warn and "read-only" in warn[0]["message"], recs
        # The meta record first (built before the results folder is tried), then the census.
        assert [x["type"] for x in recs if x["type"] != "warning"] == ["meta", "cpu"], recs


def test_qemu_config_bad_lines_are_reported_with_line_numbers_and_nothing_runs():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "bad.cfg")
        with open(cfg, "w") as f:
            f.write("info\n\n# comment\nfrobnicate --now\nmsr read 0x10\nbogus\n")
        r = run_qemu(smp=1, config=cfg)
        assert r.rc == 2, r
        assert r.out == "", r  # errors are diagnostics: on stderr
        assert [l for l in r.err.splitlines() if l.startswith("pmulab: ")] == [
            "pmulab: error: \\pmulab\\pmulab.cfg:4: unknown command 'frobnicate' (try 'pmulab help')",
            "pmulab: error: \\pmulab\\pmulab.cfg:6: unknown command 'bogus' (try 'pmulab help')",
            "pmulab: error: \\pmulab\\pmulab.cfg has errors; nothing was run",
        ], r


def test_qemu_config_option_error_names_the_line_and_nothing_runs():
    # The whole campaign is checked first (options too): a bad option costs no run.
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("info --bogus\nversion\n")
        r = run_qemu(smp=1, config=cfg)
        assert r.rc == 2, r
        assert r.out == "", r  # version did not run
        lines = [l for l in r.err.splitlines() if l.startswith("pmulab: ")]
        assert lines == ["pmulab: error: \\pmulab\\pmulab.cfg:1: info: unknown option '--bogus' "
                         "(see 'pmulab help info')",
                         "pmulab: error: \\pmulab\\pmulab.cfg has errors; nothing was run"], r


def test_qemu_config_unterminated_quote():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "q.cfg")
        with open(cfg, "w") as f:
            f.write("version\nmsr read \"0x10\n")
        r = run_qemu(smp=1, config=cfg)
        assert r.rc == 2, r
        assert "\\pmulab\\pmulab.cfg:2: unterminated quote in command line" in r.err, r


def test_qemu_no_arguments_no_config_prints_census_help_and_waits_for_a_key():
    with tempfile.TemporaryDirectory() as td:
        img = _build_image(td, "info\n")
        _mtools(img, "mdel", "::/pmulab/pmulab.cfg")
        r = run_qemu(smp=2, image=img, timeout=20)
        # It waits for a person to press a key: run-qemu.sh gives up after the timeout.
        assert r.rc == 124, r
        assert r.out.startswith("pmulab census: 2 logical processors\n"), r
        assert "usage: pmulab [--json] [--lava] [--shutdown] COMMAND [options]" in r.out, r
        assert r.out.rstrip().endswith("Press any key to return to the firmware."), r


def test_qemu_results_killed_mid_command_keeps_meta_and_finished_results():
    # A machine switched off in the middle of a command must keep the meta record and
    # every result finished before: records are flushed one by one, not every 64.
    with tempfile.TemporaryDirectory() as td:
        img = _build_image(td, "run --bench nop,pointer_chase,load_stream --size 4K,64K,1M,16M,256M "
                               "--events tsc --reps 7 --json\n--shutdown\n")
        p = subprocess.Popen([os.path.join(ROOT, "run-qemu.sh"), "--no-build", "--smp", "1",
                              "--timeout", "600", "--image", img],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = []
        try:
            for line in p.stdout:
                if '"type":"result"' in line:
                    seen.append(json.loads(line))
                    if len(seen) == 2:
                        break
        finally:
            p.send_signal(signal.SIGTERM)  # run-qemu.sh kills QEMU: the power goes off
            p.communicate(timeout=60)
        assert len(seen) == 2, "no result on the console before the end"
        files = _results(img)
        assert "0001-run.jsonl" in files, files
        recs = [json.loads(l) for l in _mtools(img, "mtype", "::/pmulab/results/0001-run.jsonl").splitlines()]
        assert recs and recs[0]["type"] == "meta", recs
        assert recs[0]["command_line"].startswith("run --bench nop,pointer_chase"), recs[0]
        results = [r for r in recs if r["type"] == "result"]
        # At least the results the console showed; at most one more may be lost or present.
        assert [r["bench"] for r in results[:2]] == [s["bench"] for s in seen], (results, seen)
        assert results[:2] == seen, (results[:2], seen)
