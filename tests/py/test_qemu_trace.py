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


def test_qemu_trace_msr_programming_and_restore_without_the_hypervisor_bit():
    # With CPUID.01H:ECX[31] cleared, QEMU's `max` model is a bare-metal AMD family >= 10h to
    # pmulab, which then assumes the 4 legacy counters; TCG reads them as 0 and drops the
    # writes, so the counts are 0 but the whole programming sequence and its restore run.
    # Without the hypervisor bit pmulab does not use the debug port: its output is on the
    # serial console only, and run-qemu.sh cannot see its exit status (125).
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as td:
        log = os.path.join(td, "serial.log")
        r = run_qemu("--trace-msr", "run", "--bench", "nop", "--events", "instructions", "--reps", "2",
                     "--warmup", "1", smp=1, cpu="max,-hypervisor", extra=("--serial-log", log), timeout=120)
        with open(log, "rb") as f:
            text = f.read().decode("latin-1")
    trace = [l.strip() for l in text.splitlines() if l.strip().startswith("msr: ")]
    assert trace, (r, text[-2000:])
    i_save = trace.index("msr: CPU 0 RDMSR PerfEvtSel0 (0xc0010000) -> 0x0: clear")
    i_ctr = trace.index("msr: CPU 0 WRMSR PerfCtr0 (0xc0010004) <- 0x0")
    i_sel = trace.index("msr: CPU 0 WRMSR PerfEvtSel0 (0xc0010000) <- 0x300c0: event=0x0c0 umask=0x00 usr os")
    i_runs = trace.index("msr: CPU 0: each of 6 runs of the region (interrupts masked):")
    # Saved first, the counter written while EN is clear, EN set only by the generated code.
    assert i_save < i_ctr < i_sel < i_runs, trace
    assert trace[i_runs + 1] == ("msr: CPU 0   WRMSR PerfEvtSel0 (0xc0010000) <- 0x4300c0 [generated code]: "
                                 "event=0x0c0 umask=0x00 usr os en"), trace
    # The restore, last: the counter and then the select back to what was saved.
    assert trace[-2:] == ["msr: CPU 0 WRMSR PerfCtr0 (0xc0010004) <- 0x0",
                          "msr: CPU 0 WRMSR PerfEvtSel0 (0xc0010000) <- 0x0: clear"], trace
    assert any(l.strip().startswith("nop ") and " instructions " in l for l in text.splitlines()), text[-2000:]


def test_qemu_trace_msr_keeps_the_tsc_frequency_measured_against_efi_stall():
    # TCG's CPUID has no leaf 15H/16H: the TSC frequency is measured against EFI Stall(),
    # which --trace-msr's platform wrapper must pass through (it once returned "no firmware
    # timer", and the records said tsc_hz null). Under -icount 7 it lands near 1000 MHz.
    r = run_qemu("--trace-msr", "info", smp=1, icount=7, json_mode=True, timeout=120)
    assert r.rc == 0, r
    cpus = r.records("cpu")
    assert cpus, r
    for c in cpus:
        assert c["tsc_source"] == "efi_stall", c
        assert 990_000_000 <= c["tsc_hz"] <= 1_010_000_000, c
