"""The L3 slice lookup on the target (issue #24): under QEMU TCG (an AMD CPU model, a
guest) there is no L3 PMU, so `run --cbox-lookups` is refused before anything runs (exit
3), with the reason and a pointer at eviction sets (docs/cache.md "L3 slices and eviction
sets")."""

from pmulab_test import run_qemu

QEMU = True


def test_qemu_cbox_lookups_refused_under_tcg():
    r = run_qemu("run", "--cbox-lookups", "--code", "90", "--events", "tsc", smp="1", timeout=120)
    assert r.rc == 3, r
    out = r.out + r.err
    assert ("pmulab: error: run --cbox-lookups: no L3 slice lookup on this CPU (AuthenticAMD family 0xf model "
            "0x6b): a hypervisor's guest: the L3 PMU's MSRs (ChL3PmcCfg, C001_0230H) are not virtualized; find "
            "slices by eviction sets instead (tools/pmulab-cache evset)") in out, r
    assert "TSC ticks / iteration" not in out, r  # nothing ran
