"""Replacement-policy simulators with the behaviour of nanoBench's cacheSim.py classes:
the library of tools/pmulab-cache's `policy` (docs/cache.md "Replacement policies") and an
independent reference for the simulator's memory hierarchy (src/sim/sim_cache.h).

Written from the semantics of nanoBench's tools/CacheAnalyzer/cacheSim.py (each class
below names the cacheSim.py class it follows), not from pmulab's C++: test_cache_model.py
runs random access sequences through both and compares the level of every access
(tests/py/cache_ref.py is this module under its old name).

One set is a list of ways (None = empty); a level is a dict of sets created on first
touch; an access walks the levels until one hits, every level missed fills the line
(docs/sim.md, "The memory hierarchy"). Only the deterministic policies are here (the
randomized ones cannot match the C++ generator).
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

Ways = List[Optional[int]]


class SetSim:
    """One set of one level: `ways` holds line numbers; subclasses keep the policy state."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ways: Ways = [None] * n

    def lookup(self, line: int) -> Optional[int]:
        for i, w in enumerate(self.ways):
            if w == line:
                return i
        return None

    def access(self, line: int) -> bool:
        raise NotImplementedError

    def flush(self, line: int) -> None:
        # ReplPolicySim.flush: the way becomes empty, nothing else changes.
        i = self.lookup(line)
        if i is not None:
            self.ways[i] = None


class OneWay(SetSim):
    """A direct-mapped set: the last line stays (cacheSim.py fails on some policies here)."""

    def access(self, line: int) -> bool:
        hit = self.ways[0] == line
        self.ways[0] = line
        return hit


class Lru(SetSim):
    """LRUSim: `ways` ordered from most to least recently used, empty ways included."""

    def access(self, line: int) -> bool:
        i = self.lookup(line)
        victim = self.n - 1 if i is None else i
        del self.ways[victim]
        self.ways.insert(0, line)
        return i is not None


class Fifo(SetSim):
    """FIFOSim: a miss enters at the front, the last way leaves."""

    def access(self, line: int) -> bool:
        if self.lookup(line) is not None:
            return True
        self.ways.pop()
        self.ways.insert(0, line)
        return False


class Plru(SetSim):
    """PLRUSim (a miss follows the tree) and, with linear=True, PLRUlSim (empty ways first).

    The tree: depth = ceil(log2 n) levels of bits; node (d, k) has children (d+1, 2k) and
    (d+1, 2k+1); a bit 0 points left. Leaves past n - 1 are clamped to n - 1."""

    def __init__(self, n: int, linear: bool = False) -> None:
        super().__init__(n)
        self.linear = linear
        self.depth = (n - 1).bit_length()
        self.node: Dict[Tuple[int, int], int] = {}

    def _follow(self) -> int:
        k = 0
        for d in range(self.depth):
            k = 2 * k + self.node.get((d, k), 0)
        return min(k, self.n - 1)

    def _point_away(self, way: int) -> None:
        k = way
        for d in range(self.depth - 1, -1, -1):
            self.node[(d, k >> 1)] = 0 if k & 1 else 1
            k >>= 1

    def access(self, line: int) -> bool:
        i = self.lookup(line)
        hit = i is not None
        if i is None:
            if self.linear and None in self.ways:
                i = self.ways.index(None)
            else:
                i = self._follow()
            self.ways[i] = line
        self._point_away(i)
        return hit


class LruOfPlru4(SetSim):
    """LRU_PLRU4Sim: groups of 4 ways, each a PLRUl, the groups in LRU order."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.groups = [Plru(4, linear=True) for _ in range(n // 4)]
        self.recency = list(range(n // 4))  # most recent group first

    def access(self, line: int) -> bool:
        owner = [g for g, p in enumerate(self.groups) if p.lookup(line) is not None]
        with_room = [g for g, p in enumerate(self.groups) if None in p.ways]
        g = owner[0] if owner else (with_room[0] if with_room else self.recency[-1])
        self.groups[g].access(line)
        self.recency.remove(g)
        self.recency.insert(0, g)
        return bool(owner)

    def flush(self, line: int) -> None:
        for p in self.groups:
            p.flush(line)


class Mru(SetSim):
    """MRUSim (update_when_filling=True) and MRUNSim (MRU_N: no update until full)."""

    def __init__(self, n: int, update_when_filling: bool = True) -> None:
        super().__init__(n)
        self.upd = update_when_filling
        self.flag = [1] * n

    def access(self, line: int) -> bool:
        i = self.lookup(line)
        hit = i is not None
        full = None not in self.ways
        if i is None:
            i = self.flag.index(1) if full else self.ways.index(None)
            self.ways[i] = line
        if full or self.upd:
            self.flag[i] = 0
        if 1 not in self.flag:
            self.flag = [0 if k == i else 1 for k in range(self.n)]
        return hit


class Nru(SetSim):
    """NRUSim: a miss takes the first way whose bit is 1 (all set to 1 when none is)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.flag = [1] * n

    def access(self, line: int) -> bool:
        i = self.lookup(line)
        if i is not None:
            self.flag[i] = 0
            return True
        if 1 not in self.flag:
            self.flag = [1] * self.n
        i = self.flag.index(1)
        self.ways[i] = line
        self.flag[i] = 0
        return False


