"""pmulab.cache_target: where tools/pmulab-cache's sequences run (an agent: pmulab-sim,
`serve --tcp`, a QEMU boot), the cache geometry of its CPU, and one measured sequence per
`pmulab run` request (docs/cache.md "Access sequences")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from . import ROOT
from . import client as pmulab_client
from .cache_policies import Element
from .cache_seq import (Code, Geometry, Layout, Level, Unsupported, Usage, area_size, code_set, gen_code,
                        level_events, make_layout, parse_code_set)

CACHESIM = os.path.join(ROOT, "build", "host", "pmulab-cachesim")
_DESCRIBED = re.compile(r"(L1D|L2|L3) (\d+) (bytes|KiB|MiB|GiB) (\d+)-way (\d+) sets? (\S+)")
_UNITS = {"bytes": 0, "KiB": 10, "MiB": 20, "GiB": 30}
Record = Dict[str, Any]


class TargetError(Exception):
    """The target failed (a message; .status is the exit status)."""

    def __init__(self, msg: str, status: int = 1) -> None:
        super().__init__(msg)
        self.status = status


def parse_described(text: str) -> Geometry:
    """The levels of `pmulab-cachesim --describe`'s first line."""
    geo: Geometry = {}
    for name, size, unit, ways, sets, policy in _DESCRIBED.findall(text):
        lv = int(name[1])
        geo[lv] = Level(lv, int(sets), int(ways), (int(size) << _UNITS[unit]) // (int(ways) * int(sets)), policy)
    return geo


def sim_geometry(args: Any) -> Geometry:
    """The simulated CPU's caches as pmulab-sim builds them: its CPUID (leaf 4 /
    8000_001DH, docs/sim.md "The memory hierarchy") with --sim-cache applied."""
    cmd = [CACHESIM, "--describe", *(["--dump", args.sim] if args.sim else ["--model", args.sim_model])]
    if args.sim_cache:
        cmd += ["--cache", args.sim_cache]
    if args.cpu not in (None, "bsp"):
        cmd += ["--cpu", str(args.cpu)]
    if not os.access(CACHESIM, os.X_OK):
        raise TargetError(f"{os.path.relpath(CACHESIM, ROOT)} is missing: `make` builds it")
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if p.returncode != 0:
        why = p.stderr.strip().split(": error: ", 1)[-1].replace("--cache", "--sim-cache")
        raise TargetError(f"pmulab-sim: {why}", 2)
    return parse_described(p.stdout.splitlines()[0] if p.stdout else "")


def parse_spec(spec: str) -> Geometry:
    """--geometry L1D:32K:8,L2:256K:4,...: the caches of a target whose records do not say."""
    geo: Geometry = {}
    for part in spec.split(","):
        m = re.fullmatch(r"(L1D?|L2|L3):(\d+)([KMG]?):(\d+)(?::(\d+))?", part.strip(), re.I)
        if not m:
            raise Usage(f"--geometry: '{part}' is not LEVEL:SIZE:WAYS[:LINE] (e.g. L1D:32K:8,L2:256K:4)")
        lv = int(m.group(1)[1])
        size = int(m.group(2)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(3).upper()]
        ways, line = int(m.group(4)), int(m.group(5) or 64)
        if ways < 1 or size % (ways * line) or line & (line - 1):
            raise Usage(f"--geometry: '{part}': the size is not a multiple of ways x line ({ways} x {line})")
        geo[lv] = Level(lv, size // (ways * line), ways, line)
    return geo


def record_geometry(cpu: Record) -> Optional[Geometry]:
    """The data and unified levels 1-3 of a `cpu` record's "caches" (CPUID leaf 4 /
    8000_001DH as `info` reports them: an object by cache name, {"L1d": {"level": 1,
    "type": "data", "sets": 64, "ways": 8, "line_size": 64, ...}, ...}, or a list of such
    objects), or None where the record has none."""
    caches = cpu.get("caches")
    if isinstance(caches, dict):
        caches = list(caches.values())
    if not isinstance(caches, list):
        return None
    geo: Geometry = {}
    for c in caches:
        if not isinstance(c, dict) or c.get("type") not in ("data", "unified"):
            continue
        try:
            lv, sets, ways = int(c["level"]), int(c["sets"]), int(c["ways"])
            line = int(c.get("line_size", c.get("line", 64)))
        except (KeyError, TypeError, ValueError):
            continue
        if 1 <= lv <= 3 and sets > 0 and ways > 0 and line > 0:
            geo[lv] = Level(lv, sets, ways, line)
    return geo or None


@dataclass
class Result:
    seq: str
    hits: Fraction
    misses: Fraction
    expected: int  # measured accesses x sets
    events: Dict[str, Fraction] = field(default_factory=dict)  # every event's value, by its name

    def number(self, x: Fraction) -> Any:
        return int(x) if x.denominator == 1 else round(float(x), 2)


class Target:
    """An agent that runs sequences, with its CPU's geometry and load events."""

    def __init__(self, args: Any, log: Any = None) -> None:
        self.args = args
        self.agent: Optional[pmulab_client.Agent] = None
        self.cpu: Record = {}
        self.geo: Geometry = {}
        self.geo_source = ""
        self.machine = ""
        self.log = log

    def open(self) -> None:
        a = self.args
        if getattr(a, "dry_run", False) and a.sim is None and a.sim_model is None:
            if not a.geometry:
                raise Usage("--dry-run without --sim needs --geometry (no target is contacted)")
            self.geo, self.geo_source = parse_spec(a.geometry), "--geometry"
            return
        try:
            if a.sim is not None or a.sim_model is not None:
                self.geo = sim_geometry(a)
                self.geo_source = "pmulab-sim's caches (CPUID leaf 4 / 8000_001DH, --sim-cache applied)"
                self.agent = pmulab_client.Agent.sim(a.sim, a.sim_model, a.sim_cache, a.sim_seed, log=self.log)
            elif a.tcp:
                host, _, port = a.tcp.rpartition(":")
                self.agent = pmulab_client.Agent.tcp(host or "127.0.0.1", int(port))
            else:
                qemu = ["--smp", str(a.smp)] + (["--icount", str(a.icount)] if a.icount is not None else [])
                self.agent = pmulab_client.Agent.qemu(qemu, no_build=a.no_build, log=self.log)
        except pmulab_client.SimError as e:
            raise TargetError(str(e), e.status) from None
        except (pmulab_client.AgentError, TimeoutError, OSError, ValueError) as e:
            raise TargetError(f"cannot reach the target: {e}") from None
        hello = self.agent.hello if isinstance(self.agent.hello, dict) else {}
        self.machine = str(hello.get("simulated_machine") or hello.get("link") or "target")
        cpus = self.agent.request("info").of_type("cpu")
        want = 0 if a.cpu in (None, "bsp") else int(a.cpu)
        pick = [c for c in cpus if c.get("index") == want]
        if not pick:
            raise Usage(f"--cpu {a.cpu}: the target has CPUs 0-{len(cpus) - 1}")
        self.cpu = pick[0]
        if not self.geo:
            if a.geometry:
                self.geo, self.geo_source = parse_spec(a.geometry), "--geometry"
            else:
                g = record_geometry(self.cpu)
                if g is None:
                    raise Unsupported("the target's info records carry no cache geometry (a pmulab without "
                                      "\"caches\" in its cpu records); give --geometry L1D:32K:8,L2:256K:4,...")
                self.geo, self.geo_source = g, "the target's info record (CPUID leaf 4 / 8000_001DH)"

    def meta(self) -> Record:
        """A meta record for plot provenance: simulated or not, the machine."""
        hello = self.agent.hello if self.agent is not None and isinstance(self.agent.hello, dict) else {}
        return {"type": "meta", "simulated": bool(hello.get("simulated")), "simulated_machine": self.machine,
                "brand": self.cpu.get("brand"), "hypervisor": self.cpu.get("hypervisor"),
                # The agent's hello says where the numbers come from, as a meta record does.
                "source": hello.get("source"), "tcg": hello.get("tcg"), "icount_shift": hello.get("icount_shift")}

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None

    def events(self, level: int, pad: bool = True) -> List[str]:
        """--events as given, else the level's load events, with the pad first where the
        body has a WBINVD (cache_seq.level_events)."""
        if getattr(self.args, "events", None):
            return [e.strip() for e in self.args.events.split(",") if e.strip()]
        evs = level_events(str(self.cpu.get("vendor", "GenuineIntel")), int(self.cpu.get("family", 6)), level)
        return evs if pad else evs[1:]

    def _cpu(self) -> List[str]:
        return ["--cpu", str(self.args.cpu)] if self.args.cpu not in (None, "bsp") else []

    def _request(self, argv: List[str], blobs: Dict[str, bytes]) -> pmulab_client.Answer:
        assert self.agent is not None
        try:
            ans = self.agent.request(argv, blobs)
        except (pmulab_client.AgentError, TimeoutError, OSError) as e:
            raise TargetError(f"lost the target: {e}") from None
        if ans.status != 0:
            msgs = "; ".join(str(r.get("message")) for r in ans.errors) or f"status {ans.status}"
            raise TargetError(f"pmulab: {msgs}", ans.status if ans.status in (2, 3) else 1)
        return ans

    def prepare(self, level: int, sets: List[int], seqs: Sequence[Sequence[Element]],
                init: Sequence[Element]) -> Tuple[Layout, int]:
        """(layout, area size)."""
        lay = make_layout(self.geo, level, sets, [init, *seqs], clear_hl=not self.args.no_clear_hl)
        return lay, area_size(lay)

    def code_offset(self, lay: Layout) -> Optional[int]:
        """--code-set: run --code-offset, the code's first line in that set (cache_seq.code_set)."""
        text = getattr(self.args, "code_set", None)
        if text is None:
            return None
        fixed = parse_code_set(text)
        return (code_set(lay) if fixed is None else fixed) * lay.geo[lay.level].line

    def argv(self, code: Code, level: int, size: int, reps: int,
             code_offset: Optional[int] = None) -> Tuple[List[str], Dict[str, bytes]]:
        events = self.events(level, pad=code.wbinvd)
        argv = ["run", "--code-file", "code", "--name", "cacheseq", "--events", ",".join(events),
                "--basic", "--unroll", "1", "--loop", "1", "--reps", str(reps), "--warmup", str(self.args.warmup),
                "--agg", self.args.agg, "--r14-size", str(size), *self._cpu()]
        if self.args.prefetchers:
            argv += ["--prefetchers", self.args.prefetchers]
        if code_offset is not None:
            argv += ["--code-offset", str(code_offset)]
        blobs = {"code": code.body}
        if code.init:
            argv += ["--init-file", "init"]
            blobs["init"] = code.init
        return argv, blobs

    def requests(self, level: int, sets: List[int], seqs: Sequence[Tuple[str, List[Element]]],
                 init: Sequence[Element] = (), reps: Optional[int] = None, count_sets: Optional[List[int]] = None
                 ) -> Tuple[Layout, int, List[Tuple[Code, List[str], Dict[str, bytes]]]]:
        """(layout, area size, [(code, run argv, blobs)] per sequence); Usage before anything runs.
        count_sets: only the `?` loads of these sets counted (gen_code)."""
        lay, size = self.prepare(level, sets, [s for _, s in seqs], init)
        out = []
        for _, seq in seqs:
            code = gen_code(lay, seq, init, size, wbinvd=not self.args.no_wbinvd, lfences=self.args.lfences,
                            count_sets=count_sets)
            out.append((code, *self.argv(code, level, size, reps or self.args.reps, self.code_offset(lay))))
        return lay, size, out

    def run_many(self, level: int, sets: List[int], seqs: Sequence[Tuple[str, List[Element]]],
                 init: Sequence[Element] = (), reps: Optional[int] = None,
                 count_sets: Optional[List[int]] = None) -> Iterator[Result]:
        """Each sequence measured once (one request each, several in flight)."""
        assert self.agent is not None
        lay, size, reqs = self.requests(level, sets, seqs, init, reps, count_sets)
        lines = [(argv, blobs) for _, argv, blobs in reqs]
        if self.log:
            print(f"pmulab-cache: measuring {len(lines)} sequence(s), L{level} set(s) "
                  f"{','.join(map(str, lay.sets))}, R14 area {size >> 20} MiB", file=self.log, flush=True)
        try:
            for i, ans in self.agent.batch(lines):
                yield self._result(ans, seqs[i], level, lay.sets, size, count_sets)
        except (pmulab_client.AgentError, TimeoutError, OSError) as e:
            raise TargetError(f"lost the target: {e}") from None

    def _result(self, ans: pmulab_client.Answer, seq: Tuple[str, List[Element]], level: int, sets: List[int],
                size: int, count_sets: Optional[List[int]] = None) -> Result:
        if ans.status != 0:
            msgs = "; ".join(str(r.get("message")) for r in ans.errors) or f"status {ans.status}"
            raise TargetError(f"pmulab: {msgs}", ans.status if ans.status in (2, 3) else 1)
        vals: Dict[str, Fraction] = {}
        for r in ans.results:
            f = r.get("fraction")
            if isinstance(f, list) and len(f) == 2:
                vals[str(r.get("event"))] = Fraction(f[0], f[1])
        expected = sum(len([x for x in ([o] if o is not None else sets) if count_sets is None or x in count_sets])
                       for _, o, k in seq[1] if k == "measure")
        if getattr(self.args, "events", None):
            return Result(seq[0], Fraction(0), Fraction(0), expected, vals)
        hit_ev, miss_ev = self.events(level)[-2:]
        first, second = vals.get(hit_ev.split()[-1]), vals.get(miss_ev.split()[-1])
        if first is None or second is None:
            raise TargetError(f"pmulab's records lack {hit_ev} or {miss_ev}")
        hits = first - second if "LOADS" in hit_ev else first
        res = Result(seq[0], hits, second, expected, vals)
        above = level > 1 and self.args.no_clear_hl  # accesses the levels above served count nothing here
        if expected and hits + second == 0 and not above:
            raise Unsupported(f"the level-{level} load events ({hit_ev}, {miss_ev}) counted nothing for "
                              f"{expected} measured accesses: this CPU does not count them (or the simulator "
                              "does not model them, docs/sim.md \"Events\")")
        if hits + second != expected:
            print(f"pmulab-cache: warning: {seq[0]!r}: hits + misses = {float(hits + second):g}, but the "
                  f"sequence has {expected} measured accesses"
                  + (" (the others were served by the levels above: --no-clear-hl)" if above else ""),
                  file=sys.stderr)
        return res

