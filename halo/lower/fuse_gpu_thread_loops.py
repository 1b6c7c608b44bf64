"""Fusing the thread loops of a GPU kernel into one block of threads (Halide's
FuseGPUThreadLoops is the model).

A kernel (the body of one nest of GPU block loops) may hold several thread-loop nests one
after another: the producer phase of a Func stored in shared memory, then its consumer's
phase. All of them run on the same threads of the block, so:

* the block's shape is, per axis, the largest constant upper bound of the thread-loop
  extents of that axis (the innermost thread loop of a nest is axis x, the next y, then
  z); each thread loop then runs over the whole block and guards its own extent
  (`for t in gpu_thread(bx): if t < min + extent: ...`), so partial tiles are guarded;
* a `__syncthreads()` (`sync_threads()`) goes before each phase that touches shared
  memory which the phases since the last barrier touched in a conflicting way (one
  writes what the other reads or writes; a serial loop's body also meets what its
  previous iteration touched): a consumer waits for its producer, and a producer must
  not overwrite what a slower thread still reads, but the copies of two operands into
  shared memory, or the iterations of a loop that only fills a buffer, run without
  one; asynchronous copies (`cp.async`, `double_buffering`) are in flight, not written,
  until the thread's next `gpu_async_wait`: reading their buffer meanwhile needs no
  barrier (they fill the slots of later iterations);
* stores at block level (outside every thread loop) run on the block's first thread only.

A warp reduction's shuffles (`warp_reductions`) need their lanes to be an aligned group
of a warp: the block's x extent must be a multiple of the group's size.

It also refuses what no GPU runs: a thread-loop extent without a constant bound, more than
1024 threads a block, more shared memory than a block may hold statically (each buffer
counted once: its copies in partitioned loops share its space). It runs last,
on flat IR, for GPU targets only.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from halo.analysis.simplify import simplify
from halo.analysis.upper_bound import constant_upper_bound
from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import expand_lets, var_names
from halo.ir.types import Type, bool_, int32
from halo.ir.visitor import IRMutator, child_nodes, rewrite, walk, walk_stmts
from halo.lower.context import LowerContext
from halo.lower.double_buffering import GPU_ASYNC_COPY, GPU_ASYNC_WAIT
from halo.lower.gpu_levels import loop_func
from halo.lower.warp_reductions import GPU_SHUFFLE_XOR
from halo.schedule.records import stage_label

MAX_THREADS_PER_BLOCK = 1024
# Shared memory one block may hold: 48 KB declared statically (every architecture from
# sm_70 on); past it, the kernel takes it dynamically, up to its architecture's limit
# (CUDA's "maximum shared memory per block" with opt-in).
STATIC_SHARED_BYTES = 48 * 1024
_MAX_SHARED_KB = {70: 96, 72: 96, 75: 64, 80: 163, 86: 99, 87: 163, 89: 99, 90: 227}


def max_shared_bytes(arch: str) -> int:
    """The shared memory a block may hold on `arch` ("sm_90"); a newer architecture than
    this table knows gets the newest one's."""
    version = int(arch.removeprefix("sm_")[:2])
    known = [v for v in _MAX_SHARED_KB if v <= version]
    return (_MAX_SHARED_KB[max(known)] if known else 48) * 1024


SYNC_THREADS = "gpu_sync_threads"
FIRST_THREAD = "gpu_first_thread"


def sync_threads() -> n.Stmt:
    """A barrier of the block's threads, ordering their shared-memory accesses."""
    return n.Evaluate(n.Call(int32, SYNC_THREADS, (), n.CallKind.INTRINSIC))


def first_thread() -> n.Expr:
    """True on the block's first thread (thread index 0 on every axis)."""
    return n.Call(bool_, FIRST_THREAD, (), n.CallKind.INTRINSIC)


