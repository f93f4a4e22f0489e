"""QEMU boots of `pmulab info`: processor enumeration, topology, the no-PMU path."""

from pmulab_test import run_qemu

QEMU = True


def _cpus(res):
    assert res.rc == 0, res
    return res.records("cpu")


def test_qemu_info_smp1_text():
    r = run_qemu("info", smp=1)
    assert r.rc == 0, r
    assert "pmulab census: 1 logical processor\n" in r.out, r
    # TCG has no PMU: said plainly, not an error.
    assert "none" in r.out and "error" not in r.out.lower(), r
    assert "@@pmulab-exit" not in r.out, "exit marker must be stripped"
    # ... and it ends with what to try next (issue 26 item 21).
    assert r.out.rstrip("\n").splitlines()[-1] == (
        "Next: 'run --bench nop --events tsc' works without a PMU; for counters boot on hardware, "
        "or under KVM with -cpu host,pmu=on"), r


def test_qemu_info_smp4_json():
    cpus = _cpus(run_qemu("info", smp=4, json_mode=True))
    assert [c["index"] for c in cpus] == [0, 1, 2, 3]
    assert [c["apic_id"] for c in cpus] == [0, 1, 2, 3]
    assert [c["bsp"] for c in cpus] == [True, False, False, False]
    for c in cpus:
        assert c["collected"] is True
        assert c["hypervisor"] is True
        assert c["pmu"]["present"] is False
        assert c["pmu"]["perfmon_version"] == 0
        assert c["pmu"]["gp_counters"] == 0
        assert c["pmu"]["events_unavailable"] == []


def test_qemu_info_topology_2s2c2t():
    cpus = _cpus(run_qemu("info", smp="8,sockets=2,cores=2,threads=2", json_mode=True))
    assert len(cpus) == 8
    # QEMU packs APIC IDs as package:core:thread with 1 bit each here.
    for c in cpus:
        i = c["index"]
        assert c["apic_id"] == i, c
        assert (c["package"], c["core"], c["thread"]) == (i >> 2, (i >> 1) & 1, i & 1), c
    assert sum(1 for c in cpus if c["bsp"]) == 1


def test_qemu_info_intel_model_no_pmu():
    # An Intel CPU model without PMU passthrough: CPUID.0AH reports version 0.
    r = run_qemu("info", smp=2, cpu="Skylake-Client")
    assert r.rc == 0, r
    assert "GenuineIntel" in r.out, r
    assert "CPUID.0AH reports version 0" in r.out, r


def test_qemu_unknown_command_is_usage_error():
    r = run_qemu("frobnicate", smp=1)
    assert r.rc == 2, r
    assert "unknown command 'frobnicate'" in r.err and r.out == "", r


def test_qemu_json_errors_are_json():
    r = run_qemu("info", "--bogus", smp=1, json_mode=True)
    assert r.rc == 2, r
    recs = r.records()
    assert [x["type"] for x in recs] == ["meta", "error"], r  # the meta record first (issue #26 item 19)
