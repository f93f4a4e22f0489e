"""The memory of an experiment and the prefetcher control on the target (issue #24):
R14's area as large as the memory map allows, aligned, at a physical address inside a
free region, given back afterwards; too large a size refused with the largest that
fits; --prefetchers off refused under QEMU TCG (no documented control)."""

import json
import os
import re
import tempfile

from pmulab_test import run_qemu, shell_image

QEMU = True

_MAP = re.compile(r"memory map: (\d+) bytes free in (\d+) regions; the largest: (\d+) bytes \(\d+ MiB\) at 0x([0-9a-f]+)")


def _campaign(lines, memory="4G"):
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "pmulab.cfg")
        open(cfg, "w").write("\n".join(lines + ["--shutdown"]) + "\n")
        return run_qemu(smp="1", config=cfg, timeout=240, extra=("--memory", memory))


def test_qemu_large_aligned_r14_area_is_physical_and_released():
    big = 2000 << 20  # more than all the memory below 4 GiB: only the region above fits it
    r = _campaign(["info",
                   f"run --code 4801d8 --events tsc --reps 3 --r14-size 2000M --r14-align 2M --json",
                   "info"])
    assert r.rc == 0, r
    maps = _MAP.findall(r.out)
    assert len(maps) == 2, r
    (_, _, largest0, at0), (_, _, largest1, at1) = maps
    # The largest free region is the same before and after: the 2000 MiB area was given back.
    assert (largest0, at0) == (largest1, at1), maps
    lo, size = int(at0, 16), int(largest0)
    res = [json.loads(l) for l in r.out.splitlines() if l.startswith('{"type":"result"')]
    assert res, r
    for x in res:
        assert x["r14_size"] == big and x["r14_align"] == 2 << 20, x
        # The area's physical start: 2 MiB-aligned, inside the largest free region (4 GiB
        # guest: the 2 GiB above 4 GiB), with its guard pages.
        assert x["r14"] % (2 << 20) == 0, x
        assert lo + 4096 <= x["r14"] and x["r14"] + big + 4096 <= lo + size, (x["r14"], lo, size)


def test_qemu_r14_area_larger_than_memory_is_refused():
    r = run_qemu("run", "--code", "90", "--events", "tsc", "--r14-size", "64G", smp="1", timeout=120,
                 extra=("--memory", "4G"))
    assert r.rc == 3, r
    m = re.search(r"--r14-size 68719476736 is more than the memory map allows: the largest R14 area at alignment "
                  r"4096 is (\d+) bytes \(--r14-size (\d+)K, at 0x([0-9a-f]+);", r.out + r.err)
    assert m, r
    assert int(m.group(1)) == int(m.group(2)) * 1024
    assert int(m.group(3), 16) == 0x100001000  # just past the guard page at 4 GiB
    assert "pmulab run: 100 and 200 copies" not in r.out, r  # nothing ran


def test_qemu_prefetchers_off_refused_under_tcg():
    r = run_qemu("run", "--prefetchers", "off", "--code", "90", "--events", "tsc", smp="1", timeout=120)
    assert r.rc == 3, r
    assert ("--prefetchers off: AMD documents MSR C000_0108H (PrefetchControl) for families 19h and 1Ah only "
            "(AuthenticAMD family 0xf model 0x6b); nothing was run") in r.out + r.err, r


_SUMMARY = re.compile(r"^  ([A-Za-z_ ]+?) *: +([0-9,]+) Pages", re.M)


def test_qemu_memory_map_unchanged_when_pmulab_exits():
    """The UEFI shell's memmap before and after pmulab runs with a 1 GiB R14 area
    (2 MiB-aligned): every page pmulab allocated (LoaderCode, LoaderData: its image, heap,
    code, scratch areas, overlay) is back; the only change is the firmware's own
    boot-services data (the shell, the file system), which Available pays for exactly."""
    with tempfile.TemporaryDirectory() as td:
        img = shell_image(td, "fs0:\r\nmemmap\r\n\\pmulab\\app.efi run --code 90 --events tsc --reps 2 "
                              "--r14-size 1G --r14-align 2M\r\nmemmap\r\nreset -s\r\n")
        keep = os.path.join(td, "keep")
        r = run_qemu(smp="1", image=img, timeout=150, extra=("--memory", "2G", "--keep", keep))
        assert r.rc == 0, r
        log = open(os.path.join(keep, "serial.log"), encoding="utf-8", errors="replace").read()
    assert "TSC ticks / iteration" in log  # pmulab ran, with its 1 GiB area
    rows = [(k.strip(), int(v.replace(",", ""))) for k, v in _SUMMARY.findall(log)]
    n = len(rows) // 2
    assert n >= 10 and len(rows) == 2 * n, rows
    before, after = dict(rows[:n]), dict(rows[n:])
    assert before["LoaderCode"] == after["LoaderCode"] and before["LoaderData"] == after["LoaderData"], (before, after)
    grown = after["BS_Data"] - before["BS_Data"]
    assert before["Available"] - after["Available"] == grown, (before, after)
    for k in before:
        if k not in ("BS_Data", "Available"):
            assert before[k] == after[k], (k, before, after)
