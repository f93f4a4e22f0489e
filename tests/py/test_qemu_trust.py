"""QEMU boots: noise provenance and the TSC frequency (issue 11) under TCG.

TCG has no SMI counter worth reading (a hypervisor is present, and unknown MSRs read 0),
no APERF/MPERF in CPUID.06H:ECX[0] and no FREEZE_WHILE_SMM: every provenance field must
be there, explicitly absent with its reason. The TSC frequency is not in CPUID (the AMD
family 0Fh model has no leaf 15H/16H), so it is measured against EFI Stall(); under
-icount 7 the guest's TSC runs at 1 GHz of virtual time (128 ticks per instruction of
128 ns), and Stall() polls the virtual timer, so the measurement lands near 1000 MHz."""

import json
import os
import subprocess
import tempfile

from pmulab_test import ROOT, run_qemu

QEMU = True


def test_qemu_trust_info_reports_the_tsc_frequency_against_efi_stall():
    r = run_qemu("info", smp=2, icount=7)
    assert r.rc == 0, r
    line = [l for l in r.out.splitlines() if l.startswith("TSC frequency: ")]
    assert len(line) == 1, r
    assert "(efi_stall: measured: " in line[0] and "of EFI Boot Services Stall() on the BSP)" in line[0], line
    mhz = float(line[0].split()[2])
    assert 990.0 <= mhz <= 1010.0, line  # 1 GHz of virtual time, and Stall() overshoots a little
    j = run_qemu("info", smp=2, icount=7, json_mode=True)
    assert j.rc == 0, j
    cpus = j.records("cpu")
    assert len(cpus) == 2, j
    for c in cpus:
        assert c["tsc_source"] == "efi_stall", c
        assert 990_000_000 <= c["tsc_hz"] <= 1_010_000_000, c
        assert c["tsc_detail"].startswith("measured: "), c


def test_qemu_trust_result_records_carry_provenance_or_its_absence():
    r = run_qemu("run", "--bench", "nop,add_chain", "--cpu", "all", "--reps", "5", smp=2, icount=7,
                 json_mode=True)
    assert r.rc == 0, r
    res = r.records("result")
    assert [(x["bench"], x["cpu"]) for x in res] == [("nop", 0), ("nop", 1), ("add_chain", 0), ("add_chain", 1)], r
    for x in res:
        assert x["per_iteration"] == 128.0, x  # exactness is untouched by the guard
        # AMD family 0Fh: LFENCE is dispatch-serialising, no DE_CFG bit to set.
        assert x["serialize"] == "lfence" and "serialize_note" not in x, x
        n = x["noise"]
        assert n["smi_delta"] is None and n["smi_absent"] == "not an Intel CPU: MSR_SMI_COUNT (34H) is Intel's", n
        assert n["aperf_delta"] is None and n["mperf_delta"] is None and n["effective_hz"] is None, n
        assert n["aperf_absent"] == "CPUID.06H:ECX[0] = 0: no APERF/MPERF", n
        assert n["freeze_while_smm"] == "unsupported", n
        assert n["freeze_absent"].startswith("not an Intel CPU"), n
        assert n["tsc_delta"] > 0, n
        assert x["smi_moved"] is None, x


def test_qemu_trust_intel_model_says_why_the_smi_count_is_absent():
    # An Intel model under TCG: a hypervisor is present, so MSR_SMI_COUNT (which TCG would
    # read as 0) is not believed.
    r = run_qemu("run", "--bench", "nop", "--reps", "3", smp=1, cpu="Skylake-Client", json_mode=True)
    assert r.rc == 0, r
    x = r.records("result")[0]
    assert x["noise"]["smi_delta"] is None, x
    assert x["noise"]["smi_absent"].startswith("a hypervisor is present (CPUID.01H:ECX[31])"), x
    assert x["noise"]["freeze_while_smm"] == "unsupported", x
    assert x["serialize"] == "lfence", x


def test_qemu_trust_meta_record_has_the_tsc_frequency():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "pmulab.cfg")
        with open(cfg, "w") as f:
            f.write("run --bench nop --reps 3\n--shutdown\n")
        img = os.path.join(td, "pmulab.img")
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, os.path.join(ROOT, "build", "pmulab.efi"),
                        cfg], check=True, stdout=subprocess.DEVNULL)
        r = run_qemu(smp=1, image=img, icount=7)
        assert r.rc == 0, r
        env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
        text = subprocess.run(["mtype", "-i", f"{img}@@1M", "::/pmulab/results/0001-run.jsonl"],
                              stdout=subprocess.PIPE, text=True, env=env, check=True).stdout
        recs = [json.loads(l) for l in text.splitlines()]
        meta = recs[0]
        assert meta["type"] == "meta", meta
        assert meta["tsc_source"] == "efi_stall", meta
        assert 990_000_000 <= meta["tsc_hz"] <= 1_010_000_000, meta
        assert [x["type"] for x in recs[1:]] == ["result"], recs
        assert recs[1]["noise"]["tsc_delta"] > 0, recs
