"""Parallel loops on OpenMP's thread pool: the loop body outlined into a task function that
libgomp's `GOMP_parallel` runs on every thread of a team.

A parallel loop in function `f`

    for v in parallel(min, extent):
      body

compiles to a call into libgomp and a new function, the task:

    f(...):                                   f.v.task(ptr closure):       # on each thread
      if extent > 0:                            min, extent, s..., b... = *closure
        closure = {min, extent, 0, s..., b...}  while (first = claim a chunk) < extent:
        GOMP_parallel(f.v.task, &closure,         for v in [min + first, min + first + count):
                      num_threads, 0)               body

The closure is a struct in `f`'s stack frame; it outlives the threads' use of it, since
`GOMP_parallel` returns only once every thread has finished. Its layout is

    { T min, T extent, T claimed, s0, s1, ..., ptr b0, ptr b1, ... }

with T the loop's integer type (`claimed` counts the iterations handed out), then the
scalars the body reads from outside it (scalar arguments, lets, enclosing loop variables)
in their register types, then the addresses of the buffers it loads from or stores to
(buffer arguments and allocations), each group sorted by name. Only what the body uses
is captured.

The schedule is dynamic: each thread of the team claims chunks of
`max(1, extent // (8 * threads))` contiguous iterations with an atomic add on `claimed`
until none are left, so a thread that starts late (a worker woken from sleep takes a
millisecond on a virtual machine: a static split made conv_relu twice as slow after a
pause) or runs slow iterations leaves its share to the others. Nested parallel loops
work: with nesting off (libgomp's default) a region met inside another runs on a team of
one, which claims the whole loop. (`claimed` may pass `extent` by a chunk per thread; an
extent within that of the type's maximum would overflow it.)

The task runs its chunk through a function of its own, always inlined, whose buffer
parameters are `noalias` like the kernel's (pointers loaded from the closure would tell
LLVM nothing about aliasing). Allocations in the body belong to the task: a stack
allocation is an `alloca` in that function's entry block, so one per thread; a heap
allocation is a malloc and free per iteration.

libgomp's threads wait for work by spinning, then sleeping; it reads how long from
`OMP_WAIT_POLICY` and `GOMP_SPINCOUNT` once, when it is loaded. Its default spin (300,000
rounds, tens of milliseconds) made each parallel loop cost ~8 ms on a machine with one
core busy elsewhere (the spinning threads and the other process take turns on the core).
So unless the user set either variable, halo sets `GOMP_SPINCOUNT` to `SPIN_COUNT` before
loading libgomp: threads spin briefly, then sleep, as Halide's pool does
(`benchmarks/parallel_contention.py` measures both ways). A libgomp that another library
loaded first keeps the policy it read then.

libgomp doesn't survive `fork`: a child forked after a parallel loop ran waits forever in
its own first parallel loop. Processes that run kernels in children should start them with
multiprocessing's "spawn" or "forkserver" method.
"""
from __future__ import annotations

import ctypes.util
import os
from collections.abc import Mapping
from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir

from halo.backends.llvm.llvm_types import POINTER
from halo.errors import HaloError
from halo.ir import nodes as n
from halo.ir.substitute import free_vars
from halo.ir.visitor import walk

# Debian and Ubuntu's path, for when ctypes.util.find_library can't search (no ldconfig)
_LIBGOMP_FALLBACK = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"
_INT = ir.IntType(32)  # C's int and unsigned in libgomp's signatures
_TASK_TYPE = ir.FunctionType(ir.VoidType(), [POINTER])
# Rounds a waiting thread spins before it sleeps (libgomp's GOMP_SPINCOUNT), unless the
# user set OMP_WAIT_POLICY or GOMP_SPINCOUNT (libgomp's own count for an oversubscribed
# machine). Measured on 16 idle cores with one made busy, 1080x1920 uint8 add, median ms
# (benchmarks/parallel_contention.py): libgomp's default 8.0, 100000: 3.1, 10000: 0.42,
# 1000: 0.21, PASSIVE: 0.21; all idle cores: 0.16, 0.14, 0.14, 0.18, 0.17.
SPIN_COUNT = 1_000
# Chunks per thread of the team: few enough that claiming costs nothing, enough that a
# thread that wakes late (or a slow iteration) leaves the others work to take over.
_CHUNKS_PER_THREAD = 8


