"""QEMU boots of the PMU interrupt's NMI path (docs/sampling.md "The NMI path"): TCG has no
PMU, so no PMI ever fires; selftest's nmi-path check sends the measuring CPU NMIs from another
CPU while code runs with pmulab's PMI handler attached. On the BSP and on the APs under OVMF:
the handler sees every NMI (foreign: nothing overflowed), takes a #GP inside it, passes it on;
half the NMIs are sent into the running handler after its #GP and must wait for its IRETQ
(an IRETQ from the #GP would let them nest: the check FAILs then, "32 NMIs arrived while the
PMI handler ran"); the code's registers, XMM0-15 and DF, the LVT entry and the NMI routing
come out intact."""

import json
import os
import re
import tempfile

from pmulab_test import run_qemu

QEMU = True

NMIS = 64
PASS_DETAIL = re.compile(
    r"^64 NMIs in [1-9][0-9]* loops of the code, half sent into the running handler after its #GP \(WRMSR 0x6e1 "
    r"<- 0x100000000\) and held until its IRETQ; each foreign, passed on; registers, XMM0-15, DF, LVT entry "
    r"\(0x10000\), routing intact$")


def _boot(lines, smp, **kw):
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    try:
        return run_qemu(config=f.name, smp=smp, **kw)
    finally:
        os.unlink(f.name)


# -smp 3: the check on the BSP (an AP sends) and on both APs (the BSP sends); afterwards the
# NMI goes where it went before: the watchdog still stops code that never ends, on every
# CPU, and every CPU measures again.
def test_qemu_nmi_path_on_the_bsp_and_the_aps_then_the_watchdog_still_works():
    r = _boot(["selftest --cpu all --json",
               "run --code ebfe --name spin --cpu all --timeout 1 --json",
               "run --code 4801d8 --name after --cpu all --json"], smp=3, timeout=300)
    recs = [json.loads(l) for l in r.out.splitlines() if l.startswith("{")]
    # Without -icount (which would run one vCPU at a time) TCG's TSC follows the host clock:
    # on a loaded host selftest's timing comparisons (TSC ticks of nop, U vs 2U, ...) can
    # FAIL, which makes the selftest line exit 1. Only those may; this test is the NMI path's.
    failed = [x for x in recs if x["type"] == "check" and x["status"] == "FAIL"]
    timing = ("empty kernel measures 0 per iteration", "U vs 2U linearity for nop (U = 1000 and 2000)",
              "basic mode (0 and U copies) agrees with U/2U for nop",
              "loop overhead cancels: nop with --loop 10 agrees with U/2U",
              "interrupts masked via the local APIC LVT (--irq lvt) agree with cli for nop")
    assert all(x["name"] in timing for x in failed), failed
    assert r.rc == (1 if failed else 2), r  # the spins are the user's error, as in test_qemu_usercode.py
    nmi = [x for x in recs if x["type"] == "check" and x["name"] == "nmi-path"]
    assert [x["cpu"] for x in nmi] == [0, 1, 2], nmi
    for x in nmi:
        assert x["status"] == "PASS" and PASS_DETAIL.match(x["detail"]), x
    summary = [x for x in recs if x["type"] == "summary"]
    assert summary and summary[0]["failed"] == len(failed), summary
    errors = [x for x in recs if x["type"] == "error"]
    assert len(errors) == 3 and all(e["vector"] == 2 for e in errors), errors
    for cpu in (0, 1, 2):
        assert any(f"spin on CPU {cpu} (run 0): code did not finish within 1 s (--timeout): pmulab's watchdog "
                   "stopped it (NMI) at offset 0 of the body" in e["message"] for e in errors), errors
    after = [x for x in recs if x["type"] == "result" and x["bench"] == "after"]
    assert sorted(x["cpu"] for x in after) == [0, 1, 2], r


# --trace-msr shows the handler's accesses, made inside each NMI (on the BSP and on an AP):
# every NMI's RDMSR of its status register and the WRMSR that faults, in order, printed by
# the BSP after the check's runs and before its verdict, never from the NMI.
def test_qemu_trace_msr_shows_the_nmi_handlers_accesses():
    r = run_qemu("--trace-msr", "selftest", "--cpu", "all", smp=2, timeout=180)
    assert r.rc == 0, [l for l in r.out.splitlines() if l.startswith("FAIL")] or r
    lines = r.out.splitlines()
    for cpu in (0, 1):
        verdict = [i for i, l in enumerate(lines) if l.startswith(f"PASS: nmi-path [CPU {cpu}]: ")]
        assert len(verdict) == 1, r
        read = f"msr: CPU {cpu} RDMSR MSR 0x80b (0x80b) -> 0x0"
        fault = f"msr: CPU {cpu} WRMSR IA32_PKRS (0x6e1) <- 0x100000000: #GP (general protection)"
        mine = [(i, l) for i, l in enumerate(lines) if l in (read, fault)]
        assert [l for _, l in mine] == [read, fault] * NMIS, mine
        assert all(i < verdict[0] for i, _ in mine), r
        # Contiguous: nothing printed in between, and CPU 1's after CPU 0's verdict.
        assert mine[-1][0] - mine[0][0] == 2 * NMIS - 1, mine[:3]
        if cpu == 1:
            assert mine[0][0] > [i for i, l in enumerate(lines) if l.startswith("PASS: nmi-path [CPU 0]")][0]


# One CPU: nobody can send the NMIs; the check says so.
def test_qemu_nmi_path_skips_with_one_cpu():
    r = run_qemu("selftest", smp=1, json_mode=True, timeout=120)
    assert r.rc == 0, r
    nmi = [x for x in r.records("check") if x["name"] == "nmi-path"]
    assert nmi == [{"type": "check", "name": "nmi-path", "cpu": 0, "status": "SKIP",
                    "detail": "one CPU: no other CPU can send the NMIs"}], nmi
