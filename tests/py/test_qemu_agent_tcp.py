"""`pmulab serve --tcp` in QEMU (docs/agent.md, "TCP"): the agent on OVMF's own TCP4
stack, reached through a user-mode network forward bound to 127.0.0.1 only.

One boot: a few dozen requests (exact -icount results on the BSP and an AP, malformed
lines, an unknown command, a faulting blob, a cancel), then the host goes away without
`stop`, a second host connects and is served (its own hello), a host that half-closes
still gets its answers, and a stop powers off with status 0. Then the batch CLI over
TCP, and the clear errors without a NIC and without a driver for it.
"""

import json
import os
import socket
import subprocess
import tempfile
import time

from pmulab_test import ROOT, run_qemu

from pmulab.client import Agent

QEMU = True
TICK = 128
CLIENT = os.path.join(ROOT, "tools", "pmulab-client")
SNIPPETS = [("add rax, rbx", 1), ("add rax, rbx; add rcx, rdx", 2), ("|7", 1), ("3*|imul rax, rbx|", 3)]


def _done(ans):
    assert ans.done is not None and ans.done["id"] == ans.id, ans
    for r in ans.records:
        assert r["id"] == ans.id, (ans.id, r)
    return ans.done["status"]


def _lines(sock, n, timeout=60):
    """n JSON lines from a raw socket."""
    sock.settimeout(timeout)
    buf, out = b"", []
    while len(out) < n:
        chunk = sock.recv(65536)
        assert chunk, f"the agent closed the connection after {out}"
        buf += chunk
        while b"\n" in buf and len(out) < n:
            line, _, buf = buf.partition(b"\n")
            out.append(json.loads(line))
    return out


def test_qemu_agent_tcp_session():
    agent = Agent.qemu(["--no-build", "--smp", "2", "--icount", "7"], timeout=500, tcp=True)
    port = agent.tcp_port
    try:
        link = agent.hello["link"]
        assert link.startswith("TCP 10.0.2.15:%d (NIC 52:54:00:12:34:56, 1 of 1 with TCP4), host 10.0.2.2:" % port), \
            agent.hello
        # 1. Valid requests, several in flight, exact under -icount 7 (BSP and AP).
        lines, expect = [], []
        for rnd in range(8):
            for text, n in SNIPPETS:
                cpu = 1 if rnd % 4 == 3 else 0
                lines.append(f'run --asm "{text}" --events tsc --reps 3 --warmup 1 --cpu {cpu}')
                expect.append((n, cpu))
        for i, ans in agent.batch(lines):
            n, cpu = expect[i]
            assert _done(ans) == 0, (lines[i], ans.records)
            assert [r["cpu"] for r in ans.results] == [cpu], ans.records
            assert float(ans.results[0]["per_iteration"]) == TICK * n, (lines[i], ans.results[0])
            assert float(ans.results[0]["min"]) == TICK * n, (lines[i], ans.results[0])
        # 2. Malformed lines and an unknown command: error records, status 2, still serving.
        for line, rid, msg in [
            ("not json", None, "request: expected a JSON object (at byte 1)"),
            ('{"id":"m1","cmd":"info","colour":"red"}', "m1", 'unknown field "colour"'),
            ('{"id":"m2","cmd":"run --code-file b","blobs":{"b":"!!!!"}}', "m2", "is not base64"),
            ('{"id":"m3","cmd":"serve --tcp 5555"}', "m3", "already serving"),
        ]:
            agent.send_raw(line + "\n")
            rec = agent.read_record()
            while not (rec.get("type") == "done" and rec.get("id") == rid):
                rec = agent.read_record()
            ans = agent._finished.pop(rid)
            assert ans.done["status"] == 2, (line, ans.records)
            assert msg in ans.errors[0]["message"], (line, ans.errors)
        # A line over the limit (400 KiB of it arrives in many TCP segments) is refused as a whole.
        agent.send_raw('{"id":"long","cmd":"' + "x" * (400 << 10) + '"}\n')
        rec = agent.read_record()
        while not (rec.get("type") == "done" and rec.get("id") is None):
            rec = agent.read_record()
        assert rec["status"] == 2, rec
        assert "longer than 409600 bytes" in agent._finished.pop(None).errors[0]["message"]
        ans = agent.request("frobnicate")
        assert _done(ans) == 2 and ans.errors[0]["message"] == "unknown command 'frobnicate' (try 'pmulab help')"
        # 3. Faulting user code, then exact again.
        ans = agent.run(code=bytes.fromhex("0f0b"), events=["tsc"], check=False)
        assert _done(ans) == 2 and "code raised #UD (invalid opcode) (vector 6)" in ans.errors[0]["message"], ans
        assert agent.run(asm="imul rax, rax", init_asm="mov rax, 1", events=["tsc"], reps=3).counts == {"tsc": 128.0}
        # 4. A cancel of a long request.
        rid = agent.submit("run --bench nop,empty,add_chain,add_indep --events tsc --cpu all --reps 2000")
        cid = agent.cancel(rid)
        a = agent.collect(rid)
        assert a.cancelled and a.status == 1 and len(a.results) < 8, (a.done, a.records)
        assert agent.collect(cid).status == 0

        # 5. The host goes away without "stop": the agent listens again, and the next
        #    host gets its own hello and is served exactly.
        agent.link.close()
        agent.link = None
        second = Agent.tcp("127.0.0.1", port, timeout=120)
        assert second.hello["link"].startswith("TCP 10.0.2.15:%d (NIC" % port), second.hello
        assert second.hello["link"] != link  # another source port
        assert second.run(asm="add rax, rbx", events=["tsc"], reps=3).counts == {"tsc": 128.0}
        second.link.close()

        # 6. A host that sends two requests and shuts down its sending side (nc -N)
        #    still gets both answers, then the agent listens again.
        deadline = time.monotonic() + 30
        while True:
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            try:
                hello = _lines(raw, 1, timeout=5)[0]
                break
            except (AssertionError, OSError):
                raw.close()
                assert time.monotonic() < deadline, "no hello for the third host"
                time.sleep(0.3)
        assert hello["type"] == "hello", hello
        raw.sendall(b'{"id":41,"cmd":"version"}\n{"id":42,"cmd":"run --bench nop --events tsc --reps 3"}\n')
        raw.shutdown(socket.SHUT_WR)
        recs = _lines(raw, 4)
        assert [(r["type"], r["id"]) for r in recs] == [("version", 41), ("done", 41), ("result", 42),
                                                        ("done", 42)], recs
        assert recs[3]["status"] == 0 and float(recs[2]["per_iteration"]) == 128.0, recs  # nop: one instruction
        raw.close()

        # 7. A last host stops the agent: it powers off with status 0.
        last = Agent.tcp("127.0.0.1", port, timeout=120)
        assert last.request("version").status == 0
        assert last.close() == 0
    finally:
        agent.link = None  # the stop went through the last connection
        status = agent.close(timeout=120)
    assert status == 0, (status, agent.console[-10:])
    console = "\n".join(agent.console)
    assert console.count("pmulab serve: the host went away; listening again") == 3, console
    assert "pmulab serve: listening on TCP 10.0.2.15:%d (NIC 52:54:00:12:34:56, 1 of 1 with TCP4)" % port in console
    assert "pmulab serve: stopped after" in console, console


