"""tools/pmulab-asm (pmulab.asm) on the host: known encodings (llvm-mc and GNU as), AT&T, nanoBench's
|n NOPs and N*|x| repetitions, local labels and taken jumps, position-independence
checks, errors naming the statement, and the rewriting of --asm in command lines,
campaigns (tools/mkimage.sh, run-qemu.sh --config, pmulab-lab) before any boot."""

import os
import shutil
import subprocess
import sys
import tempfile

from pmulab_test import ROOT, Skip

from pmulab import asm as pmulab_asm
from pmulab.asm import AsmError, assemble

ASM = os.path.join(ROOT, "tools", "pmulab-asm")
EFI = os.path.join(ROOT, "build", "pmulab.efi")

KNOWN = [
    ("add rax, rbx", "4801d8"),
    ("imul rax, rbx", "480fafc3"),
    ("vpaddd ymm0, ymm1, ymm2", "c5f5fec2"),
    ("mov rax, [r14]", "498b06"),
    ("mov qword ptr [rdi + 8], rsi", "48897708"),
    ("nop", "90"),
    ("add rax, rbx; imul rax, rbx", "4801d8480fafc3"),
    ("add rax, rbx\nimul rax, rbx", "4801d8480fafc3"),
    ("  add rax, rbx ;; ; imul rax, rbx ;  ", "4801d8480fafc3"),
    (".byte 0x90, 0x90", "9090"),
    # A taken jump over a 5-byte NOP, a backward loop on a numeric local label, a named label.
    ("jmp 1f; |5; 1: nop", "eb050f1f44000090"),
    ("1: dec rcx; jnz 1b", "48ffc975fb"),
    ("jmp skip; nop; skip: nop", "eb019090"),
    # RIP-relative to a label inside the snippet needs no relocation.
    ("lea rax, [rip + here]; here: nop", "488d050000000090"),
]

NOP_HEX = {
    1: "90", 2: "6690", 3: "0f1f00", 4: "0f1f4000", 5: "0f1f440000", 6: "660f1f440000",
    7: "0f1f8000000000", 8: "0f1f840000000000", 9: "660f1f840000000000",
    10: "662e0f1f840000000000", 11: "66662e0f1f840000000000", 12: "6666662e0f1f840000000000",
    13: "666666662e0f1f840000000000", 14: "66666666662e0f1f840000000000",
    15: "6666666666662e0f1f840000000000",
}


def _with_assembler(kind):
    if not shutil.which(kind):
        raise Skip(f"{kind} is not installed")
    old = os.environ.get("PMULAB_ASSEMBLER")
    os.environ["PMULAB_ASSEMBLER"] = kind
    return old


def _restore(old):
    if old is None:
        os.environ.pop("PMULAB_ASSEMBLER", None)
    else:
        os.environ["PMULAB_ASSEMBLER"] = old


def _check_known(kind):
    old = _with_assembler(kind)
    try:
        for text, hexcode in KNOWN:
            assert assemble(text).hex() == hexcode, (kind, text, assemble(text).hex())
        for n, hexcode in NOP_HEX.items():
            assert assemble(f"|{n}").hex() == hexcode, (kind, n)
    finally:
        _restore(old)


def test_asm_known_encodings_llvm_mc():
    _check_known("llvm-mc")


def test_asm_known_encodings_gnu_as():
    _check_known("as")


# GNU as's current address (`$`, `.`), which nanoBench users write: the same bytes from
# either assembler (issue 26 item 11: llvm-mc said "unknown token in expression").
HERE = [
    ("jmp $", "ebfe"), ("jmp .", "ebfe"), ("jmp $+2", "eb00"), ("jmp .-2", "ebfc"),
    ("nop; jmp $", "90ebfe"), ("1: dec ecx; jnz 1b", "ffc975fc"), ("mov eax, [rip+$]", "8b05faffffff"),
    ("add rax, rbx|5; jmp $", "4801d80f1f440000ebfe"), ("3*|jmp $|", "ebfeebfeebfe"),
    (".byte 0x2e; jmp $", "2eebfe"),
]


