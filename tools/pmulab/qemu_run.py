#!/usr/bin/env python3
"""Boots pmulab under QEMU + OVMF and relays its output (the implementation of
run-qemu.sh; see `./run-qemu.sh --help`).

pmulab mirrors its console output to the debug port 0xE9 when a hypervisor is
present; QEMU's isa-debugcon delivers that byte stream here, free of firmware
noise and terminal escapes. The stream ends with a marker line
"@@pmulab-exit N@@" carrying pmulab's exit status, which this script strips
and returns as its own.

--asm TEXT, --asm-init, --asm-late-init, --asm-one-time-init (and --att) in pmulab's
command line or in the --config campaign are assembled here (tools/pmulab/asm.py) into
--code/--init/--late-init/--one-time-init HEX before the boot; bad assembly exits with
status 2 naming the statement, without booting. A --config campaign is then checked
with build/host/pmulab-check (as `make image` and pmulab-lab do): errors FILE:LINE,
status 2, nothing booted.

Exit status: pmulab's own (0 ok, 1 failed, 2 usage, 3 unsupported, 4 internal),
or 124 timeout, 125 QEMU/firmware failure (pmulab never reported a status),
126 bad arguments to this script (also: --keep DIR in use by another run),
127 missing dependency, 128+N stopped by signal N (130 SIGINT, 143 SIGTERM: QEMU is
killed and the temporary folder removed first).

--keep DIR is locked while a run uses it (DIR/run-qemu.lock: flock, holding the PID);
a lock file left by a run that died is taken over. The firmware is found at the
Debian paths, or where PMULAB_OVMF_CODE / PMULAB_OVMF_VARS say.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Iterable, NoReturn

from . import ROOT
from . import asm as pmulab_asm

OVMF_CODE_CANDIDATES = ["/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_CODE.fd"]
OVMF_VARS_CANDIDATES = ["/usr/share/OVMF/OVMF_VARS_4M.fd", "/usr/share/OVMF/OVMF_VARS.fd"]
EXIT_RE = re.compile(rb"^@@pmulab-exit (-?\d+)@@\s*$")
# pmulab starts each line of its errors and warnings with this on the debug port
# (src/efi/efi_platform.h kDiagTag): they go to stderr, the data stays on stdout.
DIAG_TAG = b"\x01D"
KVM_FAILURE_PATTERNS = [
    "KVM internal error",
    "emulation failure",
    "failed to initialize kvm",
    "Could not access KVM kernel module",
    "kvm: no",
    "KVM is not supported",
]

EXIT_USAGE = 2  # pmulab's own usage status: bad --asm text in the command line or campaign
EXIT_TIMEOUT = 124
EXIT_QEMU = 125
EXIT_ARGS = 126
EXIT_DEPS = 127
LOCK_NAME = "run-qemu.lock"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def log(msg: str) -> None:
    print(f"run-qemu: {msg}", file=sys.stderr, flush=True)


class Exit(Exception):
    """Ends the run with a message (already formatted) and a status."""

    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


class Stopped(BaseException):
    """A stop signal arrived; BaseException so that nothing on the way swallows it."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _on_stop_signal(signum, frame):
    # Once: the cleanup on the way out (kill QEMU, remove the temporary folder) must
    # not be cut short by a second Ctrl-C.
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


def first_existing(paths: Iterable[str]) -> str | None:
    for p in paths:
        if os.path.exists(p):
            return p
    return None


def ovmf(kind: str) -> str | None:
    """The OVMF CODE or VARS file: $PMULAB_OVMF_<kind>, else the first Debian path present."""
    var = f"PMULAB_OVMF_{kind}"
    given = os.environ.get(var)
    if given:
        if not os.path.isfile(given):
            raise Exit(EXIT_DEPS, f"error: {var}={given}: no such file (the OVMF firmware)")
        return given
    return first_existing(OVMF_CODE_CANDIDATES if kind == "CODE" else OVMF_VARS_CANDIDATES)


class ArgParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # The documented status for bad arguments is 126 (argparse's 2 is pmulab's
        # usage error), with one line, not the whole usage.
        raise Exit(EXIT_ARGS, f"error: {message} (see --help)")


def seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds")


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        i = argv.index("--")
        own, app = argv[:i], argv[i + 1:]
    else:
        own, app = argv, []
    p = ArgParser(
        prog="run-qemu.sh",
        description="Build (if needed) and boot pmulab under QEMU + OVMF. "
        "Everything after -- is pmulab's command line; its --asm TEXT, --asm-init, --asm-late-init, "
        "--asm-one-time-init (Intel syntax; --att for AT&T) are assembled into --code HEX first.",
        epilog="Exit status: pmulab's own (0 ok, 1 failed, 2 usage (also: --asm text that does not "
        "assemble), 3 unsupported, 4 internal); "
        "124 timeout; 125 QEMU or firmware failure; 126 bad arguments (or --keep DIR in use); "
        "127 missing dependency; 128+N stopped by signal N.",
    )
    p.add_argument("--smp", default="4",
                   help="QEMU -smp value: N or N,sockets=S,cores=C,threads=T (default 4)")
    p.add_argument("--cpu", default=None, help="QEMU CPU model (default max; host,pmu=on with --kvm)")
    p.add_argument("--kvm", nargs="?", const="auto", choices=["auto", "required"],
                   help="use KVM (-enable-kvm -cpu host,pmu=on); falls back to TCG when KVM cannot "
                   "run OVMF, unless --kvm=required")
    p.add_argument("--icount", type=int, metavar="SHIFT",
                   help="-icount shift=SHIFT: TSC advances 2^SHIFT per guest instruction (TCG only)")
    p.add_argument("--timeout", type=seconds, default=600.0, metavar="SECONDS",
                   help="give up after this long (default 600)")
    p.add_argument("--json", action="store_true", help="pass --json: stdout is JSON Lines only")
    p.add_argument("--memory", default="1G", help="guest memory (default 1G)")
    p.add_argument("--image", help="boot this disk image (from `make image`) instead of a fresh one; "
                   "it is modified in place (results files)")
    p.add_argument("--config", help="use this pmulab.cfg for a fresh image instead of the command line "
                   "(copied byte for byte, a --shutdown line appended)")
    p.add_argument("--keep", metavar="DIR", help="keep the disk image, serial log and firmware "
                   "variables in DIR (locked while this run uses it)")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--no-check", action="store_true",
                   help="boot a --config campaign without the host check first (to see pmulab's own check on the "
                        "target)")
    p.add_argument("--readonly-disk", action="store_true",
                   help="attach the disk read-only (pmulab reports that it cannot write results)")
    p.add_argument("--serial-log", metavar="FILE", help="write the firmware serial console to FILE")
    p.add_argument("--tcp", metavar="PORT[:GUEST_PORT]",
                   help="add a NIC (virtio-net, user-mode network restricted to the host) whose TCP port "
                   "GUEST_PORT (default PORT) is forwarded from 127.0.0.1:PORT, for `serve --tcp GUEST_PORT`")
    p.add_argument("--volume-file", action="append", default=[], metavar="SRC=NAME",
                   help="copy the host file SRC to \\pmulab\\NAME on the fresh boot volume (repeatable), "
                   "e.g. a token for `serve --token-file \\pmulab\\token.txt`")
    p.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                   help="extra QEMU argument (repeatable)")
    args = p.parse_args(own)

    def bad(msg: str) -> NoReturn:
        raise Exit(EXIT_ARGS, f"error: {msg}")
    if not re.fullmatch(r"[1-9]\d*(,[a-z-]+=\d+)*", args.smp):
        bad(f"--smp: '{args.smp}' is not N or N,sockets=S,cores=C,threads=T")
    args.tcp_ports = None
    if args.tcp is not None:
        m = re.fullmatch(r"(\d{1,5})(?::(\d{1,5}))?", args.tcp)
        ports = [int(x) for x in m.groups() if x is not None] if m else []
        if not m or not all(1 <= x <= 65535 for x in ports):
            bad(f"--tcp: '{args.tcp}' is not PORT or PORT:GUEST_PORT (ports 1-65535)")
        args.tcp_ports = (ports[0], ports[-1])
    for vf in args.volume_file:
        src, eq, name = vf.rpartition("=")
        if not eq or not src or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
            bad(f"--volume-file: '{vf}' is not SRC=NAME (NAME: letters, digits, _ . -)")
        if not os.path.isfile(src):
            bad(f"--volume-file: {src}: no such file")
    if args.icount is not None and not 0 <= args.icount <= 10:
        bad("--icount: SHIFT must be 0..10")
    if args.icount is not None and args.kvm:
        bad("--icount needs TCG; it cannot be combined with --kvm")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        given = [a for i, a in enumerate(own) if i and own[i - 1] == "--timeout"]
        given += [a.split("=", 1)[1] for a in own if a.startswith("--timeout=")]
        bad(f"--timeout: '{given[-1] if given else args.timeout}' is not a positive number of seconds")
    if args.image and (args.config or app):
        bad("--image boots the image's own \\pmulab\\pmulab.cfg; do not pass a command line or --config")
    if args.config and app:
        bad("give either --config or a command line after --, not both")
    if args.image and args.volume_file:
        bad("--volume-file goes on a fresh image, not with --image")
    if args.json and (args.config or args.image):
        # pmulab reads \pmulab\cmdline instead of the campaign, so --json cannot be
        # added beside it; rewriting the campaign is not this script's business.
        bad("--json applies to a command line after --; with --config or --image put --json on the "
            "campaign's lines")
    args.config_bytes = None
    if args.config:
        if not os.path.lexists(args.config):
            bad(f"--config {args.config}: no such file")
        try:
            with open(args.config, "rb") as f:
                args.config_bytes = f.read()
        except OSError as e:
            bad(f"--config {args.config}: cannot read: {e.strerror}")
        try:
            args.config_bytes.decode("utf-8")
        except UnicodeDecodeError as e:
            bad(f"--config {args.config}: not UTF-8 text ({e.reason} at byte {e.start})")
    # --asm TEXT (and --asm-init ..., --att) become --code HEX before any boot; bad code
    # is the user's pmulab command line that is wrong: pmulab's usage status, 2.
    try:
        app = pmulab_asm.rewrite_argv(app)
        if args.config_bytes is not None:
            args.config_bytes = pmulab_asm.rewrite_campaign(args.config_bytes, args.config)
    except pmulab_asm.AsmError as e:
        raise Exit(EXIT_USAGE, f"error: {e}")
    if args.image and not os.path.isfile(args.image):
        bad(f"--image {args.image}: no such file")
    if args.keep and os.path.exists(args.keep) and not os.path.isdir(args.keep):
        bad(f"--keep {args.keep} is not a folder")
    return args, app


