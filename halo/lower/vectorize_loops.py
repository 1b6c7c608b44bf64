"""Vectorization: a loop of kind `vectorized` becomes straight-line vector code.

Input: flattened IR; vectorized loops have constant extents (unroll_loops checked that).
Output: each vectorized loop whose body can be widened is replaced by its body with the
loop variable bound to `Ramp(min, 1, lanes)`: expressions that depend on it become
vectors (scalars they combine with are broadcast), loads and stores at vector indices
read and write one element per lane (dense when the index is a ramp of stride 1, which
the backend turns into one vector load or store), and a guard that depends on the lane
becomes a predicate on the stores it protects and on the loads feeding them, so tail
lanes neither read nor write. A loop inside, whose range is the same for every lane, runs
once with its body widened, as in Halide (a reduction over r, vectorized over x):

    for x in vectorized(4):            f[ramp(x0, 1, 4)] = g[ramp(x0 + 1, 1, 4)] * 2.0
      f[x0 + x] = g[x0 + x + 1] * 2.0

    for x in vectorized(4):            for r in range(n):
      for r in range(n):          ->     f[ramp(x0, 1, 4)] = f[ramp(x0, 1, 4)] + g[...]
        f[x0 + x] = f[x0 + x] + g[...]

A body holding allocations, stores that don't depend on the loop, or a loop whose range
depends on the lane stays a serial loop, which means the same thing.
"""
from __future__ import annotations

from contextlib import contextmanager

from halo.ir import nodes as n
from halo.ir.nodes import ForKind, block
from halo.ir.visitor import IRMutator
from halo.lower.context import LowerContext