def _check_here(kind):
    old = _with_assembler(kind)
    try:
        for text, hexcode in HERE:
            assert assemble(text).hex() == hexcode, (kind, text, assemble(text).hex())
        assert assemble("jmp .; movl $1, %eax", att=True).hex() == "ebfeb801000000", kind
    finally:
        _restore(old)


def test_asm_current_address_llvm_mc():
    _check_here("llvm-mc")


def test_asm_current_address_gnu_as():
    _check_here("as")


def test_asm_att_syntax():
    assert assemble("addq %rbx, %rax; imulq %rbx, %rax", att=True).hex() == "4801d8480fafc3"
    assert assemble("vpaddd %ymm2, %ymm1, %ymm0", att=True).hex() == "c5f5fec2"
    assert assemble("jmp 1f; |3; 1: nop", att=True).hex() == "eb030f1f0090"


def test_asm_nops_are_one_instruction_each_of_n_bytes():
    # Every |n must decode as ONE instruction of n bytes (the exactness tests count
    # instructions): disassemble the bytes with llvm-objdump or objdump.
    tool = shutil.which("objdump")
    if not tool:
        raise Skip("no GNU objdump (binutils)")
    with tempfile.TemporaryDirectory() as td:
        for n in range(1, 16):
            code = assemble(f"|{n}")
            assert len(code) == n, n
            path = os.path.join(td, f"nop{n}.bin")
            with open(path, "wb") as f:
                f.write(code)
            p = subprocess.run([tool, "-D", "-b", "binary", "-m", "i386:x86-64", path], stdout=subprocess.PIPE,
                               text=True, check=True)
            # Instruction lines: "   0:\t66 90 \txchg %ax,%ax"; long ones wrap their bytes onto a
            # second line without a mnemonic.
            insns = [l.split("\t") for l in p.stdout.splitlines() if l.startswith("   ") and ":\t" in l]
            mnemonics = [parts[2] for parts in insns if len(parts) > 2]
            assert len(mnemonics) == 1, (n, p.stdout)
            assert "nop" in mnemonics[0] or mnemonics[0].split() == ["xchg", "%ax,%ax"], (n, mnemonics)


def test_asm_nanobench_shorthands():
    assert assemble("3*|nop|").hex() == "909090"
    assert assemble("2*|add rax, rbx; imul rax, rbx|").hex() == "4801d8480fafc3" * 2
    assert assemble("add rax, rbx|5").hex() == "4801d8" + NOP_HEX[5]
    assert assemble("|15|15").hex() == NOP_HEX[15] * 2
    assert assemble("2*|nop|; |2").hex() == "90906690"
    assert pmulab_asm.split_statements("a;|4\nb") == ["a", "|4", "b"]


def _err(text, att=False):
    try:
        code = assemble(text, att)
    except AsmError as e:
        return str(e)
    raise AssertionError(f"{text!r} assembled to {code.hex()} instead of an error")


def test_asm_errors_name_the_statement_and_the_assemblers_message():
    assert _err("add rax, rbx; foo rax") == \
        "--asm: statement 2 'foo rax': invalid instruction mnemonic 'foo' (llvm-mc)"
    assert _err("add rax") == "--asm: statement 1 'add rax': invalid operand for instruction (llvm-mc)"
    assert _err("add rax, rbx", att=True).startswith("--asm: statement 1 'add rax, rbx': ")
    assert _err("") == "--asm: no code (the text is empty)"
    assert _err(" ; ;\n") == "--asm: no code (only separators)"
    assert _err("nop; |16") == "--asm: statement 2 '|16': |n NOPs are 1..15 bytes long"
    assert _err("|0") == "--asm: statement 1 '|0': |n NOPs are 1..15 bytes long"
    assert _err("nop|") == ("--asm: statement 1 'nop|': '|' is only allowed as |n (an n-byte NOP, 1..15) "
                            "or N*|TEXT|")
    assert _err("0*|nop|") == "--asm: '0*|nop|': the repetition count must be 1..100000"
    assert _err("mov eax, 1 \u00b5") .startswith("--asm: character '\u00b5' (U+00B5) is not allowed")
    old = _with_assembler("as")
    try:
        assert _err("add rax, rbx; foo rax") == "--asm: statement 2 'foo rax': no such instruction: `foo rax' (as)"
    finally:
        _restore(old)


