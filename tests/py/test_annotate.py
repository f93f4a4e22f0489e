"""tools/pmulab-annotate on synthetic samples records (the records of `run --sample`,
written by hand here): exact listings of straight-line code and of a loop, and every
error path (a message, status 2, no traceback)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from pmulab_test import ROOT

ANNOTATE = os.path.join(ROOT, "tools", "pmulab-annotate")
# add rax, rbx; imul rax, rbx; xor ecx, ecx; nop
STRAIGHT = "4801d8480fafc331c990"
STRAIGHT_ASM = "add rax, rbx; imul rax, rbx; xor ecx, ecx; nop"
# mov ecx, 4; 1: add rax, rbx; imul rax, rbx; dec ecx; jnz 1b; nop
LOOP_ASM = "mov ecx, 4; 1: add rax, rbx; imul rax, rbx; dec ecx; jnz 1b; nop"
LOOP = "b9040000004801d8480fafc3ffc975f590"
SKID = ["skid: a sample is charged to the next instruction to retire when the PMI is taken, the one",
        "after the instruction that overflowed the counter (after a taken branch, its target); PEBS",
        "would charge the instruction itself"]


def _annotate(*args, env=None, stdin=None):
    r = subprocess.run([ANNOTATE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                       env=env, input=stdin)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _samples(cpu, bench, event, period, buckets, harness, **extra):
    return {"type": "samples", "cpu": cpu, "bench": bench, "event": event, "period": period,
            "samples": sum(c for _, _, c in buckets) + harness,
            "buckets": [{"block": b, "offset": o, "count": c} for b, o, c in buckets], "harness": harness, **extra}


def _write(td, recs, name="r.jsonl"):
    path = os.path.join(td, name)
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_annotate_straight_line_body_exact_shares():
    # Instructions retired, one sample per 1000: each of the 4 instructions retires once
    # per copy; skid charges each sample to the next one (the nop's to the next copy's add,
    # the last copy's to the harness).
    with tempfile.TemporaryDirectory() as td:
        res = _write(td, [{"type": "meta", "simulated": True},
                          _samples(0, "code", "instructions", 1000,
                                   [("body", 0, 249), ("body", 3, 250), ("body", 7, 250), ("body", 9, 250)], 1)])
        for code in (["--code", STRAIGHT], ["--asm", STRAIGHT_ASM]):
            r = _annotate(res, *code)
            assert r.returncode == 0, r.stderr
            assert r.stdout.splitlines() == [
                "CPU 0, code 'code' (body 10 bytes)",
                "  instructions: period 1000, 1000 samples: 999 in the code, 1 in the harness (0.10%)",
                "",
                "      instructions",
                "  percent  samples  offset  instruction",
                "body:",
                "    24.92      249       0  add rax, rbx",
                "    25.03      250       3  imul rax, rbx",
                "    25.03      250       7  xor ecx, ecx",
                "    25.03      250       9  nop",
                "",
                *SKID], r.stdout


def test_annotate_loop_two_events_exact_shares():
    # The loop body runs 4 times per copy, its head and tail once: 1 + 4 * 4 + 1 = 18
    # instructions; the samples of the jnz land on its target (add) or on the nop.
    with tempfile.TemporaryDirectory() as td:
        res = _write(td, [
            {"type": "result", "cpu": 0, "bench": "loop", "code": "loop", "code_bytes": 17,
             "code_fnv1a64": "28ddb33ae3f3759c", "event": "instructions", "per_iteration": 18},
            _samples(0, "loop", "instructions", 1000, [("body", 0, 100), ("body", 5, 400), ("body", 8, 400),
                                                       ("body", 12, 400), ("body", 14, 400), ("body", 16, 100)], 20),
            _samples(0, "loop", "cycles", 2003, [("body", 8, 900), ("body", 12, 50)], 50)])
        r = _annotate(res, "--asm", LOOP_ASM)
        assert r.returncode == 0, r.stderr
        listing = [
            "CPU 0, code 'loop' (body 17 bytes)",
            "  instructions: period 1000, 1820 samples: 1800 in the code, 20 in the harness (1.10%)",
            "  cycles: period 2003, 1000 samples: 950 in the code, 50 in the harness (5.00%)",
            "",
            "      instructions            cycles",
            "  percent  samples  percent  samples  offset  instruction",
            "body:",
            "     5.56      100                         0  mov ecx, 4",
            "    22.22      400                         5  add rax, rbx",
            "    22.22      400    94.74      900       8  imul rax, rbx",
            "    22.22      400     5.26       50       c  dec ecx",
            "    22.22      400                         e  jne 0x5 <body+0x5>",
            "     5.56      100                        10  nop",
            "",
            *SKID]
        assert r.stdout.splitlines() == listing, r.stdout
        # --event picks and orders the columns; --att the syntax of the listing.
        r = _annotate(res, "--code", LOOP, "--event", "cycles", "--att")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[1:12] == [
            "  cycles: period 2003, 1000 samples: 950 in the code, 50 in the harness (5.00%)",
            "",
            "            cycles",
            "  percent  samples  offset  instruction",
            "body:",
            "                         0  movl $4, %ecx",
            "                         5  addq %rbx, %rax",
            "    94.74      900       8  imulq %rbx, %rax",
            "     5.26       50       c  decl %ecx",
            "                         e  jne 0x5 <body+0x5>",
            "                        10  nop"], r.stdout
        # The same records from pmulab-client's output (extra "id" and "line") on stdin.
        with open(res) as f:
            client = "".join(l.rstrip("\n")[:-1] + ',"id":3,"line":1}\n' for l in f)
        r = _annotate("-", "--asm", LOOP_ASM, stdin=client)
        assert r.returncode == 0 and r.stdout.splitlines() == listing, (r.stdout, r.stderr)


def test_annotate_init_blocks_markers_and_cpus():
    with tempfile.TemporaryDirectory() as td:
        body = "add rax, rbx; pause_counting; mov rax, [rsi]; resume_counting; nop"
        res = _write(td, [
            _samples(2, "code", "cycles", 100, [("init", 0, 3), ("late_init", 0, 1), ("body", 3, 2),
                                                ("body", 11, 4)], 0),
            _samples(0, "code", "cycles", 100, [("body", 22, 10)], 10)])
        r = _annotate(res, "--asm", body, "--asm-init", "inc rdx", "--late-init", "48c7c205000000")
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[:-3] == [
            "CPU 0, code 'code' (init 3 bytes, late-init 7 bytes, body 23 bytes)",
            "  cycles: period 100, 20 samples: 10 in the code, 10 in the harness (50.00%)",
            "",
            "            cycles",
            "  percent  samples  offset  instruction",
            "init:",
            "                         0  inc rdx",
            "late-init:",
            "                         0  mov rdx, 5",
            "body:",
            "                         0  add rax, rbx",
            "                         3  pause_counting",
            "                         b  mov rax, qword ptr [rsi]",
            "                         e  resume_counting",
            "   100.00       10      16  nop",
            "",
            "CPU 2, code 'code' (init 3 bytes, late-init 7 bytes, body 23 bytes)",
            "  cycles: period 100, 10 samples: 10 in the code, 0 in the harness (0.00%)",
            "",
            "            cycles",
            "  percent  samples  offset  instruction",
            "init:",
            "    30.00        3       0  inc rdx",
            "late-init:",
            "    10.00        1       0  mov rdx, 5",
            "body:",
            "                         0  add rax, rbx",
            "    20.00        2       3  pause_counting",
            "    40.00        4       b  mov rax, qword ptr [rsi]",
            "                         e  resume_counting",
            "                        16  nop",
            ""], r.stdout
        r = _annotate(res, "--asm", body, "--asm-init", "inc rdx", "--late-init", "48c7c205000000", "--cpu", "2")
        assert r.returncode == 0 and r.stdout.startswith("CPU 2, ") and "CPU 0" not in r.stdout, r.stdout
        # A record whose samples are not its buckets plus its harness says so.
        res = _write(td, [dict(_samples(0, "code", "cycles", 100, [("body", 0, 3)], 1), samples=5)])
        r = _annotate(res, "--code", STRAIGHT)
        assert r.returncode == 0 and r.stdout.splitlines()[1:3] == [
            "  cycles: period 100, 5 samples: 3 in the code, 1 in the harness (25.00%)",
            "    (the record's samples 5 are not its buckets' 3 plus its harness 1)"], r.stdout


def _error(r, text):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "", r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"pmulab-annotate: error: {text}", r.stderr


def test_annotate_errors_are_messages_with_status_2():
    with tempfile.TemporaryDirectory() as td:
        ok = [{"type": "result", "cpu": 0, "bench": "code", "code": "code", "code_bytes": 10,
               "code_fnv1a64": "8210b0d6b120fc51", "event": "cycles", "per_iteration": 3},
              _samples(0, "code", "cycles", 1000, [("body", 3, 5)], 1)]
        res = _write(td, ok)
        assert _annotate(res, "--code", STRAIGHT).returncode == 0
        # No records, none that the filters select.
        empty = _write(td, [{"type": "meta"}], "empty.jsonl")
        _error(_annotate(empty, "--code", STRAIGHT),
               f"no samples records in {empty} (pmulab run --sample EVENT --json writes them)")
        _error(_annotate(res, "--code", STRAIGHT, "--cpu", "3"), "--cpu 3: no samples records (they have cpu 0)")
        _error(_annotate(res, "--code", STRAIGHT, "--bench", "x"), "--bench x: no samples records (they have bench code)")
        _error(_annotate(res, "--code", STRAIGHT, "--event", "uops"),
               "--event uops: no samples records (they have events cycles)")
        two = _write(td, [_samples(0, "a", "cycles", 9, [], 1), _samples(0, "b", "cycles", 9, [], 1)], "two.jsonl")
        _error(_annotate(two, "--code", STRAIGHT),
               "the records are of several codes (a, b): choose the one given with --bench NAME")
        dup = _write(td, ok + ok, "dup.jsonl")
        _error(_annotate(dup, "--code", STRAIGHT),
               f"two samples records for CPU 0, event 'cycles' ({dup}:2 and {dup}:4): give one run's records")
        # Unreadable and malformed input.
        _error(_annotate("/nonexistent/r.jsonl", "--code", STRAIGHT), "/nonexistent/r.jsonl: no such file")
        bad = os.path.join(td, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"type":"samples","cpu":0,"event":"cycles","buckets":[{"block":"body","offset":-1,"count":1}]}\n')
        _error(_annotate(bad, "--code", STRAIGHT), f"{bad}:1: bucket 0: offset '-1' is not a count")
        with open(bad, "w") as f:
            f.write('{"type":"samples","cpu":0,"period":"x"}\n')
        _error(_annotate(bad, "--code", STRAIGHT), f"{bad}:1: period 'x' is not a count")
        with open(bad, "w") as f:
            f.write("{oops\n")
        _error(_annotate(bad, "--code", STRAIGHT), f"{bad}:1: not JSON (Expecting property name enclosed in double "
               "quotes)")
        # The code: missing, twice, bad hex, a missing file, not assembling.
        _error(_annotate(res), "the code the records were sampled from: give its body with --asm TEXT, --code HEX "
               "or --code-file FILE (and its init blocks as run had them)")
        _error(_annotate(res, "--code", "90", "--asm", "nop"), "--asm and --code: give the body once")
        _error(_annotate(res, "--code", "4801d8g0"), "--code: 'g' at position 7 is not a hex digit (machine code as "
               "hex bytes, e.g. 4801d8 for add rax, rbx)")
        _error(_annotate(res, "--code", "0x48 01 z8"), "--code: 'z' at position 9 is not a hex digit (machine code "
               "as hex bytes, e.g. 4801d8 for add rax, rbx)")
        _error(_annotate(res, "--code", "480"), "--code: an odd number of hex digits (two per byte, e.g. 4801d8)")
        _error(_annotate(res, "--code-file", "/nonexistent/b.bin"), "--code-file /nonexistent/b.bin: no such file")
        _error(_annotate(res, "--asm", "bogus rax"),
               "--asm: statement 1 'bogus rax': invalid instruction mnemonic 'bogus' (llvm-mc)")
        # Code that does not match the records.
        _error(_annotate(res, "--code", STRAIGHT[:-2] + "c3"),
               f"the code given is not the code of the records: {res}:1 says code 'code' has FNV-1a 64 "
               "8210b0d6b120fc51, the body given has 82107dd6b120a5a8")
        _error(_annotate(res, "--code", STRAIGHT, "--init", "90"),
               f"the code given is not the code of the records: {res}:1 says code 'code' has 0 bytes of init, the "
               "init given has 1 (--asm-init, --init, --init-file)")
        withinit = _write(td, [dict(ok[0], init_bytes=3, late_init_bytes=7), ok[1]], "init.jsonl")
        _error(_annotate(withinit, "--code", STRAIGHT, "--init", "90"),
               f"the code given is not the code of the records: {withinit}:1 says code 'code' has 3 bytes of init, "
               "the init given has 1 (--asm-init, --init, --init-file)")
        # A block not given is not listed (its sizes are not compared).
        assert _annotate(withinit, "--code", STRAIGHT, "--init", "48ffc2").returncode == 0
        for buckets, text in (
                ([("body", 4, 1)], "the code does not match the records: body offset 4 (0x4) is not an instruction "
                                   "start (the instructions around it start at 3 (0x3) and 7 (0x7))"),
                ([("body", 10, 1)], "the code does not match the records: body offset 10 (0xa) is past its end "
                                    "(10 bytes)"),
                ([("init", 0, 1)], "samples in the init, but no init was given (--asm-init, --init or --init-file, "
                                   "as run had it)"),
                ([("harness", 0, 1)], "a bucket in block 'harness', which is none of one_time_init, init, "
                                      "late_init, body")):
            other = _write(td, [_samples(1, "code", "cycles", 1000, buckets, 0)], "other.jsonl")
            _error(_annotate(other, "--code", STRAIGHT), f"{other}:1 (CPU 1, event 'cycles'): {text}")
        # No llvm-objdump: named by $PMULAB_OBJDUMP, or not on PATH.
        env = dict(os.environ, PMULAB_OBJDUMP="/nonexistent/llvm-objdump")
        _error(_annotate(res, "--code", STRAIGHT, env=env), "/nonexistent/llvm-objdump not found: install "
               "llvm-objdump (Debian package llvm; tools/install-deps.sh does)")
        bindir = os.path.join(td, "bin")
        os.mkdir(bindir)
        os.symlink(sys.executable, os.path.join(bindir, "python3"))
        env = {k: v for k, v in os.environ.items() if k != "PMULAB_OBJDUMP"}
        env["PATH"] = bindir
        _error(_annotate(res, "--code", STRAIGHT, env=env), "llvm-objdump not found: install llvm-objdump (Debian "
               "package llvm; tools/install-deps.sh does)")
        # llvm-objdump that fails: status 1 (a tool it runs failed).
        r = _annotate(res, "--code", STRAIGHT, env=dict(os.environ, PMULAB_OBJDUMP="false"))
        assert r.returncode == 1 and r.stderr.strip() == (
            f"pmulab-annotate: error: llvm-objdump could not disassemble the body ({shutil.which('false')}: exit "
            "status 1)"), r.stderr
        # A bad option.
        r = _annotate(res, "--bogus-option")
        assert r.returncode == 2 and "unrecognized arguments: --bogus-option" in r.stderr, r.stderr


def test_annotate_api_on_an_agent_answers_records():
    # pmulab.client's Answer.records: the agent's records as they came (an "id", no "lab").
    from pmulab.annotate import AnnotateError, Selection, annotate
    recs = [{"id": 4, "type": "result", "cpu": 0, "bench": "code", "code": "code", "code_bytes": 10,
             "code_fnv1a64": "8210b0d6b120fc51", "event": "cycles", "per_iteration": 3},
            dict(_samples(0, "code", "cycles", 1000, [("body", 3, 3), ("body", 7, 1)], 0), id=4),
            dict(_samples(1, "code", "cycles", 1000, [("body", 9, 2)], 2), id=4)]
    lines = annotate(recs, {"body": bytes.fromhex(STRAIGHT)}, Selection(cpu=0))
    assert lines[:10] == [
        "CPU 0, code 'code' (body 10 bytes)",
        "  cycles: period 1000, 4 samples: 4 in the code, 0 in the harness (0.00%)",
        "",
        "            cycles",
        "  percent  samples  offset  instruction",
        "body:",
        "                         0  add rax, rbx",
        "    75.00        3       3  imul rax, rbx",
        "    25.00        1       7  xor ecx, ecx",
        "                         9  nop"], lines
    try:
        annotate(recs, {"body": bytes.fromhex(STRAIGHT)[:9]})
        raise AssertionError("a body of the wrong size was annotated")
    except AnnotateError as e:
        assert e.status == 2 and str(e) == (
            "the code given is not the code of the records: the result record of request 4 says code 'code' has "
            "FNV-1a 64 8210b0d6b120fc51, the body given has 6cdabdf4228a5f7b"), str(e)
