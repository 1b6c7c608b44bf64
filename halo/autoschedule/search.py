"""Beam search over the schedule space, guided by a cost model.

A state decides the Funcs one at a time, from the outputs back (`State.order`). Each
step expands every state of the beam into all its children (the next Func inlined, at
root, or at any legal loop of its consumers, each with the nests `_nest_options`
draws), prices all children in one batch (the Funcs not decided yet at root, with
halo's default nests), and keeps the `beam_size` cheapest. Priced so, an output's
tilings can't be told apart while its producers sit at root, though the tiling decides
where they can go (softmax: a row per task keeps a row's intermediates in L1). So the
children that decide an output are also completed by their `rollout` (each Func left
computed per tile of its consumers), and the few whose rollouts price lowest stay in
the beam too; the cheapest rollouts join the final beam. A second, finer pass then
moves each Func's tile factors by x2 and /2 (the vectorized dimension's also by a
vector) and toggles its vector width, fusion and unrolling, again keeping a beam.

`budget_s` is honoured: when the beam search runs out of time the remaining Funcs are
decided greedily (a beam of one), and when that runs out too the cheapest rollouts
priced so far come first, then the beam's states with the remaining Funcs at root. Ties
break by the order children are made, and the only randomness (which nests to draw when
there are too many) comes from `seed`, so a search is deterministic for a seed.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from itertools import product
from math import prod

import numpy as np

from halo.autoschedule.algorithm import Algorithm, extent
from halo.autoschedule.cost_model import CostModel
from halo.autoschedule.features import cost_terms, stage_features
from halo.autoschedule.loop_nest import FuncNest, decision_of, nests
from halo.autoschedule.space import AT, INLINE, OUTER, ROOT, WHOLE, Decision, Nest, Placement
from halo.schedule.calls import Call

# Tile factors, and tiles of the vectorized dimension in vectors. A register tile must
# fit the registers: with AVX2's 16 (12 accumulators), 4 rows take at most 3 vectors,
# and a tile of two dimensions besides the vector needs a side of 2. The 2s come last,
# so that they win only where they are cheaper (ties break by the order children are
# made).
COARSE_TILES = (4, 16, 64, 2)
COARSE_VECTORS = (1, 4, 16, 2)
MAX_CHILDREN = 48  # nests per placement; more are sampled with the seed
SMALL_POINTS = 1 << 18  # a root Func this small is also tried without a parallel loop
MAX_ROOT_NESTS = 16  # root nests of a Func that could go inside a consumer instead


@dataclass(frozen=True)
class Machine:
    cores: int
    lanes: int  # the natural vector width of the widest type the pipeline computes
    cache_bytes: tuple[int, int, int] = (32 << 10, 1 << 20, 16 << 20)


@dataclass(frozen=True)
class State:
    alg: Algorithm
    decisions: tuple[tuple[str, Decision], ...] = ()
    locals_: tuple[str, ...] = ()
    prefix: tuple[Call, ...] = ()  # calls that made `alg` from the user's (rfactor)

    @property
    def order(self) -> list[str]:
        return list(reversed(self.alg.funcs))

    @property
    def complete(self) -> bool:
        return len(self.decisions) == len(self.alg.funcs)

    @property
    def decided(self) -> dict[str, Decision]:
        return dict(self.decisions)

    def next_func(self) -> str:
        return self.order[len(self.decisions)]

    def with_decision(self, name: str, d: Decision) -> State:
        return replace(self, decisions=(*self.decisions, (name, d)))


@dataclass
class Priced:
    state: State
    seconds: float


class Search:
    def __init__(self, model: CostModel, machine: Machine, beam_size: int, seed: int,
                 deadline: float):
        self.model = model
        self.machine = machine
        self.beam_size = beam_size
        self.rng = random.Random(seed)
        self.deadline = deadline
        self.evaluations = 0
        self.rollouts: list[Priced] = []  # the cheapest complete rollouts seen

    def price(self, states: list[State]) -> list[float]:
        """Predicted seconds of each state, in one batch."""
        if not states:
            return []
        self.evaluations += len(states)
        return [float(x) for x in self.model.predict(self.terms(states))]

    def terms(self, states: list[State]) -> np.ndarray:
        """The cost terms of each state (a row each): what the model prices, and what
        tuning refits it on."""
        m = self.machine
        return np.stack([cost_terms(stage_features(s.alg, s.decided, nests(s.alg, s.decided),
                                                   m.cores, m.lanes, m.cache_bytes),
                                    m.cores, m.lanes) for s in states])

    def run(self, starts: list[State]) -> list[Priced]:
        """The best complete states found from any of `starts` (the pipeline, and the
        pipeline after rfactors), cheapest first."""
        start = starts[0]
        beam = list(starts)
        while not all(s.complete for s in beam):
            width = self.beam_size if time.monotonic() < self.deadline else 1
            children = [c for s in beam for c in
                        (children_of(s, self.machine, self.rng) if not s.complete else [s])]
            beam = [p.state for p in self._best(children, width)]
            if time.monotonic() >= self.deadline + self._grace(start) and \
                    not all(s.complete for s in beam):
                return self.rollouts + [Priced(_rest_at_root(s), float("inf")) for s in beam]
        best = self._best(_unique(beam + [p.state for p in self.rollouts]), self.beam_size)
        return self._refine(best)

    def _grace(self, start: State) -> float:
        """Time past the deadline the greedy finish may take."""
        return 0.1 * len(start.alg.funcs)

    def _best(self, states: list[State], k: int) -> list[Priced]:
        """The `k` cheapest states, the cheapest few of each start (an rfactor pays
        off only once its intermediate is scheduled, a few steps later), and the few
        whose rollouts are cheapest (`_rolled_out`)."""
        prices = self.price(states)
        ranked = sorted(range(len(states)), key=lambda i: (prices[i], i))
        keep = ranked[:k]
        per_start: dict = {}
        for i in ranked:
            per_start.setdefault(states[i].prefix, []).append(i)
        for group in per_start.values():
            keep += [i for i in group[:max(1, k // 4)] if i not in keep]
        keep += [i for i in self._rolled_out(states, k) if i not in keep]
        return [Priced(states[i], prices[i]) for i in sorted(keep, key=lambda i: (prices[i], i))]

    def _rolled_out(self, states: list[State], k: int) -> list[int]:
        """Of the states that have just decided an output, the `k // 2` whose rollouts
        are cheapest; the `k` cheapest rollouts so far are kept (`self.rollouts`).
        States that differ only in the vectors and unrolling of that decision share a
        rollout (the Funcs left go to the same loops): the first of them stands for
        all."""
        groups: dict[tuple, int] = {}
        for i, s in enumerate(states):
            if not s.complete and s.alg.funcs[s.decisions[-1][0]].is_output:
                groups.setdefault(_coarse_key(s), i)
        rolled = [rollout(states[i], self.machine.lanes) for i in groups.values()]
        priced = [Priced(r, p) for r, p in zip(rolled, self.price(rolled), strict=True)]
        order = sorted(range(len(priced)), key=lambda g: (priced[g].seconds, g))
        self.rollouts = sorted({_key(p.state): p for p in self.rollouts + priced}.values(),
                               key=lambda p: p.seconds)[:k]
        firsts = list(groups.values())
        return [firsts[g] for g in order[:max(1, k // 2)]]

    def _refine(self, beam: list[Priced]) -> list[Priced]:
        """The coarse-to-fine pass: each Func's nest moved to its neighbours."""
        for name in beam[0].state.order:
            if time.monotonic() >= self.deadline:
                break
            children = [p.state for p in beam]
            for p in beam:
                d = p.state.decided.get(name)
                if d is None or d.nest is None:
                    continue
                for nest in _neighbours(d.nest, self.machine.lanes):
                    new = dict(p.state.decisions)
                    new[name] = replace(d, nest=nest)
                    children.append(replace(p.state, decisions=tuple(new.items())))
            beam = self._best(_unique(children), len(beam))
        return beam


