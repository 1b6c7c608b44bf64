"""The scheduling methods users call on a Func (its pure stage) or on `f.update(i)`.

Each method validates its arguments against the stage's current loops, appends a record
to the stage's `StageSchedule`, and returns `self` so calls chain. Errors name the Func,
the call, and the loops that exist.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TypeVar

from halo.analysis.loops import Fuse, Reorder, Split, TailStrategy
from halo.errors import ScheduleError
from halo.ir.nodes import ForKind
from halo.schedule.as_written import as_written, loop_name
from halo.schedule.gpu import GpuLoops
from halo.schedule.records import Dim, StageSchedule

S = TypeVar("S", bound="Schedulable")  # a verb returns the stage it was called on

_TAILS = tuple(t.value for t in TailStrategy)


def _show(v: object) -> str:
    if isinstance(v, (str, int)):
        return str(v) if not isinstance(v, str) else v
    return getattr(v, "name", repr(v))


class Schedulable(GpuLoops, ABC):
    """Loop transformations of one stage. Subclasses provide `_stage()` (the record),
    `_stage_label()` (e.g. "f" or "f.update(0)"), and `_is_update`."""

    _is_update = False

    @abstractmethod
    def _stage(self) -> StageSchedule: ...

    @abstractmethod
    def _stage_label(self) -> str: ...

    # --------------------------------------------------------------------- validation

    def _error(self, call: str, args: tuple, message: str) -> ScheduleError:
        shown = ", ".join(_show(a) for a in args)
        loops = ", ".join(self._stage().dim_names()) or "(none)"
        return ScheduleError(f"{self._stage_label()}.{call}({shown}): {message}. "
                             f"The loops of {self._stage_label()} are, outermost first: "
                             f"{loops}")

    def _existing(self, call: str, args: tuple, v: object) -> Dim:
        name = loop_name(v)
        dim = self._stage().find(name)
        if dim is None:
            raise self._error(call, args, f"there is no loop named '{name}'")
        return dim

    def _fresh(self, call: str, args: tuple, v: object, consumed: tuple[str, ...] = ()) -> str:
        """The name of a loop `call` makes: not a loop the stage has now, except one the
        call consumes (split(x, xo, x, 8), as Halide allows); a name whose loop a split
        or fuse has consumed may come back (fuse(yo, xo, y) after tile(y, ...)), as
        loops are named by what the stage has at each call."""
        name = loop_name(v)
        if name in ("min", "max", "extent"):
            raise self._error(call, args, f"'{name}' is reserved for loop bounds; pick "
                                          "another name")
        if name not in consumed and name in self._stage().dim_names():
            raise self._error(call, args, f"the name '{name}' is already a loop of this "
                                          "stage; pick a new Var")
        return name

    def _fresh_suffix(self, base: str, suffix: str) -> str:
        """A new loop name from `base` (`x_vec`; `r_x_vec` for `r.x`, so the name is a
        plain identifier that schedule_source can declare as a Var)."""
        used = self._stage().names_used()
        base = base.replace(".", "_")
        name, i = f"{base}_{suffix}", 1
        while name in used:
            name, i = f"{base}_{suffix}{i}", i + 1
        return name

    def _reduction_order_problem(self, new_dims: list[Dim],
                                 sched: StageSchedule | None = None) -> str | None:
        """Why `new_dims` (the loops after a call to `sched`, default this stage's
        schedule) would run an update's reduction loops out of order in a way that may
        change its result, or None. A pure stage has no reduction loops; update stages
        override this."""
        return None

    # ------------------------------------------------------------------ transformations

    @as_written
    def split(self: S, v: object, outer: object, inner: object, factor: int,
              tail: str = "auto") -> S:
        """Split loop `v` into `outer` and `inner` (0 .. factor-1).

            for x in range(0, 10):          split(x, xo, xi, 4)
              f[x] = ...               ->   for xo in range(3):
                                              for xi in range(4):
                                                f[xo * 4 + xi] = ...   # tail: see below

        `tail` says what happens when `factor` doesn't divide the extent: "guard" (skip
        the points past the end), "shift_inwards" (the last iteration is moved back;
        pure stages only), "round_up" (compute past the end; not for outputs or
        updates), or "auto" (shift_inwards for pure stages, guard for updates).
        """
        return self._split("split", (v, outer, inner, factor), v, outer, inner, factor, tail)

    def _split(self: S, call: str, args: tuple, v: object, outer: object, inner: object,
               factor: int, tail: str) -> S:
        """`split`, with its errors naming the call the user made (`call(args)`: a
        `vectorize(x, 8)` splits too)."""
        dim = self._existing(call, args, v)
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise self._error(call, args, f"the factor must be a positive int, "
                                          f"not {factor!r}")
        if tail not in _TAILS:
            raise self._error(call, args, f"tail={tail!r} is not one of {_TAILS}")
        strategy = TailStrategy(tail)
        if strategy in (TailStrategy.SHIFT_INWARDS, TailStrategy.ROUND_UP) and \
                (self._is_update or not dim.pure):
            raise self._error(call, args, f"tail='{tail}' computes some points twice "
                                          "or past the end, which changes the result of "
                                          "an update stage; use tail='guard'")
        o = self._fresh(call, args, outer, consumed=(dim.name,))
        i = self._fresh(call, args, inner, consumed=(dim.name,))
        if o == i:
            raise self._error(call, args, "the outer and inner loops need different names")
        stage = self._stage()
        k = stage.dims.index(dim)
        stage.dims[k:k + 1] = [Dim(o, dim.kind, dim.pure), Dim(i, ForKind.SERIAL, dim.pure)]
        stage.transforms.append(Split(dim.name, o, i, factor, strategy))
        return self

    @as_written
    def fuse(self: S, outer: object, inner: object, fused: object) -> S:
        """Fuse adjacent loops `outer` (immediately outside) and `inner` into `fused`.

            for y in range(4):              fuse(y, x, t)
              for x in range(8):       ->   for t in range(32):
                f[y, x] = ...                 f[t // 8, t % 8] = ...
        """
        args = (outer, inner, fused)
        o = self._existing("fuse", args, outer)
        i = self._existing("fuse", args, inner)
        stage = self._stage()
        k = stage.dims.index(o)
        if k + 1 >= len(stage.dims) or stage.dims[k + 1] is not i:
            raise self._error("fuse", args, f"'{o.name}' must be the loop immediately "
                                            f"outside '{i.name}' to fuse them")
        name = self._fresh("fuse", args, fused, consumed=(o.name, i.name))
        saved = list(stage.dims), list(stage.transforms)
        stage.dims[k:k + 2] = [Dim(name, ForKind.SERIAL, o.pure and i.pure)]
        stage.transforms.append(Fuse(o.name, i.name, name))
        problem = self._reduction_order_problem(stage.dims)
        if problem:  # (the fused loop is serial: a warp reduction it ends may not allow it)
            stage.dims[:], stage.transforms[:] = saved
            raise self._error("fuse", args, problem)
        return self

    @as_written
    def reorder(self: S, *vs: object) -> S:
        """The named loops take these positions, outermost first; others keep theirs.

            for y:                          reorder(x, y)
              for x:                   ->   for x:
                ...                           for y: ...

        On an update, swapping two reduction loops (or running one in parallel or
        vectorized) is refused unless halo shows the result can't change; the error
        names the ways out (rfactor, atomic(), allow_race_conditions()).
        """
        dims = [self._existing("reorder", vs, v) for v in vs]
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            dup = next(nm for nm in names if names.count(nm) > 1)
            raise self._error("reorder", vs, f"loop '{dup}' is listed twice")
        stage = self._stage()
        slots = sorted(stage.dims.index(d) for d in dims)
        new = list(stage.dims)
        for slot, d in zip(slots, dims, strict=True):
            new[slot] = d
        problem = self._reduction_order_problem(new)
        if problem:
            raise self._error("reorder", vs, problem)
        stage.dims[:] = new
        stage.transforms.append(Reorder(tuple(names)))
        return self

    @as_written
    def tile(self: S, y: object, x: object, yo: object, xo: object, yi: object, xi: object,
             ty: int, tx: int, tail: str = "auto") -> S:
        """Two splits and a reorder: the nest becomes yo, xo, yi, xi.

            for y:                          tile(y, x, yo, xo, yi, xi, 2, 4)
              for x:                   ->   for yo: for xo: for yi in range(2):
                ...                                           for xi in range(4): ...
        """
        stage = self._stage()
        saved = list(stage.dims), list(stage.transforms)
        try:
            self.split(y, yo, yi, ty, tail)
            self.split(x, xo, xi, tx, tail)
            return self.reorder(yo, xo, yi, xi)
        except ScheduleError:  # a refused tile leaves the schedule as it was
            stage.dims[:], stage.transforms[:] = saved
            raise

    def _set_kind(self: S, call: str, v: object, n: int | None, kind: ForKind, suffix: str,
                  outer: bool = False) -> S:
        """Give loop `v` (with `n`: the inner loop of a split by n, or with `outer` the
        outer one) the loop kind `kind`. A refused call leaves the schedule as it was."""
        args = (v,) if n is None else (v, n)
        stage = self._stage()
        saved = list(stage.dims), list(stage.transforms)
        if n is not None:
            inner = self._fresh_suffix(loop_name(v), suffix)
            self._split(call, args, v, v, inner, n, "auto")
            v = v if outer else inner
        dim = self._existing(call, args, v)
        previous, dim.kind = dim.kind, kind
        problem = self._reduction_order_problem(stage.dims)
        if problem:
            dim.kind = previous
            stage.dims[:], stage.transforms[:] = saved
            raise self._error(call, args, problem)
        return self

    @as_written
    def vectorize(self: S, v: object, n: int | None = None) -> S:
        """SIMD over loop `v` (constant extent). With `n`: split `v` by n, vectorize the
        inner loop; `v` then names the outer loop (as in Halide)."""
        return self._set_kind("vectorize", v, n, ForKind.VECTORIZED, "vec")

    @as_written
    def unroll(self: S, v: object, n: int | None = None) -> S:
        """Fully unroll loop `v` (constant extent). With `n`: split by n, unroll the inner."""
        return self._set_kind("unroll", v, n, ForKind.UNROLLED, "unroll")

    @as_written
    def parallel(self: S, v: object, task_size: int | None = None) -> S:
        """Run the iterations of `v` on the thread pool. With `task_size`: split by it and
        run the outer loop in parallel, each task doing `task_size` iterations."""
        return self._set_kind("parallel", v, task_size, ForKind.PARALLEL, "task", outer=True)

    @as_written
    def serial(self: S, v: object) -> S:
        """A plain loop (the default)."""
        return self._set_kind("serial", v, None, ForKind.SERIAL, "")
