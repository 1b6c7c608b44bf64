"""Where a Func is computed and stored, and its storage: the Func-level schedule calls.

These record `LoopLevel`s; whether a level is legal (the loop exists and encloses every
use) is checked when the pipeline is lowered, when the consumers' schedules are final.
"""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import TypeVar

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.schedule.records import INLINE, ROOT, FuncSchedule, LoopLevel, MemoryScope, PlacementKind
from halo.schedule.stage import loop_name

_SCOPES = tuple(s.value for s in MemoryScope)
# The most copies of a buffer `double_buffer` keeps (more stays in flight than helps).
_MAX_BUFFERS = 8

P = TypeVar("P", bound="FuncPlacement")  # a verb returns the Func it was called on


def _level(self_name: str, call: str, consumer: object, var: object) -> LoopLevel:
    func = getattr(consumer, "func", consumer)  # a Stage knows its Func
    stage = getattr(consumer, "index", 0)
    name = getattr(func, "name", None)
    if not isinstance(name, str) or not hasattr(func, "schedule"):
        raise ScheduleError(f"{self_name}.{call}({consumer!r}, ...): the first argument must "
                            "be the consuming Func or one of its update stages")
    if name == self_name:
        raise ScheduleError(f"{self_name}.{call}({name}, {loop_name(var)}): a Func can't be "
                            f"placed inside its own loops; name the Func that reads {name}")
    return LoopLevel(PlacementKind.AT, name, stage, loop_name(var))


def _bound_value(call: str, value: object) -> n.Expr:
    """A `bound()` argument as IR: a halo Expr's node, an int as an int32 constant."""
    node = getattr(value, "node", value)
    if isinstance(node, n.Expr):
        return node
    if isinstance(value, Integral) and not isinstance(value, bool):
        if not -2**31 <= value < 2**31:
            raise ScheduleError(f"{call}: {value} does not fit in int32")
        return n.const(int(value))
    raise ScheduleError(f"{call}: the min and extent must be ints or halo Exprs, not "
                        f"{value!r}")


