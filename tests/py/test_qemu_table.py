"""The `run` text table on the target (issue #12 item 17), under -icount shift=7 where
every guest instruction is exactly 128 TSC ticks: the columns say what they are (the
per-iteration value, the interquartile range of the per-run differences, the
estimates from the min and the max), the unit is on every row, the columns stay
aligned under a long name, and the JSON records carry the same values, unrounded."""

import json
import os
import tempfile

from pmulab_test import run_qemu

QEMU = True

LEGEND = [
    "per iteration: median = median(long runs) - median(short runs), over the iterations; q1..q3 = the "
    "interquartile range of the 5 per-run differences (the spread);",
    "  est(min), est(max) = the same estimate from the min and from the max of each version (not a range)",
]
VALUES = "      128.00       128.00       128.00       128.00       128.00  TSC ticks / iteration"
LONG = "a_rather_long_label_for_my_code_under_test"


def test_qemu_run_text_table_under_icount():
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "table.cfg")
        with open(cfg, "w") as f:
            f.write("run --bench nop,pointer_chase --reps 5\n"
                    f"run --code 90 --name {LONG} --reps 5\n"
                    "run --bench nop --reps 5 --json\n")
        r = run_qemu(config=cfg, icount=7, smp=1, timeout=120)
    assert r.rc == 0, r
    lines = r.out.splitlines()
    head = "pmulab run: 100 and 200 copies (U/2U), loop 1, 5 reps + 3 warm-up, aggregate median, interrupts cli, " \
           "serialise lfence"
    i = lines.index(head)
    assert lines[i + 1:i + 3] == LEGEND, r
    assert lines[i + 3:i + 6] == [
        "bench            size event      counter   cpu  apic  run       median           q1           q3"
        "     est(min)     est(max)  unit",
        "nop                 - tsc        TSC         0     0    0 " + VALUES,
        "pointer_chase      4K tsc        TSC         0     0    0 " + VALUES,
    ], r
    # A long name widens its column; the numbers stay under their headers.
    j = lines.index(head, i + 1)
    assert lines[j + 1:j + 3] == LEGEND, r
    w = len(LONG)
    assert lines[j + 3:j + 5] == [
        "bench".ljust(w) + "   size event      counter   cpu  apic  run       median           q1           q3"
        "     est(min)     est(max)  unit",
        LONG + "      - tsc        TSC         0     0    0 " + VALUES,
    ], r
    meta, rec = [json.loads(l) for l in lines if l.startswith("{")]  # --json: the meta record first
    assert meta["type"] == "meta" and rec["type"] == "result", (meta, rec)
    for k in ("per_iteration", "min", "median", "avg", "trimmed", "max", "q1", "q3"):
        assert rec[k] == 128, (k, rec)
    assert rec["unit"] == "TSC ticks / iteration" and rec["fraction"] == [128, 1], rec
