"""tests/bench.py's computed figures (no QEMU): the time per measurement repetition."""

import os
import sys

from pmulab_test import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))
import bench  # noqa: E402


def test_per_rep_is_the_difference_of_medians_over_the_extra_reps():
    per_rep, noise, ok = bench.per_rep_estimate([2.0, 2.1, 2.05], [3.0, 3.1, 3.02], 10000)
    assert ok
    assert abs(per_rep - 0.97 / 10000) < 1e-12
    assert abs(noise - 0.1 / 10000) < 1e-12
    line = bench.per_rep_line([2.0, 2.1, 2.05], [3.0, 3.1, 3.02], 10000)
    assert line.endswith(": 97.0 us (+- 10.0 us) under TCG"), line


def test_per_rep_under_noise_is_not_printed_as_a_negative_time():
    # Before: one boot each, (t_big - t_small) / reps printed "-103.5 us" when the short boot was slower.
    small, big = [2.4, 2.0, 2.2], [2.1, 2.3, 2.15]
    per_rep, _, ok = bench.per_rep_estimate(small, big, 10000)
    assert per_rep < 0 and not ok
    line = bench.per_rep_line(small, big, 10000)
    assert "not measurable here: boot-to-boot noise (40.0 us per repetition) exceeds the difference" in line, line
    assert " under TCG" not in line
    # Positive but within the noise: also not a figure.
    assert not bench.per_rep_estimate([2.0, 2.5, 2.2], [2.3, 2.4, 2.35], 10000)[2]


def test_sim_bench_parses_the_executor_line_and_its_loop_is_the_users_code():
    # The line UnicornRunner prints at exit with PMULAB_SIM_STATS=1.
    m = bench.SIM_STATS.search("pmulab-sim: executor: 378940310 instructions in 9.566 s "
                               "(39.6 million per second), 638 regions\n")
    assert m and (int(m.group(1)), float(m.group(2))) == (378940310, 9.566)
    # make bench's loops are all user code: 1000 + 2000 copies x 100 iterations of the one-
    # instruction pointer_chase body in one rep, plus the harness (under 1 %).
    _, cpu, insns, seconds = bench.sim_run(bench.SIM_SKYLAKE, ["run", "--bench", "pointer_chase", "--size", "16K",
                                                               "--unroll", "1000", "--loop", "100", "--reps", "1",
                                                               "--warmup", "0"], ("--cpus", "0"))
    assert 300000 <= insns < 303000, insns
    assert seconds > 0 and cpu > 0