HIT_AGE = {  # QLRUHitFuncs: the age after a hit, for ages 0, 1, 2, 3
    "H21": (0, 0, 1, 2), "H20": (0, 0, 0, 2), "H11": (0, 0, 1, 1), "H10": (0, 0, 0, 1), "H00": (0, 0, 0, 0),
}


class Qlru(SetSim):
    """QLRUSim with deterministic insertion: QLRU_Hxx_Mx_Rx_Ux[_UMO]; SRRIP is
    QLRU_H00_M2_R0_U0_UMO."""

    def __init__(self, n: int, name: str) -> None:
        super().__init__(n)
        if name == "SRRIP":
            name = "QLRU_H00_M2_R0_U0_UMO"
        parts = name.split("_")
        assert parts[0] == "QLRU" and len(parts) in (5, 6), name
        self.hit_age = HIT_AGE[parts[1]]
        self.insert_age = int(parts[2][1:])
        self.repl = parts[3]
        self.upd = parts[4]
        self.miss_only = len(parts) == 6
        self.age = [3] * n

    def _victim(self) -> int:
        empties = [k for k, w in enumerate(self.ways) if w is None]
        if empties:
            return empties[-1] if self.repl == "R2" else empties[0]
        if 3 in self.age:
            return self.age.index(3)
        assert self.repl == "R1", "R0/R2 without an age-3 way"
        return 0

    def _age(self, idx: Optional[int]) -> None:
        others = [k for k in range(self.n) if idx is None or k != idx]
        if self.upd in ("U0", "U1"):
            pool = range(self.n) if self.upd == "U0" else others
            if not pool:
                return
            lift = 3 - max(self.age[k] for k in pool)
            for k in pool:
                self.age[k] += lift
        elif 3 not in self.age:
            for k in (range(self.n) if self.upd == "U2" else others):
                self.age[k] += 1

    def access(self, line: int) -> bool:
        i = self.lookup(line)
        hit = i is not None
        if i is not None:
            self.age[i] = self.hit_age[self.age[i]]
        else:
            if self.miss_only:
                self._age(None)
            i = self._victim()
            self.ways[i] = line
            self.age[i] = self.insert_age
        if not self.miss_only:
            self._age(i)
        return hit


def qlru_names() -> List[str]:
    """Every deterministic QLRU name cacheSim.py defines (AllDetQLRUVariants)."""
    out = []
    for h in HIT_AGE:
        for m in ("M0", "M1", "M2", "M3"):
            for r in ("R0", "R1", "R2"):
                for u in ("U0", "U1", "U2", "U3"):
                    if r in ("R0", "R2") and u in ("U2", "U3"):
                        continue
                    for umo in ("", "_UMO"):
                        out.append(f"QLRU_{h}_{m}_{r}_{u}{umo}")
    return out


def make_set(policy: str, n: int) -> SetSim:
    if n == 1:
        return OneWay(1)
    simple: Dict[str, Callable[[int], SetSim]] = {
        "LRU": Lru, "FIFO": Fifo, "PLRU": Plru, "PLRUl": lambda k: Plru(k, linear=True),
        "LRU_PLRU4": LruOfPlru4, "MRU": Mru, "MRU_N": lambda k: Mru(k, update_when_filling=False), "NRU": Nru,
    }
    if policy in simple:
        return simple[policy](n)
    return Qlru(n, policy)