def _key(s: State) -> tuple:
    return s.decisions, s.locals_, s.prefix


def _coarse_key(s: State) -> tuple:
    """A state without the vectors and unrolling of its last decision."""
    name, d = s.decisions[-1]
    coarse = d.nest and (d.nest.tiles, d.nest.parallel, d.nest.fuse_outer)
    return s.decisions[:-1], name, d.placement, coarse, s.locals_, s.prefix


def _unique(states: list[State]) -> list[State]:
    seen, out = set(), []
    for s in states:
        key = _key(s)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _rest_at_root(s: State) -> State:
    for name in s.order[len(s.decisions):]:
        s = s.with_decision(name, Decision(Placement(ROOT)))
    return s


def rollout(state: State, lanes: int) -> State:
    """The state completed without search: each Func left, outputs back, computed per
    tile of its consumers (at the deepest legal tile loop such that every loop out to
    it moves what the consumer reads of it: no iteration computes again what the one
    before did along a loop it doesn't depend on), with `_fused_nest`; at root where
    no loop is such."""
    alg = state.alg
    while not state.complete:
        name = state.next_func()
        decided = state.decided
        func_nests = nests(alg, decided)
        best, depth = None, -1
        for consumer, stage, loop in legal_sites(alg, decided, func_nests, name):
            loops = func_nests[consumer].loops[stage]
            stage_model = alg.funcs[consumer].stages[stage]
            d = _depth(decided, consumer) + loop
            if d > depth and loops[loop].tile and all(alg.read_moves(stage_model, name, lp.var)
                                                      for lp in loops[:loop + 1]):
                best, depth = Placement(AT, consumer, stage, loop), d
        if best is None:
            state = state.with_decision(name, Decision(Placement(ROOT)))
            continue
        region = nests(alg, state.with_decision(name, Decision(best)).decided)[name].region
        state = state.with_decision(name, Decision(best, _fused_nest(
            alg.funcs[name], extent(region), lanes)))
    return state


