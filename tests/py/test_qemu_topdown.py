"""QEMU boot: `run --topdown` and `--metrics` under TCG, which has no PMU (CPUID.0AH = 0).

pmulab must say plainly why TopDown is unavailable (exit status 3, unsupported), as a
JSON error record and as a text diagnostic, and --metrics must refuse the same way.
"""

from pmulab_test import run_qemu

QEMU = True

WHY = ("--topdown: CPU 0: TopDown is unavailable: no performance counters: no architectural performance "
       "monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)")


def test_qemu_topdown_unavailable_under_tcg():
    r = run_qemu("run", "--bench", "add_indep", "--topdown", "1", "--json", cpu="Skylake-Client", smp=2,
                 timeout=90)
    assert r.rc == 3, r
    errors = r.records("error")
    assert len(errors) == 1, r
    assert errors[0]["message"] == WHY, errors[0]
    assert r.records("metric") == [], r

    t = run_qemu("run", "--bench", "add_indep", "--metrics", "IPC", cpu="Skylake-Client", smp=2, timeout=90)
    assert t.rc == 3, t
    assert "cannot count 'INST_RETIRED.ANY'" in t.err, t


def test_qemu_frequency_metric_unavailable_under_tcg():
    # frequency needs core and reference cycles: without counters it is refused with the
    # reason, not reported as a number (nor left undefined in a record).
    r = run_qemu("run", "--bench", "add_indep", "--metrics", "frequency", "--json", cpu="Skylake-Client", smp=1,
                 timeout=90)
    assert r.rc == 3, r
    (err,) = r.records("error")
    assert "cannot count 'CPU_CLK_UNHALTED.THREAD'" in err["message"], err
    assert "CPUID.0AH:EAX[7:0] = 0" in err["message"], err
    assert r.records("metric") == [], r
