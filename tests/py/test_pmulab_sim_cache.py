"""The target side of the memory lab on pmulab-sim (issue #24): --prefetchers off sets the
documented disable bits for the job and restores the MSR exactly (the simulator knows the
control where pmulab's model table says it exists), refuses elsewhere with the reason;
the records carry what was off, R14's area and its alignment."""

import json

from pmulab_test import run_tool

TOOL = "pmulab-sim"


def _run(model, *extra, args=("--prefetchers", "off")):
    cpu = () if "--cpu" in args else ("--cpu", "0")
    r = run_tool(TOOL, "--model", model, "--trace-msr", "--json", *extra, "--", "run", *args, "--code", "90",
                 "--events", "tsc", "--reps", "2", "--warmup", "0", *cpu, timeout=120)
    recs = [json.loads(l) for l in r.out.splitlines() if l.startswith("{")]
    return r, recs


def _writes(recs, msr):
    return [x["value"] for x in recs if x["type"] == "msr_trace" and x["op"] == "wrmsr" and x["msr"] == msr]


def test_prefetchers_off_and_restored_on_sandy_bridge_model():
    r, recs = _run("intel_v3")  # signature 0x206a7: Sandy Bridge, MSR 1A4H bits 0-3
    assert r.rc == 0, r
    assert _writes(recs, "0x1a4") == ["0xf", "0x0"], recs  # off for the job, back as it was
    res = [x for x in recs if x["type"] == "result"]
    assert res and all(x["prefetchers_off"] == "l2_hw,l2_adjacent_line,dcu,dcu_ip" and x["prefetch_msr"] == "0x1a4"
                       and x["prefetch_bits"] == "0xf" for x in res), res


def test_prefetchers_off_on_zen4_and_core2_restore_exactly():
    r, recs = _run("zen4")
    assert r.rc == 0, r
    assert _writes(recs, "0xc0000108") == ["0x2f", "0x0"], recs
    # Core 2: IA32_MISC_ENABLE bits 9, 19, 37, 39, the other bits kept; the firmware's value back.
    r, recs = _run("intel_v2_conroe", "--misc-enable", "0x200")
    assert r.rc == 0, r
    assert _writes(recs, "0x1a0") == ["0xa000080200", "0x200"], recs


def test_prefetchers_off_on_skylake_model():
    # Skylake (06_5EH): MSR 1A4H bits 0-3 (SDM Vol. 4 Table 2-20, named by the Skylake section).
    r, recs = _run("skylake")
    assert r.rc == 0, r
    assert _writes(recs, "0x1a4") == ["0xf", "0x0"], recs
    res = [x for x in recs if x["type"] == "result"]
    assert res and all(x["prefetchers_off"] == "l2_hw,l2_adjacent_line,dcu,dcu_ip" for x in res), res


def _trace(recs, cpu):
    """The prefetcher MSRs' accesses of one CPU, in order: (op, msr, value)."""
    return [(x["op"], x["msr"], x["value"]) for x in recs if x["type"] == "msr_trace" and x["cpu"] == cpu
            and (x["msr"] == "0x1a4" or x["msr"].startswith("0x132"))]


