"""Tensor intrinsic calls: the interface an intrinsic's emitter gets from the LLVM backend.

`tensorize` proved that a loop nest computes what an intrinsic's spec computes and left a
`TensorCall` in its place; here the intrinsic's emitter (`halo.Intrinsic(emit=...)`, or
its `init`/`update`) writes the code, called with an `LLVMContext`:

    def emit(ctx):                          # ctx.backend == "llvm"
        out, a = ctx.operand("spec"), ctx.operand("a")   # by the spec's buffer names
        acc = ctx.load(out, 0, lanes=16)    # out[0:16] of the spec's view: <16 x i32>
        ...                                 # ctx.builder: llvmlite's ir.IRBuilder
        ctx.store(out, ctx.call("llvm.x86.avx512.vpdpbusd.512", acc.type, [acc, x, y]), 0)

Each operand is a view of a pipeline buffer in the spec's coordinates: `address(op, c0,
c1, ...)` is the element the spec calls `op[c0, c1, ...]`, its strides (in elements, the
last dimension's always 1) are `op.strides` (i64 values) and `op.constant_strides`
(Python ints where lowering knows them, else None). The emitter must read and write only
the elements the spec reads and writes, and do exactly what the spec says: tensorize
trusts it. Emitters for another backend (CUDA C) get that backend's context, whose
`backend` says which.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import ir

from halo.backends.llvm.llvm_types import INDEX, memory_type
from halo.errors import HaloError, ScheduleError
from halo.ir import nodes as n
from halo.ir.types import Type


@dataclass(frozen=True)
class TensorOperand:
    """One buffer of the spec: `name` in the spec, `buffer` in the pipeline, its element
    `type`, the address of its element at the spec's coordinates zero, and its strides
    along the spec's dimensions, outermost first."""
    name: str
    buffer: str
    type: Type
    pointer: ir.Value
    strides: tuple[ir.Value, ...]
    constant_strides: tuple[int | None, ...]

    @property
    def rank(self) -> int:
        return len(self.strides)


class LLVMContext:
    """What an intrinsic's emitter builds its code with on the LLVM backend."""

    backend = "llvm"

    def __init__(self, builder: ir.IRBuilder, intrinsic: str, part: str,
                 operands: Sequence[TensorOperand], features: frozenset[str],
                 strict_float: bool = False):
        self.builder = builder
        self.intrinsic = intrinsic
        self.part = part  # "init", "update" or "emit": the spec's definition to compute
        self.features = features  # the host's CPU features, as `halo.target.host_cpu()`
        # Target(strict_float=True): round every float operation (no fused multiply-add)
        self.strict_float = strict_float
        self._operands = {op.name: op for op in operands}

    @property
    def module(self) -> ir.Module:
        return self.builder.module

    def operand(self, name: str) -> TensorOperand:
        """The operand the spec calls `name`."""
        if name not in self._operands:
            raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter asked for operand "
                                f"{name!r}; its spec's buffers are {', '.join(self._operands)}")
        return self._operands[name]

    def element_type(self, op: TensorOperand, lanes: int = 1) -> ir.Type:
        """The LLVM type of `lanes` consecutive elements of `op` in memory."""
        return memory_type(op.type.with_lanes(lanes))

    def address(self, op: TensorOperand, *coords: int | ir.Value) -> ir.Value:
        """The address of the element the spec calls `op[coords]` (ints or i64 values;
        the last dimensions may be left out: they are 0). `builder.load(address, typ=T)`
        loads any type from it; store with `store`, which casts the pointer."""
        if len(coords) > op.rank:
            raise ScheduleError(f"intrinsic {self.intrinsic}: its emitter addressed "
                                f"{op.name} with {len(coords)} coordinates; it has {op.rank}")
        b = self.builder
        offset: ir.Value | int = 0
        for c, stride, known in zip(coords, op.strides, op.constant_strides, strict=False):
            if isinstance(c, int) and known is not None:
                term: ir.Value | int = c * known
            else:
                value = ir.Constant(INDEX, c) if isinstance(c, int) else c
                term = b.mul(value, stride)
            if isinstance(offset, int) and isinstance(term, int):
                offset += term
            else:
                offset = b.add(_value(offset), _value(term))
        return b.gep(op.pointer, [_value(offset)], source_etype=self.element_type(op))

    def load(self, op: TensorOperand, *coords: int | ir.Value, lanes: int = 1) -> ir.Value:
        """`lanes` consecutive elements along the last dimension, from `op[coords]`: a
        scalar, or a vector of `lanes`."""
        return self.builder.load(self.address(op, *coords), typ=self.element_type(op, lanes),
                                 align=op.type.bytes)

    def store(self, op: TensorOperand, value: ir.Value, *coords: int | ir.Value) -> None:
        """Store `value` (a scalar or a vector along the last dimension) at `op[coords]`."""
        address = self.address(op, *coords)
        if not address.type.is_opaque:
            address = self.builder.bitcast(address, value.type.as_pointer())
        self.builder.store(value, address, align=op.type.bytes)

    def call(self, name: str, result: ir.Type, args: Sequence[ir.Value]) -> ir.Value:
        """Call the function or LLVM intrinsic `name` (`"llvm.x86.avx512.vpdpbusd.512"`),
        declared in the module on first use with the arguments' types."""
        function = self.module.globals.get(name)
        if function is None:
            function = ir.Function(self.module,
                                   ir.FunctionType(result, [a.type for a in args]), name)
        return self.builder.call(function, list(args))

    def inline_asm(self, text: str, constraints: str, result: ir.Type,
                   args: Sequence[ir.Value], side_effect: bool = False) -> ir.Value:
        """Inline assembly (LLVM's syntax and constraints, AT&T on x86)."""
        signature = ir.FunctionType(result, [a.type for a in args])
        return self.builder.asm(signature, text, constraints, list(args), side_effect)


def _value(x: ir.Value | int) -> ir.Value:
    return ir.Constant(INDEX, x) if isinstance(x, int) else x


def emit_tensor_call(builder: ir.IRBuilder, call: n.TensorCall,
                     operands: Sequence[TensorOperand], features: frozenset[str],
                     strict_float: bool) -> None:
    """Run the emitter of `call`'s intrinsic for its part at the builder's position."""
    ctx = LLVMContext(builder, call.name, call.part, operands, features, strict_float)
    emitter = call.intrinsic.emitter(call.part)
    try:
        emitter(ctx)
    except HaloError:
        raise
    except Exception as error:
        raise ScheduleError(f"intrinsic {call.name}: its emitter for the {call.part} part "
                            f"failed on the LLVM backend: {error!r}") from error
