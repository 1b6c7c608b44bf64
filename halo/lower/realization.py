"""Decide where each Func is computed and stored, applying the defaults and rejecting
placements that can't work before any loop is built.

It also checks the loop records that no pass lowers for this target (GPU bindings).
Defaults (ARCHITECTURE.md): outputs are computed at root; a pure Func with no placement
is inlined; a Func with update definitions is computed at root unless placed, but for an
inline reduction (`halo.sum(e)`, ...), which is computed at the innermost loop
of the one stage that uses it, as in Halide (`inline_reduction_level`).
"""
from __future__ import annotations

from halo.analysis.loops import Fuse, Split
from halo.errors import ScheduleError
from halo.ir.nodes import ForKind
from halo.lang.reduction_origins import callers
from halo.lower.context import LowerContext
from halo.schedule.conditions import condition_text
from halo.schedule.gpu import GPU_BINDINGS, nesting_problem
from halo.schedule.records import (
    INLINE,
    ROOT,
    LoopLevel,
    MemoryScope,
    PlacementKind,
    StageSchedule,
    stage_label,
)
from halo.schedule.rfactor import warp_point_loops
from halo.target import Target, TargetKind


def decide_realizations(stmt: None, ctx: LowerContext) -> None:
    """Fill `ctx.compute_levels` and `ctx.store_levels` for every Func of the pipeline.
    The first pass: there is no IR yet (`stmt` is None), and it builds none."""
    for name, f in ctx.env.funcs.items():
        sched = f.schedule
        level = sched.compute_level
        has_updates = len(f.definitions) > 1
        if name in ctx.outputs:
            if level is not None and level.kind is not PlacementKind.ROOT:
                raise ScheduleError(
                    f"{name}.compute_{level.kind.value}(...): {name} "
                    "is an output of the pipeline, so it is always computed at root; schedule "
                    "its loops instead, or place the Funcs it reads")
            level = ROOT
        elif level is None:
            level = ROOT if has_updates else INLINE
        if not (sched.cache and sched.memory_scope == sched.cache.scope):  # its own scope
            _check_scope(name, sched.memory_scope, level.kind, name in ctx.outputs)
        if level.kind is PlacementKind.INLINE:
            _check_inlinable(f, has_updates, explicit=sched.compute_level is not None)
            if sched.store_level is not None:
                raise ScheduleError(f"{name}.store_{sched.store_level.kind.value}(...): {name} is "
                                    "computed inline, so it has no storage; add "
                                    f"{name}.compute_root() or {name}.compute_at(...)")
        ctx.compute_levels[name] = level
        ctx.store_levels[name] = sched.store_level or level
        _check_loop_records(f, ctx.target)
        if sched.storage_order is not None and (name in ctx.outputs or
                                                level.kind is PlacementKind.INLINE):
            why = "an output of the pipeline, stored in the array passed to it" \
                if name in ctx.outputs else "computed inline, so it has no storage"
            raise ScheduleError(f"{name}.reorder_storage({', '.join(sched.storage_order)}): "
                                f"{name} is {why}; reorder_storage applies to the Funcs "
                                "that have a buffer of their own (compute_root or "
                                "compute_at)")
        if sched.buffers > 1 and ctx.target.kind is not TargetKind.CUDA:
            raise ScheduleError(
                f"{name}.double_buffer(...): double buffering overlaps the copies into a GPU "
                "block's shared memory with the block's arithmetic, so it needs "
                "Target('cuda'); leave it out of schedules for the host")
    for name, f in ctx.env.funcs.items():
        if f.schedule.inline_reduction and f.schedule.compute_level is None and \
                name not in ctx.outputs:
            level = inline_reduction_level(f, ctx)
            ctx.compute_levels[name] = level
            ctx.store_levels[name] = f.schedule.store_level or level


def inline_reduction_level(f, ctx: LowerContext) -> LoopLevel:
    """Where an unplaced inline reduction is computed: at the innermost loop of the one
    stage that uses it, looking through the inlined pure Funcs between (their uses are
    their consumer's). Not inside a vectorized loop (the reduction would run serially in
    it, turning the vector loop serial): at the innermost loop outside those. At root
    where it is used by several stages or there is no such loop. `ctx.compute_levels`
    holds every other Func's level; reductions that use reductions are placed consumer
    first."""
    funcs = ctx.env.funcs
    users = callers(f, funcs)
    while len(users) == 1:
        g, k = users[0]
        if g.schedule.inline_reduction and g.schedule.compute_level is None and \
                g.name not in ctx.outputs:
            ctx.compute_levels[g.name] = inline_reduction_level(g, ctx)
        if ctx.compute_levels[g.name].kind is not PlacementKind.INLINE:
            return innermost_scalar_loop(g.name, k, g.schedule.stages[k])
        users = callers(g, funcs)
    return ROOT