def test_asm_rejects_code_that_is_not_position_independent():
    reloc = ("refers to a symbol or address outside the snippet (needs a relocation); user code must be "
             "position-independent: use labels inside the code, registers (R14, RDI, RSI, RBP point to "
             "scratch memory) or immediates")
    assert _err("nop; call foo") == f"--asm: statement 2 'call foo': {reloc}"
    assert _err("mov rax, [rip + elsewhere]") == f"--asm: statement 1 'mov rax, [rip + elsewhere]': {reloc}"
    assert _err("mov rax, offset x; x: nop") == f"--asm: statement 1 'mov rax, offset x': {reloc}"
    assert _err("jmp outside") == f"--asm: statement 1 'jmp outside': {reloc}"
    assert _err("jmp 1f; nop") == ("--asm: a local label is used but not defined in the snippet (e.g. 'jmp 1f' "
                                   "without a '1:' after it) (llvm-mc: Undefined temporary symbol .Ltmp0)")
    old = _with_assembler("as")
    try:
        assert _err("jmp 1f; nop").startswith("--asm: a local label is used but not defined in the snippet")
        assert _err("nop; call foo") == f"--asm: statement 2 'call foo': {reloc}"
    finally:
        _restore(old)
    for d in (".align 16", ".p2align 4", ".data", ".section .rodata", ".org 10", ".globl x"):
        msg = _err(f"nop; {d}")
        assert msg.startswith(f"--asm: statement 2 '{d}': directive {d.split()[0]} is not allowed"), msg


def test_asm_rewrite_argv():
    rw = pmulab_asm.rewrite_argv
    assert rw(["run", "--bench", "nop"]) == ["run", "--bench", "nop"]
    assert rw(["run", "--asm", "add rax, rbx", "--events", "tsc"]) == \
        ["run", "--code", "4801d8", "--events", "tsc", "--name", "add rax, rbx"]
    assert rw(["run", "--asm=imul rax, rbx", "--asm-init", "mov rax, 1", "--asm-late-init", "nop",
               "--asm-one-time-init", "xor eax, eax", "--name", "mine"]) == \
        ["run", "--code", "480fafc3", "--init", "48c7c001000000", "--late-init", "90",
         "--one-time-init", "31c0", "--name", "mine"]
    assert rw(["run", "--att", "--asm", "addq %rbx, %rax"]) == \
        ["run", "--code", "4801d8", "--name", "addq %rbx, %rax"]
    # Issue 26 item 8: every --asm is a code of its own, each with its own --name.
    assert rw(["run", "--asm", "imul rax, rax", "--name", "chain", "--asm", "imul rbx, rbx", "--name", "b"]) == \
        ["run", "--code", "480fafc0", "--name", "chain", "--code", "480fafdb", "--name", "b"]
    assert rw(["run", "--asm", "imul rax, rax", "--asm", "imul rbx, rbx", "--reps", "3"]) == \
        ["run", "--code", "480fafc0", "--name", "imul rax, rax", "--code", "480fafdb", "--reps", "3",
         "--name", "imul rbx, rbx"]
    assert rw(["run", "--name", "first", "--asm", "nop", "--asm", "imul rbx, rbx"]) == \
        ["run", "--name", "first", "--code", "90", "--code", "480fafdb", "--name", "imul rbx, rbx"]
    assert pmulab_asm.asm_options() == {"--asm": "--code", "--asm-init": "--init", "--asm-late-init": "--late-init",
                                        "--asm-one-time-init": "--one-time-init"}
    long_text = "; ".join(["add rax, rbx"] * 20)
    name = rw(["run", "--asm", long_text])[-1]
    assert len(name) == 63 and name.endswith("...") and name.startswith("add rax, rbx; add rax, rbx"), name
    assert rw(["run", "--asm", "mov rax, 1 # one\nnop"])[-1] == "mov rax, 1 one; nop"
    for argv, msg in [(["run", "--asm"], "--asm: needs the assembly text (e.g. --asm \"add rax, rbx\")"),
                      (["run", "--att", "--bench", "nop"], "--att: applies to --asm, --asm-init, --asm-late-init, "
                                                           "--asm-one-time-init; none given"),
                      (["run", "--asm-init", "bogus"], "--asm-init: statement 1 'bogus': invalid instruction "
                                                       "mnemonic 'bogus' (llvm-mc)")]:
        try:
            rw(argv)
            raise AssertionError(argv)
        except AsmError as e:
            assert str(e) == msg, (argv, str(e))


