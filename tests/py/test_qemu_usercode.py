"""QEMU boots of `run --code`: user machine code through the measurement engine.

The oracle (see test_qemu_measure.py): under -icount shift=7 the TSC advances
exactly 128 per guest instruction with interrupts masked, so code of N
instructions measures exactly 128 x N per iteration, on the BSP and on an AP,
whatever the options around it (init blocks, --loop, --basic, --align-offset,
--drain-frontend, --initial-warmup, a taken jump, multi-byte NOPs, an AVX2
instruction under -cpu max). Faults in user code are reported with the vector and
the place, on the BSP and on the APs, and the campaign goes on; so it does after code
that never ends (the --timeout watchdog), also under `pmulab serve`.
"""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT, run_qemu, shell_image

QEMU = True

TICK = 128
EXACT_BSP = ("per_iteration", "min", "median", "avg", "trimmed", "max")
EXACT_AP = ("per_iteration", "min", "median")

# (label, options, instructions per iteration)
EXACT = [
    ("add", "--code 4801d8", 1),
    ("imul", "--code 480fafc0", 1),
    ("nop5", "--code 0f1f440000", 1),
    ("nop9", "--code 660f1f840000000000", 1),
    ("two", "--code 4801d8_4801d9", 2),        # '_', ' ' and ':' may separate bytes
    ("jmp", "--code eb00", 1),                  # a taken jump to the next instruction
    ("jmpover", "--code eb019090", 2),          # jmp over one nop, then a nop
    ("loop", "--code 4801d8 --loop 10 --unroll 20", 1),
    ("basic", "--code 4801d8 --basic", 1),
    ("init", "--code 480fafc0 --init 48c7c00100000048c7c302000000", 1),
    ("late", "--code 4801d8 --late-init 4831c04831db --init 90", 1),
    ("once", "--code 4801d8 --one-time-init 4831c0", 1),
    ("align", "--code 4801d8 --align-offset 5", 1),
    ("drain", "--code 4801d8 --drain-frontend --initial-warmup 2", 1),
    ("all", "--code 4801d8 --init 90 --late-init 90 --loop 3 --basic --align-offset 63 --drain-frontend", 1),
    ("nomem", "--code 4801d8 --no-mem", 1),
    ("nomemall", "--code 4801d8eb00 --no-mem --loop 7 --basic --late-init 4831c0 --align-offset 9", 2),
    ("avx2", "--code c5f5fec2", 1),             # vpaddd ymm0, ymm1, ymm2
    ("stack", "--code 5058", 2),                # push rax; pop rax on the private stack
    ("scratch", "--code 49890e48890f48890e48894d00", 4),  # stores through R14, RDI, RSI, RBP
    # Pause/resume markers (pause_counting / resume_counting): what lies between them is
    # not counted, and the markers' own cost cancels.
    ("marks", "--code 043f81c2b113b5f0909090043f81c2b113b5e04801d8", 1),
    ("marks2", "--code 4801d8043f81c2b113b5f090043f81c2b113b5e0043f81c2b113b5f09090043f81c2b113b5e04801d8 --loop 3 --basic", 2),
    ("marksjmp", "--code 4801d8043f81c2b113b5f0eb00043f81c2b113b5e0 --serialize cpuid --init 9090 --late-init 90", 1),
    ("marksonly", "--code 043f81c2b113b5f04801d8043f81c2b113b5e0", 0),
]

# (label, options, vector, place)
FAULTS = [
    ("ud2", "--code 0f0b", 6, "offset 0 of the body (copy 1 of 100)"),
    ("div0", "--code 4831c948f7f1", 0, "offset 3 of the body (copy 1 of 100)"),
    ("wrmsr", "--code b9e1060000ba010000000f30", 13, "offset 10 of the body (copy 1 of 100)"),
    ("noncanon", "--code 48b80000000000000080488b00", 13, "offset 10 of the body (copy 1 of 100)"),
    ("pf", "--code 48b80000000000700000488b00", 14, "offset 10 of the body (copy 1 of 100)"),
    # Page 0 and the guard pages around the scratch areas are not present while code runs.
    ("null", "--code 31c0488b00", 14, "offset 2 of the body (copy 1 of 100)"),      # mov rax, [0]
    ("nullst", "--code 31c0488900", 14, "offset 2 of the body (copy 1 of 100)"),    # mov [0], rax
    ("guardlo", "--code 498b86f8fff7ff", 14, "offset 0 of the body (copy 1 of 100)"),  # [r14 - 512K - 8]
    ("guardhi", "--code 498b8600000800", 14, "offset 0 of the body (copy 1 of 100)"),  # [r14 + 512K]
    ("guardsp", "--code 48898424f8fff7ff", 14, "offset 0 of the body (copy 1 of 100)"),  # [rsp - 512K - 8]
    ("bp", "--code 90cc", 3, "offset 0 of the body (copy 2 of 100)"),  # int3 is a trap: RIP is after it
    ("initud", "--code 90 --init 90900f0b", 6, "offset 2 of the init block"),
    ("lateud", "--code 90 --late-init 0f0b", 6, "offset 0 of the late-init block"),
    ("onceud", "--code 90 --one-time-init 900f0b", 6, "offset 1 of the one-time-init block"),
]


