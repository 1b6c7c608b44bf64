"""Running pipelines: `Pipeline`, `Target`, and compiled `Kernel`s.

`Pipeline([f, g]).realize(shape, inputs=...)` lowers the pipeline, compiles it for the
target (cached by the lowered IR and target), checks the inputs and the regions the code
will touch, and runs it on NumPy arrays without copying them.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from numbers import Integral

import numpy as np

from halo.backends.host_checks import compile_checks
from halo.errors import HaloError, InputError, InternalError
from halo.ir import nodes as n
from halo.ir.printer import loop_nest_to_str
from halo.ir.substitute import free_vars
from halo.ir.types import Type, int64
from halo.ir.visitor import deep_recursion
from halo.lang.driver_seam import install_pipeline
from halo.lang.environment import Environment, bind
from halo.lang.func import Func
from halo.lower.bounds_inference import RegionCheck, describe
from halo.lower.count_stores import COUNTS_BUFFER
from halo.lower.pipeline import Lowered, lower


@dataclass(frozen=True)
class Target:
    """Where code runs: "host" (the CPU, through LLVM) or "cuda". `threads`: the size of
    the thread pool for parallel loops (default: HALO_NUM_THREADS, else all cores).
    `count_stores=True` builds instrumented code that counts the values stored to each
    Func, read after a call as `kernel.store_counts` ({func name: count}); all its loops
    run serially, so the counts are exact (see halo/lower/count_stores.py).
    `strict_float=True` rounds every float operation separately, as NumPy does; by default
    `a * b + c` may be computed as one fused multiply-add (as Halide does)."""
    name: str = "host"
    threads: int | None = None
    count_stores: bool = False
    strict_float: bool = False

    def __post_init__(self) -> None:
        if self.name not in ("host", "cuda"):
            raise HaloError(f"unknown target {self.name!r}; use 'host' or 'cuda'")
        if self.name == "cuda":
            raise HaloError("the 'cuda' target is not available in this version of halo; "
                            "use target='host'")
        if self.threads is not None and not (isinstance(self.threads, Integral)
                                             and self.threads >= 1):
            raise HaloError(f"Target(threads={self.threads!r}): threads must be a positive "
                            "integer, or None for the default")

    @property
    def num_threads(self) -> int:
        # Imported here, like the backend in Kernel, so that `import halo` loads no LLVM.
        from halo.backends.llvm.parallel import default_num_threads
        return self.threads or default_num_threads()

    def natural_vector_size(self, t: Type) -> int:
        """How many values of type `t` one SIMD register holds on this target (16 float32
        with AVX-512, 8 with AVX2), as in Halide: what a schedule vectorizes by to fill
        the machine's vectors."""
        from halo.backends.llvm.jit import host_vector_bytes
        return max(1, host_vector_bytes() // t.bytes)

    @staticmethod
    def of(target: str | Target) -> Target:
        return target if isinstance(target, Target) else Target(target)


class Pipeline:
    """Several output Funcs realized together, over the same region."""

    def __init__(self, outputs: Sequence[Func] | Func):
        self.outputs = [outputs] if isinstance(outputs, Func) else list(outputs)
        if not self.outputs:
            raise HaloError("a Pipeline needs at least one output Func")

    def lower(self, target: str | Target = "host") -> Lowered:
        target = Target.of(target)
        with deep_recursion():
            return lower(Environment.of(self.outputs), target.name, target.count_stores)

    def print_loop_nest(self, target: str | Target = "host") -> None:
        print(loop_nest_to_str(self.lower(target).stmt), end="")

    def compile(self, target: str | Target = "host") -> Kernel:
        target = Target.of(target)
        lowered = self.lower(target)
        with deep_recursion():
            return Kernel(lowered, target)

    def realize(self, shape=None, inputs=None, target: str | Target = "host", out=None,
                origin=None):
        kernel = self.compile(target)
        result = kernel._run(shape, out, origin, inputs, {})
        return result[0] if len(self.outputs) == 1 else result


class _CompileCache:
    """Compiled functions by (lowered IR, arguments, target), least recently used evicted first:
    each live JIT engine holds about 1 MB, so the cache is bounded."""

    def __init__(self, capacity: int = 128):
        self.capacity = capacity
        self.entries: OrderedDict[tuple[str, str, Target], object] = OrderedDict()

    def get(self, key: tuple[str, str, Target], build):
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        value = self.entries[key] = build()
        if len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
        return value


_cache = _CompileCache()


class Kernel:
    """A compiled pipeline: `kernel(shape, **inputs)` or `kernel(out=array, **inputs)`,
    inputs passed by the names of their ImageParams and Params."""

    def __init__(self, lowered: Lowered, target: Target):
        from halo.backends.llvm import Argument, compile_function
        self.lowered = lowered
        self.target = target
        env = lowered.env
        self.output_names = [f.name for f in env.outputs]
        self._checks = compile_checks(lowered.checks)
        buffers = [*env.inputs, *self.output_names]
        if target.count_stores:
            buffers.append(COUNTS_BUFFER)
        # {func name: stores} of the last call, with Target(count_stores=True).
        self.store_counts: dict[str, int] = {}
        scalars = sorted(free_vars(lowered.stmt) - set(buffers))
        known = set(env.params) | {f"{b}.{field}.{i}" for b in buffers
                                   for field in ("min", "extent", "stride") for i in range(8)}
        strays = [s for s in scalars if s not in known]
        if strays:
            raise InternalError(f"lowered code uses undefined names {strays}")
        self.scalar_names = scalars
        args = [Argument(b, "buffer", self._buffer_type(b)) for b in buffers]
        args += [Argument(s, "scalar", env.params[s].type if s in env.params else
                          n.Var(s).type) for s in scalars]
        # Keyed by the thread count itself, which the code embeds, not by how it was chosen.
        threads = target.num_threads
        # The IR's repr and the arguments carry every type, which its printed form omits.
        self.function = _cache.get(
            (repr(lowered.stmt), repr(args), replace(target, threads=threads)),
            lambda: compile_function("halo_pipeline", lowered.stmt, args, num_threads=threads,
                                     strict_float=target.strict_float))
        self.buffer_names = buffers

    def _buffer_type(self, name: str):
        env = self.lowered.env
        if name == COUNTS_BUFFER:
            return int64
        return env.inputs[name].dtype if name in env.inputs else env.funcs[name].type

    def source(self) -> str:
        """The generated code (LLVM IR for the host)."""
        return self.function.llvm_ir

    def __call__(self, shape=None, out=None, origin=None, **inputs):
        result = self._run(shape, out, origin, None, inputs)
        return result[0] if len(result) == 1 else result

    def _run(self, shape, out, origin, inputs, named) -> list[np.ndarray]:
        env = self.lowered.env
        arrays, scalars = bind(env, inputs, **named)
        arrays = {name: _unit_last_stride(a) for name, a in arrays.items()}
        outs = self._outputs(shape, out)
        ndim = outs[0].ndim
        origin = tuple(origin) if origin is not None else (0,) * ndim
        if len(origin) != ndim:
            raise InputError(f"origin has {len(origin)} entries but the output has {ndim} "
                             "dimension(s)")
        values: dict[str, object] = dict(scalars)
        for name, arr in [*arrays.items(), *zip(self.output_names, outs, strict=True)]:
            for i in range(arr.ndim):
                values[f"{name}.extent.{i}"] = arr.shape[i]
                values[f"{name}.stride.{i}"] = arr.strides[i] // arr.itemsize
                values[f"{name}.min.{i}"] = origin[i] if name in self.output_names else 0
        self._check_regions(values)
        counts = np.zeros(len(self.lowered.counted), dtype=np.int64)
        buffers = [arrays[b] if b in arrays else counts if b == COUNTS_BUFFER
                   else outs[self.output_names.index(b)] for b in self.buffer_names]
        self.function(*buffers, *(values[s] for s in self.scalar_names))
        if self.target.count_stores:
            self.store_counts = dict(zip(self.lowered.counted, counts.tolist(), strict=True))
        return outs

    def _outputs(self, shape, out) -> list[np.ndarray]:
        funcs = [self.lowered.env.funcs[nm] for nm in self.output_names]
        if out is not None:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(outs) != len(funcs):
                raise InputError(f"out= has {len(outs)} array(s) for {len(funcs)} output(s)")
            for f, arr in zip(funcs, outs, strict=True):
                if not isinstance(arr, np.ndarray) or arr.dtype != f.type.numpy or \
                        arr.ndim != f.dimensions:
                    raise InputError(f"out= for {f.name} must be a {f.dimensions}-D "
                                     f"{f.type} NumPy array, got {_describe(arr)}")
                if not arr.flags.writeable:
                    raise InputError(f"out= for {f.name} is read-only")
                if _unit_last_stride(arr) is not arr:
                    raise InputError(f"out= for {f.name} must have consecutive elements "
                                     "in its last dimension (a view like a[:, ::2] or a.T "
                                     "isn't); pass a C-contiguous array")
            if len({a.shape for a in outs}) > 1:
                raise InputError("all outputs of a Pipeline must have the same shape")
            return outs
        if shape is None:
            raise InputError("give the output shape, e.g. f.realize((480, 640)), or out=array")
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        for f in funcs:
            if len(shape) != f.dimensions:
                raise InputError(f"{f.name} has {f.dimensions} dimension(s) but the shape "
                                 f"{shape} has {len(shape)}")
        if any(not isinstance(s, (int, np.integer)) or s < 0 for s in shape):
            raise InputError(f"the shape {shape} must be non-negative integers")
        return [np.empty(shape, dtype=f.type.numpy) for f in funcs]

    def _check_regions(self, values: dict[str, object]) -> None:
        failed = self._checks(values)
        if failed is not None:
            raise describe(*failed)


def _unit_last_stride(a: np.ndarray) -> np.ndarray:
    """`a`, or a C-contiguous copy when its last dimension isn't contiguous: compiled code
    assumes neighbouring last indices are neighbouring elements (dense vector access)."""
    if a.ndim == 0 or a.shape[-1] <= 1 or a.strides[-1] == a.itemsize:
        return a
    return np.ascontiguousarray(a)


def _describe(a: object) -> str:
    if isinstance(a, np.ndarray):
        return f"a {a.ndim}-D {a.dtype} array"
    return type(a).__name__


install_pipeline(Pipeline)

__all__ = ["Pipeline", "Target", "Kernel", "RegionCheck"]
