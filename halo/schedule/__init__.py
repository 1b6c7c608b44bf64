"""Schedules as plain data, and the user-facing methods that record them."""
from halo.schedule.placement import FuncPlacement
from halo.schedule.records import (
                                   INLINE,
                                   ROOT,
                                   Dim,
                                   FuncSchedule,
                                   Fuse,
                                   LoopLevel,
                                   Split,
                                   StageSchedule,
)
from halo.schedule.stage import Schedulable, loop_name

__all__ = ["FuncPlacement", "Schedulable", "loop_name", "INLINE", "ROOT", "Dim",
           "FuncSchedule", "Fuse", "LoopLevel", "Split", "StageSchedule"]
