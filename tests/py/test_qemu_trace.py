"""QEMU boots with --trace-msr: what pmulab does to the CPU, traced on the BSP and on an AP
(recorded there in fixed storage, printed by the BSP), faults included. TCG has no PMU,
so there is no counter programming to see here (pmulab-sim shows that: test_pmulab_sim.py);
what TCG does have is checked: the RDPMC probe's #UD, RDMSRs, a WRMSR's #GP."""

from pmulab_test import run_qemu

QEMU = True


def test_qemu_trace_msr_run_on_an_ap():
    r = run_qemu("--trace-msr", "run", "--bench", "rdmsr", "--events", "tsc", "--cpu", "1", "--reps", "3", smp=2,
                 timeout=120)
    assert r.rc == 0, r
    lines = r.out.splitlines()
    trace = [l for l in lines if l.startswith("msr: ")]
    # The BSP's RDPMC probe raises #UD under TCG (no PMU), printed as it happens.
    assert any(l.startswith("msr: CPU 0 RDPMC ") and l.endswith(": #UD (invalid opcode)") for l in trace), r
    # The kernel's own instruction, probed on the AP through the fault-safe layer.
    ap = [l for l in trace if l.startswith("msr: CPU 1 RDMSR IA32_TIME_STAMP_COUNTER (0x10) -> 0x")]
    assert len(ap) == 1, r
    # Printed after the AP is done and before the result row it belongs to.
    result = [i for i, l in enumerate(lines) if l.startswith("rdmsr ")]
    assert result and lines.index(ap[0]) < result[0], r


def test_qemu_trace_msr_json_records_the_gp_on_both_cpus():
    r = run_qemu("--trace-msr", "msr", "write", "0x6E1", "0x100000000", "--unsafe", "--cpu", "all", smp=2,
                 json_mode=True, timeout=120)
    assert r.rc == 1, r
    t = [x for x in r.records("msr_trace") if x.get("msr") == "0x6e1" and x["op"] == "wrmsr"]
    assert [(x["cpu"], x["register"], x["value"], x["result"]) for x in t] == [
        (0, "IA32_PKRS", "0x100000000", "#GP"),
        (1, "IA32_PKRS", "0x100000000", "#GP"),
    ], t
    assert all(x["generated_code"] is False and x["runs"] == 0 for x in t), t
    assert len(r.records("error")) == 2, r
