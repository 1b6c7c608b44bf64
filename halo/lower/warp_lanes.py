"""Warp lanes: a tensor intrinsic of warp scope (`halo.Intrinsic(..., scope="warp")`, the
tensor-core ones of `halo.intrinsics`) runs each call on the 32 threads of a warp together.

A schedule says which warp runs a call the way it says which thread runs a point: the
loops around a tensorized nest that the stage binds with `gpu_threads` number the warps
(one "thread" of the schedule is one warp). This pass, for GPU targets only, gives them
their lanes: a thread loop of 32 lanes, innermost of the stage's thread loops (so it is
`threadIdx.x`, and the stage's own thread loops take y and z), around everything those
thread loops hold:

    for wy in gpu_thread(2):                    for wy in gpu_thread(2):
      for wx in gpu_thread(2):           ->       for wx in gpu_thread(2):
        for t in range(2):                          for lane in gpu_thread(32):
          mma(C[..], A[..], B[..])                    for t in range(2):
                                                        mma(C[..], A[..], B[..])

Every lane runs the loops, lets and branches (none depends on the lane, so the warp stays
together) and the warp-scoped calls; anything else with an effect (the loops a tail guard
keeps for tiles the call can't take, a thread-scoped call) runs on lane 0 only. A Func
computed inside a warp's thread loops (storage per thread) is refused, and so is a stage
binding three loops to threads (the lanes need one of CUDA's three axes).
Runs after gpu_levels (which checks the thread loops as the schedule wrote them) and before
storage flattening.
"""
from __future__ import annotations

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.visitor import IRMutator, walk
from halo.lower.context import LowerContext
from halo.lower.gpu_levels import loop_func
from halo.schedule.records import stage_label

WARP_SIZE = 32
LANE = "warp_lane"  # the last part of a lane loop's name: "<func>.s<stage>.warp_lane"


def warp_lanes(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Each warp-scoped tensor call with a loop of its warp's lanes (see the module)."""
    if not any(_is_warp_call(x) for x in walk(stmt)):
        return stmt
    return _Lanes().mutate(stmt)


def _is_warp_call(x: object) -> bool:
    return isinstance(x, n.TensorCall) and getattr(x.intrinsic, "scope", "thread") == "warp"


def _has_warp_call(s: n.Stmt) -> bool:
    return any(_is_warp_call(x) for x in walk(s))


class _Lanes(IRMutator):
    def __init__(self) -> None:
        self.threads: list[n.For] = []  # the enclosing thread loops, outermost first

    def visit_For(self, loop: n.For) -> n.Stmt:
        if loop.kind is not n.ForKind.GPU_THREAD or not _has_warp_call(loop.body):
            return self.mutate_children(loop)
        if isinstance(loop.body, n.For) and loop.body.kind is n.ForKind.GPU_THREAD:
            self.threads.append(loop)
            try:
                return self.mutate_children(loop)
            finally:
                self.threads.pop()
        chain = [*self.threads, loop]
        return n.For(loop.name, loop.min, loop.extent, loop.kind,
                     _lane_loop(loop.body, chain))

    def visit_TensorCall(self, call: n.TensorCall) -> n.Stmt:
        if _is_warp_call(call):  # at block level: no thread loops of its stage around it
            return _lane_loop(call, [])
        return call


def _lane_loop(body: n.Stmt, chain: list[n.For]) -> n.Stmt:
    """`body` (what thread loops `chain` hold) run by the 32 lanes of a warp."""
    calls = [x for x in walk(body) if _is_warp_call(x)]
    if len(chain) >= 3:
        where = _label(chain[-1].name)
        raise ScheduleError(
            f"{where}: it binds {len(chain)} loops to GPU threads around the warp-scoped "
            f"{calls[0].name}, whose 32 lanes need one of CUDA's three thread axes; bind at "
            "most 2 loops (each thread of the schedule is a warp)")
    found = loop_func(chain[-1].name) if chain else None
    prefix = f"{found[0]}.s{found[1]}" if found else f"{calls[0].name}"
    lane = n.Var(f"{prefix}.{LANE}")
    return n.For(lane.name, const(0), const(WARP_SIZE), n.ForKind.GPU_THREAD,
                 _Lane0(lane).mutate(body))


def _label(loop_name: str) -> str:
    found = loop_func(loop_name)
    return loop_name if found is None else stage_label(*found)


class _Lane0(IRMutator):
    """What only one lane of a warp may do, on lane 0; warp calls on every lane."""

    def __init__(self, lane: n.Var):
        self.lane = lane

    def _once(self, s: n.Stmt) -> n.Stmt:
        return n.IfThenElse(n.EQ(self.lane, const(0)), s)

    def visit_TensorCall(self, call: n.TensorCall) -> n.Stmt:
        return call if _is_warp_call(call) else self._once(call)

    def visit_Provide(self, p: n.Provide) -> n.Stmt:
        return self._once(p)

    def visit_Atomic(self, a: n.Atomic) -> n.Stmt:
        return self._once(a)

    def visit_Realize(self, r: n.Realize) -> n.Stmt:
        call = next(x for x in walk(r) if _is_warp_call(x)) if _has_warp_call(r) else None
        what = f"the warp-scoped {call.name}" if call else "a warp-scoped call"
        raise ScheduleError(
            f"{r.name} is computed inside the thread loops around {what}, where each of a "
            f"warp's 32 threads would hold a copy; compute {r.name} at a GPU block loop "
            "(shared memory, compute_at(consumer, block var)) or outside the kernel")

    def visit_For(self, loop: n.For) -> n.Stmt:
        if not _has_warp_call(loop):
            return self._once(loop) if _has_effect(loop) else loop
        return self.mutate_children(loop)

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        if not _has_warp_call(s):
            return self._once(s) if _has_effect(s) else s
        return self.mutate_children(s)


def _has_effect(s: n.Stmt) -> bool:
    return any(isinstance(x, (n.Provide, n.TensorCall, n.Realize)) for x in walk(s))
