"""run --sample ... --precise under QEMU TCG, which has no PMU and no PEBS: refused before
anything runs, with the reason (docs/sampling.md "Precise sampling (PEBS)"), exit status 3."""

from pmulab_test import run_qemu


def test_qemu_precise_says_why_pebs_is_unavailable():
    cases = (
        # qemu64 says AuthenticAMD: PEBS is Intel's; AMD's precise samples are IBS.
        (None, "CPU 0: no PEBS: --precise is Intel's PEBS; AMD's precise samples are IBS: use --sample ibs_op "
               "(or ibs_fetch) where CPUID 8000_0001H:ECX[10] enumerates it"),
        ("Skylake-Client", "CPU 0: no PEBS: no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a "
                           "hypervisor without PMU passthrough)"),
    )
    for cpu, why in cases:
        r = run_qemu("run", "--code", "498b06", "--sample", "D0.81:1009", "--precise", "--cpu", "all", smp=2,
                     json_mode=True, cpu=cpu, timeout=120)
        assert r.rc == 3, (cpu, r)
        (err,) = r.records("error")
        assert err["message"] == why, (cpu, err)
        assert r.records("samples") == [] and r.records("result") == [], (cpu, r)
    # --precise without --sample: a usage error.
    r = run_qemu("run", "--code", "498b06", "--precise", smp=1, json_mode=True, timeout=120)
    assert r.rc == 2, r
    (err,) = r.records("error")
    assert err["message"].startswith("--precise samples the --sample events precisely: give one"), err


def test_qemu_pebs_output_pt_says_why_it_is_unavailable():
    # TCG has no PEBS (and no Intel PT): --pebs-output pt is refused with the PEBS reason first.
    r = run_qemu("run", "--code", "498b06", "--sample", "D0.81:1009", "--precise", "--pebs-output", "pt", smp=1,
                 json_mode=True, cpu="Skylake-Client", timeout=120)
    assert r.rc == 3, r
    (err,) = r.records("error")
    assert err["message"] == ("CPU 0: no PEBS: no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a "
                              "hypervisor without PMU passthrough)"), err
    assert r.records("samples") == [] and r.records("result") == [], r
    # Without --precise: a usage error, nothing run.
    r = run_qemu("run", "--code", "498b06", "--sample", "D0.81:1009", "--pebs-output", "pt", smp=1, json_mode=True,
                 timeout=120)
    assert r.rc == 2, r
    (err,) = r.records("error")
    assert err["message"] == "--pebs-output pt says where --precise's PEBS records go: give --precise with it", err
