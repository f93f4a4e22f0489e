"""QEMU boots: errors on stderr (data alone on stdout), messages whole and escaped,
msr writes read back, PEBS behind --unsafe, campaigns checked completely (issue 12)."""

import os
import subprocess
import tempfile

from pmulab_test import ROOT, run_qemu

QEMU = True


def _diag(r):
    """pmulab's own diagnostic lines on stderr (run-qemu.sh's log lines start otherwise)."""
    return [l for l in r.err.splitlines() if l.startswith("pmulab: ")]


def test_qemu_errors_go_to_stderr_and_stdout_keeps_only_data():
    r = run_qemu("msr", "write", "0x6E1", "0x100000000", "--unsafe", smp=1)
    assert r.rc == 1, r
    assert r.out == "", r
    assert _diag(r) == ["pmulab: error: CPU 0: WRMSR 0x6e1 <- 0x100000000 raised #GP (general protection): "
                        "the CPU rejects this MSR or value"], r
    # Data and error from one command: each on its stream.
    r = run_qemu("msr", "read", "0x1b", "--cpu", "all", smp=2)
    assert r.rc == 0 and len(r.out.splitlines()) == 2 and _diag(r) == [], r


def test_qemu_json_mode_keeps_error_records_on_stdout():
    r = run_qemu("msr", "write", "0x6E1", "0x100000000", "--unsafe", smp=1, json_mode=True)
    assert r.rc == 1, r
    (err,) = r.records("error")
    assert err["code"] == "fault", err
    assert _diag(r) == [], r


def test_qemu_events_check_unknown_name_message_arrives_whole():
    # QEMU's default CPU (AMD dialect): the message was cut at 240 bytes, "...or event=".
    r = run_qemu("events", "--check", "foo", smp=1)
    assert r.rc == 2, r
    (line,) = _diag(r)
    assert line.startswith("pmulab: error: CPU 0: event list item 1: event spec 'foo': unknown AMD "
                           "event name 'foo'"), line
    assert line.endswith("raw events are EEE.UU, e.g. 0C0.00, or event=0xc0,umask=0) (at offset 0)"), line
    assert len(line) - len("pmulab: error: ") > 240, len(line)


def test_qemu_control_characters_from_arguments_are_escaped():
    r = run_qemu("msr", "read", "\x1b[2Jx\x07", smp=1)
    assert r.rc == 2, r
    (line,) = _diag(r)
    assert line == "pmulab: error: msr: ADDR '\\x1b[2Jx\\x07' is not a number (use 0x... or decimal)", line
    assert "\x1b" not in r.err and "\x07" not in r.err, r


def test_qemu_msr_write_ignored_by_the_cpu_is_an_error():
    # QEMU TCG ignores writes to the AMD PerfEvtSel0 it does not emulate: read back 0.
    r = run_qemu("msr", "write", "0xC0010000", "0x430076", smp=1)
    assert r.rc == 1, r
    assert r.out.splitlines() == ["CPU 0 (APIC 0): MSR 0xc0010000 <- 0x0000000000430076"], r
    assert _diag(r) == ["pmulab: error: CPU 0: MSR 0xc0010000 reads back 0x0 after writing 0x430076: the CPU "
                        "(or hypervisor) ignored or changed the write"], r
    j = run_qemu("msr", "write", "0xC0010000", "0x430076", smp=1, json_mode=True)
    assert j.rc == 1, j
    (rec,) = j.records("msr")
    assert rec["value"] == "0x430076" and rec["read_back"] == "0x0", rec


def test_qemu_msr_write_reserved_bits_and_pebs_enable_refused():
    r = run_qemu("msr", "write", "0xC0010000", str(1 << 21), smp=1)
    assert r.rc == 2 and r.out == "", r
    assert "sets reserved bits 0x200000 of PerfEvtSel/PerfCtl 0xc0010000" in _diag(r)[0], r
    r = run_qemu("msr", "write", "0x3F1", "1", smp=1)
    assert r.rc == 2, r
    assert "IA32_PEBS_ENABLE (0x3f1) makes the CPU write PEBS records to memory" in _diag(r)[0], r


def _image(td, cfg_text, *extra):
    cfg = os.path.join(td, "pmulab.cfg")
    with open(cfg, "wb") as f:
        f.write(cfg_text.encode("latin-1"))
    img = os.path.join(td, "pmulab.img")
    subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, os.path.join(ROOT, "build", "pmulab.efi"),
                    cfg, *extra], check=True, stdout=subprocess.DEVNULL)
    return img


