"""QEMU boots with one CPU (`--smp 1`): code that never ends on the BSP alone is stopped by
pmulab's timer watchdog (src/efi/bsp_watchdog.cpp: an HPET comparator routed through the
I/O APIC as an NMI, docs/measure.md "The watchdog"), with the same record and exit status
as the AP watchdog's, and the firmware's HPET and I/O APIC state restored (each job reads
it back: a difference is an internal error). Before the timer watchdog these boots hung
until run-qemu.sh's timeout (nothing sends an NMI with one CPU). Without -icount, as the
other watchdog tests (TCG time).
"""

import os
import tempfile
import time

from pmulab_test import run_qemu, shell_image
from test_qemu_usercode import HANGS  # every block that never ends, and where

QEMU = True



def _stopped(msg, label, seconds, place):
    return (f"{label} on CPU 0 (run 0): code did not finish within {seconds} s (--timeout): pmulab's watchdog "
            f"stopped it (NMI) at {place}, RIP 0x") in msg


# Every block that never ends, each stopped after --timeout, then a run that measures.
def test_qemu_one_cpu_code_that_never_ends_is_stopped_and_the_next_run_works():
    lines = [f"run {opts} --name {label} --timeout 1 --json" for label, opts, _ in HANGS]
    lines.append("run --code 4801d8 --name after --json")
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    t0 = time.monotonic()
    try:
        r = run_qemu(config=f.name, smp=1, timeout=240)
    finally:
        os.unlink(f.name)
    took = time.monotonic() - t0
    assert r.rc == 2, r  # as on an AP: the code is the user's error
    errors = r.records("error")
    assert [e["vector"] for e in errors] == [2] * len(HANGS), r
    for (label, _, place), e in zip(HANGS, errors):
        assert _stopped(e["message"], label, 1, place), e
    after = [x for x in r.records("result") if x["bench"] == "after"]
    assert [x["cpu"] for x in after] == [0], r
    assert isinstance(after[0]["median"], (int, float)), after
    assert took < 200, took  # five stops of 1 s and a boot; a hang is run-qemu.sh's 240 s


# `jmp $` stopped, then pmulab returns to the UEFI shell, whose next pmulab in the same boot
# measures (the firmware's timer and interrupt state work afterwards). (run-qemu.sh ends the
# boot 5 s of wall time after a pmulab exits without --shutdown: one quick pmulab follows.)
def test_qemu_one_cpu_stop_returns_to_the_shell_and_the_next_pmulab_works():
    with tempfile.TemporaryDirectory() as td:
        img = shell_image(td, "fs0:\r\n\\pmulab\\app.efi run --code ebfe --name first --timeout 1 --json\r\n"
                              "\\pmulab\\app.efi run --code 4801d8 --name second --json \"--shutdown\"\r\n")
        r = run_qemu(smp=1, image=img, timeout=200)
    assert r.rc == 0, r  # the last pmulab's status; the first exits 2
    errors = r.records("error")
    assert len(errors) == 1, r
    assert _stopped(errors[0]["message"], "first", 1, "offset 0 of the body (copy 1 of 100)"), errors
    assert [x["bench"] for x in r.records("result")] == ["second"], r


# The lab agent with one CPU: the same stop, then it measures and shuts down normally.
def test_qemu_one_cpu_agent_survives_code_that_never_ends():
    from pmulab.client import Agent
    agent = Agent.qemu(["--no-build", "--smp", "1"], timeout=300)
    try:
        for _ in range(2):
            ans = agent.request("run --code ebfe --name spin --timeout 1")
            assert ans.done["status"] == 2, ans.records
            assert _stopped(ans.errors[0]["message"], "spin", 1, "offset 0 of the body (copy 1 of 100)"), ans.errors
            ok = agent.run(asm="add rax, rbx", events=["tsc"], reps=3, cpu=0)
            assert ok.status == 0 and len(ok.results) == 1 and ok.results[0]["cpu"] == 0, ok.records
    finally:
        status = agent.close()
    assert status == 0, (status, agent.console[-10:])


# Without an HPET (-machine hpet=off) nothing can stop code on the BSP alone: user code is
# refused before it runs, with the reason (exit status 3), and built-in kernels, which end
# by themselves, still measure.
def test_qemu_one_cpu_without_hpet_refuses_user_code_and_runs_kernels():
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("run --code ebfe --name spin --timeout 1 --json\nrun --bench nop --json\n")
    try:
        r = run_qemu(config=f.name, smp=1, timeout=120, extra=("--qemu-arg=-machine", "--qemu-arg=hpet=off"))
    finally:
        os.unlink(f.name)
    assert r.rc == 3, r
    assert [e["message"] for e in r.records("error")] == [
        "\\pmulab\\pmulab.cfg:1: spin on CPU 0: code on the BSP alone cannot be stopped if it never ends "
        "(no AP to watch it, no timer to route as an NMI), so pmulab does not run it: the firmware describes no "
        "HPET (no ACPI HPET table)"], r
    assert [(x["bench"], x["cpu"]) for x in r.records("result")] == [("nop", 0)], r
