"""QEMU boots of `pmulab msr`: real #GP faults under TCG are caught on the BSP and on APs."""

from pmulab_test import run_qemu

QEMU = True


def test_qemu_msr_gp_on_bsp_and_ap_is_an_error_not_a_hang():
    # IA32_PKRS (0x6E1) with EDX != 0 raises #GP under TCG; one boot covers both CPUs.
    r = run_qemu("msr", "write", "0x6E1", "0x100000000", "--unsafe", "--cpu", "all", smp=2, timeout=60)
    assert r.rc == 1, r
    assert r.out == "", r  # errors are diagnostics: stderr
    lines = [l for l in r.err.splitlines() if l.startswith("pmulab: ")]
    assert lines == [
        "pmulab: error: CPU 0: WRMSR 0x6e1 <- 0x100000000 raised #GP (general protection): "
        "the CPU rejects this MSR or value",
        "pmulab: error: CPU 1: WRMSR 0x6e1 <- 0x100000000 raised #GP (general protection): "
        "the CPU rejects this MSR or value",
    ], r


def test_qemu_msr_fault_json_and_recovery():
    # After the fault the app keeps working: the read on the same boot succeeds.
    r = run_qemu("msr", "write", "0x6E1", "0x100000000", "--unsafe", "--cpu", "1", smp=2, json_mode=True)
    assert r.rc == 1, r
    (err,) = r.records("error")
    assert err["code"] == "fault" and err["vector"] == 13, err
    assert "0x6e1" in err["message"], err


def test_qemu_msr_read_apic_base_every_cpu():
    r = run_qemu("msr", "read", "0x1b", "--cpu", "all", smp=3, json_mode=True)
    assert r.rc == 0, r
    recs = r.records("msr")
    assert [x["cpu"] for x in recs] == [0, 1, 2]
    # IA32_APIC_BASE: xAPIC at 0xFEE00000, global enable (bit 11), BSP flag (bit 8) on CPU 0 only.
    assert [x["value"] for x in recs] == ["0xfee00900", "0xfee00800", "0xfee00800"], recs


def test_qemu_msr_write_outside_pmu_needs_unsafe():
    r = run_qemu("msr", "write", "0x6E1", "1", smp=1)
    assert r.rc == 2, r
    assert "not a PMU MSR" in r.err and "--unsafe" in r.err and r.out == "", r


def test_qemu_msr_bad_arguments():
    r = run_qemu("msr", "read", "0xZZ", smp=1)
    assert r.rc == 2 and "ADDR '0xZZ' is not a number" in r.err, r
    r = run_qemu("msr", "read", "0x10", "--cpu", "9", smp=2)
    assert r.rc == 2 and "--cpu 9: there are only 2 logical processors" in r.err, r
