"""QEMU sessions of `pmulab serve` (docs/agent.md) through tools/pmulab_client.

One boot answers a few hundred requests on the second serial port: user code of N
instructions measured exactly (128 x N per iteration under -icount shift=7, on the BSP
and on an AP), malformed lines, an unknown command, a code blob that faults on the
BSP, a cancelled request, a request out of time; every answer carries its request's id
and the agent stays up to the end (it still answers, then stops cleanly: status 0).
The batch CLI (tools/pmulab-client --qemu ... --batch FILE) is the second boot.
"""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT

from pmulab.client import Agent

QEMU = True
TICK = 128
CLIENT = os.path.join(ROOT, "tools", "pmulab-client")

# (assembly, instructions per iteration)
SNIPPETS = [
    ("add rax, rbx", 1),
    ("imul rax, rbx", 1),
    ("add rax, rbx; add rcx, rdx", 2),
    ("|5", 1),
    ("|15", 1),
    ("jmp 1f; 1: nop", 2),
    ("mov rax, [rdi]", 1),
    ("3*|add rax, rbx|", 3),
]


def _done(ans):
    assert ans.done is not None, ans
    assert ans.done["id"] == ans.id, ans.done
    for r in ans.records:
        assert r["id"] == ans.id, (ans.id, r)
    return ans.done["status"]


