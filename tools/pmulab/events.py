#!/usr/bin/env python3
"""pmulab-events: convert Intel perfmon event files into pmulab event files.

Reads a checkout of https://github.com/intel/perfmon (mapfile.csv plus the
<CODE>/events/*_core.json files it names) and writes one compact event file per
core event JSON file, for the boot stick's \\pmulab\\events\\ folder:

    tools/pmulab-events --perfmon ~/perfmon --out build/events --all
    tools/pmulab-events --perfmon ~/perfmon --out build/events --model 06_97

Each output file starts with a header saying which CPUs it is for (one @match line
per family/model, stepping range and hybrid core type the mapfile assigns to the
JSON file), then one event per line in nanoBench syntax, e.g.

    0E.01 UOPS_ISSUED.ANY
    A3.04.CMSK=4 CYCLE_ACTIVITY.STALLS_TOTAL
    C6.01.MSR_PF=0x11.TakenAlone FRONTEND_RETIRED.DSB_MISS
    FIXED_CTR0 INST_RETIRED.ANY

The format is described in docs/events.md. With --metrics, the metric files of the same
CPUs (<CODE>/metrics/*.json, Intel's metrics JSON: MetricName, Events/Constants with
aliases, Formula) become pmulab metric files (.mtr, docs/metrics.md) next to them:

    name=CPI; groups=...; formula=[CPU_CLK_UNHALTED.THREAD] / [INST_RETIRED.ANY]

Metrics whose formulas use what pmulab's formulas lack (if/else, min/max, comparisons,
non-numeric constants, event modifiers) are left out and counted in the header. Only the Python 3 standard library is
used. Exit status: 0 success, 1 the output could not be written, 2 bad arguments or
bad input (the message names the file and line, or the JSON path, and the reason).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
from typing import Any, Dict, Iterable, NoReturn, Sequence

PROG = "pmulab-events"
Event = Dict[str, Any]  # one JSON object of a perfmon file (an event, a metric, a header)

# Columns of mapfile.csv that the converter reads.
MAP_COLUMNS = ("Family-model", "Version", "Filename", "EventType", "Core Type", "Native Model ID")
CORE_TYPES = ("core", "hybridcore")

# Model-specific MSRs an event may need, by index, with the nanoBench modifier that
# carries the value (pmulab programs, saves and restores them with the event).
AUX_MSRS = {
    0x1A6: "MSR_RSP0",  # MSR_OFFCORE_RSP_0
    0x1A7: "MSR_RSP1",  # MSR_OFFCORE_RSP_1
    0x3F6: "MSR_3F6H",  # MSR_PEBS_LD_LAT_THRESHOLD
    0x3F7: "MSR_PF",    # MSR_PEBS_FRONTEND
}

# Event names pmulab accepts: letters, digits and _ . - : + @ ( ) [ ], at most 63.
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-:+@()\[\]]{1,63}$")
FIXED_RE = re.compile(r"^Fixed counter (\d+)$")
# What pmulab's event-file parser accepts (src/events/event_files.cpp): FIXED_CTR0-15,
# at most 8192 events per file.
MAX_FIXED = 15
MAX_EVENTS = 8192


class InputError(Exception):
    """Bad input: reported as 'pmulab-events: error: ...' with exit status 2."""


def fail(msg: str) -> NoReturn:
    raise InputError(msg)


def warn(msg: str) -> None:
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


# ---------------------------------------------------------------- mapfile.csv

class MapRow:
    def __init__(self, line: int, family: int, model: int, steppings: list[int] | None, rel: str,
                 event_type: str, core_type: int | None, native: int | None, version: str) -> None:
        self.line = line
        self.version = version
        self.family = family        # display family (decimal in the mapfile)
        self.model = model
        self.steppings = steppings  # sorted list of steppings, or None for all
        self.rel = rel              # JSON path relative to the checkout
        self.event_type = event_type
        self.core_type = core_type  # None, or CPUID.1AH:EAX[31:24]
        self.native = native        # None, or CPUID.1AH:EAX[23:0]

    def match_lines(self) -> list[str]:
        """The @match lines of this row (one per contiguous stepping range)."""
        base = f"@match GenuineIntel {self.family:02X}_{self.model:02X}"
        tail = ""
        if self.core_type is not None:
            tail += f" core=0x{self.core_type:02X}"
            if self.native is not None:
                tail += f" native=0x{self.native:06X}"
        if self.steppings is None:
            return [base + tail]
        out = []
        for lo, hi in ranges(self.steppings):
            out.append(f"{base} stepping={lo:X}-{hi:X}{tail}" if hi != lo else f"{base} stepping={lo:X}{tail}")
        return out


FM_RE = re.compile(r"^GenuineIntel-(\d+)-([0-9A-Fa-f]{1,2})(?:-\[([0-9A-Fa-f]+)\])?$")


def parse_hex_field(text: str, what: str, where: str, limit: int) -> int:
    t = text.strip()
    if not re.fullmatch(r"0[xX][0-9A-Fa-f]+|[0-9A-Fa-f]+", t):
        fail(f"{where}: {what} '{text}' is not a hex number")
    v = int(t, 16)
    if v > limit:
        fail(f"{where}: {what} '{text}' is out of range (at most 0x{limit:X})")
    return v


def read_mapfile(perfmon: str) -> tuple[str, list[MapRow]]:
    path = os.path.join(perfmon, "mapfile.csv")
    try:
        f = open(path, newline="", encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file (is --perfmon a checkout of intel/perfmon?)")
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror}")
    rows = []
    with f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
            if header is None:
                fail(f"{path}:1: empty file (expected the header {','.join(MAP_COLUMNS)})")
            header = [h.strip() for h in header]
            for col in MAP_COLUMNS:
                if col not in header:
                    fail(f"{path}:1: missing column '{col}' (the header is {','.join(header)})")
            idx = {c: header.index(c) for c in MAP_COLUMNS}
            for rec in reader:
                line = reader.line_num
                if not any(x.strip() for x in rec):
                    continue
                if len(rec) < len(header):
                    fail(f"{path}:{line}: {len(rec)} fields, the header has {len(header)}")
                get = {c: rec[i].strip() for c, i in idx.items()}
                etype = get["EventType"]
                if etype not in CORE_TYPES:
                    continue  # uncore, metrics, offcore matrices, ...
                where = f"{path}:{line}"
                m = FM_RE.match(get["Family-model"])
                if not m:
                    fail(f"{where}: Family-model '{get['Family-model']}' is not "
                         "GenuineIntel-FAMILY-MODEL[-[STEPPINGS]] (family decimal, model hex)")
                family = int(m.group(1))
                if family > 0xFF:
                    fail(f"{where}: family {family} is out of range")
                model = int(m.group(2), 16)
                steppings = None
                if m.group(3):
                    steppings = sorted({int(c, 16) for c in m.group(3)})
                rel = get["Filename"].lstrip("/")
                if not rel.endswith(".json") or ".." in rel.split("/"):
                    fail(f"{where}: Filename '{get['Filename']}' is not a .json file inside the checkout")
                if not rel.isascii():
                    fail(f"{where}: Filename '{get['Filename']}' is not ASCII (pmulab reads event files by "
                         "ASCII names)")
                core_type = native = None
                if get["Core Type"]:
                    core_type = parse_hex_field(get["Core Type"], "Core Type", where, 0xFF)
                    if core_type == 0:  # CPUID.1AH:EAX[31:24] = 0 means "not hybrid"
                        fail(f"{where}: Core Type '{get['Core Type']}' is not a hybrid core type "
                             "(0x20 Atom, 0x40 Core)")
                if get["Native Model ID"]:
                    native = parse_hex_field(get["Native Model ID"], "Native Model ID", where, 0xFFFFFF)
                if etype == "hybridcore" and core_type is None:
                    fail(f"{where}: a hybridcore row needs its Core Type (0x20 Atom, 0x40 Core)")
                if native is not None and core_type is None:
                    fail(f"{where}: Native Model ID without a Core Type")
                rows.append(MapRow(line, family, model, steppings, rel, etype, core_type, native, get["Version"]))
        except csv.Error as e:
            fail(f"{path}:{reader.line_num}: {e}")
        except UnicodeDecodeError as e:
            fail(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")
    return path, rows


def ranges(values: Iterable[int]) -> list[tuple[int, int]]:
    """Contiguous runs of a sorted list of integers: [(lo, hi), ...]."""
    out: list[list[int]] = []
    for v in values:
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return [(a, b) for a, b in out]


# ---------------------------------------------------------------- models

MODEL_RE = re.compile(r"^([0-9A-Fa-f]{1,2})_([0-9A-Fa-f]{1,2})[hH]?$")


def parse_models(values: Iterable[str]) -> list[tuple[int, int]]:
    out = []
    for v in values:
        for item in v.split(","):
            item = item.strip()
            m = MODEL_RE.match(item)
            if not m:
                raise InputError(f"--model '{item}' is not FAMILY_MODEL in hex, e.g. 06_97 or 06_5EH")
            out.append((int(m.group(1), 16), int(m.group(2), 16)))
    return out


# ---------------------------------------------------------------- events

def field(ev: Event, key: str, where: str, default: str = "0") -> str:
    v = ev.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str):
        fail(f"{where}.{key}: expected a string, found {type(v).__name__} {json.dumps(v)}")
    return v.strip()


def flag(ev: Event, key: str, where: str) -> bool:
    v = field(ev, key, where)
    if v in ("", "0"):
        return False
    if v == "1":
        return True
    fail(f"{where}.{key}: '{v}' is not 0 or 1")


def hex_value(text: str, what: str, where: str) -> int:
    t = text.strip()
    if not re.fullmatch(r"0[xX][0-9A-Fa-f]+|[0-9]+", t):
        fail(f"{where}.{what}: '{text}' is not a number (hex with 0x, or decimal)")
    return int(t, 16) if t[:2].lower() == "0x" else int(t)


def counter_set(text: str, what: str, where: str) -> tuple[str, Any] | None:
    """('fixed', n), ('gp', set) or None for an empty field."""
    t = text.strip()
    if not t:
        return None
    m = FIXED_RE.match(t)
    if m:
        return ("fixed", int(m.group(1)))
    items = [x.strip() for x in t.split(",")]
    if not all(re.fullmatch(r"\d{1,2}", x) for x in items):
        fail(f"{where}.{what}: '{text}' is not a list of counter numbers or 'Fixed counter N'")
    s = {int(x) for x in items}
    if max(s) > 31:
        fail(f"{where}.{what}: counter {max(s)} is out of range (0-31)")
    return ("gp", s)


def ctr_spec(s: set[int]) -> str:
    """The CTR= value for a set of general-purpose counters."""
    rs = ranges(sorted(s))
    if len(rs) == 1:
        lo, hi = rs[0]
        return f"{lo}" if lo == hi else f"{lo}-{hi}"
    mask = 0
    for i in s:
        mask |= 1 << i
    return f"0x{mask:X}"


class Skip(Exception):
    """An event the converter leaves out, with the reason (counted in the header)."""

    def __init__(self, key, reason):
        super().__init__(reason)
        self.key = key
        self.reason = reason


def convert_event(ev: Event, where: str, include_deprecated: bool) -> tuple[str, Any, set[int] | None]:
    """Returns (name, token, gp_set or None) or raises Skip / InputError; token is the text,
    or (text, where CTR= goes) for an event on general-purpose counters."""
    if not isinstance(ev, dict):
        fail(f"{where}: expected an object, found {type(ev).__name__}")
    for key in ("EventCode", "UMask", "EventName"):
        if key not in ev:
            fail(f"{where}: missing field '{key}'")
    name = field(ev, "EventName", where)
    where = f"{where} ({name})" if name else where
    if flag(ev, "Deprecated", where) and not include_deprecated:
        raise Skip("deprecated", "deprecated")
    if not NAME_RE.match(name):
        raise Skip("bad name", f"name '{name}' is not 1-63 letters, digits and _ . - : + @ ( ) [ ]")

    codes_text = field(ev, "EventCode", where)
    codes = [c.strip() for c in codes_text.split(",") if c.strip()]
    if not codes:
        fail(f"{where}.EventCode: empty")
    code_values = [hex_value(c, "EventCode", where) for c in codes]
    umask = hex_value(field(ev, "UMask", where), "UMask", where)
    if any(c > 0xFF for c in code_values):
        raise Skip("wide", f"EventCode {codes_text} is wider than 8 bits")
    if umask > 0xFF:
        raise Skip("wide", f"UMask 0x{umask:X} is wider than 8 bits")
    umask2 = 0
    if "UMaskExt" in ev:
        umask2 = hex_value(field(ev, "UMaskExt", where), "UMaskExt", where)
        if umask2 > 0xFF:
            raise Skip("wide", f"UMaskExt 0x{umask2:X} is wider than 8 bits")

    cmask = hex_value(field(ev, "CounterMask", where), "CounterMask", where)
    if cmask > 0xFF:
        fail(f"{where}.CounterMask: {cmask} is out of range (0-255)")
    inv = flag(ev, "Invert", where)
    edge = flag(ev, "EdgeDetect", where)
    anyt = flag(ev, "AnyThread", where)
    eq = flag(ev, "Equal", where)  # architectural perfmon v6 EQ (IA32_PERFEVTSELx[36])
    alone = flag(ev, "TakenAlone", where)

    # Extra MSRs: MSRIndex "0", "0x3F6", "0x1a6,0x1a7" (one per event code).
    msr_text = field(ev, "MSRIndex", where)
    msr_idx = [hex_value(m, "MSRIndex", where) for m in msr_text.split(",") if m.strip()]
    msr_idx = [m for m in msr_idx if m != 0]
    aux = None
    if msr_idx:
        msr = msr_idx[0]  # the MSR of the first event code
        if msr not in AUX_MSRS:
            raise Skip("msr", f"needs MSR 0x{msr:X}, which pmulab does not program")
        value = hex_value(field(ev, "MSRValue", where), "MSRValue", where)
        if value >= 1 << 64:
            fail(f"{where}.MSRValue: wider than 64 bits")
        aux = f"{AUX_MSRS[msr]}=0x{value:X}"
    elif len(codes) > 1:
        raise Skip("offcore", "offcore response event without an MSR value")

    counter = counter_set(field(ev, "Counter", where, ""), "Counter", where)
    ht_off = counter_set(field(ev, "CounterHTOff", where, ""), "CounterHTOff", where)
    if counter and counter[0] == "fixed":
        if counter[1] > MAX_FIXED:
            raise Skip("fixed", f"fixed counter {counter[1]} is beyond FIXED_CTR{MAX_FIXED}")
        if cmask or inv or edge or eq or aux or umask2:
            fail(f"{where}: a fixed-counter event cannot have CounterMask, Invert, EdgeDetect, Equal, "
                 "UMaskExt or an MSR")
        token = f"FIXED_CTR{counter[1]}" + (".AnyT" if anyt else "") + (".TakenAlone" if alone else "")
        return name, token, None
    # With hyper-threading off a core has more counters (CounterHTOff): the union is
    # what the event may use; a CPU only has the counters CPUID enumerates anyway.
    gp = set()
    for c in (counter, ht_off):
        if c and c[0] == "gp":
            gp |= c[1]
    token = f"{code_values[0]:02X}.{umask:02X}"
    if cmask:
        token += f".CMSK={cmask}"
    if anyt:
        token += ".AnyT"
    if edge:
        token += ".EDG"
    if inv:
        token += ".INV"
    if eq:
        token += ".EQ"
    if umask2:
        token += f".UMASK2=0x{umask2:02X}"
    ctr_index = len(token)  # CTR= is inserted here once the file's full set is known
    if aux:
        token += "." + aux
    if alone:
        token += ".TakenAlone"
    return name, (token, ctr_index), (gp or None)


def printable(text: str) -> str:
    """Text for a header comment: printable ASCII only."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def load_json(path: str, rel: str) -> tuple[Event, list[Any], str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        fail(f"{path}: no such file (named by mapfile.csv)")
    except UnicodeDecodeError as e:
        fail(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})")
    except OSError as e:
        fail(f"{path}: cannot read: {e.strerror}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}")
    except RecursionError:
        fail(f"{path}: invalid JSON: nested too deeply")
    header: Event = {}
    if isinstance(data, dict):
        if "Events" not in data:
            fail(f"{path}: the top-level object has no 'Events' list")
        events = data["Events"]
        header = data.get("Header") or {}
        if not isinstance(header, dict):
            fail(f"{path}: Header: expected an object")
        prefix = "Events"
    elif isinstance(data, list):  # older perfmon files: a bare list of events
        events = data
        prefix = ""
    else:
        fail(f"{path}: expected an object with 'Events' or a list of events")
    if not isinstance(events, list):
        fail(f"{path}: Events: expected a list")
    return header, events, prefix


