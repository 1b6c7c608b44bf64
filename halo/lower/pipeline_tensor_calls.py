"""A tensor call pipelined with its loop across the loop's barrier (GPU): CUTLASS's
multistage main loop, where a warp loads the first operands of its next k step before it
multiplies the last of this one.

`double_buffering` and `fuse_gpu_thread_loops` leave a pipelined reduction's k loop as

    for ko:
        gpu_async_wait(S - 2)        # this step's slot has landed ...
        gpu_sync_threads()           # ... for every thread, and all of the last one's
                                     #     reads are done
        <copies of step ko + S - 1 into the slot the last step read>
        gpu_async_commit()
        for warps, lanes: mma.update(a=A_shared[.. ko % S ..], b=B_shared[..])

so each step's first fragments (an `ldmatrix` per tile) are loaded after the barrier,
with nothing for the tensor cores to do meanwhile. This pass rotates the loop:

    for ko:
        if ko == min: gpu_async_wait(S - 2); gpu_sync_threads()
        for warps, lanes: mma.update(a=.., b=..,
            ahead=(a=A_shared[.. (ko + 1) % S ..], ..),   # the operands of step ko + 1
            overlap=<the copies and their commit>,
            handoff=<gpu_async_wait(S - 2); gpu_sync_threads()>)

The call's emitter (`halo.intrinsics.mma_f16_f32`) loads step ko + 1's first fragments
(from `ahead`) after the handoff and before its last multiplies, and issues the copies
(`overlap`) after its first ones; an emitter that does neither gets the overlap before its
code and the handoff after it (the CUDA backend's default), which is the loop as it was
with the barrier moved from the top of each iteration to the end of the one before.

It applies where that is sound, which the loop's structure shows:
* the body is [wait, barrier, work, call], the call the innermost statement of thread
  loops that span the whole block (no guard: every thread reaches the handoff's
  barrier), the work without barriers or waits of its own (only copies in flight, which
  fill slots the call doesn't read this step: a barrier would separate them otherwise);
* the call's output is not in shared memory (its writes need the barrier where it was);
* every operand's index depends on the loop only through a remainder by a constant (a
  slot of a multi-buffered array), so reading `ahead` in the last iteration stays
  inside the buffer.
It runs after `fuse_gpu_thread_loops`, which places the barriers it moves.
"""
from __future__ import annotations

from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.substitute import substitute
from halo.ir.visitor import IRMutator, child_nodes, walk
from halo.lower.context import LowerContext
from halo.lower.double_buffering import GPU_ASYNC_WAIT
from halo.lower.fuse_gpu_thread_loops import SYNC_THREADS, block_shape, shared_buffers


def pipeline_tensor_calls(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Each kernel's tensor calls pipelined with their loops where sound (the module)."""
    return _Kernels().mutate(stmt)


class _Kernels(IRMutator):
    def visit_For(self, loop: n.For) -> n.Stmt:
        if loop.kind is not n.ForKind.GPU_BLOCK:
            return self.mutate_children(loop)
        return _Loops(block_shape(loop), frozenset(shared_buffers(loop))).mutate(loop)


class _Loops(IRMutator):
    def __init__(self, block: tuple[int, int, int], shared: frozenset[str]):
        self.block, self.shared = block, shared

    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        if loop.kind is not n.ForKind.SERIAL:
            return loop
        return self._rotated(loop) or loop

    def _rotated(self, loop: n.For) -> n.Stmt | None:
        if not isinstance(loop.body, n.Block) or len(loop.body.stmts) < 3:
            return None
        wait, barrier, *work, last = loop.body.stmts
        if not (_calls(wait, GPU_ASYNC_WAIT) and _calls(barrier, SYNC_THREADS)):
            return None
        chain, call = self._warp_nest(last)
        if call is None or any(_calls(x, GPU_ASYNC_WAIT) or _calls(x, SYNC_THREADS)
                               for s in work for x in walk(s)):
            return None
        out = call.operands[0]
        if isinstance(out, n.Load) and out.name in self.shared:
            return None
        if any(_varies_outside_remainders(op, loop.name) for op in call.operands):
            return None
        step = n.Add(n.Var(loop.name), const(1))
        ahead = tuple(simplify(substitute(op, {loop.name: step})) for op in call.operands)
        first = n.EQ(n.Var(loop.name), loop.min)
        handoff = n.block(wait, barrier)
        pipelined = n.TensorCall(call.name, call.intrinsic, call.part, call.operand_names,
                                 call.operands, call.strides, ahead, first,
                                 n.block(*work) if work else None, handoff)
        for t in reversed(chain):
            pipelined = n.For(t.name, t.min, t.extent, t.kind, pipelined)
        body = n.block(n.IfThenElse(first, handoff), pipelined)
        return n.For(loop.name, loop.min, loop.extent, loop.kind, body)

    def _warp_nest(self, s: n.Stmt) -> tuple[list[n.For], n.TensorCall | None]:
        """The thread loops around a warp-scoped tensor call that is all of `s`, if they
        span the whole block unguarded (fused thread loops are full where unguarded)."""
        chain: list[n.For] = []
        while isinstance(s, n.For) and s.kind is n.ForKind.GPU_THREAD:
            chain.append(s)
            s = s.body
        if not isinstance(s, n.TensorCall) or s.first is not None or \
                getattr(s.intrinsic, "scope", "thread") != "warp":
            return chain, None
        spans = [1, 1, 1]
        for axis, t in enumerate(reversed(chain)):
            if axis > 2 or t.min != const(0) or not isinstance(t.extent, n.Const):
                return chain, None
            spans[axis] = int(t.extent.value)
        return chain, (s if tuple(spans) == tuple(self.block) else None)


def _calls(s: n.Node, name: str) -> bool:
    return isinstance(s, n.Evaluate) and isinstance(s.value, n.Call) and s.value.name == name


def _varies_outside_remainders(e: n.Expr, name: str) -> bool:
    """Whether `e` depends on variable `name` other than through `x % c`, c a constant."""
    match e:
        case n.Var(name=v):
            return v == name
        case n.Mod(b=n.Const()):
            return False
    return any(_varies_outside_remainders(c, name) for c in child_nodes(e))
