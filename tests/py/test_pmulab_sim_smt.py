"""SMT siblings on the host tools (docs/measure.md "SMT siblings", docs/sim.md "SMT siblings"):
pmulab-cpuid shows the topology of a dump; pmulab-sim's `--sibling busy` makes the siblings
of the measuring CPU run, the records say so and Skylake-class TopDown takes the SMT forms,
which give the thread's breakdown exactly."""

from pmulab_test import data_path, run_tool

L1 = {"tma_retiring": [1, 2], "tma_bad_speculation": [1, 4], "tma_frontend_bound": [1, 4],
      "tma_backend_bound": [0, 1]}
SMT_SLOTS = "(2 * CPU_CLK_UNHALTED.THREAD * (1 + [3C.02] / CPU_CLK_UNHALTED.REF_XCLK))"


def _topdown(*sim_args):
    r = run_tool("pmulab-sim", "--json", "--model", "skylake", *sim_args, "--",
                 "run", "--bench", "add_indep", "--topdown", "1", "--cpu", "1", "--reps", "3", "--warmup", "1",
                 timeout=600)
    assert r.rc == 0, r
    return r


def test_sim_busy_sibling_smt_forms_exact():
    r = _topdown("--sibling", "busy")
    res = r.records("result")
    assert {x["sibling"] for x in res} == {"busy"}, r
    assert {(x["package"], x["core"], x["thread"]) for x in res} == {(0, 0, 1)}, r
    met = {m["metric"]: m for m in r.records("metric")}
    assert {k: m["fraction"] for k, m in met.items()} == L1, r
    assert met["tma_retiring"]["formula"] == "[C2.02] / " + SMT_SLOTS
    assert all(m["valid"] and m["sibling"] == "busy" for m in met.values()), r


def test_sim_halted_sibling_plain_forms():
    r = _topdown()
    met = {m["metric"]: m for m in r.records("metric")}
    assert {k: m["fraction"] for k, m in met.items()} == L1, r
    assert met["tma_retiring"]["formula"] == "[C2.02] / (4 * CPU_CLK_UNHALTED.THREAD)"
    assert {x["sibling"] for x in r.records("result")} == {"halted"}, r


def test_sim_sibling_option_checked():
    r = run_tool("pmulab-sim", "--model", "skylake", "--sibling", "sometimes", "--", "info")
    assert r.rc == 2, r
    assert "pmulab-sim: error: --sibling: 'sometimes' is not busy or halted" in r.err, r


def test_cpuid_dump_topology():
    r = run_tool("pmulab-cpuid", data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"))
    assert r.rc == 0, r
    assert "topology (cpuid_0bh): 1 package, 16 cores, 32 logical processors; x2APIC ID: 1 SMT bit, " \
        "package ID above bit 5\n" in r.out, r
    assert "  SMT siblings: 0+1, 2+3, 4+5," in r.out, r
    r = run_tool("pmulab-cpuid", data_path("cpuid", "GenuineIntel00506E3_Skylake_CPUID.txt"))
    assert r.rc == 0 and "SMT siblings" not in r.out, r  # no SMT: the table says all there is


def test_sim_machine_from_dump_has_its_topology():
    # The simulated machine's locations (the dump's "All CPUs" section) and CPUID's decoding
    # (the records' "topology") agree on the SMT thread of every CPU of Zen 5 with SMT.
    r = run_tool("pmulab-sim", "--json", "--dump",
                 data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt"), "--", "info")
    assert r.rc == 0, r
    cpus = r.records("cpu")
    assert len(cpus) == 32
    assert [c["thread"] for c in cpus] == [c["topology"]["thread"] for c in cpus] == [i % 2 for i in range(32)]
    assert [c["topology"]["core"] for c in cpus] == [i // 2 if i < 16 else 8 + (i - 16) // 2 for i in range(32)], r
