"""QEMU boots of the measurement engine: `run`, `bench list`, `selftest`.

The oracle: under `-icount shift=7` QEMU advances the TSC by exactly 128 per guest
instruction, so with interrupts masked every kernel must measure exactly
128 x (its documented instructions per iteration) TSC ticks per iteration, and the
empty kernel exactly 0. Several commands share one boot through a pmulab.cfg
campaign (one command per line) to keep the boot count low.

On the AP only per_iteration (the median), the fraction and the minimum are
asserted exactly: QEMU runs all vCPUs in one thread with one shared instruction
clock, so the BSP's timer interrupt can land inside an occasional AP run (it
shows up in that run's count, hence in avg/max, never in the median of 11).
"""

import json
import os
import tempfile

from pmulab_test import run_qemu

QEMU = True

SHIFT = 7
TICK = 1 << SHIFT
EXACT_BSP = ("per_iteration", "min", "median", "avg", "trimmed", "max")
EXACT_AP = ("per_iteration", "min", "median")


def _campaign(lines, **kw):
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        return run_qemu(config=path, icount=SHIFT, smp=2, timeout=120, **kw)
    finally:
        os.unlink(path)


def _assert_exact(rec, ipi):
    want = TICK * ipi
    fields = EXACT_BSP if rec["cpu"] == 0 else EXACT_AP
    for k in fields:
        assert rec[k] == want, f"{rec['bench']} CPU {rec['cpu']}: {k} = {rec[k]}, want {want}: {rec}"
    assert rec["fraction"] == [want, 1], rec


def _kernels(res):
    return {k["name"]: k for k in res.records("kernel")}


def test_qemu_every_kernel_exact_on_bsp_and_ap():
    r = _campaign([
        "bench list --json",
        "run --bench all --events tsc --cpu all --json",
        "run --bench empty,nop,branch_pred,pointer_chase,store_stream,cpuid --cpu 1 --unroll 50 --json",
    ])
    assert r.rc == 0, r
    kernels = _kernels(r)
    assert len(kernels) == 17, kernels.keys()
    results = r.records("result")
    by_run = {}
    for rec in results:
        assert rec["event"] == "tsc" and rec["counter"] == "TSC" and rec["run"] == 0 and rec["runs"] == 1, rec
        assert rec["apic_id"] == rec["cpu"], rec
        assert rec["instructions_per_iteration"] == kernels[rec["bench"]]["instructions_per_iteration"], rec
        _assert_exact(rec, rec["instructions_per_iteration"])
        by_run.setdefault((rec["bench"], rec["cpu"], rec["unroll"]), rec)
    # --bench all: every kernel but rdpmc (RDPMC raises #UD under TCG) on both CPUs.
    for name in kernels:
        for cpu in (0, 1):
            if name == "rdpmc":
                assert (name, cpu, 100) not in by_run
            else:
                assert (name, cpu, 100) in by_run, f"{name} on CPU {cpu} missing"
    warnings = [w["message"] for w in r.records("warning")]
    assert any("kernel 'rdpmc' is not supported on CPU 0: RDPMC 0x0 raised #UD" in w for w in warnings), warnings
    # The explicit AP run.
    for name in ("empty", "nop", "branch_pred", "pointer_chase", "store_stream", "cpuid"):
        rec = by_run[(name, 1, 50)]
        assert rec["iterations"] == 50, rec
    # The documented counts themselves (what bench list says is what -icount measures).
    assert by_run[("empty", 0, 100)]["per_iteration"] == 0
    expect = {"empty": 0, "nop": 1, "add_chain": 1, "add_indep": 8, "imul_chain": 1, "div_chain": 1,
              "pointer_chase": 1, "store_stream": 3, "load_stream": 3, "branch_pred": 6, "branch_random": 6,
              "lfence": 1, "mfence": 1, "cpuid": 2, "rdtsc": 1, "rdmsr": 1, "rdpmc": 1}
    assert {k: v["instructions_per_iteration"] for k, v in kernels.items()} == expect
    for name, k in kernels.items():
        if name != "rdpmc":
            assert by_run[(name, 0, 100)]["per_iteration"] == TICK * k["instructions_per_iteration"]


