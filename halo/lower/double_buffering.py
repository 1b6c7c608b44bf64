"""Double buffering: a Func in a GPU block's shared memory, computed at a serial loop
inside the block, is filled for a later iteration while the current one reads it
(`f.double_buffer(stages)`; TVM's double_buffer, CUTLASS's multistage main loop,
Triton's num_stages).

The buffer gets `stages` copies (slots), each padded to a multiple of 128 bytes. Before
the loop, the producer fills the first `stages - 1` iterations' slots; iteration `ko`
then waits for its own slot, starts filling the slot of iteration `ko + stages - 1`
(the one iteration `ko - 1` read) and reads slot `(ko - min) % stages`:

    for ko in [min, min + extent):            allocate A_shared[2 * S] in shared:
      lets(ko)                                  lets(min); produce A_shared, slot 0
      allocate A_shared[S] in shared:  ──►      commit
        produce A_shared                        for ko in [min, min + extent):
        consume: ... A_shared[i] ...              wait until 0 groups are in flight
                                                  if ko + 1 < min + extent:
                                                    lets(ko + 1); produce, slot (ko + 1 - min) % 2
                                                  commit
                                                  lets(ko); ... A_shared[(ko - min) % 2 * S + i] ...

The barriers of `fuse_gpu_thread_loops` still order the block's threads: one before the
producer (no thread reads the slot it overwrites: iteration ko - 1's, read before it; and,
since each thread waited for its own copies before it, every thread's copies of this
iteration's slot have landed), and, where the producer stores at once rather than
asynchronously, one before the consumer. The copy runs while the block computes only if it
is asynchronous: a store of a plain load of global memory into the buffer (or of
`select(c, load, 0)`, a constant exterior: zeros where c is false) becomes
`gpu_async_copy` (`cp.async` in CUDA C; one group committed per iteration, so waiting
until `stages - 2` are in flight is waiting for this iteration's). That needs a Func of
one definition whose producer doesn't read it (an update's stores and loads would race
with the copies in flight), and that no other producer of the loop reads (it runs at
once, before the copies land); other stores stay synchronous, in the same slots.

The producer moves ahead of the rest of the loop body, so it may read nothing the loop
writes (but its own buffer): a ScheduleError says so otherwise. Double-buffered buffers
of one loop keep the same number of slots. Runs after storage flattening (flat,
constant-size shared buffers, indices relative to each iteration's region), for GPU
targets only; `gpu_levels` has checked where each such Func is computed and stored.
"""
from __future__ import annotations

from dataclasses import dataclass

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.substitute import substitute
from halo.ir.types import int32
from halo.ir.visitor import IRMutator, rewrite, walk
from halo.lower.context import LowerContext

GPU_ASYNC_COPY = "gpu_async_copy"      # async_copy(load): the store's value, copied later
GPU_ASYNC_COMMIT = "gpu_async_commit"  # the copies started since the last commit: a group
GPU_ASYNC_WAIT = "gpu_async_wait"      # wait(k): until at most k groups are in flight
# Each slot starts at a multiple of this many bytes (tensor-core loads want 32 at least).
SLOT_ALIGNMENT = 128
_ON_CHIP = ("shared", "stack")  # the scopes of buffers inside a kernel


