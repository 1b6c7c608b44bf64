"""Unroll loops marked `unrolled`, and check that vectorized loops have constant extents.

Input: loops of any kind. Output: no `unrolled` loops: each became a Block of copies of
its body with the loop variable replaced by min + i. Vectorized loops are left for the
backend, with their extent, which must be a constant (the SIMD width), written as one.
A loop whose extent isn't constant but has a constant upper bound (a clamped tile,
`min(t + 3, n - 1) - max(t, 0) + 1 <= 4`) runs the bound's iterations, each guarded.
"""
from __future__ import annotations

from halo.analysis.simplify import simplify
from halo.analysis.upper_bound import constant_upper_bound
from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import ForKind, block, const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import substitute, var_names
from halo.ir.visitor import IRMutator
from halo.lower.context import LowerContext

_MAX_UNROLL = 256


def unroll_loops(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    return _Unroll(ctx).mutate(stmt)


class _Unroll(IRMutator):
    def __init__(self, ctx: LowerContext):
        self.ctx = ctx
        self.lets: dict[str, n.Expr] = {}  # the values of the enclosing lets
        self.resolved: dict[str, n.Expr] = {}  # of those, the ones `_resolve` computed

    def visit_LetStmt(self, let: n.LetStmt) -> n.Stmt:
        self.lets[let.name] = let.value
        body = self.mutate(let.body)
        del self.lets[let.name]
        self.resolved.pop(let.name, None)
        return let if body is let.body else n.LetStmt(let.name, let.value, body)

    def _resolve(self, e: n.Expr) -> n.Expr:
        """`e` with the enclosing lets substituted (their values resolved the same way)."""
        # Only the lets `e` uses are resolved: resolving every let of a pipeline, each a
        # large expression, was most of this pass (benchmarks/compile_time.py).
        used = {name: self._resolved(name) for name in var_names(e) if name in self.lets}
        return simplify(substitute(e, used))

    def _resolved(self, name: str) -> n.Expr:
        if name not in self.resolved:
            self.resolved[name] = self._resolve(self.lets[name])
        return self.resolved[name]

    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        if loop.kind not in (ForKind.UNROLLED, ForKind.VECTORIZED):
            return loop
        # An extent can be constant only through the lets around it (a stencil window
        # computed at its consumer spans `max - min + 1` = 3).
        extent = self._resolve(loop.extent)
        label = self.ctx.loop_labels.get(loop.name, loop.name)
        verb = "unroll" if loop.kind is ForKind.UNROLLED else "vectorize"
        bound = None if isinstance(extent, n.Const) else constant_upper_bound(extent)
        if bound is not None and bound > 0:
            # At most `bound` iterations: run that many, each guarded (a vectorized
            # loop's guard becomes a predicate), as Halide does.
            guard = n.LT(n.Var(loop.name), n.Add(loop.min, loop.extent))
            loop = n.For(loop.name, loop.min, const(bound), loop.kind,
                         n.IfThenElse(guard, loop.body))
            extent = loop.extent
        if not isinstance(extent, n.Const):
            raise self._not_constant(loop.name, verb, extent)
        if loop.kind is ForKind.VECTORIZED:
            return n.For(loop.name, loop.min, extent, loop.kind, loop.body)
        if extent.value > _MAX_UNROLL:
            raise ScheduleError(f"unroll: {label} has {extent.value} iterations; unrolling "
                                f"more than {_MAX_UNROLL} is refused (split it first)")
        return block(*(substitute(loop.body, {loop.name: simplify(n.Add(loop.min, const(i)))})
                       for i in range(extent.value)))

    def _not_constant(self, loop: str, verb: str, extent: n.Expr) -> ScheduleError:
        """The error for an unrolled or vectorized loop whose extent isn't a constant,
        named as the user scheduled it, with the two ways to make it one."""
        if loop not in self.ctx.loop_owners:
            return ScheduleError(f"{verb}: loop {loop} has extent {expr_to_str(extent)}, "
                                 f"which is not a constant; {verb} a loop split by a "
                                 "constant factor")
        func, stage, name = self.ctx.loop_owners[loop]
        bound = f", or fix the dimension's extent with {func}.bound({name}, 0, 640)" if \
            name in {a.name for a in self.ctx.env.funcs[func].args} else ""
        return ScheduleError(
            f"{stage}.{verb}({name}): loop {name} of {stage} has extent "
            f"{expr_to_str(extent)}, which is not a constant (it depends on the region "
            f"computed); {verb} a part of constant size instead: {stage}.{verb}({name}, 8) "
            f"splits it by 8 first{bound}")