def _campaign(lines, cpu=None, smp=2):
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        return run_qemu(config=path, icount=7, smp=smp, timeout=300, cpu=cpu)
    finally:
        os.unlink(path)


def test_qemu_user_code_is_exact_on_bsp_and_ap():
    lines = [f"run {opts} --name {label} --cpu all --json" for label, opts, _ in EXACT]
    r = _campaign(["info --json"] + lines)
    assert r.rc == 0, r
    # `info` says which vector extensions user code can use (-cpu max: up to AVX2).
    for c in r.records("cpu"):
        assert {"sse2", "avx", "avx2"} <= set(c["vector_extensions"]), c
        assert "avx512f" not in c["vector_extensions"], c
    got = {}
    for rec in r.records("result"):
        got[(rec["bench"], rec["cpu"])] = rec
    for label, opts, n in EXACT:
        for cpu in (0, 1):
            rec = got.get((label, cpu))
            assert rec, f"{label} on CPU {cpu} missing: {r}"
            want = TICK * n
            for k in EXACT_BSP if cpu == 0 else EXACT_AP:
                assert rec[k] == want, f"{label} CPU {cpu}: {k} = {rec[k]}, want {want}: {rec}"
            assert rec["fraction"] == [want, 1], rec
            assert rec["code"] == label and "instructions_per_iteration" not in rec, rec
            assert rec["r14_size"] == 1 << 20 and rec["r14"] > 0 and rec["r14"] % 4096 == 0, rec
    add = got[("add", 0)]
    assert add["code_bytes"] == 3 and add["code_fnv1a64"] == "48f39c19cd4acf2e", add
    assert got[("init", 0)]["init_bytes"] == 14 and got[("late", 1)]["late_init_bytes"] == 6
    assert got[("once", 0)]["one_time_init_bytes"] == 3
    assert got[("align", 0)]["align_offset"] == 5 and got[("drain", 0)]["drain_frontend"] is True
    assert got[("loop", 0)]["iterations"] == 200 and got[("basic", 0)]["iterations"] == 100


def _faults_reported_and_survived(cpus, smp=2):
    sel = ",".join(str(c) for c in cpus)
    lines = [f"run {opts} --name {label} --cpu {sel} --json" for label, opts, _, _ in FAULTS]
    lines.append("run --code 4801d8 --name after --cpu all --json")
    r = _campaign(lines, smp=smp)
    assert r.rc == 2, r  # the first failure decides: code faults are the user's error (usage)
    errors = [e["message"] for e in r.records("error")]
    for e in r.records("error"):  # each a usage error with the vector as a field
        label = e["message"].split(" on CPU ")[0].split(": ")[-1]
        assert e["code"] == "invalid argument" and e["vector"] == {f[0]: f[2] for f in FAULTS}[label], e
    for cpu in cpus:
        for label, _, vector, place in FAULTS:
            hits = [e for e in errors if f"{label} on CPU {cpu} (run 0): code raised" in e]
            assert len(hits) == 1, (label, cpu, errors)
            assert f"(vector {vector}) at {place}" in hits[0], hits[0]
    assert len(errors) == len(cpus) * len(FAULTS), errors
    assert any("error code 0x0" in e for e in errors if "wrmsr on CPU" in e), errors
    assert all("CR2 0x700000000000" in e for e in errors if "pf on CPU" in e), errors
    # Through a null pointer: #PF at CR2 0, a read (error code 0) and a write (W/R, bit 1),
    # not present (P, bit 0, clear): pmulab no longer writes physical page 0.
    null = "CR2 0x0 (page 0, not present while code runs: a null pointer?), error code 0x"
    assert all(e.endswith(null + "0") for e in errors if "null on CPU" in e), errors
    assert all(e.endswith(null + "2") for e in errors if "nullst on CPU" in e), errors
    # One byte below R14's area (its first page's last quadword), its end, below the stack.
    cr2 = {}
    for e in errors:
        label = e.split(" on CPU ")[0].split(": ")[-1]
        if label.startswith("guard"):
            cr2.setdefault(label, []).append(int(e.split("CR2 0x")[1].split(",")[0], 16))
    assert all(a % 4096 == 4088 and a > 4096 for a in cr2["guardlo"] + cr2["guardsp"]), cr2
    assert all(a % 4096 == 0 and a > 4096 for a in cr2["guardhi"]), cr2
    assert all("a trap: the place is the instruction after" in e for e in errors if "bp on CPU" in e), errors
    # pmulab goes on: the next command measures exactly on every CPU.
    after = [rec for rec in r.records("result") if rec["bench"] == "after"]
    assert sorted(rec["cpu"] for rec in after) == list(range(smp)), r
    for rec in after:
        assert rec["median"] == TICK and rec["min"] == TICK, rec