class Closure:
    """The layout of a parallel loop's closure: which names it captures and the struct that
    holds them (see the module docstring)."""

    def __init__(self, loop: n.For, loop_type: ir.Type, scalars: Mapping[str, ir.Value],
                 buffers: Mapping[str, ir.Value]):
        """Captures what `loop`'s body uses of the enclosing function's `scalars` and
        `buffers` (their values in that function). A name the body uses that is in neither
        is left out, for the task's code generation to report."""
        used_scalars = free_vars(loop.body) - {loop.name}
        used_buffers = {node.name for node in walk(loop.body)
                        if isinstance(node, (n.Load, n.Store))}
        self.scalar_names = sorted(used_scalars & scalars.keys())
        self.buffer_names = sorted(used_buffers & buffers.keys())
        self._captured = ([scalars[name] for name in self.scalar_names]
                          + [buffers[name] for name in self.buffer_names])
        self.struct = ir.LiteralStructType(
            [loop_type, loop_type, loop_type, *(value.type for value in self._captured)])

    def pack(self, entry: ir.IRBuilder, builder: ir.IRBuilder, start: ir.Value,
             extent: ir.Value) -> ir.Value:
        """Fill a closure (a stack slot allocated in the entry block) at `builder`'s
        position; returns its address."""
        fields = ir.Constant(self.struct, ir.Undefined)
        claimed = ir.Constant(start.type, 0)
        for index, value in enumerate([start, extent, claimed, *self._captured]):
            fields = builder.insert_value(fields, value, index)
        closure = entry.alloca(self.struct, name="closure")
        builder.store(fields, closure)
        return closure

    def unpack(self, builder: ir.IRBuilder, closure: ir.Value
               ) -> tuple[ir.Value, ir.Value, dict[str, ir.Value], dict[str, ir.Value]]:
        """Load the fields of the closure at `closure`: (min, extent, scalars, buffers)."""
        fields = builder.load(closure, typ=self.struct)
        start, extent, _, *captured = [builder.extract_value(fields, index)
                                       for index in range(len(self.struct.elements))]
        scalars = dict(zip(self.scalar_names, captured[:len(self.scalar_names)], strict=True))
        buffers = dict(zip(self.buffer_names, captured[len(self.scalar_names):], strict=True))
        return start, extent, scalars, buffers


def declare_task(module: ir.Module, name: str) -> ir.Function:
    """A new function `internal void name(ptr closure)` (renamed if `name` is taken)."""
    task = ir.Function(module, _TASK_TYPE, module.get_unique_name(name))
    task.linkage = "internal"
    task.args[0].name = "closure"
    return task


def claim_chunks(builder: ir.IRBuilder, layout: Closure, closure: ir.Value,
                 extent: ir.Value, run_chunk) -> None:
    """Until the loop's `extent` > 0 iterations are all claimed: claim the next chunk
    (an atomic add on the counter of `closure`, laid out as `layout`) and
    `run_chunk(first, count)` it, offsets from the loop's min in the type of `extent`."""
    b = builder
    threads = b.call(_declare(b.module, "omp_get_num_threads", _INT, []), [])
    threads = b.zext(threads, extent.type) if extent.type.width > _INT.width else \
        b.trunc(threads, extent.type) if extent.type.width < _INT.width else threads
    per_round = b.mul(threads, ir.Constant(extent.type, _CHUNKS_PER_THREAD))
    grain = b.sdiv(extent, per_round)
    grain = b.select(b.icmp_signed("<", grain, ir.Constant(extent.type, 1)),
                     ir.Constant(extent.type, 1), grain)
    counter = b.gep(closure, [ir.Constant(_INT, 0), ir.Constant(_INT, 2)], inbounds=True,
                    source_etype=layout.struct)
    claim = b.append_basic_block("claim")
    run = b.append_basic_block("run")
    done = b.append_basic_block("done")
    b.branch(claim)
    b.position_at_end(claim)
    first = b.atomic_rmw("add", counter, grain, "monotonic")
    b.cbranch(b.icmp_signed("<", first, extent), run, done)
    b.position_at_end(run)
    left = b.sub(extent, first)
    run_chunk(first, b.select(b.icmp_signed("<", left, grain), left, grain))
    b.branch(claim)
    b.position_at_end(done)


def run_on_threads(builder: ir.IRBuilder, task: ir.Function, closure: ir.Value,
                   num_threads: int) -> None:
    """GOMP_parallel(task, closure, num_threads, 0): run `task(closure)` on a team of
    `num_threads` threads (the caller among them) and wait for all of them."""
    load_libgomp()
    gomp_parallel = _declare(builder.module, "GOMP_parallel", ir.VoidType(),
                             [POINTER, POINTER, _INT, _INT])
    builder.call(gomp_parallel, [task, closure, ir.Constant(_INT, num_threads),
                                 ir.Constant(_INT, 0)])


def _declare(module: ir.Module, name: str, result: ir.Type, params: list[ir.Type]
             ) -> ir.Function:
    """The external function `name` of `module`, declared on first use."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(result, params), name)


@cache
def load_libgomp() -> None:
    """Make libgomp's symbols visible to the JIT, once per process, its threads spinning
    briefly before they sleep (unless the environment says otherwise)."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    candidates = [path for path in (ctypes.util.find_library("gomp"), _LIBGOMP_FALLBACK)
                  if path]
    for path in candidates:
        try:
            llvm.load_library_permanently(path)
            return
        except RuntimeError:
            continue
    raise HaloError(f"parallel loops need the OpenMP runtime libgomp, which was not found "
                    f"(tried {', '.join(candidates)}); install it (Debian and Ubuntu: apt "
                    "install libgomp1), or schedule without .parallel()")
