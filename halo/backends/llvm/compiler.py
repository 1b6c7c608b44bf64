"""`compile_function`: a lowered halo statement to a native function callable from Python.

The stages, one module each: `codegen` (halo IR -> LLVM IR) -> `jit` (O3 for the host
CPU, MCJIT) -> `runtime` (the ctypes wrapper that checks and passes arguments). The first
two are skipped when `object_cache` (on disk) holds the machine code already.
"""
from __future__ import annotations

from collections.abc import Sequence

from halo.backends.arguments import Argument
from halo.backends.llvm import object_cache, vector_math
from halo.backends.llvm.codegen import generate_module
from halo.backends.llvm.jit import NativeModule, host_fingerprint, jit_compile, jit_load
from halo.backends.llvm.object_cache import cache_key
from halo.backends.llvm.parallel import load_libgomp
from halo.backends.llvm.runtime import CompiledFunction
from halo.errors import InternalError
from halo.ir.nodes import Stmt, Store, TensorCall
from halo.ir.visitor import walk
from halo.target import default_num_threads


def compile_function(name: str, body: Stmt, args: Sequence[Argument],
                     num_threads: int | None = None,
                     strict_float: bool = False) -> CompiledFunction:
    """Compile `body` (lowered and flattened) into `void name(args...)` for this CPU.

    Every free variable of `body` must be a scalar argument and every buffer it loads
    from or stores to an argument or an enclosing Allocate; otherwise `InternalError`.
    Parallel loops run on `num_threads` threads (default: `default_num_threads()`).
    `strict_float` rounds every float operation separately (no fused multiply-adds).
    """
    if num_threads is None:
        num_threads = default_num_threads()
    if num_threads < 1:
        raise InternalError(f"compile_function({name!r}) asked for {num_threads} threads")
    key = cache_key((name, repr(tuple(args)), str(num_threads), str(strict_float),
                     *host_fingerprint(),
                     repr(body)))
    # A tensor intrinsic's code comes from its emitter, Python code that no key covers.
    tensor_calls = [node for node in walk(body) if isinstance(node, TensorCall)]
    native = None if tensor_calls else _load_cached(key)
    if native is None:
        module = generate_module(name, body, args, num_threads, strict_float)
        native = jit_compile(str(module))
        if native.object_code and not tensor_calls:
            object_cache.store(key, native.optimized_ir, native.object_code)
    stored = frozenset([*(node.name for node in walk(body) if isinstance(node, Store)),
                        *(call.operands[0].name for call in tensor_calls)])
    return CompiledFunction(name, args, native, stored_buffers=stored)


def _load_cached(key: str) -> NativeModule | None:
    """The machine code of entry `key` of the on-disk cache, loaded, or None."""
    entry = object_cache.load(key)
    if entry is None:
        return None
    optimized_ir, code = entry
    # The libraries it calls must be loaded before linking (a missing symbol links to 0)
    if "@GOMP_parallel(" in optimized_ir:
        load_libgomp()
    vector_math.link_for(optimized_ir)
    try:
        return jit_load(optimized_ir, code)
    except RuntimeError:
        object_cache.stats["damaged"] += 1
        object_cache.discard(key)
        return None
