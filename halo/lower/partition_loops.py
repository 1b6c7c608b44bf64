"""Loop partitioning: guard-free steady-state copies of loops, with the guards hoisted out.

Input: flattened IR (allocation sizes fixed, so duplicating a loop can't change them),
before unrolling and vectorization. Tail guards (`if lo <= x`, `if x < end`) sit inside
the innermost loops, where they would become masked vector accesses.
Output: the same meaning, with every guard that provably holds over a whole loop's range
under a condition on the enclosing scope hoisted into a branch around a guard-free copy:

    for x in vectorized(8):             if 0 <= min(xo * 8, e - 8):
      v = lo + x + min(xo * 8, e - 8)      for x in vectorized(8):
      if lo <= v:                 ->         f[lo + x + min(xo * 8, e - 8)] = ...
        f[v] = ...                        else:
                                            (the original loop)

and, where the guard's truth depends linearly on the variable of a serial loop of run-time
extent, that loop split into a guarded prologue, a guard-free steady state and a guarded epilogue:

    for j in range(n):                  for j in range(0, s): (guarded body)
      if j * 8 + 7 < e: (fast)    ->    for j in range(s, t): (fast)
      else: (guarded)                   for j in range(t, n): (guarded body)

A guard is an IfThenElse reached from the loop body through lets, blocks, allocations
and produce/consume nodes; its condition
is a conjunction of integer comparisons without loads. Only the fast copies are processed
further, so each guard adds one copy of a loop nest, not a product of them. Parallel,
vectorized and unrolled loops are only unswitched (their extents stay as scheduled); a
parallel loop whose last tile may be short keeps the choice in each iteration where not
every tile is whole, so only the short tile runs guarded. A vectorized loop's guards are
also looked for under the loops inside it (an update's reduction loops).
"""
from __future__ import annotations

from functools import reduce

from halo.analysis.conditions import (
    conjuncts,
    is_index_condition,
    linear_form,
    slack,
    steady_range,
)
from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.analysis.simplify.pattern import no_overflow
from halo.ir import nodes as n
from halo.ir.nodes import ForKind, block
from halo.ir.substitute import free_vars, substitute
from halo.ir.visitor import IRMutator, rewrite, walk
from halo.lower.context import LowerContext


