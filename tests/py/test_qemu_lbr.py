"""QEMU boot: `run --lbr` under TCG, which has no PMU and no last-branch records.

pmulab must refuse before anything runs, with the reason (exit status 3, unsupported),
as a JSON error record and as a text diagnostic (docs/sampling.md "Last branch records").
"""

from pmulab_test import run_qemu

QEMU = True

WHY = ("run --lbr: CPU 0 has no LBR: no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 "
       "(a hypervisor without PMU passthrough)")


def test_qemu_lbr_refused_under_tcg():
    r = run_qemu("run", "--bench", "add_indep", "--lbr", "--json", cpu="Skylake-Client", smp=1, timeout=90)
    assert r.rc == 3, r
    (err,) = r.records("error")
    assert err["message"] == WHY, err
    assert r.records("result") == [] and r.records("lbr") == [], r

    t = run_qemu("run", "--asm", "jmp 1f; nop; 1:", "--lbr", cpu="Skylake-Client", smp=1, timeout=90)
    assert t.rc == 3, t
    assert WHY in t.err, t