def test_qemu_agent_session():
    agent = Agent.qemu(["--no-build", "--smp", "2", "--icount", "7"], timeout=500)
    try:
        assert agent.hello["protocol"] == 1, agent.hello
        assert agent.hello["link"] == "serial port 1 of 2", agent.hello
        sent = 0
        # 1. Valid requests, several in flight: every variant exact on the BSP, some on the AP.
        lines, expect = [], []
        for rnd in range(24):
            for text, n in SNIPPETS:
                cpu = " --cpu 1" if rnd % 6 == 5 else ""
                lines.append(f'run --asm "{text}" --events tsc --reps 3 --warmup 1{cpu}')
                expect.append((text, n, 1 if cpu else 0))
        for i, ans in agent.batch(lines):
            text, n, cpu = expect[i]
            assert _done(ans) == 0, (lines[i], ans.records)
            res = ans.results
            assert len(res) == 1, (lines[i], ans.records)
            assert res[0]["cpu"] == cpu, res[0]
            assert res[0]["event"] == "tsc"
            keys = ("per_iteration", "min", "median") if cpu else ("per_iteration", "min", "median", "max")
            for k in keys:
                assert float(res[0][k]) == TICK * n, (lines[i], k, res[0])
            sent += 1
        assert sent == 192

        # 2. Malformed lines: an error record with the id when it can be read, and status 2.
        bad = [
            ('not json at all', None, "request: expected a JSON object (at byte 1)"),
            ('{"id":"m1","cmd":"info","colour":"red"}', "m1", 'unknown field "colour"'),
            ('{"cmd":"info"}', None, 'no "id"'),
            ('{"id":"m2","cmd":"run --code-file b","blobs":{"b":"!!!!"}}', "m2", "is not base64"),
            ('{"id":"m3","cmd":"run","blobs":{"../x":"kA=="}}', "m3", "blob name '../x'"),
            ('{"id":"m4"}', "m4", 'give exactly one of "cmd", "cancel" and "stop"'),
            ('{"id":"m5","cmd":"info \\"unterminated"}', "m5", "quote"),
            ('{"id":"m6","cmd":"msr write 0x10 0 --unsafe"}', "m6", "--unsafe is refused over the wire"),
            ('{"id":"m7","cmd":"serve"}', "m7", "already serving"),
        ]
        for k, (line, rid, msg) in enumerate(bad):
            agent.send_raw(line + "\n")
            key = rid if rid is not None else None
            got = None
            while got is None:
                rec = agent.read_record()
                if rec.get("type") == "done" and rec.get("id") == key:
                    got = rec
            ans = agent._finished.pop(key)
            assert ans.done["status"] == 2, (line, ans.records, ans.done)
            errs = [r for r in ans.records if r.get("type") == "error"]
            assert errs and msg in errs[0]["message"], (line, errs)
        # A line longer than the limit is refused as a whole, and the agent reads on.
        agent.send_raw('{"id":"long","cmd":"' + "x" * (400 << 10) + '"}\n')
        rec = agent.read_record()
        while not (rec.get("type") == "done" and rec.get("id") is None):
            rec = agent.read_record()
        assert rec["status"] == 2

        # 3. An unknown command.
        ans = agent.request("frobnicate --now")
        assert _done(ans) == 2
        assert ans.errors[0]["message"] == "unknown command 'frobnicate' (try 'pmulab help')", ans.errors

        # 4. User code that faults on the BSP (ud2): an error record with the vector, status 2,
        #    and the next request is measured exactly.
        ans = agent.run(code=bytes.fromhex("0f0b"), events=["tsc"], check=False)
        assert _done(ans) == 2, ans.records  # user code at fault: exit status 2, as on the command line
        assert "code raised #UD (invalid opcode) (vector 6) at offset 0 of the body" in ans.errors[0]["message"], \
            ans.errors
        ans = agent.run(asm="add rax, rbx", events=["tsc"], reps=3)
        assert ans.counts == {"tsc": 128.0}, ans.records

        # 5. Cancelled: a long request (8 jobs) cancelled as soon as it is sent; a
        #    waiting request cancelled before it starts.
        long_cmd = "run --bench nop,empty,add_chain,add_indep --events tsc --cpu all --reps 2000"
        rid = agent.submit(long_cmd)
        waiting = agent.submit("info")
        c1 = agent.cancel(rid)
        c2 = agent.cancel(waiting)
        a1, aw = agent.collect(rid), agent.collect(waiting)
        assert a1.cancelled and a1.status == 1, (a1.done, a1.records)
        assert len(a1.results) < 8, a1.results
        assert a1.errors[-1]["code"] == "cancelled"
        assert aw.cancelled and aw.of_type("cpu") == [], aw.records
        assert agent.collect(c1).status == 0 and agent.collect(c2).status == 0
        ans = agent.request("version")
        assert _done(ans) == 0 and ans.of_type("version"), ans.records
        # Cancelling what is not there: status 1.
        assert agent.collect(agent.cancel(123456)).status == 1

        # 6. Out of time.
        ans = agent.request(long_cmd, timeout_ms=1)
        assert ans.timed_out and ans.status == 1, (ans.done, ans.records)
        assert ans.errors[-1]["code"] == "timeout"

        # 7. Still up, and still exact; then a clean stop and power-off.
        ans = agent.run(asm="imul rax, rax", init_asm="mov rax, 1", events=["tsc"], cpu=1)
        assert ans.counts == {"tsc": 128.0}, ans.records
        apic_base = agent.msr_read(0x1B)  # IA32_APIC_BASE: the xAPIC at 0xFEE00000, BSP flag (bit 8)
        assert apic_base & ~0xFFF == 0xFEE00000 and apic_base & 0x100, hex(apic_base)
        assert agent.msr_read(0x1B, cpu="all")[1] & 0x100 == 0
        cpus = agent.info()
        assert len(cpus) == 2
    finally:
        status = agent.close()
    assert status == 0, (status, agent.console[-10:])


