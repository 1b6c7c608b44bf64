"""The CUDA backend: a pipeline lowered for a GPU -> CUDA C kernels launched by Python host
code, on NVIDIA GPUs through PyCUDA.

`compile_pipeline(name, body, args, arch, options)` splits the lowered IR at its kernels
(`split.py`), emits one CUDA C module (`cuda_c.py`) and the host program that launches its
kernels (`host_program.py`), and returns a `CudaPipeline`. A kernel whose dense global
accesses test their alignment when they run has an aligned twin: it assumes the promise of
`aligned_promise` (every buffer starts at a multiple of 16 bytes, and its mins, extents and
strides are multiples of 16 bytes' worth of elements), so where an access is then provably
aligned it goes without the test. The twins, with the kernels that have none, make a
second module of the same kernel names; a call whose values keep the promise (a few
integer tests in Python) runs it, any other call the general one, and each module is
compiled the first time a call needs it. The CUDA C is generated at once
(`source()` needs no GPU); nvcc runs (`compiler.py`, cached on disk) and the module loads
(`device.py`) on the first call. The pipeline is called, as every backend's, with one
value per argument: device pointers (ints) for buffers, numbers for scalars. A pipeline
dropped on another thread than the one that loaded its modules (a compile cache evicting
it during a compile, which runs on a thread of its own) leaves them to that thread's next
call, where PyCUDA can unload them.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence

from halo.backends.arguments import Argument
from halo.backends.cuda.compiler import compile_cubin, load_module, nvcc_options
from halo.backends.cuda.cuda_c import PRELUDE, KernelParam, kernel_source
from halo.backends.cuda.device import cuda_driver
from halo.backends.cuda.host_program import host_program
from halo.backends.cuda.split import DeviceKernel, split_host_device
from halo.backends.cuda.vectors import MAX_BYTES
from halo.errors import HaloError
from halo.ir import nodes as n
from halo.ir.types import Type
from halo.ir.visitor import walk

# The largest grid CUDA launches, along x, y and z.
MAX_GRID = (2**31 - 1, 65535, 65535)
# The modules of pipelines dropped in another thread than the one that loaded them (a
# compile cache evicting them while a compile runs on its own thread), by that thread:
# PyCUDA unloads a module only where its context is current, so they are kept until the
# thread's next call, which drops them.
_orphans: dict[int, list] = {}


class CudaPipeline:
    """A compiled GPU pipeline: called with device pointers and scalars, in `args` order."""

    def __init__(self, name: str, args: Sequence[Argument], body: n.Stmt, arch: str,
                 options: Sequence[str]):
        self.name = name
        self.args = tuple(args)
        self.arch = arch
        self.options = tuple(options)  # nvcc's (compiler.nvcc_options)
        host, self.kernels = split_host_device(body, name)
        self._host, self.host_source = host_program(host, self.kernels)
        # The kernels alone, then the whole module: the helpers they use first; and the
        # aligned variant of the module, if a kernel has a twin (the twins alone too).
        self._promise = aligned_promise(self.args)
        assumed = {**_host_lets(host), **{  # a promised scalar is `multiple * k`
            a.name: n.Mul(n.Var(f"{a.name}.multiple", a.type),
                          n.const(self._promise[a.name], a.type))
            for a in self.args if a.kind == "scalar" and a.name in self._promise}}
        general, aligned = [], []
        for k in self.kernels:
            general.append(kernel_source(k.name, k.loop, k.params, k.block, len(k.grid), arch))
            aligned.append(kernel_source(k.name, k.loop, k.params, k.block, len(k.grid), arch,
                                         aligned=assumed))
        self.kernels_source = "".join("\n" + source for source in general)
        self.aligned_kernels_source = "".join(
            "\n" + twin for twin, source in zip(aligned, general, strict=True) if twin != source)
        self.cuda_source = PRELUDE + self.kernels_source
        self.aligned_source = PRELUDE + "".join("\n" + source for source in aligned) \
            if self.aligned_kernels_source else None
        self._functions: dict[bool, list] = {}  # per module (aligned?), loaded when needed
        self._modules: list = []
        self._loaded_in: int | None = None  # the thread that loaded them
        self._allocations: dict[int, object] = {}
        # Per kernel, (name, conversion) of each parameter, in order: what a launch packs.
        self._packing = [[(p.name, int if p.is_buffer else _conversion(p.type))
                          for p in k.params] for k in self.kernels]

    def source(self) -> str:
        """The CUDA C of the kernels (and of their aligned twins), then the host code that
        launches them."""
        host = "\n".join(f"// {line}" for line in self.host_source.splitlines())
        twins = "" if self.aligned_source is None else (
            "\n// Calls whose buffers start at multiples of 16 bytes and whose mins, extents "
            "and strides\n// are multiples of 16 bytes' worth of the narrowest element run "
            "these kernels instead of\n// those of the same names (their accesses proven "
            f"aligned go without a test):\n{self.aligned_kernels_source}")
        return (f"{self.cuda_source}{twins}\n// The host code (Python) that launches the "
                f"kernels:\n{host}\n")

    def __call__(self, *values: object) -> None:
        if len(values) != len(self.args):
            raise HaloError(f"{self.name} takes {len(self.args)} arguments, got {len(values)}")
        if _orphans:
            _orphans.pop(threading.get_ident(), None)
        v = {a.name: value for a, value in zip(self.args, values, strict=True)}
        aligned = self._variant(v)  # (decided once a call, from the arguments alone)

        def launch(k: int, v: dict[str, object], grid: tuple[int, ...]) -> None:
            self._launch(k, v, grid, aligned)
        self._host(v, launch, self._alloc, self._free)

    def _variant(self, v: dict[str, object]) -> bool:
        """Whether a call with values `v` runs the aligned module."""
        return self.aligned_source is not None and keeps_promise(self._promise, v)

    def _load(self, aligned: bool) -> list:
        """The kernel functions of the general or the aligned module, compiled and loaded
        the first time."""
        if aligned not in self._functions:
            module = load_module(compile_cubin(
                self.aligned_source if aligned else self.cuda_source, self.arch,
                self.options,
                {k.name: k.dynamic_shared for k in self.kernels if k.dynamic_shared}))
            functions = []
            for k in self.kernels:
                f = module.get_function(k.name)
                f.prepare("".join(_format(p) for p in k.params))
                if k.dynamic_shared:  # past 48 KB, a block's shared memory is asked for
                    f.set_attribute(
                        cuda_driver().function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        k.dynamic_shared)
                functions.append(f)
            self._modules.append(module)
            self._loaded_in = threading.get_ident()
            self._functions[aligned] = functions
        return self._functions[aligned]

    def __del__(self) -> None:
        owner = getattr(self, "_loaded_in", None)
        if owner is not None and owner != threading.get_ident():
            _orphans.setdefault(owner, []).append((self._modules, self._functions))

    def _launch(self, k: int, v: dict[str, object], grid: tuple[int, ...],
                aligned: bool) -> None:
        kernel: DeviceKernel = self.kernels[k]
        if any(g <= 0 for g in grid):
            return
        grid3 = (*grid, *(1,) * (3 - len(grid)))
        for axis, (g, most) in enumerate(zip(grid3, MAX_GRID, strict=True)):
            if g > most:
                raise HaloError(
                    f"{kernel.name}: its grid needs {g} blocks along {'xyz'[axis]}, more than "
                    f"the {most} CUDA launches; use larger block tiles (gpu_tile sizes) or "
                    "bind the larger dimension to the innermost block loop")
        values = [convert(v[name]) for name, convert in self._packing[k]]
        self._load(aligned)[k].prepared_call(grid3, kernel.block, *values,
                                             shared_size=kernel.dynamic_shared)

    def _alloc(self, nbytes: int) -> int:
        allocation = cuda_driver().mem_alloc(nbytes)
        self._allocations[int(allocation)] = allocation
        return int(allocation)

    def _free(self, pointer: int) -> None:
        self._allocations.pop(pointer).free()


def aligned_promise(args: Sequence[Argument]) -> dict[str, int]:
    """What an aligned twin assumes of a call: {argument: the multiple its value is}.
    Each buffer's address is a multiple of 16 bytes (device allocations are), and each
    min, extent and stride a multiple of 16 bytes' worth of the narrowest element (one
    buffer's coordinates may index another's columns, as C's columns index B's in a
    matmul)."""
    buffers = {a.name: a.type.bytes for a in args if a.kind == "buffer"}
    lanes = max(MAX_BYTES // min(buffers.values(), default=MAX_BYTES), 1)
    promise = dict.fromkeys(buffers, MAX_BYTES)
    for a in args:
        owner, _, field = a.name.rpartition(".")[0].rpartition(".")
        if a.kind == "scalar" and owner in buffers and field in ("min", "extent", "stride"):
            promise[a.name] = lanes
    return promise


def keeps_promise(promise: dict[str, int], values: dict[str, object]) -> bool:
    """Whether a call's `values` (addresses and scalars, by argument) keep `promise`."""
    return all(int(values[name]) % multiple == 0 for name, multiple in promise.items())


