"""run --sample ibs_op / ibs_fetch under QEMU TCG, which has no IBS: refused before
anything runs, with the reason (docs/sampling.md "Precise sampling (IBS)"), exit status 3.
The default qemu64 model is AuthenticAMD without CPUID Fn8000_0001_ECX[10]; an Intel model
is told to use PEBS."""

from pmulab_test import run_qemu


def test_qemu_ibs_says_why_it_is_unavailable():
    cases = (
        (None, "ibs_op", "CPU 0: --sample ibs_op: this AMD CPU has no IBS: CPUID Fn8000_0001_ECX[10] (IBS) is 0"),
        ("Skylake-Client", "ibs_fetch:4096",
         "CPU 0: --sample ibs_fetch: IBS (Instruction-Based Sampling) is AMD's; this CPU is GenuineIntel: on Intel, "
         "precise samples come from PEBS (--sample EVENT --precise)"),
    )
    for cpu, spec, msg in cases:
        r = run_qemu("run", "--code", "4801d8", "--sample", spec, "--cpu", "all", smp=2, json_mode=True, cpu=cpu,
                     timeout=120)
        assert r.rc == 3, (cpu, r)
        (err,) = r.records("error")
        assert err["message"] == msg, (cpu, err)
        assert r.records("samples") == [] and r.records("result") == [], (cpu, r)
    # The period's form is refused before any CPU is looked at: exit status 2.
    r = run_qemu("run", "--code", "4801d8", "--sample", "ibs_op:100", json_mode=True, timeout=120)
    assert r.rc == 2, r
    (err,) = r.records("error")
    assert err["message"].startswith("--sample ibs_op:100: IBS periods are multiples of 16"), err
