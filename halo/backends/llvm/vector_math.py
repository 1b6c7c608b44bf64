"""Vector math from glibc's libmvec: exp, log, sin, cos, tanh and pow of whole vectors.

LLVM lowers a vector `llvm.exp` to one scalar libm call per lane. glibc's libmvec has
variants that compute a whole register at once, named by the vector-function ABI:
`_ZGV{isa}N{lanes}{v per argument}_{name}` with isa `b` (SSE, 16-byte registers), `d`
(AVX2, 32 bytes) or `e` (AVX-512, 64 bytes), and `f` after the name for float32. They
are within a few ulp of the exact result (tests/backends/llvm/test_vectors.py checks 4),
inside the reference's float tolerance but not bit-identical to scalar libm.

A vector of another width is cut into pieces of the widest register the host has that
divides it (16 float32 lanes on AVX-512: one call; 32 lanes: two), whose results are
put back together. Vectors no width divides, float16, and hosts without libmvec keep the
per-lane calls.
"""
from __future__ import annotations

import ctypes.util
from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir

from halo.backends.llvm import vectors
from halo.ir.types import Type
from halo.target import host_cpu

# halo function -> its number of arguments; libmvec has each for float32 and float64
_FUNCTIONS = {"exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "pow": 2}
# vector-function ABI isa letter by register width in bytes, widest first
_ISAS = ((64, "e"), (32, "d"), (16, "b"))
_LIBMVEC_FALLBACK = "libmvec.so.1"
_PREFIX = "_ZGV"


def vector_call(b: ir.IRBuilder, name: str, t: Type, args: list[ir.Value]) -> ir.Value | None:
    """`name(*args)` for float vectors through libmvec, or None where it has no variant
    for `t` or can't be used on this host."""
    if name not in _FUNCTIONS or not t.is_float or t.bits not in (32, 64) or not _available():
        return None
    for register_bytes, isa in _ISAS:
        width = register_bytes * 8 // t.bits
        if register_bytes > host_cpu().vector_bytes or t.lanes % width:
            continue
        pieces = t.lanes // width
        if pieces & (pieces - 1):  # put back together pairwise: a power of two
            continue
        symbol = _symbol(isa, width, name, t.bits)
        if not _has(symbol):  # e.g. tanh, new in glibc 2.35
            continue
        piece_type = ir.VectorType(args[0].type.element, width)
        function = b.module.globals.get(symbol) or ir.Function(
            b.module, ir.FunctionType(piece_type, [piece_type] * len(args)), symbol)
        results = [b.call(function, [vectors.lanes_of(b, arg, k * width, width) for arg in args])
                   for k in range(pieces)]
        return vectors.concatenate(b, results)
    return None


def link_for(llvm_ir: str) -> None:
    """Make libmvec's symbols visible before loading machine code (from the on-disk
    cache, in a process that hasn't compiled a call to them) whose IR calls them:
    unresolved, the calls would jump to address 0."""
    if f"@{_PREFIX}" in llvm_ir:
        _available()


def _symbol(isa: str, lanes: int, name: str, bits: int) -> str:
    return f"{_PREFIX}{isa}N{lanes}{'v' * _FUNCTIONS[name]}_{name}{'f' if bits == 32 else ''}"


@cache
def _has(symbol: str) -> bool:
    return llvm.address_of_symbol(symbol) is not None


@cache
def _available() -> bool:
    """Whether libmvec loads and its symbols are visible to the JIT (x86-64 glibc)."""
    for path in (ctypes.util.find_library("mvec"), _LIBMVEC_FALLBACK):
        if not path:
            continue
        try:
            llvm.load_library_permanently(path)
        except RuntimeError:
            continue
        return _has(_symbol("b", 4, "exp", 32))
    return False