def test_qemu_options_are_exact_and_reflected_in_records():
    r = _campaign([
        "run --bench nop,cpuid,pointer_chase --basic --json",
        "run --bench add_indep,load_stream --loop 20 --unroll 10 --json",
        "run --bench nop --reps 7 --warmup 0 --agg min --raw --json",
        "run --bench branch_random --agg trimmed --reps 5 --warmup 1 --seed 12345 --json",
        "run --bench div_chain,lfence --irq lvt --serialize cpuid --cpu all --json",
        "run --bench pointer_chase,load_stream,store_stream --size 4K,64K,2M --unroll 20 --json --progress",
    ])
    assert r.rc == 0, r
    res = r.records("result")
    basic = [x for x in res if x["basic"]]
    assert [x["bench"] for x in basic] == ["nop", "cpuid", "pointer_chase"]
    for x in basic:
        assert x["iterations"] == 100 and x["unroll"] == 100, x
        _assert_exact(x, x["instructions_per_iteration"])
    looped = [x for x in res if x["loop"] == 20]
    assert [x["bench"] for x in looped] == ["add_indep", "load_stream"]
    for x in looped:
        assert x["iterations"] == 200 and x["unroll"] == 10, x
        _assert_exact(x, x["instructions_per_iteration"])
    raw = [x for x in res if x["agg"] == "min"][0]
    assert (raw["reps"], raw["warmup"]) == (7, 0), raw
    assert raw["short"]["copies"] == 100 and raw["long"]["copies"] == 200
    assert len(raw["short"]["counts"]) == 7 and len(raw["long"]["counts"]) == 7
    # Every single repetition differs by exactly 100 nops on the BSP.
    for s, l in zip(raw["short"]["counts"], raw["long"]["counts"]):
        assert l - s == 100 * TICK, raw
    trimmed = [x for x in res if x["agg"] == "trimmed"][0]
    assert (trimmed["bench"], trimmed["reps"], trimmed["warmup"]) == ("branch_random", 5, 1), trimmed
    _assert_exact(trimmed, 6)
    lvt = [x for x in res if x["irq"] == "lvt"]
    assert [(x["bench"], x["cpu"]) for x in lvt] == [("div_chain", 0), ("div_chain", 1), ("lfence", 0),
                                                      ("lfence", 1)]
    for x in lvt:
        assert x["serialize"] == "cpuid"
        _assert_exact(x, 1)
    sized = [x for x in res if x["unroll"] == 20]
    assert [(x["bench"], x["size"]) for x in sized] == [
        (b, s) for b in ("pointer_chase", "load_stream", "store_stream") for s in (4096, 65536, 2 << 20)]
    for x in sized:
        _assert_exact(x, x["instructions_per_iteration"])
    prog = r.records("progress")
    assert [p["done"] for p in prog] == list(range(9)) and all(p["total"] == 9 for p in prog), prog


def test_qemu_largest_buffers_are_exact_and_freed():
    # 256 MiB, the largest working set, twice in a 512 MiB guest: the second
    # AllocatePages only succeeds because the first buffer was freed.
    r = run_qemu("run", "--bench", "pointer_chase,load_stream", "--size", "256M", "--reps", "3", "--warmup", "1",
                 "--unroll", "20", json_mode=True, icount=SHIFT, smp=1, timeout=120, extra=("--memory", "512M"))
    assert r.rc == 0, r
    res = r.records("result")
    assert [(x["bench"], x["size"]) for x in res] == [("pointer_chase", 256 << 20), ("load_stream", 256 << 20)], r
    for x in res:
        _assert_exact(x, x["instructions_per_iteration"])


