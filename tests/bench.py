#!/usr/bin/env python3
"""`make bench`: pmulab's own performance figures, measured in QEMU (TCG) here.

Prints:
  - boot-to-exit time of `info` vs an EFI app that powers off at once (same firmware,
    same -smp), and their ratio;
  - census cost per CPU at -smp 4 and -smp 64 ((info - null) / N);
  - instructions of harness overhead before cancellation (the empty kernel's raw
    count under -icount shift=7, divided by 128): what the U/2U difference removes;
  - wall time per measurement repetition (one U run + one 2U run of `nop`): the difference
    of the medians of boots with few and with 10000 more repetitions, or "not measurable"
    when the boot-to-boot noise exceeds that difference (per_rep_estimate);
  - cost of the results files, flushed after every record (a kill loses at most the
    record being written): the same campaign of many small records on a writable image
    and on a read-only one (no files written), per record and as a ratio;
  - AP dispatch: the added cost of a job on an AP instead of the BSP (goal <= 1 ms), from
    one boot that alternates 30 pairs of commands of 10 jobs between CPU 0 and CPU 1: the
    time between consecutive result records, median per command, paired differences.
  - experiments per second through the agent (`pmulab serve`, tools/pmulab_client) vs
    one boot per experiment, for `run --asm "add rax, rbx" --events tsc` (goal >= 100x),
    and the same requests per second over TCP (`serve --tcp`) vs the serial port.
  - tools/pmulab-lab: the wall time of one campaign of 20 user-code commands in image mode
    (the campaign on a disk image) and in agent mode (one `pmulab serve` boot, 20
    requests), medians of 3, and their ratio.
(`tests/bench.py --agent` prints only the agent's figures.)
Figures, not pass/fail: timings on a shared 2-core machine vary by tens of percent.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "run-qemu.sh")


def boot(args, smp=4, image=None, extra=()):
    cmd = [RUN, "--no-build", "--smp", str(smp), *extra]
    if image:
        cmd += ["--image", image]
    else:
        cmd += ["--", *args]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return dt, p.stdout


def ap_dispatch_cost(td, jobs=10, pairs=30):
    """ms per job on CPU 0 and on CPU 1 and the added cost of the AP, timed between
    result records as they stream out of one boot (read-only disk: no results files).
    Commands alternate between the CPUs; each pair's difference of medians cancels the
    slow drift of a shared host's load, and the median over pairs is the figure."""
    sizes = ",".join(f"{4 * (i + 1)}K" for i in range(jobs))  # one pointer_chase job per size
    cfg = os.path.join(td, "dispatch.cfg")
    with open(cfg, "w") as f:
        for _ in range(pairs):
            for cpu in (0, 1):
                f.write(f"run --bench pointer_chase --size {sizes} --reps 1 --warmup 0 --unroll 1 "
                        f"--cpu {cpu} --json\n")
    cmd = [RUN, "--no-build", "--smp", "2", "--readonly-disk", "--config", cfg]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    runs = []  # (cpu, [arrival times of its records]), in order
    for line in p.stdout:
        t = time.monotonic()
        if '"type":"result"' not in line:
            continue
        cpu = json.loads(line)["cpu"]
        if not runs or runs[-1][0] != cpu or len(runs[-1][1]) == jobs:
            runs.append((cpu, []))
        runs[-1][1].append(t)
    err = p.stderr.read()
    if p.wait() != 0 or len(runs) != 2 * pairs:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}, {len(runs)} commands):\n{err[-2000:]}")
    per = [statistics.median(1000 * (b - a) for a, b in zip(ts, ts[1:])) for _, ts in runs]
    bsp, ap = per[0::2], per[1::2]
    added = statistics.median(a - b for a, b in zip(ap, bsp))
    return statistics.median(bsp), statistics.median(ap), added, pairs * (jobs - 1)


# Repetitions the long `run` adds to the short one: enough that their time stands above
# the boot-to-boot noise of a few hundred milliseconds.
EXTRA_REPS = 10000


