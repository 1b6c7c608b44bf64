"""GPU loop bindings and tensorize, as schedule records: `gpu_blocks`, `gpu_threads`,
`gpu_tile`, `vthread`, `tensorize`.

They are validated when called (the loops exist, are listed outermost first, adjacent,
pure) and again when the pipeline is lowered (a later reorder may have broken the
nesting). Only a GPU target lowers bound loops (see `lower.realization`);
`lower.tensorize` proves and replaces tensorized loops.

Nesting rules, outermost first: at most 3 block loops, adjacent; then vthread loops;
then at most 3 thread loops, adjacent. Serial loops may sit between the groups.
"""
from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from halo.ir.nodes import ForKind
from halo.schedule.as_written import as_written
from halo.schedule.records import Dim, StageSchedule, Tensorize

G = TypeVar("G", bound="GpuLoops")  # a verb returns the stage it was called on


@runtime_checkable
class TensorIntrinsic(Protocol):
    """What `tensorize` needs of a tensor intrinsic (`halo.Intrinsic`): its name and the
    loop nest it replaces, outermost first."""

    name: str
    loop_names: tuple[str, ...]

    @property
    def loop_count(self) -> int: ...

    def loops_for(self, update: bool) -> tuple[str, ...]: ...

_BOUND = {ForKind.GPU_BLOCK: "GPU block", ForKind.GPU_THREAD: "GPU thread",
          ForKind.VTHREAD: "vthread"}
GPU_BINDINGS = tuple(_BOUND)  # the loop kinds that bind a loop to the GPU


def nesting_problem(dims: list[Dim], reductions_bindable: bool = False,
                    point_loops: frozenset[str] | None = None) -> str | None:
    """What is wrong with the GPU bindings of these loops (outermost first), or None.
    Reduction loops may be bound where `reductions_bindable` (an update made `atomic()`,
    or one that allows races); an associative update (`point_loops` not None: the loops
    that pick the point it writes, `rfactor.warp_point_loops`) may bind one other
    reduction loop to threads as a warp reduction (see `warp_reduction_problem`)."""
    def at(kind):
        return [i for i, d in enumerate(dims) if d.kind is kind]

    def names(ix):
        return ", ".join(dims[i].name for i in ix)

    blocks, threads, vthreads = at(ForKind.GPU_BLOCK), at(ForKind.GPU_THREAD), \
        at(ForKind.VTHREAD)
    for ix, what in ((blocks, "GPU blocks"), (threads, "GPU threads")):
        if len(ix) > 3:
            return f"at most 3 loops can be bound to {what}, but {len(ix)} are ({names(ix)})"
        if ix and ix != list(range(ix[0], ix[-1] + 1)):
            between = [i for i in range(ix[0], ix[-1]) if i not in ix]
            return (f"the loops bound to {what} ({names(ix)}) must be adjacent, but "
                    f"{names(between)} {'sits' if len(between) == 1 else 'sit'} between them")
    if blocks and threads and threads[0] < blocks[-1]:
        return (f"thread loop {dims[threads[0]].name} is outside block loop "
                f"{dims[blocks[-1]].name}; block loops must enclose thread loops")
    for v in vthreads:
        if blocks and v < blocks[-1]:
            return (f"vthread loop {dims[v].name} is outside block loop "
                    f"{dims[blocks[-1]].name}; vthreads go inside the block loops")
        if threads and v > threads[0]:
            return (f"vthread loop {dims[v].name} is inside thread loop "
                    f"{dims[threads[0]].name}; vthreads go outside the thread loops")
    bound = [d for d in dims if d.kind in GPU_BINDINGS and not d.pure]
    if bound and not reductions_bindable:
        return warp_reduction_problem(dims, bound, point_loops)
    return None


def warp_reduction_problem(dims: list[Dim], bound: list[Dim],
                           point_loops: frozenset[str] | None) -> str | None:
    """Why the reduction loops `bound` (bound to the GPU, of an update neither atomic nor
    allowed races) can't be a warp reduction, or None. A warp reduction binds one
    reduction loop of an associative update to threads, as the innermost thread loop
    (lanes of one warp), with only reduction loops inside it: each thread combines its
    part into one value, and the threads of the loop combine theirs by warp shuffles
    (`lower.warp_reductions`, which also wants a power-of-two extent up to 32)."""
    d = bound[0]
    if point_loops is None:
        return (f"{d.name} is a reduction loop bound to {_BOUND[d.kind]}s; only pure "
                "loops can be bound, unless the update is an associative reduction "
                "(f = f + e, f * e, min, max, &, |, ^: bound to threads, it is a warp "
                "reduction). Use rfactor to make the reduction parallel, or call "
                "atomic() on the update first")
    if d.kind is not ForKind.GPU_THREAD or len(bound) > 1:
        names = ", ".join(f"{x.name} ({_BOUND[x.kind]})" for x in bound)
        return (f"a warp reduction binds one reduction loop to GPU threads, but {names} "
                f"{'is' if len(bound) == 1 else 'are'} bound; bind the others' work to "
                "blocks through rfactor, or make the update atomic()")
    if d.name in point_loops:
        return (f"reduction loop {d.name} picks the point the update writes (its left side "
                "uses it), so threads that differ in it update different points: that is "
                "no reduction across threads. Make the update atomic() first")
    k = dims.index(d)
    threads = [i for i, x in enumerate(dims) if x.kind is ForKind.GPU_THREAD]
    if k != threads[-1]:
        return (f"reduction loop {d.name} is bound to GPU threads (a warp reduction), so "
                f"it must be the innermost thread loop (lanes of one warp), but "
                f"{dims[threads[-1]].name} is inside it")
    inside = [x.name for x in dims[k + 1:] if x.pure or x.name in point_loops]
    if inside:
        return (f"reduction loop {d.name} is bound to GPU threads (a warp reduction), so "
                f"each thread combines one point's values and the loops inside it must "
                f"be reduction loops that the left side doesn't use, but "
                f"{', '.join(inside)} {'picks' if len(inside) == 1 else 'pick'} the point; "
                f"move {'it' if len(inside) == 1 else 'them'} outside {d.name}")
    return None


