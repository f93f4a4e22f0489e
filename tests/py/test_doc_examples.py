"""The examples in README.md and docs/*.md that are marked `<!-- example -->` run as
written and print what the page shows (issue #26, item 15): docs cannot go stale.

A marked example is the fenced block right after the marker line. Its first line is the
command (`$ ` then a shell command line, continued by a trailing backslash); the lines
after it are the expected output (stdout and stderr together). Matching:
  * a line `...` stands for any number of lines (none included);
  * hexadecimal numbers of 8 or more digits (addresses) compare as equal;
  * trailing white space is ignored.
Only commands that boot nothing run here (build/host/..., tools/...); a marked example
with another command fails with the reason.
"""

import os
import re
import subprocess

from pmulab_test import ROOT

MARKER = "<!-- example -->"
PAGES = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                               if f.endswith(".md"))
ADDRESS = re.compile(r"0x[0-9a-fA-F]{8,}")


def examples():
    """(page, line, command, expected lines) of every marked example."""
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            lines = f.read().splitlines()
        for i, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            assert i + 2 < len(lines) and lines[i + 1].startswith("```"), f"{page}:{i + 1}: {MARKER} not before a block"
            j = i + 2
            assert lines[j].startswith("$ "), f"{page}:{j + 1}: a marked example starts with '$ COMMAND'"
            cmd = lines[j][2:]
            while cmd.endswith("\\"):
                j += 1
                cmd = cmd[:-1] + " " + lines[j].strip()
            end = j + 1
            while not lines[end].startswith("```"):
                end += 1
            found.append((page, i + 1, cmd, lines[j + 1:end]))
    return found


def matches(expected, got):
    """True when `got` (lines) fits `expected` (lines with `...`)."""
    norm = lambda l: ADDRESS.sub("0xADDR", l.rstrip())
    expected = [norm(l) for l in expected]
    got = [norm(l) for l in got]

    def fit(e, g):
        if e == len(expected):
            return g == len(got)
        if expected[e] == "...":
            return any(fit(e + 1, k) for k in range(g, len(got) + 1))
        return g < len(got) and expected[e] == got[g] and fit(e + 1, g + 1)

    return fit(0, 0)


def test_the_marked_examples_exist():
    # At least the simulator's examples are marked; a page losing its markers is a test failure.
    pages = {page for page, _, _, _ in examples()}
    assert "docs/sim.md" in pages, pages


def test_every_marked_example_prints_what_its_page_shows():
    failures = []
    for page, line, cmd, expected in examples():
        if not (cmd.startswith("build/host/") or cmd.startswith("tools/") or cmd.startswith("PMULAB_")):
            failures.append(f"{page}:{line}: only commands that boot nothing run as examples: {cmd}")
            continue
        r = subprocess.run(["bash", "-c", cmd + " 2>&1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
        got = r.stdout.splitlines()
        if not matches(expected, got):
            failures.append(f"{page}:{line}: `{cmd}` printed:\n" + "\n".join(got[:60]))
    assert not failures, "\n\n".join(failures)
