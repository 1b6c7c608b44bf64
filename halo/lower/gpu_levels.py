"""GPU levels: where each part of a pipeline lowered for a GPU runs, and the memory each
Func's buffer lives in.

Code runs at one of three levels: on the host (outside every GPU block loop), at block
level (inside the block loops of one kernel, outside its thread loops: every thread of the
block runs it), or at thread level (inside thread loops). This pass, for GPU targets only,
runs after bounds inference and before storage flattening. It checks:

* every store into a Func runs inside a kernel: a stage computed at root must bind loops
  to GPU blocks. A Func left without a GPU binding is a ScheduleError that names it and
  shows the `gpu_tile` call that would place it (halo does not silently run a stage on the
  host: a GPU pipeline whose stage crawls on one CPU thread would be a trap);
* thread loops sit inside block loops, and a kernel's block loops (or thread loops) are one
  nest: a Func computed inside a block binds only threads, one inside threads binds none;
* the memory each Realize asks for suits its level, and chooses it: on the host, device
  memory ("global"); at block level, the block's shared memory ("shared", the default
  there, as in Halide), or registers ("local") where each thread keeps to a part of its
  own (`block_registers` checks that); at thread level, the thread's registers ("local").
"""
from __future__ import annotations

import re
from enum import Enum

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.visitor import IRMutator, walk
from halo.lower.context import LowerContext
from halo.schedule.records import PlacementKind, stage_label


class Level(Enum):
    HOST = "host"
    BLOCK = "block"
    THREAD = "thread"


_BINDINGS = (n.ForKind.GPU_BLOCK, n.ForKind.GPU_THREAD)
# Loop names are "<func>.s<stage>.<var>..." (schedule_functions).
_LOOP_NAME = re.compile(r"(?P<func>.+?)\.s(?P<stage>\d+)\.")
# The memory each level allows, by the scope a schedule asked for: None means refused.
_SCOPES = {
    Level.HOST: {"auto": "global", "global": "global", "stack": "global"},
    Level.BLOCK: {"auto": "shared", "shared": "shared", "local": "local"},
    Level.THREAD: {"auto": "local", "local": "local", "stack": "local"},
}
_WHERE = {Level.HOST: "at root, outside every GPU block loop",
          Level.BLOCK: "inside a GPU block loop, outside the thread loops",
          Level.THREAD: "inside GPU thread loops"}
_FITS = {"global": "compute it at root (or at a loop outside the block loops)",
         "shared": "compute it at a GPU block loop (compute_at(consumer, block var))",
         "local": "compute it inside the thread loops (compute_at(consumer, thread var))",
         "stack": "compute it inside the thread loops (compute_at(consumer, thread var))"}