def _depth(decided: dict[str, Decision], name: str) -> int:
    """How many loops enclose Func `name`'s loops."""
    p = decided[name].placement
    return 0 if p.kind != AT else _depth(decided, p.consumer) + p.loop + 1


def _fused_nest(f, extents: tuple[int, ...], lanes: int) -> Nest:
    """A Func computed at a consumer's loop: untiled, vectorized along the dimension an
    rfactor made (else the last one) where that is a vector long, its reduction loops
    outside its pure ones (a register tile)."""
    if not f.dims:
        return Nest(())
    dim = -1 if f.lane_dim is None else f.lane_dim
    return Nest((WHOLE,) * len(f.dims), lanes if extents[dim] >= lanes else 0, dim,
                unroll=f.has_updates, reduction_outer=f.has_updates)


def root_everything(alg: Algorithm) -> State:
    """The fallback: every Func at root (or inlined where halo inlines by default) with
    halo's default loop nests."""
    return _rest_at_root(State(alg))


def children_of(state: State, machine: Machine, rng: random.Random) -> list[State]:
    """Every way to decide the state's next Func."""
    name = state.next_func()
    alg = state.alg
    f = alg.funcs[name]
    decided = state.decided
    func_nests = nests(alg, decided)
    out: list[State] = []
    extents = dict(zip(f.dims, extent(func_nests[name].region), strict=True))
    if f.is_output:
        for nest in _nest_options(f, extents, machine, rng, root=True):
            out.append(state.with_decision(name, Decision(Placement(ROOT), nest)))
        if f.has_updates and name not in state.locals_ and not state.prefix:
            # The reduction moves to a local stage computed per tile of the output (not
            # after an rfactor, whose intermediate already holds it); the two are decided
            # together (a local priced at root, untiled, would lose
            # every comparison before its own step came).
            # Its strided inputs get copies it reads instead (`with_panels`), decided
            # in their turn: inlined (no copy) or packed per tile of the output, whose
            # nests then also run the vectorized dimension's tiles outermost (a task
            # a column panel, which its rows share).
            local = replace(state, alg=alg.with_local(name).with_panels(f"{name}_local"),
                            locals_=(*state.locals_, name))
            for nest in _nest_options(local.alg.funcs[name], extents, machine, rng, root=True,
                                      panel_order=True):
                placed = local.with_decision(name, Decision(Placement(ROOT), nest))
                out += [c for c in children_of(placed, machine, rng)
                        if c.decisions[-1][1].placement.kind == AT]
        return out
    if not f.has_updates:
        out.append(state.with_decision(name, Decision(Placement(INLINE))))
    full = dict(zip(f.dims, extent(alg.full_regions[name]), strict=True))
    sites = legal_sites(alg, decided, func_nests, name)
    # A Func with sites inside its consumers is rarely best at root: fewer root nests.
    root_nests = _nest_options(f, full, machine, rng, root=True)
    if sites and len(root_nests) > MAX_ROOT_NESTS:
        root_nests = [root_nests[k] for k in sorted(rng.sample(range(len(root_nests)),
                                                               MAX_ROOT_NESTS))]
    for nest in root_nests:
        out.append(state.with_decision(name, Decision(Placement(ROOT), nest)))
    for consumer, stage, loop in sites:
        stores = [None]
        # A sliding window along the pure consumer's loop that moves the window (not
        # along a reduction loop, or a loop the Func doesn't depend on: halo recomputes
        # the window there, more than the model counts). Stored further out, across
        # two loops that move it, the window slides along one of them only and starts
        # again along the other: it computes no less, in more memory.
        if not f.has_updates and stage == 0 and loop >= 1 and alg.read_moves(
                alg.funcs[consumer].stages[stage], name,
                func_nests[consumer].loops[stage][loop].var):
            stores.append(loop - 1)
        for store in stores:
            placement = Placement(AT, consumer, stage, loop, store)
            trial = state.with_decision(name, Decision(placement))
            region = nests(alg, trial.decided)[name].region
            at_extents = dict(zip(f.dims, extent(region), strict=True))
            for nest in _nest_options(f, at_extents, machine, rng, root=False):
                out.append(state.with_decision(name, Decision(placement, nest)))
    return out


