"""Sliding window: reuse the values a Func computed at earlier iterations of a loop.

A Func `f` stored outside a serial loop `L` and computed inside it (`store_at` outside
`compute_at`) keeps, from one iteration of `L` to the next, everything it computed. When
the region of `f` required at iteration `i` overlaps iteration `i - 1`'s along one
dimension and moves monotonically, only the new part needs computing:

    for yi in range(32):                      for yi in range(32):
      f.s0.y.min = y - 1                        f.s0.y.min = y - 1
      f.s0.y.max = y + 1                        f.s0.y.max = y + 1
      produce f:                     ──►        produce f:
        for f.s0.y in range(f.s0.y.min, ...)      f.s0.y.slide_min = select(yi <= 0,
                                                      f.s0.y.min, max(y + 1, f.s0.y.min))
                                                  for f.s0.y in range(f.s0.y.slide_min, ...)

(the region growing: the new part starts after the previous iteration's maximum, here
(y - 1) + 1; a shrinking region ends before the previous minimum). The first iteration of
`L` (`L <= L.min`) in each instance of the storage computes the whole region. By
induction every row of the region at iteration i was computed at some iteration <= i and
is still stored: the region's ends never move back, and the new part is clamped into
the region, so it never leaves the allocation even when an iteration needs nothing.
When several loops qualify, the innermost one along which the regions of consecutive
iterations overlap is used (else the innermost): Halide's classic blur computes blur_x at
the outer x of its vectorized consumer, whose iterations need disjoint columns, so it
slides along the rows around it (yi), each iteration computing one new row of 8 columns.
Loops between that loop and the compute level are fine: their bounds don't depend on
it, and neither does the sliding dimension, so each iteration runs the same inner
iterations, which compute the same new rows at their own points of the other
dimensions. The loop's first iteration continues
from the previous iteration of each loop around it where the region keeps moving the same
way across that boundary (`g.compute_at(h, x)` with f computed in g's x loop: g's loop
restarts one step further at each h.x), so only the first iteration of all of them
computes the whole region (`_carried`). The lets `f.s0.v.min/max` keep
the required region (producers of `f` and `storage_folding` read them); only `f`'s produce
sees the shrunk bound.

A Func may have several compute sites (a specialization or a whole-tile branch of its
consumer copies the loop nest). They slide along one dimension where they can (the one
the most sites can slide along), each along its own loop: `storage_folding` folds only a
Func all of whose sites slid along the same dimension, since folding a dimension that a
site doesn't slide along overwrites rows that site still needs (the cached consumer's
whole-tile branch sliding along its rows and the other branch along its columns, with
the columns folded: `python -m halo.fuzz --seed 2614`).

Input: the Stmt after bounds inference (compute-level lets `f.s0.{v}.min/max` right above
each `ProducerConsumer(f)`, `Realize(f)` with bounds). Output: the same Stmt where each
Func that can slide has its produce wrapped in the shrunk let, and
`ctx.sliding_windows[f]` records the dimension and loop of each site that slid.

Sliding is refused (the Func is recomputed, as before, which is always correct) when:
a loop between the storage and compute levels is parallel or vectorized; the Func has
an update that doesn't run over the sliding dimension by its own pure Var alone, or a
`round_up` split in its schedule or any specialization's (which writes past the region it
is given: storage folded to the region would lose values);
no loop has exactly one dimension of the region depending on it, monotonically in both
ends; the loops inside `L` (down to the compute level) have bounds that depend on `L`;
the sliding dimension depends on those inner loops; or a condition between `L` and the
compute level could skip the computation at some iteration.
"""
from __future__ import annotations

from dataclasses import dataclass

from halo.analysis.loops import Split, TailStrategy
from halo.analysis.monotonic import Monotonic, monotonic
from halo.analysis.simplify import can_prove, simplify
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.substitute import substitute, uses_var
from halo.lower.context import LowerContext

_SERIAL = (n.ForKind.SERIAL, n.ForKind.UNROLLED)


@dataclass(frozen=True)
class SlidingWindow:
    """`func` slides along its dimension `dim` over loop `loop`. `min`, `max`: the region
    required of that dimension at one iteration (inner lets substituted)."""
    func: str
    dim: int
    loop: str
    min: n.Expr
    max: n.Expr