def gpu_levels(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Check the GPU levels of `stmt` and set each Realize's scope (see the module)."""
    return _Levels(ctx).mutate(stmt)


def loop_func(loop_name: str) -> tuple[str, int] | None:
    """The Func and stage index a loop variable belongs to, from its name."""
    m = _LOOP_NAME.match(loop_name)
    return None if m is None else (m["func"], int(m["stage"]))


class _Levels(IRMutator):
    def __init__(self, ctx: LowerContext):
        self.ctx = ctx
        self.level = Level.HOST
        self.loops: list[n.For] = []  # the enclosing loops, outermost first

    def visit_For(self, loop: n.For) -> n.Stmt:
        outer_level = self.level
        chained = bool(self.loops) and self.loops[-1].kind is loop.kind and \
            loop_func(self.loops[-1].name) == loop_func(loop.name)
        self.level = self._entered(self.level, loop.kind, loop.name, self._stage_of(loop.name),
                                   chained)
        self.loops.append(loop)
        try:
            return self.mutate_children(loop)
        finally:
            self.loops.pop()
            self.level = outer_level

    def visit_ProducerConsumer(self, pc: n.ProducerConsumer) -> n.Stmt:
        """A Func whose loops are gone (it computes an empty region here, so
        simplification dropped them) still has its bindings checked, from its schedule:
        whether a schedule is legal doesn't depend on the sizes."""
        funcs = self.ctx.env.funcs
        own_loops = (x for x in walk(pc.produce) if isinstance(x, n.For)
                     and (loop_func(x.name) or ("",))[0] == pc.name)
        if pc.name in funcs and next(own_loops, None) is None:
            for k, stage in enumerate(funcs[pc.name].schedule.stages):
                level, previous = self.level, None
                for d in stage.dims:  # outermost first
                    level = self._entered(level, d.kind, d.name, stage_label(pc.name, k),
                                          previous is d.kind)
                    previous = d.kind
        return self.mutate_children(pc)

    @staticmethod
    def _entered(level: Level, kind: n.ForKind, name: str, stage: str, chained: bool
                 ) -> Level:
        """The level inside loop `name` of `kind` entered at `level`, after checking it
        may sit there; `chained`: the loop just outside binds the same way in the same
        stage (the loops of one binding are one nest)."""
        if kind is n.ForKind.VTHREAD and level is not Level.BLOCK:
            raise ScheduleError(f"{stage}: vthread loop {name} runs {_WHERE[level]}; vthreads "
                                "go inside the block loops and outside the thread loops")
        if kind not in _BINDINGS:
            return level
        block = kind is n.ForKind.GPU_BLOCK
        if block and level is not Level.HOST and not chained:
            raise ScheduleError(
                f"{stage}: loop {name} is bound to GPU blocks but runs "
                f"{_WHERE[level]} of another stage's kernel; a Func computed inside a "
                "kernel binds only gpu_threads (or none), its blocks are its consumer's")
        if not block and level is Level.HOST:
            raise ScheduleError(
                f"{stage}: thread loop {name} is outside every GPU block loop; bind the "
                "loops outside it to blocks (gpu_blocks, or gpu_tile for both), or compute "
                "this Func inside its consumer's block loop (compute_at)")
        if not block and level is Level.THREAD and not chained:
            raise ScheduleError(
                f"{stage}: thread loop {name} runs inside another stage's GPU thread "
                "loops; a Func computed inside thread loops runs in one thread and binds no "
                "loops (compute it at the block loop to share its work among the threads)")
        return Level.BLOCK if block else Level.THREAD

    def visit_Realize(self, r: n.Realize) -> n.Stmt:
        funcs = self.ctx.env.funcs
        buffered = r.name in funcs and funcs[r.name].schedule.buffers > 1
        if buffered:
            self._check_double_buffer(r.name)
        scope = _SCOPES[self.level].get(r.scope)
        if scope is None:
            raise ScheduleError(
                f"{r.name}.store_in({r.scope!r}): {r.name} is computed {_WHERE[self.level]}, "
                f"where its buffer can't be in {r.scope!r} memory; {_FITS[r.scope]}, or leave "
                f"out store_in to let halo choose")
        if buffered and scope != "shared":
            raise ScheduleError(f"{r.name}.double_buffer(...): {r.name} is stored in {scope!r} "
                                "memory; double buffering is for buffers in the block's shared "
                                "memory (leave out store_in, or store_in('shared'))")
        r = self.mutate_children(r)
        return n.Realize(r.name, r.type, r.bounds, r.body, scope)

    def _check_double_buffer(self, name: str) -> None:
        """A double-buffered Func is stored where it is computed, at a serial loop inside
        the blocks (whose iterations its copies take turns at). (A loop
        of one iteration is gone by now: nothing to take turns at, the Func is left as
        it is.)"""
        call = f"{name}.double_buffer(...)"
        sched = self.ctx.env.funcs[name].schedule
        level = self.ctx.compute_levels[name]
        kind = None
        if level.kind is PlacementKind.AT:
            stage = self.ctx.env.funcs[level.func].schedule.stages[level.stage]
            kind = next((d.kind for d in stage.dims if d.name == level.var), None)
        if self.level is not Level.BLOCK or kind not in (n.ForKind.SERIAL, n.ForKind.UNROLLED):
            where = _WHERE[self.level] if self.level is not Level.BLOCK else \
                f"at {kind.value + ' loop ' + level.var if kind else 'its block loop'}"
            raise ScheduleError(
                f"{call}: {name} is computed {where}; double buffering needs it computed and "
                "stored at a serial loop inside the GPU blocks, outside the thread loops (the "
                "k loop of its consumer: compute_at(consumer, ko)), whose iterations take "
                "turns at its copies")
        if sched.store_level is not None and sched.store_level != sched.compute_level:
            raise ScheduleError(f"{call}: {name} is stored at another loop than it is "
                                "computed at; double buffering keeps its copies at the loop "
                                "that computes it: leave out store_at")

    def visit_Provide(self, p: n.Provide) -> n.Stmt:
        if self.level is Level.HOST:
            raise ScheduleError(self._unbound(p.name))
        return p

    def _stage_of(self, loop_name: str) -> str:
        found = loop_func(loop_name)
        return loop_name if found is None else stage_label(*found)

    def _unbound(self, func: str) -> str:
        stages = [found[1] for found in (loop_func(loop.name) for loop in self.loops)
                  if found is not None and found[0] == func]
        label = stage_label(func, stages[-1] if stages else 0)
        f = self.ctx.env.funcs[func]
        names = [a.name for a in f.args]
        if len(names) >= 2:
            y, x = names[-2:]
            line = f"{label}.gpu_tile({y}, {x}, {y}o, {x}o, {y}i, {x}i, 8, 32)"
        elif names:
            line = f"{label}.gpu_tile({names[0]}, {names[0]}o, {names[0]}i, 128)"
        else:
            return (f"{label} runs on the host: a 0-dimensional Func has no loop to bind to "
                    f"the GPU; compute {func} inside its consumer's kernel (compute_at)")
        return (f"{label} binds no loop to the GPU, so on target 'cuda' it would run on the "
                f"host; bind its loops (a Func computed at root is a kernel of its own), "
                f"e.g. {line}, or compute {func} inside its consumer's kernel (compute_at)")
