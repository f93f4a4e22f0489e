"""tools/pmulab-nanobench on the host: nanoBench.sh options -> pmulab run (table-driven,
with nanoBench's defaults), unique-prefix abbreviations, bad options (status 2, one
clear line), campaign lines, and nanoBench's output form from recorded pmulab JSON."""

import os
import subprocess
import tempfile

import pytest

from pmulab import nanobench as nbt
from pmulab_test import ROOT, data_path

TOOL = os.path.join(ROOT, "tools", "pmulab-nanobench")

DEFAULTS = ["--unroll", "1000", "--loop", "1", "--reps", "10", "--warmup", "5", "--agg", "trimmed"]


def _tool(*args, timeout=60):
    p = subprocess.run([TOOL, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p


def _dry(*args):
    p = _tool("--dry-run", *args)
    assert p.returncode == 0 and p.stderr == "", (args, p)
    return nbt.pmulab_asm.split_line(p.stdout.strip())


def test_nanobench_option_mapping():
    add = ["--code", "4801d8"]
    name = ["--name", "add rax, rbx"]
    table = [
        # nanoBench command line -> pmulab run words
        (["-asm", "add rax, rbx"], ["run", *add, "--events", "tsc", *DEFAULTS, *name]),
        (["-asm", "add rax, rbx", "-unroll_count", "100", "-loop_count", "10", "-n_measurements", "7",
          "-warm_up_count", "0"],
         ["run", *add, "--events", "tsc", "--unroll", "100", "--loop", "10", "--reps", "7", "--warmup", "0",
          "--agg", "trimmed", *name]),
        (["-asm", "add rax, rbx", "-loop_count", "0"], ["run", *add, "--events", "tsc", *DEFAULTS, *name]),
        (["-asm", "add rax, rbx", "-loop_count", "1"], ["run", *add, "--events", "tsc", *DEFAULTS, *name]),
        (["-asm", "add rax, rbx", "-median"], ["run", *add, "--events", "tsc", *DEFAULTS[:-1], "median", *name]),
        (["-asm", "add rax, rbx", "-min"], ["run", *add, "--events", "tsc", *DEFAULTS[:-1], "min", *name]),
        (["-asm", "add rax, rbx", "-max"], ["run", *add, "--events", "tsc", *DEFAULTS[:-1], "max", *name]),
        (["-asm", "add rax, rbx", "-avg"], ["run", *add, "--events", "tsc", *DEFAULTS, *name]),
        (["-asm", "add rax, rbx", "-basic_mode", "-no_mem", "-df", "-cpu", "2", "-alignment_offset", "5",
          "-initial_warm_up_count", "3"],
         ["run", *add, "--events", "tsc", "--cpu", "2", *DEFAULTS, "--initial-warmup", "3", "--align-offset", "5",
          "--basic", "--no-mem", "--drain-frontend", *name]),
        (["-asm", "add rax, rbx", "-fixed_counters"],
         ["run", *add, "--events", "instructions,cycles,ref-cycles", *DEFAULTS, *name]),
        (["-asm", "add rax, rbx", "--events", "tsc", "-fixed_counters"],
         ["run", *add, "--events", "tsc,instructions,cycles,ref-cycles", *DEFAULTS, *name]),
        (["-asm", "imul rax, rbx", "-asm_init", "mov rax, 1", "-asm_late_init", "nop",
          "-asm_one_time_init", "xor eax, eax"],
         ["run", "--code", "480fafc3", "--init", "48c7c001000000", "--late-init", "90", "--one-time-init", "31c0",
          "--events", "tsc", *DEFAULTS, "--name", "imul rax, rbx"]),
        # -usr/-os/-verbose/-no_normalization change nothing on the target; -range needs
        # each run's counts.
        (["-asm", "add rax, rbx", "-usr", "1", "-os", "1", "-no_normalization"],
         ["run", *add, "--events", "tsc", *DEFAULTS, *name]),
        (["-asm", "add rax, rbx", "-range"], ["run", *add, "--events", "tsc", *DEFAULTS, "--raw", *name]),
        # One or two dashes, '=' or a separate word, numbers in hex.
        (["--asm=add rax, rbx", "-unroll_count=0x10"],
         ["run", *add, "--events", "tsc", "--unroll", "16", *DEFAULTS[2:], *name]),
    ]
    for args, want in table:
        assert _dry(*args) == want, (args, _dry(*args))


def test_nanobench_code_files_and_config():
    with tempfile.TemporaryDirectory() as td:
        code = os.path.join(td, "chain.bin")
        with open(code, "wb") as f:
            f.write(bytes.fromhex("480fafc3"))
        init = os.path.join(td, "init.bin")
        with open(init, "wb") as f:
            f.write(bytes.fromhex("31c0"))
        cfg = os.path.join(td, "cfg_Skylake.txt")
        with open(cfg, "w") as f:
            f.write("# nanoBench config\n0E.01 UOPS_ISSUED.ANY\nA3.04.CMSK=4 CYCLE_ACTIVITY.STALLS_TOTAL\n")
        assert _dry("-code", code, "-code_init", init, "-config", cfg) == [
            "run", "--code", "480fafc3", "--init", "31c0", "--name", "chain.bin",
            "--events-file", "\\pmulab\\nanobench\\cfg_Skylake.txt", *DEFAULTS]
        assert _dry("-code", code, "-config", cfg, "--events", "tsc") == [
            "run", "--code", "480fafc3", "--name", "chain.bin", "--events", "tsc",
            "--events-file", "\\pmulab\\nanobench\\cfg_Skylake.txt", *DEFAULTS]
        assert nbt.config_names(cfg)["0E.01"] == "UOPS_ISSUED.ANY"
        # A campaign line for a stick, with the original command as a comment.
        camp = os.path.join(td, "stick.cfg")
        p = _tool("--campaign", camp, "-asm", "add rax, rbx", "-config", cfg)
        assert p.returncode == 0, p
        with open(camp) as f:
            assert f.read().splitlines() == [
                f"# pmulab-nanobench -asm \"add rax, rbx\" -config {cfg}",
                "run --code 4801d8 --events-file \\pmulab\\nanobench\\cfg_Skylake.txt " + " ".join(DEFAULTS)
                + " --name \"add rax, rbx\""]
        assert f"put {cfg} on the stick as \\pmulab\\nanobench\\cfg_Skylake.txt" in p.stderr, p.stderr


def test_nanobench_abbreviations():
    full = _dry("-asm", "add rax, rbx", "-loop_count", "10", "-unroll_count", "50", "-warm_up_count", "2",
                "-basic_mode", "-median")
    assert _dry("-asm", "add rax, rbx", "-l", "10", "-un", "50", "-w", "2", "-b", "-med") == full
    assert _dry("-asm", "add rax, rbx", "-loop", "10", "-unroll", "50", "-warm", "2", "-basic", "-me") == full
    # An exact name wins over the longer names it prefixes (-asm vs -asm_init, -min vs ...).
    assert _dry("-asm", "nop", "-asm_i", "xor eax, eax", "-min")[1:5] == ["--code", "90", "--init", "31c0"]


def test_nanobench_bad_options_exit_2_with_one_line():
    with tempfile.TemporaryDirectory() as td:
        missing = os.path.join(td, "missing.bin")
        empty = os.path.join(td, "empty.bin")
        open(empty, "wb").close()
        cases = [
            (["-asm", "nop", "-a", "1"], "option '-a' is ambiguous; possibilities: -alignment_offset -asm -asm_init "
                                         "-asm_late_init -asm_one_time_init -avg"),
            (["-as", "nop"], "option '-as' is ambiguous; possibilities: -asm -asm_init -asm_late_init "
                             "-asm_one_time_init"),
            (["-asm", "nop", "-m"], "option '-m' is ambiguous; possibilities: -max -median -min"),
            (["-asm", "nop", "-n", "3"], "option '-n' is ambiguous; possibilities: -n_measurements -no_mem "
                                         "-no_normalization"),
            (["-asm", "nop", "-bogus"], "unrecognized option '-bogus' (nanoBench options: see --help)"),
            (["-asm", "nop", "stray"], "unexpected argument 'stray' (nanoBench options start with '-')"),
            (["-asm", "nop", "-unroll_count"], "-unroll_count needs a value"),
            (["-asm", "nop", "-unroll_count", "many"], "-unroll_count: 'many' is not a number"),
            (["-asm", "nop", "-loop_count", "-3"], "-loop_count: '-3' must not be negative"),
            (["-asm", "nop", "-basic_mode=1"], "-basic_mode takes no value"),
            (["-asm", "nop", "-median", "-min"], "give at most one of -avg, -median, -min, -max"),
            (["-asm", "nop", "-usr", "2"], "-usr: '2' must be 0 or 1"),
            (["-unroll_count", "10"], "give the code to measure: -asm \"TEXT\" or -code FILE"),
            (["-asm", "nop", "-code", empty], "-asm and -code give the same code twice; use one of them"),
            (["-code", missing], f"-code {missing}: cannot read: No such file or directory"),
            (["-code", empty], f"-code {empty}: the file is empty"),
            (["-asm", "nop", "-config", missing], f"-config {missing}: cannot read: No such file or directory"),
            (["-asm", "add rax, rbx; foo"], "-asm: statement 2 'foo': invalid instruction mnemonic 'foo' (llvm-mc)"),
            (["-asm", "nop", "-asm_late_init", "call x"],
             "-asm_late_init: statement 1 'call x': refers to a symbol or address outside the snippet (needs a "
             "relocation); user code must be position-independent: use labels inside the code, registers (R14, "
             "RDI, RSI, RBP point to scratch memory) or immediates"),
            (["-asm", "nop", "--icount"], "--icount needs a value"),
            (["-asm", "nop", "--dry-run=1"], "--dry-run takes no value"),
        ]
        for args, msg in cases:
            p = _tool(*args)
            assert (p.returncode, p.stdout, p.stderr) == (2, "", f"pmulab-nanobench: error: {msg}\n"), (args, p)


RESULT = {"type": "result", "cpu": 0, "event": "tsc", "iterations": 100, "fraction": [257, 2],
          "per_iteration": 128.50, "min": 127.98, "median": 128.50, "avg": 128.50, "trimmed": 128.50, "max": 131.03,
          # run --raw: per run, long - short = 12790, 12850, 12910 (127.90, 128.50, 129.10 per iteration)
          "long": {"copies": 200, "counts": [25790, 25900, 25910]},
          "short": {"copies": 100, "counts": [13000, 13050, 13000]}}


def test_nanobench_output_format():
    f = nbt.format_results
    assert f([RESULT], {}) == ["TSC: 128.50"]
    # -range: min and max of the per-run values (the record's min/max are estimates, not a range).
    assert f([RESULT], {"range": True}) == ["TSC: 128.50 [127.90;129.10]"]
    assert f([RESULT], {"range": True, "no_normalization": True}) == ["TSC: 12850.00 [12790.00;12910.00]"]
    assert f([RESULT], {"no_normalization": True}) == ["TSC: 12850.00"]
    fixed = [dict(RESULT, event=e, fraction=[n, 1]) for e, n in
             (("instructions", 1), ("cycles", 3), ("ref-cycles", 2), ("FIXED_CTR0", 4), ("CPU_CLK_UNHALTED.THREAD", 5))]
    assert f(fixed, {}) == ["Instructions retired: 1.00", "Core cycles: 3.00", "Reference cycles: 2.00",
                            "Instructions retired: 4.00", "Core cycles: 5.00"]
    names = {"0E.01": "UOPS_ISSUED.ANY", "UOPS_ISSUED.ANY": "UOPS_ISSUED.ANY"}
    assert f([dict(RESULT, event="0E.01", fraction=[-1, 3])], {}, names) == ["UOPS_ISSUED.ANY: -0.33"]
    assert f([{"type": "meta"}, {"type": "warning", "message": "x"}, RESULT], {}) == ["TSC: 128.50"]
    assert nbt.diagnostics([{"type": "error", "message": "CPU 1: #UD"}]) == \
        ["pmulab-nanobench: pmulab error: CPU 1: #UD"]


def test_nanobench_parses_recorded_pmulab_json():
    # Recorded from ./run-qemu.sh --icount 7 --smp 2 --json -- run --bench nop,add_chain --events tsc
    # --unroll 10 --reps 10 --warmup 5 --agg trimmed --cpu all (one record per kernel x CPU).
    rec = data_path("nanobench", "builtin.jsonl")
    p = _tool("--parse", rec)
    blocks = ["bench=nop cpu=0", "bench=nop cpu=1", "bench=add_chain cpu=0", "bench=add_chain cpu=1"]
    assert (p.returncode, p.stdout, p.stderr) == (0, "".join(f"{b} TSC: 128.00\n" for b in blocks), ""), p
    p = _tool("--parse", rec, "-no_norm")
    assert p.stdout == "".join(f"{b} TSC: 1280.00\n" for b in blocks), p


REFUSED_DOC = '(docs/nanobench.md "Options pmulab does not take")'


@pytest.mark.parametrize("word,name", [("-msr_config", "msr_config"), ("-end_to_end", "end_to_end"),
                                       ("-cycle_by_cycle", "cycle_by_cycle"), ("--remove_empty_events", "remove_empty_events"),
                                       ("-remove", "remove_empty_events"), ("-html=g.html", "html"), ("-csv", "csv")])
def test_nanobench_refuses_the_options_pmulab_does_not_take(word, name):
    r = subprocess.run([TOOL, "--dry-run", "-asm", "nop", word, "f.txt"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "", r
    line = r.stderr.strip()
    assert line.startswith(f"pmulab-nanobench: error: -{name}: pmulab does not take this nanoBench option: "), r
    assert line.endswith(REFUSED_DOC) and "\n" not in line, r
    # The doc names every refused option with what to do instead.
    with open(os.path.join(ROOT, "docs", "nanobench.md")) as f:
        doc = f.read()
    assert f"| `-{name}" in doc.split("### Options pmulab does not take")[1], name



def test_nanobench_range_holds_the_value():
    # The record: est(min) 7.25 and est(max) -110.55 (min(2U) - min(U), max(2U) -
    # max(U)) printed as '7.36 [7.25;-110.55]'. The per-run values are 7.10, 7.30, 7.60.
    rec = dict(RESULT, fraction=[184, 25], min=7.25, max=-110.55, iterations=1000,
               long={"copies": 2000, "counts": [20100, 31300, 15600]},
               short={"copies": 1000, "counts": [13000, 24000, 8000]})
    assert nbt.format_results([rec], {"range": True}) == ["TSC: 7.36 [7.10;7.60]"]
    # A median/min/max outside the per-run values widens the range to it.
    assert nbt.format_results([dict(rec, fraction=[7, 1])], {"range": True}) == ["TSC: 7.00 [7.00;7.60]"]
    for r in (rec, dict(rec, fraction=[8, 1]), dict(RESULT, fraction=[1, 1])):
        val, lo, hi = (float(x) for x in
                       nbt.format_results([r], {"range": True})[0].replace("[", " ").replace(";", " ")
                       .rstrip("]").split()[1:])
        assert lo <= val <= hi, r


def test_nanobench_missing_fields_and_no_records_are_errors():
    f = nbt.format_results
    for key in ("event", "fraction", "long", "short"):
        rec = {k: v for k, v in RESULT.items() if k != key}
        try:
            f([RESULT, rec], {"range": True})
            assert False, key
        except nbt.DataError as e:
            assert f"result record 2 has no '{key}' field" in str(e), (key, e)
    with tempfile.TemporaryDirectory() as td:
        text = os.path.join(td, "passwd")
        with open(text, "w") as fh:
            fh.write("root:x:0:0:root:/root:/bin/bash\n{\"type\":\"meta\"}\n")
        p = _tool("--parse", text)
        assert (p.returncode, p.stdout, p.stderr) == (
            2, "", f"pmulab-nanobench: error: --parse {text}: no result records (JSON lines with "
                   "\"type\":\"result\", from pmulab run --json)\n"), p
    p = _tool("--parse", data_path("nanobench", "builtin.jsonl"), "-range")  # recorded without --raw
    assert (p.returncode, p.stdout) == (2, ""), p
    assert "result record 1 has no 'long' field" in p.stderr, p.stderr


def test_nanobench_sizes_and_runs_are_told_apart():
    recs = [dict(RESULT, bench="load_chain", size=s, fraction=[n, 1]) for s, n in ((4096, 4), (1 << 20, 12))]
    assert nbt.format_results(recs, {}) == ["size=4096 TSC: 4.00", "size=1048576 TSC: 12.00"]
    recs += [dict(r, cpu=1) for r in recs]
    assert nbt.format_results(recs, {}) == ["size=4096 cpu=0 TSC: 4.00", "size=1048576 cpu=0 TSC: 12.00",
                                            "size=4096 cpu=1 TSC: 4.00", "size=1048576 cpu=1 TSC: 12.00"]


def test_nanobench_errors_speak_of_the_users_options():
    # pmulab's messages name the pmulab.cfg this tool wrote and pmulab's --events; the user
    # wrote -fixed_counters (or this tool's --events).
    amd = ("\\pmulab\\pmulab.cfg:1: run --events: event list item 3: event spec 'ref-cycles': unknown AMD event "
           "name 'ref-cycles' (named events: ...) (at offset 0)")
    intel = ("\\pmulab\\pmulab.cfg:1: CPU 0: cannot count 'instructions': no architectural performance monitoring: "
             "CPUID.0AH:EAX[7:0] = 0")
    own = "\\pmulab\\pmulab.cfg:1: run --events: event list item 1: event spec 'foo': unknown event name 'foo'"
    fixed = {"fixed_counters": True}
    recs = [{"type": "error", "message": m} for m in (amd, intel, own)]
    assert nbt.diagnostics(recs, fixed) == [
        "pmulab-nanobench: pmulab error: -fixed_counters: event spec 'ref-cycles': unknown AMD event name "
        "'ref-cycles' (named events: ...) (at offset 0)",
        "pmulab-nanobench: pmulab error: -fixed_counters: CPU 0: cannot count 'instructions': no architectural "
        "performance monitoring: CPUID.0AH:EAX[7:0] = 0",
        "pmulab-nanobench: pmulab error: --events: event list item 1: event spec 'foo': unknown event name 'foo'"]
    assert all("pmulab.cfg" not in l for l in nbt.diagnostics(recs, {}))