def per_rep_estimate(small, big, extra_reps):
    """Wall time per repetition from boots with few (`small`) and `extra_reps` more (`big`)
    repetitions: (difference of the medians / extra_reps, the noise per repetition (the
    larger spread, max - min, of the two sets / extra_reps), whether the figure means
    something: the difference is positive and larger than the noise)."""
    diff = statistics.median(big) - statistics.median(small)
    noise = max(max(small) - min(small), max(big) - min(big))
    return diff / extra_reps, noise / extra_reps, diff > 0 and diff > noise


def per_rep_line(small, big, extra_reps):
    per_rep, noise, meaningful = per_rep_estimate(small, big, extra_reps)
    what = (f"time per measurement repetition (nop, unroll 100: one U run + one 2U run; medians of "
            f"{len(small)} boots with {extra_reps} more repetitions than the others)")
    if not meaningful:
        return (f"{what}: not measurable here: boot-to-boot noise ({1e6 * noise:.1f} us per repetition) "
                f"exceeds the difference ({1e6 * per_rep:.1f} us per repetition)")
    return f"{what}: {1e6 * per_rep:.1f} us (+- {1e6 * noise:.1f} us) under TCG"


def median_time(fn, n=3):
    return statistics.median(fn()[0] for _ in range(n))


def main():
    null_efi = os.path.join(ROOT, "build", "bench", "null.efi")
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "empty.cfg")
        open(cfg, "w").write("# nothing\n")
        null_img = os.path.join(td, "null.img")
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), null_img, null_efi, cfg], check=True,
                       stdout=subprocess.DEVNULL)

        print("pmulab bench (QEMU TCG on this machine; medians of 3 boots)")
        rows = []
        for smp in (4, 64):
            t_null = median_time(lambda: boot([], smp=smp, image=null_img))
            t_info = median_time(lambda: boot(["info"], smp=smp))
            rows.append((smp, t_null, t_info))
            print(f"  boot-to-exit -smp {smp:<3}  null app {t_null:6.2f} s   pmulab info {t_info:6.2f} s   "
                  f"ratio {t_info / t_null:5.2f}   census {1000 * (t_info - t_null) / smp:7.1f} ms per CPU")

        _, out = boot(["run", "--bench", "empty", "--events", "tsc", "--raw", "--reps", "5", "--json"],
                      smp=1, extra=("--icount", "7"))
        rec = [json.loads(l) for l in out.splitlines() if '"type":"result"' in l][0]
        short = rec["short"]["counts"]
        overhead = sorted(short)[len(short) // 2] / 128
        print(f"  harness overhead before cancellation: {overhead:g} instructions between the two counter "
              f"reads (empty kernel, {rec['short']['copies']} copies, icount shift 7); after cancellation: "
              f"{rec['per_iteration']} ticks per iteration")

        small, big = [], []
        for _ in range(3):  # interleaved, so that a slow spell of the machine hits both
            small.append(boot(["run", "--bench", "nop", "--events", "tsc", "--reps", "11", "--warmup", "0"],
                              smp=1)[0])
            big.append(boot(["run", "--bench", "nop", "--events", "tsc", "--reps", str(11 + EXTRA_REPS),
                             "--warmup", "0"], smp=1)[0])
        print("  " + per_rep_line(small, big, EXTRA_REPS))
        # Results files: 20 commands x (meta + 16 CPUs) = 340 records, each flushed.
        cfg = os.path.join(td, "records.cfg")
        with open(cfg, "w") as f:
            f.write("msr read 0x1b --cpu all\n" * 20 + "--shutdown\n")
        img = os.path.join(td, "records.img")
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img,
                        os.path.join(ROOT, "build", "pmulab.efi"), cfg], check=True, stdout=subprocess.DEVNULL)
        records = 20 * (16 + 1)
        t_rw = median_time(lambda: boot([], smp=16, image=img))
        t_ro = median_time(lambda: boot([], smp=16, image=img, extra=("--readonly-disk",)))
        print(f"  results files ({records} records, flushed one by one): writable image {t_rw:6.2f} s, "
              f"read-only (no files) {t_ro:6.2f} s, ratio {t_rw / t_ro:5.2f}, "
              f"{1000 * (t_rw - t_ro) / records:6.2f} ms per record under TCG")

        bsp, ap, added, n = ap_dispatch_cost(td)
        print(f"  AP dispatch ({n} jobs each way, one boot): BSP {bsp:6.2f} ms per job, AP {ap:6.2f} ms per job, "
              f"ratio {ap / bsp:5.2f}, added {added:+6.2f} ms per AP job (goal <= 1 ms; ~100 ms before "
              f"pmulab's AP workers)")
    agent_bench()
    lab_bench()
    return 0


