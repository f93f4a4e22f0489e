"""run --sample under QEMU TCG, which has no PMU: refused before anything runs, with the
reason (docs/sampling.md "Sampling"), exit status 3."""

from pmulab_test import run_qemu

PREFIX = "CPU 0: cannot sample 'instructions': "


def test_qemu_sample_says_why_sampling_is_unavailable():
    cases = (
        (None, "no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
               "no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)"),
        ("Skylake-Client", "no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without "
                           "PMU passthrough)"),
    )
    for cpu, why in cases:
        r = run_qemu("run", "--code", "4801d8", "--sample", "instructions:1000", "--cpu", "all", smp=2,
                     json_mode=True, cpu=cpu, timeout=120)
        assert r.rc == 3, (cpu, r)
        (err,) = r.records("error")
        assert err["message"] == PREFIX + why, (cpu, err)
        assert r.records("samples") == [] and r.records("result") == [], (cpu, r)
