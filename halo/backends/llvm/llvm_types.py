"""How halo's scalar types are represented in LLVM: in registers, in memory, and as
function parameters.

Registers and memory agree except for `bool`, which is `i1` in registers but one byte in
memory (NumPy's layout): loads truncate, stores zero-extend. `float16` is LLVM `half`.
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
    if t.lanes != 1:
        raise InternalError(f"the LLVM backend only compiles scalar types for now, got {t}")
    if t.is_bool:
        return ir.IntType(1)
    if t.is_integer:
        return ir.IntType(t.bits)
    if t.is_float and t.bits in _FLOAT_TYPES:
        return _FLOAT_TYPES[t.bits]
    raise InternalError(f"type {t} has no LLVM representation")


def memory_type(t: Type) -> ir.Type:
    """The LLVM type of one element of a halo buffer of type `t`."""
    return BYTE if t.is_bool else value_type(t)


def parameter_type(t: Type) -> ir.Type:
    """The LLVM type of a scalar parameter of type `t` in the generated signature.

    float16 travels as its 16 bits in an `i16`, since ctypes has no half type to call with;
    the function bitcasts it back to `half` on entry.
    """
    if t.is_float and t.bits == 16:
        return ir.IntType(16)
    return value_type(t)