def test_asm_campaign_rewrite_keeps_other_lines_byte_for_byte():
    src = (b"info\r\n"
           b"# a comment with --asm in it\r\n"
           b"run --asm \"imul rax, rbx; |3\" --events tsc --unroll 10 # latency\r\n"
           b"run --bench nop\r\n"
           b"run --att --asm-init \"movq $1, %rax\" --asm \"addq %rax, %rax\" --name \"a \\\"b\\\"\"")
    out = pmulab_asm.rewrite_campaign(src, "c.cfg").decode()
    assert out.split("\r\n") == [
        "info",
        "# a comment with --asm in it",
        "run --code 480fafc30f1f00 --events tsc --unroll 10 --name \"imul rax, rbx; |3\""
        "  # pmulab_asm: run --asm \"imul rax, rbx; |3\" --events tsc --unroll 10 # latency",
        "run --bench nop",
        "run --init 48c7c001000000 --code 4801c0 --name \"a \\\"b\\\"\""
        "  # pmulab_asm: run --att --asm-init \"movq $1, %rax\" --asm \"addq %rax, %rax\" --name \"a \\\"b\\\"\"",
    ], out
    # The rewritten words split back the way pmulab splits them.
    assert pmulab_asm.split_line(pmulab_asm._strip_comment(out.split("\r\n")[-1]))[-1] == 'a "b"'
    plain = b"info\nrun --bench nop\n"
    assert pmulab_asm.rewrite_campaign(plain) is plain
    try:
        pmulab_asm.rewrite_campaign(b"info\nrun --asm \"nop; bad\"\n", "x.cfg")
        raise AssertionError("no error")
    except AsmError as e:
        assert str(e) == "x.cfg:2: --asm: statement 2 'bad': invalid instruction mnemonic 'bad' (llvm-mc)", e


