"""tools/pmulab_client and tools/pmulab-client on the host (no boot): --asm becomes code
blobs, bad input is refused with status 2 before anything boots."""

import os
import subprocess
import tempfile

from pmulab_test import ROOT

from pmulab import client as pmulab_client

CLIENT = os.path.join(ROOT, "tools", "pmulab-client")


def test_asm_becomes_blobs():
    argv, blobs = pmulab_client.asm_to_blobs(["run", "--asm", "add rax, rbx", "--asm-init=mov rax, 1",
                                              "--events", "tsc"])
    assert argv == ["run", "--code-file", "code", "--init-file", "init", "--events", "tsc",
                    "--name", "add rax, rbx"], argv
    assert blobs == {"code": bytes.fromhex("4801d8"), "init": bytes.fromhex("48c7c001000000")}, blobs
    argv, blobs = pmulab_client.asm_to_blobs(["run", "--att", "--asm", "addq %rbx, %rax", "--name", "x"])
    assert argv == ["run", "--code-file", "code", "--name", "x"] and blobs["code"] == bytes.fromhex("4801d8")
    argv, blobs = pmulab_client.asm_to_blobs(["run", "--code", "0x4801d8", "--late-init", "90"])
    assert argv == ["run", "--code-file", "code", "--late-init-file", "late_init"], argv
    assert blobs == {"code": bytes.fromhex("4801d8"), "late_init": b"\x90"}
    # Hex pmulab would refuse stays as it is, for pmulab to say why.
    argv, blobs = pmulab_client.asm_to_blobs(["run", "--code", "4801dz"])
    assert argv == ["run", "--code", "4801dz"] and blobs == {}


def test_answer_counts():
    a = pmulab_client.Answer(3, "run")
    a.records = [{"id": 3, "type": "result", "event": "tsc", "per_iteration": 128.0, "cpu": 0},
                 {"id": 3, "type": "result", "event": "tsc", "per_iteration": 256.0, "cpu": 1},
                 {"id": 3, "type": "error", "message": "x"}]
    a.done = {"type": "done", "id": 3, "status": 1}
    assert a.counts == {"tsc": 128.0} and a.status == 1 and len(a.errors) == 1 and not a.cancelled


def _client(*args, stdin=None):
    return subprocess.run([CLIENT, *args], input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60)


def test_client_refuses_bad_batches_before_booting():
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "b.txt")
        with open(path, "w") as f:
            f.write('info\nrun --asm "add rax, rbx"\nrun --asm "frob rax"\n')
        p = _client("--qemu", "--batch", path)
        assert p.returncode == 2, p
        assert p.stderr.startswith(f"pmulab-client: error: {path}:3: --asm: "), p.stderr
        assert "frob rax" in p.stderr and "Traceback" not in p.stderr
        with open(path, "w") as f:
            f.write("# only a comment\n\n")
        p = _client("--qemu", "--batch", path)
        assert p.returncode == 2 and p.stderr == f"pmulab-client: error: {path}: no command lines\n", p.stderr
        with open(path, "wb") as f:
            f.write(b"info\nrun --name \xe9\n")
        p = _client("--qemu", "--batch", path)
        assert p.returncode == 2 and p.stderr == f"pmulab-client: error: {path}:2: not ASCII text\n", p.stderr
        with open(path, "w") as f:
            f.write('run --name "unterminated\n')
        p = _client("--qemu", "--batch", path)
        assert p.returncode == 2 and f"{path}:1: unterminated quote" in p.stderr, p.stderr
    p = _client("--qemu", "--batch", "/nonexistent/batch")
    assert p.returncode == 2 and p.stderr == ("pmulab-client: error: /nonexistent/batch: No such file or "
                                              "directory\n"), p.stderr
    p = _client("--batch", "x")
    assert p.returncode == 2 and "one of the arguments --qemu --serial --sim is required" in p.stderr
    p = _client("--qemu", "--batch", "-", "--", "info", stdin="info\n")
    assert p.returncode == 2 and "after '--' is not taken" in p.stderr, p.stderr


