"""pmulab-cpuid, the offline CPUID decoder, on every dump in tests/data/cpuid:
text table, JSON Lines, stdin, and each error path with its exit status."""

import json
import os
import tempfile

from pmulab_test import data_path, run_tool

TOOL = "pmulab-cpuid"
DUMPS = sorted(f for f in os.listdir(data_path("cpuid")) if f.endswith(".txt"))

# Logical CPUs per dump, counted by hand from the section headers.
EXPECTED_CPUS = {
    "AuthenticAMD0020FF0_K8_Venice_CPUID.txt": 1,
    "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt": 32,
    "GenuineIntel00006F4_Conroe_CPUID.txt": 2,
    "GenuineIntel0000F41_P4_Prescott_CPUID.txt": 1,
    "GenuineIntel00506E3_Skylake_CPUID.txt": 4,
    "GenuineIntel00706A8_GoldmontPlus_CPUID.txt": 4,
    "GenuineIntel0090672_AlderLake_02_CPUID.txt": 12,
    "GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt": 8,
    "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt": 16,
    "cpuid-r-1_KVM_AMD_EPYC.txt": 1,
    "cpuid-r_KVM_AMD_EPYC_2cpu.txt": 2,
    "cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt": 16,
}


def _json(name):
    r = run_tool(TOOL, "--json", data_path("cpuid", name))
    assert r.rc == 0, r
    assert r.err == "", r
    return r.records("cpu")


def test_every_dump_has_a_source_line_and_an_expectation():
    assert sorted(EXPECTED_CPUS) == DUMPS
    for name in DUMPS:
        with open(data_path("cpuid", name)) as f:
            assert f.readline().startswith("# source: "), name


def test_every_dump_text():
    for name in DUMPS:
        r = run_tool(TOOL, data_path("cpuid", name))
        assert r.rc == 0, (name, r)
        n = EXPECTED_CPUS[name]
        fmt = "cpuid-r" if name.startswith("cpuid-r") else "aida64"
        lines = r.out.splitlines()
        assert lines[0] == f"dump: {data_path('cpuid', name)} ({fmt} format)", r
        assert lines[1] == f"pmulab census: {n} logical processor{'s' if n > 1 else ''}", r
        assert "PMU of CPU 0" in r.out, r
        assert "not collected" not in r.out and "error" not in r.out, r


def test_every_dump_json_lines():
    for name in DUMPS:
        r = run_tool(TOOL, "--json", data_path("cpuid", name))
        assert r.rc == 0, (name, r)
        lines = r.out.splitlines()
        assert len(lines) == EXPECTED_CPUS[name], (name, r)
        recs = [json.loads(line) for line in lines]  # every line one JSON object
        assert all(rec["type"] == "cpu" and rec["collected"] is True for rec in recs), name
        assert [rec["index"] for rec in recs] == list(range(len(recs))), name
        assert all(rec["pmu"]["perf_capabilities"] is None for rec in recs), name


def test_arrow_lake_json_values():
    cpus = _json("GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt")
    assert [c["apic_id"] for c in cpus] == [0, 8, 16, 18, 20, 22, 24, 26, 28, 30, 32, 40, 48, 56, 64, 66]
    assert "".join({"core": "P", "atom": "E"}[c["core_type"]] for c in cpus) == "PPEEEEEEEEPPPPEE"
    p, e, lp = cpus[0], cpus[2], cpus[14]
    assert p["brand"] == "Intel(R) Core(TM) Ultra 9 285H"
    assert (p["signature"], p["family"], p["model"], p["stepping"]) == ("0xc0652", 6, 0xC5, 2)
    assert p["hybrid"] is True and p["core_type_id"] == 0x40
    assert p["pmu"]["perfmon_version"] == 5
    assert p["pmu"]["gp_counters_usable"] == list(range(10))
    assert p["pmu"]["fixed_counters_usable"] == [0, 1, 2, 3]
    assert p["pmu"]["leaf23_subleaves"] == "0xb"
    assert p["pmu"]["arch_events_bitmap"] == "0x1dff"
    assert e["pmu"]["fixed_counters_usable"] == [0, 1, 2, 4, 5, 6]
    assert e["pmu"]["acr_gp_bitmap"] == [2, 3, 4, 5, 6, 7]
    assert (e["pmu"]["umask2"], e["pmu"]["eq"]) == (True, True)
    assert (lp["pmu"]["umask2"], lp["pmu"]["eq"]) == (False, False)
    assert lp["pmu"]["fixed_counters_usable"] == [0, 1, 2]