class GpuLoops:
    """Mixin for Schedulable: GPU bindings and tensorize of one stage."""

    def _warp_point_loops(self) -> frozenset[str] | None:
        """`rfactor.warp_point_loops` of this stage (None: no warp reduction; pure stages
        have no reduction loops)."""
        return None

    def _bind(self: G, call: str, vs: tuple, kind: ForKind, most: int) -> G:
        stage: StageSchedule = self._stage()
        if not 1 <= len(vs) <= most:
            raise self._error(call, vs, f"give 1 to {most} loops, outermost first")
        dims = [self._existing(call, vs, v) for v in vs]
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            raise self._error(call, vs, "a loop is listed twice")
        pos = [stage.dims.index(d) for d in dims]
        if pos != sorted(pos):
            raise self._error(call, vs, "list the loops outermost first, in the order the "
                                        "loop nest has them")
        for d in dims:
            if d.kind not in (ForKind.SERIAL, kind):
                raise self._error(call, vs, f"loop {d.name} is already {d.kind.value}; a loop "
                                            "can have one kind")
        old = [d.kind for d in dims]
        for d in dims:
            d.kind = kind
        problem = nesting_problem(stage.dims, stage.atomic or stage.allow_races,
                                  self._warp_point_loops())
        if problem is not None:
            for d, k in zip(dims, old, strict=True):
                d.kind = k
            raise self._error(call, vs, problem)
        return self

    @as_written
    def gpu_blocks(self: G, *vs: object) -> G:
        """Bind loops (outermost first, up to 3, adjacent) to the CUDA grid.

            for by: for bx: ...        gpu_blocks(by, bx)
                                  ->   for by in gpu_block(...): for bx in gpu_block(...): ...
        """
        return self._bind("gpu_blocks", vs, ForKind.GPU_BLOCK, 3)

    @as_written
    def gpu_threads(self: G, *vs: object) -> G:
        """Bind loops (outermost first, up to 3, adjacent, inside any block loops) to the
        threads of a CUDA block.

            for ty: for tx: ...        gpu_threads(ty, tx)
                                  ->   for ty in gpu_thread(...): for tx in gpu_thread(...): ...
        """
        return self._bind("gpu_threads", vs, ForKind.GPU_THREAD, 3)

    @as_written
    def vthread(self: G, v: object) -> G:
        """Virtual threads: `v` is lowered to interleaved copies of its body inside one
        thread. It must sit inside the block loops and outside the thread loops.

            for v: for tx in gpu_thread: ...     vthread(v)
                                            ->   for v in vthread(...): for tx in gpu_thread: ...
        """
        return self._bind("vthread", (v,), ForKind.VTHREAD, 1)

    @as_written
    def gpu_tile(self: G, *args: object, tail: str = "auto") -> G:
        """Split and bind in one call: `gpu_tile(y, x, by, bx, ty, tx, sy, sx)` tiles y, x
        by sy x sx and binds by, bx to blocks and ty, tx to threads; `gpu_tile(x, bx, tx,
        size)` does the same in one dimension.

            for y: for x: ...          gpu_tile(y, x, by, bx, ty, tx, 8, 32)
                                  ->   for by, bx in gpu_block: for ty, tx in gpu_thread: ...
        """
        if len(args) == 8:
            y, x, by, bx, ty, tx, sy, sx = args
            self.tile(y, x, by, bx, ty, tx, sy, sx, tail)
            return self.gpu_blocks(by, bx).gpu_threads(ty, tx)
        if len(args) == 4:
            x, bx, tx, size = args
            self.split(x, bx, tx, size, tail)
            return self.gpu_blocks(bx).gpu_threads(tx)
        raise self._error("gpu_tile", args, "give (y, x, by, bx, ty, tx, sy, sx) or "
                                            "(x, bx, tx, size)")

    @as_written
    def tensorize(self: G, v: object, intrinsic: TensorIntrinsic) -> G:
        """Replace the loop nest from `v` inward by the tensor intrinsic `intrinsic` (a
        `halo.Intrinsic`); those loops must match its spec.

            for yi in range(16): for xi in range(16): ...     tensorize(yi, mma16)
                                                         ->   mma16(...)
        """
        args = (v, getattr(intrinsic, "name", intrinsic))
        if not isinstance(intrinsic, TensorIntrinsic):
            raise self._error("tensorize", args, "the second argument must be a "
                                                 "halo.Intrinsic")
        dim = self._existing("tensorize", args, v)
        stage: StageSchedule = self._stage()
        if stage.tensorize is not None:
            raise self._error("tensorize", args, f"this stage is already tensorized from "
                                                 f"loop {stage.tensorize.var}")
        inner = stage.dims[stage.dims.index(dim):]
        loops = intrinsic.loops_for(self._is_update)
        if len(inner) != len(loops):
            what = intrinsic.name if loops == intrinsic.loop_names else \
                f"{intrinsic.name}'s initialization"
            raise self._error(
                "tensorize", args,
                f"{what} computes a {len(loops)}-deep loop nest "
                f"({', '.join(loops)}), but the loops from {dim.name} inward "
                f"are {len(inner)} ({', '.join(d.name for d in inner)})")
        stage.tensorize = Tensorize(dim.name, intrinsic.name, intrinsic)
        return self
