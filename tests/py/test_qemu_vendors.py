"""QEMU boots with an AMD CPU model (-cpu EPYC, TCG): detection and the clean no-PMU path.

TCG's EPYC model is AuthenticAMD family 17h with no PerfCtrExtCore/PerfMonV2 enumerated,
RDPMC raises #UD and unknown MSRs read as 0: pmulab must say there are no counters,
refuse PMU events with exit status 3 and a plain message, and still measure 'tsc'.
"""

from pmulab_test import run_qemu

QEMU = True


def test_qemu_epyc_info_and_events():
    r = run_qemu("info", smp=1, cpu="EPYC")
    assert r.rc == 0, r
    assert "AuthenticAMD" in r.out and "family 0x17" in r.out, r
    assert ("PMU              : none enumerated (no PerfCtrExtCore/PerfMonV2 under a hypervisor; the 4 legacy "
            "counters are not assumed in a virtual machine)") in r.out, r
    e = run_qemu("events", smp=1, cpu="EPYC")
    assert e.rc == 0, e
    assert "no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, no PerfMonV2)" in e.out, e
    assert "RDPMC 0x0 raised #UD (invalid opcode)" in e.out, e


def test_qemu_epyc_run_instructions_unsupported_tsc_works():
    r = run_qemu("run", "--bench", "nop", "--events", "instructions", smp=1, cpu="EPYC")
    assert r.rc == 3, r
    assert "pmulab: error: CPU 0: cannot count 'instructions': no performance-monitoring counters" in r.err, r
    t = run_qemu("run", "--bench", "nop", "--events", "tsc", smp=1, cpu="EPYC")
    assert t.rc == 0, t
    assert "nop" in t.out and "tsc" in t.out, t