def convert_file(perfmon: str, rel: str, rows: list[MapRow], include_deprecated: bool,
                 mapfile_version: str) -> tuple[list[str], int, dict[str, list[str]]]:
    path = os.path.join(perfmon, rel)
    header, events, prefix = load_json(path, rel)
    out_events = []  # (name, token, gp)
    seen: dict[str, Any] = {}
    skipped: dict[str, list[str]] = {}
    for i, ev in enumerate(events):
        where = f"{path}: {prefix}[{i}]"
        try:
            name, token, gp = convert_event(ev, where, include_deprecated)
        except Skip as s:
            skipped.setdefault(s.key, []).append(s.reason)
            continue
        key = name.upper()
        if key in seen:
            warn(f"{where} ({name}): duplicate of {prefix}[{seen[key]}]; the first is kept")
            skipped.setdefault("duplicate", []).append(name)
            continue
        seen[key] = i
        out_events.append((name, token, gp))
    full = set()
    for _, _, gp in out_events:
        if gp:
            full |= gp
    lines = []
    for name, token, gp in out_events:
        if isinstance(token, tuple):
            text, at = token
            if gp and gp != full:
                text = text[:at] + ".CTR=" + ctr_spec(gp) + text[at:]
            token = text
        lines.append(f"{token} {name}")
    if len(lines) > MAX_EVENTS:
        fail(f"{path}: {len(lines)} events; pmulab reads at most {MAX_EVENTS} per file")

    info = []
    if isinstance(header.get("Version"), str):
        info.append(f"V{printable(header['Version'])}")
    if isinstance(header.get("DatePublished"), str):
        info.append(f"published {printable(header['DatePublished'])}")
    if mapfile_version:
        info.append(f"mapfile {printable(mapfile_version)}")
    head = [
        "# pmulab event file, generated by tools/pmulab-events from intel/perfmon; see docs/events.md",
        f"# source: {printable(rel)}" + (f" ({', '.join(info)})" if info else ""),
    ]
    if full:
        head.append(f"# general-purpose counters: {ctr_spec(full)} unless CTR= says otherwise")
    notes = []
    labels = {"deprecated": "deprecated", "offcore": "offcore response without an MSR value",
              "msr": "needing an MSR pmulab does not program", "wide": "wider than 8-bit fields",
              "bad name": "with names pmulab cannot use", "duplicate": "duplicate names",
              "fixed": f"on fixed counters pmulab does not know (it has FIXED_CTR0-{MAX_FIXED})"}
    for key in ("deprecated", "offcore", "msr", "wide", "fixed", "bad name", "duplicate"):
        if key in skipped:
            notes.append(f"{len(skipped[key])} {labels[key]}")
    head.append(f"# events: {len(lines)}" + (f"; left out: {', '.join(notes)}" if notes else ""))
    matches = []
    for r in rows:
        for m in r.match_lines():
            if m not in matches:
                matches.append(m)
    return head + matches + lines, len(lines), skipped


