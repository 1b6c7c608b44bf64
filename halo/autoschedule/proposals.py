"""Where the tuner's candidates come from, beside the beam search's ranking: greedy probes
with dropout, and mutations of the best measured schedules.

- `greedy_probe`: from the start, decide one Func at a time, as the beam search does, but
  keep one state: of all children, priced in one batch, each is dropped with probability
  `dropout` and the cheapest left is taken (Adams et al. 2019's random-dropout samples:
  near the model's choice, not on it, so the model's blind spots get measured).
- `random_walk`: from the start, each Func's decision drawn uniformly from all children,
  unpriced (as `python -m halo.autoschedule.train collect` draws its random programs'
  schedules): far from the model's choice, where a model trained on few measurements
  of this program is least likely to look.
- `mutations`: every state one step from a measured one: a tile factor doubled or halved,
  the vector width doubled or halved or moved to the other vectorizable dimension,
  unrolling, parallel fusion or the register tile toggled, a Func computed one loop level
  further out or in (root or inline at the ends). Only states whose every placement is
  legal (`search.legal_sites`) are kept.
"""
from __future__ import annotations

import random
from dataclasses import replace

from halo.autoschedule.loop_nest import nests
from halo.autoschedule.search import Search, State, children_of, legal_sites
from halo.autoschedule.space import AT, INLINE, OUTER, ROOT, WHOLE, Decision, Nest, Placement


def greedy_probe(search: Search, start: State, rng: random.Random, dropout: float) -> State:
    """One complete state, each Func's decision the cheapest child surviving dropout."""
    state = start
    while not state.complete:
        children = children_of(state, search.machine, rng)
        prices = search.price(children)
        ranked = sorted(range(len(children)), key=lambda i: (prices[i], i))
        kept = [i for i in ranked if rng.random() >= dropout]
        state = children[kept[0] if kept else ranked[0]]
    return state


def random_walk(search: Search, start: State, rng: random.Random) -> State:
    """One complete state, each Func's decision any of its children at random."""
    state = start
    while not state.complete:
        state = rng.choice(children_of(state, search.machine, rng))
    return state


def mutations(state: State, lanes: int) -> list[State]:
    """The legal states one change away from `state`."""
    out = []
    for name, d in state.decisions:
        for new in _placement_moves(state, name, d) + _nest_moves(d, lanes):
            decisions = tuple((n, new if n == name else old) for n, old in state.decisions)
            candidate = replace(state, decisions=decisions)
            if _legal(candidate):
                out.append(candidate)
    return out


def _nest_moves(d: Decision, lanes: int) -> list[Decision]:
    nest = d.nest
    if nest is None:
        return []
    moved: list[Nest] = []
    for k, t in enumerate(nest.tiles):
        if t in (OUTER, WHOLE):
            continue
        for new in (t * 2, t // 2):
            if new > 1:
                moved.append(replace(nest, tiles=nest.tiles[:k] + (new,) + nest.tiles[k + 1:]))
    if nest.vector:
        moved += [replace(nest, vector=v) for v in (nest.vector * 2, nest.vector // 2)
                  if lanes // 2 <= v <= 4 * lanes]
        other = [k for k in range(len(nest.tiles)) if k != nest.vector_dim % len(nest.tiles)]
        moved += [replace(nest, vector_dim=other[-1])] if other else []
    elif nest.tiles:
        moved.append(replace(nest, vector=lanes))
    moved.append(replace(nest, unroll=not nest.unroll))
    moved.append(replace(nest, reduction_outer=not nest.reduction_outer))
    if nest.parallel:
        moved.append(replace(nest, fuse_outer=not nest.fuse_outer))
    return [replace(d, nest=m) for m in moved]


def _placement_moves(state: State, name: str, d: Decision) -> list[Decision]:
    """`name` computed one loop level further out, or in."""
    f = state.alg.funcs[name]
    if f.is_output:
        return []
    p = d.placement
    whole = Nest((WHOLE,) * len(f.dims))
    if p.kind == INLINE:
        return [Decision(Placement(ROOT), whole)]
    decided = state.decided
    others = {n: x for n, x in decided.items() if n != name}
    sites = legal_sites(state.alg, others, nests(state.alg, decided), name)
    if p.kind == ROOT:
        inner = [Decision(Placement(AT, c, s, k), whole) for c, s, k in sites[:1]]
        return inner + ([] if f.has_updates else [Decision(Placement(INLINE))])
    moves = []
    for step in (-1, 1):
        site = (p.consumer, p.stage, p.loop + step)
        if site in sites:
            moves.append(Decision(replace(p, loop=p.loop + step, store_loop=None), d.nest))
    if p.loop == 0:
        moves.append(Decision(Placement(ROOT), d.nest or whole))
    return moves


def _legal(state: State) -> bool:
    """Whether every Func computed at a loop may be computed there in `state`."""
    decided = state.decided
    try:
        func_nests = nests(state.alg, decided)
    except (KeyError, IndexError, ValueError):
        return False
    for name, d in state.decisions:
        p = d.placement
        if p.kind != AT:
            continue
        others = {n: x for n, x in decided.items() if n != name}
        sites = legal_sites(state.alg, others, func_nests, name)
        if (p.consumer, p.stage, p.loop) not in sites:
            return False
        if p.store_loop is not None and not 0 <= p.store_loop < p.loop:
            return False
    return True