def innermost_scalar_loop(func: str, k: int, stage: StageSchedule) -> LoopLevel:
    """The innermost loop of stage `k` of `func` that every variant of the stage has,
    made by the same splits and fuses, and none vectorizes (ROOT if none)."""
    variants = [(v, _derivations(v)) for v in stage.variants()]
    main = variants[0][1]
    for d in reversed(stage.dims):
        found = [(v.find(d.name), made.get(d.name)) for v, made in variants]
        if all(x is not None and x.kind is not ForKind.VECTORIZED and how == main[d.name]
               for x, how in found):
            return LoopLevel(PlacementKind.AT, func, k, d.name)
    return ROOT


def _derivations(sched: StageSchedule) -> dict[str, tuple]:
    """How each loop of a stage was made: the chain of splits and fuses from the
    definition's dimensions (a loop of another variant with the same chain is the same
    loop)."""
    made: dict[str, tuple] = {}
    for t in sched.transforms:
        if isinstance(t, Split):
            base = made.pop(t.old, (t.old,))
            made[t.outer], made[t.inner] = (*base, t, "outer"), (*base, t, "inner")
        elif isinstance(t, Fuse):
            made[t.fused] = (made.pop(t.outer, (t.outer,)), made.pop(t.inner, (t.inner,)), t)
    return {d.name: made.get(d.name, (d.name,)) for d in sched.dims}


def _check_scope(name: str, scope: MemoryScope, level: PlacementKind, is_output: bool) -> None:
    if scope is MemoryScope.AUTO:
        return
    if is_output and scope is not MemoryScope.GLOBAL:
        raise ScheduleError(f"{name}.store_in({scope.value!r}): {name} is an output of the "
                            "pipeline, so it is stored in the array passed to realize(); "
                            "store_in applies to the Funcs it reads")
    if level is PlacementKind.INLINE:
        raise ScheduleError(f"{name}.store_in({scope.value!r}): {name} is computed inline, so it "
                            f"has no storage; add {name}.compute_root() or "
                            f"{name}.compute_at(...)")


def _check_loop_records(f, target: Target) -> None:
    """GPU bindings must still nest properly (a reorder after binding may have broken
    them) and need a GPU target."""
    for k, stage in enumerate(f.schedule.stages):
        label = stage_label(f.name, k)
        variants = [(label, stage), *((f"{label}.specialize({condition_text(s.condition.node)})",
                                      s.schedule) for s in stage.specializations)]
        for where, sched in variants:
            points = warp_point_loops(f.name, f.definitions[k], sched) if k > 0 else None
            problem = nesting_problem(sched.dims, sched.atomic or sched.allow_races, points)
            if problem is None and k > 0:
                problem = f.update(k - 1)._reduction_order_problem(sched.dims, sched)
            if problem is not None:
                raise ScheduleError(f"{where}: {problem}. The loops of {where} are, outermost "
                                    f"first: {', '.join(sched.dim_names())}")
            bound = [f"{d.name} ({d.kind.value})" for d in sched.dims if d.kind in GPU_BINDINGS]
            if bound and target.kind is not TargetKind.CUDA:
                raise ScheduleError(
                    f"{where} binds loops to the GPU ({', '.join(bound)}), which needs "
                    f"target 'cuda'; this pipeline is being lowered for {target.name!r}. Lower it "
                    "for cuda, or remove the gpu_blocks/gpu_threads/gpu_tile/vthread calls")


def _check_inlinable(f, has_updates: bool, explicit: bool) -> None:
    name = f.name
    if has_updates:
        raise ScheduleError(f"{name}.compute_inline(): {name} has update definitions, which "
                            "can't be substituted into their uses; use compute_root() or "
                            "compute_at(...)")
    stage = f.schedule.stages[0]
    if stage.transforms or stage.specializations or \
            any(d.kind is not ForKind.SERIAL for d in stage.dims):
        how = "compute_inline() was called" if explicit else \
            "it is computed inline (the default for a pure Func that is not an output)"
        raise ScheduleError(f"{name} has a loop schedule (split/reorder/vectorize/...), but "
                            f"{how}, so it has no loops of its own; add {name}.compute_root() "
                            f"or {name}.compute_at(consumer, var)")
