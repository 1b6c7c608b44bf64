"""Substitute the definitions of inlined Funcs into their uses."""
from __future__ import annotations

from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.visitor import IRMutator, Node
from halo.lower.context import LowerContext
from halo.schedule.records import PlacementKind


class _Inline(IRMutator):
    def __init__(self, ctx: LowerContext):
        self.ctx = ctx

    def visit_Call(self, call: n.Call) -> n.Expr:
        call = self.mutate_children(call)
        if call.kind is not n.CallKind.FUNC or \
                self.ctx.compute_levels[call.name].kind is not PlacementKind.INLINE:
            return call
        pure = self.ctx.env.funcs[call.name].definitions[0]
        args = {v.name: a for v, a in zip(pure.args, call.args, strict=True)}
        value = substitute(pure.value, args)
        return self.mutate(value)


def inline_calls(node: Node, ctx: LowerContext) -> Node:
    """`node` with every call of an inlined Func replaced by its definition, transitively.
    Input: any IR. Output: no Call of a Func whose compute level is inline."""
    return _Inline(ctx).mutate(node)
