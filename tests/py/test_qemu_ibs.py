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


def test_qemu_ibs_controls_are_refused_with_the_reason():
    # --ibs-rand / --ibs-l3-miss-only (docs/sampling.md "IBS controls") on the target:
    # without an IBS sample, a usage error (2); with one, TCG's missing IBS (3).
    r = run_qemu("run", "--code", "4801d8", "--ibs-l3-miss-only", json_mode=True, timeout=120)
    assert r.rc == 2, r
    (err,) = r.records("error")
    assert err["message"] == ("--ibs-l3-miss-only is an IBS control: it needs --sample ibs_op, ibs_op_cycles or "
                              "ibs_fetch (AMD)"), err
    r = run_qemu("run", "--code", "4801d8", "--sample", "ibs_op:16", "--ibs-rand", "--ibs-l3-miss-only",
                 json_mode=True, timeout=120)
    assert r.rc == 3, r
    (err,) = r.records("error")
    assert err["message"] == "CPU 0: --sample ibs_op: this AMD CPU has no IBS: CPUID Fn8000_0001_ECX[10] (IBS) is 0"
    assert r.records("samples") == [] and r.records("result") == [], r