def test_qemu_agent_tcp_batch_cli():
    with tempfile.TemporaryDirectory() as td:
        batch = os.path.join(td, "batch.txt")
        with open(batch, "w") as f:
            f.write("# over TCP\n"
                    'run --asm "add rax, rbx" --events tsc --reps 3\n'
                    'run --asm "imul rax, rbx; imul rcx, rbx" --events tsc --reps 3\n'
                    "frobnicate\n")
        p = subprocess.run([CLIENT, "--qemu", "--tcp", "--no-build", "--smp", "1", "--icount", "7", "--batch", batch],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=400)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])  # the frobnicate line failed
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    done = {r["line"]: r for r in recs if r["type"] == "done"}
    assert [done[n]["status"] for n in (2, 3, 4)] == [0, 0, 2], done
    res = {r["line"]: r for r in recs if r["type"] == "result"}
    assert float(res[2]["per_iteration"]) == 128.0 and float(res[3]["per_iteration"]) == 256.0, res
    assert "pmulab serve: serving on TCP 10.0.2.15:" in p.stderr, p.stderr


def test_qemu_serve_tcp_without_a_network():
    """No NIC, and a NIC the firmware has no driver for (e1000 without its iPXE ROM):
    a clear error naming what is missing, status 3 (unsupported)."""
    r = run_qemu("serve", "--tcp", "5555", smp="1", timeout=120)
    assert r.rc == 3, r
    assert r.diag() == [
        "pmulab: error: serve --tcp: the firmware offers no TCP4 service: it lacks a network controller (in QEMU: "
        "run-qemu.sh --tcp PORT adds one); after connecting the network controllers: 0 PCI network controllers, "
        "0 SNP, 0 MNP, 0 IP4, 0 TCP4 service handles"], r
    r = run_qemu("serve", "--tcp", "5555", smp="1", timeout=120,
                 extra=["--qemu-arg=-netdev", "--qemu-arg=user,id=n0,restrict=on",
                        "--qemu-arg=-device", "--qemu-arg=e1000,netdev=n0,romfile="])
    assert r.rc == 3, r
    assert r.diag() == [
        "pmulab: error: serve --tcp: the firmware offers no TCP4 service: it lacks a driver for the network "
        "controller (no EFI_SIMPLE_NETWORK_PROTOCOL); after connecting the network controllers: 1 PCI network "
        "controller, 0 SNP, 0 MNP, 0 IP4, 0 TCP4 service handles"], r