def test_skylake_json_values():
    # Core i5-6400T (06_5EH stepping 3, no Hyper-Threading): 8 GP counters per thread.
    s = _json("GenuineIntel00506E3_Skylake_CPUID.txt")
    assert [x["apic_id"] for x in s] == [0, 2, 4, 6] and [x["core"] for x in s] == [0, 1, 2, 3]
    assert (s[0]["family"], s[0]["model"], s[0]["stepping"], s[0]["signature"]) == (6, 0x5E, 3, "0x506e3")
    pmu = s[0]["pmu"]
    assert (pmu["perfmon_version"], pmu["gp_counters"], pmu["gp_width"], pmu["ebx_vector_length"]) == (4, 8, 48, 7)
    assert (pmu["fixed_counters"], pmu["fixed_width"], pmu["anythread_deprecated"]) == (3, 48, False)
    assert pmu["fixed_counters_effective"] == [0, 1, 2] and pmu["events_unavailable"] == []


def test_conroe_and_goldmont_json_values():
    c = _json("GenuineIntel00006F4_Conroe_CPUID.txt")
    assert [x["apic_id"] for x in c] == [0, 1]
    pmu = c[0]["pmu"]
    assert (pmu["perfmon_version"], pmu["gp_counters"], pmu["gp_width"]) == (2, 2, 40)
    assert (pmu["fixed_counters"], pmu["fixed_width"], pmu["fixed_count_quirk"]) == (0, 0, True)
    assert pmu["fixed_counters_effective"] == [] and pmu["fixed_counters_usable"] == [0, 1, 2]
    g = _json("GenuineIntel00706A8_GoldmontPlus_CPUID.txt")
    pmu = g[0]["pmu"]
    assert (pmu["perfmon_version"], pmu["gp_counters"], pmu["gp_width"], pmu["ebx_vector_length"]) == (4, 4, 48, 7)
    assert (pmu["fixed_counters"], pmu["fixed_width"], pmu["anythread_deprecated"]) == (3, 48, True)
    assert [x["apic_id"] for x in g] == [0, 2, 4, 6]
    assert [x["core"] for x in g] == [0, 1, 2, 3]


