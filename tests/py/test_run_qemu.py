"""run-qemu.sh (tools/qemu_run.py): documented exit statuses for bad arguments and
missing dependencies, one clear line instead of a traceback, --keep DIR locked against
a second run, signals stop QEMU and clean up, --config reaches the image byte for byte.
Tests named test_qemu_* boot (or start) QEMU."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from pmulab_test import ROOT

RUN = os.path.join(ROOT, "run-qemu.sh")


def _run(*args, env=None, timeout=180):
    p = subprocess.run([RUN, "--no-build", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, env=dict(os.environ, **(env or {})))
    return p


def _one_error_line(p, status, text):
    assert p.returncode == status, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], p.stderr
    assert p.stdout == "", p.stdout


def test_run_qemu_bad_arguments_exit_126_with_one_line():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "a.cfg")
        with open(cfg, "w") as f:
            f.write("info\n")
        latin = os.path.join(td, "latin.cfg")
        with open(latin, "wb") as f:
            f.write(b"# caf\xe9\ninfo\n")
        afile = os.path.join(td, "afile")
        open(afile, "w").close()
        missing = os.path.join(td, "missing.cfg")
        cases = [
            (["--bogus"], "run-qemu: error: unrecognized arguments: --bogus (see --help)"),
            (["--smp"], "run-qemu: error: argument --smp: expected one argument (see --help)"),
            (["--smp", "x"], "run-qemu: error: --smp: 'x' is not N or N,sockets=S,cores=C,threads=T"),
            (["--timeout", "nan"], "run-qemu: error: --timeout: 'nan' is not a positive number of seconds"),
            (["--timeout", "inf"], "run-qemu: error: --timeout: 'inf' is not a positive number of seconds"),
            (["--timeout", "-5"], "run-qemu: error: --timeout: '-5' is not a positive number of seconds"),
            (["--timeout", "soon"], "run-qemu: error: argument --timeout: 'soon' is not a number of seconds (see --help)"),
            (["--config", missing], f"run-qemu: error: --config {missing}: no such file"),
            (["--config", td], f"run-qemu: error: --config {td}: cannot read: Is a directory"),
            (["--config", latin], f"run-qemu: error: --config {latin}: not UTF-8 text "
                                  "(invalid continuation byte at byte 5)"),
            (["--keep", afile, "--", "info"], f"run-qemu: error: --keep {afile} is not a folder"),
            (["--image", missing], f"run-qemu: error: --image {missing}: no such file"),
            (["--json", "--config", cfg], "run-qemu: error: --json applies to a command line after --; "
                                          "with --config or --image put --json on the campaign's lines"),
            (["--json", "--image", afile], "run-qemu: error: --json applies to a command line after --; "
                                           "with --config or --image put --json on the campaign's lines"),
        ]
        for args, msg in cases:
            p = _run(*args)
            _one_error_line(p, 126, msg)
            assert p.stderr.strip() == msg, (args, p.stderr)


def test_run_qemu_missing_firmware_is_127():
    for var in ("PMULAB_OVMF_CODE", "PMULAB_OVMF_VARS"):
        p = _run("--", "info", env={var: "/nonexistent/OVMF.fd"})
        _one_error_line(p, 127, f"run-qemu: error: {var}=/nonexistent/OVMF.fd: no such file (the OVMF firmware)")


def test_run_qemu_failed_dependency_install_is_127():
    # run-qemu.sh installs missing packages first; apt's own status (100) must not
    # pass through: the documented status is 127.
    with tempfile.TemporaryDirectory() as td:
        shutil.copy(RUN, os.path.join(td, "run-qemu.sh"))
        os.makedirs(os.path.join(td, "tools"))
        with open(os.path.join(td, "tools", "install-deps.sh"), "w") as f:
            f.write("#!/bin/sh\necho 'E: Unable to locate package ovmf' >&2\nexit 100\n")
        os.chmod(os.path.join(td, "tools", "install-deps.sh"), 0o755)
        p = subprocess.run([os.path.join(td, "run-qemu.sh"), "--", "info"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 127, p
        assert p.stderr.splitlines() == [
            "E: Unable to locate package ovmf",
            "run-qemu: error: missing dependencies could not be installed (tools/install-deps.sh exit status "
            "100, see above)"], p.stderr


def _hold_lock(path):
    """A process that holds `path` the way run-qemu.sh does (flock, its PID inside)."""
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "os.write(fd, b'%d\\n' % os.getpid())\n"
            "print('locked', flush=True)\n"
            "time.sleep(120)\n")
    p = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_run_qemu_keep_dir_in_use_is_refused():
    with tempfile.TemporaryDirectory() as td:
        keep = os.path.join(td, "keep")
        os.makedirs(keep)
        holder = _hold_lock(os.path.join(keep, "run-qemu.lock"))
        try:
            p = _run("--keep", keep, "--", "info", timeout=60)
            _one_error_line(p, 126, f"run-qemu: error: --keep {keep} is in use by process {holder.pid} "
                                    f"(lock {keep}/run-qemu.lock); use another folder")
            assert os.listdir(keep) == ["run-qemu.lock"], os.listdir(keep)
        finally:
            holder.kill()
            holder.wait()


def test_qemu_keep_dir_stale_lock_is_taken_over_and_a_running_boot_locks_it():
    with tempfile.TemporaryDirectory() as td:
        keep = os.path.join(td, "keep")
        os.makedirs(keep)
        dead = subprocess.Popen(["true"])
        dead.wait()
        with open(os.path.join(keep, "run-qemu.lock"), "w") as f:
            f.write(f"{dead.pid}\n")
        p = _run("--keep", keep, "--smp", "1", "--", "info", timeout=300)
        assert p.returncode == 0, p
        assert "run-qemu: taking over the stale lock of process %d" % dead.pid in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(keep, "run-qemu.lock")), os.listdir(keep)
        # A boot in progress: a second run with the same --keep is refused at once, and
        # the first one finishes undisturbed.
        first = subprocess.Popen([RUN, "--no-build", "--keep", keep, "--smp", "1", "--", "info"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 60
            while _read(os.path.join(keep, "run-qemu.lock")).strip() != str(first.pid) and time.time() < deadline:
                time.sleep(0.05)
            second = _run("--keep", keep, "--smp", "1", "--", "info", timeout=60)
            _one_error_line(second, 126, f"run-qemu: error: --keep {keep} is in use by process {first.pid} ")
            out, err = first.communicate(timeout=300)
            assert first.returncode == 0 and "pmulab census: 1 logical processor" in out, (out, err)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()


def test_qemu_bad_cpu_model_says_qemus_reason_first():
    p = _run("--cpu", "nosuchmodel", "--", "info", timeout=120)
    assert p.returncode == 125, p
    first = p.stderr.splitlines()[0]
    assert first == ("run-qemu: QEMU failed: qemu-system-x86_64: unable to find CPU model 'nosuchmodel' "
                     "(QEMU exit code 1)"), p.stderr


def test_qemu_config_reaches_the_image_byte_for_byte():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "crlf.cfg")
        text = b"# a campaign written on Windows\r\ninfo\r\n"
        with open(cfg, "wb") as f:
            f.write(text)
        keep = os.path.join(td, "keep")
        p = _run("--config", cfg, "--keep", keep, "--smp", "1", timeout=300)
        assert p.returncode == 0 and "pmulab census: 1 logical processor" in p.stdout, p
        with open(cfg, "rb") as f:
            assert f.read() == text  # the file itself is untouched
        env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
        got = subprocess.run(["mtype", "-i", os.path.join(keep, "disk.img") + "@@1M", "::/pmulab/pmulab.cfg"],
                             stdout=subprocess.PIPE, check=True, env=env).stdout
        assert got == text + b"# added by run-qemu.sh: power off when the campaign is done\r\n--shutdown\r\n", got


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _qemu_children(pid):
    """PIDs of the QEMU processes whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if comm.startswith("qemu-system") and int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d))
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_qemu_sigterm_and_sigint_stop_qemu_and_remove_the_temp_folder():
    for sig in (signal.SIGTERM, signal.SIGINT):
        with tempfile.TemporaryDirectory() as td:
            p = subprocess.Popen([RUN, "--no-build", "--smp", "1", "--timeout", "200", "--", "info"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, TMPDIR=td))
            qemu = []
            try:
                deadline = time.time() + 60
                while not qemu and time.time() < deadline:
                    time.sleep(0.1)
                    qemu = _qemu_children(p.pid)
                assert qemu, "QEMU did not start"
                assert [d for d in os.listdir(td) if d.startswith("pmulab-qemu-")], os.listdir(td)
                time.sleep(0.5)
                p.send_signal(sig)
                out, err = p.communicate(timeout=30)
                assert p.returncode == 128 + sig, (sig, p.returncode, err)
                assert "Traceback" not in err, err
                assert err.strip().splitlines()[-1] == (
                    f"run-qemu: stopped by {signal.Signals(sig).name}: QEMU killed, temporary files removed"), err
                deadline = time.time() + 10
                while any(_alive(q) for q in qemu) and time.time() < deadline:
                    time.sleep(0.1)
                assert not any(_alive(q) for q in qemu), f"QEMU {qemu} still runs after {sig.name}"
                assert os.listdir(td) == [], os.listdir(td)
            finally:
                for q in qemu:
                    if _alive(q):
                        os.kill(q, signal.SIGKILL)
                if p.poll() is None:
                    p.kill()
                    p.wait()


def test_run_qemu_config_is_checked_before_booting():
    # --config runs pmulab's campaign check (build/host/pmulab-check) on the host, on the
    # campaign as it will reach the target (--asm assembled): a typo costs no boot. The
    # status is pmulab's own for a bad campaign, 2; the message names the file and line.
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "typo.cfg")
        with open(cfg, "wb") as f:
            f.write(b"info\r\nrun --asm \"nop\" --bench-typo\r\nfrobnicate\r\n")
        t0 = time.monotonic()
        p = _run("--config", cfg, timeout=60)
        assert p.returncode == 2 and p.stdout == "", p
        assert "Traceback" not in p.stderr, p.stderr
        assert p.stderr.splitlines() == [
            f"{cfg}:2: run: unknown option '--bench-typo' (see 'pmulab help run')",
            f"{cfg}:3: unknown command 'frobnicate' (try 'pmulab help')",
            f"run-qemu: error: --config {cfg} has errors; nothing was booted (pmulab would refuse it)",
        ], p.stderr
        assert time.monotonic() - t0 < 30  # no boot