def test_qemu_unsupported_is_exit_3_without_crash():
    # RDPMC raises #UD under TCG: probed with the fault-safe RDPMC, reported, no crash.
    r = run_qemu("run", "--bench", "rdpmc", "--cpu", "all", json_mode=True, icount=SHIFT, smp=2, timeout=60)
    assert r.rc == 3, r
    errs = r.records("error")
    assert [e["code"] for e in errs] == ["unsupported", "unsupported"], errs
    assert errs[0]["message"] == "kernel 'rdpmc' is not supported on CPU 0: RDPMC 0x0 raised #UD (invalid opcode)"
    assert errs[1]["message"].startswith("kernel 'rdpmc' is not supported on CPU 1: RDPMC 0x0 raised #UD")
    assert r.records("result") == []


def test_qemu_pmu_event_without_pmu_is_exit_3():
    r = run_qemu("run", "--bench", "nop", "--events", "tsc,cycles", icount=SHIFT, smp=1, timeout=60)
    assert r.rc == 3, r
    assert "pmulab: error: " in r.err and "cycles" in r.err, r  # diagnostics: stderr


BAD = [
    ("run", "run: --code HEX or --bench NAME is required; kernels: empty, nop, add_chain"),
    ("run --bench nope", "--bench: unknown kernel 'nope'; kernels: empty, nop,"),
    ("run --bench nop,nop", "--bench: 'nop' is listed twice"),
    ("run --bench nop,,cpuid", "--bench: empty item in 'nop,,cpuid'"),
    ("run --bench all,nop", "--bench: 'all' cannot be combined with other names"),
    ("run --bench nop --unroll 0", "--unroll: 0 is out of range 1..1000000"),
    ("run --bench nop --unroll 1000001", "--unroll: 1000001 is out of range 1..1000000"),
    ("run --bench nop --unroll 99999999999999999999999", "--unroll: '99999999999999999999999' is too large"),
    ("run --bench nop --unroll x", "--unroll: 'x' is not a number"),
    ("run --bench nop --loop 0", "--loop: 0 is out of range 1..1000000000"),
    ("run --bench nop --reps 0", "--reps: 0 is out of range 1..100000"),
    ("run --bench nop --warmup -1", "--warmup: '-1' is not a number"),
    ("run --bench nop --agg mode", "--agg: 'mode' is not one of min, median, avg, trimmed, max"),
    ("run --bench nop --irq nmi", "--irq: 'nmi' is not 'cli' or 'lvt'"),
    ("run --bench nop --serialize mfence", "--serialize: 'mfence' is not 'lfence' or 'cpuid'"),
    ("run --bench nop --cpu 9", "--cpu 9: there are only 2 logical processors (0..1)"),
    ("run --bench nop --cpu two", "--cpu: 'two' is not a CPU index, list or range (0,2 or 1-3), 'all', 'bsp', 'core' or 'atom'"),
    ("run --bench nop --size 4K", "--size: none of the chosen kernels uses a buffer"),
    ("run --bench pointer_chase --size 3000", "--size 3000: pointer_chase needs a multiple of 4K between 4K and 256M"),
    ("run --bench pointer_chase --size 512M", "--size 536870912: pointer_chase needs a multiple of 4K between 4K"),
    ("run --bench load_stream --size 48K", "--size 49152: load_stream needs a power of two"),
    ("run --bench pointer_chase --size 4Q", "--size: '4Q' is not a number (suffixes K, M, G allowed)"),
    ("run --bench nop --seed 0", "--seed: 0 is out of range"),
    ("run --bench nop --decimals 10", "--decimals: 10 is out of range 0..9"),
    ("run --bench nop stray", "run: unexpected argument 'stray'"),
    ("run --bench nop --events tsc,tsc", "--events: 'tsc' is listed twice"),
    ("run --bench nop --unroll", "option --unroll needs a value"),
    ("bench", "bench: expected 'list', got ''"),
    ("bench show", "bench: expected 'list', got 'show'"),
    ("bench list extra", "bench list: unexpected argument 'extra'"),
    ("selftest --cpu 7", "--cpu 7: there are only 2 logical processors (0..1)"),
]
# Caught by the campaign check before anything runs (check_campaign): on a command line.
BAD_OPTIONS = [
    ("run --bench nop --bogus", "run: unknown option '--bogus' (see 'pmulab help run')"),
    ("selftest --bogus", "selftest: unknown option '--bogus'"),
]