class FuncPlacement:
    """Mixin for Func: `schedule` is its FuncSchedule, `name` its name."""

    name: str
    schedule: FuncSchedule

    def compute_root(self: P) -> P:
        """Compute the whole required region before any consumer runs."""
        self.schedule.compute_level = ROOT
        return self

    def compute_at(self: P, consumer: object, var: object) -> P:
        """Compute the region `consumer` needs inside its loop `var`.

            for y:                              g.compute_at(f, y)
              for x: f[y, x] = g[y, x]...  ->   for y:
                                                  produce g: for x: g[y, x] = ...
                                                  for x: f[y, x] = g[y, x]...
        """
        self.schedule.compute_level = _level(self.name, "compute_at", consumer, var)
        return self

    def compute_inline(self: P) -> P:
        """Substitute the definition into every use (the default for pure Funcs)."""
        self.schedule.compute_level = INLINE
        return self

    def store_root(self: P) -> P:
        """Allocate at the outermost level (with compute_at inside it)."""
        self.schedule.store_level = ROOT
        return self

    def store_at(self: P, consumer: object, var: object) -> P:
        """Allocate inside `consumer`'s loop `var`, which must enclose the compute level.

        Outside `compute_at`, values computed at one iteration of a serial loop in between
        are kept for the next (a sliding window), and storage keeps only the live rows
        (folded modulo a constant), when halo can prove both safe; otherwise each
        iteration recomputes its whole region. With `out.split(y, yo, yi, 32)` and
        `blur_x.store_at(out, yo).compute_at(out, yi)` (right), where out reads rows
        y - 1..y + 1, against `blur_x.compute_at(out, yi)` alone (left):

            for yo:                              for yo:
              for yi:                              allocate blur_x[4 rows]
                allocate blur_x[3 rows]    ──►     for yi:
                compute blur_x rows y-1..y+1         compute blur_x rows y-1..y+1 if yi == 0,
                compute out row y                      else row y+1 only (rows % 4)
                                                     compute out row y
        """
        self.schedule.store_level = _level(self.name, "store_at", consumer, var)
        return self

    def store_in(self: P, scope: str) -> P:
        """The memory the Func's buffer lives in. On the CPU: "global" is the heap;
        "stack" and "local" are the stack (LLVM keeps a small one in registers), sized by
        a constant upper bound of each extent (a tile's region is bounded by the tile);
        where an extent has none (a row as wide as the image), by its size at run time,
        on the stack up to 16 KiB and on the heap past that; "shared" is recorded for the
        GPU and means the heap here.
        By default small constant-size buffers go on the stack, the rest on the heap.

            allocate g[g.extent.0 * g.extent.1] in heap:     g.store_in("stack")
              ...                                       ->   allocate g[48] in stack: ...
        """
        if scope not in _SCOPES:  # ("auto", the default, stays accepted)
            raise ScheduleError(f"{self.name}.store_in({scope!r}): the scope must be one of "
                                f"{', '.join(repr(s) for s in _SCOPES[1:])}")
        self.schedule.memory_scope = MemoryScope(scope)
        return self

    def reorder_storage(self: P, *dims: object) -> P:
        """Store the Func's dimensions in this order, outermost first (the last one
        contiguous), without changing how it is called. `panel[i, k]` read down its
        columns (a matrix multiply's A panel in GPU shared memory) is better stored by
        column, `panel.reorder_storage(k, i)`:

            allocate panel[rows * depth]:           allocate panel[depth * rows]:
              panel[(i - i0) * depth + (k - k0)]  ──►   panel[(k - k0) * rows + (i - i0)]

        Not for outputs (their storage is the caller's array) or inlined Funcs (no
        storage); tensor intrinsics read their operands' last dimension contiguously."""
        names = [loop_name(d) for d in dims]
        args = [a.name for a in getattr(self, "args", ())]
        call = f"{self.name}.reorder_storage({', '.join(names)})"
        if sorted(names) != sorted(args) or len(set(names)) != len(names):
            raise ScheduleError(f"{call}: name each dimension of {self.name} once, "
                                f"outermost first; its dimensions are "
                                f"{', '.join(args) or '(none yet)'}")
        self.schedule.storage_order = None if names == args else tuple(names)
        return self

    def double_buffer(self: P, stages: int = 2) -> P:
        """GPU only: keep `stages` copies of the Func's shared-memory buffer and fill the
        next iterations' copies while the current one is read. The Func is computed and
        stored at a serial loop inside the GPU blocks (the k loop of a matrix multiply,
        where it stages a panel of an operand); before the loop, the first `stages - 1`
        iterations' regions are copied in; each iteration then starts the copy of the
        region `stages - 1` iterations ahead into the copy of the buffer read
        `stages - 1` iterations before, and reads its own. Copies of global memory are
        asynchronous (`cp.async`, sm_80 on: a dense copy of 4, 8 or 16 bytes), so they run
        while the block computes (TVM's `double_buffer`, Triton's `num_stages`):

            for ko:                                 copy region 0 into A_shared[0]
              copy region ko into A_shared    ──►   for ko:
              (barrier)                               wait for copy ko; (barrier)
              read A_shared                           if ko + 1 < end: start copy ko + 1
                                                          into A_shared[(ko + 1) % 2]
                                                      read A_shared[ko % 2]
        """
        if isinstance(stages, bool) or not isinstance(stages, Integral) or \
                not 2 <= stages <= _MAX_BUFFERS:
            raise ScheduleError(f"{self.name}.double_buffer({stages!r}): stages must be an "
                                f"int from 2 to {_MAX_BUFFERS}")
        self.schedule.buffers = int(stages)
        return self

    def bound(self: P, var: object, min: object,  # noqa: A002 - the API's names
              extent: object) -> P:
        """Assert the realized range of dimension `var` is [min, min + extent): halo
        computes exactly that range (enabling constant extents) and checks at run time
        that it covers what consumers need."""
        name = loop_name(var)
        args = [a.name for a in getattr(self, "args", ())]
        if name not in args:
            raise ScheduleError(f"{self.name}.bound({name}, ...): '{name}' is not a "
                                f"dimension of {self.name}; its dimensions are "
                                f"{', '.join(args) or '(none yet)'}")
        call = f"{self.name}.bound({name}, ...)"
        self.schedule.bounds[name] = (_bound_value(call, min), _bound_value(call, extent))
        return self

    def set_estimates(self: P, estimates: Sequence[Sequence[int]]) -> P:
        """Size hints (min, extent) per dimension, outermost first, for the autoscheduler."""
        est = [tuple(int(v) for v in e) for e in estimates]
        if any(len(e) != 2 for e in est):
            raise ScheduleError(f"{self.name}.set_estimates(...): give one (min, extent) "
                                "pair per dimension")
        self.schedule.estimates = est
        return self
