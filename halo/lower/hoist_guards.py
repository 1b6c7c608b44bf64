"""Guard hoisting: each tail guard moved out of the loops it doesn't depend on, and
dropped where it holds over the ranges of the loops around it.

Input: flattened IR after loop partitioning, before unrolling. A tail guard (an
IfThenElse without else) sits innermost, inside the lets of the point it tests; the
partitioned fast copies have none left, the copies that run short tiles keep them all:

    for ki in unrolled(16):                  for ki in unrolled(16):
      for iv in unrolled(8):                   k = ko * 16 + ki
        for jv in unrolled(8):                 if k < e:
          k = ko * 16 + ki            ->         for iv in unrolled(8):
          j = jm + tx * 8 + jv                     for jv in unrolled(8):
          if j < jm + 128 and k < e:                 j = jm + tx * 8 + jv
            C[j] = C[j] + ...                        C[j] = C[j] + ...

(with `tx` a thread loop of 16, `j < jm + 128` holds). Unrolled, that short tile had
1024 branches, which took nvcc minutes to compile; it has 16.

Output: the same meaning. A conjunct of a guard, and a let, that read no memory and
don't depend on a loop move out of it, when the loop's body is only lets and guards
around one statement; a conjunct that interval arithmetic proves over the enclosing
loops' ranges is dropped; and a conjunct linear in a serial loop's variable becomes the
loop's range (`for c in range(8): if c + k < e:` runs c up to `min(8, e - k)`; where
it fails, an iteration does nothing). That last matters beyond the branch it saves:
conv_relu's GPU kernel, whose loop over the short last step of input channels branched
in every iteration, got 78 registers from nvcc for the whole kernel, steady state
included, and ran in 110 us on an H200 at batch 1; with that loop cut to its range,
114 registers and 71 us.
Lets and guards move out of serial, unrolled and vectorized loops only: a GPU thread or
block loop keeps what is inside it (thread loops are fused later, around barriers), and
a parallel loop's body stays one task.
"""
from __future__ import annotations

from functools import reduce

from halo.analysis.conditions import (
    conjuncts,
    is_index_condition,
    proves,
    reads_memory,
    steady_range,
)
from halo.analysis.interval import Interval
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.nodes import ForKind
from halo.ir.substitute import free_vars, substitute
from halo.ir.visitor import IRMutator
from halo.lower.context import LowerContext

_MOVABLE = frozenset({ForKind.SERIAL, ForKind.UNROLLED, ForKind.VECTORIZED})