def test_asm_cli_prints_hex_and_exits_2_on_errors():
    p = subprocess.run([sys.executable, ASM, "add rax, rbx"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    assert (p.returncode, p.stdout, p.stderr) == (0, "4801d8\n", ""), p
    p = subprocess.run([sys.executable, ASM, "--att", "addq %rbx, %rax"], stdout=subprocess.PIPE, text=True)
    assert (p.returncode, p.stdout) == (0, "4801d8\n"), p
    p = subprocess.run([sys.executable, ASM, "add rax, rbx; foo"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr == "pmulab_asm: error: asm: statement 2 'foo': invalid instruction mnemonic 'foo' (llvm-mc)\n"


def test_asm_errors_stop_run_qemu_before_any_boot():
    # No QEMU is started: the message comes from the host, status 2 (pmulab's usage status).
    for argv, msg in [
        (["--", "run", "--asm", "add rax, rbx; foo rax"],
         "run-qemu: error: --asm: statement 2 'foo rax': invalid instruction mnemonic 'foo' (llvm-mc)"),
        (["--", "run", "--asm-late-init", "call far_away", "--asm", "nop"],
         "run-qemu: error: --asm-late-init: statement 1 'call far_away': refers to a symbol or address outside "
         "the snippet (needs a relocation); user code must be position-independent: use labels inside the code, "
         "registers (R14, RDI, RSI, RBP point to scratch memory) or immediates"),
    ]:
        p = subprocess.run([os.path.join(ROOT, "run-qemu.sh"), "--no-build", *argv], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        assert (p.returncode, p.stdout, p.stderr.strip()) == (2, "", msg), p
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("info\nrun --asm \"nop; |99\"\n")
        p = subprocess.run([os.path.join(ROOT, "run-qemu.sh"), "--no-build", "--config", cfg],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert (p.returncode, p.stdout, p.stderr.strip()) == \
            (2, "", f"run-qemu: error: {cfg}:2: --asm: statement 2 '|99': |n NOPs are 1..15 bytes long"), p


def test_asm_mkimage_assembles_campaigns_and_refuses_bad_code():
    if not os.path.exists(EFI):
        raise Skip("build/pmulab.efi is missing (make)")
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    with tempfile.TemporaryDirectory() as td:
        cfg = os.path.join(td, "c.cfg")
        with open(cfg, "w") as f:
            f.write("info\nrun --asm \"add rax, rbx\" --events tsc\n")
        img = os.path.join(td, "x.img")
        subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, EFI, cfg], check=True,
                       stdout=subprocess.DEVNULL)
        p = subprocess.run(["mtype", "-i", img + "@@1M", "::/pmulab/pmulab.cfg"], stdout=subprocess.PIPE,
                           text=True, env=env)
        assert p.stdout.splitlines() == ["info", "run --code 4801d8 --events tsc --name \"add rax, rbx\""
                                         "  # pmulab_asm: run --asm \"add rax, rbx\" --events tsc"], p.stdout
        bad = os.path.join(td, "bad.cfg")
        with open(bad, "w") as f:
            f.write("run --asm \"add rax, rbx; mov rax, [rip + somewhere]\"\n")
        out = os.path.join(td, "bad.img")
        p = subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), out, EFI, bad], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        assert p.returncode == 2 and not os.path.exists(out), p
        assert p.stderr.startswith(f"pmulab_asm: error: {bad}:1: --asm: statement 2 "
                                   "'mov rax, [rip + somewhere]': refers to a symbol"), p.stderr
        assert os.listdir(td) == sorted(os.listdir(td)) or True
        assert not [n for n in os.listdir(td) if n.startswith("bad.img")], os.listdir(td)


def test_asm_pmulab_lab_refuses_bad_code_before_any_boot():
    with tempfile.TemporaryDirectory() as td:
        bad = os.path.join(td, "bad.cfg")
        with open(bad, "w") as f:
            f.write("info\nrun --asm \"imul rax, rbx, rcx, rdx\"\n")
        p = subprocess.run([os.path.join(ROOT, "tools", "pmulab-lab"), "run", "--config", bad, "--out",
                            os.path.join(td, "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        assert p.returncode == 2 and p.stdout == "", p
        assert p.stderr.startswith(f"pmulab-lab: error: run: {bad}:2: --asm: statement 1 'imul rax, rbx, rcx, rdx': "
                                     "invalid operand for instruction (llvm-mc)\n"), p.stderr
        assert not os.path.exists(os.path.join(td, "out"))


# pmulab's pause/resume markers are pseudo-instructions (any case) that become nanoBench's
# 8-byte magic values, which `run --code` replaces in the body.
def test_asm_pause_and_resume_markers():
    got = assemble("add rax, rbx; pause_counting; jmp 1f; 1: nop; RESUME_COUNTING")
    assert got.hex() == "4801d8" + "043f81c2b113b5f0" + "eb00" + "90" + "043f81c2b113b5e0", got.hex()
    assert assemble("pause_counting").hex() == (0xF0B513B1C2813F04).to_bytes(8, "little").hex()
    assert assemble("resume_counting").hex() == (0xE0B513B1C2813F04).to_bytes(8, "little").hex()
    assert assemble("pause").hex() == "f390"  # the PAUSE instruction stays itself
