"""The simulator as a target for every host tool (issue #22): `pmulab-sim ... -- serve`
speaks the agent protocol on stdin/stdout, pmulab-sim assembles --asm on the host, and
pmulab-client, pmulab-nanobench and pmulab-lab take --sim DUMP. Boots nothing."""

import base64
import io
import json
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr

import pytest

from pmulab import client as pmulab_client
from pmulab import client_cli
from pmulab_test import BUILD, ROOT, data_path, run_tool

SIM = os.path.join(BUILD, "host", "pmulab-sim")
SKYLAKE = data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt")
CONFIG = data_path("nanobench", "cfg_pmulab_skylake.txt")
CLIENT = os.path.join(ROOT, "tools", "pmulab-client")
NANOBENCH = os.path.join(ROOT, "tools", "pmulab-nanobench")
LAB = os.path.join(ROOT, "tools", "pmulab-lab")
ADD2 = "4801d84801c3"  # add rax, rbx; add rbx, rax


def _refusals(prefix, missing):
    """What every --sim tool says (after `prefix`) when pmulab-sim refuses its dump or option."""
    return [(["--sim", missing], f"{prefix}pmulab-sim: cannot open '{missing}': No such file or directory\n"),
            (["--sim", SKYLAKE, "--sim-cache="], f"{prefix}pmulab-sim: --sim-cache needs a cache model, e.g. "
                                                 "L1D:32K:8:LRU (docs/sim.md) (see pmulab-sim --help)\n")]


def _info_file(td, name):
    """A one-line input ("info") in td, and a path in td that does not exist."""
    path = os.path.join(td, name)
    with open(path, "w") as f:
        f.write("info\n")
    return path, os.path.join(td, "nope.txt")


def _tool(path, *args, timeout=120):
    p = subprocess.run([path, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    assert "Traceback" not in p.stderr, p.stderr
    return p


class _Serve:
    """pmulab-sim -- serve on two pipes, one line at a time."""

    def __init__(self, *sim_args, serve=()):
        self.p = subprocess.Popen([SIM, "--dump", SKYLAKE, *sim_args, "--", "serve", *serve], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def line(self):
        return json.loads(self.p.stdout.readline())

    def send(self, obj):
        self.p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))) + "\n")
        self.p.stdin.flush()

    def answer(self, obj):
        """Sends a request; returns its records up to and with its done record."""
        self.send(obj)
        recs = []
        while not recs or recs[-1].get("type") not in ("done",):
            recs.append(self.line())
        return recs

    def finish(self):
        self.p.stdin.close()
        rest = self.p.stdout.read()
        err = self.p.stderr.read()
        return self.p.wait(30), rest, err


TOKEN = "pipes-token-0123456789abcdef"


def test_serve_on_pipes_with_a_token_refuses_requests_without_it():
    """serve --token: every request carries it; one without it, or with another, is
    refused (an unauthorized error, status 1, a console line); on pipes, as on a serial
    line, serving goes on. The token is never sent back or logged."""
    s = _Serve(serve=("--token", TOKEN))
    hello = s.line()
    assert hello["token_required"] is True, hello
    recs = s.answer({"id": 1, "cmd": "version"})
    assert recs == [{"type": "error", "id": 1, "code": "unauthorized",
                     "message": 'request refused: no token; this agent takes requests with its pre-shared token in '
                     'the "token" field (serve --token-file/--token; pmulab-client --token-file, --token or '
                     '$PMULAB_TOKEN)'}, {"type": "done", "id": 1, "status": 1}], recs
    recs = s.answer({"id": 2, "token": TOKEN[:-1] + "X", "cmd": "version"})
    assert recs[0]["code"] == "unauthorized" and recs[0]["message"].startswith("request refused: a wrong token;")
    assert recs[-1] == {"type": "done", "id": 2, "status": 1}, recs
    recs = s.answer({"id": 3, "token": TOKEN, "cmd": "version"})
    assert [r["type"] for r in recs] == ["version", "done"] and recs[-1]["status"] == 0, recs
    recs = s.answer({"id": 4, "token": TOKEN, "stop": True})
    assert recs == [{"type": "done", "id": 4, "status": 0}], recs
    status, rest, err = s.finish()
    assert status == 0, (status, err)
    assert "pmulab serve: refused request 1 (no token)\n" in err, err
    assert "pmulab serve: refused request 2 (a wrong token)\n" in err, err
    assert TOKEN not in rest and TOKEN not in err and TOKEN[:-1] not in err, err


