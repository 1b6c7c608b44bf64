"""Tensor intrinsic calls: the interface an intrinsic's emitter gets from the CUDA backend,
the counterpart of the LLVM backend's `LLVMContext`.

`tensorize` proved that a loop nest computes what an intrinsic's spec computes and left a
`TensorCall` in its place; the CUDA backend calls the intrinsic's emitter
(`halo.Intrinsic(emit=...)`, or its `init`/`update`) with a `CudaContext`, and the emitter
writes CUDA C lines:

    def emit(ctx):                                  # ctx.backend == "cuda"
        out, a = ctx.operand("spec"), ctx.operand("a")  # by the spec's buffer names
        ctx.include("mma.h")                        # headers the code needs
        acc = ctx.fresh("acc")                      # a C name unique in the kernel
        ctx.line(f"float {acc} = {ctx.address(a, 0, 0)}[0];")   # a[0, 0] of the spec
        ctx.line(f"{ctx.address(out, 1, 2)}[0] = {acc};")       # out[1, 2] of the spec

Each operand is a view of a pipeline buffer in the spec's coordinates: `address(op, c0,
c1, ...)` is a C pointer expression to the element the spec calls `op[c0, c1, ...]` (ints
or C expressions), `op.pointer` the one at coordinates zero; its strides (in elements, the
last dimension's always 1) are `op.strides` (C expressions) and `op.constant_strides`
(Python ints where lowering knows them, else None); `op.scope` is the memory it lives in
("global", "shared", "local", or "warp"); `op.alignment` the bytes its pointer is proven
a multiple of (the element's size where nothing more is known: test the pointer at run
time where it matters). A warp array (`lower/block_registers.py`) is a buffer only
warp-scoped calls access, spread over the warp's lanes: each lane declares `op.size / 32`
elements of it as `op.buffer`, and the intrinsics that access it agree on which lane
holds which element; `op.constant_offset` is the element, in the warp's
row-major array of `op.size`, at the spec's coordinates zero. The lines of one call are
a C block of their own, so declarations don't leak. A warp-scoped intrinsic's code runs on
the 32 lanes of a warp together (`ctx.lane` is the lane's index), with a `__syncwarp()`
before and after it; a thread-scoped one on one thread. The emitter must read and write
only the elements the spec reads and writes, and do exactly what the spec says: tensorize
trusts it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from halo.errors import HaloError, ScheduleError
from halo.ir.types import Type


@dataclass(frozen=True)
class CudaOperand:
    """One buffer of the spec: `name` in the spec, `buffer` its C array, its element
    `type` and `c_type`, the memory `scope` it lives in, a pointer to its element at the
    spec's coordinates zero, and its strides along the spec's dimensions, outermost
    first (for a warp array, also where the call's tile is in it, and its size)."""
    name: str
    buffer: str
    type: Type
    c_type: str
    scope: str
    pointer: str
    strides: tuple[str, ...]
    constant_strides: tuple[int | None, ...]
    constant_offset: int | None = None  # warp arrays: see the module
    size: int | None = None  # warp arrays: elements in the warp's whole array
    alignment: int = 1  # bytes `pointer` is proven a multiple of (a power of two, <= 128)

    @property
    def rank(self) -> int:
        return len(self.strides)


class CudaContext:
    """What an intrinsic's emitter writes its CUDA C with."""

    backend = "cuda"

    def __init__(self, intrinsic: str, part: str, operands: Sequence[CudaOperand], arch: str,
                 lane: str, fresh: Callable[[str], str]):
        self.intrinsic = intrinsic
        self.part = part  # "init", "update" or "emit": the spec's definition to compute
        self.arch = arch  # "sm_90"
        self.lane = lane  # the lane's index in its warp, as a C expression
        self.lines: list[str] = []
        self.includes: list[str] = []
        self._fresh = fresh
        self._operands = {op.name: op for op in operands}

    def operand(self, name: str) -> CudaOperand:
        """The operand the spec calls `name`."""
        if name not in self._operands:
            raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter asked for operand "
                                f"{name!r}; its spec's buffers are {', '.join(self._operands)}")
        return self._operands[name]

    def address(self, op: CudaOperand, *coords: int | str) -> str:
        """A C pointer to the element the spec calls `op[coords]` (ints or C expressions;
        the last dimensions may be left out: they are 0)."""
        if len(coords) > op.rank:
            raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter addressed "
                                f"{op.name} with {len(coords)} coordinates; it has {op.rank}")
        terms = []
        for c, stride, known in zip(coords, op.strides, op.constant_strides, strict=False):
            if isinstance(c, int) and known is not None:
                if c * known:
                    terms.append(str(c * known))
            elif c != 0:
                terms.append(f"({c}) * ({stride})")
        return f"({op.pointer} + {' + '.join(terms)})" if terms else op.pointer

    def line(self, text: str) -> None:
        """Append a line of CUDA C (a statement or declaration) to the call's code."""
        self.lines.append(text)

    def include(self, header: str) -> None:
        """`#include <header>` in the module (once)."""
        if header not in self.includes:
            self.includes.append(header)

    def fresh(self, base: str) -> str:
        """A C identifier no other name of the kernel uses."""
        return self._fresh(base)


def emit_tensor_call(emitter: Callable, ctx: CudaContext) -> None:
    """Run an intrinsic's emitter for its part with `ctx`, which collects its lines."""
    try:
        emitter(ctx)
    except HaloError:
        raise
    except Exception as error:
        raise ScheduleError(f"intrinsic {ctx.intrinsic}: its emitter for the {ctx.part} part "
                            f"failed on the CUDA backend: {error!r}") from error
