"""The native CPU backend: lowered halo IR -> LLVM IR (llvmlite) -> machine code (MCJIT).

`compile_function(name, body, args, num_threads=None)` returns a `CompiledFunction` that
runs on NumPy arrays and scalars, its parallel loops on libgomp's threads; its parameters
are `halo.backends.arguments.Argument`s.
"""
from halo.backends.llvm.compiler import compile_function
from halo.backends.llvm.runtime import CompiledFunction

__all__ = ["CompiledFunction", "compile_function"]
