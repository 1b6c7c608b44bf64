"""Strided vector stores that together fill a dense span become one interleaved store.

A vectorized loop around an unrolled one writes the unrolled dimension's elements with a
stride: packing int8 weights in groups of 4 along k (`packed[q, x, k]`, x vectorized, k
unrolled), or writing an interleaved RGB image from planes. After vectorization the body
is a run of stores

    out[ramp(b + 0, S, L)] = v0
    out[ramp(b + 1, S, L)] = v1
    ...
    out[ramp(b + S - 1, S, L)] = v{S-1}

each a scatter of L lanes, S elements apart. Together they write the S * L consecutive
elements from b, each exactly once, so the LLVM backend writes them as one dense store of
the values' lanes interleaved (`v0[0], v1[0], ..., v{S-1}[0], v0[1], ...`: one shuffle),
which x86 compiles to unpack instructions and full-width stores rather than S * L scalar
stores. Halide's code generator does the same (its "rewrite_interleavings").

`interleaved_runs(stmts)` finds such runs among consecutive statements of a Block. A run
qualifies when its S stores write one buffer, their indices are ramps of one constant
stride S >= 2 and one lane count, their bases differ from the lowest by 0, 1, ..., S - 1
(each once, in any order), their predicates are all absent or all the same expression, and
no value, index or predicate of the run reads the buffer (the combined store lands after
every value is computed, so a value that read an element another store of the run wrote
would see it change). Anything else is emitted store by store, as before.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.visitor import walk

# Longest interleaved vector built (lanes of all S stores): beyond this a shuffle is more
# code than the scalar stores it replaces.
MAX_LANES = 256


@dataclass(frozen=True)
class InterleavedRun:
    """S stores that fill elements `first .. first + S * lanes - 1` of buffer `name`:
    `stores[c]` writes the elements `first + c + S * i`."""
    name: str
    first: n.Expr
    stores: tuple[n.Store, ...]
    predicate: n.Expr | None

    @property
    def stride(self) -> int:
        return len(self.stores)


def interleaved_runs(stmts: Sequence[n.Stmt]) -> Iterator[n.Stmt | InterleavedRun]:
    """`stmts` in order, with each run of stores that fill a dense span together replaced
    by an `InterleavedRun`."""
    i = 0
    while i < len(stmts):
        run = _run_at(stmts, i)
        if run is None:
            yield stmts[i]
            i += 1
        else:
            yield run
            i += run.stride


def _strided(s: n.Stmt) -> tuple[int, int] | None:
    """(stride, lanes) of a store at a ramp index of constant stride >= 2, else None."""
    if not isinstance(s, n.Store) or not isinstance(s.index, n.Ramp):
        return None
    stride = s.index.stride
    if not isinstance(stride, n.Const) or not isinstance(stride.value, int) or \
            stride.value < 2:
        return None
    return stride.value, s.index.lanes


def _run_at(stmts: Sequence[n.Stmt], start: int) -> InterleavedRun | None:
    shape = _strided(stmts[start])
    if shape is None:
        return None
    stride, lanes = shape
    if stride * lanes > MAX_LANES or start + stride > len(stmts):
        return None
    stores = stmts[start:start + stride]
    first = stores[0]
    if any(_strided(s) != shape or s.name != first.name or s.predicate != first.predicate
           for s in stores):
        return None
    offsets = [simplify(n.Sub(s.index.base, first.index.base)) for s in stores]
    if any(not isinstance(o, n.Const) for o in offsets):
        return None
    lowest = min(o.value for o in offsets)
    by_offset = {o.value - lowest: s for o, s in zip(offsets, stores, strict=True)}
    if sorted(by_offset) != list(range(stride)):
        return None
    if any(_reads(part, first.name) for s in stores
           for part in (s.value, s.index, s.predicate) if part is not None):
        return None
    base = by_offset[0].index.base
    return InterleavedRun(first.name, base, tuple(by_offset[c] for c in range(stride)),
                          first.predicate)


def _reads(e: n.Expr, buffer: str) -> bool:
    return any(isinstance(x, n.Load) and x.name == buffer for x in walk(e))