def vectorize_loops(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    return _Vectorize().mutate(stmt)


class _CannotVectorize(Exception):
    """The body has something that has no vector form; the loop stays serial."""


class _Vectorize(IRMutator):
    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        if loop.kind is not ForKind.VECTORIZED:
            return loop
        lanes = loop.extent.value
        try:
            widen = _Widen(lanes, {loop.name: _ramp(loop.min, n.const(1), lanes)})
            return widen.stmt(loop.body, None)
        except _CannotVectorize:
            return n.For(loop.name, loop.min, loop.extent, ForKind.SERIAL, loop.body)


def _lanes(e: n.Expr) -> int:
    return e.type.lanes


def _ramp(base: n.Expr, stride: n.Expr, lanes: int) -> n.Expr:
    return n.Ramp(base, stride, lanes)


def _broadcast(e: n.Expr, lanes: int) -> n.Expr:
    return e if _lanes(e) == lanes else n.Broadcast(e, lanes)


def _combine(op: type, a: n.Expr, b: n.Expr, lanes: int) -> n.Expr:
    """`op(a, b)` with the scalar side broadcast; ramps stay ramps where they can."""
    if _lanes(a) == 1 and _lanes(b) == 1:
        return op(a, b)
    match op, a, b:  # ramp +- broadcast and ramp * broadcast keep the ramp form
        case (n.Add | n.Sub), n.Ramp(), _ if _lanes(b) == 1:
            return n.Ramp(op(a.base, b), a.stride, lanes)
        case n.Add, _, n.Ramp() if _lanes(a) == 1:
            return n.Ramp(n.Add(a, b.base), b.stride, lanes)
        case n.Sub, _, n.Ramp() if _lanes(a) == 1:  # c - x runs backwards
            return n.Ramp(n.Sub(a, b.base), n.Sub(n.const(0, b.stride.type), b.stride), lanes)
        case (n.Add | n.Sub), n.Ramp(), n.Ramp():
            return n.Ramp(op(a.base, b.base), op(a.stride, b.stride), lanes)
        case n.Mul, n.Ramp(), _ if _lanes(b) == 1:
            return n.Ramp(n.Mul(a.base, b), n.Mul(a.stride, b), lanes)
        case n.Mul, _, n.Ramp() if _lanes(a) == 1:
            return n.Ramp(n.Mul(a, b.base), n.Mul(a, b.stride), lanes)
    return op(_broadcast(a, lanes), _broadcast(b, lanes))


class _Widen:
    """Rewrites one loop body with the loop variable as a vector."""

    def __init__(self, lanes: int, scope: dict[str, n.Expr]):
        self.lanes = lanes
        self.scope = scope  # names whose value is now a vector -> what to use instead

    @contextmanager
    def _bound(self, name: str, value: n.Expr):
        """`name` stands for `value` (a vector) while its let's body is rewritten."""
        self.scope[name] = value
        try:
            yield
        finally:
            del self.scope[name]

    # ---------------------------------------------------------------- expressions

    def expr(self, e: n.Expr, mask: n.Expr | None) -> n.Expr:
        L = self.lanes
        match e:
            case n.Var(name=name) if name in self.scope:
                return self.scope[name]
            case n.Const() | n.Var():
                return e
            case n.BinaryOp(a=a, b=b):
                return _combine(type(e), self.expr(a, mask), self.expr(b, mask), L)
            case n.Not(a=a):
                return n.Not(self.expr(a, mask))
            case n.Cast(type=t, value=v):
                v = self.expr(v, mask)
                return n.Cast(t.with_lanes(_lanes(v)), v)
            case n.Select(condition=c, true_value=t, false_value=f):
                c, t, f = (self.expr(x, mask) for x in (c, t, f))
                if max(_lanes(c), _lanes(t), _lanes(f)) == 1:
                    return n.Select(c, t, f)
                return n.Select(_broadcast(c, L), _broadcast(t, L), _broadcast(f, L))
            case n.Call(type=t, name=name, args=args, kind=kind):
                args = tuple(self.expr(a, mask) for a in args)
                if all(_lanes(a) == 1 for a in args):
                    return n.Call(t, name, args, kind)
                return n.Call(t.with_lanes(L), name, tuple(_broadcast(a, L) for a in args), kind)
            case n.Load(type=t, name=name, index=index):
                index = self.expr(index, mask)
                if _lanes(index) == 1 and mask is None:
                    return n.Load(t, name, index)
                # A load under a lane mask is only safe for the lanes that run it.
                return n.Load(t.with_lanes(L), name, _broadcast(index, L), mask)
            case n.Let(name=name, value=value, body=body):
                value = self.expr(value, mask)
                if _lanes(value) == 1:
                    return n.Let(name, value, self.expr(body, mask))
                with self._bound(name, n.Var(name, value.type)):
                    return n.Let(name, value, self.expr(body, mask))
        raise _CannotVectorize(type(e).__name__)

    # ----------------------------------------------------------------- statements

    def stmt(self, s: n.Stmt, mask: n.Expr | None) -> n.Stmt:
        L = self.lanes
        match s:
            case n.Block(stmts=stmts):
                return block(*(self.stmt(x, mask) for x in stmts))
            case n.LetStmt(name=name, value=value, body=body):
                value = self.expr(value, mask)
                if isinstance(value, (n.Ramp, n.Broadcast)):
                    # Substituted, so indices built from it stay ramps (dense accesses).
                    with self._bound(name, value):
                        return self.stmt(body, mask)
                if _lanes(value) == 1:
                    return n.LetStmt(name, value, self.stmt(body, mask))
                with self._bound(name, n.Var(name, value.type)):
                    return n.LetStmt(name, value, self.stmt(body, mask))
            case n.Store(name=name, index=index, value=value):
                index, value = self.expr(index, mask), self.expr(value, mask)
                if _lanes(index) == 1 and mask is None:
                    # The same element written every iteration: keep the loop.
                    raise _CannotVectorize("store that doesn't depend on the loop")
                return n.Store(name, _broadcast(index, L), _broadcast(value, L), mask)
            case n.IfThenElse(condition=c, then_case=then, else_case=other):
                c = self.expr(c, mask)
                if _lanes(c) == 1 and mask is None:
                    return n.IfThenElse(c, self.stmt(then, None),
                                        None if other is None else self.stmt(other, None))
                c = _broadcast(c, L)
                then_mask = c if mask is None else n.And(mask, c)
                out = self.stmt(then, then_mask)
                if other is not None:
                    not_c = n.Not(c)
                    out = block(out, self.stmt(other, not_c if mask is None
                                               else n.And(mask, not_c)))
                return out
            case n.Evaluate(value=v):
                return n.Evaluate(self.expr(v, mask))
            case n.For(name=name, min=lo, extent=extent, kind=kind, body=body):
                # The inner loop runs once for all lanes, its body widened. Lanes are
                # independent iterations (what vectorize requires), so running each inner
                # iteration for every lane before the next one means the same thing.
                lo, extent = self.expr(lo, mask), self.expr(extent, mask)
                if _lanes(lo) != 1 or _lanes(extent) != 1:
                    raise _CannotVectorize("loop whose range depends on the lane")
                return n.For(name, lo, extent, kind, self.stmt(body, mask))
        raise _CannotVectorize(type(s).__name__)


__all__ = ["vectorize_loops"]
