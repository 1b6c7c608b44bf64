"""The native CPU backend: lowered halo IR -> LLVM IR (llvmlite) -> machine code (MCJIT).

`compile_function(name, body, args)` returns a `CompiledFunction` that runs on NumPy
arrays and scalars; `Argument` describes one of its parameters.
"""
from halo.backends.llvm.codegen import Argument
from halo.backends.llvm.compiler import compile_function
from halo.backends.llvm.runtime import CompiledFunction

__all__ = ["Argument", "CompiledFunction", "compile_function"]