METRIC_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<id>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>[-+*/()]))")


def metric_text(text: str, limit: int) -> str:
    """A value for a metric-file field: no ';' or '#' (field and comment separators)."""
    t = printable(str(text)).replace(";", ",").replace("#", "no.").strip()
    return t[:limit]


def convert_metric(m: Event, where: str) -> str:
    """One Intel metric -> a pmulab metric line, or Skip."""
    if not isinstance(m, dict):
        raise InputError(f"{where}: not an object")
    name = re.sub(r"[^A-Za-z0-9_.]", "_", str(m.get("MetricName", ""))).strip("_")[:47]
    formula = m.get("Formula")
    if not name or not isinstance(formula, str):
        raise InputError(f"{where}: MetricName and Formula are required")
    alias = {}
    for e in m.get("Events", []) or []:
        ev = str(e.get("Name", ""))
        if ev.endswith(":perf_metrics"):
            ev = ev[:-len(":perf_metrics")]
        if ":" in ev:
            raise Skip("modifier", name)
        alias[str(e.get("Alias", ""))] = "[" + ev + "]"
    for c in m.get("Constants", []) or []:
        cv = str(c.get("Name", ""))
        if not re.fullmatch(r"\d+(\.\d+)?", cv):
            raise Skip("constant", name)
        alias[str(c.get("Alias", ""))] = cv
    out, pos = [], 0
    while pos < len(formula):
        mt = METRIC_TOKEN.match(formula, pos)
        if not mt or mt.end() == pos:
            if formula[pos:].strip() == "":
                break
            raise Skip("syntax", name)
        pos = mt.end()
        if mt.group("num"):
            if "e" in mt.group("num").lower():
                raise Skip("syntax", name)
            out.append(mt.group("num"))
        elif mt.group("op"):
            out.append(mt.group("op"))
        else:
            ident = mt.group("id")
            if ident not in alias:
                raise Skip("syntax", name)  # if, else, min, max, ... or an unknown alias
            out.append(alias[ident])
    text = " ".join(out).replace("( ", "(").replace(" )", ")")
    if len(text) > 319:
        raise Skip("long", name)
    fields = [f"name={name}"]
    groups = [g for g in re.split(r"[;,]", str(m.get("MetricGroup", "") or "")) if g.strip()]
    if m.get("Category"):
        groups.append(str(m["Category"]))
    if groups:
        fields.append("groups=" + metric_text(",".join(g.strip().replace(" ", "_") for g in groups), 95))
    if m.get("UnitOfMeasure"):
        fields.append("unit=" + metric_text(m["UnitOfMeasure"], 31))
    if m.get("BriefDescription"):
        fields.append("desc=" + metric_text(m["BriefDescription"], 95))
    fields.append("formula=" + text)
    return "; ".join(fields)