TOKEN = "qemu-token-0123456789abcdef"


def _raw_hello(port, deadline):
    """A raw connection to the agent and its hello, retrying until `deadline` (the agent
    serves one host at a time: the forward drops a connection nobody answers)."""
    while True:
        raw = None
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            return raw, _lines(raw, 1, timeout=5)[0]
        except (AssertionError, OSError, ValueError):
            if raw is not None:
                raw.close()
            assert time.monotonic() < deadline, "no hello"
            time.sleep(0.3)


def _closed(sock, timeout=30):
    """Whether the agent closed the connection (recv gives b"" or a reset) in time."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


def test_qemu_serve_tcp_token_and_idle_timeout():
    """`serve --tcp P --token-file \\pmulab\\token.txt --idle-timeout 3`: a host with the token
    is served; once it falls silent for 3 s its connection is closed (bye "idle-timeout")
    and a second host, which was waiting, gets its turn. Hosts without the token or with
    another are refused (error "unauthorized", bye, connection closed) and logged; the
    token appears nowhere in what the agent sends or prints."""
    with tempfile.TemporaryDirectory() as td:
        tf = os.path.join(td, "token.txt")
        with open(tf, "w") as f:
            f.write(TOKEN + "\n")
        agent = Agent.qemu(["--no-build", "--smp", "1"], timeout=300, tcp=True, token_file=tf,
                           serve_args=("--idle-timeout", "3"))
    port = agent.tcp_port
    try:
        assert agent.hello["token_required"] is True, agent.hello
        assert agent.request("version").status == 0
        silent_since = time.monotonic()
        # The first host says nothing more: a second host is served once 3 s have passed.
        second, hello = _raw_hello(port, time.monotonic() + 60)
        assert hello["type"] == "hello" and hello["token_required"] is True, hello
        assert time.monotonic() - silent_since >= 3.0
        bye = agent.read_record(timeout=10)
        assert bye == {"type": "bye", "id": None, "reason": "idle-timeout"}, bye
        # The second host has no token: refused, and its connection closed.
        second.sendall(b'{"id":1,"cmd":"version"}\n{"id":2,"cmd":"version"}\n')
        recs = _lines(second, 3)
        assert recs[0]["type"] == "error" and recs[0]["code"] == "unauthorized", recs
        assert recs[0]["message"].startswith("request refused: no token; "), recs
        assert recs[0]["message"].endswith("; the connection is closed"), recs
        assert recs[1:] == [{"type": "done", "id": 1, "status": 1},
                            {"type": "bye", "id": None, "reason": "unauthorized"}], recs
        assert _closed(second)
        second.close()
        # A host that connects and closes before the agent gets to it (a port scan) is
        # dropped; serving goes on (it used to end with "TCP4 Receive: EFI_CONNECTION_FIN").
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
        time.sleep(1)
        # A third with a wrong token: the same as the second.
        third, _ = _raw_hello(port, time.monotonic() + 60)
        third.sendall(json.dumps({"id": 3, "token": TOKEN[:-1], "cmd": "version"}).encode() + b"\n")
        recs = _lines(third, 3)
        assert recs[0]["code"] == "unauthorized" and "a wrong token" in recs[0]["message"], recs
        assert _closed(third)
        third.close()
        # The last host has it, and stops the agent.
        last = Agent.tcp("127.0.0.1", port, timeout=120, token=TOKEN)
        assert last.run(asm="add rax, rbx", events=["tsc"], reps=3).status == 0
        assert last.close() == 0
    finally:
        agent.link = None
        status = agent.close(timeout=120)
    assert status == 0, (status, agent.console[-10:])
    console = "\n".join(agent.console)
    assert "pmulab serve: requests must carry the pre-shared token" in console, console
    assert "no --token-file" not in console, console
    assert "pmulab serve: the host sent nothing for 3 s (--idle-timeout); closed its connection" in console, console
    assert "pmulab serve: refused request 1 (no token); closing the connection" in console, console
    assert "pmulab serve: refused request 3 (a wrong token); closing the connection" in console, console
    assert console.count("closed the connection of a host without the token; listening again") == 2, console
    assert TOKEN[:8] not in console and TOKEN[:8] not in " ".join(agent._stderr), console


def test_qemu_serve_tcp_idle_without_a_host():
    """A campaign of two `serve --tcp P --idle 1` lines with the NIC and nobody
    connecting: each stops after a second (the second one can listen on the same port
    again: the first gave it back), and the boot powers off with status 0."""
    from pmulab.client import free_tcp_port
    port = free_tcp_port()
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "serve.cfg")
        with open(cfg, "w") as f:
            f.write(f"serve --tcp {port} --idle 1\nserve --tcp {port} --idle 1 --once\n")
        r = run_qemu(smp="1", timeout=120, config=cfg, extra=["--tcp", str(port)])
    assert r.rc == 0, r
    # OVMF binds nothing to the NIC by itself (it connects the boot disk only); pmulab
    # connects it and the network stack appears (the second time it is there already).
    assert ("pmulab serve: network handles (SNP, MNP, IP4, TCP4 service): 0, 0, 0, 0 as the firmware left them; "
            "3, 1, 1, 1 after connecting 1 PCI network controller") in r.out, r
    assert ("pmulab serve: network handles (SNP, MNP, IP4, TCP4 service): 3, 1, 1, 1 as the firmware left them; "
            "3, 1, 1, 1 after connecting 1 PCI network controller") in r.out, r
    listening = f"pmulab serve: listening on TCP 10.0.2.15:{port} (NIC 52:54:00:12:34:56, 1 of 1 with TCP4)"
    assert r.out.count(listening) == 2, r
    assert r.out.count("pmulab serve: no host connected within --idle 1 s") == 2, r
    assert r.out.count("pmulab serve: stopped after 0 requests") == 2, r


def test_qemu_serve_tcp_dhcp():
    """`serve --tcp P --addr dhcp`: the firmware's IPv4 policy set to DHCP, the lease from
    QEMU's user-mode network (10.0.2.15) within the bounded wait, and a host served on it."""
    from pmulab.client import free_tcp_port
    port = free_tcp_port()
    r = run_qemu("serve", "--tcp", str(port), "--addr", "dhcp", "--idle", "1", smp="1", timeout=120,
                 extra=["--tcp", str(port)])
    assert r.rc == 0, r
    listening = f"pmulab serve: listening on TCP 10.0.2.15:{port} (DHCP, NIC 52:54:00:12:34:56, 1 of 1 with TCP4)"
    assert listening in r.out, r
    assert "pmulab serve: no host connected within --idle 1 s" in r.out, r