def double_buffering(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Each double-buffered Func's loop pipelined over its slots (see the module)."""
    stages = {name: f.schedule.buffers for name, f in ctx.env.funcs.items()
              if f.schedule.buffers > 1}
    if not stages:
        return stmt
    on_chip = frozenset(a.name for a in walk(stmt)
                        if isinstance(a, n.Allocate) and a.scope in _ON_CHIP)
    single = frozenset(name for name in stages if len(ctx.env.funcs[name].definitions) == 1)
    return _Pipeline(stages, on_chip, single).mutate(stmt)


def async_copy(load: n.Load, condition: n.Expr | None = None) -> n.Call:
    """`load`, copied asynchronously; with `condition`, zeros where it is false."""
    args = (load,) if condition is None else (load, condition)
    return n.Call(load.type, GPU_ASYNC_COPY, args, n.CallKind.INTRINSIC)


def _sync(name: str, *args: int) -> n.Stmt:
    return n.Evaluate(n.Call(int32, name, tuple(const(a) for a in args), n.CallKind.INTRINSIC))


@dataclass(frozen=True)
class _Buffer:
    """A double-buffered Func on its loop's spine: its allocation and producer."""
    allocate: n.Allocate
    produce: n.Stmt
    slot: int  # elements a slot takes (the buffer's size, padded)


class _Pipeline(IRMutator):
    def __init__(self, stages: dict[str, int], on_chip: frozenset[str],
                 single: frozenset[str]):
        self.stages, self.on_chip, self.single = stages, on_chip, single
        self.hoisted: set[int] = set()  # (ids of) the Allocates this pass made

    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        if loop.kind not in (n.ForKind.SERIAL, n.ForKind.UNROLLED):
            return loop
        spine = _spine(loop.body)
        names = [s.name for s in spine if isinstance(s, n.Allocate) and s.name in self.stages
                 and id(s) not in self.hoisted]
        if not names:
            return loop
        counts = {self.stages[name] for name in names}
        if len(counts) > 1:
            calls = " and ".join(f"{x}.double_buffer({self.stages[x]})" for x in names)
            raise ScheduleError(f"{calls}: the Funcs are computed at the same loop "
                                f"{loop.name}, whose iterations take turns at their copies; "
                                "give them the same number of stages")
        stages = counts.pop()
        produces = [s for s in spine if isinstance(s, n.ProducerConsumer) and s.name in names]
        read = {x.name for p in produces for x in walk(p.produce) if isinstance(x, n.Load)
                and x.name in names and x.name != p.name}
        buffers = [self._buffer(name, spine, loop, asynchronous=name not in read)
                   for name in names]
        lets = [s for s in spine if isinstance(s, n.LetStmt)]
        self._check_reads(loop, buffers, lets)
        asynchronous = any(isinstance(x, n.Call) and x.name == GPU_ASYNC_COPY
                           for b in buffers for x in walk(b.produce))
        step = n.Sub(n.Var(loop.name), loop.min)  # iterations since the first
        ahead = n.Add(n.Var(loop.name), const(stages - 1))
        body = _without_producers(loop.body, names)
        body = _in_slot(body, buffers, n.Mod(step, const(stages)), loads_only=True)
        prefetch = _in_slot(self._produce(buffers, lets, loop.name, ahead, "ahead"), buffers,
                            n.Mod(n.Add(step, const(stages - 1)), const(stages)))
        end = n.Add(loop.min, loop.extent)
        inside = [n.IfThenElse(n.LT(ahead, end), prefetch), body]
        if asynchronous:
            inside = [_sync(GPU_ASYNC_WAIT, stages - 2), inside[0],
                      _sync(GPU_ASYNC_COMMIT), inside[1]]
        out: n.Stmt = n.For(loop.name, loop.min, loop.extent, loop.kind, n.block(*inside))
        prologue = []
        for p in range(stages - 1):
            first = self._produce(buffers, lets, loop.name, n.Add(loop.min, const(p)),
                                  f"first{p}")
            prologue.append(n.IfThenElse(n.LT(const(p), loop.extent),
                                         _in_slot(first, buffers, const(p))))
            if asynchronous:
                prologue.append(_sync(GPU_ASYNC_COMMIT))
        out = n.block(*prologue, out)
        for b in reversed(buffers):
            a = b.allocate
            out = n.Allocate(a.name, a.type, const(b.slot * stages), out, a.scope)
            self.hoisted.add(id(out))
        return out

    def _buffer(self, name: str, spine: list[n.Stmt], loop: n.For,
                asynchronous: bool) -> _Buffer:
        allocate = next(s for s in spine if isinstance(s, n.Allocate) and s.name == name)
        produce = next((s.produce for s in spine
                        if isinstance(s, n.ProducerConsumer) and s.name == name), None)
        if produce is None or not isinstance(allocate.size, n.Const):
            raise ScheduleError(f"{name}.double_buffer(...): {name} is not computed at loop "
                                f"{loop.name} where it is stored (only there can its copies "
                                "take turns); compute it there, outside any specialization")
        if asynchronous and name in self.single and not any(
                isinstance(x, n.Load) and x.name == name for x in walk(produce)):
            produce = rewrite(produce, lambda x: self._asynchronous(x, name))
        element = allocate.type.bytes
        per_slot = max(SLOT_ALIGNMENT // element, 1)
        slot = -(-int(allocate.size.value) // per_slot) * per_slot
        return _Buffer(allocate, produce, slot)

    def _asynchronous(self, s: n.Node, name: str) -> n.Node | None:
        """A store into buffer `name` of a plain load of global memory as an asynchronous
        copy; of `select(c, load, 0)` (a constant exterior), a copy of zeros where c is
        false. (Not the stores of Funcs the producer computes for itself: it reads them at
        once.)"""
        if not isinstance(s, n.Store) or s.name != name or s.predicate is not None:
            return None
        match s.value:
            case n.Load() as load if self._global(load):
                return n.Store(s.name, s.index, async_copy(load))
            case n.Select(condition=c, true_value=n.Load() as load, false_value=n.Const(value=0)) \
                    if self._global(load):
                return n.Store(s.name, s.index, async_copy(load, c))
        return None

    def _global(self, load: n.Load) -> bool:
        return load.name not in self.on_chip and load.predicate is None

    def _check_reads(self, loop: n.For, buffers: list[_Buffer], lets: list[n.LetStmt]) -> None:
        """The producers run an iteration (or more) early: they may read nothing the
        rest of the loop writes."""
        rest = _without_producers(loop.body, [b.allocate.name for b in buffers])
        written = {x.name for x in walk(rest) if isinstance(x, n.Store)}
        for b in buffers:
            for x in [*walk(b.produce), *(y for let in lets for y in walk(let.value))]:
                if isinstance(x, n.Load) and x.name in written:
                    name = b.allocate.name
                    raise ScheduleError(
                        f"{name}.double_buffer(...): {name} reads {x.name}, which is written "
                        f"in the same loop {loop.name}, so {name} can't be computed an "
                        f"iteration ahead; compute {x.name} outside that loop, or leave out "
                        "double_buffer")

    @staticmethod
    def _produce(buffers: list[_Buffer], lets: list[n.LetStmt], var: str, at: n.Expr,
                 suffix: str) -> n.Stmt:
        """The producers for iteration `at` of loop `var`, under the loop's lets (renamed)."""
        inner: n.Stmt = n.block(*(b.produce for b in buffers))
        for let in reversed(lets):
            inner = n.LetStmt(let.name, let.value, inner)
        return _renamed(substitute(inner, {var: at}), suffix)


def _spine(s: n.Stmt) -> list[n.Stmt]:
    """The lets, allocations and producer-consumer nodes a loop body opens with, in
    order (down each consumer)."""
    spine = []
    while isinstance(s, (n.LetStmt, n.Allocate, n.ProducerConsumer)):
        spine.append(s)
        s = s.consume if isinstance(s, n.ProducerConsumer) else s.body
    return spine


def _without_producers(s: n.Stmt, names: list[str]) -> n.Stmt:
    """The loop body without the Allocates and producers of `names` (moved out)."""
    match s:
        case n.Allocate(name=name, body=body) if name in names:
            return _without_producers(body, names)
        case n.ProducerConsumer(name=name, consume=consume) if name in names:
            return _without_producers(consume, names)
        case n.LetStmt(name=name, value=value, body=body):
            return n.LetStmt(name, value, _without_producers(body, names))
        case n.Allocate(name=name, type=t, size=size, body=body, scope=scope):
            return n.Allocate(name, t, size, _without_producers(body, names), scope)
        case n.ProducerConsumer(name=name, produce=produce, consume=consume):
            return n.ProducerConsumer(name, produce, _without_producers(consume, names))
    return s


class _Slots(IRMutator):
    """Accesses of the buffers offset to a slot (`offset` * the buffer's slot size)."""

    def __init__(self, sizes: dict[str, int], offset: n.Expr, loads_only: bool):
        self.sizes, self.offset, self.loads_only = sizes, offset, loads_only

    def _index(self, name: str, index: n.Expr) -> n.Expr:
        return n.Add(index, n.Mul(self.offset, const(self.sizes[name])))

    def visit_Load(self, x: n.Load) -> n.Expr:
        x = self.mutate_children(x)
        if x.name not in self.sizes:
            return x
        return n.Load(x.type, x.name, self._index(x.name, x.index), x.predicate)

    def visit_Store(self, x: n.Store) -> n.Stmt:
        x = self.mutate_children(x)
        if x.name not in self.sizes or self.loads_only:
            return x
        return n.Store(x.name, self._index(x.name, x.index), x.value, x.predicate)


def _in_slot(s: n.Stmt, buffers: list[_Buffer], offset: n.Expr,
             loads_only: bool = False) -> n.Stmt:
    sizes = {b.allocate.name: b.slot for b in buffers}
    return _Slots(sizes, offset, loads_only).mutate(s)


def _renamed(s: n.Stmt, suffix: str) -> n.Stmt:
    """`s` with every let it binds renamed `name.suffix` (names stay unique: a copy of
    a producer sits beside the original's scope)."""
    names = {x.name: f"{x.name}.{suffix}" for x in walk(s) if isinstance(x, (n.LetStmt, n.Let))}
    return _Rename(names).mutate(s)


class _Rename(IRMutator):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Var(self, v: n.Var) -> n.Expr:
        return n.Var(self.names[v.name], v.type) if v.name in self.names else v

    def visit_LetStmt(self, s: n.LetStmt) -> n.Stmt:
        s = self.mutate_children(s)
        return n.LetStmt(self.names.get(s.name, s.name), s.value, s.body)

    def visit_Let(self, e: n.Let) -> n.Expr:
        e = self.mutate_children(e)
        return n.Let(self.names.get(e.name, e.name), e.value, e.body)