def legal_sites(alg: Algorithm, decided: dict[str, Decision], func_nests: dict[str, FuncNest],
                name: str) -> list[tuple[str, int, int]]:
    """The loops `name` may be computed at: each encloses every use of it."""
    users = _resolved_consumers(alg, decided, name)
    sites = []
    for c, c_nest in func_nests.items():
        if c not in decided:
            continue
        for s, loops in enumerate(c_nest.loops):
            for k, lp in enumerate(loops):
                if lp.vector or lp.unrolled:
                    break
                if all(u == (c, s) or _inside(decided, u[0], c, s, k) for u in users):
                    sites.append((c, s, k))
    return sites


def _resolved_consumers(alg: Algorithm, decided: dict[str, Decision], name: str
                        ) -> set[tuple[str, int]]:
    """The (Func, stage) pairs that read `name`, inlined consumers replaced by theirs."""
    out = set()
    for c, s in alg.funcs[name].consumers:
        if decision_of(decided, c).placement.kind == INLINE and not alg.funcs[c].is_output:
            out |= _resolved_consumers(alg, decided, c)
        else:
            out.add((c, s))
    return out


def _inside(decided: dict[str, Decision], name: str, func: str, stage: int, loop: int) -> bool:
    p = decision_of(decided, name).placement
    while p.kind == AT:
        if (p.consumer, p.stage) == (func, stage):
            return p.loop >= loop
        p = decision_of(decided, p.consumer).placement
    return False


def _nest_options(f, extents: dict[str, int], machine: Machine, rng: random.Random,
                  root: bool, panel_order: bool = False) -> list[Nest]:
    """Loop nests for Func `f` over `extents`: tiles from `COARSE_TILES` (a root Func)
    or none (a Func computed at a consumer's tile), the stride-1 dimension vectorized
    at the natural width or twice it, reductions with and without a register tile;
    with `panel_order`, each tiling of the vectorized dimension among others also with
    its tiles outermost."""
    lanes = machine.lanes
    dims = f.dims
    if not dims:
        return [Nest(())]
    per_dim = []
    for k, d in enumerate(dims):
        e = extents[d]
        if not root:
            per_dim.append([WHOLE])
        elif k == len(dims) - 1:
            per_dim.append([WHOLE] + [m * lanes for m in COARSE_VECTORS if m * lanes < e])
        else:
            per_dim.append([OUTER] + [t for t in COARSE_TILES if t < e] +
                           ([WHOLE] if e <= 16 else []))
    vectors = [v for v in (lanes, 2 * lanes) if extents[dims[-1]] >= v] or [0]
    lane_dims = [-1]
    if f.lane_dim is not None and extents[dims[f.lane_dim]] >= lanes:
        lane_dims.append(f.lane_dim)
        vectors = sorted({*vectors, lanes} - {0})
    tiles = list(product(*per_dim))
    if len(tiles) > MAX_CHILDREN:
        tiles = sorted(rng.sample(tiles, MAX_CHILDREN))
    reduction = [False, True] if f.has_updates else [False]
    # Waking the threads costs tens of microseconds: a small root Func may do better on
    # one core (its outputs' points, at about a cycle each, are under that).
    parallel = [True, False] if root and prod(extents.values()) <= SMALL_POINTS else [root]
    out = []
    for t, v, r, vd, par in product(tiles, vectors, reduction, lane_dims, parallel):
        outers = sum(1 for x in t if x != WHOLE)
        orders = [False, True] if panel_order and outers >= 2 and t[vd] not in (OUTER, WHOLE) \
            else [False]
        for first in orders:
            out.append(Nest(t, v, vd, parallel=par, unroll=r, reduction_outer=r,
                            vector_tiles_first=first))
            if root and outers >= 2:
                out.append(Nest(t, v, vd, parallel=True, fuse_outer=True, unroll=r,
                                reduction_outer=r, vector_tiles_first=first))
    return out


def _neighbours(nest: Nest, lanes: int) -> list[Nest]:
    out = []
    for k, t in enumerate(nest.tiles):
        if t in (OUTER, WHOLE):
            continue
        steps = (t * 2, t // 2)
        if k == len(nest.tiles) - 1 and nest.vector:  # and a vector more or less
            steps += (t + nest.vector, t - nest.vector)
        for new in dict.fromkeys(steps):
            if new > 1 and (k < len(nest.tiles) - 1 or nest.vector == 0
                            or new % nest.vector == 0):
                out.append(replace(nest, tiles=nest.tiles[:k] + (new,) + nest.tiles[k + 1:]))
    if nest.vector:
        for v in (nest.vector * 2, nest.vector // 2):
            last = nest.tiles[-1]
            if lanes <= v <= 2 * lanes and (last in (OUTER, WHOLE) or last % v == 0):
                out.append(replace(nest, vector=v))
    if nest.parallel:
        out.append(replace(nest, fuse_outer=not nest.fuse_outer))
    out.append(replace(nest, unroll=not nest.unroll))
    return out