def test_qemu_serve_tcp_once_powers_off_when_the_host_goes_away():
    """`serve --tcp P --once --shutdown`: a host that closes without `stop` ends serving
    cleanly; pmulab powers off with status 0."""
    agent = Agent.qemu(["--no-build", "--smp", "1", "--icount", "7"], timeout=300, tcp=True, serve_args=("--once",))
    try:
        assert agent.run(asm="add rax, rbx", events=["tsc"], reps=3).counts == {"tsc": 128.0}
        agent.link.close()
        agent.link = None
        agent.proc.wait(120)
    finally:
        status = agent.close(timeout=60)
    assert status == 0, (status, agent.console[-10:])
    assert "pmulab serve: the host went away (--once)" in agent.console, agent.console
    assert "pmulab serve: stopped after 1 requests" in agent.console, agent.console


def test_qemu_serve_tcp_chooses_the_nic():
    """Two NICs: `--nic 1` listens on the second (its MAC in the link), `--nic 2` is a
    clear usage error naming how many there are."""
    from pmulab.client import free_tcp_port
    port = free_tcp_port()
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "nic.cfg")
        with open(cfg, "w") as f:
            f.write(f"serve --tcp {port} --idle 1 --nic 1\nserve --tcp {port} --idle 1 --nic 2\n")
        r = run_qemu(smp="1", timeout=120, config=cfg,
                     extra=["--tcp", str(port), "--qemu-arg=-netdev", "--qemu-arg=user,id=n1,restrict=on",
                            "--qemu-arg=-device", "--qemu-arg=virtio-net-pci,netdev=n1,romfile=,mac=52:54:00:00:00:02"])
    assert r.rc == 2, r
    assert ("pmulab serve: network handles (SNP, MNP, IP4, TCP4 service): 0, 0, 0, 0 as the firmware left them; "
            "6, 2, 2, 2 after connecting 2 PCI network controllers") in r.out, r
    assert f"pmulab serve: listening on TCP 10.0.2.15:{port} (NIC 52:54:00:00:00:02, 2 of 2 with TCP4)" in r.out, r
    assert r.diag() == ["pmulab: error: \\pmulab\\pmulab.cfg:2: serve --tcp: --nic 2: the firmware has 2 network "
                        "interfaces with TCP4 (0-1)"], r
