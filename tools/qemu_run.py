#!/usr/bin/env python3
"""Boots pmulab under QEMU + OVMF and relays its output (the implementation of
run-qemu.sh; see `./run-qemu.sh --help`).

pmulab mirrors its console output to the debug port 0xE9 when a hypervisor is
present; QEMU's isa-debugcon delivers that byte stream here, free of firmware
noise and terminal escapes. The stream ends with a marker line
"@@pmulab-exit N@@" carrying pmulab's exit status, which this script strips
and returns as its own.

Exit status: pmulab's own (0 ok, 1 failed, 2 usage, 3 unsupported, 4 internal),
or 124 timeout, 125 QEMU/firmware failure (pmulab never reported a status),
126 bad arguments to this script, 127 missing dependency.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVMF_CODE_CANDIDATES = ["/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_CODE.fd"]
OVMF_VARS_CANDIDATES = ["/usr/share/OVMF/OVMF_VARS_4M.fd", "/usr/share/OVMF/OVMF_VARS.fd"]
EXIT_RE = re.compile(rb"^@@pmulab-exit (-?\d+)@@\s*$")
KVM_FAILURE_PATTERNS = [
    "KVM internal error",
    "emulation failure",
    "failed to initialize kvm",
    "Could not access KVM kernel module",
    "kvm: no",
    "KVM is not supported",
]

EXIT_TIMEOUT = 124
EXIT_QEMU = 125
EXIT_ARGS = 126
EXIT_DEPS = 127


def log(msg):
    print(f"run-qemu: {msg}", file=sys.stderr, flush=True)


def first_existing(paths):
    for p in paths:
        if os.path.exists(p):
            return p
    return None


def parse_args(argv):
    if "--" in argv:
        i = argv.index("--")
        own, app = argv[:i], argv[i + 1:]
    else:
        own, app = argv, []
    p = argparse.ArgumentParser(
        prog="run-qemu.sh",
        description="Build (if needed) and boot pmulab under QEMU + OVMF. "
        "Everything after -- is pmulab's command line.",
        epilog="Exit status: pmulab's own (0 ok, 1 failed, 2 usage, 3 unsupported, 4 internal); "
        "124 timeout; 125 QEMU or firmware failure; 126 bad arguments; 127 missing dependency.",
    )
    p.add_argument("--smp", default="4",
                   help="QEMU -smp value: N or N,sockets=S,cores=C,threads=T (default 4)")
    p.add_argument("--cpu", default=None, help="QEMU CPU model (default max; host,pmu=on with --kvm)")
    p.add_argument("--kvm", nargs="?", const="auto", choices=["auto", "required"],
                   help="use KVM (-enable-kvm -cpu host,pmu=on); falls back to TCG when KVM cannot "
                   "run OVMF, unless --kvm=required")
    p.add_argument("--icount", type=int, metavar="SHIFT",
                   help="-icount shift=SHIFT: TSC advances 2^SHIFT per guest instruction (TCG only)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="give up after this long (default 600)")
    p.add_argument("--json", action="store_true", help="pass --json: stdout is JSON Lines only")
    p.add_argument("--memory", default="1G", help="guest memory (default 1G)")
    p.add_argument("--image", help="boot this disk image (from `make image`) instead of a fresh one; "
                   "it is modified in place (results files)")
    p.add_argument("--config", help="use this pmulab.cfg for a fresh image instead of the command line")
    p.add_argument("--keep", metavar="DIR", help="keep the disk image, serial log and firmware "
                   "variables in DIR")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--readonly-disk", action="store_true",
                   help="attach the disk read-only (pmulab reports that it cannot write results)")
    p.add_argument("--serial-log", metavar="FILE", help="write the firmware serial console to FILE")
    p.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                   help="extra QEMU argument (repeatable)")
    args = p.parse_args(own)
    if not re.fullmatch(r"[1-9]\d*(,[a-z-]+=\d+)*", args.smp):
        p.error(f"--smp: '{args.smp}' is not N or N,sockets=S,cores=C,threads=T")
    if args.icount is not None and not 0 <= args.icount <= 10:
        p.error("--icount: SHIFT must be 0..10")
    if args.icount is not None and args.kvm:
        p.error("--icount needs TCG; it cannot be combined with --kvm")
    if args.timeout <= 0:
        p.error("--timeout must be positive")
    if args.image and (args.config or app):
        p.error("--image boots the image's own \\pmulab\\pmulab.cfg; do not pass a command line or --config")
    if args.config and app:
        p.error("give either --config or a command line after --, not both")
    return args, app


def ensure_deps():
    missing = [c for c in ("qemu-system-x86_64", "mformat", "mcopy", "sgdisk") if not shutil.which(c)]
    if missing or not first_existing(OVMF_CODE_CANDIDATES):
        r = subprocess.run([os.path.join(ROOT, "tools", "install-deps.sh")])
        if r.returncode != 0:
            log("missing dependencies could not be installed (see above)")
            sys.exit(EXIT_DEPS)


def build():
    r = subprocess.run(["make", "-s", "-C", ROOT, "build/pmulab.efi"], stdout=sys.stderr)
    if r.returncode != 0:
        log("build failed")
        sys.exit(EXIT_DEPS)


def kvm_usable():
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
        return True
    except OSError as e:
        log(f"KVM is not available: /dev/kvm: {e.strerror}")
        return False


def qemu_command(args, workdir, image, vars_fd, accel):
    code = first_existing(OVMF_CODE_CANDIDATES)
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
        "-nic", "none", "-display", "none", "-monitor", "none", "-no-reboot",
        "-serial", f"file:{serial}",
        "-chardev", "stdio,id=dbg,signal=off",
        "-device", "isa-debugcon,iobase=0xe9,chardev=dbg",
        *args.qemu_arg,
    ]


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

    def run(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
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


def main(argv):
    args, app = parse_args(argv)
    ensure_deps()
    if not args.no_build and not args.image:
        build()
    efi = os.path.join(ROOT, "build", "pmulab.efi")
    if not args.image and not os.path.exists(efi):
        log(f"{efi} is missing (run make)")
        return EXIT_DEPS

    workdir = args.keep or tempfile.mkdtemp(prefix="pmulab-qemu-")
    os.makedirs(workdir, exist_ok=True)
    try:
        vars_fd = os.path.join(workdir, "OVMF_VARS.fd")
        shutil.copyfile(first_existing(OVMF_VARS_CANDIDATES), vars_fd)
        if args.image:
            image = args.image
        else:
            image = os.path.join(workdir, "disk.img")
            cmdline = " ".join(_quote(a) for a in app) if app else "info"
            if args.json:
                cmdline += " --json"
            cfg_file = os.path.join(workdir, "pmulab.cfg")
            extra = []
            with open(cfg_file, "w") as f:
                if args.config:
                    with open(args.config, encoding="utf-8", errors="surrogateescape") as src:
                        f.write(src.read())
                    f.write("\n# added by run-qemu.sh: power off when the campaign is done\n--shutdown\n")
                else:
                    # The command line goes to \pmulab\cmdline, which pmulab reads
                    # before its campaign file.
                    f.write("# run-qemu.sh passes the command line in \\pmulab\\cmdline\n")
                    cmd_file = os.path.join(workdir, "cmdline")
                    with open(cmd_file, "w") as c:
                        c.write(cmdline + " --shutdown\n")
                    extra.append(f"{cmd_file}=::/pmulab/cmdline")
            r = subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), image, efi, cfg_file, *extra],
                               stdout=sys.stderr)
            if r.returncode != 0:
                log("could not build the disk image")
                return EXIT_QEMU

        accel = "tcg"
        if args.kvm:
            if kvm_usable():
                accel = "kvm"
            elif args.kvm == "required":
                log("--kvm=required but KVM is not usable")
                return EXIT_QEMU
            else:
                log("falling back to TCG")

        while True:
            run = Run(qemu_command(args, workdir, image, vars_fd, accel), args.timeout,
                      watch_kvm=(accel == "kvm"))
            rc = run.run()
            kvm_broke = run.kvm_failed or (run.status is None and not run.timed_out)
            if accel == "kvm" and kvm_broke and not run.printed_any:
                if not run.kvm_failed:
                    err = [l for l in run.stderr_lines if "error" in l.lower()] or run.stderr_lines[-1:]
                    run.kvm_failed = (err[0] if err else f"QEMU exit code {rc}").strip()
                if args.kvm == "required":
                    log(f"KVM failed: {run.kvm_failed} (--kvm=required: not falling back)")
                    return EXIT_QEMU
                log(f"KVM could not run the firmware ({run.kvm_failed}); falling back to TCG")
                accel = "tcg"
                shutil.copyfile(first_existing(OVMF_VARS_CANDIDATES), vars_fd)
                continue
            break

        if run.timed_out:
            log(f"pmulab did not finish within {args.timeout:g} s (killed QEMU); "
                f"serial log: {os.path.join(workdir, 'serial.log') if args.keep else 'use --keep DIR'}")
            return EXIT_TIMEOUT
        if run.status is None:
            tail = "\n".join(run.stderr_lines[-5:])
            log("pmulab ended without reporting an exit status (crash, reset or firmware failure; "
                f"QEMU exit code {rc})" + (f"\n{tail}" if tail else ""))
            return EXIT_QEMU
        return run.status
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _quote(a):
    if a == "" or any(c in a for c in " \t\"#"):
        return '"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return a


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