def test_serve_token_options_are_checked_and_never_shown():
    short = "0123456789"
    for serve, msg in [
        (("--token", short), "serve: --token: the token has 10 characters; give 16 to 128 (e.g. `openssl rand "
                             "-hex 16`)"),
        (("--token", "has spaces in it, 0123456789"), "serve: --token: character 4 of the token is not allowed"),
        (("--token", TOKEN, "--token-file", "t.txt"), "serve: give --token-file PATH or --token TOKEN, not both"),
        (("--token-file", "t.txt"), "serve: --token-file: this platform has no boot volume"),
        (("--idle-timeout", "5"), "serve: --idle-timeout goes with --tcp PORT"),
    ]:
        p = subprocess.run([SIM, "--dump", SKYLAKE, "--", "serve", *serve], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode != 0 and msg in p.stderr, (serve, p.returncode, p.stderr)
        assert p.stdout == "", p.stdout  # refused before serving: no hello
        for word in serve:
            if word.startswith(("0123", "has ", "pipes-")):
                assert word not in p.stderr, p.stderr


def test_client_sends_the_token_from_a_file_or_the_environment():
    """Agent.sim(token=...) starts serve --token and sends it; pmulab-client --sim
    --token-file FILE does the same; a client without the token stops at the hello."""
    with pmulab_client.Agent.sim(SKYLAKE, token=TOKEN) as agent:
        assert agent.hello["token_required"] is True
        assert agent.request("version").status == 0
        assert agent.run(code=ADD2, events=["instructions"], reps=3).counts == {"instructions": 2.0}
    with tempfile.TemporaryDirectory() as td:
        tf = os.path.join(td, "token.txt")
        with open(tf, "w") as f:
            f.write(TOKEN + "\n")
        batch, _ = _info_file(td, "b.txt")
        p = _tool(CLIENT, "--sim", SKYLAKE, "--token-file", tf, "--batch", batch)
        assert p.returncode == 0, p.stderr
        recs = [json.loads(l) for l in p.stdout.splitlines()]
        assert recs[-1]["type"] == "done" and recs[-1]["status"] == 0, recs
        assert TOKEN not in p.stdout and TOKEN not in p.stderr
        p = _tool(CLIENT, "--sim", SKYLAKE, "--token-file", os.path.join(td, "nope"), "--batch", batch)
        assert p.returncode == 2 and "pmulab-client: error: cannot read the token file" in p.stderr, p.stderr
    assert pmulab_client.read_token(env=True) == os.environ.get("PMULAB_TOKEN")
    old = os.environ.get("PMULAB_TOKEN")
    os.environ["PMULAB_TOKEN"] = TOKEN
    try:
        assert pmulab_client.read_token() == TOKEN
        assert pmulab_client.read_token("other-token-0123456789") == "other-token-0123456789"
    finally:
        if old is None:
            del os.environ["PMULAB_TOKEN"]
        else:
            os.environ["PMULAB_TOKEN"] = old
    # An agent that requires a token, and a client that has none: a TokenError at the hello.
    with pytest.raises(pmulab_client.TokenError, match="pre-shared token only"):
        pmulab_client.Agent.sim(SKYLAKE, serve_args=("--token", TOKEN))


def test_serve_on_pipes_answers_as_the_agent_does_and_ends_at_eof():
    s = _Serve()
    hello = s.line()
    assert hello["type"] == "hello" and hello["id"] is None and hello["protocol"] == 1, hello
    assert hello["line_max"] == 409600 and hello["blob_max"] == 65536 and hello["blobs_max"] == 8, hello
    # Marked simulated as the meta record is.
    assert hello["simulated"] is True and hello["simulated_machine"] == f"dump {SKYLAKE} (4 CPUs)", hello
    assert hello["link"] == "stdin/stdout of pmulab-sim (SIMULATED)", hello
    # A run: the records the agent sends, tagged with the id, then done.
    recs = s.answer({"id": 1, "cmd": f"run --code {ADD2} --events instructions,branches --reps 3"})
    assert [r["type"] for r in recs] == ["result", "result", "done"], recs
    assert all(r["id"] == 1 for r in recs) and list(recs[0])[0] == "id", recs
    by_event = {r["event"]: r for r in recs[:2]}
    assert by_event["instructions"]["fraction"] == [2, 1] and by_event["instructions"]["counter"] == "FIXED_CTR0"
    assert by_event["branches"]["fraction"] == [0, 1], by_event
    assert recs[2] == {"type": "done", "id": 1, "status": 0}
    # Code as a blob, as pmulab-client sends it.
    body = base64.b64encode(bytes.fromhex(ADD2)).decode()
    recs = s.answer({"id": "b", "cmd": "run --code-file body --events instructions --reps 2", "blobs": {"body": body}})
    assert recs[0]["fraction"] == [2, 1] and recs[-1] == {"type": "done", "id": "b", "status": 0}, recs
    # Bad requests: the protocol's errors, and serving goes on.
    recs = s.answer({"id": 3, "cmd": "info", "colour": "red"})
    assert recs == [{"type": "error", "id": 3, "code": "invalid argument",
                     "message": 'request: unknown field "colour" (fields: id, token, cmd, blobs, timeout_ms, '
                     'cancel, stop) (at byte 31)'}, {"type": "done", "id": 3, "status": 2}], recs
    recs = s.answer("not json")
    assert recs[0]["type"] == "error" and recs[0]["id"] is None and recs[-1]["status"] == 2, recs
    recs = s.answer({"id": 4, "cmd": "frobnicate"})
    assert recs[0]["message"] == "unknown command 'frobnicate' (try 'pmulab help')" and recs[-1]["status"] == 2
    recs = s.answer({"id": 5, "cmd": "serve"})
    assert recs[0]["message"] == "serve: the agent is already serving" and recs[-1]["status"] == 2, recs
    recs = s.answer({"id": 6, "cmd": "run --code-file nope --events instructions", "blobs": {"body": body}})
    assert "no blob 'nope' in this request (its blobs: body)" in recs[0]["message"], recs
    # The end of stdin ends serving: status 0, nothing more on stdout, the console on stderr.
    rc, rest, err = s.finish()
    assert rc == 0 and rest == "", (rc, rest, err)
    assert err.startswith(f"pmulab-sim: SIMULATED dump {SKYLAKE} (4 CPUs): "), err
    assert "pmulab serve: the host closed the link\npmulab serve: stopped after 7 requests\n" in err, err


def test_serve_stop_request_says_bye():
    s = _Serve()
    assert s.line()["type"] == "hello"
    assert s.answer({"id": "s", "stop": True}) == [{"type": "done", "id": "s", "status": 0}]
    assert s.line() == {"type": "bye", "id": None, "reason": "stop"}
    rc, rest, err = s.finish()
    assert rc == 0 and rest == "", (rc, err)


def test_serve_refuses_serial_and_tcp_links():
    for extra, want in ((["--serial", "1"], "pmulab-sim serves on its stdin/stdout; --serial 1 does not apply"),
                        (["--tcp", "5555"], "serve --tcp: this platform has no TCP/IP stack")):
        r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--", "serve", *extra)
        assert r.rc in (2, 3) and want in r.err and r.out == "", (extra, r)


def test_sim_assembles_asm_as_run_qemu_does():
    r = run_tool("pmulab-sim", "--json", "--dump", SKYLAKE, "--", "run", "--asm", "add rax, rbx; add rbx, rax",
                 "--asm-init", "mov rax, 1", "--events", "instructions", "--reps", "3")
    assert r.rc == 0, r
    (meta,) = r.records("meta")
    # The command line as pmulab ran it: the code assembled, the name from the text.
    assert meta["command_line"] == "run --code 4801d84801c3 --init 48c7c001000000 --events instructions " \
                                   "--reps 3 --name add rax, rbx; add rbx, rax", meta
    (res,) = r.records("result")
    assert res["fraction"] == [2, 1] and res["bench"] == "add rax, rbx; add rbx, rax", res
    # AT&T with --att; every --asm option (late and one-time init too).
    r = run_tool("pmulab-sim", "--json", "--dump", SKYLAKE, "--", "run", "--att", "--asm", "addq %rbx, %rax",
                 "--asm-late-init", "nop", "--asm-one-time-init", "xorl %eax, %eax", "--events", "instructions",
                 "--reps", "2")
    assert r.rc == 0 and r.records("result")[0]["fraction"] == [1, 1], r
    # Code that does not assemble: pmulab's usage status, the assembler's message, no run.
    r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--", "run", "--asm", "frob rax")
    assert r.rc == 2 and r.out == "", r
    assert "--asm: statement 1 'frob rax': invalid instruction mnemonic" in r.err, r


def test_sim_campaign_with_asm_and_results_folder():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write('# a campaign\nrun --asm "add rax, rbx; add rbx, rax" --events instructions --reps 2\ninfo\n')
        res = os.path.join(td, "res")
        r = run_tool("pmulab-sim", "--json", "--dump", SKYLAKE, "--results", res, "--config", cfg)
        assert r.rc == 0, r
        assert sorted(os.listdir(res)) == ["0001-run.csv", "0001-run.jsonl", "0002-info.csv", "0002-info.jsonl"]
        with open(os.path.join(res, "0001-run.jsonl")) as f:
            recs = [json.loads(l) for l in f]
        assert recs[0]["type"] == "meta" and recs[0]["simulated"] is True, recs[0]
        assert recs[1]["type"] == "result" and recs[1]["fraction"] == [2, 1], recs[1]
        # Numbering goes on above what is there; bad code in a campaign names its line.
        with open(cfg, "a") as f:
            f.write('run --asm "frob"\n')
        r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--config", cfg)
        assert r.rc == 2 and f"{cfg}:4: --asm: statement 1 'frob'" in r.err, r


def test_sim_cache_and_seed_options_are_checked():
    r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--cache", "", "--", "info")
    assert r.rc == 2 and "--cache needs a cache model" in r.err, r
    r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--seed", "x", "--", "info")
    assert r.rc == 2 and "--seed: 'x' is not a number" in r.err, r
    r = run_tool("pmulab-sim", "--dump", SKYLAKE, "--cache", "L1D:32K:8:LRU", "--seed", "7", "--", "version")
    assert r.rc == 0, r
    r = run_tool("pmulab-sim", "--help")
    assert "--cache SPEC              cache model: docs/sim.md" in r.out, r.out


def test_client_sim_runs_a_batch():
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "b.txt")
        with open(path, "w") as f:
            f.write('run --asm "add rax, rbx; add rbx, rax" --events instructions --reps 2\nfrobnicate\n')
        p = _tool(CLIENT, "--sim", SKYLAKE, "--sim-seed", "1", "--batch", path)
        assert p.returncode == 1, p  # line 2 failed
        recs = [json.loads(l) for l in p.stdout.splitlines()]
        assert [(r["type"], r["line"]) for r in recs] == [("result", 1), ("done", 1), ("error", 2), ("done", 2)]
        assert recs[0]["fraction"] == [2, 1] and recs[1]["status"] == 0 and recs[3]["status"] == 2, recs
        assert "pmulab serve: serving on stdin/stdout of pmulab-sim (SIMULATED)" in p.stderr, p.stderr
        # The model instead of a dump.
        with open(path, "w") as f:
            f.write("run --code 4801d8 --events instructions --reps 2\n")
        p = _tool(CLIENT, "--sim-model", "skylake", "--batch", path)
        assert p.returncode == 0 and json.loads(p.stdout.splitlines()[0])["fraction"] == [1, 1], p


