"""Store counting: an instrumented build that counts the values each Func computes.

With `Target("host", count_stores=True)`, every store to a Func (outputs included) also
adds one to that Func's slot of the int64 buffer `halo.store_counts` (slots in the order
of `store_count_names`), which the Kernel reads back after each call as
`kernel.store_counts`. It shows what a schedule recomputes: e.g. that a sliding window
computes each row once. Parallel and vectorized loops run serially in this build (the
meaning of a loop doesn't depend on its kind, see `halo.ir.nodes`), so the counts are
exact: one per point stored, lanes included.

Input: flat Stores (after storage flattening), loops of any kind. Output: each Store to a
Func followed by the counter increment, and every loop serial. `passes(target)` runs it
only for a `count_stores` target.
"""
from __future__ import annotations

from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.types import int64
from halo.ir.visitor import IRMutator
from halo.lower.context import LowerContext

COUNTS_BUFFER = "halo.store_counts"


def store_count_names(ctx: LowerContext) -> list[str]:
    """The Funcs counted (those with storage: outputs and Funcs not inlined), in the order
    of their slots in the counts buffer."""
    return sorted([*ctx.outputs, *ctx.realized()])


def count_stores(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    slots = {name: k for k, name in enumerate(store_count_names(ctx))}
    return _Count(slots).mutate(stmt)


class _Count(IRMutator):
    def __init__(self, slots: dict[str, int]):
        self.slots = slots

    def visit_Store(self, s: n.Store) -> n.Stmt:
        if s.name not in self.slots:
            return s
        slot = const(self.slots[s.name])
        count = n.Load(int64, COUNTS_BUFFER, slot)
        return n.Block((s, n.Store(COUNTS_BUFFER, slot, n.Add(count, const(1, int64)))))

    def visit_For(self, loop: n.For) -> n.Stmt:
        body = self.mutate(loop.body)
        kind = n.ForKind.UNROLLED if loop.kind is n.ForKind.UNROLLED else n.ForKind.SERIAL
        if body is loop.body and kind is loop.kind:
            return loop
        return n.For(loop.name, loop.min, loop.extent, kind, body)