def convert_metrics(perfmon: str, rel: str) -> list[tuple[str, list[str], int, int]]:
    """The metric files of the CPU whose event file is `rel`: [(out_name, lines, count, left)]."""
    code_dir = os.path.dirname(os.path.dirname(rel))
    mdir = os.path.join(perfmon, code_dir, "metrics")
    results: list[tuple[str, list[str], int, int]] = []
    if not os.path.isdir(mdir):
        return results
    for fn in sorted(os.listdir(mdir)):
        if not fn.endswith(".json"):
            continue
        path = os.path.join(mdir, fn)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: {e}")
        metrics = data.get("Metrics") if isinstance(data, dict) else data
        if not isinstance(metrics, list):
            raise InputError(f"{path}: no Metrics list")
        lines: list[str] = []
        left: dict[str, list[str]] = {}
        for i, m in enumerate(metrics):
            try:
                lines.append(convert_metric(m, f"{path}: Metrics[{i}]"))
            except Skip as sk:
                left.setdefault(sk.key, []).append(sk.reason)
        labels = {"modifier": "with event modifiers", "constant": "with non-numeric constants",
                  "syntax": "with if/else, min/max or comparisons", "long": "with formulas over 319 characters"}
        notes = [f"{len(v)} {labels[k]}" for k, v in left.items()]
        head = ["# pmulab metric file, generated by tools/pmulab-events from intel/perfmon; see docs/metrics.md",
                f"# source: {printable(os.path.join(code_dir, 'metrics', fn))}",
                f"# metrics: {len(lines)}" + (f"; left out: {', '.join(notes)}" if notes else "")]
        results.append((fn[:-len(".json")] + ".mtr", head + lines, len(lines), sum(len(v) for v in left.values())))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Convert Intel perfmon event files (a checkout of github.com/intel/perfmon) into "
                    "pmulab event files for \\pmulab\\events\\ on the boot stick.")
    ap.add_argument("--perfmon", required=True, metavar="DIR", help="the perfmon checkout (holds mapfile.csv)")
    ap.add_argument("--out", required=True, metavar="DIR", help="where to write the .evt files (created)")
    sel = ap.add_mutually_exclusive_group(required=True)
    sel.add_argument("--model", action="append", metavar="FF_MM",
                     help="only the event files of this family_model in hex, e.g. 06_97 (repeatable, "
                          "or comma-separated)")
    sel.add_argument("--all", action="store_true", help="every core event file in the mapfile")
    ap.add_argument("--include-deprecated", action="store_true", help="keep events marked Deprecated")
    ap.add_argument("--metrics", action="store_true",
                    help="also convert <CODE>/metrics/*.json into pmulab metric files (.mtr)")
    args = ap.parse_args(argv)

    try:
        models = parse_models(args.model) if args.model else None
        mapfile, rows = read_mapfile(args.perfmon)
        # JSON files in mapfile order, with the rows (CPUs) each serves.
        by_file: dict[str, list[MapRow]] = {}
        for r in rows:
            by_file.setdefault(r.rel, []).append(r)
        if models is not None:
            chosen = []
            for fam, mod in models:
                hits = [rel for rel, rs in by_file.items() if any(r.family == fam and r.model == mod for r in rs)]
                if not hits:
                    raise InputError(f"--model {fam:02X}_{mod:02X}: {mapfile} names no core event file for it")
                for h in hits:
                    if h not in chosen:
                        chosen.append(h)
        else:
            chosen = list(by_file)
            if not chosen:
                raise InputError(f"{mapfile}: no core or hybridcore rows")
        outputs: dict[str, tuple[str]] = {}
        for rel in chosen:
            out_name = os.path.basename(rel)[:-len(".json")] + ".evt"
            if out_name.lower() in {k.lower() for k in outputs}:
                raise InputError(f"{rel} and {outputs[out_name][0]} would both be written as {out_name}")
            outputs[out_name] = (rel,)
        results = []
        for out_name, (rel,) in sorted(outputs.items()):
            rs = by_file[rel]
            lines, count, skipped = convert_file(args.perfmon, rel, rs, args.include_deprecated, rs[0].version)
            results.append((out_name, rel, lines, count, skipped))
        metric_files: list[tuple[str, list[str], int, int]] = []
        if args.metrics:
            for rel in chosen:
                for m in convert_metrics(args.perfmon, rel):
                    if m[0] not in [x[0] for x in metric_files]:
                        metric_files.append(m)
    except InputError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2

    try:
        os.makedirs(args.out, exist_ok=True)
        for out_name, rel, lines, count, skipped in results:
            dst = os.path.join(args.out, out_name)
            tmp = dst + ".tmp"
            with open(tmp, "w", encoding="ascii", newline="\n") as f:
                f.write("\n".join(lines) + "\n")
            os.replace(tmp, dst)
            left = sum(len(v) for v in skipped.values())
            print(f"{dst}: {count} events from {rel}" + (f" ({left} left out)" if left else ""))
        for out_name, lines, count, left in metric_files:
            dst = os.path.join(args.out, out_name)
            with open(dst + ".tmp", "w", encoding="ascii", newline="\n") as f:
                f.write("\n".join(lines) + "\n")
            os.replace(dst + ".tmp", dst)
            print(f"{dst}: {count} metrics" + (f" ({left} left out)" if left else ""))
    except OSError as e:
        print(f"{PROG}: error: cannot write {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


def cli() -> None:
    """The command line entry point (tools/pmulab-events)."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
