"""Virtual threads (TVM's InjectVirtualThread is the model): a `vthread` loop becomes
replicated, interleaved code inside each thread.

`for v in vthread(N): S` is pushed as deep into S as it can go: through loops and branches
that don't depend on v (thread loops included, so the block keeps its shape; a thread loop
whose extent does runs as long as the longest copy, each copy guarded), lets that don't,
and buffers allocated inside (each grows N-fold, copy k using part k). Where it stops
(a store, a loop or branch whose bounds depend on v) the statement is written out N times,
v = min, ..., min + N - 1, with the lets that depend on v renamed per copy. So a thread
computes N strided points of a tile side by side, each with registers of its own:

    for v in vthread(2):                       for tx in gpu_thread(32):
      for tx in gpu_thread(32):           ->     for k in range(K):
        for k in range(K): acc[..v..] += ...       acc[..0..] += ...; acc[..1..] += ...

This is legal because a vthread loop is a pure loop of one stage (checked when it is
bound): its iterations write different points, and Funcs computed inside it get private
storage per copy. Runs after storage flattening (buffers are flat and of constant size
inside kernels), for GPU targets only.
"""
from __future__ import annotations

import dataclasses

from halo.analysis.simplify import simplify
from halo.analysis.upper_bound import constant_upper_bound
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.substitute import expand_lets, free_vars, substitute
from halo.ir.visitor import IRMutator, rewrite
from halo.lower.context import LowerContext


def inject_virtual_threads(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Every vthread loop of `stmt` as interleaved copies (see the module)."""
    return _VThreads().mutate(stmt)


class _VThreads(IRMutator):
    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        if loop.kind is not n.ForKind.VTHREAD:
            return loop
        if not isinstance(loop.extent, n.Const):
            return n.For(loop.name, loop.min, loop.extent, n.ForKind.SERIAL, loop.body)
        copies = int(loop.extent.value)
        substitutions = [{loop.name: n.Add(loop.min, const(k))} for k in range(copies)]
        return _Push(copies).push(loop.body, substitutions, {loop.name})


class _Push:
    def __init__(self, copies: int):
        self.copies = copies
        self.grown: dict[str, int] = {}  # buffers allocated inside: name -> size of a copy
        self.lets: dict[str, n.Expr] = {}  # the lets passed, to see through extents

    def push(self, s: n.Stmt, subs: list[dict[str, n.Expr]], varying: set[str]) -> n.Stmt:
        """`s` for every copy; `subs[k]` gives copy k's values of the names in `varying`."""
        def varies(*es: n.Expr) -> bool:
            return any(free_vars(e) & varying for e in es)
        match s:
            case n.For(name=name, min=lo, extent=extent, kind=kind, body=body) \
                    if not varies(lo, extent):
                return n.For(name, lo, extent, kind, self.push(body, subs, varying))
            case n.For(name=name, min=lo, extent=extent, kind=kind, body=body) \
                    if self._same_extent(extent, subs) is not None:
                # Each copy's loop starts elsewhere but runs as long: one loop from 0,
                # each copy offset by its own start.
                rebased = [{**sub, name: n.Add(n.Var(name), self._copy(lo, subs, k))}
                           for k, sub in enumerate(subs)]
                return n.For(name, const(0), self._same_extent(extent, subs), kind,
                             self.push(body, rebased, varying | {name}))
            case n.For(name=name, min=lo, extent=extent, kind=n.ForKind.GPU_THREAD,
                       body=body) if self._largest_extent(extent, subs) is not None:
                # A thread loop whose extent differs from copy to copy (a clipped tile):
                # one loop as long as the longest, each copy guarded by its own extent,
                # so the thread-loop nest stays one nest (the block's shape).
                rebased = [{**sub, name: n.Add(n.Var(name), self._copy(lo, subs, k))}
                           for k, sub in enumerate(subs)]
                guarded = n.IfThenElse(n.LT(n.Var(name), n.Add(lo, extent)), body)
                return n.For(name, const(0), self._largest_extent(extent, subs), kind,
                             self.push(guarded, rebased, varying | {name}))
            case n.LetStmt(name=name, value=value, body=body) if not varies(value):
                self.lets[name] = value
                return n.LetStmt(name, value, self.push(body, subs, varying))
            case n.LetStmt(name=name, value=value, body=body):
                renamed = [f"{name}.v{k}" for k in range(self.copies)]
                for k, new in enumerate(renamed):
                    self.lets[new] = self._copy(value, subs, k)
                inner = self.push(body, [{**sub, name: n.Var(new, value.type)}
                                         for sub, new in zip(subs, renamed, strict=True)],
                                  varying | {name})
                for k in reversed(range(self.copies)):
                    inner = n.LetStmt(renamed[k], self._copy(value, subs, k), inner)
                return inner
            case n.Allocate(name=name, type=t, size=n.Const(value=size), body=body, scope=scope):
                outer = self.grown.get(name)  # (another buffer of the name, elsewhere)
                self.grown[name] = int(size)
                body = self.push(body, subs, varying)
                if outer is None:
                    del self.grown[name]
                else:
                    self.grown[name] = outer
                return n.Allocate(name, t, const(int(size) * self.copies), body, scope)
            case n.IfThenElse(condition=cond, then_case=then, else_case=other) \
                    if not varies(cond):
                return n.IfThenElse(cond, self.push(then, subs, varying),
                                    None if other is None else self.push(other, subs, varying))
            case n.Block(stmts=stmts):
                return n.block(*(self.push(x, subs, varying) for x in stmts))
            case n.ProducerConsumer(name=name, produce=produce, consume=consume):
                return n.ProducerConsumer(name, self.push(produce, subs, varying),
                                          self.push(consume, subs, varying))
        return n.block(*(self._copy(s, subs, k) for k in range(self.copies)))

    def _same_extent(self, extent: n.Expr, subs: list[dict[str, n.Expr]]) -> n.Const | None:
        """The one constant every copy's `extent` is, seen through the lets, or None."""
        values = {simplify(expand_lets(substitute(extent, sub), self.lets)) for sub in subs}
        if len(values) == 1:
            (value,) = values
            if isinstance(value, n.Const):
                return value
        return None

    def _largest_extent(self, extent: n.Expr, subs: list[dict[str, n.Expr]]) -> n.Const | None:
        """The largest constant bound of every copy's `extent`, or None where one has
        none."""
        bounds = [constant_upper_bound(simplify(expand_lets(substitute(extent, sub),
                                                            self.lets))) for sub in subs]
        return None if None in bounds else const(max(bounds))

    def _copy(self, node, subs: list[dict[str, n.Expr]], k: int):
        """Copy k of `node`: its varying names replaced, its accesses to buffers allocated
        (and grown) outside it moved to part k."""
        return _part(substitute(node, subs[k]), k, self.grown)


def _part(node, k: int, grown: dict[str, int]):
    """`node` with its accesses to the `grown` buffers (name -> size of a part) moved to
    part k; a buffer `node` allocates itself, each copy has whole (it shadows its name)."""
    def offset(x):
        if isinstance(x, n.Allocate) and x.name in grown:
            inner = {name: size for name, size in grown.items() if name != x.name}
            return dataclasses.replace(x, body=_part(x.body, k, inner))
        if isinstance(x, (n.Load, n.Store)) and x.name in grown:
            index = n.Add(rewrite(x.index, offset), const(k * grown[x.name]))
            if isinstance(x, n.Load):
                return n.Load(x.type, x.name, index, x.predicate)
            return n.Store(x.name, index, rewrite(x.value, offset), x.predicate)
        return None
    return rewrite(node, offset) if grown else node