def test_qemu_rejected_campaign_still_shuts_down():
    # Before: a rejected campaign returned to the firmware (run-qemu.sh then waited for
    # its timeout); its --shutdown now counts. A bad option is caught before anything runs.
    with tempfile.TemporaryDirectory() as td:
        img = _image(td, "info\nrun --bench nop --events 0E.1G\n--shutdown\n")
        r = run_qemu(smp=1, image=img, timeout=60)
        assert r.rc == 2, r
        assert r.out == "", r  # info did not run
        assert _diag(r) == [
            "pmulab: error: \\pmulab\\pmulab.cfg:2: run --events: event list item 1: event spec "
            "'0E.1G': UMASK '1G' is not hex (at offset 3)",
            "pmulab: error: \\pmulab\\pmulab.cfg has errors; nothing was run",
        ], r
        # A file that is not text: rejected as a whole, and still powered off.
        img = _image(td, "info\nbad \xff byte\n--shutdown\n")
        r = run_qemu(smp=1, image=img, timeout=60)
        assert r.rc == 2, r
        assert _diag(r) == ["pmulab: error: \\pmulab\\pmulab.cfg:2: non-ASCII byte 0xff (save the file as ASCII)"], r


def test_qemu_empty_campaign_says_so_and_exits_2():
    with tempfile.TemporaryDirectory() as td:
        img = _image(td, "# nothing yet\n--shutdown\n")
        r = run_qemu(smp=1, image=img, timeout=60)
        assert r.rc == 2, r
        assert _diag(r) == ["pmulab: error: \\pmulab\\pmulab.cfg: no commands: a campaign holds one pmulab "
                            "command per line ('info', 'run --bench ...'), and '--shutdown' to power off when "
                            "done"], r


def test_qemu_event_file_with_unusable_name_is_named():
    # Before: skipped without a word. A non-ASCII name and a name over 127 characters.
    with tempfile.TemporaryDirectory() as td:
        src = os.path.join(ROOT, "tests", "data", "events", "skylake_core.evt")
        img = _image(td, "events --check UOPS_ISSUED.ANY\n--shutdown\n",
                     f"{src}=::/pmulab/events/skylake_core.evt")
        env = dict(os.environ, MTOOLS_SKIP_CHECK="1", LC_ALL="C.UTF-8")
        long_name = "x" * 130 + ".evt"
        for name in ("sk\u00e9lake.evt", long_name):
            subprocess.run(["mcopy", "-i", f"{img}@@1M", src, f"::/pmulab/events/{name}"], check=True, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = run_qemu(smp=1, image=img, timeout=60, cpu="Skylake-Client")
        assert r.rc == 3, r  # the event resolves through skylake_core.evt; TCG has no counter for it
        warns = [l for l in _diag(r) if l.startswith("pmulab: warning: ")]
        tail = ": skipped (file names pmulab reads must be ASCII and at most 127 characters)"
        assert len(warns) == 2 and all(w.endswith(tail) for w in warns), r
        assert any(w.startswith("pmulab: warning: \\pmulab\\events\\sk\\u") for w in warns), warns
        assert f"pmulab: warning: \\pmulab\\events\\{long_name}{tail}" in warns, warns


def test_qemu_large_file_reads_in_linear_time():
    # A 12 MiB --events-file (comments, then tsc): 4 minutes when every 4 KiB chunk
    # reallocated the buffer to size + 4 KiB, ~15 s (boot included) with geometric growth.
    with tempfile.TemporaryDirectory() as td:
        big = os.path.join(td, "big.cfg")
        line = "# " + "x" * 78 + "\n"
        with open(big, "w") as f:
            f.write(line * (12 * 1024 * 1024 // len(line)) + "tsc\n")
        img = _image(td, "run --bench nop --events-file \\pmulab\\big.cfg --reps 3\n--shutdown\n",
                     f"{big}=::/pmulab/big.cfg")
        r = run_qemu(smp=1, image=img, timeout=90)
        assert r.rc == 0, r
        rows = [l.split()[:3] for l in r.out.splitlines() if l.startswith("nop ")]
        assert rows == [["nop", "-", "tsc"]], r
