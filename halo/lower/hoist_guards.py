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
loops' ranges is dropped. Lets and guards move out of serial, unrolled and vectorized
loops only: a GPU thread or block loop keeps what is inside it (thread loops are fused
later, around barriers), and a parallel loop's body stays one task.
"""
from __future__ import annotations

from halo.analysis.conditions import and_all, conjuncts, proves, reads_memory
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
        self.loops: dict[str, Interval] = {}  # the enclosing loops' ranges
        self.lets: dict[str, n.Expr] = {}  # the enclosing lets' values
        self.expansions: dict[str, n.Expr] = {}  # of those, the ones `_expanded` needed

    def visit_For(self, loop: n.For) -> n.Stmt:
        last = simplify(n.Sub(n.Add(loop.min, loop.extent), n.const(1, loop.extent.type)))
        self.loops[loop.name] = Interval(loop.min, last)
        body = self.mutate(loop.body)
        del self.loops[loop.name]
        if body is not loop.body:
            loop = n.For(loop.name, loop.min, loop.extent, loop.kind, body)
        return _hoisted(loop) if loop.kind in _MOVABLE else loop

    def visit_LetStmt(self, let: n.LetStmt) -> n.Stmt:
        outer = self.lets.get(let.name)
        if outer is not None:  # (a let shadowed: expansions that read it go stale)
            self.expansions.clear()
        self.lets[let.name] = let.value
        body = self.mutate(let.body)
        self.expansions.pop(let.name, None)
        if outer is None:
            del self.lets[let.name]
        else:
            self.lets[let.name] = outer
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
        return n.IfThenElse(and_all(kept), then_case)

    def _expanded(self, e: n.Expr) -> n.Expr:
        """`e` with the enclosing lets substituted (theirs too): `j < jm + 128`, with
        `j = jm + tx * 8 + 3`, becomes `tx * 8 + 3 < 128` once simplified, where the
        ranges of `j` and of `jm` would have lost that both read `jm`."""
        used = {name: self._expansion(name) for name in free_vars(e) if name in self.lets}
        return substitute(e, used) if used else e

    def _expansion(self, name: str) -> n.Expr:
        if name not in self.expansions:
            self.expansions[name] = self._expanded(self.lets[name])
        return self.expansions[name]

    def _proves(self, c: n.Expr) -> bool:
        e = simplify(self._expanded(c))
        return proves(e, {v: self.loops[v] for v in free_vars(e) if v in self.loops})


def _hoisted(loop: n.For) -> n.Stmt:
    """`loop` with the lets and guard conjuncts of its body's spine that don't depend on
    it moved outside it (unchanged when no guard moves)."""
    inside: list[tuple[str, object]] = []
    outside: list[tuple[str, object]] = []
    varying = {loop.name}
    names: set[str] = set()
    s = loop.body
    while True:
        if isinstance(s, n.LetStmt):
            if s.name in names:
                return loop  # (a name bound twice: moving one would change the other)
            names.add(s.name)
            if free_vars(s.value) & varying or reads_memory(s.value):
                varying.add(s.name)
                inside.append(("let", s))
            else:
                outside.append(("let", s))
            s = s.body
        elif isinstance(s, n.IfThenElse) and s.else_case is None:
            for c in conjuncts(s.condition):
                moves = not (free_vars(c) & varying or reads_memory(c))
                (outside if moves else inside).append(("if", c))
            s = s.then_case
        else:
            break
    if not any(kind == "if" for kind, _ in outside):
        return loop
    body = _wrapped(inside, s)
    return _wrapped(outside, n.For(loop.name, loop.min, loop.extent, loop.kind, body))


def _wrapped(items: list[tuple[str, object]], core: n.Stmt) -> n.Stmt:
    """`core` inside the lets and guards of `items` (outermost first); adjacent guard
    conjuncts join into one IfThenElse."""
    for i in reversed(range(len(items))):
        kind, item = items[i]
        if kind == "let":
            core = n.LetStmt(item.name, item.value, core)
        elif isinstance(core, n.IfThenElse) and core.else_case is None and \
                i + 1 < len(items) and items[i + 1][0] == "if":
            core = n.IfThenElse(n.And(item, core.condition), core.then_case)
        else:
            core = n.IfThenElse(item, core)
    return core


__all__ = ["hoist_guards"]
