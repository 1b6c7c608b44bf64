"""What `specialize` (in `lang/specialize.py`) records, over plain data: a fresh copy
of a stage's schedule for a new branch, and a condition as the user wrote it."""
from __future__ import annotations

from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.printer import expr_to_str
from halo.schedule.conditions import condition_text
from halo.schedule.records import Dim, StageSchedule


def shown_condition(condition: n.Expr) -> str:
    """A condition as the user wrote it (inp.shape[i]), or as IR if it can't be."""
    try:
        return condition_text(condition)
    except ScheduleError:
        return expr_to_str(condition)


def copy_stage(s: StageSchedule) -> StageSchedule:
    """A copy of the loops and transformations of a stage (not its specializations)."""
    return StageSchedule([Dim(d.name, d.kind, d.pure) for d in s.dims], list(s.transforms),
                         atomic=s.atomic, allow_races=s.allow_races, tensorize=s.tensorize,
                         calls=list(s.calls))
