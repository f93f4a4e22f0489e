#!/usr/bin/env python3
"""pmulab-lab: scripted measurement campaigns around pmulab.

  pmulab-lab run --config A.cfg [--config B.cfg] [--smp 1,4] [--cpu max,Skylake-Client]
                 [--kvm | --kvm=required] [--icount S] [--jobs N] [--timeout S]
                 [--agent | --no-agent] --out DIR
      For every combination of config x smp x cpu model, boot pmulab in QEMU (several QEMU
      processes in parallel) and pull \\pmulab\\results out of its disk image (mtools) into
      DIR/<config>-smp<N>-<cpu>/results/, then merge everything into DIR/merged.jsonl and
      DIR/merged.csv. Two ways to run a campaign:
        image mode (--no-agent): a disk image with the campaign as \\pmulab\\pmulab.cfg
          (tools/mkimage.sh), booted as a USB stick would be (tools/qemu_run.py --image);
        agent mode (--agent): one boot into `pmulab serve --results` per configuration,
          every campaign line sent as a request (tools/pmulab/client.py); the agent writes the
          same results files, and the status of every command comes back (commands.json).
      The default picks the agent when a campaign has more than one command.
      Every run folder also gets table.txt: per results file its command line and the
      median/q1/q3/est table of its results (the same in both modes).
  pmulab-lab run --config A.cfg --sim DUMP [--sim DUMP2] [--sim-model NAME] [--sim-cache SPEC]
                 [--sim-seed N] --out DIR
      The same on the simulator instead of QEMU: one run per config x machine (a CPUID
      dump, or a named model) in DIR/<config>-sim-<dump>/, each campaign driven through
      `pmulab-sim --results DIR/.../results -- serve --results` as in agent mode
      (docs/sim.md). The QEMU options (--smp, --cpu, --kvm, --icount, --efi,
      --keep-images, --no-agent) do not go with --sim.
  pmulab-lab pull IMAGE --out DIR
      Copies \\pmulab\\results from a disk image (e.g. `dd if=/dev/sdX of=stick.img`) to DIR.
      Never overwrites: when DIR already holds a file of the same name (every stick numbers
      its results from 0001), nothing is copied and the status is 2; pull into a new folder.
  pmulab-lab merge DIR [DIR ...] --out PREFIX
      Merges the *.jsonl results below the folders into PREFIX.jsonl and PREFIX.csv.
      Earlier merged files below the folders (their records carry "lab") are skipped
      with a note, so merging a lab folder again never counts a record twice.

Campaign lines may use --asm TEXT, --asm-init, --asm-late-init, --asm-one-time-init
(--att): they are assembled on the host (tools/pmulab/asm.py) into --code HEX in the
image; code that does not assemble is an error (status 2) before any boot.

Run folders are unique: <config>-smp<N>[-<cpu>]; two configs with the same base name
in different folders get their folder's name in front (a/x.cfg -> a_x-smp1), the same
config twice gets -2, -3. An --out that already holds one of them (or merged.jsonl)
is refused: results are never overwritten.

Merged records carry a "lab" object: {"run": the run folder (never the "results" folder
inside it), "file": results file, and the config/smp/cpu/mode of the boot}. Only the standard
library is used.

Exit status: 0 all boots ok; 1 some boot or pmulab command failed (the others are still
merged), or a file could not be written; 2 bad arguments, an input file that cannot be
read, or bad input files (README "Exit status of the tools").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import sys
from typing import Any, Callable, Dict, Iterable, NoReturn, Sequence, TextIO, Tuple

from . import ROOT
from . import asm as pmulab_asm
from . import client as pmulab_client
from .client import add_sim_options

Record = Dict[str, Any]  # one JSON record (a results line, a command's state)
Job = Tuple[str, int, str, str]  # one boot: (config, smp, cpu model, run folder)
ESP_OFFSET = "@@1M"  # tools/mkimage.sh puts the ESP at 1 MiB
AGENT_CMD_MAX = 4096  # the longest "cmd" the agent takes (docs/agent.md)


class LabError(Exception):
    """A message for the user; status 2 bad input, 1 a file could not be read or written."""

    def __init__(self, msg, status=2):
        super().__init__(msg)
        self.status = status


def say(text: str) -> None:
    """A line on stdout; a reader that went away (`| head -1`) does not stop the work:
    the remaining boots still run and are merged."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def die(msg: str, status: int = 2) -> NoReturn:
    print(f"pmulab-lab: error: {msg}", file=sys.stderr)
    sys.exit(status)


def check_campaign(cfg: str, data: bytes) -> None:
    """pmulab's own campaign check (build/host/pmulab-check) of the campaign as it will
    reach the target (data: --asm already assembled, one line per line): a typo costs no
    boot. Messages name cfg."""
    tool = os.path.join(ROOT, "build", "host", "pmulab-check")
    if not os.path.isfile(tool):
        subprocess.run(["make", "-s", "-C", ROOT, "build/host/pmulab-check"], stdout=sys.stderr)
    with tempfile.TemporaryDirectory() as td:
        tmp = os.path.join(td, "campaign.cfg")
        with open(tmp, "wb") as f:
            f.write(data)
        r = subprocess.run([tool, tmp], stderr=subprocess.PIPE, text=True, errors="replace")
    if r.returncode != 0:
        sys.stderr.write(r.stderr.replace(tmp, cfg))
        die(f"run: config {cfg} has errors; nothing was run (pmulab would refuse it)", r.returncode)


