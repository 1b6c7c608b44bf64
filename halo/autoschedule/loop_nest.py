"""A candidate schedule's loop nest, without lowering: for every Func that is not
inlined, the region it computes per realization, how many times it is realized, where
it is stored, and its stages' loops (`FuncNest`), derived from the decisions of the
search state, consumers before producers.

The regions are what halo's bounds inference computes: a Func at root realizes what all
its consumers read over the outputs' region; a Func computed at a loop of a consumer
realizes what the code inside one iteration of that loop reads of it (the consumer's
points in that iteration, and the Funcs computed inside it, inlined ones through their
consumers). Tiles shift inwards on pure stages (every tile whole, the last one moved
back), so a tile's box is the tile's size.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from halo.autoschedule.algorithm import Algorithm, Box, extent, union
from halo.autoschedule.space import AT, INLINE, ROOT, Decision, Loop, Placement, stage_loops

ROOT_DECISION = Decision(Placement(ROOT))


@dataclass
class FuncNest:
    region: Box               # computed per realization
    realizations: int
    store_region: Box         # allocated per store realization
    store_realizations: int
    loops: list[list[Loop]]   # per stage, outermost first
    in_parallel: int          # tasks of the enclosing parallel loop (1: none)

    @property
    def sliding(self) -> bool:
        """Stored outside the loop it is computed in, and moving there (a window that
        stays put, as a wrap's whole range does, is computed again at each step)."""
        return self.store_realizations != self.realizations and \
            self.store_region != self.region

    @property
    def allocated(self) -> tuple[int, ...]:
        """The extents allocated per store realization: `store_region`'s, except that a
        sliding window along one dimension keeps only its live rows there, the power
        of two at least its window (`lower/storage_folding.py`)."""
        stored, window = extent(self.store_region), extent(self.region)
        moving = [d for d, (s, w) in enumerate(zip(stored, window, strict=True)) if s > w]
        if len(moving) != 1:  # (not sliding, or along two dimensions: not folded)
            return stored
        (d,) = moving
        fold = 1 << (window[d] - 1).bit_length()
        return stored[:d] + (min(fold, stored[d]),) + stored[d + 1:]


def decision_of(decisions: dict[str, Decision], name: str) -> Decision:
    """The decision for `name`; a Func not decided yet is computed at root."""
    return decisions.get(name, ROOT_DECISION)


def nests(alg: Algorithm, decisions: dict[str, Decision]) -> dict[str, FuncNest]:
    """The loop nest of every Func not inlined, by name."""
    out: dict[str, FuncNest] = {}
    for f in reversed(list(alg.funcs.values())):
        d = decision_of(decisions, f.name)
        p = d.placement
        if p.kind == INLINE and not f.is_output:
            continue
        if p.kind == AT:
            c = out[p.consumer]
            loops = c.loops[p.stage]
            region = _demand(alg, decisions, p.consumer, p.stage, c, p.loop)[f.name]
            n = c.realizations * prod(loop.trips for loop in loops[:p.loop + 1])
            par = c.in_parallel * prod(loop.trips for loop in loops[:p.loop + 1]
                                       if loop.parallel)
            store_region, store_n = region, n
            if p.store_loop is not None:
                store_region = _demand(alg, decisions, p.consumer, p.stage, c,
                                       p.store_loop)[f.name]
                store_n = c.realizations * prod(loop.trips for loop in loops[:p.store_loop + 1])
        else:
            region = alg.full_regions[f.name]
            n = store_n = par = 1
            store_region = region
        extents = dict(zip(f.dims, extent(region), strict=True))
        if n > store_n:
            # A sliding window: each step after the first computes only what is new along
            # the dimension it slides in (still a vector, where that is the vector's).
            steps = n // store_n
            vector_dim = f.dims[d.nest.vector_dim] if d.nest is not None and f.dims else None
            for dim, stored, window in zip(f.dims, extent(store_region), extent(region),
                                           strict=True):
                if stored > window:
                    vector = d.nest.vector if dim == vector_dim else 1
                    extents[dim] = max(min(window, vector),
                                       -(-(stored - window) // max(1, steps - 1)))
        # (a sliding window computes a different extent at its first iteration)
        constant = p.kind == AT and p.store_loop is None and \
            _constant_tile(alg, f.name, out[p.consumer], p)
        loops = [stage_loops(f.dims, s.pure, s.rvars, extents, d.nest, s.index > 0, constant)
                 for s in f.stages]
        out[f.name] = FuncNest(region, n, store_region, store_n, loops, par)
    return out


def _constant_tile(alg: Algorithm, func: str, consumer: FuncNest, p: Placement) -> bool:
    """Whether one iteration of the site's loop covers a constant box of `func`'s pure
    consumer (a loop at or outside the site iterates each of its dimensions) that reads a
    box of one size of it wherever the tile is (`Algorithm.reads_a_fixed_box`), so what
    is computed there has constant extents."""
    if p.stage != 0 or not alg.reads_a_fixed_box(p.consumer, func):
        return False
    bounded = {var for var, _ in _tiles(consumer.loops[p.stage][:p.loop + 1])}
    return set(alg.funcs[p.consumer].stages[p.stage].pure) <= bounded


def _tiles(loops) -> list[tuple[str, int]]:
    """(loop variable, values one iteration covers) of each of `loops`, and of the
    inner loop fused into one."""
    return [pair for lp in loops
            for pair in [(lp.var, lp.inside), *([lp.fused_with] if lp.fused_with else [])]]


def site_box(alg: Algorithm, func: str, stage: int, nest: FuncNest, loop: int
             ) -> dict[str, tuple[int, int]]:
    """The values of stage `stage`'s loop variables inside one iteration of its loop
    number `loop` (the first tile)."""
    s = alg.funcs[func].stages[stage]
    box = alg.stage_box(s, nest.region)
    for var, inside in _tiles(nest.loops[stage][:loop + 1]):
        lo, hi = box[var]
        box[var] = (lo, min(hi, lo + inside - 1))
    return box


def _demand(alg: Algorithm, decisions: dict[str, Decision], func: str, stage: int,
            nest: FuncNest, loop: int) -> dict[str, Box]:
    """What the code inside one iteration of loop `loop` of `func`'s stage reads of each
    Func computed inside it (or inlined there). The stage's variables that the loops
    down to `loop` tile are `tiled` (`Algorithm.region_read`), and so are an inlined
    Func's dimensions that its consumers index with them alone: inlined, its
    coordinates are the consumer's expressions."""
    s = alg.funcs[func].stages[stage]
    demand: dict[str, Box] = {}
    tiled = {var for var, _ in _tiles(nest.loops[stage][:loop + 1])}
    tied: dict[str, set[str]] = {}
    _read(alg, s, site_box(alg, func, stage, nest, loop), demand, tiled, tied)
    names = list(alg.funcs)
    for name in reversed(names[:names.index(func)]):
        if name in demand and _inside(decisions, name, func, stage, loop):
            inlined = decision_of(decisions, name).placement.kind == INLINE
            for t in alg.funcs[name].stages:
                _read(alg, t, alg.stage_box(t, demand[name]), demand,
                      tied.get(name, set()) if inlined else set(), tied)
    return demand


def _read(alg: Algorithm, s, box: dict[str, tuple[int, int]], demand: dict[str, Box],
          tiled: set[str], tied: dict[str, set[str]]) -> None:
    """Add what stage `s` reads over `box` to `demand`, and narrow `tied` to the
    dimensions of each callee that every access indexes affinely in `tiled` alone."""
    for a in s.accesses:
        if a.is_input or a.callee == s.func:
            continue
        demand[a.callee] = union(demand.get(a.callee), alg.region_read(s, a, box, tiled))
        dims = alg.funcs[a.callee].dims
        mine = {dims[k] for k, form in enumerate(a.affine) if form is not None and
                all(v in tiled for c, v in zip(form[0], s.loop_vars, strict=True) if c)}
        tied[a.callee] = tied[a.callee] & mine if a.callee in tied else mine


def _inside(decisions: dict[str, Decision], name: str, func: str, stage: int, loop: int
            ) -> bool:
    """Whether Func `name` is computed inside loop `loop` of `func`'s stage `stage`
    (inlined Funcs are, wherever their consumers are)."""
    p = decision_of(decisions, name).placement
    while p.kind == AT:
        if (p.consumer, p.stage) == (func, stage):
            return p.loop >= loop
        p = decision_of(decisions, p.consumer).placement
    return p.kind == INLINE


def points(alg: Algorithm, name: str, nest: FuncNest) -> list[int]:
    """The points each stage of `name` computes over all its realizations (what
    `Target(count_stores=True)` counts: shifted-in tiles recompute their overlap, guarded
    update tiles don't, a sliding window computes each point once per store
    realization)."""
    f = alg.funcs[name]
    out = []
    for s, loops in zip(f.stages, nest.loops, strict=True):
        if s.index == 0 and nest.sliding:
            out.append(nest.store_realizations * prod(_slid(f.dims, nest, loops)))
        elif s.index == 0:
            out.append(nest.realizations * prod(loop.trips for loop in loops))
        else:
            ext = dict(zip(f.dims, extent(nest.region), strict=True))
            out.append(nest.realizations * prod(ext[d] for d in s.pure)
                       * prod(r[2] for r in s.rvars))
    return out


def _slid(dims: tuple[str, ...], nest: FuncNest, loops: list) -> list[int]:
    """The extents a sliding window computes per store realization: the stored region's
    along the dimension it slides in, and elsewhere what the loops cover (a vector's
    last tile shifted in stores its overlap again)."""
    out = []
    for d, stored, window in zip(dims, extent(nest.store_region), extent(nest.region),
                                 strict=True):
        mine = [lp for lp in loops if lp.var == d]
        if stored > window or not mine or any(lp.fused_with for lp in loops):
            out.append(stored)
        else:
            out.append(prod(lp.trips for lp in mine))
    return out