# Faults on the BSP: every vector and block, then pmulab goes on measuring on every CPU.
def test_qemu_faults_in_user_code_on_the_bsp_are_reported_and_survived():
    _faults_reported_and_survived([0])


# Faults on both APs of -smp 3: every vector and block on each (18 AP faults in one
# boot), then exact results on every CPU. (The fault reports were once built with an
# allocating string on the AP, whose pool allocation changed the BSP's TPL and made its
# next MP Services wait fail; the AP allocation guard now turns any allocation in an AP
# job into an internal error, exit status 4.)
def test_qemu_faults_in_user_code_on_the_aps_are_reported_and_survived():
    _faults_reported_and_survived([1, 2], smp=3)


# Code that never ends (jmp $ with interrupts masked) in every block, on the BSP and on
# both APs of -smp 3: pmulab's watchdog stops each job after --timeout (firmware time)
# with an NMI: on an AP sent by the BSP, on the BSP by a halted AP that armed its local
# APIC timer. Each is an error record naming the block and the offset, and every CPU
# measures afterwards. Without -icount: under -icount with 3 vCPUs QEMU's round-robin
# scheduler can starve the woken watcher while the BSP spins (seen here about 2 runs in
# 3); that the halted watcher leaves the BSP's runs exact (min to max) under -icount is
# test_qemu_user_code_is_exact_on_bsp_and_ap (the default --timeout arms it for every
# BSP job). `info` names the vector extensions in text too.
HANGS = [
    ("spin", "--code ebfe", "offset 0 of the body (copy 1 of 100)"),
    ("spinlate", "--code 90 --late-init 90ebfe", "offset 1 of the late-init block"),
    ("spininit", "--code 90 --init ebfe", "offset 0 of the init block"),
    ("spinonce", "--code 90 --one-time-init 9090ebfe", "offset 2 of the one-time-init block"),
    ("spinloop", "--code 4801d8ebfe --loop 5", "offset 3 of the body (copy 1 of 100)"),
]


def test_qemu_code_that_never_ends_is_stopped_on_the_bsp_and_the_aps():
    lines = ["info"]
    lines += [f"run {opts} --name {label} --cpu all --timeout 2 --json" for label, opts, _ in HANGS]
    lines.append("run --code 4801d8 --name after --cpu all --json")
    lines.append("msr read 0x1b --cpu 2 --json")
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    try:
        r = run_qemu(config=f.name, smp=3, timeout=300)
    finally:
        os.unlink(f.name)
    assert r.rc == 2, r  # as for faults: the code is the user's error
    assert "vector extensions (run --code): sse sse2 sse3 ssse3 sse4.1 sse4.2 avx fma avx2\n" in r.out, r.out
    recs = [json.loads(l) for l in r.out.splitlines() if l.startswith("{")]  # after info's text
    errors = [e["message"] for e in recs if e["type"] == "error"]
    assert all(e["vector"] == 2 for e in recs if e["type"] == "error"), recs  # the NMI's
    assert len(errors) == 3 * len(HANGS), errors
    for cpu in (0, 1, 2):
        for label, _, place in HANGS:
            hits = [e for e in errors if f"{label} on CPU {cpu} (run 0): " in e]
            assert len(hits) == 1, (label, cpu, errors)
            assert ("code did not finish within 2 s (--timeout): pmulab's watchdog stopped it (NMI) at "
                    f"{place}, RIP 0x") in hits[0], hits[0]
    after = [rec for rec in recs if rec["type"] == "result" and rec["bench"] == "after"]
    assert sorted(rec["cpu"] for rec in after) == [0, 1, 2], r
    for rec in after:
        # TCG time, not -icount: the TSC follows the host clock, and one ADD per iteration
        # can difference to 0 (or a fraction of a tick either way). What matters is that
        # every CPU measures again after its hang, with a sane value and no error.
        assert isinstance(rec["median"], (int, float)) and -TICK < rec["median"] < 100 * TICK, rec
    assert [m["cpu"] for m in recs if m["type"] == "msr"] == [2], r


