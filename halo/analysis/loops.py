"""What a stage's loop transformations mean: the loops a `Split` or `Fuse` makes, the
range of each, and which original dimensions each loop came from.

    Split(old, outer, inner, factor)   old over [lo, lo + e) becomes outer over
                                       [0, (e + factor - 1) / factor) and inner over
                                       [0, factor), with old = lo + outer * factor + inner
                                       (tail shift_inwards: the last tile moves back to
                                       end where old ends, so
                                       old = lo + min(outer * factor, e - factor) + inner)
    Fuse(outer, inner, fused)          outer over [lo_o, lo_o + e_o) and inner over
                                       [lo_i, lo_i + e_i) become fused over
                                       [0, max(e_o, 0) * max(e_i, 0)), with
                                       outer = lo_o + fused / e_i, inner = lo_i + fused % e_i
    Reorder(names)                     moves loops, makes none

Every place that needs this asks here: lowering builds the loops of a stage
(`halo.lower.schedule_functions`), `rfactor` turns them into reduction variables, the
race check asks which reduction variables a loop moves, bounds inference how far a
round_up split computes past a dimension, and the schedule verbs which names a stage has
used. What happens to the points past the end of a split whose factor doesn't divide
(guards, clamps) is the business of the code that builds the loops.

The transformations are plain records, kept here with their meaning (below the
schedule records that hold them, `halo.schedule.records`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, TypeVar

from halo.analysis.modulus import modulus
from halo.analysis.simplify import simplify
from halo.ir import nodes as n


class TailStrategy(Enum):
    """What a split does where its factor doesn't divide the extent (see `split`)."""
    AUTO = "auto"                    # shift_inwards on a pure stage, guard on an update
    GUARD = "guard"                  # skip the points past the end
    ROUND_UP = "round_up"            # compute past the end
    SHIFT_INWARDS = "shift_inwards"  # move the last tile back


@dataclass(frozen=True)
class Split:
    """Loop `old` becomes `outer` (outside) and `inner` (0 .. factor-1)."""
    old: str
    outer: str
    inner: str
    factor: int
    tail: TailStrategy = TailStrategy.AUTO

    def tail_in(self, pure_stage: bool) -> TailStrategy:
        """The tail that applies in a pure stage or an update (`AUTO` decided)."""
        if self.tail is not TailStrategy.AUTO:
            return self.tail
        return TailStrategy.SHIFT_INWARDS if pure_stage else TailStrategy.GUARD


@dataclass(frozen=True)
class Fuse:
    """Adjacent loops `outer` and `inner` become the single loop `fused`."""
    outer: str
    inner: str
    fused: str


@dataclass(frozen=True)
class Reorder:
    """The named loops took these positions, outermost first (kept so a schedule replays
    exactly: a later fuse may rely on it)."""
    names: tuple[str, ...]


LoopTransform = Split | Fuse | Reorder


class LoopRange(NamedTuple):
    """A loop's range: `extent` values from `min`."""
    min: n.Expr
    extent: n.Expr

    @property
    def end(self) -> n.Expr:
        """One past the last value: min + extent."""
        return n.Add(self.min, self.extent)

    @property
    def max(self) -> n.Expr:
        """The last value: min + extent - 1."""
        return n.Sub(self.end, n.const(1))


_Value = TypeVar("_Value")


def _after(t: LoopTransform, values: Mapping[str, _Value],
           split: Callable[[_Value], tuple[_Value, _Value]],
           fuse: Callable[[_Value, _Value], _Value]) -> dict[str, _Value]:
    """`values` (one per loop) after `t`: a split gives its two loops `split(old's)`, a
    fuse gives its loop `fuse(outer's, inner's)`."""
    out = dict(values)
    if isinstance(t, Split):
        out[t.outer], out[t.inner] = split(out.pop(t.old))
    elif isinstance(t, Fuse):
        out[t.fused] = fuse(out.pop(t.outer), out.pop(t.inner))
    return out


def ranges_after(t: LoopTransform, ranges: Mapping[str, LoopRange]) -> dict[str, LoopRange]:
    """The range of each loop after `t`, given the range of each loop before it."""
    def split(old: LoopRange) -> tuple[LoopRange, LoopRange]:
        factor = n.const(t.factor)
        return (LoopRange(n.const(0), n.Div(n.Add(old.extent, n.const(t.factor - 1)), factor)),
                LoopRange(n.const(0), factor))

    def fuse(outer: LoopRange, inner: LoopRange) -> LoopRange:
        # An empty range may have a negative extent; two of them make no iterations.
        return LoopRange(n.const(0), n.Mul(n.Max(outer.extent, n.const(0)),
                                           n.Max(inner.extent, n.const(0))))
    return _after(t, ranges, split, fuse)


def sources_after(t: LoopTransform, sources: Mapping[str, frozenset[str]]
                  ) -> dict[str, frozenset[str]]:
    """The original dimensions each loop comes from after `t`, given them before it."""
    return _after(t, sources, lambda old: (old, old), lambda outer, inner: outer | inner)


def loop_sources(initial: Iterable[str], transforms: Iterable[LoopTransform]
                 ) -> dict[str, frozenset[str]]:
    """For each loop after `transforms`, the original dimensions (of `initial`) it is
    made of."""
    sources = {name: frozenset({name}) for name in initial}
    for t in transforms:
        sources = sources_after(t, sources)
    return sources


def transformed_names(transforms: Iterable[LoopTransform]) -> set[str]:
    """Every loop name the splits and fuses took apart or made."""
    names: set[str] = set()
    for t in transforms:
        if isinstance(t, Split):
            names |= {t.old, t.outer, t.inner}
        elif isinstance(t, Fuse):
            names |= {t.outer, t.inner, t.fused}
    return names


def divides(old: LoopRange, factor: int) -> bool:
    """Whether a split by `factor` of a loop over `old` makes whole tiles only: its extent
    is a multiple of the factor whatever its variables (`(k + 31) / 32 * 32` is)."""
    if isinstance(old.extent, n.Const):
        return old.extent.value % factor == 0
    m, r = modulus(simplify(old.extent))
    return m % factor == 0 and r % factor == 0


def split_value(old: LoopRange, outer: n.Expr, inner: n.Expr, factor: int,
                tail: TailStrategy) -> n.Expr:
    """The split loop's value at `outer`, `inner` under `tail` (decided, not `AUTO`):
    lo + outer * factor + inner, or with shift_inwards
    lo + min(outer * factor, extent - factor) + inner. Past the end of the range where
    the factor doesn't divide, unless shifted inwards (and the extent is at least the
    factor)."""
    start = n.Mul(outer, n.const(factor))
    if tail is TailStrategy.SHIFT_INWARDS:
        start = n.Min(start, n.Sub(old.extent, n.const(factor)))
    return n.Add(n.Add(old.min, start), inner)


def fused_values(fused: n.Expr, outer: LoopRange, inner: LoopRange
                 ) -> tuple[n.Expr, n.Expr]:
    """The values of the outer and inner loops where the loop they fused into is at
    `fused`."""
    return (n.Add(outer.min, n.Div(fused, inner.extent)),
            n.Add(inner.min, n.Mod(fused, inner.extent)))
