"""pmulab's options as data: what `pmulab help --json` prints, one record per command
({"command": "run", "options": [{"name": "--unroll", "value": "count", "min": 1, ...}]}).

`make` writes them to build/gen/pmulab-options.json (from `build/host/pmulab-check
--help-json`); the Python tools read them here instead of keeping option lists of their
own (docs/options.md)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from . import ROOT

OPTIONS_JSON = os.path.join(ROOT, "build", "gen", "pmulab-options.json")

Option = dict[str, Any]

_options: dict[str, list[Option]] = {}


class OptionsError(Exception):
    """pmulab's option declarations could not be read (a message for the user)."""


def pmulab_options(command: str) -> list[Option]:
    """The option records of a pmulab command: from build/gen/pmulab-options.json (or
    $PMULAB_OPTIONS_JSON), else from `build/host/pmulab-check --help-json`, building it
    with make when neither is there. OptionsError when none can be had."""
    if not _options:
        path = os.environ.get("PMULAB_OPTIONS_JSON", OPTIONS_JSON)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
        else:
            check = os.path.join(ROOT, "build", "host", "pmulab-check")
            if not os.path.isfile(check):
                subprocess.run(["make", "-s", "-C", ROOT, "build/host/pmulab-check"], check=False,
                               stdout=subprocess.DEVNULL)
            try:
                text = subprocess.run([check, "--help-json"], check=True, capture_output=True, text=True).stdout
            except (OSError, subprocess.CalledProcessError) as e:
                raise OptionsError(f"pmulab's options: neither {path} nor {check} --help-json ({e}); run make") from e
        for line in text.splitlines():
            if line.strip():
                rec = json.loads(line)
                # `pmulab help --json` starts with the meta record (where the numbers come
                # from): only the command records declare options.
                if rec.get("type") == "command":
                    _options[rec["command"]] = rec["options"]
    if command not in _options:
        raise OptionsError(f"pmulab has no command '{command}' in its option declarations")
    return _options[command]


def asm_options() -> dict[str, str]:
    """The host's assembly options and the code options they become
    ({"--asm": "--code", "--asm-init": "--init", ...}), from run's declaration."""
    return {o["asm"]: o["name"] for o in pmulab_options("run") if "asm" in o}


def group_options() -> tuple[set[str], set[str]]:
    """(the options that start a code group, the options that belong to one), from run's
    declaration: ({"--code", "--code-file", "--asm"}, {"--name"})."""
    opts = pmulab_options("run")
    starts = {o["name"] for o in opts if o.get("starts_group")}
    starts |= {o["asm"] for o in opts if o.get("starts_group") and "asm" in o}
    return starts, {o["name"] for o in opts if "group" in o and not o.get("starts_group")}