def test_qemu_agent_batch_cli():
    with tempfile.TemporaryDirectory() as td:
        batch = os.path.join(td, "batch.txt")
        with open(batch, "w") as f:
            f.write("# a comment\n"
                    'run --asm "add rax, rbx" --events tsc --reps 3\n'
                    "\n"
                    'run --asm "imul rax, rax" --asm-init "mov rax, 1" --events tsc --cpu 1 --reps 3\n'
                    "frobnicate\n"
                    "run --code 4801d84801d8 --events tsc --reps 3\n"
                    "msr read 0x10 --cpu all\n")
        p = subprocess.run([CLIENT, "--qemu", "--no-build", "--smp", "2", "--icount", "7", "--batch", batch],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=400)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])  # the frobnicate line failed
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    done = {r["line"]: r for r in recs if r["type"] == "done"}
    assert sorted(done) == [2, 4, 5, 6, 7], done
    assert [done[n]["status"] for n in (2, 4, 5, 6, 7)] == [0, 0, 2, 0, 0], done
    for r in recs:
        assert r["id"] == done[r["line"]]["id"], r
    res = {r["line"]: r for r in recs if r["type"] == "result"}
    assert float(res[2]["per_iteration"]) == 128.0 and res[2]["bench"] == "add rax, rbx", res[2]
    assert float(res[4]["per_iteration"]) == 128.0 and res[4]["cpu"] == 1, res[4]
    assert float(res[6]["per_iteration"]) == 256.0, res[6]
    assert sorted(r["cpu"] for r in recs if r["type"] == "msr") == [0, 1]
    err = [r for r in recs if r["type"] == "error"]
    assert len(err) == 1 and err[0]["line"] == 5, err


def test_qemu_agent_client_says_why_qemu_failed():
    with tempfile.TemporaryDirectory() as td:
        batch = os.path.join(td, "b.txt")
        with open(batch, "w") as f:
            f.write("version\n")
        p = subprocess.run([CLIENT, "--qemu", "--no-build", "--cpu", "no-such-model", "--batch", batch],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 1 and p.stdout == "", p
    last = p.stderr.splitlines()[-1]
    assert last.startswith("pmulab-client: error: cannot reach the agent: "), p.stderr
    assert "unable to find CPU model 'no-such-model'" in last and "Traceback" not in p.stderr, p.stderr


def test_qemu_agent_idle_time_ends_serving():
    """`serve --idle 1` with nobody on the line: it stops after a second, says so, and
    powers off (run-qemu.sh passes --shutdown) with status 0. With one serial port the
    agent serves on it (port 0 of 1)."""
    from pmulab_test import run_qemu
    r = run_qemu("serve", "--idle", "1", smp="1", timeout=120)
    assert r.rc == 0, r
    assert "pmulab serve: serving on serial port 0 of 1 (JSON Lines, docs/agent.md)" in r.out, r
    assert "pmulab serve: stopped after 0 requests" in r.out, r
    r = run_qemu("serve", "--serial", "3", smp="1", timeout=120)
    assert r.rc == 2, r
    assert r.diag() == ["pmulab: error: serve: --serial 3: the firmware has 1 serial port (0-0)"], r


def test_qemu_agent_results_and_unsafe_when_started_so():
    """`serve --results --unsafe`: requests write results files on the boot volume as
    on the command line, and `msr write --unsafe` goes through to the CPU (TCG raises
    #GP for WRMSR 0x6E1 with EDX != 0: status 1, not a refusal)."""
    with tempfile.TemporaryDirectory() as td:
        keep = os.path.join(td, "keep")
        os.mkdir(keep)
        agent = Agent.qemu(["--no-build", "--smp", "1", "--keep", keep], timeout=300,
                           serve_args=("--results", "--unsafe"))
        try:
            ans = agent.request("msr write 0x6E1 0x100000000 --unsafe")
            assert ans.status == 1 and "raised #GP" in ans.errors[0]["message"], ans.records
            ans = agent.run(asm="add rax, rbx", events=["tsc"], reps=3)
            assert ans.results, ans.records
        finally:
            assert agent.close() == 0
        out = os.path.join(td, "results")
        r = subprocess.run([os.path.join(ROOT, "tools", "pmulab-lab"), "pull", os.path.join(keep, "disk.img"),
                            "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        names = sorted(os.listdir(out))
        assert names == ["0001-msr.csv", "0001-msr.jsonl", "0002-run.csv", "0002-run.jsonl"], names
        with open(os.path.join(out, "0002-run.jsonl")) as f:
            recs = [json.loads(l) for l in f]
        assert recs[0]["type"] == "meta" and "--code-file code" in recs[0]["command_line"], recs[0]
        assert recs[1]["type"] == "result" and recs[1]["bench"] == "add rax, rbx", recs[1]
