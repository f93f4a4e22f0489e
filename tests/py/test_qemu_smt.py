"""QEMU boots with SMT siblings (docs/measure.md "SMT siblings"): -smp 4 as one package of
2 cores x 2 threads. `info` derives the topology from CPUID (0BH) and names the siblings;
every result record says where it ran and what the core's other thread did meanwhile."""

from pmulab_test import run_qemu

QEMU = True

SMT = "4,sockets=1,cores=2,threads=2"


def test_qemu_info_shows_smt_siblings():
    r = run_qemu("info", smp=SMT)
    assert r.rc == 0, r
    assert "topology (cpuid_0bh): 1 package, 2 cores, 4 logical processors; x2APIC ID: 1 SMT bit, " \
        "package ID above bit 2\n" in r.out, r
    assert "  SMT siblings: 0+1, 2+3\n" in r.out, r
    j = run_qemu("info", smp=SMT, json_mode=True)
    assert j.rc == 0, j
    topo = [c["topology"] for c in j.records("cpu")]
    assert [(t["package"], t["core"], t["thread"]) for t in topo] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)]
    assert {t["source"] for t in topo} == {"cpuid_0bh"}
    assert {t["threads_per_core"] for t in topo} == {2}


def test_qemu_records_say_the_sibling_was_halted():
    # CPU 1 is the BSP's sibling: the BSP waits for its jobs in HLT (QEMU is a hypervisor:
    # no MWAIT); CPU 0's and CPU 2's siblings are APs whose workers halt between jobs.
    r = run_qemu("run", "--bench", "nop", "--events", "tsc", "--cpu", "0-2", "--reps", "3", "--warmup", "1",
                 smp=SMT, json_mode=True)
    assert r.rc == 0, r
    res = r.records("result")
    assert [x["cpu"] for x in res] == [0, 1, 2], r
    assert [(x["package"], x["core"], x["thread"]) for x in res] == [(0, 0, 0), (0, 0, 1), (0, 1, 0)]
    assert [x["sibling"] for x in res] == ["halted", "halted", "halted"], r


def test_qemu_records_without_smt_say_none():
    r = run_qemu("run", "--bench", "nop", "--events", "tsc", "--cpu", "1", "--reps", "3", "--warmup", "1",
                 smp="2", json_mode=True)
    assert r.rc == 0, r
    res = r.records("result")
    assert res and res[0]["sibling"] == "none", r
    assert (res[0]["package"], res[0]["core"], res[0]["thread"]) == (0, 1, 0), r
