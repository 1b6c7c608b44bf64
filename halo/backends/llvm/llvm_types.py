"""How halo's types are represented in LLVM: in registers, in memory, and as function
parameters.

Registers and memory agree except for `bool`, which is `i1` in registers but one byte in
memory (NumPy's layout): loads truncate, stores zero-extend. `float16` is LLVM `half`.
A vector of `lanes` elements is `<lanes x T>` of its element's type, in registers
(`<8 x i1>` for bool) and in memory (`<8 x i8>` for bool) alike.
"""
from __future__ import annotations

from llvmlite import ir

from halo.errors import InternalError
from halo.ir.types import Type

_FLOAT_TYPES: dict[int, ir.Type] = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}

BYTE = ir.IntType(8)
INDEX = ir.IntType(64)  # addresses are computed in 64 bits
POINTER = ir.PointerType()


def value_type(t: Type) -> ir.Type:
    """The LLVM type of a halo value held in a register."""
    return _with_lanes(_element_value_type(t), t)


def memory_type(t: Type) -> ir.Type:
    """The LLVM type of `t` in memory: one element of a buffer of `t`, or for a vector
    type, its lanes as consecutive elements."""
    return _with_lanes(BYTE, t) if t.is_bool else value_type(t)


def _element_value_type(t: Type) -> ir.Type:
    if t.is_bool:
        return ir.IntType(1)
    if t.is_integer:
        return ir.IntType(t.bits)
    if t.is_float and t.bits in _FLOAT_TYPES:
        return _FLOAT_TYPES[t.bits]
    raise InternalError(f"type {t} has no LLVM representation")


def _with_lanes(element: ir.Type, t: Type) -> ir.Type:
    if t.lanes < 1:
        raise InternalError(f"type {t} has {t.lanes} lanes")
    return element if t.lanes == 1 else ir.VectorType(element, t.lanes)


def parameter_type(t: Type) -> ir.Type:
    """The LLVM type of a scalar parameter of type `t` in the generated signature.

    float16 travels as its 16 bits in an `i16`, since ctypes has no half type to call with;
    the function bitcasts it back to `half` on entry.
    """
    if t.is_float and t.bits == 16:
        return ir.IntType(16)
    return value_type(t)


def declare_intrinsic(module: ir.Module, name: str, overloaded: list[ir.Type],
                      signature: ir.FunctionType) -> ir.Function:
    """The LLVM intrinsic `name` for the `overloaded` types, which name it (`llvm.sqrt`
    for `<8 x float>` is `llvm.sqrt.v8f32`), declared in `module` on first use."""
    full_name = ".".join([name, *(_intrinsic_suffix(t) for t in overloaded)])
    existing = module.globals.get(full_name)
    return existing if existing is not None else ir.Function(module, signature, full_name)


def _intrinsic_suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_intrinsic_suffix(t.element)}"
    return t.intrinsic_name