# The lab agent survives code that never ends, on the BSP and on an AP, and measures
# afterwards (without -icount, as above).
def test_qemu_agent_survives_code_that_never_ends():
    import sys
    from pmulab.client import Agent
    agent = Agent.qemu(["--no-build", "--smp", "2"], timeout=300)
    try:
        for cpu in (0, 1):
            ans = agent.request(f"run --code ebfe --name spin --cpu {cpu} --timeout 1")
            assert ans.done["status"] == 2, ans.records
            assert (f"spin on CPU {cpu} (run 0): code did not finish within 1 s (--timeout): pmulab's "
                    "watchdog stopped it (NMI) at offset 0 of the body") in ans.errors[0]["message"], ans.errors
            for c in (0, 1):
                ok = agent.run(asm="add rax, rbx", events=["tsc"], reps=3, cpu=c)
                assert ok.status == 0 and len(ok.results) == 1 and ok.results[0]["cpu"] == c, ok.records
    finally:
        status = agent.close()
    assert status == 0, (status, agent.console[-10:])


# The AP workers go back to MP Services when pmulab returns to the firmware: started
# twice from the shell in one boot, the second pmulab starts its workers on every AP
# again. (Debian's OVMF restarts an AP on StartupThisAP even when it thinks it busy,
# so this shows that a second pmulab works, not on its own that the first one's
# workers returned.)
def test_qemu_ap_workers_return_to_the_firmware():
    with tempfile.TemporaryDirectory() as td:
        img = shell_image(td, "fs0:\r\n\\pmulab\\app.efi run --code 4801d8 --name first --cpu all --json\r\n"
                              "\\pmulab\\app.efi msr read 0x1b --cpu all --json \"--shutdown\"\r\n")
        r = run_qemu(smp=3, image=img, timeout=120)
    assert r.rc == 0, r
    assert sorted(x["cpu"] for x in r.records("result")) == [0, 1, 2], r
    assert sorted(x["cpu"] for x in r.records("msr")) == [0, 1, 2], r
    assert not r.records("error"), r


def test_qemu_code_file_and_usage_errors():
    with tempfile.TemporaryDirectory() as td:
        chain = os.path.join(td, "chain.bin")
        with open(chain, "wb") as f:
            f.write(bytes.fromhex("480fafc04801d8"))  # imul rax, rax; add rax, rbx
        init = os.path.join(td, "init.bin")
        with open(init, "wb") as f:
            f.write(bytes.fromhex("48c7c001000000"))
        cfg = os.path.join(td, "pmulab.cfg")
        with open(cfg, "w") as f:
            f.write("run --code-file \\pmulab\\code\\chain.bin --init-file /pmulab/code/init.bin --name chain "
                    "--cpu all --json\n"
                    "run --code-file \\pmulab\\code\\missing.bin --json\n"
                    "--shutdown\n")
        # Bad hex needs no boot: the campaign check (here on the host, the same code
        # the target runs first) refuses it with its line, and nothing runs.
        bad = os.path.join(td, "bad.cfg")
        with open(bad, "w") as f:
            f.write("run --code 90 --json\nrun --code 4801dz --json\n")
        chk = subprocess.run([os.path.join(ROOT, "build", "host", "pmulab-check"), bad], capture_output=True,
                             text=True)
        assert chk.returncode == 2 and chk.stderr == (
            f"{bad}:2: run: --code: 'z' at position 6 is not a hex digit (machine code as hex bytes, e.g. 4801d8 "
            "for add rax, rbx)\n"), chk
        img = os.path.join(td, "pmulab.img")
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, os.path.join(ROOT, "build", "pmulab.efi"),
                        cfg, f"{chain}=::/pmulab/code/chain.bin", f"{init}=::/pmulab/code/init.bin"],
                       check=True, stdout=subprocess.DEVNULL)
        r = run_qemu(smp=2, icount=7, image=img, timeout=200)
    assert r.rc == 2, r
    res = r.records("result")
    assert sorted(x["cpu"] for x in res) == [0, 1], r
    for x in res:
        assert x["bench"] == "chain" and x["code_bytes"] == 7 and x["init_bytes"] == 7, x
        assert x["median"] == 2 * TICK and x["min"] == 2 * TICK, x
    errors = [e["message"] for e in r.records("error")]
    assert any("--code-file \\pmulab\\code\\missing.bin:" in e for e in errors), errors