def test_client_sim_errors_are_clear():
    with tempfile.TemporaryDirectory() as td:
        path, missing = _info_file(td, "b.txt")
        cases = _refusals("pmulab-client: error: ", missing) + [
            (["--sim", SKYLAKE, "--sim-seed", "x"],
             "pmulab-client: error: pmulab-sim: --sim-seed: 'x' is not a number (e.g. 1) (see pmulab-sim --help)\n"),
            (["--sim-cache", "L1D:32K:8:LRU", "--qemu"],
             "pmulab-client: error: --sim-cache and --sim-seed go with --sim DUMP (or --sim-model NAME)\n"),
            (["--sim", SKYLAKE, "--qemu"],
             "pmulab-client: error: --sim runs on the simulator; it does not go with --qemu, --serial or --tcp\n"),
            (["--sim", SKYLAKE, "--smp", "2"],
             "pmulab-client: error: unexpected arguments --smp 2 (run-qemu options go with --qemu)\n"),
        ]
        for args, want in cases:
            p = _tool(CLIENT, *args, "--batch", path)
            assert p.returncode == 2 and p.stderr == want and p.stdout == "", (args, p.stderr)


def test_missing_simulator_binary_says_make_builds_it(monkeypatch):
    monkeypatch.setattr(pmulab_client, "SIM", os.path.join(ROOT, "build", "host", "no-such-pmulab-sim"))
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "b.txt")
        with open(path, "w") as f:
            f.write("info\n")
        err = io.StringIO()
        with redirect_stderr(err):
            rc = client_cli.main(["--sim", SKYLAKE, "--batch", path])
    assert rc == 1, err.getvalue()
    assert err.getvalue() == ("pmulab-client: error: build/host/no-such-pmulab-sim is missing: `make` builds it "
                              f"(in {ROOT})\n"), err.getvalue()