def test_fuzz_serve_target_builds_and_runs():
    """The libFuzzer target over the request parser builds (make fuzz builds it too) and
    holds its contracts for a few thousand inputs from the seed corpus."""
    r = subprocess.run(["make", "-s", "build/fuzz/fuzz_serve"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:]
    with tempfile.TemporaryDirectory() as td:
        r = subprocess.run([os.path.join(ROOT, "build", "fuzz", "fuzz_serve"), "-runs=3000", "-max_len=4096",
                            td, os.path.join(ROOT, "tests", "fuzz", "corpus", "serve")], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0 and "Done 3000 runs" in r.stdout, r.stdout[-3000:]


def test_serial_attach_through_a_pty():
    """Agent.serial on a terminal device: raw 8N1 at 115200, a version request first,
    then requests and stop, against a stand-in agent on the pty's other side."""
    import json
    import threading
    master, slave = os.openpty()
    seen = []

    def fake_agent():
        buf = b""
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                seen.append(req)
                rid = json.dumps(req["id"])
                if "stop" in req:
                    os.write(master, f'{{"type":"done","id":{rid},"status":0}}\n'.encode())
                    return
                out = f'{{"id":{rid},"type":"version","version":"x"}}\n' if req["cmd"] == "version" else \
                    f'{{"id":{rid},"type":"msr","cpu":0,"msr":"0x1b","value":"0xfee00900"}}\n'
                os.write(master, (out + f'{{"type":"done","id":{rid},"status":0}}\n').encode())

    t = threading.Thread(target=fake_agent, daemon=True)
    t.start()
    try:
        agent = pmulab_client.Agent.serial(os.ttyname(slave), timeout=10)
        assert agent.hello[0]["version"] == "x"
        assert agent.msr_read(0x1B) == 0xFEE00900
        assert agent.close() == 0
        t.join(5)
        assert [r.get("cmd", "stop" if "stop" in r else None) for r in seen] == ["version", "msr read 0x1b", "stop"]
    finally:
        os.close(slave)
        os.close(master)


def _fake_tcp_agent(drop_first=1):
    """A stand-in agent on 127.0.0.1: the first `drop_first` connections are closed at
    once (as QEMU's forward does while nothing listens in the guest), then one is served:
    hello, then version / stop. Returns (port, thread, seen requests)."""
    import json
    import socket
    import threading
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    seen = []

    def serve():
        with srv:
            for _ in range(drop_first):
                c, _ = srv.accept()
                c.close()
            c, _ = srv.accept()
            with c:
                c.sendall(b'{"type":"hello","id":null,"protocol":1,"pmulab_version":"x",'
                          b'"link":"TCP 10.0.2.15:5555 (fake)","line_max":409600,"blob_max":65536,"blobs_max":8}\n')
                buf = b""
                while True:
                    chunk = c.recv(4096)
                    if not chunk:
                        return
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        req = json.loads(line)
                        seen.append(req)
                        rid = json.dumps(req["id"])
                        if "stop" in req:
                            c.sendall(f'{{"type":"done","id":{rid},"status":0}}\n'.encode())
                            return
                        c.sendall(f'{{"id":{rid},"type":"version","version":"x"}}\n'
                                  f'{{"type":"done","id":{rid},"status":0}}\n'.encode())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv.getsockname()[1], t, seen


def test_tcp_attach_retries_until_the_agent_answers():
    """Agent.tcp: a connection closed before the hello (nothing listening behind QEMU's
    forward yet) is retried; then the hello, requests and stop."""
    port, t, seen = _fake_tcp_agent(drop_first=2)
    agent = pmulab_client.Agent.tcp("127.0.0.1", port, timeout=10, connect_timeout=20)
    assert agent.hello["link"] == "TCP 10.0.2.15:5555 (fake)", agent.hello
    assert agent.request("version").of_type("version")[0]["version"] == "x"
    assert agent.close() == 0
    t.join(5)
    assert [r.get("cmd", "stop" if "stop" in r else None) for r in seen] == ["version", "stop"]


def test_tcp_batch_cli_against_a_stand_in_agent():
    port, t, seen = _fake_tcp_agent(drop_first=0)
    p = _client("--tcp", f"127.0.0.1:{port}", "--batch", "-", stdin="version\n")
    assert p.returncode == 0, p
    assert p.stdout == ('{"id":1,"type":"version","version":"x","line":1}\n'
                        '{"type":"done","id":1,"status":0,"line":1}\n'), p.stdout
    t.join(5)


def test_tcp_client_arguments_and_nobody_listening():
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = _client("--tcp", f"127.0.0.1:{port}", "--connect-timeout", "1", "--batch", "-", stdin="version\n")
    assert p.returncode == 1 and p.stdout == "", p
    assert p.stderr.startswith(f"pmulab-client: error: cannot reach the agent: cannot reach the agent on TCP "
                               f"127.0.0.1:{port}: "), p.stderr
    assert "Traceback" not in p.stderr
    for args, msg in [
        (["--tcp", "localhost"], "--tcp: 'localhost' is not HOST:PORT (port 1-65535)"),
        (["--tcp", "h:0"], "--tcp: 'h:0' is not HOST:PORT (port 1-65535)"),
        (["--tcp"], "--tcp needs HOST:PORT (or goes with --qemu)"),
        (["--serial", "/dev/null", "--tcp", "h:1"], "--tcp HOST:PORT attaches to a running agent"),
        (["--tcp", "h:1", "--smp", "2"], "unexpected arguments --smp 2 (run-qemu options go with --qemu)"),
    ]:
        p = _client(*args, "--batch", "-", stdin="version\n")
        assert p.returncode == 2 and p.stderr.startswith("pmulab-client: error: ") and msg in p.stderr, (args, p)


def test_run_qemu_tcp_option_is_checked():
    """run-qemu.sh --tcp PORT[:GUEST_PORT]: bad values are refused (126) before anything
    boots; the forward it adds listens on 127.0.0.1 only."""
    from pmulab import qemu_run
    for bad in ("0", "65536", "x", "5555:", "1:2:3", "-1"):
        p = subprocess.run([os.path.join(ROOT, "run-qemu.sh"), "--no-build", f"--tcp={bad}", "--", "info"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        assert p.returncode == 126, (bad, p)
        assert f"run-qemu: error: --tcp: '{bad}' is not PORT or PORT:GUEST_PORT (ports 1-65535)" in p.stderr, p.stderr
    assert qemu_run.tcp_nic(None) == []
    assert qemu_run.tcp_nic((6000, 5555)) == [
        "-netdev", "user,id=pmulabnet,restrict=on,hostfwd=tcp:127.0.0.1:6000-10.0.2.15:5555",
        "-device", "virtio-net-pci,netdev=pmulabnet,romfile="]
