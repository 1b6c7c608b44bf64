"""Vector math from glibc's libmvec: `exp` of 8 float32 lanes in one call.

LLVM lowers a vector `llvm.exp` to one scalar libm call per lane. glibc's libmvec has
AVX2 variants that compute 8 lanes at once (`_ZGVdN8v_expf`, glibc's vector-function ABI
name), within a few ulp of the exact result (2 at most in tests/backends/llvm/
test_vector_math.py), inside the reference's float tolerance, but not bit-identical to
scalar `expf`. Used where the host has AVX2 and libmvec loads; elsewhere the per-lane
calls stay (benchmarks/: softmax).
"""
from __future__ import annotations

import ctypes.util
from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir

from halo.ir.types import Type

# (halo function, lanes) -> libmvec symbol; all need AVX2.
_VARIANTS = {("exp", 8): "_ZGVdN8v_expf"}
_LIBMVEC_FALLBACK = "libmvec.so.1"


def vector_call(b: ir.IRBuilder, name: str, t: Type, x: ir.Value) -> ir.Value | None:
    """`name(x)` for a float32 vector `x` through libmvec, or None where it has no
    variant for `t` or can't be used on this host."""
    symbol = _VARIANTS.get((name, t.lanes))
    if symbol is None or not (t.is_float and t.bits == 32) or not _available():
        return None
    function = b.module.globals.get(symbol)
    if function is None:
        function = ir.Function(b.module, ir.FunctionType(x.type, [x.type]), symbol)
    return b.call(function, [x])


def link_for(llvm_ir: str) -> None:
    """Make libmvec's symbols visible before loading machine code (from the on-disk
    cache, in a process that hasn't compiled a call to them) whose IR calls them:
    unresolved, the calls would jump to address 0."""
    if any(f"@{symbol}(" in llvm_ir for symbol in _VARIANTS.values()):
        _available()


@cache
def _available() -> bool:
    """Whether the host has AVX2 and libmvec's symbols are visible to the JIT."""
    features = llvm.get_host_cpu_features()
    if not features.get("avx2", False):
        return False
    for path in (ctypes.util.find_library("mvec"), _LIBMVEC_FALLBACK):
        if not path:
            continue
        try:
            llvm.load_library_permanently(path)
        except RuntimeError:
            continue
        return llvm.address_of_symbol(_VARIANTS["exp", 8]) is not None
    return False
