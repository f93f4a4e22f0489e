"""The target side of the memory lab on pmulab-sim (issue #24): --prefetchers off sets the
documented disable bits for the job and restores the MSR exactly (the simulator knows the
control where pmulab's model table says it exists), refuses elsewhere with the reason;
the records carry what was off, R14's area and its alignment."""

import json

from pmulab_test import run_tool

TOOL = "pmulab-sim"


def _run(model, *extra, args=("--prefetchers", "off")):
    r = run_tool(TOOL, "--model", model, "--trace-msr", "--json", *extra, "--", "run", *args, "--code", "90",
                 "--events", "tsc", "--reps", "2", "--warmup", "0", "--cpu", "0", timeout=120)
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