def test_zen5_and_k8_json_values():
    z = _json("AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")
    assert (z[0]["family"], z[0]["model"]) == (0x1A, 0x44)
    assert z[0]["brand"] == "AMD Ryzen 9 9950X 16-Core Processor"
    assert z[0]["pmu"]["amd"] == {"perfctr_ext_core": True, "perfmon_v2": True, "core_counters": 6,
                                  "lbr_v2": True, "lbr_stack_size": 16, "nb_counters": 16,
                                  "irperf": True, "aperf_mperf": True}
    assert [(x["core"], x["thread"]) for x in z[:4]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    k = _json("AuthenticAMD0020FF0_K8_Venice_CPUID.txt")
    assert (k[0]["family"], k[0]["model"], k[0]["stepping"]) == (0xF, 0x2F, 0)
    assert k[0]["pmu"]["amd"]["core_counters"] == 4
    # K8: no leaf 06H (maximum basic leaf 1), 8000_0008H:EBX = 0.
    assert (k[0]["pmu"]["amd"]["irperf"], k[0]["pmu"]["amd"]["aperf_mperf"]) == (False, False)
    assert k[0]["pmu"]["present"] is True


def test_kvm_guest_without_pmu_emerald_rapids():
    # The one real Intel server seen so far (docs/silicon.md): a KVM guest whose hypervisor
    # exposes no PMU. pmulab must say "none", not invent counters from the model number.
    e = _json("cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt")
    assert len(e) == 16
    assert (e[0]["vendor"], e[0]["family"], e[0]["model"], e[0]["stepping"]) == ("GenuineIntel", 6, 0xCF, 2)
    assert e[0]["hypervisor"] is True
    assert all(c["pmu"]["present"] is False and c["pmu"]["perfmon_version"] == 0 for c in e)
    assert [c["apic_id"] for c in e] == list(range(16))
    assert "avx512f" in e[0]["vector_extensions"]
    r = run_tool(TOOL, data_path("cpuid", "cpuid-r_KVM_Intel_EmeraldRapids_16cpu.txt"))
    assert r.rc == 0, r
    assert "PMU              : none: CPUID.0AH reports version 0" in r.out, r.out


def test_hybrid_flag_alder_lake_vs_raptor_lake():
    adl = _json("GenuineIntel0090672_AlderLake_02_CPUID.txt")
    assert all(c["hybrid"] is False and c["core_type"] == "none" for c in adl)
    rpl = _json("GenuineIntel00B06A2_RaptorLakeP_02_CPUID.txt")
    assert all(c["hybrid"] is True and c["core_type"] == "core" for c in rpl)
    assert [c["apic_id"] for c in rpl] == [0, 1, 8, 9, 16, 17, 24, 25]


def test_stdin_matches_file():
    path = data_path("cpuid", "cpuid-r_KVM_AMD_EPYC_2cpu.txt")
    with open(path) as f:
        text = f.read()
    a = run_tool(TOOL, "--json", "-", stdin=text)
    b = run_tool(TOOL, "--json", path)
    assert a.rc == 0 and b.rc == 0, (a, b)
    assert a.out == b.out
    t = run_tool(TOOL, "-", stdin=text)
    assert t.rc == 0, t
    assert t.out.splitlines()[0] == "dump: <stdin> (cpuid-r format)", t
    assert "hypervisor present" in t.out and "the 4 legacy counters are not assumed" in t.out, t


def test_forced_formats():
    path = data_path("cpuid", "GenuineIntel00006F4_Conroe_CPUID.txt")
    r = run_tool(TOOL, "--format", "aida64", path)
    assert r.rc == 0, r
    r = run_tool(TOOL, "--format=cpuid-r", path)
    assert r.rc == 2, r
    assert r.err == (f"pmulab-cpuid: error: {path}: no CPU section found: expected `cpuid -r` output "
                     "('CPU 0:' followed by lines '0x00000000 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...')\n"), r
    assert r.out == ""


def test_help():
    r = run_tool(TOOL, "--help")
    assert r.rc == 0, r
    assert r.out.startswith("usage: pmulab-cpuid [--json] [--format auto|cpuid-r|aida64] FILE|-\n"), r


def _tmp(content, binary=False):
    f = tempfile.NamedTemporaryFile("wb" if binary else "w", suffix=".txt", delete=False)
    f.write(content)
    f.close()
    return f.name


def test_error_truncated_file():
    with open(data_path("cpuid", "GenuineIntel00706A8_GoldmontPlus_CPUID.txt")) as f:
        lines = f.read().splitlines(True)
    # Cut right after the header of logical CPU #2 (line 119 of the file).
    assert lines[118].startswith("------[ CPUID Registers / Logical CPU #2 ]"), lines[118]
    path = _tmp("".join(lines[:120]))
    try:
        r = run_tool(TOOL, path)
        assert r.rc == 2, r
        assert r.err == f"pmulab-cpuid: error: {path}:119: logical CPU #2 has no CPUID leaf 0 line (truncated dump?)\n", r
        assert r.out == ""
        # Cut in the middle of a register line.
        assert lines[123].startswith("CPUID 00000001: 000706A8-04400800"), lines[123]
        cut = "".join(lines[:123]) + lines[123][:30]
        with open(path, "w") as f:
            f.write(cut)
        r = run_tool(TOOL, path)
        assert r.rc == 2, r
        assert r.err == (f"pmulab-cpuid: error: {path}:124: expected 4 hex registers after 'CPUID 00000001:' "
                         "(EAX-EBX-ECX-EDX, found 2); the file ends in the middle of this line (truncated dump?)\n"), r
    finally:
        os.unlink(path)


def test_error_garbage():
    r = run_tool(TOOL, "-", stdin="this is not\na CPUID dump\n")
    assert r.rc == 2, r
    assert r.err.startswith("pmulab-cpuid: error: <stdin>: not a CPUID dump: found neither `cpuid -r` output"), r
    path = _tmp(bytes(range(256)) * 4, binary=True)
    try:
        r = run_tool(TOOL, path)
        assert r.rc == 2, r
        assert r.err.startswith(f"pmulab-cpuid: error: {path}:1: binary data (byte 0x00 at column 1)"), r
    finally:
        os.unlink(path)
    r = run_tool(TOOL, "-", stdin="CPU 0:\n   0x00000000 0x00: eax=0x0000000Z ebx=0x0 ecx=0x0 edx=0x0\n")
    assert r.rc == 2, r
    assert r.err == ("pmulab-cpuid: error: <stdin>:2: bad hex digit 'Z' in eax value 'eax=0x0000000Z' after "
                     "'0x00000000 0x00:'\n"), r


def test_error_missing_and_unreadable_file():
    r = run_tool(TOOL, "/nonexistent/dump.txt")
    assert r.rc == 2, r
    assert r.err == "pmulab-cpuid: error: cannot open '/nonexistent/dump.txt': No such file or directory\n", r
    d = tempfile.mkdtemp()
    try:
        r = run_tool(TOOL, d)
        assert r.rc == 2, r
        assert r.err == f"pmulab-cpuid: error: cannot read '{d}': Is a directory\n", r
    finally:
        os.rmdir(d)


def test_error_bad_usage():
    r = run_tool(TOOL, "--bogus", "x.txt")
    assert (r.rc, r.err) == (2, "pmulab-cpuid: error: unknown option '--bogus' (see pmulab-cpuid --help)\n"), r
    r = run_tool(TOOL)
    assert r.rc == 2 and "no dump file given" in r.err, r
    r = run_tool(TOOL, "--format", "xml", "x.txt")
    assert r.rc == 2, r
    assert r.err == ("pmulab-cpuid: error: unknown dump format 'xml' (expected auto, cpuid-r or aida64) "
                     "(see pmulab-cpuid --help)\n"), r
    r = run_tool(TOOL, "--format")
    assert r.rc == 2 and "--format needs a value" in r.err, r
    r = run_tool(TOOL, "a.txt", "b.txt")
    assert r.rc == 2 and "more than one dump file given ('b.txt')" in r.err, r
    assert r.out == ""


def test_error_report_cut_between_cpu_sections():
    # Cut before logical CPU #6 of 12: used to decode 6 CPUs with status 0.
    with open(data_path("cpuid", "GenuineIntel0090672_AlderLake_02_CPUID.txt")) as f:
        text = f.read()
    cut = text[:text.index("------[ CPUID Registers / Logical CPU #6 ]")]
    path = _tmp(cut)
    try:
        r = run_tool(TOOL, path)
        assert r.rc == 2 and r.out == "", r
        assert "the report ends inside the section of logical CPU #5" in r.err and "truncated dump?" in r.err, r
    finally:
        os.unlink(path)


# The text table names the vector extensions `run --code` can use, as the records do:
# one line when every CPU has the same set, else one line per set with its CPUs.
def test_text_names_the_vector_extensions_as_the_records_do():
    for name in DUMPS:
        recs = _json(name)
        text = run_tool(TOOL, data_path("cpuid", name)).out.splitlines()
        lines = [l for l in text if l.startswith("vector extensions (run --code)")]
        sets = []
        for rec in recs:
            if rec["vector_extensions"] not in sets:
                sets.append(rec["vector_extensions"])
        assert len(lines) == len(sets), (name, lines)
        for l, want in zip(lines, sets):
            assert l.split(": ", 1)[1] == (" ".join(want) or "none"), (name, l, want)
        if len(sets) == 1:
            assert lines[0].startswith("vector extensions (run --code): "), (name, lines)
    arrow = run_tool(TOOL, data_path("cpuid", "GenuineIntel00C0652_ArrowLakeH_04_CPUID.txt")).out
    assert "vector extensions (run --code): sse sse2 sse3 ssse3 sse4.1 sse4.2 avx fma avx2\n" in arrow, arrow
    zen5 = run_tool(TOOL, data_path("cpuid", "AuthenticAMD0B40F40_K20_GraniteRidge_02_CPUID.txt")).out
    assert "avx2 avx512f avx512dq avx512bw avx512vl\n" in zen5, zen5