# run's option values need no CPU: the campaign check passes every run line through run's
# parser, so these are all reported before anything runs (the others need the machine).
CHECKED = [(cmd, want) for cmd, want in BAD if cmd.split()[0] == "run" and "--cpu 9" not in cmd and
           "tsc,tsc" not in cmd]
AT_RUN = [(cmd, want) for cmd, want in BAD if (cmd, want) not in CHECKED]


def test_qemu_bad_run_values_stop_the_campaign_before_anything_runs():
    # Every bad value with its line, nothing run (no table, no record), exit status 2.
    r = _campaign([cmd + " --json" for cmd, _ in CHECKED] + ["run --bench nop,empty --reps 3"])
    assert r.rc == 2, r
    assert len(CHECKED) >= 20, CHECKED
    for i, (cmd, want) in enumerate(CHECKED, 1):
        line = f"pmulab: error: \\pmulab\\pmulab.cfg:{i}: "
        got = [l for l in r.err.splitlines() if l.startswith(line)]
        assert len(got) == 1, (cmd, line, r.err)
        msg = got[0][len(line):]
        assert msg.startswith(want) or msg.startswith("run: " + want), (cmd, want, msg)
        assert not msg.startswith("run: run:"), msg
    assert "pmulab.cfg has errors; nothing was run" in r.err, r
    assert not [l for l in r.out.splitlines() if l.startswith(("nop ", "empty ", "{"))], r


def test_qemu_bad_arguments_are_usage_errors():
    # One boot, one bad command per line (JSON errors: the code "invalid argument" is
    # exit status 2); each prints its error, prefixed with its line, and the campaign
    # goes on; the boot's status is the first failure's: 2. The last line is a good
    # text-mode run, so nothing hung or broke on the way.
    r = _campaign([cmd + " --json" for cmd, _ in AT_RUN] + ["run --bench nop,empty --reps 3"])
    assert r.rc == 2, r
    lines = r.out.splitlines()
    recs = [json.loads(l) for l in lines if l.startswith("{")]
    # A --json line of a command that reads hardware starts with its meta record (issue
    # #26 item 19), then its error; `bench` prints no meta record.
    want = [t for cmd, _ in AT_RUN for t in (["error"] if cmd.startswith("bench") else ["meta", "error"])]
    assert [x["type"] for x in recs] == want, r
    errors = [x for x in recs if x["type"] == "error"]
    for i, ((cmd, want), e) in enumerate(zip(AT_RUN, errors), 1):
        prefix = f"\\pmulab\\pmulab.cfg:{i}: "
        assert e["type"] == "error" and e["code"] == "invalid argument", (cmd, e)
        assert e["message"].startswith(prefix), (cmd, e)
        assert e["message"][len(prefix):].startswith(want), (cmd, want, e)
    table = [l.split() for l in lines if l.startswith(("nop ", "empty "))]
    unit = ["TSC", "ticks", "/", "iteration"]
    assert table == [["nop", "-", "tsc", "TSC", "0", "0", "0", "128.00", "128.00", "128.00", "128.00", "128.00", *unit],
                     ["empty", "-", "tsc", "TSC", "0", "0", "0", "0.00", "0.00", "0.00", "0.00", "0.00", *unit]], r
    for cmd, want in BAD_OPTIONS:
        r = run_qemu(*cmd.split(), "--json", smp=2, timeout=60)
        assert r.rc == 2, r
        (e,) = r.records("error")
        assert e["code"] == "invalid argument" and e["message"].startswith(want), (cmd, e)


