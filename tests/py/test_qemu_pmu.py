"""QEMU boots of the PMU layer under TCG: no PMU, RDPMC raises #UD.

What TCG gives (measured): CPUID.0AH = 0 (also with an Intel CPU model), unknown MSRs
read as 0, RDPMC raises #UD. So `events` must say plainly that only 'tsc' can be
measured, report the RDMSR fallback with the #UD that caused it, `run` must refuse PMU
events with exit status 3 and still measure 'tsc'. Two boots, several commands each
through a pmulab.cfg campaign.
"""

import os
import tempfile

from pmulab_test import run_qemu

QEMU = True

NO_PMU_AMD = ("no performance-monitoring counters: no AMD core counters enumerated (CPUID 8000_0001H:ECX[23] = 0, "
              "no PerfMonV2) and CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)")
NO_PMU_INTEL = ("no architectural performance monitoring: CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU "
                "passthrough)")
UD = "RDPMC 0x0 raised #UD (invalid opcode)"


def _campaign(lines, **kw):
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        return run_qemu(config=path, timeout=90, **kw)
    finally:
        os.unlink(path)


def test_qemu_events_and_run_without_pmu():
    r = _campaign([
        "events --cpu all --json",
        # A malformed spec (0E.1G) would now reject the whole campaign before it runs
        # (check_campaign; test_qemu_honest.test_qemu_rejected_campaign_still_shuts_down).
        "events --check tsc --json",
        "run --bench nop --events instructions --json --reps 3",
        "run --bench nop --events tsc --cpu all --json --reps 3",
    ], smp=2)
    # The first failure decides the status: 'instructions' cannot be counted (3).
    assert r.rc == 3, r

    pmus = r.records("pmu")
    assert [p["cpu"] for p in pmus] == [0, 1], r
    for p in pmus:
        assert p["pmu"] == "none", p
        assert p["version"] == 0 and p["gp_counters"] == [] and p["fixed_counters"] == [], p
        # TCG raises #UD on RDPMC: counters would be read with RDMSR.
        assert p["counter_method"] == "rdmsr", p
        assert p["counter_method_note"] == UD, p
        assert p["reason"] == NO_PMU_AMD, p
    events = r.records("event")
    assert len(events) == 2 * 18, r
    available = [(e["cpu"], e["name"]) for e in events if e["available"]]
    assert available == [(0, "tsc"), (1, "tsc")], available
    for e in events:
        assert e["counter_method"] == "rdmsr", e
        if e["name"] != "tsc":
            assert e["counter"] is None and e["reason"] == NO_PMU_AMD, e
    ins = [e for e in events if e["name"] == "INST_RETIRED.ANY" and e["cpu"] == 0][0]
    assert (ins["code"], ins["kind"], ins["fixed_counter"], ins["arch_bit"]) == ("C0.00", "fixed", 0, 1), ins

    errors = [e["message"] for e in r.records("error")]
    assert errors == [
        "\\pmulab\\pmulab.cfg:3: CPU 0: cannot count 'instructions': " + NO_PMU_AMD,
    ], r
    codes = [e["code"] for e in r.records("error")]
    assert codes == ["unsupported"], codes

    # 'tsc' still measures, on both CPUs.
    res = r.records("result")
    assert [(x["cpu"], x["event"], x["counter"]) for x in res] == [(0, "tsc", "TSC"), (1, "tsc", "TSC")], res
    assert all("counter_method" not in x for x in res), res


def test_qemu_intel_model_without_pmu():
    # The Intel path's no-PMU branch: GenuineIntel, CPUID.0AH = 0.
    r = _campaign([
        "events",
        "run --bench nop --events cycles,tsc --reps 3",
        "events --check tsc",
    ], smp=1, cpu="Skylake-Client")
    assert r.rc == 3, r
    assert "CPU 0: no PMU counters: " + NO_PMU_INTEL + "\n" in r.out, r
    assert "  counter reads: RDMSR (" + UD + ")\n" in r.out, r
    assert "  Only 'tsc' (the time-stamp counter, read with RDTSC) can be measured here.\n" in r.out, r
    assert ("pmulab: error: \\pmulab\\pmulab.cfg:2: CPU 0: cannot count 'cycles': " + NO_PMU_INTEL + "\n") in r.err, r
    assert "CPU 0: 1 event in 1 run (no PMU counters: " + NO_PMU_INTEL + ")\n  group 1/1: TSC        tsc\n" in r.out, r
