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

A call that is the last phase of a serial k loop may be pipelined with it
(`lower/pipeline_tensor_calls.py`; `ctx.pipelined`): the barrier that opened each
iteration (`cp.async` copies landed, the last step's reads done) is the call's
`ctx.handoff()`, and the loop's other work (the copies of a later step) its
`ctx.overlap(part)`, in `ctx.overlap_parts` parts (the work's statements, in order). An
emitter that pipelines writes them where it wants them, each once on every path through
its code: the parts in order and before the handoff, and operands of the next
iteration (`ctx.operand(name, ahead=True)`) read only after the handoff; registers that
live from one iteration to the next are declared with `ctx.carry(declaration)` (before
the loop), and `ctx.first` is the C condition of the loop's first iteration, where
nothing was loaded ahead. An emitter that calls neither gets the overlap before its code
and the handoff after it.
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


@dataclass(frozen=True)
class CudaPipeline:
    """What a call pipelined with its loop gets (see the module): the C condition of the
    loop's first iteration, the operands of its next iteration, the lines of the loop's
    other work and of the handoff, and where declarations carried across iterations go."""
    first: str
    ahead: Sequence[CudaOperand]
    overlap: list[list[str]]
    handoff: list[str]
    carried: list[str]


class CudaContext:
    """What an intrinsic's emitter writes its CUDA C with."""

    backend = "cuda"

    def __init__(self, intrinsic: str, part: str, operands: Sequence[CudaOperand], arch: str,
                 lane: str, fresh: Callable[[str], str], pipeline: CudaPipeline | None = None):
        self.intrinsic = intrinsic
        self.part = part  # "init", "update" or "emit": the spec's definition to compute
        self.arch = arch  # "sm_90"
        self.lane = lane  # the lane's index in its warp, as a C expression
        self.lines: list[str] = []
        self.includes: list[str] = []
        self._fresh = fresh
        self._operands = {op.name: op for op in operands}
        self._pipeline = pipeline
        self._ahead = {op.name: op for op in pipeline.ahead} if pipeline else {}
        self._placed: list[str | int] = []  # the overlap's parts and "handoff" written

    def operand(self, name: str, ahead: bool = False) -> CudaOperand:
        """The operand the spec calls `name`; with `ahead`, at the loop's next iteration
        (a pipelined call only)."""
        if name not in self._operands:
            raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter asked for operand "
                                f"{name!r}; its spec's buffers are {', '.join(self._operands)}")
        if ahead:
            return self._ahead[name] if self.pipelined else self._not_pipelined("operand")
        return self._operands[name]

    @property
    def pipelined(self) -> bool:
        """Whether the call is pipelined with its loop (the module)."""
        return self._pipeline is not None

    @property
    def first(self) -> str:
        """The C condition of the loop's first iteration (a pipelined call only)."""
        return self._pipeline.first if self._pipeline else self._not_pipelined("first")

    def carry(self, declaration: str) -> None:
        """Declare C variables that live across the loop's iterations (before the loop)."""
        if self._pipeline is None:
            self._not_pipelined("carry")
        self._pipeline.carried.append(declaration)

    @property
    def overlap_parts(self) -> int:
        """How many parts the loop's other work has (a pipelined call only)."""
        if self._pipeline is None:
            self._not_pipelined("overlap_parts")
        return len(self._pipeline.overlap)

    def overlap(self, part: int) -> None:
        """Write part `part` of the loop's other work here (a pipelined call only)."""
        if self._pipeline is None:
            self._not_pipelined("overlap")
        self._placed.append(part)
        self.lines.extend(self._pipeline.overlap[part])

    def handoff(self) -> None:
        """Write the handoff here: after it, the next iteration's operands may be read."""
        if self._pipeline is None:
            self._not_pipelined("handoff")
        self._placed.append("handoff")
        self.lines.extend(self._pipeline.handoff)

    def _not_pipelined(self, what: str):
        raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter asked for {what}, but "
                            "this call is not pipelined with a loop (check ctx.pipelined)")

    def body(self) -> list[str]:
        """The call's lines, with the overlap and handoff where the emitter left them out
        (before and after its code)."""
        if self._pipeline is None:
            return self.lines
        if not self._placed:
            return [*(x for part in self._pipeline.overlap for x in part), *self.lines,
                    *self._pipeline.handoff]
        if set(self._placed) != {*range(len(self._pipeline.overlap)), "handoff"}:
            raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter placed only "
                                f"{sorted(map(str, set(self._placed)))} of the overlap parts "
                                f"0-{len(self._pipeline.overlap) - 1} and the handoff of its "
                                "pipelined loop; place all of them, or none")
        return self.lines

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
