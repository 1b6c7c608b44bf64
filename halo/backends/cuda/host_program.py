"""The host side of a GPU pipeline as one Python function.

`host_program(stmt, kernels)` turns the host code that `split_host_device` left (lets,
loops and branches around the kernel launches, device buffers of Funcs computed at root)
into a function `run(v, launch, alloc, free)`: `v` maps names to values (scalars, and
device pointers for buffers), `launch(k, v, grid)` runs kernel k on the grid (x, y, z)
computed from `v` at run time (bounds inference's lets), `alloc(bytes)` gives a device
pointer and `free(pointer)` releases it (in a `finally`, so an intermediate buffer is
freed also when a launch fails). Expressions become Python as
`analysis/python_source.py` says.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from halo.analysis.python_source import HELPERS, python_source
from halo.backends.cuda.split import DeviceKernel, launch_index
from halo.errors import InternalError
from halo.ir import nodes as n

HostProgram = Callable[..., None]


def host_program(stmt: n.Stmt, kernels: Sequence[DeviceKernel]) -> tuple[HostProgram, str]:
    """(the function, its Python source)."""
    writer = _Writer(kernels)
    writer.stmt(stmt, 1)
    source = "\n".join(["def run(v, launch, alloc, free):", *writer.lines, "    return"])
    namespace = {**HELPERS, "nodes": writer.nodes}
    exec(compile(source, "<halo host program>", "exec"), namespace)  # noqa: S102
    return namespace["run"], source


class _Writer:
    def __init__(self, kernels: Sequence[DeviceKernel]):
        self.kernels = kernels
        self.lines: list[str] = []
        self.nodes: list[n.Expr] = []

    def expr(self, e: n.Expr) -> str:
        return python_source(e, {}, self.nodes)

    def stmt(self, s: n.Stmt, depth: int) -> None:
        pad = "    " * depth
        k = launch_index(s)
        if k is not None:
            grid = ", ".join(self.expr(g) for g in self.kernels[k].grid)
            self.lines.append(f"{pad}launch({k}, v, ({grid},))")
            return
        match s:
            case n.Block(stmts=stmts):
                for x in stmts:
                    self.stmt(x, depth)
            case n.LetStmt(name=name, value=value, body=body):
                self.lines.append(f"{pad}v[{name!r}] = {self.expr(value)}")
                self.stmt(body, depth)
            case n.ProducerConsumer(produce=produce, consume=consume):
                self.stmt(produce, depth)
                self.stmt(consume, depth)
            case n.IfThenElse(condition=cond, then_case=then, else_case=other):
                self.lines.append(f"{pad}if {self.expr(cond)}:")
                self.stmt(then, depth + 1)
                self.lines.append(f"{pad}    pass")
                if other is not None:
                    self.lines.append(f"{pad}else:")
                    self.stmt(other, depth + 1)
                    self.lines.append(f"{pad}    pass")
            case n.For(name=name, min=lo, extent=extent, body=body):
                self.lines.append(f"{pad}_lo = {self.expr(lo)}")
                self.lines.append(f"{pad}for _i in range(_lo, _lo + {self.expr(extent)}):")
                self.lines.append(f"{pad}    v[{name!r}] = _i")
                self.stmt(body, depth + 1)
            case n.Allocate(name=name, type=t, size=size, body=body):
                self.lines.append(f"{pad}v[{name!r}] = alloc(max({self.expr(size)}, 1) * "
                                  f"{t.bytes})")
                self.lines.append(f"{pad}try:")
                self.stmt(body, depth + 1)
                self.lines.append(f"{pad}    pass")
                self.lines.append(f"{pad}finally:")
                self.lines.append(f"{pad}    free(v[{name!r}])")
            case n.Evaluate():
                pass  # pure: nothing to run
            case _:
                raise InternalError(f"host code of a GPU pipeline holds {type(s).__name__}, "
                                    "which gpu_levels should have refused")
