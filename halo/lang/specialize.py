"""`specialize(condition)`: a second schedule for a stage, used when a run-time condition
holds.

    f.specialize(inp.shape[1] % 8 == 0).vectorize(x, 8)

    for y:                                   if inp.extent.1 % 8 == 0:
      for x: f[y, x] = ...          ->         for y: for x.x: for x.x_vec in vectorized(8): ...
                                             else:
                                               for y: for x: f[y, x] = ...

The specialization starts as a copy of the stage's schedule at the time of the call;
later calls on the returned object change only the specialization, later calls on the
stage only the default. Several specializations are tried in the order they were made.
A condition is a boolean Expr over Params and input extents (`inp.shape[i]`);
specializing again on an equal condition returns the same specialization. Values the
condition pins (`p == 3`, `inp.shape[1] == 8`, a bool Param, joined by &) are
substituted into the branch, so loops over them get constant extents. Every branch
covers the same region of the Func; what a branch reads of the inputs is checked only
when its condition selects it.
"""
from __future__ import annotations

from typing import NoReturn

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.substitute import var_names
from halo.ir.visitor import walk
from halo.lang.expr import Expr, as_expr
from halo.program import provided_names
from halo.schedule.records import Dim, Specialization, StageSchedule
from halo.schedule.specialize import copy_stage, shown_condition
from halo.schedule.stage import Schedulable


class Specialized(Schedulable):
    """The schedule of one stage under one condition: `f.specialize(cond)`."""

    def __init__(self, parent: Schedulable, spec: Specialization):
        self.parent = parent
        self.spec = spec
        self._is_update = parent._is_update

    def _stage(self) -> StageSchedule:
        return self.spec.schedule

    def _stage_label(self) -> str:
        shown = shown_condition(self.spec.condition.node)
        return f"{self.parent._stage_label()}.specialize({shown})"

    def _reduction_order_problem(self, new_dims: list[Dim],
                                 sched: StageSchedule | None = None) -> str | None:
        # the parent update's race check, applied to this branch's loops
        return self.parent._reduction_order_problem(new_dims, self._stage())

    def _warp_point_loops(self) -> frozenset[str] | None:
        return self.parent._warp_point_loops(self._stage()) if self._is_update else None

    def specialize(self, condition: object) -> NoReturn:
        raise ScheduleError(f"{self._stage_label()}.specialize(...): a specialization can't be "
                            "specialized again; combine the conditions with & in one "
                            "specialize call on the stage")

    def __repr__(self) -> str:
        return f"Specialized({self._stage_label()})"

    def __getattr__(self, name: str) -> NoReturn:
        if name in _FUNC_LEVEL:
            raise ScheduleError(f"{self._stage_label()}.{name}(...): a specialization "
                                f"schedules the loops of one stage; {name} applies to the "
                                f"whole Func: call {self.parent._stage_label()}.{name}(...)")
        raise AttributeError(name)


_FUNC_LEVEL = ("compute_root", "compute_at", "compute_inline", "store_root", "store_at",
               "store_in", "double_buffer", "reorder_storage", "bound", "set_estimates",
               "cache_read", "cache_write", "update")


class Specializable:
    """Mixin for Funcs and update stages: `specialize`."""

    def specialize(self, condition: Expr) -> Specialized:
        """A copy of this stage's schedule, used instead when `condition` (a boolean Expr
        over Params and input extents) holds at run time; returns it for scheduling.

            for y: for x: f[y, x] = ...     f.specialize(inp.shape[1] % 8 == 0).vectorize(x, 8)
                                       ->   if inp.extent.1 % 8 == 0:
                                              for y: for x.x: for x.x_vec in vectorized(8): ...
                                            else:
                                              for y: for x: f[y, x] = ...
        """
        return specialize(self, condition)


def specialize(stage: Schedulable, condition: object) -> Specialized:
    """The specialization of `stage` under `condition`, made on first use."""
    label = stage._stage_label()
    if not isinstance(condition, Expr):
        raise ScheduleError(f"{label}.specialize({condition!r}): the condition must be a halo "
                            "boolean Expr over Params and input extents, e.g. "
                            "inp.shape[1] % 8 == 0")
    cond = as_expr(condition)
    call = f"{label}.specialize({shown_condition(cond.node)})"
    if not (cond.type.is_bool and cond.type.lanes == 1):
        raise ScheduleError(f"{call}: the condition has type {cond.type}; it must be a "
                            "boolean, e.g. a comparison")
    reads = sorted({c.name for c in walk(cond.node) if isinstance(c, n.Call)
                    and c.kind is not n.CallKind.MATH})
    if reads:
        raise ScheduleError(f"{call}: the condition reads {', '.join(reads)}; it may only use "
                            "Params and input extents (inp.shape[i]), which are known before "
                            "the pipeline runs")
    free = var_names(cond.node) - provided_names(cond.deps)
    if free:
        raise ScheduleError(f"{call}: the condition uses the loop or reduction variable(s) "
                            f"{', '.join(sorted(free))}; it may only use Params and input "
                            "extents (inp.shape[i]), which are known before the pipeline runs")
    sched = stage._stage()
    for spec in sched.specializations:
        if spec.condition.node == cond.node:
            return Specialized(stage, spec)
    spec = Specialization(cond, copy_stage(sched))
    sched.specializations.append(spec)
    return Specialized(stage, spec)
