"""The host/device split of a pipeline lowered for a GPU.

Each outermost nest of GPU block loops (a kernel, fused by `fuse_gpu_thread_loops`)
becomes a `DeviceKernel`: its name, the nest, its parameters (the global buffers it reads
or writes and the scalars it uses, all names halo gave them), its grid (the block loops'
extents, innermost first: x, y, z) and its block shape. What is left is host code: the
lets, loops and branches around the kernels, the device buffers of Funcs computed at
root, and one `launch(k)` where kernel k ran.
"""
from __future__ import annotations

from dataclasses import dataclass

from halo.backends.cuda.cuda_c import KernelParam
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.substitute import free_vars
from halo.ir.types import int32
from halo.ir.visitor import IRMutator, child_nodes, walk, walk_stmts
from halo.lower.fuse_gpu_thread_loops import block_shape, dynamic_shared_bytes

LAUNCH = "gpu_launch"


@dataclass(frozen=True)
class DeviceKernel:
    name: str
    loop: n.For
    params: tuple[KernelParam, ...]
    grid: tuple[n.Expr, ...]
    block: tuple[int, int, int]
    dynamic_shared: int = 0  # bytes of shared memory it takes at launch (past 48 KB)


def launch_index(s: n.Stmt) -> int | None:
    """The kernel a host statement launches, or None if it is no launch."""
    if isinstance(s, n.Evaluate) and isinstance(s.value, n.Call) and s.value.name == LAUNCH:
        return int(s.value.args[0].value)
    return None


def split_host_device(stmt: n.Stmt, prefix: str) -> tuple[n.Stmt, list[DeviceKernel]]:
    """(host code, kernels); kernel k is named `{prefix}_k{k}`."""
    splitter = _Split(prefix)
    return splitter.mutate(stmt), splitter.kernels


class _Split(IRMutator):
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.kernels: list[DeviceKernel] = []

    def visit_For(self, loop: n.For) -> n.Stmt:
        if loop.kind is not n.ForKind.GPU_BLOCK:
            return self.mutate_children(loop)
        index = len(self.kernels)
        self.kernels.append(_kernel(f"{self.prefix}_k{index}", loop))
        return n.Evaluate(n.Call(int32, LAUNCH, (n.const(index),), n.CallKind.INTRINSIC))


def block_loops(loop: n.For) -> list[list[n.For]]:
    """The block loops of kernel `loop` by depth, outermost first: one loop each, or
    several copies where partition_loops branched between block loops."""
    depths: list[list[n.For]] = []

    def visit(s: n.Stmt, depth: int) -> None:
        for x in child_nodes(s):
            if isinstance(x, n.For) and x.kind is n.ForKind.GPU_BLOCK:
                if depth == len(depths):
                    depths.append([])
                depths[depth].append(x)
                visit(x, depth + 1)
            elif isinstance(x, n.Stmt):
                visit(x, depth)
    depths.append([loop])
    visit(loop, 1)
    return depths


def _kernel(name: str, loop: n.For) -> DeviceKernel:
    depths = block_loops(loop)
    if len(depths) > 3:
        raise InternalError(f"kernel {name} has {len(depths)} nested block loops")
    outer_free = free_vars(loop)
    for copies in depths:
        first = copies[0]
        if any((c.min, c.extent) != (first.min, first.extent) for c in copies) or \
                not free_vars(first.extent) <= outer_free:
            raise InternalError(f"kernel {name}: block loop {first.name} has no one extent "
                                "the host can compute")
    allocated = {a.name for a in walk_stmts(loop) if isinstance(a, n.Allocate)}
    buffers: dict[str, n.Expr] = {}
    var_types: dict[str, object] = {}
    for x in walk(loop):
        if isinstance(x, (n.Load, n.Store)) and x.name not in allocated:
            element = x.type if isinstance(x, n.Load) else x.value.type
            buffers.setdefault(x.name, element.element_of())
        elif isinstance(x, n.Var):
            var_types.setdefault(x.name, x.type)
    # The block loops' mins and extents are evaluated in the kernel and on the host.
    scalars = sorted(outer_free - set(buffers))
    written = {x.name for x in walk_stmts(loop) if isinstance(x, n.Store)} | {
        x.operands[0].name for x in walk_stmts(loop) if isinstance(x, n.TensorCall)}  # its output
    params = (*(KernelParam(b, t, True, b not in written) for b, t in sorted(buffers.items())),
              *(KernelParam(s, var_types.get(s, int32), False) for s in scalars))
    grid = tuple(copies[0].extent for copies in reversed(depths))
    return DeviceKernel(name, loop, params, grid, block_shape(loop), dynamic_shared_bytes(loop))