def _nanobench(*args):
    return _tool(sys.executable, NANOBENCH, *args)


def test_nanobench_sim_counts_instructions_exactly():
    p = _nanobench("--sim", SKYLAKE, "-asm", "ADD RAX, RBX; ADD RBX, RAX", "-config", CONFIG)
    assert p.returncode == 0, p
    lines = p.stdout.splitlines()
    assert [l.split(":")[0] for l in lines] == ["CORE_CYCLES", "INST_RETIRED", "BR_INST_RETIRED.ALL_BRANCHES",
                                                "MEM_LOAD_RETIRED.L1_HIT", "MEM_LOAD_RETIRED.L1_MISS"], lines
    assert "INST_RETIRED: 2.00" in lines and "BR_INST_RETIRED.ALL_BRANCHES: 0.00" in lines, lines
    assert "MEM_LOAD_RETIRED.L1_HIT: 0.00" in lines and "MEM_LOAD_RETIRED.L1_MISS: 0.00" in lines, lines
    # An unconditional jump is a branch retired, today too.
    p = _nanobench("--sim", SKYLAKE, "-asm", "jmp 1f; 1: add rax, rbx", "-config", CONFIG, "-unroll_count", "100")
    assert p.returncode == 0 and "INST_RETIRED: 2.00" in p.stdout.splitlines(), p
    assert "BR_INST_RETIRED.ALL_BRANCHES: 1.00" in p.stdout.splitlines(), p
    # -fixed_counters and -range over the same transport.
    p = _nanobench("--sim", SKYLAKE, "-asm", "add rax, rbx", "-fixed_counters", "-range", "-unroll_count", "100")
    assert p.returncode == 0 and "Instructions retired: 1.00 [1.00;1.00]" in p.stdout.splitlines(), p


