"""`compile_function`: a lowered halo statement to a native function callable from Python.

The stages, one module each: `codegen` (halo IR -> LLVM IR) -> `jit` (O3 for the host
CPU, MCJIT) -> `runtime` (the ctypes wrapper that checks and passes arguments).
"""
from __future__ import annotations

from collections.abc import Sequence

from halo.backends.llvm.codegen import Argument, generate_module
from halo.backends.llvm.jit import jit_compile
from halo.backends.llvm.parallel import default_num_threads
from halo.backends.llvm.runtime import CompiledFunction
from halo.errors import InternalError
from halo.ir.nodes import Stmt, Store
from halo.ir.visitor import walk


def compile_function(name: str, body: Stmt, args: Sequence[Argument],
                     num_threads: int | None = None) -> CompiledFunction:
    """Compile `body` (lowered and flattened) into `void name(args...)` for this CPU.

    Every free variable of `body` must be a scalar argument and every buffer it loads
    from or stores to an argument or an enclosing Allocate; otherwise `InternalError`.
    Parallel loops run on `num_threads` threads (default: `default_num_threads()`).
    """
    if num_threads is None:
        num_threads = default_num_threads()
    if num_threads < 1:
        raise InternalError(f"compile_function({name!r}) asked for {num_threads} threads")
    module = generate_module(name, body, args, num_threads)
    native = jit_compile(str(module))
    stored = frozenset(node.name for node in walk(body) if isinstance(node, Store))
    return CompiledFunction(name, args, native, stored_buffers=stored)