def mtools(args: list[str], img: str) -> str:
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1", MTOOLS_NO_VFAT="0")
    try:
        p = subprocess.run([args[0], "-i", img + ESP_OFFSET, *args[1:]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, errors="replace", env=env)
    except OSError as e:
        raise LabError(f"cannot run {args[0]} ({e.strerror}; Debian: apt-get install mtools)", 1)
    if p.returncode != 0:
        first = (p.stderr.strip().splitlines() or ["failed"])[0]
        raise LabError(f"{args[0]} on {img}: {first}")
    return p.stdout


def pull(img: str, out_dir: str) -> list[str]:
    """Copies \\pmulab\\results\\* from the image into out_dir; returns the file names.
    Never overwrites: a name out_dir already holds stops the pull before anything is copied."""
    if not os.path.isfile(img):
        raise LabError(f"pull: {img}: no such image")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise LabError(f"pull: --out {out_dir} is not a folder")
    try:
        listing = mtools(["mdir", "-b", "::/pmulab/results"], img)
    except LabError as e:
        if e.status != 2:
            raise
        raise LabError(f"pull: {img} has no \\pmulab\\results folder (not a pmulab image?): {e}")
    names = []
    for line in listing.splitlines():
        path = line.strip()
        if not path or path.endswith("/.") or path.endswith("/.."):
            continue
        names.append(os.path.basename(path))
    names.sort()
    taken = [n for n in names if os.path.lexists(os.path.join(out_dir, n))]
    if taken:
        raise LabError(f"pull: {out_dir} already holds {taken[0]}" + (f" and {len(taken) - 1} more" if len(taken) > 1
                                                                     else "")
                       + "; nothing copied (results are never overwritten: pull into a new folder)")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise LabError(f"pull: cannot create {out_dir}: {e.strerror}", 1)
    for name in names:
        # Copy beside the target, then link: the link fails instead of replacing a file
        # that another process created meanwhile.
        dst = os.path.join(out_dir, name)
        tmp = os.path.join(out_dir, f".{name}.pull-{os.getpid()}")
        try:
            mtools(["mcopy", "-n", "-o", f"::/pmulab/results/{name}", tmp], img)
            try:
                os.link(tmp, dst)
            except FileExistsError:
                raise LabError(f"pull: {dst} appeared while pulling; not overwritten")
            except OSError as e:
                raise LabError(f"pull: cannot write {dst}: {e.strerror}", 1)
        finally:
            if os.path.lexists(tmp):
                os.remove(tmp)
    return names


def flatten(obj: Any, prefix: str = "", out: dict[str, str] | None = None) -> dict[str, str]:
    """The same flattening as pmulab's CSV writer: nested keys joined by '.', arrays by ';'."""
    if out is None:
        out = {}
    for k, v in obj.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            flatten(v, key, out)
        elif isinstance(v, list):
            out[key] = ";".join("" if x is None else (json.dumps(x) if isinstance(x, (dict, list)) else
                                                     (str(x).lower() if isinstance(x, bool) else str(x)))
                                for x in v)
        elif v is None:
            out[key] = ""
        elif isinstance(v, bool):
            out[key] = "true" if v else "false"
        else:
            out[key] = str(v)
    return out


def read_text(path: str) -> str:
    """A file's text (strict UTF-8); LabError with the reason otherwise."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LabError(f"{path}: cannot read: {e.strerror}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LabError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")


def read_jsonl(path: str) -> list[Record]:
    recs = []
    for n, line in enumerate(read_text(path).split("\n"), 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise LabError(f"{path}:{n}: not JSON ({e.msg})")
        except RecursionError:
            raise LabError(f"{path}:{n}: not JSON (nested too deeply)")
        if not isinstance(obj, dict):
            raise LabError(f"{path}:{n}: not a JSON object")
        recs.append(obj)
    return recs


def run_label(run_dir: str, folder: str) -> str:
    """The run a results file belongs to: its folder relative to the parent of the folder
    given to merge, with the "results" folder pmulab-lab run and pull write stripped."""
    d = os.path.abspath(run_dir)
    if os.path.basename(d) == "results" and os.path.dirname(d) != d:
        d = os.path.dirname(d)
    rel = os.path.relpath(d, os.path.dirname(os.path.abspath(folder)))
    if rel == "." or rel.startswith(".."):
        rel = os.path.basename(d) or d
    return rel


def write_file(path: str, write: Callable[[TextIO], object]) -> None:
    try:
        with open(path, "w", newline="" if path.endswith(".csv") else None, encoding="utf-8") as f:
            write(f)
    except OSError as e:
        raise LabError(f"cannot write {path}: {e.strerror}", 1)


def merge(folders: Sequence[str], prefix: str, labels: dict[str, Record] | None = None) -> int:
    """Merges every *.jsonl below folders into PREFIX.jsonl / PREFIX.csv. Returns record count."""
    labels = labels or {}
    merged = []
    for folder in folders:
        if not os.path.isdir(folder):
            raise LabError(f"{folder}: no such folder")
        files = []
        for dirpath, _, fnames in os.walk(folder):
            files += [os.path.join(dirpath, f) for f in fnames if f.endswith(".jsonl")]
        for path in sorted(files):
            run_dir = os.path.dirname(path)
            recs = read_jsonl(path)
            # pmulab's own records never carry "lab": such a file is an earlier merge,
            # whose records are already counted from their results files.
            if any("lab" in r for r in recs):
                print(f"pmulab-lab: note: skipped {path}: a merged file (its records carry \"lab\")",
                      file=sys.stderr)
                continue
            lab: Record = {"run": run_label(run_dir, folder), "file": os.path.basename(path)}
            lab.update(labels.get(os.path.abspath(run_dir), {}))
            for rec in recs:
                rec = dict(rec)
                rec["lab"] = lab
                merged.append(rec)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    except OSError as e:
        raise LabError(f"cannot write {prefix}.jsonl: {e.strerror}", 1)

    def write_jsonl(f):
        for rec in merged:
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    write_file(prefix + ".jsonl", write_jsonl)
    # CSV: the measurement-like records (not meta/diagnostics), all types together
    # with the union of their columns.
    rows = [flatten(r) for r in merged if r.get("type") not in ("meta", "error", "warning", "progress")]
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)

    def write_csv(f):
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r.get(c, "") for c in cols])
    write_file(prefix + ".csv", write_csv)
    return len(merged)


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "x"


def with_shutdown(data: bytes) -> bytes:
    """The campaign as written, byte for byte, plus a --shutdown line (in the file's own
    line ending) when it has none: the VM must power off when the campaign is done."""
    text = data.decode("utf-8")
    if re.search(r"^\s*--shutdown\s*$", text, re.M):
        return data
    nl = b"\r\n" if b"\r\n" in data else b"\n"
    sep = b"" if not data or data.endswith(b"\n") else nl
    return data + sep + b"# added by pmulab-lab" + nl + b"--shutdown" + nl


def campaign_data(cfg: str, args: argparse.Namespace) -> bytes:
    """The campaign as it reaches the target (--asm assembled), from cmd_run's check."""
    data = getattr(args, "campaigns", {}).get(cfg)
    if data is None:
        with open(cfg, "rb") as f:
            data = pmulab_asm.rewrite_campaign(f.read(), cfg)
    return data


def boot_one(job: Job, args: argparse.Namespace) -> tuple[Job, int, str]:
    """Builds the image, boots it, pulls the results. Returns (job, status, message)."""
    cfg, smp, cpu, run_dir = job
    img = os.path.join(run_dir, "pmulab.img")
    data = campaign_data(cfg, args)  # --asm TEXT -> --code HEX
    cfg_copy = os.path.join(run_dir, "pmulab.cfg")
    with open(cfg_copy, "wb") as f:
        f.write(with_shutdown(data))
    r = subprocess.run([os.path.join(ROOT, "tools", "mkimage.sh"), img, args.efi, cfg_copy],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if r.returncode != 0:
        return job, 1, f"image build failed: {r.stdout.strip()}"
    cmd = [sys.executable, os.path.join(ROOT, "tools", "qemu_run.py"), "--no-build", "--image", img,
           "--smp", str(smp), "--timeout", str(args.timeout), "--serial-log",
           os.path.join(run_dir, "serial.log")]
    if cpu:
        cmd += ["--cpu", cpu]
    if args.kvm:
        cmd += [f"--kvm={args.kvm}" if args.kvm != "auto" else "--kvm"]
    if args.icount is not None:
        cmd += ["--icount", str(args.icount)]
    with open(os.path.join(run_dir, "console.txt"), "w") as out, \
            open(os.path.join(run_dir, "qemu-stderr.txt"), "w") as err:
        p = subprocess.run(cmd, stdout=out, stderr=err)
    try:
        files = pull(img, os.path.join(run_dir, "results"))
    except LabError as e:
        return job, 1, f"image, boot exit {p.returncode}; {e}"
    if not args.keep_images:
        os.remove(img)
    msg = f"image, exit {p.returncode}, {len(files)} results files"
    if p.returncode >= 124:  # run-qemu.sh's own failure (timeout, QEMU, arguments, ...): its reason
        why = [l for l in read_text(os.path.join(run_dir, "qemu-stderr.txt")).splitlines() if l.startswith("run-qemu")]
        if why:
            msg += f" ({why[-1]})"
    return job, (0 if p.returncode == 0 else 1), msg


# ---------------------------------------------------------------- agent mode

def campaign_commands(data: bytes) -> list[tuple[int, list[str]]]:
    """(line number, words) of every command of a campaign (bytes, --asm already
    assembled), as pmulab reads it: '#' comments, blank lines and the '--shutdown' line
    are not commands."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    for n, raw in enumerate(text.split("\n"), 1):
        words = pmulab_asm.split_line(pmulab_asm._strip_comment(raw.rstrip("\r")).strip())
        if words and words != ["--shutdown"]:
            out.append((n, words))
    return out


def agent_obstacle(commands: list[tuple[int, list[str]]], efi: str) -> str | None:
    """Why a campaign cannot run through the agent (None when it can)."""
    default = os.path.join(ROOT, "build", "pmulab.efi")
    if os.path.realpath(efi) != os.path.realpath(default):
        return f"--efi {efi}: the agent boots {default} (as run-qemu.sh does)"
    for n, words in commands:
        if next((w for w in words if not w.startswith("--")), None) == "serve":
            return f"line {n} runs 'serve' itself"
        if "--shutdown" in words:
            return f"line {n} has --shutdown on a command line"
    return None


def request_of(words: list[str]) -> tuple[str | list[str], dict[str, bytes] | None]:
    """A campaign line as a request: the line itself (so the meta record's command_line is
    the one image mode writes), or, when it is longer than the agent takes (4096
    characters), with its --code* HEX sent as blobs."""
    cmd = " ".join(pmulab_asm.quote(w) for w in words)
    if len(cmd) <= AGENT_CMD_MAX:
        return cmd, None
    argv, blobs = pmulab_client.asm_to_blobs(words)
    return argv, blobs


def line_ranges(lines: Sequence[Any]) -> str:
    """[3, 4, 5, 8] -> '3-5, 8'."""
    out, i = [], 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[j] + 1:
            j += 1
        out.append(str(lines[i]) if i == j else f"{lines[i]}, {lines[j]}" if j == i + 1 else f"{lines[i]}-{lines[j]}")
        i = j + 1
    return ", ".join(out)


def link_results(states: list[Record], rendered: dict[int, str], res_dir: str, files: Iterable[str]) -> None:
    """Adds "results" to each command: the results file (NNNN-<command>, without .jsonl)
    it wrote, found by the meta record's command_line in the order the commands ran."""
    for st in states:
        st["results"] = None
    j = 0
    for name in sorted(f for f in files if f.endswith(".jsonl")):
        try:
            with open(os.path.join(res_dir, name), encoding="utf-8", errors="replace") as f:
                meta = json.loads(f.readline())
        except (OSError, ValueError):
            continue
        line = meta.get("command_line") if isinstance(meta, dict) else None
        k = j
        while k < len(states) and rendered.get(k) != line:
            k += 1
        if k < len(states):
            states[k]["results"] = name[:-len(".jsonl")]
            j = k + 1


def new_states(commands: list[tuple[int, list[str]]]) -> list[Record]:
    """commands.json's entries, before anything ran."""
    return [{"line": n, "command": " ".join(pmulab_asm.quote(w) for w in words), "status": None,
             "state": "not run", "reason": None} for n, words in commands]


def send_commands(agent: pmulab_client.Agent, commands: list[tuple[int, list[str]]],
                  states: list[Record]) -> tuple[tuple[int, str] | None, dict[int, str]]:
    """Every campaign command as a request (several in flight), its answer into states.
    Returns (lost: (index, why) when the agent was lost, else None; how pmulab's meta
    records name each command)."""
    ids: dict[int, Any] = {}
    nxt, i, rendered = 0, 0, {}
    try:
        for i in range(len(commands)):
            while nxt < len(commands) and nxt - i < pmulab_client.Agent.WINDOW:
                cmd, blobs = request_of(commands[nxt][1])
                # How pmulab's meta record will name it: the words, space-separated.
                rendered[nxt] = " ".join(commands[nxt][1] if isinstance(cmd, str) else cmd)
                ids[nxt] = agent.submit(cmd, blobs)
                nxt += 1
            ans = agent.collect(ids.pop(i))
            st = states[i]
            st["status"] = ans.status
            st["state"] = "ok" if ans.status == 0 else "failed"
            if ans.status != 0:
                msgs = [r.get("message", "") for r in ans.errors]
                st["reason"] = "; ".join(m for m in msgs if m) or f"status {ans.status}"
    except (pmulab_client.AgentError, TimeoutError, OSError) as e:
        return (i, f"the agent was lost: {e}"), rendered
    return None, rendered


def drive(start: Callable[[], pmulab_client.Agent], what: str, commands: list[tuple[int, list[str]]],
          states: list[Record]) -> tuple[bool, tuple[int, str] | None, dict[int, str], int | None]:
    """Starts the agent, sends every command, stops it. Returns (whether it started, lost
    as send_commands says, how the meta records name the commands, its exit status)."""
    try:
        agent = start()
    except (pmulab_client.AgentError, TimeoutError, OSError) as e:
        return False, (0, f"{what} did not start: {e}"), {}, None
    lost, rendered = send_commands(agent, commands, states)
    return True, lost, rendered, agent.close(timeout=60)


def mark_lost(states: list[Record], lost: tuple[int, str], started: bool) -> None:
    """The commands the agent did not answer: the one it was running failed, the rest not run."""
    k, why = lost
    if started and k < len(states):
        states[k].update(state="failed", reason=f"{why}, while it ran this command")
        why = f"{why}, at line {states[k]['line']}"
        k += 1
    for st in states[k:]:
        st.update(state="not run", reason=why)


def agent_summary(run_dir: str, states: list[Record], rendered: dict[int, str], files: list[str],
                  how: str, pulled: str) -> str:
    """Links the results files to the commands, writes commands.json; the run's message."""
    link_results(states, rendered, os.path.join(run_dir, "results"), files)
    write_file(os.path.join(run_dir, "commands.json"),
               lambda f: f.write("[\n" + ",\n".join(json.dumps(st) for st in states) + "\n]\n"))
    counts: dict[str, int] = {}
    for st in states:
        counts[st["state"]] = counts.get(st["state"], 0) + 1
    msg = f"{how}, {len(states)} commands: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    failed = [st for st in states if st["state"] == "failed"]
    for st in failed[:3]:
        msg += f"; line {st['line']}: {st['reason']}"
    if len(failed) > 3:
        msg += f"; {len(failed) - 3} more failed (commands.json)"
    skipped = [st for st in states if st["state"] == "not run"]
    if skipped:
        msg += f"; not run: line{'s' if len(skipped) > 1 else ''} {line_ranges([st['line'] for st in skipped])}"
        if not failed:  # the agent never ran a command: say why once
            msg += f" ({skipped[0]['reason']})"
    return msg + f"; {len(files)} results files{pulled}"


def agent_one(job: Job, args: argparse.Namespace) -> tuple[Job, int, str]:
    """Agent mode: one boot into `serve --results`, every command a request, the results
    files pulled from the disk image afterwards. Returns (job, status, message)."""
    cfg, smp, cpu, run_dir = job
    data = campaign_data(cfg, args)
    with open(os.path.join(run_dir, "pmulab.cfg"), "wb") as f:
        f.write(with_shutdown(data))
    commands = campaign_commands(data)
    keep = tempfile.mkdtemp(prefix=".agent-", dir=run_dir)
    qargs = ["--smp", str(smp), "--keep", keep, "--serial-log", os.path.join(run_dir, "serial.log")]
    if cpu:
        qargs += ["--cpu", cpu]
    if args.kvm:
        qargs += [f"--kvm={args.kvm}" if args.kvm != "auto" else "--kvm"]
    if args.icount is not None:
        qargs += ["--icount", str(args.icount)]
    serve_args = ["--results"] + (["--unsafe"] if any("--unsafe" in w for _, w in commands) else [])
    states = new_states(commands)
    console = os.path.join(run_dir, "console.txt")
    with open(console, "w") as log:
        def start() -> pmulab_client.Agent:
            try:
                return pmulab_client.Agent.qemu(qargs, timeout=args.timeout, no_build=True, log=log,
                                                serve_args=serve_args)
            except pmulab_client.AgentError as e:
                # run-qemu.sh's fall-back from KVM to TCG starts a second QEMU, which the
                # client's socket (accepted once) does not reach: fall back here instead.
                if args.kvm != "auto" or "KVM could not run the firmware" not in str(e):
                    raise
                log.write("pmulab-lab: KVM could not run the firmware; the agent starts again under TCG\n")
                log.flush()
                return pmulab_client.Agent.qemu([a for a in qargs if a != "--kvm"], timeout=args.timeout,
                                                no_build=True, log=log, serve_args=serve_args)
        started, lost, rendered, qemu_status = drive(start, "the agent", commands, states)
    if lost is not None:
        k, why = lost
        # run-qemu.sh names the serial log of its --keep folder, which goes away.
        why = why.replace(os.path.join(keep, "serial.log"), os.path.join(run_dir, "serial.log"))
        tail = [l for l in read_text(console).splitlines() if l.startswith("run-qemu")]
        why += f" (QEMU status {qemu_status}" + (f": {tail[-1]}" if tail else "") + ")" \
            if qemu_status is not None else ""
        mark_lost(states, (k, why), started)
    img = os.path.join(keep, "disk.img")
    files = []
    pulled = ""
    if os.path.isfile(img):
        try:
            files = pull(img, os.path.join(run_dir, "results"))
        except LabError as e:
            pulled = f"; {e}"
        if args.keep_images:
            os.replace(img, os.path.join(run_dir, "pmulab.img"))
    shutil.rmtree(keep, ignore_errors=True)
    msg = agent_summary(run_dir, states, rendered, files, "agent", pulled)
    bad = any(st["state"] != "ok" for st in states)
    ok = not bad and not pulled and qemu_status == 0
    return job, 0 if ok else 1, msg


def sim_one(job: Job, args: argparse.Namespace) -> tuple[Job, int, str]:
    """--sim: the campaign on the simulator (pmulab-sim --results RUN/results -- serve
    --results), every command a request as in agent mode; the results files are
    written straight into the run folder. `job`'s cpu slot holds the machine."""
    cfg, _, machine, run_dir = job
    data = campaign_data(cfg, args)
    with open(os.path.join(run_dir, "pmulab.cfg"), "wb") as f:
        f.write(data)
    commands = campaign_commands(data)
    res_dir = os.path.join(run_dir, "results")
    serve_args = ["--results"] + (["--unsafe"] if any("--unsafe" in w for _, w in commands) else [])
    kind, _, what = machine.partition(":")
    states = new_states(commands)
    with open(os.path.join(run_dir, "console.txt"), "w") as log:
        started, lost, rendered, status = drive(
            lambda: pmulab_client.Agent.sim(what if kind == "dump" else None, what if kind == "model" else None,
                                            args.sim_cache, args.sim_seed, serve_args=serve_args, results=res_dir,
                                            timeout=args.timeout, log=log),
            "the simulator", commands, states)
    if lost is not None:
        k, why = lost
        mark_lost(states, (k, why + (f" (pmulab-sim status {status})" if status is not None else "")), started)
    files = sorted(os.listdir(res_dir)) if os.path.isdir(res_dir) else []
    msg = agent_summary(run_dir, states, rendered, files, "sim", "")
    ok = all(st["state"] == "ok" for st in states) and status == 0
    return job, 0 if ok else 1, msg


# ---------------------------------------------------------------- table.txt

def size_text(n: int | None) -> str:
    """pmulab's size column: 4K, 64K, 1M (put_size_suffix), else bytes."""
    if not isinstance(n, int):
        return "-"
    for suffix, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def write_table(run_dir: str) -> None:
    """run_dir/table.txt from its results files: per file its command line, the
    median/q1/q3/est table of its results (values as the records hold them) and its
    errors. Image and agent mode write the same files, so the same table."""
    res = os.path.join(run_dir, "results")
    names = sorted(f for f in os.listdir(res) if f.endswith(".jsonl")) if os.path.isdir(res) else []
    out = [f"# {os.path.basename(run_dir)}: {len(names)} results files (pmulab-lab; values per iteration)"]
    for name in names:
        recs: list[Record] = []
        for line in read_text(os.path.join(res, name)).split("\n"):
            try:
                rec = json.loads(line, parse_float=lambda t: t)  # the digits pmulab wrote
            except ValueError:
                continue
            if isinstance(rec, dict):
                recs.append(rec)
        meta: Record = next((r for r in recs if r.get("type") == "meta"), {})
        out.append("")
        line = str(meta.get("command_line", "?"))
        if len(line) > 160:  # e.g. --code with kilobytes of hex: the file has it whole
            line = f"{line[:150]}... ({len(line)} characters)"
        out.append(f"{name[:-6]}: {line}")
        results = [r for r in recs if r.get("type") == "result"]
        if results:
            agg = results[0].get("agg", "median")
            bw = max([5] + [len(str(r.get("bench", ""))) for r in results])
            ew = max([5] + [len(str(r.get("event", ""))) for r in results])
            cw = max([7] + [len(str(r.get("counter", ""))) for r in results])
            out.append(f"{'bench':<{bw}} {'size':>6} {'event':<{ew}} {'counter':<{cw}} {'cpu':>4} {'apic':>5} "
                       f"{'run':>4} {agg:>12} {'q1':>12} {'q3':>12} {'est(min)':>12} {'est(max)':>12}  unit")
            for r in results:
                vals = [str(r.get(k, "-")) for k in ("per_iteration", "q1", "q3", "min", "max")]
                out.append(f"{str(r.get('bench', '')):<{bw}} {size_text(r.get('size')):>6} "
                           f"{str(r.get('event', '')):<{ew}} {str(r.get('counter', '')):<{cw}} "
                           f"{str(r.get('cpu', '')):>4} {str(r.get('apic_id', '')):>5} {str(r.get('run', '')):>4} "
                           + " ".join(f"{v:>12}" for v in vals) + f"  {r.get('unit', '')}")
        others: dict[Any, int] = {}
        for r in recs:
            if r.get("type") not in ("meta", "result", "error", "warning"):
                others[r.get("type")] = others.get(r.get("type"), 0) + 1
        if others:
            out.append("  " + ", ".join(f"{v} {k} records" for k, v in others.items()))
        if len(recs) == (1 if meta else 0):
            out.append("  (no records after the meta record)")
        for r in recs:
            if r.get("type") in ("error", "warning"):
                out.append(f"  {r['type']}: {r.get('message', '')}")
    write_file(os.path.join(run_dir, "table.txt"), lambda f: f.write("\n".join(out) + "\n"))


def run_names(configs: Sequence[str], smps: Sequence[int],
              cpus: Sequence[str], machines: Sequence[str] = ()) -> list[tuple[str, int, str, str]]:
    """(config, smp, cpu, folder name) for every boot; the names are unique. With
    `machines` (--sim: "dump:PATH", "model:NAME") one run per config and machine instead,
    (config, 0, machine, <config>-sim-<dump or model>)."""
    variants = [(0, m, "sim-" + slug(os.path.splitext(os.path.basename(m.partition(":")[2]))[0]))
                for m in machines] or \
               [(smp, cpu, f"smp{smp}" + (f"-{slug(cpu)}" if cpu else "")) for smp in smps for cpu in cpus]
    stems: dict[str, set[str]] = {}
    for cfg in configs:
        stems.setdefault(slug(os.path.splitext(os.path.basename(cfg))[0]), set()).add(os.path.realpath(cfg))
    out, used = [], set()
    for cfg in configs:
        stem = slug(os.path.splitext(os.path.basename(cfg))[0])
        if len(stems[stem]) > 1:  # a/x.cfg and b/x.cfg: the folder tells them apart
            parent = os.path.basename(os.path.dirname(os.path.realpath(cfg)))
            stem = slug(f"{parent}_{stem}")
        for smp, cpu, suffix in variants:
            base = f"{stem}-{suffix}"
            name, k = base, 1
            while name.lower() in used:  # the same config twice (or a clash left over)
                k += 1
                name = f"{base}-{k}"
            used.add(name.lower())
            out.append((cfg, smp, cpu, name))
    return out


def sim_machines(args: argparse.Namespace) -> list[str]:
    """--sim DUMP / --sim-model NAME as machines ("dump:PATH", "model:NAME"), each checked
    by pmulab-sim itself (with --sim-cache and --sim-seed) before anything runs; [] without."""
    machines = [f"dump:{d}" for d in args.sim or []] + [f"model:{m}" for m in args.sim_model or []]
    if not machines:
        if args.sim_cache is not None or args.sim_seed is not None:
            die("run: --sim-cache and --sim-seed go with --sim DUMP (or --sim-model NAME)")
        return []
    qemu = [o for o, v in (("--smp", args.smp), ("--cpu", args.cpu), ("--kvm", args.kvm), ("--icount", args.icount),
                           ("--efi", args.efi), ("--keep-images", args.keep_images or None)) if v is not None]
    if qemu:
        die(f"run: {qemu[0]} is an option of the QEMU boot; it does not go with --sim")
    if args.agent == "image":
        die("run: --no-agent boots a disk image; --sim runs every campaign through the simulator's agent")
    if not os.access(pmulab_client.SIM, os.X_OK):
        die(f"run: {os.path.relpath(pmulab_client.SIM, ROOT)} is missing: `make` builds it (in {ROOT})", 1)
    for m in machines:
        kind, _, what = m.partition(":")
        argv = pmulab_client.sim_argv(what if kind == "dump" else None, what if kind == "model" else None,
                                      args.sim_cache, args.sim_seed)
        p = subprocess.run([pmulab_client.SIM, *argv, "--", "version"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, errors="replace")
        if p.returncode != 0:
            why = pmulab_client.sim_refusal(p.stderr.splitlines(), f"status {p.returncode}")
            die(f"run: pmulab-sim: {why}", 2 if p.returncode == 2 else 1)
    return machines


def cmd_run(args: argparse.Namespace) -> int:
    if not args.config:
        die("run: give at least one --config FILE")
    commands = {}
    args.campaigns = {}
    for c in args.config:
        if not os.path.isfile(c):
            die(f"run: config {c}: no such file")
        try:
            with open(c, "rb") as f:
                data = f.read()
            data.decode("utf-8")
            data = pmulab_asm.rewrite_campaign(data, c)  # assembly errors before any boot
            args.campaigns[c] = data  # assembled once, not again per boot
        except OSError as e:
            die(f"run: config {c}: cannot read: {e.strerror}")
        except UnicodeDecodeError as e:
            die(f"run: config {c}: not UTF-8 text ({e.reason} at byte {e.start})")
        except pmulab_asm.AsmError as e:
            die(f"run: {e}")
        check_campaign(c, data)
        commands[c] = campaign_commands(data)
    machines = sim_machines(args)
    smps: list[Any] = [s for s in (args.smp or "4").split(",") if s]
    if not smps:
        die("run: --smp: give at least one processor count (e.g. 1,4)")
    for s in smps:
        if not re.fullmatch(r"[1-9]\d*", s):
            die(f"run: --smp: '{s}' is not a processor count (use e.g. 1,4)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        die(f"run: --timeout: '{args.timeout_text}' is not a positive number of seconds")
    if args.jobs < 1:
        die(f"run: --jobs: '{args.jobs}' is not a positive count")
    if args.icount is not None and not 0 <= args.icount <= 10:
        die("run: --icount: SHIFT must be 0..10")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        die(f"run: --out {args.out} is not a folder")
    cpus = [c for c in (args.cpu or "").split(",")] or [""]
    args.efi = args.efi or os.path.join(ROOT, "build", "pmulab.efi")
    if not machines and not os.path.isfile(args.efi):
        r = subprocess.run(["make", "-s", "-C", ROOT, "build/pmulab.efi"], stdout=sys.stderr)
        if r.returncode != 0 or not os.path.isfile(args.efi):
            die(f"run: {args.efi} is missing and the build failed", 1)
    modes = {}
    for c in args.config:
        why = agent_obstacle(commands[c], args.efi)
        if args.agent == "agent" and why:
            die(f"run: --agent: config {c}: {why}; use --no-agent (image mode)")
        if machines and why:
            die(f"run: --sim: config {c}: {why}")
        if machines:
            modes[c] = "sim"
        elif args.agent == "agent" or (args.agent == "auto" and not why and len(commands[c]) > 1):
            modes[c] = "agent"
        else:
            modes[c] = "image"
    jobs: list[Job] = []
    labels: dict[str, Record] = {}
    for cfg, smp, cpu, name in run_names(args.config, smps, cpus, machines):
        run_dir = os.path.join(args.out, name)
        if os.path.lexists(run_dir):
            die(f"run: {run_dir} exists already; pick a new --out or remove it (results are never overwritten)")
        jobs.append((cfg, smp, cpu, run_dir))
        labels[os.path.abspath(os.path.join(run_dir, "results"))] = {
            "run": name, "config": os.path.basename(cfg), "smp": int(smp), "cpu_model": cpu or "max",
            "mode": modes[cfg], "icount": args.icount} if not machines else {
            "run": name, "config": os.path.basename(cfg), "sim": cpu.partition(":")[2], "mode": "sim"}
    for fname in ("merged.jsonl", "merged.csv"):
        if os.path.lexists(os.path.join(args.out, fname)):
            die(f"run: {os.path.join(args.out, fname)} exists already; pick a new --out (results are never "
                "overwritten)")
    try:
        os.makedirs(args.out, exist_ok=True)
        for job in jobs:
            os.mkdir(job[3])  # fails if another pmulab-lab took the folder meanwhile
    except FileExistsError as e:
        die(f"run: {e.filename} exists already (another pmulab-lab?); results are never overwritten")
    except OSError as e:
        die(f"run: cannot create {e.filename}: {e.strerror}", 1)

    def boot(job):
        try:
            if modes[job[0]] == "sim":
                job, status, msg = sim_one(job, args)
            elif modes[job[0]] == "agent":
                job, status, msg = agent_one(job, args)
            else:
                job, status, msg = boot_one(job, args)
        except (OSError, LabError) as e:
            status, msg = 1, str(e) if isinstance(e, LabError) else f"{e.filename or ''}: {e.strerror}"
        except Exception as e:  # noqa: BLE001 -- one configuration's bug must not lose the others' results
            status, msg = 1, f"internal error in pmulab-lab: {type(e).__name__}: {e}"
        try:
            write_table(job[3])
        except LabError as e:
            status, msg = 1, f"{msg}; {e}"
        return job, status, msg
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for job, status, msg in ex.map(boot, jobs):
            say(f"{'ok  ' if status == 0 else 'FAIL'} {os.path.basename(job[3])}: {msg}")
            failed += status != 0
    result_dirs = [os.path.join(j[3], "results") for j in jobs if os.path.isdir(os.path.join(j[3], "results"))]
    n = merge(result_dirs, os.path.join(args.out, "merged"), labels) if result_dirs else 0
    say(f"merged {n} records into {os.path.join(args.out, 'merged.jsonl')} and merged.csv")
    return 1 if failed else 0


def seconds(text: str) -> float:
    """--timeout: any float text; checked (finite, positive) by the command."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds")
    return v


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="pmulab-lab", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="boot a matrix of configs x smp x cpu models and merge the results")
    r.add_argument("--config", action="append", help="campaign file (pmulab.cfg syntax); repeatable")
    r.add_argument("--smp", help="comma-separated processor counts (default 4)")
    r.add_argument("--cpu", help="comma-separated QEMU CPU models (default max)")
    r.add_argument("--kvm", nargs="?", const="auto", choices=["auto", "required"])
    r.add_argument("--icount", type=int)
    r.add_argument("--jobs", type=int, default=2, help="QEMU processes in parallel (default 2)")
    r.add_argument("--timeout", type=seconds, default=1800.0)
    r.add_argument("--efi", help="pmulab binary (default build/pmulab.efi)")
    r.add_argument("--keep-images", action="store_true")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--agent", dest="agent", action="store_const", const="agent", default="auto",
                   help="one boot into `pmulab serve` per configuration, every command a request")
    g.add_argument("--no-agent", dest="agent", action="store_const", const="image",
                   help="image mode: the campaign as \\pmulab\\pmulab.cfg, booted as a stick would be")
    add_sim_options(r, "; repeatable: one run per config and dump", repeat=True)
    r.add_argument("--out", required=True, help="output folder (must not exist per run)")
    p = sub.add_parser("pull", help="copy \\pmulab\\results out of a disk image")
    p.add_argument("image")
    p.add_argument("--out", required=True)
    m = sub.add_parser("merge", help="merge results folders into one JSONL and CSV")
    m.add_argument("folders", nargs="+")
    m.add_argument("--out", required=True, help="output prefix (PREFIX.jsonl, PREFIX.csv)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        # The text as given, for messages ('nan', not Python's spelling of it).
        given = [a for i, a in enumerate(argv) if i and argv[i - 1] == "--timeout"]
        given += [a.split("=", 1)[1] for a in argv if a.startswith("--timeout=")]
        args.timeout_text = given[-1] if given else str(args.timeout)
    try:
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "pull":
            names = pull(args.image, args.out)
            print(f"copied {len(names)} files to {args.out}")
            return 0
        if args.cmd == "merge":
            n = merge(args.folders, args.out)
            print(f"merged {n} records into {args.out}.jsonl and {args.out}.csv")
            return 0
    except LabError as e:
        die(str(e), e.status)
    return 2


def cli() -> None:
    """The command line entry point (tools/pmulab-lab)."""
    # Not SIGPIPE's default action: the agent's socket must give EPIPE (a lost agent,
    # reported), not kill pmulab-lab. A closed stdout (`pmulab-lab run ... | head`) ends
    # quietly below.
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except KeyboardInterrupt:
        # QEMU and run-qemu.sh get the same SIGINT and clean up after themselves.
        print("pmulab-lab: interrupted; results pulled so far are kept", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    cli()
