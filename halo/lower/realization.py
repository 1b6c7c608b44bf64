"""Decide where each Func is computed and stored, applying the defaults and rejecting
placements that can't work before any loop is built.

It also checks the loop records that no pass lowers for this target (GPU bindings,
tensorize). Defaults (ARCHITECTURE.md): outputs are computed at root; a pure Func with no
placement is inlined; a Func with update definitions is computed at root unless placed.
"""
from __future__ import annotations

from halo.errors import ScheduleError
from halo.ir.nodes import ForKind
from halo.lower.context import LowerContext
from halo.schedule.conditions import condition_text
from halo.schedule.gpu import nesting_problem
from halo.schedule.records import INLINE, ROOT, MemoryScope, PlacementKind, stage_label
from halo.target import Target, TargetKind

_GPU_KINDS = (ForKind.GPU_BLOCK, ForKind.GPU_THREAD, ForKind.VTHREAD)


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
    them) and need a GPU target; tensorized loops are not lowered yet."""
    for k, stage in enumerate(f.schedule.stages):
        label = stage_label(f.name, k)
        variants = [(label, stage), *((f"{label}.specialize({condition_text(s.condition.node)})",
                                      s.schedule) for s in stage.specializations)]
        for where, sched in variants:
            problem = nesting_problem(sched.dims, sched.atomic or sched.allow_races)
            if problem is not None:
                raise ScheduleError(f"{where}: {problem}. The loops of {where} are, outermost "
                                    f"first: {', '.join(sched.dim_names())}")
            bound = [f"{d.name} ({d.kind.value})" for d in sched.dims if d.kind in _GPU_KINDS]
            if bound and target.kind is not TargetKind.CUDA:
                raise ScheduleError(
                    f"{where} binds loops to the GPU ({', '.join(bound)}), which needs "
                    f"target 'cuda'; this pipeline is being lowered for {target.name!r}. Lower it "
                    "for cuda, or remove the gpu_blocks/gpu_threads/gpu_tile/vthread calls")
            if sched.tensorize is not None:
                t = sched.tensorize
                raise ScheduleError(
                    f"{where}.tensorize({t.var}, {t.intrinsic}): this version of halo records "
                    "and checks tensorize but can't lower tensorized loops yet; remove the "
                    "call to run the pipeline")


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
