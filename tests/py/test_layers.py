"""The folder-level include graph (tools/check-layers.py): the tree itself passes, and
the checker catches what it promises to catch (upward and sideways includes, cycles,
oversized sources) on a small synthetic tree."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-layers.py")


def run_check(root):
    return subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)


def write(root, rel, text):
    path = os.path.join(root, "src", rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_layers_tree_includes_flow_down():
    r = run_check(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "includes flow down, no cycles" in r.stdout


def test_layers_checker_catches_violations():
    with tempfile.TemporaryDirectory() as td:
        write(td, "base/a.h", '#pragma once\n#include "pmu/p.h"\n')           # up
        write(td, "pmu/p.h", '#pragma once\n#include "base/b.h"\n')
        write(td, "base/b.h", '#pragma once\n#include "base/a.h"\n')           # cycle a->p->b->a
        write(td, "measure/m.h", '#pragma once\n#include "census/c.h"\n')      # peers
        write(td, "census/c.h", "#pragma once\n")
        write(td, "x86/big.cpp", "int x;\n" * 601)                              # too long
        write(td, "stray/s.cpp", "int y;\n")                                    # no layer
        r = run_check(td)
        assert r.returncode == 1, r.stdout
        out = r.stdout
        assert "src/base/a.h: includes pmu/p.h: pmu is above base" in out, out
        assert "include cycle: base/a.h -> pmu/p.h -> base/b.h -> base/a.h" in out, out
        assert "src/measure/m.h: includes census/c.h: census and measure are peers" in out, out
        assert "src/x86/big.cpp: 601 lines (more than 600)" in out, out
        assert "src/stray/s.cpp: not in a layer folder" in out, out
        assert "check-layers: 5 problem(s)" in out, out


def test_layers_checker_accepts_clean_tree():
    with tempfile.TemporaryDirectory() as td:
        write(td, "base/a.h", "#pragma once\n")
        write(td, "pmu/p.h", '#pragma once\n#include "base/a.h"\n#include "p2.h"\n')
        write(td, "pmu/p2.h", "#pragma once\n")
        write(td, "efi/e.cpp", '#include "pmu/p.h"\n#include "pmulab_version.h"\n')
        r = run_check(td)
        assert r.returncode == 0, r.stdout
        assert "4 files" in r.stdout, r.stdout


FORMAT_GLOBS = ["src/*.cpp", "src/*.h", "tests/unit/*.cpp", "tests/unit/*.h",
                "tests/support/*.cpp", "tests/support/*.h", "tests/fuzz/*.cpp", "tests/fuzz/*.h",
                "tests/bench/*.cpp"]


def test_tree_follows_clang_format():
    """The C++ tree is formatted as .clang-format says (`make format` applies it;
    tools/install-deps.sh installs Debian's clang-format)."""
    import shutil
    exe = shutil.which("clang-format")
    assert exe, "clang-format is missing: tools/install-deps.sh installs it (Debian package clang-format)"
    files = subprocess.run(["git", "ls-files", *FORMAT_GLOBS], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    assert len(files) > 100, files
    r = subprocess.run([exe, "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True)
    bad = sorted({line.split(":", 1)[0] for line in r.stderr.splitlines() if ": error:" in line})
    assert r.returncode == 0 and not bad, f"not formatted (run make format): {bad[:10]}"
