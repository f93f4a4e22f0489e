"""QEMU boot with the sample event files on the stick (tests/data/events as
\\pmulab\\events\\*.evt, the way `make image` puts them): under -cpu Skylake-Client
(GenuineIntel 06_5EH stepping 3, no PMU under TCG) a model-specific name resolves
through skylake_core.evt and pmulab says plainly that there is no PMU to count it,
an unknown name gets the clear error and exit status 2, `events` lists the file's
events, and a nanoBench-style event list file on the stick (named with '/' or '\\')
resolves the same way."""

import os
import subprocess
import tempfile

from pmulab_test import ROOT, data_path, run_qemu

QEMU = True

EVENTS = data_path("events")


def _image(td, cfg_text, extra=()):
    cfg = os.path.join(td, "pmulab.cfg")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    img = os.path.join(td, "pmulab.img")
    pairs = [f"{os.path.join(EVENTS, n)}=::/pmulab/events/{n}" for n in sorted(os.listdir(EVENTS))]
    subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, os.path.join(ROOT, "build", "pmulab.efi"),
                    cfg, *pairs, *extra], check=True, stdout=subprocess.DEVNULL)
    return img


def test_qemu_skylake_client_resolves_names_from_the_event_file():
    with tempfile.TemporaryDirectory() as td:
        my = os.path.join(td, "my.cfg")
        with open(my, "w") as f:
            f.write("# nanoBench style\n0E.01 UOPS_ISSUED.ANY\nMEM_LOAD_RETIRED.L3_MISS\n")
        bad = os.path.join(td, "bad.cfg")
        with open(bad, "w") as f:
            f.write("0E.01 UOPS_ISSUED.ANY\nUOPS_ISSUED.AMY\n")
        img = _image(td, "events --check BOGUS.EVENT\n"
                         "events --check UOPS_ISSUED.ANY,MEM_LOAD_RETIRED.L3_MISS\n"
                         "run --bench nop --events UOPS_ISSUED.ANY\n"
                         "run --bench nop --events-file /pmulab/my.cfg\n"
                         "run --bench nop --events-file \\pmulab\\bad.cfg\n"
                         "events\n"
                         "--shutdown\n",
                     extra=(f"{my}=::/pmulab/my.cfg", f"{bad}=::/pmulab/bad.cfg"))
        r = run_qemu(smp=1, cpu="Skylake-Client", image=img)
        # The campaign's status is its first failure: the unknown name (2); the
        # model-specific names resolve and fail only for want of a PMU (3).
        assert r.rc == 2, r
        lines = r.out.splitlines()
        errors = r.diag()  # diagnostics: on stderr, the listing on stdout
        no_pmu = ("CPU 0: cannot count 'UOPS_ISSUED.ANY': no architectural performance monitoring: "
                  "CPUID.0AH:EAX[7:0] = 0 (a hypervisor without PMU passthrough)")
        assert errors[:5] == [
            "pmulab: error: \\pmulab\\pmulab.cfg:1: CPU 0: event list item 1: event 'BOGUS.EVENT' is "
            "not in the event file for 06_5EH (\\pmulab\\events\\skylake_core.evt) nor an architectural event",
            "pmulab: error: \\pmulab\\pmulab.cfg:2: CPU 0: event 'UOPS_ISSUED.ANY' cannot be counted: no "
            "architectural performance monitoring (CPUID.0AH:EAX[7:0] = 0)",
            "pmulab: error: \\pmulab\\pmulab.cfg:3: " + no_pmu,
            "pmulab: error: \\pmulab\\pmulab.cfg:4: " + no_pmu,
            "pmulab: error: \\pmulab\\pmulab.cfg:5: --events-file: \\pmulab\\bad.cfg:2: event 'UOPS_ISSUED.AMY' is "
            "not in the event file for 06_5EH (\\pmulab\\events\\skylake_core.evt) nor an architectural event",
        ], r
        i = lines.index("Model-specific events of CPU 0 (06_5EH, \\pmulab\\events\\skylake_core.evt, 39 events):")
        assert lines[i + 1] == "  INST_RETIRED.ANY" + " " * 48 + "FIXED_CTR0", r
        assert "  UOPS_ISSUED.ANY" + " " * 49 + "0E.01" in lines, r
        assert ("  CYCLE_ACTIVITY.STALLS_MEM_ANY" + " " * 35 + "A3.14.CMSK=20.CTR=0-3") in lines, r
        assert not [l for l in lines + errors if "unknown event name" in l], r