def lab_bench(commands=20, n=3):
    """pmulab-lab run: one configuration, `commands` user-code lines, image vs agent mode."""
    lab = os.path.join(ROOT, "tools", "pmulab-lab")
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            for k in range(1, commands + 1):
                f.write(f'run --asm "{"; ".join(["add rax, rbx"] * k)}" --events tsc\n')
        times = {}
        for mode in ("--no-agent", "--agent"):
            ts = []
            for i in range(n):
                out = os.path.join(td, f"{mode.strip('-')}{i}")
                t0 = time.monotonic()
                p = subprocess.run([lab, "run", "--config", cfg, "--smp", "2", mode, "--out", out],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
                ts.append(time.monotonic() - t0)
                if p.returncode != 0:
                    sys.exit(f"bench: pmulab-lab run {mode} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
            times[mode] = statistics.median(ts)
    t_img, t_agent = times["--no-agent"], times["--agent"]
    print(f"  pmulab-lab run, one configuration of {commands} user-code commands (-smp 2, medians of {n}): "
          f"image mode {t_img:6.2f} s, agent mode {t_agent:6.2f} s, ratio image/agent {t_img / t_agent:5.2f}")


AGENT_LINE = 'run --asm "add rax, rbx" --events tsc'


def agent_rate(n, tcp):
    """(seconds until the agent answered its hello, seconds per request) for n requests."""
    from pmulab.client import Agent
    t0 = time.monotonic()
    agent = Agent.qemu(["--no-build", "--smp", "2"], timeout=900, tcp=tcp)
    t_up = time.monotonic() - t0
    try:
        t0 = time.monotonic()
        for _, ans in agent.batch([AGENT_LINE] * n):
            if ans.status != 0 or not ans.results:
                sys.exit(f"bench: agent request failed ({'TCP' if tcp else 'serial'}): {ans.records}")
        return t_up, (time.monotonic() - t0) / n
    finally:
        agent.close()


def agent_bench(n=300):
    """Experiments per second: one boot each (run-qemu.sh) vs one agent (pmulab serve),
    and the agent over its two transports (serial port, TCP)."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    t_boot = median_time(lambda: boot(["run", "--asm", "add rax, rbx", "--events", "tsc"], smp=2))
    t_up, t_agent = agent_rate(n, tcp=False)
    print(f"  agent vs one boot per experiment ({AGENT_LINE!r}, -smp 2): one boot {t_boot:6.2f} s "
          f"({1 / t_boot:5.2f}/s); agent {1000 * t_agent:6.1f} ms per experiment ({1 / t_agent:6.1f}/s, "
          f"{n} requests, agent up in {t_up:5.2f} s); ratio {t_boot / t_agent:6.1f}x")
    t_up_tcp, t_tcp = agent_rate(n, tcp=True)
    print(f"  agent over TCP vs serial ({n} requests each, -smp 2): serial {1000 * t_agent:6.1f} ms per request "
          f"({1 / t_agent:6.1f}/s); TCP {1000 * t_tcp:6.1f} ms per request ({1 / t_tcp:6.1f}/s, agent up in "
          f"{t_up_tcp:5.2f} s); TCP/serial rate ratio {t_agent / t_tcp:5.2f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--agent"]:  # only the agent's figures
        agent_bench()
        sys.exit(0)
    sys.exit(main())