def with_shutdown(data: bytes) -> bytes:
    """The campaign byte for byte, plus a --shutdown line in the file's own line ending."""
    nl = b"\r\n" if b"\r\n" in data else b"\n"
    sep = b"" if not data or data.endswith(b"\n") else nl
    return data + sep + b"# added by run-qemu.sh: power off when the campaign is done" + nl + b"--shutdown" + nl


def lock_keep_dir(d: str) -> tuple[str, int]:
    """Locks --keep DIR for this run: DIR/run-qemu.lock, flock'ed, with our PID inside.
    The kernel drops the lock when its holder dies, so a file left behind by a run that
    was killed is stale and taken over. Returns (path, fd)."""
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise Exit(EXIT_ARGS, f"error: --keep {d}: cannot create: {e.strerror}")
    path = os.path.join(d, LOCK_NAME)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(fd)
                raise Exit(EXIT_ARGS, f"error: --keep {d}: cannot lock {path}: {e.strerror}")
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise Exit(EXIT_ARGS, f"error: --keep {d} is in use by process {holder} (lock {path}); "
                                  "use another folder")
        # The holder we waited for may have removed the file meanwhile: lock the file
        # that is there now, not an unlinked one.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        old = os.read(fd, 32).decode(errors="replace").strip()
        if old:
            log(f"taking over the stale lock of process {old} ({path}; that run is gone)")
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        return path, fd


def unlock_keep_dir(lock: tuple[str, int]) -> None:
    path, fd = lock
    try:
        os.remove(path)  # while still holding it: nobody locks the file being removed
    except OSError:
        pass
    os.close(fd)


