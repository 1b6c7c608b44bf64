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


def nesting_problem(dims: list[Dim], reductions_bindable: bool = False) -> str | None:
    """What is wrong with the GPU bindings of these loops (outermost first), or None.
    Reduction loops may be bound only where `reductions_bindable` (an update made
    `atomic()`, or one that allows races)."""
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
    for d in dims:
        if d.kind in _BOUND and not d.pure and not reductions_bindable:
            return (f"{d.name} is a reduction loop bound to {_BOUND[d.kind]}s; only pure "
                    "loops can be bound (use rfactor to make the reduction parallel, or "
                    "call atomic() on the update first)")
    return None


class GpuLoops:
    """Mixin for Schedulable: GPU bindings and tensorize of one stage."""

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
        problem = nesting_problem(stage.dims, stage.atomic or stage.allow_races)
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