def partition_loops(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    stmt = _Partition().mutate(stmt)
    # (copies of original loops keep the marks; the mark was for this pass and boxes)
    return _Unmark().mutate(stmt)


class _Unmark(IRMutator):
    """Removes the whole-tiles marks, which only conditions of IfThenElse hold (without
    a rewrite of every expression: that was a fifth of this pass)."""

    def mutate(self, node):
        return node if isinstance(node, n.Expr) else super().mutate(node)

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        cond = rewrite(s.condition, lambda x: x.args[0] if n.is_whole_tiles(x) else None)
        then_case = self.mutate(s.then_case)
        else_case = None if s.else_case is None else self.mutate(s.else_case)
        if cond is s.condition and then_case is s.then_case and else_case is s.else_case:
            return s
        return n.IfThenElse(cond, then_case, else_case)


class _Partition(IRMutator):
    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        if n.is_whole_tiles(s.condition):
            # The else branch runs only when some tile is cut short: its guards would
            # hoist into a copy for whole tiles, which the then branch already is.
            return n.IfThenElse(s.condition, self.mutate(s.then_case), s.else_case)
        return self.mutate_children(s)

    def visit_For(self, loop: n.For) -> n.Stmt:
        if loop.kind is ForKind.VECTORIZED:
            # A branch inside vector code is predicated lane by lane, not taken: hoisting
            # guards of the loops inside gains nothing and only multiplies masked copies.
            return _partition(loop, loop)
        return _partition(self.mutate_children(loop), loop)


def _partition(loop: n.For, original: n.For) -> n.Stmt:
    """`loop` with its hoistable guards hoisted; `original`, the same loop before any
    guard was hoisted from it, is what runs where a guard may fail. Branches around
    copies of `original` merge, so the nest keeps one fast and one original copy.

    A vectorized loop's guards are looked for inside the loops it holds too (an update's
    reduction loops), since a guard left there would be predicated: one that holds over
    the vector and those loops is hoisted out of vector code whole."""
    looked_into = {loop.name: Interval(loop.min, simplify(
        n.Sub(n.Add(loop.min, loop.extent), n.const(1))))}
    vector = loop.kind is ForKind.VECTORIZED
    for guard, lets, scope in _guards(loop.body, {}, looked_into if vector else None):
        inner = {name: r for name, r in scope.items() if name != loop.name}
        cond = simplify(substitute(guard.condition, lets))
        if not is_index_condition(cond):
            continue
        fast = n.For(loop.name, loop.min, loop.extent, loop.kind,
                     _replace(loop.body, guard, guard.then_case))
        moving = {loop.name, *inner}
        varying = [c for c in conjuncts(cond) if free_vars(c) & moving]
        if not varying:
            return _branch(cond, _partition(fast, original), original)
        if not isinstance(loop.extent, n.Const):
            # A loop of run-time extent is a loop over tiles, whose last ones may be cut
            # short: a serial one splits around its steady state; where a parallel one
            # has a short tile, each iteration keeps its own choice (`loop`), so one
            # partial tile doesn't send every tile down the guarded path.
            serial = loop.kind is ForKind.SERIAL
            steady = steady_range(reduce(n.And, varying), loop) if serial else None
            if steady is None:
                everywhere = _holds_over(cond, loop, inner)
                if everywhere is not None:
                    return _branch(everywhere, _partition(fast, original),
                                   original if serial else loop)
                continue
            split = _around(loop, *steady, fast.body, original.body)
            # (conditions on enclosing loops only: hoisted around the split by them)
            invariant = [c for c in conjuncts(cond) if c not in varying]
            return _branch(reduce(n.And, invariant), split, original) if invariant else split
        # A loop of constant extent is a tile's inside, whose guard holds for whole tiles.
        everywhere = _holds_over(cond, loop, inner)
        if everywhere is not None and not free_vars(everywhere) & moving:
            return _branch(everywhere, _partition(fast, original), original)
    # Not a loop around producers computed per iteration (a tile loop): copying those
    # multiplies code for a clamp or two per tile.
    if loop.kind is ForKind.SERIAL \
            and not any(isinstance(s, n.Allocate) for s in walk(loop.body)):
        return _partition_clamps(loop, original)
    return loop


def _partition_clamps(loop: n.For, original: n.For) -> n.Stmt:
    """`loop` split around the range where each min/max with a side that moves with the
    loop variable (a shift_inwards split's `min(x * 8, e - 8)`, a boundary condition's
    clamp) provably picks that side, in every iteration of the loops inside:

        for x in range(n):                  for x in range(0, 1): (original body)
          f[x] = g[max(x - 1, 0)]     ->    for x in range(1, n): f[x] = g[x - 1]

    A clamp of a region computed per iteration of a GPU block's serial loop (a spine
    let: `min(ko * 64 + 63, k - 1)`) picks instead the side that holds from the loop's
    start: such clamps cut the last steps short, and the steady state is the rest."""
    candidates = list(_clamps(loop.body, {}, {}, set(), spine=_holds_thread_loops(loop.body)))
    picks: dict[n.Expr, n.Expr] = {}
    conditions = []
    # Sweeps, since a clamp of a clamp is linear only once the inner one is picked.
    for _ in range(3):
        rejected: set[n.Expr] = set()
        picks_before = len(picks)
        for node, lets, scope, owned, spine in candidates:
            if node in picks or node in rejected:
                continue
            sides = _sides(node, lets, scope, owned, loop.name, lambda e: _picked(e, picks))
            if sides is None:
                rejected.add(node)
                continue
            for side, cond in sides if spine else sides[:1]:
                if _can_pick(cond, loop.name, spine):
                    picks[node] = side
                    if not isinstance(cond, n.Const):
                        conditions.append(cond)
                    break
        if len(picks) == picks_before:
            break
    if not conditions:
        return loop
    steady = steady_range(reduce(n.And, conditions), loop)
    if steady is None:
        return loop
    return _around(loop, *steady, _picked(loop.body, picks), original.body)


def _around(loop: n.For, start: n.Expr, end: n.Expr, fast: n.Stmt, body: n.Stmt) -> n.Stmt:
    """`loop` as three loops: `body` (the original's) over [min, start), `fast` (further
    partitioned) over [start, end), `body` over [end, last). Where the steady state splits
    again (another guard's or clamp's range inside this one), its outer loops run `body`
    too and merge with these: a loop gets one copy of `body` before its steady state and
    one after, however many splits nest. A part of no iterations is left out."""
    last = n.Add(loop.min, loop.extent)
    steady = _partition(_part(loop, start, end, fast), _part(loop, start, end, body))
    inner = list(steady.stmts) if isinstance(steady, n.Block) else [steady]
    if len(inner) > 1 and _runs(inner[0], loop.name, body):
        start = n.Add(inner[0].min, inner[0].extent)
        inner = inner[1:]
    if len(inner) > 1 and _runs(inner[-1], loop.name, body):
        end = inner[-1].min
        inner = inner[:-1]
    parts = [_part(loop, loop.min, start, body), *inner, _part(loop, end, last, body)]
    return block(*[p for p in parts if not _empty(p)])


def _part(loop: n.For, lo: n.Expr, hi: n.Expr, body: n.Stmt) -> n.For:
    return n.For(loop.name, lo, n.Sub(hi, lo), loop.kind, body)


def _runs(s: n.Stmt, name: str, body: n.Stmt) -> bool:
    return isinstance(s, n.For) and s.name == name and s.body is body


def _empty(s: n.Stmt) -> bool:
    if not isinstance(s, n.For):
        return False
    extent = simplify(s.extent)
    return isinstance(extent, n.Const) and extent.value <= 0


def _can_pick(cond: n.Expr | None, name: str, spine: bool) -> bool:
    """Whether a side chosen under `cond` can be picked for loop `name`'s steady state:
    `cond` is true (the same side in every iteration), or an index condition linear in
    the loop variable (for a spine clamp, bounding it from above: true from the start)."""
    if cond is None or isinstance(cond, n.Const):
        return cond is not None and bool(cond.value)
    signs = {_loop_sign(c, name) for c in conjuncts(cond)}
    return is_index_condition(cond) and 0 not in signs and (not spine or signs == {-1})


def _picked(e, picks: dict[n.Expr, n.Expr]):
    return rewrite(e, lambda x: picks.get(x) if isinstance(x, (n.Min, n.Max)) else None)


def _loop_sign(c: n.Expr, name: str) -> int:
    """The sign of loop `name`'s coefficient in comparison `c`'s slack (-1: `c` bounds
    it from above; 0: not linear in it, or free of it)."""
    form = linear_form(simplify(slack(c)), name)
    return 0 if form is None or name not in free_vars(c) else (form[0] > 0) - (form[0] < 0)


def _clamps(s: n.Stmt, lets: dict[str, n.Expr], scope: dict[str, Interval],
            owned: set[str], vector: bool = False, spine: bool = False):
    """Every integer Min and Max in vector code in `s` (`vector`: `s` is), with the lets
    around it (substituted into one another), the ranges of the loops inside `s` around
    it, and the names of those that are serial (whose own partitioning handles what
    reads them). With `spine`, also those of the lets on the
    loop body's spine (outside any loop in it): in a GPU block's serial loop, these
    lets (a region computed per iteration: `min(ko * 64 + 63, k - 1)`) are the extents,
    guards and indices of every thread loop below, which a picked side makes constant."""
    match s:
        case n.LetStmt(name=name, value=value, body=body):
            if vector or spine:
                yield from _clamps_in(value, lets, scope, owned, spine and not vector)
            yield from _clamps(body, {**lets, name: substitute(value, lets)}, scope, owned,
                               vector, spine)
            return
        case n.For(name=name, min=lo, extent=extent, kind=kind, body=body):
            # Not the loop's own bounds: what they clamp runs once per loop, not per
            # iteration (and partitioning writes its bounds as clamps).
            lo, extent = substitute(lo, lets), substitute(extent, lets)
            inner = Interval(lo, simplify(n.Sub(n.Add(lo, extent), n.const(1))))
            if kind is ForKind.SERIAL:
                owned = {*owned, name}
            # Only clamps in vector code: there a clamp turns each dense access into a
            # gather; in scalar code it is two cheap instructions, not worth a copy.
            vector = vector or kind is ForKind.VECTORIZED
            yield from _clamps(body, lets, {**scope, name: inner}, owned, vector)
            return
    for child in _fields(s):
        if isinstance(child, n.Stmt):
            yield from _clamps(child, lets, scope, owned, vector,
                               spine and isinstance(s, _SPINE))
        elif isinstance(child, n.Expr) and vector:
            yield from _clamps_in(child, lets, scope, owned, False)


# What a loop body's spine passes through to its lets (not loops, not branches).
_SPINE = (n.Block, n.LetStmt, n.ProducerConsumer, n.Allocate)


def _holds_thread_loops(s: n.Stmt) -> bool:
    return any(isinstance(x, n.For) and x.kind is ForKind.GPU_THREAD for x in walk(s))


def _fields(s: n.Stmt):
    for name in s.__dataclass_fields__:
        value = getattr(s, name)
        yield from value if isinstance(value, tuple) else (value,)


def _clamps_in(e: n.Expr, lets, scope, owned, spine: bool):
    for node in walk(e):
        if isinstance(node, (n.Min, n.Max)) and no_overflow(node.type) \
                and node.type.lanes == 1:
            yield node, lets, scope, owned, spine


def _sides(node: n.Expr, lets, scope: dict[str, Interval], owned: set[str],
           name: str, picked) -> list[tuple[n.Expr, n.Expr]] | None:
    """[(a side of `node`, the condition on loop `name` under which `node` is that side
    in every iteration of the loops inside, or None where interval arithmetic isn't
    exact)] for its two sides, the one that reads loop `name` first (the other must not
    move with it or the loops inside), or None."""
    moving = {name, *scope}
    raw = [substitute(side, lets) for side in (node.a, node.b)]
    if sum(bool(free_vars(side) & moving) for side in raw) != 1:  # cheap test first
        return None
    a, b = (simplify(picked(substitute(picked(side), lets))) for side in (node.a, node.b))
    if any(isinstance(x, (n.Load, n.Call)) for side in (a, b) for x in walk(side)):
        return None
    a_moves, b_moves = bool(free_vars(a) & moving), bool(free_vars(b) & moving)
    # The loop whose variable the clamp reads is the one to split, not one around it.
    if a_moves == b_moves or name not in free_vars(a if a_moves else b) \
            or free_vars(a if a_moves else b) & owned:
        return None
    sides = [(picked(node.a), a), (picked(node.b), b)] if a_moves else \
        [(picked(node.b), b), (picked(node.a), a)]
    (_, moved), (_, other) = sides
    # max(v, c) is v where c <= v, c where v <= c; min(v, c) the other way round:
    # (lo, hi) with lo <= hi choosing each side.
    order = [(other, moved), (moved, other)]
    out = []
    for (chosen, _), (lo, hi) in zip(sides, order if isinstance(node, n.Max) else order[::-1],
                                     strict=True):
        low = _exact_low(simplify(n.Sub(hi, lo)), scope)
        out.append((chosen, None if low is None else
                    simplify(n.LE(n.const(0, low.type), low))))
    return out


def _branch(cond: n.Expr, fast: n.Stmt, original: n.Stmt) -> n.Stmt:
    """`if cond: fast else: original`, merged with a branch `fast` already makes to the
    same `original`."""
    if isinstance(fast, n.IfThenElse) and fast.else_case is original:
        return n.IfThenElse(n.And(cond, fast.condition), fast.then_case, original)
    return n.IfThenElse(cond, fast, original)


def _guards(s: n.Stmt, lets: dict[str, n.Expr], loops: dict[str, Interval] | None):
    """The IfThenElse nodes reachable from `s` through lets, blocks, allocations and
    produce/consume nodes (and loops, where `loops` is not None), each with the values
    of the lets around it (substituted into one another) and the ranges of the loops
    around it (None: loops are not looked into)."""
    match s:
        case n.IfThenElse():
            yield s, lets, loops or {}
        case n.LetStmt(name=name, value=value, body=body):
            yield from _guards(body, {**lets, name: substitute(value, lets)}, loops)
        case n.Block(stmts=stmts):
            for child in stmts:
                yield from _guards(child, lets, loops)
        case n.Allocate(body=body):
            yield from _guards(body, lets, loops)
        case n.ProducerConsumer(produce=produce, consume=consume):
            yield from _guards(produce, lets, loops)
            yield from _guards(consume, lets, loops)
        case n.For(name=name, min=lo, extent=extent, body=body) if loops is not None:
            lo, extent = substitute(lo, lets), substitute(extent, lets)
            if (free_vars(lo) | free_vars(extent)) & loops.keys():
                return  # (a range that moves with the loops around it isn't exact)
            last = simplify(n.Sub(n.Add(lo, extent), n.const(1)))
            yield from _guards(body, lets, {**loops, name: Interval(lo, last)})


def _replace(s: n.Stmt, old: n.Stmt, new: n.Stmt) -> n.Stmt:
    """`s` with the node `old` (by identity) replaced by `new`."""
    return rewrite(s, lambda node: new if node is old else None)


def _holds_over(cond: n.Expr, loop: n.For, inner: dict[str, Interval]) -> n.Expr | None:
    """A condition free of the loop variable (and of the loops `inner`, inside it) under
    which `cond` holds for every value of them, or None if interval arithmetic can't give
    an exact one."""
    scope = {loop.name: Interval(loop.min, simplify(n.Sub(n.Add(loop.min, loop.extent),
                                                          n.const(1)))), **inner}
    parts = []
    for c in conjuncts(cond):
        low = _exact_low(simplify(slack(c)), scope)
        if low is None:
            return None
        parts.append(n.LE(n.const(0, low.type), low))
    everywhere = simplify(reduce(n.And, parts))
    if isinstance(everywhere, n.Const) and not everywhere.value:
        return None
    return everywhere


def _exact_low(e: n.Expr, scope: dict[str, Interval]) -> n.Expr | None:
    """The least value of `e` over `scope`, when interval arithmetic gives it exactly:
    each variable of `scope` occurs at most once in `e` (halo's integer operators are
    monotonic in each operand, up to sign, so one occurrence loses nothing; two lose the
    correlation, and a loose bound would make a branch that is never taken)."""
    counts: dict[str, int] = {}
    for node in walk(e):
        if isinstance(node, n.Var) and node.name in scope:
            counts[node.name] = counts.get(node.name, 0) + 1
    if any(count > 1 for count in counts.values()):
        return None
    return bounds_of_expr(e, scope).min


__all__ = ["partition_loops"]
