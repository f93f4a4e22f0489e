"""Energy events under QEMU TCG, which has no RAPL (docs/measure.md "Energy (RAPL)"): the
default CPU model (AMD-like, no CPUID Fn8000_0007_EDX[14]) and an Intel model whose RAPL
MSRs TCG does not implement are refused with the reason, exit 3, nothing measured."""

from pmulab_test import run_qemu

QEMU = True


def _diag(r):
    return [l for l in r.err.splitlines() if l.startswith("pmulab: ")]


def test_qemu_default_cpu_has_no_rapl():
    r = run_qemu("run", "--bench", "add_indep", "--events", "instructions,energy-pkg", smp=1)
    assert r.rc == 3, r
    (line,) = _diag(r)
    assert line.startswith("pmulab: error: energy-pkg: CPU 0 ("), line
    assert line.endswith("has no RAPL energy counters: CPUID Fn8000_0007_EDX[14] (RAPL) is 0"), line
    assert "add_indep" not in r.out, r


def test_qemu_intel_model_rapl_is_unavailable():
    r = run_qemu("run", "--bench", "add_indep", "--events", "energy-pkg,energy-cores", smp=2, cpu="Skylake-Client")
    assert r.rc == 3, r
    (line,) = _diag(r)
    assert line.startswith("pmulab: error: energy-pkg: RAPL is unavailable on CPU 0 ("), line
    assert "RDMSR 606H (the energy unit)" in line, line
    assert "add_indep" not in r.out, r