def hoist_guards(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    return _Hoist().mutate(stmt)


class _Hoist(IRMutator):
    def __init__(self):
        self.loops: dict[str, n.For] = {}  # the enclosing loops
        # the enclosing lets' values, and how many loops enclose each
        self.lets: dict[str, tuple[n.Expr, int]] = {}
        self.shadowing = 0  # lets inside one of the same name: no proofs there

    def visit_For(self, loop: n.For) -> n.Stmt:
        self.loops[loop.name] = loop
        body = self.mutate(loop.body)
        del self.loops[loop.name]
        if body is not loop.body:
            loop = n.For(loop.name, loop.min, loop.extent, loop.kind, body)
        return _hoisted(loop) if loop.kind in _MOVABLE else loop

    def visit_LetStmt(self, let: n.LetStmt) -> n.Stmt:
        outer = self.lets.get(let.name)
        self.lets[let.name] = (let.value, len(self.loops))
        self.shadowing += outer is not None
        body = self.mutate(let.body)
        if outer is None:
            del self.lets[let.name]
        else:
            self.lets[let.name] = outer
            self.shadowing -= 1
        return let if body is let.body else n.LetStmt(let.name, let.value, body)

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        if s.else_case is not None:
            return self.mutate_children(s)
        then_case = self.mutate(s.then_case)
        parts = conjuncts(s.condition)
        kept = [c for c in parts if not self._proves(c)]
        if not kept:
            return then_case
        if len(kept) == len(parts) and then_case is s.then_case:
            return s
        return n.IfThenElse(reduce(n.And, kept), then_case)

    def _proves(self, c: n.Expr) -> bool:
        """Whether `c` holds over the enclosing loops' ranges. The lets it reads are
        symbols, which may take any value, until substituted, the innermost first, a
        level at a time: `j < jm + 128`, with `j = jm + tx * 8 + 3` inside the loop
        over tx, holds at the first level, as `jm` cancels. While a loop of run-time
        extent (over tiles) is left in it, a proof is tried only in vector code, where
        a guard is a mask on every lane; elsewhere partitioning has dealt with the
        tiles, a branch is cheap, and interval arithmetic on tile regions' mins and
        maxes was most of this pass's time."""
        if self.shadowing:  # (a let's value would read the wrong binding of a name)
            return False
        vector = any(lp.kind is ForKind.VECTORIZED for lp in self.loops.values())
        for _ in range(_LEVELS):
            lets = {name: self.lets[name] for name in free_vars(c) if name in self.lets}
            if not lets:
                return False
            deepest = max(depth for _, depth in lets.values())
            c = simplify(substitute(c, {name: value for name, (value, depth) in lets.items()
                                        if depth == deepest}))
            loops = [self.loops[v] for v in free_vars(c) if v in self.loops]
            tiles = any(not isinstance(lp.extent, n.Const) for lp in loops)
            if loops and (vector or not tiles) and proves(c, {
                    lp.name: Interval(lp.min, n.Sub(n.Add(lp.min, lp.extent), n.const(1)))
                    for lp in loops}):
                return True
        return False


# How many levels of lets a guard's proof substitutes, innermost first.
_LEVELS = 3


def _hoisted(loop: n.For) -> n.Stmt:
    """`loop` with the lets and guard conjuncts of its body's spine that don't depend on
    it moved outside it, and, serial, its range cut to where the conjuncts linear in its
    variable hold (`_trimmed`); unchanged when neither happens."""
    inside: list[n.LetStmt | n.Expr] = []
    outside: list[n.LetStmt | n.Expr] = []
    varying = {loop.name}
    bounds = free_vars(loop.min) | free_vars(loop.extent)
    names: set[str] = set()
    s = loop.body
    while True:
        if isinstance(s, n.LetStmt):
            if s.name in names:
                return loop  # (a name bound twice: moving one would change the other)
            names.add(s.name)
            # (a let of a name the loop's bounds read stays: above them, it would rebind it)
            if s.name in bounds or free_vars(s.value) & varying or reads_memory(s.value):
                varying.add(s.name)
                inside.append(s)
            else:
                outside.append(s)
            s = s.body
        elif isinstance(s, n.IfThenElse) and s.else_case is None:
            for c in conjuncts(s.condition):
                moves = not (free_vars(c) & varying or reads_memory(c))
                (outside if moves else inside).append(c)
            s = s.then_case
        else:
            break
    lo, extent, inside = _trimmed(loop, inside)
    if all(isinstance(item, n.LetStmt) for item in outside) and lo is loop.min \
            and extent is loop.extent:
        return loop
    body = _wrapped(inside, s)
    return _wrapped(outside, n.For(loop.name, lo, extent, loop.kind, body))


def _trimmed(loop: n.For, inside: list[n.LetStmt | n.Expr]):
    """(min, extent, items): a serial loop's range cut to where the conjuncts of its
    spine's guards that are linear in its variable hold (`steady_range`), and the spine
    without them; where one fails, the iteration does nothing. Anything else: the loop's
    own range and `inside`."""
    if loop.kind is not ForKind.SERIAL:
        return loop.min, loop.extent, inside
    values: dict[str, n.Expr] = {}  # the spine's lets, in terms of names outside the loop
    linear: list[tuple[n.Expr, n.Expr]] = []
    for item in inside:
        if isinstance(item, n.LetStmt):
            values[item.name] = substitute(item.value, values)
            continue
        c = simplify(substitute(item, values))
        if is_index_condition(c) and steady_range(c, loop) is not None:
            linear.append((item, c))
    if not linear:
        return loop.min, loop.extent, inside
    start, end = steady_range(reduce(n.And, [c for _, c in linear]), loop)
    cut = {id(item) for item, _ in linear}
    return start, simplify(n.Sub(end, start)), [x for x in inside if id(x) not in cut]


def _wrapped(items: list[n.LetStmt | n.Expr], core: n.Stmt) -> n.Stmt:
    """`core` inside the lets and guard conjuncts of `items` (outermost first); adjacent
    conjuncts join into one IfThenElse."""
    guard = False  # whether `core` is a guard made here
    for item in reversed(items):
        if isinstance(item, n.LetStmt):
            core, guard = n.LetStmt(item.name, item.value, core), False
        elif guard:
            core = n.IfThenElse(n.And(item, core.condition), core.then_case)
        else:
            core, guard = n.IfThenElse(item, core), True
    return core


__all__ = ["hoist_guards"]
