"""run --events energy-* on pmulab-sim (docs/measure.md "Energy (RAPL)"): joules per
iteration from the simulator's energy model (src/sim/sim_rapl.cpp) in the records, the
text table, the results CSV and the Python client; a run too short; the refusals."""

import csv
import os
import tempfile

from pmulab.client import Agent
from pmulab_test import data_path, run_tool

# The model's energy of add_indep (8 instructions, 8 TSC ticks per iteration), in pJ:
# pJ per instruction x 8 + pJ per tick x 8 (the SimRaplClass rows in sim_rapl.cpp).
SKYLAKE_PKG_PJ = 8 * 300 + 8 * 3000
ZEN_CORE_PJ = 8 * 250 + 8 * 1500
RUN = ("run", "--bench", "add_indep", "--reps", "3", "--warmup", "1")


def _sim(*args, timeout=300):
    return run_tool("pmulab-sim", *args, timeout=timeout)


def _within(rec, pj, per_interval_pj):
    """The value is the model's within the update quantisation: 2 intervals' energy (and
    2 units) over the record's iterations (the bound of run_energy.cpp's rule)."""
    num, den = rec["fraction"]
    bound = 2 * (per_interval_pj * 1e-12 + 2.0 ** -rec["energy_unit_exp"]) / rec["iterations"]
    assert abs(num / den - pj * 1e-12) <= bound, (rec, pj, bound)
    assert bound < 0.03 * pj * 1e-12, bound


def test_skylake_dump_package_energy_in_records_table_and_csv():
    dump = data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt")
    with tempfile.TemporaryDirectory() as d:
        r = _sim("--json", "--dump", dump, "--cpus", "0", "--results", d, "--", *RUN, "--events", "energy-pkg")
        assert r.rc == 0, r
        (rec,) = r.records("result")
        assert rec["event"] == "energy-pkg" and rec["unit"] == "J / iteration", rec
        assert rec["energy_msr"] == "0x611" and rec["energy_unit_exp"] == 14 and rec["too_short"] is False, rec
        assert rec["updates"] >= 100 and rec["loop_rule"] == "auto" and rec["energy_scope"] == "package", rec
        # The dump's TSC: CPUID.16H's base frequency; one update per 1 ms of it.
        interval = rec["update_interval_ticks"]
        _within(rec, SKYLAKE_PKG_PJ, (300 + 3000) * interval)
        with open(os.path.join(d, "0001-run.csv"), newline="") as f:
            (row,) = list(csv.DictReader(f))
        assert row["event"] == "energy-pkg" and row["unit"] == "J / iteration", row
        assert float(row["per_iteration"]) == rec["per_iteration"] and row["energy_domain"] == "pkg", row
    r = _sim("--dump", dump, "--cpus", "0", "--", *RUN, "--events", "energy-pkg")
    assert r.rc == 0, r
    assert "pmulab run: energy of package 0 measured on CPU 0; the counters update every" in r.out, r
    row = [l for l in r.out.splitlines() if l.startswith("add_indep")][0]
    assert row.split()[2:4] == ["energy-pkg", "RAPL_PKG"] and row.endswith("J / iteration"), row


def test_zen4_core_energy_and_a_too_short_run():
    r = _sim("--json", "--model", "zen4", "--cpus", "0", "--", *RUN, "--events", "energy-core")
    assert r.rc == 0, r
    (rec,) = r.records("result")
    assert rec["event"] == "energy-core" and rec["energy_scope"] == "core", rec
    _within(rec, ZEN_CORE_PJ, (250 + 1500) * rec["update_interval_ticks"])
    r = _sim("--json", "--model", "zen4", "--cpus", "0", "--", *RUN, "--events", "energy-pkg", "--loop", "10")
    assert r.rc == 0, r
    (rec,) = r.records("result")
    assert rec["too_short"] is True and rec["per_iteration"] is None and rec["updates"] == 0, rec
    assert rec["loop_rule"] == "given" and rec["min_updates"] == 100, rec


def test_client_counts_leave_out_a_result_without_value():
    with Agent.sim(model="zen4") as a:
        ans = a.request("run --bench add_indep --reps 3 --warmup 0 --loop 10 --events tsc,energy-pkg --cpu 0")
        assert ans.status == 0, ans.records
        assert set(ans.counts) == {"tsc"}, ans.counts


def test_refusals_name_the_domain_and_the_cpu():
    cases = [
        (("--model", "icelake_server"), "energy-gpu", 3,
         "pmulab: error: energy-gpu: CPU 0 (Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz, 06_6AH) has no gpu energy "
         "domain (Linux's model_hsx: energy-pkg, energy-cores, energy-dram)"),
        (("--model", "intel_v3"), "energy-dram", 3, "has no dram energy domain (Linux's model_snb"),
        (("--model", "qemu_tcg_intel"), "energy-pkg", 3, "RDMSR 606H (the energy unit) reads 0"),
        (("--model", "qemu_tcg"), "energy-pkg", 3, "CPUID Fn8000_0007_EDX[14] (RAPL) is 0"),
        (("--dump", data_path("cpuid", "cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt")), "energy-pkg", 3,
         "RDMSR 606H (the energy unit) faulted; this is a virtual machine"),
        (("--model", "zen4"), "energy-pkg,energy-pkg", 2, "--events: the energy domain of 'energy-pkg' is listed twice"),
    ]
    for machine, events, rc, msg in cases:
        r = _sim(*machine, "--cpus", "0", "--", *RUN, "--events", events)
        assert r.rc == rc and msg in r.err, (machine, events, r)
        assert "add_indep" not in r.out, r