def ensure_deps() -> tuple[str, str]:
    """Returns (OVMF_CODE, OVMF_VARS); installs what is missing first."""
    tools = ("qemu-system-x86_64", "mformat", "mcopy", "sgdisk")
    code, vars_ = ovmf("CODE"), ovmf("VARS")
    if any(not shutil.which(c) for c in tools) or not code or not vars_:
        r = subprocess.run([os.path.join(ROOT, "tools", "install-deps.sh")])
        if r.returncode != 0:
            raise Exit(EXIT_DEPS, f"error: missing dependencies could not be installed (tools/install-deps.sh "
                                  f"exit status {r.returncode}, see above)")
        code, vars_ = ovmf("CODE"), ovmf("VARS")
    missing = [c for c in tools if not shutil.which(c)]
    if missing:
        raise Exit(EXIT_DEPS, f"error: {', '.join(missing)} not found (tools/install-deps.sh installs them)")
    if not code or not vars_:
        looked = OVMF_CODE_CANDIDATES if not code else OVMF_VARS_CANDIDATES
        raise Exit(EXIT_DEPS, f"error: the OVMF firmware is missing (looked for {' and '.join(looked)}; Debian "
                              "package ovmf, or set PMULAB_OVMF_CODE and PMULAB_OVMF_VARS)")
    return code, vars_


def build() -> None:
    r = subprocess.run(["make", "-s", "-C", ROOT, "build/pmulab.efi", "build/host/pmulab-check"], stdout=sys.stderr)
    if r.returncode != 0:
        raise Exit(EXIT_DEPS, "error: build failed")


