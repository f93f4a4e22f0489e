"""QEMU boot (TCG, no PMU): `run --cycle-by-cycle` says why it is unavailable, exit 3,
nothing measured; on the AMD default model and on an Intel CPU model, BSP and an AP."""

from pmulab_test import run_qemu

QEMU = True

NO_PMU_AMD = ("no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
              "no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)")
NO_PMU_INTEL = ("no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU "
                "passthrough)")


def test_qemu_cycle_by_cycle_is_refused_under_tcg():
    for cpu, why in ((None, NO_PMU_AMD), ("Skylake-Client", NO_PMU_INTEL)):
        r = run_qemu("run", "--code", "4801d8", "--events", "instructions,cycles", "--cycle-by-cycle", "--cpu",
                     "all", smp=2, json_mode=True, cpu=cpu, timeout=90)
        assert r.rc == 3, r
        errors = r.records("error")
        assert [(e["code"], e["message"]) for e in errors] == [
            ("unsupported", "CPUs 0-1: cannot measure cycle by cycle: " + why)], r
        assert not r.records("cycle_by_cycle") and not r.records("result"), r
