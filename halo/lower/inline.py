"""Substitute the definitions of inlined Funcs into their uses.

Inlining copies a Func's definition into every call of it, so a chain of inlined Funcs
that each read the one before several times (stencils) builds an expression whose size
grows exponentially along the chain. Before building anything, the size of what inlining
would build is counted from each Func's own definition (memoized per Func, so counting is
linear in the program), and a size past `MAX_INLINED_NODES` is refused.
"""
from __future__ import annotations

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.visitor import IRMutator, Node, walk
from halo.lower.context import LowerContext
from halo.schedule.records import PlacementKind

# The most IR nodes inlining may build in one Func's loop nest. The apps' hand schedules
# inline at most a few thousand, and apps/harris.py left all inline (its default) about
# 100,000; a chain of 3-tap stencils passes this at 10 stages, where compiling already
# takes seconds, and each stage more triples it.
MAX_INLINED_NODES = 200_000


class _Inline(IRMutator):
    def __init__(self, ctx: LowerContext):
        self.ctx = ctx

    def visit_Call(self, call: n.Call) -> n.Expr:
        call = self.mutate_children(call)
        if not _is_inlined(call, self.ctx):
            return call
        pure = self.ctx.env.funcs[call.name].definitions[0]
        args = {v.name: a for v, a in zip(pure.args, call.args, strict=True)}
        value = substitute(pure.value, args)
        return self.mutate(value)


def _is_inlined(node: Node, ctx: LowerContext) -> bool:
    return isinstance(node, n.Call) and node.kind is n.CallKind.FUNC and \
        ctx.compute_levels[node.name].kind is PlacementKind.INLINE


class _InlinedSizes:
    """How many nodes each inlined Func's definition holds once the Funcs it calls are
    inlined into it (each call adds its callee's size: a lower bound, as arguments are
    counted once however often the callee uses them)."""

    def __init__(self, ctx: LowerContext):
        self.ctx = ctx
        self.sizes: dict[str, int] = {}

    def check(self, node: Node, owner: str) -> None:
        """ScheduleError if `node` (the loops of Func `owner`) is past MAX_INLINED_NODES
        once inlined."""
        self._count_callees(node)
        size = self._size(node)
        if size > MAX_INLINED_NODES:
            self._refuse(owner, node, size)

    def _size(self, node: Node) -> int:
        """The size of `node` once inlined; the sizes of its callees must be known."""
        return sum(1 + (self.sizes[x.name] if _is_inlined(x, self.ctx) else 0)
                   for x in walk(node))

    def _inlined_callees(self, node: Node) -> set[str]:
        return {x.name for x in walk(node) if _is_inlined(x, self.ctx)}

    def _definition(self, name: str) -> n.Expr:
        return self.ctx.env.funcs[name].definitions[0].value

    def _count_callees(self, node: Node) -> None:
        """Sizes for every inlined Func `node` reaches, callees first (a loop, not
        recursion: a chain may be thousands of Funcs long)."""
        pending = [(name, False) for name in self._inlined_callees(node)]
        while pending:
            name, callees_done = pending.pop()
            if name in self.sizes:
                continue
            value = self._definition(name)
            if callees_done:
                self.sizes[name] = self._size(value)
                continue
            pending.append((name, True))
            pending.extend((c, False) for c in self._inlined_callees(value)
                           if c not in self.sizes)

    def _refuse(self, owner: str, node: Node, size: int) -> None:
        """The chain of biggest inlined callees from `owner` down, in the error."""
        chain = []
        callees = self._inlined_callees(node)
        while callees:
            chain.append(max(sorted(callees), key=self.sizes.__getitem__))
            callees = self._inlined_callees(self._definition(chain[-1]))
        # The Func nearest the bottom whose own inlined size is past the limit: storage
        # for the one it calls (and every few Funcs up from there) bounds the growth.
        first_too_big = next((i for i in reversed(range(len(chain)))
                              if self.sizes[chain[i]] > MAX_INLINED_NODES), -1)
        advice = chain[first_too_big + 1] if first_too_big + 1 < len(chain) else chain[-1]
        shown = chain if len(chain) <= 8 else [*chain[:4], "...", *chain[-3:]]
        raise ScheduleError(
            f"{owner}: inlining the chain {' <- '.join([owner, *shown])} ({len(chain)} "
            f"inlined Funcs) would build an expression of at least {size:,} nodes, more "
            f"than the {MAX_INLINED_NODES:,} halo builds: where each Func reads the one it "
            "calls more than once, the inlined expression grows exponentially along the "
            f"chain. Give some of them storage, every few Funcs along it: e.g. "
            f"{advice}.compute_root(), or {advice}.compute_at({owner}, var)")


def inline_calls(node: Node, ctx: LowerContext, owner: str) -> Node:
    """`node` (the loops of Func `owner`) with every call of an inlined Func replaced by
    its definition, transitively. Input: any IR. Output: no Call of a Func whose compute
    level is inline. ScheduleError if that would build more than MAX_INLINED_NODES
    nodes."""
    _InlinedSizes(ctx).check(node, owner)
    return _Inline(ctx).mutate(node)