def check_campaign(args: argparse.Namespace) -> None:
    """pmulab's own campaign check (build/host/pmulab-check, as `make image` and
    pmulab-lab run it) on the --config campaign as it will reach the target (--asm
    assembled): a typo costs no boot. Its messages name the file as given; the status
    is pmulab's for a bad campaign (2)."""
    tool = os.path.join(ROOT, "build", "host", "pmulab-check")
    if not os.path.isfile(tool):
        r = subprocess.run(["make", "-s", "-C", ROOT, "build/host/pmulab-check"], stdout=sys.stderr)
        if r.returncode != 0 or not os.path.isfile(tool):
            raise Exit(EXIT_DEPS, f"error: {tool} is missing and could not be built (run make)")
    with tempfile.TemporaryDirectory(prefix="pmulab-check-") as td:
        tmp = os.path.join(td, "campaign.cfg")
        with open(tmp, "wb") as f:
            f.write(args.config_bytes)
        chk = subprocess.run([tool, tmp], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace")
    if chk.returncode == 0:
        return
    text = (chk.stdout + chk.stderr).replace(tmp, args.config)
    sys.stderr.write(text if not text or text.endswith("\n") else text + "\n")
    raise Exit(chk.returncode if chk.returncode in (2, 3, 4) else EXIT_USAGE,
               f"error: --config {args.config} has errors; nothing was booted (pmulab would refuse it)")


def kvm_usable() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
        return True
    except OSError as e:
        log(f"KVM is not available: /dev/kvm: {e.strerror}")
        return False


def qemu_command(args: argparse.Namespace, workdir: str, image: str, vars_fd: str, accel: str,
                 code: str) -> list[str]:
    if accel == "kvm":
        cpu = args.cpu or "host"
        if "pmu=" not in cpu:
            cpu += ",pmu=on"
        accel_args = ["-accel", "kvm", "-cpu", cpu]
    else:
        accel_args = ["-accel", "tcg", "-cpu", args.cpu or "max"]
        if args.icount is not None:
            accel_args += ["-icount", f"shift={args.icount}"]
    serial = args.serial_log or os.path.join(workdir, "serial.log")
    return [
        "qemu-system-x86_64", "-machine", "q35", "-m", args.memory, "-smp", args.smp,
        *accel_args,
        "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={code}",
        "-drive", f"if=pflash,format=raw,unit=1,file={vars_fd}",
        "-drive", f"if=none,id=disk0,format=raw,file={image}" + (",readonly=on" if args.readonly_disk else ""),
        "-device", "virtio-blk-pci,drive=disk0,bootindex=0",
        "-nic", "none", *tcp_nic(args.tcp_ports), "-display", "none", "-monitor", "none", "-no-reboot",
        "-serial", f"file:{serial}",
        "-chardev", "stdio,id=dbg,signal=off",
        "-device", "isa-debugcon,iobase=0xe9,chardev=dbg",
        *args.qemu_arg,
    ]


def tcp_nic(ports: tuple[int, int] | None) -> list[str]:
    """A virtio-net NIC on QEMU's user-mode network for `serve --tcp`: restrict=on (the
    guest reaches nothing), one forward from the host's loopback only (never 0.0.0.0) to
    the guest's 10.0.2.15, and no option ROM (OVMF's own VirtioNetDxe drives it)."""
    if not ports:
        return []
    host, guest = ports
    return ["-netdev", f"user,id=pmulabnet,restrict=on,hostfwd=tcp:127.0.0.1:{host}-10.0.2.15:{guest}",
            "-device", "virtio-net-pci,netdev=pmulabnet,romfile="]


class Run:
    """One QEMU process: relays the debug-port stream to stdout, watches stderr."""

    def __init__(self, cmd, timeout, watch_kvm):
        self.cmd = cmd
        self.timeout = timeout
        self.watch_kvm = watch_kvm
        self.status = None
        self.kvm_failed = None
        self.timed_out = False
        self.stderr_lines = []
        self.printed_any = False

    def _stderr_reader(self, stream):
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            self.stderr_lines.append(line)
            if self.watch_kvm and any(p.lower() in line.lower() for p in KVM_FAILURE_PATTERNS):
                self.kvm_failed = line
                self._kill()
                return

    def _kill(self):
        try:
            self.proc.kill()
        except (ProcessLookupError, AttributeError):
            pass

    def run(self) -> int:
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        try:
            return self._relay()
        finally:
            # Normally QEMU is gone by now; on a stop signal (or any error) it must not
            # outlive this script.
            if self.proc.poll() is None:
                self._kill()
                self.proc.wait()

    def _relay(self):
        t = threading.Thread(target=self._stderr_reader, args=(self.proc.stderr,), daemon=True)
        t.start()
        timer = threading.Timer(self.timeout, self._on_timeout)
        timer.daemon = True
        timer.start()
        out = sys.stdout.buffer
        try:
            for raw in iter(self.proc.stdout.readline, b""):
                line = raw.replace(b"\r", b"")
                m = EXIT_RE.match(line)
                if m:
                    self.status = int(m.group(1))
                    # pmulab is done; if it returned to the firmware instead of powering
                    # off, do not wait for the firmware's next boot option.
                    grace = threading.Timer(5.0, self._kill)
                    grace.daemon = True
                    grace.start()
                    continue
                if line.startswith(DIAG_TAG):
                    sys.stderr.buffer.write(line[len(DIAG_TAG):])
                    sys.stderr.buffer.flush()
                    continue
                # A line written before the marker without its newline is still output.
                out.write(line)
                out.flush()
                self.printed_any = True
        finally:
            timer.cancel()
        self.proc.wait()
        t.join(timeout=2)
        return self.proc.returncode

    def _on_timeout(self):
        self.timed_out = True
        self._kill()


def main(argv: list[str]) -> int:
    try:
        return run_main(argv)
    except Exit as e:
        log(str(e))
        return e.status
    except Stopped as e:
        log(f"stopped by {signal.Signals(e.signum).name}: QEMU killed, temporary files removed")
        return 128 + e.signum


def run_main(argv: list[str]) -> int:
    args, app = parse_args(argv)
    lock = lock_keep_dir(args.keep) if args.keep else None
    try:
        return boot(args, app)
    finally:
        if lock:
            unlock_keep_dir(lock)


def boot(args: argparse.Namespace, app: list[str]) -> int:
    code, vars_template = ensure_deps()
    if not args.no_build and not args.image:
        build()
    if args.config_bytes is not None and not args.no_check:
        check_campaign(args)
    efi = os.path.join(ROOT, "build", "pmulab.efi")
    if not args.image and not os.path.exists(efi):
        raise Exit(EXIT_DEPS, f"error: {efi} is missing (run make)")

    workdir = args.keep or tempfile.mkdtemp(prefix="pmulab-qemu-")
    try:
        vars_fd = os.path.join(workdir, "OVMF_VARS.fd")
        shutil.copyfile(vars_template, vars_fd)
        if args.image:
            image = args.image
        else:
            image = os.path.join(workdir, "disk.img")
            cmdline = " ".join(_quote(a) for a in app) if app else "info"
            if args.json:
                cmdline += " --json"
            cfg_file = os.path.join(workdir, "pmulab.cfg")
            extra = [f"{src}=::/pmulab/{name}" for src, _, name in (v.rpartition("=") for v in args.volume_file)]
            with open(cfg_file, "wb") as f:
                if args.config_bytes is not None:
                    f.write(with_shutdown(args.config_bytes))
                else:
                    # The command line goes to \pmulab\cmdline, which pmulab reads
                    # before its campaign file.
                    f.write(b"# run-qemu.sh passes the command line in \\pmulab\\cmdline\n")
                    cmd_file = os.path.join(workdir, "cmdline")
                    with open(cmd_file, "w") as c:
                        c.write(cmdline + " --shutdown\n")
                    extra.append(f"{cmd_file}=::/pmulab/cmdline")
            r = subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), image, efi, cfg_file, *extra],
                               stdout=sys.stderr)
            if r.returncode != 0:
                raise Exit(EXIT_QEMU, "error: could not build the disk image")

        accel = "tcg"
        if args.kvm:
            if kvm_usable():
                accel = "kvm"
            elif args.kvm == "required":
                raise Exit(EXIT_QEMU, "--kvm=required but KVM is not usable")
            else:
                log("falling back to TCG")

        while True:
            run = Run(qemu_command(args, workdir, image, vars_fd, accel, code), args.timeout,
                      watch_kvm=(accel == "kvm"))
            rc = run.run()
            kvm_broke = run.kvm_failed or (run.status is None and not run.timed_out)
            if accel == "kvm" and kvm_broke and not run.printed_any:
                if not run.kvm_failed:
                    err = [l for l in run.stderr_lines if "error" in l.lower()] or run.stderr_lines[-1:]
                    run.kvm_failed = (err[0] if err else f"QEMU exit code {rc}").strip()
                if args.kvm == "required":
                    raise Exit(EXIT_QEMU, f"KVM failed: {run.kvm_failed} (--kvm=required: not falling back)")
                log(f"KVM could not run the firmware ({run.kvm_failed}); falling back to TCG")
                accel = "tcg"
                shutil.copyfile(vars_template, vars_fd)
                continue
            break

        if run.timed_out:
            raise Exit(EXIT_TIMEOUT, f"pmulab did not finish within {args.timeout:g} s (killed QEMU); serial log: "
                                     f"{os.path.join(workdir, 'serial.log') if args.keep else 'use --keep DIR'}")
        if run.status is None:
            tail = "\n".join(run.stderr_lines[-5:])
            if rc != 0 and not run.printed_any and run.stderr_lines:
                # QEMU refused to start (bad -cpu model, bad option, ...): its own reason first.
                reason = next((l for l in run.stderr_lines if l.startswith("qemu-system")), run.stderr_lines[0])
                rest = [l for l in run.stderr_lines[-5:] if l != reason]
                raise Exit(EXIT_QEMU, f"QEMU failed: {reason.strip()} (QEMU exit code {rc})"
                           + ("".join(f"\n{l}" for l in rest)))
            raise Exit(EXIT_QEMU, "pmulab ended without reporting an exit status (crash, reset or firmware failure; "
                                  f"QEMU exit code {rc})" + (f"\n{tail}" if tail else ""))
        return run.status
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _quote(a):
    if a == "" or any(c in a for c in " \t\"#"):
        return '"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return a


def cli() -> None:
    """The command line entry point (tools/qemu_run.py (run-qemu.sh))."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for _s in STOP_SIGNALS:
        signal.signal(_s, _on_stop_signal)
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