def _host_lets(host: n.Stmt) -> dict[str, n.Expr]:
    """The values of the host's lets that are bound once (a kernel's scalar parameters
    are host lets or arguments)."""
    values: dict[str, n.Expr | None] = {}
    for node in walk(host):
        if isinstance(node, n.LetStmt):
            values[node.name] = node.value if node.name not in values else None
    return {name: value for name, value in values.items() if value is not None}


def _format(p: KernelParam) -> str:
    """The `struct` format PyCUDA packs a kernel argument with."""
    if p.is_buffer:
        return "P"
    t = p.type
    if t.is_bool:
        return "?"
    if t.is_float:
        return {16: "e", 32: "f", 64: "d"}[t.bits]
    code = {8: "b", 16: "h", 32: "i", 64: "q"}[t.bits]
    return code if t.is_int else code.upper()


def _conversion(t: Type) -> type:
    """What a scalar parameter of type `t` is passed to PyCUDA as."""
    return float if t.is_float else bool if t.is_bool else int


def compile_pipeline(name: str, body: n.Stmt, args: Sequence[Argument], arch: str,
                     options: Sequence[str]) -> CudaPipeline:
    """`body` (lowered for a GPU) as a `CudaPipeline` (see the module); `options`: nvcc's
    (`compiler.nvcc_options`)."""
    return CudaPipeline(name, args, body, arch, options)


__all__ = ["CudaPipeline", "aligned_promise", "compile_pipeline", "keeps_promise", "nvcc_options"]
