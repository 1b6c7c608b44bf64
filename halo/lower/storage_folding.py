"""Storage folding: keep only the live rows of a sliding window.

A Func that slides along dimension `d` over a serial loop (see `sliding_window`) needs, at
each iteration, only the values in that iteration's required window: a span of rows that
moves one way. When the window's extent is provably at most a constant `W`, the
allocation in dimension `d` shrinks to `fold` = the smallest power of two >= `W`, and
every store and load of the Func addresses that dimension `% fold` (floor modulo, so
always in [0, fold)):

    realize f[f.min.0:f.min.0 + f.extent.0, ...]:        realize f[0:4, ...]:
      ... f[y, x] = ...                         ──►        ... f[y % 4, x] = ...
      ... f[y - 1, x] + f[y + 1, x] ...                    ... f[(y - 1) % 4, x] + ...

Why it is safe: a row r needed at iteration i lies in that window, [min_i, max_i]. Every
row written since r was last written is in (r, max_i] (growing windows; mirrored for
shrinking ones), so none of them is r + k * fold for k >= 1 while fold > max_i - min_i.
Loops between the sliding loop and the compute level (the columns of a row) each write
the same new rows into their own points of the other dimensions, so this holds for each
point of those. It holds at one compute site only if that site slides along the folded
dimension: a site that slides along another dimension keeps rows from earlier
iterations of its loop, which folding would overwrite. So a Func is folded only when
every one of its compute sites slid along the same dimension (the fold is the largest of
their windows).

Input: the Stmt after `sliding_window` (Realize bounds from bounds inference, Provide and
Func Calls with coordinates); `ctx.sliding_windows`. Output: the same Stmt with each
foldable Realize's folded dimension bounded by [0, fold) and that coordinate of every
access taken `% fold`. Storage stays unfolded when a compute site doesn't slide or slides
along another dimension, when the window's extent has no constant bound, when `bound()`
fixes the dimension, or when the allocation is already a constant no larger than the
fold.
"""
from __future__ import annotations

from collections import Counter

from halo.analysis.simplify import simplify
from halo.analysis.simplify.const_bounds import ConstBounds
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.visitor import FuncAccessMutator, IRMutator, walk
from halo.lower.context import LowerContext
from halo.lower.sliding_window import SlidingWindow

_MAX_FOLD = 1 << 16  # a window wider than this isn't worth folding (and may be unbounded)


def storage_folding(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    if not ctx.sliding_windows:
        return stmt
    sites = Counter(s.name for s in walk(stmt) if isinstance(s, n.ProducerConsumer))
    for name, windows in ctx.sliding_windows.items():
        dims = {window.dim for window in windows}
        if len(dims) != 1 or len(windows) != sites[name]:
            continue
        dim = dims.pop()
        f = ctx.env.funcs[name]
        if f.args[dim].name in f.schedule.bounds:
            continue
        fold = _fold_factor(windows)
        if fold is not None:
            stmt = _FoldRealize(name, dim, fold).mutate(stmt)
    return stmt


def _fold_factor(windows: list[SlidingWindow]) -> int | None:
    """The smallest power of two >= the windows' largest extent, or None if unbounded."""
    most = max(ConstBounds({}).of(simplify(n.Add(n.Sub(w.max, w.min), const(1))))[1]
               for w in windows)
    if most >= _MAX_FOLD:
        return None
    fold = 1
    while fold < most:
        fold *= 2
    return fold


class _FoldRealize(IRMutator):
    """Fold each Realize of Func `name` in dimension `dim`, and every access inside it."""

    def __init__(self, name: str, dim: int, fold: int):
        self.name, self.dim, self.fold = name, dim, fold

    def visit_Realize(self, r: n.Realize) -> n.Stmt:
        if r.name != self.name:
            return self.mutate_children(r)
        dim = self.dim
        extent = simplify(r.bounds[dim][1])
        if isinstance(extent, n.Const) and extent.value <= self.fold:
            return r
        bounds = list(r.bounds)
        bounds[dim] = (const(0), const(self.fold))
        body = _FoldAccesses(r.name, dim, self.fold).mutate(r.body)
        return n.Realize(r.name, r.type, tuple(bounds), body, r.scope)


class _FoldAccesses(FuncAccessMutator):
    def __init__(self, name: str, dim: int, fold: int):
        self.name, self.dim, self.fold = name, dim, fold

    def coordinates(self, args: tuple[n.Expr, ...]) -> tuple[n.Expr, ...]:
        out = list(args)
        out[self.dim] = n.Mod(out[self.dim], const(self.fold, out[self.dim].type))
        return tuple(out)