class Level:
    def __init__(self, size: int, ways: int, policy: str, line: int = 64) -> None:
        self.sets_count = size // (ways * line)
        self.ways, self.policy, self.line = ways, policy, line
        self.sets: Dict[int, SetSim] = {}

    def _set(self, line_no: int) -> SetSim:
        s = line_no % self.sets_count
        if s not in self.sets:
            self.sets[s] = make_set(self.policy, self.ways)
        return self.sets[s]

    def access(self, addr: int) -> bool:
        return self._set(addr // self.line).access(addr // self.line)

    def flush(self, addr: int) -> None:
        self._set(addr // self.line).flush(addr // self.line)


class Hierarchy:
    """Levels as (size, ways, policy); access returns 0.. for a level, len(levels) for memory."""

    def __init__(self, levels: List[Tuple[int, int, str]]) -> None:
        self.spec = levels
        self.reset()

    def reset(self) -> None:
        self.levels = [Level(*l) for l in self.spec]

    def access(self, addr: int) -> int:
        for i, lvl in enumerate(self.levels):
            if lvl.access(addr):
                return i
        return len(self.levels)

    def flush(self, addr: int) -> None:
        for lvl in self.levels:
            lvl.flush(addr)


# nanoBench's replPolicy candidates (cacheSim.py CommonPolicies), by its names: name -> the
# policy that behaves as its class. cacheSim.py files 'QLRU_H21_M1_R0_U0_UMO' under the
# class of QLRU_H21_M2_R0_U0_UMO (the arXiv 1904.06278 policy); the name keeps that class.
COMMON_POLICIES: Dict[str, str] = {
    "FIFO": "FIFO", "LRU": "LRU", "LRU_PLRU4": "LRU_PLRU4", "MRU": "MRU", "MRU_N": "MRU_N", "NRU": "NRU",
    "PLRU": "PLRU", "PLRUl": "PLRUl", "QLRU_H00_M1_R0_U1": "QLRU_H00_M1_R0_U1",
    "QLRU_H00_M1_R2_U1": "QLRU_H00_M1_R2_U1", "QLRU_H11_M1_R0_U0": "QLRU_H11_M1_R0_U0",
    "QLRU_H11_M1_R1_U2": "QLRU_H11_M1_R1_U2", "QLRU_H21_M1_R0_U0_UMO": "QLRU_H21_M2_R0_U0_UMO",
    "SRRIP": "SRRIP",
}


def policy_names(all_qlru: bool = False) -> List[str]:
    """replPolicy's default candidates (sorted, as it sorts them); with all_qlru also every
    deterministic QLRU variant (its -allQLRUVariants)."""
    names = set(COMMON_POLICIES)
    if all_qlru:
        names |= set(qlru_names())
    return sorted(names)


def known_policy(name: str) -> bool:
    return name in COMMON_POLICIES or name in qlru_names()


def policy_fits(name: str, assoc: int) -> bool:
    """Whether cacheSim.py's class can simulate `assoc` ways (LRU_PLRU4: groups of 4)."""
    return assoc >= 4 if name == "LRU_PLRU4" else assoc >= 1


def new_set(name: str, assoc: int) -> SetSim:
    """One set under the policy `name` (a COMMON_POLICIES name or a QLRU variant)."""
    return make_set(COMMON_POLICIES.get(name, name), assoc)


# One element of a nanoBench access sequence: (block name, set override or None, kind);
# kind: "access" (A), "measure" (A?), "flush" (A!), "wbinvd" (<wbinvd>).
Element = Tuple[str, Optional[int], str]


def get_hits(seq: Sequence[Element], policy: str, assoc: int, sets: Sequence[int]) -> int:
    """cacheSim.getHits: the hits of the measured accesses of `seq` in the sets `sets` (one
    policy simulator per set, all empty at the start; <wbinvd> empties them again)."""
    used = sorted(set(sets) | {s for _, s, _ in seq if s is not None})
    sims = {s: new_set(policy, assoc) for s in used}
    ids: Dict[str, int] = {}
    hits = 0
    for name, override, kind in seq:
        if kind == "wbinvd":
            sims = {s: new_set(policy, assoc) for s in used}
            continue
        block = ids.setdefault(name, len(ids))
        for s in ([override] if override is not None else sets):
            if kind == "flush":
                sims[s].flush(block)
            else:
                hit = sims[s].access(block)
                hits += int(hit and kind == "measure")
    return hits
