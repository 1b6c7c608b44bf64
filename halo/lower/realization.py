"""Decide where each Func is computed and stored, applying the defaults and rejecting
placements that can't work before any loop is built.

Defaults (ARCHITECTURE.md): outputs are computed at root; a pure Func with no placement is
inlined; a Func with update definitions is computed at root unless placed.
"""
from __future__ import annotations

from halo.errors import ScheduleError
from halo.ir.nodes import ForKind
from halo.lower.context import LowerContext
from halo.schedule.records import INLINE, ROOT


def decide_realizations(ctx: LowerContext) -> None:
    """Fill `ctx.compute_levels` and `ctx.store_levels` for every Func of the pipeline."""
    for name, f in ctx.env.funcs.items():
        sched = f.schedule
        level = sched.compute_level
        has_updates = len(f.definitions) > 1
        if name in ctx.outputs:
            if level is not None and level.kind != "root":
                raise ScheduleError(
                    f"{name}.compute_{'at' if level.kind == 'at' else level.kind}(...): {name} "
                    "is an output of the pipeline, so it is always computed at root; schedule "
                    "its loops instead, or place the Funcs it reads")
            level = ROOT
        elif level is None:
            level = ROOT if has_updates else INLINE
        if level.kind == "inline":
            _check_inlinable(f, has_updates, explicit=sched.compute_level is not None)
            if sched.store_level is not None:
                raise ScheduleError(f"{name}.store_{sched.store_level.kind}(...): {name} is "
                                    "computed inline, so it has no storage; add "
                                    f"{name}.compute_root() or {name}.compute_at(...)")
        ctx.compute_levels[name] = level
        ctx.store_levels[name] = sched.store_level or level


def _check_inlinable(f, has_updates: bool, explicit: bool) -> None:
    name = f.name
    if has_updates:
        raise ScheduleError(f"{name}.compute_inline(): {name} has update definitions, which "
                            "can't be substituted into their uses; use compute_root() or "
                            "compute_at(...)")
    stage = f.schedule.stages[0]
    if stage.transforms or any(d.kind is not ForKind.SERIAL for d in stage.dims):
        how = "compute_inline() was called" if explicit else \
            "it is computed inline (the default for a pure Func that is not an output)"
        raise ScheduleError(f"{name} has a loop schedule (split/reorder/vectorize/...), but "
                            f"{how}, so it has no loops of its own; add {name}.compute_root() "
                            f"or {name}.compute_at(consumer, var)")
