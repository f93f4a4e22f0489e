"""pmulab.client: drive `pmulab serve` from Python (docs/agent.md).

    from pmulab.client import Agent
    with Agent.qemu(["--smp", "2", "--icount", "7"]) as pm:      # boots pmulab in QEMU
        r = pm.run(asm="imul rax, rax", init_asm="mov rax, 1", events=["tsc"])
        print(r.counts)                                             # {'tsc': 128.0}
        for n in range(1, 9):
            print(n, pm.run(asm="; ".join(["add rax, rbx"] * n), events=["tsc"]).counts)
        print(pm.info()[0]["brand"], hex(pm.msr_read(0x10)))

The shape follows nanoBench's kernelNanoBench.py (set options, run code, get a dict
of counts), but every call is one request to an agent that stays up: hundreds of
experiments per boot. Agent.serial(DEVICE) attaches to a lab machine booted into
`pmulab serve` over a serial cable, Agent.tcp(HOST, PORT) to one serving on TCP
(`pmulab serve --tcp PORT`), Agent.qemu(..., tcp=True) boots QEMU with the agent on
TCP, and Agent.sim(DUMP) starts the simulator (`build/host/pmulab-sim --dump DUMP -- serve`,
docs/sim.md) with the agent on its stdin/stdout. Only the standard library is used.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any, Dict, Literal, Iterable, Iterator, List, Sequence, TextIO, Tuple, Union

from . import ROOT, TOOLS
from . import asm as pmulab_asm
from .options import OptionsError, pmulab_options

Record = Dict[str, Any]  # one JSON record from the agent
RequestId = Union[int, str, None]  # a request's "id" (null: a line the agent could not read)
# A batch line: a command line, its words (--asm allowed), or asm_to_blobs' (argv, blobs).
Code = Union[bytes, str, None]  # machine code: bytes or hex text
BatchLine = Union[str, Sequence[str], Tuple[List[str], Dict[str, bytes]]]

PROTOCOL = 1
BLOB_MAX = 64 << 10
SIM = os.path.join(ROOT, "build", "host", "pmulab-sim")  # the simulator (make builds it)


def code_options() -> dict[str, str]:
    """{code option: its file form} from run's declaration (pmulab.options.pmulab_options):
    {"--code": "--code-file", "--init": "--init-file", ...}."""
    try:
        run = pmulab_options("run")
    except OptionsError as e:
        raise pmulab_asm.AsmError(str(e)) from e
    names = {o["name"] for o in run}
    return {o["name"]: o["name"] + "-file" for o in run
            if o["value"] == "hex" and o["name"] + "-file" in names}


_asm_cache: dict[tuple[str, bool, str], bytes] = {}


def assemble(text: str, att: bool = False, what: str = "--asm") -> bytes:
    """pmulab_asm.assemble, remembered: a batch repeats the same snippets."""
    key = (text, att, what)
    if key not in _asm_cache:
        if len(_asm_cache) > 4096:
            _asm_cache.clear()
        _asm_cache[key] = pmulab_asm.assemble(text, att, what)
    return _asm_cache[key]


class AgentError(Exception):
    """The agent could not be reached, or the link broke."""


class TokenError(AgentError):
    """The agent takes requests with a pre-shared token only (`serve --token-file`), and
    this client has none, or its token file cannot be read."""


def read_token(token: str | None = None, token_file: str | None = None, env: bool = True) -> str | None:
    """The pre-shared token of `pmulab serve --token-file/--token` (docs/agent.md "Who may
    connect"): `token`, else the first line of `token_file` (surrounding whitespace
    dropped), else $PMULAB_TOKEN (when env), else None. TokenError when the file cannot be
    read or is empty; the token itself is never put in a message."""
    if token is not None and token_file is not None:
        raise TokenError("give a token or a token file, not both")
    if token_file is not None:
        try:
            with open(token_file, encoding="ascii", errors="replace") as f:
                token = f.read().strip()
        except OSError as e:
            raise TokenError(f"cannot read the token file {token_file}: {e.strerror or e}") from None
        if not token:
            raise TokenError(f"the token file {token_file} is empty")
    if token is None and env:
        token = os.environ.get("PMULAB_TOKEN") or None
    return token


class SimError(AgentError):
    """pmulab-sim could not start serving; .status is the exit status for the tool
    (2: a bad --sim option or a dump that cannot be read, as pmulab-sim says; 1: no
    pmulab-sim binary or another failure)."""

    def __init__(self, msg: str, status: int) -> None:
        super().__init__(msg)
        self.status = status


class RequestError(Exception):
    """A request ended with a non-zero status; .answer holds what came back."""

    def __init__(self, answer):
        self.answer = answer
        msgs = [r.get("message", "") for r in answer.records if r.get("type") == "error"]
        super().__init__(f"request {answer.id!r} ({answer.cmd}) ended with status {answer.status}"
                         + (": " + "; ".join(msgs) if msgs else ""))


class Answer:
    """Everything the agent sent for one request."""

    def __init__(self, rid: RequestId, cmd: str | None) -> None:
        self.id, self.cmd = rid, cmd
        self.records: list[Record] = []  # the command's records (each with "id"), errors included
        self.done: Record | None = None  # the {"type":"done"} record
        self.raw: list[str] = []         # the lines as the agent sent them (records, then done)

    @property
    def status(self) -> int | None:
        return None if self.done is None else self.done["status"]

    @property
    def cancelled(self) -> bool:
        return bool(self.done and self.done.get("cancelled"))

    @property
    def timed_out(self) -> bool:
        return bool(self.done and self.done.get("timed_out"))

    def of_type(self, t: str) -> list[Record]:
        return [r for r in self.records if r.get("type") == t]

    @property
    def results(self) -> list[Record]:
        return self.of_type("result")

    @property
    def errors(self) -> list[Record]:
        return self.of_type("error")

    @property
    def counts(self) -> dict[str, float]:
        """nanoBench's dict: event name -> per-iteration value (of the first CPU and
        benchmark that measured it). A result without a value (an energy counter's run too
        short, docs/measure.md "Energy (RAPL)") is left out."""
        d: dict[str, float] = {}
        for r in self.results:
            if r.get("per_iteration") is not None:
                d.setdefault(r["event"], float(r["per_iteration"]))
        return d

    def __repr__(self):
        return f"Answer(id={self.id!r}, status={self.status}, records={len(self.records)})"


def asm_to_blobs(argv: Sequence[str], att: bool = False) -> tuple[list[str], dict[str, bytes]]:
    """A command line (list of words) with --asm* TEXT and --code* HEX turned into
    --*-file NAME plus the blobs they name ({NAME: bytes}); --att applies to all --asm*.
    Each --asm without a --name of its own gets one from its text (pmulab_asm.rewrite_argv),
    and each code its own blob (code, code_2, ...). AsmError on bad code."""
    argv = pmulab_asm.rewrite_argv(argv, att, assemble)
    to_file = code_options()
    out: list[str] = []
    blobs: dict[str, bytes] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        opt, eq, val = a.partition("=")
        if opt not in to_file:
            out.append(a)
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                raise pmulab_asm.AsmError(f"{opt}: needs a value")
            val = argv[i + 1]
            i += 1
        i += 1
        try:
            data = bytes.fromhex(val[2:] if val.lower().startswith("0x") else val.replace("_", "").replace(":", ""))
        except ValueError:
            out += [opt, val]  # let pmulab say what is wrong with it
            continue
        fopt = to_file[opt]
        base = fopt[2:-5].replace("-", "_") or "code"
        name, n = base, 1
        while name in blobs:
            n += 1
            name = f"{base}_{n}"
        blobs[name] = data
        out += [fopt, name]
    return out, blobs


def sim_argv(dump: str | None = None, model: str | None = None, cache: str | None = None,
             seed: int | str | None = None, results: str | None = None) -> list[str]:
    """pmulab-sim's own options for a machine (before `--`): a dump or a named model,
    the cache model and the seed (docs/sim.md), a results folder."""
    if (dump is None) == (model is None):
        raise ValueError("give a dump (--sim DUMP) or a model (--sim-model NAME), one of them")
    argv = ["--dump", dump] if dump is not None else ["--model", str(model)]
    if cache is not None:
        argv += ["--cache", cache]
    if seed is not None:
        argv += ["--seed", str(seed)]
    if results is not None:
        argv += ["--results", results]
    return argv


def sim_refusal(console: Sequence[str], fallback: str) -> str:
    """pmulab-sim's last error line (without its "pmulab-sim: error: "), in the --sim-*
    names the tools give its options; `fallback` when it said none."""
    errors = [l.split(": error: ", 1)[1] for l in console if ": error: " in l]
    why = errors[-1] if errors else fallback
    for own, tool in (("--cache", "--sim-cache"), ("--seed", "--sim-seed"), ("--model", "--sim-model")):
        why = why.replace(own + " ", tool + " ").replace(own + ":", tool + ":")
    return why


def add_sim_options(p: Any, what: str = "", repeat: bool = False) -> None:
    """--sim DUMP, --sim-model NAME, --sim-cache SPEC, --sim-seed N on an argparse parser
    (repeat: --sim and --sim-model may be given several times, a list each)."""
    action = "append" if repeat else "store"
    p.add_argument("--sim", metavar="DUMP", action=action, help="run on the simulator instead: "
                   "build/host/pmulab-sim --dump DUMP -- serve (a CPUID dump, e.g. tests/data/cpuid/*.txt; "
                   "docs/sim.md)" + what)
    p.add_argument("--sim-model", metavar="NAME", action=action, help="the simulator with a named model instead "
                   "of a dump (pmulab-sim --list-models)")
    p.add_argument("--sim-cache", metavar="SPEC", help="the simulator's cache model (pmulab-sim --cache; docs/sim.md)")
    p.add_argument("--sim-seed", metavar="N", help="the simulator's seed (pmulab-sim --seed)")


def sim_options_problem(args: Any) -> str | None:
    """What is wrong with the --sim options of parsed arguments (None: nothing)."""
    if args.sim is not None and args.sim_model is not None:
        return "give --sim DUMP or --sim-model NAME, not both"
    if args.sim is None and args.sim_model is None and (args.sim_cache is not None or args.sim_seed is not None):
        return "--sim-cache and --sim-seed go with --sim DUMP (or --sim-model NAME)"
    return None


class _Link:
    """A byte stream with line reads: a socket, a file descriptor (serial device), or a
    pair of pipes (fd to read, wfd to write: pmulab-sim's stdout and stdin)."""

    def __init__(self, sock: socket.socket | None = None, fd: int | None = None, wfd: int | None = None) -> None:
        assert (sock is None) != (fd is None), "a link is a socket or a file descriptor"
        self.sock, self.fd, self.wfd = sock, fd, wfd
        self.buf = b""

    def fileno(self) -> int:
        return self.sock.fileno() if self.sock else self._fd()

    def _fd(self) -> int:
        assert self.fd is not None
        return self.fd

    def send(self, data: bytes) -> None:
        if self.sock:
            self.sock.sendall(data)
        else:
            out = self._fd() if self.wfd is None else self.wfd
            while data:
                n = os.write(out, data)
                data = data[n:]

    def readline(self, timeout: float | None) -> bytes:
        end = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = None if end is None else max(0.0, end - time.monotonic())
            r, _, _ = select.select([self.fileno()], [], [], left)
            if not r:
                raise TimeoutError("no answer from the agent in time")
            chunk = self.sock.recv(65536) if self.sock else os.read(self._fd(), 65536)
            if not chunk:
                raise AgentError("the agent closed the link")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def close(self) -> None:
        try:
            if self.sock:
                self.sock.close()
            elif self.fd is not None:
                os.close(self.fd)
        except OSError:
            pass
        if self.wfd is not None:
            try:
                os.close(self.wfd)
            except OSError:
                pass
            self.wfd = None


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (for QEMU's forward)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tcp_connect(host, port, agent, end):
    """Connects to the agent and reads its hello, retrying until `end` (monotonic):
    a forward that has no listener behind it yet accepts and then closes."""
    last = None
    while True:
        sock = None
        try:
            sock = socket.create_connection((host, port), timeout=min(5.0, max(0.1, end - time.monotonic())))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)
            agent.link = _Link(sock=sock)
            agent.timeout, saved = min(agent.timeout, 5.0), agent.timeout
            try:
                agent._wait_hello()
            finally:
                agent.timeout = saved
            return agent.link
        except TokenError:
            if sock is not None:
                sock.close()
            agent.link = None
            raise
        except (AgentError, TimeoutError, OSError) as e:
            last = e
            if sock is not None:
                sock.close()
            agent.link = None
        if time.monotonic() >= end or (agent.proc is not None and agent.proc.poll() is not None):
            raise AgentError(f"cannot reach the agent on TCP {host}:{port}: {last}")
        time.sleep(0.3)


class Agent:
    """A connection to `pmulab serve`. Use Agent.qemu(...), Agent.serial(...) or
    Agent.tcp(...)."""

    WINDOW = 8  # requests in flight (the agent reads 16 ahead)

    def __init__(self, link: _Link | None, proc: subprocess.Popen | None = None,
                 workdir: str | None = None, timeout: float = 600, token: str | None = None) -> None:
        self.link = link
        self.token = token  # sent in every request's "token" field (never printed)
        self.proc = proc
        self.workdir = workdir
        self.timeout = timeout
        self.hello: Any = None  # the hello record (serial: the version records instead)
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, Answer] = {}   # id -> Answer
        self._finished: dict[RequestId, Answer] = {}  # id -> Answer, done but not collected
        self.console: list[str] = []    # pmulab's own console lines (QEMU: the debug port)
        self.firmware_lines: list[str] = []  # what the port carried before the agent's hello
        self._stderr: list[str] = []    # QEMU's stderr (qemu_run.py's messages)
        self.tcp_port: int | None = None

    # ---- constructors
    @classmethod
    def qemu(cls, run_qemu_args: Sequence[str] = (), timeout: float = 600, no_build: bool = False,
             log: TextIO | None = None, serve_args: Sequence[str] = (), tcp: bool = False,
             token: str | None = None, token_file: str | None = None) -> Agent:
        """Boots pmulab in QEMU (tools/qemu_run.py, i.e. ./run-qemu.sh and its options)
        with `serve --shutdown [serve_args]` and the agent on a second serial port wired
        to a unix socket here; with tcp=True, on TCP instead (`serve --tcp`, reached
        through a QEMU port forward on 127.0.0.1). With a token, the agent is started with
        `--token TOKEN` and every request carries it; with a token_file (a host file), the
        file goes onto the boot volume and the agent reads it (`--token-file
        \\pmulab\\token.txt`)."""
        if token is not None:
            serve_args = (*serve_args, "--token", token)
        elif token_file is not None:
            token = read_token(token_file=token_file)
            run_qemu_args = (*run_qemu_args, "--volume-file", f"{token_file}=token.txt")
            serve_args = (*serve_args, "--token-file", "\\pmulab\\token.txt")
        if tcp:
            return cls._qemu_tcp(run_qemu_args, timeout, no_build, log, serve_args, token)
        workdir = tempfile.mkdtemp(prefix="pmulab-agent-")
        path = os.path.join(workdir, "agent.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        cmd = [sys.executable, os.path.join(TOOLS, "qemu_run.py"), "--timeout", str(timeout),
               *(["--no-build"] if no_build else []), *run_qemu_args,
               "--qemu-arg=-serial", f"--qemu-arg=unix:{path}", "--", "serve", "--shutdown", *serve_args]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        agent = cls(None, proc=proc, workdir=workdir, timeout=timeout, token=token)
        agent._stderr = []
        threading.Thread(target=agent._drain, args=(proc.stdout, agent.console, log), daemon=True).start()
        threading.Thread(target=agent._drain, args=(proc.stderr, agent._stderr, log), daemon=True).start()
        srv.settimeout(1.0)
        end = time.monotonic() + min(timeout, 300)
        conn = None
        while conn is None:
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                if proc.poll() is not None or time.monotonic() > end:
                    srv.close()
                    agent._reap()
                    raise AgentError("QEMU did not connect the agent's serial port (status "
                                     f"{proc.returncode}): {' '.join(agent._stderr[-5:])}")
        srv.close()
        conn.settimeout(None)
        agent.link = _Link(sock=conn)
        try:
            agent._wait_hello()
        except (AgentError, TimeoutError, OSError) as e:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            time.sleep(0.2)  # the stderr reader's last lines
            why = " | ".join(l for l in agent._stderr[-4:] if l.strip())
            agent.link.close()
            agent.link = None
            agent._reap()
            raise AgentError(f"{e}" + (f" ({why})" if why else ""))
        return agent

    @classmethod
    def _qemu_tcp(cls, run_qemu_args, timeout, no_build, log, serve_args, token=None):
        port = free_tcp_port()
        cmd = [sys.executable, os.path.join(TOOLS, "qemu_run.py"), "--timeout", str(timeout),
               *(["--no-build"] if no_build else []), *run_qemu_args, "--tcp", str(port),
               "--", "serve", "--tcp", str(port), "--shutdown", *serve_args]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        agent = cls(None, proc=proc, timeout=timeout, token=token)
        agent._stderr = []
        agent.tcp_port = port
        threading.Thread(target=agent._drain, args=(proc.stdout, agent.console, log), daemon=True).start()
        threading.Thread(target=agent._drain, args=(proc.stderr, agent._stderr, log), daemon=True).start()
        # QEMU's forward accepts a connection before the guest listens (and drops it when
        # nobody answers inside): connect once pmulab says it is listening.
        end = time.monotonic() + min(timeout, 300)
        while not any("pmulab serve: listening on" in l for l in agent.console):
            if proc.poll() is not None or time.monotonic() > end:
                time.sleep(0.2)  # the readers' last lines
                why = " | ".join(l for l in (agent._stderr[-4:] + agent.console[-2:]) if l.strip())
                agent._reap()
                raise AgentError(f"the agent did not start listening on TCP (status {proc.returncode})"
                                 + (f": {why}" if why else ""))
            time.sleep(0.05)
        try:
            agent.link = _tcp_connect("127.0.0.1", port, agent, end)
        except (AgentError, TimeoutError, OSError) as e:
            why = " | ".join(l for l in agent._stderr[-4:] if l.strip())
            agent._reap()
            raise AgentError(f"{e}" + (f" ({why})" if why else ""))
        return agent

    @classmethod
    def tcp(cls, host: str, port: int, timeout: float = 600, connect_timeout: float = 30,
            token: str | None = None) -> Agent:
        """Attaches to an agent on TCP (`pmulab serve --tcp PORT`, e.g. run-qemu.sh --tcp
        PORT, or a lab machine). Each connection gets its own hello; retries for up to
        connect_timeout seconds while the agent is not listening yet. `token`: the agent's
        pre-shared token (default: $PMULAB_TOKEN; read_token reads a token file)."""
        agent = cls(None, timeout=timeout, token=read_token(token))
        agent.link = _tcp_connect(host, int(port), agent, time.monotonic() + connect_timeout)
        return agent

    @classmethod
    def sim(cls, dump: str | None = None, model: str | None = None, cache: str | None = None,
            seed: int | str | None = None, serve_args: Sequence[str] = (), results: str | None = None,
            timeout: float = 600, log: TextIO | None = None, token: str | None = None) -> Agent:
        """Starts the simulator as the agent: `build/host/pmulab-sim --dump DUMP (or
        --model NAME) [--cache SPEC] [--seed N] [--results DIR] -- serve [serve_args]`,
        driven through its stdin/stdout exactly as an agent on a serial port. Its
        console (stderr) goes to .console (and `log`). SimError when it does not say hello."""
        argv = sim_argv(dump, model, cache, seed, results)
        if token is not None:
            serve_args = (*serve_args, "--token", token)
        if not os.access(SIM, os.X_OK):
            raise SimError(f"{os.path.relpath(SIM, ROOT)} is missing: `make` builds it (in {ROOT})", 1)
        to_sim, from_host = os.pipe()
        to_host, from_sim = os.pipe()
        try:
            proc = subprocess.Popen([SIM, *argv, "--", "serve", *serve_args], stdin=to_sim, stdout=from_sim,
                                    stderr=subprocess.PIPE)
        finally:
            os.close(to_sim)
            os.close(from_sim)
        link = _Link(fd=to_host, wfd=from_host)
        agent = cls(link, proc=proc, timeout=timeout, token=token)
        stderr = proc.stderr
        assert stderr is not None  # stderr=PIPE
        # Its console goes to `log` once it serves; a refusal is said once, by SimError.
        shown = threading.Event()
        lock = threading.Lock()

        def drain(stream: IO[bytes]) -> None:
            for raw in iter(stream.readline, b""):
                line = raw.decode(errors="replace").rstrip("\n")
                with lock:
                    agent.console.append(line)
                    if log and shown.is_set():
                        try:
                            print(line, file=log, flush=True)
                        except (ValueError, OSError):  # the caller closed its log: keep only .console
                            shown.clear()

        reader = threading.Thread(target=drain, args=(stderr,), daemon=True)
        reader.start()
        try:
            agent._wait_hello()
            with lock:
                if log:
                    for line in agent.console:
                        print(line, file=log, flush=True)
                shown.set()
        except (AgentError, TimeoutError, OSError) as e:
            link.close()
            agent.link = None
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            reader.join(2)
            agent._reap()
            if isinstance(e, TokenError):
                raise
            why = sim_refusal(agent.console, f"{e} (status {proc.returncode})")
            raise SimError(f"pmulab-sim: {why}", 2 if proc.returncode == 2 else 1)
        return agent

    @classmethod
    def serial(cls, device: str, baud: int = 115200, timeout: float = 600, token: str | None = None) -> Agent:
        """Attaches to an agent on a serial device (e.g. /dev/ttyUSB0), 8N1 raw. `token`:
        the agent's pre-shared token, if it was started with one (default: $PMULAB_TOKEN)."""
        token = read_token(token)
        import termios
        import tty
        fd = os.open(device, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(fd)
        attrs = termios.tcgetattr(fd)
        speed = getattr(termios, f"B{baud}")
        attrs[4] = attrs[5] = speed
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        agent = cls(_Link(fd=fd), timeout=timeout, token=token)
        # The agent may have said hello long ago: ask for the version instead.
        agent.hello = agent.request("version").of_type("version")
        return agent

    @staticmethod
    def _drain(stream, sink, log):
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            sink.append(line)
            if log:
                print(line, file=log, flush=True)

    def _wait_hello(self):
        # Until pmulab opens the port, the firmware's console writes to it too (and
        # would take our bytes as key strokes): nothing is sent before the hello, and
        # what comes before it is skipped.
        end = time.monotonic() + self.timeout
        while True:
            line = self._live().readline(max(0.0, end - time.monotonic()))
            k = line.find(b'{"type":"hello"')
            if k < 0:
                self.firmware_lines.append(line.decode(errors="replace"))
                continue
            self.hello = json.loads(line[k:])
            if self.hello.get("protocol") != PROTOCOL:
                raise AgentError(f"the agent speaks protocol {self.hello.get('protocol')}, this client {PROTOCOL}")
            if self.hello.get("token_required") and not self.token:
                raise TokenError("the agent takes requests with its pre-shared token only (serve --token-file): "
                                 "give --token-file FILE or --token TOKEN, or set $PMULAB_TOKEN")
            return

    # ---- the protocol
    def _live(self) -> _Link:
        if self.link is None:
            raise AgentError("the link to the agent is closed")
        return self.link

    def submit(self, cmd: str | Sequence[str], blobs: dict[str, bytes] | None = None,
               timeout_ms: int | None = None, rid: RequestId | None = None) -> RequestId:
        """Sends one request without waiting; returns its id. `cmd` is a command line
        (str) or a list of words; `blobs` maps names to bytes."""
        if not isinstance(cmd, str):
            cmd = " ".join(pmulab_asm.quote(a) for a in cmd)
        rid = next(self._ids) if rid is None else rid
        req: Record = {"id": rid, **self._auth(), "cmd": cmd}
        if blobs:
            req["blobs"] = {k: base64.b64encode(v).decode() for k, v in blobs.items()}
        if timeout_ms:
            req["timeout_ms"] = int(timeout_ms)
        self._pending[rid] = Answer(rid, cmd)
        self._live().send((json.dumps(req, separators=(",", ":")) + "\n").encode())
        return rid

    def _auth(self) -> Record:
        """The "token" field of a request (none when this client has no token)."""
        return {"token": self.token} if self.token else {}

    def send_raw(self, line: str | bytes) -> None:
        """Sends a line as it is (tests: malformed requests). Returns nothing."""
        self._live().send(line if isinstance(line, bytes) else line.encode())

    def cancel(self, rid: RequestId) -> str:
        """Asks the agent to cancel request `rid` (running or waiting); returns the id
        of the cancel request (its own done record says whether there was one)."""
        cid = f"cancel-{next(self._ids)}"
        self._pending[cid] = Answer(cid, f"cancel {rid}")
        self._live().send((json.dumps({"id": cid, **self._auth(), "cancel": rid}) + "\n").encode())
        return cid

    def read_record(self, timeout: float | None = None) -> Record:
        """The next record from the agent (dict), filed under its request."""
        line = self._live().readline(self.timeout if timeout is None else timeout)
        try:
            rec = json.loads(line)
        except ValueError:
            raise AgentError(f"the agent sent a line that is not JSON: {line[:200]!r}")
        if not isinstance(rec, dict):
            raise AgentError(f"the agent sent a line that is not a JSON object: {line[:200]!r}")
        rid = rec.get("id")
        ans = self._pending.get(rid)
        if rec.get("type") == "done":
            if ans is None:
                ans = self._finished.get(rid) or Answer(rid, None)
            ans.done = rec
            ans.raw.append(line.decode())
            self._pending.pop(rid, None)
            self._finished[rid] = ans
        elif ans is not None:
            ans.records.append(rec)
            ans.raw.append(line.decode())
        elif rec.get("type") == "hello":
            self.hello = rec
        else:
            # Answers to requests this client did not send (a malformed line's id null).
            other = self._finished.setdefault(rid, Answer(rid, None))
            other.records.append(rec)
            other.raw.append(line.decode())
        return rec

    def collect(self, rid: RequestId, timeout: float | None = None) -> Answer:
        """Waits for request `rid` to finish; returns its Answer."""
        while rid not in self._finished or self._finished[rid].done is None:
            self.read_record(timeout)
        return self._finished.pop(rid)

    def request(self, cmd: str | Sequence[str], blobs: dict[str, bytes] | None = None,
                timeout_ms: int | None = None, check: bool = False,
                timeout: float | None = None) -> Answer:
        ans = self.collect(self.submit(cmd, blobs, timeout_ms), timeout)
        if check and ans.status != 0:
            raise RequestError(ans)
        return ans

    def batch(self, lines: Iterable[BatchLine],
              timeout_ms: int | None = None) -> Iterator[tuple[int, Answer]]:
        """Runs command lines through the agent with several in flight; yields
        (index, Answer) in order. A line is a str or a list of words (--asm allowed,
        assembled here), or an (argv, blobs) pair from asm_to_blobs."""
        lines = list(lines)
        ids, nxt = {}, 0
        for i in range(len(lines)):
            while nxt < len(lines) and nxt - i < self.WINDOW:
                line = lines[nxt]
                if isinstance(line, tuple):
                    argv, blobs = line
                else:
                    argv, blobs = asm_to_blobs(pmulab_asm.split_line(line) if isinstance(line, str) else line)
                ids[nxt] = self.submit(argv, blobs, timeout_ms)
                nxt += 1
            yield i, self.collect(ids.pop(i))

    # ---- nanoBench-shaped calls
    def run(self, code: Code = None, asm: str | None = None, init: Code = None, init_asm: str | None = None,
            late_init: Code = None, late_init_asm: str | None = None, one_time_init: Code = None,
            one_time_init_asm: str | None = None, att: bool = False, events: str | Sequence[str] = ("tsc",),
            cpu: int | str | None = None, unroll: int | None = None, loop: int | None = None,
            reps: int | None = None, warmup: int | None = None, initial_warmup: int | None = None,
            agg: str | None = None, basic: bool = False, no_mem: bool = False, align_offset: int | None = None,
            drain_frontend: bool = False, name: str | None = None, extra: Sequence[str] = (),
            timeout_ms: int | None = None, check: bool = True) -> Answer:
        """Measures user code (bytes or hex str in code/init/..., or assembly text in
        asm/init_asm/...); returns the Answer (.counts, .results, .records)."""
        argv = ["run"]
        blobs = {}

        def block(opt_file, data, text, what):
            if text is not None:
                data = assemble(text, att, what)
            if data is None:
                return
            if isinstance(data, str):
                data = bytes.fromhex(data)
            key = opt_file[2:-5].replace("-", "_")
            blobs[key] = bytes(data)
            argv.extend([opt_file, key])

        block("--code-file", code, asm, "--asm")
        block("--init-file", init, init_asm, "--asm-init")
        block("--late-init-file", late_init, late_init_asm, "--asm-late-init")
        block("--one-time-init-file", one_time_init, one_time_init_asm, "--asm-one-time-init")
        if not blobs.get("code"):
            raise ValueError("run: give code= (bytes/hex) or asm= (assembly text)")
        if name is None and asm is not None:
            name = pmulab_asm.default_name(asm)
        if name:
            argv += ["--name", name]
        if events:
            argv += ["--events", events if isinstance(events, str) else ",".join(events)]
        for opt, v in (("--cpu", cpu), ("--unroll", unroll), ("--loop", loop), ("--reps", reps),
                       ("--warmup", warmup), ("--initial-warmup", initial_warmup), ("--agg", agg),
                       ("--align-offset", align_offset)):
            if v is not None:
                argv += [opt, str(v)]
        for opt, on in (("--basic", basic), ("--no-mem", no_mem), ("--drain-frontend", drain_frontend)):
            if on:
                argv.append(opt)
        argv += list(extra)
        return self.request(argv, blobs, timeout_ms, check=check)

    def bench(self, kernels: str | Sequence[str], events: str | Sequence[str] = ("tsc",),
              **opts: object) -> Answer:
        """Built-in kernels (`run --bench`)."""
        argv = ["run", "--bench", kernels if isinstance(kernels, str) else ",".join(kernels),
                "--events", events if isinstance(events, str) else ",".join(events)]
        for k, v in opts.items():
            argv += [f"--{k.replace('_', '-')}", str(v)]
        return self.request(argv, check=True)

    def info(self) -> list[Record]:
        """The census: one {"type":"cpu"} record per logical processor."""
        return self.request("info", check=True).of_type("cpu")

    def msr_read(self, msr: int | str, cpu: int | str | None = None) -> int | dict[int, int]:
        """The value of an MSR (int) on one CPU; with cpu="all" a {cpu: value} dict."""
        argv = ["msr", "read", hex(msr) if isinstance(msr, int) else str(msr)]
        if cpu is not None:
            argv += ["--cpu", str(cpu)]
        recs = self.request(argv, check=True).of_type("msr")
        vals: dict[int, int] = {r["cpu"]: int(r["value"], 16) for r in recs}
        if cpu == "all" or len(vals) > 1:
            return vals
        return next(iter(vals.values()))

    def selftest(self, cpu: int | str | None = None) -> Answer:
        argv = ["selftest"] + (["--cpu", str(cpu)] if cpu is not None else [])
        return self.request(argv)

    # ---- the end
    def close(self, timeout: float = 60) -> int | None:
        """Stops the agent ({"stop":true}) and, for QEMU, waits for it to power off.
        Returns pmulab's exit status when known (0 after a clean stop)."""
        status = None
        if self.link is not None:
            try:
                ans = self.collect(self.submit_stop(), timeout)
                status = ans.status
            except (AgentError, TimeoutError, OSError):
                pass
            self.link.close()
            self.link = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            status = self.proc.returncode
            self._reap()
        return status

    def submit_stop(self) -> str:
        rid = f"stop-{next(self._ids)}"
        self._pending[rid] = Answer(rid, "stop")
        self._live().send((json.dumps({"id": rid, **self._auth(), "stop": True}) + "\n").encode())
        return rid

    def _reap(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.workdir:
            import shutil
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False