def test_nanobench_sim_counts_conditional_branches():
    p = _nanobench("--sim", SKYLAKE, "-asm", "cmp rax, rax; je 1f; 1: nop", "-config", CONFIG, "-unroll_count", "100")
    assert p.returncode == 0, p
    lines = p.stdout.splitlines()
    assert "INST_RETIRED: 3.00" in lines and "BR_INST_RETIRED.ALL_BRANCHES: 1.00" in lines, lines


def test_nanobench_sim_counts_loads_per_level():
    p = _nanobench("--sim", SKYLAKE, "-asm", "mov rax, [r14]", "-config", CONFIG, "-unroll_count", "100")
    assert p.returncode == 0, p
    lines = p.stdout.splitlines()
    assert "INST_RETIRED: 1.00" in lines and "MEM_LOAD_RETIRED.L1_HIT: 1.00" in lines, lines
    assert "MEM_LOAD_RETIRED.L1_MISS: 0.00" in lines, lines


def _nanobench_skylake_config(td):
    """nanoBench's own configs/cfg_Skylake_common.txt when a copy is here (NANOBENCH_DIR,
    a nanoBench checkout; or a mirror of its repository), else None."""
    d = os.environ.get("NANOBENCH_DIR")
    if d and os.path.isfile(os.path.join(d, "configs", "cfg_Skylake_common.txt")):
        return os.path.join(d, "configs", "cfg_Skylake_common.txt")
    mirror = "/work/.mirror/andreas-abel+nanoBench/repo"
    if os.path.isdir(mirror):
        p = subprocess.run(["git", f"--git-dir={mirror}", "show", "HEAD:configs/cfg_Skylake_common.txt"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if p.returncode == 0 and p.stdout:
            path = os.path.join(td, "cfg_Skylake_common.txt")
            with open(path, "wb") as f:
                f.write(p.stdout)
            return path
    return None


def test_nanobench_sim_with_nanobenchs_own_skylake_config():
    with tempfile.TemporaryDirectory() as td:
        cfg = _nanobench_skylake_config(td)
        if cfg is None:
            pytest.skip("nanoBench's configs/cfg_Skylake_common.txt is not here (set NANOBENCH_DIR)")
        with open(cfg) as f:
            names = [l.split()[1] for l in f if l.strip() and not l.startswith("#")]
        p = _nanobench("--sim", SKYLAKE, "-asm", "ADD RAX, RBX; ADD RBX, RAX", "-config", cfg)
    assert p.returncode == 0, p
    lines = p.stdout.splitlines()
    # Every event of the file, in its order (8 counters per run on this Skylake: runs 0-3).
    assert [l.split(": ")[0].split(" ")[-1] for l in lines] == names, lines
    values = {l.split(": ")[0].split(" ")[-1]: l.split(": ")[1] for l in lines}
    assert values["INST_RETIRED"] == "2.00", lines
    for name in ("BR_INST_RETIRED.ALL_BRANCHES", "BR_MISP_RETIRED.ALL_BRANCHES", "MEM_LOAD_RETIRED.L1_HIT",
                 "MEM_LOAD_RETIRED.L1_MISS", "MEM_LOAD_RETIRED.L2_HIT", "MEM_LOAD_RETIRED.L3_MISS"):
        assert values[name] == "0.00", (name, lines)


def test_nanobench_sim_errors_are_clear():
    with tempfile.TemporaryDirectory() as td:
        missing = os.path.join(td, "nope.txt")
        cases = _refusals("pmulab-nanobench: error: ", missing) + [
            (["--sim", SKYLAKE, "--smp", "2"],
             "pmulab-nanobench: error: --smp is an option of the QEMU boot; it does not go with --sim\n"),
            (["--sim-seed", "3"],
             "pmulab-nanobench: error: --sim-cache and --sim-seed go with --sim DUMP (or --sim-model NAME)\n"),
        ]
        for args, want in cases:
            p = _nanobench(*args, "-asm", "add rax, rbx")
            assert p.returncode == 2 and p.stderr == want and p.stdout == "", (args, p.stderr)


def test_lab_sim_runs_campaigns_on_dumps_and_models():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            # Line 3 faults (UD2) on every machine.
            f.write('run --asm "add rax, rbx; add rbx, rax" --events instructions --reps 2\ninfo\n'
                    'run --code 0f0b --events instructions\n')
        out = os.path.join(td, "lab")
        p = _tool(LAB, "run", "--config", cfg, "--sim", SKYLAKE, "--sim-model", "skylake", "--sim-seed", "1",
                  "--out", out)
        assert p.returncode == 1, p  # line 3 failed, on both machines
        runs = sorted(os.listdir(out))
        assert runs == ["c-sim-GenuineIntel00506E3_Skylake_CPUID", "c-sim-skylake", "merged.csv", "merged.jsonl"]
        for run in runs[:2]:
            assert f"FAIL {run}: sim, 3 commands: 2 ok, 1 failed; line 3: code on CPU 0 (run 0): code raised " \
                   in p.stdout and "; 6 results files" in p.stdout, p.stdout
            with open(os.path.join(out, run, "commands.json")) as f:
                states = json.load(f)
            assert [(s["line"], s["state"], s["status"], s["results"]) for s in states] == \
                [(1, "ok", 0, "0001-run"), (2, "ok", 0, "0002-info"), (3, "failed", 2, "0003-run")], states
        with open(os.path.join(out, "merged.jsonl")) as f:
            recs = [json.loads(l) for l in f]
        res = [r for r in recs if r["type"] == "result"]
        assert len(res) == 2 and all(r["fraction"] == [2, 1] for r in res), res
        assert {r["lab"]["sim"] for r in res} == {SKYLAKE, "skylake"} and {r["lab"]["mode"] for r in res} == {"sim"}
        assert all(r["simulated"] is True for r in recs if r["type"] == "meta"), recs


def test_lab_sim_errors_are_clear():
    with tempfile.TemporaryDirectory() as td:
        cfg, missing = _info_file(td, "c.cfg")
        cases = _refusals("pmulab-lab: error: run: ", missing) + [
            (["--sim", SKYLAKE, "--smp", "2"],
             "pmulab-lab: error: run: --smp is an option of the QEMU boot; it does not go with --sim\n"),
            (["--sim", SKYLAKE, "--no-agent"], "pmulab-lab: error: run: --no-agent boots a disk image; --sim runs "
                                               "every campaign through the simulator's agent\n"),
        ]
        for args, want in cases:
            p = _tool(LAB, "run", "--config", cfg, *args, "--out", os.path.join(td, "out"))
            assert p.returncode == 2 and p.stderr == want, (args, p.stderr)
            assert not os.path.exists(os.path.join(td, "out")), args