def fuse_gpu_thread_loops(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Each kernel's thread loops as one block of threads (see the module)."""
    return _Kernels(max_shared_bytes(ctx.target.arch)).mutate(stmt)


def block_shape(kernel: n.For) -> tuple[int, int, int]:
    """The threads of a fused kernel's block along x, y and z (its thread loops' extents)."""
    dims = [1, 1, 1]
    for chain in _thread_chains(kernel):
        for axis, loop in enumerate(reversed(chain)):
            if isinstance(loop.extent, n.Const):
                dims[axis] = max(dims[axis], int(loop.extent.value))
    return dims[0], dims[1], dims[2]


def shared_buffers(kernel: n.Stmt) -> dict[str, tuple[Type, int]]:
    """The shared-memory buffers of a kernel by name: element type and elements. The
    copies of one buffer that loop partitioning or specialization make are never live
    together, so a name takes its space once, at its largest size."""
    found: dict[str, tuple[Type, int]] = {}
    for a in walk_stmts(kernel):
        if isinstance(a, n.Allocate) and a.scope == "shared" and isinstance(a.size, n.Const):
            size = max(int(a.size.value), found.get(a.name, (a.type, 0))[1])
            found[a.name] = (a.type, size)
    return found


SHARED_ALIGNMENT = 128  # bytes: each shared buffer starts at a multiple (tensor-core loads)


def _aligned_bytes(t: Type, size: int) -> int:
    """The bytes a shared buffer of `size` elements of `t` takes, the next one aligned."""
    return -(-max(size, 1) * t.bytes // SHARED_ALIGNMENT) * SHARED_ALIGNMENT


def shared_offsets(shared: dict[str, tuple[Type, int]]) -> dict[str, int]:
    """Where each shared buffer starts in the block's shared memory, in bytes."""
    offsets, at = {}, 0
    for name, (t, size) in shared.items():
        offsets[name] = at
        at += _aligned_bytes(t, size)
    return offsets


def shared_bytes_of(shared: dict[str, tuple[Type, int]]) -> int:
    """The bytes a kernel's shared buffers take, each aligned as `shared_offsets` does."""
    return sum(_aligned_bytes(t, size) for t, size in shared.values())


def dynamic_shared_bytes(kernel: n.Stmt) -> int:
    """The shared memory a kernel takes at launch: all of it past 48 KB, else 0 (its
    buffers are then `__shared__` arrays)."""
    used = shared_bytes_of(shared_buffers(kernel))
    return used if used > STATIC_SHARED_BYTES else 0


@dataclass(frozen=True)
class _Hazards:
    """What phases since the last barrier did to shared memory: the buffers they read,
    the (buffer, stage) pairs they wrote (the stage from the loops around a store; -1
    where none says), and those they started asynchronous copies into (`cp.async`) that
    no `gpu_async_wait` has waited for since."""
    reads: frozenset[str] = frozenset()
    writes: frozenset[tuple[str, int]] = frozenset()
    in_flight: frozenset[tuple[str, int]] = frozenset()

    def __or__(self, other: _Hazards) -> _Hazards:
        return _Hazards(self.reads | other.reads, self.writes | other.writes,
                        self.in_flight | other.in_flight)

    def landed(self) -> _Hazards:
        """After a thread waits for its copies: they are writes (other threads see
        them after the next barrier)."""
        return _Hazards(self.reads, self.writes | self.in_flight)

    def conflicts(self, later: _Hazards) -> bool:
        """Whether a phase that does `later` must wait for these: it reads what they
        wrote, writes (or copies into) what they read, or writes what they wrote in
        another stage or in an update (a pure stage writes each point once, or the same
        value again where a shifted tail overlaps, so its own iterations need no order).
        Reading a buffer that copies in flight go to needs no barrier: they fill the
        slots of later iterations of a double-buffered loop (`double_buffering`), never
        the one read now; the reads of their slots come after a wait."""
        written = {name for name, _ in self.writes}
        later_writes = later.writes | later.in_flight
        if later.reads & written or {name for name, _ in later_writes} & self.reads:
            return True
        return any(name == other and (stage != other_stage or stage != 0)
                   for name, stage in later_writes for other, other_stage in self.writes)


_NO_HAZARDS = _Hazards()


def _shared_accesses(s: n.Stmt, shared: frozenset[str]) -> _Hazards:
    """What `s` does to the shared buffers (a tensor call's operands: read and write)."""
    reads: set[str] = set()
    writes: set[tuple[str, int]] = set()
    in_flight: set[tuple[str, int]] = set()

    def visit(x: n.Node, stage: int) -> None:
        if isinstance(x, n.For):
            found = loop_func(x.name)
            stage = stage if found is None else found[1]
        if isinstance(x, n.Load) and x.name in shared:
            reads.add(x.name)
        elif isinstance(x, n.Store) and x.name in shared:
            copied = isinstance(x.value, n.Call) and x.value.name == GPU_ASYNC_COPY
            (in_flight if copied else writes).add((x.name, stage))
        elif isinstance(x, n.TensorCall):
            for o in x.operands:
                if o.name in shared:
                    reads.add(o.name)
                    writes.add((o.name, -1))
        for child in child_nodes(x):
            visit(child, stage)
    visit(s, -1)
    return _Hazards(frozenset(reads), frozenset(writes), frozenset(in_flight))


def _thread_chains(s: n.Stmt) -> list[list[n.For]]:
    """The thread-loop nests under `s`, each as its loops outermost first."""
    found: list[list[n.For]] = []

    def visit(x: n.Stmt) -> None:
        if isinstance(x, n.For) and x.kind is n.ForKind.GPU_THREAD:
            chain = [x]
            while isinstance(chain[-1].body, n.For) and chain[-1].body.kind is x.kind:
                chain.append(chain[-1].body)
            found.append(chain)
            return
        for child in _stmt_children(x):
            visit(child)
    visit(s)
    return found


def _stmt_children(s: n.Stmt) -> list[n.Stmt]:
    match s:
        case n.Block(stmts=stmts):
            return list(stmts)
        case n.IfThenElse(then_case=t, else_case=e):
            return [t] if e is None else [t, e]
        case n.ProducerConsumer(produce=p, consume=c):
            return [p, c]
        case n.For() | n.LetStmt() | n.Allocate() | n.Atomic():
            return [s.body]
    return []


def _has_thread_loop(s: n.Stmt) -> bool:
    return any(isinstance(x, n.For) and x.kind is n.ForKind.GPU_THREAD for x in walk_stmts(s))


def _has_store(s: n.Stmt) -> bool:
    return any(isinstance(x, n.Store) for x in walk_stmts(s))


class _SeesLets(IRMutator):
    """A mutator that knows the value of each let around the node it visits."""

    def __init__(self) -> None:
        self.lets: dict[str, n.Expr] = {}

    def visit_LetStmt(self, s: n.LetStmt) -> n.Stmt:
        self.lets[s.name] = s.value
        try:
            return self.mutate_children(s)
        finally:
            del self.lets[s.name]


class _RegisterIndices(_SeesLets):
    """Accesses to a thread's own buffers ("stack": registers) at indices that are
    constants once the lets around them are seen through (`acc[min_i * 4 + min_j -
    acc.min.0 * 4 - acc.min.1 + 5]` is `acc[5]`) get the constant: CUDA keeps such an
    array in registers only when every index is a compile-time constant."""

    def __init__(self) -> None:
        super().__init__()
        self.registers: set[str] = set()

    def visit_Allocate(self, a: n.Allocate) -> n.Stmt:
        if a.scope == "stack":
            self.registers.add(a.name)
        return self.mutate_children(a)

    def _index(self, index: n.Expr) -> n.Expr:
        folded = simplify(expand_lets(index, self.lets))
        return folded if isinstance(folded, n.Const) else index

    def visit_Load(self, x: n.Load) -> n.Expr:
        x = self.mutate_children(x)
        if x.name not in self.registers:
            return x
        return n.Load(x.type, x.name, self._index(x.index), x.predicate)

    def visit_Store(self, x: n.Store) -> n.Stmt:
        x = self.mutate_children(x)
        if x.name not in self.registers:
            return x
        return n.Store(x.name, self._index(x.index), x.value, x.predicate)


class _Kernels(_SeesLets):
    """Finds the kernels (outermost block loops) under the host code and fuses each."""

    def __init__(self, shared_bytes: int):
        super().__init__()
        self.shared_bytes = shared_bytes

    def visit_For(self, loop: n.For) -> n.Stmt:
        if loop.kind is not n.ForKind.GPU_BLOCK:
            return self.mutate_children(loop)
        return _Fuse(_JoinThreadNests().mutate(loop), dict(self.lets),
                     self.shared_bytes).kernel()


class _JoinThreadNests(IRMutator):
    """The thread loops of one stage as one nest again where code sits between them (a
    Func computed at an outer thread loop, lets, the branches of a partitioned tail):
    that code runs in every thread of the inner loops, so the inner thread loop (the
    same loop in every branch) moves out around it,
    `for ty: {S; for tx: B}` -> `for ty: for tx: {S; B}`."""

    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        if loop.kind is not n.ForKind.GPU_THREAD or isinstance(loop.body, n.For):
            return loop
        stage = loop_func(loop.name)
        inner: list[n.For] = []

        def find(x: n.Stmt) -> None:
            if isinstance(x, n.For) and x.kind is n.ForKind.GPU_THREAD and \
                    loop_func(x.name) == stage:
                inner.append(x)
                return
            for child in _stmt_children(x):
                find(child)
        find(loop.body)
        if not inner or len({(t.name, t.min, t.extent) for t in inner}) != 1:
            return loop
        t = inner[0]
        bound_inside = {x.name for x in walk_stmts(loop.body)
                        if isinstance(x, (n.LetStmt, n.For, n.Allocate))}
        if (var_names(t.min) | var_names(t.extent)) & bound_inside:
            return loop
        body = rewrite(loop.body, lambda x: x.body if any(x is i for i in inner) else None)
        return n.For(loop.name, loop.min, loop.extent, loop.kind,
                     n.For(t.name, t.min, t.extent, t.kind, body))


class _Fuse:
    """One kernel: its block shape, limits, guarded thread loops, barriers."""

    def __init__(self, kernel: n.For, lets: dict[str, n.Expr], shared_bytes: int):
        self.kernel_loop = kernel
        self.label = self._label(kernel.name)
        self.dims = [1, 1, 1]
        self._measure(kernel, lets)
        threads = prod(self.dims)
        if threads > MAX_THREADS_PER_BLOCK:
            x, y, z = self.dims
            raise ScheduleError(
                f"{self.label}: its GPU blocks would have {threads} threads ({x} x {y} x {z}, "
                f"from its thread loops and those of the Funcs computed in its blocks); a "
                f"block has at most {MAX_THREADS_PER_BLOCK}: use smaller thread tiles "
                "(gpu_tile sizes), or split a thread loop and leave the inner part serial")
        self._check_warp_groups(kernel)
        shared = shared_buffers(kernel)
        used = shared_bytes_of(shared)
        if used > shared_bytes:
            parts = ", ".join(f"{name} {size * t.bytes} bytes"
                              for name, (t, size) in shared.items())
            raise ScheduleError(
                f"{self.label}: its GPU blocks would use {used} bytes of shared memory ({parts}"
                f"), more than the {shared_bytes} a block may hold on this GPU; use smaller "
                "block tiles, or store a Func in registers (compute it inside the thread "
                "loops)")
        self.shared_names = frozenset(shared)
        self.threaded = threads > 1

    def _check_warp_groups(self, kernel: n.Stmt) -> None:
        """A warp reduction's lanes (its thread loop is its stage's x loop) must be an
        aligned group of a warp: the block's x extent a multiple of the group's size."""
        for c in walk(kernel):
            if isinstance(c, n.Call) and c.name == GPU_SHUFFLE_XOR and \
                    self.dims[0] % c.args[2].value:
                width = c.args[2].value
                raise ScheduleError(
                    f"{self.label}: a warp reduction over {width} threads needs the block's "
                    f"x extent to be a multiple of {width} (each group of {width} lanes one "
                    f"aligned part of a warp), but the x thread loops of its stages make it "
                    f"{self.dims[0]}; make those extents multiples of {width}, or reduce over "
                    "fewer threads")

    @staticmethod
    def _label(loop_name: str) -> str:
        found = loop_func(loop_name)
        return loop_name if found is None else stage_label(*found)

    def _measure(self, s: n.Stmt, lets: dict[str, n.Expr]) -> None:
        """Each axis's threads: the largest constant bound of its thread-loop extents."""
        match s:
            case n.LetStmt(name=name, value=value, body=body):
                self._measure(body, {**lets, name: value})
                return
            case n.For(kind=n.ForKind.GPU_THREAD):
                chain = _thread_chains(s)[0]
                for axis, loop in enumerate(reversed(chain)):
                    bound = constant_upper_bound(simplify(expand_lets(loop.extent, lets)))
                    if bound is None:
                        raise ScheduleError(
                            f"{self._label(loop.name)}: thread loop {loop.name} has extent "
                            f"{expr_to_str(loop.extent)}, which halo can't bound by a "
                            "constant, so the block's size is unknown; make it a split's "
                            "inner loop of constant factor (gpu_tile)")
                    self.dims[axis] = max(self.dims[axis], bound)
                self._measure(chain[-1].body, lets)
                return
        for child in _stmt_children(s):
            self._measure(child, lets)

    def kernel(self) -> n.Stmt:
        loop = self.kernel_loop
        body, _ = self._phases(loop.body, _NO_HAZARDS)
        body = _RegisterIndices().mutate(body)
        return n.For(loop.name, loop.min, loop.extent, loop.kind, body)

    def _phases(self, s: n.Stmt, pending: _Hazards) -> tuple[n.Stmt, _Hazards]:
        """`s` with a barrier before each phase (work of the block's threads: a
        thread-loop nest, or stores) that touches shared memory the phases since the
        last barrier (`pending`) touched in a conflicting way (one writes what the other
        reads or writes); and what is pending after `s`."""
        if isinstance(s, n.Evaluate) and isinstance(s.value, n.Call) \
                and s.value.name == GPU_ASYNC_WAIT:
            return s, pending.landed()
        if not _has_thread_loop(s):
            if not _has_store(s):
                return s, pending
            return self._phase(n.IfThenElse(first_thread(), s) if self.threaded else s,
                               s, pending)
        match s:
            case n.For(kind=n.ForKind.GPU_THREAD):
                return self._phase(self._guarded(_thread_chains(s)[0]), s, pending)
            case n.Block(stmts=stmts):
                out: list[n.Stmt] = []
                for x in stmts:
                    x, pending = self._phases(x, pending)
                    out.append(x)
                return n.block(*out), pending
            case n.ProducerConsumer(name=name, produce=p, consume=c):
                p, pending = self._phases(p, pending)
                c, pending = self._phases(c, pending)
                return n.ProducerConsumer(name, p, c), pending
            case n.IfThenElse(condition=cond, then_case=t, else_case=e):
                # (a condition at block level is the same in every thread of the
                # block, so a barrier may go inside a branch, or before the branch for
                # what its phases wait for from before it: it then runs once)
                barrier, pending = self._reading(cond, pending)
                touched = _shared_accesses(s, self.shared_names)
                if not barrier and pending.conflicts(touched):
                    barrier, pending = [sync_threads()], _NO_HAZARDS
                t, after = self._phases(t, pending)
                if e is not None:
                    e, other = self._phases(e, pending)
                    after = after | other
                return n.block(*barrier, n.IfThenElse(cond, t, e)), after | pending
            case n.For(name=name, min=lo, extent=extent, kind=kind, body=body):
                # An inner block loop (partition_loops may branch between block loops)
                # runs once per block; any other loop's next iteration runs its phases
                # again after these, so what its body touches is pending at its start.
                # A barrier that only orders the loop after what came before (a loop
                # that fills a buffer others read before it) goes before the loop.
                if kind is n.ForKind.GPU_BLOCK:
                    body, after = self._phases(body, pending)
                    return n.For(name, lo, extent, kind, body), after | pending
                touched = _shared_accesses(body, self.shared_names)
                barrier = []
                if pending.conflicts(touched) and not touched.conflicts(touched):
                    barrier, pending = [sync_threads()], _NO_HAZARDS
                body, after = self._phases(body, pending | touched)
                return n.block(*barrier, n.For(name, lo, extent, kind, body)), after | pending
            case n.LetStmt(name=name, value=value, body=body):
                barrier, pending = self._reading(value, pending)
                body, pending = self._phases(body, pending)
                return n.block(*barrier, n.LetStmt(name, value, body)), pending
            case n.Allocate(name=name, type=t, size=size, body=body, scope=scope):
                body, pending = self._phases(body, pending)
                return n.Allocate(name, t, size, body, scope), pending
        return self._phase(s, s, pending)

    def _reading(self, e: n.Expr, pending: _Hazards) -> tuple[list[n.Stmt], _Hazards]:
        """A barrier before block-level code that computes `e` (every thread does), if
        `e` reads shared memory a pending phase wrote."""
        reads = frozenset(x.name for x in walk(e)
                          if isinstance(x, n.Load) and x.name in self.shared_names)
        if reads & {name for name, _ in pending.writes}:
            return [sync_threads()], _Hazards(reads)
        return [], pending | _Hazards(reads)

    def _phase(self, emitted: n.Stmt, s: n.Stmt, pending: _Hazards) -> tuple[n.Stmt, _Hazards]:
        touched = _shared_accesses(s, self.shared_names)
        if pending.conflicts(touched):
            return n.block(sync_threads(), emitted), touched
        return emitted, pending | touched

    def _guarded(self, chain: list[n.For]) -> n.Stmt:
        """A thread-loop nest over the whole block, its loops still one nest, the guards
        of their own extents inside the innermost."""
        guards = [simplify(n.LT(n.Var(loop.name), n.Add(loop.min, loop.extent)))
                  for axis, loop in enumerate(reversed(chain))
                  if loop.extent != const(self.dims[axis])]
        body = chain[-1].body
        if guards:
            condition = guards[0]
            for g in guards[1:]:
                condition = n.And(g, condition)
            body = n.IfThenElse(condition, body)
        for axis, loop in enumerate(reversed(chain)):
            body = n.For(loop.name, loop.min, const(self.dims[axis]), loop.kind, body)
        return body
