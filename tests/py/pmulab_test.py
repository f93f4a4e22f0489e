"""Helpers for pmulab's Python tests (host tools and QEMU boots), run by pytest
(tests/conftest.py). A test is a function test_*() without arguments that fails by
raising (assert), and may raise Skip("reason")."""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")


class Skip(pytest.skip.Exception):  # type: ignore[misc,name-defined]
    """Raise to skip a test with a reason: pytest reports it as skipped (pytest.skip)."""


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def records(self, rtype=None):
        """Parses stdout as JSON Lines; every line must be one JSON object."""
        recs = []
        for i, line in enumerate(self.out.splitlines(), 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise AssertionError(f"stdout line {i} is not JSON ({e}): {line[:200]!r}")
            assert isinstance(obj, dict), f"stdout line {i} is not a JSON object: {line[:200]!r}"
            recs.append(obj)
        return [r for r in recs if rtype is None or r.get("type") == rtype]

    def diag(self):
        """pmulab's diagnostic lines (errors, warnings in text mode): on stderr, where
        run-qemu.sh routes them; its own log lines start otherwise."""
        return [l for l in self.err.splitlines() if l.startswith("pmulab: ")]

    def __repr__(self):
        return f"rc={self.rc}\n--- stdout ---\n{self.out[-3000:]}\n--- stderr ---\n{self.err[-2000:]}"


def run_qemu(*pmulab_args, smp="4", json_mode=False, icount=None, timeout=120, cpu=None,
             extra=(), config=None, image=None):
    """Boots pmulab through ./run-qemu.sh (no rebuild: `make test` builds first)."""
    cmd = [os.path.join(ROOT, "run-qemu.sh"), "--no-build", "--smp", str(smp), "--timeout", str(timeout)]
    if json_mode:
        cmd.append("--json")
    if icount is not None:
        cmd += ["--icount", str(icount)]
    if cpu:
        cmd += ["--cpu", cpu]
    if config:
        # The QEMU tests exercise pmulab's own campaign check on the target; the host
        # check run-qemu.sh does first is tested in test_run_qemu.py.
        cmd += ["--config", config, "--no-check"]
    if image:
        cmd += ["--image", image]
    cmd += list(extra)
    if pmulab_args:
        cmd += ["--", *pmulab_args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout + 60)
    return Result(p.returncode, p.stdout, p.stderr)


def run_tool(name, *args, stdin=None, timeout=60):
    """Runs a host tool from build/host (or a path relative to the repository)."""
    path = os.path.join(BUILD, "host", name)
    if not os.path.exists(path):
        path = os.path.join(ROOT, name)
    p = subprocess.run([path, *args], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    return Result(p.returncode, p.stdout, p.stderr)


def shell_image(td, startup_nsh):
    """A boot image in directory td whose UEFI shell runs `startup_nsh` (the text of
    startup.nsh, CRLF lines): pmulab is \\pmulab\\app.efi there, and the image has no
    \\EFI\\BOOT\\BOOTX64.EFI, so OVMF falls back to its built-in shell. The boot volume's
    pmulab.cfg must not run (the shell passes pmulab its arguments). Returns the image path."""
    cfg = os.path.join(td, "pmulab.cfg")
    with open(cfg, "w") as f:
        f.write("info\n--shutdown\n")
    nsh = os.path.join(td, "startup.nsh")
    with open(nsh, "w") as f:
        f.write(startup_nsh)
    img = os.path.join(td, "shell.img")
    efi = os.path.join(BUILD, "pmulab.efi")
    subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, efi, cfg, f"{efi}=::/pmulab/app.efi",
                    f"{nsh}=::/startup.nsh"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["mdel", "-i", f"{img}@@1M", "::/EFI/BOOT/BOOTX64.EFI"], check=True,
                   env=dict(os.environ, MTOOLS_SKIP_CHECK="1"))
    return img


def data_path(*parts):
    return os.path.join(ROOT, "tests", "data", *parts)