def test_qemu_selftest_under_tcg():
    r = run_qemu("selftest", "--cpu", "all", json_mode=True, icount=SHIFT, smp=2, timeout=90)
    assert r.rc == 0, r
    checks = r.records("check")
    status = {}
    for c in checks:
        status.setdefault(c["name"], []).append(c["status"])
    assert not [c for c in checks if c["status"] == "FAIL"], checks
    for name in ("TSC advances", "TSC is monotonic over 10000 reads", "empty kernel measures 0 per iteration",
                 "U vs 2U linearity for nop (U = 1000 and 2000)",
                 "basic mode (0 and U copies) agrees with U/2U for nop",
                 "loop overhead cancels: nop with --loop 10 agrees with U/2U",
                 "interrupts masked via the local APIC LVT (--irq lvt) agree with cli for nop",
                 "rdpmc kernel: RDPMC is probed before code generation"):
        assert status.get(name) == ["PASS", "PASS"], (name, status.get(name))
    assert status["every CPU measures the nop kernel"] == ["PASS"]
    # The PCI configuration seam on EFI (ports CF8H/CFCH): q35's host bridge, 8086:29C0.
    (pci,) = [c for c in checks if c["name"] == "pci: configuration space reads the host bridge at 00:00.0"]
    assert pci["status"] == "PASS" and pci["detail"] == "vendor 8086 device 29c0", pci
    empty = [c for c in checks if c["name"] == "empty kernel measures 0 per iteration"]
    assert [c["detail"] for c in empty] == ["0.00 TSC ticks per iteration"] * 2
    lin = [c for c in checks if c["name"].startswith("U vs 2U")]
    assert [c["detail"] for c in lin] == ["128.00 vs 128.00 TSC ticks per iteration"] * 2
    # nmi-path: on the AP (the BSP sends) it runs; on the BSP the AP's NMIs come only after the
    # code's bounded loop under -icount (one vCPU at a time), which the check says instead of hanging.
    nmi = {c.get("cpu"): c for c in checks if c["name"] == "nmi-path"}
    assert nmi[1]["status"] == "PASS", nmi
    assert nmi[0]["status"] == "SKIP" and nmi[0]["detail"].startswith(
        "the other CPU did not send while the code ran: its NMIs came only after the code's 2^28 loops"), nmi
    pmu = [c for c in checks if c["status"] == "SKIP" and c["name"] != "nmi-path"]
    assert len(pmu) >= 6, checks
    for c in pmu:
        assert "CPUID.0AH:EAX[7:0] = 0" in c["detail"], c
        # TCG's default -cpu max is AuthenticAMD: the reason speaks of AMD's counters, not Intel's
        # (the LBR check says it per CPU).
        cpu = c.get("cpu", 0)
        assert c["detail"].startswith(f"CPU {cpu}: no performance-monitoring counters: no AMD core counters"), c
        assert "Intel" not in c["detail"], c
    summary = r.records("summary")
    assert len(summary) == 1 and summary[0]["failed"] == 0, summary
    assert summary[0]["tests"] == len(checks)


def test_qemu_cpu_lists_and_repeated_options():
    """--cpu 0-1 measures both CPUs; repeated --bench and --events add up (exact under -icount 7)."""
    r = run_qemu("run", "--bench", "nop", "--bench", "add_chain", "--events", "tsc", "--cpu", "0-1", "--unroll", "10",
                 "--reps", "3", "--warmup", "1", smp=2, icount=7, json_mode=True, timeout=200)
    assert r.rc == 0, r
    res = r.records("result")
    got = sorted((x["bench"], x["cpu"]) for x in res)
    assert got == [("add_chain", 0), ("add_chain", 1), ("nop", 0), ("nop", 1)], r
    for x in res:
        assert x["median"] == TICK and x["min"] == TICK, x  # nop and add_chain: one instruction each
    r = run_qemu("run", "--bench", "nop", "--cpu", "atom", smp=2, timeout=120)
    assert r.rc == 3, r  # QEMU's CPU has no core types
    assert any("--cpu atom: no logical processor reports that core type" in l for l in r.diag()), r