def sliding_window(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    for name in ctx.realized():
        if _may_slide(name, ctx):
            slider = _Slider(name, ctx)
            slider.find_realize(stmt)  # finds each compute site's choices, changing nothing
            slider.dim = _shared_dim(slider.sites)
            stmt = slider.find_realize(stmt)
    return stmt


def _may_slide(name: str, ctx: LowerContext) -> bool:
    f = ctx.env.funcs[name]
    return not any(isinstance(t, Split) and t.tail is TailStrategy.ROUND_UP
                   for sched in f.schedule.stages[0].variants() for t in sched.transforms)


@dataclass(frozen=True)
class _Choice:
    """`loops[depth]` moves the region's dimension `dim` one way (`direction`);
    `overlaps`: consecutive iterations provably share a point of it (sliding reuses
    something)."""
    depth: int
    dim: int
    direction: Monotonic
    overlaps: bool


class _Slider:
    """Walks to `Realize(name)`, then down to `ProducerConsumer(name)` keeping the loops
    and lets in between. While `dim` is unset it only records each compute site's
    choices (`sites`); then it rewrites the produce at each site, along a loop that moves
    dimension `dim` where the site has one."""

    def __init__(self, name: str, ctx: LowerContext):
        self.name, self.ctx = name, ctx
        self.sites: list[list[_Choice]] = []
        self.dim: int | None = None

    def find_realize(self, s: n.Stmt) -> n.Stmt:
        if isinstance(s, n.Realize) and s.name == self.name:
            body = self.find_compute(s.body, [], {}, 0)
            return s if body is s.body else \
                n.Realize(s.name, s.type, s.bounds, body, s.scope)
        return _map_stmts(s, self.find_realize)

    def find_compute(self, s: n.Stmt, loops: list[n.For], lets: dict[str, n.Expr],
                     guarded: int) -> n.Stmt:
        """`guarded`: how many of the outer `loops` enclose a condition around `s` (an
        iteration of those may skip the compute, so they can't carry values over)."""
        if isinstance(s, n.ProducerConsumer) and s.name == self.name:
            return self.slide(s, loops, lets, guarded)
        if isinstance(s, n.For):
            body = self.find_compute(s.body, [*loops, s], lets, guarded)
            return s if body is s.body else n.For(s.name, s.min, s.extent, s.kind, body)
        if isinstance(s, n.LetStmt):
            body = self.find_compute(s.body, loops, {**lets, s.name: s.value}, guarded)
            return s if body is s.body else n.LetStmt(s.name, s.value, body)
        if isinstance(s, n.IfThenElse):
            guarded = len(loops)
        return _map_stmts(s, lambda c: self.find_compute(c, loops, lets, guarded))

    def slide(self, pc: n.ProducerConsumer, loops: list[n.For],
              lets: dict[str, n.Expr], guarded: int) -> n.Stmt:
        if not loops or any(loop.kind not in _SERIAL for loop in loops):
            return pc
        f = self.ctx.env.funcs[self.name]
        prefix = self.ctx.stage_prefix(self.name, 0)
        region = [(_expand(n.Var(f"{prefix}{v.name}.min"), lets),
                   _expand(n.Var(f"{prefix}{v.name}.max"), lets)) for v in f.args]
        if self.dim is None:
            self.sites.append(_choices(f, region, loops, lets, guarded))
            return pc
        choice = _choose(_choices(f, region, loops, lets, guarded), self.dim)
        if choice is None:
            return pc
        dim, loop = choice.dim, loops[choice.depth]
        self.ctx.sliding_windows.setdefault(self.name, []).append(SlidingWindow(
            self.name, dim, loop.name, *region[dim]))
        carried = _carried(region, dim, choice.direction, loops[guarded:choice.depth + 1],
                           loops[choice.depth + 1:], lets)
        stages = [self.ctx.stage_prefix(self.name, k) + f.args[dim].name
                  for k in range(len(f.definitions))]
        return _shrink(pc, stages, region[dim], loop, choice.direction, carried)


def _choices(f, region: list[tuple[n.Expr, n.Expr]], loops: list[n.For],
             lets: dict[str, n.Expr], guarded: int) -> list[_Choice]:
    """The loops (innermost first) that the region at one compute site can slide along."""
    out = []
    for depth in reversed(range(guarded, len(loops))):
        window = _window(region, loops, depth, lets)
        if window is not None and _updates_slide(f, window[0]):
            dim, direction = window
            out.append(_Choice(depth, dim, direction,
                               _overlaps(region[dim], loops[depth], direction)))
    return out


def _shared_dim(sites: list[list[_Choice]]) -> int:
    """The dimension the Func slides along where it can: the one the most compute sites
    can slide along, then the one whose regions overlap at the most sites, then the
    first found (so the sites agree, and `storage_folding` can fold it)."""
    dims = list(dict.fromkeys(c.dim for choices in sites for c in choices))
    return max(dims, default=0, key=lambda d: (
        sum(any(c.dim == d for c in choices) for choices in sites),
        sum(any(c.dim == d and c.overlaps for c in choices) for choices in sites)))


def _choose(choices: list[_Choice], dim: int) -> _Choice | None:
    """The loop one compute site slides along: one that moves `dim` if any, else any;
    among those the innermost whose regions overlap (along the outer x of a vectorized
    consumer, whose iterations need disjoint columns, sliding reuses nothing; along the
    rows around it, it does), else the innermost."""
    preferred = [c for c in choices if c.dim == dim] or choices
    return next((c for c in preferred if c.overlaps), preferred[0] if preferred else None)


def _window(region: list[tuple[n.Expr, n.Expr]], loops: list[n.For], depth: int,
            lets: dict[str, n.Expr]) -> tuple[int, Monotonic] | None:
    """The dimension of `region` that slides over `loops[depth]` and its direction, or
    None."""
    var = loops[depth].name
    inner = loops[depth + 1:]
    if _ranges_use(inner, var, lets):
        return None
    moving = [i for i, (lo, hi) in enumerate(region) if uses_var(lo, var) or uses_var(hi, var)]
    if len(moving) != 1:
        return None
    dim = moving[0]
    lo, hi = region[dim]
    if any(uses_var(e, loop.name) for loop in inner for e in (lo, hi)):
        return None
    directions = {monotonic(lo, var), monotonic(hi, var)} - {Monotonic.CONSTANT}
    if directions not in ({Monotonic.INCREASING}, {Monotonic.DECREASING}):
        return None
    return dim, directions.pop()


def _ranges_use(loops: list[n.For], var: str, lets: dict[str, n.Expr]) -> bool:
    """Whether the range of any of `loops` depends on `var` (through the lets too): then
    their iterations cover other points at each iteration of `var`'s loop."""
    return any(uses_var(_expand(e, lets), var) for loop in loops for e in (loop.min, loop.extent))


def _overlaps(extremes: tuple[n.Expr, n.Expr], loop: n.For, direction: Monotonic) -> bool:
    """Whether the region at each iteration of `loop` provably shares a point with the
    previous iteration's (so sliding along `loop` reuses something)."""
    lo, hi = extremes
    previous = {loop.name: n.Sub(n.Var(loop.name), const(1))}
    if direction is Monotonic.INCREASING:
        return can_prove(n.LE(lo, substitute(hi, previous)))
    return can_prove(n.LE(substitute(lo, previous), hi))


def _carried(region: list[tuple[n.Expr, n.Expr]], dim: int, direction: Monotonic,
             loops: list[n.For], deeper: list[n.For], lets: dict[str, n.Expr]
             ) -> list[tuple[n.Expr, tuple[n.Expr, n.Expr]]]:
    """The loops around the sliding loop `loops[-1]` (innermost last) that the window also
    carries over (`f.store_root().compute_at(g, x); g.compute_at(h, x)`: g's x loop
    restarts at each h.x, a step behind where it ended), innermost first: for each, the
    condition of its first iteration and the region at the last iteration of the loops
    inside it, in its previous iteration, where the first iteration of those continues
    from. A loop qualifies (and so the ones around it may) when the loops inside it run
    at least once at each of its iterations, only `dim` moves with it, the ranges of
    the `deeper` loops (inside the sliding loop, down to the compute level) don't move
    with it either (else its previous iteration computed the rows at other columns), and
    both ends of `dim` move `direction`'s way from that last iteration to the next first
    one (so storage folding still holds the rows it needs)."""
    inner = [loops[-1]]
    out: list[tuple[n.Expr, tuple[n.Expr, n.Expr]]] = []
    for outer in reversed(loops[:-1]):
        o = outer.name
        if any(uses_var(e, o) for i, ends in enumerate(region) if i != dim for e in ends) \
                or _ranges_use(deeper, o, lets):
            break
        ranges = [(_expand(loop.min, lets), _expand(loop.extent, lets)) for loop in inner]
        if not all(can_prove(n.LE(const(1), extent)) for _, extent in ranges):
            break
        last: dict[str, n.Expr] = {o: n.Sub(n.Var(o), const(1))}
        first: dict[str, n.Expr] = {}
        for loop, (lo, extent) in zip(inner, ranges, strict=True):  # outermost first
            last[loop.name] = simplify(substitute(n.Sub(n.Add(lo, extent), const(1)), last))
            first[loop.name] = simplify(substitute(lo, first))
        then = [simplify(substitute(e, last)) for e in region[dim]]
        now = [simplify(substitute(e, first)) for e in region[dim]]
        pairs = zip(then, now, strict=True) if direction is Monotonic.INCREASING else \
            zip(now, then, strict=True)
        if not all(can_prove(n.LE(a, b)) for a, b in pairs):
            break
        out.append((n.LE(n.Var(o), outer.min), (then[0], then[1])))
        inner.insert(0, outer)
    return out


def _updates_slide(f, dim: int) -> bool:
    """Whether every update of `f` runs over dimension `dim` by its own pure Var, used in
    no other dimension: then each update touches only the points of `dim` it computes,
    and its region there is the pure stage's, so every stage can compute only the new
    part (sliding_reduction.cpp)."""
    v = f.args[dim].name
    return all(v in d.pure_var_names() and not any(
        uses_var(a, v) for i, a in enumerate(d.args) if i != dim) for d in f.definitions[1:])


def _shrink(pc: n.ProducerConsumer, stages: list[str], extremes: tuple[n.Expr, n.Expr],
            loop: n.For, direction: Monotonic,
            carried: list[tuple[n.Expr, tuple[n.Expr, n.Expr]]]) -> n.Stmt:
    """`pc` whose produce computes, after the first iteration of `loop`, only the part of
    the sliding dimension (each stage's let name prefix `f.s{k}.v` in `stages`, the pure
    stage's first) that the previous iteration didn't; the first iteration of `loop`
    continues from the previous iteration of each loop around it that the window is
    `carried` over (see `_carried`)."""
    bound = stages[0]
    var = n.Var(loop.name)
    first: n.Expr = n.LE(var, loop.min)
    previous = {loop.name: n.Sub(var, const(1))}
    prev_min, prev_max = (simplify(substitute(e, previous)) for e in extremes)
    for outer_first, (then_min, then_max) in carried:
        prev_min, prev_max = n.Select(first, then_min, prev_min), \
            n.Select(first, then_max, prev_max)
        first = n.And(first, outer_first)
    if direction is Monotonic.INCREASING:
        old, new = f"{bound}.min", f"{bound}.slide_min"
        value = n.Select(first, n.Var(old), n.Max(n.Add(prev_max, const(1)), n.Var(old)))
    else:
        old, new = f"{bound}.max", f"{bound}.slide_max"
        value = n.Select(first, n.Var(old), n.Min(n.Sub(prev_min, const(1)), n.Var(old)))
    end = old.rsplit(".", 1)[1]
    produce = n.LetStmt(new, value, substitute(pc.produce, {f"{stage}.{end}": n.Var(new)
                                                            for stage in stages}))
    return n.ProducerConsumer(pc.name, produce, pc.consume)


def _expand(e: n.Expr, lets: dict[str, n.Expr]) -> n.Expr:
    """`e` with the lets between the storage and compute levels substituted, so it is
    written in loop variables and names defined outside the storage."""
    for _ in range(len(lets) + 1):
        expanded = substitute(e, lets)
        if expanded == e:
            return simplify(e)
        e = expanded
    return simplify(e)


def _map_stmts(s: n.Stmt, fn) -> n.Stmt:
    """`s` with `fn` applied to each of its direct Stmt children."""
    match s:
        case n.Block(stmts=stmts):
            new = tuple(fn(c) for c in stmts)
            return s if all(a is b for a, b in zip(new, stmts, strict=True)) else n.Block(new)
        case n.For(name=name, min=lo, extent=extent, kind=kind, body=body):
            new = fn(body)
            return s if new is body else n.For(name, lo, extent, kind, new)
        case n.LetStmt(name=name, value=value, body=body):
            new = fn(body)
            return s if new is body else n.LetStmt(name, value, new)
        case n.Realize(name=name, type=t, bounds=bounds, body=body, scope=scope):
            new = fn(body)
            return s if new is body else n.Realize(name, t, bounds, new, scope)
        case n.ProducerConsumer(name=name, produce=produce, consume=consume):
            p, c = fn(produce), fn(consume)
            return s if (p is produce and c is consume) else n.ProducerConsumer(name, p, c)
        case n.IfThenElse(condition=cond, then_case=then, else_case=other):
            t = fn(then)
            e = fn(other) if other is not None else None
            return s if (t is then and e is other) else n.IfThenElse(cond, t, e)
    return s