def test_prefetchers_off_per_core_type_on_the_hybrid_models():
    # P cores: 1A4H bits 0-3. Gracemont E cores (Intel 357930 §2.1): 1A4H bits 0, 2-5, the
    # LLC streamer (1320H[43]) and the L2 next-line prefetcher (1321H[40], off at reset: read,
    # not written). Every MSR back as it was, 1A4H last.
    e_names = "l2_hw,dcu,dcu_ip,dcu_next_page,l2_amp,llc_stream,l2_next_line"
    for model, p, e in (("hybrid", "0", "4"), ("alder_lake", "0", "4")):
        r, recs = _run(model, args=("--prefetchers", "off", "--cpu", f"{p},{e}"))
        assert r.rc == 0, (model, r)
        res = {x["cpu"]: x for x in recs if x["type"] == "result"}
        assert res[int(p)]["prefetchers_off"] == "l2_hw,l2_adjacent_line,dcu,dcu_ip", (model, res)
        assert res[int(p)]["prefetch_msrs"] == {"0x1a4": "0xf"}, (model, res)
        assert res[int(e)]["prefetchers_off"] == e_names and res[int(e)]["prefetch_family"] == "gracemont", res
        assert res[int(e)]["prefetch_msrs"] == {"0x1a4": "0x3d", "0x1320": "0x80000000000",
                                                "0x1321": "0x10000000000"}, (model, res)
        assert _trace(recs, int(p)) == [("rdmsr", "0x1a4", "0x0"), ("wrmsr", "0x1a4", "0xf"),
                                        ("rdmsr", "0x1a4", "0xf"), ("wrmsr", "0x1a4", "0x0")], (model, recs)
        assert _trace(recs, int(e)) == [
            ("rdmsr", "0x1a4", "0x0"), ("rdmsr", "0x1320", "0x0"), ("rdmsr", "0x1321", "0x10000000000"),
            ("wrmsr", "0x1a4", "0x3d"), ("rdmsr", "0x1a4", "0x3d"),
            ("wrmsr", "0x1320", "0x80000000000"), ("rdmsr", "0x1320", "0x80000000000"),
            ("rdmsr", "0x1321", "0x10000000000"),
            ("wrmsr", "0x1320", "0x0"), ("wrmsr", "0x1a4", "0x0")], (model, recs)
        names = {x["msr"]: x["register"] for x in recs if x["type"] == "msr_trace"}
        assert names["0x1a4"] == "MSR_MISC_FEATURE_CONTROL" and names["0x1320"] == "ECORE_PREFETCH_1320H"
        assert names["0x1321"] == "ECORE_PREFETCH_1321H", names


def test_prefetchers_left_alone_by_default():
    r, recs = _run("intel_v3", args=())
    assert r.rc == 0, r
    assert _writes(recs, "0x1a4") == [], recs
    res = [x for x in recs if x["type"] == "result"]
    assert res and all("prefetchers_off" not in x and x["r14_align"] == 4096 for x in res), res


def test_prefetchers_off_refused_where_undocumented():
    for model, why in (("qemu_tcg_intel", "a hypervisor's virtual CPU (CPUID.01H:ECX[31]) has no prefetcher "
                                          "control, whatever model it shows"),
                       ("zen1", "AMD documents MSR C000_0108H (PrefetchControl) for families 19h and 1Ah only "
                                "(AuthenticAMD family 0x17 model 0x1)")):
        r, recs = _run(model)
        assert r.rc == 3, (model, r)
        errs = [x["message"] for x in recs if x["type"] == "error"]
        assert len(errs) == 1 and why in errs[0] and errs[0].endswith("nothing was run"), (model, errs)
        assert not [x for x in recs if x["type"] in ("result", "msr_trace") and x.get("op") == "wrmsr"], recs


def test_r14_area_without_a_memory_map():
    # pmulab-sim has no firmware memory map: R14's area is at most 1 GiB, and no alignment above 4K.
    r, recs = _run("intel_v3", args=("--r14-size", "2G"))
    assert r.rc == 3, r
    assert ("--r14-size 2147483648: this platform has no firmware memory map; without one R14's area is at most "
            "1073741824 bytes (1G)") in r.out, r


def test_r14_area_aligned_on_the_simulator():
    r, recs = _run("intel_v3", args=("--r14-size", "256K", "--r14-align", "64K"))
    assert r.rc == 0, r
    res = [x for x in recs if x["type"] == "result"]
    assert res and all(x["r14"] % 65536 == 0 and x["r14_align"] == 65536 and x["r14_size"] == 262144
                       for x in res), res
    r, recs = _run("intel_v3", args=("--r14-align", "48K"))
    assert r.rc == 2, r
    assert "--r14-align: 49152 is not a power of two" in r.out, r
