"""The backend seam: `compile(lowered, target)` turns a lowered pipeline into a
`CompiledPipeline`, whatever the target.

Every backend compiles to one calling convention (`arguments.py`): the compiled object is
called with one value per `Argument`, in order (arrays for buffers, numbers for scalars),
returns nothing, and `source()` shows the code the backend made. Compiled pipelines are
kept in memory by (lowered IR, arguments, target), so compiling the same pipeline twice
costs one compile.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from halo.backends import cuda, llvm
from halo.backends.arguments import Argument, arguments_of
from halo.lower.pipeline import Lowered
from halo.lru_cache import LRUCache
from halo.target import Target, TargetKind


class CompiledPipeline(Protocol):
    """What a backend returns: called with one value per argument, in `args` order."""

    args: tuple[Argument, ...]

    def __call__(self, *values: object) -> None: ...

    def source(self) -> str:
        """The code the backend generated (LLVM IR for the host, CUDA C for cuda)."""
        ...


def compile(lowered: Lowered, target: Target) -> CompiledPipeline:  # noqa: A001
    """`lowered` compiled for `target`, from the in-memory cache when it was compiled
    before (same IR, same arguments, same target)."""
    args = arguments_of(lowered, target)
    # Keyed by the thread count itself, which the code embeds, not by how it was chosen.
    target = replace(target, threads=target.num_threads)
    # The IR's repr and the arguments carry every type, which its printed form omits.
    key = (repr(lowered.stmt), repr(args), target)
    return _cache.get(key, lambda: _BACKENDS[target.kind](lowered, args, target))


def _compile_host(lowered: Lowered, args: Sequence[Argument], target: Target) -> CompiledPipeline:
    return llvm.compile_function("halo_pipeline", lowered.stmt, args,
                                 num_threads=target.num_threads,
                                 strict_float=target.strict_float)


def _compile_cuda(lowered: Lowered, args: Sequence[Argument], target: Target) -> CompiledPipeline:
    return cuda.compile_pipeline("halo_pipeline", lowered.stmt, args, target.arch,
                                 cuda.nvcc_options(target.strict_float,
                                                   target.fast_math))


_BACKENDS: dict[TargetKind, Callable[[Lowered, Sequence[Argument], Target],
                                     CompiledPipeline]] = {
    TargetKind.HOST: _compile_host,
    TargetKind.CUDA: _compile_cuda,
}


# Each live JIT engine holds about 1 MB, so the cache is bounded.
_cache: LRUCache[CompiledPipeline] = LRUCache(capacity=128)

__all__ = ["Argument", "CompiledPipeline", "arguments_of", "compile"]
