#!/usr/bin/env python3
"""pmulab-client: run command lines through one `pmulab serve` agent (docs/agent.md).

  tools/pmulab-client --qemu [run-qemu options] --batch FILE
  tools/pmulab-client --serial /dev/ttyUSB0 --batch FILE
  tools/pmulab-client --tcp HOST:PORT --batch FILE      (an agent on `serve --tcp PORT`)
  tools/pmulab-client --qemu --tcp [run-qemu options] --batch FILE   (QEMU, agent on TCP)
  tools/pmulab-client --sim DUMP [--sim-cache SPEC] [--sim-seed N] --batch FILE
                                    (the simulator: pmulab-sim --dump DUMP -- serve)

An agent started with `serve --token-file` takes requests with its pre-shared token only:
`--token-file FILE` (or `--token TOKEN`, or $PMULAB_TOKEN with --tcp and --serial) sends it
with every request (docs/agent.md, "Who may connect").

FILE holds one pmulab command line per line (`#` comments, blank lines skipped; `-` is
stdin); `--asm`, `--asm-init`, ... are assembled here (tools/pmulab/asm.py) into code
blobs, every line before anything boots. Every record the agent sends is printed as one
JSON line with "id" (the request) and "line" (the line of FILE); each line ends with its
{"type":"done","id":..,"line":..,"status":N}.

Exit status: 0 every line succeeded; 1 a line failed (its records say why) or the agent
was lost; 2 bad arguments or a line that does not split or assemble (nothing runs), or
a --sim dump or option pmulab-sim refuses.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from . import asm as pmulab_asm
from .client import (Agent, AgentError, SimError, TokenError, add_sim_options, asm_to_blobs, read_token,
                     sim_options_problem)


def fail(msg: str, status: int = 2) -> int:
    print(f"pmulab-client: error: {msg}", file=sys.stderr)
    return status


def read_batch(path: str) -> list[tuple[int, list[str], dict[str, bytes]]]:
    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not ASCII text")
    lines = []
    for no, raw in enumerate(text.splitlines(), 1):
        s = pmulab_asm._strip_comment(raw).strip()
        if not s:
            continue
        try:
            words = pmulab_asm.split_line(s)
            argv, blobs = asm_to_blobs(words)
        except pmulab_asm.AsmError as e:
            raise ValueError(f"{path}:{no}: {e}")
        lines.append((no, argv, blobs))
    if not lines:
        raise ValueError(f"{path}: no command lines")
    return lines


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="pmulab-client", description="Run command lines through pmulab serve.",
                                epilog="Other options go to run-qemu.sh (--smp, --icount, --cpu, --kvm, ...).")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--qemu", action="store_true", help="boot pmulab in QEMU (run-qemu.sh's options follow)")
    where.add_argument("--serial", metavar="DEVICE", help="attach to an agent on a serial device")
    p.add_argument("--tcp", nargs="?", const=True, metavar="HOST:PORT",
                   help="attach to an agent on TCP (pmulab serve --tcp PORT); with --qemu and no value: boot "
                   "with the agent on TCP (a port forward on 127.0.0.1) instead of a serial port")
    add_sim_options(p)
    p.add_argument("--batch", metavar="FILE", required=True, help="command lines, one per line ('-': stdin)")
    p.add_argument("--timeout-ms", type=int, metavar="MS", help="per-request timeout on the agent")
    p.add_argument("--baud", type=int, default=115200)
    tok = p.add_mutually_exclusive_group()
    tok.add_argument("--token-file", metavar="FILE", help="the pre-shared token of an agent started with "
                     "`serve --token-file` (default: $PMULAB_TOKEN); sent with every request, never printed")
    tok.add_argument("--token", metavar="TOKEN", help="the token itself (prefer --token-file: a command "
                     "line is visible to other users of this host)")
    p.add_argument("--connect-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="with --tcp HOST:PORT: keep trying to connect this long (default 30)")
    args, qemu_args = p.parse_known_args(argv)
    tcp_addr = None
    if args.tcp is not None and args.tcp is not True:
        if args.qemu or args.serial:
            return fail("--tcp HOST:PORT attaches to a running agent; it does not go with --qemu or --serial "
                        "(--qemu --tcp, without a value, boots with the agent on TCP)")
        host, sep, port = args.tcp.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            return fail(f"--tcp: '{args.tcp}' is not HOST:PORT (port 1-65535)")
        tcp_addr = (host.strip("[]"), int(port))
    elif args.tcp is True and not args.qemu:
        return fail("--tcp needs HOST:PORT (or goes with --qemu)")
    sim = args.sim is not None or args.sim_model is not None
    problem = sim_options_problem(args)
    if problem:
        return fail(problem)
    if sim and (args.qemu or args.serial or args.tcp is not None):
        return fail("--sim runs on the simulator; it does not go with --qemu, --serial or --tcp")
    if not (args.qemu or args.serial or tcp_addr or sim):
        return fail("one of the arguments --qemu --serial --sim is required (or --tcp HOST:PORT)")
    if (args.serial or tcp_addr or sim) and qemu_args:
        return fail(f"unexpected arguments {' '.join(qemu_args)} (run-qemu options go with --qemu)")
    if "--" in qemu_args:
        return fail("a pmulab command line after '--' is not taken: put command lines in the --batch file")
    try:
        lines = read_batch(args.batch)
        token = read_token(args.token, args.token_file, env=bool(tcp_addr or args.serial))
    except ValueError as e:
        return fail(str(e))
    except TokenError as e:
        return fail(str(e))
    worst = 0
    try:
        if sim:
            agent = Agent.sim(args.sim, args.sim_model, args.sim_cache, args.sim_seed, log=sys.stderr, token=token)
        elif args.qemu:
            agent = Agent.qemu(qemu_args, log=sys.stderr, tcp=args.tcp is True,
                               token=None if args.token_file else token, token_file=args.token_file)
        elif tcp_addr:
            agent = Agent.tcp(*tcp_addr, connect_timeout=args.connect_timeout, token=token)
        else:
            agent = Agent.serial(args.serial, args.baud, token=token)
    except SimError as e:
        return fail(str(e), e.status)
    except TokenError as e:
        return fail(f"cannot use the agent: {e}", 1)
    except (AgentError, OSError, TimeoutError) as e:
        return fail(f"cannot reach the agent: {e}", 1)
    out = sys.stdout
    try:
        for i, ans in agent.batch([(argv, blobs) for _, argv, blobs in lines], timeout_ms=args.timeout_ms):
            no = lines[i][0]
            # The agent's lines as they came (numbers keep their digits), with the line number.
            for raw in ans.raw:
                raw = raw.rstrip("\r")
                out.write(raw[:-1] + f',"line":{no}}}\n')
            out.flush()
            if ans.status:
                worst = 1
    except (AgentError, TimeoutError, OSError) as e:
        agent.close(timeout=5)
        return fail(f"lost the agent: {e}", 1)
    except KeyboardInterrupt:
        agent.close(timeout=5)
        return 130
    st = agent.close()
    if st not in (0, None):
        print(f"pmulab-client: warning: the agent ended with status {st}", file=sys.stderr)
    return worst


def cli() -> None:
    """The command line entry point (tools/pmulab-client)."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
