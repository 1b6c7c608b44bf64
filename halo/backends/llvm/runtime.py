"""Calling JIT-compiled halo functions from Python: ctypes signatures and argument checks.

A buffer argument is an aligned NumPy array of exactly the argument's dtype, passed by
its data pointer, the address of its first element (no copy). Contiguity is not required:
the generated code addresses elements through whatever strides its scalar arguments give.
Buffer arguments must not overlap, since the generated code marks them `noalias`, and a
buffer the function stores into must be writeable. Scalars map to ctypes as

    bool -> c_bool, int8..int64 -> c_int8..c_int64, uint8..uint64 -> c_uint8..c_uint64,
    float32 -> c_float, float64 -> c_double, float16 -> c_uint16 (its IEEE bits)

and are checked first, as everywhere halo takes a scalar (`halo.ir.values.checked_scalar`):
bools must be bools, integers integral and in range, floats real numbers that fit.
Wrong arguments raise `InputError`.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np

from halo.backends.arguments import Argument
from halo.backends.llvm.jit import NativeModule, host_assembly
from halo.errors import InputError
from halo.ir.types import (
    Type,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from halo.ir.values import checked_scalar

_SCALAR_CTYPES: dict[Type, type] = {
    bool_: ctypes.c_bool,
    int8: ctypes.c_int8, int16: ctypes.c_int16, int32: ctypes.c_int32, int64: ctypes.c_int64,
    uint8: ctypes.c_uint8, uint16: ctypes.c_uint16, uint32: ctypes.c_uint32,
    uint64: ctypes.c_uint64,
    float16: ctypes.c_uint16, float32: ctypes.c_float, float64: ctypes.c_double,
}


class CompiledFunction:
    """A halo function compiled to machine code for this CPU. Call it with one value per
    argument, in `args` order: NumPy arrays for buffers, Python or NumPy scalars for
    scalars. It returns nothing; results are what it stores into its buffers."""

    def __init__(self, name: str, args: Sequence[Argument], native: NativeModule,
                 stored_buffers: frozenset[str]):
        self.name = name
        self.args = tuple(args)
        self.llvm_ir = native.optimized_ir
        self._native = native  # owns the machine code that `_function` points into
        prototype = ctypes.CFUNCTYPE(
            None, *(ctypes.c_void_p if a.kind == "buffer" else _SCALAR_CTYPES[a.type]
                    for a in self.args))
        self._function = prototype(native.function_address(name))
        self._converters = [
            _buffer_converter(a, a.name in stored_buffers) if a.kind == "buffer"
            else _scalar_converter(a) for a in self.args]
        self._buffer_positions = [i for i, a in enumerate(self.args) if a.kind == "buffer"]
        self._assembly: str | None = None

    def source(self) -> str:
        """The optimized LLVM IR of the module."""
        return self.llvm_ir

    def assembly(self) -> str:
        """The host assembly of the optimized module (generated on first request)."""
        if self._assembly is None:
            self._assembly = host_assembly(self.llvm_ir)
        return self._assembly

    def __call__(self, *values: object) -> None:
        if len(values) != len(self.args):
            raise InputError(f"{self.name} takes {len(self.args)} arguments "
                             f"({', '.join(a.name for a in self.args)}), got {len(values)}")
        raw = [convert(value) for convert, value in zip(self._converters, values, strict=True)]
        self._check_disjoint(values)
        self._function(*raw)

    def __repr__(self) -> str:
        return f"<CompiledFunction {self.name}({', '.join(a.name for a in self.args)})>"

    def _check_disjoint(self, arrays: Sequence[np.ndarray]) -> None:
        """Raise if the memory spans of two buffer arguments overlap, which `noalias`
        promised they don't (conservative: interleaved views count as overlapping)."""
        positions = self._buffer_positions
        for k, first in enumerate(positions):
            for second in positions[k + 1:]:
                if np.may_share_memory(arrays[first], arrays[second]):
                    raise InputError(f"{self.name}: buffers {self.args[first].name!r} and "
                                     f"{self.args[second].name!r} overlap in memory; pass "
                                     "distinct arrays (copy one of them)")


def _buffer_converter(arg: Argument, stored: bool) -> Callable[[object], int]:
    dtype = arg.type.numpy

    def convert(value: object) -> int:
        if not isinstance(value, np.ndarray) or value.dtype != dtype:
            raise InputError(f"argument {arg.name!r} must be a NumPy array of {dtype}, got "
                             f"{_describe(value)}")
        if not value.flags.aligned:
            raise InputError(f"argument {arg.name!r} must be an aligned array (each "
                             f"element's address a multiple of {value.dtype.alignment}); "
                             "pass an aligned copy, np.array(a), which allocates anew")
        if stored and not value.flags.writeable:
            raise InputError(f"argument {arg.name!r} is written to, but its array is "
                             "read-only")
        return value.ctypes.data

    return convert


def _scalar_converter(arg: Argument) -> Callable[[object], object]:
    t, what = arg.type, f"argument {arg.name!r}"
    if t.is_float and t.bits == 16:
        def convert(value: object) -> int:
            return int(np.float16(checked_scalar(t, value, what)).view(np.uint16))
    else:
        def convert(value: object) -> object:
            return checked_scalar(t, value, what)
    return convert


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype} with shape {value.shape}"
    return f"{value!r} ({type(value).__name__})"
